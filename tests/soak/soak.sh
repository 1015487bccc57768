#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Crash soak: parallel clients of mixed cache hits and misses through one
# daemon while a second loop SIGKILLs link children, zygotes and the daemon.
# Every output is compared with stock ld.lld given the same arguments; at the
# end, after one more daemon has started and stopped (the next build's,
# which removes what killed daemons' links left), nothing may be left behind
# in the output directories (LLD's `<out>.tmpXXXXXX`, linkd's hidden
# `.<out>.linkd-*`).
#
#   tests/soak/soak.sh [--seconds N] [--clients N] [--kill-every-ms N] [--keep]
#
# Not a CI test (minutes, and it kills things on purpose); see docs/design.md
# ("Trust boundaries"). Prints one summary line:
#   soak: links N, wrong 0, failed 0, left behind 0, kills (child/zygote/daemon) a/b/c
# and exits 1 if any of wrong, failed or left behind is not 0.
#
# Environment: BUILD_DIR (default <repo>/build; binaries in $BUILD_DIR/bin),
# STOCK_LLD (default /usr/lib/llvm-19/bin/ld.lld), CC (default clang-19).
set -euo pipefail

SECONDS_TOTAL=300
CLIENTS=8
KILL_EVERY_MS=700
KEEP=0
while (($#)); do
  case "$1" in
    --seconds) SECONDS_TOTAL="$2"; shift ;;
    --clients) CLIENTS="$2"; shift ;;
    --kill-every-ms) KILL_EVERY_MS="$2"; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BUILD_DIR:-$REPO/build}/bin
STOCK=${STOCK_LLD:-/usr/lib/llvm-19/bin/ld.lld}
CC=${CC:-clang-19}
[[ -x "$BIN/ld.linkd" && -x "$BIN/linkd" ]] || { echo "soak.sh: no binaries in $BIN" >&2; exit 2; }

T=$(mktemp -d /tmp/linkd-soak.XXXXXX)
chmod 700 "$T"
export LINKD_SOCKET="$T/run/linkd.sock" LINKD_STATE_DIR="$T/state"
export LINKD_CACHE_DIR="$T/cache" LINKD_CONFIG="$T/linkd.conf" LINKD_IDLE_TIMEOUT=600
export LINKD_QUIET=1 # the fallback warning would be every other line
unset LINKD_DISABLE LINKD_NOCACHE LINKD_BASE_DIR LINKD_FARM LINKD_REMOTE || true
: >"$LINKD_CONFIG"
mkdir -p "$T/run" "$T/src" "$T/out"
chmod 700 "$T/run"
cleanup() {
  "$BIN/linkd" stop >/dev/null 2>&1 || true
  pkill -KILL -f "$T/" 2>/dev/null || true
  ((KEEP)) && echo "soak: kept $T" || rm -rf "$T"
}
trap cleanup EXIT

# Inputs: a few programs of different sizes; the large one links for long
# enough (~100 ms) that kills land mid-link.
gen_program() { # NAME FUNCTIONS
  local f="$T/src/$1.c"
  {
    echo '#include <stdio.h>'
    for ((i = 0; i < $2; i++)); do
      echo "int f$i(int x) { static int s$i; s$i += x; return s$i * $i + x; }"
      echo "const char *str$i = \"string $i of $1\";"
    done
    echo 'int main(int argc, char **argv) { int t = 0;'
    for ((i = 0; i < $2; i += 97)); do echo "  t += f$i(argc);"; done
    echo '  printf("%d\n", t); return 0; }'
  } >"$f"
  "$CC" -O1 -ffunction-sections -c "$f" -o "$T/src/$1.o"
}
gen_program small 10
gen_program medium 2000
gen_program large 30000
# Links go through the compiler driver, as in a build: clang-19 picks the
# crt files and libraries, --ld-path picks the linker.
link() { # LINKER OBJ OUT NONCE
  "$CC" --ld-path="$1" "$2" -Wl,--defsym=soak_nonce="$4" -o "$3"
}

"$BIN/linkd" serve >/dev/null 2>&1 &
for ((i = 0; i < 100; i++)); do
  "$BIN/linkd" status >/dev/null 2>&1 && break
  sleep 0.1
done
"$BIN/linkd" status >/dev/null 2>&1 || { echo "soak.sh: the daemon did not start" >&2; exit 2; }

