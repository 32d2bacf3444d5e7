# test_http.sh -- baton run's HTTP endpoint (http.listen) on three real
# supervisors and a real redis-server: every endpoint, during a graceful
# handover too; promtool on /metrics; /status is `baton status --json`'s
# document, a pause included (the page and /metrics say it too, on the
# leader and on a follower; a trigger is counted); bad requests (404, 405,
# 414, 431, HEAD); a Unix socket; an address in use; slow clients that do
# not starve the others; a bad reload (one error line whatever log.level,
# the running set kept, the metrics say so); every descriptor of baton run
# close-on-exec.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
for tool in curl jq promtool; do
    command -v $tool >/dev/null || fail "$tool is not installed (bash deploy/setup.sh --deps-only installs it)"
done
[ -x "${BATON_SLOWLORIS:-}" ] || fail "BATON_SLOWLORIS is not set (run the test through ctest)"

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    command: ["true"]
  - name: flaky
    schedule: "*/2 * * * * *"
    shell: "exit 3"
EOF
cp "$T/jobs.yaml" "$T/jobs.good"

# node_config NAME LISTEN [EXTRA]: writes $T/NAME.yaml
node_config() {
    cat > "$T/$1.yaml" <<EOF
node: $1
redis: $REDIS_URL
group: web
lease: {ttl: 2s}
redis_timeout: 300ms
poll: 1s
shutdown_grace: 2s
jobs: $T/jobs.yaml
http: {listen: "$2"}
${3:-}
EOF
}
leader() { rcli get 'baton:{web}:leader' 2>/dev/null | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() { # wait_leader TIMEOUT_S [NOT_THIS_NODE]
    local deadline=$(( $(now_ms) + $1 * 1000 )) l
    while :; do
        l=$(leader)
        if [ -n "$l" ] && [ "$l" != "${2:-}" ]; then echo "$l"; return 0; fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "no new leader within $1 s (still: '$l')"
        sleep 0.02
    done
}
declare -A ADDR=()
# http_addr NAME: the address NAME's server bound (from its http_listening line)
http_addr() {
    wait_for_line "$T/$1.out" '"event":"http_listening"' 10 | sed 's/.*"listen":"\([^"]*\)".*/\1/'
}
# fetch NAME PATH: the body into $T/body, the status into CODE
fetch() {
    rm -f "$T/body"
    CODE=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' "http://${ADDR[$1]}$2") || CODE=000
    touch "$T/body"
}
# get NAME PATH: prints the body (the status is lost: use fetch for it)
get() { fetch "$1" "$2"; cat "$T/body"; }
# wait_body NAME PATH REGEX TIMEOUT_S: until the body matches; CODE is its status
wait_body() {
    local deadline=$(( $(now_ms) + $4 * 1000 ))
    while :; do
        fetch "$1" "$2"
        if grep -qE -- "$3" "$T/body"; then return 0; fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "$1 $2 never matched /$3/ within $4 s; last ($CODE): $(head -c 300 "$T/body")"
        sleep 0.05
    done
}
metric() { # metric NAME SERIES: its value ("" if absent)
    get "$1" /metrics | awk -v s="$2" '$1 == s {print $2}'
}

redis_start
node_config n1 127.0.0.1:0
"$B" check -c "$T/n1.yaml" >"$T/check.out" 2>&1 || fail "baton check refuses http.listen: $(cat "$T/check.out")"
grep -qx 'http.listen: "\?127.0.0.1:0"\?' "$T/check.out" || fail "baton check does not show http.listen: $(grep http "$T/check.out")"
node_config n2 127.0.0.1:0
# The CLI's own configuration: the group's, with a redis_timeout that a
# loaded machine (an ASan build among others' jobs) does not run out of.
node_config cli off
sed -i 's/^redis_timeout: .*/redis_timeout: 5s/; s/^lease: .*/lease: {ttl: 20s}/; s/^poll: .*/poll: 5s/' "$T/cli.yaml"
N3_PORT=$(free_port)
node_config n3 "127.0.0.1:$N3_PORT" "log: {level: error}"
# n1 leads first: the checks of the leader's log need its info lines, which
# n3 (log.level error) does not write.
spawn n1 "$B" run -c "$T/n1.yaml"
L1=$(wait_leader 10)
assert_eq n1 "$L1" "the first leader"
for n in n2 n3; do spawn $n "$B" run -c "$T/$n.yaml"; done
ADDR[n1]=$(http_addr n1)
ADDR[n2]=$(http_addr n2)
ADDR[n3]=127.0.0.1:$N3_PORT # log.level error: no http_listening line
note "leader $L1; endpoints at n1=${ADDR[n1]} n2=${ADDR[n2]} n3=${ADDR[n3]}"
# libmicrohttpd is opened for http.listen, not linked (src/common/dynlib.h)
grep -q '/libmicrohttpd\.so' "/proc/$(pid_of n1)/maps" || fail "n1 serves HTTP without libmicrohttpd mapped?"

note "healthz and readyz on every node"
for n in n1 n2 n3; do
    wait_body $n /healthz '^ok: the event loop turned' 5
    assert_eq 200 "$CODE" "$n /healthz"
    if [ "$n" = "$L1" ]; then
        wait_body $n /readyz "^ready: leader of group web, term [0-9]+" 5
    else
        wait_body $n /readyz "^ready: follower of $L1, term [0-9]+" 5
    fi
    assert_eq 200 "$CODE" "$n /readyz"
done

note "/status is baton status --json's document, from the node's own view"
F1=$(for n in n1 n2 n3; do [ "$n" != "$L1" ] && echo $n; done | head -n1)
wait_body "$F1" /status '"nodes":\[\{"node":[^{]*("labels":\[[^]]*\][^{]*)?\},\{"node":[^{]*("labels":\[[^]]*\][^{]*)?\},\{"node"' 10 # all three nodes listed (each has its labels array)
fetch "$F1" /status
[ "$CODE" = 200 ] || fail "/status: $CODE"
cp "$T/body" "$T/http-status.json"
"$B" status --json -c "$T/cli.yaml" > "$T/cli-status.json" || fail "baton status --json failed"
for q in 'del(.view) | keys' '.leader.node' '.term' '[.nodes[].node] | sort' \
         '[.jobs[] | {name, schedule, timezone, enabled}]' '.group' '.redis' \
         '[.nodes[] | keys] | unique' '[.jobs[] | keys] | unique'; do
    assert_eq "$(jq -c "$q" "$T/cli-status.json")" "$(jq -c "$q" "$T/http-status.json")" "/status vs baton status --json: $q"
done
assert_eq "$F1" "$(jq -r .view.node "$T/http-status.json")" "/status view.node"
assert_eq true "$(jq -r .view.ready "$T/http-status.json")" "/status view.ready"
curl -s -D "$T/headers" -o /dev/null "http://${ADDR[$F1]}/status"
grep -qi '^Content-Type: application/json' "$T/headers" || fail "/status content type: $(cat "$T/headers")"
wait_body "$F1" /status '"last_run":\{"id"' 10 # the followers show the leader's runs too

note "/metrics: promtool check metrics, and what each node says"
sleep 2 # a few runs on the leader
for n in n1 n2 n3; do
    fetch $n /metrics
    assert_eq 200 "$CODE" "$n /metrics"
    cp "$T/body" "$T/metrics-$n.txt"
    promtool check metrics < "$T/metrics-$n.txt" > "$T/promtool-$n.txt" 2>&1 \
        || fail "promtool check metrics on $n: $(cat "$T/promtool-$n.txt")"
    [ -s "$T/promtool-$n.txt" ] && fail "promtool has remarks on $n: $(cat "$T/promtool-$n.txt")"
    for fam in baton_state baton_is_leader baton_term baton_lease_remaining_seconds \
               baton_transitions_total baton_redis_errors_total baton_job_runs_total \
               baton_job_last_run_timestamp_seconds baton_job_last_success_timestamp_seconds \
               baton_job_run_duration_seconds baton_job_start_lateness_seconds \
               baton_ticks_not_run_total baton_lock_acquired_total baton_lock_held \
               baton_lock_acquire_wait_seconds baton_claim_ahead_seconds \
               process_cpu_seconds_total; do
        grep -q "^# TYPE $fam " "$T/metrics-$n.txt" || fail "$n /metrics lacks $fam"
        grep -q "^# HELP $fam " "$T/metrics-$n.txt" || fail "$n /metrics lacks HELP for $fam"
    done
    [ "$n" = "$L1" ] && want=1 || want=0
    assert_eq "$want" "$(awk '$1 == "baton_is_leader" {print $2}' "$T/metrics-$n.txt")" "$n baton_is_leader"
    [ "$n" = "$L1" ] && st=working || st=waiting
    grep -qx "baton_state{state=\"$st\"} 1" "$T/metrics-$n.txt" || fail "$n is not one-hot $st"
    assert_eq 1 "$(grep -c '^baton_state{.*} 1$' "$T/metrics-$n.txt")" "$n states at 1"
done
note "  promtool check metrics: no remarks on any node"
cp "$T/metrics-$L1.txt" "$T/metrics-leader.txt"
ok=$(awk '$1 == "baton_job_runs_total{job_name=\"tick\",outcome=\"ok\"}" {print $2}' "$T/metrics-$L1.txt")
[ "${ok:-0}" -ge 1 ] || fail "the leader counts no ok run of tick"
failed=$(awk '$1 == "baton_job_runs_total{job_name=\"flaky\",outcome=\"failed\"}" {print $2}' "$T/metrics-$L1.txt")
[ "${failed:-0}" -ge 1 ] || fail "the leader counts no failed run of flaky"
grep -q '^baton_job_last_success_timestamp_seconds{job_name="tick"} 1[0-9]\{9\}' "$T/metrics-$L1.txt" \
    || fail "no last success timestamp for tick"
grep -q '^baton_job_last_success_timestamp_seconds{job_name="flaky"}' "$T/metrics-$L1.txt" \
    && fail "flaky never succeeded but has a last success timestamp"
lateness=$(awk '$1 == "baton_job_start_lateness_seconds_count{trigger=\"schedule\"}" {print $2}' "$T/metrics-$L1.txt")
[ "${lateness:-0}" -ge 2 ] || fail "no lateness observations on the leader"
terms=$(for n in n1 n2 n3; do awk '$1 == "baton_term" {print $2}' "$T/metrics-$n.txt"; done | sort -u | wc -l)
assert_eq 1 "$terms" "nodes agreeing on the term"
# The metrics count what the log says: job_end lines of tick, as of the scrape.
logged=$(grep -c '"event":"job_end".*"job":"tick".*"outcome":"ok"' "$T/$L1.out")
[ "$logged" -ge "$ok" ] || fail "more ok runs counted ($ok) than logged ($logged)"

note "the scrape config and alert rules of deploy/operations.md pass promtool"
awk '/^# prometheus.yml$/ {on = 1; next} /^# rules.yml$/ {on = 0} on' "$BATON_SOURCE_DIR/deploy/operations.md" > "$T/prometheus.yml"
awk '/^# rules.yml$/ {on = 1; next} on && /^```/ {exit} on' "$BATON_SOURCE_DIR/deploy/operations.md" > "$T/rules.yml"
grep -q 'scrape_configs:' "$T/prometheus.yml" && grep -q 'alert: BatonLeaderless' "$T/rules.yml" \
    || fail "the Prometheus block of deploy/operations.md was not found"
promtool check config --syntax-only "$T/prometheus.yml" > "$T/promtool-config.txt" 2>&1 \
    || fail "promtool check config on the scrape config of deploy/operations.md: $(cat "$T/promtool-config.txt")"
promtool check rules "$T/rules.yml" > "$T/promtool-rules.txt" 2>&1 \
    || fail "promtool check rules on the rules of deploy/operations.md: $(cat "$T/promtool-rules.txt")"

note "a graceful handover while clients poll every endpoint of the followers"
F2=$(for n in n1 n2 n3; do [ "$n" != "$L1" ] && [ "$n" != "$F1" ] && echo $n; done)
poll_http() { # poll_http NAME: "ms path code [leader]" lines, one curl per round
    local n=$1 a=${ADDR[$1]} out t leader
    while :; do
        out=$(curl -s -m 2 -w '%{url_effective} %{http_code}\n' -o /dev/null "http://$a/healthz" \
                   -o /dev/null "http://$a/readyz" -o "$T/poll-$n.body" "http://$a/status" \
                   -o /dev/null "http://$a/metrics" -o /dev/null "http://$a/")
        leader=$(grep -o '"leader":\({"node":"[^"]*"\|null\)' "$T/poll-$n.body" 2>/dev/null | sed 's/.*"node":"//; s/"$//; s/.*null/-/')
        grep -q '"view":{' "$T/poll-$n.body" 2>/dev/null || leader=BADJSON
        t=$(now_ms) # when the round ended: its answers were made before
        echo "$out" | sed "s|http://$a/ |http://$a/page |; s|http://$a||" | while read -r p code; do
            [ "$p" = /status ] && echo "$t $p $code $leader" || echo "$t $p $code"
        done
        rm -f "$T/poll-$n.body"
        sleep 0.02
    done
}
poll_http "$F1" > "$T/poll-$F1.txt" & P1=$!
poll_http "$F2" > "$T/poll-$F2.txt" & P2=$!
# polls_of FILE [REGEX]: /status rounds logged (that match)
polls_of() { grep ' /status ' "$1" 2>/dev/null | grep -cE -- "${2:-.}"; }
deadline=$(( $(now_ms) + 10000 ))
until [ "$(polls_of "$T/poll-$F1.txt")" -ge 2 ] && [ "$(polls_of "$T/poll-$F2.txt")" -ge 2 ]; do
    [ "$(now_ms)" -lt $deadline ] || fail "the pollers do not poll"
    sleep 0.05
done
t0=$(now_ms)
kill -TERM "$(pid_of "$L1")"
L2=$(wait_leader 5 "$L1")
deadline=$(( $(now_ms) + 10000 ))
until [ "$(polls_of "$T/poll-$F1.txt" " $L2\$")" -ge 3 ] && [ "$(polls_of "$T/poll-$F2.txt" " $L2\$")" -ge 3 ]; do
    [ "$(now_ms)" -lt $deadline ] || break
    sleep 0.05
done
kill $P1 $P2; wait $P1 $P2 2>/dev/null
wait_exit "$L1" 10
assert_eq 0 "$EXIT_CODE" "$L1's exit status after SIGTERM"
note "  $L2 leads now"
for n in "$F1" "$F2"; do
    f=$T/poll-$n.txt
    bad=$(awk '$3 != 200' "$f" | head -n 3)
    [ -z "$bad" ] || fail "$n answered other than 200 during the handover: $bad"
    grep -q ' BADJSON$' "$f" && fail "$n served invalid JSON at /status"
    before=$(awk -v t=$t0 '$2 == "/status" && $1 < t {l = $4} END {print l}' "$f")
    assert_eq "$L1" "$before" "$n's /status leader before the SIGTERM"
    switched=$(awk -v l="$L2" '$2 == "/status" && $4 == l {print $1; exit}' "$f")
    [ -n "$switched" ] || fail "$n's /status never showed $L2"
    after=$(awk -v t="$switched" '$2 == "/status" && $1 >= t {print $4}' "$f" | sort -u | tr '\n' ' ')
    assert_eq "$L2 " "$after" "$n's /status leader once it changed"
    for p in /healthz /readyz /status /metrics /page; do
        [ "$(awk -v p=$p '$2 == p' "$f" | wc -l)" -ge 3 ] || fail "$n: $p was not polled during the handover"
    done
    note "  $n: /status showed $L2 $(( switched - t0 )) ms after the SIGTERM; /, /healthz, /readyz and /metrics 200 throughout"
    [ $(( switched - t0 )) -lt 2000 ] || fail "$n took $(( switched - t0 )) ms to show the new leader"
done
curl -s -m 2 "http://${ADDR[$L1]}/healthz" >/dev/null && fail "$L1 still serves after it exited"
wait_body "$L2" /readyz "^ready: leader of group web" 3
grep -q '^baton_transitions_total{from="acquiring",to="working",trigger="acquired"} 1$' <(get "$L2" /metrics) \
    || fail "$L2's metrics do not count its acquired transition"
get "$L2" /metrics | promtool check metrics >/dev/null 2>&1 || fail "promtool after the handover"

note "baton pause, trigger and resume: /status says what baton status --json says, so do the page and /metrics"
F3=$(for n in n1 n2 n3; do [ "$n" != "$L1" ] && [ "$n" != "$L2" ] && echo $n; done)
"$B" pause -c "$T/cli.yaml" --reason "db <migration>" flaky > "$T/pause.out" 2>&1 || fail "baton pause: $(cat "$T/pause.out")"
for n in "$L2" "$F3"; do # the leader sees it in its log; the follower reads it (every poll)
    wait_body $n /metrics '^baton_job_paused\{job_name="flaky"\} 1$' 5
    grep -qx 'baton_job_paused{job_name="tick"} 0' "$T/body" || fail "$n: tick is not shown unpaused"
    wait_body $n /status '"paused":\{"since"' 5
    "$B" status --json -c "$T/cli.yaml" > "$T/cli-paused.json" || fail "baton status --json failed"
    q='[.jobs[] | {name, paused}]'
    assert_eq "$(jq -c "$q" "$T/cli-paused.json")" "$(jq -c "$q" "$T/body")" "$n: /status vs baton status --json: $q"
    assert_eq '"db <migration>"' "$(jq -c '.jobs[] | select(.name == "flaky") | .paused.reason' "$T/body")" "$n: the pause's reason"
    fetch $n /
    grep -q '<li><b>flaky</b> <span class="warn">paused</span> since [0-9T:.-]*Z by [^ ]*: db &lt;migration&gt;</li>' "$T/body" \
        || fail "$n: the page does not say flaky is paused: $(grep -o '<ul id="paused">.*' "$T/body" | head -c 300)"
    grep -q '<td>tick</td>.*<td><span title="[^"]*">in ' "$T/body" || fail "$n: tick is shown paused"
done
# The leader's runner saw it too (counted whatever log.level: L2 may be n3).
wait_body "$L2" /metrics '^baton_events_total\{event="job_paused"\} [1-9]' 5
"$B" trigger -c "$T/cli.yaml" -w tick > "$T/trigger.out" 2>&1 || fail "baton trigger -w tick: $(cat "$T/trigger.out")"
wait_body "$L2" /metrics '^baton_triggers_total\{job_name="tick",outcome="received"\} 1$' 5
grep -qx 'baton_events_total{event="trigger_received"} 1' "$T/body" || fail "no trigger_received in baton_events_total"
grep -qx 'baton_triggers_total{job_name="flaky",outcome="received"} 0' "$T/body" || fail "flaky has no triggers series"
"$B" resume -c "$T/cli.yaml" flaky > "$T/resume.out" 2>&1 || fail "baton resume: $(cat "$T/resume.out")"
for n in "$L2" "$F3"; do
    wait_body $n /metrics '^baton_job_paused\{job_name="flaky"\} 0$' 5
    wait_body $n /status '"name":"flaky",[^}]*\}?[^]]*"paused":null' 5
done
get "$L2" /metrics | promtool check metrics >/dev/null 2>&1 || fail "promtool with triggers and pauses"

note "bad requests: 405, 404, 414, 431; HEAD"
code=$(curl -s -o /dev/null -D "$T/h405" -w '%{http_code}' -X POST -d x=1 "http://${ADDR[$L2]}/metrics")
assert_eq 405 "$code" "POST /metrics"
grep -qi '^Allow: GET, HEAD' "$T/h405" || fail "405 without Allow: $(cat "$T/h405")"
for m in PUT DELETE PATCH OPTIONS; do
    assert_eq 405 "$(curl -s -o /dev/null -w '%{http_code}' -X $m "http://${ADDR[$L2]}/status")" "$m /status"
done
assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/nope")" "GET /nope"
assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/metrics/x")" "GET /metrics/x"
long=$(head -c 3000 /dev/zero | tr '\0' a)
assert_eq 414 "$(curl -s -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/$long")" "a 3000-byte URI"
long=$(head -c 40000 /dev/zero | tr '\0' a)
assert_eq 414 "$(curl -s -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/$long")" "a 40000-byte URI"
assert_eq 431 "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $long" "http://${ADDR[$L2]}/healthz")" "a 40 kB header"
size=$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "http://${ADDR[$L2]}/metrics")
assert_eq "200 0" "$size" "HEAD /metrics"
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/status?x=1")" "a query string is ignored"
# Keep-alive: two requests on one connection.
curl -sv "http://${ADDR[$L2]}/healthz" "http://${ADDR[$L2]}/readyz" 2>&1 | grep -q 'Re-using existing connection' \
    || fail "the server closes every connection after one request"

