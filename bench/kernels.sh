#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Kernel links as GPU/JIT compilers do them (docs/kernels.md):
# N distinct tiny AMDGPU kernels (gfx90a), each linked `-shared k.o -o k.hsaco`
#   stock     stock lld -flavor gnu as a subprocess with two temp files (Triton, IREE)
#   ld.linkd  the same through a PATH symlink `lld` -> ld.linkd
#   library   liblinkd from memory (bench/kernels_lib.c), no temp files
#   wheel     the wheel installed offline in a fresh venv, a Python JIT loop
#             on the module (bench/kernels_wheel.py) with no linkd installed:
#             stock ld.lld from PATH links in a private directory
# with the cache off, on a miss and on a hit (a new process each time), on
# 1 and 2 threads; ratios against the stock subprocess at the same thread
# count, all in one run. --repeat R runs every mode R times and reports the
# medians.
#
#   bench/kernels.sh [--n 500] [--repeat 1]
#
# The daemons are private (own socket, state and cache under a temp dir) and
# stopped at the end. Every output is compared with stock's; a difference
# or a link that fell back to a local run makes the script exit 1.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
BIN="$BUILD_DIR/bin"
LIBDIR="$BUILD_DIR/lib"
STOCK="${STOCK_LLD:-/usr/lib/llvm-19/bin/lld}"
N=500
REPEAT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    *) echo "usage: $0 [--n N] [--repeat R]" >&2; exit 2 ;;
  esac
done
for f in "$BIN/ld.linkd" "$BIN/linkd" "$LIBDIR/liblinkd.so"; do
  [ -e "$f" ] || { echo "missing $f: build linkd first" >&2; exit 2; }
done

