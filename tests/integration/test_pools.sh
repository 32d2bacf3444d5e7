# test_pools.sh -- fleet-wide limits (pools: and max_running:), counted in
# Redis, through real supervisors and a real redis-server. Each run writes
# its own start and end (ms) to one file; from it:
#   1. a pool of 2 shared by 3 jobs, each running 2 s every second
#      (concurrency allow): never more than 2 alive at once, the waiting
#      ticks served first come, first served (by instant, then job), each
#      tick started at most once and none skipped over (each job's ticks
#      run in a row);
#   2. max_running 2 on a job running 3 s every second: never more than 2
#      alive, each tick once, in a row;
#   3. a SIGTERM handover while the old leader's 2 runs of a pool of 2 are
#      alive: the new leader starts none while they are;
#   4. then a SIGKILL of that old node, which holds the pool's slots: they
#      are freed when their registrations expire, not before, and then the
#      new leader starts the waiting ticks;
#   5. while 1's ticks wait: /metrics (promtool), /status, the page and
#      `baton status` (text and --json) show the pool's runs and limit and
#      the ticks waiting, with their reason.
# Each part reports on its own (problem, not fail): a failure of one does
# not hide whether the others hold; the test fails at the end with all.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
for tool in curl jq promtool; do
    command -v "$tool" >/dev/null || fail "$tool is required (apt-get install $tool)"
done
redis_start
PROBLEMS=()
PART=
problem() { echo "FAIL [$TEST_NAME] part $PART: $*" >&2; PROBLEMS+=("part $PART: $*"); }
check_eq() { [ "$1" == "$2" ] || problem "$3: expected [$1], got [$2]"; }

