#!/usr/bin/env bash
# setup.sh -- install the Debian packages baton needs, then build it.
#
#   bash deploy/setup.sh                  install packages, build into build/release
#   bash deploy/setup.sh --deps-only      install packages only
#
# Works on a fresh Debian 12 as root (or with sudo). Idempotent: packages
# already installed are not fetched again, and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
    build-essential cmake pkg-config      # compiler and build
    libhiredis-dev libcjson-dev libyaml-dev  # libbaton's and the supervisor's libraries
    libssl-dev openssl                    # TLS (and SHA-1) for libbaton; tests make certificates
    check                                 # unit test framework
    redis-server redis-tools              # tests, benchmarks and the demo start their own redis-server
    redis-sentinel                        # the Sentinel failover test
    tzdata                                # time zones for cron schedules
    clang libclang-rt-14-dev              # libFuzzer targets
    procps                                # ps, for the demo and tests
    prometheus                            # promtool, to validate the metrics output
)

missing=()
for p in "${PACKAGES[@]}"; do
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

[ "${1:-}" = "--deps-only" ] && exit 0
mkdir -p build/release
if ! { cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_BUILD_TESTS=OFF &&
       cmake --build build/release -j"$(nproc)"; } >build/release/build.log 2>&1; then
    tail -n 60 build/release/build.log
    echo "setup: the build failed (full log: build/release/build.log)"
    exit 1
fi
echo "setup: built build/release/baton"
