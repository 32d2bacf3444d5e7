# bench_jobs.sh -- scheduling lateness against a naive loop, and the
# leader's memory; prints one JSON object.
#
#   lateness  an every-second job (at each whole second) whose command is
#             `stamp date +%s.%N` (stamp: tests/bench/helpers/stamp.c, built
#             static, prints the wall clock at its main() and execs date),
#             over RUNS runs. Measured from the scheduled instant to the
#             exec of the job (stamp's line: exec + tens of us) and to the
#             `date` inside it. Target: exec p99 <= 1 ms.
#   reference in the same run, a naive Python loop (helpers/naive_loop.py)
#             that sleeps to each half second and forks the same command:
#             the two alternate every half second, so neither waits for the
#             other's start on the 2 cores. baton's date p50 should not be
#             above the loop's.
#   floors    in the same run, the cheapest start of a process there is on
#             this machine: a small C program posix_spawn()s stamp (a vfork
#             and an exec), 100 times; and the cheapest scheduler there is:
#             the same program sleeps to each second's instant (at 250 ms
#             past it, between the other two) and posix_spawn()s stamp, the
#             lateness measured as baton's is (one wake-up and a spawn): the
#             limit under any scheduler that waits for its tick.
#   go        where baton's time goes: the instant -> baton's go to the
#             prepared shim (job_start's lateness_ms, whole ms), the rest
#             being the shim's wake-up, fork and exec. The five slowest runs
#             are listed with their tick, both latenesses and their go, so
#             that a tail can be placed (before the go, or after it).
#   memory    a leader scheduling 1,000 jobs (about 17 starts a second) for
#             W seconds: its peak RSS (VmHWM) and, of that, its anonymous
#             memory (the rest is shared libraries' pages). Target <= 10 MB.
#
# --rt runs baton and the loop (and so their children) at SCHED_FIFO
# priority 10 (chrt): on a machine that others load, what the code costs
# without waiting for a CPU; both the same, so the comparison holds.
#
# usage: bench_jobs.sh [--smoke] [--runs N] [--window S] [--rt]
# Needs BATON_BIN and BATON_TESTS_DIR; cc (stamp) and python3.
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
B=$BATON_BIN
RUNS=300 WINDOW=30 RT=()
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) RUNS=3 WINDOW=3 ;;
    --rt) RT=(chrt -f 10) ;;
    --runs) RUNS=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    *) echo "usage: bench_jobs.sh [--smoke] [--runs N] [--window S] [--rt]" >&2; exit 2 ;;
    esac
    shift
done
command -v python3 >/dev/null || fail "python3 is needed for the naive loop"
load() { cut -d' ' -f1 /proc/loadavg; }
LOAD_BEFORE=$(load)
STATIC=true
cc -O2 -static -o "$T/stamp" "$BATON_TESTS_DIR/bench/helpers/stamp.c" 2>/dev/null || {
    STATIC=false
    cc -O2 -o "$T/stamp" "$BATON_TESTS_DIR/bench/helpers/stamp.c" || fail "cannot build stamp.c"
}
redis_start
config() { printf 'node: %s\nredis: %s\ngroup: %s\njobs: %s\n' "$1" "$REDIS_URL" "$1" "$2" > "$T/$1.conf"; }

cat > "$T/late.yaml" <<EOF
jobs:
  - {name: clock, schedule: "* * * * * *", catchup: 0, command: ["$T/stamp", "date", "+%s.%N"]}
EOF
config late "$T/late.yaml"
spawn late "${RT[@]}" "$B" run -c "$T/late.conf"
spawn naive "${RT[@]}" python3 "$BATON_TESTS_DIR/bench/helpers/naive_loop.py" $((RUNS + 2)) 0.5 "$T/stamp" date +%s.%N
spawn timed "${RT[@]}" "$T/stamp" --timed $((RUNS + 1)) 250
deadline=$(( $(now_ms) + (RUNS + 20) * 1000 ))
while [ "$(grep -c '"event":"job_end"' "$T/late.out")" -lt $((RUNS + 1)) ] ||
      [ "$(grep -c '^tick' "$T/naive.out")" -lt $((RUNS + 2)) ] ||
      [ "$(wc -l < "$T/timed.out")" -lt $((RUNS + 1)) ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "fewer than $RUNS runs"
    sleep 0.5
done
wait_exit naive 5
wait_exit timed 5
tail -n +2 "$T/timed.out" > "$T/timed.txt"
kill -TERM "$(pid_of late)"; wait_exit late 5
LOAD_MID=$(load)
"${RT[@]}" "$T/stamp" --floor $(( RUNS < 100 ? RUNS : 100 )) > "$T/floor.txt"

# baton: "<run_id> <line>"; the run id starts with the tick (Unix s). The
# first run is left out (it may start before the leader's first full second).
sed -n 's/.*"event":"job_output".*"run_id":"\([^"]*\)","stream":"stdout","line":"\([^"]*\)".*/\1 \2/p' "$T/late.out" |
    awk '{split($1, a, "-"); t = a[1] * 1000}
         $2 == "stamp" {e[a[1]] = $3 / 1e6 - t; next}
         {split($2, d, "."); dt[a[1]] = (d[1] * 1000 - t) + substr(d[2] "000000000", 1, 9) / 1e6}
         END {for (k in e) if (k in dt) print k, e[k], dt[k]}' | sort -n | tail -n +2 | head -n "$RUNS" > "$T/baton.txt"
# the loop: "tick S.5", then the command's lines.
awk '$1 == "tick" {t = $2 * 1000; next}
     $1 == "stamp" {e = $2 / 1e6 - t; next}
     {split($1, d, "."); print t, e, (d[1] * 1000 - t) + substr(d[2] "000000000", 1, 9) / 1e6}' "$T/naive.out" |
    tail -n +2 | head -n "$RUNS" > "$T/naive.txt"

# stats FILE COLUMN -> "p50 p99 max"
stats() { awk -v c="$2" '{print $c}' "$1" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) {print "null null null"; exit}
         printf "%.3f %.3f %.3f", v[int(0.5 * (NR - 1) + 1.5)], v[int(0.99 * (NR - 1) + 1.5)], v[NR]}'; }
