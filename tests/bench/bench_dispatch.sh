# bench_dispatch.sh -- jobs spread over the fleet (run_on any, labels),
# against the same fleet running them on the leader, in the same run, on
# one redis-server; prints one JSON object.
#
#   dispatch  2 supervisors; an every-second job on the follower (run_on
#             {labels: [far]}, only the follower carries far) beside an
#             every-second job on the leader (run_on: leader). Each run
#             writes its own start (date +%s%N) with BATON_SCHEDULED_AT and
#             BATON_JITTER_MS: the delay from the tick's instant to the
#             command, p50 and p99 of each. Target: the follower's p99
#             within 2 ms of the leader-local p99.
#   spread    4 supervisors, 200 every-second jobs on `any` for S seconds:
#             each node's share of the runs (job_start in its log) against
#             a fair quarter (target: within 10 %); then the same with
#             capacities 1, 2, 4, 8 against shares proportional to them.
#   scale     N supervisors, J jobs on `any` (each every minute, at second
#             i mod 60) for W seconds, then the same fleet with run_on:
#             leader: the leader's CPU, Redis commands per tick (INFO
#             commandstats, over the ticks of the window), start lateness
#             p99 (job_start's lateness_ms, every node's).
#   growth    the scale case on `any` with N1 and then N2 supervisors (the
#             same jobs and window): the leader's CPU per tick and Redis
#             commands per tick at each, and N2's over N1's. Target: they
#             do not grow with the nodes (each ratio at most 1.25, and
#             both fleets ran at least 95 % of the ticks due in the window).
#
# --smoke: dispatch 8 s, spread 15 s each, scale 4 x 300 jobs for 10 s,
# growth 2 and 6 x 300 jobs for 10 s.
# Full: dispatch 60 s, spread 300 s each, scale 20 x 10,000 for 60 s,
# growth 10 and 100 x 10,000 for 60 s.
# --scale N,J,W: scale with N supervisors, J jobs, a window of W s (the
# curve over N: run it at 5, 10, 20 with the same J and W).
# --growth N1,N2,J,W: growth's two fleets, jobs and window.
# usage: bench_dispatch.sh [--smoke] [--only dispatch,spread,scale,growth] [--scale N,J,W]
#        [--growth N1,N2,J,W]
# Needs BATON_BIN and BATON_TESTS_DIR, python3.
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
note() { echo "[$TEST_NAME] $*" >&2; } # stdout is the JSON alone (bench_all parses it)
B=$BATON_BIN
DISP_S=60 SPREAD_S=300 SCALE_N=20 SCALE_J=10000 SCALE_W=60 ONLY=dispatch,spread,scale,growth
GROW_N1=10 GROW_N2=100 GROW_J=10000 GROW_W=60
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) DISP_S=8 SPREAD_S=15 SCALE_N=4 SCALE_J=300 SCALE_W=10 GROW_N1=2 GROW_N2=6 GROW_J=300 GROW_W=10 ;;
    --only) ONLY=$2; shift ;;
    --scale) IFS=, read -r SCALE_N SCALE_J SCALE_W <<< "$2"; shift ;;
    --growth) IFS=, read -r GROW_N1 GROW_N2 GROW_J GROW_W <<< "$2"; shift ;;
    *) echo "usage: bench_dispatch.sh [--smoke] [--only dispatch,spread,scale,growth] [--scale N,J,W] [--growth N1,N2,J,W]" >&2; exit 2 ;;
    esac
    shift
done
redis_start
RC="redis-cli -p $REDIS_PORT"
load() { cut -d' ' -f1 /proc/loadavg; }
LOAD_BEFORE=$(load)

