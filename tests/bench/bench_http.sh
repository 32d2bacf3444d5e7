# bench_http.sh -- what serving /metrics costs the supervisor; prints JSON.
#
# A leader of 50 jobs (one of them every second, running `date +%s%N`, the
# others once a minute) with http.listen set, measured over three windows of
# W seconds: without requests, with GET /metrics at 100 requests a second
# (one curl, --rate 100/s, keep-alive), and without again. For each: the
# CPU time of the event loop's thread and of the HTTP thread (from
# /proc/PID/task), and the start lateness of the every-second job
# (scheduled instant -> the child's first instruction, as bench_jobs.sh).
# Targets: the loop's CPU with requests within 1 percentage point of the
# quiet windows' mean, lateness p99 <= 10 ms.
#
# usage: bench_http.sh [--smoke] [--window S]
# Needs BATON_BIN and BATON_TESTS_DIR; curl.
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
B=$BATON_BIN
WINDOW=60
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) WINDOW=3 ;;
    --window) WINDOW=$2; shift ;;
    *) echo "usage: bench_http.sh [--smoke] [--window S]" >&2; exit 2 ;;
    esac
    shift
done
command -v curl >/dev/null || fail "curl is not installed"
redis_start
{ echo "jobs:"
  echo '  - {name: clock, schedule: "* * * * * *", catchup: 0, command: ["date", "+%s%N"]}'
  for i in $(seq 1 49); do
      printf '  - {name: job%02d, schedule: "%d * * * * *", catchup: 0, command: ["true"]}\n' "$i" $((i % 60))
  done; } > "$T/jobs.yaml"
printf 'node: bench\nredis: %s\ngroup: bench\njobs: %s\nhttp: {listen: "127.0.0.1:0"}\n' "$REDIS_URL" "$T/jobs.yaml" > "$T/b.yaml"
spawn b "$B" run -c "$T/b.yaml"
addr=$(wait_for_line "$T/b.out" '"event":"http_listening"' 10 | sed 's/.*"listen":"\([^"]*\)".*/\1/')
wait_for_line "$T/b.out" '"to":"working"' 10 >/dev/null
pid=$(pid_of b)
sleep 2
http_tid=$(for t in /proc/$pid/task/*; do [ "$(cat "$t/comm")" = baton-http ] && echo "${t##*/}"; done)
[ -n "$http_tid" ] || fail "no baton-http thread in $pid"
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$pid/task/$1/stat"; } # seconds

# window NAME LOAD: measures one window; LOAD is "" or "metrics"
window() {
    local name=$1 load=$2 loop0 http0 t0 t1
    if [ -n "$load" ]; then
        for _ in $(seq 1 $(( WINDOW * 100 ))); do printf 'url = "http://%s/metrics"\noutput = "/dev/null"\n' "$addr"; done > "$T/urls"
    fi
    loop0=$(cpu "$pid") http0=$(cpu "$http_tid") t0=$(date +%s)
    if [ -n "$load" ]; then # WINDOW x 100 requests at 100 a second
        timeout $(( WINDOW + 60 )) curl -s --rate 100/s -K "$T/urls" -w '%{http_code}\n' > "$T/codes-$name"
    else
        sleep "$WINDOW"
    fi
    t1=$(date +%s)
    local loop1 http1 reqs=0
    loop1=$(cpu "$pid") http1=$(cpu "$http_tid")
    [ -n "$load" ] && reqs=$(grep -c '^200$' "$T/codes-$name")
    # lateness of the clock job's runs scheduled inside the window
    sed -n 's/.*"event":"job_start".*"job":"clock","run_id":"\([^"]*\)","scheduled_at":"\([^"]*\)".*/\1 \2/p' "$T/b.out" |
        while read -r id at; do s=$(date -d "$at" +%s); [ "$s" -ge "$t0" ] && [ "$s" -lt "$t1" ] && echo "$id $s"; done |
        sort > "$T/sched-$name"
    sed -n 's/.*"event":"job_output".*"run_id":"\([^"]*\)","stream":"stdout","line":"\([0-9]*\)".*/\1 \2/p' "$T/b.out" |
        sort > "$T/exec-$name"
    join "$T/sched-$name" "$T/exec-$name" | awk '{printf "%.3f\n", ($3 - $2 * 1000000000) / 1e6}' | sort -n > "$T/late-$name"
    read -r n p50 p99 max < <(awk '{v[NR]=$1} END{if (NR == 0) {print 0, 0, 0, 0; exit}
        printf "%d %.3f %.3f %.3f", NR, v[int(0.5*(NR-1)+1.5)], v[int(0.99*(NR-1)+1.5)], v[NR]}' "$T/late-$name")
    local secs=$(( t1 - t0 ))
    awk -v l0="$loop0" -v l1="$loop1" -v h0="$http0" -v h1="$http1" -v s="$secs" -v r="$reqs" \
        -v n="$n" -v p50="$p50" -v p99="$p99" -v max="$max" -v name="$name" 'BEGIN {
        printf "{\"window\":\"%s\",\"seconds\":%d,\"requests_ok\":%d,\"requests_per_s\":%.1f,", name, s, r, r / s
        printf "\"loop_cpu_pct\":%.2f,\"http_cpu_pct\":%.2f,", (l1 - l0) * 100 / s, (h1 - h0) * 100 / s
        printf "\"lateness_ms\":{\"runs\":%d,\"p50\":%s,\"p99\":%s,\"max\":%s}}", n, p50, p99, max }'
}
quiet1=$(window quiet1 "")
loaded=$(window metrics100 metrics)
quiet2=$(window quiet2 "")
size=$(curl -s "http://$addr/metrics" | wc -c)
kill -TERM "$pid"; wait_exit b 10

pct() { echo "$1" | sed 's/.*"'"$2"'":\([0-9.]*\).*/\1/'; }
p99() { echo "$1" | sed 's/.*"p99":\([0-9.]*\).*/\1/'; }
ok=true
awk -v a="$(pct "$quiet1" loop_cpu_pct)" -v b="$(pct "$loaded" loop_cpu_pct)" -v c="$(pct "$quiet2" loop_cpu_pct)" \
    'BEGIN {exit !(b <= (a + c) / 2 + 1)}' || ok=false
awk -v p="$(p99 "$loaded")" 'BEGIN {exit !(p <= 10)}' || ok=false
[ "$(pct "$loaded" requests_per_s | cut -d. -f1)" -ge 90 ] || ok=false
cat <<EOF
{"bench":"http_metrics","metrics_bytes":$size,"jobs":50,
 "windows":[$quiet1,
            $loaded,
            $quiet2],
 "target":"loop CPU with requests <= quiet mean + 1 point; lateness p99 <= 10 ms; >= 90 requests/s served",
 "ok":$ok}
EOF
