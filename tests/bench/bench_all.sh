# bench_all.sh -- the whole comparison in one command: every benchmark of
# issues 17 and 38 in one run, then one table (baton, each peer and each same-run
# reference side by side, the target, met or missed) and one JSON document
# (the last line of the output; --json FILE writes it there too).
#
#   peers       bench_peers.sh: lock, semaphore, hot key, cron against the
#               node peers (its final JSON line is taken as it is); baton's
#               hot key runs five times, and the worst run is the row
#   jobs        bench_jobs.sh: scheduling lateness against a naive loop
#   fleet       bench_fleet.sh: 100 supervisors, 10,000 jobs, one Redis
#   dispatch    bench_dispatch.sh: run_on any/labels: dispatch delay beside
#               leader-local, spread over 4 nodes, 20 supervisors x 10,000
#               jobs on any against run_on leader, the leader's cost per
#               tick on any with 10 and with 100 supervisors
#   supervisor  bench_supervisor.sh: handover with 3 nodes, idle footprint
#   tls         bench_tls.sh: TLS against plain TCP, durable grants
#   quorum      bench_quorum.sh: a Redlock quorum of five masters, beside
#               node-redlock on the same five (its final JSON line)
#
# The 1-minute load average is taken before and after each part. Each part
# has a time limit; a part that fails is reported as failed (its stderr's
# last line kept), the others still run, and the exit status is 1.
#
# --smoke: every part in its --smoke mode (about two minutes, CI): bench_peers
# then runs baton's side alone, and the table says that the peers were not
# run. tests/bench/results_section.sh turns the JSON into a dated section
# of tests/bench/RESULTS.md.
#
# usage: bench_all.sh [--smoke] [--only PART,PART...] [--json FILE]
# Needs BATON_BIN, BATON_BUILD_DIR and BATON_TESTS_DIR (defaults: the werror
# build tree beside tests/; a full run refuses a tree built with coverage or
# sanitizers), jq.
set -u
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
BATON_BUILD_DIR=${BATON_BUILD_DIR:-$(cd "$BATON_TESTS_DIR/.." && pwd)/build/werror}
BATON_BIN=${BATON_BIN:-$BATON_BUILD_DIR/baton}
export BATON_TESTS_DIR BATON_BUILD_DIR BATON_BIN
. "$BATON_TESTS_DIR/lib/harness.sh"
smoke=0 only="peers,jobs,fleet,supervisor,tls,quorum,dispatch" json_out=""
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) smoke=1 ;;
    --only) only=${2:-}; shift ;;
    --json) json_out=${2:-}; shift ;;
    *) fail "usage: bench_all.sh [--smoke] [--only PART,PART...] [--json FILE]" ;;
    esac
    shift
done
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
# Figures come from an uninstrumented build: gcov's atomic counters (the
# werror tree of tests/run.sh) or the sanitizers cost several times the
# CPU of what they measure (the cron bench ran at a quarter of its speed).
if [ "$smoke" = 0 ] && grep -Eq '^BATON_(COVERAGE|SANITIZE):BOOL=ON' "$BATON_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    fail "$BATON_BUILD_DIR is instrumented (coverage or sanitizers): figures from it are not baton's; build one without: cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_WERROR=ON -DBATON_HTTP=ON -DBATON_SYSTEMD=ON && cmake --build build/bench -j2, then BATON_BUILD_DIR=build/bench"
fi
B=$BATON_TESTS_DIR/bench
load() { cut -d' ' -f1 /proc/loadavg; }

