# test_http_guard.sh -- what baton run's HTTP endpoint withstands, with two
# real supervisors and a real redis-server:
#  - DNS rebinding: a Host it does not answer to (evil.example) gets 421 on
#    every path, while IP literals (a kubelet's pod IP:port), localhost, the
#    host name and http.allowed_hosts get 200; HTTP/1.0 without Host is
#    served; a Unix socket answers any Host; baton check shows and checks
#    http.allowed_hosts (file:line:col);
#  - more slow or idle clients than its connection limit (64, 16 per
#    address): /healthz, /readyz and /metrics answer within 1 s during and
#    after, (1) 64 half requests from 4 addresses held 12 s (the endpoint
#    used to stop answering for good after them), (2) 100 from 5 addresses
#    reopened as soon as closed, (3) 100 on a Unix socket, reopened too.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v curl >/dev/null || fail "curl is not installed (bash deploy/setup.sh --deps-only installs it)"
[ -x "${BATON_SLOWLORIS:-}" ] || fail "BATON_SLOWLORIS is not set (run the test through ctest)"

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: hourly
    schedule: "0 0 * * * *"
    command: ["true"]
EOF
# node_config NAME HTTP-MAPPING
node_config() {
    cat > "$T/$1.yaml" <<EOF
node: $1
redis: $REDIS_URL
group: guard
lease: {ttl: 2s}
redis_timeout: 300ms
poll: 1s
shutdown_grace: 2s
jobs: $T/jobs.yaml
http: $2
EOF
}
# code [CURL ARGS...]: the status of one request (000: none within 3 s)
code() { curl -s -m 3 -o /dev/null -w '%{http_code}' "$@" || true; }

redis_start
PORT=$(free_port)
node_config n1 "{listen: \"127.0.0.1:$PORT\", allowed_hosts: [baton.example, \"*.corp.example\"]}"
"$B" check -c "$T/n1.yaml" > "$T/check.out" 2>&1 || fail "baton check: $(cat "$T/check.out")"
grep -qx 'http.allowed_hosts: \["baton.example", "\*.corp.example"\]' "$T/check.out" \
    || fail "baton check does not show http.allowed_hosts: $(grep http "$T/check.out")"
node_config n2 "{listen: \"unix:$T/http.sock\"}"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"http_listening"' 10 >/dev/null
spawn n2 "$B" run -c "$T/n2.yaml"
wait_for_line "$T/n2.out" '"event":"http_listening"' 10 >/dev/null
BASE=http://127.0.0.1:$PORT
UNIX=(--unix-socket "$T/http.sock")
for i in $(seq 1 100); do
    [ "$(code "$BASE/readyz")" = 200 ] && [ "$(code "${UNIX[@]}" http://x/readyz)" = 200 ] && break
    sleep 0.1
done
assert_eq 200 "$(code "$BASE/readyz")" "n1 /readyz"
assert_eq 200 "$(code "${UNIX[@]}" http://x/readyz)" "n2 /readyz over its Unix socket"

note "DNS rebinding: a Host the endpoint does not answer to gets 421, on every path"
for p in / /status /metrics /healthz /readyz /nope; do
    assert_eq 421 "$(code -H "Host: evil.example:$PORT" "$BASE$p")" "GET $p with Host: evil.example:$PORT"
done
assert_eq 421 "$(code -X POST -H 'Host: evil.example' "$BASE/status")" "POST with Host: evil.example"
curl -s -m 3 -D "$T/h421" -o "$T/b421" -H 'Host: evil.example' "$BASE/status"
grep -qi '^Content-Type: text/plain' "$T/h421" || fail "421 without a text type: $(cat "$T/h421")"
grep -q 'http.allowed_hosts' "$T/b421" || fail "421's body does not say what to do: $(cat "$T/b421")"
grep -q '"nodes"' "$T/b421" && fail "the 421 answer leaks /status"
for h in corp.example baton.example.evil.example evil.example.:80 'baton.example:x' \
         '1.2.3.4.nip.io' '::1' '[::1' 'localhost.evil.example'; do
    assert_eq 421 "$(code -H "Host: $h" "$BASE/status")" "Host: $h"
done

note "the probes and the names it answers to get 200"
for h in "127.0.0.1:$PORT" 10.1.2.3:9746 "[::1]:$PORT" "[fd00::7]" localhost "localhost.:$PORT" \
         "LocalHost:$PORT" probe.localhost "$(hostname)" "$(hostname):$PORT" baton.example \
         "BATON.example.:$PORT" a.corp.example "b.a.corp.example:443"; do
    for p in /healthz /readyz /status; do
        assert_eq 200 "$(code -H "Host: $h" "$BASE$p")" "GET $p with Host: $h"
    done
done
# curl's own Host (the address) and HTTP/1.0 without one; HTTP/1.1 needs one.
assert_eq 200 "$(code "$BASE/metrics")" "GET /metrics with curl's Host"
assert_eq 200 "$(code -0 -H 'Host:' "$BASE/healthz")" "HTTP/1.0 without Host"
assert_eq 400 "$(code -H 'Host:' "$BASE/healthz")" "HTTP/1.1 without Host"
# A Unix socket answers any Host: only who may open it can ask.
assert_eq 200 "$(code "${UNIX[@]}" -H 'Host: evil.example' http://x/status)" "Unix socket, Host: evil.example"

