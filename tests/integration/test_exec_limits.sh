# test_exec_limits.sh -- a job that exec cannot start is refused by `baton
# check` and `baton run` alike, with file:line:col (a shell: over 128 KiB
# passed check and failed every run with "Argument list too long"); and a
# large env: loads and starts in time linear in its size (20,000 entries
# took 1.4 s to load, and every run of the job rebuilt its environment in
# time quadratic in it), or is refused above the documented bound.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start

# gen_env FILE N SCHEDULE: a jobs.yaml whose job "big" has N variables
# V000000..., and prints how many it sees and the last one.
gen_env() {
    {
        printf 'jobs:\n  - name: big\n    schedule: "%s"\n    catchup: 0\n' "$3"
        printf '    shell: echo "n=$(env | grep -c ^V0) last=$V%06d"\n    env:\n' $(($2 - 1))
        seq -f '      V%06g: x' 0 $(($2 - 1))
    } >"$1"
}

note "a shell: over 128 KiB: refused by check and run, at its line and column"
{
    printf 'jobs:\n  - name: big\n    schedule: "* * * * * *"\n    shell: "'
    head -c 143360 /dev/zero | tr '\0' x
    printf '"\n'
} >"$T/shell.yaml"
node_config n1 limits "$T/shell.yaml"
want="$T/shell.yaml:4:12: job \"big\": shell: 143360 bytes; /bin/sh -c takes the command line as one argument of exec, at most 131071 bytes (MAX_ARG_STRLEN): put the script in a file and run that"
"$B" check -c "$T/n1.yaml" >"$T/check.out" 2>"$T/check.err"
assert_eq 78 $? "check of a 140 KiB shell: exit status ($(cat "$T/check.err"))"
assert_eq "baton: check: $want" "$(cat "$T/check.err")" "check of a 140 KiB shell"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_exit n1 10
assert_eq 78 "$EXIT_CODE" "run of a 140 KiB shell: exit status ($(cat "$T/n1.err"))"
assert_eq "baton: run: $want" "$(cat "$T/n1.err")" "run of a 140 KiB shell"

note "an env: of 40,000 variables: checked at once, and each run starts on time"
gen_env "$T/env40k.yaml" 40000 "* * * * * *"
node_config n2 limits "$T/env40k.yaml"
at_ms t0
"$B" check -c "$T/n2.yaml" >"$T/check.out" 2>"$T/check.err" || fail "check of 40,000 variables: $(cat "$T/check.err")"
at_ms t1
[ $((t1 - t0)) -lt 3000 ] || fail "check of 40,000 variables took $((t1 - t0)) ms"
spawn n2 "$B" run -c "$T/n2.yaml"
wait_for_line "$T/n2.out" '"line":"n=40000 last=x"' 20 >/dev/null
# Every run started within a second of its tick (building an environment
# of 40,000 variables took seconds, at every run).
starts=$(grep '"event":"job_start"' "$T/n2.out")
[ -n "$starts" ] || fail "no job_start"
while read -r lat; do
    [ "$lat" -lt 1000 ] || fail "a run of the 40,000-variable job started $lat ms late: $starts"
done < <(sed 's/.*"lateness_ms":\(-\{0,1\}[0-9]*\).*/\1/' <<<"$starts")
kill -TERM "$(pid_of n2)"
wait_exit n2 10
assert_eq 0 "$EXIT_CODE" "exit status of n2"

note "an env: of 100,000 variables: refused at once, beyond 1 MiB for exec"
gen_env "$T/env100k.yaml" 100000 "@hourly"
node_config n3 limits "$T/env100k.yaml"
at_ms t0
"$B" check -c "$T/n3.yaml" >"$T/check.out" 2>"$T/check.err"
rc=$?
at_ms t1
assert_eq 78 "$rc" "check of 100,000 variables: exit status ($(cat "$T/check.err"))"
assert_eq "baton: check: $T/env100k.yaml:7:7: job \"big\": its command and env take 1800079 bytes for exec (each string with its NUL and pointer); a job takes at most 1048576 (1 MiB)" \
    "$(cat "$T/check.err")" "check of 100,000 variables"
[ $((t1 - t0)) -lt 3000 ] || fail "check of 100,000 variables took $((t1 - t0)) ms"

note "with a small stack limit, exec takes less: check says so"
gen_env "$T/env10k.yaml" 10000 "@hourly"
node_config n4 limits "$T/env10k.yaml"
(ulimit -s 512 && exec "$B" check -c "$T/n4.yaml") >"$T/check.out" 2>"$T/check.err"
assert_eq 78 $? "check of 10,000 variables under a 512 KiB stack: exit status ($(cat "$T/check.err"))"
grep -qF "baton: check: $T/env10k.yaml:7:7: job \"big\": its command and env take 180079 bytes for exec; this machine's exec takes 131072 (a quarter of the stack limit), less baton's environment (" \
    "$T/check.err" || fail "check under a small stack: $(cat "$T/check.err")"
"$B" check -c "$T/n4.yaml" >"$T/check.out" 2>"$T/check.err" ||
    fail "check of 10,000 variables under the default stack: $(cat "$T/check.err")"
note "ok"
