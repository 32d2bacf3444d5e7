# test_cli_tools.sh -- the operator tools against a real redis-server and
# three real `baton run` supervisors: `baton check` (valid files with next
# runs; broken files with their exact file:line:col errors), `baton status`
# (text and --json), `baton history` (text, --json, --count, unknown jobs,
# wrong-type keys), `baton step-down` (handover to another node; timeout;
# nobody listening; no leader), node names (a second supervisor with a live
# one's name refuses to start; stopped and silent nodes), Redis unreachable,
# and every bad argument of the four commands (exit 64, one exact line,
# nothing on stdout). Each failure's exit status is the documented one.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
RFC='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

# run ARGS...: runs baton ARGS; sets RC, OUT (stdout) and ERR (stderr).
run() {
    "$B" "$@" >"$T/cmd.stdout" 2>"$T/cmd.stderr" </dev/null
    RC=$?
    OUT=$(cat "$T/cmd.stdout")
    ERR=$(cat "$T/cmd.stderr")
}

# expect_usage CMD MESSAGE ARGS...: `baton CMD ARGS` exits 64 with exactly
# "baton: CMD: MESSAGE (see 'baton CMD --help')" on stderr, nothing on stdout.
expect_usage() {
    local cmd=$1 msg=$2; shift 2
    run "$cmd" "$@"
    assert_eq 64 "$RC" "exit status of 'baton $cmd $*'"
    assert_eq "" "$OUT" "stdout of 'baton $cmd $*'"
    assert_eq "baton: $cmd: $msg (see 'baton $cmd --help')" "$ERR" "stderr of 'baton $cmd $*'"
}

# expect_fail STATUS CMD MESSAGE ARGS...: exit STATUS with exactly
# "baton: CMD: MESSAGE" on stderr.
expect_fail() {
    local status=$1 cmd=$2 msg=$3; shift 3
    run "$cmd" "$@"
    assert_eq "$status" "$RC" "exit status of 'baton $cmd $*'"
    assert_eq "baton: $cmd: $msg" "$ERR" "stderr of 'baton $cmd $*'"
}

# has TEXT SUBSTRING WHAT: fails unless TEXT contains SUBSTRING.
has() { case "$1" in *"$2"*) ;; *) fail "$3: no [$2] in: $1" ;; esac; }

redis_start

# ---- configuration: three nodes of group "tools" ---------------------------
cat >"$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: "echo hi"
  - name: berlin
    schedule: "0 7 * * MON-FRI"
    timezone: Europe/Berlin
    command: ["/bin/echo", "it's", "a b"]
  - name: off
    schedule: "@hourly"
    shell: "true"
    enabled: false
EOF
for n in a b c; do
    cat >"$T/node-$n.yaml" <<EOF
node: node-$n
redis: $REDIS_URL
group: tools
lease: {ttl: 2s}
redis_timeout: 200ms
poll: 1s
shutdown_grace: 2s
jobs: jobs.yaml
EOF
done
CFG=$T/node-a.yaml

