#!/usr/bin/env bash
# linkd benchmark: stock ld.lld vs ld.linkd (warm daemon), measured in one run.
#
#   bench/run.sh [--quick] [--runs N] [--w1-runs N] [--links N] [--no-diag] [--keep]
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
CXX="${CXX_FOR_BENCH:-clang++-19}"
LLVM_CONFIG="${LLVM_CONFIG:-llvm-config-19}"
LIB="$HERE/benchlib.py"

W2_RUNS=5
W1_RUNS=7
LINKS=200
DIAG=1
KEEP=0

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
    --quick) W2_RUNS=3; W1_RUNS=3; LINKS=50 ;;
    --runs) W2_RUNS="$2"; shift ;;
    --w1-runs) W1_RUNS="$2"; shift ;;
    --links) LINKS="$2"; shift ;;
    --no-diag) DIAG=0 ;;
    --keep) KEEP=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Targets (ratios are linkd median / stock median).
W1_TARGET=1.03
W2_TARGET=0.80
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
cleanup() {
  local rc=$?
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

mkdir -p "$T/run" "$T/state" "$T/cache" "$T/src" "$T/res" "$T/cwd" "$T/w1"
for m in stock off miss hit; do mkdir -p "$T/w2/$m"; done
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
  LINKD_MAX_SIZE LINKD_LOG || true

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

hdr "setup"
say "repo        $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?'))"
say "binaries    $BIN (copied to $T/bin)"
say "stock       $STOCK ($("$STOCK" --version | head -1))"
say "linkd       $("$LINKD" version 2>/dev/null | tr '\n' ' ')"
say "machine     $(nproc) cores, $(uname -r), load average $(loadavg)"
say "runs        W1 $W1_RUNS, W2 $W2_RUNS x $LINKS links (+1 warm-up round each)"
say "timer       ${HYPERFINE:-python benchlib.py}: wall clock, one command at a time, rounds interleaved, medians"

# --- inputs ---------------------------------------------------------------------
cat >"$T/src/hello.cpp" <<'EOF'
#include <iostream>
int main() { std::cout << "hello, world\n"; return 0; }
EOF
cat >"$T/src/big.cpp" <<'EOF'
// W1: a small program that pulls in all of LLVM's targets and every LLD driver,
// linked against the static LLVM 19 and LLD archives (~130 MB output).
#include "lld/Common/Driver.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)
int main(int argc, const char **argv) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmParsers();
  llvm::InitializeAllAsmPrinters();
  llvm::InitializeAllDisassemblers();
  lld::Result r = lld::lldMain(llvm::ArrayRef<const char *>(argv, argc),
                               llvm::outs(), llvm::errs(), LLD_ALL_DRIVERS);
  return r.retCode;
}
EOF
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

