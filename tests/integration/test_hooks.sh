# test_hooks.sh -- on_failure / on_success hooks through real supervisors
# and a real redis-server:
#   1. a failing job's on_failure runs once per tick, after its last
#      attempt, with every variable right (and the output file: its
#      content, mode 0600, removed after); on_success likewise; a run
#      stopped by its timeout and one that cannot start get on_failure with
#      their signal or reason; hook output is hook_output lines, valid JSON;
#      a hook that cannot start is logged with the reason;
#   2. a hook that hangs is killed at its timeout (TERM, then KILL) while
#      the next ticks start on time;
#   3. SIGKILL of the leader: no run's hook runs twice, nor on another node;
#   4. a graceful handover (SIGTERM) mid-run: the old leader runs the hook
#      of its last run, once, before it exits; the new leader does not;
#   5. shutdown_grace bounds the wait for hooks: a hook still going is
#      stopped, and the exit comes within the grace plus kill_grace;
#   6. the worked example (examples/hooks): notify-chat.sh posts a
#      Slack-style JSON message to a local HTTP listener;
#   7. manual runs (baton trigger) run their hook once, as a tick's last
#      attempt does (never retried: BATON_ATTEMPT=1, BATON_TRIGGER=manual),
#      and keep their output in the history; the ticks of a paused job
#      (baton pause) are recorded skipped and run no hook.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v python3 >/dev/null || fail "python3 is not installed (apt-get install python3)"
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"

config() { node_config "$@"; }
run_node() { node_config "$@"; spawn "$1" "$B" run -c "$T/$1.yaml"; }
# jfield NAME: the field NAME of the JSON object on stdin ("" when absent).
jfield() { python3 -c 'import json,sys; v=json.loads(sys.stdin.read()).get(sys.argv[1]); print("" if v is None else v)' "$1"; }

# The variables of the test's own environment (BATON_BIN...) are not the
# hook's: left out of what the hook writes down.
HARNESS_VARS=$(env | sed -n 's/^\(BATON_[A-Z_]*\)=.*/\1/p' | paste -sd'|')
HARNESS_VARS=${HARNESS_VARS:-NONE}
# The hook of the tests: writes what it got into $T/hooks/RUN_ID.HOOK/ and
# one line "RUN_ID HOOK NODE" into $T/hooks.log, then prints a line with
# invalid UTF-8 (it must come out as valid JSON).
mkdir -p "$T/hooks"
cat > "$T/capture.sh" <<EOF
#!/bin/sh
d=$T/hooks/\$BATON_RUN_ID.\$BATON_HOOK
mkdir -p "\$d"
env | grep -E '^(BATON_|CUSTOM=)' | grep -v -E '^($HARNESS_VARS)=' | sort > "\$d/env"
cp "\$BATON_OUTPUT_FILE" "\$d/output"
stat -c '%a %U' "\$BATON_OUTPUT_FILE" > "\$d/mode"
echo "\$BATON_OUTPUT_FILE" > "\$d/path"
echo "\$BATON_RUN_ID \$BATON_HOOK \$BATON_NODE" >> $T/hooks.log
printf 'hook saw \\377 and went on\\n'
echo "to stderr" >&2
EOF
chmod +x "$T/capture.sh"

# ---------------------------------------------------------------------
note "1. each outcome's hook, once, with its environment"
cat > "$T/one.yaml" <<EOF
defaults:
  on_failure: ["$T/capture.sh"]
  catchup: 0
jobs:
  - name: fails
    schedule: "*/4 * * * * *"
    retries: 1
    retry_backoff: 300ms
    env: {CUSTOM: "from the job"}
    shell: "echo out \$BATON_TRIGGER; sleep 0.1; echo err >&2; exit 3"
    on_success: ["$T/capture.sh"]
  - name: works
    schedule: "*/4 * * * * *"
    shell: "echo fine"
    on_success: {shell: "exec $T/capture.sh"}
  - name: slow
    schedule: "*/4 * * * * *"
    timeout: 1s
    kill_grace: 1s
    shell: "echo going; exec sleep 5"
  - name: missing
    schedule: "*/4 * * * * *"
    command: ["/nonexistent/prog"]
  - name: badhook
    schedule: "*/4 * * * * *"
    shell: "exit 1"
    on_failure: ["/nonexistent/notify"]
