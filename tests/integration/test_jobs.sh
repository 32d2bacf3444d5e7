# test_jobs.sh -- the job runner through real supervisors: environment,
# output capture, timeouts that kill grandchildren, forbid/allow/replace,
# retries, history, SIGHUP reload, lease loss, graceful drain, catch-up
# after a crash, children of a SIGKILLed supervisor, bad jobs.yaml.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

# config NAME JOBSFILE [EXTRA YAML...]
config() {
    local name=$1 jobs=$2; shift 2
    {
        printf 'node: %s\nredis: %s\ngroup: %s\nlease: {ttl: 1s}\nredis_timeout: 200ms\n' \
            "$name" "$REDIS_URL" "${GROUP:-j}"
        printf 'poll: 1s\nshutdown_grace: 3s\njobs: %s\n' "$jobs"
        for x in "$@"; do printf '%s\n' "$x"; done
    } > "$T/$name.yaml"
}
run_node() { config "$@"; spawn "$1" "$B" run -c "$T/$1.yaml"; }
jline() { grep -h "\"event\":\"$2\"" "$T/$1.out" | grep "\"job\":\"$3\""; }
count() { jline "$1" "$2" "$3" | wc -l; }
wait_job() { # wait_job NODE EVENT JOB REGEX TIMEOUT
    wait_for_line "$T/$1.out" "\"event\":\"$2\".*\"job\":\"$3\".*$4" "$5"
}

# ---------------------------------------------------------------------
note "environment, stdin, process group, output lines (stdout, stderr, long, unicode)"
cat > "$T/env.yaml" <<EOF
jobs:
  - name: envjob
    schedule: "* * * * * *"
    catchup: 0
    shell: |
      echo "job=\$BATON_JOB run=\$BATON_RUN_ID at=\$BATON_SCHEDULED_AT fence=\$BATON_FENCE node=\$BATON_NODE color=\$COLOR"
      echo "vars=\$(env | sed -n 's/^\(BATON_[A-Z_]*\)=..*/\1/p' | tr '\\n' ' ')"
      echo "pgid=\$(ps -o pgid= -p \$\$ | tr -d ' ') sid_ok stdin=\$(cat | wc -c)"
      echo 'to stderr "quoted" \\ tab:	end' >&2
      head -c 9000 /dev/zero | tr '\\0' x; echo
      printf 'caf\\303\\251 \\342\\234\\223\\n'
    env: {COLOR: blue}
EOF
run_node e1 "$T/env.yaml"
line=$(wait_job e1 job_output envjob '"line":"job=' 5)
run_id=$(echo "$line" | sed 's/.*"run_id":"\([^"]*\)".*/\1/')
echo "$line" | grep -qE '"line":"job=envjob run='"$run_id"' at=[0-9-]{10}T[0-9:]{8}Z fence=[0-9]+ node=e1 color=blue"' \
    || fail "environment line: $line"
# Every variable of the code's table, as `baton check --reference` lists
# it, with a value (the job also inherits the test's own BATON_* names).
want=$("$B" check --reference | awk '/^### The environment of a job/ {on = 1; next} /^### / {on = 0}
    on && /^\| `BATON_/ {gsub(/[`| ]/, "", $2); print $2}')
[ "$(echo "$want" | wc -w)" -ge 7 ] || fail "check --reference lists no run environment: $want"
vars=$(wait_for_line "$T/e1.out" "\"run_id\":\"$run_id\".*\"line\":\"vars=" 3)
for v in $want; do
    grep -q " $v " <<<"${vars/vars=/ }" || fail "a run has no $v (check --reference lists it): $vars"
