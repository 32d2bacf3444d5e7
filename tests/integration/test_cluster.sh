# test_cluster.sh -- baton on a Redis Cluster, with real processes on
# loopback: three masters, three replicas (tests/lib/cluster.sh).
#   1. libbaton's primitives (tests/lib/cluster_check.c): locks with fences
#      on keys of every master, a waiter woken across nodes, semaphores,
#      multi-locks (one slot: one script; across slots: one by one, all or
#      nothing), an election, routed commands.
#   2. Three supervisors (`baton run`, redis: redis-cluster://..., min_replicas
#      1) run a job every second that appends "tick fence node" to a ledger,
#      while two `baton lock` loops and a lock-cycle load (4 threads, 16 keys)
#      run too, and:
#      a. the slot of the group's keys is migrated by hand to another master
#         (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE of its keys, a second
#         in that state, then SETSLOT NODE): requests for keys already moved
#         get ASK, and once the slot is handed over MOVED; then `redis-cli
#         --cluster reshard` moves 500 other slots, under the same load;
#      b. the master now holding that slot is SIGKILLed, its replica is
#         promoted by the cluster, and the killed node is started again (it
#         rejoins as a replica).
#   The ledger: no tick ran twice; terms never go down as ticks go up; no
#   tick is missing outside the failover's outage (none at all across the
#   migration), and every lock loop's fences strictly increase. ASK and
#   MOVED are counted from the nodes' INFO errorstats: both must be > 0.
#   3. A lone cluster node that serves no slot, and a server without cluster
#      support, behind redis-cluster://: `baton lock` says which.
. "$BATON_TESTS_DIR/lib/harness.sh"
. "$BATON_TESTS_DIR/lib/cluster.sh"
B=$BATON_BIN
# CLUSTER_KEEP=DIR keeps a copy of everything (logs, ledgers), pass or fail.
keep() { [ -z "${CLUSTER_KEEP:-}" ] || { cp -r "$T" "$CLUSTER_KEEP" && echo "kept in $CLUSTER_KEEP" >&2; }; }
fail() {
    HARNESS_FAILURE="$*"
    echo "FAIL [$TEST_NAME]: $*" >&2
    keep
    exit 1
}
CHECK=${BATON_CLUSTER_CHECK:?BATON_CLUSTER_CHECK is the path of tests/lib/cluster_check}
GROUP=clu

