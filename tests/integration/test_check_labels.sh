# test_check_labels.sh -- `baton check` and run_on {labels}: against a real
# redis-server and a real supervisor carrying the label gpu, a job on gpu
# passes quietly, a job on tpu (which no node carries) is a warning at the
# job's place (exit 0, also in --json's warnings); this node's own labels
# count; with Redis down, one warning says the labels could not be
# checked; a jobs.yaml without labels never contacts Redis.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
cat > "$T/jobs.yaml" <<EOF2
jobs:
  - {name: render, schedule: "@hourly", command: ["true"], run_on: {labels: [gpu]}}
  - {name: train, schedule: "@hourly", command: ["true"],
     run_on: {labels: [gpu, tpu]}}
EOF2
printf 'jobs:\n  - {name: plain, schedule: "@hourly", command: ["true"], run_on: any}\n' > "$T/plain-jobs.yaml"
conf() { # conf NAME JOBS [LABELS]
    printf 'node: %s\nredis: %s\ngroup: lab\npoll: 1s\nredis_timeout: 300ms\njobs: %s\n%s' \
        "$1" "$REDIS_URL" "$2" "${3:+labels: [$3]
}" > "$T/$1.yaml"
}
conf gpu1 "$T/jobs.yaml" gpu
conf checker "$T/jobs.yaml"
conf mine "$T/jobs.yaml" tpu
conf plain "$T/plain-jobs.yaml"
spawn gpu1 "$B" run -c "$T/gpu1.yaml"
wait_for_line "$T/gpu1.out" '"to":"working"' 10 >/dev/null || fail "gpu1 does not lead"

"$B" check -c "$T/checker.yaml" > "$T/out" 2> "$T/err"
assert_eq 0 $? "exit of check with an unknown label"
assert_eq "baton: check: warning: $T/jobs.yaml:3:5: job \"train\": run_on label \"tpu\": no node of group lab carries it (1 node seen, nor this node's labels): its ticks are recorded not run until one does" \
    "$(cat "$T/err")" "the warning"
"$B" check -c "$T/checker.yaml" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["valid"] is True and d["problems"] == [], d
assert len(d["warnings"]) == 1 and "\"tpu\"" in d["warnings"][0], d["warnings"]' || fail "check --json: warnings"
"$B" check -c "$T/mine.yaml" > /dev/null 2> "$T/err" || fail "check of a node carrying tpu itself"
assert_eq "" "$(cat "$T/err")" "no warning when this node carries the label"

kill -TERM "$(pid_of gpu1)"; wait_exit gpu1 10
redis_stop
"$B" check -c "$T/checker.yaml" > /dev/null 2> "$T/err"
assert_eq 0 $? "exit of check with Redis down"
grep -qx "baton: check: warning: the labels of run_on could not be checked against the group's nodes: Redis ($REDIS_URL) did not answer: .*" "$T/err" ||
    fail "check with Redis down: $(cat "$T/err")"
"$B" check -c "$T/plain.yaml" > /dev/null 2> "$T/err" || fail "check of a jobs.yaml without labels"
assert_eq "" "$(cat "$T/err")" "a jobs.yaml without labels does not contact Redis"
note "ok"
