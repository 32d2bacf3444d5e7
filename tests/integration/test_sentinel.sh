# test_sentinel.sh -- baton behind Redis Sentinel, with real processes on
# loopback: one master, two replicas, three redis-sentinel (the sentinels'
# password differs from the data nodes'). Three supervisors run a job every
# second that appends "tick fence node" to a ledger, and two `baton lock`
# loops append their fence under a lock, while the master is SIGKILLed
# (then restarted as a replica) and while SENTINEL FAILOVER is issued, in
# turn: SENTINEL_FAILOVERS (default 6) failovers.
#
# The supervisors run with min_replicas 2, every replica: what exactly-once
# across a Sentinel failover needs (a SENTINEL FAILOVER, or a failover
# Sentinel starts on its own because a busy master answered late, lets the
# old master take writes for a second or two after the promotion; with
# fewer acknowledgements than every replica, a claim made there may be lost
# and its tick run again by the next leader). Their grant survives: the
# leader goes on. The lock loops run with min_replicas 0: their grant is
# not trusted across a switch (the holder is told it is lost, exit 70, and
# the lock is given back on the new master at once).
#
# For each failover the test measures the time without a working leader:
# from the fault to the first lease confirmation (grant or renewal) that a
# supervisor logs after the sentinels name the new master; it prints the
# p50 and max. Then the ledgers: no tick ran twice; terms never go down as
# ticks go up; every tick outside the outages is there; the lock's fences
# strictly increase; every `baton lock` ended with an expected status.
. "$BATON_TESTS_DIR/lib/harness.sh"
. "$BATON_TESTS_DIR/lib/sentinel.sh"
B=$BATON_BIN
# SENTINEL_KEEP=DIR keeps a copy of everything (logs, ledgers) on failure.
fail() {
    echo "FAIL [$TEST_NAME]: $*" >&2
    [ -n "${SENTINEL_KEEP:-}" ] && cp -r "$T" "$SENTINEL_KEEP" && echo "kept in $SENTINEL_KEEP" >&2
    exit 1
}
FAILOVERS=${SENTINEL_FAILOVERS:-6}
THROTTLE_MS=7000 # sentinels start no failover within 2 x failover-timeout of the last