n=$(wc -l < "$T/baton.txt") m=$(wc -l < "$T/naive.txt")
read -r be50 be99 bemax < <(stats "$T/baton.txt" 2)
read -r bd50 bd99 bdmax < <(stats "$T/baton.txt" 3)
read -r ne50 ne99 nemax < <(stats "$T/naive.txt" 2)
read -r nd50 nd99 ndmax < <(stats "$T/naive.txt" 3)
# baton's go: job_start's lateness_ms of the same runs (whole ms)
sed -n 's/.*"event":"job_start".*"run_id":"\([0-9]*\)-.*"lateness_ms":\([-0-9]*\).*/\1 \2/p' "$T/late.out" |
    sort -n | join - <(awk '{print $1}' "$T/baton.txt") > "$T/go.txt"
read -r bg50 bg99 bgmax < <(stats "$T/go.txt" 2)
# the five slowest runs: tick, exec and date lateness (ms), baton's go (whole ms)
sort -k2,2gr "$T/baton.txt" | head -n 5 | sort -k1,1 > "$T/slow.txt"
slowest=$(join -a1 -o 1.1,1.2,1.3,2.2 -e null "$T/slow.txt" <(sort -k1,1 "$T/go.txt") | sort -k2,2gr |
    awk 'BEGIN {printf "["} {printf "%s{\"tick\":%s,\"exec\":%.3f,\"date\":%.3f,\"go\":%s}", (NR > 1 ? "," : ""), $1, $2, $3, $4}
         END {printf "]"}')
read -r f50 f99 fmax < <(stats "$T/floor.txt" 1)
read -r t50 t99 tmax < <(stats "$T/timed.txt" 1)

{ echo "jobs:"; for i in $(seq 0 999); do
    printf '  - {name: job%04d, schedule: "%d * * * * *", catchup: 0, command: ["true"]}\n' "$i" $((i % 60))
  done; } > "$T/many.yaml"
config many "$T/many.yaml"
spawn many "$B" run -c "$T/many.conf"
wait_for_line "$T/many.out" '"to":"working"' 10 >/dev/null
sleep "$WINDOW"
hwm=$(awk '/^VmHWM:/{print $2}' "/proc/$(pid_of many)/status")
anon=$(awk '/^Anonymous:/{print $2}' "/proc/$(pid_of many)/smaps_rollup")
starts=$(grep -c '"event":"job_start"' "$T/many.out")
kill -TERM "$(pid_of many)"; wait_exit many 10
LOAD_AFTER=$(load)

ok=true
awk "BEGIN{exit !($be99 <= 1)}" || ok=false
[ "$hwm" -le 10240 ] || ok=false
cat <<EOF
{"bench":"jobs","load":{"before":$LOAD_BEFORE,"lateness_end":$LOAD_MID,"after":$LOAD_AFTER},
 "lateness_ms":{"runs":$n,"exec":{"p50":$be50,"p99":$be99,"max":$bemax},"date":{"p50":$bd50,"p99":$bd99,"max":$bdmax},
   "go":{"p50":$bg50,"p99":$bg99,"max":$bgmax,"measured":"instant -> baton's go to the prepared shim (whole ms)"},
   "slowest":$slowest,
   "target_exec_p99":1,"stamp_static":$STATIC,"realtime_priority":$([ ${#RT[@]} -gt 0 ] && echo true || echo false),
   "measured":"scheduled instant -> main() of the job (stamp, static), and -> the date it execs"},
 "spawn_floor_ms":{"runs":$(wc -l < "$T/floor.txt"),"p50":$f50,"p99":$f99,"max":$fmax,
   "measured":"a C program: posix_spawn of stamp -> its main(), in the same run (the cheapest start of a process here)"},
 "timed_spawn_floor_ms":{"runs":$(wc -l < "$T/timed.txt"),"p50":$t50,"p99":$t99,"max":$tmax,
   "measured":"a C program that sleeps to each instant (clock_nanosleep, absolute) and posix_spawns stamp: instant -> its main(), in the same run"},
 "naive_python_loop_ms":{"runs":$m,"exec":{"p50":$ne50,"p99":$ne99,"max":$nemax},"date":{"p50":$nd50,"p99":$nd99,"max":$ndmax},
   "measured":"the same command, forked by a Python loop that sleeps to each half second, in the same run"},
 "leader_with_1000_jobs":{"window_s":$WINDOW,"job_starts":$starts,"peak_rss_kb":$hwm,"anonymous_kb":$anon,"target_kb":10240},
 "ok":$ok}
EOF
