# test_fencing.sh -- jobs die at the lease deadline even when the
# supervisor cannot act: its shim enforces the deadline on its own.
#
# Two supervisors; the leader's `baton run` is SIGSTOPped (a debugger, a
# cgroup freeze of baton alone, a VM stall of that process) for longer than
# the lease while its job runs. The job, which appends "node time" to a
# ledger every 20 ms, must be dead before the other node's copy starts
# (margin > 0), in every round. Without the fence the frozen supervisor
# cannot kill it, and it runs on both nodes for as long as the freeze.
# Then the same for `baton lock`: its command's shim enforces the lease.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
ROUNDS=${FENCING_ROUNDS:-3}
redis_start

cat > "$T/jobs.yaml" <<EOF
jobs:
  - name: writer
    schedule: "* * * * * *"
    catchup: 0
    shell: "while :; do echo \$BATON_NODE \$(date +%s%N) >> $T/ledger.txt; sleep 0.02; done"
EOF
declare -A GEN=()
start() {
    local n=$1
    GEN[$n]=$(( ${GEN[$n]:-0} + 1 ))
    printf 'node: %s\nredis: %s\ngroup: fence\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 1s\njobs: %s\n' \
        "$n" "$REDIS_URL" "$T/jobs.yaml" > "$T/$n.yaml"
    spawn "$n.${GEN[$n]}" "$B" run -c "$T/$n.yaml"
}
pid() { pid_of "$1.${GEN[$1]}"; }
leader() { leader_of fence; }

start f1; sleep 0.3; start f2
worst=""
for round in $(seq 1 "$ROUNDS"); do
    for _ in $(seq 1 500); do l=$(leader); [ -n "$l" ] && break; sleep 0.01; done
    [ -n "$l" ] || fail "no leader"
    o=f1; [ "$l" = f1 ] && o=f2
    # Wait for the leader's writer to run, then freeze the leader alone.
    n0=$(grep -c "^$l " "$T/ledger.txt" 2>/dev/null || echo 0)
    for _ in $(seq 1 300); do
        [ "$(grep -c "^$l " "$T/ledger.txt" 2>/dev/null || echo 0)" -gt "$n0" ] && break; sleep 0.01
    done
    : > "$T/ledger.txt"
    kill -STOP "$(pid "$l")"; frozen=$(now_ms)
    # The other node leads after the lease ends and starts its writer.
    for _ in $(seq 1 800); do grep -q "^$o " "$T/ledger.txt" && break; sleep 0.01; done
    grep -q "^$o " "$T/ledger.txt" || fail "round $round: $o never ran the job"
    sleep 1
    a_last=$(awk -v n="$l" '$1 == n {print $2}' "$T/ledger.txt" | sort -n | tail -n1)
    b_first=$(awk -v n="$o" '$1 == n {print $2}' "$T/ledger.txt" | sort -n | head -n1)
    [ -n "$a_last" ] || a_last=$(( frozen * 1000000 ))
    margin=$(( (b_first - a_last) / 1000000 ))
    dead_after=$(( a_last / 1000000 - frozen ))
    note "  round $round: $l frozen; its job died $dead_after ms later, $margin ms before $o's copy started"
    [ "$margin" -gt 0 ] || fail "round $round: the job ran on both nodes for $(( -margin )) ms"
    [ -z "$worst" ] || [ "$margin" -lt "$worst" ] && worst=$margin
    # Thawed, the old leader finds its lease gone and follows.
    kill -CONT "$(pid "$l")"
    wait_for_line "$T/$l.${GEN[$l]}.out" '"to":"waiting"' 5 >/dev/null
    sleep 0.5
done
for n in f1 f2; do kill -TERM "$(pid $n)"; done
for n in f1 f2; do wait_exit "$n.${GEN[$n]}" 10; done
note "ok: worst margin $worst ms over $ROUNDS rounds"

# ---------------------------------------------------------------------
note "baton lock: the holder frozen past its lease; its command dies before the next holder's starts"
worst=""
for round in $(seq 1 "$ROUNDS"); do
    : > "$T/lock.txt"
    writer="while :; do echo \$W \$(date +%s%N) >> $T/lock.txt; sleep 0.02; done"
    spawn "la.$round" env W=a "$B" lock --url "$REDIS_URL" --ttl 2s fence:lock -- sh -c "$writer"
    for _ in $(seq 1 300); do grep -q '^a ' "$T/lock.txt" && break; sleep 0.01; done
    grep -q '^a ' "$T/lock.txt" || fail "round $round: the first holder's command never ran"
    spawn "lb.$round" env W=b "$B" lock --url "$REDIS_URL" --ttl 2s fence:lock -- sh -c "$writer"
    sleep 0.2
    kill -STOP "$(pid_of "la.$round")"; frozen=$(now_ms)
    for _ in $(seq 1 800); do grep -q '^b ' "$T/lock.txt" && break; sleep 0.01; done
    grep -q '^b ' "$T/lock.txt" || fail "round $round: the second holder never ran its command"
    sleep 0.5
    a_last=$(awk '$1 == "a" {print $2}' "$T/lock.txt" | sort -n | tail -n1)
    b_first=$(awk '$1 == "b" {print $2}' "$T/lock.txt" | sort -n | head -n1)
    margin=$(( (b_first - a_last) / 1000000 ))
    note "  round $round: the holder frozen; its command died $(( a_last / 1000000 - frozen )) ms later, $margin ms before the next holder's started"
    [ "$margin" -gt 0 ] || fail "round $round: both commands ran at once for $(( -margin )) ms"
    [ -z "$worst" ] || [ "$margin" -lt "$worst" ] && worst=$margin
    kill -TERM "$(pid_of "lb.$round")"; wait_exit "lb.$round" 5
    # Thawed, the first holder finds its command gone and the lock lost.
    kill -CONT "$(pid_of "la.$round")"; wait_exit "la.$round" 5
    assert_eq 70 "$EXIT_CODE" "round $round: the thawed holder's exit status (lock lost)"
