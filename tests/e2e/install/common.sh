# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# Shared by install_test.sh and deb_test.sh: a program linked through an
# installed client, compared with stock LLD and run, and the daemon checked
# to be the installed one.
#   smoke_link ROOT_BIN GCC_DIR WORK
# ROOT_BIN: the installed bin/ (ld.linkd, linkd); GCC_DIR: the installed
# gcc/ directory. Starts a private daemon (under WORK) and stops it.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }

# For the scripts' EXIT traps: stops the daemon smoke_link started, if any.
SMOKE_BIN=
stop_smoke_daemon() {
  [ -z "$SMOKE_BIN" ] || "$SMOKE_BIN/linkd" stop >/dev/null 2>&1 || true
}

stats_field() { # stats_field BIN FIELD: an integer of `linkd stats --json`
  "$1/linkd" stats --json | grep -o "\"$2\": *[0-9]*" | grep -o '[0-9]*$'
}

smoke_link() {
  local bin=$1 gccdir=$2 work=$3
  mkdir -p "$work/src" "$work/stock"
  export LINKD_SOCKET="$work/run/linkd.sock" LINKD_CACHE_DIR="$work/cache" \
    LINKD_STATE_DIR="$work/state" LINKD_CONFIG="$work/linkd.conf" \
    LINKD_IDLE_TIMEOUT=120 # should a failure skip the stop
  unset LINKD_BIN LINKD_DISABLE LINKD_QUIET LINKD_NOCACHE
  : > "$LINKD_CONFIG"
  SMOKE_BIN=$bin
  cd "$work/src"
  cat > hello.c <<'C'
#include <stdio.h>
int main(void) { puts("hello from an installed linkd"); return 0; }
C
  clang-19 -c hello.c -o hello.o

  # clang through --ld-path: autostarts the installed daemon, a miss.
  clang-19 --ld-path="$bin/ld.linkd" hello.o -o hello 2> err.txt ||
    fail "clang --ld-path link: $(cat err.txt)"
  [ ! -s err.txt ] || fail "client said: $(cat err.txt)"
  clang-19 -fuse-ld=lld hello.o -o hello.stock
  cmp hello hello.stock || fail "clang link differs from stock ld.lld"
  [ "$(./hello)" = "hello from an installed linkd" ] || fail "hello output"
  local pid exe
  pid=$("$bin/linkd" status --json | grep -o '"pid": *[0-9]*' | head -1 |
        grep -o '[0-9]*$')
  exe=$(readlink "/proc/$pid/exe")
  [ "$exe" = "$(readlink -f "$bin/linkd")" ] ||
    fail "daemon runs $exe, not the installed $bin/linkd"

  # The same link again: a hit, counted when the client returns.
  rm hello
  clang-19 --ld-path="$bin/ld.linkd" hello.o -o hello
  cmp hello hello.stock || fail "hit differs from stock"
  local hits
  for _ in $(seq 50); do
    hits=$(stats_field "$bin" hits); [ "$hits" -ge 1 ] && break; sleep 0.1
  done
  [ "$hits" = 1 ] || fail "expected 1 hit, stats say $hits"

  # gcc -B the installed gcc/ directory: gcc runs its `ld`, the client.
  gcc -c hello.c -o hello-gcc.o
  ln -sf /usr/lib/llvm-19/bin/ld.lld "$work/stock/ld"
  gcc -B"$gccdir/" hello-gcc.o -o hello-gcc 2> err.txt ||
    fail "gcc -B link: $(cat err.txt)"
  gcc -B"$work/stock/" hello-gcc.o -o hello-gcc.stock
  cmp hello-gcc hello-gcc.stock || fail "gcc -B link differs from stock"
  [ "$(./hello-gcc)" = "hello from an installed linkd" ] || fail "gcc output"
  local requests
  requests=$(stats_field "$bin" requests)
  [ "$requests" = 3 ] || fail "expected 3 requests in the daemon, got $requests"

  # COMPILER_PATH, as the installed profile snippet sets it.
  COMPILER_PATH="$gccdir" gcc hello-gcc.o -o hello-cp
  cmp hello-cp hello-gcc.stock || fail "COMPILER_PATH link differs"
  requests=$(stats_field "$bin" requests)
  [ "$requests" = 4 ] || fail "COMPILER_PATH: link did not reach the daemon"

  # The client says it is linkd when asked.
  "$bin/ld.linkd" --linkd-version | grep -q '^linkd ' ||
    fail "--linkd-version"
  cd /
  stop_smoke_daemon
  SMOKE_BIN=
}