iso_now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
mid_second() { # sleep until the next X.5 s: faults fall between ticks
    local ns; ns=$(date +%N); ns=${ns#0}; ns=${ns#0}
    sleep "$(awk "BEGIN{d=(1500000000 - $ns) / 1e9; if (d > 1) d -= 1; print d}")"
}

sentinel_group_start
note "sentinel group up: master on ${NODE_PORT[0]}, replicas on ${NODE_PORT[1]} and ${NODE_PORT[2]}"
export BATON_REDIS_PASSWORD=$DATA_PW BATON_SENTINEL_PASSWORD=$SENT_PW

# Misconfigurations say which part is wrong, with every sentinel's answer
# said once: `baton lock` exits 69 with one line naming it.
misconfigured() { expect_error "$1" 69 "$3" env "${@:4}" "$B" lock --url "$2" sent:misconf -- true; }
SENTS="sentinels 127.0.0.1:${SENT_PORT[0]}, 127.0.0.1:${SENT_PORT[1]}, 127.0.0.1:${SENT_PORT[2]}"
note "misconfigurations: a master the sentinels do not know, their password missing or wrong, the data password wrong"
misconfigured "an unknown master name" "${SENT_URL/master=mymaster/master=nosuch}" \
    "no master for nosuch: $SENTS: does not know a master named nosuch"
misconfigured "no sentinel password" "$SENT_URL" \
    "no master for mymaster: $SENTS: NOAUTH Authentication required. (give the sentinels' password: the URL's sentinel_password=, BATON_SENTINEL_PASSWORD or sentinel_password_file)" \
    -u BATON_SENTINEL_PASSWORD
misconfigured "a wrong sentinel password" "$SENT_URL" \
    "no master for mymaster: $SENTS: authentication failed: WRONGPASS" BATON_SENTINEL_PASSWORD=wrong
misconfigured "a wrong data password" "$SENT_URL" \
    "no master for mymaster: master 127.0.0.1:${NODE_PORT[0]} (named by sentinel 127.0.0.1:" \
    BATON_REDIS_PASSWORD=wrong

cat >"$T/jobs.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1m
    concurrency: allow
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $T/ledger.txt"
EOF

# supervisors PHASE MIN_REPLICAS: three supervisors named PHASE-a..c.
supervisors() {
    local n
    for n in a b c; do
        cat >"$T/$1-$n.yaml" <<EOF
node: $1-$n
redis: "$SENT_URL"
group: sent
lease: {ttl: 3s, renew: 1s}
redis_timeout: 500ms
poll: 1s
shutdown_grace: 2s
min_replicas: $2
log: {level: debug}
jobs: $T/jobs.yaml
EOF
        spawn "$1-$n" "$B" run -c "$T/$1-$n.yaml"
    done
}

stop_supervisors() {
    local n
    for n in a b c; do kill -TERM "$(pid_of "$1-$n")"; done
    for n in a b c; do
        wait_exit "$1-$n" 20
        assert_eq 0 "$EXIT_CODE" "exit status of supervisor $1-$n"
    done
}

# confirmed_after PHASE ISO: the time of the first lease confirmation (grant
# or renewal) that a supervisor of PHASE logged after ISO, or "".
confirmed_after() {
    cat "$T/$1"-[abc].out 2>/dev/null |
        grep -E '"event":"lease_renewed"|"to":"working","trigger":"acquired"' |
        grep -oE '^\{"ts":"[^"]+"' | cut -d'"' -f4 | sort | awk -v t="$2" '$0 > t {print; exit}'
}

# Lock loops: until $T/stop exists, take sent:lock and append the fence.
lock_loop() {
    while [ ! -e "$T/stop" ]; do
        "$B" lock --url "$SENT_URL" --ttl 2s --wait 20s sent:lock -- \
            sh -c "echo \$BATON_FENCE >> $T/lockledger.txt; sleep 0.1" 2>>"$T/lock-$1.log"
        local rc=$?
        echo $rc >>"$T/lockrc.txt"
        [ $rc = 0 ] || sleep 0.2 # Redis unreachable: baton lock said so at once
    done
}

GAPS=() AFTER=() WINDOWS=()
last_fault=0
# failover I KIND PHASE: one fault (kill or failover); records the gap.
failover() {
    local i=$1 kind=$2 phase=$3 old oi new t0 t0ms tp tpms t1 t1ms deadline
    sentinel_wait_healthy 60
    # A leader confirmed since the group got healthy, and the throttle passed.
    deadline=$(( $(now_ms) + 30000 ))
    local since; since=$(iso_now)
    until [ -n "$(confirmed_after "$phase" "$since")" ]; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "failover $i: no working leader before the fault"
        sleep 0.1
    done
    while [ $(( $(now_ms) - last_fault )) -lt $THROTTLE_MS ]; do sleep 0.2; done
    mid_second
    old=$(sentinel_master_port)
    oi=$(node_index "$old")
    [ "$oi" -ge 0 ] || fail "failover $i: unknown master port $old"
    t0=$(iso_now) t0ms=$(now_ms)
    last_fault=$t0ms
    if [ "$kind" = kill ]; then
        node_kill "$oi"
    else
        [ "$(scli "${SENT_PORT[$(( i % 3 ))]}" sentinel failover "$MASTER_NAME")" = OK ] ||
            fail "failover $i: SENTINEL FAILOVER refused"
    fi
    deadline=$(( $(now_ms) + 30000 ))
    while :; do
        new=$(sentinel_master_port)
        [ -n "$new" ] && [ "$new" != "$old" ] && break
        [ "$(now_ms)" -lt "$deadline" ] || fail "failover $i ($kind): no new master within 30 s"
        sleep 0.02
    done
    tp=$(iso_now) tpms=$(now_ms)
    # The killed node comes back as a replica of the new master at once, as
    # an operator's restart would (with min_replicas 2 nothing is durable
    # until it has synced).
    if [ "$kind" = kill ]; then
        node_start "$oi" --replicaof 127.0.0.1 "$new" || fail "failover $i: node $oi did not restart"
    fi
    deadline=$(( $(now_ms) + 30000 ))
    until t1=$(confirmed_after "$phase" "$tp") && [ -n "$t1" ]; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "failover $i ($kind): no working leader within 30 s of the switch"
        sleep 0.05
    done
    t1ms=$(date -d "$t1" +%s%3N)
    GAPS+=($(( t1ms - t0ms )))
    AFTER+=($(( t1ms - tpms )))
    WINDOWS+=("$(( t0ms / 1000 - 1 )) $(( t1ms / 1000 + 1 ))")
    note "  failover $i ($kind, min_replicas $4): master $old -> $new; switch $(( tpms - t0ms )) ms after the fault; leader confirmed $(( t1ms - t0ms )) ms after the fault ($(( t1ms - tpms )) ms after the switch)"
}

note "$FAILOVERS failovers, SIGKILL and SENTINEL FAILOVER in turn"
supervisors p1 2
spawn lockloop1 lock_loop 1
spawn lockloop2 lock_loop 2
for i in $(seq 1 "$FAILOVERS"); do
    if [ $(( i % 2 )) = 1 ]; then failover "$i" kill p1 2; else failover "$i" failover p1 2; fi
done
sleep 3
touch "$T/stop"
wait_exit lockloop1 60
wait_exit lockloop2 60
stop_supervisors p1
switches=$(cat "$T"/sentinel0/sentinel.log | grep -c '+switch-master')
[ "$switches" -gt "$FAILOVERS" ] &&
    note "  the sentinels also failed over $(( switches - FAILOVERS )) time(s) on their own (a master that answered late on this busy machine)"

# ---- the figures ---------------------------------------------------------------------
pct() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)] " " a[NR]}'; }
read -r p50 max <<<"$(pct "${GAPS[@]}")"
read -r ap50 amax <<<"$(pct "${AFTER[@]}")"
note "time without a working leader over ${#GAPS[@]} failovers: p50 $p50 ms, max $max ms (after the switch: p50 $ap50 ms, max $amax ms)"
note "  each: ${GAPS[*]} ms"
echo "{\"failovers\":${#GAPS[@]},\"leader_gap_ms\":{\"p50\":$p50,\"max\":$max,\"each\":[$(IFS=,; echo "${GAPS[*]}")]},\"after_switch_ms\":{\"p50\":$ap50,\"max\":$amax}}" >"$T/figures.json"
cat "$T/figures.json"

