#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# W1 (the ~130 MB static LLVM + LLD link of bench/run.sh) offloaded to a farm
# node on loopback, against stock ld.lld-19 measured in the same run:
#   cold  the node's input store is empty (every input is uploaded)
#   warm  the node has the inputs (a second client with an empty local cache
#         and an empty stat cache: it hashes every input once)
#   warm, stat cache warm
#         the same second client again after `linkd cache clear` (a cache
#         miss: its result is gone, while its stat cache still knows every
#         input, as a developer's long-running daemon would after the cache
#         evicted the result). Another output path would not do: content keys
#         answer that relink from the cache. An extra line: the targets are
#         judged on the two above.
# Prints the ratios and the bytes uploaded on the warm run, with the
# targets (cold <= 1.5x, warm <= 1.1x, warm upload <= 1% of the inputs).
#   bash bench/farm.sh [--runs N]
# Each run is a fresh client daemon with an empty local cache, so every link
# is a cache miss and goes to the node (LINKD_FARM_POLICY=remote).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
BIN="${LINKD_BIN:-$repo/build/bin}"
LIB="$repo/bench/benchlib.py"
CXX="${CXX:-clang++-19}"
LLVM_CONFIG="${LLVM_CONFIG:-llvm-config-19}"
STOCK=/usr/lib/llvm-19/bin/ld.lld
RUNS=3
while (($#)); do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    *) echo "usage: $0 [--runs N]" >&2; exit 2 ;;
  esac
  shift
done
say() { printf '%s\n' "$*"; }
die() { say "farm.sh: $*" >&2; exit 1; }

T=$(mktemp -d /tmp/linkd-farm-bench.XXXXXX)
NODE_PID=
cleanup() {
  [[ -n "$NODE_PID" ]] && kill "$NODE_PID" 2>/dev/null && wait "$NODE_PID" 2>/dev/null
  for d in "$T"/cold* "$T"/warm*; do
    [[ -d "$d" ]] && LINKD_SOCKET="$d/run/linkd.sock" "$BIN/linkd" stop >/dev/null 2>&1
  done
  [[ -n "${KEEP:-}" ]] && say "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/src" "$T/w1"

# --- W1's inputs, as in bench/run.sh ------------------------------------------
cp "$repo/bench/w1_big.cpp" "$T/src/big.cpp"
# shellcheck disable=SC2046
"$CXX" $("$LLVM_CONFIG" --cxxflags) -O2 -c "$T/src/big.cpp" -o "$T/src/big.o" ||
  die "cannot compile big.cpp (LLVM/LLD 19 headers)"
LLD_LIBDIR="$("$LLVM_CONFIG" --libdir)"
LLD_LIBS=()
for l in MinGW ELF COFF MachO Wasm Common; do LLD_LIBS+=("$LLD_LIBDIR/liblld$l.a"); done
# shellcheck disable=SC2046
"$CXX" -### "$T/src/big.o" -o "$T/w1/unused" --ld-path="$STOCK" "${LLD_LIBS[@]}" \
  $("$LLVM_CONFIG" --link-static --ldflags) $("$LLVM_CONFIG" --link-static --libs all) \
  $("$LLVM_CONFIG" --link-static --system-libs) 2>"$T/src/big.driver" ||
  die "clang -### failed for the static LLVM link"
mapfile -t W1_ARGS < <(python3 "$LIB" linker-argv "$T/src/big.driver")
((${#W1_ARGS[@]} > 0)) || die "could not extract the linker argv"

# --- certificates, token, node ---------------------------------------------------
cd "$T"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 \
  -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout node.key -out node.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >san
openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out node.pem \
  -days 1 -extfile san 2>/dev/null
echo "bench-token-0123456789abcdef bench" >tokens
echo "bench-token-0123456789abcdef" >tok
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p node/run && chmod 700 node/run
LINKD_SOCKET="$T/node/run/linkd.sock" LINKD_STATE_DIR="$T/node/state" LINKD_CACHE_DIR="$T/node/cache" \
  "$BIN/linkd" serve --listen "127.0.0.1:$PORT" --tls-cert node.pem --tls-key node.key \
  --token-file tokens >node.out 2>&1 &
NODE_PID=$!
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done

now() { date +%s.%N; }

stock_times=()
for _ in $(seq "$RUNS"); do
  s=$(now); "$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock"; e=$(now)
  stock_times+=("$(echo "$e - $s" | bc)")
done

# One offloaded link by client daemon $1 (fresh socket, state and cache).
offload() {
  local c="$T/$1"
  mkdir -p "$c/run" && chmod 700 "$c/run"
  export LINKD_SOCKET="$c/run/linkd.sock" LINKD_STATE_DIR="$c/state" LINKD_CACHE_DIR="$c/cache"
  export LINKD_FARM="ipv4:127.0.0.1:$PORT" LINKD_FARM_CA="$T/ca.pem"
  export LINKD_FARM_TOKEN_FILE="$T/tok" LINKD_FARM_POLICY=remote LINKD_QUIET=1
  # Start the daemon before timing (the first link would start it).
  setsid "$BIN/linkd" serve >/dev/null 2>&1 </dev/null &
  for _ in $(seq 200); do "$BIN/linkd" status >/dev/null 2>&1 && break; sleep 0.05; done
  local s e
  s=$(now); "$BIN/ld.linkd" "${W1_ARGS[@]}" -o "$T/w1/out"; e=$(now)
  cmp -s "$T/w1/out.stock" "$T/w1/out" || die "offloaded output differs from stock"
  echo "$e - $s" | bc
}
# The same link again by the running client daemon $1 with its results
# cleared: a miss in its link cache, a hit for every input in its stat cache.
relink() {
  export LINKD_SOCKET="$T/$1/run/linkd.sock"
  "$BIN/linkd" cache clear >/dev/null
  local s e
  s=$(now); "$BIN/ld.linkd" "${W1_ARGS[@]}" -o "$T/w1/out.again"; e=$(now)
  cmp -s "$T/w1/out.stock" "$T/w1/out.again" || die "offloaded output differs from stock"
  echo "$e - $s" | bc
}
stat_of() { LINKD_SOCKET="$T/$1/run/linkd.sock" "$BIN/linkd" stats --json |
  python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }

cold_times=() warm_times=() again_times=() warm_up=0 again_up=0
for i in $(seq "$RUNS"); do
  # Cold: a node with an empty input store (restarted on a new cache dir).
  kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true
  rm -rf "$T/node/cache"
  LINKD_SOCKET="$T/node/run/linkd.sock" LINKD_STATE_DIR="$T/node/state" LINKD_CACHE_DIR="$T/node/cache" \
    "$BIN/linkd" serve --listen "127.0.0.1:$PORT" --tls-cert node.pem --tls-key node.key \
    --token-file tokens >>node.out 2>&1 &
  NODE_PID=$!
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
  cold_times+=("$(offload "cold$i")")
  # What the link read = what the cold node was sent (every input, once).
  inputs=$(find "$T/node/cache/farm/blobs" -path '*/partial' -prune -o -type f -printf '%s\n' |
    awk '{s += $1} END {print s + 0}')
  [[ $(stat_of "cold$i" farm_offloaded) == 1 ]] || die "cold run $i was not offloaded"
  # Warm: another client, empty local cache; the node has every input.
  warm_times+=("$(offload "warm$i")")
  [[ $(stat_of "warm$i" farm_offloaded) == 1 ]] || die "warm run $i was not offloaded"
  warm_up=$(stat_of "warm$i" farm_bytes_up)
  again_times+=("$(relink "warm$i")")
  [[ $(stat_of "warm$i" farm_offloaded) == 2 ]] || die "warm run $i again was not offloaded"
  again_up=$(( $(stat_of "warm$i" farm_bytes_up) - warm_up ))
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms=$(median "${stock_times[@]}") mc=$(median "${cold_times[@]}") mw=$(median "${warm_times[@]}")
ma=$(median "${again_times[@]}")
say "W1: ${#W1_ARGS[@]} arguments, inputs read $((inputs >> 20)) MiB, $RUNS runs each (medians)"
say "  stock ld.lld-19        ${ms} s"
say "  farm, cold node store  ${mc} s   ratio $(echo "scale=2; $mc / $ms" | bc)  (target <= 1.5)"
say "  farm, warm node store  ${mw} s   ratio $(echo "scale=2; $mw / $ms" | bc)  (target <= 1.1)"
say "  farm, warm node store, client stat cache warm"
say "                         ${ma} s   ratio $(echo "scale=2; $ma / $ms" | bc)  (not a target: the same client daemon again)"
say "  warm upload            ${warm_up} bytes = $(echo "scale=4; 100 * $warm_up / $inputs" | bc) % of the inputs (target <= 1 %)"
say "  upload again           ${again_up} bytes = $(echo "scale=4; 100 * $again_up / $inputs" | bc) % of the inputs (stat cache warm)"
