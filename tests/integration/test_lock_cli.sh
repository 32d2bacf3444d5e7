# test_lock_cli.sh -- `baton lock` against a real redis-server: mutual
# exclusion across processes, fencing, crash handover, loss, signals,
# process-group cleanup, exit codes, servers that cannot hold a lock (a
# replica, a database out of range, not Redis) and every bad argument.
. "$BATON_TESTS_DIR/lib/harness.sh"
redis_start --unixsocket "$T/redis.sock" --unixsocketperm 700
export BATON_REDIS_URL=$REDIS_URL
B=$BATON_BIN

note "mutual exclusion: 8 processes x 25 non-atomic increments"
echo 0 > "$T/counter"
cat > "$T/inc.sh" <<'EOF'
n=$(cat "$1"); sleep 0.002; echo $((n + 1)) > "$1"
EOF
for w in 1 2 3 4 5 6 7 8; do
    ( for i in $(seq 1 25); do
          "$B" lock --ttl 5s --wait 60s counter -- sh "$T/inc.sh" "$T/counter" || echo "rc=$?" >> "$T/errors"
      done ) &
    PROC_PID[w$w]=$!
done
for w in 1 2 3 4 5 6 7 8; do wait_exit w$w 120; done
[ -s "$T/errors" ] && fail "some baton lock runs failed: $(sort "$T/errors" | uniq -c)"
assert_eq 200 "$(cat "$T/counter")" "counter after 200 locked increments"

note "fencing tokens strictly increase; the command sees BATON_LOCK_KEY"
prev=0
for i in $(seq 1 10); do
    out=$("$B" lock fkey -- sh -c 'echo "$BATON_LOCK_KEY $BATON_FENCE"')
    set -- $out
    assert_eq fkey "$1" "BATON_LOCK_KEY"
    [ "$2" -gt "$prev" ] || fail "fence $2 after $prev"
    prev=$2
done

note "unix socket URL"
out=$("$B" lock --url "unix://$T/redis.sock" ukey -- sh -c 'echo $BATON_FENCE') || fail "unix:// URL failed"
[ "$out" -gt "$prev" ] || fail "first fence over the unix socket: $out, after $prev on TCP"

note "exit status: the command's, or 128+N for a signal"
"$B" lock k1 -- sh -c 'exit 7'; assert_eq 7 $? "exit status"
"$B" lock k1 -- sh -c 'kill -USR1 $$'; assert_eq 138 $? "killed by SIGUSR1"
"$B" lock k1 -- /nonexistent/cmd 2>"$T/e"; assert_eq 127 $? "missing command"
grep -q "baton: lock: /nonexistent/cmd: command not found" "$T/e" || fail "message: $(cat "$T/e")"
printf '#!/bin/sh\n' > "$T/noexec"; chmod 644 "$T/noexec"
"$B" lock k1 -- "$T/noexec" 2>/dev/null; assert_eq 126 $? "not executable"

note "held: --wait 0 gives up at once with 75, --wait D after D"
spawn holder "$B" lock --ttl 10s held -- sleep 30
for _ in $(seq 1 100); do rcli exists 'baton:{held}' | grep -q 1 && break; sleep 0.02; done
t0=$(now_ms); "$B" lock --wait 0 held -- true 2>"$T/e"; rc=$?; t1=$(now_ms)
assert_eq 75 $rc "--wait 0 while held"
grep -qx "baton: lock: held: held by another owner" "$T/e" || fail "message: $(cat "$T/e")"
[ $((t1 - t0)) -lt 1000 ] || fail "--wait 0 took $((t1 - t0)) ms"
t0=$(now_ms); "$B" lock --wait 400ms held -- true 2>"$T/e"; rc=$?; t1=$(now_ms)
assert_eq 75 $rc "--wait 400ms while held"
grep -qx "baton: lock: held: not acquired within 400ms" "$T/e" || fail "message: $(cat "$T/e")"
[ $((t1 - t0)) -ge 400 ] && [ $((t1 - t0)) -lt 1500 ] || fail "--wait 400ms took $((t1 - t0)) ms"

note "SIGTERM is forwarded to the command; the lock is released after it exits"
kill -TERM "$(pid_of holder)"
wait_exit holder 5
assert_eq 143 "$EXIT_CODE" "holder's command killed by the forwarded SIGTERM"
assert_eq 0 "$(rcli exists 'baton:{held}')" "lock released after SIGTERM"
cat > "$T/trap.sh" <<'EOF'
trap 'echo got-term; exit 9' TERM
echo ready; while :; do sleep 0.05; done
EOF
spawn trapper "$B" lock tk -- sh "$T/trap.sh"
wait_for_line "$T/trapper.out" '^ready$' 5 >/dev/null
kill -TERM "$(pid_of trapper)"
wait_exit trapper 5
assert_eq 9 "$EXIT_CODE" "command's own exit status after handling SIGTERM"
grep -q got-term "$T/trapper.out" || fail "the command did not see SIGTERM"

