# test_next.sh -- `baton next`: output format, options, exit codes and the
# exact one-line errors for bad arguments. Needs no Redis.
. "$BATON_TESTS_DIR/lib/harness.sh"

# run ARGS...: runs baton next ARGS, sets OUT, ERR and RC.
run() {
    "$BATON_BIN" next "$@" >"$T/out" 2>"$T/err"
    RC=$?
    OUT=$(cat "$T/out")
    ERR=$(head -n 1 "$T/err")
}

# expect_usage_error FIRST-LINE ARGS...: exit 64, nothing on stdout, and the
# first line of stderr exactly as given.
expect_usage_error() {
    local want=$1; shift
    run "$@"
    assert_eq 64 "$RC" "exit status of 'baton next $*'"
    assert_eq "" "$OUT" "stdout of 'baton next $*'"
    assert_eq "$want" "$ERR" "stderr of 'baton next $*'"
}

# UTC, five lines by default, RFC 3339 with Z.
run --from 2026-01-01T00:00:00Z '0 7 * * MON-FRI'
assert_eq 0 "$RC" "exit status"
assert_eq "2026-01-01T07:00:00Z
2026-01-02T07:00:00Z
2026-01-05T07:00:00Z
2026-01-06T07:00:00Z
2026-01-07T07:00:00Z" "$OUT" "default count and format"

# A zone, --count, strictly after --from, an offset in --from.
run --tz Europe/Berlin --count 2 --from 2026-01-02T08:00:00+01:00 '0 8 * * *'
assert_eq "2026-01-03T07:00:00Z
2026-01-04T07:00:00Z" "$OUT" "strictly after --from, in the zone"
run -n 1 --from 2026-01-02T06:59:59.999Z '0 7 * * *'
assert_eq "2026-01-02T07:00:00Z" "$OUT" "fractional seconds in --from"

# DST: spring forward in Berlin, a fixed time in the gap fires once at 03:00.
run --tz Europe/Berlin --local -n 3 --from 2026-03-28T12:00:00Z '30 2 * * *'
assert_eq "2026-03-29T03:00:00+02:00
2026-03-30T02:30:00+02:00
2026-03-31T02:30:00+02:00" "$OUT" "--local across spring forward"
# Fall back in New York: interval-like fires in both copies of 01:xx.
run --tz America/New_York --local -n 4 --from 2026-11-01T04:00:00Z '*/30 1 * * *'
assert_eq "2026-11-01T01:00:00-04:00
2026-11-01T01:30:00-04:00
2026-11-01T01:00:00-05:00
2026-11-01T01:30:00-05:00" "$OUT" "--local across fall back"
run --tz Asia/Kolkata --local -n 1 --from 2026-01-01T00:00:00Z '0 9 * * *'
assert_eq "2026-01-01T09:00:00+05:30" "$OUT" "half-hour offset"

# Unquoted words are joined; macros; @every; 6 fields.
run -n 2 --from 2026-01-01T00:00:00Z @every 90s
assert_eq "2026-01-01T00:01:30Z
2026-01-01T00:03:00Z" "$OUT" "@every, unquoted"
run -n 1 --from 2026-01-01T00:00:00Z @weekly
assert_eq "2026-01-04T00:00:00Z" "$OUT" "@weekly"
run -n 2 --from 2026-01-01T00:00:00Z '*/20 * * * * *'
assert_eq "2026-01-01T00:00:20Z
2026-01-01T00:00:40Z" "$OUT" "6 fields"
run -n 10000 --from 2026-01-01T00:00:00Z '* * * * * *'
assert_eq 0 "$RC" "--count 10000"
assert_eq 10000 "$(wc -l <"$T/out")" "10000 lines"

# Without --from: now. The first time is in the future, within a minute.
run -n 1 '* * * * *'
assert_eq 0 "$RC" "default --from"
first=$(date -u -d "$OUT" +%s) || fail "not a date: $OUT"
now=$(date -u +%s)
[ "$first" -gt $((now - 2)) ] && [ "$first" -le $((now + 61)) ] || fail "now+1min expected, got $OUT"

# Help.
run --help
assert_eq 0 "$RC" "--help exit status"
case "$OUT" in "usage: baton next "*) ;; *) fail "--help: $OUT" ;; esac

