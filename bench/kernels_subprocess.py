#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""bench/kernels.sh's subprocess driver: what Triton's make_hsaco and IREE do.

    kernels_subprocess.py TOOL DIR N THREADS fresh|fixed [OUTDIR]

For each DIR/k<i>.o: write it to a temp file, run
`TOOL -flavor gnu -shared <in> -o <out>`, read <out> back. `fresh`: new
NamedTemporaryFile names every time (Triton); `fixed`: the same two names
per kernel on every pass (so a path-keyed cache can hit). Prints "seconds
failures"."""
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time

tool, src, n, threads, naming = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
out_dir = sys.argv[6] if len(sys.argv) > 6 else None
objs = [open(os.path.join(src, "k%d.o" % i), "rb").read() for i in range(n)]
fixed = os.path.join(src, "fixed")
os.makedirs(fixed, exist_ok=True)


def one(i):
    if naming == "fresh":
        fin = tempfile.NamedTemporaryFile(suffix=".o", delete=False)
        fout = tempfile.NamedTemporaryFile(suffix=".hsaco", delete=False)
        fin.close()
        fout.close()
        pin, pout = fin.name, fout.name
    else:
        pin, pout = os.path.join(fixed, "k%d.o" % i), os.path.join(fixed, "k%d.hsaco" % i)
    with open(pin, "wb") as f:
        f.write(objs[i])
    r = subprocess.run([tool, "-flavor", "gnu", "-shared", pin, "-o", pout],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok = r.returncode == 0
    if ok:
        data = open(pout, "rb").read()
        if out_dir:
            open(os.path.join(out_dir, "k%d.hsaco" % i), "wb").write(data)
    if naming == "fresh":
        os.unlink(pin)
        if os.path.exists(pout):
            os.unlink(pout)
    return ok


start = time.perf_counter()
with concurrent.futures.ThreadPoolExecutor(threads) as ex:
    results = list(ex.map(one, range(n)))
print("%.6f %d" % (time.perf_counter() - start, results.count(False)))
