#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/relink_patch.sh [--runs N] [--keep] [BIN]: incremental relinks, step two.
# W1 (bench/w1_big.cpp: a program linked against the static LLVM 19 and LLD
# archives, ~130 MB) with one knob in its user object: the first link by
# stock LLD with -Map, then the knob's constant changes (an edit that moves
# nothing) and the relink is timed three ways, in one run, rounds
# interleaved, medians:
#   patch  `linkd-lld relink-patch` (lib/incremental/patcher.h): maps the
#          old output, parses the map, builds the changed section and
#          re-applies its relocations, recomputes the build-id (hashing the
#          whole file once), writes a copy with the edits and renames it;
#   patch-in-place  the same, writing only the edits over the old output
#          (reset, untimed, before each round);
#   lld    stock ld.lld, the full link of the same inputs;
#   mold   mold, the same link (when installed).
#   daemon `ld.linkd --linkd-incremental` through a daemon of this run (step
#          three: the client, the daemon, the link child's state check,
#          the patch with the kept chunk hashes, and its write over the
#          spare; the first relink after the full link writes the ready
#          spare, or copies if it is not made yet), the edit
#          alternating each relink;
#          then a few relinks in verify mode (incremental_verify: LLD links
#          in full beside each patch), whose differences must be 0.
# Every patched output is compared with LLD's, byte for byte (the oracle);
# a difference fails the bench. Prints the ratios against lld and mold.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUNS=5
KEEP=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: bench/relink_patch.sh [--runs N] [--keep] [BIN]" >&2; exit 2 ;;
  esac
done
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
LIB="$HERE/benchlib.py"
CXX=clang++-19
LLVM_CONFIG=llvm-config-19
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}"
MOLD="${MOLD-$(command -v mold || true)}"
T=$(mktemp -d /tmp/linkd-relink-patch.XXXXXX)
((KEEP)) && echo "keeping $T" >&2 || trap 'rm -rf "$T"' EXIT
die() { echo "relink_patch: $*" >&2; exit 2; }
say() { echo "$*"; }

# The user object, with a knob whose constant the edit changes.
knob() { # VALUE OUT
  { cat "$HERE/w1_big.cpp"
    printf 'extern "C" int linkd_bench_knob(int x) { return x * 3 + %s; }\n' "$1"
  } >"$T/big.cpp"
  # shellcheck disable=SC2046
  "$CXX" $("$LLVM_CONFIG" --cxxflags) -O2 -c "$T/big.cpp" -o "$2" ||
    die "cannot compile big.cpp (LLVM/LLD 19 headers)"
}
knob 7 "$T/before.o"
knob 9 "$T/after.o"
cmp -s "$T/before.o" "$T/after.o" && die "the edit changed nothing"
cp "$T/before.o" "$T/big.o"

LLD_LIBDIR="$("$LLVM_CONFIG" --libdir)"
LLD_LIBS=()
for l in MinGW ELF COFF MachO Wasm Common; do
  LLD_LIBS+=("$LLD_LIBDIR/liblld$l.a")
done
# shellcheck disable=SC2046
"$CXX" -### "$T/big.o" -o "$T/unused" --ld-path="$STOCK" "${LLD_LIBS[@]}" \
  $("$LLVM_CONFIG" --link-static --ldflags) $("$LLVM_CONFIG" --link-static --libs all) \
  $("$LLVM_CONFIG" --link-static --system-libs) 2>"$T/big.driver" ||
  die "clang -### failed for the static LLVM link"
