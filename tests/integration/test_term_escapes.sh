# test_term_escapes.sh -- no text baton shows a person can drive their
# terminal (issue 33, defect 10). A real supervisor and redis-server; a job
# prints a title change (ESC ] 0 ; ... BEL), a screen clear (ESC [ 2 J) and
# a carriage return; a pause reason holds the same and a line break that
# would forge a line; a command in jobs.yaml holds an ESC. Then:
#   1. `baton logs` (and the supervisor's own text log) shows job output
#      with those escaped, one line per event;
#   2. `baton status` and `baton history` show the pause reason escaped, on
#      its line;
#   3. `baton check` shows the command escaped;
#   4. `baton history --output` is raw into a pipe, escaped on a terminal;
#   5. an error message naming what the user typed is one escaped line.
# In each, no ESC, BEL or CR byte reaches the output, and the escaped text
# (\x1b...) is there to read.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v script >/dev/null || fail "script is not installed (apt-get install bsdutils)"

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: loud
    schedule: "* * * * * *"
    catchup: 0
    shell: "printf 'a\\033]0;owned\\007b\\033[2Jc\\rd\\n'"
  - name: esc
    schedule: "0 0 1 1 *"
    shell: "echo \e[2J"
EOF
node_config n1 te "$T/jobs.yaml"
node_config t1 te2 "$T/jobs.yaml" 'log: {format: text}'
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"job_output".*"job":"loud"' 10 >/dev/null
# A node of another group (it leads too) writing text.
spawn t1 "$B" run -c "$T/t1.yaml"

# raw_free FILE WHAT: FILE holds no ESC, BEL or CR byte.
raw_free() {
    if LC_ALL=C grep -q "$(printf '[\033\007\r]')" "$1"; then
        fail "$2 writes raw control characters: $(LC_ALL=C grep -n "$(printf '[\033\007\r]')" "$1" | head -3 | cat -A)"
    fi
}
want='a\x1b]0;owned\x07b\x1b[2Jc\rd'

note "1. baton logs: job output escaped, one line per event"
"$B" logs --color always "$T/n1.out" > "$T/logs.txt" 2>&1 || fail "baton logs failed: $(cat "$T/logs.txt")"
# Colour is our own escapes: remove them (ESC [ digits ; m), then none is left.
sed 's/\x1b\[[0-9;]*m//g' "$T/logs.txt" > "$T/logs-plain.txt"
raw_free "$T/logs-plain.txt" "baton logs"
grep -qF "loud: $want" "$T/logs-plain.txt" || fail "baton logs: no escaped job output in: $(grep loud: "$T/logs-plain.txt" | head -2)"
assert_eq "$(wc -l < "$T/n1.out")" "$(wc -l < "$T/logs.txt")" "lines in and out of baton logs"
printf 'not json \033[2J\r\n' | "$B" logs --color never > "$T/plain.txt"
raw_free "$T/plain.txt" "baton logs (a line that is no event)"
grep -qxF 'not json \x1b[2J\r' "$T/plain.txt" || fail "baton logs, a line that is no event: $(cat -A "$T/plain.txt")"
note "ok"

note "1b. log.format text: the supervisor's own text log is escaped too"
wait_for_line "$T/t1.out" 'job_output loud' 10 >/dev/null
kill -TERM "$(pid_of t1)"; wait_exit t1 10
raw_free "$T/t1.out" "the supervisor's text log"
grep -qF "loud: $want" "$T/t1.out" || fail "the text log: no escaped job output in: $(grep loud: "$T/t1.out" | head -2)"
note "ok"

note "2. a pause reason with a title change, a screen clear and a forged line"
reason=$(printf 'x\033]0;owned\007 \033[2J\r\nT ERROR forged')
"$B" pause -c "$T/n1.yaml" --reason "$reason" loud || fail "baton pause"
"$B" status -c "$T/n1.yaml" > "$T/status.txt" 2>&1 || fail "baton status: $(cat "$T/status.txt")"
raw_free "$T/status.txt" "baton status"
grep -qF 'x\x1b]0;owned\x07 \x1b[2J\r\nT ERROR forged' "$T/status.txt" \
    || fail "baton status: the reason is not shown escaped: $(cat "$T/status.txt")"
grep -q '^T ERROR forged' "$T/status.txt" && fail "baton status: the reason forged a line"
"$B" history -c "$T/n1.yaml" loud > "$T/history.txt" 2>&1 || fail "baton history: $(cat "$T/history.txt")"
raw_free "$T/history.txt" "baton history"
head -n1 "$T/history.txt" | grep -qF 'is paused since' || fail "baton history: $(head -n3 "$T/history.txt")"
head -n1 "$T/history.txt" | grep -qF '\x1b[2J\r\nT ERROR forged' \
    || fail "baton history: the reason is not shown escaped: $(head -n1 "$T/history.txt")"
grep -q '^T ERROR forged' "$T/history.txt" && fail "baton history: the reason forged a line"
note "ok"

note "3. baton check: a command with an ESC"
"$B" check -c "$T/n1.yaml" > "$T/check.txt" 2>&1 || fail "baton check: $(cat "$T/check.txt")"
raw_free "$T/check.txt" "baton check"
grep -qF 'command:  sh -c '"'"'echo \x1b[2J'"'" "$T/check.txt" || fail "baton check: $(grep -A3 'job esc' "$T/check.txt")"
note "ok"

note "4. baton history --output: raw into a pipe, escaped on a terminal"
"$B" history -c "$T/n1.yaml" loud --output > "$T/output.raw" || fail "history --output"
grep -qF "$(printf 'a\033]0;owned\007b')" "$T/output.raw" || fail "history --output into a pipe is not raw: $(cat -A "$T/output.raw")"
TERM=dumb timeout 20 script -qec "$B history -c $T/n1.yaml loud --output" /dev/null > "$T/output.tty" \
    || fail "history --output on a terminal"
LC_ALL=C grep -q "$(printf '[\033\007]')" "$T/output.tty" && fail "history --output on a terminal: $(cat -A "$T/output.tty")"
grep -qF "$want" "$T/output.tty" || fail "history --output on a terminal: $(cat -A "$T/output.tty")"
note "ok"

note "5. an error message is one escaped line"
"$B" history -c "$T/n1.yaml" "$(printf 'no\033[2J\nsuch')" > /dev/null 2> "$T/err.txt" && fail "history of no job succeeded"
raw_free "$T/err.txt" "an error message"
assert_eq 1 "$(wc -l < "$T/err.txt")" "lines of the error message"
grep -qF 'no\x1b[2J\nsuch' "$T/err.txt" || fail "the error message: $(cat -A "$T/err.txt")"
note "ok"
