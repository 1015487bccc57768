#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# What the metrics endpoint costs a build (issue 29: "adds < 1% to W2").
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
# alike; the scrape loop runs only during metrics blocks. Reported per mode:
# wall per link of each daemon, the ratio metrics/plain (target <= 1.01), the
# median of the per-pair ratios, the daemon's CPU per link, and one scrape's
# daemon CPU (200 scrapes of the idle daemon). Every output is compared with
# stock's; a link the daemon did not serve (fell back) makes the script exit 1.
#
#   bench/metrics.sh [--links 2000] [--block 20] [--scrape 1]   (about 2 minutes)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="${BUILD_DIR:-$REPO/build}/bin"
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}"
CXX="${CXX_FOR_BENCH:-clang++-19}"
LINKS=2000 BLOCK=20 SCRAPE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --links) LINKS="$2"; shift 2 ;;
    --block) BLOCK="$2"; shift 2 ;;
    --scrape) SCRAPE="$2"; shift 2 ;;
    *) echo "usage: $0 [--links L] [--block B] [--scrape SECONDS]" >&2; exit 2 ;;
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
use() { # DAEMON: point the client at that daemon
  export LINKD_SOCKET="$WORK/$1/run/s" LINKD_STATE_DIR="$WORK/$1/state"
  export LINKD_CACHE_DIR="$WORK/$1/cache" LINKD_CONFIG=/dev/null LINKD_IDLE_TIMEOUT=900
  if [ "$1" = metrics ]; then export LINKD_METRICS_LISTEN="127.0.0.1:$PORT"
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
for d in plain metrics; do
  use "$d"
  mkdir -p "$WORK/$d/run" "$WORK/$d/out"; chmod 700 "$WORK/$d/run"
  "$BIN/ld.linkd" "${ARGS[@]}" -o "$WORK/$d/out/a" # autostarts the daemon (a miss)
  PID[$d]=$(daemon_pid)
  [ -n "${PID[$d]}" ] || { echo "no $d daemon after its first link" >&2; exit 1; }
  SENT[$d]=1
  for m in off hit; do
    flag=; [ "$m" = off ] && flag=--linkd-no-cache
    "$BIN/ld.linkd" $flag "${ARGS[@]}" -o "$WORK/$d/out/$m"
    cmp -s "$WORK/stock" "$WORK/$d/out/$m" || { echo "$d $m output differs from stock" >&2; exit 1; }
    SENT[$d]=$((SENT[$d] + 1))
  done
done
printf '%s\n' "${ARGS[@]}" >"$WORK/args"
: >"$WORK/scrapes"
setsid bash -c 'while :; do curl -s -o /dev/null "$1" && echo >>"$2"; sleep "$3"; done' _ \
  "http://127.0.0.1:$PORT/metrics" "$WORK/scrapes" "$SCRAPE" &
SCRAPER=$!
echo "W2: ${#ARGS[@]} linker arguments; $LINKS links per daemon and mode in blocks of $BLOCK; scrape every ${SCRAPE}s; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 "$HERE/metrics_ab.py" "$BIN/ld.linkd" "$WORK/args" "$WORK" "$LINKS" "$BLOCK" \
  "$SCRAPER" "${PID[plain]}" "${PID[metrics]}" >"$WORK/ab"
kill -- -"$SCRAPER" 2>/dev/null || true
wait "$SCRAPER" 2>/dev/null || true
SCRAPER=
SCRAPES=$(wc -l <"$WORK/scrapes")
for d in plain metrics; do
  SENT[$d]=$((SENT[$d] + 2 * LINKS / BLOCK * BLOCK))
  use "$d"
  for m in off hit; do
    cmp -s "$WORK/stock" "$WORK/$d/out/$m" || { echo "$d $m output differs from stock" >&2; exit 1; }
  done
  got=$(links_total)
  [ "$got" = "${SENT[$d]}" ] || {
    echo "the $d daemon served $got links of ${SENT[$d]} (clients fell back?)" >&2; exit 1; }
done

# One scrape's daemon CPU: 200 scrapes of the idle metrics daemon.
use metrics
c0=$(cpu_ticks "${PID[metrics]}")
for ((i = 0; i < 200; i++)); do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics"; done
c1=$(cpu_ticks "${PID[metrics]}")
BYTES=$(curl -s "http://127.0.0.1:$PORT/metrics" | wc -c)

python3 - "$LINKS" "$BLOCK" "$SCRAPE" "$SCRAPES" "$((c1 - c0))" "$(getconf CLK_TCK)" "$BYTES" \
  "$WORK/ab" <<'EOF'
import sys
links, block, scrape, scrapes, ticks, hz, size, ab = sys.argv[1:9]
block, hz = int(block), int(hz)
links = int(links) // block * block
print("W2 with and without a scraped metrics endpoint: %d links per daemon and mode in blocks of %d,"
      % (links, block))
print("plain and metrics blocks alternating; %s scrapes, one every %s s of metrics-block time"
      % (scrapes, scrape))
print("%-5s %10s %10s %7s %7s %11s %11s %6s" % ("mode", "plain", "metrics", "ratio", "median",
                                               "plain cpu", "metrics cpu", "result"))
for line in open(ab):
    mode, a, b, ta, tb, pairs, med = line.split()
    a, b = float(a), float(b)
    ratio = b / a
    print("%-5s %7.2f ms %7.2f ms %7.4f %7.4f %8.3f ms %8.3f ms %6s" % (
        mode, a * 1000 / links, b * 1000 / links, ratio, float(med),
        int(ta) * 1000 / hz / links, int(tb) * 1000 / hz / links,
        "PASS" if ratio <= 1.01 else "FAIL"))
print("(per link: the blocks' total wall / links; ratio: metrics/plain totals, target <= 1.01;")
print(" median: of the %d per-pair ratios; cpu: the daemon process's utime+stime per link)"
      % (links // block))
one = int(ticks) * 1000 / hz / 200
print("one scrape: %.3f ms of daemon CPU, %s bytes (200 scrapes of the idle daemon); one every"
      " %s s is %.3f%% of a core" % (one, size, scrape, one / 10 / float(scrape)))
EOF
