# test_chaos.sh -- exactly once under failures, under each concurrency
# policy. Three supervisors run a job every second that appends
# "BATON_SCHEDULED_AT BATON_FENCE BATON_NODE" to a ledger. For CHAOS_SECONDS
# (default 25 per policy) a random node is SIGKILLed, SIGTERMed or
# SIGSTOPped for longer than the lease, and restarted; once, redis-server
# itself is restarted (AOF, appendfsync always: what exactly-once across a
# Redis restart requires). Then, for every second of the window:
#   - it ran at most once (0 doubled);
#   - it ran, or the history records why not, and only where the policy says
#     a tick may not run: forbid may skip a tick that fires while a run is
#     alive, replace may supersede or stop one, allow does neither;
#     a run that started and was stopped before writing its line (the
#     shim's fence acting for a frozen leader) counts as run, once, and so
#     does one whose node's log shows it started and the node SIGKILLed
#     before it ended (it died with its node, as designed: on a loaded
#     machine the job may not have written its line by the signal); a tick
#     claimed ahead (25 ms before its instant) whose leader lost its lease
#     before the instant is recorded failed_to_start, not run (deploy/guarantees.md), and
#     so is, over a quorum, a tick whose claim was undecided when its node
#     stopped leading;
#   - fences never go down as time goes up.
#
# CHAOS_RUN_ON=leader|any|label|all: where the ledger job runs (default:
# all three policies on the leader, then a short forbid round,
# CHAOS_FLEET_SECONDS (default 12; 6 on all, with 7 s without faults at
# its end), on any, on a label and on all). any:
# every node a member of capacity 1; label: run_on {labels: [chaos]},
# carried by n1 and n2 only; all: run_on all, each node's run once.
# On members, each run also writes its start and end with its node: no
# node may ever run more than its capacity at once (0 over capacity), and
# a run recorded lost (its member frozen or killed: its registration
# lapsed) or not started for want of a member carrying the label counts as
# recorded, as a failed_to_start of the claim does.
# all: the guarantee is once per (node, tick), and the ledger is checked
# per (node, tick) (check_ledger_members, tests/lib/ledger.sh, where the
# rule is written in full): no node ran a tick twice; a node "in the
# group" for a tick -- its process running, not stopped, not being killed
# or shut down, and redis-server up, throughout [tick - 2 s, tick + lease
# + 2 s], and started 1 s or more before -- ran it, or a record says why
# (about the whole tick: superseded, a claim that did not start; about
# that node: skipped while its own earlier run lived -- forbid applies per
# node on all, and a whole tick skipped is a defect --, superseded there
# by a newer tick (replace, per node too), its offer not accepted in
# time, or accepted and lost before its start, or its run lost); a node
# out of the group around a tick may or may not have run it
# (both are right); fences never go down; no node over its capacity. The
# test records when it sends each fault (faults-*.txt) for this; the check
# is first run on a made-up ledger with one defect at a time
# (selftest_all), each of which it must find.
# CHAOS_POLICY=forbid|allow|replace runs one policy (default: all three);
# CHAOS_SEED replays a run. tests/bench/bench_chaos.sh runs 5 minutes each.
# CHAOS_QUORUM=1 runs the same over a Redlock quorum of five masters (AOF,
# appendfsync always; lease 2 s, node_timeout 150 ms): the Redis restart
# restarts one master (quarantined for max_ttl, then counted), the history
# is the union of the masters', the leader the node a majority names
# (bench_chaos.sh --quorum).
#
# Signals are sent half-way between ticks: a supervisor that dies takes its
# running job with it (by design: no orphans), and the ledger job lives ~2
# ms; this test is about which ticks are scheduled, not about that luck.
. "$BATON_TESTS_DIR/lib/harness.sh"
. "$BATON_TESTS_DIR/lib/ledger.sh"
B=$BATON_BIN
SECONDS_TOTAL=${CHAOS_SECONDS:-25}
POLICIES=${CHAOS_POLICY:-forbid allow replace}
SEED=${CHAOS_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
QUORUM=${CHAOS_QUORUM:-}
note "seed $SEED (CHAOS_SEED=$SEED to replay), $SECONDS_TOTAL s per policy: $POLICIES${QUORUM:+, over a quorum of 5 masters}"
if [ -n "$QUORUM" ]; then
    MP=() MPID=() MDIR=()
    for i in 0 1 2 3 4; do
        redis_start --appendonly yes --appendfsync always
        MP[$i]=$REDIS_PORT MPID[$i]=$REDIS_PID MDIR[$i]=$REDIS_DIR
    done
    GROUP_URL="redis-quorum://127.0.0.1:${MP[0]},127.0.0.1:${MP[1]},127.0.0.1:${MP[2]},127.0.0.1:${MP[3]},127.0.0.1:${MP[4]}/0?max_ttl=3000&node_timeout=150"
    LEASE=2s TIMEOUT=400ms STOP_S=2.6 BACKLOG_S=4
    sleep 3.2 # masters younger than max_ttl do not count
    # The history: every master's, each record once. The leader: the node
    # a majority of the masters names.
    chaos_history() {
        local i
        for i in 0 1 2 3 4; do REDIS_PORT=${MP[$i]} history_ranges "$@"; done | sort -u
    }
    leader_of() {
        local i
        for i in 0 1 2 3 4; do redis-cli -p "${MP[$i]}" get "baton:{$1}:leader" 2>/dev/null; done |
            sed -n 's/^[0-9a-f]\{48\}://p' | sort | uniq -c | awk '$1 >= 3 {print $2}'
    }
    # One master restarted (AOF): quarantined for max_ttl, then counted.
    chaos_restart_redis() {
        local i=$(( RANDOM % 5 ))
        REDIS_PID=${MPID[$i]} REDIS_PORT=${MP[$i]} REDIS_DIR=${MDIR[$i]}
        REDIS_ARGS=(--appendonly yes --appendfsync always)
        redis_restart
        MPID[$i]=$REDIS_PID
    }
else
    redis_start --appendonly yes --appendfsync always
    GROUP_URL=$REDIS_URL
    LEASE=1s TIMEOUT=200ms STOP_S=1.6 BACKLOG_S=3
    chaos_history() { history_ranges "$@"; }
    chaos_restart_redis() { redis_restart; }
fi

mid_second() { # sleep until the next X.5 s
    local ns; ns=$(date +%N); ns=${ns#0}; ns=${ns#0}
    sleep "$(awk "BEGIN{d=(1500000000 - $ns) / 1e9; if (d > 1) d -= 1; print d}")"
}
# still_mid_second: true while the clock is between X.2 and X.8 s. A loaded
# machine can delay this script by hundreds of ms, and a signal that lands
# just before a tick hits the run being started (a leader claims a tick 25
# ms ahead and prepares its run): the fault is then skipped, not sent.
still_mid_second() { local ms=$(( $(date +%s%3N) % 1000 )); [ "$ms" -ge 200 ] && [ "$ms" -le 800 ]; }

# check_capacity: no node ran more than its capacity (1) at once: a run
# without its end line died with its node and is left out. (run_policy's
# $caps, $policy, $on.)
check_capacity() {
    local over
    over=$(awk 'NR == FNR { if ($2 == "-") done[$4] = 1; next }
        !($4 in done) { next }
        $2 == "+" { n[$3]++; if (n[$3] > 1) { print $3 " at " $1; exit } }
        $2 == "-" { n[$3]-- }' "$caps" <(sort -n "$caps"))
    [ -z "$over" ] || fail "$policy on $on: a node ran more than its capacity: $over"
}

# check_all: run_on: all's checks (check_ledger_members, tests/lib/
# ledger.sh: once per (node, tick), each node in the group around a tick
# ran it or a record says why) and capacity, and its summary line.
# (run_policy's $ledger, $faults, $group, $policy, $on and fault counts.)
check_all() {
    local res ran checked down rec nsi
    history_members "$group" ledger "$T/$policy-$on"-n*.out > "$T/history-$policy-$on.txt"
    if ! res=$(check_ledger_members "$ledger" "$T/history-$policy-$on.txt" "$faults" "n1 n2 n3" \
               $(( ${LEASE%s} * 1000 )) "$policy"); then
        { echo "faults:"; cat "$faults"; echo "ledger (tail):"; sort "$ledger" | tail -n 30
          echo "history (first last outcome node started_ms end_ms, tail):"
          tail -n 30 "$T/history-$policy-$on.txt"; } >&2
        fail "$policy on all: (node, tick) pairs doubled, missing or under a lower fence (above): $res"
    fi
    read -r ran checked down rec nsi _ <<<"$res"
    [ "$checked" -ge 3 ] ||
        fail "$policy on all: only $checked (node, tick) pairs had their node in the group around the tick: the check checked too little"
    check_capacity
    local first last terms_seen
    first=$(head -n1 "$ledger.ran" | cut -d' ' -f1)
    last=$(tail -n1 "$ledger.ran" | cut -d' ' -f1)
    terms_seen=$(awk '{print $2}' "$ledger" | sort -un | wc -l)
    note "  $policy on all: $kills SIGKILL ($backlogs with everyone frozen), $terms SIGTERM, $stops SIGSTOP, redis restarted; $((last - first + 1)) s x 3 nodes: $ran (node, tick) ran once, $checked checked with the node in the group, $rec recorded ($nsi failed_to_start on a node in the group), $down left out with their node down, 0 doubled, 0 missing, under $terms_seen terms"
    printf '{"quorum":false,"run_on":"all","over_capacity":0,"policy":"%s","seconds":%d,"nodes":3,"ran":%d,"checked_in_group":%d,"recorded":%d,"not_started_in_group":%d,"out_of_group":%d,"doubled":0,"missing":0,"fence_regressions":0,"sigkill":%d,"sigterm":%d,"sigstop":%d,"backlogs":%d,"redis_restarts":1,"terms":%d}\n' \
        "$policy" $((last - first + 1)) "$ran" "$checked" "$rec" "$nsi" "$down" "$kills" "$terms" "$stops" "$backlogs" "$terms_seen" \
        >> "$T/summary.jsonl"
}

run_policy() {
    local policy=$1 on=${2:-leader} secs=${3:-$SECONDS_TOTAL}
    local group=chaos-$1-$on
    local ledger=$T/ledger-$policy-$on.txt caps=$T/caps-$policy-$on.txt run_on=leader
    local faults=$T/faults-$policy-$on.txt
    case $on in any) run_on=any ;; label) run_on="{labels: [chaos]}" ;; all) run_on=all ;; esac
    cat > "$T/jobs-$policy.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1h
    concurrency: $policy
    run_on: $run_on
    shell: "echo \$(date +%s%N) + \$BATON_NODE \$BATON_RUN_ID >> $caps; echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $ledger; sleep 0.2; echo \$(date +%s%N) - \$BATON_NODE \$BATON_RUN_ID >> $caps"
EOF
    declare -A GEN=()
    start() {
        local n=$1
        GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
        local labels=
        [ "$on" = label ] && [ "$n" != n3 ] && labels="labels: [chaos]"
        cat > "$T/$policy-$on-$n.yaml" <<EOF
node: $n
redis: "$GROUP_URL"
group: $group
lease: {ttl: $LEASE}
redis_timeout: $TIMEOUT
poll: 1s
shutdown_grace: 2s
history: 100000
jobs: $T/jobs-$policy.yaml
capacity: 1
$labels
EOF
        fault start "$n"
        spawn "$policy-$on-$n.${GEN[$n]}" "$B" run -c "$T/$policy-$on-$n.yaml"
    }
    # fault WHAT NODE: the time of a fault (or a start, a SIGCONT), for the
    # check of run_on: all (which nodes were in the group around a tick)
    fault() { local ms; at_ms ms; echo "$ms $1 ${2:--}" >> "$faults"; }
    pid() { pid_of "$policy-$on-$1.${GEN[$1]}"; }
    # True when a node started tick $1's run and died (SIGKILL: its log
    # ends without "stopped") before the run ended: the run died with it
    # (no orphans), once, before it wrote its line, and no record says so.
    died_with_node() {
        local iso f id
        iso=$(date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ)
        for f in "$T/$policy-$on"-n*.out; do
            id=$(grep "\"event\":\"job_start\".*\"scheduled_at\":\"$iso\"" "$f" |
                sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' | tail -n1)
            [ -n "$id" ] || continue
            grep -q "\"event\":\"job_end\".*\"run_id\":\"$id\"" "$f" && continue
            grep -q '"event":"stopped"' "$f" && continue
            return 0
        done
        return 1
    }

    for n in n1 n2 n3; do start $n; done
    sleep 2
    local end=$(( $(now_ms) + secs * 1000 )) half=$(( $(now_ms) + secs * 500 ))
    local restarted_redis=0 kills=0 terms=0 stops=0 backlogs=0 n
    while [ "$(now_ms)" -lt "$end" ]; do
        sleep $(( RANDOM % 2 + 1 ))
        mid_second
        if [ $restarted_redis -eq 0 ] && [ "$(now_ms)" -ge "$half" ]; then
            fault redis-down
            chaos_restart_redis
            fault redis-up
            restarted_redis=1
            continue
        fi
        n=n$(( RANDOM % 3 + 1 ))
        still_mid_second || continue
        case $(( RANDOM % 4 )) in
        0) fault kill $n; kill -KILL "$(pid $n)"; wait_exit "$policy-$on-$n.${GEN[$n]}" 5; kills=$((kills + 1)); start $n ;;
        1) fault term $n; kill -TERM "$(pid $n)"; wait_exit "$policy-$on-$n.${GEN[$n]}" 10
           assert_eq 0 "$EXIT_CODE" "exit status of $n after SIGTERM"; terms=$((terms + 1)); start $n ;;
        2) fault stop $n; kill -STOP "$(pid $n)"; sleep "$STOP_S"; kill -CONT "$(pid $n)"; fault cont $n
           stops=$((stops + 1)) ;;
        3) # nobody leads for a while: a backlog of several ticks for the next leader
           local l m; l=$(leader_of "$group")
           [ -n "$l" ] || continue
           for m in n1 n2 n3; do [ "$m" = "$l" ] || { fault stop $m; kill -STOP "$(pid $m)"; }; done
           if ! still_mid_second; then
               for m in n1 n2 n3; do [ "$m" = "$l" ] || { kill -CONT "$(pid $m)"; fault cont $m; }; done
               continue
           fi
           fault kill "$l"; kill -KILL "$(pid "$l")"; wait_exit "$policy-$on-$l.${GEN[$l]}" 5; sleep "$BACKLOG_S"
           for m in n1 n2 n3; do [ "$m" = "$l" ] || { kill -CONT "$(pid $m)"; fault cont $m; }; done
           start "$l"; kills=$((kills + 1)); backlogs=$((backlogs + 1)) ;;
        esac
    done
    # all: a quiet stretch at the end, so that some ticks have every node
    # in the group throughout their window (check_all wants one tick of
    # each node: 3 pairs; after a node's start, its ticks from 3 s on are)
    if [ "$on" = all ]; then sleep 7; else sleep 2; fi
    for n in n1 n2 n3; do fault term $n; kill -TERM "$(pid $n)"; done
    for n in n1 n2 n3; do wait_exit "$policy-$on-$n.${GEN[$n]}" 10; done

    [ -s "$ledger" ] || fail "$policy: empty ledger"
    if [ "$on" = all ]; then
        check_all
        return
    fi
    local dups
    dups=$(awk '{print $1}' "$ledger" | sort | uniq -d)
    [ -z "$dups" ] || fail "$policy: ticks run twice: $(echo $dups | head -c 300)"
    local first last
    first=$(date -u -d "$(awk '{print $1}' "$ledger" | sort | head -n1)" +%s)
    last=$(date -u -d "$(awk '{print $1}' "$ledger" | sort | tail -n1)" +%s)
    # Seconds not in the ledger must have a record of why, allowed by the policy.
    chaos_history "$group" ledger > "$T/history-$policy-$on.txt"
    awk '{print $1}' "$ledger" | while read -r t; do date -u -d "$t" +%s; done | sort -n > "$T/ran-$policy-$on.txt"
    local missing="" skipped=0 superseded=0 killed=0 fenced=0 ahead=0 withnode=0 s why
    for s in $(seq "$first" "$last"); do
        grep -qx "$s" "$T/ran-$policy-$on.txt" && continue
        why=$(awk -v s="$s" '$1 <= s && s <= $2 {print $3; exit}' "$T/history-$policy-$on.txt")
        case "$policy:$why" in
        forbid:skipped) # only a tick that fired while a run was alive
            awk -v s="$s" '$4 > 0 && $4 <= s * 1000 + 1000 && $5 >= s * 1000 {ok = 1} END {exit !ok}' \
                "$T/history-$policy-$on.txt" || missing="$missing $(date -u -d "@$s" +%H:%M:%S)(skipped, no run alive)"
            skipped=$((skipped + 1)) ;;
        replace:superseded) superseded=$((superseded + 1)) ;;
        replace:killed) killed=$((killed + 1)) ;;
        *:lost) # on a member: its registration lapsed while it ran (the
                # member frozen or killed, the run stopped by its shim)
            [ "$on" != leader ] || missing="$missing $(date -u -d "@$s" +%H:%M:%S)(lost on the leader)"
            fenced=$((fenced + 1)) ;;
        *:failed_to_start) # claimed 25 ms ahead, and its leader lost the lease
                           # (frozen, cut off) before the instant; or (a quorum)
                           # undecided when its node stopped leading; or (on
                           # members) no live member for it: not run, recorded
            grep -hE '"event":"(job_end|tick_skipped)".*"scheduled_at":"'"$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%SZ)"'".*"outcome":"failed_to_start".*(before the tick|claim was undecided|member)' \
                "$T/$policy-$on"-n*.out >/dev/null || missing="$missing $(date -u -d "@$s" +%H:%M:%S)(failed_to_start, not a claim ahead)"
            ahead=$((ahead + 1)) ;;
        *:killed) # started, then stopped by the lease's fence (a frozen
                  # leader's shim) before it wrote its line: it ran once
            awk -v s="$s" '$1 <= s && s <= $2 && $4 > 0 {ok = 1} END {exit !ok}' \
                "$T/history-$policy-$on.txt" || missing="$missing $(date -u -d "@$s" +%H:%M:%S)(killed, never started)"
            fenced=$((fenced + 1)) ;;
        *) if [ -z "$why" ] && died_with_node "$s"; then
               withnode=$((withnode + 1))
           else
               missing="$missing $(date -u -d "@$s" +%H:%M:%S)(${why:-no record})"
           fi ;;
        esac
    done
    [ -z "$missing" ] || fail "$policy: ticks neither run nor allowed to be left out:$missing"
    sort "$ledger" | awk '$2 < f {print "fence went down at " $1; bad=1} {f=$2} END{exit bad}' \
        || fail "$policy: a later tick ran under a lower fence"
    [ "$on" = leader ] || check_capacity
    local got terms_seen
    got=$(wc -l < "$ledger")
    terms_seen=$(awk '{print $2}' "$ledger" | sort -un | wc -l)
    note "  $policy on $on: $kills SIGKILL ($backlogs with everyone frozen), $terms SIGTERM, $stops SIGSTOP, redis restarted; $((last - first + 1)) s: $got ran once, $skipped skipped, $superseded superseded, $killed replaced, $fenced stopped by the fence, $ahead claimed ahead or undecided and not started (each recorded), $withnode died with their node, 0 doubled, under $terms_seen terms"
    printf '{"quorum":%s,"run_on":"%s","over_capacity":0,"policy":"%s","seconds":%d,"ran":%d,"skipped":%d,"superseded":%d,"replaced":%d,"fenced":%d,"not_started":%d,"died_with_node":%d,"doubled":0,"missing":0,"fence_regressions":0,"sigkill":%d,"sigterm":%d,"sigstop":%d,"terms":%d}\n' \
        "$([ -n "$QUORUM" ] && echo true || echo false)" "$on" "$policy" $((last - first + 1)) "$got" "$skipped" "$superseded" "$killed" "$fenced" "$ahead" "$withnode" "$kills" "$terms" "$stops" "$terms_seen" \
        >> "$T/summary.jsonl"
}

