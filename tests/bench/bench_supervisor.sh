# bench_supervisor.sh -- handover and footprint of `baton run`; prints JSON.
#
#   graceful  3 nodes, SIGTERM the leader N times (restarting it as a
#             follower): signal -> another node's "working" transition.
#             Target p99 <= 50 ms.
#   crash     SIGKILL instead: (new "working") - (kill) - ttl. Target p99 <= 100 ms.
#   footprint default settings (ttl 10s, poll 5s), 1 leader + 2 followers for
#             W s: follower RSS, CPU, and Redis commands per follower per
#             second, counted by MONITOR and attributed to each process by its
#             sockets. Targets: RSS <= 5 MB, CPU ~ 0, <= 1 command/s.
#
# usage: bench_supervisor.sh [--smoke] [--rounds N] [--window S]
# Needs BATON_BIN (the baton binary) and BATON_TESTS_DIR (tests/).
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
B=$BATON_BIN
ROUNDS=20 WINDOW=30
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) ROUNDS=2 WINDOW=3 ;;
    --rounds) ROUNDS=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    *) echo "usage: bench_supervisor.sh [--smoke] [--rounds N] [--window S]" >&2; exit 2 ;;
    esac
    shift
done
redis_start
echo 'jobs: []' > "$T/jobs.yaml"
TTL_MS=1000
declare -A GEN=()
start() { # start NODE GROUP [extra yaml]
    local n=$1 g=$2
    GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
    { printf 'node: %s\nredis: %s\ngroup: %s\njobs: %s\n' "$n" "$REDIS_URL" "$g" "$T/jobs.yaml"
      [ -n "${3:-}" ] && printf '%s\n' "$3"; } > "$T/$n.yaml"
    spawn "$n.${GEN[$n]}" "$B" run -c "$T/$n.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
out() { echo "$T/$1.${GEN[$1]}.out"; }
leader() { rcli get "baton:{$1}:leader" | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_new_leader() { # GROUP OLD -> prints new leader
    local l
    for _ in $(seq 1 1000); do
        l=$(leader "$1"); [ -n "$l" ] && [ "$l" != "$2" ] && { echo "$l"; return 0; }
        sleep 0.01
    done
    fail "no new leader in group $1"
}
# working_ms NODE: Unix ms of the node's latest transition to working
working_ms() { ts_ms "$(grep '"to":"working"' "$(out "$1")" | tail -n1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')"; }
# stats FILE: "p50 p99 max" of the numbers in FILE
stats() { sort -n "$1" | awk '{v[NR]=$1} END{p50=v[int(0.5*(NR-1)+1.5)]; p99=v[int(0.99*(NR-1)+1.5)]; printf "%d %d %d", p50, p99, v[NR]}'; }

fast='lease: {ttl: 1s}
redis_timeout: 200ms
poll: 1s'
for n in a b c; do start $n fast "$fast"; done
L=$(wait_new_leader fast "")
sleep 1
: > "$T/graceful"
for i in $(seq 1 "$ROUNDS"); do
    p=$(pid "$L")
    at_ms t0
    kill -TERM "$p"
    N=$(wait_new_leader fast "$L")
    sleep 0.05
    echo $(( $(working_ms "$N") - t0 )) >> "$T/graceful"
    wait_exit "$L.${GEN[$L]}" 5
    start "$L" fast "$fast"
    sleep 0.3
    L=$N
done
: > "$T/crash"
for i in $(seq 1 "$ROUNDS"); do
    sleep 0.$(( RANDOM % 9 + 1 ))
    p=$(pid "$L")
    at_ms t0
    kill -KILL "$p"
    N=$(wait_new_leader fast "$L")
    sleep 0.05
    echo $(( $(working_ms "$N") - t0 - TTL_MS )) >> "$T/crash"
    wait_exit "$L.${GEN[$L]}" 5
    start "$L" fast "$fast"
    sleep 0.3
    L=$N
done
for n in a b c; do kill -TERM "$(pid $n)"; done
for n in a b c; do wait_exit "$n.${GEN[$n]}" 5; done
read -r g50 g99 gmax < <(stats "$T/graceful")
read -r c50 c99 cmax < <(stats "$T/crash")

# Footprint, with the defaults.
for n in x y z; do start $n idle; done
FL=$(wait_new_leader idle "")
sleep 2
followers=()
for n in x y z; do [ "$n" != "$FL" ] && followers+=("$n"); done
# socket inodes -> pid, for attributing MONITOR's client ports
ports_of() { # PID: its TCP client ports
    local inodes
    inodes=$(ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')
    local hex
    for hex in $(awk -v want=" $inodes " 'NR > 1 { split($2, a, ":"); if (index(want, " " $10 " ")) print a[2] }' /proc/net/tcp); do
        echo $((16#$hex))
    done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A cpu0=()
for n in "${followers[@]}"; do cpu0[$n]=$(cpu_ticks "$(pid $n)"); done
timeout "$WINDOW" redis-cli -p "$REDIS_PORT" monitor > "$T/monitor" 2>/dev/null
cmds_total=0 rss_max=0 cpu_total=0
for n in "${followers[@]}"; do
    p=$(pid $n)
    ports=$(ports_of "$p" | tr '\n' '|'); ports=${ports%|}
    c=0
    [ -n "$ports" ] && c=$(grep -cE "127\.0\.0\.1:($ports)\]" "$T/monitor")
    cmds_total=$((cmds_total + c))
    rss=$(awk '/^VmRSS:/{print $2}' "/proc/$p/status")
    [ "$rss" -gt "$rss_max" ] && rss_max=$rss
    cpu_total=$((cpu_total + $(cpu_ticks "$p") - ${cpu0[$n]}))
done
for n in x y z; do kill -TERM "$(pid $n)"; done
for n in x y z; do wait_exit "$n.${GEN[$n]}" 5; done
hz=$(getconf CLK_TCK)
nf=${#followers[@]}
cmd_rate=$(awk "BEGIN{printf \"%.2f\", $cmds_total / $nf / $WINDOW}")
cpu_pct=$(awk "BEGIN{printf \"%.3f\", 100 * $cpu_total / $hz / $nf / $WINDOW}")
ok=true
[ "$g99" -le 50 ] && [ "$c99" -le 100 ] && [ "$rss_max" -le 5120 ] || ok=false
awk "BEGIN{exit !($cmd_rate <= 1)}" || ok=false
cat <<EOF
{"bench":"supervisor","rounds":$ROUNDS,
 "graceful_handover_ms":{"p50":$g50,"p99":$g99,"max":$gmax,"target_p99":50},
 "crash_handover_minus_ttl_ms":{"ttl_ms":$TTL_MS,"p50":$c50,"p99":$c99,"max":$cmax,"target_p99":100},
 "idle_follower":{"window_s":$WINDOW,"rss_kb_max":$rss_max,"target_rss_kb":5120,"cpu_percent":$cpu_pct,
   "redis_commands_per_s":$cmd_rate,"target_commands_per_s":1},
 "ok":$ok}
EOF
