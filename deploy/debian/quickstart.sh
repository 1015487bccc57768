#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Set up, build, start the daemon and link a real program through the client.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$repo/deploy/debian/install-deps.sh"
"$repo/deploy/debian/build.sh"
bin="$repo/build/bin"

work=$(mktemp -d)
cd "$work"
cat > hello.cpp <<'CPP'
#include <iostream>
int main() { std::cout << "hello from a program linked by linkd\n"; }
CPP
clang++-19 -c hello.cpp -o hello.o

# A private daemon and cache for this demonstration.
export LINKD_SOCKET="$work/run/linkd.sock" LINKD_CACHE_DIR="$work/cache" \
  LINKD_STATE_DIR="$work/state"
trap '"$bin/linkd" stop >/dev/null; rm -rf "$work"' EXIT

echo "== link 1 through ld.linkd: starts the daemon, cache miss"
time clang++-19 --ld-path="$bin/ld.linkd" hello.o -o hello
./hello
sleep 0.5 # the daemon stores the result after the client has its answer
rm hello
echo "== link 2, same inputs: cache hit"
time clang++-19 --ld-path="$bin/ld.linkd" hello.o -o hello
./hello
echo "== same bytes as stock ld.lld-19?"
clang++-19 -fuse-ld=lld hello.o -o hello.stock
cmp hello hello.stock && echo "yes: byte-identical"
echo "== daemon status and cache statistics"
"$bin/linkd" status
"$bin/linkd" stats
