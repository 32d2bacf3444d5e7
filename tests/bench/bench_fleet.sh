# bench_fleet.sh -- one group at fleet scale: NODES `baton run` supervisors
# on one redis-server, a jobs.yaml of JOBS jobs; prints one JSON object.
#
# The jobs (a realistic mix, commands `true`): 0.1 % every second, 5 %
# every minute, 20 % hourly, the rest daily, weekly or monthly, spread over
# the seconds and minutes. Each supervisor: lease ttl 3 s, the rest default
# (renew, poll 5 s, history.runs 100).
#
#   check      `baton check` of the jobs.yaml (load, validate, next runs):
#              wall time, median of 3
#   start      every node started: the leader's time to working, RSS
#   window     W s with the fleet up: the leader's RSS (VmRSS, VmHWM) and CPU,
#              the followers' total Redis commands/s (MONITOR, attributed to
#              each process by its sockets) and CPU, the every-second jobs'
#              start lateness (lateness_ms of job_start)
#   hogs       H s more with two CPU hogs beside the fleet (two shell busy
#              loops, killed by pid after): the every-second jobs' start
#              lateness. Target p99 <= 15 ms.
#   reload     SIGHUP to the leader: signal -> "reloaded", and the worst
#              lateness of the every-second jobs in the 3 s after
#   graceful   SIGTERM the leader R times (it comes back as a follower):
#              signal -> another node's "working". Target p99 <= 5 ms. Split
#              by the logs: the old leader's signal_received -> its
#              lease_released, and lease_released -> the successor's working.
#              The floor, measured in the same run (the fleet up, the same
#              redis-server) over as many rounds, so that its p99 is the
#              same statistic (of 20 rounds, the worst): the same protocol
#              steps done by minimal C processes (tests/bench/
#              handover_floor.c, no threads, no logging): kill -TERM to a
#              process waiting on a signalfd -> its script's DEL + PUBLISH
#              -> a subscribed process's SET NX answered OK.
#   crash      SIGKILL the leader C times: (new "working") - kill - ttl.
#              Target <= 50 ms.
#   history    Redis memory after one hour of history, written at an
#              accelerated pace: each job's runs of one hour (its schedule's
#              ticks in an hour) as XADD MAXLEN ~ 100 records shaped like a
#              real one (copied from an every-second job's stream), then
#              the bound: JOBS x (history.runs + one stream block of 100) x
#              the measured bytes per record.
# Targets also: leader RSS <= 30 MB.
#
# usage: bench_fleet.sh [--smoke] [--nodes N] [--jobs N] [--window S]
#                       [--graceful R] [--crash C]
# Needs BATON_BIN, BATON_BUILD_DIR (its tests/handover_floor; default: the
# werror build tree beside tests/) and BATON_TESTS_DIR, jq.
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
BATON_BUILD_DIR=${BATON_BUILD_DIR:-$(cd "$BATON_TESTS_DIR/.." && pwd)/build/werror}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
B=$BATON_BIN
NODES=100 JOBS=10000 WINDOW=30 GRACEFUL=20 CRASH=5 SMOKE=false HOG_WINDOW=20
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) NODES=4 JOBS=300 WINDOW=3 GRACEFUL=2 CRASH=1 SMOKE=true HOG_WINDOW=3 ;;
    --nodes) NODES=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    --graceful) GRACEFUL=$2; shift ;;
    --crash) CRASH=$2; shift ;;
    *) echo "usage: bench_fleet.sh [--smoke] [--nodes N] [--jobs N] [--window S] [--graceful R] [--crash C]" >&2; exit 2 ;;
    esac
    shift
done
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
[ -x "$BATON_BUILD_DIR/tests/handover_floor" ] ||
    fail "$BATON_BUILD_DIR/tests/handover_floor is not built (cmake --build $BATON_BUILD_DIR)"
load() { cut -d' ' -f1 /proc/loadavg; }
LOAD_BEFORE=$(load)
TTL_MS=3000 G=fleet
redis_start

