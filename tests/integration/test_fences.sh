# test_fences.sh -- fencing tokens never go backwards when Redis loses data,
# and no tick runs twice. With real redis-servers:
#   1. grant, FLUSHALL, grant (baton lock), while a supervisor runs a job
#      every second: the new term is above the old, and no tick is doubled
#      (the job's high-water mark is gone: it starts from now);
#   2. grant, restart without persistence, grant;
#   3. a holder across a restart: without persistence its lock is gone
#      (exit 70); with AOF the key survives, and the restarted master (not a
#      promoted replica) is trusted with it: the holder and a supervisor's
#      leader go on (no tick twice, none missing);
#   4. failover to a lagging replica (its replication cut while the master
#      granted more: it follows a port where nothing listens): the promoted
#      replica's counter is behind, and its first grant is still above
#      every token issued;
#   5. --min-replicas 1: granted while the replica acknowledges; refused,
#      in bounded time, while it is stopped.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN

fence_of() { "$B" lock --url "$1" "$2" -- sh -c 'echo $BATON_FENCE'; }

redis_start
URL=$REDIS_URL

note "1. grant, FLUSHALL, grant; a supervisor across the FLUSHALL"
cat >"$T/jobs.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1h
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE >> $T/ledger.txt"
EOF
cat >"$T/n1.yaml" <<EOF
node: n1
redis: $URL
group: fences
lease: {ttl: 2s}
redis_timeout: 300ms
poll: 1s
jobs: $T/jobs.yaml
EOF
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"to":"working"' 10 >/dev/null
f1=$(fence_of "$URL" f:1) || fail "first grant"
sleep 2.5
rcli flushall >/dev/null
f2=$(fence_of "$URL" f:1) || fail "grant after FLUSHALL"
[ "$f2" -gt "$f1" ] || fail "fence after FLUSHALL: $f2, before: $f1"
[ "$(rcli get 'baton:{f:1}:fence')" = "$f2" ] || fail "the counter after FLUSHALL is not the last fence"
# The leader finds its lease gone, campaigns again, and goes on from now.
deadline=$(( $(now_ms) + 10000 ))
until [ "$(grep -c '"to":"working"' "$T/n1.out")" -ge 2 ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no new term after FLUSHALL"
    sleep 0.05
done
sleep 2.5
kill -TERM "$(pid_of n1)"
wait_exit n1 10
dups=$(awk '{print $1}' "$T/ledger.txt" | sort | uniq -d)
[ -z "$dups" ] || fail "ticks run twice after FLUSHALL: $dups"
terms=$(awk '{print $2}' "$T/ledger.txt" | uniq | tr '\n' ' ')
[ "$(awk '{print $2}' "$T/ledger.txt" | uniq | wc -l)" -ge 2 ] || fail "one term across FLUSHALL: $terms"
sort "$T/ledger.txt" | awk '$2 < f {bad=1} {f=$2} END{exit bad}' || fail "a later tick under a lower term: $terms"

note "2. grant, restart without persistence, grant"
f3=$(fence_of "$URL" f:1) || fail "grant before the restart"
redis_restart
[ "$(rcli exists 'baton:{f:1}:fence')" = 0 ] || fail "the restarted server kept its data"
f4=$(fence_of "$URL" f:1) || fail "grant after the restart"
[ "$f4" -gt "$f3" ] || fail "fence after a restart without persistence: $f4, before: $f3"

note "3. a holder across a restart, without and with persistence"
spawn holder "$B" lock --url "$URL" --ttl 3s f:held -- sleep 30
sleep 0.5
redis_restart
wait_exit holder 10
assert_eq 70 "$EXIT_CODE" "holder across a restart without persistence"
grep -q "was lost" "$T/holder.err" || fail "holder: $(cat "$T/holder.err")"
redis_stop
REDIS_ARGS=(--appendonly yes --appendfsync always)
redis_restart
sed -e 's/^node: n1/node: n2/' -e 's/^group: fences/group: fences-aof/' \
    -e "s|^jobs: .*|jobs: $T/jobs2.yaml|" "$T/n1.yaml" >"$T/n2.yaml"
sed -e "s|$T/ledger.txt|$T/ledger2.txt|" "$T/jobs.yaml" >"$T/jobs2.yaml"
spawn n2 "$B" run -c "$T/n2.yaml"
wait_for_line "$T/n2.out" '"to":"working"' 10 >/dev/null
spawn holder2 "$B" lock --url "$URL" --ttl 3s f:held -- sleep 5
sleep 2.5
redis_restart
[ "$(rcli exists 'baton:{f:held}')" = 1 ] || fail "AOF did not keep the lock"
wait_exit holder2 10
assert_eq 0 "$EXIT_CODE" "holder across a restart with AOF ($(cat "$T/holder2.err"))"
sleep 3
grep -q '"trigger":"lost"' "$T/n2.out" && fail "the supervisor gave its term up across an AOF restart"
kill -TERM "$(pid_of n2)"
wait_exit n2 10
dups=$(awk '{print $1}' "$T/ledger2.txt" | sort | uniq -d)
[ -z "$dups" ] || fail "ticks run twice across the AOF restart: $dups"
[ "$(awk '{print $2}' "$T/ledger2.txt" | sort -u | wc -l)" = 1 ] || fail "more than one term across the AOF restart"

note "4. failover to a lagging replica"
redis_stop
REDIS_ARGS=()
redis_start
M_PORT=$REDIS_PORT M_PID=$REDIS_PID M_URL=$REDIS_URL
redis_start --replicaof 127.0.0.1 "$M_PORT"
R_PORT=$REDIS_PORT R_PID=$REDIS_PID R_URL=$REDIS_URL
wait_link() {
    local deadline=$(( $(now_ms) + 10000 ))
    until redis-cli -p "$R_PORT" info replication | grep -q 'master_link_status:up'; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "the replica did not connect"
        sleep 0.05
    done
}
wait_link
g1=$(fence_of "$M_URL" f:lag) || fail "grant on the master"
deadline=$(( $(now_ms) + 5000 ))
until [ "$(redis-cli -p "$R_PORT" get 'baton:{f:lag}:fence')" = "$g1" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "the replica did not get the first grant"
    sleep 0.02
done
redis-cli -p "$R_PORT" replicaof 127.0.0.1 "$(free_port)" >/dev/null # replication cut
last=0
for i in 1 2 3 4 5; do last=$(fence_of "$M_URL" f:lag) || fail "grant while the replica lags"; done
{ kill -KILL "$M_PID"; wait "$M_PID"; } 2>/dev/null
redis-cli -p "$R_PORT" replicaof no one >/dev/null
lagging=$(redis-cli -p "$R_PORT" get 'baton:{f:lag}:fence')
[ "$lagging" -lt "$last" ] || fail "the replica did not lag: its counter $lagging, last fence $last"
g2=$(fence_of "$R_URL" f:lag) || fail "grant on the promoted replica"
[ "$g2" -gt "$last" ] || fail "fence after failover to a lagging replica: $g2, last before: $last (replica had $lagging)"
note "   last fence on the old master $last, the replica's counter $lagging, first on the new master $g2"

note "5. --min-replicas 1"
redis_start
M_PORT=$REDIS_PORT M_URL=$REDIS_URL
redis_start --replicaof 127.0.0.1 "$M_PORT"
R_PORT=$REDIS_PORT R_PID=$REDIS_PID
wait_link
"$B" lock --url "$M_URL" --min-replicas 1 f:dur -- true || fail "--min-replicas 1 with a replica"
kill -STOP "$R_PID"
t0=$(now_ms)
"$B" lock --url "$M_URL" --min-replicas 1 --wait 0 f:dur -- true 2>"$T/dur.err"
rc=$?
kill -CONT "$R_PID"
assert_eq 69 "$rc" "--min-replicas 1 with the replica stopped ($(cat "$T/dur.err"))"
grep -q "not durable: 0 of min_replicas 1 replica(s) acknowledged in time" "$T/dur.err" ||
    fail "--min-replicas message: $(cat "$T/dur.err")"
[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "refusing took $(( $(now_ms) - t0 )) ms"
[ "$(redis-cli -p "$M_PORT" exists 'baton:{f:dur}')" = 0 ] || fail "the refused grant was not given back"
note "ok"
