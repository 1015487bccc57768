#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Prints where this interpreter looks for modules installed under PREFIX:
its own sysconfig scheme's purelib (`cmake --install` puts the linkd module
there). Debian's python3 has schemes of its own: deb_system for /usr
(/usr/lib/python3/dist-packages) and posix_local for /usr/local; any other
prefix, and any other interpreter, gets the standard posix_prefix layout
(PREFIX/lib/pythonX.Y/site-packages, a venv's own for its prefix)."""
import sys
import sysconfig

prefix = sys.argv[1].rstrip("/") or "/"
names = sysconfig.get_scheme_names()
if prefix == "/usr" and "deb_system" in names:
    scheme, base = "deb_system", prefix
elif prefix == "/usr/local" and "posix_local" in names:
    scheme, base = "posix_local", "/usr"  # it adds the /local itself
else:
    scheme, base = "posix_prefix", prefix
print(sysconfig.get_path("purelib", scheme, {
    "base": base, "platbase": base,
    "installed_base": base, "installed_platbase": base}))
