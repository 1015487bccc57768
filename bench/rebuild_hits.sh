#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/rebuild_hits.sh [BIN]: rebuild hit rates of MinGW and libtool builds,
# and musl's configure probes. Real projects from Debian's sources, each
# configured, built (make), its tests built (make -k check: under MinGW they
# cannot run without binfmt, their links still happen) and installed; then
# `make clean` and the same again. The second round's link and archive
# requests are counted from `linkd stats --json`, one fresh daemon for all:
#   MinGW   libogg 1.3.5 then libvorbis 1.3.7 against it, cross-built with
#           clang-19 --target=x86_64-w64-mingw32 --ld-path=ld.linkd,
#           SOURCE_DATE_EPOCH set (without it PE links carry the time and
#           are not cached)
#   libtool libpng 1.6.39, libogg, libvorbis natively with gcc and
#           COMPILER_PATH=BIN/gcc (the way that reaches libtool's shared
#           library links); each installed .so must say "Linker: ... LLD"
#   probes  musl 1.2.3's ./configure twice with clang and twice with gcc -B:
#           its `-o /dev/null` probes of the second run
# Sources: $LINKD_BENCH_SRC (default /work/src), fetched with `apt-get source`
# when missing (a deb-src entry is needed). Counts, not times.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
SRC=${LINKD_BENCH_SRC:-/work/src}
W=$(mktemp -d /tmp/linkd-rebuild.XXXXXX); chmod 700 "$W"
trap '"$BIN/linkd" stop >/dev/null 2>&1; rm -rf "$W"' EXIT

fetch_source() { # PKG DIR
  [[ -d $SRC/$2 ]] && return 0
  mkdir -p "$SRC" && (cd "$SRC" && apt-get source -qq "$1" >/dev/null 2>&1)
  [[ -d $SRC/$2 ]] || { echo "missing $SRC/$2 (apt-get source $1)"; return 1; }
}
fetch_source libogg libogg-1.3.5 && fetch_source libvorbis libvorbis-1.3.7 &&
  fetch_source libpng1.6 libpng1.6-1.6.39 && fetch_source musl musl-1.2.3 || exit 1

export LINKD_SOCKET=$W/st/sock LINKD_STATE_DIR=$W/st LINKD_CACHE_DIR=$W/st/cache \
  LINKD_CONFIG=$W/st/none.conf LINKD_QUIET=1
mkdir -m700 "$W/st"; touch "$W/st/none.conf"
stats() {
  "$BIN/linkd" stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(str(d.get(k,0)) for k in ("hits","misses","uncacheable","archive_hits","archive_misses","archive_uncacheable")))'
}
delta() { # BEFORE AFTER
  python3 -c "import sys; a=list(map(int,'$1'.split())); b=list(map(int,'$2'.split())); d=[y-x for x,y in zip(a,b)]; print(f'links {d[0]} hits / {d[0]+d[1]+d[2]} (misses {d[1]}, uncacheable {d[2]}); archives {d[3]} hits / {d[3]+d[4]+d[5]}')"
}
round() { # DIR ENV
  (cd "$1" && { eval "$2 make -j2" >>"$W/log" 2>&1 || echo "make FAILED in $1"; }
   eval "$2 make -k -j2 check" >>"$W/log" 2>&1
   eval "$2 make install" >>"$W/log" 2>&1 || echo "install FAILED in $1")
}
project() { # NAME SRCDIR ENV CONFIGURE-ARGS
  rm -rf "$W/$1"; cp -a "$SRC/$2" "$W/$1"
  (cd "$W/$1" && eval "$3 ./configure $4" >>"$W/log" 2>&1) || echo "configure FAILED $1"
  local s0 s1 s2
  s0=$(stats); round "$W/$1" "$3"; s1=$(stats)
  (cd "$W/$1" && make clean >>"$W/log" 2>&1)
  round "$W/$1" "$3"; s2=$(stats)
  printf '%-14s first build: %s\n' "$1" "$(delta "$s0" "$s1")"
  printf '%-14s rebuild:     %s\n' "$1" "$(delta "$s1" "$s2")"
}

export SOURCE_DATE_EPOCH=1700000000
MG="CC='clang-19 --target=x86_64-w64-mingw32 --ld-path=$BIN/ld.linkd' AR=$BIN/ar.linkd RANLIB=$BIN/ranlib.linkd"
project mingw-ogg libogg-1.3.5 "$MG" "--host=x86_64-w64-mingw32 --prefix=$W/mingw"
project mingw-vorbis libvorbis-1.3.7 "$MG PKG_CONFIG_PATH=$W/mingw/lib/pkgconfig" \
  "--host=x86_64-w64-mingw32 --prefix=$W/mingw --with-ogg=$W/mingw"
NT="COMPILER_PATH=$BIN/gcc CC=gcc AR=$BIN/ar.linkd RANLIB=$BIN/ranlib.linkd"
project png libpng1.6-1.6.39 "$NT" "--prefix=$W/native"
project ogg libogg-1.3.5 "$NT" "--prefix=$W/native"
project vorbis libvorbis-1.3.7 "$NT PKG_CONFIG_PATH=$W/native/lib/pkgconfig" "--prefix=$W/native"
for f in "$W"/native/lib/*.so.*.*; do
  readelf -p .comment "$f" | grep -q "Linker: .*LLD" || echo "NOT LINKED BY LLD: $f"
done
echo "shared libraries linked by LLD: $(ls "$W"/native/lib/*.so.*.* | wc -l) checked"

# musl's probes: the second configure of each compiler.
rm -rf "$W/musl"; cp -a "$SRC/musl-1.2.3" "$W/musl"
for cc in "clang-19 --ld-path=$BIN/ld.linkd" "gcc -B$BIN/gcc/"; do
  (cd "$W/musl" && ./configure CC="$cc" >>"$W/log" 2>&1)
  s1=$(stats)
  (cd "$W/musl" && ./configure CC="$cc" >>"$W/log" 2>&1)
  s2=$(stats)
  printf 'musl configure again (%s): %s\n' "${cc%% *}" "$(delta "$s1" "$s2")"
done