note "slow clients (one address, 40 connections trickling headers) do not starve the others"
port=${ADDR[$L2]##*:}
spawn slow "$BATON_SLOWLORIS" 127.0.0.1 "$port" 127.0.0.2 40 25
wait_for_line "$T/slow.out" '^open 40' 10 >/dev/null
sleep 0.5
for i in 1 2 3 4 5; do
    t=$(now_ms)
    assert_eq 200 "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/healthz")" "/healthz under slow clients"
    t=$(( $(now_ms) - t ))
    [ "$t" -lt 1500 ] || fail "/healthz took $t ms while slow clients held connections"
done
assert_eq 200 "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://${ADDR[$L2]}/status")" "/status under slow clients"
wait_for_line "$T/slow.out" '^held' 30 > "$T/slow.result"
read -r _ held _ cut _ max < "$T/slow.result"
note "  slow clients: $held held open, $cut cut, the longest $max ms"
[ "$held" -ge 1 ] && [ "$held" -le 16 ] || fail "held $held slow connections (per-address limit 16)"
assert_eq 40 "$cut" "slow connections closed by the server"
[ "$max" -le 14000 ] || fail "a slow connection lived $max ms (lifetime 10 s)"

note "a bad jobs.yaml on SIGHUP: one error line (log.level: error too), the running set kept"
before=$(metric "$L2" 'baton_job_runs_total{job_name="tick",outcome="ok"}')
printf 'jobs:\n  - name: tick\n    schedule: "61 * * * *"\n    command: ["true"]\n' > "$T/jobs.yaml"
for n in n1 n2 n3; do [ -n "${PROC_PID[$n]:-}" ] && kill -HUP "$(pid_of $n)"; done
for n in $(for x in n1 n2 n3; do [ -n "${PROC_PID[$x]:-}" ] && echo $x; done); do
    line=$(wait_for_line "$T/$n.out" '"event":"reload_failed"' 5)
    echo "$line" | grep -q "\"level\":\"error\"" || fail "$n: reload_failed not at error level: $line"
    echo "$line" | grep -qE "\"error\":\"$T/jobs.yaml:3:[0-9]+: " || fail "$n: no file:line:col: $line"
    sleep 0.2
    assert_eq 1 "$(count_lines "$T/$n.out" '"event":"reload_failed"')" "$n's reload_failed lines"
    assert_eq 0 "$(metric $n baton_config_last_reload_successful)" "$n baton_config_last_reload_successful"
    assert_eq 1 "$(metric $n 'baton_reloads_total{result="failed"}')" "$n failed reloads"