note "the command's background children die with it"
"$B" lock bg -- sh -c 'sleep 60 & echo $! > '"$T/bgpid"
bgpid=$(cat "$T/bgpid")
for _ in $(seq 1 100); do alive "$bgpid" || break; sleep 0.02; done
alive "$bgpid" && fail "background child $bgpid outlived its command"

note "holder SIGKILLed: its command dies, the next waiter gets the lock within TTL + 100 ms"
spawn crash "$B" lock --ttl 1s crashkey -- sh -c 'echo $$ > '"$T/crashpid"'; exec sleep 60'
for _ in $(seq 1 200); do [ -s "$T/crashpid" ] && break; sleep 0.01; done
[ -s "$T/crashpid" ] || fail "holder did not start its command"
spawn waiter "$B" lock --wait 10s crashkey -- sh -c 'date +%s%N > '"$T/got"
sleep 0.3
killed=$(date +%s%N)
kill -KILL "$(pid_of crash)"
wait_exit waiter 10
assert_eq 0 "$EXIT_CODE" "waiter after the crash"
ms=$(( ($(cat "$T/got") - killed) / 1000000 ))
note "  waiter ran its command $ms ms after the SIGKILL (ttl 1000 ms)"
[ "$ms" -le 1100 ] || fail "handover took $ms ms > ttl + 100 ms"
alive "$(cat "$T/crashpid")" && fail "the SIGKILLed holder's command is still running"

note "lock lost (key deleted behind its back): command stopped, exit 70"
spawn lost "$B" lock --ttl 1500ms lostkey -- sleep 60
for _ in $(seq 1 100); do rcli exists 'baton:{lostkey}' | grep -q 1 && break; sleep 0.02; done
rcli del 'baton:{lostkey}' >/dev/null
wait_exit lost 5
assert_eq 70 "$EXIT_CODE" "exit status when the lock is lost"
grep -q "lock lostkey was lost: renewal found it no longer held by this owner; the command was stopped" "$T/lost.err" \
    || fail "message: $(cat "$T/lost.err")"

note "Redis frozen while holding: command dead before the validity deadline"
spawn frozen "$B" lock --ttl 1s frozenkey -- sh -c 'echo $$ > '"$T/frozenpid"'; exec sleep 60'
for _ in $(seq 1 200); do [ -s "$T/frozenpid" ] && break; sleep 0.01; done
kill -STOP "$REDIS_PID"; stopped=$(now_ms)
for _ in $(seq 1 300); do alive "$(cat "$T/frozenpid")" || break; sleep 0.01; done
dead=$(now_ms)
kill -CONT "$REDIS_PID"
alive "$(cat "$T/frozenpid")" && fail "command still running with Redis frozen"
note "  command stopped $((dead - stopped)) ms after Redis froze (ttl 1000 ms)"
[ $((dead - stopped)) -lt 1000 ] || fail "command outlived the lease: $((dead - stopped)) ms"
wait_exit frozen 5
assert_eq 70 "$EXIT_CODE" "exit status when the lease cannot be confirmed"

note "Redis unreachable: a clear error, exit 69, no hang"
port=$(( REDIS_PORT + 1 )); while redis-cli -p $port ping >/dev/null 2>&1; do port=$((port + 1)); done
t0=$(now_ms); "$B" lock --url "redis://127.0.0.1:$port/0" k -- true 2>"$T/e"; rc=$?; t1=$(now_ms)
assert_eq 69 $rc "unreachable"
grep -qx "baton: lock: redis://127.0.0.1:$port/0: cannot connect: Connection refused" "$T/e" || fail "message: $(cat "$T/e")"
[ $((t1 - t0)) -lt 3000 ] || fail "took $((t1 - t0)) ms"
"$B" lock --url "redis://u:secretpw@127.0.0.1:$port/0" k -- true 2>"$T/e"
grep -q secretpw "$T/e" && fail "the password appeared in an error message"

note "a server that cannot hold the lock: a replica, a database out of range, not Redis"
# wrong_server WHAT URL MESSAGE: exit 69 with one line on stderr holding MESSAGE.
wrong_server() { expect_error "$1" 69 "$3" "$B" lock --url "$2" k -- true; }
master_port=$REDIS_PORT master_url=$REDIS_URL master_pid=$REDIS_PID
redis_start --replicaof 127.0.0.1 "$master_port"
wrong_server "a replica" "$REDIS_URL" \
    "redis error: READONLY You can't write against a read only replica."
wrong_server "a replica, said so" "$REDIS_URL" \
    "(this server is a read-only replica: give the master's address, or a redis-sentinel:// URL)"
wrong_server "database 99 of 16" "redis://127.0.0.1:$master_port/99" \
    "redis://127.0.0.1:$master_port/99: SELECT 99: ERR DB index is out of range"
fake_server 'SSH-2.0-OpenSSH_9.2\r\n'
wrong_server "a server that does not speak Redis" "redis://127.0.0.1:$FAKE_PORT/0" \
    "protocol error: Protocol error, got \"S\" as reply type byte"
