#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# linkd benchmark: stock ld.lld vs ld.linkd (warm daemon), measured in one run.
#
#   bench/run.sh [--quick] [--runs N] [--w1-runs N] [--links N] [--m500-runs N] [--remote-runs N]
#                [--archive-runs N] [--scale-hits N] [--no-scale] [--no-diag] [--no-remote]
#                [--only trivial,w2,w1,m500,archive,diag,remote,scale] [--keep]
#
# See bench/README.md for what it measures and prints. It is a report: it exits
# 0 whatever the figures are, 1 if something is broken (outputs differ, a link
# fails, links silently fell back to local linking), 2 on a setup problem.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
BIN="$BUILD_DIR/bin"
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}"
# mold (Debian's), the second reference on the trivial link and W2; empty: skipped.
MOLD="${MOLD-$(command -v mold || true)}"
CXX="${CXX_FOR_BENCH:-clang++-19}"
CC="${CC_FOR_BENCH:-${CXX/clang++/clang}}"
LLVM_CONFIG="${LLVM_CONFIG:-llvm-config-19}"
LIB="$HERE/benchlib.py"

W2_RUNS=5
W1_RUNS=7
LINKS=200
M500_RUNS=9        # rounds of the 500-object link (stock, cache off, cache hit)
M500_HITS=21       # + back-to-back hits of it, for the lookup_us median
ARCHIVE_RUNS=7     # rounds of the archive of ~1,100 LLVM objects
SCALE_HITS=101     # timed hits per store size in the store-scaling test
SCALE_IDLE=3       # seconds of idle daemon CPU measured per store size
REMOTE_RUNS=7      # timed rounds of W1 served from a remote tier (per tier)
SCALE=1
DIAG=1
REMOTE=1
DO_W2=1
DO_W1=1
DO_M500=1
DO_ARCHIVE=1
DO_TRIVIAL=1
TRIVIAL_RUNS=15
KEEP=0

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
    --quick) TRIVIAL_RUNS=7; W2_RUNS=3; W1_RUNS=3; LINKS=50; M500_RUNS=5; M500_HITS=9; SCALE_HITS=21; SCALE_IDLE=2; REMOTE_RUNS=5; ARCHIVE_RUNS=5 ;;
    --runs) W2_RUNS="$2"; shift ;;
    --w1-runs) W1_RUNS="$2"; shift ;;
    --links) LINKS="$2"; shift ;;
    --m500-runs) M500_RUNS="$2"; shift ;;
    --archive-runs) ARCHIVE_RUNS="$2"; shift ;;
    --scale-hits) SCALE_HITS="$2"; shift ;;
    --remote-runs) REMOTE_RUNS="$2"; shift ;;
    --no-scale) SCALE=0 ;;
    --no-diag) DIAG=0 ;;
    --no-remote) REMOTE=0 ;;
    --only)
      DO_TRIVIAL=0; DO_W2=0; DO_W1=0; DO_M500=0; DO_ARCHIVE=0; DIAG=0; SCALE=0; REMOTE=0
      IFS=, read -ra only <<<"$2"
      for o in "${only[@]}"; do
        case "$o" in
          trivial) DO_TRIVIAL=1 ;; w2) DO_W2=1 ;; w1) DO_W1=1 ;; m500) DO_M500=1 ;; diag) DIAG=1 ;; scale) SCALE=1 ;;
          remote) REMOTE=1 ;; archive) DO_ARCHIVE=1 ;;
          *) echo "run.sh: --only: unknown section $o (trivial, w2, w1, m500, archive, diag, remote, scale)" >&2; exit 2 ;;
        esac
      done
      shift ;;
    --keep) KEEP=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Targets (ratios are linkd median / stock median). Cache off and cache miss
# keep the daemon's targets; a cache hit has its own.
W1_TARGET=1.03
W2_TARGET=0.80
# Small links against mold: linkd cache off / mold.
TRIVIAL_MOLD_TARGET=0.80
W2_MOLD_TARGET=0.85
W1_HIT_TARGET=0.20
W2_HIT_TARGET=0.10       # W2 hit / stock (was 0.30, then 0.20)
# W2 cache off / stock per job count; a miss keeps W2_TARGET.
W2_OFF_TARGET_J1=0.55
W2_OFF_TARGET_J2=0.65
M500_LOOKUP_TARGET=0.02   # lookup_us of a hit / cold (cache off) link, 500 inputs
SCALE_TARGET=1.5          # hit lookup_us with 100,000 stored entries / with 100
REMOTE_TARGET=0.35        # W1 hit from a remote tier, empty local store / stock
REMOTE_ALONE_TARGET=1.25  # that hit / (fetch the blob to /dev/null + write it to a new file)
ARCHIVE_TARGET=1.05       # ar.linkd rcs of ~1,100 objects, cache off and cache miss / llvm-ar-19
ARCHIVE_HIT_TARGET=0.30   # the same, cache hit / llvm-ar-19
STOCK_AR="${STOCK_AR:-/usr/lib/llvm-19/bin/llvm-ar}"
# The archive workload: the members of these LLVM 19 archives (~1,100 objects, ~105 MB).
ARCHIVE_LIBS=(CodeGen Analysis Core Support TransformUtils ScalarOpts MC Object ipo X86CodeGen
  AArch64CodeGen SelectionDAG AsmPrinter InstCombine Vectorize)
RSS_TARGET_MIB=64

say() { printf '%s\n' "$*"; }
hdr() { printf '\n== %s ==\n' "$*"; }
die() { printf 'run.sh: error: %s\n' "$1" >&2; exit "${2:-2}"; }
BROKEN=0
broken() { printf 'run.sh: BROKEN: %s\n' "$*" >&2; BROKEN=1; KEEP=1; }
WARNINGS=()
warn() { printf 'run.sh: warning: %s\n' "$*" >&2; WARNINGS+=("$*"); }
START_TS=$(date +%s)

for tool in python3 "$CXX" "$LLVM_CONFIG" cmp xargs env; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x "$STOCK" ]] || die "stock linker $STOCK not found (set STOCK_LLD)"
command -v "$CC" >/dev/null || CC="$CXX"
python3 -c 'import sqlite3' 2>/dev/null || die "python3 without the sqlite3 module"
HYPERFINE=""
if command -v hyperfine >/dev/null; then
  HYPERFINE=hyperfine
else
  say "note: hyperfine not found (apt-get install -y hyperfine); using the python timer in benchlib.py"
fi

# --- binaries: wait for a (re)build to finish, then snapshot them -------------
# The client finds the daemon next to itself, and the daemon its helpers
# (linkd-lld, ...), so the whole bin/ directory is copied: this run stays
# coherent even if build/ is rebuilt meanwhile.
bin_signature() { find "$BIN" -maxdepth 2 \( -type f -o -type l \) -printf '%p %s %T@\n' 2>/dev/null | sort; }
wait_for_binaries() {
  local deadline=$((SECONDS + ${BENCH_BIN_WAIT:-300})) a b
  while :; do
    if [[ -x "$BIN/ld.linkd" && -x "$BIN/linkd" ]]; then
      a=$(bin_signature)
      sleep 2
      b=$(bin_signature)
      [[ -n "$a" && "$a" == "$b" && -x "$BIN/ld.linkd" && -x "$BIN/linkd" ]] && return 0
    else
      sleep 2
    fi
    ((SECONDS < deadline)) || die "no stable $BIN/ld.linkd and $BIN/linkd after waiting (set BUILD_DIR)"
    say "waiting for a stable $BIN (build in progress?) ..."
  done
}