# Errors: exact first lines, exit 2.
expect_usage_error 'baton: next: field 2 (hour) "25": value out of range 0-23 (column 3) (see '\''baton next --help'\'')' '0 25 * * *'
expect_usage_error 'baton: next: field 3 (day-of-month) "30": never fires: no selected month has such a day (column 5) (see '\''baton next --help'\'')' '0 0 30 2 *'
expect_usage_error 'baton: next: field 5 (day-of-week) "FUN": unknown name (use SUN-SAT) (column 9) (see '\''baton next --help'\'')' '0 0 * * FUN'
expect_usage_error 'baton: next: expected 5 or 6 fields (minute hour day-of-month month day-of-week), found 3 (column 6) (see '\''baton next --help'\'')' '* * *'
expect_usage_error 'baton: next: "1500ms": @every needs a whole number of seconds (column 8) (see '\''baton next --help'\'')' '@every 1500ms'
for bad in "Mars/Base" "Europe/Berlin/x"; do
    run --tz "$bad" '* * * * *'
    assert_eq 64 "$RC" "--tz $bad"
    case "$ERR" in "baton: next: --tz: unknown time zone \"$bad\""*) ;; *) fail "--tz $bad: $ERR" ;; esac
done
run --tz ../../etc/passwd '* * * * *'
assert_eq 64 "$RC" "--tz with .."
case "$ERR" in 'baton: next: --tz: invalid time zone name "../../etc/passwd"'*) ;; *) fail "--tz ..: $ERR" ;; esac
for bad in 2026-02-30T00:00:00Z 2026-01-02T07:00:00 2026-01-02 tomorrow 2026-01-02T07:00:00+25:00; do
    run --from "$bad" '* * * * *'
    assert_eq 64 "$RC" "--from $bad"
    case "$ERR" in "baton: next: --from \"$bad\": "*) ;; *) fail "--from $bad: $ERR" ;; esac
done
run --from 2026-02-30T00:00:00Z '* * * * *'
case "$ERR" in 'baton: next: --from "2026-02-30T00:00:00Z": day 30 out of range for 2026-02 (01-28)'*) ;;
    *) fail "--from day: $ERR" ;; esac
for bad in 0 10001 -1 5x "" 99999999999999999999 " 5"; do
    run --count "$bad" '* * * * *'
    assert_eq 64 "$RC" "--count '$bad'"
    case "$ERR" in "baton: next: --count \"$bad\": expected a whole number from 1 to 10000"*) ;;
        *) fail "--count '$bad': $ERR" ;; esac
done
run
assert_eq 64 "$RC" "no expression"
case "$ERR" in "baton: next: missing cron expression"*) ;; *) fail "no expression: $ERR" ;; esac
run --bogus '* * * * *'
assert_eq 64 "$RC" "unknown option"
assert_eq "baton: next: --bogus: unknown option (see 'baton next --help')" "$ERR" "unknown option"
run '* * * * *' --tz
assert_eq 64 "$RC" "option without a value"
assert_eq "baton: next: --tz: missing its value (see 'baton next --help')" "$ERR" "missing value"

# An expression that never fires in its zone (02:xx on the last Sunday of
# March does not exist in Berlin): exit 1 with a message, quickly.
run --tz Europe/Berlin --from 2026-01-01T00:00:00Z '*/5 2 * 3 SUNL'
assert_eq 1 "$RC" "never fires: exit status"
assert_eq "" "$OUT" "never fires: stdout"
assert_eq 'baton: next: "*/5 2 * 3 SUNL" has no fire time in Europe/Berlin within 400 years after 2026-01-01T00:00:00Z' \
    "$ERR" "never fires: message"
# ... while the fixed-time version fires at the end of the gap.
run --tz Europe/Berlin -n 2 --from 2026-01-01T00:00:00Z '30 2 * 3 SUNL'
assert_eq "2026-03-29T01:00:00Z
2027-03-28T01:00:00Z" "$OUT" "fixed time in the gap"

# The end of time: fewer than --count times, exit 1.
run -n 3 --from 9999-12-31T23:58:00Z '* * * * *'
assert_eq 1 "$RC" "end of the range"
assert_eq "9999-12-31T23:59:00Z" "$OUT" "end of the range: output"

# A closed stdout is reported, not ignored.
if [ -w /dev/full ]; then
    "$BATON_BIN" next '* * * * *' >/dev/full 2>"$T/err"
    assert_eq 1 "$?" "write error exit status"
    grep -q "cannot write" "$T/err" || fail "write error message: $(cat "$T/err")"
fi
note "ok"
