# test_fleet_retry.sh -- a failed fleet run's retry keeps its forbid job
# busy through the backoff, through real supervisors and a real
# redis-server: an every-second `concurrency: forbid` job on a labelled
# member (not the leader) whose first run fails (retries: 1,
# retry_backoff: 4s); no tick runs during the backoff (they are recorded
# skipped as busy), the retry runs once after it, then the ticks go on
# (before: the ticks of the backoff ran, and the retry was offered beside
# one of them).
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
G=fy LEDGER=$T/ledger.txt
cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: fj
    schedule: "* * * * * *"
    catchup: 0
    concurrency: forbid
    retries: 1
    retry_backoff: 4s
    run_on: {labels: [w]}
    shell: "echo \$(date -u -d \$BATON_SCHEDULED_AT +%s) \$BATON_ATTEMPT \$(date +%s%3N) >> $LEDGER; if [ ! -e $T/failed ]; then touch $T/failed; exit 1; fi"
EOF

# node NAME [EXTRA YAML...]: starts a supervisor of group $G.
node() {
    local name=$1; shift
    node_config "$name" "$G" "$T/jobs.yaml" "$@"
    spawn "$name" "$B" run -c "$T/$name.yaml"
}

node yl
wait_for_line "$T/yl.out" '"to":"working"' 10 >/dev/null || fail "yl never led"
node ym "labels: [w]"
wait_for_line "$LEDGER" . 15 >/dev/null || fail "nothing ran"
# the first run failed: its retry is due 4 s after its end
first=$(head -n 1 "$LEDGER" | awk '{print $1}')
deadline=$(( $(now_ms) + 15000 ))
until awk -v t="$first" '$1 == t && $2 == 2' "$LEDGER" | grep -q .; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "the retry of $first never ran: $(tr '\n' ';' < "$LEDGER")"
    sleep 0.2
done
sleep 3 # the ticks go on after it
for n in ym yl; do kill -TERM "$(pid_of $n)"; done
for n in ym yl; do wait_exit $n 15; done
note "  ledger: $(awk '{print $1 "#" $2}' "$LEDGER" | tr '\n' ' ')"
# Between the failed run and its retry nothing ran (the retry's line is the
# second), and the retry came after its backoff.
[ "$(sed -n 2p "$LEDGER" | awk '{print $1, $2}')" = "$first 2" ] \
    || fail "a tick ran during the retry's backoff: $(head -n 3 "$LEDGER" | tr '\n' ';')"
gap=$(( $(sed -n 2p "$LEDGER" | awk '{print $3}') - $(sed -n 1p "$LEDGER" | awk '{print $3}') ))
[ "$gap" -ge 3900 ] || fail "the retry ran ${gap} ms after the first attempt, before its backoff (4 s)"
[ "$(awk -v t="$first" '$1 > t' "$LEDGER" | wc -l)" -ge 1 ] || fail "no tick ran after the retry"
# The ticks of the backoff are recorded skipped as busy.
grep -h '"event":"tick_skipped"' "$T/yl.out" | grep -q 'still alive in the group' \
    || fail "no tick recorded skipped as busy during the backoff"
note "ok"
