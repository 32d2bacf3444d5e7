#!/usr/bin/env bash
# test_examples.sh -- runs every program in examples/ against a real
# redis-server and checks the result a reader of the example would look
# for (not just the exit status):
#   payments       the locked run charges exactly 100, balance 0
#   webhook_dedup  one delivery processed, the others duplicate or
#                  already_processed, one side effect; a late one answered
#                  by the marker
#   cron_once      one node of three runs the tick; a rerun of the same tick
#                  runs nothing
#   api_limit      60 calls from 2 processes, never more than 5 at once, and
#                  5 reached
#   transfer       300 transfers both ways, no deadlock, money conserved
#   long_task      renewal keeps a 1 s lease for 3 s of work; a stolen lock
#                  is reported and the task stops early with ELOST
#   leader_daemon  one leader at a time (gained/lost alternate), terms
#                  increase, each handover within 500 ms
# Needs BATON_BUILD_DIR (CTest sets it) with the examples built.
. "$(dirname "$0")/../lib/harness.sh"

EX=${BATON_BUILD_DIR:?BATON_BUILD_DIR is not set}/examples
for e in payments webhook_dedup cron_once api_limit transfer long_task leader_daemon; do
    [ -x "$EX/$e" ] || fail "$EX/$e is missing: build with -DBATON_BUILD_EXAMPLES=ON"
done
redis_start

# run NAME [ARGS...]: runs an example (60 s at most) into $T/NAME.out;
# fails unless it exits 0.
run() {
    local name=$1; shift
    timeout 60 "$EX/$name" "$REDIS_URL" "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ "$rc" -eq 0 ] || fail "$name exited with $rc: $(tail -n 5 "$T/$name.out" "$T/$name.err")"
}
# nlines NAME REGEX: how many lines of NAME's output match REGEX.
nlines() { grep -c -E -- "$2" "$T/$1.out"; true; }
# has NAME REGEX: the output of NAME has a line matching REGEX.
has() { grep -E -q -- "$2" "$T/$1.out" || fail "$1: no line matching /$2/ in: $(cat "$T/$1.out")"; }

note "payments"
run payments
has payments '^without a lock: +charged [0-9]+ in [0-9]+ payments'
has payments '^with baton_with_lock\("account:123"\): +charged 100 in 10 payments, balance +0 \(dropped by 100\): exact$'
assert_eq 0 "$(rcli get account:123:balance)" "balance after the locked run"

note "webhook_dedup"
run webhook_dedup
assert_eq 1 "$(nlines webhook_dedup '^  delivery [1-5]: processed$')" "deliveries processed"
assert_eq 4 "$(nlines webhook_dedup '^  delivery [1-5]: (duplicate|already_processed)$')" "deliveries deduplicated"
has webhook_dedup '^  delivery 6: already_processed$'
has webhook_dedup '^processed 1, duplicate [0-9], already_processed [0-9]; side effects: 1$'

note "cron_once"
run cron_once "2026-01-01T07:00Z"
assert_eq 1 "$(nlines cron_once '^node [1-3]: ran daily-report for tick 2026-01-01T07:00Z$')" "nodes that ran the tick"
assert_eq 2 "$(nlines cron_once '^node [1-3]: skipped daily-report for tick 2026-01-01T07:00Z: (duplicate|already_processed)$')" "nodes that skipped it"
has cron_once '^daily-report ran 1 time\(s\) for tick 2026-01-01T07:00Z across 3 nodes$'
cp "$T/cron_once.out" "$T/cron_once.first.out"
run cron_once "2026-01-01T07:00Z"   # the same tick again: done already
assert_eq 0 "$(nlines cron_once ' ran daily-report')" "nodes that ran the tick again"
assert_eq 3 "$(nlines cron_once ': already_processed$')" "nodes told it was done"
has cron_once '^daily-report ran 1 time\(s\) for tick 2026-01-01T07:00Z'

note "api_limit"
run api_limit
assert_eq 2 "$(nlines api_limit '^process [12]: 30 calls made, 0 failed; 30 permits granted')" "processes that made all their calls"
has api_limit '^at most 5 calls were in flight at once \(limit 5\): respected$'

note "transfer"
run transfer
has transfer '^300 transfers done \(0 failed\) in [0-9.]+ s: no deadlock$'
has transfer '^alice 1000 \+ bob 1000 = 2000: conserved$'

note "long_task"
run long_task
has long_task '^task 1: finished 30 of 30 steps in [0-9.]+ s under a 1.0 s lease, never lost .*: kept alive by auto-renewal$'
has long_task '^  renewal thread: lock report:weekly was lost: renewal found it no longer held by this owner$'
has long_task '^task 2: stopped after [0-9.]+ s at step [0-9] of 10; baton_with_lock returned ELOST; .*: saw the loss and stopped$'

note "leader_daemon"
run leader_daemon
events=$(grep -E 'became leader|lost leadership' "$T/leader_daemon.out")
assert_eq 6 "$(printf '%s\n' "$events" | wc -l)" "leadership events"
# One leader at a time: gained and lost alternate, by the same node, with
# the same term; terms increase; each handover is quick.
prev_term=0 prev_lost_ms=
while read -r gained && read -r lost; do
    [[ $gained =~ ^\ *([0-9.]+)\ ms\ \ (node-[0-9]):\ became\ leader\ \(term\ ([0-9]+)\) ]] ||
        fail "leader_daemon: expected a gain, got: $gained"
    g_ms=${BASH_REMATCH[1]} g_node=${BASH_REMATCH[2]} g_term=${BASH_REMATCH[3]}
    [[ $lost =~ ^\ *([0-9.]+)\ ms\ \ (node-[0-9]):\ lost\ leadership\ \(term\ ([0-9]+),\ resigned\) ]] ||
        fail "leader_daemon: expected $g_node's loss, got: $lost"
    assert_eq "$g_node/$g_term" "${BASH_REMATCH[2]}/${BASH_REMATCH[3]}" "leadership lost after it was gained"
    [ "$g_term" -gt "$prev_term" ] || fail "leader_daemon: term $g_term after $prev_term"
    if [ -n "$prev_lost_ms" ]; then
        awk "BEGIN{exit !($g_ms - $prev_lost_ms < 500)}" ||
            fail "leader_daemon: handover took $(awk "BEGIN{print $g_ms - $prev_lost_ms}") ms"
    fi
    prev_term=$g_term prev_lost_ms=${BASH_REMATCH[1]}
done <<<"$events"
assert_eq 3 "$(printf '%s\n' "$events" | grep -c 'became leader' )" "leaderships"
assert_eq 3 "$(printf '%s\n' "$events" | grep -o 'node-[0-9]: became' | sort -u | wc -l)" "distinct leaders"
has leader_daemon '^3 daemons led in turn, 0 exited with an error$'
note "all examples behave"