done
start=$(jline e1 job_start envjob | grep "\"run_id\":\"$run_id\"")
at=$(echo "$start" | sed 's/.*"scheduled_at":"\([^"]*\)".*/\1/')
echo "$line" | grep -q "at=$at" || fail "BATON_SCHEDULED_AT differs from job_start's scheduled_at ($at)"
pid=$(echo "$start" | sed 's/.*"pid":\([0-9]*\).*/\1/')
wait_for_line "$T/e1.out" "\"run_id\":\"$run_id\".*\"line\":\"pgid=$pid sid_ok stdin=0\"" 3 >/dev/null \
    || fail "the job is not in its own process group, or stdin is not /dev/null"
wait_for_line "$T/e1.out" "\"run_id\":\"$run_id\",\"stream\":\"stderr\",\"line\":\"to stderr \\\\\"quoted\\\\\" \\\\\\\\ tab:\\\\tend\"" 3 >/dev/null
parts=$(grep "\"run_id\":\"$run_id\"" "$T/e1.out" | grep -c '"line":"xxxx')
[ "$parts" -ge 3 ] || fail "a 9000-byte line should come in >= 3 bounded pieces, got $parts"
grep "\"run_id\":\"$run_id\"" "$T/e1.out" | grep '"line":"xxxx' | head -n1 | grep -q '"partial":true' \
    || fail "cut pieces of a long line are marked partial"
grep -q "\"run_id\":\"$run_id\".*\"line\":\"café ✓\"" "$T/e1.out" || fail "UTF-8 output line"
wait_job e1 job_end envjob "\"run_id\":\"$run_id\".*\"outcome\":\"ok\"" 5 | grep -q '"exit_code":0' || fail "job_end"
lat=$(echo "$start" | sed 's/.*"lateness_ms":\(-\{0,1\}[0-9]*\).*/\1/')
[ "$lat" -ge 0 ] && [ "$lat" -lt 500 ] || fail "lateness_ms $lat"
kill -TERM "$(pid_of e1)"; wait_exit e1 5

# ---------------------------------------------------------------------
note "timeout: TERM, then KILL after the grace; grandchildren die too"
cat > "$T/timeout.yaml" <<EOF
jobs:
  - name: stubborn
    schedule: "* * * * * *"
    catchup: 0
    concurrency: forbid
    timeout: 1s
    kill_grace: 500ms
    shell: "trap '' TERM; sleep 100 & echo \$! > $T/grandchild; sleep 100"
EOF
GROUP=t run_node t1 "$T/timeout.yaml"
end=$(wait_job t1 job_end stubborn '"outcome":"timeout"' 6)
echo "$end" | grep -q '"signal":"KILL"' || fail "a job ignoring TERM is KILLed after the grace: $end"
dur=$(echo "$end" | sed 's/.*"duration_ms":\([0-9]*\).*/\1/')
[ "$dur" -ge 1400 ] && [ "$dur" -lt 2500 ] || fail "timeout 1s + grace 500ms, duration $dur ms"
gc=$(cat "$T/grandchild")
for _ in $(seq 1 50); do alive "$gc" || break; sleep 0.02; done
alive "$gc" && fail "grandchild $gc survived the timeout"
wait_job t1 tick_skipped stubborn 'still alive' 3 >/dev/null
kill -TERM "$(pid_of t1)"; wait_exit t1 10

# ---------------------------------------------------------------------
note "concurrency: forbid skips, allow overlaps, replace stops the old run"
cat > "$T/conc.yaml" <<'EOF'
jobs:
  - {name: forbidden, schedule: "* * * * * *", catchup: 0, concurrency: forbid,  command: ["sleep", "2.5"]}
  - {name: allowed,   schedule: "* * * * * *", catchup: 0, concurrency: allow,   command: ["sleep", "2.5"]}
  - {name: replaced,  schedule: "* * * * * *", catchup: 0, concurrency: replace, command: ["sleep", "2.5"], kill_grace: 1s}