PARTS=()
# part NAME LIMIT_S COMMAND...: runs it, keeps {name, ok, seconds, load
# before/after, result (its JSON), error} in $T/part-NAME.json.
part() {
    local name=$1 limit=$2; shift 2
    case ",$only," in *",$name,"*) ;; *) return 0 ;; esac
    local lb la t0 rc result
    lb=$(load); t0=$(now_ms)
    echo "== $name: $*" >&2
    timeout "$limit" "$@" > "$T/$name.out" 2> "$T/$name.err"
    rc=$?
    la=$(load)
    if [ "$name" = peers ] || [ "$name" = quorum ]; then # a table, then its JSON document as the last line
        result=$(tail -n1 "$T/$name.out" | jq -c . 2>/dev/null)
    else # JSON values only (bench_tls prints two: merged)
        result=$(jq -s -c 'add' "$T/$name.out" 2>/dev/null)
    fi
    [ -n "$result" ] || { result=null; [ "$rc" -ne 0 ] || rc=1; }
    PARTS+=("$T/part-$name.json")
    jq -n -c --arg name "$name" --argjson rc "$rc" --argjson result "$result" \
        --arg lb "$lb" --arg la "$la" --argjson secs $(( ($(now_ms) - t0) / 1000 )) \
        --arg err "$(grep -v '^{' "$T/$name.err" | tail -n1 | cut -c1-300)" \
        '{name: $name, ok: ($rc == 0), exit: $rc, seconds: $secs,
          load_average: {before: ($lb | tonumber), after: ($la | tonumber)},
          result: $result, error: (if $rc == 0 then null else $err end)}' > "$T/part-$name.json"
    echo "   $name: exit $rc in $(( ($(now_ms) - t0) / 1000 )) s, load $lb -> $la" >&2
}

if [ "$smoke" = 1 ]; then
    part peers 600 bash "$B/bench_peers.sh" --smoke
    part jobs 300 bash "$B/bench_jobs.sh" --smoke
    part fleet 300 bash "$B/bench_fleet.sh" --smoke
    part supervisor 300 bash "$B/bench_supervisor.sh" --smoke
    part tls 300 bash "$B/bench_tls.sh" --smoke
    part quorum 300 bash "$B/bench_quorum.sh" --smoke
    part dispatch 300 bash "$B/bench_dispatch.sh" --smoke
else
    part peers 1800 bash "$B/bench_peers.sh" --seconds 5 --rounds 1 --hot-runs 5
    part jobs 1200 bash "$B/bench_jobs.sh"
    part fleet 1800 bash "$B/bench_fleet.sh"
    part supervisor 900 bash "$B/bench_supervisor.sh"
    part tls 600 bash "$B/bench_tls.sh" --seconds 8 --threads 16
    part quorum 900 bash "$B/bench_quorum.sh" --seconds 5 --rounds 1
    part dispatch 2700 bash "$B/bench_dispatch.sh"
fi