# ---- jobs.yaml ----
awk -v n="$JOBS" 'BEGIN {
    print "jobs:"
    nsec = int(n / 1000); if (nsec < 1) nsec = 1
    nmin = int(n * 5 / 100); nhour = int(n * 20 / 100)
    for (i = 0; i < n; i++) {
        s = i % 60; m = int(i / 60) % 60; h = int(i / 3600) % 24
        if (i < nsec) sched = "* * * * * *"
        else if (i < nsec + nmin) sched = s " * * * * *"
        else if (i < nsec + nmin + nhour) sched = s " " m " * * * *"
        else if (i % 3 == 0) sched = s " " m " " h " * * *"
        else if (i % 3 == 1) sched = s " " m " " h " * * " (i % 7)
        else sched = s " " m " " h " " (i % 28 + 1) " * *"
        printf "  - {name: j%05d, schedule: \"%s\", command: [\"true\"]}\n", i, sched
    }
}' > "$T/jobs.yaml"
NSEC=$(( JOBS / 1000 > 0 ? JOBS / 1000 : 1 ))
conf() { printf 'node: %s\nredis: %s\ngroup: %s\nlease: {ttl: %dms}\njobs: %s\n' "$1" "$REDIS_URL" "$G" "$TTL_MS" "$T/jobs.yaml" > "$T/$1.yaml"; }

# ---- baton check ----
conf n000
: > "$T/check"
for _ in 1 2 3; do
    t0=$(date +%s%N)
    "$B" check -c "$T/n000.yaml" > "$T/check.out" 2>&1 || fail "baton check failed: $(tail -n 3 "$T/check.out")"
    echo $(( ($(date +%s%N) - t0) / 1000000 )) >> "$T/check"
done
CHECK_MS=$(sort -n "$T/check" | sed -n 2p)

