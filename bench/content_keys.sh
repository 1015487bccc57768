#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/content_keys.sh [BIN]: the figures for keys by content, with
# the binaries in BIN (default: build/bin; e.g. another branch's build/bin
# for "before"). Each figure runs through a fresh daemon of its own:
#   1. an autotools tree (bench/content_keys/configure.ac: 80 conftest links,
#      an `ar cru` static library, one program), `./configure && make` twice
#      (make distclean between), with gcc -B BIN/gcc/ and with clang-19
#      --ld-path: link hits / links of each run, store entries added;
#   2. googletest (/usr/src/googletest, shared libraries + samples) built in
#      checkout A, then in checkout B, LINKD_BASE_DIR = each checkout;
#   3. a cargo project (one dependency, a build script; Debian's
#      librust-cfg-if-dev as a directory source): build, cargo clean, build.
#   1b. binutils-source's libsframe (a real autotools project), the same way.
# Needs autoconf automake googletest cmake ninja-build librust-cfg-if-dev,
# libtool and binutils-source for 1b,
# cargo (~/.cargo/bin or Debian's). Counts, not times: a loaded machine is fine.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
T=$(mktemp -d /tmp/linkd-content-keys.XXXXXX); chmod 700 "$T"
CARGO=${CARGO:-$HOME/.cargo/bin/cargo}; [[ -x "$CARGO" ]] || CARGO=cargo
daemon() { # NAME: a fresh private daemon for one figure
  W=$T/$1; mkdir -p "$W"
  export LINKD_SOCKET=$W/run/sock LINKD_STATE_DIR=$W/state LINKD_CACHE_DIR=$W/cache \
    LINKD_CONFIG=$W/empty.conf LINKD_QUIET=1
  : >"$W/empty.conf"
}
js() { "$BIN/linkd" stats --json 2>/dev/null | python3 -c "import json,sys; s=json.load(sys.stdin); print(*(s.get(k,0) for k in sys.argv[1:]))" "$@"; }

# 1. configure && make, twice
mkdir -p "$T/gz" && cp "$HERE/content_keys/configure.ac" "$HERE/content_keys/Makefile.am" "$T/gz/"
echo 'int util(int x) { return x + 1; }' >"$T/gz/util.c"
echo 'int bits(int x) { return x * 2; }' >"$T/gz/bits.c"
printf 'int util(int); int bits(int);\nint main(void) { return util(bits(1)) - 3; }\n' >"$T/gz/main.c"
(cd "$T/gz" && autoreconf -i >/dev/null 2>&1) || { echo "autoreconf failed (apt-get install autoconf automake)"; exit 2; }
for mode in gcc clang; do
  daemon "configure-$mode"
  cp -a "$T/gz" "$W/tree" && cd "$W/tree" || exit 2
  case $mode in gcc) CCV="gcc -B$BIN/gcc/" ;; clang) CCV="clang-19 --ld-path=$BIN/ld.linkd" ;; esac
  for run in 1 2; do
    [[ $run == 2 ]] && make distclean >/dev/null 2>&1
    read -r r0 h0 e0 <<<"$(js requests hits store_entries || echo 0 0 0)"
    ./configure CC="$CCV" AR="$BIN/ar.linkd" RANLIB="$BIN/ranlib.linkd" >/dev/null 2>&1 || { echo "configure failed"; exit 1; }
    sleep 1; read -r r1 h1 <<<"$(js requests hits)"
    make >/dev/null 2>&1 || { echo "make failed"; exit 1; }
    sleep 1; read -r r2 h2 e2 a2 ah2 <<<"$(js requests hits store_entries archive_requests archive_hits)"
    echo "configure ($mode) run $run: configure $((h1 - h0))/$((r1 - r0)) link hits, make $((h2 - h1))/$((r2 - r1)); store entries added $((e2 - e0)); archive hits so far $ah2/$a2"
  done
  "$BIN/linkd" stop >/dev/null 2>&1
done

