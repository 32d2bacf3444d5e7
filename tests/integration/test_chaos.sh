# test_chaos.sh -- exactly once under failures. Three supervisors run a job
# every second that appends "BATON_SCHEDULED_AT BATON_FENCE BATON_NODE" to a
# ledger. For CHAOS_SECONDS (default 60) a random node is SIGKILLed, SIGTERMed
# or SIGSTOPped for longer than the lease, and restarted; once, redis-server
# itself is restarted (AOF, appendfsync always: what exactly-once across a
# Redis restart requires). Then the ledger must hold every second of the
# window exactly once, and fences must never go down as time goes up.
#
# Signals are sent half-way between ticks: a supervisor that dies takes its
# running job with it (by design: no orphans), and the ledger job lives ~2 ms;
# this test is about which ticks are scheduled, not about that luck.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
SECONDS_TOTAL=${CHAOS_SECONDS:-60}
SEED=${CHAOS_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
note "seed $SEED (CHAOS_SEED=$SEED to replay), $SECONDS_TOTAL s"

redis_start --appendonly yes --appendfsync always
cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: ledger
    schedule: "* * * * * *"
    catchup: 1h
    concurrency: allow
    shell: "echo \$BATON_SCHEDULED_AT \$BATON_FENCE \$BATON_NODE >> $T/ledger.txt"
EOF
declare -A GEN=()
start() {
    local n=$1
    GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
    cat > "$T/$n.yaml" <<EOF
node: $n
redis: $REDIS_URL
group: chaos
lease: {ttl: 1s}
redis_timeout: 200ms
poll: 1s
shutdown_grace: 2s
jobs: $T/jobs.yaml
EOF
    spawn "$n.${GEN[$n]}" "$B" run -c "$T/$n.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
mid_second() { # sleep until the next X.5 s
    local ns; ns=$(date +%N); ns=${ns#0}; ns=${ns#0}
    sleep "$(awk "BEGIN{d=(1500000000 - $ns) / 1e9; if (d > 1) d -= 1; print d}")"
}

for n in n1 n2 n3; do start $n; done
sleep 2
end=$(( $(now_ms) + SECONDS_TOTAL * 1000 ))
half=$(( $(now_ms) + SECONDS_TOTAL * 500 ))
restarted_redis=0 kills=0 terms=0 stops=0
while [ "$(now_ms)" -lt "$end" ]; do
    sleep $(( RANDOM % 2 + 1 ))
    mid_second
    if [ $restarted_redis -eq 0 ] && [ "$(now_ms)" -ge "$half" ]; then
        note "  restart redis-server"
        redis_restart
        restarted_redis=1
        continue
    fi
    n=n$(( RANDOM % 3 + 1 ))
    case $(( RANDOM % 3 )) in
    0) kill -KILL "$(pid $n)"; wait_exit "$n.${GEN[$n]}" 5; kills=$((kills + 1)); start $n ;;
    1) kill -TERM "$(pid $n)"; wait_exit "$n.${GEN[$n]}" 10
       assert_eq 0 "$EXIT_CODE" "exit status of $n after SIGTERM"; terms=$((terms + 1)); start $n ;;
    2) kill -STOP "$(pid $n)"; sleep 1.6; kill -CONT "$(pid $n)"; stops=$((stops + 1)) ;;
    esac
done
note "  $kills SIGKILL, $terms SIGTERM, $stops SIGSTOP, redis restarted $restarted_redis time"
sleep 2
for n in n1 n2 n3; do kill -TERM "$(pid $n)"; done
for n in n1 n2 n3; do wait_exit "$n.${GEN[$n]}" 10; done

[ -s "$T/ledger.txt" ] || fail "empty ledger"
dups=$(awk '{print $1}' "$T/ledger.txt" | sort | uniq -d)
[ -z "$dups" ] || fail "ticks run twice: $(echo $dups | head -c 300)"
first=$(awk '{print $1}' "$T/ledger.txt" | sort | head -n1)
last=$(awk '{print $1}' "$T/ledger.txt" | sort | tail -n1)
want=$(( $(date -d "$last" +%s) - $(date -d "$first" +%s) + 1 ))
got=$(wc -l < "$T/ledger.txt")
if [ "$got" -ne "$want" ]; then
    missing=""
    for s in $(seq "$(date -d "$first" +%s)" "$(date -d "$last" +%s)"); do
        t=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%SZ)
        grep -q "^$t " "$T/ledger.txt" || missing="$missing $t"
    done
    fail "$got ticks in the ledger, $want seconds from $first to $last; missing:$missing"
fi
sort "$T/ledger.txt" | awk '$2 < f {print "fence went down at " $1; bad=1} {f=$2} END{exit bad}' \
    || fail "a later tick ran under a lower fence"
terms_seen=$(awk '{print $2}' "$T/ledger.txt" | sort -un | wc -l)
note "  $got ticks from $first to $last, each exactly once, under $terms_seen terms"
note "ok"
