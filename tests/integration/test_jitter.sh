# test_jitter.sh -- `jitter:` through real supervisors and a real
# redis-server:
#   1. an every-second job with `jitter: 800ms` runs each tick once, at
#      the tick plus its delay, the delay being the documented function of
#      (group, job, tick) (computed here with sha1sum, independently of
#      baton); BATON_SCHEDULED_AT stays the tick, BATON_JITTER_MS is the
#      delay, and the history records it (baton history --json, and the
#      table);
#   2. a leader SIGKILLed between a tick and its delayed instant: the new
#      leader starts that tick once, at the same instant;
#   3. baton check refuses a jitter not shorter than the schedule's
#      shortest interval, at the key, and shows when each next run of a
#      job with jitter begins (the same delay).
# Timing bounds are generous (a busy 2-core machine): a run may start late,
# never before its instant.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

# delay GROUP JOB TICK JITTER_MS: jitter.h's function, in the shell:
# SHA-1 of "GROUP\0JOB\0TICK", its first 8 bytes big-endian, mod JITTER_MS
# (in two 32-bit halves: bash's integers are signed).
delay() {
    local h
    h=$(printf '%s\0%s\0%s' "$1" "$2" "$3" | sha1sum | cut -c1-16)
    local hi=$((16#${h:0:8})) lo=$((16#${h:8:8})) m=$4
    echo $(( ((hi % m) * (4294967296 % m) + lo) % m ))
}
assert_eq 162 "$(delay g backup 1700000000 800)" "the documented example (jitter.h)"

# ---------------------------------------------------------------------
note "1. jitter: 800ms on an every-second job: each tick once, at its tick plus its delay"
cat > "$T/beat.yaml" <<EOF
jobs:
  - name: beat
    schedule: "*/1 * * * * *"
    jitter: 800ms
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_JITTER_MS \$(date +%s%3N) \$BATON_NODE >> $T/beat.txt"
EOF
node_config j1 jit "$T/beat.yaml"
spawn j1 "$B" run -c "$T/j1.yaml"
wait_for_line "$T/beat.txt" . 10 >/dev/null
sleep 5
kill -TERM "$(pid_of j1)"; wait_exit j1 8
at_least 4 "runs of beat" "$(cat "$T/beat.txt")"
dups=$(awk '{print $1}' "$T/beat.txt" | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ] || fail "ticks ran twice: $dups"
while read -r sched jit started node; do
    tick=$(date -u -d "$sched" +%s)
    want=$(delay jit beat "$tick" 800)
    assert_eq "$want" "$jit" "BATON_JITTER_MS of $sched"
    late=$(( started - (tick * 1000 + want) ))
    [ "$late" -ge -5 ] && [ "$late" -le 400 ] \
        || fail "$sched (delay $want ms) started $late ms after its instant"
done < "$T/beat.txt"
note "  $(wc -l < "$T/beat.txt") runs, each at its tick + its delay ($(awk '{printf "%s ", $2}' "$T/beat.txt")ms)"
# The history: the tick, the delay, the start.
"$B" history beat -c "$T/j1.yaml" --json > "$T/beat.json" || fail "baton history --json"
first=$(head -n1 "$T/beat.txt")
sched=${first%% *}
want=$(delay jit beat "$(date -u -d "$sched" +%s)" 800)
grep -q "\"scheduled_at\":\"$sched\",[^}]*\"jitter_ms\":$want," "$T/beat.json" \
    || fail "the history of $sched lacks jitter_ms $want: $(grep -o "\"scheduled_at\":\"$sched\"[^}]*" "$T/beat.json")"
"$B" history beat -c "$T/j1.yaml" > "$T/beat.table" || fail "baton history"
if [ "$want" -gt 0 ]; then
    grep -q "^$sched .*(jitter ${want}ms)" "$T/beat.table" \
        || fail "baton history shows no delay for $sched: $(grep "^$sched" "$T/beat.table")"
fi

# ---------------------------------------------------------------------
note "2. the leader SIGKILLed between a tick and its delayed instant: the next leader starts it there, once"
cat > "$T/slow.yaml" <<EOF
jobs:
  - name: fivesec
    schedule: "*/5 * * * * *"
    jitter: 4900ms
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_JITTER_MS \$(date +%s%3N) \$BATON_NODE >> $T/slow.txt"
EOF
node_config f1 jf "$T/slow.yaml"
node_config f2 jf "$T/slow.yaml"
spawn f1 "$B" run -c "$T/f1.yaml"
sleep 0.5
spawn f2 "$B" run -c "$T/f2.yaml"
wait_for_line "$T/f1.out" '"to":"working"' 10 >/dev/null
# A tick at least 3 s from now whose delay leaves 2.5 s after the kill for
# the lease (2 s) to pass to the follower.
now=$(date +%s); tick=$(( (now + 3) / 5 * 5 + 5 )); d=0
for _ in $(seq 1 40); do
    d=$(delay jf fivesec "$tick" 4900)
    [ "$d" -ge 3800 ] && break
    tick=$((tick + 5))
done
[ "$d" -ge 3800 ] || fail "no tick with a delay of 3.8 s or more in 40 (the hash is not spread?)"
note "  tick $(date -u -d "@$tick" +%H:%M:%S), delay $d ms: SIGKILL of f1 at the tick + 300 ms"
while [ "$(now_ms)" -lt $((tick * 1000 + 300)) ]; do sleep 0.02; done
kill -KILL "$(pid_of f1)"; wait_exit f1 2
sched=$(date -u -d "@$tick" +%Y-%m-%dT%H:%M:%SZ)
line=$(wait_for_line "$T/slow.txt" "^$sched " $(( d / 1000 + 6 )))
sleep 1
assert_eq 1 "$(grep -c "^$sched " "$T/slow.txt")" "runs of the tick $sched"
read -r _ jit started node <<<"$line"
assert_eq f2 "$node" "the node that ran $sched"
assert_eq "$d" "$jit" "BATON_JITTER_MS of $sched on the new leader"
late=$(( started - (tick * 1000 + d) ))
[ "$late" -ge -5 ] && [ "$late" -le 400 ] \
    || fail "$sched (delay $d ms) started $late ms after its instant on the new leader"
note "  f2 ran it once, $late ms after its instant"
kill -TERM "$(pid_of f2)"; wait_exit f2 8

# ---------------------------------------------------------------------
note "3. baton check refuses a jitter not shorter than the schedule's interval, at the key"
cat > "$T/bad.yaml" <<EOF
jobs:
  - name: fast
    schedule: "*/2 * * * * *"
    jitter: 2s
    shell: "true"
EOF
node_config c1 jc "$T/bad.yaml"
"$B" check -c "$T/c1.yaml" > "$T/check.out" 2>&1 && fail "baton check accepted jitter: 2s every 2 s"
grep -q "bad.yaml:4:13: job \"fast\": jitter: 2s is not shorter than the schedule's shortest interval between ticks (2s)" "$T/check.out" \
    || fail "baton check: $(cat "$T/check.out")"
# baton check shows when each next run begins: its tick and the same delay.
"$B" check -c "$T/j1.yaml" > "$T/check1.out" || fail "baton check: $(cat "$T/check1.out")"
line=$(grep -m1 '^  next:' "$T/check1.out")
read -r _ sched _ start <<<"$line"
tick=$(date -u -d "$sched" +%s)
want=$(( tick * 1000 + $(delay jit beat "$tick" 800) ))
assert_eq "$want" "$(date -u -d "$start" +%s%3N)" "baton check's start of $sched"
note "ok"
