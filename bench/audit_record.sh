#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# What the audit's link record costs per format (docs/audit.md, "Cost"), on
# links that really run (never a cache hit): PE links as their drivers make
# them are timestamped, hence uncacheable; the ELF ones pass
# --linkd-no-cache. Two daemons started by hand, one with
# LINKD_AUDIT_RECORD=0 (no record) and one with =1 (PE and ELF recorded),
# measured alternately with hyperfine; the client's wall time.
#
#   bench/audit_record.sh [--runs N]
#
# Cases: a tiny MinGW DLL (clang's MinGW driver, -shared -s, a tiny DLL); an
# MSVC-style lld-link DLL; a MinGW C++ program with libstdc++ linked in
# statically (a mid-size PE link); an ELF -s shared object; an ELF C++
# program (gcc passes --build-id, so it is recorded with =1).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="${BUILD_DIR:-$REPO/build}/bin"
RUNS=20
while (($#)); do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    *) echo "audit_record.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

T="$(mktemp -d /tmp/linkd-audit-record.XXXXXX)"
chmod 700 "$T"
cleanup() {
  for d in off on; do
    LINKD_SOCKET="$T/$d/sock" LINKD_STATE_DIR="$T/$d/state" "$BIN/linkd" stop >/dev/null 2>&1 || true
  done
  rm -rf "$T"
}
trap cleanup EXIT

env_of() { echo "LINKD_SOCKET=$T/$1/sock LINKD_STATE_DIR=$T/$1/state LINKD_CACHE_DIR=$T/$1/cache LINKD_QUIET=1"; }
for d in off on; do mkdir -p "$T/$d/state" "$T/$d/cache" && chmod 700 "$T/$d" "$T/$d/state"; done
env $(env_of off) LINKD_AUDIT_RECORD=0 "$BIN/linkd" serve >"$T/off.log" 2>&1 &
env $(env_of on) LINKD_AUDIT_RECORD=1 "$BIN/linkd" serve >"$T/on.log" 2>&1 &
for d in off on; do
  for _ in $(seq 50); do env $(env_of $d) "$BIN/linkd" status >/dev/null 2>&1 && break; sleep 0.2; done
done

cd "$T"
cat >rt.c <<'EOF'
static int halide_device_interface;
int halide_copy_count;
void halide_set_interface(int id) { halide_device_interface = id; ++halide_copy_count; }
int halide_get_interface(void) { return halide_device_interface; }
EOF
cat >a.c <<'EOF'
void halide_set_interface(int);
int halide_get_interface(void);
__declspec(dllexport) void a_set(int v) { halide_set_interface(v); }
__declspec(dllexport) int a_get(void) { return halide_get_interface(); }
EOF
cat >big.cpp <<'EOF'
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
int main(int argc, char **argv) {
  std::map<std::string, int> m;
  std::regex re("[a-z]+");
  for (int i = 0; i < argc; ++i) m[argv[i]] = i;
  std::ostringstream os;
  for (auto &[k, v] : m) if (std::regex_match(k, re)) os << k << v;
  std::cout << os.str() << "\n";
}
EOF
sed 's/__declspec(dllexport) //' a.c >ea.c
clang-19 --target=x86_64-w64-mingw32 -O1 -c rt.c a.c
clang-19 --target=x86_64-pc-windows-msvc -O1 -c rt.c -o rt.obj
clang-19 --target=x86_64-pc-windows-msvc -O1 -c a.c -o a.obj
clang++-19 --target=x86_64-w64-mingw32 -O1 -c big.cpp -o bigw.o
clang-19 -fPIC -O1 -c rt.c -o ert.o && clang-19 -fPIC -O1 -c ea.c -o ea.o
g++ -O1 -c big.cpp -o bige.o

declare -A CASES=(
  [pe-seed]="clang-19 --target=x86_64-w64-mingw32 --ld-path=$BIN/ld.linkd -shared -s a.o rt.o -o OUT.dll"
  [pe-lld-link]="$BIN/lld-link.linkd /dll /noentry /nodefaultlib a.obj rt.obj /out:OUT.dll"
  [pe-cxx-static]="clang++-19 --target=x86_64-w64-mingw32 --ld-path=$BIN/ld.linkd -static -s bigw.o -o OUT.exe"
  [elf-so-s]="clang-19 --ld-path=$BIN/ld.linkd -shared -s ea.o ert.o -Wl,--linkd-no-cache -o OUT.so"
  [elf-cxx-buildid]="g++ -B$BIN/gcc/ bige.o -Wl,--linkd-no-cache -o OUT"
)
printf "%-16s %10s %10s %8s\n" case "off (ms)" "on (ms)" cost
for c in pe-seed pe-lld-link pe-cxx-static elf-so-s elf-cxx-buildid; do
  cmd="${CASES[$c]}"
  hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$T/$c.json" \
    -n off "env $(env_of off) ${cmd//OUT/off-$c}" \
    -n on "env $(env_of on) ${cmd//OUT/on-$c}" >/dev/null 2>&1 || {
      echo "$c: hyperfine failed" >&2; continue; }
  python3 - "$T/$c.json" "$c" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
off, on = r["off"]["median"] * 1000, r["on"]["median"] * 1000
print("%-16s %10.1f %10.1f %+7.1f%%" % (sys.argv[2], off, on, 100 * (on - off) / off))
EOF
done
for d in off on; do
  env $(env_of $d) "$BIN/linkd" stats --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("'$d' daemon: requests %d, uncacheable %d, disabled %d, records stored %d" % (s["requests"], s["uncacheable"], s.get("cache_disabled", 0), s.get("audit_records_stored", 0)))'
done
