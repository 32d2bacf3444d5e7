# test_notify.sh -- baton run under a Type=notify unit, without systemd: a
# datagram socket of the test's own (tests/lib/notify_listen.c) stands in
# for NOTIFY_SOCKET. READY=1 after the first decision, STATUS= on the
# transitions that change it, RELOADING=1/READY=1 around SIGHUP (a bad file
# too), STOPPING=1 with EXTEND_TIMEOUT_USEC (the drain's budget) on SIGTERM,
# WATCHDOG=1 every WATCHDOG_USEC / 2 from the loop and never for another
# WATCHDOG_PID; jobs never see NOTIFY_SOCKET or WATCHDOG_*; nothing without
# NOTIFY_SOCKET.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
[ -x "${BATON_NOTIFY_LISTEN:-}" ] || fail "BATON_NOTIFY_LISTEN is not set (run the test through ctest)"

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    command: ["true"]
  - name: env
    schedule: "* * * * * *"
    shell: 'echo "notify=${NOTIFY_SOCKET:-unset} watchdog=${WATCHDOG_USEC:-unset}/${WATCHDOG_PID:-unset}"'
EOF
cp "$T/jobs.yaml" "$T/jobs.good"
node_config() {
    printf 'node: %s\nredis: %s\ngroup: g\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\n' \
        "$1" "$REDIS_URL" "$T/jobs.yaml" > "$T/$1.yaml"
}
# messages NAME: what NAME's socket received, without the time
messages() { sed -n 's/^[0-9]* //p' "$T/sock-$1.out"; }
# wait_msg NAME REGEX TIMEOUT_S: waits for a message matching REGEX; prints it
wait_msg() { wait_for_line "$T/sock-$1.out" "^[0-9]+ $2" "$3" | sed 's/^[0-9]* //'; }
listen() {
    spawn "sock-$1" "$BATON_NOTIFY_LISTEN" "$T/$1.sock" 120
    wait_for_line "$T/sock-$1.out" '^ready$' 5 >/dev/null
}

redis_start
note "n1 starts with a watchdog of 1 s: READY=1 once it leads, WATCHDOG=1 every 500 ms"
listen n1
node_config n1
NOTIFY_SOCKET=$T/n1.sock WATCHDOG_USEC=1000000 spawn n1 "$B" run -c "$T/n1.yaml"
first=$(wait_msg n1 'READY=1' 5)
# Terms are time-based (fences carry the server's clock): n1's is read, n2's must exceed it.
[[ $first =~ ^READY=1\|STATUS=working:\ leader\ of\ group\ g,\ term\ ([0-9]+)$ ]] \
    || fail "n1's first READY: $first"
T1=${BASH_REMATCH[1]}
wait_for_line "$T/n1.out" '"event":"systemd_notify".*"watchdog_ms":1000' 2 >/dev/null
grep -q '"to":"working"' "$T/n1.out" || fail "READY=1 came before n1 decided"
# libsystemd is opened for NOTIFY_SOCKET, not linked (src/common/dynlib.h)
grep -q '/libsystemd\.so' "/proc/$(pid_of n1)/maps" || fail "n1 notifies without libsystemd mapped?"
note "n1's jobs do not inherit NOTIFY_SOCKET or WATCHDOG_*: they are baton's"
wait_for_line "$T/n1.out" '"event":"job_output".*"job":"env"' 5 | grep -q '"line":"notify=unset watchdog=unset/unset"' \
    || fail "a job inherited systemd's variables: $(grep '"job":"env"' "$T/n1.out" | grep job_output | head -n 1)"

note "n2 follows; WATCHDOG_PID names another process: no pings"
listen n2
node_config n2
NOTIFY_SOCKET=$T/n2.sock WATCHDOG_USEC=500000 WATCHDOG_PID=1 spawn n2 "$B" run -c "$T/n2.yaml"
assert_eq "READY=1|STATUS=waiting: following n1, term $T1" "$(wait_msg n2 'READY=1' 5)" "n2's READY"
wait_for_line "$T/n2.out" '"event":"systemd_notify".*"watchdog_ms":null' 2 >/dev/null

note "n3 has no NOTIFY_SOCKET: nothing changes"
node_config n3
spawn n3 "$B" run -c "$T/n3.yaml"
wait_for_line "$T/n3.out" '"event":"following"' 5 >/dev/null
# Nor libmicrohttpd (and GnuTLS) without http.listen: 3.3 MB of RSS less
for lib in libsystemd libmicrohttpd libgnutls; do
    ! grep -q "/$lib\\.so" "/proc/$(pid_of n3)/maps" || fail "n3 (no NOTIFY_SOCKET, no http.listen) has $lib mapped"
done
kill -TERM "$(pid_of n3)"
wait_exit n3 10
assert_eq 0 "$EXIT_CODE" "n3's exit status"
grep -q '"event":"systemd_notify"' "$T/n3.out" && fail "n3 has no NOTIFY_SOCKET but logged systemd_notify"

