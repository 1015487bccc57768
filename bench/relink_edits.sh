#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/relink_edits.sh [BIN]: incremental relinks, step one. Scripted,
# realistic edits to a real source file no one here wrote (googletest's
# gtest-filepath.cc, from Debian's googletest package), each compiled before
# and after with clang++-19 as a build would (-O2, then -O2 -g), and judged
# by `linkd-lld relink-check` (lib/incremental/relink_check.h) without
# slack and with the slack a padded first link would leave (25 %, 64
# bytes): patchable, or the reason a full link is needed. Counts, not
# times: the patch itself is the next step (docs/design.md, "Incremental
# relinks").
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
GT=/usr/src/googletest/googletest
SRC=$GT/src/gtest-filepath.cc
[[ -f $SRC ]] || { echo "needs Debian's googletest package ($SRC)"; exit 2; }
T=$(mktemp -d /tmp/linkd-relink-edits.XXXXXX)
trap 'rm -rf "$T"' EXIT

# NAME|what the edit does (a sed script over the file)
EDITS=(
  "constant|s/number == 0/number == 1/"
  "statement|s/^  FilePath full_pathname;/  FilePath full_pathname;\n  if (extension == nullptr) extension = \"xml\";/"
  "local-variable|s/^  std::string file;/  std::string file;\n  const int first = number;\n  if (first < 0) return FilePath();/"
  "new-function|\$a\\
namespace testing { namespace internal { bool IsXmlName(const FilePath\& p) { return p.string().find(\".xml\") != std::string::npos; } } }"
  "renamed-function|s/IsPathSeparator(/IsSeparatorChar(/g"
  "new-string|s/\"_\" + StreamableToString(number)/\"-\" + StreamableToString(number)/"
)

compile() { # SRC OUT FLAGS...
  local src=$1 out=$2; shift 2
  clang++-19 "$@" -I"$GT/include" -I"$GT" -c "$src" -o "$out"
}

# The file is edited in place, as in a real build: its name is in the
# object (STT_FILE, the static initialiser's name).
WORK=$T/src/gtest-filepath.cc
mkdir -p "$T/src"
printf '%-17s %-7s %-7s %s\n' edit flags slack verdict
patched=0; total=0
for flags in "-O2" "-O2 -g"; do
  cp "$SRC" "$WORK"
  # shellcheck disable=SC2086
  compile "$WORK" "$T/before.o" $flags || { echo "cannot compile $SRC"; exit 2; }
  for e in "${EDITS[@]}"; do
    name=${e%%|*}; script=${e#*|}
    sed "$script" "$SRC" >"$WORK"
    if cmp -s "$SRC" "$WORK"; then echo "$name: the edit did not apply"; exit 2; fi
    # shellcheck disable=SC2086
    compile "$WORK" "$T/after.o" $flags || { echo "$name: does not compile"; exit 2; }
    for slack in "0,0" "25,64"; do
      verdict=$("$BIN/linkd-lld" relink-check --slack "$slack" "$T/before.o" "$T/after.o")
      rc=$?
      [[ $rc -le 1 ]] || { echo "$name: relink-check failed ($rc)"; exit 2; }
      total=$((total + 1)); [[ $rc -eq 0 ]] && patched=$((patched + 1))
      printf '%-17s %-7s %-7s %s\n' "$name" "${flags// /}" "$slack" "$verdict"
    done
  done
done
echo "patchable: $patched of $total"
