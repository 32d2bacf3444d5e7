# harness.sh -- shared helpers for integration tests (bash). Source it:
#   . "$BATON_TESTS_DIR/lib/harness.sh"
# It gives every test a temporary directory ($T), starts real redis-servers
# on free loopback ports, starts processes whose pids it records, waits for
# log lines with deadlines, and on exit stops everything it started, by pid.
# A test fails (exit 1) with `fail MESSAGE`; it never skips.

set -u
BATON_BIN=${BATON_BIN:-baton}
T=$(mktemp -d "${TMPDIR:-/tmp}/baton-test.XXXXXX")
declare -A PROC_PID=()     # name -> pid of processes started with spawn
HARNESS_REDIS_PIDS=()
TEST_NAME=$(basename "${0%.sh}")
HARNESS_FAILURE=

harness_cleanup() {
    local rc=$?
    local pid
    for pid in "${PROC_PID[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${PROC_PID[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
        kill -KILL "$pid" 2>/dev/null
        kill -CONT "$pid" 2>/dev/null
    done
    for pid in "${HARNESS_REDIS_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
        kill -KILL "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    # A sanitizer's report in any process's stderr fails the test, even
    # when the process was stopped before its exit status could say so.
    local bad
    bad=$(grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err 2>/dev/null | head -n1)
    if [ -n "$bad" ]; then
        echo "FAIL [$TEST_NAME]: a sanitizer reported in $(basename "$bad"):" >&2
        grep -m1 -A12 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$bad" >&2
        [ "$rc" -ne 0 ] || rc=1
    fi
    # Every supervisor log line a test kept is strict JSON: one object, and
    # one member per name (tests/lib/jsonl_check.c --log).
    local files=() f why
    for f in "$T"/*.out "$T"/*.log; do [ -f "$f" ] && files+=("$f"); done
    if [ -n "${BATON_JSONL_CHECK:-}" ] && [ "${#files[@]}" -gt 0 ] &&
        ! why=$("$BATON_JSONL_CHECK" --log "${files[@]}" 2>&1); then
        echo "FAIL [$TEST_NAME]: a log line is not strict JSON: $why" >&2
        [ "$rc" -ne 0 ] || rc=1
    fi
    if [ "$rc" -ne 0 ] && [ -z "${HARNESS_KEEP:-}" ]; then
        echo "--- $TEST_NAME failed; last lines of the logs in $T:" >&2
        for f in "$T"/*.out "$T"/*.err "$T"/*.log; do
            [ -s "$f" ] || continue
            echo "--- $f" >&2; tail -n 25 "$f" | cut -c1-400 >&2
        done
        # Repeated last: a log tail cut by whoever shows the output keeps it.
        [ -z "$HARNESS_FAILURE" ] || echo "FAIL [$TEST_NAME]: $HARNESS_FAILURE" >&2
    fi
    # HARNESS_SAVE=DIR keeps a failed test's files there, for a closer look.
    [ "$rc" -eq 0 ] || [ -z "${HARNESS_SAVE:-}" ] || cp -r "$T" "$HARNESS_SAVE"
    rm -rf "$T"
    exit "$rc"
}
trap harness_cleanup EXIT
trap 'exit 130' INT TERM

fail() { HARNESS_FAILURE="$*"; echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
note() { echo "[$TEST_NAME] $*"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# at_ms VAR: Unix ms now into VAR, without a fork: for a time taken right
# before a signal (a `date`, or a $(...) lookup, costs milliseconds that
# would count as the signalled process's)
at_ms() { printf -v "$1" '%s' $(( ${EPOCHREALTIME/./} / 1000 )); }

# assert_eq EXPECTED ACTUAL WHAT
assert_eq() { [ "$1" == "$2" ] || fail "$3: expected [$1], got [$2]"; }

# at_least N WHAT LIST: LIST (words) holds N items or more: a loop over a
# list scraped from a program's output must not pass by looping over
# nothing when that output's format changes.
at_least() {
    local n
    n=$(echo $3 | wc -w)
    [ "$n" -ge "$1" ] || fail "$n $2 found, at least $1 expected (has the format changed?)"
}

# redis_start [REDIS-SERVER ARGS...]: starts a redis-server on a free loopback
# port with its own directory. Sets REDIS_PORT, REDIS_PID, REDIS_URL,
# REDIS_DIR. Extra args are kept for redis_restart.
# random_port: a loopback port below the kernel's ephemeral range, so that
# no outgoing connection takes it as its local port: not another program's,
# nor a client's own retries to it while nothing listens there yet (a TCP
# connection to a free port in that range can connect to itself and hold
# the port; test_supervisor's "Redis absent at start" met that).
random_port() {
    local lo=32768 hi
    read -r lo hi < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 12000 ] || lo=32768
    echo $(( 10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000) ))
}

redis_start() {
    command -v redis-server >/dev/null || fail "redis-server is not installed (apt-get install redis-server)"
    REDIS_ARGS=("$@")
    local attempt port
    for attempt in $(seq 1 30); do
        port=$(random_port)
        REDIS_DIR="$T/redis-$port"
        mkdir -p "$REDIS_DIR"
        if redis_launch "$port"; then return 0; fi
    done
    fail "could not start redis-server on a free port"
}

# serves_as PID CLI...: true when the server that CLI (a redis-cli command
# line, without the command) reaches is process PID, by the process_id of
# its INFO: a port that another server of the test (or of a test running
# beside it) holds answers PING too, and must not pass for the one just
# started, which fails to bind there and exits.
serves_as() {
    local pid=$1
    shift
    "$@" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"
}

redis_launch() {
    local port=$1
    redis-server --port "$port" --bind 127.0.0.1 --dir "$REDIS_DIR" --save '' \
        --appendonly no --daemonize no --logfile "$REDIS_DIR/redis.log" \
        "${REDIS_ARGS[@]}" </dev/null >/dev/null 2>&1 &
    local pid=$!
    local i
    for i in $(seq 1 250); do
        if serves_as "$pid" redis-cli -p "$port"; then
            REDIS_PORT=$port REDIS_PID=$pid
            REDIS_URL="redis://127.0.0.1:$port/0"
            HARNESS_REDIS_PIDS+=("$pid")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null
    return 1
}

# redis_start_port PORT [ARGS...]: starts a redis-server on PORT (which the
# test chose, e.g. to start it after the processes that will use it).
redis_start_port() {
    local port=$1; shift
    REDIS_ARGS=("$@")
    REDIS_DIR="$T/redis-$port"
    mkdir -p "$REDIS_DIR"
    redis_launch "$port" || fail "could not start redis-server on port $port"
}

# free_port: a loopback port nothing listens on now.
free_port() {
    local port
    while :; do
        port=$(random_port)
        redis-cli -p "$port" ping >/dev/null 2>&1 || { echo "$port"; return; }
    done
}

# fake_server REPLY: a TCP server on a free loopback port that reads a
# connection's first bytes, answers REPLY (Python bytes escapes; "" closes
# at once; --reset reads one byte and resets the connection) and closes it,
# for every connection; sets FAKE_PORT. Stopped by the harness, by pid.
HARNESS_FAKES=0
fake_server() {
    local out="$T/fake-server.$((HARNESS_FAKES += 1))"
    python3 -c '
import codecs, socket, struct, sys
reset = sys.argv[1] == "--reset"
reply = b"" if reset else codecs.escape_decode(sys.argv[1])[0]
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c = s.accept()[0]
    if reset:
        c.recv(1)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    elif reply:
        c.recv(4096); c.sendall(reply)
    c.close()
' "$1" >"$out" 2>/dev/null &
    HARNESS_REDIS_PIDS+=("$!")
    wait_for_line "$out" '^[0-9]+$' 10 >/dev/null
    FAKE_PORT=$(cat "$out")
}

# expect_error WHAT STATUS MESSAGE CMD [ARG...]: CMD exits STATUS with one
# line on stderr, which holds MESSAGE.
expect_error() {
    local what=$1 want=$2 msg=$3 rc
    shift 3
    "$@" >"$T/expect.out" 2>"$T/expect.err"
    rc=$?
    assert_eq "$want" "$rc" "$what: exit status ($(cat "$T/expect.err"))"
    grep -qF -- "$msg" "$T/expect.err" || fail "$what: no [$msg] in: $(cat "$T/expect.err")"
    [ "$(wc -l <"$T/expect.err")" = 1 ] || fail "$what: more than one line: $(cat "$T/expect.err")"
}

# ts_ms "2026-01-02T07:00:00.123Z": Unix milliseconds.
ts_ms() { date -d "$1" +%s%3N; }

# redis_stop: stops the redis-server started last (SIGTERM, then SIGKILL).
redis_stop() {
    kill -TERM "$REDIS_PID" 2>/dev/null
    local i
    for i in $(seq 1 250); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.02; done
    kill -KILL "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    return 0
}

# redis_restart: stops it and starts it again on the same port and directory.
redis_restart() {
    redis_stop
    local i
    for i in $(seq 1 100); do
        redis_launch "$REDIS_PORT" && return 0
        sleep 0.05
    done
    fail "could not restart redis-server on port $REDIS_PORT"
}

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

# spawn NAME CMD [ARGS...]: starts CMD in the background with stdout in
# $T/NAME.out and stderr in $T/NAME.err; its pid is PROC_PID[NAME].
spawn() {
    local name=$1; shift
    "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    PROC_PID[$name]=$!
}

# pid_of NAME
pid_of() { echo "${PROC_PID[$1]}"; }

# wait_exit NAME TIMEOUT_S: waits for a spawned process; sets EXIT_CODE.
wait_exit() {
    local pid=${PROC_PID[$1]} deadline=$(( $(now_ms) + ${2%.*} * 1000 ))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$(now_ms)" -ge "$deadline" ]; then
            # Where it hangs, for the failure's report (gdb, when installed).
            if command -v gdb >/dev/null; then
                timeout 20 gdb -p "$pid" -batch -ex "thread apply all bt" >"$T/$1.hang" 2>&1
                grep -E '^(Thread|#)' "$T/$1.hang" >&2
            fi
            fail "$1 (pid $pid) did not exit within $2 s"
        fi
        sleep 0.01
    done
    wait "$pid"; EXIT_CODE=$?
    unset "PROC_PID[$1]"
}

# wait_for_line FILE REGEX TIMEOUT_S: waits until a line of FILE matches the
# extended REGEX; prints it. Fails after the timeout.
wait_for_line() {
    local file=$1 re=$2 deadline=$(( $(now_ms) + $(awk "BEGIN{printf \"%d\", $3*1000}") ))
    local line
    while :; do
        if [ -f "$file" ] && line=$(grep -E -m1 -- "$re" "$file"); then
            printf '%s\n' "$line"; return 0
        fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "no line matching /$re/ in $(basename "$file") within $3 s"
        sleep 0.01
    done
}

# alive PID: true while PID runs (a zombie counts as dead: its reaper may
# be a pid 1 that never reaps). No fork: tests time deaths with it.
alive() {
    local st
    case $1 in '' | *[!0-9]*) return 1 ;; esac # not /proc/stat, nor a path
    { IFS= read -r st < "/proc/$1/stat"; } 2>/dev/null || return 1
    st=${st##*) } # the state follows "(comm) ", and comm may hold spaces
    st=${st%% *}
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# count_lines FILE REGEX
count_lines() { [ -f "$1" ] || { echo 0; return; }; grep -c -E -- "$2" "$1"; return 0; }

# proxy_start NAME: starts the black-hole proxy (tests/lib/blackhole.c) on a
# free loopback port in front of the redis-server started last; sets
# PROXY_PORT. kill -USR1 $(pid_of NAME) cuts the link off, -USR2 heals it.
proxy_start() {
    local name=$1 attempt
    [ -x "${BATON_BLACKHOLE:-}" ] || fail "BATON_BLACKHOLE is not set (run the test through ctest)"
    for attempt in $(seq 1 20); do
        PROXY_PORT=$(free_port)
        spawn "$name" "$BATON_BLACKHOLE" "$PROXY_PORT" "$REDIS_PORT"
        local i
        for i in $(seq 1 200); do
            grep -q '^ready$' "$T/$name.out" 2>/dev/null && return 0
            kill -0 "${PROC_PID[$name]}" 2>/dev/null || break
            sleep 0.01
        done
        wait "${PROC_PID[$name]}" 2>/dev/null
        unset "PROC_PID[$name]"
    done
    fail "could not start the black-hole proxy"
}

# leader_of GROUP: the node named in GROUP's lease key ("" when none).
leader_of() { rcli get "baton:{$1}:leader" | sed -n 's/^[0-9a-f]\{48\}://p'; }

# history_ranges GROUP JOB: JOB's history as "first last outcome started_ms
# end_ms" lines (Unix s; ms 0 for ticks that did not run), from redis-cli's
# flat XRANGE output.
history_ranges() {
    rcli xrange "baton:{$1}:runs:$2" - + | history_parse
}
# history_parse: history_ranges's lines from the raw XRANGE output of a
# job's history on stdin (so that a test can fetch several streams at once
# and parse them later).
history_parse() {
    local raw
    raw=$(awk '
        function out() { if (s != "") print s, (u == "" ? s : u), o, (st == "" ? "1970-01-01T00:00:00Z" : st), d + 0 }
        /^[0-9]+-[0-9]+$/ { out(); s = ""; u = ""; o = ""; st = ""; d = 0; k = ""; next }
        k == "scheduled_at" { s = $0 } k == "until" { u = $0 } k == "outcome" { o = $0 }
        k == "started" { st = $0 } k == "duration_ms" { d = $0 }
        { k = (k == "" ? $0 : "") }
        END { out() }')
    [ -n "$raw" ] || return 0
    # One date(1) per column, not three per record: a stream of thousands
    # of records is read in a fraction of a second.
    paste -d' ' <(awk '{print $1}' <<<"$raw" | date -u -f - +%s) \
                <(awk '{print $2}' <<<"$raw" | date -u -f - +%s) \
                <(awk '{print $3}' <<<"$raw") \
                <(awk '{print $4}' <<<"$raw" | date -u -f - +%s%3N) \
                <(awk '{print $5}' <<<"$raw") |
        awk '{ printf "%d %d %s %.0f %.0f\n", $1, $2, $3, $4, $4 + $5 }'
}

# node_config NAME GROUP JOBSFILE [EXTRA YAML...]: writes $T/NAME.yaml, the
# baton.yaml of node NAME of GROUP on the redis-server started last, with
# the short times tests use (lease 2 s, redis_timeout 200 ms, poll 1 s,
# shutdown_grace 5 s); each EXTRA line is appended (a later key must not
# repeat one of these).
node_config() {
    local name=$1 group=$2 jobs=$3; shift 3
    {
        printf 'node: %s\nredis: %s\ngroup: %s\nlease: {ttl: 2s}\nredis_timeout: 200ms\n' \
            "$name" "$REDIS_URL" "$group"
        printf 'poll: 1s\njobs: %s\n' "$jobs"
        local x has_grace=
        for x in "$@"; do case $x in shutdown_grace:*) has_grace=1 ;; esac; done
        [ -n "$has_grace" ] || printf 'shutdown_grace: 5s\n'
        for x in "$@"; do printf '%s\n' "$x"; done
    } > "$T/$name.yaml"
}
