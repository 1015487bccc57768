#!/usr/bin/env bash
# Set up, build, start the daemon and link a real program through the client.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$repo/deploy/debian/install-deps.sh"
"$repo/deploy/debian/build.sh"
bin="$repo/build/bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > hello.cpp <<'CPP'
#include <iostream>
int main() { std::cout << "hello from a program linked by linkd\n"; }
CPP
clang++-19 -c hello.cpp -o hello.o

echo "== linking through ld.linkd (the first link starts the daemon)"
time clang++-19 --ld-path="$bin/ld.linkd" hello.o -o hello
./hello
echo "== linking again (warm daemon)"
time clang++-19 --ld-path="$bin/ld.linkd" hello.o -o hello2
./hello2
echo "== same bytes as stock ld.lld-19?"
clang++-19 -fuse-ld=lld hello.o -o hello.stock
cmp hello hello.stock && cmp hello2 hello.stock && echo "yes: byte-identical"
echo "== daemon status"
"$bin/linkd" status