# ---- check -------------------------------------------------------------------
note "check: a valid configuration prints the effective config and each job's next runs"
run check -c "$CFG"
assert_eq 0 "$RC" "check exit status"
assert_eq "" "$ERR" "check stderr"
has "$OUT" "# $CFG" "check: config path"
has "$OUT" "lease.ttl: 2s" "check: effective config"
has "$OUT" "group: tools" "check: effective config"
has "$OUT" "# jobs: $T/jobs.yaml (3 jobs, hash " "check: jobs file"
hash=$(echo "$OUT" | sed -n 's/^# jobs: .*(3 jobs, hash \([0-9a-f]\{16\}\))$/\1/p')
[ -n "$hash" ] || fail "check: no jobs hash in: $OUT"
has "$OUT" "  command:  sh -c 'echo hi'" "check: shell command"
has "$OUT" "  command:  /bin/echo 'it'\\''s' 'a b'" "check: argv command, quoted"
has "$OUT" "  zone:     Europe/Berlin" "check: job zone"
has "$OUT" "  enabled:  no (disabled)" "check: disabled job"
has "$OUT" "  next:     disabled" "check: disabled job has no next runs"
has "$OUT" "ok: $CFG and $T/jobs.yaml are valid (3 jobs, 1 disabled)" "check: verdict"
# tick: three consecutive seconds, UTC only.
tick_next=$(printf '%s\n' "$OUT" | sed -n '/^job tick$/,/^job /p' | grep -E "^  (next: {5}| {10})$RFC\$" | grep -oE "$RFC")
assert_eq 3 "$(printf '%s\n' "$tick_next" | wc -l)" "check: tick's next runs"
t1=$(date -u -d "$(printf '%s\n' "$tick_next" | sed -n 1p)" +%s)
t3=$(date -u -d "$(printf '%s\n' "$tick_next" | sed -n 3p)" +%s)
assert_eq 2 $((t3 - t1)) "check: tick's runs are one second apart"
now=$(date +%s)
[ "$t1" -gt $((now - 2)) ] && [ "$t1" -le $((now + 2)) ] || fail "check: tick's next run $t1 is not now ($now)"
# berlin: UTC and local wall time 07:00 with the zone's offset.
berlin=$(printf '%s\n' "$OUT" | sed -n '/^job berlin$/,/^job /p' | grep -E "$RFC  [0-9-]{10}T07:00:00\+0[12]:00\$" | wc -l)
assert_eq 3 "$berlin" "check: berlin's next runs in UTC and local time"

note "check: broken files give exactly file:line:col: message, exit 78"
printf 'node: node-a\nlease:\n  ttl: banana\n' >"$T/bad-ttl.yaml"
expect_fail 78 check "$T/bad-ttl.yaml:3:8: lease.ttl: \"banana\": expected a number at \"banana\" (durations look like 500ms, 10s, 1h30m)" -c "$T/bad-ttl.yaml"
assert_eq "" "$OUT" "stdout of a failed check"
printf 'jobs:\n  - name: x\n    schedule: "61 * * * *"\n    shell: "true"\n' >"$T/badjobs.yaml"
printf 'jobs: badjobs.yaml\n' >"$T/bad-jobs.yaml"
expect_fail 78 check "$T/badjobs.yaml:3:16: job \"x\": schedule: field 1 (minute) \"61\": value out of range 0-59" -c "$T/bad-jobs.yaml"
expect_fail 78 check "$T/missing.yaml: cannot open: No such file or directory" -c "$T/missing.yaml"
mkdir "$T/empty"
(cd "$T/empty" && "$B" check >"$T/cmd.stdout" 2>"$T/cmd.stderr"); rc=$?
assert_eq 78 $rc "check without -c nor ./baton.yaml"
# The install's own baton.yaml: /etc/baton/ for the prefix /usr, SYSCONFDIR/baton/ otherwise.
grep -qxE "baton: check: no configuration: give -c FILE, or create ./baton.yaml or /(.+/)?etc/baton/baton.yaml" "$T/cmd.stderr" ||
    fail "check without a config: $(cat "$T/cmd.stderr")"

note "check: a configuration its user cannot read says so, and who can read it (not 'no configuration')"
# As the package has it: /etc/baton is 0750 root:baton. Run as nobody when
# root (its group here: daemon); as a user of its own file of mode 0 otherwise.
mkdir "$T/etc-baton"
printf 'node: x\n' >"$T/etc-baton/baton.yaml"
if [ "$(id -u)" = 0 ]; then
    chmod 711 "$T"
    chgrp daemon "$T/etc-baton"
    chmod 0750 "$T/etc-baton"
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    want="baton: check: $T/etc-baton/baton.yaml: permission denied: $T/etc-baton is 0750 root:daemon (run as root or join the group daemon)"
else
    chmod 0 "$T/etc-baton/baton.yaml"
    as_user=()
    want="baton: check: $T/etc-baton/baton.yaml: permission denied: $T/etc-baton/baton.yaml is 0000 $(id -un):$(id -gn) (run as root)"
fi
# (grep, not the whole of stderr: a coverage build run as nobody also says it cannot write its counters)
"${as_user[@]}" "$B" check -c "$T/etc-baton/baton.yaml" >"$T/cmd.stdout" 2>"$T/cmd.stderr"
assert_eq 78 "$?" "check of an unreadable configuration"
grep -qxF -- "$want" "$T/cmd.stderr" || fail "check of an unreadable configuration: $(cat "$T/cmd.stderr")"
chmod 0755 "$T/etc-baton"
chmod 0644 "$T/etc-baton/baton.yaml"

