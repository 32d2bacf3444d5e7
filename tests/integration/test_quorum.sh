# test_quorum.sh -- locks over a Redlock quorum of five independent
# redis-servers (no persistence) on loopback, with tests/lib/quorum_check:
#   0. URLs a quorum refuses; masters up for less than max_ttl do not count
#   1. lock/unlock, fences, extend, auto-renewal, a waiter, what is refused
#   2. two masters SIGKILLed: locking goes on, fences still increase
#   3. a third killed: an acquire fails with BATON_EIO "no quorum"
#   4. the three restarted empty: quarantined for max_ttl, then counted, and
#      the fence still increases (the two survivors kept the counter)
#   5. one master SIGSTOPped: acquire latency bounded by node_timeout
#   6. a holder's masters restarted without persistence: no double grant
#      during the quarantine, for a new client (uptime) and for the holder's
#      own client (run id changed)
#   7. four processes contend for one key while a master is killed: no two
#      grants overlap, fences strictly increase in grant order
#   8. the masters given as a list (baton.yaml's redis:, baton lock's --url
#      repeated): one quorum; lists that are no quorum refused precisely
#   9. a `baton pause` that only a minority of masters took fails (exit 69)
#      and is undone on them
# The supervisor over a quorum: test_quorum_supervisor.sh.
. "$BATON_TESTS_DIR/lib/harness.sh"
CHECK=${BATON_QUORUM_CHECK:?BATON_QUORUM_CHECK is the path of tests/lib/quorum_check}
B=$BATON_BIN
MAX_TTL=3000
NODE_TIMEOUT=150
MP=() MPID=()

start_master() { # i [port]
    if [ -n "${2:-}" ]; then redis_start_port "$2"; else redis_start; fi
    MP[$1]=$REDIS_PORT MPID[$1]=$REDIS_PID
}
sleep_past() { # since_ms ms: sleeps until ms after since_ms
    local left=$(( $1 + $2 - $(now_ms) ))
    [ "$left" -le 0 ] || sleep "$(awk "BEGIN{print $left / 1000}")"
}
kill_master() { kill -KILL "${MPID[$1]}"; wait "${MPID[$1]}" 2>/dev/null; return 0; }

t0=$(now_ms)
for i in 0 1 2 3 4; do start_master $i; done
URL="redis-quorum://127.0.0.1:${MP[0]},127.0.0.1:${MP[1]},127.0.0.1:${MP[2]},127.0.0.1:${MP[3]},127.0.0.1:${MP[4]}/0?max_ttl=$MAX_TTL&node_timeout=$NODE_TIMEOUT"
started=$(now_ms)
note "5 masters up in $((started - t0)) ms"

# ---- 0. URLs, and masters too young to count -----------------------------------
out=$("$B" lock --url "redis-quorum://127.0.0.1:${MP[0]},127.0.0.1:${MP[1]}" k -- true 2>&1)
[[ $out == *"odd number of masters, 3 to 9 (this one names 2)"* ]] || fail "2 masters accepted: $out"
out=$("$B" lock --url "redis-quorum://127.0.0.1:${MP[0]},127.0.0.1:${MP[1]},127.0.0.1:${MP[2]}?verify=none" k -- true 2>&1)
[[ $out == *'unknown URL parameter "verify"'* && $out == *"max_ttl="* ]] || fail "verify= on redis-quorum: $out"
out=$("$CHECK" "$URL" try young)
young=$(( $(now_ms) - t0 ))
if [ "$young" -lt $((MAX_TTL - 200)) ]; then
    [[ $out == "EIO: "*"no quorum"*"quarantined"* ]] || fail "masters up < max_ttl counted: $out"
    note "fresh masters not counted before max_ttl: $out"
else
    note "NOT CHECKED: masters up < max_ttl not counted (they took $young ms to start and be asked)"
fi
sleep_past "$started" $((MAX_TTL + 1100))

# ---- 1. the lock API --------------------------------------------------------------
"$CHECK" "$URL" basic >"$T/basic.out" 2>&1 ||
    fail "quorum_check basic: $(grep -m1 FAIL "$T/basic.out" || tail -n 3 "$T/basic.out")"
