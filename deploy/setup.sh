#!/usr/bin/env bash
# setup.sh -- install the Debian packages baton needs, then build it.
#
#   bash deploy/setup.sh               every package (tests too), build into build/release
#   bash deploy/setup.sh --demo        only what building baton and the demo need, build
#   bash deploy/setup.sh --deps-only   every package, no build (tests/run.sh)
#
# Works on a fresh Debian 12 as root (or with sudo). Idempotent: packages
# already installed are not fetched again, and the build is incremental.
# The build goes to build/release, which git ignores.
set -euo pipefail
cd "$(dirname "$0")/.."

# What baton itself and examples/demo.sh need: a C compiler and make (not
# build-essential: no C++), cmake, the three libraries, and redis-server and
# redis-cli for the demo's throwaway server.
DEMO_PACKAGES=(
    gcc libc6-dev make cmake pkg-config        # compiler and build
    libhiredis-dev libcjson-dev libyaml-dev    # libbaton's and the supervisor's libraries
    libssl-dev                                 # TLS (and SHA-1) for libbaton
    redis-server redis-tools                   # the demo (and the tests) start their own redis-server
    tzdata                                     # time zones for cron schedules
)
# What the tests add (tests/run.sh).
TEST_PACKAGES=(
    check                                      # unit test framework
    openssl                                    # the TLS tests make their certificates
    redis-sentinel                             # the Sentinel failover test
    clang libclang-rt-14-dev                   # libFuzzer targets
    procps                                     # ps, for the tests
    prometheus                                 # promtool, to validate the metrics output
    libmicrohttpd-dev libsystemd-dev           # baton run's HTTP endpoint and sd_notify (optional
                                               # in the demo's build, required by the tests')
    curl jq                                    # the HTTP endpoint's tests
    chromium w3m                               # the status page, in a browser and a terminal one
    nodejs npm                                 # puppeteer-core drives that chromium (test_page_control's reference driver)
    systemd                                    # systemd-analyze, systemd-sysusers for the unit's tests
    man-db groff-base                          # the man pages render without warnings
    zsh                                        # the zsh completion parses
    valgrind                                   # memcheck over baton lock and baton run
    gdb                                        # a process that does not exit: where it hangs, in the report
    faketime                                   # libfaketime: test_faults steps the supervisors' wall clock
    curl python3                               # the hooks example posts with curl; its test listens with python3
    debootstrap lintian                        # test_package: a pristine Debian 12 root; the packages' lint
)

mode=${1:-}
case $mode in
    "" | --deps-only) PACKAGES=("${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
    --demo) PACKAGES=("${DEMO_PACKAGES[@]}") ;;
    *) echo "usage: bash deploy/setup.sh [--demo | --deps-only]" >&2; exit 64 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
    # A node and npm from elsewhere (NodeSource's nodejs carries its own npm,
    # and Debian's npm package conflicts with it) serve as well.
    case $p in
        nodejs) command -v node >/dev/null && continue ;;
        npm) command -v npm >/dev/null && continue ;;
    esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian starts a system redis-server on port 6379 when the package is
# installed; baton's tests, benchmarks and demo never use it.
# puppeteer-core (test-only, pinned by tests/browser/package-lock.json)
# drives Debian's chromium: it downloads no browser.
# npm is bounded in time and its failure does not stop the set-up (the
# registry may be unreachable, as in a root behind a TLS-inspecting proxy):
# test_page_control then drives chromium with its python driver alone, and
# says so.
if [ "$mode" != "--demo" ] && [ ! -d tests/browser/node_modules/puppeteer-core ]; then
    echo "setup: npm ci in tests/browser (puppeteer-core)"
    timeout 300 npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error \
        --fetch-retries=1 --fetch-timeout=20000 >/dev/null ||
        echo "setup: npm ci in tests/browser failed (is the npm registry reachable?)" >&2
fi

[ "$mode" = "--deps-only" ] && exit 0
mkdir -p build/release
if ! { cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_BUILD_TESTS=OFF \
             -DBATON_BUILD_EXAMPLES=OFF &&
       cmake --build build/release -j"$(nproc)"; } >build/release/build.log 2>&1; then
    tail -n 60 build/release/build.log
    echo "setup: the build failed (full log: build/release/build.log)"
    exit 1
fi
echo "setup: built build/release/baton"
