# test_pause.sh -- `baton pause` / `baton resume`, fleet-wide and kept in
# Redis, through real supervisors and a real redis-server:
#   1. a paused job's ticks do not run; status shows who paused it and why;
#   2. the pause holds across a failover, and across a group that restarts
#      (no node at all for a while);
#   3. resume: the paused ticks stay skipped, recorded in the history with
#      reason paused, and the next leader does not catch them up either;
#      also when the resume comes while no node leads;
#   4. resume --catchup runs them, within the catch-up window;
#   5. pause --all holds every job; resume JOB cannot lift it; resume --all
#      does;
#   6. a paused job can still be run by hand;
#   7. a pause that reaches the leader after it prepared the runs of the
#      next instant (the claim-ahead window, grown here) cancels them: none
#      runs, and a resume records the ticks skipped, reason paused;
#   8. ... and a resume with catch-up runs each of them once;
#   9. a short pause just before a tick, in a group's first term (no record
#      of its server: nothing from before the term is caught up): resume
#      --catchup runs that tick.
#  10. ticks a resume with catch-up released whose runs have not started
#      when the leader steps down are recorded (not started), once.
#  11. a pause that reaches the leader while a tick's claim is unanswered
#      leaves the tick to that claim: recorded once.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

cat > "$T/jobs.yaml" <<EOF
jobs:
  - {name: tick, schedule: "* * * * * *", catchup: 1h,
     shell: "echo \$BATON_SCHEDULED_AT \$BATON_TRIGGER >> $T/tick.txt"}
  - {name: tock, schedule: "* * * * * *", catchup: 1h,
     shell: "echo \$BATON_SCHEDULED_AT >> $T/tock.txt"}