mapfile -t ARGS < <(python3 "$LIB" linker-argv "$T/big.driver")
((${#ARGS[@]} > 0)) || die "could not extract the linker argv"

# The first link, with its map; the edited object takes big.o's place.
"$STOCK" "${ARGS[@]}" -Map "$T/w1.map" -o "$T/w1.old" || die "the first link failed"
cp "$T/after.o" "$T/big.o"
"$STOCK" "${ARGS[@]}" -o "$T/w1.lld" || die "the full relink failed"
say "W1          $(stat -c %s "$T/w1.old") bytes, ${#ARGS[@]} linker arguments"
verdict=$("$BIN/linkd-lld" relink-patch --map "$T/w1.map" --object "$T/big.o" \
  "$T/w1.old" "$T/before.o" "$T/after.o" -o "$T/w1.patched") ||
  die "no patch: $verdict"
say "patch       $verdict"
cmp "$T/w1.patched" "$T/w1.lld" || die "the patch differs from LLD's full link"
say "oracle      the patched output is LLD's full link, byte for byte"

q() { python3 "$LIB" quote "$@"; }
declare -a labels=(patch patch-in-place lld) cmds=(
  "$(q "$BIN/linkd-lld" relink-patch --map "$T/w1.map" --object "$T/big.o" \
    "$T/w1.old" "$T/before.o" "$T/after.o" -o "$T/w1.patched")"
  "$(q "$BIN/linkd-lld" relink-patch --map "$T/w1.map" --object "$T/big.o" \
    "$T/w1.inplace" "$T/before.o" "$T/after.o" --in-place)"
  "$(q "$STOCK" "${ARGS[@]}" -o "$T/w1.lld")")
if [[ -n $MOLD ]]; then
  labels+=(mold)
  cmds+=("$(q "$MOLD" "${ARGS[@]}" -o "$T/w1.mold")")
fi
for ((i = 0; i < RUNS; i++)); do
  for k in "${!labels[@]}"; do
    [[ ${labels[k]} == patch-in-place ]] && cp "$T/w1.old" "$T/w1.inplace"
    python3 "$LIB" time "$T/r$i.k$k.json" "${labels[k]}" "${cmds[k]}" ||
      die "${labels[k]} failed"
  done
  cmp -s "$T/w1.patched" "$T/w1.lld" || die "round $i: the patch differs from LLD's"
  cmp -s "$T/w1.inplace" "$T/w1.lld" || die "round $i: the patch in place differs from LLD's"
done

# The daemon path: a daemon of this run, its state and cache under $T.
export LINKD_SOCKET="$T/run/linkd.sock" LINKD_STATE_DIR="$T/state"
export LINKD_CACHE_DIR="$T/cache" LINKD_CONFIG="$T/linkd.conf"
export LINKD_IDLE_TIMEOUT=900 # a safety net if this script is killed
unset LINKD_DISABLE LINKD_BIN LINKD_QUIET LINKD_NOCACHE LINKD_LOG \
  LINKD_INCREMENTAL LINKD_INCREMENTAL_VERIFY LINKD_REMOTE || true
: >"$LINKD_CONFIG"
trap '"$BIN/linkd" stop >/dev/null 2>&1 || true; ((KEEP)) || rm -rf "$T"' EXIT
stat_of() { "$BIN/linkd" stats --json | python3 -c \
  "import json,sys; print(json.load(sys.stdin).get('$1', 0))"; }
inc() { "$BIN/ld.linkd" --linkd-incremental "${ARGS[@]}" -o "$T/w1.inc"; }
cp "$T/before.o" "$T/big.o"
inc || die "the daemon's first link failed"
cmp -s "$T/w1.inc" "$T/w1.old" || die "the daemon's first link differs from LLD's"
for ((i = 0; i < RUNS; i++)); do
  for edit in after before; do
    cp "$T/$edit.o" "$T/big.o"
    python3 "$LIB" time "$T/d$i.$edit.json" daemon "$(q "$BIN/ld.linkd" \
      --linkd-incremental "${ARGS[@]}" -o "$T/w1.inc")" || die "daemon failed"
    want=$([[ $edit == after ]] && echo w1.lld || echo w1.old)
    cmp -s "$T/w1.inc" "$T/$want" || die "round $i: the daemon's relink differs from LLD's"
  done
done
patches=$(stat_of incremental_patches)
((patches == 2 * RUNS)) || die "$patches of $((2 * RUNS)) daemon relinks patched (linkd stats)"
say "daemon      $patches of $((2 * RUNS)) relinks patched: $(grep -cE 'write=(ready_)?spare' \
  "$T/state/linkd.log") over the spare, $(grep -c 'write=copy' "$T/state/linkd.log") as a copy"
"$BIN/linkd" stop >/dev/null
echo "incremental_verify = true" >"$LINKD_CONFIG"
for edit in after before after before; do
  cp "$T/$edit.o" "$T/big.o"
  inc || die "a relink in verify mode failed"
done
verified=$(stat_of incremental_verified) differ=$(stat_of incremental_verify_differences)
((verified == 4 && differ == 0)) || die "verify mode: $verified verified, $differ differences"
say "verify      $verified relinks patched and linked in full beside: $differ differences"

python3 - "$T" "$RUNS" "${labels[@]}" <<'EOF'
import json, statistics, sys
d, runs, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = {}
for k, name in enumerate(labels):
    xs = [json.load(open(f"{d}/r{i}.k{k}.json"))["results"][0]["mean"]
          for i in range(runs)]
    med[name] = statistics.median(xs)
    print(f"{name:15s} median {med[name] * 1000:8.1f} ms over {runs} runs")
xs = [json.load(open(f"{d}/d{i}.{e}.json"))["results"][0]["mean"]
      for i in range(runs) for e in ("after", "before")]
med["daemon"] = statistics.median(xs)
print(f"{'daemon':15s} median {med['daemon'] * 1000:8.1f} ms over {len(xs)} relinks")
for p in ("patch", "patch-in-place", "daemon"):
    print(f"ratio       {p}/lld {med[p] / med['lld']:.3f}"
          + (f", {p}/mold {med[p] / med['mold']:.3f}" if "mold" in med else ""))
EOF
