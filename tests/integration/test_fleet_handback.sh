# test_fleet_handback.sh -- a run_on: all tick handed back by its node,
# which then leaves, through real supervisors and a real redis-server:
# member pm accepts its own assignment of a tick (and stops itself before
# starting it: BATON_TEST_FAULT=stop-after-accept), the job is paused, pm
# is let go on and hands the tick back at its instant; pm then leaves
# (SIGTERM); a resume with catch-up releases the tick, and the leader,
# finding pm no longer live, records it not run, naming pm as the reason
# does and in the record's node (before, the record's node was the
# leader's, as if the leader had been to run it).
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
G=fh LEDGER=$T/ledger.txt
cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: pj
    schedule: "*/5 * * * * *"
    catchup: 1h
    run_on: {labels: [w], all: true}
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_NODE >> $LEDGER"
EOF

# node NAME [EXTRA YAML...]: starts a supervisor of group $G.
node() {
    local name=$1; shift
    node_config "$name" "$G" "$T/jobs.yaml" "$@"
    spawn "$name" "$B" run -c "$T/$name.yaml"
}

node pl
wait_for_line "$T/pl.out" '"to":"working"' 10 >/dev/null || fail "pl never led"
BATON_TEST_FAULT=stop-after-accept node pm "labels: [w]"
deadline=$(( $(now_ms) + 20000 ))
until [ "$(ps -o stat= -p "$(pid_of pm)" | cut -c1)" = T ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "pm never accepted a tick"
    sleep 0.02
done
# its assignment in Redis: field "<tick>/pm", accepted by pm
field=$(rcli hgetall "baton:{$G}:assign:pj" |
    awk 'NR % 2 { f = $0; next } $1 == "accepted" && $2 == "pm" { print f }')
ptick=${field%/pm}
[ -n "$field" ] && [ "$field" = "$ptick/pm" ] || fail "pm stopped, but has accepted no tick of its own: '$field'"
"$B" pause -c "$T/pl.yaml" pj >/dev/null || fail "baton pause"
kill -CONT "$(pid_of pm)"
wait_for_line "$T/pm.out" '"event":"handed_back"' 10 >/dev/null || fail "pm did not hand the tick back"
kill -TERM "$(pid_of pm)"
wait_exit pm 15
[ "$EXIT_CODE" = 0 ] || fail "pm: exit $EXIT_CODE"
rcli hget "baton:{$G}:nodes" pm | grep -q '"state":"stopped"' || fail "pm's last heartbeat does not say stopped"
sleep 1
"$B" resume --catchup -c "$T/pl.yaml" pj >/dev/null || fail "baton resume --catchup"
at=$(date -u -d "@$ptick" +%Y-%m-%dT%H:%M:%SZ)
# The record of that tick: its outcome, node and reason (XRANGE flat).
record() {
    rcli xrange "baton:{$G}:runs:pj" - + | awk -v at="$at" '
        /^[0-9]+-[0-9]+$/ { if (s == at) print o "|" n "|" r; s = o = n = r = k = ""; next }
        k == "scheduled_at" { s = $0 } k == "outcome" { o = $0 } k == "node" { n = $0 }
        k == "reason" { r = $0 }
        { k = (k == "" ? $0 : "") }
        END { if (s == at) print o "|" n "|" r }'
}
deadline=$(( $(now_ms) + 10000 ))
until [ -n "$(record)" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "$at ($field) never recorded: $(history_ranges $G pj | tr '\n' ';')"
    sleep 0.2
done
rec=$(record)
kill -TERM "$(pid_of pl)"
wait_exit pl 15
note "  $at: $rec"
[ "${rec%%|*}" = failed_to_start ] || fail "$at: not recorded failed_to_start: $rec"
case $rec in
*"|its node pm handed it back and is no longer live: not run") ;;
*) fail "$at: not the reason of a node that handed it back and left: $rec" ;;
esac
node_of=$(cut -d'|' -f2 <<<"$rec")
[ "$node_of" = pm ] || fail "$at: the record names node '$node_of', not pm, whose tick it was"
! grep -q "^$at " "$LEDGER" 2>/dev/null || fail "$at ran although handed back"
note "ok"
