# bench_chaos.sh -- the chaos test (tests/integration/test_chaos.sh) at
# benchmark length: SECONDS per concurrency policy (default 300), all three
# policies; prints one JSON object per policy (ticks run, skipped,
# superseded, doubled 0, missing 0, fence regressions 0, faults injected).
# The test itself fails on any violation, so a printed line is a pass.
#
# --quorum: the same over a Redlock quorum of five masters (the test's
# CHAOS_QUORUM mode: one master restarted instead of the server).
#
# usage: bench_chaos.sh [--smoke] [--seconds S] [--policy P] [--quorum]
# Needs BATON_BIN and BATON_TESTS_DIR.
set -u
secs=300 policy="forbid allow replace" quorum=
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) secs=6 policy=forbid ;;
    --seconds) secs=$2; shift ;;
    --policy) policy=$2; shift ;;
    --quorum) quorum=1 ;;
    *) echo "usage: bench_chaos.sh [--smoke] [--seconds S] [--policy P] [--quorum]" >&2; exit 2 ;;
    esac
    shift
done
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
CHAOS_SECONDS=$secs CHAOS_POLICY=$policy CHAOS_SUMMARY=$summary CHAOS_QUORUM=$quorum \
    bash "$BATON_TESTS_DIR/integration/test_chaos.sh" >&2 || exit 1
cat "$summary"