done
assert_eq 1 "$(wc -l < "$T/n3.out")" "lines n3 (log.level: error) wrote"
sleep 1.5
after=$(metric "$L2" 'baton_job_runs_total{job_name="tick",outcome="ok"}')
[ "$after" -gt "$before" ] || fail "tick stopped running after the bad reload ($before -> $after)"
wait_body "$L2" /readyz '^ready' 2
cp "$T/jobs.good" "$T/jobs.yaml"
kill -HUP "$(pid_of "$L2")"
wait_body "$L2" /metrics '^baton_reloads_total\{result="ok"\} 1$' 5 # n3 logs errors only
assert_eq 1 "$(metric "$L2" baton_config_last_reload_successful)" "after a good reload"

note "every descriptor baton run opens is close-on-exec (the HTTP server's included)"
spawn ref sleep 60 # what a process started the same way inherits is not baton's
declare -A inherited=()
for f in /proc/$(pid_of ref)/fd/*; do inherited[${f##*/}]=$(readlink "$f"); done
for n in $(for x in n1 n2 n3; do [ -n "${PROC_PID[$x]:-}" ] && echo $x; done); do
    pid=$(pid_of $n)
    for fdinfo in /proc/$pid/fdinfo/*; do
        fd=${fdinfo##*/}
        [ "$fd" -le 2 ] && continue
        [ "${inherited[$fd]:-}" = "$(readlink /proc/$pid/fd/$fd)" ] && continue
        flags=$(awk '/^flags:/ {print $2}' "$fdinfo" 2>/dev/null) || continue
        [ -n "$flags" ] || continue
        (( (8#$flags & 8#2000000) != 0 )) || fail "$n: fd $fd ($(readlink /proc/$pid/fd/$fd)) is not close-on-exec"
    done
done

note "http.listen: a Unix socket (a stale one replaced), an address in use"
node_config n4 "unix:$T/http.sock"
spawn n4 "$B" run -c "$T/n4.yaml"
wait_for_line "$T/n4.out" '"event":"http_listening".*"listen":"unix:' 10 >/dev/null
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/http.sock" http://x/healthz)" "healthz over the Unix socket"
kill -KILL "$(pid_of n4)"; wait_exit n4 5
[ -S "$T/http.sock" ] || fail "the socket of a killed node is gone (cannot test its replacement)"
spawn n4 "$B" run -c "$T/n4.yaml"
wait_for_line "$T/n4.out" '"event":"started"' 10 >/dev/null
wait_body_unix() { curl -s -m 2 --unix-socket "$T/http.sock" http://x/readyz; }
for i in $(seq 1 100); do wait_body_unix | grep -q '^ready' && break; sleep 0.05; done
wait_body_unix | grep -q '^ready' || fail "no readyz over the replaced Unix socket"
kill -TERM "$(pid_of n4)"; wait_exit n4 10
assert_eq 0 "$EXIT_CODE" "n4 exit status"
[ -e "$T/http.sock" ] && fail "the Unix socket was left behind"
node_config n5 "${ADDR[$L2]}"
"$B" run -c "$T/n5.yaml" >"$T/n5.out" 2>"$T/n5.err"
assert_eq 1 "$?" "exit status when http.listen is in use"
grep -q "^baton: run: ${ADDR[$L2]}: Address already in use" "$T/n5.err" || fail "message: $(cat "$T/n5.err")"
node_config n6 "127.0.0.1:99999"
"$B" run -c "$T/n6.yaml" >/dev/null 2>"$T/n6.err"
assert_eq 78 "$?" "exit status for a bad http.listen"
grep -q "n6.yaml:9:[0-9]*: http.listen: the port must be a number from 0 to 65535" "$T/n6.err" || fail "message: $(cat "$T/n6.err")"

note "stop: each exits 0"
for n in n1 n2 n3; do [ -n "${PROC_PID[$n]:-}" ] && kill -TERM "$(pid_of $n)"; done
for n in n1 n2 n3; do [ -n "${PROC_PID[$n]:-}" ] && { wait_exit $n 10; assert_eq 0 "$EXIT_CODE" "$n exit status"; }; done
note "ok"
