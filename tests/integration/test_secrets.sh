# test_secrets.sh -- passwords reach Redis and nothing else. A redis-server
# with a default-user password and an ACL user; the password comes from
# BATON_REDIS_PASSWORD, from a password file (0600, or wider with a
# warning), or from the URL, with and without the ACL user name. Then every
# place a password could leak is searched: stdout and stderr of every
# command, the supervisor's log, `baton status` / `check` / `history`, the
# environment and /proc/PID/cmdline of the commands and jobs baton runs;
# and a job or a `baton lock` command holds no Redis socket
# (/proc/PID/fd); a job or a command finds no password in what it can
# read of baton (/proc/PID/environ, `ps axe`). `baton lock --url` with a
# password masks it in its own argv with a fixed mask (ps), and passes
# credentials on only with --pass-credentials. Holding a password, baton
# run and baton lock are not dumpable: a job or command of the same user
# cannot read their environment or memory at all.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
PW="data-pw-$RANDOM$RANDOM"
APW="alice-pw-$RANDOM$RANDOM"
redis_start # (the harness pings it without a password: set one after)
rcli acl setuser alice on ">$APW" '~*' '&*' +@all >/dev/null || fail "cannot create the ACL user"
rcli config set requirepass "$PW" >/dev/null || fail "cannot set the password"
HOST=127.0.0.1:$REDIS_PORT
unset BATON_REDIS_URL BATON_REDIS_PASSWORD BATON_SENTINEL_PASSWORD

