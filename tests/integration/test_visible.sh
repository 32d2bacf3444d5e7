# test_visible.sh -- what an operator sees on the first day, through real
# supervisors and a real redis-server:
#   1. a run alive now (here a manual one) is in `baton status` (its node,
#      run id, trigger with who asked, start, elapsed), in `status --json`,
#      in a node's /status and on its page (headless Chromium), and the
#      running count per node; and gone from all of them once it ended;
#   2. status lists the leader first, then the nodes by name, a follower
#      with the term it follows; the next run in the job's own zone beside
#      UTC;
#   3. `baton history` says what started each run (schedule, manual by ...);
#   4. without a leader, no next run is presented as planned;
#   5. a job on members (run_on {labels}): the node running it with its
#      capacity in use, labels and the ticks that wait for room while it
#      is full (never offered to it), in status (text, --json), /status,
#      the page and /metrics (capacity, ticks waiting for room, dispatch
#      delay, no offer moved; promtool), and history's node and dispatch
#      delay.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v chromium >/dev/null || fail "chromium is not installed (bash deploy/setup.sh --deps-only installs it)"
redis_start

cat > "$T/jobs.yaml" <<EOF
jobs:
  - {name: long-export, schedule: "0 0 7 * * *", timezone: Europe/Berlin,
     shell: "echo \$\$ > $T/long.pid; echo started >> $T/long.txt; sleep 30"}
  - {name: tick, schedule: "*/2 * * * * *", command: ["true"]}
EOF
# zed leads (started first); alpha and mike follow: the rows must read
# zed, alpha, mike, not in heartbeat order.
for n in zed alpha mike; do
    printf 'node: %s\nredis: %s\ngroup: vis\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 1s\njobs: %s\nhttp: {listen: "127.0.0.1:0"}\n' \
        $n "$REDIS_URL" "$T/jobs.yaml" > "$T/$n.yaml"
    spawn $n "$B" run -c "$T/$n.yaml"
    wait_for_line "$T/$n.out" '"event":"(following|transition.*"to":"working")' 10 >/dev/null
done
wait_for_line "$T/zed.out" '"to":"working"' 5 >/dev/null
addr=$(wait_for_line "$T/alpha.out" '"event":"http_listening"' 5 | sed 's/.*"listen":"\([^"]*\)".*/\1/')
st() { "$B" status -c "$T/alpha.yaml" "$@"; }

# ---------------------------------------------------------------------
note "1. a manual run alive now shows everywhere, and goes when it ends"
id=$("$B" trigger -c "$T/alpha.yaml" long-export 2>/dev/null) || fail "trigger long-export"
wait_for_line "$T/long.txt" started 5 >/dev/null
sleep 0.6 # a heartbeat says so within 250 ms of the start
st > "$T/s1.txt"
row=$(sed -n '/^running now:/,/^$/p' "$T/s1.txt" | grep "^long-export ")
[ -n "$row" ] || fail "status shows no run of long-export: $(cat "$T/s1.txt")"
echo "$row" | grep -qE "^long-export +zed +manual by [^ ]+@[^ ]+ +20[0-9-]+T[0-9:.]+Z +[0-9.]+m?s +$id\$" ||
    fail "status's running row: $row"
grep -qE '^zed +working .* 1 +0/4 +- +2 [0-9a-f]{8} +leader$' "$T/s1.txt" || fail "zed's row (running 1, capacity 0/4, no labels): $(grep '^zed' "$T/s1.txt")"
st --json > "$T/s1.json"
python3 - "$T/s1.json" "$id" <<'EOF' || fail "status --json: $(cat "$T/s1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
job = [j for j in d["jobs"] if j["name"] == "long-export"][0]
assert len(job["running"]) == 1, job
r = job["running"][0]
assert r["node"] == "zed" and r["run_id"] == sys.argv[2] and r["trigger"] == "manual", r
assert r["by"] and "@" in r["by"] and r["started"].endswith("Z") and r["elapsed_ms"] >= 0, r
assert [j["running"] for j in d["jobs"] if j["name"] == "tick"] == [[]], d["jobs"]
assert {n["node"]: n["running"] for n in d["nodes"]}["zed"] == 1, d["nodes"]
EOF
# A node's view is its last read of the heartbeats (every poll): at most
# a poll and a heartbeat late.
for _ in $(seq 1 60); do
    curl -s -m 5 "http://$addr/status" > "$T/s1.http.json" || fail "GET /status"
    grep -q '"running":\[{' "$T/s1.http.json" && break
    sleep 0.05