iso_now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
mid_second() { # sleep until the next X.5 s: faults fall between ticks
    local ns; ns=$(date +%N); ns=${ns#0}; ns=${ns#0}
    sleep "$(awk "BEGIN{d=(1500000000 - $ns) / 1e9; if (d > 1) d -= 1; print d}")"
}
node_id() { ccli "$1" cluster myid; }

t_start=$(now_ms)
cluster_start
note "cluster up in $(( $(now_ms) - t_start )) ms: masters ${CPORT[0]} ${CPORT[1]} ${CPORT[2]}, replicas ${CPORT[3]} ${CPORT[4]} ${CPORT[5]}"

# ---- 1. the primitives ------------------------------------------------------------------
"$CHECK" "$CLUSTER_URL" basic >"$T/basic.out" 2>&1 ||
    fail "cluster_check basic: $(grep -m1 FAIL "$T/basic.out" || tail -n 3 "$T/basic.out")"
note "primitives: $(grep -c '^ok' "$T/basic.out") checks passed"

# A URL Redis Cluster cannot serve, and a server that is no cluster.
out=$("$B" lock --url "redis-cluster://127.0.0.1:${CPORT[0]}/3" k -- true 2>&1)
[[ $out == *"Redis Cluster has only database 0"* ]] || fail "database 3 accepted: $out"
redis_start
out=$("$B" lock --url "redis-cluster://127.0.0.1:$REDIS_PORT" k -- true 2>&1)
[[ $out == *"cluster support disabled"* && $out == *"cluster-enabled yes"* ]] ||
    fail "a server without cluster support: $out"
redis_stop

# ---- 2. supervisors, a migration, a failover ------------------------------------------
cat >"$T/jobs.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1m
    concurrency: allow
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $T/ledger.txt"
EOF
for n in a b c; do
    cat >"$T/$n.yaml" <<EOF
node: $n
redis: "$CLUSTER_URL"
group: $GROUP
lease: {ttl: 3s, renew: 1s}
redis_timeout: 500ms
poll: 1s
shutdown_grace: 2s
min_replicas: 1
log: {level: debug}
jobs: $T/jobs.yaml
EOF
    spawn "$n" "$B" run -c "$T/$n.yaml"
done

# confirmed_after ISO: the time of the first lease confirmation (grant or
# renewal) that a supervisor logged after ISO, or "".
confirmed_after() {
    cat "$T"/[abc].out 2>/dev/null |
        grep -E '"event":"lease_renewed"|"to":"working","trigger":"acquired"' |
        grep -oE '^\{"ts":"[^"]+"' | cut -d'"' -f4 | sort | awk -v t="$1" '$0 > t {print; exit}'
}
wait_confirmed_after() { # ISO SECONDS WHAT
    local deadline=$(( $(now_ms) + $2 * 1000 )) t
    until t=$(confirmed_after "$1") && [ -n "$t" ]; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "no working leader within $2 s $3"
        sleep 0.05
    done
    echo "$t"
}

lock_loop() {
    while [ ! -e "$T/stop" ]; do
        "$B" lock --url "$CLUSTER_URL" --ttl 2s --wait 20s "{$GROUP}:lock$1" -- \
            sh -c "echo \$BATON_FENCE >> $T/lockledger$1.txt; sleep 0.1" 2>>"$T/lock-$1.log"
        local rc=$?
        echo $rc >>"$T/lockrc.txt"
        [ $rc = 0 ] || sleep 0.2
    done
}

wait_confirmed_after "$(iso_now)" 20 "at start" >/dev/null
spawn lockloop1 lock_loop 1
spawn lockloop2 lock_loop 2
spawn load "$CHECK" "$CLUSTER_URL" load 24
sleep 2

# a. Migrate the group's slot, key by key.
SLOT=$(ccli "${CPORT[0]}" cluster keyslot "baton:{$GROUP}:leader")
SRC=$(cluster_master_of_slot "$SLOT")
for i in 0 1 2 3 4 5; do
    p=${CPORT[$i]}
    [ "$p" != "$SRC" ] && ccli "$p" role | head -n1 | grep -q master && { DST=$p; break; }
done
note "a. slot $SLOT of group $GROUP: migrating from $SRC to $DST"
ask0=0 moved0=0
errorstat() { # NAME: the sum over the running nodes
    local i s=0 v
    for i in 0 1 2 3 4 5; do
        [ -n "${CPID[$i]:-}" ] || continue
        v=$(ccli "${CPORT[$i]}" info errorstats | sed -n "s/^errorstat_$1:count=\([0-9]*\).*/\1/p")
        s=$(( s + ${v:-0} ))
    done
    echo $s
}
ask0=$(errorstat ASK) moved0=$(errorstat MOVED)
mig_t0=$(iso_now) mig_ms0=$(now_ms)
[ "$(ccli "$DST" cluster setslot "$SLOT" importing "$(node_id "$SRC")")" = OK ] || fail "SETSLOT IMPORTING"
[ "$(ccli "$SRC" cluster setslot "$SLOT" migrating "$(node_id "$DST")")" = OK ] || fail "SETSLOT MIGRATING"
# The keys go in one MIGRATE (as redis-cli --cluster reshard moves them, in
# batches); the slot then stays MIGRATING for a second, when requests for
# its keys get ASK (and scripts on several keys TRYAGAIN, which Redis
# answers while a slot is split: they are retried within their deadline).
moved_keys=0
for round in 1 2; do # keys made while migrating are moved by the second round
    keys=$(ccli "$SRC" cluster getkeysinslot "$SLOT" 1000)
    if [ -n "$keys" ]; then
        # shellcheck disable=SC2086
        r=$(ccli "$SRC" migrate 127.0.0.1 "$DST" "" 0 5000 keys $keys)
        case $r in OK|NOKEY) ;; *) fail "MIGRATE: $r" ;; esac
        moved_keys=$(( moved_keys + $(echo "$keys" | wc -w) ))
    fi
    [ $round = 1 ] && sleep 1
