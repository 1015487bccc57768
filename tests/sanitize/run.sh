#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The sanitizer guardrail: an AddressSanitizer + UndefinedBehaviorSanitizer
# build (-DLINKD_SANITIZE=ON, CMakeLists.txt) in its own build directory, and
# in it the unit tests and the slice of the end-to-end tests that runs the
# daemon, its zygote and link children (the runtime is inherited across the
# fork), reused link workers, the kernel path and the fallback. Any report
# fails the run: UB is fatal (-fno-sanitize-recover), ASan halts on error,
# and every report also lands in a log file per process, which this script
# checks after the tests (a report in a link child shows as a failed link,
# one in a daemon it starts in the background might show nowhere else).
#   run.sh [BUILD_DIR]   (default build-asan next to build/)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build-asan}

# The e2e slice, by GoogleTest suite.
slice='ElfLink|WorkerReuse|WorkerReuseAttack|DaemonLifecycle|Concurrency'
slice+='|Fallback|KernelDropIn|StrippedEnvironment|KernelLibrary|Robustness'
slice+='|LinkCacheTest|Diagnostics|Fidelity|Windows|Archiver|Audit'
slice+='|LocalIsolationTest|HostileInputTest'

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DLINKD_SANITIZE=ON >/dev/null
ninja -C "$build" unit_tests rewrite_unit_tests incremental_unit_tests e2e_tests \
  linkd linkd-lld \
  ld.linkd linkd_shared farm_peer

logs=$(mktemp -d /tmp/linkd-sanitize.XXXXXX)
chmod 0777 "$logs" # link children may run as another user in some tests
# Leaks: LLD frees nothing at exit by design (its link children _exit), and
# the daemon's exit is not where leaks hurt; ASan's other checks are on.
# (One runtime holds both sanitizers: their common flags, log_path among
# them, are the same for both.)
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:log_path=$logs/report:log_exe_name=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/report:log_exe_name=1"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer

status=0
# --no-tests=error: a slice that matches nothing (a renamed suite) fails.
ctest --test-dir "$build" -j2 --output-on-failure --timeout 900 -L '^unit$' \
  --no-tests=error || status=1
# Memory figures under ASan measure its quarantine of freed blocks, not
# the program, and an address-space cap (RLIMIT_AS) starves its shadow
# memory: the test of a worker's RSS and the one that caps the daemon's
# address space are left to the normal build.
ctest --test-dir "$build" -j2 --output-on-failure --timeout 900 -L '^e2e$' \
  -R "^(${slice})\." \
  -E 'HundredsOfLinksKeepTheWorkersSmall|NoThreadForAConnectionTurnsItAway' \
  --no-tests=error || status=1
# Links that crash, for their reports only: the stack they print has ASan's
# interceptor frames, which stock's has not, so the tests' verdicts are
# not this build's to give (the crash path is where ASan found LLVM's
# handler reading a freed argv[0]).
echo "Crash tests: run for sanitizer reports only"
ctest --test-dir "$build" -j2 --timeout 900 -L '^e2e$' -R '^Crash\.' \
  >/dev/null 2>&1 || true
# Whatever the tests said: a sanitizer report anywhere fails the run.
if compgen -G "$logs/*" >/dev/null; then
  echo "sanitizer reports:"
  for f in "$logs"/*; do echo "== $f"; cat "$f"; done
  status=1
fi
rm -rf "$logs"
exit $status