done
grep -q "\"running\":\\[{\"node\":\"zed\",\"run_id\":\"$id\",\"trigger\":\"manual\"" "$T/s1.http.json" ||
    fail "/status of alpha shows no run: $(cat "$T/s1.http.json")"
mkdir -p "$T/chrome"
timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
    --user-data-dir="$T/chrome" --virtual-time-budget=3000 --dump-dom "http://$addr/" \
    > "$T/page.html" 2>"$T/chrome.err" || fail "chromium --dump-dom: $(tail -n 5 "$T/chrome.err")"
python3 - "$T/page.html" "$id" <<'EOF' || fail "the page shows no running run: $(grep -o '<h2>Running now.*' "$T/page.html" | head -c 600)"
import re, sys
html = open(sys.argv[1]).read()
m = re.search(r'<table id="running">(.*?)</table>', html, re.S)
assert m, "no running table"
rows = re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)
cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[1], re.S)]
assert cells[0] == "long-export" and cells[1] == "zed" and cells[2].startswith("manual by "), cells
assert cells[5] == sys.argv[2], cells
EOF
note "  $row"
# Its end: its process group (the job's shell wrote its pid) is stopped.
kill -TERM -- "-$(ps -o pgid= -p "$(cat "$T/long.pid")" | tr -d ' ')" || fail "cannot stop the run"
for _ in $(seq 1 100); do
    st --json | grep -q '"running":\[{' || break
    sleep 0.05
done
st --json | grep -q '"running":\[{' && fail "a run still shows after it ended: $(st --json)"
st | grep -q '^running now:' && fail "status still shows a run: $(st)"

# ---------------------------------------------------------------------
note "2. the leader first, then the nodes by name; followers with the term; the job's zone"
term=$(st --json | sed 's/.*"leader":{"node":"zed","term":\([0-9]*\).*/\1/')
awk '/^NODE /{on=1; next} on && NF == 0 {exit} on {print $1}' "$T/s1.txt" | tr '\n' ' ' > "$T/order"
assert_eq "zed alpha mike " "$(cat "$T/order")" "the order of the nodes"
for n in alpha mike; do
    grep -qE "^$n +waiting +$term " "$T/s1.txt" || fail "$n's row does not show the term it follows ($term): $(grep "^$n" "$T/s1.txt")"
done
grep -qE '^long-export .* 20[0-9-]+T05:00:00Z \(20[0-9-]+T07:00:00\+02:00 Europe/Berlin\)$|^long-export .* 20[0-9-]+T06:00:00Z \(20[0-9-]+T07:00:00\+01:00 Europe/Berlin\)$' "$T/s1.txt" ||
    fail "the next run of long-export is not shown in its zone: $(grep '^long-export' "$T/s1.txt")"

# ---------------------------------------------------------------------
note "3. history says what started each run"
"$B" history -c "$T/alpha.yaml" long-export > "$T/h.txt" || fail "history long-export"
grep -qE "^[0-9TZ:-]+ +zed +[0-9]+ +manual by [^ ]+@[^ ]+ .* $id\$" "$T/h.txt" || fail "history of long-export: $(cat "$T/h.txt")"
"$B" history -c "$T/alpha.yaml" tick -n 1 | grep -qE "^[0-9TZ:-]+ +zed +[0-9]+ +schedule " ||
    fail "history of tick: $("$B" history -c "$T/alpha.yaml" tick -n 1)"

