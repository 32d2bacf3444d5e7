# bench_peers.sh [--seconds S] [--rounds N] [--hot-runs K] [--steal-max C]
# [--smoke] -- baton beside the tools its users compare it with, every figure
# in one run against one redis-server, printed as a table and then, as the
# last line, one JSON document (baton, each peer, the ratios, the load
# average before and after).
#
#   lock, uncontended, 50 concurrent clients on their own keys, acquire +
#     release cycles/s: baton measured as the peers are, 50 asynchronous
#     cycles in flight on one client (bench_lock --only async: one thread,
#     the client's loop, one connection), and with 50 threads blocking in
#     the same client (--only lib); against node's ioredis with SET NX PX +
#     a scripted release, redis-semaphore's Mutex and node-redlock, each on
#     one connection in each of its usual configurations: ioredis's
#     auto-pipelining on and off (off is its default), and for the scripted
#     release, the script by EVALSHA and by EVAL. Throughput is compared
#     with the fastest configuration, Redis's CPU per cycle with the
#     cheapest (a peer's cycle is unfenced: SET NX PX + a script). Beside
#     them, the floor of any fenced cycle on this server: the fewest calls
#     baton's fence needs, in two scripts by EVALSHA, 50 in flight pipelined
#     on one connection by one C thread (--only floor); the physical limit
#     of the same work: raw SET NX PX + DEL with 50 pairs in flight, the same
#     way (--only pipelined); for scale, raw SET NX PX + DEL by 50 threads on
#     50 connections (--only raw).
#   semaphore, limit 5, 50 clients, zero hold: baton's bench_sem against
#     redis-semaphore's Semaphore, cycles/s and wait p99 of both. baton as
#     the peer runs, 50 asynchronous cycles in flight on one client
#     (bench_sem --only async: one thread, the client's loop), and with 50
#     threads blocking in one client (--only lib) and with a client per
#     thread (every handoff between clients); the raw ZADD + ZREM pairs at
#     the semaphore's concurrency (5 in-process tokens handed first come,
#     first served, bench_sem's "chain"; and 5 node loops, pipelined on one
#     connection, unfair): the ratio is to the faster of the two.
#   hot key, 20 contenders, zero hold: baton (bench_lock's hot key, its
#     ideal in-process FIFO lock, and the floor of a FIFO handoff through
#     Redis: a token in a list, BLPOP + RPUSH) against node-redlock and
#     redis-semaphore's Mutex: handoffs/s, wait p99, longest wait. With
#     --hot-runs K, baton's case runs K times in each round (each run has its
#     own ideal and token measured with it, the three taking turns in five
#     slices so that the machine's stalls fall on each alike); the round
#     reports the worst run
#     (the highest longest wait / ideal), and every run in hot_key.runs.
#     The longest wait taken apart: the grants to others while it waited
#     (first come, first served allows 19) and its slowest handoff.
#   cron next-fire computations: baton's bench_cron against croner and
#     cron-parser on the same expressions (those all three accept), zones and
#     start times (bench_cron --list).
#   Redis's CPU per cycle for every Redis case (INFO cpu before and after),
#   and context switches per cycle: the client's (each program reports its
#   own: getrusage, node's process.resourceUsage) and Redis's (every thread
#   of redis-server, /proc).
#
# node-redlock is 4.2.0, its newest stable release (v5 exists only as a
# beta). The peers (tests/bench/peers/package.json, versions pinned, with
# its lockfile) are installed with `npm ci` into $BATON_BUILD_DIR/peers,
# never into the source tree, and only when that copy is missing or stale.
# npm unreachable: the full run fails; --smoke (a CI smoke test, where there
# may be no network) runs baton's side alone and says that the peers were
# not run.
#
# Each case runs S seconds (default 10: about 4 minutes in all; --smoke 1).
# --rounds N runs every case N times, round after round, so that the ratios
# of each round are taken minutes apart at most on a machine whose load
# changes: the JSON has each round's figures and every ratio per round.
# A case during which the hypervisor took more than C of a core (--steal-max,
# default 0.15) is measured again, at most twice, and the attempt with the
# least steal kept (run_case). Exit 1 when a case fails; the targets are
# reported, not enforced.
set -u
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
BATON_BUILD_DIR=${BATON_BUILD_DIR:-$(cd "$BATON_TESTS_DIR/.." && pwd)/build/werror}
. "$BATON_TESTS_DIR/lib/harness.sh"

