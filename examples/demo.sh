#!/usr/bin/env bash
# demo.sh -- watch baton work, in about a minute, on one machine.
#
#   bash examples/demo.sh
#
# Installs what it needs (deploy/setup.sh), builds, starts a throwaway
# redis-server on a free loopback port and shows:
#   1. five `baton lock` runs racing for one key: they take turns, in arrival
#      order, each with a higher fencing token;
#   2. a holder killed with SIGKILL: its command dies with it, and the next
#      waiter takes over when the lease runs out;
#   3. a lock stolen behind a holder's back: its command is stopped.
# Everything it starts is stopped when it ends (by pid).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
export BATON_TESTS_DIR=$PWD/tests
. tests/lib/harness.sh
set +e
B=$PWD/build/release/baton

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
t0=$(now_ms)
stamp() { printf '%6.2fs' "$(awk "BEGIN{print ($(now_ms) - $t0) / 1000}")"; }

redis_start
export BATON_REDIS_URL=$REDIS_URL
bold "redis-server started on $REDIS_URL (pid $REDIS_PID)"

bold "1. Five workers race for the lock 'report:daily'; each holds it 0.4 s"
echo "   (each runs: baton lock --wait 10s report:daily -- <its command>)"
for w in 1 2 3 4 5; do
    "$B" lock --wait 10s report:daily -- sh -c \
        "echo \"\$(date +%T.%N | cut -c1-12)  worker $w has the lock, fence \$BATON_FENCE\"; sleep 0.4" &
    PROC_PID[w$w]=$!
    sleep 0.05
done
for w in 1 2 3 4 5; do wait "${PROC_PID[w$w]}"; unset "PROC_PID[w$w]"; done
echo "   -> one at a time, in arrival order, and the fencing token grows with every grant."

bold "2. A worker that cannot wait is told at once (exit status 75)"
"$B" lock --ttl 5s report:daily -- sleep 2 &
PROC_PID[holder]=$!
sleep 0.2
"$B" lock --wait 0 report:daily -- echo never
echo "   -> exit status $? (75 = not acquired; see 'baton lock --help')"
wait "${PROC_PID[holder]}"; unset "PROC_PID[holder]"

bold "3. The holder is killed with SIGKILL (ttl 2s): its command dies too, the waiter takes over"
"$B" lock --ttl 2s job:import -- sh -c 'echo $$ > "$0"; echo "   importing... (pid $$)"; exec sleep 60' "$T/import.pid" &
PROC_PID[victim]=$!
sleep 0.3
"$B" lock --wait 10s job:import -- sh -c 'echo "   $(date +%T.%N | cut -c1-12)  the waiter has the lock, fence $BATON_FENCE"' &
PROC_PID[next]=$!
sleep 0.3
echo "   $(date +%T.%N | cut -c1-12)  kill -9 the holder"
kill -KILL "${PROC_PID[victim]}"; wait "${PROC_PID[victim]}" 2>/dev/null; unset "PROC_PID[victim]"
sleep 0.1
if alive "$(cat "$T/import.pid")"; then echo "   its command is still running?!"; else echo "   its command (pid $(cat "$T/import.pid")) died with it: no orphan keeps working"; fi
wait "${PROC_PID[next]}"; unset "PROC_PID[next]"
echo "   -> the lease of a crashed holder costs at most its TTL."

bold "4. Someone deletes the lock behind the holder's back: the holder's command is stopped"
"$B" lock --ttl 3s job:sync -- sh -c 'echo "   syncing... (pid $$)"; exec sleep 60' &
PROC_PID[sync]=$!
sleep 0.3
echo "   redis-cli DEL 'baton:{job:sync}'"
rcli del 'baton:{job:sync}' >/dev/null
wait "${PROC_PID[sync]}"
echo "   -> exit status $? (70 = lock lost while the command ran)"
unset "PROC_PID[sync]"

bold "Done in $(stamp). Next: 'baton lock --help', and README.md for the library API."
