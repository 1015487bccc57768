#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# What the metrics endpoint costs a build ("adds < 1% to W2").
#
# W2 is bench/run.sh's small link: an iostream hello world, clang++-19's own
# linker argv. Two private daemons, started the same way, differ in one thing:
#   plain    no metrics_listen
#   metrics  metrics_listen = 127.0.0.1:PORT, scraped every SCRAPE seconds of
#            its own link time (default 1 s; Prometheus's default interval
#            is 60 s, 15 s is common)
# For each mode ("off": cache off, LLD runs; "hit": cache on, the stored result
# comes back: the cheapest link, so the largest relative cost of anything per
# request) L links per daemon run in blocks of B, plain and metrics blocks
# alternating (bench/metrics_ab.py), so a drift of the machine lands on both
# alike; the scrape loop runs only during metrics blocks. That is one run; R
# runs each start a new pair of daemons (one pair's ratio moves a few per cent
# either way with where two new processes land, as two plain daemons' does).
# Reported per mode: wall per link of each daemon, the median over runs of
# the ratio metrics/plain (target <= 1.01) and each run's, the daemon's CPU per
# link, and one scrape's daemon CPU (200 scrapes of the idle daemon). Every output is compared with
# stock's; a link the daemon did not serve (fell back) makes the script exit 1.
#
#   bench/metrics.sh [--runs 9] [--links 600] [--block 20] [--scrape 1]   (about 4 minutes)
#   bench/metrics.sh --aa    the control: both daemons plain, nothing scraped
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="${BUILD_DIR:-$REPO/build}/bin"
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}"
CXX="${CXX_FOR_BENCH:-clang++-19}"
RUNS=9 LINKS=600 BLOCK=20 SCRAPE=1 AA=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --aa) AA=1; shift ;;
    --links) LINKS="$2"; shift 2 ;;
    --block) BLOCK="$2"; shift 2 ;;
    --scrape) SCRAPE="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs R] [--links L] [--block B] [--scrape SECONDS] [--aa]" >&2; exit 2 ;;
  esac
done
for f in "$BIN/ld.linkd" "$BIN/linkd"; do
  [ -x "$f" ] || { echo "missing $f: build linkd first" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }

WORK="$(mktemp -d /tmp/linkd-mbench.XXXXXX)"
cp -a "$BIN" "$WORK/bin" # a rebuild during the run cannot mix binaries
BIN="$WORK/bin"
PORT=$((20000 + RANDOM % 20000))
SCRAPER=
cleanup() {
  [ -z "$SCRAPER" ] || kill -CONT -- -"$SCRAPER" 2>/dev/null || true
  [ -z "$SCRAPER" ] || kill -- -"$SCRAPER" 2>/dev/null || true
  for d in plain metrics; do use "$d"; "$BIN/linkd" stop >/dev/null 2>&1 || true; done
  rm -rf "$WORK"
}
RUNDIR=$WORK/r0
use() { # DAEMON: point the client at that daemon of this run
  export LINKD_SOCKET="$RUNDIR/$1/run/s" LINKD_STATE_DIR="$RUNDIR/$1/state"
  export LINKD_CACHE_DIR="$RUNDIR/$1/cache" LINKD_CONFIG=/dev/null LINKD_IDLE_TIMEOUT=900
  if [ "$1" = metrics ] && [ "$AA" = 0 ]; then export LINKD_METRICS_LISTEN="127.0.0.1:$PORT"
  else unset LINKD_METRICS_LISTEN; fi
}
trap cleanup EXIT
unset LINKD_DISABLE LINKD_NOCACHE LINKD_BASE_DIR LINKD_REMOTE LINKD_LOG LINKD_QUIET || true

cat >"$WORK/hello.cpp" <<'EOF'
#include <iostream>
int main() { std::cout << "hello, world\n"; return 0; }
EOF
"$CXX" -O2 -c "$WORK/hello.cpp" -o "$WORK/hello.o"
"$CXX" -### "$WORK/hello.o" -o "$WORK/unused" --ld-path="$STOCK" 2>"$WORK/driver"
mapfile -t ARGS < <(python3 "$HERE/benchlib.py" linker-argv "$WORK/driver")
"$STOCK" "${ARGS[@]}" -o "$WORK/stock"

daemon_pid() { "$BIN/linkd" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("pid", ""))'; }
links_total() { "$BIN/linkd" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["links_total"])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A PID SENT
: >"$WORK/ab"
SCRAPES=0
for ((run = 1; run <= RUNS; run++)); do
RUNDIR=$WORK/r$run
starts="plain metrics"; ((run % 2)) || starts="metrics plain" # who starts first
for d in $starts; do
  use "$d"
  mkdir -p "$RUNDIR/$d/run" "$RUNDIR/$d/out"; chmod 700 "$RUNDIR/$d/run"
  "$BIN/ld.linkd" "${ARGS[@]}" -o "$RUNDIR/$d/out/a" # autostarts the daemon (a miss)
  PID[$d]=$(daemon_pid)
  [ -n "${PID[$d]}" ] || { echo "no $d daemon after its first link" >&2; exit 1; }
  SENT[$d]=1
  for m in off hit; do
    flag=; [ "$m" = off ] && flag=--linkd-no-cache
    "$BIN/ld.linkd" $flag "${ARGS[@]}" -o "$RUNDIR/$d/out/$m"
    cmp -s "$WORK/stock" "$RUNDIR/$d/out/$m" || { echo "$d $m output differs from stock" >&2; exit 1; }
    SENT[$d]=$((SENT[$d] + 1))
  done
