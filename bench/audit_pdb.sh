#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# linkd audit on a Windows program of many DLLs (docs/audit.md, "PE modules
# linkd did not link: their PDBs"): how long the audit takes when every
# module is read from its PDB, against the same program's DLLs read from
# linkd's link records.
#
#   bench/audit_pdb.sh [--dlls N] [--runs N] [--keep]
#
# N DLLs (default 50), each a user object and its own copy of a runtime
# object with 40 pieces of state, compiled by clang-cl (/Z7) and linked by
# stock lld-link with /debug (real PDBs, as MSVC's link.exe writes them),
# and a program importing them all. Then the same DLLs linked through
# lld-link.linkd without /debug (link records). Medians of the wall time of
# `linkd audit prog.exe` over N runs (default 5); both must report the same
# findings.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="${BUILD_DIR:-$REPO/build}/bin"
DLLS=50
RUNS=5
KEEP=0
while (($#)); do
  case "$1" in
    --dlls) DLLS="$2"; shift ;;
    --runs) RUNS="$2"; shift ;;
    --keep) KEEP=1 ;;
    *) echo "audit_pdb.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
CLANG_CL="${CLANG_CL:-clang-cl-19}"
LLD_LINK="${LLD_LINK:-lld-link-19}"
command -v "$CLANG_CL" >/dev/null && command -v "$LLD_LINK" >/dev/null ||
  { echo "audit_pdb.sh: needs $CLANG_CL and $LLD_LINK" >&2; exit 2; }

T="$(mktemp -d /tmp/linkd-audit-pdb.XXXXXX)"
chmod 700 "$T"
export LINKD_SOCKET="$T/sock" LINKD_STATE_DIR="$T/state" LINKD_CACHE_DIR="$T/cache" LINKD_QUIET=1
mkdir -p "$T/state" "$T/cache" && chmod 700 "$T/state"
cleanup() {
  "$BIN/linkd" stop >/dev/null 2>&1 || true
  ((KEEP)) || rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

{
  echo 'namespace Rt { namespace Internal {'
  for i in $(seq 40); do echo "int state_$i;"; done
  echo '} }'
  echo 'static int rt_calls;'
  echo 'extern "C" int rt_touch(int v) {'
  echo '  static int last;'
  for i in $(seq 40); do echo "  Rt::Internal::state_$i += v;"; done
  echo '  last = v; return ++rt_calls + Rt::Internal::state_7 + last; }'
} >rt.cpp
echo 'extern "C" unsigned _tls_index = 0;' >tls.cpp
FLAGS=(--target=x86_64-pc-windows-msvc /O1 /Z7 /GS- /c)
"$CLANG_CL" "${FLAGS[@]}" rt.cpp tls.cpp >/dev/null
imports=()
for i in $(seq "$DLLS"); do
  printf 'extern "C" int rt_touch(int);\nextern "C" __declspec(dllexport) int m%d(int v) { return rt_touch(v + %d); }\n' "$i" "$i" >"m$i.cpp"
  imports+=("m$i")
done
"$CLANG_CL" "${FLAGS[@]}" m*.cpp >/dev/null
{
  for m in "${imports[@]}"; do echo "extern \"C\" __declspec(dllimport) int $m(int);"; done
  echo 'int main() { int s = 0;'
  for m in "${imports[@]}"; do echo "  s += $m(1);"; done
  echo '  return s & 1; }'
} >prog.cpp
"$CLANG_CL" "${FLAGS[@]}" prog.cpp >/dev/null

link_all() { # DIR LINKER FLAGS...
  local dir="$1" linker="$2"; shift 2
  mkdir -p "$dir"
  for m in "${imports[@]}"; do
    "$linker" /dll /noentry /nodefaultlib "$@" "$m.obj" rt.obj tls.obj "/out:$dir/$m.dll" "/implib:$dir/$m.lib" >/dev/null
  done
  libs=()
  for m in "${imports[@]}"; do libs+=("$dir/$m.lib"); done
  "$linker" /entry:main /subsystem:console /nodefaultlib "$@" prog.obj "${libs[@]}" "/out:$dir/prog.exe" >/dev/null
}
echo "linking $DLLS DLLs and a program twice: stock lld-link /debug (PDBs), lld-link.linkd (link records)"
link_all pdb "$LLD_LINK" /debug
link_all rec "$BIN/lld-link.linkd"
for _ in $(seq 100); do
  n=$("$BIN/linkd" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("audit_records_stored", 0))')
  ((n >= DLLS + 1)) && break
  sleep 0.1
done
pdbs=$(ls pdb/*.pdb | wc -l)
size=$(du -cb pdb/*.pdb | tail -1 | cut -f1)

now() { date +%s.%N; }
median() { python3 -c 'import sys,statistics; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
declare -A times=([pdb]="" [rec]="")
for ((i = 0; i <= RUNS; i++)); do
  for d in pdb rec; do
    t0=$(now)
    "$BIN/linkd" audit "$d/prog.exe" >"$d.out" 2>"$d.err" || true
    t1=$(now)
    ((i == 0)) || times[$d]+=" $(python3 -c "print($t1 - $t0)")"
  done
done
for d in pdb rec; do
  echo "$d: $(head -1 "$d.out")"
  grep -c "(PE, " "$d.out" | sed "s/^/  modules listed: /"
done
# Names and copy counts (the kind may differ: the record knows the input
# section, .bss; the PDB the output section lld-link merged it into, .data).
findings() { grep "copies at run time" "$1" | sed 's/, [a-z -]*data, / /; s/, thread-local, / /' | sort; }
findings pdb.out >pdb.findings
findings rec.out >rec.findings
if cmp -s pdb.findings rec.findings; then
  echo "the PDBs and the records give the same $(wc -l <pdb.findings) findings"
else
  echo "FINDINGS DIFFER:"; diff pdb.findings rec.findings | head -20 || true
fi
echo "linkd audit prog.exe, $DLLS DLLs from $pdbs PDBs ($((size / 1024)) KiB): median $(median ${times[pdb]}) s (${times[pdb]} )"
echo "linkd audit prog.exe, $DLLS DLLs from link records:           median $(median ${times[rec]}) s (${times[rec]} )"
