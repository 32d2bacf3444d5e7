# test_logs_merge.sh -- `baton logs a.log b.log` merges the files by time
# (issue 33): the logs of several nodes read as one story.
#   1. two files whose lines interleave, with equal times (the first
#      file's line first), a line without a time (it stays after the line
#      before it in its file), a text-format line (its leading time), ts
#      not first, and times with no fraction or a short one: the exact
#      order;
#   2. the logs of two real supervisors of one group, written at the same
#      time: every line of both, once, in time order, each file's own lines
#      in their order; a missing file is said (exit 66) and the others are
#      still merged;
#   3. it streams: lines come out as soon as they are known to be next,
#      while an input (a fifo) is still open.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v python3 >/dev/null || fail "python3 is not installed (apt-get install python3)"

note "1. two files that interleave: the exact order"
ev() { printf '{"ts":"%s","level":"info","event":"%s","node":"%s","group":"default"}\n' "$@"; }
{
    ev 2026-01-01T00:00:00.100Z a1 a
    ev 2026-01-01T00:00:00.300Z a2 a
    echo 'a plain line after a2'
    ev 2026-01-01T00:00:00.500Z a3 a
    printf '{"ts":"2026-01-01T00:00:01Z","level":"info","event":"a4","node":"a"}\n'
} > "$T/a.log"
{
    ev 2026-01-01T00:00:00.050Z b1 b
    ev 2026-01-01T00:00:00.300Z b2 b
    echo '2026-01-01T00:00:00.400Z INFO  b b3 (a text line)'
    printf '{"level":"info","event":"b4","node":"b","ts":"2026-01-01T00:00:00.6Z"}\n'
    ev 2026-01-01T00:00:01.500Z b5 b
} > "$T/b.log"
"$B" logs --color never "$T/a.log" "$T/b.log" > "$T/merged.txt" || fail "baton logs a b: exit $?"
got=$(awk '/^a plain/ { print "plain"; next } { for (i = 1; i <= NF; i++) if ($i ~ /^[ab][0-9]$/) { print $i; break } }' "$T/merged.txt" | paste -sd' ')
# a4's time has no fraction (1.000), b4's one digit (0.600): compared as times.
assert_eq "b1 a1 a2 plain b2 b3 a3 b4 a4 b5" "$got" "the merged order"
assert_eq 10 "$(wc -l < "$T/merged.txt")" "lines merged"
# One file: as before, every line in its order.
"$B" logs --color never "$T/b.log" > "$T/one.txt" || fail "baton logs b"
assert_eq "b1 b2 b3 b4 b5" "$(awk '{print $4}' "$T/one.txt" | paste -sd' ')" "one file, in its order"
note "ok"

note "2. the logs of two real supervisors: every line once, in time order"
cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    catchup: 0
    shell: "echo tick"
EOF
for n in n1 n2; do node_config $n lm "$T/jobs.yaml"; spawn $n "$B" run -c "$T/$n.yaml"; sleep 0.3; done
sleep 3
kill -TERM "$(pid_of n1)" # a handover: n2 leads, both write meanwhile
wait_exit n1 10
sleep 2.5
kill -TERM "$(pid_of n2)"
wait_exit n2 10
"$B" logs --color never "$T/n1.out" "$T/no-such.log" "$T/n2.out" > "$T/nodes.txt" 2> "$T/nodes.err"
assert_eq 66 "$?" "exit with a missing file"
grep -q 'no-such.log' "$T/nodes.err" || fail "the missing file is not said: $(cat "$T/nodes.err")"
python3 - "$T/n1.out" "$T/n2.out" "$T/nodes.txt" <<'EOF' || fail "the merge of two real logs: see above"
import json, sys
def lines(path):
    return [json.loads(l) for l in open(path)]
a, b = lines(sys.argv[1]), lines(sys.argv[2])
out = [l.split(None, 3) for l in open(sys.argv[3]).read().splitlines()]
# Each output line: ts, level, node, rest; as the input lines, by time.
want = sorted([(l["ts"], 0, i, l) for i, l in enumerate(a)] +
              [(l["ts"], 1, i, l) for i, l in enumerate(b)], key=lambda x: (x[0], x[1]))
assert len(out) == len(want), (len(out), len(want))
for o, (ts, f, i, l) in zip(out, want):
    assert o[0] == ts and o[2] == l["node"] and o[3].startswith(l["event"]), (o, l)
ts = [o[0] for o in out]
assert ts == sorted(ts), "not in time order"
nodes = [o[2] for o in out]
switches = sum(1 for x, y in zip(nodes, nodes[1:]) if x != y)
assert switches >= 3, ("the logs did not interleave", switches)
print("  %d + %d lines merged, the node changing %d times" % (len(a), len(b), switches))
EOF
note "ok"

note "3. it streams: lines come out while an input is still open"
mkfifo "$T/live"
exec 3<>"$T/live"
spawn live bash -c 'exec 3<&- "$0" logs --color never "$1" "$2"' "$B" "$T/a.log" "$T/live"
ev 2026-01-01T00:00:00.200Z live1 c >&3
wait_for_line "$T/live.out" ' live1' 5 >/dev/null
assert_eq "a1 live1" "$(awk '{print $4}' "$T/live.out" | paste -sd' ')" "lines out while the fifo is open"
ev 2026-01-01T00:00:00.700Z live2 c >&3
exec 3>&-
wait_exit live 5
assert_eq 0 "$EXIT_CODE" "baton logs of a file and a fifo"
assert_eq "a1 live1 a2 a3 live2 a4" "$(grep -v plain "$T/live.out" | awk '{print $4}' | paste -sd' ')" "the whole merge"
note "ok"