done
[ "$(ccli "$SRC" cluster countkeysinslot "$SLOT")" = 0 ] || fail "keys left in slot $SLOT on $SRC"
for i in 0 1 2 3 4 5; do # every master, the new owner first
    p=${CPORT[$i]}
    [ "$p" = "$DST" ] && ccli "$p" cluster setslot "$SLOT" node "$(node_id "$DST")" >/dev/null
done
for i in 0 1 2 3 4 5; do
    p=${CPORT[$i]}
    [ "$p" != "$DST" ] && ccli "$p" role | head -n1 | grep -q master &&
        ccli "$p" cluster setslot "$SLOT" node "$(node_id "$DST")" >/dev/null
done
mig_ms1=$(now_ms)
note "   $moved_keys keys migrated in $(( mig_ms1 - mig_ms0 )) ms"
sleep 2
# Then the tool, for 500 slots between the two other masters, under the same load.
for i in 0 1 2; do
    p=$(cluster_master_of_slot $(( i * 5461 + 1 )))
    [ "$p" != "$DST" ] && [ -z "${FROM:-}" ] && { FROM=$p; continue; }
    [ "$p" != "$DST" ] && [ "$p" != "${FROM:-}" ] && TO=$p
done
timeout 60 redis-cli --cluster reshard "127.0.0.1:$DST" --cluster-from "$(node_id "$FROM")" \
    --cluster-to "$(node_id "$TO")" --cluster-slots 500 --cluster-yes >"$T/reshard.log" 2>&1 ||
    fail "redis-cli --cluster reshard: $(tail -n 3 "$T/reshard.log")"
cluster_wait_ok 30
asks=$(( $(errorstat ASK) - ask0 )) moveds=$(( $(errorstat MOVED) - moved0 ))
note "   then 500 slots resharded from $FROM to $TO; ASK answers: $asks, MOVED answers: $moveds"
[ "$asks" -gt 0 ] || fail "no request was answered ASK during the migration"
[ "$moveds" -gt 0 ] || fail "no request was answered MOVED after the migration"
mig_t1=$(wait_confirmed_after "$(iso_now)" 15 "after the migration")
sleep 2

# b. SIGKILL the master of the slot; the cluster promotes its replica.
OLD=$(cluster_master_of_slot "$SLOT")
OI=$(cluster_index "$OLD")
REPL=$(cluster_replica_of "$OLD")
mid_second
fo_t0=$(iso_now) fo_ms0=$(now_ms)
note "b. SIGKILL of master $OLD (node $OI), slot $SLOT; replica $REPL"
cluster_node_kill "$OI"
deadline=$(( $(now_ms) + 30000 ))
while :; do
    NEW=$(cluster_master_of_slot "$SLOT")
    [ -n "$NEW" ] && [ "$NEW" != "$OLD" ] && ccli "$NEW" role | head -n1 | grep -q master && break
    [ "$(now_ms)" -lt "$deadline" ] || fail "no replica promoted within 30 s"
    sleep 0.05
done
fo_ms1=$(now_ms) fo_tp=$(iso_now)
cluster_node_start "$OI" || fail "node $OI did not restart"
cluster_wait_ok 30
fo_t1=$(wait_confirmed_after "$fo_tp" 30 "after the failover")
fo_ms2=$(ts_ms "$fo_t1")
note "   $NEW promoted $(( fo_ms1 - fo_ms0 )) ms after the kill; old master back as a replica; leader confirmed $(( fo_ms2 - fo_ms0 )) ms after the kill"
sleep 3

touch "$T/stop"
wait_exit load 40
assert_eq 0 "$EXIT_CODE" "exit status of the load"
load_json=$(cat "$T/load.out")
wait_exit lockloop1 40
wait_exit lockloop2 40
for n in a b c; do kill -TERM "$(pid_of "$n")"; done
for n in a b c; do
    wait_exit "$n" 20
    assert_eq 0 "$EXIT_CODE" "exit status of supervisor $n"