# ---------------------------------------------------------------------
note "4. without a leader, no next run is presented as planned"
for n in zed alpha mike; do kill -TERM "$(pid_of $n)"; done
for n in zed alpha mike; do wait_exit $n 10; done
st > "$T/s4.txt"; rc=$?
assert_eq 3 "$rc" "exit of status without a leader"
grep -qE '^tick .* none planned \(no leader\)$' "$T/s4.txt" || fail "status without a leader: $(cat "$T/s4.txt")"
grep -qE '^tick .*20[0-9-]+T[0-9:]+Z$' "$T/s4.txt" && fail "a next run presented as planned: $(grep '^tick' "$T/s4.txt")"

# ---------------------------------------------------------------------
note "5. a job on members: who runs it, capacity in use, the ticks waiting for room, the metrics"
cat > "$T/fleet-jobs.yaml" <<EOF
jobs:
  - {name: render, schedule: "*/2 * * * * *", concurrency: allow, catchup: 1h,
     run_on: {labels: [gpu]}, shell: "sleep 5"}
EOF
for n in lead gpu1; do
    extra=
    [ $n = gpu1 ] && extra='labels: [gpu, fast]
capacity: 1
'
    printf 'node: %s\nredis: %s\ngroup: visfleet\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 1s\njobs: %s\nhttp: {listen: "127.0.0.1:0"}\n%s' \
        $n "$REDIS_URL" "$T/fleet-jobs.yaml" "$extra" > "$T/$n.yaml"
    spawn $n "$B" run -c "$T/$n.yaml"
    wait_for_line "$T/$n.out" '"event":"(following|transition.*"to":"working")' 10 >/dev/null
done
wait_for_line "$T/lead.out" '"to":"working"' 5 >/dev/null
laddr=$(wait_for_line "$T/lead.out" '"event":"http_listening"' 5 | sed 's/.*"listen":"\([^"]*\)".*/\1/')
gaddr=$(wait_for_line "$T/gpu1.out" '"event":"http_listening"' 5 | sed 's/.*"listen":"\([^"]*\)".*/\1/')
# gpu1 (capacity 1) runs a tick for 5 s; the ticks every 2 s meanwhile
# wait, claimed, for it to have room (never offered to it while it is
# full), oldest first, and the leader lists them.
wait_for_line "$T/lead.out" '"event":"assigned".*"job":"render"' 15 >/dev/null || fail "render never offered"
fs() { "$B" status -c "$T/lead.yaml" "$@"; }
for _ in $(seq 1 80); do
    fs --json > "$T/f.json"
    grep -q '"reason":"room"' "$T/f.json" && grep -q '"assigned":1' "$T/f.json" && break
    sleep 0.1
done
python3 - "$T/f.json" <<'PY' || fail "status --json of the fleet: $(cat "$T/f.json")"
import json, sys
d = json.load(open(sys.argv[1]))
n = {x["node"]: x for x in d["nodes"]}
assert n["gpu1"]["capacity"] == 1 and n["gpu1"]["assigned"] == 1, n["gpu1"]
assert n["gpu1"]["labels"] == ["gpu", "fast"] and n["gpu1"]["accepting"] is True, n["gpu1"]
assert n["lead"]["labels"] == [] and n["lead"]["assigned"] == 0, n["lead"]
job = [j for j in d["jobs"] if j["name"] == "render"][0]
assert [r["node"] for r in job["running"]] == ["gpu1"], job["running"]
w = [x for x in d["waiting"] if x["job"] == "render"]
assert w and all(x["reason"] == "room" and x["limit"] is None for x in w), d["waiting"]
assert w[0]["scheduled_at"].endswith("Z") and w[0]["queued"] == len(w), w
assert all(o["job"] != "render" or o["node"] != "gpu1" for o in d["offers"]), d["offers"]
PY
fs > "$T/f.txt"
grep -qE '^gpu1 +waiting .* 1/1 +gpu,fast' "$T/f.txt" || fail "gpu1's row: $(cat "$T/f.txt")"
sed -n '/^waiting for a slot or a member with room/,/^$/p' "$T/f.txt" |
    grep -qE '^render +20[0-9-]+T[0-9:]+Z +a member with room ' ||
    fail "status lists no tick waiting for room: $(cat "$T/f.txt")"