note "lock API: $(grep -c '^ok' "$T/basic.out") checks passed"
out=$("$B" lock --url "$URL" --ttl 2s clikey -- sh -c 'echo "fence=$BATON_FENCE"' 2>&1)
[[ $out == *"fence="[1-9]* ]] || fail "baton lock --url redis-quorum://: $out"
note "baton lock over the quorum: $out"

"$CHECK" "$URL" cycles k 20 >"$T/c1.out" 2>&1 || fail "20 cycles: $(cat "$T/c1.out")"
read -r _ f1 l1 <"$T/c1.out"

# ---- 2. two masters down ---------------------------------------------------------
kill_master 0; kill_master 1
"$CHECK" "$URL" cycles k 10 >"$T/c2.out" 2>&1 || fail "2 of 5 down: $(cat "$T/c2.out")"
read -r _ f2 l2 <"$T/c2.out"
[ "$f2" -gt "$l1" ] || fail "fence went back with 2 masters down: $f2 after $l1"
note "2 of 5 masters killed: 10 cycles, fences $f2..$l2 (before: $f1..$l1)"

# ---- 3. three down ----------------------------------------------------------------
kill_master 2
a=$(now_ms)
out=$("$CHECK" "$URL" try k)
took=$(( $(now_ms) - a ))
[[ $out == "EIO: "*"no quorum: 2 of 5 masters counted in the fence read (3 needed)"*"${MP[0]}"* ]] ||
    fail "3 of 5 down: $out"
note "3 of 5 killed: $out (process run in $took ms)"

# ---- 4. restarted empty: quarantined, then counted ----------------------------------
for i in 0 1 2; do start_master $i "${MP[$i]}"; done
back=$(now_ms)
out=$("$CHECK" "$URL" try k)
[[ $out == "EIO: "*"quarantined"* ]] || fail "restarted masters counted at once: $out"
sleep_past "$back" $((MAX_TTL + 1100))
"$CHECK" "$URL" cycles k 5 >"$T/c3.out" 2>&1 || fail "after the quarantine: $(cat "$T/c3.out")"
read -r _ f3 l3 <"$T/c3.out"
[ "$f3" -gt "$l2" ] || fail "fence went back after restarts without persistence: $f3 after $l2"
note "3 masters restarted empty: counted after max_ttl, fences $f3..$l3 (> $l2)"

# ---- 5. a stopped master ------------------------------------------------------------
kill -STOP "${MPID[4]}"
"$CHECK" "$URL" latency lat 40 >"$T/lat.out" 2>"$T/lat.err" || fail "latency: $(cat "$T/lat.out")"
kill -CONT "${MPID[4]}"
read -r _ maxms _ p50 _ errs <"$T/lat.out"
[ "$errs" -eq 0 ] || fail "errors with one master stopped: $(head -n 3 "$T/lat.err")"
# A request waits node_timeout for the stopped master at most; then it is
# left alone for a while (2 node_timeouts, doubling up to 10: 1.5 s), so
# one acquire in a window pays it, once.
bound=$((2 * NODE_TIMEOUT + 200))
[ "$maxms" -le "$bound" ] || fail "acquire took $maxms ms with a master stopped (bound $bound)"
note "1 master SIGSTOPped: acquire p50 $p50 ms, max $maxms ms (node_timeout $NODE_TIMEOUT, bound $bound)"

# ---- 6. no double grant through restarted masters ---------------------------------------
"$CHECK" "$URL" hold dg 2900 "$T/go" >"$T/hold.out" 2>"$T/hold.err" &
PROC_PID[hold]=$!
for _ in $(seq 1 300); do [ -s "$T/hold.out" ] && break; sleep 0.01; done
read -r _ fa <"$T/hold.out" || fail "holder: $(cat "$T/hold.out" "$T/hold.err")"
[[ $fa =~ ^[0-9]+$ ]] || fail "holder: $(cat "$T/hold.out")"
for i in 0 1 2; do kill_master $i; done
for i in 0 1 2; do start_master $i "${MP[$i]}"; done
back=$(now_ms)
out=$("$CHECK" "$URL" try dg)
[[ $out != granted* ]] || fail "DOUBLE GRANT: dg granted ($out) while fence $fa holds it"
[[ $out == *"quarantined"* ]] || fail "new client during the quarantine: $out"
touch "$T/go"
wait "${PROC_PID[hold]}"
unset 'PROC_PID[hold]'
own=$(tail -n 1 "$T/hold.out")
[[ $own == "EIO: "*"quarantined"* ]] || fail "the holder's client counted restarted masters: $own"
note "holder's 3 masters restarted empty: a new client: $out"
sleep_past "$back" $((MAX_TTL + 1100))
out=$("$CHECK" "$URL" try dg)
[[ $out == "granted "* ]] || fail "after the quarantine: $out"
[ "${out#granted }" -gt "$fa" ] || fail "fence after the quarantine ${out#granted } <= $fa"
note "after max_ttl: $out (> $fa)"