cat > "$T/job.sh" <<'EOF'
#!/bin/sh
tick=$(date -u -d "$BATON_SCHEDULED_AT" +%s)
echo "start $(date +%s%3N) $BATON_JOB $tick $BATON_NODE" >> "$LOG"
sleep "$1"
echo "end $(date +%s%3N) $BATON_JOB $tick $BATON_NODE" >> "$LOG"
EOF
chmod +x "$T/job.sh"
config() { # config NODE GROUP JOBS
    printf 'node: %s\nredis: %s\ngroup: %s\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 20s\njobs: %s\nhttp: {listen: "127.0.0.1:0"}\n' \
        "$1" "$REDIS_URL" "$2" "$3" > "$T/$1.yaml"
}
leader() { rcli get "baton:{$1}:leader" | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() { # wait_leader GROUP [NOT]
    local l
    for _ in $(seq 1 600); do
        l=$(leader "$1")
        [ -n "$l" ] && [ "$l" != "${2:-}" ] && { echo "$l"; return; }
        sleep 0.01
    done
    fail "no leader in $1${2:+ other than $2}"
}
# most_alive LOG JOBS_REGEX [END_MS]: the most runs of those jobs alive at
# once, from their own times (a run with no end ended at END_MS). A
# measured run lies within its real one, so this never counts too many.
most_alive() {
    awk -v re="^($2)\$" -v cut="${3:-0}" '
        $3 ~ re { k = $3 " " $4; if ($1 == "start") s[k] = $2; else e[k] = $2 }
        END { for (k in s) { print s[k], 1; print (k in e ? e[k] : cut), 0 } }' "$1" |
        sort -k1,1n -k2,2n | awk '{ n += $2 ? 1 : -1; if (n > m) m = n } END { print m + 0 }'
}
# in_a_row LOG JOB: each tick of JOB started once, the ticks one after another.
in_a_row() {
    local ticks
    ticks=$(awk -v j="$2" '$1 == "start" && $3 == j { print $4 }' "$1" | sort -n)
    [ "$(grep -c . <<<"$ticks")" -ge 2 ] || { problem "$2: fewer than 2 runs"; return; }
    [ -z "$(uniq -d <<<"$ticks")" ] || problem "$2: a tick started twice: $(uniq -d <<<"$ticks" | head -3)"
    local first last n
    first=$(head -1 <<<"$ticks"); last=$(tail -1 <<<"$ticks"); n=$(wc -l <<<"$ticks")
    check_eq $(( last - first + 1 )) "$n" "$2: ticks $first..$last started in a row"
}

# ---- 1 and 2: one node ----
LOG1=$T/runs1.txt
cat > "$T/jobs1.yaml" <<EOF
pools: {p: 2}
defaults: {concurrency: allow, catchup: 1h, env: {LOG: "$LOG1"}}
jobs:
  - {name: a, schedule: "* * * * * *", pool: p, command: ["$T/job.sh", "2"]}
  - {name: b, schedule: "* * * * * *", pool: p, command: ["$T/job.sh", "2"]}
  - {name: c, schedule: "* * * * * *", pool: p, command: ["$T/job.sh", "2"]}
  - {name: m, schedule: "* * * * * *", max_running: 2, command: ["$T/job.sh", "3"]}
EOF
config n1 pl1 "$T/jobs1.yaml"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_leader pl1 >/dev/null
addr=$(wait_for_line "$T/n1.out" '"event":"http_listening"' 5 | sed 's/.*"listen":"\([^"]*\)".*/\1/')
sleep 5

# ---- 5: what shows while the ticks wait (the pool and m are saturated) ----
PART=5
curl -s -m 5 "http://$addr/metrics" > "$T/metrics.txt" || problem "GET /metrics"
curl -s -m 5 "http://$addr/status" > "$T/status.json" || problem "GET /status"
curl -s -m 5 "http://$addr/" > "$T/page.html" || problem "GET /"
"$B" status -c "$T/n1.yaml" --json > "$T/cli.json" || problem "baton status --json: exit $?"
"$B" status -c "$T/n1.yaml" > "$T/cli.txt" || problem "baton status: exit $?"
promtool check metrics < "$T/metrics.txt" > "$T/promtool.txt" 2>&1 ||
    problem "promtool check metrics: $(cat "$T/promtool.txt")"
metric() { awk -v k="$1" '$1 == k { print $2 }' "$T/metrics.txt"; }
check_eq 2 "$(metric 'baton_pool_limit{pool="p"}')" "baton_pool_limit of p"
runs=$(metric 'baton_pool_runs{pool="p"}')
[[ "$runs" =~ ^[12]$ ]] || problem "baton_pool_runs of p: expected 1 or 2 (saturated), got [$runs]"
waits=$(awk '/^baton_ticks_waiting\{job_name="[abc]",reason="pool"\}/ { n += $2 } END { print n + 0 }' "$T/metrics.txt")
[ "$waits" -ge 1 ] || problem "baton_ticks_waiting{reason=\"pool\"} of a, b, c: $waits, expected some"
check_eq 0 "$(metric 'baton_ticks_waiting{job_name="a",reason="max_running"}' | grep -c .)" \
    "series of a for max_running (it has none)"
[ -n "$(metric 'baton_ticks_waiting{job_name="m",reason="max_running"}')" ] ||
    problem "no baton_ticks_waiting series for m's max_running"
for f in status.json cli.json; do
    check_eq '{"name":"p","limit":2}' "$(jq -c '.pools[0] | {name, limit}' "$T/$f")" "$f: pools"
    [[ "$(jq '.pools[0].running' "$T/$f")" =~ ^[12]$ ]] ||
        problem "$f: pool p's running: $(jq -c '.pools' "$T/$f")"
    # the leader's heartbeat: at most a poll (1 s) old
    w=$(jq -c '[.waiting[] | select(.reason == "pool" and (.job | test("^[abc]$")) and .pool == "p"
                and .limit == 2 and .queued >= 1 and .waited_ms >= 0
                and (.since | test("Z$")) and (.scheduled_at | test("Z$")))] | length' "$T/$f")
    [ "${w:-0}" -ge 1 ] || problem "$f: no tick of pool p waiting: $(jq -c '.waiting' "$T/$f")"
    order=$(jq -r '.waiting[] | "\(.scheduled_at) \(.job)"' "$T/$f")
    check_eq "$(sort <<<"$order")" "$order" "$f: waiting in the order a slot goes to them"
done
grep -q 'id="pools"' "$T/page.html" || problem "the page has no pools table"
grep -q 'id="waiting"' "$T/page.html" || problem "the page has no table of the ticks waiting"
grep -Eq '^p +[12] +2 *$' "$T/cli.txt" || problem "baton status: no row 'p RUNNING 2': $(cat "$T/cli.txt")"
grep -Eq '^[abc] +[0-9TZ:-]+ +pool p \(2\) ' "$T/cli.txt" ||
    problem "baton status: no tick of a, b or c waiting for pool p: $(cat "$T/cli.txt")"

