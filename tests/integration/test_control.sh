# test_control.sh -- the HTTP control API (http.control) against two real
# supervisors and a real redis-server: tokens made by `baton token new`;
# every endpoint with an operate token; a read token on a POST (403) and
# on a GET (200); no token and a wrong one (401, the same body); a burst
# of wrong tokens (429, Retry-After) while the probes stay open; the same
# idempotency id twice (one run); a trigger sent to the follower (runs
# once, on the leader); /healthz answering while a trigger waits; the
# audit line and the pause's "by" in `baton status`; a revoked token
# refused after SIGHUP; bad bodies, paths and methods (400, 404, 405, 413).
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v curl >/dev/null || fail "curl is not installed"

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: hello
    schedule: "0 0 0 1 1 *"
    command: ["sh", "-c", "echo ran on $BATON_NODE; exit 3"]
  - name: slow
    schedule: "0 0 0 1 1 *"
    command: ["sleep", "3"]
EOF
TOK=$T/tokens
OP=$("$B" token new ops-bot --role operate --file "$TOK") || fail "token new"
RO=$("$B" token new grafana --role read --file "$TOK") || fail "token new (read)"
assert_eq 600 "$(stat -c %a "$TOK")" "the tokens file's mode"
grep -qF -- "$OP" "$TOK" && fail "the token itself is in the file"

redis_start
P1=$(free_port); P2=$(free_port)
node_config n1 ctl "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P1\", control: true, tokens_file: $TOK}"
node_config n2 ctl "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P2\", control: true, tokens_file: $TOK}"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"transition".*"to":"working"' 10 >/dev/null
spawn n2 "$B" run -c "$T/n2.yaml"
wait_for_line "$T/n2.out" '"event":"http_listening"' 10 >/dev/null
L=http://127.0.0.1:$P1 F=http://127.0.0.1:$P2
AUTH=(-H "Authorization: Bearer $OP")
# call METHOD URL [CURL ARGS...]: "<status> <body>"
call() {
    local m=$1 u=$2; shift 2
    local o; o=$(curl -s -m 70 -X "$m" -w '\n%{http_code}' "$@" "$u" | tr -d '\n' || true)
    printf '%s %s\n' "${o: -3}" "${o:0:${#o}-3}"
}
code() { curl -s -m 10 -o /dev/null -w '%{http_code}' "$@" || true; }

# Authentication.
r1=$(call GET "$L/status"); r2=$(call GET "$L/status" -H "Authorization: Bearer bt_wrong")
assert_eq "$r1" "$r2" "no token and a wrong one answer alike"
assert_eq 401 "${r1%% *}" "no token"
assert_eq 200 "$(code "$L/healthz")" "/healthz without a token"
assert_eq 200 "$(code "$L/readyz")" "/readyz without a token"
assert_eq 200 "$(code -H "Authorization: Bearer $RO" "$L/status")" "a read token on GET /status"
assert_eq 403 "$(code -X POST -H "Authorization: Bearer $RO" "$L/jobs/hello/pause")" "a read token on POST"
assert_eq 200 "$(code -H "Authorization: Bearer $RO" "$L/jobs/hello/runs")" "a read token on GET runs"
note "401 alike for none and wrong; probes open; read token 403 on POST"

# Idempotency: one id twice, one run; sent to the follower, run on the leader.
a=$(call POST "$F/jobs/hello/trigger" "${AUTH[@]}" -d '{"id":"once-1","wait":10}')
b=$(call POST "$F/jobs/hello/trigger" "${AUTH[@]}" -d '{"id":"once-1","wait":10}')
assert_eq 200 "${a%% *}" "trigger with wait: $a"
grep -q '"created":true' <<<"$a" || fail "first trigger not created: $a"
grep -q '"created":false' <<<"$b" || fail "second trigger created again: $b"
grep -q '"node":"n1"' <<<"$a" || fail "the run was not on the leader n1: $a"
grep -q '"exit_code":3' <<<"$a" || fail "the exit status is not reported: $a"
assert_eq 1 "$(rcli xlen 'baton:{ctl}:runs:hello')" "runs recorded for one id asked twice"
out=$(call GET "$F/runs/once-1/output" "${AUTH[@]}")
grep -q 'ran on n1' <<<"$out" || fail "output: $out"
note "one id twice: one run, on the leader, asked of the follower"

# /healthz answers while a trigger waits on the same node.
(call POST "$L/jobs/slow/trigger" "${AUTH[@]}" -d '{"wait":10}' > "$T/slow") &
slow=$!
sleep 0.5
t0=$(now_ms)
assert_eq 200 "$(code "$L/healthz")" "/healthz during a waiting trigger"
[ $(( $(now_ms) - t0 )) -lt 1000 ] || fail "/healthz took $(( $(now_ms) - t0 )) ms during a trigger's wait"
wait $slow
grep -q '^200 .*"outcome":"ok"' "$T/slow" || fail "slow trigger: $(cat "$T/slow")"
note "probes answer while a trigger waits"

