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
W1_RUNS=10
LINKS=200
DIAG=1
KEEP=0
QUICK=0

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
    --quick) QUICK=1; W2_RUNS=3; W1_RUNS=3; LINKS=50 ;;
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
die() { printf 'run.sh: error: %s\n' "$*" >&2; exit "${2:-2}"; }
broken() { printf 'run.sh: BROKEN: %s\n' "$*" >&2; BROKEN=1; }

BROKEN=0
START_TS=$(date +%s)

for tool in python3 "$CXX" "$LLVM_CONFIG" cmp xargs; do
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
cleanup() {
  local rc=$?
  if ((DAEMON_STARTED)); then
    "$T/bin/linkd" stop >/dev/null 2>&1 || {
      [[ -n "${DPID:-}" ]] && kill "$DPID" 2>/dev/null || true
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

mkdir -p "$T/bin" "$T/run" "$T/state" "$T/src" "$T/res" "$T/w1" "$T/w2/stock" "$T/w2/linkd"
chmod 700 "$T/run"
for attempt in 1 2 3; do
  wait_for_binaries
  rm -rf "$T/bin" && cp -a "$BIN" "$T/bin" 2>/dev/null &&
    "$T/bin/linkd" version >/dev/null 2>&1 && break
  ((attempt < 3)) || die "cannot copy working binaries from $BIN"
  sleep 5
done
CLIENT="$T/bin/ld.linkd"
LINKD="$T/bin/linkd"

export LINKD_SOCKET="$T/run/linkd.sock"
export LINKD_STATE_DIR="$T/state"
export LINKD_IDLE_TIMEOUT=900   # a safety net if this script is killed
unset LINKD_DISABLE LINKD_BIN LINKD_QUIET || true

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

hdr "setup"
say "repo        $REPO"
say "binaries    $BIN (copied to $T/bin)"
say "stock       $STOCK ($("$STOCK" --version | head -1))"
say "linkd       $("$LINKD" version | tr '\n' ' ')"
say "machine     $(nproc) cores, $(uname -r), load average $(loadavg)"
say "runs        W1 $W1_RUNS, W2 $W2_RUNS x $LINKS links (+1 warm-up run each)"
say "timer       ${HYPERFINE:-python benchlib.py}, wall clock, stock and linkd runs interleaved, medians"

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
say "W1 argv     ${#W1_ARGS[@]} arguments (saved in $T/src/big.driver)"
say "W2 argv     ${#W2_ARGS[@]} arguments"

# --- daemon: autostart it with a first link, check it is really serving ---------
status_field() { # field -> value from `linkd status --json`
  "$LINKD" status --json 2>/dev/null | python3 -c \
    "import json,sys; print(json.load(sys.stdin).get('$1', ''))" 2>/dev/null || true
}

hdr "daemon start and warm-up"
DAEMON_STARTED=1
t0=$(date +%s%N)
"$CLIENT" "${W2_ARGS[@]}" -o "$T/w2/first" || die "first link through ld.linkd failed" 1
t1=$(date +%s%N)
DPID=$(status_field pid)
ZPID=$(status_field zygote_pid)
[[ -n "$DPID" && -d "/proc/$DPID" ]] || {
  cat "$T/state/linkd.log" 2>/dev/null | tail -20 >&2
  die "no daemon is serving $LINKD_SOCKET after the first link (fell back to local linking?)" 1
}
say "cold start  first link incl. daemon autostart: $(( (t1 - t0) / 1000000 )) ms"
say "daemon      pid $DPID, zygote pid $ZPID, jobs $(status_field jobs)"
for _ in 1 2 3 4 5; do "$CLIENT" "${W2_ARGS[@]}" -o "$T/w2/first" >/dev/null; done

# --- byte-identity checks before timing -----------------------------------------
hdr "verify outputs (cmp)"
"$STOCK" "${W2_ARGS[@]}" -o "$T/w2/check.stock" || die "stock hello link failed" 1
"$CLIENT" "${W2_ARGS[@]}" -o "$T/w2/check.linkd" || die "ld.linkd hello link failed" 1
if cmp -s "$T/w2/check.stock" "$T/w2/check.linkd"; then
  say "W2 hello:   identical ($(stat -c %s "$T/w2/check.stock") bytes)"
else
  broken "W2 outputs differ: $T/w2/check.stock vs $T/w2/check.linkd"; KEEP=1
fi
"$T/w2/check.linkd" >/dev/null || broken "the linked hello program does not run"
"$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock" || die "stock static LLVM link failed" 1
"$CLIENT" "${W1_ARGS[@]}" -o "$T/w1/out.linkd" || die "ld.linkd static LLVM link failed" 1
if cmp -s "$T/w1/out.stock" "$T/w1/out.linkd"; then
  W1_BYTES=$(stat -c %s "$T/w1/out.stock")
  say "W1 static:  identical ($W1_BYTES bytes, $(awk -v b="$W1_BYTES" 'BEGIN{printf "%.1f", b/1048576}') MiB)"
else
  broken "W1 outputs differ: $T/w1/out.stock vs $T/w1/out.linkd"; KEEP=1
fi
if ((BROKEN)); then
  say "outputs differ; not timing anything (kept $T)"
  exit 1
fi

# --- timing helpers ---------------------------------------------------------------
# bench NAME RUNS LABEL1 CMD1 LABEL2 CMD2 ...  -> $T/res/NAME.json
# One discarded warm-up round, then RUNS rounds; each round runs every command
# once, in forward order on odd rounds and reverse order on even ones, so that
# background load on a shared machine hits stock and linkd alike.
# (BENCH_QUIET=1: do not print the per-command lines.)
bench() {
  local name="$1" runs="$2"; shift 2
  local labels=() cmds=() files=() order=() args=() i k rj
  while (($#)); do labels+=("$1"); cmds+=("$2"); shift 2; done
  for ((i = 0; i <= runs; i++)); do
    order=("${!labels[@]}")
    if ((i % 2 == 0)); then
      local rev=(); for ((k = ${#order[@]} - 1; k >= 0; k--)); do rev+=("${order[k]}"); done
      order=("${rev[@]}")
    fi
    rj="$T/res/$name.round$i.json"
    args=()
    for k in "${order[@]}"; do args+=("${labels[k]}" "${cmds[k]}"); done
    if [[ -n "$HYPERFINE" ]]; then
      local hargs=() 
      for ((k = 0; k < ${#args[@]}; k += 2)); do hargs+=(-n "${args[k]}" "${args[k + 1]}"); done
      hyperfine -N --style none --runs 1 --export-json "$rj" "${hargs[@]}" \
        >>"$T/res/$name.log" 2>&1 || {
        tail -20 "$T/res/$name.log" >&2
        broken "$name: a benchmarked command failed"
        return 1
      }
    else
      python3 "$LIB" time "$rj" 1 0 "${args[@]}" 2>>"$T/res/$name.log" || {
        broken "$name: a benchmarked command failed"; return 1; }
    fi
    ((i == 0)) || files+=("$rj")
  done
  python3 "$LIB" merge "$T/res/$name.json" "${files[@]}"
  if [[ -z "${BENCH_QUIET:-}" ]]; then
    python3 "$LIB" stats "$T/res/$name.json" |
      while IFS=$'\t' read -r lab med mean sd mn mx n _; do
        printf '  %-34s median %9s  (mean %s ± %s, min %s, max %s, %s runs)\n' "$lab" \
          "$(fmt_s "$med")" "$(fmt_s "$mean")" "$(fmt_s "$sd")" "$(fmt_s "$mn")" "$(fmt_s "$mx")" "$n"
      done
  fi
}
# median NAME INDEX -> seconds
median() { python3 "$LIB" stats "$T/res/$1.json" | sed -n "$(($2 + 1))p" | cut -f2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.3f", a / b; else print "nan" }'; }
pass() { awk -v r="$1" -v t="$2" 'BEGIN{ print (r != "nan" && r + 0 <= t + 0) ? "PASS" : "FAIL" }'; }
fmt_s() { awk -v s="$1" 'BEGIN{ if (s >= 1) printf "%.3f s", s; else printf "%.1f ms", s * 1000 }'; }
q() { python3 "$LIB" quote "$@"; }

log_lines() { wc -l <"$T/state/linkd.log" 2>/dev/null || echo 0; }
# daemon_side FROM_LINE [ARGC]: medians of the daemon's own per-link log fields
# (wall: from taking a job slot to the link child's exit; queue: waiting for a
# slot; the child's max RSS) for the links logged after line FROM_LINE,
# optionally only those with that argc.  DAEMON_WALL_MS is set to the median wall.
daemon_side() {
  local out
  out=$(tail -n +"$(($1 + 1))" "$T/state/linkd.log" 2>/dev/null | python3 -c '
import re, statistics, sys
want = sys.argv[1] if len(sys.argv) > 1 else ""
w, q, r = [], [], []
for line in sys.stdin:
    if " link id=" not in line: continue
    m = dict(re.findall(r"(\w+)=([0-9.]+)", line))
    if "wall_ms" not in m or (want and m.get("argc") != want): continue
    w.append(float(m["wall_ms"])); q.append(float(m.get("queue_ms", 0))); r.append(float(m.get("rss_kib", 0)))
if w:
    print("%.2f\tdaemon side (%d links): wall %.1f ms, queue %.1f ms, child max RSS %.1f MiB (medians)" % (
        statistics.median(w), len(w), statistics.median(w), statistics.median(q), statistics.median(r) / 1024))
' ${2:+"$2"} || true)
  DAEMON_WALL_MS="${out%%$'\t'*}"
  printf '%s' "${out#*$'\t'}"
}
# CPU seconds used so far by the daemon and the zygote, including the link
# children the zygote has reaped (cutime/cstime).
daemon_cpu() {
  local d z; d=$(status_field pid); z=$(status_field zygote_pid)
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); t += $12 + $13 } FILENAME ~ /\/'"$z"'\// { t += $14 + $15 }
    END { printf "%.3f", t / hz }' "/proc/$d/stat" "/proc/$z/stat" 2>/dev/null || echo ""
}
links_total() { status_field links_total; }

# Load from outside this benchmark: CPU the whole machine used (/proc/stat)
# minus what this script's children and the daemon (with its zygote and link
# children) used, as a share of all cores over the wall time.
machine_busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
own_cpu() {
  local kids; times >"$T/res/times"
  kids=$(sed -n 2p "$T/res/times" | awk '{
    n = split($0, f, " "); t = 0
    for (i = 1; i <= n; i++) { split(f[i], p, "m"); sub(/s$/, "", p[2]); t += p[1] * 60 + p[2] }
    print t }')
  awk -v a="$kids" -v b="$(daemon_cpu)" 'BEGIN { printf "%.3f", a + (b == "" ? 0 : b) }'
}
EXT_NOTES=()
ext_begin() { EXT_T0=$(date +%s%N); EXT_B0=$(machine_busy); EXT_O0=$(own_cpu); }
ext_end() { # LABEL
  local t1 b1 o1 pct
  t1=$(date +%s%N); b1=$(machine_busy); o1=$(own_cpu)
  pct=$(awk -v t0="$EXT_T0" -v t1="$t1" -v b0="$EXT_B0" -v b1="$b1" -v o0="$EXT_O0" -v o1="$o1" \
    -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" 'BEGIN {
      wall = (t1 - t0) / 1e9; ext = (b1 - b0) / hz - (o1 - o0)
      if (ext < 0) ext = 0
      printf "%.0f", 100 * ext / (wall * n) }')
  say "  outside load during this workload: ${pct}% of $(nproc) cores"
  EXT_NOTES+=("$1: ${pct}%")
  ((pct < 10)) || NOISY=1
}
NOISY=0
links_failed() { status_field links_failed; }
expect_links() { # NAME BEFORE EXPECTED_DELTA
  local after; after=$(links_total)
  if [[ -z "$after" ]]; then
    broken "$1: the daemon stopped answering"
  elif (( after - $2 != $3 )); then
    broken "$1: the daemon served $((after - $2)) links, expected $3 (clients fell back to local linking?)"
  fi
}

SUMMARY="$T/res/summary.tsv"
: >"$SUMMARY"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SUMMARY"; }

# --- W2: many small links -----------------------------------------------------------
seq -f "$T/w2/stock/a.out.%03g" 1 "$LINKS" >"$T/w2/list.stock"
seq -f "$T/w2/linkd/a.out.%03g" 1 "$LINKS" >"$T/w2/list.linkd"
# xargs appends one output name after the trailing "-o".
W2_STOCK_CMD() { q xargs -a "$T/w2/list.stock" -n 1 -P "$1" "$STOCK" "${W2_ARGS[@]}" -o; }
W2_LINKD_CMD() { q xargs -a "$T/w2/list.linkd" -n 1 -P "$1" "$CLIENT" "${W2_ARGS[@]}" -o; }

declare -A W2_MED_STOCK W2_MED_LINKD
PER_LINK_ROWS=()
for j in 1 2; do
  hdr "W2: $LINKS links of hello.o, -j$j (xargs -P$j), $W2_RUNS runs"
  before=$(links_total); lines=$(log_lines); cpu0=$(daemon_cpu); ext_begin
  bench "w2_j$j" "$W2_RUNS" "stock ld.lld x$LINKS -j$j" "$(W2_STOCK_CMD $j)" \
    "ld.linkd x$LINKS -j$j" "$(W2_LINKD_CMD $j)" || continue
  expect_links "W2 -j$j" "$before" $(( (W2_RUNS + 1) * LINKS ))
  cpu1=$(daemon_cpu); ext_end "W2 -j$j"
  s=$(median "w2_j$j" 0); l=$(median "w2_j$j" 1)
  W2_MED_STOCK[$j]=$s; W2_MED_LINKD[$j]=$l
  r=$(ratio "$l" "$s")
  say "  median: stock $(fmt_s "$s"), linkd $(fmt_s "$l"), ratio $r;" \
    "per link: stock $(fmt_s "$(awk -v s="$s" -v n="$LINKS" 'BEGIN{print s/n}')")," \
    "linkd $(fmt_s "$(awk -v s="$l" -v n="$LINKS" 'BEGIN{print s/n}')")"
  daemon_side "$lines" >"$T/res/ds"; ds=$(cat "$T/res/ds"); [[ -z "$ds" ]] || say "  $ds"
  sc=$(python3 "$LIB" stats "$T/res/w2_j$j.json" | sed -n 1p | cut -f8)
  lc=$(python3 "$LIB" stats "$T/res/w2_j$j.json" | sed -n 2p | cut -f8)
  if [[ -n "$sc" && -n "$lc" && -n "$cpu0" && -n "$cpu1" ]]; then
    awk -v sc="$sc" -v lc="$lc" -v d="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b-a}')" \
      -v n="$LINKS" -v rounds="$((W2_RUNS + 1))" 'BEGIN {
      dl = d / (rounds * n)
      printf "  CPU per link (user+sys): stock %.1f ms; linkd %.1f ms = client %.1f + daemon/zygote/link child %.1f\n",
        sc / n * 1000, (lc / n + dl) * 1000, lc / n * 1000, dl * 1000
      printf "%.1f ms\t%.1f ms\t%.3f\n", sc / n * 1000, (lc / n + dl) * 1000, (lc / n + dl) / (sc / n) }' >"$T/res/cpu"
    sed -n 1p "$T/res/cpu"
    IFS=$'\t' read -r cs cl cr < <(sed -n 2p "$T/res/cpu")
    PER_LINK_ROWS+=("W2 CPU per link, -j$j"$'\t'"$cs"$'\t'"$cl"$'\t'"$cr"$'\t'"(info)"$'\t'"-")
  fi
  row "W2 $LINKS hello links, -j$j" "$(fmt_s "$s")" "$(fmt_s "$l")" "$r" "<= $W2_TARGET" "$(pass "$r" "$W2_TARGET")"
  PER_LINK_ROWS+=("W2 per link (batch/$LINKS), -j$j"$'\t'"$(fmt_s "$(awk -v s="$s" -v n="$LINKS" 'BEGIN{print s/n}')")"$'\t'"$(fmt_s "$(awk -v s="$l" -v n="$LINKS" 'BEGIN{print s/n}')")"$'\t'"$r"$'\t'"(info)"$'\t'"-")
done
for pr in "${PER_LINK_ROWS[@]}"; do printf '%s\n' "$pr" >>"$SUMMARY"; done
bad=0
for i in $(seq -f %03g 1 "$LINKS"); do
  cmp -s "$T/w2/stock/a.out.$i" "$T/w2/linkd/a.out.$i" || bad=$((bad + 1))
done
((bad == 0)) || { broken "W2: $bad of $LINKS timed outputs differ from stock"; KEEP=1; }

# --- W1: one large static link --------------------------------------------------------
hdr "W1: static LLVM 19 + LLD link (${#W1_ARGS[@]} args), $W1_RUNS runs"
before=$(links_total); lines=$(log_lines); ext_begin
if bench w1 "$W1_RUNS" "stock ld.lld (static LLVM)" "$(q "$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock")" \
  "ld.linkd (static LLVM)" "$(q "$CLIENT" "${W1_ARGS[@]}" -o "$T/w1/out.linkd")"; then
  expect_links W1 "$before" $((W1_RUNS + 1))
  ext_end W1
  s=$(median w1 0); l=$(median w1 1); r=$(ratio "$l" "$s")
  say "  median: stock $(fmt_s "$s"), linkd $(fmt_s "$l"), ratio $r"
  daemon_side "$lines" >"$T/res/ds"; ds=$(cat "$T/res/ds"); [[ -z "$ds" ]] || say "  $ds"
  row "W1 static LLVM+LLD link" "$(fmt_s "$s")" "$(fmt_s "$l")" "$r" "<= $W1_TARGET" "$(pass "$r" "$W1_TARGET")"
  cmp -s "$T/w1/out.stock" "$T/w1/out.linkd" || { broken "W1: timed outputs differ"; KEEP=1; }
fi

# --- diagnostics: where a small link's time goes --------------------------------------
if ((DIAG)); then
  hdr "diagnostics: per-process costs (15 interleaved runs each)"
  lines=$(log_lines)
  # LINKD_DISABLE=1 makes the client exec `linkd link` locally (no daemon).
  if BENCH_QUIET=1 bench diag 15 \
    "/bin/true (process floor)" "$(q /bin/true)" \
    "stock ld.lld --version" "$(q "$STOCK" --version)" \
    "ld.linkd --version (via daemon)" "$(q "$CLIENT" --version)" \
    "linkd version (loads LLVM, no daemon)" "$(q "$LINKD" version)" \
    "stock ld.lld hello" "$(q "$STOCK" "${W2_ARGS[@]}" -o "$T/w2/diag.stock")" \
    "ld.linkd hello (via daemon)" "$(q "$CLIENT" "${W2_ARGS[@]}" -o "$T/w2/diag.linkd")" \
    "ld.linkd hello LINKD_DISABLE=1 (local)" "$(q env LINKD_DISABLE=1 "$CLIENT" "${W2_ARGS[@]}" -o "$T/w2/diag.local")"; then
    python3 "$LIB" stats "$T/res/diag.json" | while IFS=$'\t' read -r name med _ _ mn mx _ _; do
      printf '  %-42s median %9s  (min %s, max %s)\n' "$name" "$(fmt_s "$med")" "$(fmt_s "$mn")" "$(fmt_s "$mx")"
    done
    dmed() { python3 "$LIB" stats "$T/res/diag.json" | awk -F'\t' -v n="$1" '$1 == n { printf "%.2f", $2 * 1000 }'; }
    daemon_side "$lines" 2 >"$T/res/ds"; dv_ms=$DAEMON_WALL_MS
    say "  ld.linkd --version: $(cat "$T/res/ds")"
    daemon_side "$lines" $(( ${#W2_ARGS[@]} + 3 )) >"$T/res/ds"; dh_ms=$DAEMON_WALL_MS
    say "  ld.linkd hello:     $(cat "$T/res/ds")"
    cv=$(dmed "ld.linkd --version (via daemon)"); ch=$(dmed "ld.linkd hello (via daemon)")
    cs=$(dmed "ld.linkd hello LINKD_DISABLE=1 (local)"); c0=$(dmed "/bin/true (process floor)")
    sv=$(dmed "stock ld.lld --version"); sh=$(dmed "stock ld.lld hello")
    if [[ -n "$dv_ms" && -n "$dh_ms" && -n "$ch" ]]; then
      awk -v cv="$cv" -v ch="$ch" -v dv="$dv_ms" -v dh="$dh_ms" -v sv="$sv" -v sh="$sh" -v c0="$c0" 'BEGIN {
        printf "  breakdown of one hello link (medians, ms):\n"
        printf "    stock:  process start + LLVM load ~%.1f (= --version), link ~%.1f (= hello - --version)\n", sv, sh - sv
        printf "    linkd:  client side (process, gRPC channel, RPC, reply) ~%.1f (= hello - daemon wall),\n", ch - dh
        printf "            daemon side %.1f, of which fork/exit/reap ~%.1f (daemon wall of --version)\n", dh, dv
        printf "            and the link itself ~%.1f; a null process costs %.1f\n", dh - dv, c0
      }'
    fi
  fi
fi

# --- idle RSS ------------------------------------------------------------------------------
hdr "daemon idle memory"
sleep 1
DPID=$(status_field pid); ZPID=$(status_field zygote_pid)
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status" 2>/dev/null || true; }
pss() { awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || true; }
mib() { awk -v k="${1:-0}" 'BEGIN{ printf "%.1f", k / 1024 }'; }
if [[ -n "$DPID" && -r "/proc/$DPID/status" ]]; then
  sleep 1  # idle a second after the status call too
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
fails=$(links_failed)
[[ -z "$fails" || "$fails" == 0 ]] || broken "the daemon reports $fails failed links"
say "  links served by the daemon: $(links_total) (failed ${fails:-?}, crashed $(status_field links_crashed))"

# --- summary ---------------------------------------------------------------------------------
hdr "summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - START_TS )) s, load average now $(loadavg))"
python3 "$LIB" summary "$SUMMARY"
say "ratios are linkd median / stock median (wall clock); stock = $STOCK"
say "outside load (CPU used by other processes): ${EXT_NOTES[*]:-n/a}"
if ((NOISY)); then
  say "WARNING: other processes used >= 10% of the machine during a workload; the ratios above"
  say "         are unreliable (CPU per link above is less sensitive) - rerun on a quiet machine."
fi
if ((BROKEN)); then
  say "RESULT: BROKEN (see messages above)"
  exit 1
fi
exit 0
