#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/checkouts.sh [BIN]: hits across checkouts. Real projects from Debian's
# sources, each copied to checkout A and checkout B under one parent
# directory, built in A and then in B through linkd (gcc -B BIN/gcc/,
# AR=ar.linkd, RANLIB=ranlib.linkd) with LINKD_BASE_DIR = the parent, one
# fresh daemon per project:
#   lz4 1.9.4    Makefile, `make -C lib` / `-C programs` (a stale PWD), with
#                its own -O2 -g and with -ffile-prefix-map=<checkout>=.
#   cJSON 1.7.15 CMake, Release, shared and static libraries and tests (the
#                tests' objects hold their absolute source path through Unity's
#                UNITY_BEGIN() = __FILE__: their links miss, by input), and
#                again with -fmacro-prefix-map=<checkout>=. (all hit)
#   cJSON 1.7.15 CMake, Debug (-g) with -ffile-prefix-map=<checkout>=.
#   gzip 1.12    autotools (configure, then make), -g -O2 -ffile-prefix-map
# For each: B's link and archive requests that hit (configure's apart), every
# B artifact (ELF files and archives) compared with a stock build in B
# (ld.lld-19, llvm-ar-19, llvm-ranlib-19), how many B artifacts contain A's
# path, and a build started in a subdirectory after removing its outputs.
# The sources: $LINKD_BENCH_SRC (default /work/src) holds the unpacked
# Debian source packages; a missing one is fetched with `apt-get source`
# (needs a deb-src entry; see fetch_source). LINKD_BENCH_ONLY="lz4 gzip"
# runs only those. Counts, not times.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
SRC=${LINKD_BENCH_SRC:-/work/src}
T=$(mktemp -d /tmp/linkd-checkouts.XXXXXX); chmod 700 "$T"
mkdir -p "$T/stock" && ln -sf /usr/lib/llvm-19/bin/ld.lld "$T/stock/ld"
STOCK_TOOLS=(CC="gcc -B$T/stock/" AR=llvm-ar-19 RANLIB=llvm-ranlib-19)
FAILED=0
LINKD_TOOLS=(CC="gcc -B$BIN/gcc/" AR="$BIN/ar.linkd" RANLIB="$BIN/ranlib.linkd")

# The unpacked source package DIR (e.g. lz4-1.9.4) of source package PKG.
# Without network nothing is fetched: the bench says what is missing.
fetch_source() { # PKG DIR
  [[ -d $SRC/$2 ]] && return 0
  if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ &&
     ! grep -qs '^deb-src' /etc/apt/sources.list; then
    # Debian's own mirror, as the deb entries name it.
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      >/etc/apt/sources.list.d/debian-src.sources && apt-get update -qq || return 1
  fi
  mkdir -p "$SRC" && (cd "$SRC" && apt-get source -qq "$1" >/dev/null) && [[ -d $SRC/$2 ]]
}

