# test_tour.sh -- the README's "60-second tour", run exactly as written: the
# first ```sh block after its heading, from a directory laid out like the
# clone (build/release/baton and config/), as a newcomer would after the
# demo. Its output must show what the README says it shows: the fencing
# token, exit 75 while the lock is held, the DST-aware fire times, a valid
# check, a leader in status, recorded runs, a handover, readable log lines,
# and the supervisors exiting 0.
. "$BATON_TESTS_DIR/lib/harness.sh"
readme=$BATON_SOURCE_DIR/README.md
awk '/^## A 60-second tour/{on=1; next} on && /^```sh$/{code=1; next} code && /^```$/{exit} code' \
    "$readme" >"$T/tour.sh"
[ -s "$T/tour.sh" ] || fail "no sh block under '## A 60-second tour' in README.md"
grep -q 'baton lock --wait 0' "$T/tour.sh" || fail "the tour lost its lock example"

# The clone as the tour expects it, after `bash examples/demo.sh`.
mkdir -p "$T/clone/build/release" "$T/tmp"
ln -s "$BATON_BIN" "$T/clone/build/release/baton"
ln -s "$BATON_SOURCE_DIR/config" "$T/clone/config"
(
    cd "$T/clone" || exit 1
    # Its own session, so that whatever it leaves running can be stopped by
    # its process group; mktemp -d goes under $T.
    TMPDIR=$T/tmp exec setsid bash "$T/tour.sh"
) >"$T/tour.out" 2>"$T/tour.err" </dev/null &
PROC_PID[tour]=$!
tour_pgid=$!
# Keeps the exit status it was called with: harness_cleanup, which runs
# after it, exits with that status (a failed assertion must fail the test).
tour_cleanup() {
    local rc=$?
    kill -TERM -- "-$tour_pgid" 2>/dev/null
    local sock
    for sock in "$T"/tmp/*/redis.sock; do
        [ -S "$sock" ] || continue
        pid=$(redis-cli -s "$sock" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
    done
    return "$rc"
}
trap 'tour_cleanup; harness_cleanup' EXIT
wait_exit tour 60
out=$(cat "$T/tour.out")
assert_eq 0 "$EXIT_CODE" "the tour's exit status (stderr: $(head -c 500 "$T/tour.err"))"

has() { grep -qE -- "$1" <<<"$out" || fail "the tour's output lacks /$1/: $out"; }
# Fences and terms are max(last + 1, Redis's TIME in 10 us units): 15 digits.
has '^fence [0-9]{15}$'
has '^exit 75$'
# 02:30 in Berlin: on the 28th (CET), then in the spring-forward gap (03:00 CEST), then CEST.
assert_eq "2026-03-28T01:30:00Z
2026-03-29T01:00:00Z
2026-03-30T00:30:00Z" "$(grep -E '^2026-03-[0-9]{2}T[0-9:]{8}Z$' <<<"$out")" "baton next in the tour"
has '^ok: a\.yaml and .*/config/jobs\.yaml are valid \(5 jobs, 1 disabled\)$'
has '^leader:  [abc] \(term [0-9]{15}, lease [0-9.]+(ms|s) left\)$'
term1=$(sed -nE 's/^leader:  [abc] \(term ([0-9]+),.*/\1/p' <<<"$out" | head -n1)
has '^job hello: the last [0-9]+ records?, newest first$'
has '^hello from [abc]$'
# The step-down hands over: a new term, above the one status showed.
has "^leader [abc] \(term $term1\) stepped down; ([abc] leads now \(term [0-9]{15}\)|no leader yet)$"
term2=$(sed -nE 's/^leader [abc] \(term [0-9]+\) stepped down; [abc] leads now \(term ([0-9]+)\)$/\1/p' <<<"$out")
[ -z "$term2" ] || [ "$term2" -gt "$term1" ] || fail "the term after the step-down ($term2) is not above $term1"
has 'INFO  [abc] (job_|transition|following|lease_)'
# On stderr, only the refusal the tour shows, and what trigger --wait says
# of its request (requested, where it stands, how it ended).
err=$(cat "$T/tour.err")
assert_eq "baton: lock: report:daily: held by another owner" \
    "$(grep -v '^baton: trigger: hello: ' <<<"$err")" "the tour's stderr"
grep -qE '^baton: trigger: hello: requested \(id [^)]+\)$' <<<"$err" || fail "trigger's request on stderr: $err"
grep -qE '^baton: trigger: hello: ok \(exit 0\)( in [0-9.]+m?s)? on [abc] \(run [^)]+\)$' <<<"$err" \
    || fail "trigger --wait's outcome on stderr: $err"
for n in a b c; do
    log=$(ls "$T"/tmp/*/$n.log 2>/dev/null | head -n1)
    [ -n "$log" ] || fail "no $n.log"
    tail -n1 "$log" | grep -q '"event":"stopped"' || fail "supervisor $n did not stop gracefully: $(tail -n2 "$log")"
done
# The tour stops its redis-server itself.
for sock in "$T"/tmp/*/redis.sock; do
    [ -S "$sock" ] && redis-cli -s "$sock" ping >/dev/null 2>&1 && fail "the tour left redis-server running"
done
note "ok"