EOF
# Leftovers in baton's own environment must not reach a hook.
config h1 one "$T/one.yaml"
BATON_SIGNAL=stale BATON_EXIT_CODE=99 BATON_REASON=stale spawn h1 "$B" run -c "$T/h1.yaml"
# One tick of each, the retry of `fails` included.
wait_for_line "$T/h1.out" '"event":"hook_end".*"job":"fails"' 12 >/dev/null
wait_for_line "$T/h1.out" '"event":"hook_end".*"job":"works"' 5 >/dev/null
wait_for_line "$T/h1.out" '"event":"hook_end".*"job":"slow"' 5 >/dev/null
wait_for_line "$T/h1.out" '"event":"hook_end".*"job":"missing"' 5 >/dev/null
wait_for_line "$T/h1.out" '"event":"hook_end".*"job":"badhook"' 5 >/dev/null
kill -TERM "$(pid_of h1)"; wait_exit h1 10
assert_eq 0 "$EXIT_CODE" "h1's exit status"

# fails: two attempts per tick, one hook per tick, for the second attempt.
first_tick=$(grep '"event":"job_end".*"job":"fails"' "$T/h1.out" | head -n1 | jfield scheduled_at)
a1=$(grep '"event":"job_end".*"job":"fails".*"scheduled_at":"'"$first_tick"'".*"attempt":1' "$T/h1.out")
a2=$(grep '"event":"job_end".*"job":"fails".*"scheduled_at":"'"$first_tick"'".*"attempt":2' "$T/h1.out")
[ -n "$a1" ] && [ -n "$a2" ] || fail "no two attempts for tick $first_tick"
id1=$(echo "$a1" | jfield run_id); id2=$(echo "$a2" | jfield run_id)
[ ! -e "$T/hooks/$id1.on_failure" ] || fail "the first attempt (a retry followed) got its hook"
d="$T/hooks/$id2.on_failure"
[ -d "$d" ] || fail "the last attempt got no hook: $(ls "$T/hooks")"
assert_eq 1 "$(grep -c "^$id2 " "$T/hooks.log")" "hooks for run $id2"
dur=$(echo "$a2" | jfield duration_ms)
got_dur=$(sed -n 's/^BATON_DURATION_MS=//p' "$d/env")
[ $(( got_dur - dur )) -le 5 ] && [ $(( dur - got_dur )) -le 5 ] \
    || fail "BATON_DURATION_MS $got_dur, job_end said $dur"
started=$(sed -n 's/^BATON_STARTED_AT=//p' "$d/env")
[ -n "$started" ] || fail "no BATON_STARTED_AT"
want="BATON_ATTEMPT=2
BATON_DURATION_MS=$got_dur
BATON_EXIT_CODE=3
BATON_GROUP=one
BATON_HOOK=on_failure
BATON_JOB=fails
BATON_NODE=h1
BATON_OUTCOME=failed
BATON_OUTPUT_DROPPED=0
BATON_OUTPUT_FILE=$(cat "$d/path")
BATON_RUN_ID=$id2
BATON_SCHEDULED_AT=$first_tick
BATON_STARTED_AT=$started
BATON_TRIGGER=retry
CUSTOM=from the job"
assert_eq "$want" "$(cat "$d/env")" "the on_failure hook's environment"
assert_eq "$(printf 'out retry\nerr')" "$(cat "$d/output")" "BATON_OUTPUT_FILE's content"
assert_eq "600 $(id -un)" "$(cat "$d/mode")" "BATON_OUTPUT_FILE's mode and owner"
[ ! -e "$(cat "$d/path")" ] || fail "BATON_OUTPUT_FILE was not removed after the hook"
# Every tick of `fails` got exactly one hook: its last attempt's (the
# first attempt's when the shutdown dropped the retry).
ticks=$(grep '"event":"job_end".*"job":"fails"' "$T/h1.out" | sed 's/.*"scheduled_at":"\([^"]*\)".*/\1/' | sort -u | wc -l)
hooks=0
for i in $(grep '"event":"job_end".*"job":"fails"' "$T/h1.out" | sed 's/.*"run_id":"\([^"]*\)".*/\1/'); do
    hooks=$(( hooks + $(grep -c "^$i on_failure h1\$" "$T/hooks.log") ))
done
assert_eq "$ticks" "$hooks" "on_failure hooks of fails (one per tick)"

