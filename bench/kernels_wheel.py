#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""bench/kernels.sh's wheel driver: a Python JIT loop on the linkd module
as installed from the wheel (run with the venv's python), link by link in
turns with the stock subprocess path it replaces.

    kernels_wheel.py DIR N OUTDIR STOCK_LLD

For each DIR/k<i>.o, in turns (which goes first alternates): the wheel
links it from memory as `-shared k.o -o k.hsaco` (written to
OUTDIR/k<i>.hsaco), and the stock path does what Triton's make_hsaco does
(bench/kernels_subprocess.py: two fresh temp files, `STOCK_LLD -flavor gnu
-shared in -o out` as a subprocess, the output read back); the two outputs
must be equal. Taking turns link by link, a drift of the machine's load
lands on both alike. Prints "stock_seconds wheel_seconds median_pair_ratio
served-counts failures"."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import linkd

src, n, out, stock = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
objs = [open(os.path.join(src, "k%d.o" % i), "rb").read() for i in range(n)]
served, failures = {}, 0


def wheel(i):
    global failures
    r = linkd.link_result(["-shared", "k.o", "-o", "k.hsaco"],
                          inputs={"k.o": objs[i]})
    served[r.served] = served.get(r.served, 0) + 1
    if r.status != linkd.OK:
        failures += 1
        return None
    return r.outputs["k.hsaco"]


def stock_path(i):
    fin = tempfile.NamedTemporaryFile(suffix=".o", delete=False)
    fout = tempfile.NamedTemporaryFile(suffix=".hsaco", delete=False)
    fin.close()
    fout.close()
    with open(fin.name, "wb") as f:
        f.write(objs[i])
    r = subprocess.run([stock, "-flavor", "gnu", "-shared", fin.name, "-o", fout.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    data = open(fout.name, "rb").read() if r.returncode == 0 else None
    os.unlink(fin.name)
    os.unlink(fout.name)
    return data


took = {wheel: 0.0, stock_path: 0.0}
ratios = []
for i in range(n):
    got, t = {}, {}
    for f in ((wheel, stock_path) if i % 2 == 0 else (stock_path, wheel)):
        t0 = time.perf_counter()
        got[f] = f(i)
        t[f] = time.perf_counter() - t0
        took[f] += t[f]
    ratios.append(t[wheel] / t[stock_path])
    if got[wheel] is None or got[wheel] != got[stock_path]:
        failures += 1
        continue
    with open(os.path.join(out, "k%d.hsaco" % i), "wb") as f:
        f.write(got[wheel])
print("%.6f %.6f %.5f %s %d" % (took[stock_path], took[wheel], statistics.median(ratios),
                                ",".join("%s=%d" % kv for kv in sorted(served.items())),
                                failures))