# One client loop: links chosen at random; about half repeat an earlier link
# (a hit unless a kill got in the way), the rest carry a fresh --defsym (a
# miss). Each output is compared with stock's output for the same argv.
client() { # INDEX
  local me=$1 n=0 wrong=0 failed=0 deadline=$((SECONDS + SECONDS_TOTAL))
  local dir="$T/out/c$me"
  mkdir -p "$dir/ref"
  while ((SECONDS < deadline)); do
    local progs=(small medium large medium small)
    local p=${progs[RANDOM % ${#progs[@]}]}
    local nonce=$((RANDOM % 2 ? RANDOM % 4 : RANDOM))
    local out="$dir/$p.$nonce.out" ref="$dir/ref/$p.$nonce.out"
    if ! link "$BIN/ld.linkd" "$T/src/$p.o" "$out" "$nonce" >"$dir/last.log" 2>&1; then
      failed=$((failed + 1))
      cp "$dir/last.log" "$dir/failed.$n.log"
    else
      if [[ ! -f "$ref" ]]; then
        link "$STOCK" "$T/src/$p.o" "$ref.tmp" "$nonce" >/dev/null 2>&1
        # LLD's bytes do not depend on -o's name; keep the stock copy under ref/.
        mv "$ref.tmp" "$ref"
      fi
      cmp -s "$out" "$ref" || { wrong=$((wrong + 1)); cp "$out" "$dir/wrong.$n.out"; }
    fi
    n=$((n + 1))
  done
  echo "$n $wrong $failed" >"$dir/result"
}

killer() {
  local kc=0 kz=0 kd=0 deadline=$((SECONDS + SECONDS_TOTAL))
  while ((SECONDS < deadline)); do
    sleep "$(awk -v m="$KILL_EVERY_MS" 'BEGIN { srand(); printf "%.3f", m * (0.5 + rand()) / 1000 }')"
    local st dpid zpid
    st=$("$BIN/linkd" status --json 2>/dev/null || true)
    dpid=$(grep -o '"pid": *[0-9]*' <<<"$st" | head -1 | grep -o '[0-9]*$' || true)
    zpid=$(grep -o '"zygote_pid": *[0-9]*' <<<"$st" | grep -o '[0-9]*$' || true)
    local r=$((RANDOM % 20))
    if ((r < 16)) && [[ -n "$zpid" ]]; then
      local kids
      kids=$(pgrep -P "$zpid" || true)
      [[ -n "$kids" ]] && kill -KILL $kids 2>/dev/null && kc=$((kc + 1))
    elif ((r < 19)) && [[ -n "$zpid" ]]; then
      kill -KILL "$zpid" 2>/dev/null && kz=$((kz + 1))
    elif [[ -n "$dpid" ]]; then
      kill -KILL "$dpid" 2>/dev/null && kd=$((kd + 1))
      # The next client starts a new daemon (autostart), as in real use.
    fi
  done
  echo "$kc $kz $kd" >"$T/kills"
}

for ((c = 0; c < CLIENTS; c++)); do client "$c" & done
killer &
wait

# Let the last daemon finish what it was doing (stores), then stop it.
sleep 2
"$BIN/linkd" stop >/dev/null 2>&1 || true
sleep 1
# The next daemon, as the user's next build starts it, removes what the
# links of a killed daemon left (their temporaries are journaled before
# they exist, lib/store/temp_journal.h); the kill loop may have ended on a
# daemon kill. One more start and stop: whatever is left now stays.
"$BIN/linkd" serve >/dev/null 2>&1 &
for ((i = 0; i < 100; i++)); do
  "$BIN/linkd" status >/dev/null 2>&1 && break
  sleep 0.1
done
"$BIN/linkd" stop >/dev/null 2>&1 || true
sleep 1
links=0 wrong=0 failed=0
for r in "$T"/out/c*/result; do
  read -r n w f <"$r"
  links=$((links + n)) wrong=$((wrong + w)) failed=$((failed + f))
done
left=$(find "$T/out" \( -name '*.tmp*' -o -name '.*.linkd-*' \) ! -path '*/ref/*' | wc -l)
read -r kc kz kd <"$T/kills"
echo "soak: links $links, wrong $wrong, failed $failed, left behind $left," \
  "kills (child/zygote/daemon) $kc/$kz/$kd, ${SECONDS_TOTAL}s, $CLIENTS clients"
if ((left)); then
  find "$T/out" \( -name '*.tmp*' -o -name '.*.linkd-*' \) ! -path '*/ref/*' | head -20
fi
((wrong == 0 && failed == 0 && left == 0)) || { KEEP=1; exit 1; }
