# test_drift.sh -- config drift through three real supervisors and a real
# redis-server: the nodes' heartbeats carry the hash of their effective
# jobs; after one node's jobs.yaml is edited and it gets SIGHUP, `baton
# status` (text and --json) names it and the leader logs config_drift once;
# a file that only reorders the jobs is no drift; after the edit is reverted
# and SIGHUP, the leader logs config_drift_resolved and status is clean.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v python3 >/dev/null || fail "python3 is not installed (apt-get install python3)"

config() { node_config "$1" dr "$2"; }
dr_leader() { leader_of dr; }
status_json() { "$B" status -c "$T/a.yaml" --json; }
# drift_list: the "drift" array of status, space-separated.
drift_list() { status_json | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["drift"]))'; }
# wait_drift WANT TIMEOUT_S: until status says drift is WANT.
wait_drift() {
    local deadline=$(( $(now_ms) + $2 * 1000 )) got
    while :; do
        got=$(drift_list)
        [ "$got" = "$1" ] && return 0
        [ "$(now_ms)" -lt "$deadline" ] || fail "status drift: expected [$1], got [$got]"
        sleep 0.1
    done
}

same='jobs:
  - {name: report, schedule: "0 7 * * *", command: ["true"]}
  - {name: sweep, schedule: "*/5 * * * *", shell: "true"}
'
for n in a b c; do printf '%s' "$same" > "$T/jobs-$n.yaml"; config $n "$T/jobs-$n.yaml"; done
for n in a b c; do spawn $n "$B" run -c "$T/$n.yaml"; sleep 0.2; done
sleep 1.5
l=$(dr_leader)
[ -n "$l" ] || fail "no leader"
# The last of the three to differ is never the leader here: pick a follower.
f=c; [ "$l" = c ] && f=b

note "1. the same jobs everywhere: no drift"
wait_drift "" 5
status_json | python3 -c '
import json, sys
s = json.load(sys.stdin)
hs = {n["node"]: n["jobs_hash"] for n in s["nodes"]}
assert len(set(hs.values())) == 1 and len(hs) == 3, hs
assert all(n["jobs"] == 2 and n["jobs_differ"] is False for n in s["nodes"]), s["nodes"]' \
    || fail "three nodes with the same jobs: $(status_json)"
h0=$("$B" check -c "$T/a.yaml" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs_hash"])')
status_json | grep -q "\"jobs_hash\":\"$h0\"" || fail "baton check's jobs_hash $h0 is not the heartbeats'"
note "ok"

note "2. a reordered file is the same set of jobs"
printf 'jobs:\n  - {name: sweep, schedule: "*/5 * * * *", shell: "true"}\n  - {name: report, schedule: "0 7 * * *", command: ["true"]}\n' > "$T/jobs-$f.yaml"
kill -HUP "$(pid_of $f)"
wait_for_line "$T/$f.out" '"event":"reloaded"' 5 >/dev/null
sleep 2.5
assert_eq "" "$(drift_list)" "drift after reordering $f's jobs"
note "ok"

note "3. one node's jobs.yaml edited + SIGHUP: status shows it, the leader logs it once"
printf '%s' "$same" | sed 's|"\*/5 \* \* \* \*"|"*/10 * * * *"|' > "$T/jobs-$f.yaml"
kill -HUP "$(pid_of $f)"
t0=$(now_ms)
wait_drift "$f" 8
seen=$(( $(now_ms) - t0 ))
line=$(wait_for_line "$T/$l.out" '"event":"config_drift"' 5)
logged=$(( $(ts_ms "$(echo "$line" | sed 's/.*"ts":"\([^"]*\)".*/\1/')") - t0 ))
fh=$(status_json | python3 -c 'import json,sys; print([n["jobs_hash"] for n in json.load(sys.stdin)["nodes"] if n["node"] == "'$f'"][0])')
echo "$line" | grep -q '"level":"warn".*"node":"'$l'",.*"follower":"'$f'","jobs_hash":"'$fh'","jobs":2,"leader_jobs_hash":"'$h0'","leader_jobs":2' \
    || fail "config_drift line: $line"
# One member per name: the leader that logs it is "node", the drifting node
# "follower" (jq and Python keep the last of two "node"s), and `baton logs`
# shows both.
printf '%s\n' "$line" > "$T/drift.jsonl"
"$BATON_JSONL_CHECK" "$T/drift.jsonl" >/dev/null || fail "config_drift line is not strict JSON: $line"
printf '%s\n' "$line" | "$B" logs --color never | grep -q " $l config_drift .*\b$f\b" \
    || fail "baton logs of config_drift: $(printf '%s\n' "$line" | "$B" logs --color never)"
"$B" status -c "$T/a.yaml" > "$T/status.txt"; rc=$?
assert_eq 0 "$rc" "status exit with a leader"
grep -qE "^$f +.* 2 ${fh:0:8} differs" "$T/status.txt" || fail "status text: $(cat "$T/status.txt")"
grep -q "^config drift: $f runs other jobs than the leader $l (2 jobs, hash $fh; the leader's: 2 jobs, hash $h0)\$" "$T/status.txt" \
    || fail "status text: $(cat "$T/status.txt")"
sleep 3.5 # three more polls: still one line
assert_eq 1 "$(count_lines "$T/$l.out" '"event":"config_drift"')" "config_drift lines"
note "  status showed it after $seen ms, the leader logged it after $logged ms (poll 1s); one line in 3.5 s more"
note "ok"

note "4. reverted + SIGHUP: resolved"
printf '%s' "$same" > "$T/jobs-$f.yaml"
kill -HUP "$(pid_of $f)"
wait_drift "" 8
line=$(wait_for_line "$T/$l.out" '"event":"config_drift_resolved"' 5)
echo "$line" | grep -q '"node":"'$l'",.*"follower":"'$f'","jobs_hash":"'$h0'"' || fail "config_drift_resolved line: $line"
sleep 2.5
assert_eq 1 "$(count_lines "$T/$l.out" '"event":"config_drift"')" "config_drift lines after the fix"
assert_eq 1 "$(count_lines "$T/$l.out" '"event":"config_drift_resolved"')" "config_drift_resolved lines"
# Followers never log drift: only the leader compares.
for n in a b c; do
    [ "$n" = "$l" ] || [ "$(count_lines "$T/$n.out" '"event":"config_drift')" = 0 ] || fail "follower $n logged drift"
done
for n in a b c; do kill -TERM "$(pid_of $n)"; done
for n in a b c; do wait_exit $n 10; done
n=$("$BATON_JSONL_CHECK" "$T/$l.out") || fail "a log line is not valid JSON"
note "ok"