# An array header announcing 330 million elements: hiredis would allocate
# 2.6 GB for the 12 bytes (found by fuzz_resp); refused, said precisely.
fake_server '*330181846\r\n:1\r\n'
wrong_server "a reply announcing a huge array" "redis://127.0.0.1:$FAKE_PORT/0" \
    "protocol error: an array of 330181846 elements (at most 4194304 in one reply)"
REDIS_PORT=$master_port REDIS_URL=$master_url REDIS_PID=$master_pid

note "every bad argument: one precise line on stderr, exit 64"
while IFS='|' read -r args want; do
    [ -n "$args" ] || continue
    eval "set -- $args"
    "$B" lock "$@" >/dev/null 2>"$T/e"; rc=$?
    assert_eq 64 $rc "exit status of: baton lock $args"
    assert_eq 1 "$(wc -l < "$T/e")" "stderr lines of: baton lock $args"
    assert_eq "$want" "$(cat "$T/e")" "message of: baton lock $args"
done <<'EOF'
|baton: lock: missing KEY (see 'baton lock --help')
k|baton: lock: missing the command to run after KEY -- (see 'baton lock --help')
k --|baton: lock: missing the command to run after KEY -- (see 'baton lock --help')
-- true|baton: lock: missing KEY before -- (see 'baton lock --help')
'' -- true|baton: lock: KEY must not be empty (see 'baton lock --help')
--ttl|baton: lock: --ttl: missing its value (see 'baton lock --help')
--ttl 10 k -- true|baton: lock: --ttl "10": missing or unknown unit at "" (use ms, s, m, h or d) (see 'baton lock --help')
--ttl 5x k -- true|baton: lock: --ttl "5x": missing or unknown unit at "x" (use ms, s, m, h or d) (see 'baton lock --help')
--ttl 0 k -- true|baton: lock: --ttl "0": must be greater than 0 (see 'baton lock --help')
--ttl 50ms k -- true|baton: lock: --ttl "50ms": must be at least 100ms (see 'baton lock --help')
--wait -1s k -- true|baton: lock: --wait "-1s": expected a number at "-1s" (durations look like 500ms, 10s, 1h30m) (see 'baton lock --help')
--wait 400d k -- true|baton: lock: --wait "400d": duration too large (at most 366d) (see 'baton lock --help')
--kill-grace 10s --ttl 10s k -- true|baton: lock: --kill-grace must be less than half of --ttl (see 'baton lock --help')
--bogus k -- true|baton: lock: --bogus: unknown option (see 'baton lock --help')
-x k -- true|baton: lock: -x: unknown option (see 'baton lock --help')
--url nope://x k -- true|baton: lock: invalid URL: unsupported scheme "nope://" (use redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster://, rediss-cluster://, redis-quorum:// or rediss-quorum://)
--url redis://h:0 k -- true|baton: lock: invalid URL: invalid port (1..65535)
EOF
long=$(head -c 1025 /dev/zero | tr '\0' k)
"$B" lock "$long" -- true 2>"$T/e"; assert_eq 64 $? "a key of 1025 bytes"
assert_eq "baton: lock: KEY is too long (at most 1024 bytes) (see 'baton lock --help')" "$(cat "$T/e")" "long key"
"$B" lock "${long:1}" -- true || fail "a key of 1024 bytes is fine"
"$B" bogus 2>"$T/e"; assert_eq 64 $? "unknown subcommand"
assert_eq "baton: unknown command 'bogus'; see 'baton --help'" "$(cat "$T/e")" "unknown subcommand message"

note "help and version"
"$B" lock --help | grep -q "^usage: baton lock" || fail "baton lock --help"
"$B" --help | grep -q "^  lock " || fail "baton --help lists lock"
"$B" --version | grep -qE '^baton [0-9]+\.[0-9]+\.[0-9]+$' || fail "baton --version"
"$B" lock --version | grep -qE '^baton [0-9]+\.[0-9]+\.[0-9]+$' || fail "baton lock --version"
# A baton without its shim (copied alone, nothing installed) says where it
# looked, and starts nothing: `lock` exits 126, `run` 1.
mkdir -p "$T/alone"; cp "$B" "$T/alone/baton"
out=$("$T/alone/baton" lock --url "$REDIS_URL" alone -- true 2>&1); rc=$?
assert_eq 126 "$rc" "exit status of a lock without baton-shim"
echo "$out" | grep -q "cannot find baton-shim .* beside the baton executable" || fail "lock without its shim said: $out"
printf 'node: alone\nredis: %s\ngroup: alone\njobs: %s\n' "$REDIS_URL" "$T/alone/jobs.yaml" > "$T/alone/baton.yaml"
printf 'jobs:\n  - {name: j, schedule: "* * * * *", command: ["true"]}\n' > "$T/alone/jobs.yaml"
out=$("$T/alone/baton" run -c "$T/alone/baton.yaml" 2>&1); rc=$?
assert_eq 1 "$rc" "exit status of run without baton-shim"
echo "$out" | grep -q "baton: run: cannot find baton-shim" || fail "run without its shim said: $out"
note "ok"
