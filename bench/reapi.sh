#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# W1 (the ~130 MB static LLVM + LLD link of bench/run.sh) as a cache miss
# linked four ways in one run, against stock ld.lld-19:
#   local        linkd links it on this machine
#   farm         offloaded to a linkd farm node on loopback (cold: the
#                node's store empty; warm: another client, the node has it)
#   reapi        offloaded as an REAPI action to Bazel's RemoteWorker on
#                loopback (tests/e2e/tools/reapi_worker.sh), running this
#                build's linkd-lld (cold: an empty CAS; warm: another client
#                with an empty cache, the CAS has every input)
# Prints medians, ratios to stock, bytes uploaded and round trips (farm:
# questions the node asked; REAPI: actions run).
#   bash bench/reapi.sh [--runs N]
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
die() { say "reapi.sh: $*" >&2; exit 1; }

T=$(mktemp -d /tmp/linkd-reapi-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for d in "$T"/c-*; do
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
cd "$T"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.05; done; die "port $1 did not open"; }
now() { date +%s.%N; }

# --- a farm node (plaintext on loopback) and the REAPI worker ---------------------
echo "bench-token-0123456789abcdef bench" >tokens
echo "bench-token-0123456789abcdef" >tok
FARM_PORT=$(free_port) REAPI_PORT=$(free_port)
start_node() {
  rm -rf "$T/node/cache"
  mkdir -p "$T/node/run" && chmod 700 "$T/node/run"
  LINKD_SOCKET="$T/node/run/linkd.sock" LINKD_STATE_DIR="$T/node/state" LINKD_CACHE_DIR="$T/node/cache" \
    "$BIN/linkd" serve --listen "127.0.0.1:$FARM_PORT" --insecure --token-file tokens >>node.out 2>&1 &
  NODE_PID=$!; PIDS+=("$NODE_PID"); wait_port "$FARM_PORT"
}
start_worker() {
  rm -rf "$T/reapi" && mkdir -p "$T/reapi/work" "$T/reapi/cas"
  bash "$repo/tests/e2e/tools/reapi_worker.sh" "$repo/build/reapi-worker/classes" \
    --listen_port="$REAPI_PORT" --work_path="$T/reapi/work" --cas_path="$T/reapi/cas" \
    --jobs=2 >>reapi.out 2>&1 &
  WORKER_PID=$!; PIDS+=("$WORKER_PID"); wait_port "$REAPI_PORT"
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

stock_times=()
for _ in $(seq "$RUNS"); do
  s=$(now); "$STOCK" "${W1_ARGS[@]}" -o "$T/w1/out.stock"; e=$(now)
  stock_times+=("$(echo "$e - $s" | bc)")
done

# One link by a fresh client daemon named $1 with settings $2 (a miss).
link_as() {
  local c="$T/c-$1"
  mkdir -p "$c/run" && chmod 700 "$c/run"
  (
    export LINKD_SOCKET="$c/run/linkd.sock" LINKD_STATE_DIR="$c/state" LINKD_CACHE_DIR="$c/cache"
    export LINKD_CONFIG=/dev/null LINKD_QUIET=1
    eval "export $2"
    setsid "$BIN/linkd" serve >/dev/null 2>&1 </dev/null &
    for _ in $(seq 200); do "$BIN/linkd" status >/dev/null 2>&1 && break; sleep 0.05; done
    s=$(now); "$BIN/ld.linkd" "${W1_ARGS[@]}" -o "$T/w1/out"; e=$(now)
    cmp -s "$T/w1/out.stock" "$T/w1/out" || die "$1: output differs from stock"
    echo "$e - $s" | bc
  )
}
stat_of() { LINKD_SOCKET="$T/c-$1/run/linkd.sock" "$BIN/linkd" stats --json |
  python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }

FARM="LINKD_FARM=ipv4:127.0.0.1:$FARM_PORT LINKD_FARM_INSECURE=1 LINKD_FARM_TOKEN_FILE=$T/tok LINKD_FARM_POLICY=remote"
REAPI="LINKD_REMOTE_EXECUTOR=grpc://127.0.0.1:$REAPI_PORT LINKD_REMOTE_LINKER=$BIN/linkd-lld LINKD_FARM_POLICY=remote"
declare -A times up trips
for i in $(seq "$RUNS"); do
  times[local]+=" $(link_as "local$i" "LINKD_FARM_POLICY=local")"
  start_node
  times[farm_cold]+=" $(link_as "fc$i" "$FARM")"
  times[farm_warm]+=" $(link_as "fw$i" "$FARM")"
  [[ $(stat_of "fw$i" farm_offloaded) == 1 ]] || die "farm run $i was not offloaded"
  up[farm_cold]=$(stat_of "fc$i" farm_bytes_up) up[farm_warm]=$(stat_of "fw$i" farm_bytes_up)
  trips[farm_cold]=$(stat_of "fc$i" farm_round_trips) trips[farm_warm]=$(stat_of "fw$i" farm_round_trips)
  stop_pid "$NODE_PID"
  start_worker
  times[reapi_cold]+=" $(link_as "rc$i" "$REAPI")"
  times[reapi_warm]+=" $(link_as "rw$i" "$REAPI")"
  [[ $(stat_of "rc$i" farm_offloaded) == 1 ]] || die "REAPI cold run $i was not offloaded"
  [[ $(stat_of "rw$i" farm_offloaded) == 1 ]] || die "REAPI warm run $i was not offloaded"
  up[reapi_cold]=$(stat_of "rc$i" farm_bytes_up) up[reapi_warm]=$(stat_of "rw$i" farm_bytes_up)
  trips[reapi_cold]=$(stat_of "rc$i" farm_round_trips) trips[reapi_warm]=$(stat_of "rw$i" farm_round_trips)
  stop_pid "$WORKER_PID"
done

median() { printf '%s\n' $@ | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms=$(median "${stock_times[@]}")
say "W1: ${#W1_ARGS[@]} arguments, $RUNS runs each (medians; every linkd run is a cache miss)"
say "  stock ld.lld-19      ${ms} s"
for k in local farm_cold farm_warm reapi_cold reapi_warm; do
  m=$(median ${times[$k]})
  line=$(printf '  %-20s %s s   ratio %s' "$k" "$m" "$(echo "scale=2; $m / $ms" | bc)")
  [[ -n "${up[$k]:-}" ]] && line+="   uploaded $((up[$k] >> 10)) KiB, round trips ${trips[$k]}"
  say "$line"
done