sleep 4
kill -TERM "$(pid_of n1)"
wait_exit n1 30
PART=1
alive_p=$(most_alive "$LOG1" 'a|b|c')
alive_m=$(most_alive "$LOG1" m)
note "most alive at once: pool p (limit 2): $alive_p; job m (max_running 2): $alive_m"
check_eq 2 "$alive_p" "most runs of pool p alive at once"
for j in a b c; do in_a_row "$LOG1" "$j"; done
grep -q '"event":"limit_wait"' "$T/n1.out" || problem "no limit_wait logged"
grep -q '"event":"limit_waited"' "$T/n1.out" || problem "no limit_waited logged"
# First come, first served: a run that started clearly (300 ms) after
# another is of a later tick, or of the same tick and a later job.
bad=$(awk '$1 == "start" && $3 ~ /^[abc]$/ { print $2, $4, $3 }' "$LOG1" | sort -n |
    awk '{ t[NR] = $1; k[NR] = $2 " " $3 }
         END { for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++)
                   if (t[j] - t[i] > 300 && k[j] < k[i]) { print k[i] " before " k[j]; exit } }')
[ -z "$bad" ] || problem "pool p did not serve its ticks in order: $bad"
PART=2
check_eq 2 "$alive_m" "most runs of m alive at once"
in_a_row "$LOG1" m

# ---- 3 and 4: a handover, then a SIGKILL of the node holding the slots ----
LOG2=$T/runs2.txt
cat > "$T/jobs2.yaml" <<EOF
pools: {q: 2}
defaults: {concurrency: allow, catchup: 1h, env: {LOG: "$LOG2"}}
jobs:
  - {name: x, schedule: "* * * * * *", pool: q, command: ["$T/job.sh", "8"]}
  - {name: y, schedule: "* * * * * *", pool: q, command: ["$T/job.sh", "8"]}
EOF
config o1 pl2 "$T/jobs2.yaml"
config o2 pl2 "$T/jobs2.yaml"
spawn o1 "$B" run -c "$T/o1.yaml"
[ "$(wait_leader pl2)" = o1 ] || fail "o1 does not lead"
spawn o2 "$B" run -c "$T/o2.yaml"
wait_for_line "$T/o2.out" '"event":"following"' 10 >/dev/null
for _ in $(seq 1 500); do
    [ "$(count_lines "$LOG2" '^start')" -ge 2 ] && break
    sleep 0.01
done
assert_eq 2 "$(count_lines "$LOG2" '^start .* o1$')" "o1's runs of pool q"
PART=3
kill -TERM "$(pid_of o1)"
[ "$(wait_leader pl2 o1)" = o2 ] || fail "o2 does not lead after the handover"
sleep 1.5
check_eq 0 "$(count_lines "$LOG2" '^start .* o2$')" "runs o2 started while o1's 2 runs held pool q"
PART=4
kill -KILL "$(pid_of o1)"
wait_exit o1 5
# o1's registrations: their end (server ms, the jobs' clock too)
expiry=$(for j in x y; do rcli zrange "baton:{pl2}:busy:$j" 0 -1 withscores; done |
    paste - - | awk '$1 ~ /^o1\// { if ($2 > m) m = $2 } END { printf "%.0f", m }')
deadline=$(( $(now_ms) + 10000 ))
until [ "$(count_lines "$LOG2" '^start .* o2$')" -gt 0 ] || [ "$(now_ms)" -ge "$deadline" ]; do
    sleep 0.01
done
first=$(awk '$1 == "start" && $5 == "o2" { print $2; exit }' "$LOG2")
note "o1's slots expire at $expiry; o2's first run started at ${first:-none}"
if [ "$expiry" -le 0 ]; then
    problem "o1 left no live registration at its SIGKILL (o2 started at ${first:-none})"
elif [ -z "$first" ]; then
    problem "o2 started no run within 10 s of o1's SIGKILL (its slots expire at $expiry)"
else
    [ "$first" -ge "$expiry" ] || problem "o2 started a run $(( expiry - first )) ms before o1's slots expired"
    [ "$first" -le $(( expiry + 3000 )) ] || problem "o2 started its first run $(( first - expiry )) ms after o1's slots expired"
    sleep 2
    check_eq 2 "$(most_alive "$LOG2" 'x|y' "$expiry")" "most runs of pool q alive at once"
fi
kill -TERM "$(pid_of o2)"
wait_exit o2 30
[ "${#PROBLEMS[@]}" -eq 0 ] || fail "${#PROBLEMS[@]} problem(s): $(printf '%s; ' "${PROBLEMS[@]}")"
note "ok: parts 1 to 5"
