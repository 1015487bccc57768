# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""An in-tree PEP 517 backend (pyproject.toml): `pip wheel .` or
`python3 -m build --wheel` build linkd with CMake (deploy/debian/build.sh)
and write the wheel with make_wheel.py. It needs no package from an index,
so it works offline."""
import glob
import os
import shutil
import subprocess

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    subprocess.run(["bash", os.path.join(_REPO, "deploy/debian/build.sh"),
                    "wheel"], check=True)
    built = sorted(glob.glob(os.path.join(_REPO, "build/dist/linkd-*.whl")),
                   key=os.path.getmtime)[-1]
    shutil.copy(built, wheel_directory)
    return os.path.basename(built)


def get_requires_for_build_wheel(config_settings=None):
    return []
