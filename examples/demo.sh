#!/usr/bin/env bash
# demo.sh -- watch baton work, in about a minute, on one machine.
#
#   bash examples/demo.sh
#
# Installs what it needs (deploy/setup.sh), builds, starts a throwaway
# redis-server on a free loopback port, then:
#   1. `baton lock`: five workers racing for one lock take turns;
#   2. `baton run`: three supervisors elect a leader, which runs the jobs of
#      config/jobs.yaml while the others wait; SIGTERM hands leadership over
#      in milliseconds; SIGKILL shows a crash takeover after the lease;
#   3. `baton status` and `baton history`.
# The supervisors' JSON log lines are shown one readable line per event.
# Everything it starts is stopped when it ends (by pid).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
export BATON_TESTS_DIR=$PWD/tests
. tests/lib/harness.sh
set +e
B=$PWD/build/release/baton
DEMO_TTL=3s

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
say() { printf '\033[2m   %s\033[0m\n' "$*"; }
pause() { sleep "$1"; }

redis_start
export BATON_REDIS_URL=$REDIS_URL
bold "A throwaway redis-server: $REDIS_URL (pid $REDIS_PID)"

# ---------------------------------------------------------------------
bold "1. baton lock: five workers race for the lock 'report:daily'; each holds it 0.3 s"
say "each runs: baton lock --wait 10s report:daily -- <its command>"
for w in 1 2 3 4 5; do
    "$B" lock --wait 10s report:daily -- sh -c \
        "echo \"   \$(date +%T.%N | cut -c1-12)  worker $w has the lock, fencing token \$BATON_FENCE\"; sleep 0.3" &
    PROC_PID[w$w]=$!
    sleep 0.03
done
for w in 1 2 3 4 5; do wait "${PROC_PID[w$w]}"; unset "PROC_PID[w$w]"; done
say "one at a time, in arrival order; the token grows with every grant, so a database"
say "can refuse a write from a holder whose lock has since passed to someone else."

# ---------------------------------------------------------------------
bold "2. baton run: three supervisors, one group, the jobs of config/jobs.yaml"
say "jobs: $(grep -c '^  - name:' config/jobs.yaml) defined (hello every 5 s, tick every 3 s, flaky fails, slow times out, one disabled)"
for n in node-a node-b node-c; do
    cat > "$T/$n.yaml" <<EOF
node: $n
redis: $REDIS_URL
group: demo
lease: {ttl: $DEMO_TTL}
poll: 2s
shutdown_grace: 5s
jobs: $PWD/config/jobs.yaml
EOF
done
# One readable line per JSON line (the raw JSON is in the logs: see README).
pretty() {
    awk -v start="$(date +%s)" '
    function f(name,   r) {
        if (match($0, "\"" name "\":\"[^\"]*\""))
            return substr($0, RSTART + length(name) + 4, RLENGTH - length(name) - 5)
        if (match($0, "\"" name "\":[-0-9.a-z]+"))
            return substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
        return ""
    }
    {
        t = substr(f("ts"), 12, 8); n = f("node"); e = f("event")
        c = n == "node-a" ? "\033[36m" : n == "node-b" ? "\033[35m" : "\033[33m"
        p = sprintf("   %s %s%-7s\033[0m ", t, c, n)
        if (e == "transition")
            printf "%s\033[1m%s -> %s\033[0m  (%s, term %s)\n", p, f("from"), f("to"), f("trigger"), f("term")
        else if (e == "following")
            printf "%sfollowing %s (term %s)\n", p, f("leader"), f("term")
        else if (e == "job_start")
            printf "%s> %s started  (tick %s, %s ms late)\n", p, f("job"), substr(f("scheduled_at"), 12, 8), f("lateness_ms")
        else if (e == "job_output")
            printf "%s  | %s: %s\n", p, f("job"), f("line")
        else if (e == "job_end")
            printf "%s< %s %s  (%s ms%s)\n", p, f("job"), f("outcome"), f("duration_ms"), f("exit_code") != "" ? ", exit " f("exit_code") : ", signal " f("signal")
        else if (e == "job_retry")
            printf "%s  retry %s in %s ms\n", p, f("job"), f("retry_in_ms")
        else if (e == "job_timeout")
            printf "%s  %s timed out after %s ms: TERM, then KILL\n", p, f("job"), f("timeout_ms")
        else if (e == "catch_up")
            printf "%scatching up %s missed tick(s) of %s\n", p, f("missed_ticks"), f("job")
        else if (e == "signal_received")
            printf "%s\033[1msignal %s\033[0m\n", p, f("signal")
        else if (e == "lease_released" || e == "draining" || e == "stopped" || e == "lease_deadline_missed")
            printf "%s%s\n", p, e
        fflush()
    }'
}
declare -A GEN=()
start() { GEN[$1]=$(( ${GEN[$1]:-0} + 1 )); spawn "$1.${GEN[$1]}" "$B" run -c "$T/$1.yaml"; }
pid() { pid_of "$1.${GEN[$1]}"; }
leader() { rcli get 'baton:{demo}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
watch_logs() { # FILES...: follow the logs (both processes are stopped by pid at the end)
    mkfifo "$T/lines"
    tail -q -n +1 -s 0.1 -F "$@" >"$T/lines" 2>/dev/null &
    PROC_PID[tail]=$!
    pretty <"$T/lines" &
    PROC_PID[pretty]=$!
}
for n in node-a node-b node-c; do start $n; sleep 0.1; done
watch_logs "$T"/node-*.1.out
pause 9
# A leader lets its running jobs finish before it hands over (up to
# shutdown_grace); "slow" runs for 4 s from every 15th second, so signal
# outside that window to show the handover itself.
for _ in $(seq 1 100); do (( 10#$(date +%S) % 15 >= 6 )) && break; sleep 0.1; done
L=$(leader)
bold "SIGTERM the leader ($L): it hands over and exits; a follower leads within milliseconds"
t0=$(date +%s%3N)
kill -TERM "$(pid "$L")"
for _ in $(seq 1 500); do N=$(leader); [ -n "$N" ] && [ "$N" != "$L" ] && break; sleep 0.01; done
ms=$(( $(date +%s%3N) - t0 ))
if (( ms > 200 )); then
    say "$N leads $ms ms after the signal (the old leader let its running jobs finish first)"
else
    say "$N leads $ms ms after the signal"
fi
pause 8
bold "SIGKILL the new leader ($N): no goodbye; the last node takes over when the lease ($DEMO_TTL) runs out"
kill -KILL "$(pid "$N")"; wait "$(pid "$N")" 2>/dev/null
say "its running jobs died with it; the missed tick(s) are caught up by the next leader"
pause 7

bold "3. baton status"
"$B" status -c "$T/node-a.yaml" | sed 's/^/   /'
bold "baton history flaky --count 4"
"$B" history -c "$T/node-a.yaml" --count 4 flaky | sed 's/^/   /'

bold "Stopping everything"
for n in node-a node-b node-c; do
    p=$(pid "$n"); alive "$p" && kill -TERM "$p" && wait "$p"
done
sleep 0.5
kill "${PROC_PID[tail]}" 2>/dev/null
wait "${PROC_PID[pretty]}" 2>/dev/null
bold "That was baton: a lock with fencing tokens, a leader that runs each tick once, and"
bold "handover in milliseconds. Next: README.md (the 60-second tour and the guarantees)."
