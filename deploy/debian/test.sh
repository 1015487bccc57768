#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Set up, build and run the whole test suite (units and end-to-end).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$repo/deploy/debian/install-deps.sh"
"$repo/deploy/debian/build.sh"
ctest --test-dir "$repo/build" -j2 --output-on-failure --timeout 600