T="$(mktemp -d "${TMPDIR:-/tmp}/linkd-bench.XXXXXX")"
DAEMON_STARTED=0
DPID=""
ZPID=""
# remote section: worker directories whose daemons run, servers started here
# (stopped by PID), processes whose CPU is this benchmark's (own_cpu)
REMOTE_WORKERS=()
SERVER_PIDS=()
EXTRA_PIDS=()
cleanup() {
  local rc=$? w p
  for w in "${REMOTE_WORKERS[@]}"; do
    LINKD_SOCKET="$w/run/linkd.sock" "$T/bin/linkd" stop >/dev/null 2>&1 || {
      p=$(cat "$w/pid" 2>/dev/null || true)
      [[ -n "$p" && -d "/proc/$p" ]] && kill "$p" 2>/dev/null || true
    }
  done
  for p in "${SERVER_PIDS[@]}"; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
  done
  if ((DAEMON_STARTED)); then
    "$T/bin/linkd" stop >/dev/null 2>&1 || {
      [[ -n "$DPID" ]] && kill "$DPID" 2>/dev/null || true
    }
  fi
  if ((KEEP)); then
    say "kept $T"
  else
    rm -rf "$T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$T/run" "$T/state" "$T/cache" "$T/src" "$T/res" "$T/cwd" "$T/w1" "$T/m500/obj"
for m in stock off miss hit mold; do mkdir -p "$T/w2/$m"; done
mkdir -p "$T/trivial"
chmod 700 "$T/run"
for attempt in 1 2 3; do
  wait_for_binaries
  rm -rf "${T:?}/bin" && cp -a "$BIN" "$T/bin" 2>/dev/null &&
    "$T/bin/linkd" version >/dev/null 2>&1 && break
  ((attempt < 3)) || die "cannot copy working binaries from $BIN"
  sleep 5
done
CLIENT="$T/bin/ld.linkd"
LINKD="$T/bin/linkd"

# Everything the daemon reads comes from this run: socket, log, cache, config.
export LINKD_SOCKET="$T/run/linkd.sock"
export LINKD_STATE_DIR="$T/state"
export LINKD_CACHE_DIR="$T/cache"
export LINKD_CONFIG="$T/linkd.conf"
export LINKD_IDLE_TIMEOUT=900   # a safety net if this script is killed
: >"$LINKD_CONFIG"
unset LINKD_DISABLE LINKD_BIN LINKD_QUIET LINKD_NOCACHE LINKD_BASE_DIR LINKD_SLOPPINESS \
  LINKD_MAX_SIZE LINKD_LOG LINKD_REMOTE LINKD_REMOTE_KEY LINKD_REMOTE_KEY_FILE LINKD_REMOTE_TIMEOUT_MS \
  LINKD_REMOTE_CONNECT_TIMEOUT_MS LINKD_REMOTE_BREAKER_SECONDS || true

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

hdr "setup"
say "repo        $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?'))"
say "binaries    $BIN (copied to $T/bin)"
say "stock       $STOCK ($("$STOCK" --version | head -1))"
say "mold        ${MOLD:-not found (apt-get install -y mold): its rows are skipped}${MOLD:+ ($("$MOLD" --version | head -1))}"
say "linkd       $("$LINKD" version 2>/dev/null | tr '\n' ' ')"
say "machine     $(nproc) cores, $(uname -r), load average $(loadavg)"
say "runs        W1 $W1_RUNS, W2 $W2_RUNS x $LINKS links (+1 warm-up round each), M500 $M500_RUNS + $M500_HITS hits, archive $ARCHIVE_RUNS, remote $REMOTE_RUNS per tier, scaling $SCALE_HITS hits per size"
say "timer       ${HYPERFINE:-python benchlib.py}: wall clock, one command at a time, rounds interleaved, medians"

# --- inputs ---------------------------------------------------------------------
cat >"$T/src/hello.cpp" <<'EOF'
#include <iostream>
int main() { std::cout << "hello, world\n"; return 0; }
EOF
cp "$HERE/w1_big.cpp" "$T/src/big.cpp"
"$CXX" -O2 -c "$T/src/hello.cpp" -o "$T/src/hello.o" || die "cannot compile hello.cpp"
# shellcheck disable=SC2046
"$CXX" $("$LLVM_CONFIG" --cxxflags) -O2 -c "$T/src/big.cpp" -o "$T/src/big.o" ||
  die "cannot compile big.cpp (LLVM/LLD 19 headers)"

# The exact linker argv clang would run, minus argv[0] and "-o X".
"$CXX" -### "$T/src/hello.o" -o "$T/w2/unused" --ld-path="$STOCK" 2>"$T/src/hello.driver" ||
  die "clang -### failed for hello"
LLD_LIBDIR="$("$LLVM_CONFIG" --libdir)"
LLD_LIBS=()
for l in MinGW ELF COFF MachO Wasm Common; do
  [[ -f "$LLD_LIBDIR/liblld$l.a" ]] || die "$LLD_LIBDIR/liblld$l.a missing (liblld-19-dev)"
  LLD_LIBS+=("$LLD_LIBDIR/liblld$l.a")
done
# shellcheck disable=SC2046
"$CXX" -### "$T/src/big.o" -o "$T/w1/unused" --ld-path="$STOCK" "${LLD_LIBS[@]}" \
  $("$LLVM_CONFIG" --link-static --ldflags) $("$LLVM_CONFIG" --link-static --libs all) \
  $("$LLVM_CONFIG" --link-static --system-libs) 2>"$T/src/big.driver" ||
  die "clang -### failed for the static LLVM link"
mapfile -t W2_ARGS < <(python3 "$LIB" linker-argv "$T/src/hello.driver")
mapfile -t W1_ARGS < <(python3 "$LIB" linker-argv "$T/src/big.driver")
((${#W2_ARGS[@]} > 0 && ${#W1_ARGS[@]} > 0)) || die "could not extract linker argv"
say "W1 argv     ${#W1_ARGS[@]} arguments (see $T/src/big.driver)"
say "W2 argv     ${#W2_ARGS[@]} arguments"

# M500: a C program of 500 small objects (one function each) + main.o.
python3 - "$T/m500/obj" <<'EOF'
import os, sys
d = sys.argv[1]
for i in range(500):
    with open(os.path.join(d, "f%03d.c" % i), "w") as f:
        f.write("int f%03d(int x) { return x * %d + %d; }\n" % (i, i + 3, i % 7))
with open(os.path.join(d, "main.c"), "w") as f:
    f.write("".join("int f%03d(int);\n" % i for i in (0, 123, 250, 499)))
    f.write("int main(int argc, char **argv) { (void)argv;\n"
            "  return (f000(argc) + f123(argc) + f250(argc) + f499(argc)) & 1; }\n")
EOF
(cd "$T/m500/obj" && printf '%s\n' main.c f*.c | xargs -n 50 -P "$(nproc)" "$CC" -O1 -c) ||
  die "cannot compile the 500 objects for M500 with $CC"
M500_OBJS=("$T/m500/obj/main.o" "$T/m500/obj"/f*.o)
((${#M500_OBJS[@]} == 501)) || die "expected 501 objects in $T/m500/obj, got ${#M500_OBJS[@]}"
"$CC" -### "${M500_OBJS[@]}" -o "$T/m500/unused" --ld-path="$STOCK" 2>"$T/src/m500.driver" ||
  die "clang -### failed for M500"
mapfile -t M500_ARGS < <(python3 "$LIB" linker-argv "$T/src/m500.driver")
((${#M500_ARGS[@]} > 500)) || die "could not extract the M500 linker argv"
say "M500 argv   ${#M500_ARGS[@]} arguments (501 objects, $CC)"

# --- daemon helpers ---------------------------------------------------------------
status_field() { # field -> value from `linkd status --json`
  "$LINKD" status --json 2>/dev/null | python3 -c \
    "import json,sys; print(json.load(sys.stdin).get('$1', ''))" 2>/dev/null || true
}
refresh_pids() { DPID=$(status_field pid); ZPID=$(status_field zygote_pid); }
log_lines() { wc -l <"$T/state/linkd.log" 2>/dev/null || echo 0; }
# CPU seconds used so far by the daemon and its zygote, including the link
# children the zygote has reaped (its cutime/cstime) and those still alive
# (spares, reusable workers: daemon/linkd-lld/link_worker.h).
daemon_cpu() {
  [[ -n "$ZPID" && -r "/proc/$ZPID/stat" ]] || refresh_pids
  local kid
  { sed 's/^/own /' "/proc/$DPID/stat"; sed 's/^/zyg /' "/proc/$ZPID/stat"
    for kid in $(pgrep -P "$ZPID"); do sed 's/^/own /' "/proc/$kid/stat"; done
  } 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '
    { z = $1 == "zyg"; sub(/^.*\) /, ""); t += $12 + $13; if (z) t += $14 + $15 }
    END { printf "%.3f", t / hz }'
}
daemon_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$DPID/stat" 2>/dev/null || echo 0; }
# Waits until the daemon has no link in progress (a link counts as active until
# its result is stored in the cache, after the client got its answer) and has
# stopped using CPU. Prints the milliseconds waited. (CPU alone is not enough:
# storing W1's 130 MB output can sit in I/O for longer than the 40 ms window.)
active_links() { "$LINKD" status --json 2>/dev/null | grep -o '"active_links": *[0-9]*' | grep -o '[0-9]*$' || echo 0; }
settle() {
  local t0 a b n=0
  t0=$(date +%s%N)
  while (($(active_links) > 0 && ++n < 1500)); do sleep 0.02; done
  n=0
  a=$(daemon_ticks)
  while :; do
    sleep 0.04
    b=$(daemon_ticks)
    [[ "$a" == "$b" ]] && break
    a=$b
    ((++n < 1500)) || break
  done
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}

# Load from outside this benchmark: CPU the whole machine used (/proc/stat)
# minus what this script's children and the daemon (with its zygote and link
# children) used, as a share of all cores over the wall time.
machine_busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
own_cpu() { # -> OWN_CPU (must not run in a subshell: `times` is per shell)
  local kids
  times >"$T/res/times"
  kids=$(sed -n 2p "$T/res/times" | awk '{
    t = 0
    for (i = 1; i <= NF; i++) { split($i, p, "m"); sub(/s$/, "", p[2]); t += p[1] * 60 + p[2] }
    print t }')
  OWN_CPU=$(awk -v a="$kids" -v b="$(daemon_cpu)" -v c="$(extra_cpu)" 'BEGIN { printf "%.3f", a + b + c }')
}
# CPU seconds used so far by EXTRA_PIDS (remote workers' daemons and zygotes,
# tier servers) with their reaped children: not our children (autostarted
# daemons) or not reaped yet (servers), so `times` does not see them.
extra_cpu() {
  local files=() p
  for p in "${EXTRA_PIDS[@]}"; do [[ -r "/proc/$p/stat" ]] && files+=("/proc/$p/stat"); done
  if ((${#files[@]} == 0)); then echo 0; return 0; fi
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 }
    END { printf "%.3f", t / hz }' "${files[@]}" 2>/dev/null || echo 0
}
EXT_NOTES=()
NOISY=0
ext_begin() { EXT_T0=$(date +%s%N); EXT_B0=$(machine_busy); own_cpu; EXT_O0=$OWN_CPU; }
ext_end() { # LABEL [quiet] -> EXT_PCT
  local t1 b1 o1 pct
  t1=$(date +%s%N); b1=$(machine_busy); own_cpu; o1=$OWN_CPU
  pct=$(awk -v t0="$EXT_T0" -v t1="$t1" -v b0="$EXT_B0" -v b1="$b1" -v o0="$EXT_O0" -v o1="$o1" \
    -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" 'BEGIN {
      wall = (t1 - t0) / 1e9; ext = (b1 - b0) / hz - (o1 - o0)
      if (ext < 0) ext = 0
      printf "%.0f", 100 * ext / (wall * n) }')
  [[ -n "${2:-}" ]] || say "  outside load during this workload: ${pct}% of $(nproc) cores"
  EXT_NOTES+=("$1 ${pct}%")
  EXT_PCT=$pct
  ((pct < 10)) || NOISY=1
}

# --- daemon: autostart it with a first link, check it is really serving ---------
hdr "daemon start and warm-up"
DAEMON_STARTED=1
t0=$(date +%s%N)
"$CLIENT" --linkd-no-cache "${W2_ARGS[@]}" -o "$T/w2/first" || die "first link through ld.linkd failed" 1
t1=$(date +%s%N)
refresh_pids
[[ -n "$DPID" && -d "/proc/$DPID" ]] || {
  tail -20 "$T/state/linkd.log" >&2 2>/dev/null || true
  die "no daemon is serving $LINKD_SOCKET after the first link (fell back to local linking?)" 1
}
say "cold start  first link incl. daemon autostart: $(( (t1 - t0) / 1000000 )) ms"
say "daemon      pid $DPID, zygote pid $ZPID, jobs $(status_field jobs), cache $LINKD_CACHE_DIR"
for _ in 1 2 3 4 5; do "$CLIENT" --linkd-no-cache "${W2_ARGS[@]}" -o "$T/w2/first" >/dev/null; done

# --- byte-identity checks before timing -----------------------------------------
# Modes: "off" = --linkd-no-cache (LLD runs in a zygote child), "miss" = cache on,
# new key (LLD runs, access recording, result stored after the reply),
# "hit" = cache on, stored result written back (LLD does not run).
# (a hit is logged after the reply, so wait for the daemon first)
last_cache_result() {
  settle >/dev/null
  { grep ' link id=' "$T/state/linkd.log" || true; } | tail -n 1 | { grep -o 'cache=[A-Za-z_]*' || true; } | cut -d= -f2
}
verify() { # NAME STOCK_OUT PREFIX ARGS...
  local name="$1" ref="$2" p="$3"; shift 3
  local m r res=""
  "$STOCK" "$@" -o "$ref" || die "stock $name link failed" 1
  "$CLIENT" --linkd-no-cache "$@" -o "$p.off" || die "ld.linkd $name link (cache off) failed" 1
  r=$(last_cache_result); res+="off:$r "
  "$CLIENT" "$@" -o "$p.hit" || die "ld.linkd $name link (cache on, first) failed" 1
  r=$(last_cache_result); res+="first:$r "
  settle >/dev/null
  cp "$p.hit" "$p.miss"
  "$CLIENT" "$@" -o "$p.hit" || die "ld.linkd $name link (cache on, again) failed" 1
  r=$(last_cache_result); res+="again:$r"
  [[ "$res" == "off:off first:miss again:hit" ]] ||
    warn "$name: unexpected cache results ($res)"
  for m in off miss hit; do
    cmp -s "$ref" "$p.$m" || broken "$name outputs differ: $ref vs $p.$m"
  done
  say "$name  $(stat -c %s "$ref") bytes; cache off, cache miss, cache hit all identical to stock" \
    "[$res]"
}
hdr "verify outputs (cmp against stock)"
verify "W2 hello " "$T/w2/check.stock" "$T/w2/check" "${W2_ARGS[@]}"
"$T/w2/check.hit" >/dev/null || broken "the linked hello program does not run"
((DO_W1)) && verify "W1 static" "$T/w1/out.stock" "$T/w1/out" "${W1_ARGS[@]}"
((DO_M500)) && verify "M500 objs" "$T/m500/out.stock" "$T/m500/out" "${M500_ARGS[@]}"
if ((BROKEN)); then
  say "outputs differ; not timing anything (kept $T)"
  exit 1
fi

# --- timing ---------------------------------------------------------------------------
fmt_s() { awk -v s="$1" 'BEGIN{ if (s == "") print "-"; else if (s >= 1) printf "%.3f s", s; else printf "%.1f ms", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0 && a != "") printf "%.3f", a / b; else print "nan" }'; }
pass() { awk -v r="$1" -v t="$2" 'BEGIN{ print (r != "nan" && r + 0 <= t + 0) ? "PASS" : "FAIL" }'; }
q() { python3 "$LIB" quote "$@"; }

# bench NAME RUNS LABEL1 CMD1 LABEL2 CMD2 ...
# One warm-up round (discarded), then RUNS rounds. A round runs each command
# once (hyperfine -N --runs 1), forward order on odd rounds and reverse on
# even ones, so background load hits stock and linkd alike; after each command
# it waits until the daemon is idle (a cache store finishing after the reply
# must not land on the next command) and records how long that took, the
# daemon's CPU, and the daemon's log lines. "@ROUND@" in a command becomes a
# per-round token (used for fresh cache keys), "@N@" a per-round number (a
# fresh --error-limit: cache keys hold files by content, not by name or
# working directory, so only an argument in the key makes a fresh one;
# docs/cache.md). BENCH_PREPARE, if set, is a
# shell command run (untimed, before the settle) ahead of every timed command,
# with the same token. Results: $T/res/NAME/.
bench() {
  local name="$1" runs="$2"; shift 2
  local d="$T/res/$name" labels=() cmds=() order=() i k cmd tok l0 c0 c1 st rev
  mkdir -p "$d"
  while (($#)); do labels+=("$1"); cmds+=("$2"); shift 2; done
  for k in "${!labels[@]}"; do printf '%s\n' "${labels[k]}" >"$d/k$k.label"; done
  for ((i = 0; i <= runs; i++)); do
    order=("${!labels[@]}")
    if ((i % 2 == 0)); then
      rev=(); for ((k = ${#order[@]} - 1; k >= 0; k--)); do rev+=("${order[k]}"); done
      order=("${rev[@]}")
    fi
    tok="$name.r$i"
    mkdir -p "$T/cwd/$tok"
    for k in "${order[@]}"; do
      cmd="${cmds[k]//@ROUND@/$tok}"
      cmd="${cmd//@N@/$((1000 + i))}"
      if [[ -n "${BENCH_PREPARE:-}" ]]; then
        local prep="${BENCH_PREPARE//@ROUND@/$tok}"
        eval "${prep//@N@/$((1000 + i))}" || { broken "$name: preparation failed"; return 1; }
        settle >/dev/null
      fi
      l0=$(log_lines); c0=$(daemon_cpu)
      if [[ -n "$HYPERFINE" ]]; then
        hyperfine -N --style none --runs 1 --export-json "$d/r$i.k$k.json" \
          -n "${labels[k]}" "$cmd" >>"$d/hyperfine.log" 2>&1 || {
          tail -20 "$d/hyperfine.log" >&2
          broken "$name: '${labels[k]}' failed"
          return 1
        }
      else
        python3 "$LIB" time "$d/r$i.k$k.json" "${labels[k]}" "$cmd" 2>>"$d/hyperfine.log" || {
          broken "$name: '${labels[k]}' failed"; return 1; }
      fi
      st=$(settle); c1=$(daemon_cpu)
      if ((i > 0)); then
        echo "$i $st $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')" >>"$d/k$k.meta"
        tail -n +"$((l0 + 1))" "$T/state/linkd.log" >>"$d/k$k.log" 2>/dev/null || true
      fi
    done
  done
  python3 "$LIB" analyze "$d" >"$d/analysis.tsv"
}
# field NAME K COLUMN (1-based, see benchlib.py analyze)
field() { awk -F'|' -v k="$(($2 + 1))" -v c="$3" 'NR == k { print $c }' "$T/res/$1/analysis.tsv"; }
# child_phases NAME K: the link child's phases for command K's links (the
# daemon's outcome lines, child_*_ms; medians).
child_phases() {
  python3 - "$T/res/$1/k$2.log" <<'PY' || true
import re, statistics, sys
rows = []
try:
    for line in open(sys.argv[1], errors="replace"):
        if " link id=" in line and "child_spawn_ms=" in line:
            rows.append(dict(re.findall(r"(\w+)=([^\s\"]+)", line)))
except OSError:
    pass
if rows:
    m = lambda k: statistics.median(float(r.get(k, 0)) for r in rows)
    print("  %-22s child (median ms): request to child %.2f, set-up %.2f, LLD %.2f, "
          "after output %.2f, exit report %.2f; daemon wall %.2f; %.0f%% in a spare; "
          "%.0f page faults" % ("", m("child_spawn_ms"), m("child_setup_ms"), m("child_lld_ms"),
          m("child_finish_ms"), m("child_report_ms"), m("wall_ms"),
          100 * sum(r.get("spare") == "1" for r in rows) / len(rows), m("child_faults")))
PY
}
# show NAME PER: prints one line per command; PER = links per run (for per-link figures)
show() {
  local name="$1" per="$2" base
  # settle time of the first command (stock: the daemon has nothing to do) = polling overhead
  base=$(field "$name" 0 10)
  while IFS='|' read -r lab md _ _ mn mx n ccpu dcpu settle dl counts dwall dq drss dlook; do
    printf '  %-22s median %9s  (min %s, max %s, %s runs)' "$lab" "$(fmt_s "$md")" "$(fmt_s "$mn")" "$(fmt_s "$mx")" "$n"
    if ((per > 1)); then printf '  %s/link' "$(fmt_s "$(awk -v a="$md" -v n="$per" 'BEGIN{print a/n}')")"; fi
    printf '\n'
    if [[ -n "$counts" ]]; then
      awk -v ccpu="$ccpu" -v dcpu="$dcpu" -v per="$per" -v settle="$settle" -v base="${base:-40}" -v dwall="$dwall" -v dq="$dq" \
        -v drss="$drss" -v counts="$counts" -v dl="$dl" -v dlook="$dlook" 'BEGIN {
        if (dlook != "") printf "  %-22s daemon: %s per run [%s]; wall %.1f ms/link, cache lookup %.0f us\n", "",
          dl " links", counts, dwall, dlook
        else printf "  %-22s daemon: %s per run [%s]; wall %.1f ms/link (queue %.1f), child RSS %.0f MiB\n", "",
          dl " links", counts, dwall, dq, drss / 1024
        printf "  %-22s CPU/link %.1f ms = client %.1f + daemon/zygote/child %.1f; busy %d ms after the client returned\n", "",
          (ccpu + dcpu) / per * 1000, ccpu / per * 1000, dcpu / per * 1000, (settle > base ? settle - base : 0) }'
    elif [[ -n "$ccpu" ]]; then
      awk -v c="$ccpu" -v per="$per" 'BEGIN { printf "  %-22s CPU/link %.1f ms\n", "", c / per * 1000 }'
    fi
  done <"$T/res/$name/analysis.tsv"
}
# check_links NAME K EXPECTED_PER_RUN EXPECTED_CACHE_RESULT
declare -A MODE_NOTE
check_links() {
  local dl counts lab
  lab=$(field "$1" "$2" 1); dl=$(field "$1" "$2" 11); counts=$(field "$1" "$2" 12)
  if [[ -z "$dl" ]] || ! awk -v a="$dl" -v b="$3" 'BEGIN { exit !(a == b) }'; then
    broken "$1 '$lab': the daemon logged ${dl:-no} links per run, expected $3 (clients fell back to local linking?)"
  elif [[ "$counts" != "$4:"* || "$counts" == *,* ]]; then
    warn "$1 '$lab': cache results [$counts], expected all $4"
    MODE_NOTE[$1.$2]=" (got ${counts//:/ })"
  fi
}

SUMMARY="$T/res/summary.tsv"
: >"$SUMMARY"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SUMMARY"; }
INFO_ROWS=()
# rows NAME TITLE OFF_TARGET MISS_TARGET HIT_TARGET: one summary row per linkd
# mode (commands 1..3 vs command 0)
rows() {
  local s l r k t tgt=("" "$3" "$4" "$5")
  s=$(field "$1" 0 2)
  for k in 1 2 3; do
    l=$(field "$1" "$k" 2); r=$(ratio "$l" "$s"); t=${tgt[k]}
    row "$2, $(field "$1" "$k" 1 | sed 's/^ld.linkd //')${MODE_NOTE[$1.$k]:-}" "$(fmt_s "$s")" "$(fmt_s "$l")" "$r" "<= $t" "$(pass "$r" "$t")"
  done
}
cmp_outputs() { # DIR_MODE...: compare every W2 output of these modes with stock
  local m i bad=0
  for m in "$@"; do
    for i in $(seq -f %03g 1 "$LINKS"); do
      cmp -s "$T/w2/stock/a.out.$i" "$T/w2/$m/a.out.$i" || bad=$((bad + 1))
    done
  done
  ((bad == 0)) || broken "W2: $bad timed outputs differ from stock"
}

# --- trivial: one object with an empty _start, the smallest link there is ----------------
# What a link costs when LLD has almost nothing to do: process start-up for
# stock and mold, the client and the daemon's round trip for linkd.
if ((DO_TRIVIAL)); then
  printf '.globl _start\n_start:\n  ret\n' >"$T/trivial/e.s"
  "$CC" -c "$T/trivial/e.s" -o "$T/trivial/e.o" || die "cannot assemble the trivial object"
  hdr "trivial: ld e.o -o e.out, $TRIVIAL_RUNS runs"
  ext_begin
  if bench trivial "$TRIVIAL_RUNS" \
    "stock ld.lld" "$(q "$STOCK" "$T/trivial/e.o" -o "$T/trivial/out.stock")" \
    "ld.linkd cache off" "$(q "$CLIENT" --linkd-no-cache "$T/trivial/e.o" -o "$T/trivial/out.off")" \
    ${MOLD:+"mold" "$(q "$MOLD" "$T/trivial/e.o" -o "$T/trivial/out.mold")"}; then
    ext_end trivial
    show trivial 1
    child_phases trivial 1
    check_links trivial 1 1 off
    cmp -s "$T/trivial/out.stock" "$T/trivial/out.off" || broken "trivial: output differs from stock"
    s=$(field trivial 0 2); l=$(field trivial 1 2)
    row "trivial link, cache off / stock" "$(fmt_s "$s")" "$(fmt_s "$l")" "$(ratio "$l" "$s")" "(info)" "-"
    if [[ -n "$MOLD" ]]; then
      mo=$(field trivial 2 2); r=$(ratio "$l" "$mo")
      row "trivial link, cache off / mold" "$(fmt_s "$mo")" "$(fmt_s "$l")" "$r" "<= $TRIVIAL_MOLD_TARGET" "$(pass "$r" "$TRIVIAL_MOLD_TARGET")"
    fi
    cpu=$(awk -v a="$(field trivial 1 8)" 'BEGIN { printf "%.2f ms", a * 1000 }')
    INFO_ROWS+=("trivial link, client CPU per link"$'\t'"-"$'\t'"$cpu"$'\t'"-"$'\t'"<= 1 ms"$'\t'"-")
  fi
  # Where a small link's time goes (medians of 30 cache-off links, ms): the
  # client's phases (client/phase_times.h) and the daemon's per-link fields.
  echo "  phases of a trivial link through linkd, cache off (median of 30, ms):"
  python3 "$LIB" phases "$CLIENT" "$T/trivial/e.o" "$T/trivial/out.phases" 30 "$T/state/linkd.log" |
    while IFS=$'\t' read -r what v; do printf '    %-40s %8s\n' "$what" "$v"; done ||
    broken "trivial: the phase breakdown failed"
fi

# --- W2: many small links -----------------------------------------------------------
for m in stock off miss hit mold; do seq -f "$T/w2/$m/a.out.%03g" 1 "$LINKS" >"$T/w2/list.$m"; done
w2cmd() { # MODE J: xargs appends one output name after the trailing "-o"
  case "$1" in
    stock) q xargs -a "$T/w2/list.stock" -n 1 -P "$2" "$STOCK" "${W2_ARGS[@]}" -o ;;
    off) q xargs -a "$T/w2/list.off" -n 1 -P "$2" "$CLIENT" --linkd-no-cache "${W2_ARGS[@]}" -o ;;
    # a fresh --error-limit per link and round = fresh cache keys (names and the
    # working directory are not in them); the list is written by w2_miss_list
    miss) q xargs -a "$T/w2/list.miss" -n 3 -P "$2" "$CLIENT" "${W2_ARGS[@]}" ;;
    hit) q xargs -a "$T/w2/list.hit" -n 1 -P "$2" "$CLIENT" "${W2_ARGS[@]}" -o ;;
    mold) q xargs -a "$T/w2/list.mold" -n 1 -P "$2" "$MOLD" "${W2_ARGS[@]}" -o ;;
  esac
}
w2_miss_list() { # ROUND_NUMBER: "--error-limit=RNNN -o OUT" for each link
  awk -v r="$1" -v n="$LINKS" -v d="$T/w2/miss" \
    'BEGIN { for (i = 1; i <= n; i++) printf "--error-limit=%d%03d\n-o\n%s/a.out.%03d\n", r, i, d, i }' \
    >"$T/w2/list.miss"
}
((DO_W2)) || LINKS=0
for j in 1 2; do
  ((DO_W2)) || break
  hdr "W2: $LINKS links of hello.o, -j$j (xargs -P$j), $W2_RUNS runs"
  ext_begin
  BENCH_PREPARE="w2_miss_list @N@$j" bench "w2_j$j" "$W2_RUNS" \
    "stock ld.lld" "$(w2cmd stock $j)" \
    "ld.linkd cache off" "$(w2cmd off $j)" \
    "ld.linkd cache miss" "$(w2cmd miss $j)" \
    "ld.linkd cache hit" "$(w2cmd hit $j)" \
    ${MOLD:+"mold" "$(w2cmd mold $j)"} || continue
  ext_end "W2 -j$j"
  show "w2_j$j" "$LINKS"
  child_phases "w2_j$j" 1
  check_links "w2_j$j" 1 "$LINKS" off
  check_links "w2_j$j" 2 "$LINKS" miss
  check_links "w2_j$j" 3 "$LINKS" hit
  offt="W2_OFF_TARGET_J$j"
  rows "w2_j$j" "W2 $LINKS links -j$j" "${!offt}" "$W2_TARGET" "$W2_HIT_TARGET"
  if [[ -n "$MOLD" ]]; then
    mo=$(field "w2_j$j" 4 2); l=$(field "w2_j$j" 1 2); r=$(ratio "$l" "$mo")
    row "W2 $LINKS links -j$j, cache off / mold" "$(fmt_s "$mo")" "$(fmt_s "$l")" "$r" "<= $W2_MOLD_TARGET" "$(pass "$r" "$W2_MOLD_TARGET")"
  fi
  s=$(field "w2_j$j" 0 2); l=$(field "w2_j$j" 1 2)
  INFO_ROWS+=("W2 -j$j per link, cache off"$'\t'"$(fmt_s "$(awk -v a="$s" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(fmt_s "$(awk -v a="$l" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(ratio "$l" "$s")"$'\t'"(info)"$'\t'"-")
  sc=$(field "w2_j$j" 0 8); lc=$(awk -v a="$(field "w2_j$j" 1 8)" -v b="$(field "w2_j$j" 1 9)" 'BEGIN{print a+b}')
  INFO_ROWS+=("W2 -j$j CPU per link, cache off"$'\t'"$(fmt_s "$(awk -v a="$sc" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(fmt_s "$(awk -v a="$lc" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(ratio "$lc" "$sc")"$'\t'"(info)"$'\t'"-")
done
cmp_outputs off miss hit

# --- W1: one large static link --------------------------------------------------------
# name_check_micros, name_checks, name_check_bytes from the daemon's counters
name_checks() { "$LINKD" stats --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("name_check_micros",0), s.get("name_checks",0), s.get("name_check_bytes",0), s.get("name_check_cpu_micros",0))'; }
read -r ncu0 ncn0 ncb0 ncc0 <<<"$(name_checks 2>/dev/null || echo 0 0 0 0)"
if ((DO_W1)) && hdr "W1: static LLVM 19 + LLD link (${#W1_ARGS[@]} args), $W1_RUNS runs" && ext_begin &&
  bench w1 "$W1_RUNS" \
  "stock ld.lld" "$(q "$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock")" \
  "ld.linkd cache off" "$(q "$CLIENT" --linkd-no-cache "${W1_ARGS[@]}" -o "$T/w1/out.off")" \
  "ld.linkd cache miss" "$(q env -C "$T/cwd/@ROUND@" "$CLIENT" "${W1_ARGS[@]}" --error-limit=@N@ -o "$T/w1/out.miss")" \
  "ld.linkd cache hit" "$(q "$CLIENT" "${W1_ARGS[@]}" -o "$T/w1/out.hit")"; then
  ext_end W1
  show w1 1
  # The verification of a content key after each miss (docs/cache.md): its
  # time per W1 miss against the cold link (target <= 3 %).
  read -r ncu ncn ncb ncc <<<"$(name_checks)"
  ncu=$((ncu - ncu0)); ncn=$((ncn - ncn0)); ncb=$((ncb - ncb0)); ncc=$((ncc - ncc0)) # the W1 misses
  if ((ncn > 0)); then
    cold=$(field w1 2 2)
    ncr=$(awk -v u="$ncu" -v n="$ncn" -v c="$cold" 'BEGIN { printf "%.4f", (u / n / 1e6) / c }')
    say "  name check per miss: $(awk -v u="$ncu" -v n="$ncn" 'BEGIN { printf "%.1f ms", u / n / 1000 }') wall, $(awk -v u="$ncc" -v n="$ncn" 'BEGIN { printf "%.1f ms", u / n / 1000 }') CPU, over $(awk -v b="$ncb" -v n="$ncn" 'BEGIN { printf "%.0f MB", b / n / 1e6 }') ($ncn W1 misses), $(awk -v r="$ncr" 'BEGIN { printf "%.1f %%", r * 100 }') of the W1 cold link"
    row "W1 name check after a miss / cold link" "$(fmt_s "$cold")" "$(fmt_s "$(awk -v u="$ncu" -v n="$ncn" 'BEGIN { print u / n / 1e6 }')")" "$ncr" "<= 0.03" "$(pass "$ncr" 0.03)"
  fi
  check_links w1 1 1 off
  check_links w1 2 1 miss
  check_links w1 3 1 hit
  rows w1 "W1 static LLVM+LLD" "$W1_TARGET" "$W1_TARGET" "$W1_HIT_TARGET"
  for m in off miss hit; do
    cmp -s "$T/w1/out.stock" "$T/w1/out.$m" || broken "W1: timed output ($m) differs from stock"
  done
fi

# --- M500: manifest validation for a link with 500 inputs -----------------------------
# A hit must stat-check every recorded input (501 objects + the C runtime);
# lookup_us (from the daemon's log) is that cost, compared with the cold link.
us() { awk -v a="$1" 'BEGIN{ if (a == "" || a == "-") print "-"; else printf "%.0f us", a }'; }
ratio4() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0 && a != "" && a != "-") printf "%.4f", a / b; else print "nan" }'; }
if ((DO_M500)) && hdr "M500: ${#M500_ARGS[@]}-argument link of 500 small C objects, $M500_RUNS runs" && ext_begin &&
  bench m500 "$M500_RUNS" \
  "stock ld.lld" "$(q "$STOCK" "${M500_ARGS[@]}" -o "$T/m500/out.stock")" \
  "ld.linkd cache off" "$(q "$CLIENT" --linkd-no-cache "${M500_ARGS[@]}" -o "$T/m500/out.off")" \
  "ld.linkd cache hit" "$(q "$CLIENT" "${M500_ARGS[@]}" -o "$T/m500/out.hit")"; then
  ext_end M500
  show m500 1
  check_links m500 1 1 off
  check_links m500 2 1 hit
  for m in off hit; do
    cmp -s "$T/m500/out.stock" "$T/m500/out.$m" || broken "M500: timed output ($m) differs from stock"
  done
  m_stock=$(field m500 0 2); m_off=$(field m500 1 2); m_hit=$(field m500 2 2)
  # more hits, back to back, for the lookup figure (the daemon logs lookup_us per hit)
  l0=$(log_lines)
  for ((i = 0; i < M500_HITS; i++)); do
    "$CLIENT" "${M500_ARGS[@]}" -o "$T/m500/out.hit" || { broken "M500: hit link failed"; break; }
  done
  tail -n +"$((l0 + 1))" "$T/state/linkd.log" >"$T/res/m500/burst.log"
  cat "$T/res/m500/k2.log" "$T/res/m500/burst.log" >"$T/res/m500/hits.log"
  read -r m_n m_look m_p90 m_max < <(python3 "$LIB" logstats "$T/res/m500/hits.log" lookup_us)
  read -r _ m_blook _ _ < <(python3 "$LIB" logstats "$T/res/m500/burst.log" lookup_us)
  m_nhit=$(grep -c ' cache=hit ' "$T/res/m500/hits.log" || true)
  ((m_nhit == M500_RUNS + M500_HITS)) || warn "M500: $m_nhit of $((M500_RUNS + M500_HITS)) hit links were hits"
  say "  hit lookup (manifest + stat check of every input), $m_n hits ($M500_RUNS interleaved + $M500_HITS back to back):"
  say "    median $(us "$m_look") (interleaved $(us "$(field m500 2 16)"), back to back $(us "$m_blook")), p90 $(us "$m_p90"), max $(us "$m_max")"
  say "    = $(awk -v l="$m_look" -v c="$m_off" 'BEGIN{ printf "%.2f%%", l / (c * 1e6) * 100 }') of the cold link through ld.linkd (cache off, $(fmt_s "$m_off")),"\
    "$(awk -v l="$m_look" -v c="$m_stock" 'BEGIN{ printf "%.2f%%", l / (c * 1e6) * 100 }') of stock ld.lld ($(fmt_s "$m_stock")); target <= 2%"
  r=$(ratio4 "$m_look" "$(awk -v c="$m_off" 'BEGIN{ print c * 1e6 }')")
  row "M500 hit lookup / cold link (cache off)${MODE_NOTE[m500.2]:-}" "$(fmt_s "$m_off")" "$(us "$m_look")" "$r" "<= $M500_LOOKUP_TARGET" "$(pass "$r" "$M500_LOOKUP_TARGET")"
  row "M500 full hit / cold link (cache off)" "$(fmt_s "$m_off")" "$(fmt_s "$m_hit")" "$(ratio "$m_hit" "$m_off")" "(info)" "-"
  row "M500 cold link, cache off / stock" "$(fmt_s "$m_stock")" "$(fmt_s "$m_off")" "$(ratio "$m_off" "$m_stock")" "(info)" "-"
fi

# --- archive: ar.linkd against llvm-ar-19 ----------------------------------------
# `rcs` of the members of several LLVM 19 archives (~1,100 objects, ~105 MB)
# into a new archive, as a build does after `rm -f lib.a`: stock llvm-ar,
# ar.linkd with the cache off, on a miss (an archive name of its own per
# round, so a fresh key, with no extra process in front) and on a hit. Before each timed command
# every archive is moved aside to NAME.a.last (untimed), so each run creates
# its archive rather than updating one; the last ones are compared at the end.
if ((DO_ARCHIVE)); then
  hdr "archive: rcs of the members of ${#ARCHIVE_LIBS[@]} LLVM 19 archives, $ARCHIVE_RUNS runs"
  [[ -x "$STOCK_AR" ]] || die "stock archiver $STOCK_AR not found (set STOCK_AR)"
  ARC="$T/ar"
  mkdir -p "$ARC/objs" "$ARC/out"
  for l in "${ARCHIVE_LIBS[@]}"; do
    a="$LLD_LIBDIR/libLLVM$l.a"
    [[ -f "$a" ]] || die "$a missing (llvm-19-dev)"
    mkdir -p "$ARC/objs/$l"
    (cd "$ARC/objs/$l" && "$STOCK_AR" x "$a" && for f in *; do mv "$f" "${l}_$f"; done) ||
      die "cannot extract $a"
  done
  ARCHIVE_OBJS=("$ARC"/objs/*/*.o)
  say "inputs      ${#ARCHIVE_OBJS[@]} objects, $(du -sm "$ARC/objs" | cut -f1) MB (members of libLLVM{$(IFS=,; echo "${ARCHIVE_LIBS[*]}")}.a)"
  AR_CLIENT="$T/bin/ar.linkd"
  arcmd() { # MODE -> the command (q-quoted) writing $ARC/out/MODE.a
    case "$1" in
      stock) q "$STOCK_AR" rcs "$ARC/out/stock.a" "${ARCHIVE_OBJS[@]}" ;;
      off) q "$AR_CLIENT" --linkd-no-cache rcs "$ARC/out/off.a" "${ARCHIVE_OBJS[@]}" ;;
      miss) q "$AR_CLIENT" rcs "$ARC/out/miss.@ROUND@.a" "${ARCHIVE_OBJS[@]}" ;;
      hit) q "$AR_CLIENT" rcs "$ARC/out/hit.a" "${ARCHIVE_OBJS[@]}" ;;
    esac
  }
  # Byte identity first: each mode once (the hit twice: the first stores).
  rm -f "$ARC"/out/*.a
  for m in stock off miss hit; do
    eval "$(arcmd "$m" | sed 's/@ROUND@/verify/')" || die "archive ($m) failed" 1
    settle >/dev/null
  done
  mv "$ARC/out/miss.verify.a" "$ARC/out/miss.a"
  rm -f "$ARC/out/hit.a"
  eval "$(arcmd hit)" || die "archive (hit) failed" 1
  r=$(last_cache_result)
  [[ "$r" == hit ]] || warn "archive: the second cache-on archive was ${r:-not logged}, expected a hit"
  for m in off miss hit; do
    cmp -s "$ARC/out/stock.a" "$ARC/out/$m.a" || broken "archive: $m output differs from llvm-ar-19's"
  done
  say "archive     $(stat -c %s "$ARC/out/stock.a") bytes; cache off, cache miss, cache hit all identical to llvm-ar-19"
  ar_aside() { local f; for f in "$ARC"/out/*.a; do [[ -e "$f" ]] && mv -f "$f" "$f.last"; done; return 0; }
  if ((!BROKEN)) && ext_begin && BENCH_PREPARE=ar_aside bench archive "$ARCHIVE_RUNS" \
    "llvm-ar-19 rcs" "$(arcmd stock)" \
    "ar.linkd cache off" "$(arcmd off)" \
    "ar.linkd cache miss" "$(arcmd miss)" \
    "ar.linkd cache hit" "$(arcmd hit)"; then
    ext_end archive
    show archive 1
    check_links archive 1 1 off
    check_links archive 2 1 miss
    check_links archive 3 1 hit
    rows archive "archive ${#ARCHIVE_OBJS[@]} objects" "$ARCHIVE_TARGET" "$ARCHIVE_TARGET" "$ARCHIVE_HIT_TARGET"
    ar_aside
    for f in "$ARC"/out/off.a.last "$ARC"/out/hit.a.last "$ARC"/out/miss.*.a.last; do
      cmp -s "$ARC/out/stock.a.last" "$f" || broken "archive: timed output $(basename "$f") differs from llvm-ar-19's"
    done
  fi
fi

# --- diagnostics: where a small link's time goes --------------------------------------
if ((DIAG)); then
  hdr "diagnostics: one process at a time (15 runs each, medians)"
  H=("${W2_ARGS[@]}")
  LLDBIN="$T/bin/linkd-lld"; [[ -x "$LLDBIN" ]] || LLDBIN="$LINKD"
  if bench diag 15 \
    "/bin/true" "$(q /bin/true)" \
    "stock --version" "$(q "$STOCK" --version)" \
    "linkd --version" "$(q "$CLIENT" --linkd-no-cache --version)" \
    "LLD process version" "$(q "$LLDBIN" version)" \
    "stock hello" "$(q "$STOCK" "${H[@]}" -o "$T/w2/diag.stock")" \
    "linkd hello, off" "$(q "$CLIENT" --linkd-no-cache "${H[@]}" -o "$T/w2/diag.off")" \
    "linkd hello, hit" "$(q "$CLIENT" "${H[@]}" -o "$T/w2/check.hit")" \
    "linkd hello, local" "$(q env LINKD_DISABLE=1 "$CLIENT" "${H[@]}" -o "$T/w2/diag.local")"; then
    show diag 1
    say "  (LLD process version: $(basename "$LLDBIN") version, loads libLLVM; local = LINKD_DISABLE=1 via env)"
    ms() { awk -v a="$(field diag "$1" "$2")" 'BEGIN { printf "%.1f", a * 1000 }'; }
    msd() { awk -v a="$(field diag "$1" 13)" 'BEGIN { printf "%.1f", a }'; }
    awk -v sv="$(ms 1 2)" -v sh="$(ms 4 2)" -v lv="$(ms 2 2)" -v lh="$(ms 5 2)" -v dv="$(msd 2)" \
      -v dh="$(msd 5)" -v hit="$(ms 6 2)" -v dhit="$(msd 6)" -v t0="$(ms 0 2)" \
      -v hitok="$([[ "$(field diag 6 12)" == hit:* && "$(field diag 6 12)" != *,* ]] && echo 1 || echo 0)" 'BEGIN {
      printf "  breakdown of one hello link (medians, ms):\n"
      printf "    stock:  process start + libLLVM load %.1f (= --version), link %.1f (= hello - --version)\n", sv, sh - sv
      printf "    linkd:  %.1f = client side %.1f (process start, gRPC channel, request, reply; = hello - daemon wall)\n", lh, lh - dh
      printf "            + daemon side %.1f, of which spawn/exit/reap %.1f (daemon wall of --version) and link %.1f\n", dh, dv, dh - dv
      if (hitok) printf "    hit:    %.1f = client side %.1f + daemon side %.1f\n", hit, hit - dhit, dhit
      else printf "    hit:    (the \"hit\" runs were not cache hits; see the warnings)\n"
      printf "    a null process (/bin/true) costs %.1f\n", t0
    }'
  fi
fi

# --- idle RSS ------------------------------------------------------------------------------
hdr "daemon idle memory"
refresh_pids
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status" 2>/dev/null || true; }
pss() { awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || true; }
mib() { awk -v k="${1:-0}" 'BEGIN{ printf "%.1f", k / 1024 }'; }
if [[ -n "$DPID" && -r "/proc/$DPID/status" ]]; then
  sleep 1  # idle for a second (after the status call too)
  d_rss=$(kib "$DPID" VmRSS); z_rss=$(kib "$ZPID" VmRSS)
  d_pss=$(pss "$DPID"); z_pss=$(pss "$ZPID")
  d_thr=$(kib "$DPID" Threads)
  kids=$( (ps -o pid= --ppid "$ZPID" 2>/dev/null || true) | wc -l)
  tot=$(( ${d_rss:-0} + ${z_rss:-0} ))
  say "  daemon  pid $DPID: VmRSS $(mib "$d_rss") MiB, Pss $(mib "$d_pss") MiB, $d_thr threads"
  say "  zygote  pid $ZPID: VmRSS $(mib "$z_rss") MiB, Pss $(mib "$z_pss") MiB, $kids live children"
  say "  sum     VmRSS $(mib "$tot") MiB, Pss $(mib $(( ${d_pss:-0} + ${z_pss:-0} ))) MiB"
  # The zygote's pre-forked children (comm linkd-spare): mostly pages shared
  # with the zygote, so Pss is what they add.
  s_rss=0; s_pss=0; s_n=0
  for c in $( (ps -o pid= --ppid "$ZPID" 2>/dev/null || true) ); do
    [[ "$(cat "/proc/$c/comm" 2>/dev/null)" == linkd-spare ]] || continue
    v=$(kib "$c" VmRSS); w=$(pss "$c")
    s_n=$((s_n + 1)); s_rss=$((s_rss + ${v:-0})); s_pss=$((s_pss + ${w:-0}))
  done
  say "  spares  $s_n waiting: VmRSS $(mib "$s_rss") MiB, Pss $(mib "$s_pss") MiB"
  row "idle Pss of the zygote's spares" "-" "$(mib "$s_pss") MiB" "-" "(info)" "-"
  rss_res=$(awk -v k="$tot" -v t="$RSS_TARGET_MIB" 'BEGIN{ print (k / 1024 <= t) ? "PASS" : "FAIL" }')
  row "idle VmRSS daemon alone" "-" "$(mib "$d_rss") MiB" "-" "(info)" "-"
  row "idle VmRSS daemon+zygote" "-" "$(mib "$tot") MiB" "-" "<= $RSS_TARGET_MIB MiB" "$rss_res"
else
  broken "the daemon is gone before the idle-memory measurement"
fi
say "  links: $(status_field links_total) served (failed $(status_field links_failed), crashed $(status_field links_crashed))"
say "  cache: $("$LINKD" stats 2>/dev/null | tr -s ' \n' ' ' | cut -c1-300)"

# --- remote: W1 served from a remote tier with an empty local store ---------------
# Per tier (HTTP: nginx WebDAV on loopback; Redis on a Unix socket), two
# workers of their own (socket in a 0700 dir, log, local store): worker A
# links W1 once (a miss) and pushes the result to the tier after the reply;
# worker B links it once (a remote hit that fills its stat cache), then every
# timed run starts from an empty local store (`linkd cache clear`; the stat
# cache stays, as on a CI worker that has seen the tree). Interleaved with
# stock ld.lld like bench(); round 0 is a discarded warm-up.
in_worker() { # DIR CMD...: runs CMD (a command or a function) in worker DIR's environment
  local w="$1"; shift
  (
    LINKD_REMOTE="$(cat "$w/remote")"
    export LINKD_SOCKET="$w/run/linkd.sock" LINKD_STATE_DIR="$w/state" LINKD_CACHE_DIR="$w/cache" LINKD_REMOTE
    "$@"
  )
}
wjson() { # DIR status|stats FIELD...: the fields' values on one line ("-" if absent)
  local w="$1" what="$2"; shift 2
  { in_worker "$w" "$LINKD" "$what" --json 2>/dev/null || true; } | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {}
print(" ".join(str(d.get(k, "-")) for k in sys.argv[1:]))' "$@"
}
w_active() {
  { in_worker "$1" "$LINKD" status --json 2>/dev/null || true; } |
    grep -o '"active_links": *[0-9]*' | grep -o '[0-9]*$' || echo 0
}
pid_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
ticks_of() { # PID...: their utime + stime summed (clock ticks)
  local p t=0
  for p in "$@"; do t=$((t + $(pid_ticks "$p"))); done
  echo "$t"
}
w_log_lines() { wc -l <"$1/state/linkd.log" 2>/dev/null || echo 0; }
w_last_result() { # DIR: cache result of the worker's last link (logged after the reply and a hit's backfill)
  w_settle "$1" >/dev/null
  { grep ' link id=' "$1/state/linkd.log" 2>/dev/null || true; } | tail -n 1 | { grep -o 'cache=[A-Za-z_]*' || true; } | cut -d= -f2
}
w_pids() { # DIR: records the worker daemon's and zygote's PIDs in DIR/pid, DIR/zpid
  local p z
  read -r p z < <(wjson "$1" status pid zygote_pid)
  echo "$p" >"$1/pid"; echo "$z" >"$1/zpid"
}
# Waits until the worker has no active link (a hit stays active while it
# backfills the local store after the reply) and its daemon stopped using CPU;
# prints the milliseconds waited.
w_settle() {
  local w="$1" pid t0 a b n=0
  pid=$(cat "$w/pid" 2>/dev/null || true)
  t0=$(date +%s%N)
  while (($(w_active "$w") > 0)); do
    n=$((n + 1)); ((n < 3000)) || break
    sleep 0.02
  done
  n=0
  a=$(pid_ticks "$pid")
  while :; do
    sleep 0.04
    b=$(pid_ticks "$pid")
    [[ "$a" == "$b" ]] && break
    a=$b; n=$((n + 1)); ((n < 1500)) || break
  done
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}
w_stop() { # DIR: linkd stop on the worker (waits for its queued writes), else kill by PID
  local w="$1" pid i keep=() x
  pid=$(cat "$w/pid" 2>/dev/null || true)
  in_worker "$w" "$LINKD" stop >/dev/null 2>&1 || true
  for ((i = 0; i < 200; i++)); do
    [[ -n "$pid" && -d "/proc/$pid" ]] || break
    sleep 0.05
  done
  if [[ -n "$pid" && -d "/proc/$pid" ]]; then
    warn "remote: worker daemon $pid still running 10 s after linkd stop; killing it"
    kill "$pid" 2>/dev/null || true
  fi
  for x in "${REMOTE_WORKERS[@]}"; do [[ "$x" == "$w" ]] || keep+=("$x"); done
  REMOTE_WORKERS=("${keep[@]}")
}
time1() { # OUT_JSON LABEL CMD LOG: one timed run (hyperfine -N --runs 1, no shell)
  if [[ -n "$HYPERFINE" ]]; then
    hyperfine -N --style none --runs 1 --export-json "$1" -n "$2" "$3" >>"$4" 2>&1
  else
    python3 "$LIB" time "$1" "$2" "$3" 2>>"$4"
  fi
}
stop_server() { # PID: stops a tier server started here (by its PID) and reaps it
  local p keep=()
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${SERVER_PIDS[@]}"; do [[ "$p" == "$1" ]] || keep+=("$p"); done
  SERVER_PIDS=("${keep[@]}")
}
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
REDIS_SERVER="${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_http_tier() { # DIR -> TIER_URL, TIER_PID (nginx master; it serves WebDAV PUT/GET under DIR/data)
  local n="$1" port user="" i attempt url
  [[ -x "$NGINX" ]] || { warn "remote: nginx not found (apt-get install nginx-light); HTTP tier skipped"; return 1; }
  command -v curl >/dev/null || { warn "remote: curl not found; HTTP tier skipped"; return 1; }
  mkdir -p "$n/data" "$n/tmp"
  # as root, the workers would run as nobody, who cannot enter this 0700 temp dir
  [[ "$(id -u)" != 0 ]] || user="user root;"
  for attempt in 1 2 3; do
    port=$(free_port)
    cat >"$n/nginx.conf" <<EOF
$user
worker_processes 1;
daemon off;
pid $n/nginx.pid;
error_log $n/error.log;
events { worker_connections 256; }
http {
  access_log off;
  sendfile on;
  default_type application/octet-stream;
  client_body_temp_path $n/tmp/body;
  proxy_temp_path $n/tmp/proxy;
  fastcgi_temp_path $n/tmp/fastcgi;
  uwsgi_temp_path $n/tmp/uwsgi;
  scgi_temp_path $n/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $n/data;
    location / { dav_methods PUT; create_full_put_path on; client_max_body_size 0; }
  }
}
EOF
    "$NGINX" -p "$n/" -c "$n/nginx.conf" -e "$n/error.log" </dev/null >>"$n/nginx.out" 2>&1 &
    TIER_PID=$!
    SERVER_PIDS+=("$TIER_PID")
    url="http://127.0.0.1:$port/linkd"
    for ((i = 0; i < 500; i++)); do
      kill -0 "$TIER_PID" 2>/dev/null || break
      if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/"; then
        # ready; check that PUT works (a tier that refuses writes would make
        # every worker-B link a miss)
        echo probe >"$n/probe"
        if curl -sf -o /dev/null -T "$n/probe" "$url/probe" &&
          [[ "$(curl -sf "$url/probe")" == probe ]]; then
          TIER_URL=$url
          return 0
        fi
        break
      fi
      sleep 0.02
    done
    stop_server "$TIER_PID"
    say "  nginx did not come up on port $port (attempt $attempt): $(tail -n 3 "$n/error.log" 2>/dev/null | tr '\n' ' ')"
  done
  warn "remote: cannot start nginx (see $n/error.log); HTTP tier skipped"
  KEEP=1
  return 1
}
start_redis_tier() { # DIR -> TIER_URL, TIER_PID (redis-server on DIR/redis.sock, no persistence)
  local r="$1" i
  [[ -x "$REDIS_SERVER" ]] && command -v redis-cli >/dev/null ||
    { warn "remote: redis-server/redis-cli not found (apt-get install redis-server); Redis tier skipped"; return 1; }
  "$REDIS_SERVER" --port 0 --unixsocket "$r/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
    --dir "$r" --logfile "$r/redis.log" </dev/null >/dev/null 2>&1 &
  TIER_PID=$!
  SERVER_PIDS+=("$TIER_PID")
  for ((i = 0; i < 500; i++)); do
    kill -0 "$TIER_PID" 2>/dev/null || break
    if [[ "$(redis-cli -s "$r/redis.sock" ping 2>/dev/null)" == PONG ]]; then
      TIER_URL="redis+unix://$r/redis.sock"
      return 0
    fi
    sleep 0.02
  done
  stop_server "$TIER_PID"
  warn "remote: redis-server did not start (see $r/redis.log); Redis tier skipped"
  KEEP=1
  return 1
}
ms3() { # CMD...: median wall ms of 3 runs (stdout discarded); "-" if it fails
  local i t0 ts=()
  for i in 1 2 3; do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "-"; return 0; }
    ts+=($(( ($(date +%s%N) - t0) / 1000000 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p
}
remote_skip() { row "W1 remote hit ($1, empty local store)" "-" "-" "nan" "<= $REMOTE_TARGET" "SKIPPED"; }
remote_tier() { # http|redis
  local tier="$1" d="$T/res/remote_$1" base="$T/remote/$1" A B w r t0 ok=0 i m order st l0 ent h0 b0 h1 b1
  local nl res wms lus dh db wr rs we wd bw push_ms a_ms qs qh note="" hex
  A="$base/a"; B="$base/b"
  mkdir -p "$d" "$base/srv"
  for w in "$A" "$B"; do mkdir -p "$w/run" "$w/state" "$w/cache"; chmod 700 "$w/run"; done
  say "  -- $tier tier --"
  TIER_URL=""; TIER_PID=""
  case "$tier" in
    http) start_http_tier "$base/srv" || { remote_skip "$tier"; return 0; } ;;
    redis) start_redis_tier "$base/srv" || { remote_skip "$tier"; return 0; } ;;
  esac
  printf '%s\n' "$TIER_URL" >"$A/remote"
  cp "$A/remote" "$B/remote"
  say "  tier        $TIER_URL (server pid $TIER_PID)"

  # worker A: one miss; the result goes to the tier after the reply. Both
  # workers write the same output path: it is part of the action key.
  REMOTE_WORKERS+=("$A")
  t0=$(date +%s%N)
  in_worker "$A" "$CLIENT" "${W1_ARGS[@]}" -o "$base/out.w1" ||
    { broken "remote $tier: worker A's W1 link failed"; stop_server "$TIER_PID"; return 0; }
  a_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  w_pids "$A"
  r=$(w_last_result "$A")
  [[ "$r" == miss ]] || warn "remote $tier: worker A's link was ${r:-not logged}, expected miss"
  cmp -s "$REF" "$base/out.w1" || broken "remote $tier: worker A's output differs from stock"
  # The link stays active until its result is stored (the daemon reads the
  # output back after the reply); the writes to the tier follow in the background.
  t0=$(date +%s%N)
  for ((i = 0; i < 3000; i++)); do   # up to 10 minutes
    read -r wr rs < <(wjson "$A" stats remote_writes results_stored)
    if (($(w_active "$A") == 0)); then
      if [[ "$wr" =~ ^[0-9]+$ ]] && ((wr >= 3)); then ok=1; break; fi
      [[ "$rs" != 0 ]] || break   # not stored locally: nothing will be pushed
    fi
    sleep 0.2
  done
  push_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  read -r wr we wd bw < <(wjson "$A" stats remote_writes remote_errors remote_writes_dropped remote_bytes_written)
  say "  worker A    miss in $(fmt_s "$(awk -v m="$a_ms" 'BEGIN{print m/1000}')") (incl. daemon autostart);" \
    "pushed $wr writes, $(awk -v b="$bw" 'BEGIN{printf "%.1f", b/1048576}') MiB, in $push_ms ms after the reply (errors $we, dropped $wd)"
  w_stop "$A"
  rm -f "$base/out.w1"   # worker B starts without it
  if ((!ok)); then
    broken "remote $tier: worker A did not push its result (results_stored $rs, remote_writes $wr, errors $we)"
    stop_server "$TIER_PID"; return 0
  fi

  # worker B: one remote hit (fills its stat cache), untimed
  REMOTE_WORKERS+=("$B")
  read -r h0 < <(echo 0)
  in_worker "$B" "$CLIENT" "${W1_ARGS[@]}" -o "$base/out.w1" ||
    { broken "remote $tier: worker B's first W1 link failed"; w_stop "$B"; stop_server "$TIER_PID"; return 0; }
  w_pids "$B"
  r=$(w_last_result "$B")
  read -r h1 < <(wjson "$B" stats remote_hits)
  if [[ "$r" != hit || ! "$h1" =~ ^[0-9]+$ ]] || ((h1 == 0)); then
    broken "remote $tier: worker B's first link was ${r:-not logged} with remote_hits $h1, expected a remote hit"
    w_stop "$B"; stop_server "$TIER_PID"; return 0
  fi
  cmp -s "$REF" "$base/out.w1" || broken "remote $tier: worker B's output differs from stock"
  w_settle "$B" >/dev/null

  qs=$(q "$STOCK" "${W1_ARGS[@]}" -o "$d/out.stock")
  qh=$(q "$CLIENT" "${W1_ARGS[@]}" -o "$base/out.w1")
  : >"$d/hits"; : >"$d/stock.settle"
  # the worker's daemon and zygote and the server are this benchmark's CPU
  EXTRA_PIDS=("$(cat "$B/pid")" "$(cat "$B/zpid")" "$TIER_PID")
  # shellcheck disable=SC2207
  EXTRA_PIDS+=($(ps -o pid= --ppid "$TIER_PID" 2>/dev/null || true))
  local bpid srv tick_ms c0 c1 c2 s0 s1
  bpid=$(cat "$B/pid"); srv=("${EXTRA_PIDS[@]:2}")
  tick_ms=$((1000 / $(getconf CLK_TCK)))
  ext_begin
  for ((i = 0; i <= REMOTE_RUNS; i++)); do
    if ((i % 2)); then order=(stock hit); else order=(hit stock); fi
    for m in "${order[@]}"; do
      if [[ "$m" == stock ]]; then
        time1 "$d/r$i.stock.json" "stock ld.lld" "$qs" "$d/hyperfine.log" ||
          { tail -5 "$d/hyperfine.log" >&2; broken "remote $tier: stock link failed"; break 2; }
        st=$(w_settle "$B")   # B is idle: the polling overhead
        ((i == 0)) || echo "$st" >>"$d/stock.settle"
        continue
      fi
      w_settle "$B" >/dev/null
      in_worker "$B" "$LINKD" cache clear >/dev/null 2>&1 || warn "remote $tier: linkd cache clear failed on worker B"
      w_settle "$B" >/dev/null
      read -r ent h0 b0 < <(wjson "$B" stats store_entries remote_hits remote_bytes_read)
      [[ "$ent" == 0 ]] || warn "remote $tier round $i: worker B's local store has $ent entries after cache clear"
      l0=$(w_log_lines "$B")
      c0=$(pid_ticks "$bpid"); s0=$(ticks_of "${srv[@]}")
      in_worker "$B" time1 "$d/r$i.hit.json" "W1 remote hit ($tier)" "$qh" "$d/hyperfine.log" ||
        { tail -5 "$d/hyperfine.log" >&2; broken "remote $tier: W1 link on worker B failed"; break 2; }
      c1=$(pid_ticks "$bpid"); s1=$(ticks_of "${srv[@]}")
      st=$(w_settle "$B")
      c2=$(pid_ticks "$bpid")
      read -r h1 b1 < <(wjson "$B" stats remote_hits remote_bytes_read)
      tail -n +"$((l0 + 1))" "$B/state/linkd.log" >"$d/r$i.log" 2>/dev/null || true
      cmp -s "$REF" "$base/out.w1" || broken "remote $tier round $i: worker B's output differs from stock"
      read -r nl res wms lus < <(awk '/ link id=/ && /wall_ms=/ {
          n++
          for (f = 1; f <= NF; f++) {
            k = $f; sub(/=.*/, "", k); v = $f; sub(/^[^=]*=/, "", v)
            if (k == "cache") c = c (c == "" ? "" : ",") v
            if (k == "wall_ms") w = v
            if (k == "lookup_us") l = v
          } }
        END { printf "%d %s %s %s\n", n, (c == "" ? "-" : c), (w == "" ? "-" : w), (l == "" ? "-" : l) }' "$d/r$i.log")
      dh=$(awk -v a="$h1" -v b="$h0" 'BEGIN{ print (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) ? a - b : "-" }')
      db=$(awk -v a="$b1" -v b="$b0" 'BEGIN{ print (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) ? a - b : "-" }')
      ((i > 0)) || continue
      # CPU ms: B's daemon until the client returned, B's daemon afterwards (backfill), the server
      echo "$i $nl $res $wms $lus $st $dh $db $(( (c1 - c0) * tick_ms )) $(( (c2 - c1) * tick_ms )) $(( (s1 - s0) * tick_ms ))" >>"$d/hits"
      if [[ "$nl" != 1 ]]; then
        broken "remote $tier round $i: worker B logged $nl links for one link (client fell back to local linking?)"
      elif [[ "$res" != hit ]]; then
        warn "remote $tier round $i: worker B's link was $res, expected hit"; note=" (not all hits)"
      elif [[ "$dh" == - ]] || ((dh < 1)); then
        warn "remote $tier round $i: remote_hits did not grow ($h0 -> $h1): not served from the tier"; note=" (not all remote)"
      fi
    done
  done
  ext_end "remote $tier"
  EXTRA_PIDS=()

  local sm smin smax sn hm hmin hmax hn wmed lmed smed sbase bmed dmin cpu_reply cpu_after cpu_srv hlist slist
  { read -r sm smin smax sn hm hmin hmax hn wmed lmed smed sbase bmed dmin cpu_reply cpu_after cpu_srv
    read -r hlist; read -r slist; } < <(python3 "$LIB" remote "$d")
  say "  stock ld.lld            median $(fmt_s "$sm")  (min $(fmt_s "$smin"), max $(fmt_s "$smax"), $sn runs)"
  say "  W1 remote hit ($tier)$(printf '%*s' $((6 - ${#tier})) '') median $(fmt_s "$hm")  (min $(fmt_s "$hmin"), max $(fmt_s "$hmax"), $hn runs)" \
    "= $(ratio "$hm" "$sm") x stock; target <= $REMOTE_TARGET"
  awk -v c="$hm" -v w="$wmed" -v l="$lmed" -v s="$smed" -v sb="$sbase" -v b="$bmed" -v dh="$dmin" 'BEGIN {
    if (w == "-" || l == "-") { print "  (no daemon figures: see the warnings)"; exit }
    printf "  daemon (medians): wall %.1f ms/link = lookup %.1f ms (manifest + result from the tier, stat check of every input)\n", w, l / 1000
    printf "                    + %.1f ms fetching the 130 MB output from the tier (hashed behind the writer), rename, reply\n", w - l / 1000
    printf "  client side %.1f ms (= client wall - daemon wall: process start, key, gRPC)\n", c * 1000 - w
    printf "  remote reads %.1f MiB per hit (remote_hits +%s or more); busy %d ms after the client returned (backfill into the local store)\n",
      b / 1048576, dh, (s > sb ? s - sb : 0)
  }'
  say "  CPU per hit (medians, 10 ms ticks): worker daemon $cpu_reply ms until the client returned + $cpu_after ms after (backfill);" \
    "tier server $cpu_srv ms"
  say "  per round (ms, rounds 1..$REMOTE_RUNS): hit $hlist; stock $slist"
  # own breakdown: the raw costs of what a remote hit has to do
  hex=$(sha256sum "$REF" | cut -d' ' -f1)
  local f_null f_file f_hash f_cp
  if [[ "$tier" == http ]]; then
    f_null=$(ms3 curl -sf -o /dev/null "$TIER_URL/cas/$hex")
    f_file=$(ms3 curl -sf -o "$base/raw.fetch" "$TIER_URL/cas/$hex")
  else # the better of one GET and linkd's GETRANGE pieces
    local g_null g_file
    g_null=$(ms3 "$REDIS_FETCH" "$base/srv/redis.sock" "cas:$hex" /dev/null 0 1)
    f_null=$(ms3 "$REDIS_FETCH" "$base/srv/redis.sock" "cas:$hex" /dev/null $((2 << 20)) 1)
    f_file=$(ms3 "$REDIS_FETCH" "$base/srv/redis.sock" "cas:$hex" "$base/raw.fetch" $((2 << 20)) 1)
    say "  fetch with one GET instead of 2 MiB GETRANGE pieces: $g_null ms to /dev/null"
    [[ "$g_null" == - || "$f_null" == - ]] || ((g_null >= f_null)) || f_null=$g_null
  fi
  if command -v openssl >/dev/null; then f_hash=$(ms3 openssl dgst -sha256 "$REF"); else f_hash=$(ms3 sha256sum "$REF"); fi
  f_cp=$(ms3 sh -c 'rm -f "$2"; dd if="$1" of="$2" bs=1M' sh "$REF" "$base/raw.copy")
  local f_rm ts=() t0
  for i in 1 2 3; do
    cp "$REF" "$base/raw.copy"; sync -f "$base/raw.copy" 2>/dev/null || sync
    t0=$(date +%s%N); rm -f "$base/raw.copy"; ts+=($(( ($(date +%s%N) - t0) / 1000000 )))
  done
  f_rm=$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p)
  rm -f "$base/raw.fetch" "$base/raw.copy"
  say "  own breakdown (medians of 3, ms): fetch the output blob from the tier to /dev/null $f_null," \
    "to a file beside the output $f_file ($( [[ $tier == http ]] && echo curl || echo "bench/redis_fetch.c")); SHA-256 of it $f_hash" \
    "($(command -v openssl >/dev/null && echo 'openssl, the library linkd uses' || echo sha256sum));" \
    "write it to a new file beside the output (dd bs=1M, from the page cache) $f_cp; unlink a written-back copy of it $f_rm" \
    "(a hit renames over the previous output; stock LLD unlinks the old one in a background thread)"
  w_stop "$B"
  stop_server "$TIER_PID"

  r=$(ratio "$hm" "$sm")
  row "W1 remote hit ($tier, empty local store)$note" "$(fmt_s "$sm")" "$(fmt_s "$hm")" "$r" "<= $REMOTE_TARGET" "$(pass "$r" "$REMOTE_TARGET")"
  # Against the transport alone: fetching the blob to /dev/null plus writing
  # a new file of it (the hit also hashes it, overlapped with both).
  local alone
  alone=$(awk -v a="$f_null" -v b="$f_cp" 'BEGIN{ if (a == "-" || b == "-") print ""; else printf "%.4f", (a + b) / 1000 }')
  r=$(ratio "$hm" "$alone")
  row "W1 remote hit ($tier) vs fetch + write alone" "$(fmt_s "$alone")" "$(fmt_s "$hm")" "$r" "<= $REMOTE_ALONE_TARGET" "$(pass "$r" "$REMOTE_ALONE_TARGET")"
  REMOTE_HIT[$tier]=$hm
  row "W1 remote hit ($tier): daemon wall, lookup" "-" \
    "$(awk -v w="$wmed" -v l="$lmed" 'BEGIN{ if (w == "-" || l == "-") print "-"; else printf "%.0f ms, %.1f ms", w, l / 1000 }')" "-" "(info)" "-"
}
if ((REMOTE)); then
  hdr "remote: W1 from a remote tier with an empty local store, $REMOTE_RUNS runs per tier"
  mkdir -p "$T/remote"
  REF="$T/remote/out.stock"
  "$STOCK" "${W1_ARGS[@]}" -o "$REF" || die "stock W1 link failed" 1
  say "  worker A links W1 (a miss) and pushes it; worker B: one untimed remote hit, then per run"
  say "  linkd cache clear (local store empty, stat cache kept) and a timed W1 link (a remote hit)"
  REDIS_FETCH="$T/remote/redis_fetch"
  "$CC" -O2 -o "$REDIS_FETCH" "$HERE/redis_fetch.c" || die "cannot build bench/redis_fetch.c" 2
  declare -A REMOTE_HIT=()
  for tier in http redis; do remote_tier "$tier"; done
  if [[ -n "${REMOTE_HIT[http]:-}" && -n "${REMOTE_HIT[redis]:-}" ]]; then
    r=$(ratio "${REMOTE_HIT[redis]}" "${REMOTE_HIT[http]}")
    row "W1 remote hit: redis vs http (stock column: http)" "$(fmt_s "${REMOTE_HIT[http]}")" "$(fmt_s "${REMOTE_HIT[redis]}")" "$r" "<= 1.0" "$(pass "$r" 1.0)"
  fi
fi

# --- store scaling: hit lookup with 100 .. 100,000 stored entries ---------------------------
# Runs last: it stops the daemon and restarts it on a store of its own for each
# size. The store first holds one real entry (a hello link); then synthetic
# manifests (actions rows of the real manifest's size, correct checksums) and
# as many blob rows are added with the daemon stopped, up to N manifests.
stop_daemon() {
  "$LINKD" stop >/dev/null 2>&1 || true
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -n "$DPID" && -d "/proc/$DPID" ]] || break
    sleep 0.05
  done
  [[ -z "$DPID" || ! -d "/proc/$DPID" ]] || warn "daemon $DPID still running after linkd stop"
}
if ((SCALE)); then
  hdr "store scaling: hello hits with 100 .. 100,000 stored manifests ($SCALE_HITS hits each)"
  SC="$T/scale/cache"; HOUT="$T/scale/hello"; d="$T/res/scale"
  mkdir -p "$T/scale" "$d"
  refresh_pids; stop_daemon
  export LINKD_CACHE_DIR="$SC"
  hq=$(q "$CLIENT" "${W2_ARGS[@]}" -o "$HOUT")
  "$CLIENT" "${W2_ARGS[@]}" -o "$HOUT" || broken "scaling: first hello link failed"
  refresh_pids; settle >/dev/null
  [[ "$(last_cache_result)" == miss ]] || warn "scaling: first link was $(last_cache_result), expected miss"
  stop_daemon
  read -r have _ vb _ _ < <(python3 "$LIB" storeinfo "$SC/index.sqlite")
  say "  real hello manifest: $vb bytes; synthetic manifests get $((vb * 3 / 4))-$((vb * 5 / 4)) random bytes each"
  printf '  %-9s %7s %8s %22s %20s %5s %15s %13s %9s\n' manifests "db MiB" "usage()" "lookup med/p90/max us" \
    "client wall med/max" ">5ms" "idle daemon CPU" "start+1st hit" "outside"
  declare -A SC_LOOK SC_WALL
  for N in 100 1000 10000 100000; do
    if ((N > have)); then
      t0=$(date +%s%N)
      python3 "$LIB" populate "$SC/index.sqlite" "$((N - have))" "$vb" >/dev/null ||
        { broken "scaling: cannot populate the store to $N"; break; }
      pop_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    fi
    read -r have blobs _ dbmib usage_ms < <(python3 "$LIB" storeinfo "$SC/index.sqlite")
    t0=$(date +%s%N)
    "$CLIENT" "${W2_ARGS[@]}" -o "$HOUT" || { broken "scaling: hello link failed at $N"; break; }
    first_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    refresh_pids
    [[ -n "$DPID" && -d "/proc/$DPID" ]] || { broken "scaling: no daemon after the link at $N"; break; }
    for _ in 1 2 3; do "$CLIENT" "${W2_ARGS[@]}" -o "$HOUT"; done
    l0=$(log_lines)
    ext_begin
    if [[ -n "$HYPERFINE" ]]; then
      hyperfine -N --style none --runs "$SCALE_HITS" --export-json "$d/n$N.json" -n "hit@$N" "$hq" \
        >>"$d/hyperfine.log" 2>&1 || { broken "scaling: hits failed at $N"; break; }
    else
      for ((i = 0; i < SCALE_HITS; i++)); do
        python3 "$LIB" time "$d/n$N.$i.json" "hit@$N" "$hq" 2>>"$d/hyperfine.log" ||
          { broken "scaling: hits failed at $N"; break 2; }
      done
    fi
    ext_end "scaling@$N" quiet
    tail -n +"$((l0 + 1))" "$T/state/linkd.log" >"$d/n$N.log"
    # idle: nothing but the maintenance pass every second
    a=$(daemon_ticks); sleep "$SCALE_IDLE"; b=$(daemon_ticks)
    idle=$(awk -v a="$a" -v b="$b" -v s="$SCALE_IDLE" -v hz="$(getconf CLK_TCK)" 'BEGIN{ printf "%.0f", (b - a) / hz / s * 1000 }')
    read -r _ look p90 mx < <(python3 "$LIB" logstats "$d/n$N.log" lookup_us)
    n_hit=$(grep -c ' cache=hit ' "$d/n$N.log" || true)
    slow=$(grep -o 'lookup_us=[0-9]*' "$d/n$N.log" | awk -F= '$2 > 5000 { n++ } END { print n + 0 }')
    read -r wmed wmax < <(python3 - "$d" "$N" <<'EOF'
import glob, json, statistics, sys
ts = []
d, n = sys.argv[1], sys.argv[2]
for p in glob.glob("%s/n%s.json" % (d, n)) + glob.glob("%s/n%s.*.json" % (d, n)):
    for r in json.load(open(p))["results"]:
        ts.extend(r.get("times") or [r["mean"]])
print("%s %s" % (statistics.median(ts), max(ts)) if ts else "- -")
EOF
)
    ((n_hit == SCALE_HITS)) || warn "scaling at $N: $n_hit of $SCALE_HITS timed links were cache hits"
    SC_LOOK[$N]=$look; SC_WALL[$N]=$wmed
    printf '  %-9s %7s %5s ms %22s %20s %5s %10s ms/s %10s ms %8s%%\n' "$N" "$dbmib" "$usage_ms" \
      "$(awk -v a="$look" -v b="$p90" -v c="$mx" 'BEGIN{ printf "%.0f / %.0f / %.0f", a, b, c }')" \
      "$(fmt_s "$wmed") / $(fmt_s "$wmax")" "$slow" "$idle" "$first_ms" "$EXT_PCT"
    echo "$N $have $blobs $dbmib $usage_ms $look $p90 $mx $wmed $wmax $slow $idle $first_ms ${pop_ms:-0}" >>"$d/table"
    stop_daemon
  done
  say "  (usage() = the count/sum queries the maintenance pass runs every second under the index lock,"
  say "   timed here with python's sqlite3; idle daemon CPU = daemon process over ${SCALE_IDLE} s after the hits;"
  say "   >5ms = hits whose lookup took more than 5 ms; start+1st hit = daemon autostart + first hit;"
  say "   outside = CPU other processes used during the hits, share of $(nproc) cores)"
  export LINKD_CACHE_DIR="$T/cache"
  for N in 100 1000 10000 100000; do
    [[ -n "${SC_LOOK[$N]:-}" ]] || continue
    row "store $(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$N") manifests: hit lookup, client wall" "-" \
      "$(us "${SC_LOOK[$N]}"), $(fmt_s "${SC_WALL[$N]}")" "$(ratio "${SC_LOOK[$N]}" "${SC_LOOK[100]:-}")" "(info)" "-"
  done
  if [[ -n "${SC_LOOK[100]:-}" && -n "${SC_LOOK[100000]:-}" ]]; then
    r=$(ratio "${SC_LOOK[100000]}" "${SC_LOOK[100]}")
    row "hit lookup, 100,000 / 100 manifests" "$(us "${SC_LOOK[100]}")" "$(us "${SC_LOOK[100000]}")" "$r" "<= $SCALE_TARGET" "$(pass "$r" "$SCALE_TARGET")"
    row "hit client wall, 100,000 / 100 manifests" "$(fmt_s "${SC_WALL[100]}")" "$(fmt_s "${SC_WALL[100000]}")" "$(ratio "${SC_WALL[100000]}" "${SC_WALL[100]}")" "(info)" "-"
  fi
fi

for pr in "${INFO_ROWS[@]}"; do printf '%s\n' "$pr" >>"$SUMMARY"; done

# --- summary ---------------------------------------------------------------------------------
hdr "summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - START_TS )) s, load average now $(loadavg))"
python3 "$LIB" summary "$SUMMARY"
say "ratio = linkd median / stock median (wall clock, same run); stock = $STOCK"
say "cache off = --linkd-no-cache (LLD runs in a zygote child); miss = cache on, new key"
say "(LLD runs, result stored after the reply); hit = output written from the cache"
say "outside load (CPU used by other processes): ${EXT_NOTES[*]:-n/a}"
if ((NOISY)); then
  say "WARNING: other processes used >= 10% of the machine during a workload: the ratios are"
  say "         unreliable (CPU per link is less sensitive); rerun on a quiet machine."
fi
for w in "${WARNINGS[@]}"; do say "warning: $w"; done
if ((BROKEN)); then
  say "RESULT: BROKEN (see messages above)"
  exit 1
fi
exit 0
