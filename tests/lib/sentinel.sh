# sentinel.sh -- a Sentinel group on loopback for tests and benchmarks:
# one master, two replicas, three redis-sentinel processes, each with its
# own password (the data nodes' and the sentinels' differ). Source it
# after harness.sh:
#   . "$BATON_TESTS_DIR/lib/sentinel.sh"
#   sentinel_group_start   starts it all; sets DATA_PW, SENT_PW, the ports
#                          NODE_PORT[0..2] (node 0 is the first master),
#                          SENT_PORT[0..2], SENT_URL (redis-sentinel://...
#                          ?master=mymaster, without passwords)
#   sentinel_master_port   the port the sentinels name as master now
#   sentinel_wait_healthy S   waits up to S seconds for a master with two
#                          online replicas that every sentinel knows
#   node_kill I / node_start I [--replicaof ...] (returns 1 if it fails)
# Every process is stopped by the harness, by pid. Fails (never skips)
# when redis-sentinel is missing.

command -v redis-sentinel >/dev/null ||
    fail "redis-sentinel is not installed (apt-get install redis-sentinel)"
DATA_PW="data-$RANDOM$RANDOM"
SENT_PW="sent-$RANDOM$RANDOM"
declare -a NODE_PORT=() NODE_PID=() SENT_PORT=() SENT_PID=()
MASTER_NAME=mymaster

dcli() { redis-cli -p "$1" -a "$DATA_PW" --no-auth-warning "${@:2}"; }
scli() { redis-cli -p "$1" -a "$SENT_PW" --no-auth-warning "${@:2}"; }

# node_start I [ARGS...]: starts data node I on its port (again). Returns 1
# when it does not start.
node_start() {
    local i=$1 dir="$T/node$1" pid n
    shift
    mkdir -p "$dir"
    redis-server --port "${NODE_PORT[$i]}" --bind 127.0.0.1 --dir "$dir" --save '' \
        --appendonly no --daemonize no --logfile "$dir/redis.log" \
        --requirepass "$DATA_PW" --masterauth "$DATA_PW" \
        --repl-diskless-sync yes --repl-diskless-sync-delay 0 "$@" </dev/null >/dev/null 2>&1 &
    pid=$!
    for n in $(seq 1 250); do
        if serves_as "$pid" dcli "${NODE_PORT[$i]}"; then
            NODE_PID[$i]=$pid
            HARNESS_REDIS_PIDS+=("$pid")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null
    return 1
}

# node_first_start I [ARGS...]: node_start on another free port while its
# own was taken meanwhile.
node_first_start() {
    local attempt
    for attempt in 1 2 3 4 5; do
        node_start "$@" && return 0
        NODE_PORT[$1]=$(free_port)
    done
    fail "data node $1 did not start"
}

node_kill() {
    { kill -KILL "${NODE_PID[$1]}"; wait "${NODE_PID[$1]}"; } 2>/dev/null
    return 0
}

# sentinel_start I: starts sentinel I, on another free port if its own is
# taken meanwhile (the sentinels find each other through the master).
sentinel_start() {
    local i=$1 attempt
    for attempt in 1 2 3 4 5; do
        sentinel_launch "$i" && return 0
        SENT_PORT[$i]=$(free_port)
    done
    fail "sentinel $i did not start"
}

sentinel_launch() {
    local i=$1 dir="$T/sentinel$1" pid n
    mkdir -p "$dir"
    cat >"$dir/sentinel.conf" <<EOF
port ${SENT_PORT[$i]}
bind 127.0.0.1
daemonize no
dir $dir
logfile $dir/sentinel.log
requirepass $SENT_PW
sentinel sentinel-pass $SENT_PW
sentinel monitor $MASTER_NAME 127.0.0.1 ${NODE_PORT[0]} 2
sentinel auth-pass $MASTER_NAME $DATA_PW
sentinel down-after-milliseconds $MASTER_NAME 1500
sentinel failover-timeout $MASTER_NAME 3000
sentinel parallel-syncs $MASTER_NAME 2
EOF
    redis-sentinel "$dir/sentinel.conf" </dev/null >/dev/null 2>&1 &
    pid=$!
    for n in $(seq 1 250); do
        if serves_as "$pid" scli "${SENT_PORT[$i]}"; then
            SENT_PID[$i]=$pid
            HARNESS_REDIS_PIDS+=("$pid")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null
    return 1
}

sentinel_group_start() {
    local i p
    for i in 0 1 2; do
        while :; do
            p=$(free_port)
            case " ${NODE_PORT[*]} ${SENT_PORT[*]} " in *" $p "*) continue ;; esac
            break
        done
        NODE_PORT[$i]=$p
    done
    for i in 0 1 2; do
        while :; do
            p=$(free_port)
            case " ${NODE_PORT[*]} ${SENT_PORT[*]} " in *" $p "*) continue ;; esac
            break
        done
        SENT_PORT[$i]=$p
    done
    node_first_start 0
    node_first_start 1 --replicaof 127.0.0.1 "${NODE_PORT[0]}"
    node_first_start 2 --replicaof 127.0.0.1 "${NODE_PORT[0]}"
    for i in 0 1 2; do sentinel_start "$i"; done
    SENT_URL="redis-sentinel://127.0.0.1:${SENT_PORT[0]},127.0.0.1:${SENT_PORT[1]},127.0.0.1:${SENT_PORT[2]}/0?master=$MASTER_NAME"
    sentinel_wait_healthy 30
}

# The master's port as sentinel I (default 0) names it.
sentinel_master_port() {
    scli "${SENT_PORT[${1:-0}]}" sentinel get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | sed -n 2p
}

# The index of the data node on port P.
node_index() {
    local i
    for i in 0 1 2; do [ "${NODE_PORT[$i]}" = "$1" ] && { echo "$i"; return; }; done
    echo -1
}

sentinel_wait_healthy() {
    local deadline=$(( $(now_ms) + $1 * 1000 )) m ok i
    while :; do
        ok=1
        m=$(sentinel_master_port 0)
        [ -n "$m" ] || ok=0
        for i in 1 2; do [ "$(sentinel_master_port "$i")" = "$m" ] || ok=0; done
        if [ $ok = 1 ]; then
            [ "$(dcli "$m" info replication 2>/dev/null | grep -c 'state=online')" = 2 ] || ok=0
            dcli "$m" info replication 2>/dev/null | grep -q '^role:master' || ok=0
            for i in 0 1 2; do
                [ "$(scli "${SENT_PORT[$i]}" sentinel replicas "$MASTER_NAME" 2>/dev/null |
                    grep -c '^name$')" = 2 ] || ok=0
                scli "${SENT_PORT[$i]}" sentinel replicas "$MASTER_NAME" 2>/dev/null |
                    grep -qE 's_down|disconnected' && ok=0
                [ "$(scli "${SENT_PORT[$i]}" sentinel master "$MASTER_NAME" 2>/dev/null |
                    sed -n '/^num-other-sentinels$/{n;p}')" = 2 ] || ok=0
            done
        fi
        [ $ok = 1 ] && return 0
        [ "$(now_ms)" -lt "$deadline" ] || fail "the sentinel group is not healthy after $1 s (master: ${m:-none})"
        sleep 0.1
    done
}
