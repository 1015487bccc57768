#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# linkd audit on W1 (docs/audit.md): what the link-time state record costs,
# and how long `linkd audit` takes on W1's output.
#
#   bench/audit.sh [--runs N] [--keep]
#
# W1 is bench/run.sh's large static link (LLVM 19 + LLD, ~130 MB output).
# An unstripped W1 has a symbol table, so no record is made: its cost is
# nil by construction. The record is made for outputs without symbols, so
# the cost is measured on W1 linked with -s: cache misses (each round after
# `linkd cache clear`: content keys make a new working directory a hit, not
# a new key) through two daemons, one
# with the record (LINKD_AUDIT_RECORD=1) and one without (the default), rounds
# alternating; medians of the client's wall time. Then `linkd audit` on
# W1's output, unstripped (symbol table) and stripped (link record).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="${BUILD_DIR:-$REPO/build}/bin"
CXX="${CXX_FOR_BENCH:-clang++-19}"
LLVM_CONFIG="${LLVM_CONFIG:-llvm-config-19}"
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}"
RUNS=5
KEEP=0
while (($#)); do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    --keep) KEEP=1 ;;
    *) echo "audit.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

T="$(mktemp -d /tmp/linkd-audit-bench.XXXXXX)"
chmod 700 "$T"
cleanup() {
  for d in rec norec; do
    LINKD_SOCKET="$T/$d/sock" LINKD_STATE_DIR="$T/$d/state" "$BIN/linkd" stop >/dev/null 2>&1 || true
  done
  ((KEEP)) || rm -rf "$T"
}
trap cleanup EXIT

echo "compiling W1's object (LLVM headers) ..."
"$CXX" $("$LLVM_CONFIG" --cxxflags) -O2 -c "$HERE/w1_big.cpp" -o "$T/big.o"
LLD_LIBDIR="$("$LLVM_CONFIG" --libdir)"
LLD_LIBS=()
for l in MinGW ELF COFF MachO Wasm Common; do LLD_LIBS+=("$LLD_LIBDIR/liblld$l.a"); done
"$CXX" -### "$T/big.o" -o "$T/unused" --ld-path="$STOCK" "${LLD_LIBS[@]}" \
  $("$LLVM_CONFIG" --link-static --ldflags) $("$LLVM_CONFIG" --link-static --libs all) \
  $("$LLVM_CONFIG" --link-static --system-libs) 2>"$T/big.driver"
mapfile -t W1 < <(python3 "$HERE/benchlib.py" linker-argv "$T/big.driver")

env_of() { echo "LINKD_SOCKET=$T/$1/sock LINKD_STATE_DIR=$T/$1/state LINKD_CACHE_DIR=$T/$1/cache LINKD_QUIET=1"; }
for d in rec norec; do mkdir -p "$T/$d/state" "$T/$d/cache" && chmod 700 "$T/$d" "$T/$d/state"; done
# The daemons, started by hand so that their environments differ.
env $(env_of rec) LINKD_AUDIT_RECORD=1 "$BIN/linkd" serve >"$T/rec.log" 2>&1 &
env $(env_of norec) "$BIN/linkd" serve >"$T/norec.log" 2>&1 &
for d in rec norec; do
  for _ in $(seq 50); do env $(env_of $d) "$BIN/linkd" status >/dev/null 2>&1 && break; sleep 0.2; done
  env $(env_of $d) "$BIN/linkd" status >/dev/null || { echo "audit.sh: daemon $d did not start" >&2; cat "$T/$d.log" >&2; exit 2; }
done

now() { date +%s.%N; }
median() { python3 -c 'import sys,statistics; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

# Warm-up (page cache, zygotes), then alternating timed misses.
for d in rec norec; do
  mkdir -p "$T/$d/w0" && (cd "$T/$d/w0" && env $(env_of $d) "$BIN/ld.linkd" "${W1[@]}" -s -o out)
done
declare -A times=([rec]="" [norec]="")
for ((i = 1; i <= RUNS; i++)); do
  for d in rec norec; do
    mkdir -p "$T/$d/w$i"
    env $(env_of $d) "$BIN/linkd" cache clear >/dev/null
    t0=$(now)
    (cd "$T/$d/w$i" && env $(env_of $d) "$BIN/ld.linkd" "${W1[@]}" -s -o out)
    t1=$(now)
    times[$d]+=" $(python3 -c "print($t1 - $t0)")"
    sleep 2 # let the store finish before the next round
  done
done
# Every timed link went through its daemon (a fallback would hide the cost).
for d in rec norec; do
  env $(env_of $d) "$BIN/linkd" stats --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("'$d' daemon: misses %d, stored %d" % (s["misses"], s["results_stored"]))'
done
rec=$(median ${times[rec]})
norec=$(median ${times[norec]})
echo "W1 -s cache miss, record on:  median ${rec} s (${times[rec]} )"
echo "W1 -s cache miss, record off: median ${norec} s (${times[norec]} )"
python3 -c "print('recording cost: %+.1f%% of the cold link' % (100 * ($rec - $norec) / $norec))"
cmp "$T/rec/w1/out" "$T/norec/w1/out" && echo "outputs identical with and without the record"

# The audit of W1's output: unstripped (symbol table) and stripped (record).
(cd "$T/rec/w0" && env $(env_of rec) "$BIN/ld.linkd" "${W1[@]}" -o full)
sleep 3
for f in "$T/rec/w0/full" "$T/rec/w1/out"; do
  t0=$(now)
  env $(env_of rec) "$BIN/linkd" audit "$f" >"$T/audit.out" || true
  t1=$(now)
  echo "linkd audit $(basename "$f"): $(python3 -c "print('%.3f' % ($t1 - $t0))") s; $(head -1 "$T/audit.out")"
  grep -E "^  $f" "$T/audit.out" || true
done