# works: on_success.
ok=$(grep '"event":"job_end".*"job":"works"' "$T/h1.out" | head -n1)
idw=$(echo "$ok" | jfield run_id)
d="$T/hooks/$idw.on_success"
[ -d "$d" ] || fail "works got no on_success hook"
grep -qx 'BATON_OUTCOME=ok' "$d/env" && grep -qx 'BATON_EXIT_CODE=0' "$d/env" &&
    grep -qx 'BATON_ATTEMPT=1' "$d/env" && grep -qx 'BATON_TRIGGER=schedule' "$d/env" &&
    grep -qx 'BATON_HOOK=on_success' "$d/env" || fail "on_success environment: $(cat "$d/env")"
grep -q '^BATON_SIGNAL\|^BATON_REASON\|^BATON_FENCE' "$d/env" && fail "unexpected variables: $(cat "$d/env")"
assert_eq "fine" "$(cat "$d/output")" "works' output file"

# slow: stopped by its timeout: the signal, the reason.
ids=$(grep '"event":"job_end".*"job":"slow"' "$T/h1.out" | head -n1 | jfield run_id)
d="$T/hooks/$ids.on_failure"
grep -qx 'BATON_OUTCOME=timeout' "$d/env" && grep -qx 'BATON_SIGNAL=TERM' "$d/env" &&
    grep -qx 'BATON_REASON=timeout' "$d/env" || fail "timeout environment: $(cat "$d/env")"
grep -q '^BATON_EXIT_CODE' "$d/env" && fail "a signalled run has an exit code: $(cat "$d/env")"
assert_eq "going" "$(cat "$d/output")" "slow's output file"

# missing: could not start.
idm=$(grep '"event":"job_end".*"job":"missing"' "$T/h1.out" | head -n1 | jfield run_id)
d="$T/hooks/$idm.on_failure"
grep -qx 'BATON_OUTCOME=failed_to_start' "$d/env" &&
    grep -qx 'BATON_REASON=/nonexistent/prog: command not found' "$d/env" &&
    grep -qx 'BATON_DURATION_MS=0' "$d/env" || fail "failed_to_start environment: $(cat "$d/env")"
grep -q '^BATON_EXIT_CODE\|^BATON_SIGNAL\|^BATON_STARTED_AT' "$d/env" && fail "a run that never started: $(cat "$d/env")"
[ ! -s "$d/output" ] || fail "a run that never started has output"

# badhook: the hook cannot start: said once, with the reason.
line=$(grep '"event":"hook_end".*"job":"badhook"' "$T/h1.out" | head -n1)
echo "$line" | grep -q '"level":"error".*"outcome":"failed_to_start","error":"/nonexistent/notify: command not found"' \
    || fail "a hook that cannot start: $line"

# Hook output: hook_output lines, valid JSON, invalid UTF-8 replaced.
grep -q '"event":"hook_output".*"job":"fails".*"hook":"on_failure","stream":"stdout","line":"hook saw \\ufffd and went on","invalid_utf8":true' "$T/h1.out" \
    || fail "no hook_output line: $(grep hook_output "$T/h1.out" | head -n2)"