sed -n '/^running now:/,/^$/p' "$T/f.txt" | grep -qE '^render +gpu1 +schedule ' || fail "status's running: $(cat "$T/f.txt")"
for _ in $(seq 1 80); do # the view reads the nodes every poll (1 s while watched)
    curl -s -m 5 "http://$laddr/status" > "$T/f.http.json"
    grep -q '"reason":"room"' "$T/f.http.json" && grep -q '"assigned":1' "$T/f.http.json" && break
    sleep 0.1
done
grep -q '"capacity":1,"assigned":1,"accepting":true,"labels":\["gpu","fast"\]' "$T/f.http.json" ||
    fail "/status: gpu1's capacity: $(cat "$T/f.http.json")"
grep -q '"waiting":\[{"job":"render"' "$T/f.http.json" || fail "/status: no tick waiting: $(cat "$T/f.http.json")"
curl -s -m 5 "http://$laddr/" > "$T/f.html"
grep -q '<td class="warn">1/1</td><td>gpu, fast</td>' "$T/f.html" ||
    fail "the page: gpu1's capacity: $(grep -o '<table id="nodes">.*' "$T/f.html" | head -c 800)"
grep -q '<table id="waiting">' "$T/f.html" && grep -q '<td>a member with room</td>' "$T/f.html" ||
    fail "the page shows no tick waiting for room"
curl -s -m 5 "http://$laddr/metrics" > "$T/f.lead.prom"
curl -s -m 5 "http://$gaddr/metrics" > "$T/f.gpu1.prom"
for f in lead gpu1; do
    promtool check metrics < "$T/f.$f.prom" > "$T/promtool.txt" 2>&1 || fail "promtool on $f: $(cat "$T/promtool.txt")"
done
grep -qx 'baton_fleet_capacity{node="gpu1"} 1' "$T/f.lead.prom" || fail "lead's metrics: no capacity of gpu1: $(grep fleet "$T/f.lead.prom")"
grep -qx 'baton_fleet_runs{node="gpu1"} 1' "$T/f.lead.prom" || fail "lead's metrics: gpu1's runs: $(grep fleet "$T/f.lead.prom")"
grep -qE '^baton_ticks_waiting\{job_name="render",reason="room"\} [1-9]' "$T/f.lead.prom" ||
    fail "lead's metrics: no tick waiting for room: $(grep ticks_waiting "$T/f.lead.prom")"
grep -qx 'baton_offers_reassigned_total{job_name="render"} 0' "$T/f.lead.prom" ||
    fail "lead's metrics: an offer moved (none should go to a full member): $(grep reassigned "$T/f.lead.prom")"
grep -qE '^baton_dispatch_seconds_count\{job_name="render"\} [1-9]' "$T/f.gpu1.prom" ||
    fail "gpu1's metrics: no dispatch delay: $(grep dispatch "$T/f.gpu1.prom")"
grep -q '^baton_dispatch_seconds_count{job_name="render"}' "$T/f.lead.prom" && fail "the leader counts a dispatch it did not run"
sleep 3 # a run ended
"$B" history -c "$T/lead.yaml" render -n 5 > "$T/fh.txt"
grep -qE '^[0-9TZ:-]+ +gpu1 +[0-9]+ +schedule +[0-9TZ:.-]+ \(dispatched [0-9.]+m?s\) ' "$T/fh.txt" ||
    fail "history of render: $(cat "$T/fh.txt")"
"$B" history -c "$T/lead.yaml" render -n 5 --json | grep -q '"node":"gpu1".*"dispatch_ms":[0-9]' ||
    fail "history --json of render: no dispatch_ms"
for n in lead gpu1; do kill -TERM "$(pid_of $n)"; done
for n in lead gpu1; do wait_exit $n 10; done
note "ok"