[ ${#PARTS[@]} -gt 0 ] || fail "no part ran (--only names none of peers, jobs, fleet, supervisor, tls, quorum, dispatch)"
# The rows: one per compared figure, from the parts' JSON.
doc=$(jq -s -c --arg date "$(date -u +%Y-%m-%d)" --argjson smoke "$smoke" \
    --arg host "$(nproc) cores, $(uname -r)" --arg redis "$(redis-server --version | awk '{print $3}')" '
  (map({(.name): .}) | add // {}) as $p | (map(.name)) as $order |
  def r(x): if x == null then null elif (x | type) == "number" then ((x * 100 | round) / 100) else x end;
  def row(part; what; baton; ref; who; target; met):
    {part: part, case: what, baton: r(baton), reference: r(ref), reference_is: who, target: target,
     met: met};
  def cmp(a; op; b): if a == null or b == null then null
                     elif op == "<=" then a <= b else a >= b end;
  # the cycles/s of the case (.) against 1 s / its Redis CPU per cycle
  def core_limit(what): if (.baton.redis_cpu_us_per_cycle // 0) > 0 then
      row("peers"; "\(what): cycles/s against what one Redis core allows its scripts";
          .baton.cycles_per_sec; (1e6 / .baton.redis_cpu_us_per_cycle | round);
          "1 s / Redis CPU per baton cycle (same run): Redis saturated"; "(the limit)"; null)
    else empty end;
  # the semaphore'"'"'s (.) faster reference of raw pairs at its concurrency
  def sem_raw: [.reference_raw_pairs_5_fair_tokens, .reference_raw_pairs_5_node_loops]
      | map(select(. != null and .cycles_per_sec != null)) | max_by(.cycles_per_sec);
  # how busy the machine was during the case (.): every process, against Redis
  def machine(what): if .baton.machine_busy_cores != null then
      row("peers"; "\(what): cores busy during baton'"'"'s run, against Redis'"'"'s share";
          .baton.machine_busy_cores; .baton.redis_cores;
          "Redis (same run), of \(.baton.machine_cores) cores; the hypervisor took \(.baton.machine_steal_cores)\(
            if (.baton.machine_steal_cores_dropped // []) == [] then ""
            else " (measured again after runs where it took \(.baton.machine_steal_cores_dropped | map(tostring) | join(", ")))" end)";
          "(the limit: the client and Redis on the machine'"'"'s cores)"; null),
      (if .baton.client_cpu_us_per_cycle != null then
        row("peers"; "\(what): the client'"'"'s own CPU per cycle (us), against Redis'"'"'s";
            .baton.client_cpu_us_per_cycle; .baton.redis_cpu_us_per_cycle;
            "Redis CPU per baton cycle (same run); the cores busy above include every other process";
            "(where a cycle'"'"'s CPU goes)"; null)
       else empty end)
    else empty end;
  ($p.peers.result.round_figures[0] // null) as $pr |
  ($p.peers.result.peers_run // false) as $peers_run |
  ($p.jobs.result // null) as $j | ($p.fleet.result // null) as $f |
  ($p.supervisor.result // null) as $s | ($p.tls.result // null) as $t |
  ($p.quorum.result.round_figures[0] // null) as $q |
  ($p.dispatch.result // null) as $d |
  {bench: "all", date: $date, smoke: ($smoke == 1), machine: $host, redis: $redis,
   peers_run: $peers_run,
   peers_not_run_because: ($p.peers.result.peers_not_run_because // null),
   parts: [$order[] as $n | $p[$n] | {name, ok, exit, seconds, load_average, error}],
   rows: ([
     (if $pr then
       ($pr.lock_uncontended | ([.peers[]? | select(.cycles_per_sec != null)] | max_by(.cycles_per_sec)) as $fp |
         row("peers"; "lock, uncontended, 50 clients: cycles/s"; .baton.cycles_per_sec;
             $fp.cycles_per_sec; "fastest peer configuration: \($fp.who // "not run")";
             "baton / fastest peer >= 2.0"; cmp(.ratio_to_fastest_peer; ">="; 2.0))),
       ($pr.lock_uncontended | ([.peers[]? | select(.redis_cpu_us_per_cycle != null)] | min_by(.redis_cpu_us_per_cycle)) as $cp |
         row("peers"; "lock: Redis CPU per cycle (us), fenced against unfenced"; .baton.redis_cpu_us_per_cycle;
             $cp.redis_cpu_us_per_cycle; "cheapest peer configuration: \($cp.who // "not run")";
             "baton / cheapest peer <= 1.5"; cmp(.redis_cpu_ratio_to_cheapest_peer; "<="; 1.5))),
       ($pr.lock_uncontended | if .fenced_floor_two_scripts then
         ([.peers[]? | select(.redis_cpu_us_per_cycle != null)] | min_by(.redis_cpu_us_per_cycle)) as $cp |
         row("peers"; "lock: Redis CPU per cycle (us), the floor of a fenced cycle"; .fenced_floor_two_scripts.redis_cpu_us_per_cycle;
             $cp.redis_cpu_us_per_cycle; "the cheapest peer configuration (same run); the floor: SET NX PX, TIME, GETSET + GET, DEL in two scripts";
             "(the limit: floor / cheapest = \(.floor_redis_cpu_ratio_to_cheapest_peer // "-"))"; null)
        else empty end),
       ($pr.lock_uncontended | core_limit("lock")),
       ($pr.lock_uncontended | machine("lock")),
       ($pr.lock_uncontended | ([.peers[]? | select(.cycles_per_sec != null)] | max_by(.cycles_per_sec)) as $fp |
         if .baton_50_threads then
         row("peers"; "lock, 50 threads blocking in one client: cycles/s"; .baton_50_threads.cycles_per_sec;
             $fp.cycles_per_sec; ($fp.who // "fastest peer (not run)"); "(reported)"; null)
         else empty end),
       ($pr.semaphore | row("peers"; "semaphore, limit 5, 50 clients: cycles/s"; .baton.cycles_per_sec;
             .peer.cycles_per_sec; (.peer.who // "redis-semaphore (not run)");
             "baton / peer >= 1.0"; cmp(.ratio_to_peer; ">="; 1.0))),
       ($pr.semaphore | row("peers"; "semaphore: wait p99 (ms)"; .baton.wait_ms.p99;
             .peer.wait_ms.p99; (.peer.who // "redis-semaphore (not run)");
             "keep the lead: baton <= peer"; cmp(.baton.wait_ms.p99; "<="; .peer.wait_ms.p99))),
       ($pr.semaphore | sem_raw as $raw |
         row("peers"; "semaphore: cycles/s against raw ZADD+ZREM pairs at 5 in flight";
             .baton.cycles_per_sec; $raw.cycles_per_sec;
             "raw pairs at 5, the faster: \($raw.who // "not run")"; "baton / raw >= 0.8";
             cmp(.ratio_to_raw_pairs_at_concurrency_5; ">="; 0.8))),
       ($pr.semaphore | sem_raw as $raw |
         row("peers"; "semaphore: Redis CPU per cycle (us)"; .baton.redis_cpu_us_per_cycle;
             $raw.redis_cpu_us_per_cycle; "raw pairs at 5, the faster: \($raw.who // "not run")";
             "(reported: two scripts against two commands)"; null)),
       ($pr.semaphore | core_limit("semaphore")),
       ($pr.semaphore | sem_raw as $raw |
         if (.baton.redis_cpu_us_per_cycle // 0) > 0 and ($raw.cycles_per_sec // 0) > 0 then
         row("peers"; "semaphore: what a saturated Redis core allows, over the raw pairs at 5";
             (1e6 / .baton.redis_cpu_us_per_cycle / $raw.cycles_per_sec); 0.8;
             "the target (same run: 1 s / Redis CPU per baton cycle, over the raw pairs'"'"' cycles/s)";
             "(the limit: under 0.8, the target needs more than Redis'"'"'s one core)"; null)
         else empty end),
       ($pr.semaphore | machine("semaphore")),
       ($pr.hot_key | row("peers"; "hot key, 20 contenders: longest wait, worst of \(.runs_of_baton // 1) runs (ms)"; .baton.wait_ms.longest;
             .ideal_in_process_fifo.wait_ms.longest; "ideal in-process FIFO lock (same run)";
             "baton / ideal <= 1.5"; cmp(.longest_wait_over_ideal; "<="; 1.5))),
       ($pr.hot_key | if (.baton.handoffs_per_sec // 0) > 0 then
         row("peers"; "hot key: longest wait over the ideal, against the ideal handoffs/s over baton handoffs/s";
             .longest_wait_over_ideal; (.ideal_in_process_fifo.handoffs_per_sec / .baton.handoffs_per_sec);
             "the same (worst) run: handoff rates"; "(where the ratio comes from)"; null)
        else empty end),
       ($pr.hot_key | if .baton.machine_longest_stall_ms != null then
         row("peers"; "hot key: longest wait against the machine'"'"'s longest stall (ms)"; .baton.wait_ms.longest;
             .baton.machine_longest_stall_ms; "a thread on each CPU sleeping 1 ms at a time: the most one woke late (same run)";
             "(the limit: a stall holds up every waiter)"; null) else empty end),
       ($pr.hot_key | if .baton.longest_wait_worst_handoff_ms != null and (.baton.handoffs_per_sec // 0) > 0 then
         row("peers"; "hot key: the longest wait, taken apart (ms)"; .baton.wait_ms.longest;
             (19000 / .baton.handoffs_per_sec + .baton.longest_wait_worst_handoff_ms | . * 100 | round / 100);
             "19 handoffs at baton'"'"'s mean rate + the slowest handoff in that wait (\(.baton.longest_wait_worst_handoff_ms) ms); grants to others while it waited: \(.baton.longest_wait_overtaken_by) (first come, first served: 19)";
             "(where the wait goes)"; null) else empty end),
       ($pr.hot_key | row("peers"; "hot key: longest wait against a FIFO handoff through Redis (ms)"; .baton.wait_ms.longest;
             .redis_fifo_token.wait_ms.longest; "token in a Redis list, BLPOP + RPUSH (same run)";
             "(the floor through Redis)"; null)),
       ($pr.hot_key | row("peers"; "hot key: handoff p99 (ms)"; .baton.handoff_ms.p99;
             .redis_fifo_token.handoff_ms.p99; "token in a Redis list, BLPOP + RPUSH (same run)";
             "<= 0.5"; cmp(.baton.handoff_ms.p99; "<="; 0.5))),
       ($pr.hot_key | row("peers"; "hot key: handoff p50 (ms)"; .baton.handoff_ms.p50;
             .redis_fifo_token.handoff_ms.p50; "token in a Redis list, BLPOP + RPUSH (same run)";
             "(reported)"; null)),
       ($pr.cron_next | .baton_ops_per_sec as $b | (.peers // [])[] |
         row("peers"; "cron next-fire computations/s"; $b; .ops_per_sec; .who;
             "keep the lead: baton > peer"; cmp($b; ">="; .ops_per_sec))),
       (if ($pr.cron_next.peers // []) | length == 0 then
         row("peers"; "cron next-fire computations/s"; $pr.cron_next.baton_ops_per_sec; null;
             "croner, cron-parser (not run)"; "keep the lead"; null) else empty end)
      else empty end),
     (if $j then
       row("jobs"; "lateness, scheduled -> exec, p99 (ms)"; $j.lateness_ms.exec.p99;
           $j.naive_python_loop_ms.exec.p99; "naive Python loop, same command (same run)";
           "p99 <= 1 ms"; cmp($j.lateness_ms.exec.p99; "<="; 1)),
       row("jobs"; "lateness, scheduled -> exec, p99, against the spawn floor (ms)"; $j.lateness_ms.exec.p99;
           $j.spawn_floor_ms.p99; "posix_spawn of the same program by C (same run)"; "(the limit)"; null),
       (if $j.timed_spawn_floor_ms then
         row("jobs"; "lateness, scheduled -> exec, p99, against the cheapest timed start (ms)";
             $j.lateness_ms.exec.p99; $j.timed_spawn_floor_ms.p99;
             "C: sleep to the instant, posix_spawn (same run)"; "(the limit of a sleeping scheduler)"; null)
        else empty end),
       row("jobs"; "lateness, scheduled -> exec, p50 (ms)"; $j.lateness_ms.exec.p50;
           $j.naive_python_loop_ms.exec.p50; "naive Python loop (same run)"; "(reported)"; null),
       row("jobs"; "lateness, scheduled -> date in the job, p50 (ms)"; $j.lateness_ms.date.p50;
           $j.naive_python_loop_ms.date.p50; "naive Python loop (same run)";
           "baton <= the loop"; cmp($j.lateness_ms.date.p50; "<="; $j.naive_python_loop_ms.date.p50)),
       row("jobs"; "leader of 1,000 jobs: peak RSS (kB)"; $j.leader_with_1000_jobs.peak_rss_kb; null; "";
           "<= 10240"; cmp($j.leader_with_1000_jobs.peak_rss_kb; "<="; 10240))
      else empty end),
     (if $f then
       row("fleet"; "\($f.nodes) supervisors, \($f.jobs) jobs: graceful handover p99 (ms)";
           $f.graceful_handover_ms.p99; $f.graceful_handover_ms.floor.p99;
           "its floor: the same steps by two bare C processes (same run)"; "<= 5"; cmp($f.graceful_handover_ms.p99; "<="; 5)),
       row("fleet"; "graceful handover p50 (ms)"; $f.graceful_handover_ms.p50; $f.graceful_handover_ms.floor.p50;
           "its floor (same run)"; "(reported)"; null),
       row("fleet"; "graceful handover p99, from the old leader'"'"'s signal_received line (ms)";
           $f.graceful_handover_ms.from_signal_received.p99; null; ""; "(reported)"; null),
       row("fleet"; "  of which the old leader'"'"'s, signal_received -> lease_released, p99 (ms)";
           $f.graceful_handover_ms.old_leader_release.p99; null; ""; "(reported)"; null),
       row("fleet"; "  of which the successor'"'"'s, lease_released -> working, p99 (ms)";
           $f.graceful_handover_ms.successor_takeover.p99; null; ""; "(reported)"; null),
       row("fleet"; "crash takeover after the lease'"'"'s end, worst (ms)"; $f.crash_takeover_after_lease_end_ms.max;
           null; ""; "<= 50"; cmp($f.crash_takeover_after_lease_end_ms.max; "<="; 50)),
       row("fleet"; "leader peak RSS (kB)"; $f.window.leader_hwm_kb; null; ""; "<= 30720";
           cmp($f.window.leader_hwm_kb; "<="; 30720)),
       row("fleet"; "leader CPU (% of a core)"; $f.window.leader_cpu_percent; null; ""; "(reported)"; null),
       row("fleet"; "followers: Redis commands/s, all together"; $f.window.followers_redis_commands_per_s;
           null; ""; "(reported)"; null),
       row("fleet"; "every-second jobs: start lateness p99 (ms, to the go)";
           $f.window.every_second_lateness_ms.p99; null; ""; "(reported)"; null),
       (if $f.window.every_second_lateness_with_hogs_ms then
         row("fleet"; "every-second jobs with two CPU hogs beside the fleet: start lateness p99 (ms)";
             $f.window.every_second_lateness_with_hogs_ms.p99; $f.window.every_second_lateness_ms.p99;
             "the same jobs without the hogs (same run)"; "<= 15";
             cmp($f.window.every_second_lateness_with_hogs_ms.p99; "<="; 15))
        else empty end),
       row("fleet"; "Redis memory after an hour of history (MB)"; ($f.history_hour.redis_used_memory_kb / 1024);
           $f.history_hour.bound_mb; "bound at history.runs 100 (MB)"; "within the bound";
           cmp($f.history_hour.redis_used_memory_kb / 1024; "<="; $f.history_hour.bound_mb)),
       (if ($f.jobs // 0) > 0 then
         row("fleet"; "Redis memory per job after an hour of history (kB)"; ($f.history_hour.redis_used_memory_kb / $f.jobs);
             ($f.history_hour.bound_mb * 1024 / $f.jobs); "what the history bound predicts per job (kB)";
             "within the bound"; cmp($f.history_hour.redis_used_memory_kb / $f.jobs; "<="; $f.history_hour.bound_mb * 1024 / $f.jobs))
        else empty end),
       row("fleet"; "baton check of jobs.yaml (ms)"; $f.check_ms; null; ""; "(reported)"; null),
       row("fleet"; "SIGHUP reload: signal -> reloaded (ms)"; $f.reload.signal_to_reloaded_ms; null; "";
           "(reported)"; null),
       row("fleet"; "SIGHUP reload: worst lateness just after (ms)"; $f.reload.worst_lateness_ms_after;
           null; ""; "(reported)"; null)
      else empty end),
     (if $s then
       row("supervisor"; "3 nodes: graceful handover p99 (ms)"; $s.graceful_handover_ms.p99; null; "";
           "<= 50"; cmp($s.graceful_handover_ms.p99; "<="; 50)),
       row("supervisor"; "3 nodes: crash handover - ttl p99 (ms)"; $s.crash_handover_minus_ttl_ms.p99; null;
           ""; "<= 100"; cmp($s.crash_handover_minus_ttl_ms.p99; "<="; 100)),
       row("supervisor"; "idle follower: Redis commands/s"; $s.idle_follower.redis_commands_per_s; null; "";
           "<= 1"; cmp($s.idle_follower.redis_commands_per_s; "<="; 1)),
       row("supervisor"; "idle follower: peak RSS (kB)"; $s.idle_follower.rss_kb_max; null; "";
           "<= \($s.idle_follower.target_rss_kb)"; cmp($s.idle_follower.rss_kb_max; "<="; $s.idle_follower.target_rss_kb))
      else empty end),
     (if $t then
       row("tls"; "lock, \($t.uncontended.threads) threads: TLS cycles/s"; $t.uncontended.tls_cycles_per_s;
           $t.uncontended.plain_cycles_per_s; "plain TCP, same server (same run)"; "TLS / plain >= 0.8";
           cmp($t.uncontended.tls_ratio; ">="; 0.8)),
       row("tls"; "lock, one thread: TLS cycles/s"; $t.one_thread.tls_cycles_per_s;
           $t.one_thread.plain_cycles_per_s; "plain TCP (same run)"; "TLS / plain >= 0.8";
           cmp($t.one_thread.tls_ratio; ">="; 0.8)),
       (if $t.redis_benchmark_set_one_client then
         row("tls"; "one thread: TLS / plain, against the same ratio of redis-benchmark"; $t.one_thread.tls_ratio;
             $t.redis_benchmark_set_one_client.tls_ratio;
             "redis-benchmark SET, one client, TLS / plain (same run)"; "(the limit: a TLS round trip)"; null)
        else empty end)
      else empty end),
     (if $q then
       row("quorum"; "lock over a quorum of 5 masters: cycles/s"; $q.baton_quorum.cycles_per_sec;
           $q.redlock_quorum.cycles_per_sec; ($q.redlock_quorum.who // "node-redlock (not run)");
           "baton / node-redlock >= 2.0"; cmp($q.ratio_baton_over_redlock; ">="; 2.0)),
       row("quorum"; "quorum of 5: grant p99 (ms)"; $q.baton_quorum.grant_ms.p99;
           $q.redlock_quorum.grant_ms.p99; ($q.redlock_quorum.who // "node-redlock (not run)");
           "(reported)"; null)
      else empty end),
     (if $d then
       (if $d.dispatch then
         row("dispatch"; "run_on labels: tick -> exec on the follower, p99 (ms)"; $d.dispatch.follower.p99_ms;
             $d.dispatch.leader_local.p99_ms; "run_on leader, same run"; "<= leader-local + 2";
             $d.dispatch.met),
         row("dispatch"; "run_on labels: tick -> exec on the follower, p50 (ms)"; $d.dispatch.follower.p50_ms;
             $d.dispatch.leader_local.p50_ms; "run_on leader, same run"; "(reported)"; null)
        else empty end),
       (if $d.spread_fair then
         row("dispatch"; "4 nodes, 200 jobs on any: worst share off fair (%)"; $d.spread_fair.worst_deviation_pct;
             null; ""; "<= 10"; $d.spread_fair.met),
         row("dispatch"; "capacities 1,2,4,8: worst share off proportional (%)";
             $d.spread_capacity.worst_deviation_pct; null; ""; "<= 10"; $d.spread_capacity.met)
        else empty end),
       (if $d.scale then
         row("dispatch"; "\($d.scale.nodes) x \($d.scale.jobs) jobs on any: leader CPU (% of a core)";
             $d.scale.any.leader_cpu_percent; $d.scale.leader.leader_cpu_percent; "run_on leader, same fleet";
             "(reported)"; null),
         row("dispatch"; "on any: Redis commands per tick"; $d.scale.any.redis_commands_per_tick;
             $d.scale.leader.redis_commands_per_tick; "run_on leader, same fleet"; "(reported)"; null),
         row("dispatch"; "on any: start lateness p99 (ms)"; $d.scale.any.lateness_ms.p99;
             $d.scale.leader.lateness_ms.p99; "run_on leader, same fleet"; "(reported)"; null)
        else empty end),
       (if $d.growth then
         row("dispatch"; "\($d.growth.nodes[1]) x \($d.growth.jobs) jobs on any: leader CPU per tick (us)";
             ($d.growth.large.leader_cpu_ms_per_tick | if . == null then null else . * 1000 end);
             ($d.growth.small.leader_cpu_ms_per_tick | if . == null then null else . * 1000 end);
             "the same jobs on \($d.growth.nodes[0]) nodes, same run"; "ratio <= 1.25";
             ($d.growth.met and $d.growth.cpu_ratio <= 1.25)),
         row("dispatch"; "\($d.growth.nodes[1]) x \($d.growth.jobs) jobs on any: Redis commands per tick";
             $d.growth.large.redis_commands_per_tick; $d.growth.small.redis_commands_per_tick;
             "the same jobs on \($d.growth.nodes[0]) nodes, same run"; "ratio <= 1.25";
             ($d.growth.met and $d.growth.commands_ratio <= 1.25)),
         row("dispatch"; "\($d.growth.nodes[1]) x \($d.growth.jobs) jobs on any: runs in the window";
             $d.growth.large.runs; $d.growth.large.runs_expected; "the ticks due in it";
             ">= 95 % of them"; $d.growth.large.complete),
         row("dispatch"; "\($d.growth.nodes[1]) x \($d.growth.jobs) jobs on any: start lateness p99 (ms)";
             $d.growth.large.lateness_ms.p99; $d.growth.small.lateness_ms.p99;
             "the same jobs on \($d.growth.nodes[0]) nodes, same run"; "(reported)"; null)
        else empty end)
      else empty end)
   ]),
   results: ($p | map_values(.result))}' "${PARTS[@]}")
[ -n "$doc" ] || fail "could not assemble the JSON document"

jq -r '
  def f(x): if x == null then "-" else (x | tostring) end;
  def pad(n): tostring | .[0:n] + " " * (n - (.[0:n] | length));
  "baton, issues 17 and 38: the whole comparison, \(.date)\(if .smoke then " (SMOKE: short runs, figures not comparable)" else "" end)",
  "machine: \(.machine); redis \(.redis)",
  (if .peers_run then empty else "PEERS NOT RUN: \(.peers_not_run_because // "bench_peers did not run them")" end),
  "",
  "\("part" | pad(11))\("load before/after" | pad(19))\("seconds" | pad(8))status",
  (.parts[] | "\(.name | pad(11))\("\(.load_average.before) / \(.load_average.after)" | pad(19))\(.seconds | pad(8))\(if .ok then "ok" else "FAILED: \(.error // "exit \(.exit)")" end)"),
  "",
  "\("case" | pad(66))\("baton" | pad(12))\("reference" | pad(12))\("reference is" | pad(44))\("target" | pad(30))met",
  (.rows[] | "\(.case | pad(66))\(f(.baton) | pad(12))\(f(.reference) | pad(12))\(.reference_is | pad(44))\(.target | pad(30))\(if .met == null then "-" elif .met then "met" else "MISSED" end)")' <<<"$doc"
[ -z "$json_out" ] || printf '%s\n' "$doc" > "$json_out"
echo "$doc"
jq -e 'all(.parts[]; .ok)' <<<"$doc" >/dev/null
