# bench_jobs.sh -- scheduling lateness and the leader's memory; prints JSON.
#
#   lateness  an every-second job whose command is `date +%s%N` (argv, no
#             shell): the time from its scheduled instant to the moment the
#             child runs, over RUNS runs on an otherwise idle machine.
#             Target p99 <= 10 ms.
#   memory    a leader scheduling 1,000 jobs (about 17 starts a second) for
#             W seconds: its peak RSS (VmHWM). Target <= 10 MB.
#
# usage: bench_jobs.sh [--smoke] [--runs N] [--window S]
# Needs BATON_BIN and BATON_TESTS_DIR.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
RUNS=300 WINDOW=30
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) RUNS=3 WINDOW=3 ;;
    --runs) RUNS=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    *) echo "usage: bench_jobs.sh [--smoke] [--runs N] [--window S]" >&2; exit 2 ;;
    esac
    shift
done
redis_start
config() { printf 'node: %s\nredis: %s\ngroup: %s\njobs: %s\n' "$1" "$REDIS_URL" "$1" "$2" > "$T/$1.conf"; }

cat > "$T/late.yaml" <<'EOF'
jobs:
  - {name: clock, schedule: "* * * * * *", catchup: 0, command: ["date", "+%s%N"]}
EOF
config late "$T/late.yaml"
spawn late "$B" run -c "$T/late.conf"
deadline=$(( $(now_ms) + (RUNS + 10) * 1000 ))
while [ "$(grep -c '"event":"job_end"' "$T/late.out")" -lt "$RUNS" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "fewer than $RUNS runs"
    sleep 0.5
done
kill -TERM "$(pid_of late)"; wait_exit late 5
# run_id -> scheduled (s); run_id -> exec time (ns)
sed -n 's/.*"event":"job_start".*"run_id":"\([^"]*\)","scheduled_at":"\([^"]*\)".*/\1 \2/p' "$T/late.out" |
    while read -r id at; do echo "$id $(date -d "$at" +%s)"; done | sort > "$T/sched"
sed -n 's/.*"event":"job_output".*"run_id":"\([^"]*\)","stream":"stdout","line":"\([0-9]*\)".*/\1 \2/p' "$T/late.out" |
    sort > "$T/exec"
join "$T/sched" "$T/exec" | awk '{printf "%.3f\n", ($3 - $2 * 1000000000) / 1e6}' | head -n "$RUNS" > "$T/lateness"
n=$(wc -l < "$T/lateness")
read -r p50 p99 max < <(sort -n "$T/lateness" | awk '{v[NR]=$1} END{printf "%.3f %.3f %.3f", v[int(0.5*(NR-1)+1.5)], v[int(0.99*(NR-1)+1.5)], v[NR]}')

{ echo "jobs:"; for i in $(seq 0 999); do
    printf '  - {name: job%04d, schedule: "%d * * * * *", catchup: 0, command: ["true"]}\n' "$i" $((i % 60))
  done; } > "$T/many.yaml"
config many "$T/many.yaml"
spawn many "$B" run -c "$T/many.conf"
wait_for_line "$T/many.out" '"to":"working"' 10 >/dev/null
sleep "$WINDOW"
hwm=$(awk '/^VmHWM:/{print $2}' "/proc/$(pid_of many)/status")
starts=$(grep -c '"event":"job_start"' "$T/many.out")
kill -TERM "$(pid_of many)"; wait_exit many 10

ok=true
awk "BEGIN{exit !($p99 <= 10)}" || ok=false
[ "$hwm" -le 10240 ] || ok=false
cat <<EOF
{"bench":"jobs",
 "lateness_ms":{"runs":$n,"p50":$p50,"p99":$p99,"max":$max,"target_p99":10,
   "measured":"scheduled instant -> first instruction of the exec'd child (date +%s%N)"},
 "leader_with_1000_jobs":{"window_s":$WINDOW,"job_starts":$starts,"peak_rss_kb":$hwm,"target_kb":10240},
 "ok":$ok}
EOF
