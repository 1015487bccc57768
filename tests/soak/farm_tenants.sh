#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Farm tenant soak: one farm node, two tokens. alice builds
# through her daemon as the node's client (every miss offloaded), compares
# every output with stock ld.lld's for the same command and runs it. mallory,
# with a valid token of her own, attacks the same node all the while, with
# links over the very public inputs alice's links upload (crt files, libc.so's
# script, libc_nonshared.a, libgcc, ...): uploads whose chunks overlap, uploads
# whose bytes lie, uploads trickled a byte a second, outputs never read,
# questions never answered, a first message of three million facts. Every
# --restart-every seconds the node restarts with an empty store, so that
# alice's public inputs are uploaded again while mallory races for them.
#
#   tests/soak/farm_tenants.sh [--seconds N] [--restart-every N] [--keep]
#
# Not a CI test (minutes); see docs/design.md ("Trust boundaries"). Prints:
#   farm soak: links N (offloaded M), wrong 0, failed 0; mallory's calls K
#   (trickle/no-read/lie/overlap/stall/facts a/b/c/d/e/f); node restarts R
# and exits 1 if any of wrong or failed is not 0, or if no link of alice's
# was offloaded.
#
# Environment: BUILD_DIR (default <repo>/build; binaries in $BUILD_DIR/bin),
# STOCK_LLD (default /usr/lib/llvm-19/bin/ld.lld), CC (default clang-19).
set -euo pipefail

SECONDS_TOTAL=180
RESTART_EVERY=30
KEEP=0
while (($#)); do
  case "$1" in
    --seconds) SECONDS_TOTAL="$2"; shift ;;
    --restart-every) RESTART_EVERY="$2"; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "farm_tenants.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BUILD_DIR:-$REPO/build}/bin
STOCK=${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}
CC=${CC:-clang-19}
for b in ld.linkd linkd farm_peer; do
  [[ -x "$BIN/$b" ]] || { echo "farm_tenants.sh: no $b in $BIN" >&2; exit 2; }
done

T=$(mktemp -d /tmp/linkd-farm-soak.XXXXXX)
chmod 700 "$T"
mkdir -p "$T/node/run" "$T/alice/run" "$T/alice/out" "$T/mallory"
chmod 700 "$T/node/run" "$T/alice/run"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ALICE_TOKEN=alice-token-0123456789abcdef
MALLORY_TOKEN=mallory-token-0123456789abcd
printf '%s alice 8\n%s mallory 8\n' "$ALICE_TOKEN" "$MALLORY_TOKEN" >"$T/tokens"
printf '%s\n' "$ALICE_TOKEN" >"$T/alice/token"
: >"$T/empty.conf"
unset LINKD_DISABLE LINKD_NOCACHE LINKD_BASE_DIR LINKD_REMOTE || true

node_env=(env LINKD_SOCKET="$T/node/run/linkd.sock" LINKD_STATE_DIR="$T/node/state"
  LINKD_CACHE_DIR="$T/node/cache" LINKD_CONFIG="$T/empty.conf")
alice_env=(env LINKD_SOCKET="$T/alice/run/linkd.sock" LINKD_STATE_DIR="$T/alice/state"
  LINKD_CACHE_DIR="$T/alice/cache" LINKD_CONFIG="$T/empty.conf" LINKD_QUIET=1
  LINKD_IDLE_TIMEOUT=600 LINKD_FARM="ipv4:127.0.0.1:$PORT" LINKD_FARM_INSECURE=true
  LINKD_FARM_TOKEN_FILE="$T/alice/token" LINKD_FARM_POLICY=remote
  LINKD_FARM_TIMEOUT_MS=60000)

start_node() {
  "${node_env[@]}" "$BIN/linkd" serve --listen "127.0.0.1:$PORT" \
    --token-file "$T/tokens" --jobs 2 --stall-timeout 5 >>"$T/node.out" 2>&1 &
  echo $! >"$T/node.pid"
  for ((i = 0; i < 100; i++)); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" \
      2>/dev/null && return 0
    sleep 0.1
  done
  echo "farm_tenants.sh: the node did not start" >&2
  return 1
}
stop_node() {
  local pid
  pid=$(cat "$T/node.pid" 2>/dev/null || true)
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 400 && $(kill -0 "$pid" 2>/dev/null && echo 1 || echo 0); i++)); do
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  "${alice_env[@]}" "$BIN/linkd" stop >/dev/null 2>&1 || true
  stop_node
  pkill -KILL -f "$T/" 2>/dev/null || true
  ((KEEP)) && echo "farm soak: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
start_node

