# test_stall.sh -- a run's outcome is what happened to its command, and its
# end is the command's, even when its supervisor was stalled or died
# meanwhile; through real supervisors and a real redis-server:
#   1. a scheduled run that ended on its own (exit 0) while its leader was
#      stopped (SIGSTOP) past its lease is recorded ok, with its own
#      duration, and gets on_success, not on_failure;
#   2. the same for a manual run: `baton trigger --wait` exits 0 (the next
#      leader's verdict, killed with its node, is presumed: the stalled
#      node's report replaces it);
#   3. a manual run whose leader is SIGKILLed 1 s in: --wait exits 70, and
#      the run's end is when it was last known alive, not when the next
#      leader found it gone.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: short
    schedule: "*/4 * * * * *"
    shell: "sleep 0.3; exit 0"
    on_success: {shell: "echo \$BATON_RUN_ID \$BATON_OUTCOME >> $T/success.txt"}
    on_failure: {shell: "echo \$BATON_RUN_ID \$BATON_OUTCOME >> $T/failure.txt"}
  - {name: manual, schedule: "0 0 0 1 1 *", shell: "sleep 0.3; exit 0"}
  - {name: long, schedule: "0 0 0 1 1 *", command: ["sleep", "30"]}
EOF
config() {
    printf 'node: %s\nredis: %s\ngroup: st\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\n' \
        "$1" "$REDIS_URL" "$T/jobs.yaml" > "$T/$1.yaml"
}
declare -A GEN=()
start() {
    GEN[$1]=$(( ${GEN[$1]:-0} + 1 ))
    config "$1"
    spawn "$1.${GEN[$1]}" "$B" run -c "$T/$1.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
out() { echo "$T/$1.${GEN[$1]}.out"; }
leader() { rcli get 'baton:{st}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() {
    local l
    for _ in $(seq 1 600); do
        l=$(leader)
        [ -n "$l" ] && [ "$l" != "${1:-}" ] && { echo "$l"; return; }
        sleep 0.01
    done
    fail "no leader${1:+ other than $1}"
}
config client
other() { [ "$1" = n1 ] && echo n2 || echo n1; }
# field JSON NAME: the value of "NAME" (a number or a string) in JSON
field() { echo "$1" | sed -n "s/.*\"$2\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" | head -n1; }

start n1; sleep 0.3; start n2
L=$(wait_leader)

# ---------------------------------------------------------------------
note "1. a scheduled run that ends on its own while its leader is stopped"
n0=$(grep -c '"event":"job_start".*"job":"short"' "$(out "$L")")
line=""
for _ in $(seq 1 600); do
    line=$(grep '"event":"job_start".*"job":"short"' "$(out "$L")" | sed -n "$(( n0 + 1 ))p")
    [ -n "$line" ] && break
    sleep 0.01
done
[ -n "$line" ] || fail "no run of short started on $L within 6 s"
run=$(field "$line" run_id)
sleep 0.1
kill -STOP "$(pid "$L")"
L2=$(wait_leader "$L")
sleep 4
kill -CONT "$(pid "$L")"
end=$(wait_for_line "$(out "$L")" "\"event\":\"job_end\".*\"run_id\":\"$run\"" 10)
assert_eq ok "$(field "$end" outcome)" "outcome of $run (ended on its own while $L was stopped; $end)"
echo "$end" | grep -q '"stopped_because"' && fail "$run: stopped_because in $end"
d=$(field "$end" duration_ms)
[ "$d" -ge 250 ] && [ "$d" -lt 1500 ] || fail "$run lasted $d ms by its job_end (the command: 300 ms)"
sleep 1
"$B" history -c "$T/client.yaml" --json -n 20 short > "$T/h1.json" || fail "history short"
rec=$(grep -o "{[^{}]*\"run_id\":\"$run\"[^{}]*}" "$T/h1.json")
assert_eq ok "$(field "$rec" outcome)" "history's outcome of $run ($rec)"
d=$(field "$rec" duration_ms)
[ "$d" -ge 250 ] && [ "$d" -lt 1500 ] || fail "history: $run lasted $d ms ($rec)"
grep -q "^$run ok$" "$T/success.txt" 2>/dev/null || fail "no on_success for $run: $(cat "$T/success.txt" 2>/dev/null)"
grep -q "^$run " "$T/failure.txt" 2>/dev/null && fail "on_failure ran for $run: $(cat "$T/failure.txt")"
note "  $run: ok in $d ms, on_success; $L2 led meanwhile"
L=$L2

# ---------------------------------------------------------------------
note "2. a manual run that ends on its own while its leader is stopped: --wait exits 0"
"$B" trigger -c "$T/client.yaml" manual --wait >"$T/t2.out" 2>"$T/t2.err" &
waiter=$!
id=""
for _ in $(seq 1 500); do
    id=$(head -n1 "$T/t2.out" 2>/dev/null)
    [ -n "$id" ] && [ "$(rcli hget "baton:{st}:trigger:$id" state)" = running ] && break
    sleep 0.01
done
assert_eq running "$(rcli hget "baton:{st}:trigger:$id" state)" "state of the manual run"
sleep 0.1
kill -STOP "$(pid "$L")"
L2=$(wait_leader "$L")
sleep 3
kill -CONT "$(pid "$L")"
wait $waiter; rc=$?
assert_eq 0 "$rc" "exit of trigger --wait ($(cat "$T/t2.err"))"
grep -q 'stopped answering while it ran; waiting' "$T/t2.err" ||
    fail "the next leader did not presume the run lost before its node came back: $(cat "$T/t2.err")"
assert_eq ok "$(rcli hget "baton:{st}:trigger:$id" outcome)" "outcome of request $id"
assert_eq "" "$(rcli hget "baton:{st}:trigger:$id" presumed)" "request $id still presumed"
started=$(rcli hget "baton:{st}:trigger:$id" started) ended=$(rcli hget "baton:{st}:trigger:$id" ended)
[ $(( ended - started )) -lt 1500 ] || fail "request $id: $(( ended - started )) ms from start to end (the command: 300 ms)"
note "  $id: ok in $(( ended - started )) ms; --wait: $(tail -n1 "$T/t2.err")"
L=$L2

# ---------------------------------------------------------------------
note "3. a manual run whose leader is killed 1 s in: --wait exits 70, its end is the last sign of life"
"$B" trigger -c "$T/client.yaml" long --wait >"$T/t3.out" 2>"$T/t3.err" &
waiter=$!
id=""
for _ in $(seq 1 500); do
    id=$(head -n1 "$T/t3.out" 2>/dev/null)
    [ -n "$id" ] && [ "$(rcli hget "baton:{st}:trigger:$id" state)" = running ] && break
    sleep 0.01
done
sleep 1
kill -KILL "$(pid "$L")"; wait_exit "$L.${GEN[$L]}" 5
wait $waiter; rc=$?
assert_eq 70 "$rc" "exit of trigger --wait when the run's node died ($(cat "$T/t3.err"))"
assert_eq killed "$(rcli hget "baton:{st}:trigger:$id" outcome)" "outcome of request $id"
started=$(rcli hget "baton:{st}:trigger:$id" started) ended=$(rcli hget "baton:{st}:trigger:$id" ended)
# killed 1 s in; the registration was last renewed at most lease.renew
# (ttl/3) before: from start to end 1 s, give or take 0.7 s
[ $(( ended - started )) -lt 1800 ] || fail "request $id: $(( ended - started )) ms from start to end (killed 1 s in)"
note "  $id: killed, $(( ended - started )) ms from start to end"

for n in n1 n2; do kill -TERM "$(pid $n)" 2>/dev/null; done
for n in n1 n2; do alive "$(pid $n)" && wait_exit "$n.${GEN[$n]}" 10; done
note "ok"
