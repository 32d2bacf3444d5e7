# bench_valgrind.sh [--smoke] -- Valgrind memcheck over `baton lock` and
# `baton run` doing their real work against a real redis-server: every
# baton process runs under memcheck, and each must end with no error and
# no definitely or indirectly lost byte. Prints one JSON line per part.
#
#   lock: uncontended cycles, 6 contenders on one key, a command that
#         fails, one killed by a signal, a lease lost under the command;
#   run:  three supervisors (jobs every second, a failing one, a timeout,
#         output), a SIGHUP reload, a SIGTERM handover, then the CLI
#         tools (status, history, check, trigger, pause/resume) once each.
#
# Bench mode because memcheck is 20-50x slower: the integration tests'
# timing checks do not hold under it, so this drives the same features
# with generous leases and checks memory, not timing.
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
command -v valgrind >/dev/null || fail "valgrind is not installed (apt-get install valgrind)"
REAL=$BATON_BIN
rounds=10 settle=12
case ${1:-} in
--smoke) rounds=2 settle=6 ;;
"") ;;
*) fail "usage: bench_valgrind.sh [--smoke]" ;;
esac

# Every baton process of this script runs through $VG: one log per process
# (exec: the pid spawn records is memcheck's, which is baton's). A leak is
# any block the log shows, not an exit status: the shim that baton forks
# runs under memcheck too, silently, and as a copy of a threaded process it
# "loses" what only the other threads pointed to; its leak check must not
# become the command's exit status.
VG=$T/vg-baton
cat > "$VG" <<EOF
#!/bin/sh
exec valgrind --quiet --child-silent-after-fork=yes --error-exitcode=99 --leak-check=full \\
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=none \\
    --log-file="$T/vg.%p.log" "$REAL" "\$@"
EOF
chmod +x "$VG"
vg() { "$VG" "$@"; }
# verdict PART: checks and empties the logs so far; prints PART's JSON.
verdict() {
    local part=$1 n=0 bad=0 f
    for f in "$T"/vg.*.log; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        if [ -s "$f" ]; then
            bad=$((bad + 1))
            echo "--- $f" >&2; head -n 40 "$f" >&2
        fi
        mv "$f" "$T/done.$part.$(basename "$f")"
    done
    printf '{"part":"%s","processes":%d,"with_errors_or_leaks":%d}\n' "$part" "$n" "$bad"
    [ "$bad" -eq 0 ] || fail "$part: memcheck reported in $bad of $n processes (logs above)"
    [ "$n" -gt 0 ] || fail "$part: no process ran under memcheck"
}

redis_start

# ---- baton lock ----
for i in $(seq 1 "$rounds"); do
    vg lock --url "$REDIS_URL" vg:k -- true || fail "lock cycle $i"
done
for i in $(seq 1 6); do
    spawn "c$i" "$VG" lock --url "$REDIS_URL" --ttl 5s vg:hot -- sh -c 'sleep 0.2'
done
for i in $(seq 1 6); do wait_exit "c$i" 120; assert_eq 0 "$EXIT_CODE" "contender $i"; done
vg lock --url "$REDIS_URL" vg:k -- false; assert_eq 1 $? "a failing command's status"
vg lock --url "$REDIS_URL" vg:k -- sh -c 'kill -TERM $$'; assert_eq 143 $? "a command killed by SIGTERM"
# The key deleted under the command: the renewal finds it lost, exit 70.
spawn lost "$VG" lock --url "$REDIS_URL" --ttl 3s vg:lost -- sleep 30
for _ in $(seq 1 600); do [ "$(rcli exists 'baton:{vg:lost}')" = 1 ] && break; sleep 0.05; done
[ "$(rcli exists 'baton:{vg:lost}')" = 1 ] || fail "vg:lost was never taken"
rcli del 'baton:{vg:lost}' >/dev/null
wait_exit lost 60
assert_eq 70 "$EXIT_CODE" "the command whose lock was lost"
verdict lock

# ---- baton run and the tools ----
cat > "$T/jobs.yaml" <<EOF
jobs:
  - {name: tick, schedule: "* * * * * *", catchup: 1m, shell: "echo tick \$BATON_SCHEDULED_AT"}
  - {name: fails, schedule: "*/2 * * * * *", shell: "echo oops >&2; exit 3", retries: 1, retry_backoff: 1s}
  - {name: slow, schedule: "*/5 * * * * *", timeout: 1s, shell: "sleep 10"}
EOF
for n in v1 v2 v3; do
    printf 'node: %s\nredis: %s\ngroup: vg\nlease: {ttl: 10s}\nredis_timeout: 1s\npoll: 2s\nshutdown_grace: 5s\njobs: %s\n' \
        "$n" "$REDIS_URL" "$T/jobs.yaml" > "$T/$n.yaml"
    spawn "$n" "$VG" run -c "$T/$n.yaml"
done
sleep "$settle"
# Three supervisors starting under memcheck on a loaded machine can take
# longer than the settle time to elect one: waited for, up to 60 s.
deadline=$(( $(now_ms) + 60000 ))
until L=$(rcli get 'baton:{vg}:leader' | sed -n 's/^[0-9a-f]\{48\}://p') && [ -n "$L" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no leader under memcheck"
    sleep 0.5
done
kill -HUP "$(pid_of "$L")"
vg status -c "$T/v1.yaml" >/dev/null || fail "status"
vg history -c "$T/v1.yaml" tick >/dev/null || fail "history"
vg check -c "$T/v1.yaml" >/dev/null || fail "check"
vg pause -c "$T/v1.yaml" fails >/dev/null || fail "pause"
vg trigger -c "$T/v1.yaml" --wait --timeout 60s tick >/dev/null || fail "trigger --wait"
vg resume -c "$T/v1.yaml" fails >/dev/null || fail "resume"
sleep 2
for n in v1 v2 v3; do kill -TERM "$(pid_of "$n")"; done
for n in v1 v2 v3; do wait_exit "$n" 120; assert_eq 0 "$EXIT_CODE" "$n after SIGTERM"; done
grep -q '"event":"job_end"' "$T"/v*.out || fail "no job ran under memcheck"
verdict run