done
[ "$AA" = 1 ] || curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^linkd_requests_total' ||
  { echo "the metrics daemon serves no metrics on 127.0.0.1:$PORT" >&2; exit 1; }
printf '%s\n' "${ARGS[@]}" >"$WORK/args"
: >"$WORK/scrapes"
setsid bash -c 'while :; do curl -s -o /dev/null "$1" && echo >>"$2"; sleep "$3"; done' _ \
  "http://127.0.0.1:$PORT/metrics" "$WORK/scrapes" "$SCRAPE" &
SCRAPER=$!
echo "run $run of $RUNS: $LINKS links per daemon and mode in blocks of $BLOCK; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 "$HERE/metrics_ab.py" "$BIN/ld.linkd" "$WORK/args" "$RUNDIR" "$LINKS" "$BLOCK" \
  "$SCRAPER" "${PID[plain]}" "${PID[metrics]}" >>"$WORK/ab"
kill -- -"$SCRAPER" 2>/dev/null || true
wait "$SCRAPER" 2>/dev/null || true
SCRAPER=
SCRAPES=$((SCRAPES + $(wc -l <"$WORK/scrapes")))
for d in plain metrics; do
  SENT[$d]=$((SENT[$d] + 2 * LINKS / BLOCK * BLOCK))
  use "$d"
  for m in off hit; do
    cmp -s "$WORK/stock" "$RUNDIR/$d/out/$m" || { echo "$d $m output differs from stock" >&2; exit 1; }
  done
  got=$(links_total)
  [ "$got" = "${SENT[$d]}" ] || {
    echo "the $d daemon served $got links of ${SENT[$d]} (clients fell back?)" >&2; exit 1; }
  [ "$run" = "$RUNS" ] || "$BIN/linkd" stop >/dev/null
done
done

if [ "$AA" = 1 ]; then # the A/A control: what the report then means
  echo "(--aa: both daemons plain, nothing scraped; the ratios are the method's own noise)"
  c0=0 c1=0 BYTES=0
else
# One scrape's daemon CPU: 200 scrapes of the idle metrics daemon.
use metrics
c0=$(cpu_ticks "${PID[metrics]}")
for ((i = 0; i < 200; i++)); do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics"; done
c1=$(cpu_ticks "${PID[metrics]}")
BYTES=$(curl -s "http://127.0.0.1:$PORT/metrics" | wc -c)
fi

python3 - "$RUNS" "$LINKS" "$BLOCK" "$SCRAPE" "$SCRAPES" "$((c1 - c0))" "$(getconf CLK_TCK)" \
  "$BYTES" "$WORK/ab" <<'EOF'
import statistics as st, sys
runs, links, block, scrape, scrapes, ticks, hz, size, ab = sys.argv[1:10]
block, hz = int(block), int(hz)
links = int(links) // block * block
rows = {"off": [], "hit": []}
for line in open(ab):
    mode, a, b, ta, tb, pairs, med = line.split()
    rows[mode].append((float(a), float(b), int(ta), int(tb), float(med)))
print("W2 with and without a scraped metrics endpoint: %s runs (a new pair of daemons each), %d links"
      % (runs, links))
print("per daemon and mode and run in blocks of %d, plain and metrics blocks alternating; %s scrapes,"
      % (block, scrapes))
print("one every %s s of metrics-block time" % scrape)
print("%-5s %10s %10s %8s %11s %11s %6s   %s" % ("mode", "plain", "metrics", "ratio", "plain cpu",
                                              "metrics cpu", "result", "ratio per run"))
for mode, rs in rows.items():
    ratios = [b / a for a, b, _, _, _ in rs]
    ratio = st.median(ratios)
    n = links * len(rs)
    print("%-5s %7.2f ms %7.2f ms %8.4f %8.3f ms %8.3f ms %6s   %s" % (
        mode, sum(r[0] for r in rs) * 1000 / n, sum(r[1] for r in rs) * 1000 / n, ratio,
        sum(r[2] for r in rs) * 1000 / hz / n, sum(r[3] for r in rs) * 1000 / hz / n,
        "PASS" if ratio <= 1.01 else "FAIL", " ".join("%.3f" % x for x in ratios)))
print("(per link: all blocks' wall / links; ratio: the median over runs of metrics/plain, target")
print(" <= 1.01; cpu: the daemon process's utime+stime per link. One run's ratio moves a few per cent")
print(" either way with where two new processes land, the same for two plain daemons: hence runs.)")
one = int(ticks) * 1000 / hz / 200
print("one scrape: %.3f ms of daemon CPU, %s bytes (200 scrapes of the idle daemon); one every"
      " %s s is %.3f%% of a core" % (one, size, scrape, one / 10 / float(scrape)))
EOF