done
note "ok: baton lock's worst margin $worst ms over $ROUNDS rounds"

note "a stop sent to the shim's group before its command exists: the command never starts"
# Found by test_hooks under ASan at load 7: a job's 300 ms timeout came
# before its shim had started the command; the TERM reached the shim alone
# (it blocks every signal), the command started after it and ran until the
# KILL of the grace. Here the shim waits for its go (a prepared start) when
# its group gets the TERM; the go comes after. The shim must end by the
# TERM without starting the command (touch).
python3 - "$(dirname "$B")/baton-shim" "$T/shim-ran" > "$T/shim.txt" <<'EOF'
import os, signal, sys, time
shim, ran = sys.argv[1], sys.argv[2]
fence_r, fence_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
go_r, go_w = os.pipe2(os.O_CLOEXEC)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    fence_r, go_r = os.dup(fence_r), os.dup(go_r)  # above 4: dup2 onto itself keeps CLOEXEC
    os.dup2(fence_r, 3)
    os.dup2(go_r, 4)
    os.execv(shim, ["baton-shim", "2", str(os.getppid()), "fg", "", "", "0", "0",
                    "/usr/bin/touch", "touch", ran])
# Until the shim waits for its go (it then has every signal blocked).
for _ in range(500):
    with open("/proc/%d/status" % pid) as f:
        if any(l.startswith("SigBlk:") and l.split()[1] != "0000000000000000" for l in f):
            break
    time.sleep(0.01)
os.killpg(pid, signal.SIGTERM)
time.sleep(0.2)
os.write(go_w, b"x")
_, st = os.waitpid(pid, 0)
print("signal" if os.WIFSIGNALED(st) else "exit",
      os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st))
EOF
[ ! -e "$T/shim-ran" ] || fail "the shim started its command after its group got a TERM"
assert_eq "signal 15" "$(cat "$T/shim.txt")" "how the shim ended"
note "ok: the shim ended by the TERM, its command never started"

note "a prepared start: the command's process waits forked, and only a go starts it"
# The shim forks the command's process when it is prepared (it changes
# directory first); at the go only its wake-up and the exec remain. Four
# cases, each one shim driven as baton drives it:
#   go      the command runs in its workdir; the shim exits as it did
#   nogo    the go pipe ends without a go: 125, nothing ran, nothing said
#   badwd   the workdir is gone: nothing before the go, 126 and the reason
#           after it
#   stop    the fence's stop point comes first: 125, nothing ran
python3 - "$(dirname "$B")/baton-shim" "$T" > "$T/prep.txt" <<'EOF2'
import os, struct, sys, time
shim, tmp = sys.argv[1], sys.argv[2]

def case(name, workdir, act):
    fence_r, fence_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    go_r, go_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    ran = os.path.join(tmp, name + ".ran")
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        fence_r, go_r = os.dup(fence_r), os.dup(go_r)
        os.dup2(fence_r, 3)
        os.dup2(go_r, 4)
        os.dup2(err_w, 2)
        os.execv(shim, ["baton-shim", "2", str(os.getppid()), "fg", workdir, "", "0", "0",
                        "/bin/sh", "sh", "-c", "pwd > " + ran + "; exit 7"])
    os.close(err_w)
    # Until the command's process exists (forked, waiting for its go).
    for _ in range(500):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                if f.read().split():
                    break
        except OSError:
            pass
        time.sleep(0.01)
    else:
        print(name, "no process forked")
    time.sleep(0.1)
    early = os.path.exists(ran)
    act(go_w, fence_w)
    _, st = os.waitpid(pid, 0)
    err = os.read(err_r, 4096).decode().strip()
    out = open(ran).read().strip() if os.path.exists(ran) else "-"
    print(name, "early" if early else "waited",
          "exit %d" % os.WEXITSTATUS(st) if os.WIFEXITED(st) else "signal %d" % os.WTERMSIG(st),
          out, err or "-")

def go(g, f):
    os.write(g, b"g")
    os.close(g)

def nogo(g, f):
    os.close(g)

def stop(g, f):
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    os.write(f, struct.pack("qq", now + 100 * 1000000, now + 300 * 1000000))
    time.sleep(0.5)
    os.close(g)

case("go", tmp, go)
case("nogo", tmp, nogo)
case("badwd", os.path.join(tmp, "gone"), go)
case("badwd-nogo", os.path.join(tmp, "gone"), nogo)
case("stop", tmp, stop)
EOF2
cat "$T/prep.txt" >&2
assert_eq "go waited exit 7 $T -
nogo waited exit 125 - -
badwd waited exit 126 - baton: cannot change to the job's workdir $T/gone: No such file or directory
badwd-nogo waited exit 125 - -
stop waited exit 125 - -" "$(cat "$T/prep.txt")" "the prepared starts"
note "ok: each prepared command waited for its go, and ran only after one"
