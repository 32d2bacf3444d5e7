# bench_faults.sh -- the fault matrix (tests/integration/test_faults.sh) at
# benchmark length: each fault REPS times (default 3), the clock stepped a
# full hour forward; prints one JSON object per fault (runs, recorded not
# run, lost with the data, doubled 0, missing 0, lease moves, the worst
# margin in ms between the old leader's last job write and the new grant).
# The test fails on any violation, so a printed line is a pass.
#
# usage: bench_faults.sh [--smoke] [--reps N] [--faults "F1 F2"]
# Needs BATON_BIN, BATON_TESTS_DIR and BATON_BLACKHOLE.
set -u
reps=3 faults="" step=3600
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) reps=1 faults="partition" ;;
    --reps) reps=$2; shift ;;
    --faults) faults=$2; shift ;;
    *) echo "usage: bench_faults.sh [--smoke] [--reps N] [--faults \"F1 F2\"]" >&2; exit 2 ;;
    esac
    shift
done
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
[ -z "$faults" ] || export FAULTS="$faults"
FAULTS_REPEAT=$reps FAULTS_SUMMARY=$summary FAULTS_STEP_FORWARD=$step \
    bash "$BATON_TESTS_DIR/integration/test_faults.sh" >&2 || exit 1
cat "$summary"
