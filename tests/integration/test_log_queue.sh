# test_log_queue.sh -- the log's queue is bounded whatever is logged, behind
# a reader that does not read (issue 33, defects 3 and 4). A real
# supervisor and redis-server; every second a job prints 20,000 lines and
# its on_success hook 50,000 more, into stdout, a fifo that the test holds
# open and never reads:
#   1. the supervisor's RSS stays bounded (job output was bounded before;
#      hook output and every other line queued without end: 10 MB more a
#      second);
#   2. while the reader is stalled, /metrics counts the lines dropped, and
#      the count grows (it used to read 0 until the queue drained);
#   3. once a reader drains the fifo, one log_lines_dropped line says how
#      many lines and bytes were dropped, of which events, since when; the
#      metric is at least the lines it reports; and the state lines were
#      kept: every run that started has its job_start and job_end, every
#      hook its hook_start and hook_end.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v python3 >/dev/null || fail "python3 is not installed (apt-get install python3)"

port=$(free_port)
cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: chatty
    schedule: "* * * * * *"
    catchup: 0
    shell: "seq 1 20000"
    on_success: {shell: "seq 1 50000"}
EOF
node_config n1 lq "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$port\"}"
mkfifo "$T/fifo"
exec 3<>"$T/fifo" # a reader that never reads: the pipe fills at 64 KiB
# Under AddressSanitizer, freed memory waits in a quarantine (256 MB by
# default): keep it small so that the RSS means something.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1 \
    "$B" run -c "$T/n1.yaml" >"$T/fifo" 2>"$T/n1.err" </dev/null 3<&- &
PROC_PID[n1]=$!
pid=${PROC_PID[n1]}

# dropped: baton_log_lines_dropped_total now ("" when /metrics does not answer).
dropped() { curl -s -m 2 "http://127.0.0.1:$port/metrics" | awk '$1 == "baton_log_lines_dropped_total" {print $2}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

note "1. 12 s of a stalled reader: RSS bounded; 2. the metric counts the drops as they happen"
max=0 first_drop= last_drop=
for i in $(seq 1 12); do
    sleep 1
    alive "$pid" || fail "the supervisor died: $(tail -n 5 "$T/n1.err")"
    r=$(rss_kb)
    [ "$r" -gt "$max" ] && max=$r
    d=$(dropped)
    [ -n "$d" ] || fail "no answer from /metrics at second $i"
    [ -z "$first_drop" ] && [ "$d" -gt 0 ] && first_drop=$d && first_at=$i
    last_drop=$d
done
note "  peak RSS $max kB; baton_log_lines_dropped_total ${first_drop:-0} at second ${first_at:-?}, $last_drop at second 12"
# Without sanitizers a few MB and the queue's bound (4 MiB of lines, 1 MiB
# more for state lines); with them, their shadow memory adds a fixed part.
limit=32000; case "${BATON_TEST_CFLAGS:-}" in *sanitize*) limit=80000 ;; esac
[ "$max" -lt "$limit" ] || fail "a stalled reader cost $max kB (limit $limit kB)"
[ -n "$first_drop" ] || fail "baton_log_lines_dropped_total stayed 0 for 12 s of a stalled reader"
[ "$last_drop" -gt "$first_drop" ] || fail "baton_log_lines_dropped_total did not grow: $first_drop, then $last_drop"
note "ok"

note "3. a reader drains the fifo: log_lines_dropped says what was dropped; state lines kept"
spawn drain bash -c 'exec 3<&- cat "$0"' "$T/fifo"
exec 3<&- # the reader that did not read is gone; the drain gets EOF at the exit
line=$(wait_for_line "$T/drain.out" '"event":"log_lines_dropped"' 30)
sleep 1.5
d=$(dropped)
kill -TERM "$pid"
wait_exit n1 30
wait_exit drain 10
python3 - "$T/drain.out" "$d" <<'EOF' || fail "the drained log: see above"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
drops = [l for l in lines if l["event"] == "log_lines_dropped"]
d = drops[0]
assert d["level"] == "warn", d
assert d["lines"] > 0 and d["bytes"] > 0, d
ev = d["events"]
assert sum(ev.values()) == d["lines"], d
assert ev.get("hook_output", 0) > 0 and ev.get("job_output", 0) > 0, d
assert d["since"] < d["ts"], d
reported = sum(x["lines"] for x in drops)
metric = int(sys.argv[2])
assert metric >= reported, ("metric", metric, "reported", reported)
def ids(event):
    return [l["run_id"] for l in lines if l["event"] == event]
starts, ends = ids("job_start"), ids("job_end")
assert len(starts) >= 3, len(starts) # a loaded (sanitizer) machine runs fewer
assert sorted(starts) == sorted(ends), (starts, ends)
assert len(set(starts)) == len(starts), starts
hstarts, hends = ids("hook_start"), ids("hook_end")
assert sorted(hstarts) == sorted(hends) and len(hstarts) >= 3, (hstarts, hends)
kinds = {l["event"] for l in lines}
assert {"started", "transition", "stopped"} <= kinds, kinds
print("  %d runs, all with their start and end; dropped %d lines (%s); metric %d" %
      (len(starts), d["lines"], ", ".join("%s %d" % kv for kv in sorted(ev.items())), metric))
EOF
note "ok"
