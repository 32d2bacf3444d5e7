# cluster.sh -- a Redis Cluster on loopback for tests and benchmarks: three
# masters and three replicas (one each), made with redis-cli --cluster
# create, in the test's directory. Source it after harness.sh:
#   . "$BATON_TESTS_DIR/lib/cluster.sh"
#   cluster_start          starts the six nodes and creates the cluster; sets
#                          CPORT[0..5] (the client ports), CLUSTER_URL
#                          (redis-cluster://h:p,h:p,h:p: three seeds)
#   cluster_wait_ok S      waits up to S seconds for cluster_state:ok on every
#                          running node, each master with an online replica
#   cluster_master_of_slot N   the port of the master of slot N (as node 0..5
#                          sees it: the first that answers)
#   cluster_replica_of PORT    the port of a replica of the master on PORT
#   cluster_node_kill I / cluster_node_start I    SIGKILL node I / start it
#                          again with its own nodes.conf (it rejoins)
#   cluster_index PORT     the index of the node on PORT
#   ccli PORT ARGS...      redis-cli -p PORT
# Every process is stopped by the harness, by pid (HARNESS_REDIS_PIDS). The
# nodes keep no data on disk (no RDB, no AOF): a restarted node rejoins by
# its nodes.conf and resyncs from its master.
CLUSTER_NODE_TIMEOUT=${CLUSTER_NODE_TIMEOUT:-1000}
declare -a CPORT=() CBUS=() CPID=()

ccli() { redis-cli -p "$1" "${@:2}"; }

# cluster_node_start I: starts node I on its ports (again). Returns 1 when
# it does not answer within 5 s.
cluster_node_start() {
    local i=$1 dir="$T/cnode$1" pid n
    mkdir -p "$dir"
    redis-server --port "${CPORT[$i]}" --cluster-port "${CBUS[$i]}" --bind 127.0.0.1 \
        --dir "$dir" --save '' --appendonly no --daemonize no --logfile "$dir/redis.log" \
        --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
        --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT" --cluster-replica-validity-factor 0 \
        --repl-diskless-sync yes --repl-diskless-sync-delay 0 </dev/null >/dev/null 2>&1 &
    pid=$!
    for n in $(seq 1 250); do
        if serves_as "$pid" ccli "${CPORT[$i]}"; then
            CPID[$i]=$pid
            HARNESS_REDIS_PIDS+=("$pid")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null
    return 1
}

cluster_node_kill() {
    { kill -KILL "${CPID[$1]}"; wait "${CPID[$1]}"; } 2>/dev/null
    CPID[$1]=
    return 0
}

# A loopback port nothing listens on, not among the cluster's ports yet.
cluster_free_port() {
    local p
    while :; do
        p=$(free_port)
        case " ${CPORT[*]} ${CBUS[*]} " in *" $p "*) continue ;; esac
        echo "$p"
        return
    done
}

cluster_start() {
    command -v redis-server >/dev/null || fail "redis-server is not installed (apt-get install redis-server)"
    command -v redis-cli >/dev/null || fail "redis-cli is not installed (apt-get install redis-tools)"
    local i attempt addrs=()
    for i in 0 1 2 3 4 5; do
        for attempt in 1 2 3 4 5; do
            CPORT[$i]=$(cluster_free_port)
            CBUS[$i]=$(cluster_free_port)
            cluster_node_start "$i" && break
            [ "$attempt" = 5 ] && fail "cluster node $i did not start"
        done
        addrs+=("127.0.0.1:${CPORT[$i]}")
    done
    # Masters are the first three; each gets one of the others as replica.
    timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
        >"$T/cluster-create.log" 2>&1 || fail "redis-cli --cluster create failed: $(tail -n 5 "$T/cluster-create.log")"
    CLUSTER_URL="redis-cluster://127.0.0.1:${CPORT[0]},127.0.0.1:${CPORT[1]},127.0.0.1:${CPORT[2]}"
    cluster_wait_ok 60
}

# The port of the master of slot N, as the first node that answers says
# (CLUSTER NODES: a master's line lists its slots and ranges from field 9).
cluster_master_of_slot() {
    local i out
    for i in 0 1 2 3 4 5; do
        [ -n "${CPID[$i]:-}" ] || continue
        out=$(ccli "${CPORT[$i]}" cluster nodes 2>/dev/null | awk -v s="$1" '
            $3 ~ /master/ && $3 !~ /fail/ {
                for (f = 9; f <= NF; f++) {
                    if ($f ~ /^\[/) continue
                    n = split($f, r, "-"); lo = r[1] + 0; hi = (n == 2 ? r[2] : r[1]) + 0
                    if (lo <= s && s <= hi) { split($2, a, "[:@]"); print a[2]; exit }
                }
            }')
        [ -n "$out" ] && { echo "$out"; return 0; }
    done
    return 1
}

# The port of a replica of the master on PORT (from CLUSTER NODES).
cluster_replica_of() {
    local id
    id=$(ccli "$1" cluster myid 2>/dev/null)
    ccli "$1" cluster nodes 2>/dev/null | awk -v id="$id" '$4 == id && $3 ~ /slave/ && $3 !~ /fail/ {
        split($2, a, "[:@]"); print a[2]; exit }'
}

cluster_index() {
    local i
    for i in 0 1 2 3 4 5; do [ "${CPORT[$i]}" = "$1" ] && { echo "$i"; return; }; done
    echo -1
}

# cluster_wait_ok S: every running node says cluster_state:ok, sees 3
# masters that together serve every slot, each with a connected replica.
cluster_wait_ok() {
    local deadline=$(( $(now_ms) + $1 * 1000 )) i ok why
    while :; do
        ok=1 why=
        for i in 0 1 2 3 4 5; do
            [ -n "${CPID[$i]:-}" ] || continue
            if ! ccli "${CPORT[$i]}" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
                ok=0 why="node ${CPORT[$i]} is not ok"
                break
            fi
            if ccli "${CPORT[$i]}" cluster nodes 2>/dev/null | grep -qE 'fail|handshake|noaddr'; then
                ok=0 why="node ${CPORT[$i]} sees a failed node"
                break
            fi
        done
        if [ $ok = 1 ]; then
            local nodes masters lagging
            nodes=$(ccli "${CPORT[0]}" cluster nodes 2>/dev/null || ccli "${CPORT[1]}" cluster nodes 2>/dev/null)
            masters=$(echo "$nodes" | awk '$3 ~ /master/ && NF >= 9' | wc -l)
            [ "$masters" = 3 ] || { ok=0; why="$masters masters serve slots"; }
            # every replica linked to its master and synced
            for i in 0 1 2 3 4 5; do
                [ -n "${CPID[$i]:-}" ] || continue
                if ccli "${CPORT[$i]}" info replication 2>/dev/null | grep -q '^role:slave'; then
                    ccli "${CPORT[$i]}" info replication | grep -q '^master_link_status:up' ||
                        { ok=0; why="replica ${CPORT[$i]} not synced"; }
                    lagging=$(ccli "${CPORT[$i]}" info replication | grep -c '^master_sync_in_progress:1')
                    [ "$lagging" = 0 ] || { ok=0; why="replica ${CPORT[$i]} syncing"; }
                fi
            done
        fi
        [ $ok = 1 ] && return 0
        [ "$(now_ms)" -lt "$deadline" ] || fail "the cluster is not ok after $1 s: $why"
        sleep 0.1
    done
}