EOF
config() {
    printf 'node: %s\nredis: %s\ngroup: pz\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\n' \
        "$1" "$REDIS_URL" "$T/jobs.yaml" > "$T/$1.yaml"
}
declare -A GEN=()
start() {
    local n=$1
    GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
    config "$n"
    spawn "$n.${GEN[$n]}" "$B" run -c "$T/$n.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
out() { echo "$T/$1.${GEN[$1]}.out"; }
leader() { rcli get 'baton:{pz}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() {
    local l
    for _ in $(seq 1 600); do
        l=$(leader)
        [ -n "$l" ] && [ "$l" != "${1:-}" ] && { echo "$l"; return; }
        sleep 0.01
    done
    fail "no leader${1:+ other than $1}"
}
config client
bt() { "$B" "$1" -c "$T/client.yaml" "${@:2}"; }
secs() { awk '{print $1}' "$1" | while read -r t; do date -u -d "$t" +%s; done; }
# ran_between FILE FROM TO: ticks of FILE in [FROM, TO] (Unix s)
ran_between() { secs "$1" | awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b' | wc -l; }
# wait_tick FILE: until FILE gets a new line (at most 3 s)
wait_tick() {
    local n0; n0=$(wc -l < "$1" 2>/dev/null || echo 0)
    for _ in $(seq 1 300); do [ "$(wc -l < "$1" 2>/dev/null || echo 0)" -gt "$n0" ] && return; sleep 0.01; done
    fail "no new tick in $(basename "$1")"
}
# wait_working: the node (of those running now) that leads, from its log.
wait_working() {
    local n
    for _ in $(seq 1 600); do
        for n in n1 n2; do
            alive "$(pid $n)" && grep -q '"to":"working"' "$(out $n)" 2>/dev/null && { echo "$n"; return; }
        done
        sleep 0.01
    done
    fail "no node leads"
}
kill_all() {
    for n in n1 n2; do kill -KILL "$(pid $n)" 2>/dev/null; done
    for n in n1 n2; do wait_exit "$n.${GEN[$n]}" 5; done
}

start n1; sleep 0.3; start n2
L=$(wait_leader)
wait_tick "$T/tick.txt"

# ---------------------------------------------------------------------
note "1. a paused job does not run; status says who paused it and why"
bt pause tick --reason "db migration" >"$T/p1.out" || fail "pause: exit $?"
grep -q '^paused tick' "$T/p1.out" || fail "pause said: $(cat "$T/p1.out")"
p_at=$(( $(date +%s) + 1 ))
wait_for_line "$(out "$L")" '"event":"job_paused".*"job":"tick".*"reason":"db migration"' 2 >/dev/null
bt pause tick | grep -q 'paused already' || fail "a second pause did not say it was paused already"
sleep 2.5
assert_eq 0 "$(ran_between "$T/tick.txt" "$p_at" 9999999999)" "runs of tick after the pause"
bt status > "$T/status.txt"
grep -qE '^tick .* paused$' "$T/status.txt" || fail "status does not show tick paused: $(cat "$T/status.txt")"
grep -q '^paused: tick since .* by .*: db migration$' "$T/status.txt" || fail "$(cat "$T/status.txt")"
bt status --json | grep -q '"name":"tick",.*"paused":{"since":"[^"]*","by":"[^"]*","reason":"db migration","all":false}' \
    || fail "status --json: $(bt status --json)"
bt status --json | grep -q '"name":"tock",.*"paused":null' || fail "tock shows paused"
wait_tick "$T/tock.txt" # the other job runs on

# ---------------------------------------------------------------------
note "2. the pause holds across a failover and a restart of the whole group"
kill -KILL "$(pid "$L")"; wait_exit "$L.${GEN[$L]}" 5
O=n1; [ "$L" = n1 ] && O=n2
L=$(wait_leader "$L")
wait_for_line "$(out "$L")" '"event":"job_paused".*"job":"tick"' 3 >/dev/null
start "$([ "$L" = n1 ] && echo n2 || echo n1)"
kill_all
sleep 1
start n1; start n2
L=$(wait_working)
wait_tick "$T/tock.txt"
sleep 1.5
assert_eq 0 "$(ran_between "$T/tick.txt" "$p_at" 9999999999)" "runs of tick after the pause, across failovers"
bt history tick -n 1 | head -n1 | grep -qE '^job tick is paused since [0-9T:.-]+Z by ' \
    || fail "history does not say the job is paused: $(bt history tick -n 1)"
grep -q '"event":"catch_up".*"job":"tick"' "$(out "$L")" && fail "the paused job was caught up: $(grep catch_up "$(out "$L")")"

# ---------------------------------------------------------------------
note "3. resume: the paused ticks stay skipped and recorded, for the next leader too"
bt resume tick >"$T/r3.out" || fail "resume: exit $?"
r_at=$(date +%s)
grep -q 'stay skipped' "$T/r3.out" || fail "resume said: $(cat "$T/r3.out")"
line=$(wait_for_line "$(out "$L")" '"event":"tick_skipped".*"job":"tick".*"reason":"paused' 3)
wait_tick "$T/tick.txt"
first=$(echo "$line" | sed 's/.*"scheduled_at":"\([^"]*\)".*/\1/')
until=$(echo "$line" | sed 's/.*"until":"\([^"]*\)".*/\1/')
[ "$(ts_ms "$first")" -le $(( p_at * 1000 )) ] || fail "the skipped range starts at $first, after the pause ($p_at)"
[ "$(ts_ms "$until")" -ge $(( (r_at - 1) * 1000 )) ] || fail "the skipped range ends at $until, before the resume ($r_at)"
bt history tick -n 5 | grep -q 'skipped x[0-9]*: paused (baton pause)' || fail "history: $(bt history tick -n 5)"
bt history tick -n 1 | grep -q 'is paused' && fail "history still says paused after the resume"
# The pause and the resume are in the history, who and why, once each (the
# second pause changed nothing), and not as runs.
who=$(id -un)@$(hostname)
bt history tick -n 200 > "$T/h3.txt"
assert_eq 1 "$(grep -cE "^[0-9T:-]+Z +(- +){5}paused by $who: db migration\$" "$T/h3.txt")" \
    "pause rows in the history: $(grep -E 'paused|resumed' "$T/h3.txt")"
assert_eq 1 "$(grep -cE "^[0-9T:-]+Z +(- +){5}resumed by $who\$" "$T/h3.txt")" \
    "resume rows in the history: $(grep -E 'paused|resumed' "$T/h3.txt")"
bt history tick -n 200 --json > "$T/h3.json"
python3 - "$T/h3.json" "$who" >"$T/py3.out" 2>&1 <<'PY' || fail "history --json: $(cat "$T/py3.out")"
import json, sys
recs = json.load(open(sys.argv[1]))
kinds = [r["kind"] for r in recs if "kind" in r]
assert kinds == ["resume", "pause"], kinds
p = [r for r in recs if r.get("kind") == "pause"][0]
assert p["by"] == sys.argv[2] and p["reason"] == "db migration" and p["job"] == "tick" and not p["all"], p
assert all("outcome" in r for r in recs if "kind" not in r)
PY
assert_eq 0 "$(rcli xrange 'baton:{pz}:runs:tick' - + | grep -c '^kind$')" "pause records among the runs"
# The next leader does not run them either.
kill -KILL "$(pid "$L")"; wait_exit "$L.${GEN[$L]}" 5
L2=$(wait_leader "$L")
sleep 1.5
grep '"event":"catch_up".*"job":"tick"' "$(out "$L2")" | grep -q '"missed_ticks":[1-9][0-9]' \
    && fail "the next leader caught up the paused ticks: $(grep catch_up "$(out "$L2")")"
assert_eq 0 "$(ran_between "$T/tick.txt" "$p_at" "$(( r_at - 1 ))")" "runs of the paused ticks"
start "$L"

note "3b. a resume while no node leads"
bt pause tick >/dev/null; p_at=$(( $(date +%s) + 1 ))
sleep 1
kill_all
sleep 1.5
bt resume tick >/dev/null; r_at=$(date +%s)
sleep 1
start n1; start n2
L=$(wait_working)
wait_tick "$T/tick.txt"; sleep 1
grep -q '"event":"tick_skipped".*"job":"tick".*"reason":"paused' "$(out "$L")" \
    || fail "the new leader did not record the paused ticks"
assert_eq 0 "$(ran_between "$T/tick.txt" "$p_at" "$(( r_at - 1 ))")" "runs of the ticks paused while no node led"

# ---------------------------------------------------------------------
note "4. resume --catchup runs the paused ticks"
bt pause tick >/dev/null; p_at=$(( $(date +%s) + 1 ))
sleep 4
bt resume tick --catchup | grep -q 'caught up' || fail "resume --catchup did not say so"
r_at=$(date +%s)
sleep 2
n=$(ran_between "$T/tick.txt" "$p_at" "$(( r_at - 1 ))")
[ "$n" -ge $(( r_at - p_at )) ] || fail "only $n of the $(( r_at - p_at )) paused ticks were caught up"
assert_eq 0 "$(secs "$T/tick.txt" | sort | uniq -d | wc -l)" "ticks run twice"
note "  $n paused ticks caught up"

# ---------------------------------------------------------------------
note "5. pause --all holds every job; resume JOB cannot lift it; resume --all does"
bt pause --all | grep -q 'paused every job' || fail "pause --all"
p_at=$(( $(date +%s) + 1 ))
sleep 2
assert_eq 0 "$(( $(ran_between "$T/tick.txt" "$p_at" 9999999999) + $(ran_between "$T/tock.txt" "$p_at" 9999999999) ))" "runs while every job is paused"
bt status --json | grep -q '"name":"tock",.*"paused":{.*"all":true}' || fail "status --json does not show --all"
bt resume tock >/dev/null 2>"$T/r5.err"; rc=$?
assert_eq 1 "$rc" "exit of resume JOB under pause --all"
grep -q 'tock stays paused' "$T/r5.err" || fail "$(cat "$T/r5.err")"
bt resume --all | grep -q 'resumed 1 paused entry' || fail "resume --all"
wait_tick "$T/tick.txt"; wait_tick "$T/tock.txt"
sleep 1
# What is left are tombstones (a resume writes one rather than deleting, so
# that a master that missed it cannot bring the pause back: deploy/topologies.md).
assert_eq "" "$(rcli hvals 'baton:{pz}:paused' | grep -v '"state":"cleared"')" "entries in force after resume --all was applied"

# ---------------------------------------------------------------------
note "6. a paused job can be run by hand"
bt pause tick >/dev/null
id=$(bt trigger tick --wait 2>/dev/null) || fail "trigger of a paused job: exit $?"
grep -q ' manual$' "$T/tick.txt" || fail "no manual run of the paused job"
bt resume tick >/dev/null
for n in n1 n2; do kill -TERM "$(pid $n)"; done
for n in n1 n2; do wait_exit "$n.${GEN[$n]}" 10; done

# ---------------------------------------------------------------------
note "7. a pause inside the claim-ahead window cancels the runs prepared for the instant"
# Eight every-second jobs whose preparations take 15 ms more each
# (BATON_TEST_FAULT=slow-prepare): the window grows past 25 ms (claim_ahead),
# and the runs of each instant wait, prepared (their shims are the leader's
# children), for up to a hundred milliseconds before it. A pause sent then
# reaches the leader before the instant: none of them may run then. The
# ticks are held for the pause's end: a resume records them skipped
# (paused); a resume with catch-up runs them (8).
{ echo "jobs:"
  for j in 1 2 3 4 5 6 7 8; do
      printf '  - {name: w%s, schedule: "* * * * * *", catchup: 1h, shell: "echo $BATON_SCHEDULED_AT $BATON_TRIGGER >> %s"}\n' "$j" "$T/w.txt"
  done; } > "$T/wide.yaml"
printf 'node: w\nredis: %s\ngroup: pw\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\n' \
    "$REDIS_URL" "$T/wide.yaml" > "$T/w.yaml"
sed 's/^group: pz$/group: pw/' "$T/client.yaml" > "$T/wclient.yaml"
spawn w env BATON_TEST_FAULT=slow-prepare "$B" run -c "$T/w.yaml"
wpid=$(pid_of w)
wait_for_line "$T/w.out" '"event":"claim_ahead".*"ahead_ms":(200|250),' 20 >/dev/null
children() { cat /proc/"$wpid"/task/*/children 2>/dev/null | wc -w; }
# pause_in_window: pauses every job once the runs of the next instant are
# prepared (three or more shims waiting, at least 50 ms before it), and
# checks that none of them runs while paused. Sets at (the instant, RFC
# 3339) and seen (the runs prepared for it).
pause_in_window() {
    local done7="" attempt t back inst until
    for attempt in 1 2 3 4 5 6 7 8; do
        seen=0 until=$(( $(now_ms) + 5000 ))
        while [ "$(now_ms)" -lt "$until" ]; do
            t=$(now_ms)
            [ $(( t % 1000 )) -le 950 ] && [ "$(children)" -ge 3 ] && { seen=$(children); break; }
            sleep 0.002
        done
        [ "$seen" -ge 3 ] || fail "no runs prepared 50 ms ahead of an instant in 5 s: $(grep claim_ahead "$T/w.out" | tail -n 3 | cut -c1-200)"
        inst=$(( t / 1000 + 1 ))
        "$B" pause -c "$T/wclient.yaml" --all >/dev/null || fail "pause --all"
        back=$(now_ms)
        if [ "$back" -lt $(( inst * 1000 - 5 )) ]; then done7=$inst; break; fi
        # The pause came back too close to the instant to tell: again.
        "$B" resume -c "$T/wclient.yaml" --all >/dev/null || fail "resume --all"
        sleep 1.2
    done
    [ -n "$done7" ] || fail "in 8 tries, no pause came back 5 ms before the instant it followed"
    sleep 1.5
    at=$(date -u -d "@$done7" +%Y-%m-%dT%H:%M:%SZ)
    assert_eq 0 "$(grep -c -- "^$at" "$T/w.txt")" "runs of the instant the pause preceded ($at; $seen prepared)"
    grep '"event":"job_end"' "$T/w.out" | grep -q "\"scheduled_at\":\"$at\"" &&
        fail "a job_end for $at: $(grep "\"scheduled_at\":\"$at\"" "$T/w.out" | grep job_end | head -n 2)"
    assert_eq 0 "$(children)" "shims left waiting"
    note "  try $attempt: $seen runs prepared for $at, none ran while paused"
}
pause_in_window
"$B" resume -c "$T/wclient.yaml" --all >/dev/null || fail "resume --all"
sleep 0.5
cancelled=$(grep '"event":"tick_skipped"' "$T/w.out" | grep "\"scheduled_at\":\"$at\",\"until\":\"$at\"" |
    grep -c '"reason":"paused (baton pause)"')
[ "$cancelled" -ge "$seen" ] ||
    fail "$seen runs were prepared for $at, $cancelled recorded skipped (paused): $(grep -E "\"scheduled_at\":\"$at\"" "$T/w.out" | cut -c1-240)"
recorded=0
for j in 1 2 3 4 5 6 7 8; do
    "$B" history -c "$T/wclient.yaml" --json -n 50 "w$j" > "$T/h7.json" || fail "history w$j"
    grep -o "{[^{}]*\"scheduled_at\":\"$at\",\"until\":\"$at\",[^{}]*}" "$T/h7.json" |
        grep -q '"outcome":"skipped","reason":"paused (baton pause)"' && recorded=$(( recorded + 1 ))
done
assert_eq "$cancelled" "$recorded" "jobs whose history has the tick of $at skipped (paused)"
assert_eq 0 "$(grep -c -- "^$at" "$T/w.txt")" "runs of $at after a resume without catch-up"
n0=$(wc -l < "$T/w.txt"); sleep 2
[ "$(wc -l < "$T/w.txt")" -gt "$n0" ] || fail "the jobs did not run again after resume --all"
note "  $cancelled recorded skipped (paused) at the resume; window: $(grep -o '"ahead_ms":[0-9]*' "$T/w.out" | tail -n1)"

note "8. a pause inside the claim-ahead window, then resume --catchup: those ticks run, once"
pause_in_window
"$B" resume -c "$T/wclient.yaml" --all --catchup >/dev/null || fail "resume --all --catchup"
sleep 1.5
ran=$(grep -c -- "^$at " "$T/w.txt")
assert_eq 8 "$ran" "runs of $at (one per job; $seen were prepared) after resume --catchup"
grep '"event":"tick_skipped"' "$T/w.out" | grep -q "\"scheduled_at\":\"$at\"" &&
    fail "a tick of $at recorded skipped: $(grep tick_skipped "$T/w.out" | grep "$at" | head -n 2)"
assert_eq 0 "$(awk '{print $1}' "$T/w.txt" | sort | uniq -c | awk '$1 > 8' | wc -l)" "instants run more than once per job"
kill -TERM "$wpid"; wait_exit w 10
note "  $ran runs of $at after the resume"

# ---------------------------------------------------------------------
note "9. a short pause just before a tick, resume --catchup: the tick runs (a group's first term)"
# In a group's first term there is no record of its server: nothing from
# before the term is caught up. What fell inside the term (a pause) is.
printf 'jobs:\n  - {name: ev, schedule: "*/2 * * * * *", catchup: 1h, shell: "echo $BATON_SCHEDULED_AT $BATON_TRIGGER >> %s"}\n' \
    "$T/ev.txt" > "$T/even.yaml"
printf 'node: e\nredis: %s\ngroup: pe\nlease: {ttl: 3s}\npoll: 1s\njobs: %s\n' "$REDIS_URL" "$T/even.yaml" > "$T/e.yaml"
sed "s/^node: e$/node: e-client/" "$T/e.yaml" > "$T/eclient.yaml"
spawn e "$B" run -c "$T/e.yaml"
wait_for_line "$T/e.out" '"to":"working"' 5 >/dev/null
for try in 1 2 3; do
    # 40 ms before an even second
    until=$(( $(now_ms) + 5000 ))
    while [ "$(now_ms)" -lt "$until" ]; do
        t=$(now_ms)
        [ $(( t / 1000 % 2 )) -eq 1 ] && [ $(( t % 1000 )) -ge 955 ] && [ $(( t % 1000 )) -le 965 ] && break
        sleep 0.002
    done
    t=$(now_ms) # the pause is sent now
    "$B" pause -c "$T/eclient.yaml" ev >/dev/null || fail "pause ev"
    # The tick is the first even second after the pause was sent: on a busy
    # machine the wait above can miss its 10 ms window (each turn spawns
    # processes), and then it is not 40 ms ahead, but still the tick at stake.
    s=$(( t / 1000 + 1 )); [ $(( s % 2 )) -eq 0 ] || s=$(( s + 1 ))
    tick=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%SZ)
    sleep 0.6
    "$B" resume -c "$T/eclient.yaml" ev --catchup >/dev/null || fail "resume ev --catchup"
    sleep 1.5
    assert_eq 1 "$(grep -c -- "^$tick " "$T/ev.txt")" "runs of $tick (paused 40 ms before it, resumed with catch-up; try $try)"
done
kill -TERM "$(pid_of e)"; wait_exit e 10

# ---------------------------------------------------------------------
note "10. resume --catchup releases the held ticks, then the leader steps down before their runs start: each is recorded, once"
# Found building the tick table (ticklife.h): a tick that a resume with
# catch-up released (held -> claimed) and whose run had not started when
# the leader let its jobs go was forgotten: no record, though the mark is
# past it, so no later leader runs it either. Here the leader is stopped
# while the resume is sent, and Redis refuses writes (CLIENT PAUSE WRITE)
# when it reads it: the released ticks' runs cannot register, the lease
# cannot be renewed, and the leader steps down first.
spawn w env BATON_TEST_FAULT=slow-prepare "$B" run -c "$T/w.yaml"
wpid=$(pid_of w)
wait_for_line "$T/w.out" '"event":"claim_ahead".*"ahead_ms":(200|250),' 20 >/dev/null
pause_in_window
kill -STOP "$wpid"
"$B" resume -c "$T/wclient.yaml" --all --catchup >/dev/null || { kill -CONT "$wpid"; fail "resume --all --catchup"; }
rcli CLIENT PAUSE 3000 WRITE >/dev/null
kill -CONT "$wpid"
wait_for_line "$T/w.out" '"to":"pausing"' 5 >/dev/null || fail "w did not step down while Redis refused writes"
for _ in $(seq 1 100); do [ "$(grep -c '"to":"working"' "$T/w.out")" -ge 2 ] && break; sleep 0.1; done
sleep 1.5
kill -TERM "$wpid"; wait_exit w 10
rcli CLIENT UNPAUSE >/dev/null
# The resume reached the leader before it stepped down (else its held
# ticks are recorded skipped, paused, as a resume that came too late).
resumed=$(grep -n '"event":"job_resumed"' "$T/w.out" | head -n 1 | cut -d: -f1)
stepped=$(grep -n '"to":"pausing"' "$T/w.out" | head -n 1 | cut -d: -f1)
[ -n "$resumed" ] && [ "$resumed" -lt "$stepped" ] || fail "the resume did not reach w before it stepped down"
x=$(date -u -d "$at" +%s) released=0
for j in 1 2 3 4 5 6 7 8; do
    recs=$(history_ranges pw "w$j" | awk -v x="$x" '$1 <= x && x <= $2 {print $3}' | tr '\n' ' ')
    [ "$(wc -w <<<"$recs")" -eq 1 ] || fail "w$j's tick of $at: records [$recs] ($seen were prepared, held)"
    [ "$recs" = "failed_to_start " ] && released=$(( released + 1 ))
done
[ "$released" -ge 1 ] || fail "no tick of $at released and let go: $(grep "$at" "$T/w.out" | cut -c1-200 | head -n 4)"
grep '"event":"job_end".*"outcome":"failed_to_start"' "$T/w.out" | grep "\"run_id\":\"$x-" |
    grep -q '"error":"released by a resume with catch-up' || fail "no reason for the released ticks let go"
assert_eq 0 "$(awk '{print $1}' "$T/w.txt" | sort | uniq -c | awk '$1 > 8' | wc -l)" "instants run more than once per job"
grep -q '"event":"tick_move_refused"' "$T/w.out" &&
    fail "a move the tick table refuses: $(grep tick_move_refused "$T/w.out" | head -n 2)"
note "  $released tick(s) of $at released and let go, each recorded failed_to_start once; the other jobs' ran or recorded once"

# ---------------------------------------------------------------------
note "11. a pause that reaches the leader while a tick's claim is unanswered: that claim decides the tick, once"
# Found building the tick table (ticklife.h): a tick whose claim's answer
# was lost was taken into the pause's range at the resume (recorded
# skipped), and recorded again (failed_to_start) when the lost claim was
# settled. The leader reaches Redis through a proxy that holds the answers
# from 0.3 s before a tick (its claim, sent 25 ms before the instant,
# applies; redis_timeout 1 s), the pause is sent meanwhile, and the
# answers flow again 1.02 s after the instant, between two tries of that
# claim: the pause comes first (when a try comes first, the tick runs, and
# the next tick is tried).
proxy_start px11
printf 'jobs:\n  - {name: lz, schedule: "* * * * * *", catchup: 1h, shell: "echo $BATON_SCHEDULED_AT >> %s"}\n' \
    "$T/lz.txt" > "$T/lz.yaml"
printf 'node: q\nredis: redis://127.0.0.1:%s/0\ngroup: pq\nlease: {ttl: 6s}\nredis_timeout: 1s\npoll: 1s\njobs: %s\n' \
    "$PROXY_PORT" "$T/lz.yaml" > "$T/q.yaml"
printf 'node: q-client\nredis: %s\ngroup: pq\njobs: %s\n' "$REDIS_URL" "$T/lz.yaml" > "$T/qclient.yaml"
spawn q "$B" run -c "$T/q.yaml"
wait_for_line "$T/q.out" '"event":"job_end".*"job":"lz"' 10 >/dev/null
held=""
for try in 1 2 3 4 5 6; do
    now=$(now_ms); next=$(( (now / 1000 + 1) * 1000 ))
    while [ "$(now_ms)" -lt $((next - 300)) ]; do sleep 0.005; done
    kill -HUP "$(pid_of px11)"
    while [ "$(now_ms)" -lt $((next + 400)) ]; do sleep 0.005; done
    "$B" pause -c "$T/qclient.yaml" lz >/dev/null || fail "pause lz"
    while [ "$(now_ms)" -lt $((next + 1020)) ]; do sleep 0.002; done
    kill -USR2 "$(pid_of px11)"
    sleep 1.5
    "$B" resume -c "$T/qclient.yaml" lz >/dev/null || fail "resume lz"
    sleep 1.5
    tick=$(date -u -d "@$((next / 1000))" +%Y-%m-%dT%H:%M:%SZ)
    # The claim of the tick lost its answer, and the pause came before
    # the claim was tried again: the tick did not run.
    grep -q "\"event\":\"claim_failed\".*\"scheduled_at\":\"$tick\"" "$T/q.out" &&
        ! grep -qx "$tick" "$T/lz.txt" && { held=$tick; break; }
done
kill -TERM "$(pid_of q)"; wait_exit q 10
[ -n "$held" ] || fail "in 6 tries, no pause reached q while a claim was unanswered: $(grep -E 'claim_|job_paused' "$T/q.out" | cut -c1-200 | tail -n 6)"
x=$(date -u -d "$held" +%s)
recs=$(history_ranges pq lz | awk -v x="$x" '$1 <= x && x <= $2 {print $3}' | tr '\n' ' ')
assert_eq "skipped " "$recs" "the records of $held, paused while its claim was unanswered"
grep -q '"event":"tick_move_refused"' "$T/q.out" &&
    fail "a move the tick table refuses: $(grep tick_move_refused "$T/q.out" | head -n 2)"
note "  try $try: $held, paused while its claim was unanswered: recorded once ($recs)"
note "ok"
