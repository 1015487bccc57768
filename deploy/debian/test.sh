#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Set up, build and run the whole test suite:
#   1. the project's tests (units, end-to-end, install, lint: ctest in build/)
#   2. the sanitizer guardrail (ASan + UBSan build in build-asan/, the units
#      and a slice of the end-to-end tests: tests/sanitize/run.sh)
#   3. the drop-in gate: LLD 19's own lit suite on stock LLD and through
#      linkd, cold, warm and with audit records (tests/lld_suite/run.py)
# Every step runs even when an earlier one failed; the exit status says
# whether all passed. Each step's wall time is printed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$repo/deploy/debian/install-deps.sh"
"$repo/deploy/debian/build.sh"

failed=()
step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "=== $name"
  if "$@"; then
    echo "=== $name: passed in $((SECONDS - start)) s"
  else
    echo "=== $name: FAILED after $((SECONDS - start)) s"
    failed+=("$name")
  fi
}
step tests ctest --test-dir "$repo/build" -j2 --output-on-failure --timeout 600
step sanitizers "$repo/tests/sanitize/run.sh" "$repo/build-asan"
step lld-suite /usr/bin/python3 "$repo/tests/lld_suite/run.py" \
  --build "$repo/build"

if ((${#failed[@]})); then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "all passed"
