#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Rewriting a large real archive: `linkd rewrite` vs `llvm-objcopy-19
# --prefix-symbols`, measured in one run (target <= 1.0x).
# linkd runs through a private daemon (its Rewrite RPC; the rewrite runs in
# a child forked from the zygote) with the cache off for the figure that is
# compared; the local run (no daemon) and a cache hit are printed for
# information.
#
#   bench/rewrite.sh [--runs N] [--archive A.a] [--keep]
#
# linkd: the archive as a runtime with `--internal-prefix p_`, so every
# external symbol any member defines gets the prefix, in definitions and in
# references across members (undefined libc/libstdc++ names stay). objcopy:
# `--prefix-symbols=p_`, which prefixes every symbol, undefined ones too (not
# the same output, the same amount of work per member or more; fine for
# timing). Both read the same file and write into a fresh directory each run.
# Prints hyperfine's table, both medians and linkd/objcopy; exits 0 whatever
# the figures, 1 if a command fails or linkd's output is not what it should
# be, 2 on a setup problem. Environment: BUILD_DIR (default <repo>/build),
# OBJCOPY (default llvm-objcopy-19), NM (default llvm-nm-19).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
LINKD="$BUILD_DIR/bin/linkd"
OBJCOPY="${OBJCOPY:-llvm-objcopy-19}"
NM="${NM:-llvm-nm-19}"
ARCHIVE=/usr/lib/llvm-19/lib/libLLVMCore.a
RUNS=7
KEEP=0

while (($#)); do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --archive) ARCHIVE=$2; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/rewrite.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

for tool in hyperfine "$OBJCOPY" "$NM" python3; do
  command -v "$tool" >/dev/null || { echo "bench/rewrite.sh: $tool not found" >&2; exit 2; }
done
[[ -x $LINKD && -x $BUILD_DIR/bin/linkd-lld ]] ||
  { echo "bench/rewrite.sh: build linkd first ($LINKD)" >&2; exit 2; }
[[ -f $ARCHIVE ]] || { echo "bench/rewrite.sh: $ARCHIVE not found (llvm-19-dev)" >&2; exit 2; }
((RUNS >= 5)) || { echo "bench/rewrite.sh: --runs must be >= 5 (medians)" >&2; exit 2; }

tmp=$(mktemp -d)
cleanup() { if ((KEEP)); then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
name=$(basename "$ARCHIVE")
cp "$ARCHIVE" "$tmp/$name" # both read the same copy (page cache warm)

# A private daemon; stopped by the EXIT trap.
mkdir -m 700 "$tmp/run"
export LINKD_SOCKET="$tmp/run/linkd.sock" LINKD_STATE_DIR="$tmp/state" \
  LINKD_CACHE_DIR="$tmp/cache" LINKD_QUIET=1
"$LINKD" serve >/dev/null 2>&1 &
for _ in $(seq 100); do "$LINKD" status >/dev/null 2>&1 && break; sleep 0.05; done
"$LINKD" status >/dev/null 2>&1 || { echo "bench/rewrite.sh: the daemon did not start" >&2; exit 2; }
stop_daemon() { "$LINKD" stop >/dev/null 2>&1 || true; }
trap 'stop_daemon; cleanup' EXIT

mkdir -p "$tmp/l" "$tmp/o"
rewrite_args="rewrite --internal-prefix p_ --runtime $tmp/$name --out-dir $tmp/l"
linkd_cmd="LINKD_NOCACHE=1 $LINKD $rewrite_args"
local_cmd="LINKD_DISABLE=1 $LINKD $rewrite_args"
hit_cmd="$LINKD $rewrite_args"
objcopy_cmd="$OBJCOPY --prefix-symbols=p_ $tmp/$name $tmp/o/$name"

# Check once, before timing, that both work and that linkd renamed what it
# should: every defined external symbol starts with p_, and no undefined
# one that the archive defines is left unprefixed.
bash -c "$linkd_cmd" || { echo "bench/rewrite.sh: linkd rewrite failed" >&2; exit 1; }
bash -c "$objcopy_cmd" || { echo "bench/rewrite.sh: objcopy failed" >&2; exit 1; }
symbols() { # nm options... archive: one name per line, no member headers
  "$NM" --format=just-symbols "$@" 2>/dev/null | grep -v -e ':$' -e '^$' | sort -u
}
symbols --defined-only --extern-only "$tmp/$name" > "$tmp/defs.before"
symbols --defined-only --extern-only "$tmp/l/$name" > "$tmp/defs.after"
symbols --undefined-only "$tmp/l/$name" > "$tmp/undef.after"
before=$(wc -l < "$tmp/defs.before")
unprefixed=$(grep -vc '^p_' "$tmp/defs.after" || true)
leftover=$(comm -12 "$tmp/defs.before" "$tmp/undef.after" | wc -l)
echo "$name: $before defined external symbols; after linkd: $unprefixed defined without p_, $leftover references to an old name"
if ((before == 0 || unprefixed != 0 || leftover != 0)); then
  echo "bench/rewrite.sh: linkd's output is not fully renamed" >&2
  exit 1
fi

hyperfine --style basic --warmup 1 --runs "$RUNS" \
  --export-json "$tmp/times.json" \
  -n "linkd rewrite" "$linkd_cmd" \
  -n "llvm-objcopy --prefix-symbols" "$objcopy_cmd" \
  -n "linkd rewrite, no daemon" "$local_cmd" \
  -n "linkd rewrite, cache hit" "$hit_cmd"

python3 - "$tmp/times.json" "$name" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
l = r["linkd rewrite"]["median"]
o = r["llvm-objcopy --prefix-symbols"]["median"]
loc = r["linkd rewrite, no daemon"]["median"]
hit = r["linkd rewrite, cache hit"]["median"]
print(f"{sys.argv[2]}: linkd rewrite (daemon, cache off) median {l*1000:.1f} ms, "
      f"llvm-objcopy --prefix-symbols median {o*1000:.1f} ms, "
      f"ratio {l/o:.2f}x (target <= 1.0x)")
print(f"  for information: no daemon {loc*1000:.1f} ms ({loc/o:.2f}x), "
      f"cache hit {hit*1000:.1f} ms ({hit/o:.2f}x)")
PY
