# bench_chaos.sh -- the chaos test (tests/integration/test_chaos.sh) at
# benchmark length: SECONDS per concurrency policy (default 300), all three
# policies; prints one JSON object per policy (ticks run, skipped,
# superseded, doubled 0, missing 0, fence regressions 0, faults injected).
# The test itself fails on any violation, so a printed line is a pass.
#
# --quorum: the same over a Redlock quorum of five masters (the test's
# CHAOS_QUORUM mode: one master restarted instead of the server).
#
# --run-on leader|any|label|all: where the ledger job runs (test_chaos.sh's
# CHAOS_RUN_ON: on members, 0 over capacity besides; all: once per (node,
# tick), every node in the group around a tick ran it or a record says
# why); none: the three policies on the leader, then a short forbid round
# on any, on a label and on all.
#
# usage: bench_chaos.sh [--smoke] [--seconds S] [--policy P] [--quorum] [--run-on R]
# Needs BATON_BIN and BATON_TESTS_DIR.
set -u
secs=300 policy="forbid allow replace" quorum= run_on=
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) secs=6 policy=forbid ;;
    --seconds) secs=$2; shift ;;
    --policy) policy=$2; shift ;;
    --quorum) quorum=1 ;;
    --run-on) run_on=$2; shift ;;
    *) echo "usage: bench_chaos.sh [--smoke] [--seconds S] [--policy P] [--quorum] [--run-on R]" >&2; exit 2 ;;
    esac
    shift
done
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
CHAOS_SECONDS=$secs CHAOS_POLICY=$policy CHAOS_SUMMARY=$summary CHAOS_QUORUM=$quorum CHAOS_RUN_ON=$run_on CHAOS_FLEET_SECONDS=$secs \
    bash "$BATON_TESTS_DIR/integration/test_chaos.sh" >&2 || exit 1
cat "$summary"