sleep 3
note "SIGHUP: RELOADING=1, then READY=1 (a good file, then a bad one)"
kill -HUP "$(pid_of n1)"
wait_msg n1 'RELOADING=1\|MONOTONIC_USEC=[0-9]+\|STATUS=' 5 >/dev/null
line=$(wait_msg n1 'READY=1\|STATUS=working' 5)
[ "$(messages n1 | grep -c '^READY=1')" = 2 ] || fail "n1's READY messages: $(messages n1 | grep READY)"
printf 'jobs:\n  - name: tick\n    schedule: "* * * * * *"\n    command: []\n' > "$T/jobs.yaml"
kill -HUP "$(pid_of n2)"
wait_msg n2 'RELOADING=1' 5 >/dev/null
line=$(wait_msg n2 'READY=1\|STATUS=.*last reload failed' 5)
assert_eq "READY=1|STATUS=waiting: following n1, term $T1; the last reload failed (see the log)" "$line" "n2 after a bad reload"
wait_for_line "$T/n2.out" '"event":"reload_failed".*"level":"error"|"level":"error".*"event":"reload_failed"' 2 >/dev/null
cp "$T/jobs.good" "$T/jobs.yaml"
kill -HUP "$(pid_of n2)"
assert_eq "READY=1|STATUS=waiting: following n1, term $T1" "$(wait_msg n2 "READY=1\\|STATUS=waiting: following n1, term $T1\$" 5)" \
    "n2 after a good reload"

note "the watchdog's period"
sleep 1
awk '$2 == "WATCHDOG=1" {print $1}' "$T/sock-n1.out" > "$T/pings"
n=$(wc -l < "$T/pings")
[ "$n" -ge 8 ] || fail "only $n WATCHDOG=1 from n1"
awk 'NR > 1 {print $1 - prev} {prev = $1}' "$T/pings" | sort -n > "$T/gaps"
median=$(awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}' "$T/gaps")
max=$(tail -n1 "$T/gaps")
note "  n1: $n pings, every $median ms (median; the longest gap $max ms) for WATCHDOG_USEC=1s"
[ "$median" -ge 400 ] && [ "$median" -le 650 ] || fail "watchdog pings every $median ms, not WATCHDOG_USEC / 2"
[ "$max" -lt 1000 ] || fail "a watchdog gap of $max ms: systemd would have killed n1"
assert_eq 0 "$(messages n2 | grep -c WATCHDOG)" "pings from n2 (WATCHDOG_PID is not its pid)"

note "SIGTERM the leader: STOPPING=1 from it, with the drain's budget; STATUS= from the new leader"
kill -TERM "$(pid_of n1)"
# shutdown_grace 2 s + kill_grace 5 s (the default) + a margin of 10 s
assert_eq "STOPPING=1|EXTEND_TIMEOUT_USEC=17000000|STATUS=stopping: handing over, then exiting" \
    "$(wait_msg n1 'STOPPING=1' 5)" "n1 stopping"
line=$(wait_msg n2 'STATUS=working' 5)
[[ $line =~ ^STATUS=working:\ leader\ of\ group\ g,\ term\ ([0-9]+)$ ]] || fail "n2 leads: $line"
[ "${BASH_REMATCH[1]}" -gt "$T1" ] || fail "n2's term ${BASH_REMATCH[1]} does not exceed n1's $T1"
wait_exit n1 10
assert_eq 0 "$EXIT_CODE" "n1's exit status"
assert_eq 1 "$(messages n1 | grep -c '^STOPPING=1')" "n1's STOPPING messages"

note "Redis goes away: the leader says it pauses, then that Redis is unreachable; then it leads again"
redis_stop
wait_msg n2 'STATUS=pausing' 5 >/dev/null
wait_msg n2 'STATUS=waiting: Redis unreachable' 5 >/dev/null
redis_restart
# Redis without persistence forgot the terms: a new one is granted (time-based, it goes on growing).
after=$(grep -n 'STATUS=waiting: Redis unreachable' "$T/sock-n2.out" | head -n1 | cut -d: -f1)
deadline=$(( $(now_ms) + 15000 ))
until tail -n +"$after" "$T/sock-n2.out" | grep -qE '^[0-9]+ STATUS=working: leader of group g, term [0-9]+$'; do
    [ "$(now_ms)" -lt $deadline ] || fail "n2 does not say it leads again: $(messages n2 | grep -v WATCHDOG)"
    sleep 0.05
done
note "  n2's messages: $(messages n2 | grep -v WATCHDOG | tr '\n' ' ')"

note "no READY=1 twice without a reload, no STATUS= for the routine renewals and polls"
assert_eq 3 "$(messages n2 | grep -c '^READY=1')" "n2's READY messages (start, two reloads)"
assert_eq 2 "$(messages n2 | grep -c '^RELOADING=1')" "n2's RELOADING messages"
st=$(messages n2 | grep -c 'STATUS=')
[ "$st" -le 12 ] || fail "n2 sent $st STATUS= messages in a few seconds: $(messages n2)"
kill -TERM "$(pid_of n2)"
wait_exit n2 10
assert_eq 0 "$EXIT_CODE" "n2's exit status"
note "ok"