# ---- the fleet ----
declare -A GEN=()
start() { GEN[$1]=$(( ${GEN[$1]:-0} + 1 )); conf "$1"; spawn "$1.${GEN[$1]}" "$B" run -c "$T/$1.yaml"; }
pid() { pid_of "$1.${GEN[$1]}"; }
out() { echo "$T/$1.${GEN[$1]}.out"; }
leader() { rcli get "baton:{$G}:leader" | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_new_leader() { # OLD -> prints the new leader
    local l deadline=$(( $(now_ms) + 30000 ))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        l=$(leader); [ -n "$l" ] && [ "$l" != "$1" ] && { echo "$l"; return 0; }
        sleep 0.01
    done
    fail "no new leader after $1"
}
# working_ms NODE SINCE: Unix ms of the node's first transition to working
# at or after SINCE (Unix ms), waiting for it
working_ms() {
    local f t deadline=$(( $(now_ms) + 10000 ))
    f=$(out "$1")
    while :; do
        for t in $(grep '"to":"working"' "$f" | sed 's/.*"ts":"\([^"]*\)".*/\1/'); do
            t=$(ts_ms "$t"); [ "$t" -ge "$2" ] && { echo "$t"; return 0; }
        done
        [ "$(now_ms)" -lt "$deadline" ] || fail "$1 leads but logged no transition to working since $2"
        sleep 0.01
    done
}
# event_ms NODE SINCE EVENT: Unix ms of its first EVENT line at or after SINCE
event_ms() {
    local t
    for t in $(grep "\"event\":\"$3\"" "$(out "$1")" | sed 's/.*"ts":"\([^"]*\)".*/\1/'); do
        t=$(ts_ms "$t"); [ "$t" -ge "$2" ] && { echo "$t"; return 0; }
    done
    echo "$2"
}
stats() { sort -g "$1" | awk '{v[NR]=$1} END{if (NR == 0) {print "null null null"; exit}
    printf "%s %s %s", v[int(0.5*(NR-1)+1.5)], v[int(0.99*(NR-1)+1.5)], v[NR]}'; }
names=(); for i in $(seq 1 "$NODES"); do names+=("$(printf 'n%03d' "$i")"); done
t_start=$(now_ms)
start "${names[0]}"
L=$(wait_new_leader "")
LEAD_MS=$(( $(working_ms "$L" "$t_start") - t_start ))
for n in "${names[@]:1}"; do start "$n"; done
deadline=$(( $(now_ms) + 300000 ))
for n in "${names[@]:1}"; do
    until grep -q '"event":"following"' "$(out "$n")"; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "$n is not following after 300 s"
        sleep 0.1
    done
done
FLEET_UP_MS=$(( $(now_ms) - t_start ))
# Leadership may have moved while 100 processes started on 2 cores, and a
# new leader first catches up: the window starts once that is over.
L=$(wait_new_leader "")
settle=60000; ! $SMOKE || settle=2000
settle=$(( $(now_ms) + settle ))
while [ "$(now_ms)" -lt "$settle" ]; do
    sleep 5
    L=$(wait_new_leader "")
    tail -n 200 "$(out "$L")" | grep -q '"event":"catch_up"' || break
done
sleep 2
L=$(wait_new_leader "")

# ---- the window ----
ports_of() { # PID: its TCP client ports
    local inodes hex
    inodes=$(ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')
    for hex in $(awk -v want=" $inodes " 'NR > 1 { split($2, a, ":"); if (index(want, " " $10 " ")) print a[2] }' /proc/net/tcp); do
        echo $((16#$hex))
    done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
LP=$(pid "$L")
declare -A cpu0=()
for n in "${names[@]}"; do cpu0[$n]=$(cpu_ticks "$(pid "$n")"); done
mem0=$(rcli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
w0=$(now_ms)
timeout "$WINDOW" redis-cli -p "$REDIS_PORT" monitor > "$T/monitor" 2>/dev/null
w1=$(now_ms)
hz=$(getconf CLK_TCK)
lports=$(ports_of "$LP" | tr '\n' '|'); lports=${lports%|}
# A client's commands only: MONITOR also shows the commands that scripts
# run (tagged "lua"), which are not requests.
grep -E '^[0-9.]+ \[[0-9]+ 127\.0\.0\.1:[0-9]+\]' "$T/monitor" > "$T/requests"
total=$(wc -l < "$T/requests")
lcmds=$(grep -cE "127\.0\.0\.1:($lports)\]" "$T/requests")
# what the followers send, by command (EVALSHA by its script's first 8 hex digits)
FTOP=$(grep -vE "127\.0\.0\.1:($lports)\]" "$T/requests" |
    awk '{c = $4; if (c == "\"EVALSHA\"") c = "EVALSHA " substr($5, 2, 8); n[c]++}
         END {for (k in n) printf "%d %s\n", n[k], k}' | sort -rn | head -n 6 |
    awk -v w="$(( (w1 - w0) / 1000 ))" '{c = $2; for (i = 3; i <= NF; i++) c = c " " $i; gsub(/"/, "", c)
         printf "%s\"%s\":%.2f", (NR > 1 ? "," : ""), c, $1 / (w > 0 ? w : 1)}')
fcpu=0
for n in "${names[@]}"; do
    [ "$n" = "$L" ] || fcpu=$(( fcpu + $(cpu_ticks "$(pid "$n")") - ${cpu0[$n]} ))
done
LCPU=$(awk "BEGIN{printf \"%.2f\", 100 * ($(cpu_ticks "$LP") - ${cpu0[$L]}) / $hz / (($w1 - $w0) / 1000)}")
FCPU=$(awk "BEGIN{printf \"%.2f\", 100 * $fcpu / $hz / (($w1 - $w0) / 1000)}")
FCMDS=$(awk "BEGIN{printf \"%.2f\", ($total - $lcmds) / (($w1 - $w0) / 1000)}")
LCMDS=$(awk "BEGIN{printf \"%.2f\", $lcmds / (($w1 - $w0) / 1000)}")
RSS=$(awk '/^VmRSS:/{print $2}' "/proc/$LP/status")
HWM=$(awk '/^VmHWM:/{print $2}' "/proc/$LP/status")
FRSS=$(for n in "${names[@]}"; do [ "$n" = "$L" ] || awk '/^VmRSS:/{print $2}' "/proc/$(pid "$n")/status"; done | sort -n | tail -n1)
# every-second jobs' lateness in the window (their ids are j00000..)
ev='"event":"job_start".*"job":"j0*[0-9]","'
grep -E "$ev" "$(out "$L")" | sed 's/.*"ts":"\([^"]*\)".*"lateness_ms":\([-0-9]*\).*/\1 \2/' |
    while read -r ts late; do t=$(ts_ms "$ts"); [ "$t" -ge "$w0" ] && [ "$t" -le "$w1" ] && echo "$late"; done > "$T/late"
read -r l50 l99 lmax < <(stats "$T/late")
NLATE=$(wc -l < "$T/late")
STARTS=$(grep -c '"event":"job_start"' "$(out "$L")")

# ---- hogs: the every-second jobs beside two busy loops ----
spawn hog1 bash -c 'while :; do :; done'
spawn hog2 bash -c 'while :; do :; done'
h0=$(now_ms)
sleep "$HOG_WINDOW"
h1=$(now_ms)
for h in hog1 hog2; do kill -KILL "$(pid_of "$h")"; wait_exit "$h" 10 2>/dev/null || true; done
grep -E "$ev" "$(out "$L")" | sed 's/.*"ts":"\([^"]*\)".*"lateness_ms":\([-0-9]*\).*/\1 \2/' |
    while read -r ts late; do t=$(ts_ms "$ts"); [ "$t" -ge "$h0" ] && [ "$t" -le "$h1" ] && echo "$late"; done > "$T/hlate"
read -r h50 h99 hmax < <(stats "$T/hlate")
NHLATE=$(wc -l < "$T/hlate")

# ---- reload ----
t0=$(now_ms)
kill -HUP "$LP"
wait_for_line "$(out "$L")" '"event":"reloaded"' 30 >/dev/null
RELOAD_MS=$(( $(ts_ms "$(grep '"event":"reloaded"' "$(out "$L")" | tail -n1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')") - t0 ))
sleep 3
grep -E "$ev" "$(out "$L")" | sed 's/.*"ts":"\([^"]*\)".*"lateness_ms":\([-0-9]*\).*/\1 \2/' |
    while read -r ts late; do t=$(ts_ms "$ts"); [ "$t" -ge "$t0" ] && echo "$late"; done | sort -n | tail -n1 > "$T/rlate"
RELOAD_LATE=$(cat "$T/rlate"); RELOAD_LATE=${RELOAD_LATE:-null}

# ---- history: one hour, accelerated ----
xlens() { for i in $(seq 0 $(( JOBS - 1 ))); do printf 'XLEN baton:{%s}:runs:j%05d\n' "$G" "$i"; done |
    redis-cli -p "$REDIS_PORT" | awk '{s += $1} END {print s + 0}'; }
hist_mem0=$(rcli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
kept0=$(xlens)
tmpl=$(rcli --no-raw xrange "baton:{$G}:runs:j00000" - + COUNT 1 | sed -n 's/^ *[0-9]*) "\(.*\)"$/\1/p' | tail -n +2)
[ -n "$tmpl" ] || fail "no history record of j00000 to copy"
printf '%s\n' "$tmpl" > "$T/tmpl"
awk -v n="$JOBS" -v nsec="$NSEC" -v g="$G" '
    function bulk(s) { return "$" length(s) "\r\n" s "\r\n" }
    FNR == NR { f[++nf] = $0; next }
    END {
        nmin = int(n * 5 / 100); nhour = int(n * 20 / 100)
        for (i = 0; i < n; i++) {
            runs = i < nsec ? 3600 : i < nsec + nmin ? 60 : i < nsec + nmin + nhour ? 1 : (i % 24 == 0 ? 1 : 0)
            key = sprintf("baton:{%s}:runs:j%05d", g, i)
            for (r = 0; r < runs; r++) {
                printf "*%d\r\n%s%s%s%s%s%s", 6 + nf, bulk("XADD"), bulk(key), bulk("MAXLEN"), bulk("~"), bulk("100"), bulk("*")
                for (k = 1; k <= nf; k++) printf "%s", bulk(f[k])
                written++
            }
        }
        print written > "/dev/stderr"
    }' "$T/tmpl" /dev/null > "$T/hour.resp" 2> "$T/hour.count"
redis-cli -p "$REDIS_PORT" --pipe < "$T/hour.resp" > "$T/pipe.out" 2>&1 || fail "redis-cli --pipe: $(tail -n 2 "$T/pipe.out")"
HOUR_RECORDS=$(cat "$T/hour.count")
hist_mem1=$(rcli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
kept=$(xlens)
REDIS_MEM_KB=$(( hist_mem1 / 1024 ))
PER_RECORD=$(awk "BEGIN{printf \"%.0f\", ($hist_mem1 - $hist_mem0) / ($HOUR_RECORDS > 0 ? $HOUR_RECORDS : 1)}")
per_kept=$(awk "BEGIN{printf \"%.0f\", ($hist_mem1 - $hist_mem0) / ($kept - $kept0 > 0 ? $kept - $kept0 : 1)}")
BOUND_MB=$(awk "BEGIN{printf \"%.0f\", $JOBS * 200 * $per_kept / 1048576}")

# ---- graceful handovers ----
: > "$T/graceful"
for i in $(seq 1 "$GRACEFUL"); do
    old=$L
    p=$(pid "$old")
    at_ms t0
    kill -TERM "$p"
    L=$(wait_new_leader "$old")
    w=$(working_ms "$L" "$t0")
    echo $(( w - t0 )) >> "$T/graceful"
    sig=$(event_ms "$old" "$t0" signal_received) rel=$(event_ms "$old" "$t0" lease_released)
    echo $(( w - sig )) >> "$T/graceful_logs"
    echo $(( rel - sig )) >> "$T/graceful_release" # the old leader's part
    echo $(( w - rel )) >> "$T/graceful_takeover"  # the successor's
    wait_exit "$old.${GEN[$old]}" 10
    start "$old"
    wait_for_line "$(out "$old")" '"event":"following"' 60 >/dev/null
    sleep 0.5
done
read -r g50 g99 gmax < <(stats "$T/graceful")
read -r s50 s99 smax < <(stats "$T/graceful_logs")
read -r r50 r99 rmax < <(stats "$T/graceful_release")
read -r o50 o99 omax < <(stats "$T/graceful_takeover")
# The floor of that handover, on the same redis-server with the fleet up.
FLOOR=$("$BATON_BUILD_DIR/tests/handover_floor" --port "$REDIS_PORT" --rounds "$GRACEFUL") || fail "handover_floor failed: $FLOOR"
read -r f50 f99 fmax < <(jq -r '.handover_ms | "\(.p50) \(.p99) \(.max)"' <<<"$FLOOR") &&
    FLOOR_MEASURED=$(jq -c '.measured' <<<"$FLOOR") || fail "handover_floor printed no result: $FLOOR"

# ---- crash takeovers ----
: > "$T/crash"
for i in $(seq 1 "$CRASH"); do
    old=$L
    sleep 0.$(( RANDOM % 9 + 1 ))
    # The lease ends PTTL after it is read, whatever was renewed before
    # (taken from before the read: an end that may be early, never late).
    p=$(pid "$old")
    at_ms t0
    ends=$(( t0 + $(rcli pttl "baton:{$G}:leader") ))
    at_ms t0
    kill -KILL "$p"
    L=$(wait_new_leader "$old")
    w=$(working_ms "$L" "$t0")
    echo $(( w - ends )) >> "$T/crash"
    echo $(( w - t0 - TTL_MS )) >> "$T/crash_from_kill"
    wait_exit "$old.${GEN[$old]}" 10
    start "$old"
    wait_for_line "$(out "$old")" '"event":"following"' 60 >/dev/null
    sleep 0.5
done
read -r c50 c99 cmax < <(stats "$T/crash")
read -r k50 k99 kmax < <(stats "$T/crash_from_kill")
LOAD_AFTER=$(load)

ok=true
[ "$g99" -le 5 ] && [ "$cmax" -le 50 ] && [ "$HWM" -le 30720 ] || ok=false
cat <<EOF
{"bench":"fleet","nodes":$NODES,"jobs":$JOBS,"every_second_jobs":$NSEC,"smoke":$SMOKE,
 "load":{"before":$LOAD_BEFORE,"after":$LOAD_AFTER},
 "check_ms":$CHECK_MS,"leader_working_after_start_ms":$LEAD_MS,"fleet_up_ms":$FLEET_UP_MS,
 "window":{"seconds":$(( (w1 - w0) / 1000 )),"leader_rss_kb":$RSS,"leader_hwm_kb":$HWM,"target_rss_kb":30720,
   "leader_cpu_percent":$LCPU,"leader_redis_commands_per_s":$LCMDS,
   "followers_redis_commands_per_s":$FCMDS,"followers_commands_per_s_by_command":{$FTOP},"followers_cpu_percent_total":$FCPU,"follower_rss_kb_max":$FRSS,
   "every_second_lateness_ms":{"runs":$NLATE,"p50":$l50,"p99":$l99,"max":$lmax},
   "every_second_lateness_with_hogs_ms":{"hogs":2,"seconds":$HOG_WINDOW,"runs":$NHLATE,"p50":$h50,"p99":$h99,"max":$hmax,"target_p99":15},"leader_job_starts":$STARTS},
 "reload":{"signal_to_reloaded_ms":$RELOAD_MS,"worst_lateness_ms_after":$RELOAD_LATE},
 "graceful_handover_ms":{"rounds":$GRACEFUL,"p50":$g50,"p99":$g99,"max":$gmax,"target_p99":5,
   "measured":"kill -TERM (the script's clock) -> the new leader's working line",
   "from_signal_received":{"p50":$s50,"p99":$s99,"max":$smax,"measured":"the old leader's signal_received line -> the new leader's working line"},
   "old_leader_release":{"p50":$r50,"p99":$r99,"max":$rmax,"measured":"the old leader's signal_received line -> its lease_released line"},
   "successor_takeover":{"p50":$o50,"p99":$o99,"max":$omax,"measured":"the old leader's lease_released line -> the new leader's working line"},
   "floor":{"rounds":$GRACEFUL,"p50":$f50,"p99":$f99,"max":$fmax,"measured":$FLOOR_MEASURED}},
 "crash_takeover_after_lease_end_ms":{"rounds":$CRASH,"ttl_ms":$TTL_MS,"p50":$c50,"p99":$c99,"max":$cmax,"target_max":50,
   "measured":"the new leader's working line - the lease's end (PTTL read just before the SIGKILL)",
   "minus_ttl_from_kill":{"p50":$k50,"p99":$k99,"max":$kmax}},
 "history_hour":{"records_written":$HOUR_RECORDS,"records_kept":$kept,"redis_used_memory_kb":$REDIS_MEM_KB,
   "redis_memory_before_kb":$(( mem0 / 1024 )),"bytes_per_record_written":$PER_RECORD,
   "bound_mb":$BOUND_MB,"bound":"jobs x (history.runs 100 + a stream block of 100) x bytes per kept record"},
 "ok":$ok}
EOF
