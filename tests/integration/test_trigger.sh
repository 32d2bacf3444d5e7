# test_trigger.sh -- `baton trigger`: a job run now, exactly once, through
# real supervisors and a real redis-server:
#   1. --wait runs it on the leader, prints its run id (BATON_RUN_ID), marks
#      it manual in the log, the history and BATON_TRIGGER;
#   2. one id asked three times (two at once) runs once;
#   3. --wait exits with the job's status: N, 128+N, 124 (timeout), 126
#      (cannot start), 1 (the leader has no such job);
#   4. the concurrency policy holds for manual runs: forbid waits, replace
#      stops the run alive, allow overlaps;
#   5. the leader dies between the request and the start: (a) before it
#      saw it, (b) after claiming it -- the next leader runs it, once;
#   6. the leader dies while it runs: its run died with it (self-fencing),
#      the request is done (killed), not run again; --wait exits 70;
#   7. a request made while no node leads runs when one does;
#   8. the requests of one busy job (110 waiting behind a forbid run) do not
#      hold up another job's: a request of an idle job starts at once.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

cat > "$T/jobs.yaml" <<EOF
jobs:
  - {name: work, schedule: "0 0 0 1 1 *",
     shell: "echo \$BATON_RUN_ID \$BATON_TRIGGER \$BATON_NODE \$BATON_ATTEMPT >> $T/work.txt"}
  - {name: three, schedule: "0 0 0 1 1 *", command: ["sh", "-c", "exit 3"]}
  - {name: usr1, schedule: "0 0 0 1 1 *", command: ["sh", "-c", "kill -USR1 \$\$"]}
  - {name: slowpoke, schedule: "0 0 0 1 1 *", timeout: 300ms, command: ["sleep", "5"]}
  - {name: nostart, schedule: "0 0 0 1 1 *", command: ["$T/no-such-program"]}
  - name: forbid
    schedule: "0 0 0 1 1 *"
    shell: "echo \$BATON_RUN_ID start \$(date +%s%N) >> $T/forbid.txt; sleep 0.6; echo \$BATON_RUN_ID end \$(date +%s%N) >> $T/forbid.txt"
  - name: allow
    schedule: "0 0 0 1 1 *"
    concurrency: allow
    shell: "echo \$BATON_RUN_ID start \$(date +%s%N) >> $T/allow.txt; sleep 0.6; echo \$BATON_RUN_ID end \$(date +%s%N) >> $T/allow.txt"
  - {name: replace, schedule: "0 0 0 1 1 *", concurrency: replace,
     shell: "echo \$BATON_RUN_ID >> $T/replace.txt; sleep 30"}
  - {name: long, schedule: "0 0 0 1 1 *",
     shell: "echo \$BATON_RUN_ID \$BATON_NODE >> $T/long.txt; sleep 30"}
  - {name: blk, schedule: "0 0 0 1 1 *", command: ["sleep", "2"]}
  - {name: quick, schedule: "0 0 0 1 1 *", command: ["true"]}
EOF
# A jobs.yaml with one more job, for a client whose file the leader lacks.
{ cat "$T/jobs.yaml"; printf '  - {name: ghost, schedule: "0 0 0 1 1 *", command: ["true"]}\n'; } \
    > "$T/client-jobs.yaml"

