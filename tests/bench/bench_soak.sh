# bench_soak.sh -- the soak (issue 12): three supervisors and fifty jobs for
# an hour, a fault of the matrix drawn at random every 30 s (a black-hole
# partition of the leader, SIGSTOP of the leader or of Redis, Redis
# restarts with and without persistence, FLUSHALL, wall-clock steps), the
# ledger checks after every fault (no tick twice, none missing, fences
# never down, no two runs of the span job overlapping), and at the end one
# JSON object: each supervisor's RSS and descriptors (first, last, max and
# the least-squares slope per hour after the first tenth), Redis's memory
# (history trimmed to 300 runs a job, so it levels off: the slope over the
# second half) and the ticks run and recorded. The harness is
# tests/integration/test_faults.sh (FAULTS_SOAK_SECONDS). The lease is 3 s
# (FAULTS_TTL_MS): fifty jobs starting at once on a loaded 2-core machine
# take longer than a 1 s lease's renewal slack. The clock steps forward 30 s
# (fifty jobs catching up 2 min at once is the matrix's case), and a fault
# has 2 min to be caught up: the leader starts some 35 runs a second on a
# loaded machine, and a `forbid` job's backlog runs one tick at a time.
#
# usage: bench_soak.sh [--smoke] [--seconds S] [--jobs N] [--seed N]
# Needs BATON_BIN, BATON_TESTS_DIR and BATON_BLACKHOLE.
set -u
secs=3600 jobs=50 seed=$$ every=30
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) secs=40 jobs=10 every=15 ;;
    --seconds) secs=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --seed) seed=$2; shift ;;
    *) echo "usage: bench_soak.sh [--smoke] [--seconds S] [--jobs N] [--seed N]" >&2; exit 2 ;;
    esac
    shift
done
[ "$jobs" -ge 2 ] || { echo "bench_soak.sh: --jobs must be at least 2 (the ledger and span jobs)" >&2; exit 2; }
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# A failed hour is kept for a look (every log, ledger and history snapshot).
export HARNESS_SAVE=${HARNESS_SAVE:-${TMPDIR:-/tmp}/baton-soak-failed.$$}
echo "bench_soak.sh: a failure's files are kept in $HARNESS_SAVE" >&2
FAULTS="partition sigstop_leader sigstop_redis_short sigstop_redis_long restart_aof restart_nopersist flushall clock_back clock_forward" \
FAULTS_SOAK_SECONDS=$secs FAULTS_SOAK_EVERY=$every FAULTS_SOAK_SEED=$seed FAULTS_JOBS=$(( jobs - 2 )) \
FAULTS_HISTORY=300 FAULTS_TTL_MS=${FAULTS_TTL_MS:-3000} FAULTS_SOAK_REPORT=$report \
FAULTS_STEP_FORWARD=30 FAULTS_CATCHUP_TIMEOUT=120 \
    bash "$BATON_TESTS_DIR/integration/test_faults.sh" >&2 || exit 1
cat "$report"