seconds=10 rounds=1 hot_runs=1 smoke=0 steal_max=0.15
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) seconds=1 smoke=1 ;;
    --seconds) seconds=${2:-}; shift ;;
    --rounds) rounds=${2:-}; shift ;;
    --hot-runs) hot_runs=${2:-}; shift ;;
    --steal-max) steal_max=${2:-}; shift ;;
    *) fail "usage: bench_peers.sh [--seconds S] [--rounds N] [--hot-runs K] [--steal-max C] [--smoke]" ;;
    esac
    shift
done
[[ $seconds =~ ^[0-9]+([.][0-9]+)?$ ]] && awk "BEGIN{exit !($seconds > 0 && $seconds <= 120)}" ||
    fail "--seconds: expected 0 < S <= 120"
[[ $rounds =~ ^[1-9]$ ]] || fail "--rounds: expected 1 to 9"
[[ $steal_max =~ ^[0-9]+([.][0-9]+)?$ ]] || fail "--steal-max: expected a number of cores, like 0.15"
[[ $hot_runs =~ ^[1-9]$ ]] || fail "--hot-runs: expected 1 to 9"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
bins=$BATON_BUILD_DIR/tests
for b in bench_lock bench_sem bench_cron; do
    [ -x "$bins/$b" ] || fail "$bins/$b is not built (cmake --build $BATON_BUILD_DIR)"
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the peers: npm ci into the build tree (tests/lib/peers.sh) ----
. "$BATON_TESTS_DIR/lib/peers.sh"
src=$PEERS_SRC peers=$PEERS_DIR
if peers_install "$smoke"; then
    peers_ok=1
elif [ "$smoke" = 1 ]; then
    peers_ok=0
    echo "PEERS NOT RUN: $peers_why; --smoke measures baton's side only"
else
    fail "cannot install the peers: $peers_why"
fi

redis_start
redis_cpu() {
    redis-cli -p "$REDIS_PORT" info cpu | tr -d '\r' |
        awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'
}