# probe NAME: the path of a script that records what the process running it
# sees: its environment, its command line and the targets of its open
# descriptors (/proc/self/fd); and what it can read of its ancestors up to
# baton (the shim, then baton run or baton lock): /proc/PID/environ, and
# `ps axe`, every process's command line and environment.
probe() {
    local name=$1
    cat >"$T/probe-$name.sh" <<EOF
env >$T/$name.env
tr '\\0' ' ' </proc/\$\$/cmdline >$T/$name.cmdline
for f in /proc/\$\$/fd/*; do readlink \$f; done >$T/$name.fds
p=\$PPID
for i in 1 2 3; do
    echo "[\$p \$(ps -o comm= -p \$p)]"
    tr '\\0' '\\n' </proc/\$p/environ 2>&1
    p=\$(ps -o ppid= -p \$p | tr -d ' ')
done >$T/$name.ancestors.tmp 2>&1
mv $T/$name.ancestors.tmp $T/$name.ancestors
ps axe >$T/$name.psaxe 2>&1
true
EOF
    echo "$T/probe-$name.sh"
}

# unseen NAME WHAT: neither the ancestors' environment nor ps axe, as the
# probe NAME read them, shows the password WHAT.
unseen() {
    grep -q '^\[[0-9]* baton\]' "$T/$1.ancestors" || fail "$1: baton is not among the ancestors: $(cat "$T/$1.ancestors")"
    grep -qF -- "$2" "$T/$1.ancestors" && fail "$1: an ancestor's /proc/PID/environ shows the password: $(grep -F -- "$2" "$T/$1.ancestors")"
    grep -qF -- "$2" "$T/$1.psaxe" && fail "$1: ps axe shows the password: $(grep -F -- "$2" "$T/$1.psaxe" | cut -c1-300)"
    return 0
}

# no_socket NAME: the probe NAME saw no socket among its descriptors.
no_socket() {
    [ -s "$T/$1.fds" ] || fail "$1: no descriptor list"
    if grep -q '^socket:' "$T/$1.fds"; then fail "$1 inherited a socket: $(tr '\n' ' ' <"$T/$1.fds")"; fi
}

note "BATON_REDIS_PASSWORD, with and without an ACL user"
BATON_REDIS_PASSWORD=$PW "$B" lock --url "redis://$HOST/0" s:1 -- sh "$(probe lock-env)" ||
    fail "lock with BATON_REDIS_PASSWORD"
no_socket lock-env
grep -q '^BATON_REDIS_PASSWORD=' "$T/lock-env.env" && fail "the command inherited BATON_REDIS_PASSWORD"
unseen lock-env "$PW"
note "a baton lock holding a password: its command finds it neither in /proc/PID/environ nor in ps axe"
BATON_REDIS_PASSWORD=$PW BATON_SENTINEL_PASSWORD=$APW "$B" lock --url "redis://$HOST/0" s:1 -- \
    sh "$(probe lock-sentinel-env)" || fail "lock with BATON_REDIS_PASSWORD and BATON_SENTINEL_PASSWORD"
unseen lock-sentinel-env "$PW"
unseen lock-sentinel-env "$APW"
BATON_REDIS_PASSWORD=$APW "$B" lock --url "redis://alice:@$HOST/0" s:1 -- true ||
    fail "lock as alice with BATON_REDIS_PASSWORD"
BATON_REDIS_PASSWORD=wrong "$B" lock --url "redis://alice:@$HOST/0" s:1 -- true 2>"$T/wrong.err"
assert_eq 69 $? "lock with a wrong password"
assert_eq "baton: lock: redis://alice@$HOST/0: authentication failed: WRONGPASS invalid username-password pair or user is disabled." \
    "$(cat "$T/wrong.err")" "message of a wrong password"
"$B" lock --url "redis://$HOST/0" s:1 -- true 2>"$T/none.err"
assert_eq 69 $? "lock without a password"
assert_eq "baton: lock: redis://$HOST/0: authentication required: give a password (URL, BATON_REDIS_PASSWORD or a password file)" \
    "$(cat "$T/none.err")" "message without a password"

note "--password-file: 0600 silently, wider with a warning, missing with an error"
printf '%s\n' "$APW" >"$T/alice.pw"
chmod 600 "$T/alice.pw"
"$B" lock --url "redis://alice:@$HOST/0" --password-file "$T/alice.pw" s:1 -- true 2>"$T/pwfile.err" ||
    fail "lock with --password-file: $(cat "$T/pwfile.err")"
assert_eq "" "$(cat "$T/pwfile.err")" "stderr with a 0600 password file"
chmod 644 "$T/alice.pw"
"$B" lock --url "redis://alice:@$HOST/0" --password-file "$T/alice.pw" s:1 -- true 2>"$T/pwfile.err" ||
    fail "lock with a 0644 --password-file"
assert_eq "baton: lock: warning: password file $T/alice.pw can be read by other users (mode 0644): chmod 600 it" \
    "$(cat "$T/pwfile.err")" "warning for a 0644 password file"
chmod 600 "$T/alice.pw"
"$B" lock --password-file "$T/nope.pw" s:1 -- true 2>"$T/nofile.err"
assert_eq 66 $? "lock with a missing password file (EX_NOINPUT)"
grep -qF "password file $T/nope.pw: No such file or directory" "$T/nofile.err" ||
    fail "missing password file: $(cat "$T/nofile.err")"
# The file wins over the environment.
BATON_REDIS_PASSWORD=wrong "$B" lock --url "redis://alice:@$HOST/0" --password-file "$T/alice.pw" \
    s:1 -- true || fail "--password-file over BATON_REDIS_PASSWORD"

note "a password in --url: works, warned about, masked in ps, not passed on"
spawn urllock "$B" lock --url "redis://alice:$APW@$HOST/0" s:2 -- sh -c "sh $(probe lock-url); sleep 1"
pid=$(pid_of urllock)
wait_for_line "$T/urllock.err" 'warning' 5 >/dev/null
deadline=$(( $(now_ms) + 5000 ))
until [ -s "$T/lock-url.fds" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "the --url lock did not run its command"
    sleep 0.02
done
tr '\0' ' ' </proc/"$pid"/cmdline >"$T/baton-lock.cmdline"
grep -qF "$APW" "$T/baton-lock.cmdline" && fail "ps shows the password of --url: $(cat "$T/baton-lock.cmdline")"
# A fixed mask, and the argument area closed up: ps shows neither the
# password nor its length.
grep -qF "baton lock --url redis://alice:***@$HOST/0 s:2 -- sh -c " "$T/baton-lock.cmdline" ||
    fail "argv lost the URL, or the mask is not ***: $(cat "$T/baton-lock.cmdline")"
assert_eq "$B lock --url redis://alice:***@$HOST/0 s:2 -- sh -c sh $T/probe-lock-url.sh; sleep 1" \
    "$(ps -o args= -p "$pid")" "ps of baton lock --url with a password"
wait_exit urllock 10
assert_eq 0 "$EXIT_CODE" "lock with a password in --url"
assert_eq "baton: lock: warning: a password in --url can be read by every user of this machine (ps); use --password-file or BATON_REDIS_PASSWORD" \
    "$(cat "$T/urllock.err")" "warning for a password in --url"
no_socket lock-url

note "BATON_REDIS_URL with a password reaches the command only with --pass-credentials"
BATON_REDIS_URL="redis://alice:$APW@$HOST/0" "$B" lock s:3 -- sh "$(probe lock-envurl)" ||
    fail "lock with BATON_REDIS_URL"
grep -q '^BATON_REDIS_URL=' "$T/lock-envurl.env" && fail "the command inherited BATON_REDIS_URL with a password"
BATON_REDIS_URL="redis://alice:$APW@$HOST/0" BATON_REDIS_PASSWORD=$APW "$B" lock --pass-credentials s:3 -- \
    sh -c 'env' >"$T/passed.env" || fail "lock --pass-credentials"
grep -q "^BATON_REDIS_URL=redis://alice:$APW@" "$T/passed.env" || fail "--pass-credentials: no BATON_REDIS_URL"
grep -q "^BATON_REDIS_PASSWORD=$APW\$" "$T/passed.env" || fail "--pass-credentials: no BATON_REDIS_PASSWORD"
rm -f "$T/passed.env"
BATON_REDIS_URL="redis://$HOST/0" BATON_REDIS_PASSWORD=$PW "$B" lock s:3 -- sh -c 'env' >"$T/plainurl.env" ||
    fail "lock with BATON_REDIS_URL without a password"
grep -q "^BATON_REDIS_URL=redis://$HOST/0\$" "$T/plainurl.env" || fail "a BATON_REDIS_URL without a password is passed on"

# ---- the supervisor ---------------------------------------------------------------
note "supervisor: password_file with an ACL user; BATON_REDIS_PASSWORD for the other"
cat >"$T/jobs.yaml" <<EOF
jobs:
  - name: probe
    schedule: "* * * * * *"
    command: ["/bin/sh", "$(probe job)"]
EOF
cat >"$T/a.yaml" <<EOF
node: a
redis: "redis://alice:@$HOST/0"
password_file: $T/alice.pw
group: sec
lease: {ttl: 2s}
redis_timeout: 500ms
poll: 1s
jobs: $T/jobs.yaml
EOF
sed -e 's/^node: a/node: b/' -e '/^password_file/d' -e "s|alice:@||" "$T/a.yaml" >"$T/b.yaml"
spawn sup-a "$B" run -c "$T/a.yaml"
BATON_REDIS_PASSWORD=$PW spawn sup-b "$B" run -c "$T/b.yaml"
deadline=$(( $(now_ms) + 15000 ))
until [ -s "$T/job.fds" ] && [ -s "$T/job.psaxe" ] && grep -q '"event":"following"' "$T/sup-a.out" "$T/sup-b.out"; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no job run and no follower within 15 s"
    sleep 0.05
done
sleep 0.3
no_socket job
grep -q '^BATON_REDIS_PASSWORD=' "$T/job.env" && fail "a job inherited BATON_REDIS_PASSWORD"
# Whichever node ran it (a: password file; b: BATON_REDIS_PASSWORD), a job
# finds neither password in its ancestors' environment nor in ps axe; nor
# does this test, of the same user, in the supervisors'.
unseen job "$PW"
unseen job "$APW"
for n in sup-a sup-b; do
    tr '\0' '\n' <"/proc/$(pid_of $n)/environ" >"$T/$n.environ" 2>&1
    grep -qF -e "$PW" -e "$APW" "$T/$n.environ" && fail "/proc/PID/environ of $n shows a password"
done
ps axe >"$T/test.psaxe" 2>&1
grep -qF -e "$PW" -e "$APW" "$T/test.psaxe" && fail "ps axe shows a password: $(grep -F -e "$PW" -e "$APW" "$T/test.psaxe" | cut -c1-300)"
grep -q '^BATON_FENCE=' "$T/job.env" || fail "the job's environment: $(cat "$T/job.env")"
"$B" status -c "$T/a.yaml" >"$T/status.out" 2>&1 || fail "status with password_file: $(cat "$T/status.out")"
"$B" status -c "$T/a.yaml" --json >"$T/status-json.out" 2>&1 || fail "status --json"
"$B" history -c "$T/a.yaml" probe >"$T/history.out" 2>&1 || fail "history: $(cat "$T/history.out")"
"$B" check -c "$T/a.yaml" >"$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"
grep -q "^password_file: $T/alice.pw\$" "$T/check.out" || fail "check shows the password file: $(cat "$T/check.out")"
chmod 640 "$T/alice.pw"
"$B" status -c "$T/a.yaml" >"$T/status-wide.out" 2>"$T/status-wide.err" || fail "status with a 0640 file"
assert_eq "baton: status: warning: password file $T/alice.pw can be read by other users (mode 0640): chmod 600 it" \
    "$(cat "$T/status-wide.err")" "status warns of a 0640 password file"
BATON_REDIS_PASSWORD=$PW "$B" status -c "$T/b.yaml" >"$T/status-b.out" 2>&1 || fail "status with BATON_REDIS_PASSWORD"
kill -TERM "$(pid_of sup-a)" "$(pid_of sup-b)"
wait_exit sup-a 10
wait_exit sup-b 10
note "a supervisor started with a 0640 password file warns in its log"
spawn sup-c "$B" run -c "$T/a.yaml"
wait_for_line "$T/sup-c.out" '"level":"warn","event":"secret_file_mode".*mode 0640' 10 >/dev/null
kill -TERM "$(pid_of sup-c)"
wait_exit sup-c 10

note "holding a password, baton is not dumpable: a job or command of its user cannot read its environment or memory"
# As a user without privileges (root reads every process): nobody, when this
# test runs as root.
AS_USER=()
[ "$(id -u)" = 0 ] && AS_USER=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
chmod 711 "$T" # nobody reaches the files made readable below
# What a command can read of its grandparent (the shim's parent: baton).
peek='b=$(ps -o ppid= -p $PPID | tr -d " "); for f in environ maps; do if head -c1 /proc/$b/$f >/dev/null 2>&1; then echo "$f readable"; else echo "$f unreadable"; fi; done'
# (stderr apart: a coverage build's baton cannot write its counters as nobody, and says so)
out=$(BATON_REDIS_PASSWORD=$PW "${AS_USER[@]}" "$B" lock --url "redis://$HOST/0" s:5 -- sh -c "$peek" 2>"$T/peek-lock.err") ||
    fail "lock as an unprivileged user: $out $(cat "$T/peek-lock.err")"
assert_eq "environ unreadable maps unreadable" "$(echo $out)" "what baton lock's command can read of it"
cat >"$T/peek.yaml" <<EOF
jobs:
  - name: peek
    schedule: "* * * * * *"
    shell: '$peek'
EOF
sed -e 's/^node: b/node: n/' -e "s|^jobs: .*|jobs: $T/peek.yaml|" -e 's/^group: sec/group: peek/' \
    "$T/b.yaml" >"$T/n.yaml"
chmod 644 "$T/peek.yaml" "$T/n.yaml"
BATON_REDIS_PASSWORD=$PW spawn sup-n "${AS_USER[@]}" "$B" run -c "$T/n.yaml"
wait_for_line "$T/sup-n.out" '"job":"peek".*"line":"environ unreadable"' 15 >/dev/null
wait_for_line "$T/sup-n.out" '"job":"peek".*"line":"maps unreadable"' 5 >/dev/null
grep -q '"line":"[a-z]* readable"' "$T/sup-n.out" && fail "a job read baton run: $(grep '"line":"[a-z]* readable"' "$T/sup-n.out")"
kill -TERM "$(pid_of sup-n)"
wait_exit sup-n 10
assert_eq 0 "$EXIT_CODE" "exit status of baton run as an unprivileged user ($(cat "$T/sup-n.err"))"

note "no password anywhere"
for f in "$T"/*.out "$T"/*.err "$T"/*.env "$T"/*.cmdline "$T"/*.ancestors "$T"/*.psaxe "$T"/*.environ; do
    [ -f "$f" ] || continue
    if grep -qF -e "$PW" -e "$APW" "$f"; then fail "a password in $(basename "$f"): $(grep -F -e "$PW" -e "$APW" "$f" | head -3)"; fi
done
note "ok"