# ---- 7. contention, a master killed midway ---------------------------------------------
for n in 1 2 3 4; do
    "$CHECK" "$URL" contend race 4 "$T/ledger" >"$T/race$n.out" 2>"$T/race$n.err" &
    PROC_PID[race$n]=$!
done
sleep 2
kill_master 3
for n in 1 2 3 4; do wait "${PROC_PID[race$n]}" || fail "contender $n: $(cat "$T/race$n.out")"; done
grants=$(wc -l <"$T/ledger")
res=$(sort -n "$T/ledger" | awk '
    NR > 1 && $1 < end { overlap++ }
    NR > 1 && $3 <= fence { back++ }
    $4 != 1 { invalid++ }
    { end = $2; fence = $3 }
    END { printf "%d %d %d", overlap, back, invalid }')
read -r overlap back invalid <<<"$res"
errs=$(cat "$T"/race*.err | wc -l)
[ "$grants" -ge 20 ] || fail "only $grants grants in 4 s of contention"
[ "$overlap" -eq 0 ] || fail "$overlap overlapping grants"
[ "$back" -eq 0 ] || fail "$back fences not above the previous grant's"
[ "$invalid" -eq 0 ] || fail "$invalid critical sections ended past validity"
note "4 processes x 4 s, master killed at 2 s: $grants grants, 0 overlaps, fences increasing, $errs acquire errors"


# ---- 8. a quorum as a list of plain URLs ---------------------------------------------
printf 'jobs: []\n' >"$T/jobs.yaml"
printf 'node: n\nredis:\n  - redis://127.0.0.1:%s/0\n  - redis://127.0.0.1:%s/0\n  - redis://127.0.0.1:%s/0\nlease: {ttl: 2s}\nredis_timeout: 200ms\njobs: jobs.yaml\n' \
    "${MP[0]}" "${MP[1]}" "${MP[2]}" >"$T/list.yaml"
out=$("$B" check -c "$T/list.yaml" 2>&1) || fail "baton check on a list of masters: $out"
[[ $out == *"redis: redis-quorum://127.0.0.1:${MP[0]},127.0.0.1:${MP[1]},127.0.0.1:${MP[2]}/0"* ]] ||
    fail "a list of masters is not one quorum: $out"
printf 'node: n\nredis:\n  - redis://127.0.0.1:%s/0\n  - redis://127.0.0.1:%s/1\n  - redis://127.0.0.1:%s/0\njobs: jobs.yaml\n' \
    "${MP[0]}" "${MP[1]}" "${MP[2]}" >"$T/mixed.yaml"
out=$("$B" check -c "$T/mixed.yaml" 2>&1) && fail "masters with different databases accepted"
[[ $out == *"mixed.yaml:4:5: redis: redis://127.0.0.1:${MP[1]}/1: not the same database as the first master"* ]] ||
    fail "mixed databases: $out"
note "a list with one master on db 1: $out"
printf 'node: n\nredis: ["redis://127.0.0.1:%s", "redis://127.0.0.1:%s"]\njobs: jobs.yaml\n' \
    "${MP[0]}" "${MP[1]}" >"$T/two.yaml"
out=$("$B" check -c "$T/two.yaml" 2>&1) && fail "a list of two masters accepted"
[[ $out == *"two.yaml:2:8: redis: invalid URL: a quorum has an odd number of masters, 3 to 9 (this one names 2)"* ]] ||
    fail "two masters: $out"
printf 'node: n\nredis: "%s"\nlease: {ttl: 5s}\njobs: jobs.yaml\n' "$URL" >"$T/ttl.yaml"
out=$("$B" check -c "$T/ttl.yaml" 2>&1) && fail "a lease above max_ttl accepted"
[[ $out == *"ttl.yaml:3:14: lease.ttl (5s) must be at most the quorum's max_ttl (3s)"* ]] ||
    fail "lease above max_ttl: $out"
out=$("$B" lock --url "redis://127.0.0.1:${MP[0]}" --url "redis://127.0.0.1:${MP[1]}" \
    --url "redis://127.0.0.1:${MP[2]}" --url "redis://127.0.0.1:${MP[3]}" \
    --url "redis://127.0.0.1:${MP[4]}" --ttl 2s listkey -- sh -c 'echo "fence=$BATON_FENCE"' 2>&1) &&
    fail "baton lock --url x5 counted masters up for less than the default max_ttl (60 s): $out"
# Plain URLs carry no max_ttl: the default (60 s) keeps this young quorum out,
# which the error shows, naming the one quorum the five URLs make.
all="127.0.0.1:${MP[0]},127.0.0.1:${MP[1]},127.0.0.1:${MP[2]},127.0.0.1:${MP[3]},127.0.0.1:${MP[4]}"
[[ $out == *"listkey: redis-quorum://$all/0: no quorum: 0 of 5 masters counted"*"quarantined"* ]] ||
    fail "baton lock --url x5: $out"
out=$("$B" lock --url "redis://127.0.0.1:${MP[0]}" --url "rediss://127.0.0.1:${MP[1]}" \
    --url "redis://127.0.0.1:${MP[2]}" k -- true 2>&1) && fail "mixed schemes accepted"
[[ $out == *"--url (the 2nd): rediss://127.0.0.1:${MP[1]}/0: not the same scheme (redis:// and rediss:// mixed) as the first master"* ]] ||
    fail "mixed schemes: $out"
note "baton lock --url given 5 times: one quorum; mixed schemes: $out"

# ---- 9. an operator command that a minority took is undone there --------------------
# Masters 0 and 1 refuse scripts (ACL): of the 4 up (3 is down), 2 take the
# pause, fewer than 3; the command fails and they give it back.
printf 'node: n\ngroup: pz\nredis: "%s"\nlease: {ttl: 2s}\nredis_timeout: 400ms\njobs: jobs.yaml\n' "$URL" >"$T/pz.yaml"
for i in 0 1; do redis-cli -p "${MP[$i]}" ACL SETUSER default -evalsha -eval >/dev/null; done
out=$("$B" pause -c "$T/pz.yaml" --reason half --all 2>&1)
rc=$?
for i in 0 1; do redis-cli -p "${MP[$i]}" ACL SETUSER default +@all >/dev/null; done
[ "$rc" -eq 69 ] || fail "a pause that 2 of 5 masters took: exit $rc (expected 69): $out"
[[ $out == *"applied by 2 of 5 masters (3 needed)"*"${MP[0]}: redis error: NOPERM"* ]] ||
    fail "a pause that 2 of 5 masters took: $out"
for i in 2 4; do
    v=$(redis-cli -p "${MP[$i]}" hget 'baton:{pz}:paused' '*')
    [[ $v == *'"state":"cleared"'* ]] || fail "master $i kept the pause a minority took: $v"
    # ... and its record in the history with it
    assert_eq 0 "$(redis-cli -p "${MP[$i]}" xlen 'baton:{pz}:pauses:*')" "master $i: records of the undone pause"
done
out=$("$B" pause -c "$T/pz.yaml" --reason whole --all 2>&1) || fail "baton pause on 4 of 5 masters: $out"
for i in 0 1 2 4; do
    v=$(redis-cli -p "${MP[$i]}" hget 'baton:{pz}:paused' '*')
    [[ $v == *'"state":"paused"'*'"reason":"whole"'* ]] || fail "master $i missed the pause: $v"
    assert_eq 1 "$(redis-cli -p "${MP[$i]}" xlen 'baton:{pz}:pauses:*')" "master $i: records of the pause"
done
# Written to four masters, shown once.
printf 'jobs:\n  - name: j\n    schedule: "@daily"\n    shell: "true"\n' >"$T/jobs.yaml"
out=$("$B" history -c "$T/pz.yaml" j 2>&1) || fail "history over the quorum: $out"
assert_eq 1 "$(grep -c 'paused every job by .*: whole$' <<<"$out")" "the pause in the history over the quorum: $out"
grep -q 'half' <<<"$out" && fail "the undone pause is in the history: $out"
note "a pause 2 of 5 took: exit 69, undone there (its record too); again on 4: held, shown once"
note "total $(( $(now_ms) - t0 )) ms"
