# test_demo.sh -- examples/demo.sh as a newcomer meets it, with the baton
# under test (BATON_DEMO_BIN skips the install and the build):
#   - stdout piped into a file: the narrative comes out in order, the log
#     lines of each act under its heading, and no colour codes;
#   - the nodes' log lines in the order of their times, whichever node
#     wrote them; the handover the narration gives is the one the log's
#     times give; no job-control noise ("Killed") from bash;
#   - it runs for the time the README and the script say;
#   - on a terminal (script(1)) with NO_COLOR set: no colour codes either;
#   - it writes nothing into the source tree.
. "$BATON_TESTS_DIR/lib/harness.sh"
SRC=$BATON_SOURCE_DIR
touch "$T/mark"
sleep 0.01

note "stdout piped"
t0=$(now_ms)
BATON_DEMO_BIN=$BATON_BIN timeout 120 bash "$SRC/examples/demo.sh" </dev/null >"$T/demo.out" 2>"$T/demo.err"
rc=$?
took=$(( ($(now_ms) - t0) / 1000 ))
assert_eq 0 "$rc" "the demo's exit status (stderr: $(tail -n 5 "$T/demo.err"))"
grep -nE 'Killed|line [0-9]+:' "$T/demo.out" "$T/demo.err" && fail "job-control noise from bash in the demo's output"
# One duration, in the README and in the script, and the run takes it
# (within 10 s: "slow"'s window makes it vary).
said_readme=$(sed -n 's/^bash examples\/demo\.sh .*about \([0-9]*\) s.*/\1/p' "$SRC/README.md")
said_script=$(sed -n 's/^# demo\.sh -- .* in about \([0-9]*\) s.*/\1/p' "$SRC/examples/demo.sh")
[ -n "$said_readme" ] || fail "README's demo line gives no duration (about N s)"
assert_eq "$said_readme" "$said_script" "the demo's duration in the README and in the script"
note "  the demo ran for $took s (said: about $said_readme s)"
[ "$took" -ge $(( said_readme - 10 )) ] && [ "$took" -le $(( said_readme + 10 )) ] ||
    fail "the demo ran for $took s, the README says about $said_readme s"
grep -q $'\033' "$T/demo.out" && fail "colour codes in piped output: $(grep -m3 $'\033' "$T/demo.out" | cat -v)"

# The headings, in this order, each exactly once.
line_of() { grep -n -m1 -F -- "$1" "$T/demo.out" | cut -d: -f1; }
prev=0
for h in "A throwaway redis-server" "1. baton lock: five workers" "2. baton run: three supervisors" \
         "SIGTERM the leader" "SIGKILL the new leader" "3. baton status" "baton history flaky" \
         "Stopping everything" "That was baton"; do
    n=$(line_of "$h")
    [ -n "$n" ] || fail "no heading '$h' in: $(cat "$T/demo.out")"
    [ "$n" -gt "$prev" ] || fail "heading '$h' (line $n) comes before the one above it (line $prev)"
    assert_eq 1 "$(grep -c -F -- "$h" "$T/demo.out")" "occurrences of '$h'"
    prev=$n
done
# The workers of act 1 in order of their fencing tokens, under its heading.
tokens=$(sed -n "$(line_of '1. baton lock'),$(line_of '2. baton run')p" "$T/demo.out" |
    grep -oE 'worker [1-5] has the lock, fencing token [0-9]+' | awk '{print $NF}' | tr '\n' ' ')
# Fences are time-based (they never go backwards, even across a Redis
# that lost its data): five of them, each above the one before.
assert_eq 5 "$(echo "$tokens" | wc -w)" "fencing tokens printed: [$tokens]"
echo "$tokens" | tr ' ' '\n' | awk 'NF { if (NR > 1 && $1 <= prev) bad = 1; prev = $1 } END { exit bad }' \
    || fail "fencing tokens of the five workers do not increase: [$tokens]"
# Log lines come through baton logs as text, within act 2, each where it belongs.
sigterm=$(line_of "SIGTERM the leader"); sigkill=$(line_of "SIGKILL the new leader")
status=$(line_of "3. baton status"); stopping=$(line_of "Stopping everything")
first_log=$(grep -n -m1 -E '^[0-9T:.-]+Z (INFO|WARN|DEBUG|ERROR) ' "$T/demo.out" | cut -d: -f1)
[ -n "$first_log" ] && [ "$first_log" -gt "$(line_of '2. baton run')" ] || fail "log lines before act 2"
grep -q '^{' "$T/demo.out" && fail "raw JSON lines in the demo's output"
term=$(grep -n -m1 'signal_received TERM' "$T/demo.out" | cut -d: -f1)
[ -n "$term" ] && [ "$term" -gt "$sigterm" ] && [ "$term" -lt "$sigkill" ] \
    || fail "the leader's 'signal_received TERM' (line $term) is not between its heading ($sigterm) and the next ($sigkill)"
