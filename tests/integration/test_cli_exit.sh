# test_cli_exit.sh -- one table: for every subcommand, each documented exit
# status, caused for real (a live Redis and a supervisor, a dead Redis, bad
# files, bad arguments). Each row's status must also be listed by that
# command's --help and by `baton help exit-codes`, the table they share.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
dead=$(free_port)

cat >"$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: "true"
EOF
printf 'jobs:\n  - name: x\n    schedule: "@daily"\n    command: ["/nonexistent/program"]\n' >"$T/missing-prog.yaml"
w() { printf "node: %s\nredis: %s\ngroup: %s\nlease: {ttl: 2s}\nredis_timeout: 200ms\npoll: 1s\njobs: %s\n" "$@"; }
w live "$REDIS_URL" live "$T/jobs.yaml" >"$T/live.yaml"      # a group with a leader
w idle "$REDIS_URL" idle "$T/jobs.yaml" >"$T/idle.yaml"      # a group without one
w down "redis://127.0.0.1:$dead/0" down "$T/jobs.yaml" >"$T/down.yaml"
w prog "$REDIS_URL" prog "$T/missing-prog.yaml" >"$T/prog.yaml"
printf 'lease:\n  ttl: banana\n' >"$T/bad.yaml"
printf 'jobs: broken-jobs.yaml\n' >"$T/badjobs.yaml"
printf 'jobs:\n  - name: x\n' >"$T/broken-jobs.yaml"
printf '{"ts":"T","level":"info","event":"x","node":"n"}\n' >"$T/log.json"

spawn live "$B" run -c "$T/live.yaml"
wait_for_line "$T/live.out" '"to":"working"' 10 >/dev/null
rcli xadd 'baton:{live}:runs:gone' '*' run_id r node n term 1 scheduled_at 2026-01-01T00:00:00Z \
    started '' duration_ms 0 outcome ok result 'exit 0' attempt 1 >/dev/null

# STATUS | ARGS (eval'd) | what the row shows
rows=$(cat <<EOF
0|run --version|--version after the command
0|run --help|help
64|run --bogus|unknown option
64|run -c "$T/live.yaml" extra|unexpected argument
78|run -c "$T/bad.yaml"|invalid baton.yaml
78|run -c "$T/badjobs.yaml"|invalid jobs.yaml
78|run -c "$T/nope.yaml"|missing baton.yaml
75|run -c "$T/live.yaml"|the node name is in use
0|lock --version|--version after the command
0|lock --url "$REDIS_URL" k -- true|CMD's status
7|lock --url "$REDIS_URL" k -- sh -c 'exit 7'|CMD's status
64|lock --wait|missing value
64|lock --url nope://x k -- true|invalid URL
69|lock --url "redis://127.0.0.1:$dead/0" k -- true|Redis unreachable
66|lock --password-file "$T/no-such.pw" --url "$REDIS_URL" k -- true|password file unreadable
64|lock --url "rediss://127.0.0.1:$dead/0?ca=$T/no-such-ca.pem" k -- true|CA file unreadable
126|lock --url "$REDIS_URL" k -- "$T/jobs.yaml"|not executable
127|lock --url "$REDIS_URL" k -- /nonexistent/cmd|not found
0|next --version|--version after the command
0|next -n 1 '@daily'|fire times
0|next --json -n 1 '@daily'|--json
1|next -n 2 --from 9999-12-31T23:59:00Z '* * * * *'|stops firing
64|next '61 * * * *'|invalid expression
64|next --tz Mars/Base '@daily'|unknown zone
0|check --version|--version after the command
0|check -c "$T/live.yaml"|valid
0|check -c "$T/live.yaml" --json|--json
78|check -c "$T/bad.yaml"|invalid baton.yaml
78|check -c "$T/badjobs.yaml"|invalid jobs.yaml
78|check -c "$T/prog.yaml"|a job's program is missing
64|check --reference extra|unexpected argument
0|status --version|--version after the command
0|status -c "$T/live.yaml"|a leader
0|status -c "$T/live.yaml" --json|--json
3|status -c "$T/idle.yaml"|no leader
69|status -c "$T/down.yaml"|Redis unreachable
78|status -c "$T/bad.yaml"|invalid baton.yaml
64|status --bogus|unknown option
0|history --version|--version after the command
0|history -c "$T/live.yaml" tick|a job of jobs.yaml
0|history -c "$T/live.yaml" --json gone|--json, a job removed from jobs.yaml
1|history -c "$T/live.yaml" nope|unknown job
69|history -c "$T/down.yaml" tick|Redis unreachable
78|history -c "$T/bad.yaml" tick|invalid baton.yaml
64|history -c "$T/live.yaml"|missing JOB
0|step-down --version|--version after the command
3|step-down -c "$T/idle.yaml"|no leader
69|step-down -c "$T/down.yaml"|Redis unreachable
78|step-down -c "$T/bad.yaml"|invalid baton.yaml
64|step-down --wait 0|bad value
0|logs --version|--version after the command
0|logs "$T/log.json"|a file
66|logs "$T/nope.json"|a file that cannot be opened
64|logs --color sometimes|bad value
0|help --version|--version after the command
0|help exit-codes|the table
64|help nope|no such topic
EOF
)
all=$("$B" help exit-codes)
n=0
while IFS='|' read -r want args what; do
    eval "set -- $args"
    cmd=$1
    "$B" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    [ "$rc" = "$want" ] || fail "baton $args ($what): exit $rc, want $want; stderr: $(head -c 300 "$T/err")"
    # Failures say why in one line on stderr.
    # (status says "no leader" in its report, on stdout, as systemctl status does)
    case $cmd:$want in
    *:0 | *:7) ;;
    status:3) grep -q "^leader:  no leader" "$T/out" || fail "baton $args: no 'no leader' line" ;;
    *) [ "$(wc -l <"$T/err")" -ge 1 ] || fail "baton $args ($what): nothing on stderr" ;;
    esac
    # The status is documented: in the command's help and in the shared table.
    if [ "$want" != 7 ]; then
        "$B" "$cmd" --help | sed -n '/^exit status:$/,$p' | grep -qE "^  $want +" \
            || fail "baton $cmd --help does not list exit status $want ($what)"
        printf '%s\n' "$all" | grep -qE "^  $want +" || fail "'baton help exit-codes' lacks $want"
    fi
    n=$((n + 1))
