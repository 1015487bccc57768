#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""bench/kernels.sh's wheel driver: a Python JIT loop on the linkd module
as installed from the wheel (run with the venv's python).

    kernels_wheel.py DIR N OUTDIR

Links DIR/k<i>.o as `-shared k.o -o k.hsaco` from memory, writes
OUTDIR/k<i>.hsaco, prints "seconds served-counts failures"."""
import os
import sys
import time

import linkd

src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
objs = [open(os.path.join(src, "k%d.o" % i), "rb").read() for i in range(n)]
served, failures = {}, 0
start = time.perf_counter()
for i in range(n):
    r = linkd.link_result(["-shared", "k.o", "-o", "k.hsaco"],
                          inputs={"k.o": objs[i]})
    served[r.served] = served.get(r.served, 0) + 1
    if r.status != linkd.OK:
        failures += 1
        continue
    with open(os.path.join(out, "k%d.hsaco" % i), "wb") as f:
        f.write(r.outputs["k.hsaco"])
print("%.6f %s %d" % (time.perf_counter() - start,
                      ",".join("%s=%d" % kv for kv in sorted(served.items())),
                      failures))