# 1b. a real autotools project from Debian (no gzip source is installable:
# no deb-src): binutils-source's libsframe (autoconf + automake + libtool, a
# static library), configured from its directory with the top level's
# config/, include/ and libctf/ beside it; skipped without binutils-source.
BU=/usr/src/binutils/binutils-2.40.tar.xz
if [[ -f $BU ]]; then
  mkdir -p "$T/bu" && tar -C "$T/bu" -xJf "$BU" || exit 2
  S=$T/bu/binutils-2.40 && mkdir -p "$T/sf" && find "$S" -maxdepth 1 -type f -exec cp -a {} "$T/sf/" \; &&
    cp -a "$S/config" "$S/include" "$S/libctf" "$S/libsframe" "$T/sf/" && rm -rf "$T/bu" || exit 2
  for mode in gcc clang; do
    daemon "libsframe-$mode"
    cp -a "$T/sf" "$W/tree" && cd "$W/tree/libsframe" || exit 2
    case $mode in gcc) CCV="gcc -B$BIN/gcc/" ;; clang) CCV="clang-19 --ld-path=$BIN/ld.linkd" ;; esac
    for run in 1 2; do
      [[ $run == 2 ]] && make distclean >/dev/null 2>&1
      read -r r0 h0 u0 e0 a0 ah0 <<<"$(js requests hits uncacheable store_entries archive_requests archive_hits || echo 0 0 0 0 0 0)"
      ./configure CC="$CCV" AR="$BIN/ar.linkd" RANLIB="$BIN/ranlib.linkd" >/dev/null 2>&1 || { echo "libsframe configure failed"; exit 1; }
      make >/dev/null 2>&1 || { echo "libsframe make failed"; exit 1; }
      sleep 1; read -r r1 h1 u1 e1 a1 ah1 <<<"$(js requests hits uncacheable store_entries archive_requests archive_hits)"
      echo "libsframe configure+make ($mode) run $run: $((h1 - h0))/$((r1 - r0)) requests hit ($((u1 - u0)) uncacheable, $((ah1 - ah0))/$((a1 - a0)) archive requests hit); store entries added $((e1 - e0))"
    done
    "$BIN/linkd" stop >/dev/null 2>&1
  done
fi

# 2. a CMake project in a second checkout
daemon cmake
export CCACHE_DIR=$T/ccache CCACHE_BASEDIR=$W
for co in A B; do
  cp -r /usr/src/googletest "$W/$co" && cd "$W/$co" || exit 2
  export LINKD_BASE_DIR=$W/$co
  read -r r0 h0 <<<"$(js requests hits || echo 0 0)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DBUILD_SHARED_LIBS=ON -Dgtest_build_samples=ON "-DCMAKE_CXX_FLAGS=-ffile-prefix-map=$W/$co=." \
    "-DCMAKE_EXE_LINKER_FLAGS=--ld-path=$BIN/ld.linkd" "-DCMAKE_SHARED_LINKER_FLAGS=--ld-path=$BIN/ld.linkd" \
    "-DCMAKE_AR=$BIN/ar.linkd" "-DCMAKE_RANLIB=$BIN/ranlib.linkd" >/dev/null 2>&1 || { echo "cmake failed"; exit 1; }
  read -r r1 h1 <<<"$(js requests hits)"
  ninja -C build >/dev/null 2>&1 || { echo "ninja failed"; exit 1; }
  sleep 1; read -r r2 h2 <<<"$(js requests hits)"
  emb=$(for f in build/lib/*.so.* build/googletest/sample*_unittest; do llvm-readelf-19 -d "$f" 2>/dev/null | grep -q "$W/$co" && echo x; done | wc -l)
  echo "cmake checkout $co: configure $((h1 - h0))/$((r1 - r0)) link hits, build $((h2 - h1))/$((r2 - r1)) ($emb outputs embed the checkout)"
done
unset LINKD_BASE_DIR
"$BIN/linkd" stop >/dev/null 2>&1

# 3. cargo build, cargo clean, cargo build
daemon cargo
cp -r "$HERE/content_keys/cargo" "$W/p" && cd "$W/p" && mkdir -p .cargo tools || exit 2
ln -sfn "$BIN/ld.linkd" tools/ld
cat >.cargo/config.toml <<CFG
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[target.x86_64-unknown-linux-gnu]
linker = "clang-19"
rustflags = ["-C", "link-arg=--ld-path=$W/p/tools/ld"]
CFG
for run in 1 2; do
  [[ $run == 2 ]] && "$CARGO" clean -q
  read -r r0 h0 s0 n0 <<<"$(js requests hits results_stored results_not_stored || echo 0 0 0 0)"
  "$CARGO" build --offline -q || exit 1
  sleep 1; read -r r1 h1 s1 n1 <<<"$(js requests hits results_stored results_not_stored)"
  echo "cargo build $run: $((h1 - h0))/$((r1 - r0)) link hits, stored $((s1 - s0)), not stored $((n1 - n0))"
done
"$BIN/linkd" stop >/dev/null 2>&1
rm -rf "$T"
