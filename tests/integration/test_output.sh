# test_output.sh -- the output kept with each run's history record, through
# real supervisors and a real redis-server:
#   1. after a failover (the node that ran it SIGKILLed), another node's
#      `baton history --output RUN_ID` prints the run's output: exactly the
#      tail of what it printed (history.output_bytes of it, starting at a
#      line), invalid UTF-8 and NUL as U+FFFD; with --json a valid JSON
#      record that carries it, while `baton history --json` stays small;
#   2. the precise errors and exit statuses: an unknown run, a run that
#      never started, a record kept without output (output_bytes 0, or an
#      older baton's), a RUN_ID without --output;
#   3. a run printing 20 MB keeps 1 MiB (output_bytes at its bound) and the
#      supervisor's memory stays bounded.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
redis_start
command -v python3 >/dev/null || fail "python3 is not installed (apt-get install python3)"

config() { node_config "$@"; }
run_node() { node_config "$@"; spawn "$1" "$B" run -c "$T/$1.yaml"; }

# ---------------------------------------------------------------------
note "1. the output of a run, read on another node after the one that ran it was killed"
# chatty prints ~5 kB (more than output_bytes: 1000) ending in invalid
# UTF-8, a NUL and a line on stderr, and keeps a raw copy of it.
cat > "$T/out.yaml" <<EOF
jobs:
  - name: chatty
    schedule: "*/2 * * * * *"
    catchup: 0
    shell: "{ i=0; while [ \$i -lt 200 ]; do echo \"line \$i of \$BATON_RUN_ID\"; i=\$((i+1)); done; printf 'bad \\\\377\\\\376 utf8\\\\n'; printf 'nul\\\\000byte\\\\n'; } | tee $T/raw-\$BATON_RUN_ID; sleep 0.1; echo last >&2; echo last >> $T/raw-\$BATON_RUN_ID"
  - name: ghost
    schedule: "*/2 * * * * *"
    catchup: 0
    command: ["/nonexistent/ghost"]
EOF
for n in o1 o2 o3; do run_node $n out "$T/out.yaml" 'history: {runs: 20, output_bytes: 1000}'; sleep 0.2; done
sleep 0.5
l=$(leader_of out)
[ -n "$l" ] || fail "no leader"
end=$(wait_for_line "$T/$l.out" '"event":"job_end".*"job":"chatty".*"outcome":"ok"' 6)
id=$(echo "$end" | sed 's/.*"run_id":"\([^"]*\)".*/\1/')
# Its record is in Redis before the node goes.
for _ in $(seq 1 100); do
    rcli xrevrange 'baton:{out}:runs:chatty' + - COUNT 5 | grep -qx "$id" && break
    sleep 0.02
done
rcli xrevrange 'baton:{out}:runs:chatty' + - COUNT 5 | grep -qx "$id" || fail "run $id not recorded"
kill -KILL "$(pid_of "$l")"; wait_exit "$l" 2
other=o1; [ "$l" = o1 ] && other=o2
# Another node leads within the lease.
for _ in $(seq 1 200); do nl=$(leader_of out); [ -n "$nl" ] && [ "$nl" != "$l" ] && break; sleep 0.02; done
[ -n "$nl" ] && [ "$nl" != "$l" ] || fail "no new leader after $l was killed"
"$B" history -c "$T/$other.yaml" chatty --output "$id" > "$T/got.out" 2>"$T/got.err" \
    || fail "history --output $id: exit $?: $(cat "$T/got.err")"
python3 - "$T/raw-$id" "$T/got.out" <<'PY' || fail "the output kept is not the exact tail"
import sys
raw = open(sys.argv[1], "rb").read()
got = open(sys.argv[2], "rb").read()
# The text as baton keeps it: invalid UTF-8 and NUL become U+FFFD.
text = raw.decode("utf-8", errors="replace").replace("\0", "\ufffd").encode()
tail = text[-1000:]
if len(text) > 1000:
    tail = tail[tail.index(b"\n") + 1:]
assert got == tail, "got %r\nwant %r" % (got[:120], tail[:120])
assert len(got) <= 1000 and len(text) > 1000
assert got.endswith(b"bad \xef\xbf\xbd\xef\xbf\xbd utf8\nnul\xef\xbf\xbdbyte\nlast\n"), got[-60:]
print(len(text), len(got))
PY
json=$("$B" history -c "$T/$other.yaml" chatty --output --json "$id") || fail "--output --json failed"
python3 - "$json" "$T/got.out" "$T/raw-$id" <<'PY' || fail "--output --json: $json"
import json, sys
r = json.loads(sys.argv[1])
got = open(sys.argv[2], "rb").read().decode()
raw = open(sys.argv[3], "rb").read().decode("utf-8", errors="replace").replace("\0", "\ufffd")
assert r["v"] == 3 and r["output"] == got, r
assert r["output_bytes"] == len(got.encode()), r["output_bytes"]
assert r["output_dropped"] + len(got.encode()) == len(raw.encode()), (r["output_dropped"], len(raw.encode()))
PY
# The listing stays small: sizes, not the output.
"$B" history -c "$T/$other.yaml" chatty --json | python3 -c '
import json, sys
rs = json.load(sys.stdin)
assert rs and all("output" not in r for r in rs), rs[0]
assert any(r.get("output_bytes", 0) > 0 for r in rs), rs[0]' || fail "history --json carries the output"
# Without RUN_ID: the newest run that started (not ghost's failed starts;
# the newest record may also be a tick that did not run). Read before and
# after: a run may end in between.
newest() {
    "$B" history -c "$T/$other.yaml" chatty --json -n 20 | python3 -c '
import json, sys
print(next(r["run_id"] for r in json.load(sys.stdin)
           if r.get("run_id") and r.get("started") and r.get("outcome") != "failed_to_start"))'
}
lid1=$(newest)
"$B" history -c "$T/$other.yaml" chatty --output > "$T/latest.out" || fail "history --output (latest)"
lid2=$(newest)
tail -n 1 "$T/latest.out" | grep -qx last || fail "the latest output: $(tail -n 3 "$T/latest.out")"
grep -qE "of ($lid1|$lid2)\$" "$T/latest.out" ||
    fail "--output without RUN_ID is not the newest run ($lid1, $lid2): $(grep -m1 ' of ' "$T/latest.out")"