done

# ---- the ledgers ----------------------------------------------------------------------
[ -s "$T/ledger.txt" ] || fail "empty ledger"
dups=$(awk '{print $1}' "$T/ledger.txt" | sort | uniq -d)
[ -z "$dups" ] || fail "ticks run twice: $(echo $dups | head -c 300)"
sort "$T/ledger.txt" | awk '$2 < f {print "term went down at " $1; bad=1} {f=$2} END{exit bad}' ||
    fail "a later tick ran under a lower term"
first=$(awk '{print $1}' "$T/ledger.txt" | sort | head -n1)
last=$(awk '{print $1}' "$T/ledger.txt" | sort | tail -n1)
fo_a=$(( $(ts_ms "$fo_t0") / 1000 - 1 )) fo_b=$(( fo_ms2 / 1000 + 1 ))
missing_out="" missing_in=0
for s in $(seq "$(date -d "$first" +%s)" "$(date -d "$last" +%s)"); do
    t=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%SZ)
    grep -q "^$t " "$T/ledger.txt" && continue
    if [ "$s" -ge "$fo_a" ] && [ "$s" -le "$fo_b" ]; then
        missing_in=$(( missing_in + 1 ))
    else
        missing_out="$missing_out $t"
    fi
done
[ -z "$missing_out" ] || fail "ticks missing outside the failover's outage:$missing_out"
ticks=$(wc -l <"$T/ledger.txt")
terms=$(awk '{print $2}' "$T/ledger.txt" | sort -un | wc -l)
note "ledger: $ticks ticks from $first to $last, none twice, none missing across the migration, $missing_in missing inside the failover's outage, $terms terms"
for l in 1 2; do
    [ -s "$T/lockledger$l.txt" ] || fail "lock loop $l was never granted"
    awk 'NR > 1 && $1 <= f {print "fence " $1 " after " f; bad=1} {f=$1} END{exit bad}' "$T/lockledger$l.txt" ||
        fail "lock loop $l: fences did not strictly increase"
done
unexpected=$(grep -vxE '0|69|70|75' "$T/lockrc.txt" | sort | uniq -c)
[ -z "$unexpected" ] || fail "baton lock ended with unexpected statuses: $unexpected"
note "locks: $(cat "$T"/lockledger[12].txt | wc -l) grants, fences strictly increasing; statuses: $(sort "$T/lockrc.txt" | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
note "load: $load_json"
echo "{\"migration_ms\":$(( mig_ms1 - mig_ms0 )),\"ask\":$asks,\"moved\":$moveds,\"promotion_ms\":$(( fo_ms1 - fo_ms0 )),\"leader_gap_ms\":$(( fo_ms2 - fo_ms0 )),\"ticks\":$ticks,\"missing_in_outage\":$missing_in,\"load\":$load_json}" >"$T/figures.json"
cat "$T/figures.json"

note "a cluster that serves no slot, and a server without cluster support, say so"
# lone_fails WHAT URL MESSAGE: `baton lock` exits 69 with one line holding MESSAGE.
lone_fails() { expect_error "$1" 69 "$3" "$B" lock --url "$2" cluster:lone -- true; }
lone_slot=$(ccli "${CPORT[0]}" cluster keyslot cluster:lone)
redis_start --cluster-enabled yes --cluster-config-file lone-nodes.conf
lone_fails "a cluster node with no slots" "redis-cluster://127.0.0.1:$REDIS_PORT" \
    "redis-cluster://127.0.0.1:$REDIS_PORT/0: slot $lone_slot has no master in the cluster's map (the cluster is down, or its slots are not all assigned)"
redis_start
lone_fails "a server without cluster support" "redis-cluster://127.0.0.1:$REDIS_PORT" \
    "cannot read the cluster's slot map: node 127.0.0.1:$REDIS_PORT: ERR This instance has cluster support disabled (a redis-cluster:// URL needs a server with cluster-enabled yes)"
keep
note "ok in $(( ($(now_ms) - t_start) / 1000 )) s"