note "baton check: a bad http.allowed_hosts entry, at its position"
for bad in '[baton.example, "evil.example:80"]|1:39|"evil.example:80": a host name without a port' \
           '["a..b"]|1:24|"a..b": expected a host name' \
           '["*"]|1:24|"*": expected a host name' \
           '{a: 1}|1:23|expected a host name, or a list of them, got a mapping'; do
    IFS='|' read -r value pos want <<< "$bad"
    printf 'http: {allowed_hosts: %s}\n' "$value" > "$T/bad.yaml"
    "$B" check -c "$T/bad.yaml" > "$T/bad.out" 2>&1 && fail "baton check accepts allowed_hosts: $value"
    grep -qF "$T/bad.yaml:$pos: http.allowed_hosts: $want" "$T/bad.out" \
        || fail "allowed_hosts: $value: $(cat "$T/bad.out")"
done

note "a reload that changes http.allowed_hosts says it needs a restart"
sed -i 's/baton.example, /other.example, /' "$T/n1.yaml"
kill -HUP "$(pid_of n1)"
line=$(wait_for_line "$T/n1.out" '"event":"(reload_failed|reloaded)"' 5)
echo "$line" | grep -q '"restart_needed_for":\[[^]]*"http.allowed_hosts"' || fail "reload: $line"
assert_eq 200 "$(code -H 'Host: baton.example' "$BASE/healthz")" "the running names kept"

# probe_for WHAT SECONDS URL-BASE [CURL ARGS...]: /healthz, /readyz and
# /metrics answer 200 within 1 s, round after round, for SECONDS; sets
# PROBES to a summary.
probe_for() {
    local what=$1 secs=$2 base=$3 deadline n=0 worst=0 out p ms
    shift 3
    deadline=$(( $(now_ms) + secs * 1000 ))
    while :; do
        for p in /healthz /readyz /metrics; do
            out=$(curl -s -m 3 -o /dev/null -w '%{http_code} %{time_total}' "$@" "$base$p") || true
            ms=$(awk -v t="${out#* }" 'BEGIN {printf "%d", t * 1000}')
            [ "${out%% *}" = 200 ] || fail "$what: $p answered ${out%% *} after $ms ms (after $n good answers)"
            [ "$ms" -lt 1000 ] || fail "$what: $p took $ms ms"
            n=$((n + 1))
            [ "$ms" -le "$worst" ] || worst=$ms
        done
        [ "$(now_ms)" -lt "$deadline" ] || break
        sleep 0.1
    done
    PROBES="$n answers, the slowest in $worst ms"
}
# slow_result NAME: "held H cut C max_ms M [reopened R]" once NAME is done
slow_result() { wait_for_line "$T/$1.out" '^held' 30; }

note "64 half requests from 4 addresses, held 12 s: the probes answer during and after"
for s in 2 3 4 5; do spawn "hold$s" "$BATON_SLOWLORIS" --hold 127.0.0.1 "$PORT" "127.0.0.$s" 16 12; done
for s in 2 3 4 5; do wait_for_line "$T/hold$s.out" '^open 16' 10 >/dev/null; done
probe_for "64 held" 11 "$BASE"
note "  during: $PROBES"
for s in 2 3 4 5; do
    read -r _ held _ cut _ max < <(slow_result "hold$s")
    # The server closed every one (idle 5 s, or made room for a probe).
    assert_eq 16 "$cut" "held connections from 127.0.0.$s closed by the server"
    [ "$max" -le 8000 ] || fail "a held connection lived $max ms (idle limit 5 s)"
done
probe_for "after 64 held" 3 "$BASE"
note "  after: $PROBES"

note "100 half requests from 5 addresses (20 each), reopened as soon as closed, 10 s"
for s in 2 3 4 5 6; do spawn "fill$s" "$BATON_SLOWLORIS" --hold --refill 127.0.0.1 "$PORT" "127.0.0.$s" 20 10; done
for s in 2 3 4 5 6; do wait_for_line "$T/fill$s.out" '^open 20' 10 >/dev/null; done
probe_for "100 refilled" 9 "$BASE"
note "  during: $PROBES"
reopened=0
for s in 2 3 4 5 6; do
    read -r _ _ _ cut _ _ _ r < <(slow_result "fill$s")
    # at most 16 of 20 from one address stay open: at least 4 were closed
    [ "$cut" -ge 4 ] || fail "127.0.0.$s: only $cut of its 20 connections closed (16 per address)"
    reopened=$((reopened + r))
done
[ "$reopened" -ge 36 ] || fail "the clients reopened $reopened connections: the server was not full"
probe_for "after 100 refilled" 3 "$BASE"
note "  after: $PROBES ($reopened connections reopened)"

note "100 half requests on a Unix socket, from one client, reopened as soon as closed, 10 s"
spawn ufill "$BATON_SLOWLORIS" --hold --refill "unix:$T/http.sock" 100 10
wait_for_line "$T/ufill.out" '^open 100' 10 >/dev/null
probe_for "100 on the Unix socket" 9 http://x "${UNIX[@]}"
note "  during: $PROBES"
read -r _ _ _ cut _ _ _ r < <(slow_result ufill)
[ "$cut" -ge 36 ] || fail "only $cut of 100 Unix connections closed (limit 64)"
probe_for "after 100 on the Unix socket" 3 http://x "${UNIX[@]}"
note "  after: $PROBES ($r reopened)"

for n in n1 n2; do kill -TERM "$(pid_of $n)"; done
for n in n1 n2; do wait_exit $n 10; assert_eq 0 "$EXIT_CODE" "$n exit status"; done
note "ok"