EOF
GROUP=c run_node c1 "$T/conc.yaml"
sleep 5.5
kill -TERM "$(pid_of c1)"; wait_exit c1 10
f_start=$(count c1 job_start forbidden); f_skip=$(count c1 tick_skipped forbidden)
a_start=$(count c1 job_start allowed)
r_start=$(count c1 job_start replaced); r_repl=$(jline c1 job_end replaced | grep -c '"stopped_because":"replaced"')
note "  forbid: $f_start started, $f_skip skipped; allow: $a_start started; replace: $r_start started, $r_repl replaced"
[ "$f_start" -le 3 ] && [ "$f_skip" -ge 2 ] || fail "forbid"
[ "$a_start" -ge 5 ] || fail "allow should start every tick"
[ "$r_repl" -ge 3 ] || fail "replace should stop the previous run"
# allow really overlaps: some start happened while another run was alive.
grep -q '"event":"tick_skipped".*"job":"allowed"' "$T/c1.out" && fail "allow never skips"

# ---------------------------------------------------------------------
note "retries: each attempt logged, one claim per tick; history in Redis"
cat > "$T/retry.yaml" <<'EOF'
jobs:
  - name: flaky
    schedule: "*/20 * * * * *"
    catchup: 0
    retries: 2
    retry_backoff: 200ms
    shell: "echo attempt; exit 3"
EOF
GROUP=r run_node r1 "$T/retry.yaml"
wait_job r1 job_end flaky '"attempt":3' 25 | grep -q '"exit_code":3' || fail "third attempt"
sleep 0.3
assert_eq 3 "$(count r1 job_start flaky)" "attempts for one tick"
assert_eq 2 "$(count r1 job_retry flaky)" "retries logged"
assert_eq 3 "$(rcli xlen 'baton:{r}:runs:flaky')" "history entries"
rec=$(rcli xrevrange 'baton:{r}:runs:flaky' + - COUNT 1 | tr '\n' ' ')
for want in "v 3 " "attempt 3 " "outcome failed " "exit_code 3 " "trigger retry "; do
    case "$rec" in *"$want"*) ;; *) fail "history record lacks [$want]: $rec" ;; esac
done
kill -TERM "$(pid_of r1)"; wait_exit r1 5

# ---------------------------------------------------------------------
note "SIGHUP reload: an unchanged job keeps its running child; a removed job's child finishes; a new job starts"
cat > "$T/reload.yaml" <<EOF
jobs:
  - {name: keeper, schedule: "* * * * * *", catchup: 0, concurrency: forbid, shell: "sleep 3; echo keeper-done"}
  - {name: goner,  schedule: "* * * * * *", catchup: 0, concurrency: forbid, shell: "sleep 3; echo goner-done"}
EOF
GROUP=h run_node h1 "$T/reload.yaml"
wait_job h1 job_start goner '' 5 >/dev/null
wait_job h1 job_start keeper '' 5 >/dev/null
keeper_run=$(jline h1 job_start keeper | head -n1 | sed 's/.*"run_id":"\([^"]*\)".*/\1/')
cat > "$T/reload.yaml" <<EOF
jobs:
  - {name: keeper, schedule: "* * * * * *", catchup: 0, concurrency: forbid, shell: "sleep 3; echo keeper-done"}
  - {name: newbie, schedule: "* * * * * *", catchup: 0, shell: "echo newbie-ran"}
EOF
kill -HUP "$(pid_of h1)"
wait_for_line "$T/h1.out" '"event":"reloaded"' 3 >/dev/null
wait_for_line "$T/h1.out" '"line":"newbie-ran"' 4 >/dev/null
wait_for_line "$T/h1.out" '"line":"goner-done"' 5 >/dev/null
wait_for_line "$T/h1.out" "\"run_id\":\"$keeper_run\".*\"line\":\"keeper-done\"" 5 >/dev/null
sleep 1.2
[ "$(count h1 job_start goner)" -eq 1 ] || fail "a removed job started again"
kill -TERM "$(pid_of h1)"; wait_exit h1 8