# node GROUP NAME JOBS [CAPACITY] [LABELS]: one supervisor, started.
node() {
    printf 'node: %s\nredis: %s\ngroup: %s\nlease: {ttl: 3s}\npoll: 1s\nshutdown_grace: 2s\nhistory: 100\njobs: %s\ncapacity: %s\n%s' \
        "$2" "$REDIS_URL" "$1" "$3" "${4:-64}" "${5:+labels: [$5]
}" > "$T/$1-$2.yaml"
    spawn "$1-$2" "$B" run -c "$T/$1-$2.yaml"
}
stop_group() { # GROUP NAMES...
    local g=$1 n; shift
    for n in "$@"; do kill -TERM "$(pid_of "$g-$n")" 2>/dev/null; done
    for n in "$@"; do wait_exit "$g-$n" 20 >/dev/null; done
}
leader_of() { $RC get "baton:{$1}:leader" | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() { # GROUP: the leader's name, once one leads
    local i l
    for i in $(seq 1 100); do l=$(leader_of "$1"); [ -n "$l" ] && { echo "$l"; return; }; sleep 0.1; done
    fail "no leader in group $1"
}
# starts GROUP NAMES...: how many job_start lines each node's log has, "name count" lines
starts() {
    local g=$1 n; shift
    for n in "$@"; do echo "$n $(grep -c '"event":"job_start"' "$T/$g-$n.out")"; done
}
OUT="{}"
add() { OUT=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=json.loads(sys.argv[3]); print(json.dumps(d))' "$OUT" "$1" "$2"); }
want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }

# ---------------------------------------------------------------------
if want dispatch; then
note "dispatch: $DISP_S s, a job on the follower beside one on the leader"
cat > "$T/disp-jobs.yaml" <<EOF
jobs:
  - {name: far, schedule: "* * * * * *", run_on: {labels: [far]},
     shell: "echo \$(date +%s%N) \$BATON_SCHEDULED_AT \$BATON_JITTER_MS \$BATON_NODE >> $T/far.txt"}
  - {name: near, schedule: "* * * * * *",
     shell: "echo \$(date +%s%N) \$BATON_SCHEDULED_AT \$BATON_JITTER_MS \$BATON_NODE >> $T/near.txt"}
EOF
node disp lead "$T/disp-jobs.yaml"
wait_for_line "$T/disp-lead.out" '"to":"working"' 10 >/dev/null || fail "dispatch: no leader"
node disp fol "$T/disp-jobs.yaml" 4 far
wait_for_line "$T/disp-fol.out" '"event":"following"' 10 >/dev/null
sleep 2; : > "$T/far.txt"; : > "$T/near.txt"
sleep "$DISP_S"
stop_group disp fol lead
r=$(python3 - "$T/far.txt" "$T/near.txt" "$DISP_S" <<'PY'
import json, sys, datetime
def delays(path, node):
    v = []
    for line in open(path):
        p = line.split()
        if len(p) < 4: continue
        t = datetime.datetime.strptime(p[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
        assert p[3] == node, line
        v.append((int(p[0]) - int(t * 1e9) - int(p[2]) * 1000000) / 1e6)
    v.sort()
    q = lambda x: round(v[min(len(v) - 1, int(x * len(v)))], 2) if v else None
    return {"runs": len(v), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": round(v[-1], 2) if v else None}
far, near = delays(sys.argv[1], "fol"), delays(sys.argv[2], "lead")
print(json.dumps({"seconds": int(sys.argv[3]), "follower": far, "leader_local": near,
                  "p99_over_local_ms": round(far["p99_ms"] - near["p99_ms"], 2),
                  "target_ms": 2, "met": far["p99_ms"] - near["p99_ms"] <= 2}))
PY
) || fail "dispatch: no figures"
add dispatch "$r"
fi

# ---------------------------------------------------------------------
# spread NAME CAPS...: 4 nodes of those capacities, 200 jobs on any.
spread() {
    local name=$1 g=spread-$1 i; shift
    { echo "jobs:"; for i in $(seq 1 200); do echo "  - {name: s$i, schedule: \"* * * * * *\", run_on: any, command: [\"true\"]}"; done; } > "$T/$g-jobs.yaml"
    i=0
    for cap in "$@"; do i=$((i + 1)); node "$g" "n$i" "$T/$g-jobs.yaml" "$cap"; [ $i = 1 ] && wait_leader "$g" >/dev/null; done
    sleep 3
    starts "$g" n1 n2 n3 n4 > "$T/$g-before.txt"
    sleep "$SPREAD_S"
    starts "$g" n1 n2 n3 n4 > "$T/$g-after.txt"
    stop_group "$g" n1 n2 n3 n4
    python3 - "$T/$g-before.txt" "$T/$g-after.txt" "$*" <<'PY'
import json, sys
b = dict(l.split() for l in open(sys.argv[1])); a = dict(l.split() for l in open(sys.argv[2]))
caps = [int(x) for x in sys.argv[3].split()]
runs = {n: int(a[n]) - int(b[n]) for n in sorted(a)}
total = sum(runs.values())
shares = {}
worst = 0.0
for (n, r), c in zip(sorted(runs.items()), caps):
    fair = total * c / sum(caps)
    dev = abs(r - fair) / fair if fair else 1.0
    worst = max(worst, dev)
    shares[n] = {"capacity": c, "runs": r, "expected": round(fair, 1), "deviation_pct": round(100 * dev, 1)}
print(json.dumps({"runs": total, "nodes": shares, "worst_deviation_pct": round(100 * worst, 1),
                  "target_pct": 10, "met": worst <= 0.10}))
PY
}
if want spread; then
    note "spread: 4 nodes, 200 every-second jobs on any, $SPREAD_S s, equal capacities"
    r=$(spread fair 64 64 64 64) || fail "spread: no figures"; add spread_fair "$r"
    note "spread: capacities 1, 2, 4, 8"
    r=$(spread caps 1 2 4 8) || fail "spread caps: no figures"; add spread_capacity "$r"
fi

# ---------------------------------------------------------------------
# scale RUN_ON [TAG]: SCALE_N supervisors, SCALE_J jobs each every minute
# (TAG: a group of its own).
scale() {
    local on=$1 g=scale-$1${2:+-$2} i l pid c0 c1 t0 t1 calls0 calls1
    { echo "jobs:"; for i in $(seq 1 "$SCALE_J"); do echo "  - {name: j$i, schedule: \"$((i % 60)) * * * * *\", run_on: $on, command: [\"true\"]}"; done; } > "$T/$g-jobs.yaml"
    for i in $(seq 1 "$SCALE_N"); do node "$g" "n$i" "$T/$g-jobs.yaml" 64; [ "$i" = 1 ] && wait_leader "$g" >/dev/null; done
    # the window starts once every node has read its jobs and follows (a
    # fleet still starting measures its start, not its steady state)
    l=$(leader_of "$g")
    local deadline=$(( $(now_ms) + 300000 ))
    for i in $(seq 1 "$SCALE_N"); do
        [ "n$i" = "$l" ] && continue
        until grep -q '"event":"following"' "$T/$g-n$i.out"; do
            [ "$(now_ms)" -lt "$deadline" ] || fail "$g: n$i is not following after 300 s"
            sleep 0.2
        done
    done
    sleep 5
    l=$(leader_of "$g"); pid=$(pid_of "$g-$l")
    calls() { $RC info commandstats | sed -n 's/^cmdstat_[^:]*:calls=\([0-9]*\),.*/\1/p' | awk '{s += $1} END {print s}'; }
    cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
    c0=$(cpu "$pid"); calls0=$(calls); t0=$(now_ms)
    : > "$T/$g-mark"
    for i in $(seq 1 "$SCALE_N"); do wc -l < "$T/$g-n$i.out"; done > "$T/$g-lines0"
    sleep "$SCALE_W"
    c1=$(cpu "$pid"); calls1=$(calls); t1=$(now_ms)
    for i in $(seq 1 "$SCALE_N"); do tail -n +"$(( $(sed -n "${i}p" "$T/$g-lines0") + 1 ))" "$T/$g-n$i.out"; done |
        grep '"event":"job_start"' | sed -n 's/.*"lateness_ms":\([-0-9]*\).*/\1/p' > "$T/$g-late.txt"
    stop_group "$g" $(seq -f 'n%g' 1 "$SCALE_N")
    python3 - "$T/$g-late.txt" "$on" "$((c1 - c0))" "$(getconf CLK_TCK)" "$((calls1 - calls0))" "$((t1 - t0))" "$SCALE_J" <<'PY'
import json, sys
late = sorted(int(x) for x in open(sys.argv[1]) if x.strip())
ticks_cpu, hz, calls, ms, jobs = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
runs_expected = jobs * ms / 60000.0
q = lambda x: late[min(len(late) - 1, int(x * len(late)))] if late else None
print(json.dumps({"run_on": sys.argv[2], "window_s": round(ms / 1000, 1), "runs": len(late),
                  "complete": len(late) >= 0.95 * runs_expected,
                  "runs_expected": round(runs_expected), "leader_cpu_percent": round(100.0 * ticks_cpu / hz / (ms / 1000), 1),
                  "redis_commands_per_tick": round(calls / runs_expected, 1) if runs_expected else None,
                  "redis_commands_per_s": round(calls / (ms / 1000)),
                  "leader_cpu_ms_per_tick": round(1000.0 * ticks_cpu / hz / runs_expected, 4) if runs_expected else None,
                  "lateness_ms": {"p50": q(0.5), "p99": q(0.99), "max": late[-1] if late else None}}))
PY
}
if want scale; then
    note "scale: $SCALE_N supervisors, $SCALE_J jobs on any, $SCALE_W s"
    a=$(scale any) || fail "scale any: no figures"
    note "scale: the same fleet, run_on: leader"
    b=$(scale leader) || fail "scale leader: no figures"
    add scale "{\"nodes\": $SCALE_N, \"jobs\": $SCALE_J, \"any\": $a, \"leader\": $b}"
fi
if want growth; then
    SCALE_J=$GROW_J SCALE_W=$GROW_W
    note "growth: $GROW_N1 supervisors, $GROW_J jobs on any, $GROW_W s"
    SCALE_N=$GROW_N1; a=$(scale any "g$GROW_N1") || fail "growth $GROW_N1: no figures"
    note "growth: $GROW_N2 supervisors, the same jobs"
    SCALE_N=$GROW_N2; b=$(scale any "g$GROW_N2") || fail "growth $GROW_N2: no figures"
    r=$(python3 - "$a" "$b" "$GROW_N1" "$GROW_N2" "$GROW_J" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def ratio(k):
    return round(b[k] / a[k], 3) if a.get(k) and b.get(k) is not None else None
cmd, cpu = ratio("redis_commands_per_tick"), ratio("leader_cpu_ms_per_tick")
print(json.dumps({"nodes": [int(sys.argv[3]), int(sys.argv[4])], "jobs": int(sys.argv[5]),
                  "small": a, "large": b, "commands_ratio": cmd, "cpu_ratio": cpu, "target_ratio": 1.25,
                  "both_complete": a["complete"] and b["complete"],
                  "met": a["complete"] and b["complete"] and cmd is not None and cpu is not None
                         and cmd <= 1.25 and cpu <= 1.25}))
PY
) || fail "growth: no figures"
    add growth "$r"
fi
add machine "{\"cores\": $(nproc), \"load_before\": $LOAD_BEFORE, \"load_after\": $(load)}"
echo "$OUT"
