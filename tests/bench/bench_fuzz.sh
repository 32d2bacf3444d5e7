#!/usr/bin/env bash
# bench_fuzz.sh [--seconds S] [--targets "T..."] -- the long fuzzing run
# (bench mode): every (or each named)
# libFuzzer target of tests/fuzz for S seconds (default 600), one JSON line
# each; the inputs that add coverage are merged into the corpus in the tree
# (commit them). CI runs the same targets for 30 s each (tests/run.sh). A
# crash stops the run and names the directory holding the input: make it a
# regression test (copy it into tests/fuzz/corpus/NAME) once fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=600
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) secs=$2; shift ;;
    --targets) export FUZZ_TARGETS=$2; shift ;;
    *) echo "usage: bench_fuzz.sh [--seconds S] [--targets \"fuzz_a fuzz_b\"]" >&2; exit 64 ;;
    esac
    shift
done
bash deploy/setup.sh --deps-only >/dev/null
. tests/lib/fuzz.sh
fuzz_build
fuzz_run "$secs" --merge
