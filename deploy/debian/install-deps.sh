#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs everything linkd needs to build, test and benchmark on Debian 12.
# Idempotent; run as root. Only Debian's own archive is used.
#   install-deps.sh [--build-only]   (--build-only: what building needs; the
#                                     container recipe's build stage)
set -euo pipefail

packages=(
  # build
  cmake ninja-build pkg-config clang-19 lld-19 llvm-19-dev liblld-19-dev
  libpolly-19-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  libspdlog-dev libgtest-dev libzstd-dev zlib1g-dev libssl-dev libsqlite3-dev
  libhiredis-dev libcurl4-openssl-dev
  # build: the lint tests on changed lines (tests/lint/check_changed.sh)
  clang-format-19 clang-tidy-19
)
[[ "${1:-}" == --build-only ]] || packages+=(
  # tests: real inputs and a PE runtime
  gcc g++ googletest mingw-w64 wine wine64 nodejs procps file sqlite3 curl
  openssl
  # tests: libtool's shared-library links (content_key_test.cpp)
  libtool-bin
  # tests: the Debian package (cpack runs dpkg-shlibdeps) and the man pages
  dpkg-dev man-db
  # tests: a cargo project offline (cargo from rustup, else Debian's), its
  # dependency as a directory source (content_key_test.cpp)
  librust-cfg-if-dev
  # tests: real shared-cache servers; a real REAPI server (Bazel's
  # RemoteWorker, compiled from its Java source: tests/e2e/tools/reapi_worker.sh)
  redis-server nginx-light bazel-bootstrap bazel-bootstrap-source
  default-jdk-headless
  # tests: the operator's tools (operations_test.cpp): a Prometheus server and
  # promtool, a stock gRPC client for the health service, ip(8)
  prometheus python3-grpcio iproute2
  # tests: the wheel installed offline into a fresh venv, and the module
  # (kernels_library_test.cpp, docs/kernels.md "Adopting linkd")
  python3 python3-venv python3-pip
  # tests: user and mount namespaces for the stripped-environment tests
  util-linux
  # tests: LLD's own lit suite (tests/lld_suite): lit, FileCheck and the
  # other LLVM 19 tools; lit's --timeout needs psutil; its sources come from
  # Debian's source package (apt-get source, a deb-src entry it adds)
  llvm-19-tools python3-psutil
  # benchmarks
  hyperfine
  # the fuzzer (-DLINKD_FUZZ=ON): libFuzzer and ASan runtimes
  libclang-rt-19-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