# selftest_all: check_ledger_members on a made-up run (ticks 100..120 of
# n1, n2, n3; n2 killed at 108.5 s and started again at 109 s: out of the
# group for ticks 106..111), clean and then with one defect each: each
# defect must be found, and what the rule allows must pass.
selftest_all() {
    local d=$T/selftest t n
    mkdir -p "$d"
    printf '90000 start n1\n90000 start n2\n90000 start n3\n108500 kill n2\n109000 start n2\n130000 term n1\n130000 term n2\n130000 term n3\n' > "$d/faults"
    for t in $(seq 100 120); do
        for n in n1 n2 n3; do
            [ "$n" = n2 ] && [ "$t" -ge 107 ] && [ "$t" -le 110 ] && continue
            echo "$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ) $(( t < 110 ? 5 : 7 )) $n"
        done
    done > "$d/clean"
    : > "$d/none"
    echo "103 103 failed_to_start n1 0 0" > "$d/n1-not-started"
    echo "103 103 skipped * 0 0" > "$d/skipped"
    printf '103 103 skipped * 0 0\n102 102 ok n2 102900 103400\n' > "$d/skipped-alive"
    printf '103 103 skipped n1 0 0\n102 102 ok n1 102900 103400\n' > "$d/n1-skipped-own-alive"
    printf '103 103 skipped n1 0 0\n102 102 ok n2 102900 103400\n' > "$d/n1-skipped-other-alive"
    printf '103 103 skipped n2 0 0\n102 102 ok n2 102900 103400\n' > "$d/n2-skipped-alive"
    echo "103 103 missed * 0 0" > "$d/missed"
    local iso103 iso104 iso115
    iso103=$(date -u -d @103 +%Y-%m-%dT%H:%M:%SZ) iso104=$(date -u -d @104 +%Y-%m-%dT%H:%M:%SZ)
    iso115=$(date -u -d @115 +%Y-%m-%dT%H:%M:%SZ)
    grep -v "^$iso103 5 n1\$" "$d/clean" > "$d/n1-103-gone"
    { cat "$d/clean"; echo "$iso104 5 n3"; } > "$d/n3-104-twice"
    sed "s/^$iso115 7 n1\$/$iso115 6 n1/" "$d/clean" > "$d/fence-down"
    local case ledger history want
    while read -r case ledger history want; do
        cp "$d/$ledger" "$d/ledger"
        if check_ledger_members "$d/ledger" "$d/$history" "$d/faults" "n1 n2 n3" 1000 forbid >/dev/null 2>&1; then
            [ "$want" = pass ] || fail "selftest of check_ledger_members: $case passed"
        else
            [ "$want" = fail ] || fail "selftest of check_ledger_members: $case failed"
        fi
    done <<EOF
clean,n2-out-of-the-group clean none pass
n1-in-the-group-missing n1-103-gone none fail
n1-missing,recorded-not-started n1-103-gone n1-not-started pass
n1-missing,skipped-with-no-run-alive n1-103-gone skipped fail
n1-missing,whole-tick-skipped-while-a-run-lived n1-103-gone skipped-alive fail
n1-missing,n1-skipped-while-its-run-lived n1-103-gone n1-skipped-own-alive pass
n1-missing,n1-skipped-while-only-n2's-run-lived n1-103-gone n1-skipped-other-alive fail
n1-missing,only-n2-skipped n1-103-gone n2-skipped-alive fail
n1-missing,missed n1-103-gone missed fail
doubled n3-104-twice none fail
fence-down fence-down none fail
EOF
}

for p in $POLICIES; do
    case $p in forbid|allow|replace) ;; *) fail "CHAOS_POLICY: $p is not forbid, allow or replace" ;; esac
done
case ${CHAOS_RUN_ON:-} in '' | all) selftest_all ;; esac
case ${CHAOS_RUN_ON:-} in
'') for p in $POLICIES; do run_policy "$p"; done
    if [ -z "$QUORUM" ]; then # over a quorum, run_on other than leader is refused
        run_policy forbid any "${CHAOS_FLEET_SECONDS:-12}"
        run_policy forbid label "${CHAOS_FLEET_SECONDS:-12}"
        run_policy forbid all "${CHAOS_FLEET_SECONDS:-6}" # and 7 s quiet at its end
    fi ;;
leader|any|label|all) for p in $POLICIES; do run_policy "$p" "$CHAOS_RUN_ON"; done ;;
*) fail "CHAOS_RUN_ON: $CHAOS_RUN_ON is not leader, any, label or all" ;;
esac
[ -n "${CHAOS_SUMMARY:-}" ] && cp "$T/summary.jsonl" "$CHAOS_SUMMARY"
note "ok"