# ---- three supervisors -------------------------------------------------------------
note "starting three supervisors"
for n in a b c; do spawn "node-$n" "$B" run -c "$T/node-$n.yaml"; done

# wait_working N TIMEOUT_S: waits until the Nth term has reached working in
# some node's log; sets LEADER (a, b or c) and TERM. Terms strictly increase
# (they are fencing tokens, about the server's time in microseconds), so the
# Nth term is the Nth smallest.
wait_working() {
    local deadline=$(( $(now_ms) + $2 * 1000 )) n t
    while :; do
        t=$(cat "$T"/node-[abc].out 2>/dev/null | grep '"to":"working"' | grep -oE '"term":[0-9]+' |
            cut -d: -f2 | sort -un | sed -n "$1p")
        if [ -n "$t" ]; then
            for n in a b c; do
                if grep -q "\"to\":\"working\".*\"term\":$t," "$T/node-$n.out" 2>/dev/null; then
                    LEADER=$n TERM=$t; return 0
                fi
            done
        fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "no node reached working with a term number $1 within $2 s"
        sleep 0.02
    done
}
wait_working 1 10
TERM1=$TERM
note "node-$LEADER leads (term $TERM1)"

# Wait for all three heartbeats and three recorded runs of tick.
deadline=$(( $(now_ms) + 10000 ))
until [ "$(rcli hlen 'baton:{tools}:nodes')" = 3 ] && [ "$(rcli xlen 'baton:{tools}:runs:tick')" -ge 3 ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no 3 heartbeats and 3 runs of tick within 10 s"
    sleep 0.05
done

# ---- status ------------------------------------------------------------------------
note "status: leader, nodes, jobs"
run status -c "$CFG"
assert_eq 0 "$RC" "status exit status"
assert_eq "" "$ERR" "status stderr"
has "$OUT" "group:   tools" "status: group"
has "$OUT" "redis:   $REDIS_URL" "status: redis URL"
printf '%s\n' "$OUT" | grep -qE "^leader:  node-$LEADER \(term $TERM1, lease [0-9.]+(ms|s) left\)\$" || fail "status: leader line in: $OUT"
printf '%s\n' "$OUT" | grep -qE '^NODE +STATE +TERM +SEEN +PID +SINCE +RUNNING +CAPACITY +LABELS +JOBS$' || fail "status: nodes header in: $OUT"
for n in a b c; do
    # Followers show the term they follow; all run the same 3 jobs (the
    # start of check's hash), none differs.
    printf '%s\n' "$OUT" | grep -qE "^node-$n +(working|renewing|waiting|acquiring) +(0|$TERM1) +[0-9.]+(ms|s) ago +[0-9]+ +$RFC +[0-9]+ +0/4 +- +3 ${hash:0:8}( |\$)" || fail "status: node-$n row in: $OUT"
done
printf '%s\n' "$OUT" | grep -q 'differs\|config drift' && fail "status: drift where there is none: $OUT"
printf '%s\n' "$OUT" | grep -qE "^node-$LEADER +(working|renewing) .* leader\$" || fail "status: the leader's row is marked in: $OUT"
assert_eq 1 "$(printf '%s\n' "$OUT" | grep -cE ' leader$')" "status: one node marked leader"
printf '%s\n' "$OUT" | grep -qE '^JOB +LAST RUN +OUTCOME +NODE +DURATION +NEXT RUN$' || fail "status: jobs header in: $OUT"
printf '%s\n' "$OUT" | grep -qE "^tick +$RFC +ok \(exit 0\) +node-$LEADER +[0-9.]+(ms|s) +$RFC\$" || fail "status: tick row in: $OUT"
printf '%s\n' "$OUT" | grep -qE "^berlin +never +$RFC \(20[0-9-]+T07:00:00\+0[12]:00 Europe/Berlin\)\$" || fail "status: berlin row in: $OUT"
printf '%s\n' "$OUT" | grep -qE '^off +never +disabled$' || fail "status: off row in: $OUT"
# The columns are aligned: NEXT RUN starts at the same column on every job row.
c_head=$(printf '%s\n' "$OUT" | grep -E '^JOB ' | awk '{print index($0, "NEXT RUN")}')
c_off=$(printf '%s\n' "$OUT" | grep -E '^off ' | awk '{print index($0, "disabled")}')
assert_eq "$c_head" "$c_off" "status: NEXT RUN column alignment"

note "status --json: one object with the same data"
run status -c "$CFG" --json
assert_eq 0 "$RC" "status --json exit status"
assert_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "status --json is one line"
has "$OUT" '{"group":"tools","redis":"'"$REDIS_URL"'","leader":{"node":"node-'"$LEADER"'","term":'$TERM1',"lease_ms":' "status --json: leader"
has "$OUT" '"term":'$TERM1',"nodes":[' "status --json: term"
for n in a b c; do has "$OUT" '{"node":"node-'$n'","state":"' "status --json: node-$n"; done
has "$OUT" '"node":"node-'$LEADER'","state":"working","term":'$TERM1',' "status --json: the leader's heartbeat"
assert_eq 1 "$(printf '%s' "$OUT" | grep -o '"leader":true' | wc -l)" "status --json: one node is the leader"
assert_eq 2 "$(printf '%s' "$OUT" | grep -o '"leader":false' | wc -l)" "status --json: two followers"
printf '%s' "$OUT" | grep -qE '"seen_ms_ago":[0-9]+,' || fail "status --json: seen_ms_ago in $OUT"
printf '%s' "$OUT" | grep -qE '\{"name":"tick","schedule":"\* \* \* \* \* \*","timezone":"UTC","enabled":true,"last_run":\{"id":"[0-9]+-[0-9]+","v":3,"run_id":"[^"]+","node":"node-'$LEADER'","term":'$TERM1',"scheduled_at":"'"$RFC"'","until":"'"$RFC"'","ticks":1,"trigger":"schedule","by":null,"started":"[^"]+","duration_ms":[0-9]+,"attempt":1,"outcome":"ok","exit_code":0,"output_bytes":3,"output_dropped":0\},"next_run":"'"$RFC"'","paused":null,"running":\[\]\}' || fail "status --json: tick in $OUT"
has "$OUT" '{"name":"berlin","schedule":"0 7 * * MON-FRI","timezone":"Europe/Berlin","enabled":true,"last_run":null,"next_run":"' "status --json: berlin"
has "$OUT" '{"name":"off","schedule":"@hourly","timezone":"UTC","enabled":false,"last_run":null,"next_run":null,"paused":null,"running":[]}],"pools":[],"waiting":[],"offers":[]}' "status --json: off"

# ---- history -------------------------------------------------------------------------
note "history: the recent runs, newest first"
run history -c "$CFG" tick --count 3
assert_eq 0 "$RC" "history exit status"
assert_eq "" "$ERR" "history stderr"
assert_eq "job tick: the last 3 records, newest first" "$(printf '%s\n' "$OUT" | sed -n 1p)" "history header"
printf '%s\n' "$OUT" | sed -n 2p | grep -qE '^SCHEDULED_AT +NODE +TERM +TRIGGER +STARTED +DURATION +OUTCOME +ATTEMPT +RUN_ID$' || fail "history: table header in: $OUT"
assert_eq 3 "$(printf '%s\n' "$OUT" | grep -cE "^$RFC +node-$LEADER +$TERM1 +schedule +[0-9T:.-]+Z +[0-9.]+(ms|s) +ok \(exit 0\) +1 +[0-9]+-$TERM1-1-[0-9]+\$")" "history: three ok rows"
s1=$(printf '%s\n' "$OUT" | sed -n 3p | cut -c1-20); s3=$(printf '%s\n' "$OUT" | sed -n 5p | cut -c1-20)
[ "$(date -u -d "$s1" +%s)" -gt "$(date -u -d "$s3" +%s)" ] || fail "history: not newest first: $s1 then $s3"
run history tick -c "$CFG"
assert_eq 0 "$RC" "history (JOB before the options)"
has "$OUT" "job tick: the last " "history: default count"

note "history --json: an array"
run history -c "$CFG" --json -n 2 tick
assert_eq 0 "$RC" "history --json exit status"
printf '%s' "$OUT" | grep -qE '^\[\{"id":"[0-9]+-[0-9]+","v":3,"run_id":"[^"]+","node":"node-'$LEADER'","term":'$TERM1',"scheduled_at":"'"$RFC"'","until":"'"$RFC"'","ticks":1,"trigger":"schedule","by":null,"started":"[^"]+","duration_ms":[0-9]+,"attempt":1,"outcome":"ok","exit_code":0,"output_bytes":3,"output_dropped":0\}, ?\{"id":.*\}\]$' || fail "history --json: $OUT"
assert_eq 2 "$(printf '%s' "$OUT" | grep -o '"outcome":"ok"' | wc -l)" "history --json --count 2"

note "history: no runs, unknown jobs, a key of the wrong type"
run history -c "$CFG" berlin
assert_eq 0 "$RC" "history of a job without runs"
assert_eq "no runs recorded for berlin" "$OUT" "history of a job without runs"
expect_fail 1 history "no job \"nope\": not in $T/jobs.yaml, and no runs recorded" -c "$CFG" nope
assert_eq "" "$OUT" "stdout of history of an unknown job"
expect_fail 1 history "no job \"nope\": not in $T/jobs.yaml, and no runs recorded" -c "$CFG" --json nope
assert_eq "" "$OUT" "stdout of history --json of an unknown job"
rcli xadd 'baton:{tools}:runs:ghost' '*' run_id r1 node node-z term 9 scheduled_at 2026-01-02T07:00:00Z started '' duration_ms 0 outcome failed result 'exit 127' attempt 1 >/dev/null
run history -c "$CFG" ghost
assert_eq 0 "$RC" "history of a removed job"
assert_eq "job ghost (not in jobs.yaml): the last 1 record, newest first" "$(printf '%s\n' "$OUT" | sed -n 1p)" "history of a removed job"
printf '%s\n' "$OUT" | grep -qE '^2026-01-02T07:00:00Z +node-z +9 +- +- +- +failed \(exit 127\) +1 +r1$' || fail "history: a run that never started: $OUT"
run history -c "$CFG" --json ghost
has "$OUT" '"v":1,"run_id":"r1","node":"node-z","term":9,"scheduled_at":"2026-01-02T07:00:00Z","until":"2026-01-02T07:00:00Z","ticks":1,"trigger":"","by":null,"started":null,"duration_ms":0,"attempt":1,"outcome":"failed","exit_code":127}]' "history --json: a version 1 record of a run that never started"
rcli set 'baton:{tools}:runs:weird' x >/dev/null
run history -c "$CFG" weird
assert_eq 69 "$RC" "history of a key of the wrong type"
assert_eq "" "$OUT" "stdout of a failed history"
assert_eq "baton: history: $REDIS_URL: redis error: WRONGTYPE Operation against a key holding the wrong kind of value (while reading the history of job weird)" "$ERR" "history of a key of the wrong type"
assert_eq 1 "$(printf '%s\n' "$ERR" | wc -l)" "history error is one line"

# ---- step-down ------------------------------------------------------------------------
note "step-down: another node leads, the old leader keeps running"
old=$LEADER
run step-down -c "$CFG"
assert_eq 0 "$RC" "step-down exit status ($ERR)"
printf '%s\n' "$OUT" | grep -qE "^leader node-$old \(term $TERM1\) stepped down; node-[abc] leads now \(term [0-9]+\)\$" || fail "step-down output: $OUT"
wait_working 2 5
new=$LEADER TERM2=$TERM
has "$OUT" "node-$new leads now (term $TERM2)" "step-down names the new leader"
grep -q '"to":"releasing","trigger":"step_down"' "$T/node-$old.out" || fail "node-$old did not step down through releasing"
alive "$(pid_of "node-$old")" || fail "node-$old exited on step-down"
run status -c "$CFG"
printf '%s\n' "$OUT" | grep -qE "^leader:  node-$new \(term $TERM2, " || fail "status after step-down: $OUT"

note "step-down: a stopped leader does not hand over within --wait"
kill -STOP "$(pid_of "node-$new")"
expect_fail 1 step-down "leader node-$new (term $TERM2) did not step down within 300ms (it lets running jobs finish first, up to shutdown_grace: try a longer --wait)" -c "$CFG" --wait 300ms
kill -CONT "$(pid_of "node-$new")"
wait_working 3 10
TERM3=$TERM
note "node-$LEADER leads (term $TERM3)"

note "node names: a second supervisor with a live one's name refuses to start (75)"
run run -c "$T/node-$LEADER.yaml"
assert_eq 75 "$RC" "a second node-$LEADER"
assert_eq "" "$OUT" "stdout of a refused supervisor"
printf '%s\n' "$ERR" | grep -qE "^baton: run: node name \"node-$LEADER\" is in use in group \"tools\" by pid $(pid_of "node-$LEADER") on host $(hostname) \(last heartbeat [0-9]+ ms ago\); stop that supervisor, or give this one another name \(node: in baton.yaml\)\$" \
    || fail "refused supervisor's message: $ERR"

note "members: a stopped node is listed as stopped, and forgotten 1 minute after"
F=$(for n in a b c; do [ "$n" != "$LEADER" ] && echo "$n"; done | head -n1)
kill -TERM "$(pid_of "node-$F")"; wait_exit "node-$F" 5
assert_eq 0 "$EXIT_CODE" "node-$F after SIGTERM"
run status -c "$CFG"
printf '%s\n' "$OUT" | grep -qE "^node-$F +stopped " || fail "status: node-$F is not shown stopped: $OUT"
seen=$(rcli hget 'baton:{tools}:seen' "node-$F"); forget=$(rcli zscore 'baton:{tools}:forget' "node-$F")
assert_eq 60000 $(( ${forget%.*} - seen )) "node-$F is forgotten 1 minute after it stopped"
# A heartbeat may land between the two reads: read until seen is stable.
for _ in $(seq 1 20); do
    seen=$(rcli hget 'baton:{tools}:seen' "node-$LEADER"); forget=$(rcli zscore 'baton:{tools}:forget' "node-$LEADER")
    [ "$(rcli hget 'baton:{tools}:seen' "node-$LEADER")" = "$seen" ] && break
done
assert_eq 300000 $(( ${forget%.*} - seen )) "a live node is forgotten 5 minutes after its last heartbeat"
# The stopped node's name is free again: it restarts under it.
spawn "node-$F" "$B" run -c "$T/node-$F.yaml"
wait_for_line "$T/node-$F.out" '"event":"following"' 5 >/dev/null

note "step-down: nobody listening, then no leader"
# (bash's "Killed" notices of the reaped supervisors go to /dev/null)
{
    for n in a b c; do kill -KILL "$(pid_of "node-$n")"; done
    for n in a b c; do wait "$(pid_of "node-$n")"; unset "PROC_PID[node-$n]"; done
} 2>/dev/null
killed=$(now_ms)
expect_fail 1 step-down "no supervisor is listening on group tools (leader node-$LEADER, term $TERM3)" -c "$CFG"
deadline=$(( $(now_ms) + 5000 ))
while [ "$(rcli exists 'baton:{tools}:leader')" != 0 ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "the dead leader's lease did not expire"
    sleep 0.05
done
expect_fail 3 step-down "no leader in group tools" -c "$CFG"
run status -c "$CFG"
assert_eq 3 "$RC" "status without a leader"
has "$OUT" "leader:  no leader (last term $TERM3)" "status without a leader"
run status -c "$CFG" --json
assert_eq 3 "$RC" "status --json without a leader"
has "$OUT" '"leader":null,"term":'$TERM3',' "status --json without a leader"
note "members: nodes not heard from show unresponsive, and are forgotten in time"
left=$(( 4200 - ($(now_ms) - killed) ))   # alive for 2 x poll (1s) + 2s after the last heartbeat
[ "$left" -gt 0 ] && sleep "$(awk "BEGIN{print $left / 1000}")"
run status -c "$CFG"
for n in a b c; do
    printf '%s\n' "$OUT" | grep -qE "^node-$n +unresponsive " || fail "status: node-$n not unresponsive: $OUT"
done
run status -c "$CFG" --json
assert_eq 3 "$(printf '%s' "$OUT" | grep -o '"alive":false' | wc -l)" "status --json: three nodes not alive"
for n in a b c; do rcli zadd 'baton:{tools}:forget' 1 "node-$n" >/dev/null; done
run status -c "$CFG"
has "$OUT" "no nodes" "status once the nodes are forgotten"

# ---- Redis unreachable -----------------------------------------------------------------------
note "Redis unreachable: one line, exit 69"
dead=$REDIS_PORT
redis_stop
for cmd in status history step-down; do
    args=(-c "$CFG"); [ "$cmd" = history ] && args+=(tick)
    t0=$(now_ms); run "$cmd" "${args[@]}"; t1=$(now_ms)
    assert_eq 69 "$RC" "$cmd with Redis down"
    assert_eq "" "$OUT" "stdout of $cmd with Redis down"
    assert_eq 1 "$(printf '%s\n' "$ERR" | wc -l)" "$cmd error is one line: $ERR"
    has "$ERR" "baton: $cmd: redis://127.0.0.1:$dead/0: " "$cmd with Redis down"
    [ $((t1 - t0)) -lt 2000 ] || fail "$cmd took $((t1 - t0)) ms with Redis down"
done
run check -c "$CFG"
assert_eq 0 "$RC" "check needs no Redis"

# ---- bad arguments ------------------------------------------------------------------------
note "bad arguments: exit 64, one exact line"
for cmd in check status history step-down; do
    run "$cmd" --help
    assert_eq 0 "$RC" "$cmd --help"
    has "$(printf '%s\n' "$OUT" | sed -n 1p)" "usage: baton $cmd [-c FILE]" "$cmd --help"
    job=(); [ "$cmd" = history ] && job=(tick)   # history also needs JOB
    expect_usage "$cmd" "--bogus: unknown option" "${job[@]}" --bogus
    expect_usage "$cmd" "--bogus: unknown option" "${job[@]}" --bogus=1
    expect_usage "$cmd" "-x: unknown option" "${job[@]}" -x
    expect_usage "$cmd" "-c: missing its value" "${job[@]}" -c
    expect_usage "$cmd" "--config: missing its value" "${job[@]}" --config
    expect_usage "$cmd" "--help: takes no value" "${job[@]}" --help=yes
    expect_usage "$cmd" "-c: the file name must not be empty" "${job[@]}" -c ''
done
expect_usage check 'unexpected argument "extra"' -c "$CFG" extra
expect_usage status 'unexpected argument "extra"' extra
expect_usage status "--json: takes no value" --json=yes
expect_usage step-down 'unexpected argument "now"' now
expect_usage step-down '--wait "0": must be greater than 0' --wait 0
expect_usage step-down '--wait "abc": expected a number at "abc" (durations look like 500ms, 10s, 1h30m)' --wait abc
expect_usage step-down '--wait "2h": at most 1h' --wait 2h
expect_usage step-down '-w: missing its value' -w
expect_usage step-down '--wait: missing its value' --wait
expect_usage history "missing JOB"
expect_usage history "missing JOB" -c "$CFG" --json
expect_usage history 'unexpected argument "b" (a RUN_ID goes with --output)' a b
expect_usage history 'unexpected argument "c"' --output a b c
expect_usage history "JOB \"a b\": a job name is 1-128 letters, digits, '_', '.' or '-'" 'a b'
expect_usage history "JOB \"\": a job name is 1-128 letters, digits, '_', '.' or '-'" ''
expect_usage history "JOB \"$(printf 'x%.0s' $(seq 129))\": a job name is 1-128 letters, digits, '_', '.' or '-'" "$(printf 'x%.0s' $(seq 129))"
for v in 0 10001 -5 abc 1x '' ' 5' 99999999999999999999; do
    expect_usage history "--count \"$v\": expected a whole number from 1 to 10000" --count "$v" tick
done
expect_usage history "--count: missing its value" tick --count
expect_usage history "--json: takes no value" --json=1 tick
expect_usage history "--co: ambiguous option (--config, --count)" --co 5 tick

note "ok"
