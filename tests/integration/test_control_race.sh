# test_control_race.sh -- the control API under pressure, against a real
# supervisor and redis-server: pause and resume racing a job's ticks (a
# job every second; pause and resume back to back 20 times, then paused
# windows of 2.5 s): no tick runs twice, no tick scheduled well inside a
# paused window runs, and ticks run again after the last resume; a flood
# of wrong tokens is audited (401, then 429) at most API_REFUSED_LOG_PER_S
# lines a second of each status, the next line counting what was left out
# (one budget for both once hid every 429 when the flood took under a second).
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v curl >/dev/null || fail "curl is not installed"
cat > "$T/jobs.yaml" <<'EOF2'
jobs:
  - name: tick
    schedule: "* * * * * *"
    command: ["true"]
EOF2
TOK=$T/tokens
OP=$("$B" token new ops-bot --role operate --file "$TOK") || fail "token new"
redis_start
P=$(free_port)
node_config n1 race "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", control: true, tokens_file: $TOK}" \
    "history: 1000"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"transition".*"to":"working"' 10 >/dev/null
U=http://127.0.0.1:$P
post() { curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $OP" "$@" || true; }

# Back to back, wherever the ticks fall.
for i in $(seq 20); do
    assert_eq 200 "$(post -d '{"reason":"race"}' "$U/jobs/tick/pause")" "pause $i"
    assert_eq 200 "$(post "$U/jobs/tick/resume")" "resume $i"
done
# Paused windows: no tick scheduled from 1 s after the pause answered to
# the resume may run (a tick claimed before the pause may still start).
windows=()
for i in 1 2 3; do
    assert_eq 200 "$(post -d '{"reason":"window"}' "$U/jobs/tick/pause")" "pause window $i"
    at_ms a
    sleep 2.5
    at_ms b
    assert_eq 200 "$(post "$U/jobs/tick/resume")" "resume window $i"
    windows+=("$a:$b")
    sleep 1.2
done
at_ms resumed
sleep 3
"$B" history -c "$T/n1.yaml" --json -n 1000 tick >"$T/hist.json" 2>"$T/hist.err" ||
    fail "history: $(cat "$T/hist.err")"
python3 - "$T/hist.json" "$resumed" "${windows[@]}" >"$T/py.out" 2>&1 <<'PY' || fail "the history: $(tail -n 2 "$T/py.out")"
import json, sys, datetime
recs = json.load(open(sys.argv[1]))
recs = recs if isinstance(recs, list) else recs.get("runs", [])
def ms(t): return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000
ran = [r for r in recs if r.get("started")]
ticks = [r["scheduled_at"] for r in ran]
dups = {t for t in ticks if ticks.count(t) > 1}
if dups: sys.exit("ran twice: %s" % sorted(dups))
for w in sys.argv[3:]:
    a, b = map(int, w.split(":"))
    inside = [t for t in ticks if a + 1000 <= ms(t) < b]
    if inside: sys.exit("ran while paused (%d-%d): %s" % (a, b, inside))
after = [t for t in ticks if ms(t) >= int(sys.argv[2])]
if len(after) < 2: sys.exit("no run after the last resume: %s" % ticks[-5:])
print("%d runs, none doubled, none inside the paused windows, %d after" % (len(ran), len(after)))
PY
note "pause and resume racing the ticks: none doubled, none while paused, runs after the resume"

# A flood of wrong tokens: audited, rate-limited.
before=$(count_lines "$T/n1.out" '"event":"api_call".*"token":null')
at_ms f0
for i in $(seq 150); do
    curl -s -m 5 -o /dev/null -H "Authorization: Bearer bt_wrong$i" "$U/status" || true
done
at_ms f1
sleep 1.5 # the audit lines are written on the ops timer (every second)
after=$(count_lines "$T/n1.out" '"event":"api_call".*"token":null')
n=$((after - before)); secs=$(( (f1 - f0) / 1000 + 2 ))
[ "$n" -ge 1 ] || fail "the refusals were not audited"
[ "$n" -le $((secs * 10)) ] || fail "$n refusal lines in $secs s: the log is not rate-limited (5 a second of 401s, 5 of 429s)"
grep -q '"event":"api_call".*"status":401' "$T/n1.out" || fail "no 401 audited"
grep -q '"event":"api_call".*"status":429' "$T/n1.out" || fail "no 429 audited"
curl -s -m 5 -o /dev/null -H "Authorization: Bearer bt_wrong" "$U/status"  # after the second: says what was left out
sleep 1.5
grep -q '"event":"api_call".*"suppressed":[0-9]' "$T/n1.out" || fail "no line counts the refusals left out"
grep -q 'bt_wrong' "$T/n1.out" && fail "a token is in the log"
note "150 wrong tokens: $n audit lines in about $secs s (at most 5 a second of each status), the rest counted"
