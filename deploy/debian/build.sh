#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Configures and builds linkd into build/ (binaries in build/bin).
#   build.sh [TARGET...]   (default: everything; the container builds
#                           `linkd linkd-lld`)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$repo" -B "$repo/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
ninja -C "$repo/build" "$@"