# ---------------------------------------------------------------------
note "lease lost (Redis frozen): running jobs are dead before the lease could pass"
# One job dies at SIGTERM (its end would be recorded in Redis, which hangs),
# the other ignores SIGTERM and needs the SIGKILL before the deadline.
cat > "$T/long.yaml" <<EOF
jobs:
  - {name: long, schedule: "*/2 * * * * *", catchup: 0, shell: "echo \$\$ > $T/longpid; exec sleep 100"}
  - {name: deaf, schedule: "*/2 * * * * *", catchup: 0, kill_grace: 10s,
     shell: "trap '' TERM; echo \$\$ > $T/deafpid; while :; do sleep 0.05; done"}
EOF
GROUP=l run_node l1 "$T/long.yaml"
wait_job l1 job_start deaf '' 5 >/dev/null
for _ in $(seq 1 100); do [ -s "$T/longpid" ] && [ -s "$T/deafpid" ] && break; sleep 0.01; done
lp=$(cat "$T/longpid") dp=$(cat "$T/deafpid")
# Timed without forks (EPOCHREALTIME, alive, a read that times out on a
# pipe nobody writes): on a loaded machine a fork per poll (date, sleep)
# added up to 150 ms between the jobs' death and its measure.
mkfifo "$T/never"; exec {never}<>"$T/never"
kill -STOP "$REDIS_PID"; frozen=${EPOCHREALTIME//[.,]/}
for _ in $(seq 1 3000); do alive "$lp" || alive "$dp" || break; read -r -t 0.001 -u "$never"; done
died=${EPOCHREALTIME//[.,]/}
kill -CONT "$REDIS_PID"
exec {never}>&-
frozen=$(( frozen / 1000 )) died=$(( died / 1000 ))
alive "$lp" && fail "job still running with the lease unconfirmed"
alive "$dp" && fail "a job ignoring SIGTERM still running with the lease unconfirmed"
note "  jobs dead $((died - frozen)) ms after Redis froze (ttl 1000 ms)"
[ $((died - frozen)) -lt 1000 ] || fail "a job outlived the lease"
wait_job l1 job_end long '"outcome":"killed"' 3 >/dev/null
wait_job l1 job_end deaf '"signal":"KILL"' 3 >/dev/null
kill -TERM "$(pid_of l1)"; wait_exit l1 5

# ---------------------------------------------------------------------
note "graceful handover: the lease moves at once; the running job finishes; forbid holds across nodes"
# drainer runs 1.2 s every 2 s (forbid); the old leader hands over while it
# runs: the new leader leads at once, and must not start drainer while the
# old one's run is alive (it skips or waits), whatever the tick.
cat > "$T/drain.yaml" <<EOF
jobs:
  - {name: drainer, schedule: "*/2 * * * * *", catchup: 0, concurrency: forbid,
     shell: "echo \$BATON_NODE start >> $T/drain.txt; sleep 1.2; echo \$BATON_NODE end >> $T/drain.txt; echo drained"}
EOF
GROUP=d run_node d1 "$T/drain.yaml"
GROUP=d run_node d2 "$T/drain.yaml"
sleep 0.5
dl=$(rcli get 'baton:{d}:leader' | sed -n 's/^[0-9a-f]\{48\}://p')
other=d1; [ "$dl" = d1 ] && other=d2
wait_job "$dl" job_start drainer '' 5 >/dev/null
kill -TERM "$(pid_of "$dl")"; term_ms=$(now_ms)
lead_ts=$(wait_for_line "$T/$other.out" '"to":"working"' 2 | sed 's/.*"ts":"\([^"]*\)".*/\1/')
lead_ms=$(ts_ms "$lead_ts")
note "  the other node led $((lead_ms - term_ms)) ms after SIGTERM, while the old run still ran"
[ $((lead_ms - term_ms)) -lt 1000 ] || fail "the lease did not move at once"
wait_exit "$dl" 6
assert_eq 0 "$EXIT_CODE" "drained leader's exit status"
grep -q '"line":"drained"' "$T/$dl.out" || fail "the running job was not allowed to finish"
grep -q '"event":"handover".*"running":1' "$T/$dl.out" || fail "no handover line with the running run"
sleep 2.5
kill -TERM "$(pid_of "$other")"; wait_exit "$other" 6
# Never two drainer runs at once across the two nodes.
awk '$2 == "start" {n++; if (n > 1) {print "overlap at line " NR; bad = 1}} $2 == "end" {n--}
     END {exit bad}' "$T/drain.txt" || fail "forbid broken across the handover: $(cat "$T/drain.txt")"
grep -q '"event":"job_start".*"job":"drainer"' "$T/$other.out" || fail "the new leader never ran drainer"

# ---------------------------------------------------------------------
note "catch-up after a crash: the new leader runs the ticks missed, none twice"
cat > "$T/ledger.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1h
    concurrency: allow
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $T/ledger.txt"
EOF
GROUP=k run_node k1 "$T/ledger.yaml"
sleep 0.3
GROUP=k run_node k2 "$T/ledger.yaml"
sleep 2.5
kl=$(rcli get 'baton:{k}:leader' | sed -n 's/^[0-9a-f]\{48\}://p')
ko=k1; [ "$kl" = k1 ] && ko=k2
# Both frozen for 3 s, then the leader is killed and the other resumes:
# nobody led for 3 s, so ticks were certainly missed.
kill -STOP "$(pid_of "$kl")" "$(pid_of "$ko")"; sleep 3
kill -KILL "$(pid_of "$kl")"; kill -CONT "$(pid_of "$ko")"; wait_exit "$kl" 2
sleep 2.5
grep -q '"event":"catch_up"' "$T/$ko.out" || fail "no catch_up logged by the new leader"
kill -TERM "$(pid_of "$ko")"; wait_exit "$ko" 5
dups=$(awk '{print $1}' "$T/ledger.txt" | sort | uniq -d | wc -l)
assert_eq 0 "$dups" "ticks run twice"
first=$(awk '{print $1}' "$T/ledger.txt" | sort | head -n1)
last=$(awk '{print $1}' "$T/ledger.txt" | sort | tail -n1)
want=$(( $(date -d "$last" +%s) - $(date -d "$first" +%s) + 1 ))
assert_eq "$want" "$(wc -l < "$T/ledger.txt")" "ticks from $first to $last"
sort "$T/ledger.txt" | awk '$2 < f {print "fence went down at " $1; bad=1} {f=$2} END{exit bad}' \
    || fail "a later tick ran under a lower fence"

# ---------------------------------------------------------------------
note "a SIGKILLed supervisor's job dies with it"
cat > "$T/orphan.yaml" <<EOF
jobs:
  - {name: orphan, schedule: "*/2 * * * * *", catchup: 0, shell: "sleep 100 & echo \$! > $T/orphan_gc; echo \$\$ > $T/orphan_pid; wait"}
EOF
GROUP=o run_node o1 "$T/orphan.yaml"
for _ in $(seq 1 300); do [ -s "$T/orphan_gc" ] && break; sleep 0.01; done
kill -KILL "$(pid_of o1)"; wait_exit o1 2
for p in "$(cat "$T/orphan_pid")" "$(cat "$T/orphan_gc")"; do
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.01; done
    alive "$p" && fail "process $p outlived its SIGKILLed supervisor"
done

# ---------------------------------------------------------------------
note "bad jobs.yaml: the exact error, exit 78 (EX_CONFIG)"
printf 'jobs:\n  - name: x\n    schedule: "61 * * * *"\n    command: [true]\n' > "$T/bad.yaml"
config b1 "$T/bad.yaml"
"$B" run -c "$T/b1.yaml" >/dev/null 2>"$T/e"; assert_eq 78 $? "exit status"
assert_eq "baton: run: $T/bad.yaml:3:16: job \"x\": schedule: field 1 (minute) \"61\": value out of range 0-59" \
    "$(cat "$T/e")" "bad schedule message"
note "ok"
