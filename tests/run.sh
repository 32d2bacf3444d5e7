#!/usr/bin/env bash
# run.sh -- the whole test suite: what CI runs (.ci/run calls this).
#
#   1. build with -Wall -Wextra -Werror (and gcov) and run every suite
#      (unit, Redis, integration, examples, benchmark smoke runs); report
#      line and branch coverage and hold its floors (tests/lib/coverage.sh);
#   2. build with AddressSanitizer + UndefinedBehaviorSanitizer and run them
#      all again;
#   3. build the libFuzzer targets with clang and run each for a bounded time
#      (BATON_FUZZ_SECONDS, default 30), two at a time.
# Installs what it needs first (deploy/setup.sh). Every test starts and stops
# its own redis-server on a free loopback port, with its own keys and
# temporary directory, so the suites run side by side: BATON_TEST_JOBS at a
# time (default 4: most of them wait on timers, not on the 2 cores), the
# longest first (their COST in tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
jobs=${BATON_TEST_JOBS:-4}
bash deploy/setup.sh --deps-only

build() {
    local dir=$1; shift
    mkdir -p "$dir"
    if ! { cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
           cmake --build "$dir" -j"$(nproc)"; } >"$dir/build.log" 2>&1; then
        tail -n 60 "$dir/build.log"
        echo "run.sh: the build in $dir failed"
        exit 1
    fi
}
stamp() { echo "   ($(( $(date +%s) - start )) s)"; }

echo "== 1/3: -Wall -Wextra -Werror build with coverage, all suites, the coverage floors"
build build/werror -DBATON_WERROR=ON -DBATON_COVERAGE=ON -DBATON_HTTP=ON -DBATON_SYSTEMD=ON
find build/werror -name '*.gcda' -delete
ctest --test-dir build/werror --output-on-failure --timeout 600 -j"$jobs"
bash tests/lib/coverage.sh build/werror
stamp

echo "== 2/3: AddressSanitizer + UndefinedBehaviorSanitizer build, all suites"
build build/asan -DBATON_WERROR=ON -DBATON_SANITIZE=ON -DBATON_HTTP=ON -DBATON_SYSTEMD=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure --timeout 900 -j"$jobs"
stamp

echo "== 3/3: libFuzzer targets, ${BATON_FUZZ_SECONDS:-30}s each, two at a time"
. tests/lib/fuzz.sh
fuzz_build || exit 1
targets=$(cd build/fuzz/tests && ls fuzz_* | sort)
half=$(( ($(echo "$targets" | wc -l) + 1) / 2 ))
FUZZ_TARGETS=$(echo "$targets" | head -n "$half" | tr '\n' ' ') fuzz_run "${BATON_FUZZ_SECONDS:-30}" &
first=$!
rc=0
FUZZ_TARGETS=$(echo "$targets" | tail -n +"$(( half + 1 ))" | tr '\n' ' ') fuzz_run "${BATON_FUZZ_SECONDS:-30}" || rc=1
wait "$first" || rc=1
[ "$rc" -eq 0 ] || exit 1
echo "== all green in $(( $(date +%s) - start ))s"