# config NAME [JOBSFILE]
config() {
    printf 'node: %s\nredis: %s\ngroup: tg\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\n' \
        "$1" "$REDIS_URL" "${2:-$T/jobs.yaml}" > "$T/$1.yaml"
}
declare -A GEN=()
start() { # start NODE [ENV...]
    local n=$1; shift
    GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
    config "$n"
    spawn "$n.${GEN[$n]}" env "$@" "$B" run -c "$T/$n.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
out() { echo "$T/$1.${GEN[$1]}.out"; }
leader() { rcli get 'baton:{tg}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() { # wait_leader [NOT]: prints the leader (other than NOT)
    local l
    for _ in $(seq 1 600); do
        l=$(leader)
        [ -n "$l" ] && [ "$l" != "${1:-}" ] && { echo "$l"; return; }
        sleep 0.01
    done
    fail "no leader${1:+ other than $1}"
}
config client "$T/client-jobs.yaml"
trig() { "$B" trigger -c "$T/client.yaml" "$@"; }
state_of() { rcli hget "baton:{tg}:trigger:$1" state; }

start n1; sleep 0.3; start n2
L=$(wait_leader)

# ---------------------------------------------------------------------
note "1. --wait runs the job once on the leader and prints its run id"
id=$(trig work --wait 2>"$T/t1.err") || fail "trigger --wait: exit $?: $(cat "$T/t1.err")"
[ -n "$id" ] || fail "no run id printed"
assert_eq "$id manual $L 1" "$(cat "$T/work.txt")" "the run (BATON_RUN_ID BATON_TRIGGER node attempt)"
grep -q '"event":"job_start".*"job":"work","run_id":"'"$id"'".*"trigger":"manual"' "$(out "$L")" \
    || fail "no job_start with trigger manual for $id"
"$B" history -c "$T/client.yaml" work --json | grep -q '"run_id":"'"$id"'".*"trigger":"manual"' \
    || fail "the history has no manual run $id"
grep -q 'ok (exit 0)' "$T/t1.err" || fail "--wait did not report the outcome: $(cat "$T/t1.err")"

# ---------------------------------------------------------------------
note "2. one id asked three times, two of them at once, runs once"
: > "$T/work.txt"
trig work --id same-id >"$T/t2a.out" 2>&1 &
p1=$!
trig work --id same-id >"$T/t2b.out" 2>&1 &
p2=$!
wait $p1 || fail "first request: exit $?"
wait $p2 || fail "second request: exit $?"
trig work --id same-id --wait >"$T/t2c.out" 2>&1 || fail "third request: exit $?"
grep -q 'exists already' "$T/t2c.out" || fail "the third request did not find the first: $(cat "$T/t2c.out")"
assert_eq 1 "$(cat "$T/t2a.out" "$T/t2b.out" | grep -c 'exists already')" "requests of the two at once that found the other"
assert_eq "same-id manual $L 1" "$(cat "$T/work.txt")" "runs of request same-id"
trig three --id same-id >/dev/null 2>"$T/t2d.err"; rc=$?
assert_eq 1 "$rc" "exit of an id reused for another job"
grep -q 'belongs to a request for job work' "$T/t2d.err" || fail "$(cat "$T/t2d.err")"

# ---------------------------------------------------------------------
note "3. --wait exits with the job's status"
for spec in "three 3" "usr1 138" "slowpoke 124" "nostart 126" "ghost 1"; do
    set -- $spec
    trig "$1" --wait >/dev/null 2>"$T/t3-$1.err"; rc=$?
    assert_eq "$2" "$rc" "exit of trigger $1 --wait ($(tail -n1 "$T/t3-$1.err"))"
done
grep -q 'has no job "ghost"' "$T/t3-ghost.err" || fail "ghost: $(cat "$T/t3-ghost.err")"
grep -q '"event":"trigger_rejected".*"job":"ghost"' "$(out "$L")" || fail "no trigger_rejected"
"$B" trigger -c "$T/$L.yaml" ghost >/dev/null 2>"$T/t3-local.err"; rc=$?
assert_eq 1 "$rc" "exit of a trigger of a job not in the local jobs.yaml"

# ---------------------------------------------------------------------
note "4. manual runs obey the job's concurrency"
a=$(trig forbid 2>/dev/null); b=$(trig forbid 2>/dev/null)
trig forbid --id "$b" --wait >/dev/null 2>&1 || fail "forbid: the second run failed"
a_end=$(awk -v r="$a" '$1 == r && $2 == "end" {print $3}' "$T/forbid.txt")
b_start=$(awk -v r="$b" '$1 == r && $2 == "start" {print $3}' "$T/forbid.txt")
[ -n "$a_end" ] && [ -n "$b_start" ] || fail "forbid: $(cat "$T/forbid.txt")"
[ "$b_start" -gt "$a_end" ] || fail "forbid: the second run started $(( (a_end - b_start) / 1000000 )) ms before the first ended"
note "  forbid: the second started $(( (b_start - a_end) / 1000000 )) ms after the first ended"
a=$(trig allow 2>/dev/null); b=$(trig allow --wait 2>/dev/null)
a_end=$(awk -v r="$a" '$1 == r && $2 == "end" {print $3}' "$T/allow.txt")
b_start=$(awk -v r="$b" '$1 == r && $2 == "start" {print $3}' "$T/allow.txt")
[ -n "$a_end" ] && [ -n "$b_start" ] && [ "$b_start" -lt "$a_end" ] \
    || fail "allow: the two runs did not overlap: $(cat "$T/allow.txt")"
a=$(trig replace 2>/dev/null)
for _ in $(seq 1 300); do [ "$(state_of "$a")" = running ] && break; sleep 0.01; done
b=$(trig replace 2>/dev/null)
trig replace --id "$a" --wait >/dev/null 2>&1; rc=$?
assert_eq 143 "$rc" "exit of the replaced run (SIGTERM)"
assert_eq killed "$(rcli hget "baton:{tg}:trigger:$a" outcome)" "outcome of the replaced run"
for _ in $(seq 1 300); do [ "$(state_of "$b")" = running ] && break; sleep 0.01; done
assert_eq running "$(state_of "$b")" "the replacing run"
assert_eq "$a $b" "$(tr '\n' ' ' < "$T/replace.txt" | sed 's/ $//')" "runs of replace"

# ---------------------------------------------------------------------
note "5a. the leader dies before it sees the request: the next one runs it"
: > "$T/work.txt"
L=$(wait_leader); O=n1; [ "$L" = n1 ] && O=n2
kill -STOP "$(pid "$L")"
id=$(trig work 2>/dev/null)
kill -KILL "$(pid "$L")"; kill -CONT "$(pid "$L")" 2>/dev/null
wait_exit "$L.${GEN[$L]}" 5
trig work --id "$id" --wait >/dev/null 2>&1 || fail "5a: the run failed"
assert_eq "$id manual $O 1" "$(cat "$T/work.txt")" "5a: runs of the request"
start "$L"; sleep 0.5

note "5b. the leader dies after claiming it, before starting it: the next one runs it, once"
# Both nodes stop themselves right after a claim (a fault hook of the
# tests): whoever claims it is SIGKILLed in that instant; the other,
# restarted without the hook, runs it.
: > "$T/work.txt"
for n in n1 n2; do kill -TERM "$(pid $n)"; done
for n in n1 n2; do wait_exit "$n.${GEN[$n]}" 10; done
start n1 BATON_TEST_FAULT=stop-after-claim
L=$(wait_leader)
trig work --wait >"$T/t5b.out" 2>"$T/t5b.err" &
waiter=$!
for _ in $(seq 1 500); do
    id=$(head -n1 "$T/t5b.out" 2>/dev/null)
    [ -n "$id" ] && [ "$(state_of "$id")" = claimed ] && break
    sleep 0.01
done
assert_eq claimed "$(state_of "$id")" "state of the request the leader stopped after claiming"
kill -KILL "$(pid n1)"; wait_exit "n1.${GEN[n1]}" 5
start n2
wait $waiter || fail "5b: --wait exit $?: $(cat "$T/t5b.err")"
assert_eq "$id.2 manual n2 2" "$(cat "$T/work.txt")" "5b: runs of the request"
grep -q '"event":"trigger_received".*"trigger_id":"'"$id"'","attempt":2' "$(out n2)" \
    || fail "5b: n2 did not take attempt 2"
start n1; sleep 0.3

# ---------------------------------------------------------------------
note "6. the leader dies while the run goes on: recorded killed, not run again"
L=$(wait_leader)
trig long --wait >"$T/t6.out" 2>"$T/t6.err" &
waiter=$!
for _ in $(seq 1 500); do
    id=$(head -n1 "$T/t6.out" 2>/dev/null)
    [ -n "$id" ] && [ "$(state_of "$id")" = running ] && break
    sleep 0.01
done
assert_eq running "$(state_of "$id")" "state of the long run"
kill -KILL "$(pid "$L")"; wait_exit "$L.${GEN[$L]}" 5
wait $waiter; rc=$?
assert_eq 70 "$rc" "exit of --wait when the run's node died"
assert_eq killed "$(rcli hget "baton:{tg}:trigger:$id" outcome)" "outcome of the lost run"
sleep 1
assert_eq 1 "$(grep -c "^$id " "$T/long.txt")" "runs of the lost request"
start "$L"

# ---------------------------------------------------------------------
note "7. a request made while no node leads runs when one does"
for n in n1 n2; do kill -TERM "$(pid $n)"; done
for n in n1 n2; do wait_exit "$n.${GEN[$n]}" 10; done
: > "$T/work.txt"
id=$(trig work 2>"$T/t7.err") || fail "7: exit $?"
grep -q 'no supervisor is listening' "$T/t7.err" || fail "7: no warning: $(cat "$T/t7.err")"
start n2
trig work --id "$id" --wait >/dev/null 2>&1 || fail "7: the run failed"
assert_eq "$id manual n2 1" "$(cat "$T/work.txt")" "7: runs of the request"

# ---------------------------------------------------------------------
note "8. 110 requests of a busy job do not hold up a request of an idle one"
for i in $(seq 1 110); do trig blk >/dev/null 2>&1 || fail "8: trigger blk $i"; done
at_ms t0
trig quick --wait --timeout 10s >/dev/null 2>"$T/t8.err" || fail "8: trigger quick --wait: exit $? ($(cat "$T/t8.err"))"
at_ms t1
[ $(( t1 - t0 )) -lt 3000 ] || fail "8: the idle job's request took $(( t1 - t0 )) ms behind 110 of a busy one"
note "  quick ran $(( t1 - t0 )) ms after its request, behind 110 requests of blk"
kill -TERM "$(pid n2)"; wait_exit "n2.${GEN[n2]}" 10
note "ok"