# --- daemon helpers ---------------------------------------------------------------
status_field() { # field -> value from `linkd status --json`
  "$LINKD" status --json 2>/dev/null | python3 -c \
    "import json,sys; print(json.load(sys.stdin).get('$1', ''))" 2>/dev/null || true
}
refresh_pids() { DPID=$(status_field pid); ZPID=$(status_field zygote_pid); }
log_lines() { wc -l <"$T/state/linkd.log" 2>/dev/null || echo 0; }
# CPU seconds used so far by the daemon and its zygote, including the link
# children the zygote has reaped (its cutime/cstime).
daemon_cpu() {
  [[ -n "$ZPID" && -r "/proc/$ZPID/stat" ]] || refresh_pids
  awk -v hz="$(getconf CLK_TCK)" -v z="/proc/$ZPID/stat" '
    { sub(/^.*\) /, ""); t += $12 + $13; if (FILENAME == z) t += $14 + $15 }
    END { printf "%.3f", t / hz }' "/proc/$DPID/stat" "/proc/$ZPID/stat" 2>/dev/null || echo 0
}
daemon_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$DPID/stat" 2>/dev/null || echo 0; }
# Waits until the daemon has stopped using CPU (e.g. storing a link's result
# in the cache after the client got its answer). Prints the milliseconds waited.
settle() {
  local t0 a b n=0
  t0=$(date +%s%N)
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
  OWN_CPU=$(awk -v a="$kids" -v b="$(daemon_cpu)" 'BEGIN { printf "%.3f", a + b }')
}
EXT_NOTES=()
NOISY=0
ext_begin() { EXT_T0=$(date +%s%N); EXT_B0=$(machine_busy); own_cpu; EXT_O0=$OWN_CPU; }
ext_end() { # LABEL
  local t1 b1 o1 pct
  t1=$(date +%s%N); b1=$(machine_busy); own_cpu; o1=$OWN_CPU
  pct=$(awk -v t0="$EXT_T0" -v t1="$t1" -v b0="$EXT_B0" -v b1="$b1" -v o0="$EXT_O0" -v o1="$o1" \
    -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" 'BEGIN {
      wall = (t1 - t0) / 1e9; ext = (b1 - b0) / hz - (o1 - o0)
      if (ext < 0) ext = 0
      printf "%.0f", 100 * ext / (wall * n) }')
  say "  outside load during this workload: ${pct}% of $(nproc) cores"
  EXT_NOTES+=("$1 ${pct}%")
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
last_cache_result() { tail -n 1 "$T/state/linkd.log" | grep -o 'cache=[A-Za-z_]*' | cut -d= -f2; }
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
  [[ "$res" == "off:CACHE_DISABLED first:CACHE_MISS again:hit" ]] ||
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
verify "W1 static" "$T/w1/out.stock" "$T/w1/out" "${W1_ARGS[@]}"
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
# per-round token (used for fresh cache keys). Results: $T/res/NAME/.
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
# show NAME PER: prints one line per command; PER = links per run (for per-link figures)
show() {
  local name="$1" per="$2" base
  # settle time of the first command (stock: the daemon has nothing to do) = polling overhead
  base=$(field "$name" 0 10)
  while IFS='|' read -r lab md _ _ mn mx n ccpu dcpu settle dl counts dwall dq drss; do
    printf '  %-22s median %9s  (min %s, max %s, %s runs)' "$lab" "$(fmt_s "$md")" "$(fmt_s "$mn")" "$(fmt_s "$mx")" "$n"
    if ((per > 1)); then printf '  %s/link' "$(fmt_s "$(awk -v a="$md" -v n="$per" 'BEGIN{print a/n}')")"; fi
    printf '\n'
    if [[ -n "$counts" ]]; then
      awk -v ccpu="$ccpu" -v dcpu="$dcpu" -v per="$per" -v settle="$settle" -v base="${base:-40}" -v dwall="$dwall" -v dq="$dq" \
        -v drss="$drss" -v counts="$counts" -v dl="$dl" 'BEGIN {
        printf "  %-22s daemon: %s per run [%s]; wall %.1f ms/link (queue %.1f), child RSS %.0f MiB\n", "",
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
# rows NAME TITLE TARGET: one summary row per linkd mode (commands 1..3 vs command 0)
rows() {
  local s l r k
  s=$(field "$1" 0 2)
  for k in 1 2 3; do
    l=$(field "$1" "$k" 2); r=$(ratio "$l" "$s")
    row "$2, $(field "$1" "$k" 1 | sed 's/^ld.linkd //')${MODE_NOTE[$1.$k]:-}" "$(fmt_s "$s")" "$(fmt_s "$l")" "$r" "<= $3" "$(pass "$r" "$3")"
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

# --- W2: many small links -----------------------------------------------------------
for m in stock off miss hit; do seq -f "$T/w2/$m/a.out.%03g" 1 "$LINKS" >"$T/w2/list.$m"; done
w2cmd() { # MODE J: xargs appends one output name after the trailing "-o"
  case "$1" in
    stock) q xargs -a "$T/w2/list.stock" -n 1 -P "$2" "$STOCK" "${W2_ARGS[@]}" -o ;;
    off) q xargs -a "$T/w2/list.off" -n 1 -P "$2" "$CLIENT" --linkd-no-cache "${W2_ARGS[@]}" -o ;;
    # a fresh working directory per round = fresh cache keys (all paths are absolute)
    miss) q env -C "$T/cwd/@ROUND@" xargs -a "$T/w2/list.miss" -n 1 -P "$2" "$CLIENT" "${W2_ARGS[@]}" -o ;;
    hit) q xargs -a "$T/w2/list.hit" -n 1 -P "$2" "$CLIENT" "${W2_ARGS[@]}" -o ;;
  esac
}
for j in 1 2; do
  hdr "W2: $LINKS links of hello.o, -j$j (xargs -P$j), $W2_RUNS runs"
  ext_begin
  bench "w2_j$j" "$W2_RUNS" \
    "stock ld.lld" "$(w2cmd stock $j)" \
    "ld.linkd cache off" "$(w2cmd off $j)" \
    "ld.linkd cache miss" "$(w2cmd miss $j)" \
    "ld.linkd cache hit" "$(w2cmd hit $j)" || continue
  ext_end "W2 -j$j"
  show "w2_j$j" "$LINKS"
  check_links "w2_j$j" 1 "$LINKS" CACHE_DISABLED
  check_links "w2_j$j" 2 "$LINKS" CACHE_MISS
  check_links "w2_j$j" 3 "$LINKS" hit
  rows "w2_j$j" "W2 $LINKS links -j$j" "$W2_TARGET"
  s=$(field "w2_j$j" 0 2); l=$(field "w2_j$j" 1 2)
  INFO_ROWS+=("W2 -j$j per link, cache off"$'\t'"$(fmt_s "$(awk -v a="$s" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(fmt_s "$(awk -v a="$l" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(ratio "$l" "$s")"$'\t'"(info)"$'\t'"-")
  sc=$(field "w2_j$j" 0 8); lc=$(awk -v a="$(field "w2_j$j" 1 8)" -v b="$(field "w2_j$j" 1 9)" 'BEGIN{print a+b}')
  INFO_ROWS+=("W2 -j$j CPU per link, cache off"$'\t'"$(fmt_s "$(awk -v a="$sc" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(fmt_s "$(awk -v a="$lc" -v n="$LINKS" 'BEGIN{print a/n}')")"$'\t'"$(ratio "$lc" "$sc")"$'\t'"(info)"$'\t'"-")
done
cmp_outputs off miss hit

# --- W1: one large static link --------------------------------------------------------
hdr "W1: static LLVM 19 + LLD link (${#W1_ARGS[@]} args), $W1_RUNS runs"
ext_begin
if bench w1 "$W1_RUNS" \
  "stock ld.lld" "$(q "$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock")" \
  "ld.linkd cache off" "$(q "$CLIENT" --linkd-no-cache "${W1_ARGS[@]}" -o "$T/w1/out.off")" \
  "ld.linkd cache miss" "$(q env -C "$T/cwd/@ROUND@" "$CLIENT" "${W1_ARGS[@]}" -o "$T/w1/out.miss")" \
  "ld.linkd cache hit" "$(q "$CLIENT" "${W1_ARGS[@]}" -o "$T/w1/out.hit")"; then
  ext_end W1
  show w1 1
  check_links w1 1 1 CACHE_DISABLED
  check_links w1 2 1 CACHE_MISS
  check_links w1 3 1 hit
  rows w1 "W1 static LLVM+LLD" "$W1_TARGET"
  for m in off miss hit; do
    cmp -s "$T/w1/out.stock" "$T/w1/out.$m" || broken "W1: timed output ($m) differs from stock"
  done
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
  rss_res=$(awk -v k="$tot" -v t="$RSS_TARGET_MIB" 'BEGIN{ print (k / 1024 <= t) ? "PASS" : "FAIL" }')
  row "idle VmRSS daemon alone" "-" "$(mib "$d_rss") MiB" "-" "(info)" "-"
  row "idle VmRSS daemon+zygote" "-" "$(mib "$tot") MiB" "-" "<= $RSS_TARGET_MIB MiB" "$rss_res"
else
  broken "the daemon is gone before the idle-memory measurement"
fi
say "  links: $(status_field links_total) served (failed $(status_field links_failed), crashed $(status_field links_crashed))"
say "  cache: $("$LINKD" stats 2>/dev/null | tr -s ' \n' ' ' | cut -c1-300)"
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
