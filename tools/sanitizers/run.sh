#!/usr/bin/env bash
# Builds Muster and its tests with a sanitizer (for ThreadSanitizer against CAF and abseil
# instrumented the same way: build-deps.sh), runs the whole ctest suite, and fails when a test
# failed or any process wrote a sanitizer report.
#
#   tools/sanitizers/run.sh thread|address      (make tsan, make asan)
#
# Every process the tests start (leaders, workers, the muster command) inherits the options
# below and writes its reports to <build dir>/sanitizer-reports/report.<pid> rather than to a
# stderr a test may swallow; a report also makes that process exit with 66. The suppression
# files next to this script give one written reason per entry. The build dir is build-tsan or
# build-asan (SANITIZER_BUILD_DIR to change it).
set -euo pipefail

SANITIZER=${1:-}
case "$SANITIZER" in
  thread) BUILD_DIR=${SANITIZER_BUILD_DIR:-build-tsan} ;;
  address) BUILD_DIR=${SANITIZER_BUILD_DIR:-build-asan} ;;
  *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
mkdir -p "$BUILD_DIR"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
JOBS=${JOBS:-2}
START=$SECONDS

PREFIXES=$("$HERE/build-deps.sh" "$SANITIZER")
# A build dir configured against other library prefixes keeps their paths in its cache.
if [ "$(cat "$BUILD_DIR/sanitizer-prefixes" 2>/dev/null)" != "$PREFIXES" ]; then
  rm -f "$BUILD_DIR/CMakeCache.txt"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMUSTER_SANITIZER="$SANITIZER" -DCMAKE_PREFIX_PATH="$PREFIXES" >/dev/null
echo "$PREFIXES" >"$BUILD_DIR/sanitizer-prefixes"
cmake --build "$BUILD_DIR" -j "$JOBS"
BUILT=$SECONDS

REPORTS="$BUILD_DIR/sanitizer-reports"
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
COMMON="log_path=$REPORTS/report exitcode=66"
export TSAN_OPTIONS="$COMMON suppressions=$HERE/tsan.supp second_deadlock_stack=1"
export ASAN_OPTIONS="$COMMON detect_leaks=1"
export LSAN_OPTIONS="suppressions=$HERE/lsan.supp"
# UBSan's diagnostics ignore log_path next to AddressSanitizer: they go to stderr, so the first
# one ends its process (exit 66), which its test sees.
export UBSAN_OPTIONS="$COMMON print_stacktrace=1 halt_on_error=1 suppressions=$HERE/ubsan.supp"

STATUS=0
# One test at a time: instrumented processes run several times slower, and the multi-process
# tests' heartbeat deadlines (2 s) are not made for two of them sharing a 2-core machine with
# the compile of the install test.
(cd "$BUILD_DIR" && ctest -j "${TEST_JOBS:-1}" --output-on-failure --timeout 600) || STATUS=$?

shopt -s nullglob
FOUND=("$REPORTS"/report.*)
if [ ${#FOUND[@]} -gt 0 ]; then
  for report in "${FOUND[@]}"; do
    echo "==== $report"
    cat "$report"
  done
  echo "sanitizers: ${#FOUND[@]} process(es) wrote a $SANITIZER sanitizer report (above)" >&2
  STATUS=1
else
  echo "sanitizers: no $SANITIZER sanitizer report from any process"
fi
echo "sanitizers: build $((BUILT - START)) s, tests $((SECONDS - BUILT)) s"
exit "$STATUS"
