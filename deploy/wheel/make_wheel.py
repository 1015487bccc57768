#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Writes linkd's wheel: the Python module, liblinkd and the static thin
client, in one zip with the metadata pip needs (PEP 427: METADATA, WHEEL,
RECORD with SHA-256 of every file). Standard library only, no network: the
build machine's pip, setuptools or wheel play no part.

    make_wheel.py --version V --module DIR --library SO --client EXE
                  --license FILE --out DIR

The platform tag is manylinux_<glibc>_x86_64, <glibc> being the newest
GLIBC_ symbol version the library asks for (the static client asks none).
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile


def glibc_needed(path):
    data = open(path, "rb").read()
    versions = {tuple(int(x) for x in m.groups())
                for m in re.finditer(rb"GLIBC_(\d+)\.(\d+)", data)}
    return max(versions) if versions else (2, 17)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(), len(data))


def main():
    ap = argparse.ArgumentParser()
    for a in ("version", "module", "library", "client", "license", "out"):
        ap.add_argument("--" + a, required=True)
    o = ap.parse_args()
    major, minor = glibc_needed(o.library)
    tag = "py3-none-manylinux_%d_%d_x86_64" % (major, minor)
    dist = "linkd-%s.dist-info" % o.version
    files = []  # (name in the wheel, bytes, mode)
    for name in sorted(os.listdir(o.module)):
        if name.endswith(".py"):
            files.append(("linkd/" + name,
                          open(os.path.join(o.module, name), "rb").read(),
                          0o644))
    files.append(("linkd/liblinkd.so.1", open(o.library, "rb").read(), 0o755))
    files.append(("linkd/bin/ld.linkd", open(o.client, "rb").read(), 0o755))
    metadata = "\n".join([
        "Metadata-Version: 2.4",
        "Name: linkd",
        "Version: " + o.version,
        "Summary: Link GPU kernels and other in-memory objects through the "
        "linkd daemon (cached, byte-identical to LLD), or a stock LLD "
        "without one",
        "License-Expression: Apache-2.0 WITH LLVM-exception",
        "License-File: LICENSE",
        "Requires-Python: >=3.8",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: Python :: 3",
        "", ""])
    wheel = "\n".join(["Wheel-Version: 1.0",
                       "Generator: linkd deploy/wheel/make_wheel.py",
                       "Root-Is-Purelib: false", "Tag: " + tag, "", ""])
    files.append((dist + "/METADATA", metadata.encode(), 0o644))
    files.append((dist + "/WHEEL", wheel.encode(), 0o644))
    files.append((dist + "/licenses/LICENSE", open(o.license, "rb").read(),
                  0o644))
    records = [record_line(n, d) for n, d, _ in files]
    records.append(dist + "/RECORD,,")
    files.append((dist + "/RECORD", ("\n".join(records) + "\n").encode(),
                  0o644))
    os.makedirs(o.out, exist_ok=True)
    path = os.path.join(o.out, "linkd-%s-%s.whl" % (o.version, tag))
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    sys.exit(main())
