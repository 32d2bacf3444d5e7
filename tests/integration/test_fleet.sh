# test_fleet.sh -- jobs spread over the fleet (run_on: any and {labels};
# dispatch.h), through three real supervisors and a real redis-server:
#   1. any: an every-second job for ~20 s on 3 nodes: every tick ran
#      exactly once (the ledger) or is recorded, runs on more than one
#      node, each record names its node and its dispatch delay;
#   2. labels: only the labelled nodes run it;
#   3. capacity 1 and a job that outlasts its period (concurrency: allow):
#      no node ever runs two at once;
#   4. the member running a tick is SIGKILLed: the tick is recorded lost
#      with that node, and (retries: 1) run again on another member;
#   5. a member is frozen (SIGSTOP) while it runs a tick: its shim kills
#      the run before its registration can lapse, the tick is recorded
#      lost and retried elsewhere, never run twice at once;
#   6. the leader is SIGKILLed, then another SIGTERMed, while runs are out
#      on members: no tick doubled, none missing.
# Each section starts its own group and stops what it started, by pid.
. "$BATON_TESTS_DIR/lib/harness.sh"
. "$BATON_TESTS_DIR/lib/ledger.sh"
B=$BATON_BIN
redis_start --appendonly yes --appendfsync always

# node NAME GROUP JOBSFILE [EXTRA YAML...]: starts a supervisor.
node() {
    local name=$1; shift
    node_config "$name" "$@"
    spawn "$name" "$B" run -c "$T/$name.yaml"
}
# stop_nodes NAME...: SIGTERM, then waits for each.
stop_nodes() {
    local n
    for n in "$@"; do kill -TERM "$(pid_of "$n")" 2>/dev/null; done
    for n in "$@"; do wait_exit "$n" 15; done
}
# secs FILE: the ledger's first column as Unix seconds, one a line.
secs() { awk '{print $1}' "$1" | date -u -f - +%s; }
# nodes_of FILE: the distinct nodes of the ledger (third column).
nodes_of() { awk '{print $3}' "$1" | sort -u | tr '\n' ' '; }

# ---------------------------------------------------------------------
note "1. run_on: any over 3 nodes: every tick once, on more than one node"
G=fa LEDGER=$T/any.txt PHASE=any
cat > "$T/any.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1h
    run_on: any
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $LEDGER"
EOF
node n1 $G "$T/any.yaml"
node n2 $G "$T/any.yaml"
node n3 $G "$T/any.yaml"
wait_for_line "$LEDGER" . 10 >/dev/null
start=$(( $(date +%s) + 1 ))
sleep 20
end=$(( $(date +%s) - 2 ))
stop_nodes n1 n2 n3
check_ledger "$start" "$end" 0 0 0
note "  $RAN ran, $RECORDED recorded over $((end - start + 1)) s, on: $(nodes_of "$LEDGER")"
[ "$RAN" -ge $(( (end - start + 1) * 9 / 10 )) ] || fail "any: only $RAN of $((end - start + 1)) ticks ran"
[ "$(awk -v f="$start" '{print $3}' "$LEDGER" | sort -u | wc -l)" -ge 2 ] \
    || fail "any: every run on one node: $(nodes_of "$LEDGER")"
# The records name their node (the one that ran it) and the dispatch delay.
rcli xrevrange "baton:{$G}:runs:ledger" + - COUNT 5 > "$T/any-recs.txt"
grep -qx dispatch_ms "$T/any-recs.txt" || fail "any: no dispatch_ms in the records"
grep -q '"event":"accepted"' "$T"/n?.out || fail "any: no node logged accepted"
grep -q '"event":"assigned"' "$T"/n?.out || fail "any: no leader logged assigned"