# ---- the ledgers ---------------------------------------------------------------------
[ -s "$T/ledger.txt" ] || fail "empty ledger"
dups=$(awk '{print $1}' "$T/ledger.txt" | sort | uniq -d)
[ -z "$dups" ] || fail "ticks run twice: $(echo $dups | head -c 300)"
sort "$T/ledger.txt" | awk '$2 < f {print "term went down at " $1; bad=1} {f=$2} END{exit bad}' ||
    fail "a later tick ran under a lower term"
first=$(awk '{print $1}' "$T/ledger.txt" | sort | head -n1)
last=$(awk '{print $1}' "$T/ledger.txt" | sort | tail -n1)
missing_out="" missing_in=0
for s in $(seq "$(date -d "$first" +%s)" "$(date -d "$last" +%s)"); do
    t=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%SZ)
    grep -q "^$t " "$T/ledger.txt" && continue
    inside=0
    for w in "${WINDOWS[@]}"; do
        read -r a b <<<"$w"
        [ "$s" -ge "$a" ] && [ "$s" -le "$b" ] && inside=1
    done
    if [ $inside = 1 ]; then missing_in=$(( missing_in + 1 )); else missing_out="$missing_out $t"; fi
done
[ -z "$missing_out" ] || fail "ticks missing outside the outages:$missing_out"
ticks=$(wc -l <"$T/ledger.txt")
terms=$(awk '{print $2}' "$T/ledger.txt" | sort -un | wc -l)
note "ledger: $ticks ticks from $first to $last, none twice, $missing_in missing inside outages, $terms terms"

[ -s "$T/lockledger.txt" ] || fail "no lock was granted"
awk 'NR > 1 && $1 <= f {print "fence " $1 " after " f; bad=1} {f=$1} END{exit bad}' "$T/lockledger.txt" ||
    fail "lock fences did not strictly increase"
unexpected=$(grep -vxE '0|69|70|75' "$T/lockrc.txt" | sort | uniq -c)
[ -z "$unexpected" ] || fail "baton lock ended with unexpected statuses: $unexpected"
note "locks: $(wc -l <"$T/lockledger.txt") grants, fences strictly increasing; statuses: $(sort "$T/lockrc.txt" | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
note "ok"