WORK="$(mktemp -d /tmp/linkd-kbench.XXXXXX)"
export LINKD_SOCKET="$WORK/run/l.sock" LINKD_STATE_DIR="$WORK/state"
export LINKD_CONFIG=/dev/null LINKD_QUIET=1 TMPDIR="$WORK/tmp"
mkdir -p "$WORK/tmp" "$WORK/bin" "$WORK/k"
cleanup() { "$BIN/linkd" stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

echo "compiling $N kernels ..." >&2
cat > "$WORK/k.c" <<'C'
__attribute__((amdgpu_kernel)) void scale(float *p, float f) {
  p[__builtin_amdgcn_workitem_id_x()] *= f * K;
}
C
seq 0 $((N - 1)) | xargs -P 2 -I{} clang-19 --target=amdgcn-amd-amdhsa \
  -mcpu=gfx90a -nogpulib -O2 -DK={}.5f -c "$WORK/k.c" -o "$WORK/k/k{}.o"
clang-19 -O2 -I"$REPO/include" "$HERE/kernels_lib.c" -o "$WORK/kernels_lib" \
  -L"$LIBDIR" -llinkd -Wl,-rpath,"$LIBDIR" -lpthread
ln -s "$BIN/ld.linkd" "$WORK/bin/lld"
SUB="python3 $HERE/kernels_subprocess.py"

fresh_daemon() { # a new daemon with an empty cache, warmed by one link
  "$BIN/linkd" stop >/dev/null 2>&1 || true
  export LINKD_CACHE_DIR="$WORK/cache.$1"
  rm -rf "$LINKD_CACHE_DIR" # a repeat's "miss" must not find the last one's
  "$WORK/kernels_lib" "$WORK/k" 1 1 1 >/dev/null
}
verify() { # DIR: every output byte-identical to stock's
  for i in $(seq 0 $((N - 1))); do
    cmp -s "$WORK/stock/k$i.hsaco" "$1/k$i.hsaco" || {
      echo "output k$i.hsaco in $1 differs from stock's" >&2; exit 1; }
  done
}
declare -A T
row() { # key seconds: the samples of one mode, space-separated
  T[$1]="${T[$1]:-} $2"
}
median() {
  python3 -c 'import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))' $1
}

# The wheel in a fresh venv of Debian's python3, installed offline.
/usr/bin/python3 "$REPO/deploy/wheel/make_wheel.py" --version 0.1.0 \
  --module "$REPO/client/liblinkd/python/linkd" --library "$LIBDIR/liblinkd.so.1" \
  --client "$BIN/ld.linkd" --license "$REPO/LICENSE" --out "$WORK/dist" >/dev/null
/usr/bin/python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --no-index --no-cache-dir "$WORK"/dist/linkd-*.whl

for rep in $(seq "$REPEAT"); do
mkdir -p "$WORK/stock" "$WORK/wheel"
for t in 1 2; do
  read -r s f < <($SUB "$STOCK" "$WORK/k" "$N" $t fresh "$WORK/stock")
  [ "$f" = 0 ] || { echo "stock links failed" >&2; exit 1; }
  row "stock.$t" "$s"
done

for t in 1 2; do
  fresh_daemon "client$t"
  mkdir -p "$WORK/c$t"
  read -r s f < <(LINKD_NOCACHE=1 $SUB "$WORK/bin/lld" "$WORK/k" "$N" $t fresh "$WORK/c$t")
  row "client.off.$t" "$s"; verify "$WORK/c$t"
  read -r s f < <($SUB "$WORK/bin/lld" "$WORK/k" "$N" $t fixed)
  row "client.miss.$t" "$s"
  read -r s f < <($SUB "$WORK/bin/lld" "$WORK/k" "$N" $t fixed "$WORK/c$t")
  row "client.hit.$t" "$s"; verify "$WORK/c$t"
  read -r s f < <($SUB "$WORK/bin/lld" "$WORK/k" "$N" $t fresh)
  row "client.freshnames.$t" "$s"
done

for t in 1 2; do
  fresh_daemon "lib$t"
  for mode in off miss hit; do
    mkdir -p "$WORK/l$mode$t"
    read -r s hits local f < <("$WORK/kernels_lib" "$WORK/k" "$N" $t \
      $([ $mode = off ] && echo 1 || echo 0) "$WORK/l$mode$t")
    [ "$f" = 0 ] && [ "$local" = 0 ] || {
      echo "library $mode t=$t: $f failed, $local linked locally" >&2; exit 1; }
    [ $mode != hit ] || [ "$hits" = "$N" ] || {
      echo "library hit t=$t: only $hits of $N were hits" >&2; exit 1; }
    [ $mode = hit ] || [ "$hits" = 0 ] || {
      echo "library $mode t=$t: $hits of $N were hits" >&2; exit 1; }
    row "lib.$mode.$t" "$s"; verify "$WORK/l$mode$t"
  done
done
"$BIN/linkd" stop >/dev/null 2>&1 || true # no daemon: none is installed
# Stock and the wheel in turns, link by link (kernels_wheel.py), three
# passes: the two paths cost nearly the same (LLD's own start dominates), so
# only turns this fine keep the machine's drift out of the ratio.
for j in 1 2 3; do
  read -r s w pair served f < <(env -u LINKD_BIN PATH="$(dirname "$STOCK"):/usr/bin:/bin" \
    "$WORK/venv/bin/python" "$HERE/kernels_wheel.py" "$WORK/k" "$N" "$WORK/wheel" "$STOCK")
  [ "$f" = 0 ] && [ "$served" = "local=$N" ] || {
    echo "wheel without linkd: $f failed or differ from stock, served $served" >&2; exit 1; }
  row "stock.w" "$s"; row "wheel.local.w" "$w"; PAIRS="${PAIRS:-} $pair"
  verify "$WORK/wheel"
done
done

printf '\n%d links of distinct tiny gfx90a kernels, %s, median of %d runs\n' \
  "$N" "$(nproc) cores" "$REPEAT"
printf '%-34s %7s %9s %7s %s\n' "mode" "threads" "ms/link" "ratio" "target"
line() { # key label target
  local t="${1##*.}" s base
  s="$(median "${T[$1]}")"; base="$(median "${T[stock.${1##*.}]}")"
  python3 - "$2" "$t" "$s" "$base" "$N" "$3" <<'PY'
import sys
label, t, s, base, n, target = sys.argv[1:]
s, base, n = float(s), float(base), int(n)
ratio = s / base
verdict = ""
if target:
    verdict = "<= %s %s" % (target, "ok" if ratio <= float(target) else "MISSED")
print("%-34s %7s %9.3f %6.3fx %s" % (label, t, 1000 * s / n, ratio, verdict))
PY
}
for t in 1 2; do
  line "stock.$t" "stock lld subprocess" ""
  line "client.off.$t" "ld.linkd subprocess, cache off" ""
  line "client.miss.$t" "ld.linkd subprocess, miss" ""
  line "client.hit.$t" "ld.linkd subprocess, hit" "0.25"
  line "client.freshnames.$t" "ld.linkd, fresh temp names again" ""
  line "lib.off.$t" "library, cache off" "0.4"
  line "lib.miss.$t" "library, miss" "0.4"
  line "lib.hit.$t" "library, hit (new process)" "0.05"
done
line "stock.w" "stock lld subprocess (in turns)" ""
line "wheel.local.w" "wheel, fresh venv, no linkd" "1.0"
printf '%-34s %7s %9s %6.3fx\n' "  (median of per-link ratios)" 1 "" "$(median "$PAIRS")"