# Pause and resume (with a reason showing who), all, step-down.
r=$(call POST "$F/jobs/hello/pause" "${AUTH[@]}" -d '{"reason":"<script>x</script> freeze"}')
assert_eq 200 "${r%% *}" "pause: $r"
"$B" status -c "$T/n1.yaml" > "$T/status" 2>&1 || true
grep -q 'by ops-bot (token) from 127.0.0.1: <script>x</script> freeze' "$T/status" \
    || fail "baton status does not say who paused: $(grep -i paus "$T/status")"
runs_before=$(rcli xlen 'baton:{ctl}:runs:hello')
assert_eq 200 "$(code -X POST "${AUTH[@]}" "$F/jobs/hello/pause")" "a second pause (changes nothing)"
assert_eq 200 "$(code -X POST "${AUTH[@]}" "$L/jobs/hello/resume")" "resume"
assert_eq 200 "$(code -X POST "${AUTH[@]}" "$L/pause-all" -d '{"reason":"all"}')" "pause-all"
assert_eq 200 "$(code -X POST "${AUTH[@]}" "$L/resume-all" -d '{"catchup":true}')" "resume-all"
# Each is in the job's history, who and why, whichever node took it; the
# second pause is not (it changed nothing); pause-all and resume-all are
# one record each, shown in the history of every job; none is a run.
"$B" history -c "$T/n1.yaml" hello -n 50 > "$T/hist" 2>&1 || fail "history: $(cat "$T/hist")"
h() { grep -cE "^[0-9T:-]+Z +(- +){5}$1\$" "$T/hist"; }
assert_eq 1 "$(h 'paused by ops-bot \(token\) from 127\.0\.0\.1: <script>x</script> freeze')" \
    "the pause in baton history: $(grep -E 'paused|resumed' "$T/hist")"
assert_eq 1 "$(h 'resumed by ops-bot \(token\) from 127\.0\.0\.1')" "the resume in baton history"
assert_eq 1 "$(h 'paused every job by ops-bot \(token\) from 127\.0\.0\.1: all')" "pause-all in baton history"
assert_eq 1 "$(h 'resumed every job by ops-bot \(token\) from 127\.0\.0\.1 \(catch-up\)')" \
    "resume-all in baton history"
"$B" history -c "$T/n1.yaml" slow -n 50 | grep -cE 'paused every job by ops-bot|resumed every job by ops-bot' \
    | grep -qx 2 || fail "pause-all and resume-all are not in the history of slow"
assert_eq "$runs_before" "$(rcli xlen 'baton:{ctl}:runs:hello')" "runs recorded by pausing and resuming"
r=$(call GET "$L/jobs/hello/runs?count=10" "${AUTH[@]}")
python3 - "${r#* }" >"$T/py.out" 2>&1 <<'PY' || fail "GET runs: $(cat "$T/py.out"): $r"
import json, sys
d = json.loads(sys.argv[1])
assert all("kind" not in x and "outcome" in x for x in d["runs"]), d["runs"]
got = [(p["kind"], p["job"], p["all"]) for p in d["pauses"]]
assert got == [("resume", None, True), ("pause", None, True), ("resume", "hello", False),
               ("pause", "hello", False)], got
assert d["pauses"][3]["reason"] == "<script>x</script> freeze" and d["pauses"][2]["catchup"] is False
assert d["pauses"][0]["catchup"] is True
assert d["pauses"][3]["by"] == "ops-bot (token) from 127.0.0.1", d["pauses"][3]
PY
"$B" history -c "$T/n1.yaml" hello -n 50 --json | python3 -c '
import json, sys
kinds = [r.get("kind", "run") for r in json.load(sys.stdin)]
assert kinds.count("pause") == 2 and kinds.count("resume") == 2, kinds' || fail "history --json kinds"
r=$(call POST "$F/step-down" "${AUTH[@]}" -d '{"wait":10}')
assert_eq 200 "${r%% *}" "step-down: $r"
grep -q '"old_leader":{"node":"n1"' <<<"$r" || fail "step-down: $r"
for i in $(seq 1 50); do grep -q '"event":"api_call".*"action":"step-down"' "$T/n2.out" && break; sleep 0.1; done
grep -q '"event":"api_call","node":"n2","group":"ctl","token":"ops-bot","action":"pause","job":"hello","remote":"127.0.0.1","status":200,"result":"ok"' "$T/n2.out" \
    || fail "no audit line for the pause: $(grep api_call "$T/n2.out")"
grep -qF -- "$OP" "$T/n1.out" "$T/n2.out" "$T/n1.err" "$T/n2.err" && fail "a token is in a log"
note "pause (who, in baton status), resume, pause-all, resume-all, step-down; audit lines"