# mallory's request: the link clang's driver would run for an object of
# hers, with every crt file and library alice's links read too.
cat >"$T/mallory/m.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("mallory"); return 0; }
EOF
"$CC" -c "$T/mallory/m.c" -o "$T/mallory/m.o"
(cd "$T/mallory" && "$CC" --ld-path="$STOCK" -### m.o -o m 2>&1) | tail -1 |
  python3 -c '
import json, shlex, sys
argv = shlex.split(sys.stdin.read())
argv[0] = "ld.lld"
print(json.dumps({"protocolVersion": 1, "flavor": "FLAVOR_ELF", "argv": argv,
                  "cwd": sys.argv[1]}))' "$T/mallory" >"$T/mallory/req.json"

# alice: fresh programs (each a miss), linked through the driver.
alice() { # INDEX
  local me=$1 n=0 wrong=0 failed=0 deadline=$((SECONDS + SECONDS_TOTAL))
  local dir="$T/alice/out/c$me"
  mkdir -p "$dir"
  while ((SECONDS < deadline)); do
    local code=$(((me * 7 + n) % 100))
    printf '#include <stdio.h>\nint v%d_%d = %d;\nint main(void) { printf("%%d\\n", v%d_%d); return v%d_%d; }\n' \
      "$me" "$n" "$code" "$me" "$n" "$me" "$n" >"$dir/p.c"
    "$CC" -O1 -c "$dir/p.c" -o "$dir/p.o"
    if ! "${alice_env[@]}" "$CC" --ld-path="$BIN/ld.linkd" "$dir/p.o" -o "$dir/out" \
      >"$dir/last.log" 2>&1; then
      failed=$((failed + 1))
      cp "$dir/last.log" "$dir/failed.$n.log"
    else
      "$CC" --ld-path="$STOCK" "$dir/p.o" -o "$dir/ref" >/dev/null 2>&1
      local rc=0
      "$dir/out" >/dev/null 2>&1 || rc=$?
      if ! cmp -s "$dir/out" "$dir/ref" || ((rc != code)); then
        wrong=$((wrong + 1))
        cp "$dir/out" "$dir/wrong.$n.out"
      fi
    fi
    n=$((n + 1))
  done
  echo "$n $wrong $failed" >"$dir/result"
}

mallory() { # INDEX
  local me=$1 deadline=$((SECONDS + SECONDS_TOTAL)) modes=(trickle no-read lie overlap stall facts)
  local -A count=()
  while ((SECONDS < deadline)); do
    local mode=${modes[RANDOM % ${#modes[@]}]}
    count[$mode]=$((${count[$mode]:-0} + 1))
    if [[ $mode == facts ]]; then
      timeout 30 "$BIN/farm_peer" facts "127.0.0.1:$PORT" "$MALLORY_TOKEN" 3000000 \
        >>"$T/mallory/log.$me" 2>&1 || true
    else
      timeout 20 "$BIN/farm_peer" "$mode" "127.0.0.1:$PORT" - "$MALLORY_TOKEN" \
        "$T/mallory/req.json" --all >>"$T/mallory/log.$me" 2>&1 || true
    fi
  done
  local m out=""
  for m in "${modes[@]}"; do out+="${count[$m]:-0} "; done
  echo "$out" >"$T/mallory/result.$me"
}

restarter() {
  local restarts=0 deadline=$((SECONDS + SECONDS_TOTAL))
  while ((SECONDS + RESTART_EVERY < deadline)); do
    sleep "$RESTART_EVERY"
    stop_node
    rm -rf "$T/node/cache/farm/blobs"
    start_node
    restarts=$((restarts + 1))
  done
  echo "$restarts" >"$T/restarts"
}

alice 0 &
alice 1 &
mallory 0 &
mallory 1 &
restarter &
wait

links=0 wrong=0 failed=0
for r in "$T"/alice/out/c*/result; do
  read -r n w f <"$r"
  links=$((links + n)) wrong=$((wrong + w)) failed=$((failed + f))
done
calls=(0 0 0 0 0 0)
for r in "$T"/mallory/result.*; do
  read -r -a c <"$r"
  for i in 0 1 2 3 4 5; do calls[i]=$((calls[i] + c[i])); done
done
offloaded=$("${alice_env[@]}" "$BIN/linkd" stats --json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin).get("farm_offloaded", 0))')
total=$((calls[0] + calls[1] + calls[2] + calls[3] + calls[4] + calls[5]))
echo "farm soak: links $links (offloaded $offloaded), wrong $wrong, failed $failed;" \
  "mallory's calls $total (trickle/no-read/lie/overlap/stall/facts" \
  "$(IFS=/; echo "${calls[*]}")); node restarts $(cat "$T/restarts"), ${SECONDS_TOTAL}s"
((wrong == 0 && failed == 0 && offloaded > 0)) || { KEEP=1; exit 1; }