stored=$(wc -c < "$T/got.out")
note "  run $id on $l, read on $other after $l was killed: $stored bytes kept of $(wc -c < "$T/raw-$id"), the exact tail"
note "ok"

# ---------------------------------------------------------------------
note "2. errors: an unknown run, a run that never started, a record without output"
expect() { # expect STATUS MESSAGE-REGEX CMD...
    local want=$1 re=$2; shift 2
    "$@" > "$T/e.out" 2> "$T/e.err"
    local rc=$?
    assert_eq "$want" "$rc" "exit status of $*"
    grep -qE -- "$re" "$T/e.err" || fail "$*: stderr [$(cat "$T/e.err")] does not match /$re/"
    [ ! -s "$T/e.out" ] || fail "$*: printed on stdout: $(head -c 200 "$T/e.out")"
}
c="$T/$other.yaml"
expect 1 '^baton: history: no run "1-2-3-4" in the history of job chatty$' "$B" history -c "$c" chatty --output 1-2-3-4
expect 1 '^baton: history: no run of job nojob recorded$' "$B" history -c "$c" nojob --output
gid=$(rcli xrevrange 'baton:{out}:runs:ghost' + - COUNT 1 | sed -n '/^run_id$/{n;p}')
[ -n "$gid" ] || fail "ghost has no record"
expect 1 "^baton: history: run $gid of job ghost never started \\(failed_to_start\\): it has no output\$" \
    "$B" history -c "$c" ghost --output "$gid"
expect 64 'a RUN_ID goes with --output' "$B" history -c "$c" chatty "$id"
# A record an older baton wrote (version 2: no output field).
rcli xadd 'baton:{out}:runs:chatty' '*' v 2 run_id old-1 node o9 scheduled_at 2026-01-02T07:00:00Z \
    started 2026-01-02T07:00:00.010Z outcome ok exit_code 0 > /dev/null
expect 1 '^baton: history: run old-1 of job chatty was recorded without its output \(by a baton older than record version 3\)$' \
    "$B" history -c "$c" chatty --output old-1
for n in o1 o2 o3; do [ "$n" = "$l" ] || kill -TERM "$(pid_of $n)"; done
for n in o1 o2 o3; do [ "$n" = "$l" ] || wait_exit $n 10; done
# history.output_bytes: 0 keeps none, and says so.
cat > "$T/quiet.yaml" <<'EOF'
jobs:
  - {name: quiet, schedule: "* * * * * *", catchup: 0, shell: "echo hidden"}
EOF
run_node q1 quiet "$T/quiet.yaml" 'history: {output_bytes: 0}'
qend=$(wait_for_line "$T/q1.out" '"event":"job_end".*"job":"quiet"' 5)
qid=$(echo "$qend" | sed 's/.*"run_id":"\([^"]*\)".*/\1/')
sleep 0.3
kill -TERM "$(pid_of q1)"; wait_exit q1 10
expect 1 "^baton: history: run $qid of job quiet was recorded without its output \\(history.output_bytes was 0\\)\$" \
    "$B" history -c "$T/q1.yaml" quiet --output "$qid"
grep -q '"line":"hidden"' "$T/q1.out" || fail "output_bytes: 0 also silenced the log"
note "ok"

# ---------------------------------------------------------------------
note "3. 20 MB of output: 1 MiB kept, the supervisor's memory bounded"
cat > "$T/flood.yaml" <<'EOF'
jobs:
  - name: flood
    schedule: "*/3 * * * * *"
    catchup: 0
    shell: "head -c 20000000 /dev/zero | tr '\\0' x | fold -w 3999; echo; echo done"
EOF
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1 \
    run_node m1 flood "$T/flood.yaml" 'history: {runs: 3, output_bytes: 1048576}'
fend=$(wait_for_line "$T/m1.out" '"event":"job_end".*"job":"flood".*"outcome":"ok"' 25)
fid=$(echo "$fend" | sed 's/.*"run_id":"\([^"]*\)".*/\1/')
sleep 0.5
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$(pid_of m1)/status")
kill -TERM "$(pid_of m1)"; wait_exit m1 30
"$B" history -c "$T/m1.yaml" flood --output "$fid" > "$T/flood.out" || fail "flood's output"
size=$(wc -c < "$T/flood.out")
[ "$size" -le 1048576 ] && [ "$size" -gt $(( 1048576 - 4000 )) ] || fail "flood kept $size bytes"
tail -n 1 "$T/flood.out" | grep -qx done || fail "the end of flood's output was not kept"
head -n 1 "$T/flood.out" | grep -qx 'x\{3999\}' || fail "the tail does not start at a line"
mem=$(rcli memory usage 'baton:{flood}:runs:flood')
note "  kept $size bytes of 20 MB; supervisor peak RSS $hwm kB; the stream holds $(rcli xlen 'baton:{flood}:runs:flood') records in $mem bytes (runs: 3)"
limit=24000; case "${BATON_TEST_CFLAGS:-}" in *sanitize*) limit=64000 ;; esac
[ "$hwm" -lt "$limit" ] || fail "20 MB of output cost $hwm kB (limit $limit kB)"
note "ok"