# Bad input: each gets its status.
bad() { # STATUS METHOD PATH [CURL ARGS...]
    local want=$1 m=$2 p=$3; shift 3
    local got; got=$(call "$m" "$L$p" "${AUTH[@]}" "$@")
    assert_eq "$want" "${got%% *}" "$m $p $*: $got"
    printf '%s %s %s -> %s\n' "$m" "$p" "$*" "$got" >> "$T/bad-inputs"
}
bad 405 GET /jobs/hello/trigger
bad 405 DELETE /step-down
bad 405 PUT /jobs/hello/runs
bad 404 POST /jobs/nope/trigger
bad 404 GET /no/such/path
bad 400 POST '/jobs/bad%20name/pause'
bad 400 POST /jobs/hello/trigger -d 'not json'
bad 400 POST /jobs/hello/trigger -d '[1,2]'
bad 400 POST /jobs/hello/trigger -d '{"id":"../x"}'
bad 400 POST /jobs/hello/trigger -d '{"wait":61}'
bad 400 POST /jobs/hello/trigger -d '{"wait":"5"}'
bad 400 POST /jobs/hello/pause -d '{"reason":5}'
bad 400 POST /jobs/hello/resume -d '{"catchup":"yes"}'
bad 400 POST /jobs/hello/resume -d '{"extra":1}'
bad 400 GET '/jobs/hello/runs?count=0'
bad 400 GET '/jobs/hello/runs?count=abc'
bad 400 GET /runs/1234-0/output
bad 404 GET '/runs/nope/output?job=hello'
head -c 9000 /dev/zero | tr '\0' a > "$T/big"
bad 413 POST /jobs/hello/pause --data-binary "@$T/big"
assert_eq 401 "$(code -H "Authorization: Basic Zm9vOmJhcg==" "$L/status")" "Basic auth"
assert_eq 401 "$(code -H "Authorization: Bearer" "$L/status")" "an empty bearer"
assert_eq 401 "$(code -H "Authorization: Bearer $OP x" "$L/status")" "a token with a tail"
note "bad input: $(wc -l < "$T/bad-inputs") cases, each with its status"

# SIGHUP reads the tokens again: a revoked token is refused.
"$B" token revoke grafana --file "$TOK" 2>/dev/null || fail "revoke"
kill -HUP "$(pid_of n1)"
wait_for_line "$T/n1.out" '"event":"reloaded"' 10 >/dev/null
assert_eq 401 "$(code -H "Authorization: Bearer $RO" "$L/status")" "a revoked token after SIGHUP"
assert_eq 200 "$(code "${AUTH[@]}" "$L/status")" "the other token after SIGHUP"
note "SIGHUP: a revoked token is refused"

# A burst of wrong tokens: 429 with Retry-After; probes stay open.
codes=""
for i in $(seq 1 12); do codes+="$(code -H "Authorization: Bearer bt_guess$i" "$F/status") "; done
assert_eq "401 401 401 401 401 401 401 401 401 401 429 429 " "$codes" "a burst of wrong tokens"
curl -s -m 5 -D - -o /dev/null -H "Authorization: Bearer bt_guess13" "$F/status" \
    | grep -qi '^Retry-After: [0-9]' || fail "no Retry-After while refused"
assert_eq 200 "$(code "$F/healthz")" "/healthz while the address is refused"
# The refusal is of wrong tokens, not of the address: another client behind
# it (a shared NAT) with a valid token is served; none or a wrong one is not.
assert_eq 200 "$(code "${AUTH[@]}" "$F/status")" "a valid token from the refused address"
assert_eq 200 "$(code -H "Authorization: Bearer $RO" "$F/jobs/hello/runs")" \
    "a valid read token on GET runs from the refused address"
r=$(call POST "$F/jobs/hello/pause" "${AUTH[@]}" -d '{"reason":"from behind the NAT"}')
assert_eq 200 "${r%% *}" "a POST with a valid token from the refused address: $r"
assert_eq 200 "$(code -X POST "${AUTH[@]}" "$F/jobs/hello/resume")" "resume from the refused address"
assert_eq 429 "$(code "$F/status")" "no token from the refused address"
assert_eq 429 "$(code -H "Authorization: Bearer bt_guess14" "$F/status")" \
    "a wrong token from the refused address"
printf 'GET /status (valid token, refused address) -> %s\n' "$(code "${AUTH[@]}" "$F/status")" >> "$T/bad-inputs"
printf 'GET /status (no token, refused address) -> %s\n' "$(code "$F/status")" >> "$T/bad-inputs"
note "a burst of wrong tokens: 429 (Retry-After) for wrong and no tokens; a valid token served; probes still open"

cp "$T/bad-inputs" "${BATON_BUILD_DIR:-$T}/control-bad-inputs.txt" 2>/dev/null || true
