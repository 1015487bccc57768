#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""bench/metrics.sh's timer: W2 links against two daemons, interleaved.

    metrics_ab.py CLIENT ARGS_FILE WORK LINKS BLOCK SCRAPER_PID PLAIN_PID METRICS_PID

ARGS_FILE holds the linker argv one argument per line. The daemons' sockets
are WORK/{plain,metrics}/run/s. For each mode ("off": --linkd-no-cache,
"hit"), LINKS links per daemon are run in blocks of BLOCK, plain and metrics
blocks alternating (the first of each pair swapped every other pair), so a
drift of the machine lands on both. SCRAPER_PID is the process group of a
scrape loop; it runs (SIGCONT) only during metrics blocks, so it scrapes at
its rate per second of metrics-block time. Prints, per mode, one line:
    mode plain_s metrics_s plain_cpu_ticks metrics_cpu_ticks pairs ratio_median
(sums over all blocks; ratio_median: the median of the per-pair ratios)."""
import os
import signal
import statistics
import subprocess
import sys
import time

client, args_file, work = sys.argv[1:4]
links, block, scraper = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
pids = {"plain": int(sys.argv[7]), "metrics": int(sys.argv[8])}
argv = open(args_file).read().split("\n")[:-1]


def env_for(d):
    e = dict(os.environ)
    e.update(LINKD_SOCKET=f"{work}/{d}/run/s", LINKD_STATE_DIR=f"{work}/{d}/state",
             LINKD_CACHE_DIR=f"{work}/{d}/cache", LINKD_CONFIG="/dev/null")
    e.pop("LINKD_METRICS_LISTEN", None)
    return e


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


envs = {d: env_for(d) for d in pids}
os.killpg(scraper, signal.SIGSTOP)
for mode in ("off", "hit"):
    flag = ["--linkd-no-cache"] if mode == "off" else []
    total = {d: 0.0 for d in pids}
    ticks = {d: 0 for d in pids}
    ratios = []
    for p in range(links // block):
        order = ["plain", "metrics"] if p % 2 == 0 else ["metrics", "plain"]
        took = {}
        for d in order:
            cmd = [client] + flag + argv + ["-o", f"{work}/{d}/out/{mode}"]
            if d == "metrics":
                os.killpg(scraper, signal.SIGCONT)
            c0, t0 = cpu(pids[d]), time.perf_counter()
            for _ in range(block):
                subprocess.run(cmd, env=envs[d], check=True)
            t1, c1 = time.perf_counter(), cpu(pids[d])
            if d == "metrics":
                os.killpg(scraper, signal.SIGSTOP)
            took[d] = t1 - t0
            total[d] += t1 - t0
            ticks[d] += c1 - c0
        ratios.append(took["metrics"] / took["plain"])
    print(mode, "%.6f" % total["plain"], "%.6f" % total["metrics"], ticks["plain"],
          ticks["metrics"], len(ratios), "%.5f" % statistics.median(ratios), flush=True)
os.killpg(scraper, signal.SIGCONT)