done <<<"$rows"
note "$n rows: every exit status as documented"

note "a job's missing program or workdir: check names the path and the reason; so does a run"
cat >"$T/wd-jobs.yaml" <<'EOF2'
jobs:
  - name: nowhere
    schedule: "* * * * * *"
    shell: "true"
    workdir: /nonexistent/dir
  - name: noprog
    schedule: "* * * * * *"
    command: ["/nonexistent/program", "x"]
  - name: noname
    schedule: "* * * * * *"
    command: ["no-such-program-here"]
  - name: notdir
    schedule: "@daily"
    shell: "true"
    workdir: /etc/hostname
    enabled: true
EOF2
w wd "$REDIS_URL" wd "$T/wd-jobs.yaml" >"$T/wd.yaml"
"$B" check -c "$T/wd.yaml" >"$T/out" 2>"$T/err"
assert_eq 78 "$?" "check with missing programs and workdirs"
assert_eq "baton: check: $T/wd-jobs.yaml:2:5: job \"nowhere\": workdir \"/nonexistent/dir\": No such file or directory
baton: check: $T/wd-jobs.yaml:6:5: job \"noprog\": command \"/nonexistent/program\": No such file or directory
baton: check: $T/wd-jobs.yaml:9:5: job \"noname\": command \"no-such-program-here\": not found in PATH ($PATH)
baton: check: $T/wd-jobs.yaml:12:5: job \"notdir\": workdir \"/etc/hostname\": Not a directory" "$(cat "$T/err")" "check's problems"
grep -qx "invalid: 4 problems (on stderr)" "$T/out" || fail "check's verdict: $(tail -n1 "$T/out")"
"$B" check -c "$T/wd.yaml" --json >"$T/out" 2>/dev/null
grep -q '"valid":false' "$T/out" && grep -q 'Not a directory"\],"warnings":\[\]}$' "$T/out" || fail "check --json: $(cat "$T/out")"
spawn wd "$B" run -c "$T/wd.yaml"
wait_for_line "$T/wd.out" '"level":"error","event":"job_end".*"job":"nowhere".*"outcome":"failed_to_start","error":"workdir /nonexistent/dir: No such file or directory"' 5 >/dev/null
wait_for_line "$T/wd.out" '"event":"job_end".*"job":"noprog".*"outcome":"failed_to_start","error":"/nonexistent/program: command not found"' 5 >/dev/null
wait_for_line "$T/wd.out" '"event":"job_end".*"job":"noname".*"error":"no-such-program-here: command not found"' 5 >/dev/null

