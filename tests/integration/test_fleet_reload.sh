# test_fleet_reload.sh -- a node's capacity and labels (baton.yaml) changed
# by SIGHUP apply at once, on both sides of a dispatch, through real
# supervisors and a real redis-server:
#   1. a member started with capacity 0 takes no tick of an every-second
#      `run_on: any` job (the leader has capacity 0 too: the ticks are
#      recorded missed); raised to 1 by SIGHUP, it runs them (before:
#      its heartbeat said 1 while it accepted under 0: nothing ran);
#      lowered to 0 again, it takes no new one;
#   2. the leader without the label of a `{labels: [w]}` job refuses to
#      run it by hand; given the label by SIGHUP, it runs it.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
G=fr LEDGER=$T/ledger.txt
cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: tick
    schedule: "* * * * * *"
    catchup: 0
    run_on: any
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_NODE >> $LEDGER"
  - name: labjob
    schedule: "0 0 0 1 1 *"
    run_on: {labels: [w]}
    shell: "echo lab \$BATON_TRIGGER \$BATON_NODE >> $T/lab.txt"
EOF

# reload NAME [EXTRA YAML...]: rewrites NAME's baton.yaml, SIGHUPs it and
# waits for its reloaded line (the n-th one).
reloads=0
reload() {
    local name=$1; shift
    node_config "$name" $G "$T/jobs.yaml" "$@"
    local before; before=$(count_lines "$T/$name.out" '"event":"reloaded"')
    kill -HUP "$(pid_of "$name")"
    local deadline=$(( $(now_ms) + 10000 ))
    until [ "$(count_lines "$T/$name.out" '"event":"reloaded"')" -gt "$before" ]; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "$name: no reloaded line after SIGHUP"
        sleep 0.05
    done
}
# runs_on NODE: how many ticks NODE has run so far.
runs_on() { [ -f "$LEDGER" ] || { echo 0; return; }; awk -v n="$1" '$2 == n' "$LEDGER" | wc -l; }

note "1. capacity 0 -> 1 -> 0 by SIGHUP on a member"
node_config r1 $G "$T/jobs.yaml" "capacity: 0"
spawn r1 "$B" run -c "$T/r1.yaml"
wait_for_line "$T/r1.out" '"to":"working"' 10 >/dev/null
node_config r2 $G "$T/jobs.yaml" "capacity: 0"
spawn r2 "$B" run -c "$T/r2.yaml"
wait_for_line "$T/r2.out" "\"event\":\"following\"" 10 >/dev/null
sleep 3
assert_eq 0 "$(runs_on r2)" "runs on r2 at capacity 0"
reload r2 "capacity: 1"
deadline=$(( $(now_ms) + 10000 ))
until [ "$(runs_on r2)" -ge 3 ]; do
    [ "$(now_ms)" -lt "$deadline" ] ||
        fail "r2 raised to capacity 1 by SIGHUP ran $(runs_on r2) ticks in 10 s"
    sleep 0.1
done
assert_eq 0 "$(runs_on r1)" "runs on r1 (capacity 0)"
note "  r2 ran $(runs_on r2) ticks after its capacity became 1"
reload r2 "capacity: 0"
sleep 2 # an offer accepted before the SIGHUP may still start
settled=$(runs_on r2)
sleep 4
assert_eq "$settled" "$(runs_on r2)" "runs on r2 after its capacity went back to 0"

note "2. labels given to the leader by SIGHUP: its manual run of a labelled job"
"$B" trigger -c "$T/r2.yaml" labjob --wait >/dev/null 2>"$T/lab1.err" &&
    fail "labjob ran on r1, which lacks its label"
grep -q 'lacks the label "w"' "$T/lab1.err" || fail "labjob refused with: $(cat "$T/lab1.err")"
reload r1 "capacity: 0" "labels: [w]"
"$B" trigger -c "$T/r2.yaml" labjob --wait >/dev/null 2>"$T/lab2.err" ||
    fail "labjob after r1 got the label: $(cat "$T/lab2.err")"
assert_eq "lab manual r1" "$(cat "$T/lab.txt")" "the labelled job's manual run"
for n in r1 r2; do kill -TERM "$(pid_of $n)"; done
for n in r1 r2; do wait_exit $n 15; done
note "ok"