daemon() { # NAME: a fresh private daemon
  W=$T/$1; mkdir -p "$W/ws"
  export LINKD_SOCKET=$W/run/sock LINKD_STATE_DIR=$W/state LINKD_CACHE_DIR=$W/cache \
    LINKD_CONFIG=$W/empty.conf LINKD_QUIET=1 LINKD_BASE_DIR=$W/ws
  : >"$W/empty.conf"
}
js() { "$BIN/linkd" stats --json 2>/dev/null | python3 -c "import json,sys; s=json.load(sys.stdin); print(*(s.get(k,0) for k in sys.argv[1:]))" "$@"; }
WHY=(input argv pwd cwd env base_dir outside_base_dir embedded_name required_name new_output other)
counters() {
  js requests hits archive_requests archive_hits "${WHY[@]/#/miss_explained_}" ||
    echo 0 0 0 0 "${WHY[@]/*/0}"
}
# What a phase did between two counters: "links H/R hit, archives H/R hit",
# then why the links that missed did ("misses: input 19", linkd stats'
# miss explanation: the key part that differed from the nearest stored link).
phase() { # BEFORE AFTER
  local a b i why=
  read -ra a <<<"$1"; read -ra b <<<"$2"
  for ((i = 0; i < ${#WHY[@]}; i++)); do
    ((b[i + 4] - a[i + 4])) && why+=" ${WHY[i]} $((b[i + 4] - a[i + 4]))"
  done
  echo "links $((b[1] - a[1]))/$((b[0] - a[0])) hit, archives $((b[3] - a[3]))/$((b[2] - a[2])) hit${why:+ (misses:$why)}"
}
# ELF files and archives under DIR, relative, sorted.
artifacts() { (cd "$1" && find . -type f ! -name '*.o' -print0 | xargs -0 file | grep -E 'ELF .*(executable|shared object)|current ar archive' | cut -d: -f1 | sort); }

# One project: BUILD is a function run in the checkout with the tool
# variables as arguments (it may write the counters after configure to
# $W/configured); SUBDIR, SUBCMD and $SUBOUT: a directory whose outputs
# $SUBOUT are removed and rebuilt there by SUBCMD (empty: none).
project() { # NAME PKG DIR BUILD [SUBDIR SUBCMD]
  local name=$1 pkg=$2 dir=$3 build=$4 sub=${5:-} subcmd=${6:-}
  [[ -z ${LINKD_BENCH_ONLY:-} || " $LINKD_BENCH_ONLY " == *" $name "* ]] || return 0
  fetch_source "$pkg" "$dir" || { echo "$name: no source in $SRC/$dir (apt-get source $pkg)"; return; }
  daemon "$name"
  local A=$W/ws/A B=$W/ws/B
  cp -a "$SRC/$dir" "$A" && (cd "$A" && $build "${LINKD_TOOLS[@]}" >"$W/A.log" 2>&1) ||
    { echo "$name: build in A failed ($W/A.log)"; FAILED=1; return; }
  # The stock build in B, kept aside, then B again from scratch through linkd.
  cp -a "$SRC/$dir" "$B" && (cd "$B" && $build "${STOCK_TOOLS[@]}" >"$W/stock.log" 2>&1) ||
    { echo "$name: stock build in B failed ($W/stock.log)"; FAILED=1; return; }
  mkdir -p "$W/stock"
  artifacts "$B" >"$W/stock.list"
  (cd "$B" && xargs -a "$W/stock.list" cp --parents -t "$W/stock")
  rm -rf "$B" && cp -a "$SRC/$dir" "$B"
  rm -f "$W/configured"
  sleep 1; local c0; c0=$(counters)
  (cd "$B" && $build "${LINKD_TOOLS[@]}" >"$W/B.log" 2>&1) ||
    { echo "$name: build in B failed ($W/B.log)"; FAILED=1; return; }
  sleep 1; local c1; c1=$(counters)
  artifacts "$B" >"$W/B.list"
  local n same=0 withA=0
  n=$(wc -l <"$W/stock.list")
  while read -r f; do
    cmp -s "$W/stock/$f" "$B/$f" && same=$((same + 1))
    grep -qF "$A" "$B/$f" && withA=$((withA + 1))
  done <"$W/stock.list"
  cmp -s "$W/stock.list" "$W/B.list" || echo "$name: B's artifacts are not stock's: $(diff "$W/stock.list" "$W/B.list" | tr '\n' ' ')"
  local figures
  if [[ -f $W/configured ]]; then # configure's test links apart
    local cfg; cfg=$(cat "$W/configured")
    figures="configure: $(phase "$c0" "$cfg"); make: $(phase "$cfg" "$c1")"
  else
    figures=$(phase "$c0" "$c1")
  fi
  # Objects are the compiler's: one that differs from A's (a path through
  # __FILE__ or debug info) makes its links miss, correctly.
  local objs=0 objdiff=0
  while read -r o; do
    objs=$((objs + 1)); cmp -s "$A/$o" "$B/$o" || objdiff=$((objdiff + 1))
  done < <(cd "$B" && find . -name '*.o' -type f | sort)
  echo "$name: checkout B: $figures; $same/$n artifacts byte-identical to stock in B, $withA contain A's path; $objdiff/$objs objects differ from A's"
  if [[ -n $sub ]]; then
    local s0 s1
    (cd "$B/$sub" && rm -f $SUBOUT) && s0=$(counters) &&
      (cd "$B/$sub" && eval "$subcmd" "${LINKD_TOOLS[@]@Q}" >"$W/sub.log" 2>&1) || { echo "$name: subdirectory build failed ($W/sub.log)"; FAILED=1; return; }
    sleep 1; s1=$(counters)
    local ok=0
    for f in $SUBOUT; do cmp -s "$W/stock/$sub/$f" "$B/$sub/$f" && ok=$((ok + 1)); done
    echo "$name: build started in $sub/: $(phase "$s0" "$s1"); $ok/$(wc -w <<<"$SUBOUT") outputs byte-identical to stock"
  fi
  "$BIN/linkd" stop >/dev/null 2>&1
}

# lz4's own flags are -O2 -g: its objects name the checkout (DW_AT_comp_dir,
# the line tables) and no link can be shared; with -ffile-prefix-map they do
# not. CFLAGS from the environment, as lz4's `CFLAGS ?=` expects.
lz4_build() { make -j2 allmost examples "$@"; }
lz4_mapped() { CFLAGS="-O2 -g -ffile-prefix-map=$PWD=." make -j2 allmost examples "$@"; }
SUBOUT="liblz4.a liblz4.so.1.9.4" project lz4 lz4 lz4-1.9.4 lz4_build lib 'make -j2 liblz4.a liblz4.so.1.9.4'
SUBOUT="liblz4.a liblz4.so.1.9.4" project lz4-prefix-map lz4 lz4-1.9.4 lz4_mapped lib \
  'CFLAGS="-O2 -g -ffile-prefix-map=$(cd .. && pwd)=." make -j2 liblz4.a liblz4.so.1.9.4'

cmake_build() { # TYPE EXTRA-CFLAGS then the tool variables
  local type=$1 cflags=$2; shift 2
  local cc ar ranlib
  for v in "$@"; do case $v in CC=*) cc=${v#CC=} ;; AR=*) ar=${v#AR=} ;; RANLIB=*) ranlib=${v#RANLIB=} ;; esac; done
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER=gcc \
    "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_EXE_LINKER_FLAGS=${cc#gcc }" "-DCMAKE_SHARED_LINKER_FLAGS=${cc#gcc }" \
    -DCMAKE_AR="$(command -v "$ar")" -DCMAKE_RANLIB="$(command -v "$ranlib")" \
    -DBUILD_SHARED_AND_STATIC_LIBS=ON -DENABLE_CJSON_UTILS=ON -DENABLE_CJSON_TEST=ON \
    -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON &&
    ninja -C build
}
cjson_release() { cmake_build Release "" "$@"; }
cjson_release_mapped() { cmake_build Release "-fmacro-prefix-map=$PWD=." "$@"; }
cjson_debug() { cmake_build Debug "-ffile-prefix-map=$PWD=." "$@"; }
project cjson-release cjson cjson-1.7.15 cjson_release
project cjson-release-macro-map cjson cjson-1.7.15 cjson_release_mapped
project cjson-debug cjson cjson-1.7.15 cjson_debug

# Debian's patches touch configure.ac after the tarball's configure was made
# (dh runs autoreconf); the generated files are taken as they are instead of
# asking for automake-1.16, the same in A, in B and in the stock build.
gzip_build() {
  touch -r aclocal.m4 configure.ac
  ./configure CFLAGS="-g -O2 -ffile-prefix-map=$PWD=." "$@" >/dev/null &&
    { [[ ${1#CC=} == "gcc -B$T/stock/" ]] || counters >"$W/configured"; } &&
    make -j2 MAKEINFO=true "$@" # the same for doc/gzip.info (no texinfo here)
}
SUBOUT="libgzip.a" project gzip gzip gzip-1.12 gzip_build lib 'make -j2 libgzip.a'
if ((FAILED)); then echo "kept $T for the logs"; exit 1; fi
rm -rf "$T"