# Context switches of every thread of redis-server so far.
redis_ctx() {
    cat /proc/"$REDIS_PID"/task/*/status 2>/dev/null |
        awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# The machine's CPU time so far, in clock ticks: "busy steal total" (busy:
# user, nice, system, irq, softirq; steal: the hypervisor ran something else
# while a vCPU wanted to run).
machine_cpu() {
    awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $2 + $3 + $4 + $7 + $8, $9, t; exit }' /proc/stat
}

# measure_once NAME OUT CMD...: runs one case (time-bounded), writes its JSON
# object to OUT with the Redis CPU seconds and context switches it cost added
# as redis_cpu_s and redis_ctx, and how busy the machine's cores were
# meanwhile (machine_busy_cores, of machine_cores: every process, Redis, the
# client and the kernel; machine_steal_cores: time the hypervisor took).
measure_once() {
    local name=$1 out=$2; shift 2
    local c0 c1 x0 x1 m0 m1 limit
    limit=$(awk "BEGIN{printf \"%d\", $seconds * 3 + 30}")
    c0=$(redis_cpu) x0=$(redis_ctx) m0=$(machine_cpu)
    timeout "$limit" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
        fail "$name: $* failed: $(tail -n 3 "$T/$name.err" "$T/$name.out")"
    c1=$(redis_cpu) x1=$(redis_ctx) m1=$(machine_cpu)
    jq -c --argjson cpu "$(awk "BEGIN{printf \"%.6f\", $c1 - $c0}")" --argjson ctx "$((x1 - x0))" \
        --argjson m "$(awk -v a="$m0" -v b="$m1" -v n="$(nproc)" 'BEGIN {
            split(a, x, " "); split(b, y, " "); t = y[3] - x[3]; if (t <= 0) t = 1
            printf "{\"busy\":%.2f,\"steal\":%.2f,\"cores\":%d}", (y[1] - x[1]) / t * n,
                   (y[2] - x[2]) / t * n, n }')" \
        '. + {redis_cpu_s: $cpu, redis_ctx: $ctx, machine_busy_cores: $m.busy,
              machine_steal_cores: $m.steal, machine_cores: $m.cores}' \
        "$T/$name.out" >"$out" 2>/dev/null && [ -s "$out" ] ||
        fail "$name: no JSON object in its output: $(head -c 300 "$T/$name.out")"
}

# run_case NAME CMD...: measures one case into $R/NAME.json (R: the round's
# directory). A case during which the hypervisor took more than
# $steal_max of a core (time the machine's vCPUs wanted and did not get:
# on a shared host this falls on whichever case runs then, baton's or a
# peer's) is measured again, at most twice; the attempt with the least
# steal is kept, and the steal of those dropped is in
# machine_steal_cores_dropped. Every case, baton's and the peers', alike.
run_case() {
    local name=$1; shift
    local k steal dropped=() best= best_steal=
    for k in 1 2 3; do
        measure_once "$name" "$R/$name.try$k.json" "$@"
        steal=$(jq -r '.machine_steal_cores' "$R/$name.try$k.json")
        if [ -z "$best" ] || awk -v a="$steal" -v b="$best_steal" 'BEGIN { exit !(a < b) }'; then
            [ -z "$best" ] || dropped+=("$best_steal")
            best=$R/$name.try$k.json best_steal=$steal
        else
            dropped+=("$steal")
        fi
        awk -v a="$steal" -v m="$steal_max" 'BEGIN { exit !(a > m) }' || break
        [ "$k" = 3 ] || note "  $name: the hypervisor took $steal of a core (over $steal_max): measured again"
    done
    jq -c --argjson d "[$(IFS=,; echo "${dropped[*]}")]" '. + {machine_steal_cores_dropped: $d}' \
        "$best" >"$R/$name.json"
    rm -f "$R/$name".try?.json
}
peer=(env "NODE_PATH=$peers/node_modules" node "$src/peers.js")
export BATON_TEST_URL=$REDIS_URL

# ---- one round: every case once ----
run_round() {
    R=$T/round$1
    mkdir -p "$R"
    cut -d' ' -f1-3 /proc/loadavg >"$R/load_before"
    note "lock, uncontended ($seconds s a case)"
    run_case lock_async "$bins/bench_lock" --only async --seconds "$seconds"
    run_case lock_baton "$bins/bench_lock" --only lib --seconds "$seconds"
    run_case lock_pipelined "$bins/bench_lock" --only pipelined --seconds "$seconds"
    run_case lock_ceiling "$bins/bench_lock" --only raw --seconds "$seconds"
    run_case lock_floor "$bins/bench_lock" --only floor --seconds "$seconds"
    if [ "$peers_ok" = 1 ]; then
        local ap rel
        for ap in on off; do
            for rel in evalsha eval; do
                run_case "lock_peer_raw_${ap}_$rel" "${peer[@]}" lock-raw --url "$REDIS_URL" \
                    --seconds "$seconds" --autopipeline "$ap" --release "$rel"
            done
            run_case "lock_peer_mutex_$ap" "${peer[@]}" lock-mutex --url "$REDIS_URL" \
                --seconds "$seconds" --autopipeline "$ap"
            run_case "lock_peer_redlock_$ap" "${peer[@]}" lock-redlock --url "$REDIS_URL" \
                --seconds "$seconds" --autopipeline "$ap"
        done
    fi
    note "semaphore, limit 5"
    run_case sem_async "$bins/bench_sem" --only async --seconds "$seconds"
    run_case sem_baton "$bins/bench_sem" --only lib --seconds "$seconds"
    run_case sem_clients "$bins/bench_sem" --only clients --seconds "$seconds"
    run_case sem_chain "$bins/bench_sem" --only chain --seconds "$seconds"
    if [ "$peers_ok" = 1 ]; then
        run_case sem_peer "${peer[@]}" sem --url "$REDIS_URL" --seconds "$seconds"
        run_case sem_raw5 "${peer[@]}" sem-raw --url "$REDIS_URL" --seconds "$seconds"
    fi
    note "hot key, 20 contenders"
    # K runs of baton's side; the worst (longest wait / ideal) is the round's
    mkdir -p "$R/hot"
    for k in $(seq 1 "$hot_runs"); do
        run_case hot_run "$bins/bench_lock" --only hot --seconds "$seconds"
        mv "$R/hot_run.json" "$R/hot/$k.json"
    done
    jq -s -c 'map(. + {ratio: (if .hot_key_ideal_in_process_token.wait_ms.longest > 0 then
                  .hot_key.wait_ms.longest / .hot_key_ideal_in_process_token.wait_ms.longest else null end)})
              | (max_by(.ratio // 0) | del(.ratio)) as $w
              | $w + {runs: map({longest_wait_ms: .hot_key.wait_ms.longest,
                                 ideal_longest_wait_ms: .hot_key_ideal_in_process_token.wait_ms.longest,
                                 redis_fifo_longest_wait_ms: .hot_key_redis_fifo_token.wait_ms.longest,
                                 longest_wait_over_ideal: (if .ratio == null then null else (.ratio * 1000 | round) / 1000 end),
                                 handoff_p99_ms: .hot_key.handoff_ms.p99,
                                 handoffs_per_sec: .hot_key.handoffs_per_sec,
                                 ideal_handoffs_per_sec: .hot_key_ideal_in_process_token.handoffs_per_sec,
                                 machine_longest_stall_ms: .hot_key.machine_longest_stall_ms,
                                 longest_wait_overtaken_by: .hot_key.longest_wait_overtaken_by,
                                 longest_wait_worst_handoff_ms: .hot_key.longest_wait_worst_handoff_ms,
                                 ideal_machine_longest_stall_ms: .hot_key_ideal_in_process_token.machine_longest_stall_ms})}' \
        "$R"/hot/*.json >"$R/hot_baton.json" && [ -s "$R/hot_baton.json" ] ||
        fail "hot key: could not pick the worst of $hot_runs runs"
    if [ "$peers_ok" = 1 ]; then
        run_case hot_redlock "${peer[@]}" hot-redlock --url "$REDIS_URL" --seconds "$seconds"
        run_case hot_mutex "${peer[@]}" hot-mutex --url "$REDIS_URL" --seconds "$seconds"
    fi
    note "cron next-fire computations"
    skips=()
    if [ "$peers_ok" = 1 ]; then
        for lib in croner parser; do
            run_case "cron_$lib" sh -c 'exec "$@" <"$0"' "$T/cron-list.json" \
                "${peer[@]}" "cron-$lib" --seconds "$seconds"
        done
        while IFS= read -r e; do skips+=(--skip "$e"); done < <(jq -r '.expressions_refused[]' \
            "$R/cron_croner.json" "$R/cron_parser.json" | sort -u)
    fi
    run_case cron_baton "$bins/bench_cron" --seconds "$seconds" "${skips[@]}"
    cut -d' ' -f1-3 /proc/loadavg >"$R/load_after"
}
if [ "$peers_ok" = 1 ]; then
    "$bins/bench_cron" --list >"$T/cron-list.json" || fail "bench_cron --list failed"
fi
for round in $(seq 1 "$rounds"); do
    [ "$rounds" = 1 ] || note "round $round of $rounds"
    run_round "$round"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- each round's figures and ratios, then one JSON document and the table ----
# round_doc N: the JSON object of round N.
round_doc() {
    local R=$T/round$1 f
    local args=(--arg load_before "$(cat "$R/load_before")" --arg load_after "$(cat "$R/load_after")"
                --argjson seconds "$seconds" --argjson round "$1")
    for f in "$R"/*.json; do args+=(--slurpfile "$(basename "$f" .json)" "$f"); done
    jq -n -c "${args[@]}" '
  def one(n): $ARGS.named[n][0] // null;
  def r(a; b): if a == null or b == null or b == 0 then null else (a / b * 1000 | round) / 1000 end;
  def cpu_us(x; cycles): if x == null or cycles == 0 then null else (x.redis_cpu_s / cycles * 1e9 | round) / 1000 end;
  def cyc(x): if x == null then 0 else (x.cycles // (x.cycles_per_sec * (x.seconds // $seconds))) end;
  def per(v; cycles): if v == null or cycles == 0 then null else (v / cycles * 1000 | round) / 1000 end;
  def row(x; name): if x == null then null else
      {who: name, cycles_per_sec: x.cycles_per_sec, redis_cpu_us_per_cycle: cpu_us(x; cyc(x)),
       client_ctx_switches_per_cycle: per(x.ctx_switches; cyc(x)),
       client_cpu_us_per_cycle: x.client_cpu_us_per_cycle,
       redis_ctx_switches_per_cycle: per(x.redis_ctx; cyc(x)),
       machine_busy_cores: x.machine_busy_cores, machine_steal_cores: x.machine_steal_cores,
       machine_steal_cores_dropped: x.machine_steal_cores_dropped, machine_cores: x.machine_cores,
       redis_cores: (if x.redis_cpu_s == null or cyc(x) == 0 or x.cycles_per_sec == null
                     or x.cycles_per_sec == 0 then null
                     else (x.redis_cpu_s / (cyc(x) / x.cycles_per_sec) * 100 | round) / 100 end)} end;
  (one("lock_async")) as $la | (one("lock_pipelined")) as $lp | (one("lock_floor")) as $lf |
  (one("lock_baton")) as $lb | (one("lock_ceiling")) as $lc |
  ([$ARGS.named | to_entries[] | select(.key | startswith("lock_peer_")) | .value[0]
    | row(.; .peer)] | sort_by(.who)) as $lpeers |
  ($lpeers | map(select(.cycles_per_sec != null)) | max_by(.cycles_per_sec)) as $best |
  ($lpeers | map(select(.redis_cpu_us_per_cycle != null)) | min_by(.redis_cpu_us_per_cycle)) as $cheap |
  (one("sem_async")) as $sa | (one("sem_baton")) as $sb | (one("sem_clients")) as $sx | (one("sem_chain")) as $sc | (one("sem_peer")) as $sp | (one("sem_raw5")) as $s5 |
  (one("hot_baton")) as $hb | (one("hot_redlock")) as $hr | (one("hot_mutex")) as $hm |
  (one("cron_baton")) as $cb | (one("cron_croner")) as $cc | (one("cron_parser")) as $cp |
  {round: $round, load_average: {before: $load_before, after: $load_after},
   lock_uncontended: {clients: 50,
     baton: row($la; "baton, 50 async cycles in flight, one client (loop thread)"),
     baton_50_threads: row($lb; "baton, 50 threads blocking, one client"),
     peers: $lpeers,
     physical_limit_pipelined: row($lp; "raw SET NX PX + DEL, 50 in flight, 1 conn (C)"),
     fenced_floor_two_scripts: row($lf; "fenced floor: 2 scripts by EVALSHA, 50 in flight (C)"),
     reference_raw_50_connections: row($lc; "raw SET NX PX + DEL, 50 threads, 50 conns (C)"),
     ratio_to_fastest_peer: r($la.cycles_per_sec; $best.cycles_per_sec), fastest_peer: $best.who,
     target_ratio_to_fastest_peer: 2.0,
     cheapest_peer: $cheap.who,
     redis_cpu_ratio_to_cheapest_peer: r(cpu_us($la; cyc($la)); $cheap.redis_cpu_us_per_cycle),
     floor_redis_cpu_ratio_to_cheapest_peer: r(cpu_us($lf; cyc($lf)); $cheap.redis_cpu_us_per_cycle),
     target_redis_cpu_ratio_to_cheapest_peer: 1.5,
     threads_ratio_to_fastest_peer: r($lb.cycles_per_sec; $best.cycles_per_sec),
     ratio_to_physical_limit: r($la.cycles_per_sec; $lp.cycles_per_sec)},
   semaphore: {limit: 5, clients: 50,
     baton: (row($sa; "baton, 50 async cycles in flight, one client (loop thread)") + {wait_ms: $sa.wait_ms, max_holders_seen: $sa.max_holders_seen}),
     baton_50_threads: (row($sb; "baton, 50 threads blocking, one client") + {wait_ms: $sb.wait_ms, max_holders_seen: $sb.max_holders_seen}),
     baton_a_client_each: (row($sx; "baton, 50 threads blocking, a client each") + {wait_ms: $sx.wait_ms}),
     peer: (if $sp == null then null else row($sp; $sp.peer) + {wait_ms: $sp.wait_ms} end),
     reference_raw_pairs_5_fair_tokens: row($sc; "raw ZADD + ZREM, 5 tokens handed FIFO (C, 50 threads)"),
     reference_raw_pairs_5_node_loops: row($s5; $s5.peer),
     ratio_to_peer: r($sa.cycles_per_sec; $sp.cycles_per_sec), target_ratio_to_peer: 1.0,
     threads_ratio_to_peer: r($sb.cycles_per_sec; $sp.cycles_per_sec),
     wait_p99_peer_over_baton: r($sp.wait_ms.p99; $sa.wait_ms.p99),
     ratio_to_raw_pairs_at_concurrency_5: r($sa.cycles_per_sec; ([$sc.cycles_per_sec, $s5.cycles_per_sec] | map(select(. != null)) | max)),
     target_ratio_to_raw_pairs: 0.8},
   hot_key: {contenders: 20, runs_of_baton: ($hb.runs | length), runs: $hb.runs,
     baton: ($hb.hot_key | {handoffs_per_sec, handoff_ms, wait_ms, machine_longest_stall_ms,
                            longest_wait_overtaken_by, longest_wait_worst_handoff_ms}),
     ideal_in_process_fifo: ($hb.hot_key_ideal_in_process_token | {handoffs_per_sec, handoff_ms, wait_ms, machine_longest_stall_ms}),
     redis_fifo_token: ($hb.hot_key_redis_fifo_token | {handoffs_per_sec, handoff_ms, wait_ms, machine_longest_stall_ms}),
     peers: [$hr, $hm] | map(select(. != null) | {who: .peer, handoffs_per_sec, wait_ms}),
     longest_wait_over_ideal: r($hb.hot_key.wait_ms.longest; $hb.hot_key_ideal_in_process_token.wait_ms.longest),
     longest_wait_over_redis_fifo: r($hb.hot_key.wait_ms.longest; $hb.hot_key_redis_fifo_token.wait_ms.longest),
     target_longest_wait_over_ideal: 1.5, target_handoff_p99_ms: 0.5},
   cron_next: {expressions: $cb.expressions, zones: $cb.zones,
     left_out: ([$cc, $cp] | map(select(. != null) | .expressions_refused[]) | unique),
     baton_ops_per_sec: $cb.ops_per_sec,
     peers: [$cc, $cp] | map(select(. != null) | {who: .peer, ops_per_sec, baton_ratio: r($cb.ops_per_sec; .ops_per_sec)})}}'
}
for round in $(seq 1 "$rounds"); do
    round_doc "$round" >"$T/round$round.doc" && [ -s "$T/round$round.doc" ] ||
        fail "could not assemble the JSON of round $round"
done
doc=$(jq -s -c --arg load_before "$load_before" --arg load_after "$load_after" \
      --argjson seconds "$seconds" --arg redis "$(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-)" \
      --argjson peers_run "$([ "$peers_ok" = 1 ] && echo true || echo false)" --arg peers_why "$peers_why" '
  {bench: "peers", seconds: $seconds, rounds: length, redis: $redis,
   load_average: {before: $load_before, after: $load_after},
   peers_run: $peers_run, peers_not_run_because: (if $peers_run then null else $peers_why end),
   ratios_per_round: {
     lock_baton_over_fastest_peer: map(.lock_uncontended.ratio_to_fastest_peer),
     lock_redis_cpu_baton_over_cheapest_peer: map(.lock_uncontended.redis_cpu_ratio_to_cheapest_peer),
     lock_redis_cpu_floor_over_cheapest_peer: map(.lock_uncontended.floor_redis_cpu_ratio_to_cheapest_peer),
     lock_baton_50_threads_over_fastest_peer: map(.lock_uncontended.threads_ratio_to_fastest_peer),
     lock_baton_over_physical_limit: map(.lock_uncontended.ratio_to_physical_limit),
     sem_baton_over_peer: map(.semaphore.ratio_to_peer),
     sem_baton_50_threads_over_peer: map(.semaphore.threads_ratio_to_peer),
     sem_peer_wait_p99_over_baton: map(.semaphore.wait_p99_peer_over_baton),
     sem_baton_over_raw_pairs_at_5: map(.semaphore.ratio_to_raw_pairs_at_concurrency_5),
     hot_baton_longest_wait_over_ideal: map(.hot_key.longest_wait_over_ideal),
     hot_baton_longest_wait_over_redis_fifo: map(.hot_key.longest_wait_over_redis_fifo),
     hot_baton_handoff_p99_ms: map(.hot_key.baton.handoff_ms.p99),
     cron_baton_over_croner: map([.cron_next.peers[] | select(.who | startswith("croner@")) | .baton_ratio][0]),
     cron_baton_over_cron_parser: map([.cron_next.peers[] | select(.who | startswith("cron-parser@")) | .baton_ratio][0])},
   round_figures: .}' "$T"/round*.doc)
[ -n "$doc" ] || fail "could not assemble the JSON document"

jq -r '
  def f(x): if x == null then "-" else (x | tostring) end;
  "load average: before \(.load_average.before), after \(.load_average.after); \(.rounds) round(s) of \(.seconds) s a case; redis \(.redis)",
  (if .peers_run then empty else "PEERS NOT RUN: \(.peers_not_run_because)" end),
  (.round_figures[] |
  def pad: .[0:58] + " " * (60 - (.[0:58] | length));
  "",
  "== round \(.round) (load average before \(.load_average.before), after \(.load_average.after))",
  "\("lock, uncontended, 50 clients" | pad)cycles/s\tredis CPU us/cycle\tctx switches/cycle client, redis",
  (.lock_uncontended | ([.baton, .baton_50_threads] + .peers + [.fenced_floor_two_scripts, .physical_limit_pipelined, .reference_raw_50_connections])[] | select(. != null) |
     "  \(.who | pad)\(f(.cycles_per_sec))\t\(f(.redis_cpu_us_per_cycle))\t\(f(.client_ctx_switches_per_cycle)), \(f(.redis_ctx_switches_per_cycle))"),
  "  baton / fastest peer (\(.lock_uncontended.fastest_peer // "-")): \(f(.lock_uncontended.ratio_to_fastest_peer)) (target 2.0; 50 threads: \(f(.lock_uncontended.threads_ratio_to_fastest_peer))); baton / physical limit: \(f(.lock_uncontended.ratio_to_physical_limit))",
  "  Redis CPU per cycle, baton / cheapest peer (\(.lock_uncontended.cheapest_peer // "-")): \(f(.lock_uncontended.redis_cpu_ratio_to_cheapest_peer)) (target 1.5); the two-script floor / cheapest peer: \(f(.lock_uncontended.floor_redis_cpu_ratio_to_cheapest_peer))",
  "",
  "\("semaphore, limit 5, 50 clients, zero hold" | pad)cycles/s\tredis CPU us/cycle\twait p99 / longest (ms)",
  (.semaphore | ([.baton, .baton_50_threads, .baton_a_client_each, .peer] | map(select(. != null)))[] |
     "  \(.who | pad)\(f(.cycles_per_sec))\t\(f(.redis_cpu_us_per_cycle))\t\(f(.wait_ms.p99)) / \(f(.wait_ms.longest))"),
  (.semaphore | [.reference_raw_pairs_5_fair_tokens, .reference_raw_pairs_5_node_loops] | map(select(. != null))[] |
     "  \(.who | pad)\(f(.cycles_per_sec))\t\(f(.redis_cpu_us_per_cycle))"),
  "  baton / peer: \(f(.semaphore.ratio_to_peer)) (target 1.0; 50 threads: \(f(.semaphore.threads_ratio_to_peer))); peer wait p99 / baton: \(f(.semaphore.wait_p99_peer_over_baton)); baton / raw pairs at 5: \(f(.semaphore.ratio_to_raw_pairs_at_concurrency_5)) (target 0.8)",
  "",
  "\("hot key, 20 contenders, zero hold" | pad)handoffs/s\twait p99 / longest (ms)",
  (.hot_key | ([{who: "baton", handoffs_per_sec: .baton.handoffs_per_sec, wait_ms: .baton.wait_ms},
               {who: "ideal in-process FIFO lock (reference)", handoffs_per_sec: .ideal_in_process_fifo.handoffs_per_sec, wait_ms: .ideal_in_process_fifo.wait_ms},
               {who: "FIFO token through Redis, BLPOP + RPUSH (floor)", handoffs_per_sec: .redis_fifo_token.handoffs_per_sec, wait_ms: .redis_fifo_token.wait_ms}] + .peers)[] |
     "  \(.who | pad)\(f(.handoffs_per_sec))\t\(f(.wait_ms.p99)) / \(f(.wait_ms.longest))"),
  (if .hot_key.runs_of_baton > 1 then "  baton, \(.hot_key.runs_of_baton) runs: longest wait / ideal: \(.hot_key.runs | map(f(.longest_wait_over_ideal)) | join(", ")); the worst above" else empty end),
  "  baton longest wait / ideal: \(f(.hot_key.longest_wait_over_ideal)) (target <= 1.5); / Redis FIFO token: \(f(.hot_key.longest_wait_over_redis_fifo)); baton handoff p50 / p99: \(f(.hot_key.baton.handoff_ms.p50)) / \(f(.hot_key.baton.handoff_ms.p99)) ms (target p99 <= 0.5)",
  (if .hot_key.baton.longest_wait_worst_handoff_ms != null then "  baton longest wait taken apart: \(.hot_key.baton.longest_wait_overtaken_by) grants to others while it waited (first come, first served: 19), its slowest handoff \(f(.hot_key.baton.longest_wait_worst_handoff_ms)) ms, 19 handoffs at the mean rate \(f(19000 / .hot_key.baton.handoffs_per_sec)) ms" else empty end),
  "",
  "\("cron next-fire, \(.cron_next.expressions) expressions x \(.cron_next.zones) zones" | pad)ops/s\tbaton / it",
  "  \("baton bench_cron" | pad)\(f(.cron_next.baton_ops_per_sec))",
  (.cron_next.peers[] | "  \(.who | pad)\(f(.ops_per_sec))\t\(f(.baton_ratio))"),
  (if (.cron_next.left_out | length) > 0 then "  left out (a peer refuses them): \(.cron_next.left_out | join(", "))" else empty end)),
  "",
  "ratios per round:",
  (.ratios_per_round | to_entries[] | "  \(.key): \(.value | map(f(.)) | join(", "))"),
  ""' <<<"$doc"
echo "$doc"
