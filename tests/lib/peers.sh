# peers.sh -- the peers of the benchmarks (tests/bench/peers: node-redlock,
# redis-semaphore, ioredis, croner, cron-parser; versions pinned in its
# package.json and lockfile), installed with `npm ci` into
# $BATON_BUILD_DIR/peers, never into the source tree, and only when that
# copy is missing or stale. Source it after harness.sh (it uses $T).
#   peers_install SMOKE   returns 0 when installed; else 1 with the reason
#                         in $peers_why (npm missing or unreachable: a
#                         full run fails on it, --smoke says so and runs
#                         baton's side alone). npm is bounded in time:
#                         without a network it would retry for minutes.
PEERS_SRC=$BATON_TESTS_DIR/bench/peers
PEERS_DIR=$BATON_BUILD_DIR/peers
peers_why=
peers_install() {
    local smoke=$1
    command -v node >/dev/null && command -v npm >/dev/null || {
        peers_why="node or npm is not installed"; return 1; }
    if cmp -s "$PEERS_SRC/package-lock.json" "$PEERS_DIR/package-lock.json" &&
        [ -f "$PEERS_DIR/node_modules/.package-lock.json" ]; then
        return 0 # installed already, from the same lockfile
    fi
    mkdir -p "$PEERS_DIR" && cp "$PEERS_SRC/package.json" "$PEERS_SRC/package-lock.json" "$PEERS_DIR/" || {
        peers_why="cannot write $PEERS_DIR"; return 1; }
    echo "installing the peers with npm ci into $PEERS_DIR" >&2
    local limit=180
    [ "$smoke" = 0 ] || limit=60
    if ! (cd "$PEERS_DIR" && timeout "$limit" npm ci --no-audit --no-fund --loglevel=error \
            --fetch-retries=1 --fetch-timeout=20000) >"$T/npm.log" 2>&1; then
        rm -f "$PEERS_DIR/package-lock.json" # not installed: try again next time
        peers_why="npm ci failed (is the registry reachable?): $(grep -v nodedir "$T/npm.log" | grep -m 2 . | tr "\n" " ")"
        return 1
    fi
}