note "http.tokens_file: check reads it as run does (missing, mode, a line that does not parse)"
"$B" token new ops --role operate --file "$T/tok-good" >/dev/null 2>&1 || fail "token new"
cp "$T/tok-good" "$T/tok-644" && chmod 644 "$T/tok-644"
printf '# tokens\nops operate sha256:%s\nci deploy sha256:zz\n' "$(printf '%064d' 0)" >"$T/tok-bad"
chmod 600 "$T/tok-bad"
mkdir -p "$T/tok-dir"
for k in good none 644 bad dir; do
    f=$T/tok-$k; [ "$k" = none ] && f=$T/no-such-tokens
    w "tk$k" "$REDIS_URL" "tk$k" "$T/jobs.yaml" >"$T/tk-$k.yaml"
    printf 'http: {listen: "127.0.0.1:0", control: true, tokens_file: %s}\n' "$f" >>"$T/tk-$k.yaml"
done
"$B" check -c "$T/tk-good.yaml" >/dev/null 2>"$T/err" || fail "check with a good tokens file: $(cat "$T/err")"
tk() { # KIND EXPECTED-STDERR
    "$B" check -c "$T/tk-$1.yaml" >"$T/out" 2>"$T/err"
    assert_eq 78 "$?" "check with tokens file $1"
    assert_eq "baton: check: $2 (http.tokens_file of $T/tk-$1.yaml)" "$(cat "$T/err")" "check's message ($1)"
    grep -qx "invalid: 1 problem (on stderr)" "$T/out" || fail "check's verdict ($1): $(tail -n1 "$T/out")"
    "$B" check -c "$T/tk-$1.yaml" --json 2>/dev/null | grep -q '"valid":false' || fail "check --json ($1)"
}
tk none "$T/no-such-tokens: No such file or directory"
tk 644 "$T/tok-644: mode 0644 is refused for a tokens file: it must be 0600 or 0640 (chmod 600 $T/tok-644)"
tk bad "$T/tok-bad:3:4: unknown role \"deploy\": read or operate"
tk dir "$T/tok-dir: not a regular file"
# http.tls's files likewise (run refuses them at start with the same words).
w tls "$REDIS_URL" tls "$T/jobs.yaml" >"$T/tls.yaml"
printf 'http: {listen: "127.0.0.1:0", tls: {cert: %s, key: %s}}\n' "$T/no-cert.pem" "$T/no-key.pem" >>"$T/tls.yaml"
"$B" check -c "$T/tls.yaml" >/dev/null 2>"$T/err"
assert_eq 78 "$?" "check with http.tls files missing"
assert_eq "baton: check: http.tls.cert $T/no-cert.pem: No such file or directory (http.tls of $T/tls.yaml)" \
    "$(cat "$T/err")" "check's message (http.tls)"
# The same file stops `baton run`, with the same words.
timeout 20 "$B" run -c "$T/tk-bad.yaml" >"$T/run.out" 2>"$T/run.err" && fail "run started with a tokens file that does not parse"
assert_eq "baton: run: $T/tok-bad:3:4: unknown role \"deploy\": read or operate" "$(cat "$T/run.err")" "run's message"

# The shared table: the same codes as cli.h's list, in baton(1)'s EXIT
# STATUS (the README points there), no more and no fewer, and the 128+N of
# baton lock.
codes=$(printf '%s\n' "$all" | grep -oE '^  [0-9]+' | tr -d ' ')
at_least 10 "exit codes in the shared table" "$codes"
section=$(awk '/^\.SH EXIT STATUS/ {on = 1; next} /^\.SH / {on = 0} on' "$BATON_SOURCE_DIR/deploy/man/baton.1")
[ -n "$section" ] || fail "no EXIT STATUS in baton.1"
for code in $codes; do
    grep -qxF "\\fB$code\\fR" <<<"$section" || fail "baton(1)'s EXIT STATUS lacks $code"
done
assert_eq "$(echo $codes)" "$(grep -oxE '\\fB[0-9]+\\fR' <<<"$section" | tr -dc '0-9\n' | xargs)" \
    "the codes of baton(1)'s EXIT STATUS"
grep -q '128+N when the command was killed by signal N' <<<"$section" || fail "baton(1)'s EXIT STATUS lacks 128+N"
note "ok"