grep -q '"event":"hook_output".*"stream":"stderr","line":"to stderr"' "$T/h1.out" || fail "no stderr hook_output"
n=$("$BATON_JSONL_CHECK" "$T/h1.out") || fail "a log line is not valid JSON"
# Start latency: hook_start after the job_end of its run.
lat=$(python3 - "$T/h1.out" <<'PY'
import json, sys, datetime
ends, lats = {}, []
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["event"] == "job_end":
        ends[o["run_id"]] = ts(o["ts"])
    elif o["event"] == "hook_start" and o["run_id"] in ends:
        lats.append(ts(o["ts"]) - ends[o["run_id"]])
lats.sort()
print("%d %d %d" % (len(lats), lats[len(lats) // 2], lats[-1]))
PY
)
note "  $n log lines valid; hook start after its run's end (count, median, max ms): $lat"
[ "${lat##* }" -lt 500 ] || fail "a hook started ${lat##* } ms after its run ended"
note "ok"

# ---------------------------------------------------------------------
note "2. a hook that hangs is killed at its timeout; the ticks go on, on time"
cat > "$T/hang.yaml" <<EOF
jobs:
  - name: tick
    schedule: "* * * * * *"
    catchup: 0
    shell: "true"
    hook_timeout: 1s
    kill_grace: 500ms
    on_success: {shell: "trap '' TERM; echo hanging; sleep 30; echo never"}
EOF
run_node k1 hang "$T/hang.yaml"
wait_for_line "$T/k1.out" '"event":"hook_end".*"outcome":"timeout"' 8 >/dev/null
sleep 2.2
kill -TERM "$(pid_of k1)"; wait_exit k1 10
end=$(grep '"event":"hook_end".*"outcome":"timeout"' "$T/k1.out" | head -n1)
echo "$end" | grep -q '"signal":"KILL"' || fail "the hook ignoring TERM was not KILLed: $end"
d=$(echo "$end" | jfield duration_ms)
[ "$d" -ge 1400 ] && [ "$d" -lt 2500 ] || fail "the hook was stopped after $d ms (timeout 1s + kill_grace 500ms)"
grep -q '"event":"hook_output".*"line":"never"' "$T/k1.out" && fail "the hook ran past its timeout"
worst=$(grep '"event":"job_start"' "$T/k1.out" | sed 's/.*"lateness_ms":\([0-9-]*\).*/\1/' | sort -n | tail -n1)
starts=$(grep -c '"event":"job_start"' "$T/k1.out")
alive_max=$(python3 - "$T/k1.out" <<'PY'
import json, sys
n = m = 0
for l in open(sys.argv[1]):
    e = json.loads(l)["event"]
    n += e == "hook_start"
    n -= e == "hook_end"
    m = max(m, n)
print(m)
PY
)
note "  $starts ticks while hooks hung ($alive_max alive at most); the latest started $worst ms late; a hung hook stopped after $d ms"
[ "$worst" -lt 300 ] || fail "a tick started $worst ms late while a hook hung"
[ "$starts" -ge 4 ] || fail "only $starts ticks ran"
note "ok"

# ---------------------------------------------------------------------
note "3. SIGKILL of the leader: no hook runs twice, nor on another node"
: > "$T/hooks.log"
cat > "$T/fo.yaml" <<EOF
jobs:
  - name: flop
    schedule: "* * * * * *"
    catchup: 1h
    shell: "echo flop; exit 1"
    on_failure: ["$T/capture.sh"]
EOF
run_node f1 fo "$T/fo.yaml"
sleep 0.3
run_node f2 fo "$T/fo.yaml"
sleep 2.5
l=$(leader_of fo); o=f1; [ "$l" = f1 ] && o=f2
kill -KILL "$(pid_of "$l")"; wait_exit "$l" 2
wait_for_line "$T/$o.out" '"event":"hook_end".*"job":"flop"' 6 >/dev/null
sleep 2
kill -TERM "$(pid_of "$o")"; wait_exit "$o" 10
dups=$(awk '{print $1}' "$T/hooks.log" | sort | uniq -d | wc -l)
assert_eq 0 "$dups" "runs whose hook ran twice"
# Each hook ran on the node that ran its run.
while read -r id hook node; do
    grep -q '"event":"job_end","node":"'"$node"'".*"run_id":"'"$id"'"' "$T/$node.out" \
        || fail "the hook of $id ran on $node, which did not run it"
done < "$T/hooks.log"
# The survivor, stopped gracefully, hooked every failed run of its own.
runs=$(grep -c '"event":"job_end".*"job":"flop"' "$T/$o.out")
assert_eq "$runs" "$(grep -c " $o\$" "$T/hooks.log")" "hooks of $o's runs"
note "  $(wc -l < "$T/hooks.log") hooks, none twice; $o hooked its $runs runs"
note "ok"

# ---------------------------------------------------------------------
note "4. a graceful handover mid-run: the old leader runs its run's hook once, then exits"
: > "$T/hooks.log"
cat > "$T/gh.yaml" <<EOF
jobs:
  - name: long
    schedule: "*/5 * * * * *"
    catchup: 0
    shell: "echo working; sleep 2; exit 4"
    on_failure: ["$T/capture.sh"]
EOF
run_node g1 gh "$T/gh.yaml"
sleep 0.3
run_node g2 gh "$T/gh.yaml"
sleep 0.5
l=$(leader_of gh); o=g1; [ "$l" = g1 ] && o=g2
start=$(wait_for_line "$T/$l.out" '"event":"job_start".*"job":"long"' 8)
id=$(echo "$start" | jfield run_id)
sleep 0.5
kill -TERM "$(pid_of "$l")"
wait_exit "$l" 10
assert_eq 0 "$EXIT_CODE" "the old leader's exit status"
kill -TERM "$(pid_of "$o")"; wait_exit "$o" 10
assert_eq 1 "$(grep -c "^$id on_failure $l\$" "$T/hooks.log")" "hooks of the handed-over run $id on $l"
assert_eq 1 "$(grep -c "^$id " "$T/hooks.log")" "hooks of run $id"
grep -q '"event":"hook_start".*"run_id":"'"$id"'"' "$T/$o.out" && fail "the new leader ran the hook of $id"
# The hook ended before the old leader did.
awk '/"event":"hook_end".*"run_id":"'"$id"'"/ {h = NR} /"event":"stopped"/ {s = NR} END {exit !(h && s && h < s)}' "$T/$l.out" \
    || fail "$l stopped before the hook of $id ended"
grep -qx 'BATON_EXIT_CODE=4' "$T/hooks/$id.on_failure/env" || fail "handover hook env: $(cat "$T/hooks/$id.on_failure/env")"
note "ok"

# ---------------------------------------------------------------------
note "5. shutdown_grace bounds the wait for a hook"
cat > "$T/grace.yaml" <<EOF
jobs:
  - name: quick
    schedule: "* * * * * *"
    catchup: 0
    shell: "true"
    kill_grace: 500ms
    hook_timeout: 1m
    on_success: {shell: "echo waiting; exec sleep 30"}
EOF
run_node s1 grace "$T/grace.yaml" 'shutdown_grace: 1s'
wait_for_line "$T/s1.out" '"event":"hook_start"' 5 >/dev/null
t0=$(now_ms)
kill -TERM "$(pid_of s1)"; wait_exit s1 10
took=$(( $(now_ms) - t0 ))
assert_eq 0 "$EXIT_CODE" "s1's exit status"
grep -q '"event":"hook_end".*"outcome":"killed"' "$T/s1.out" || fail "the hook was not stopped: $(grep hook_end "$T/s1.out")"
awk '/"event":"draining"/ {d = NR} /"event":"drain_timeout"/ {t = NR} /"event":"hook_end".*"killed"/ {h = NR} /"event":"stopped"/ {s = NR}
     END {exit !(d && t && h && s && d < t && t < h && h < s)}' "$T/s1.out" || fail "draining, drain_timeout, hook_end, stopped: not in order"
note "  exit $took ms after SIGTERM (shutdown_grace 1s, kill_grace 500ms)"
[ "$took" -ge 900 ] && [ "$took" -lt 2500 ] || fail "the exit took $took ms"
note "ok"

# ---------------------------------------------------------------------
note "6. the example: notify-chat.sh posts to a chat webhook"
cat > "$T/listen.py" <<'PY'
import http.server, sys
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(out, "ab") as f:
            f.write(self.headers.get("Content-Type", "").encode() + b"\n" + body + b"\n")
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
spawn listener python3 "$T/listen.py" "$T/posted.txt"
for _ in $(seq 1 200); do [ -s "$T/listener.out" ] && break; sleep 0.02; done
port=$(head -n1 "$T/listener.out")
[ -n "$port" ] || fail "the listener did not start: $(cat "$T/listener.err")"
# The example as written, pointed at the listener; its backup every 2 s,
# printing what a JSON body must escape, and failing.
printf '#!/bin/sh\necho dumping\nprintf '"'"'tab\\there "quoted" caf\\303\\251\\n'"'"'\nexit 2\n' > "$T/backup.sh"
chmod +x "$T/backup.sh"
sed -e "s|/usr/local/lib/baton/notify-chat.sh|$BATON_SOURCE_DIR/examples/hooks/notify-chat.sh|" \
    -e "s|https://hooks.slack.com/services/[^\"]*|http://127.0.0.1:$port/hook|" \
    -e 's|schedule: "30 2 \* \* \*"|schedule: "*/2 * * * * *"|' \
    -e "s|command: \\[\"/usr/local/bin/backup\", \"--all\"\\]|command: [\"$T/backup.sh\"]|" \
    -e 's|retry_backoff: 5m|retry_backoff: 100ms|' \
    "$BATON_SOURCE_DIR/examples/hooks/jobs.yaml" > "$T/example.yaml"
grep -q "$T/backup.sh" "$T/example.yaml" || fail "the example's command was not replaced"
config e1 ex "$T/example.yaml" 'shutdown_grace: 2s'
"$B" check -c "$T/e1.yaml" >/dev/null 2>"$T/check.err" || fail "the example does not check: $(cat "$T/check.err")"
spawn e1 "$B" run -c "$T/e1.yaml"
wait_for_line "$T/e1.out" '"event":"hook_end".*"job":"nightly-backup".*"outcome":"ok"' 15 >/dev/null
kill -TERM "$(pid_of e1)"; wait_exit e1 10
body=$(grep -A1 '^application/json$' "$T/posted.txt" | grep -v '^application/json$' | grep 'nightly-backup' | head -n1)
[ -n "$body" ] || fail "nothing posted for nightly-backup: $(cat "$T/posted.txt")"
python3 - "$body" <<'PY' || fail "the posted JSON is not what the example promises: $body"
import json, sys
m = json.loads(sys.argv[1])
t = m["text"]
assert t.startswith("job nightly-backup: failed (exit 2) on e1, attempt 3, "), t
a = m["attachments"][0]
assert a["color"] == "danger", a
assert a["text"] == 'dumping\ntab\there "quoted" caf\u00e9', repr(a["text"])
assert a["footer"].startswith("baton group ex, run "), a
PY
grep -q '"event":"hook_output".*"line":"posted to the chat: job nightly-backup' "$T/e1.out" || fail "the hook did not say it posted"
# One message per tick: the two retries before it posted nothing.
ticks=$(grep -c '"event":"job_end".*"job":"nightly-backup".*"attempt":3' "$T/e1.out")
posts=$(grep -c '"text":"job nightly-backup' "$T/posted.txt")
assert_eq "$ticks" "$posts" "messages for nightly-backup (one per tick, after its third attempt)"
note "  $posts message(s) posted, one per tick; body: $(echo "$body" | cut -c1-120)..."
note "ok"

# ---------------------------------------------------------------------
note "7. manual runs run their hook once; a paused job's skipped ticks run none"
: > "$T/hooks.log"
cat > "$T/man.yaml" <<EOF
jobs:
  - name: flaky
    schedule: "* * * * * *"
    retries: 2
    retry_backoff: 100ms
    shell: "echo manual \$BATON_TRIGGER; sleep 0.1; echo oops >&2; exit 5"
    on_failure: ["$T/capture.sh"]
    on_success: ["$T/capture.sh"]
  - name: fine
    schedule: "0 0 0 1 1 *"
    shell: "echo all good"
    on_success: ["$T/capture.sh"]
EOF
config m1 man "$T/man.yaml"
# Paused before any node runs: its ticks are skipped from the first.
"$B" pause -c "$T/m1.yaml" flaky --reason "hooks test" >/dev/null || fail "pause: exit $?"
spawn m1 "$B" run -c "$T/m1.yaml"
wait_for_line "$T/m1.out" '"event":"job_paused".*"job":"flaky"' 8 >/dev/null
# A failing manual run of the paused job: not retried, one on_failure.
id=$("$B" trigger -c "$T/m1.yaml" flaky --wait 2>"$T/m-trig.err"); rc=$?
assert_eq 5 "$rc" "trigger flaky --wait's exit status ($(cat "$T/m-trig.err"))"
[ -n "$id" ] || fail "trigger printed no run id"
wait_for_line "$T/m1.out" '"event":"hook_end".*"run_id":"'"$id"'"' 5 >/dev/null
d="$T/hooks/$id.on_failure"
[ -d "$d" ] || fail "the manual run $id got no on_failure hook: $(ls "$T/hooks")"
grep -qx 'BATON_TRIGGER=manual' "$d/env" && grep -qx 'BATON_ATTEMPT=1' "$d/env" &&
    grep -qx 'BATON_OUTCOME=failed' "$d/env" && grep -qx 'BATON_EXIT_CODE=5' "$d/env" &&
    grep -qx 'BATON_JOB=flaky' "$d/env" && grep -qx "BATON_RUN_ID=$id" "$d/env" \
    || fail "the manual run's hook environment: $(cat "$d/env")"
assert_eq "$(printf 'manual manual\noops')" "$(cat "$d/output")" "the manual run's BATON_OUTPUT_FILE"
grep -q '"event":"job_retry".*"run_id":"'"$id"'"' "$T/m1.out" && fail "a manual run was retried"
# A manual run that works: on_success, once.
id2=$("$B" trigger -c "$T/m1.yaml" fine --wait 2>"$T/m-trig2.err") \
    || fail "trigger fine --wait: exit $?: $(cat "$T/m-trig2.err")"
wait_for_line "$T/m1.out" '"event":"hook_end".*"run_id":"'"$id2"'"' 5 >/dev/null
grep -qx 'BATON_TRIGGER=manual' "$T/hooks/$id2.on_success/env" &&
    grep -qx 'BATON_OUTCOME=ok' "$T/hooks/$id2.on_success/env" \
    || fail "the manual run's on_success environment: $(cat "$T/hooks/$id2.on_success/env")"
# The manual run's record keeps its output, like a tick's.
"$B" history -c "$T/m1.yaml" flaky --output "$id" > "$T/m-output.txt" 2>"$T/m-output.err" \
    || fail "history --output $id: exit $?: $(cat "$T/m-output.err")"
assert_eq "$(printf 'manual manual\noops')" "$(cat "$T/m-output.txt")" "history --output of the manual run"
rec=$("$B" history -c "$T/m1.yaml" flaky --json)
printf '%s' "$rec" | grep -q '"run_id":"'"$id"'"[^}]*"trigger":"manual"[^}]*"outcome":"failed","exit_code":5,"output_bytes":19,' \
    || fail "the manual run's record: $rec"
# Ticks fell while paused (2 s: at least two of them): none ran, none was
# hooked.
sleep 2
grep -q '"event":"job_start".*"job":"flaky".*"trigger":"\(schedule\|catchup\|retry\)"' "$T/m1.out" \
    && fail "a tick of the paused job ran"
assert_eq "$id on_failure m1
$id2 on_success m1" "$(cat "$T/hooks.log")" "hooks while flaky was paused (the two manual runs only)"
# The resume records them as skipped (reason paused); still no hook for them.
"$B" resume -c "$T/m1.yaml" flaky >/dev/null || fail "resume: exit $?"
wait_for_line "$T/m1.out" '"event":"job_resumed".*"job":"flaky"' 8 >/dev/null
skipped=
for _ in $(seq 1 100); do
    skipped=$("$B" history -c "$T/m1.yaml" flaky --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["outcome"] == "skipped" and "paused" in r.get("reason", ""):
        print(r["scheduled_at"], r["until"], r["ticks"])
        break')
    [ -n "$skipped" ] && break
    sleep 0.05
done
[ -n "$skipped" ] || fail "no skipped record for the paused ticks: $("$B" history -c "$T/m1.yaml" flaky --json)"
set -- $skipped
[ "$3" -ge 2 ] || fail "only $3 paused ticks recorded ($skipped): $("$B" history -c "$T/m1.yaml" flaky -n 10)"
# Ticks run again after the resume (they fail, retry, and are hooked):
# every hook belongs to a run that ran, none to a paused tick.
wait_for_line "$T/m1.out" '"event":"hook_end".*"job":"flaky".*"hook":"on_failure"' 8 >/dev/null
sleep 0.5
kill -TERM "$(pid_of m1)"; wait_exit m1 10
assert_eq 0 "$EXIT_CODE" "m1's exit status"
first=$(date -u -d "$1" +%s); last=$(date -u -d "$2" +%s)
while read -r hid hook node; do
    grep -q '"event":"job_end".*"run_id":"'"$hid"'"' "$T/m1.out" || fail "a hook of $hid, which did not run"
    [ "$hid" = "$id" ] || [ "$hid" = "$id2" ] && continue
    at=$(date -u -d "$(sed -n 's/^BATON_SCHEDULED_AT=//p' "$T/hooks/$hid.$hook/env")" +%s)
    [ "$at" -lt "$first" ] || [ "$at" -gt "$last" ] || fail "a hook of $hid for a paused tick ($at in $first..$last)"
done < "$T/hooks.log"
assert_eq 0 "$(awk '{print $1}' "$T/hooks.log" | sort | uniq -d | wc -l)" "runs whose hook ran twice"
note "  $3 paused ticks skipped, no hook; manual runs $id (failed) and $id2 (ok) hooked once; $(wc -l < "$T/hooks.log") hooks in all"
note "ok"