leads=$(grep -n -m1 -E '^   node-[abc] leads [0-9]+ ms after node-[abc] received the signal' "$T/demo.out" | cut -d: -f1)
[ -n "$leads" ] && [ "$leads" -gt "$sigterm" ] && [ "$leads" -lt "$sigkill" ] || fail "no handover line in act 2"
# The log lines in the order of their times, whoever wrote them.
grep -oE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z (INFO|WARN|DEBUG|ERROR) ' "$T/demo.out" | cut -d' ' -f1 |
    awk 'NR > 1 && $1 < prev { print "line " NR ": " $1 " after " prev; bad = 1 } { prev = $1 } END { exit bad }' \
    || fail "log lines out of time order: $(grep -m3 -E 'signal_received|following|acquiring -> working' "$T/demo.out")"
# The handover it tells is the one its log shows: from the old leader's
# signal_received to the new leader's acquiring -> working.
read -r new_leader told old_leader < <(sed -n "${leads}s/^   \(node-[abc]\) leads \([0-9]*\) ms after \(node-[abc]\) .*/\1 \2 \3/p" "$T/demo.out")
t_sig=$(sed -n "${sigterm},${sigkill}p" "$T/demo.out" | grep -m1 -E "^[^ ]+ INFO  $old_leader signal_received TERM" | cut -d' ' -f1)
t_lead=$(sed -n "${sigterm},${sigkill}p" "$T/demo.out" | grep -m1 -E "^[^ ]+ INFO  $new_leader transition acquiring -> working" | cut -d' ' -f1)
[ -n "$t_sig" ] && [ -n "$t_lead" ] || fail "the handover's lines: signal_received [$t_sig], working [$t_lead]"
assert_eq "$(( $(ts_ms "$t_lead") - $(ts_ms "$t_sig") ))" "$told" "the handover told (ms) against the log's times ($t_sig, $t_lead)"
# The crash takeover: within the lease (3 s) of the kill.
took_over=$(sed -n 's/^   node-[abc] leads \([0-9]*\) ms after the kill, .*/\1/p' "$T/demo.out")
[ -n "$took_over" ] && [ "$took_over" -gt 0 ] && [ "$took_over" -le 3500 ] || fail "the takeover after the kill: [$took_over] ms"
grep -n -E 'transition acquiring -> working' "$T/demo.out" | cut -d: -f1 | awk -v a="$sigkill" -v b="$status" \
    '$1 > a && $1 < b {found=1} END {exit !found}' || fail "no takeover logged after the SIGKILL"
# The third leader (start, SIGTERM, SIGKILL) is the one status shows.
terms=$(sed -n "1,${status}p" "$T/demo.out" | grep -E 'transition acquiring -> working' | grep -oE 'term=[0-9]+' | cut -d= -f2)
assert_eq 3 "$(echo "$terms" | wc -l)" "leaderships before status: [$terms]"
sed -n "$status,${stopping}p" "$T/demo.out" | grep -qE "^   leader:  node-[abc] \(term $(echo "$terms" | tail -n1), " \
    || fail "status: the leader is not the third one (term $(echo "$terms" | tail -n1))"

note "on a terminal with NO_COLOR set"
NO_COLOR=1 BATON_DEMO_BIN=$BATON_BIN TERM=xterm timeout 120 \
    script -qefc "bash '$SRC/examples/demo.sh'" /dev/null </dev/null >"$T/tty.out" 2>&1
assert_eq 0 "$?" "the demo's exit status on a terminal"
grep -q "That was baton" "$T/tty.out" || fail "the demo on a terminal did not finish: $(tail -n 5 "$T/tty.out")"
grep -q $'\033' "$T/tty.out" && fail "colour codes on a terminal with NO_COLOR: $(grep -m3 $'\033' "$T/tty.out" | cat -v)"

note "baton logs colours a terminal, unless NO_COLOR is set"
line='{"ts":"T","level":"warn","event":"x","node":"n"}'
script -qefc "echo '$line' | '$BATON_BIN' logs" /dev/null </dev/null | grep -q $'\033\[33mWARN' \
    || fail "baton logs on a terminal is not coloured"
NO_COLOR=1 script -qefc "echo '$line' | '$BATON_BIN' logs" /dev/null </dev/null | grep -q $'\033' \
    && fail "baton logs coloured a terminal with NO_COLOR set"

note "nothing written into the source tree"
changed=$(find "$SRC" -newer "$T/mark" -not -path "$SRC/.git/*" -not -path "$SRC/build*" -print | head -n 20)
[ -z "$changed" ] || fail "the demo wrote into the source tree: $changed"
note "ok"
