#!/usr/bin/env bash
# demo.sh -- watch baton work, in about 30 s, on one machine (the first run
# installs its packages and builds baton before: a minute or two more).
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
# Each supervisor writes its JSON lines into a file of its own; `show`
# writes the lines not shown yet through `baton logs`, which merges the
# files by each line's time (its ts). It shows only the lines older than
# SETTLE ms (default 300): a node writes its line within a few ms of its
# time, so none can still come with a time before one already shown, and
# the story reads in the order it happened, whichever node told it.
declare -A GEN=() SHOWN=()
NODES=(node-a node-b node-c)
show() {
    local ms=$(( ${EPOCHREALTIME/./} / 1000 - ${1:-300} )) cutoff n parts=()
    cutoff=$(date -u -d "@$(( ms / 1000 ))" +%Y-%m-%dT%H:%M:%S).$(printf %03d $(( ms % 1000 )))Z
    for n in "${NODES[@]}"; do
        [ -f "$T/$n.log" ] || continue
        # whole lines only (wc -l), up to the first one not older than cutoff
        awk -v from="${SHOWN[$n]:-0}" -v max="$(wc -l <"$T/$n.log")" -v cut="$cutoff" \
            'NR <= from { next } NR > max || substr($0, 8, 24) >= cut { exit } { print }' \
            "$T/$n.log" >"$T/$n.part"
        SHOWN[$n]=$(( ${SHOWN[$n]:-0} + $(wc -l <"$T/$n.part") ))
        parts+=("$T/$n.part")
    done
    [ ${#parts[@]} -eq 0 ] || "$B" logs --color "$COLOR" "${parts[@]}"
}
# play MS: lets the nodes run for MS ms, showing their lines as they come.
play() {
    local end=$(( ${EPOCHREALTIME/./} / 1000 + $1 ))
    while (( ${EPOCHREALTIME/./} / 1000 < end )); do show; sleep 0.2; done
    show
}
# log_ts NODE EVENT-REGEX [AFTER]: the time (ts) of NODE's first line that
# matches, at or after the time AFTER.
log_ts() {
    grep -E "$2" "$T/$1.log" | cut -c8-31 | awk -v after="${3:-}" '$0 >= after { print; exit }'
}
start() {
    GEN[$1]=$(( ${GEN[$1]:-0} + 1 ))
    "$B" run -c "$T/$1.yaml" >>"$T/$1.log" 2>>"$T/$1.err" </dev/null &
    PROC_PID[$1.${GEN[$1]}]=$!
    # Not one of this shell's jobs: a node killed with SIGKILL is no
    # "Killed" line from bash (the harness still stops it, by pid).
    disown $!
}
pid() { pid_of "$1.${GEN[$1]}"; }
leader() { rcli get 'baton:{default}:leader' | sed -n 's/^[0-9a-f]\{48\}://p'; }
# quiet [WINDOW]: waits until half a second past a tick (the jobs fire on
# whole seconds), when no line is on its way, and shows the lines: what is
# shown before the next heading is all that happened before it. WINDOW:
# also outside the 4 s that "slow" runs from every 15th second.
quiet() {
    local now
    for _ in $(seq 1 400); do
        now=${EPOCHREALTIME/./}
        (( now / 1000 % 1000 >= 450 )) &&
            { [ -z "${1:-}" ] || (( 10#$(date +%S) % 15 >= 6 )); } && break
        show
        sleep 0.05
    done
    show
}
for n in "${NODES[@]}"; do start $n; sleep 0.1; done
play 9000
# A leader hands over at once, then lets its running jobs finish (up to
# shutdown_grace) before it exits: signal outside the window of "slow",
# and the old leader exits at once too.
quiet window
L=$(leader)
bold "SIGTERM the leader ($L): it hands over and exits; a follower leads within milliseconds"
kill -TERM "$(pid "$L")"
for _ in $(seq 1 500); do N=$(leader); [ -n "$N" ] && [ "$N" != "$L" ] && break; sleep 0.01; done
sleep 0.5
show
# The handover, from the log's own times: the old leader's signal_received,
# the new leader's acquiring -> working.
t_sig=$(log_ts "$L" '"event":"signal_received"')
t_lead=$(log_ts "$N" '"event":"transition".*"to":"working"' "$t_sig")
say "$N leads $(( $(ts_ms "$t_lead") - $(ts_ms "$t_sig") )) ms after $L received the signal (the log's times: ${t_sig:11:12} signal_received, ${t_lead:11:12} working)"
play 8000
quiet
bold "SIGKILL the new leader ($N): no goodbye; the last node takes over when the lease ($DEMO_TTL) runs out"
at_ms killed
kill -KILL "$(pid "$N")"
say "its running jobs died with it; the missed tick(s) are caught up by the next leader"
play 7000
for n in "${NODES[@]}"; do [ "$n" != "$L" ] && [ "$n" != "$N" ] && C=$n; done
t_take=$(log_ts "$C" '"event":"transition".*"to":"working"')
[ -n "$t_take" ] && say "$C leads $(( $(ts_ms "$t_take") - killed )) ms after the kill, when $N's lease ran out"

bold "3. baton status"
"$B" status -c "$T/node-a.yaml" | sed 's/^/   /'
bold "baton history flaky --count 4"
"$B" history -c "$T/node-a.yaml" --count 4 flaky | sed 's/^/   /'

show
bold "Stopping everything"
for n in "${NODES[@]}"; do
    p=$(pid "$n")
    alive "$p" && kill -TERM "$p"
    while alive "$p"; do sleep 0.05; done
done
show 0
bold "That was baton: a lock with fencing tokens, a leader that runs each tick once,"
printf '%shandover in milliseconds. Next: README.md (the 60-second tour, the guarantees).%s\n' "$BOLD" "$OFF"
