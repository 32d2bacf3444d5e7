#!/usr/bin/env bash
# demo.sh -- watch baton work, in about a minute, on one machine.
#
#   bash examples/demo.sh
#
# Installs the few Debian packages it needs (deploy/setup.sh --demo: a C
# compiler, cmake, the three libraries, redis-server), builds baton into
# build/release (ignored by git; the README's tour uses it), starts a
# throwaway redis-server on a free loopback port, then:
#   1. `baton lock`: five workers racing for one lock take turns;
#   2. `baton run`: three supervisors elect a leader, which runs the jobs of
#      config/jobs.yaml while the others wait; SIGTERM hands leadership over
#      in milliseconds; SIGKILL shows a crash takeover after the lease;
#   3. `baton status` and `baton history`.
# The supervisors' JSON log lines go through `baton logs`, one readable line
# per event. Colour only on a terminal, and never with NO_COLOR set. Every
# file it makes, but the build, is in a temporary directory that is removed
# at the end, with every process it started (stopped by pid).
#
# BATON_DEMO_BIN=/path/to/baton skips the installation and the build (the
# tests run the demo so).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BATON_DEMO_BIN:-}" ]; then
    bash deploy/setup.sh --demo
fi
B=${BATON_DEMO_BIN:-$PWD/build/release/baton}
export BATON_TESTS_DIR=$PWD/tests
. tests/lib/harness.sh
set +e
DEMO_TTL=3s

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
    COLOR=always BOLD=$'\033[1m' DIM=$'\033[2m' OFF=$'\033[0m'
else
    COLOR=never BOLD= DIM= OFF=
fi
bold() { printf '\n%s%s%s\n' "$BOLD" "$*" "$OFF"; }
say() { printf '%s   %s%s\n' "$DIM" "$*" "$OFF"; }

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
say "their JSON log lines, through 'baton logs': time, level, node, event, details"
for n in node-a node-b node-c; do
    cat > "$T/$n.yaml" <<EOF
node: $n
redis: $REDIS_URL
lease: {ttl: $DEMO_TTL}
poll: 2s
shutdown_grace: 5s
jobs: $PWD/config/jobs.yaml
EOF
done
# Every supervisor writes into one pipe, read by one `baton logs`, which
# writes each line as soon as it comes: the log and the narrative above it
# stay in order whether stdout is a terminal, a pipe or a file. Each JSON
# line is one write(2), so lines of different nodes never mix.
mkfifo "$T/log"
"$B" logs --color "$COLOR" <"$T/log" &
PROC_PID[logs]=$!
exec 3<>"$T/log"
declare -A GEN=()
start() {
    GEN[$1]=$(( ${GEN[$1]:-0} + 1 ))
    "$B" run -c "$T/$1.yaml" >&3 2>>"$T/$1.err" </dev/null &
    PROC_PID[$1.${GEN[$1]}]=$!
}
pid() { pid_of "$1.${GEN[$1]}"; }
leader() { rcli get 'baton:{default}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
for n in node-a node-b node-c; do start $n; sleep 0.1; done
sleep 9
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
sleep 0.2
if (( ms > 200 )); then
    say "$N leads $ms ms after the signal (the old leader let its running jobs finish first)"
else
    say "$N leads $ms ms after the signal"
fi
sleep 8
bold "SIGKILL the new leader ($N): no goodbye; the last node takes over when the lease ($DEMO_TTL) runs out"
kill -KILL "$(pid "$N")"; wait "$(pid "$N")" 2>/dev/null
say "its running jobs died with it; the missed tick(s) are caught up by the next leader"
sleep 7

bold "3. baton status"
"$B" status -c "$T/node-a.yaml" | sed 's/^/   /'
bold "baton history flaky --count 4"
"$B" history -c "$T/node-a.yaml" --count 4 flaky | sed 's/^/   /'

bold "Stopping everything"
for n in node-a node-b node-c; do
    p=$(pid "$n"); alive "$p" && kill -TERM "$p" && wait "$p"
done
exec 3>&-
wait "${PROC_PID[logs]}" 2>/dev/null
unset 'PROC_PID[logs]'
bold "That was baton: a lock with fencing tokens, a leader that runs each tick once,"
printf '%shandover in milliseconds. Next: README.md (the 60-second tour, the guarantees).%s\n' "$BOLD" "$OFF"
