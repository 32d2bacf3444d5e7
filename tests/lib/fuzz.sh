# fuzz.sh -- builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang in
# build/fuzz and runs each for a bounded time; shared by tests/run.sh (30 s
# each in CI) and tests/bench/bench_fuzz.sh (10 minutes each). Source it
# from the project root, then: fuzz_build && fuzz_run SECONDS [--merge].
#
# fuzz_run prints one JSON line per target (runs, coverage, seconds) and
# stops at the first crash, leaving the input in a directory it names.
# With --merge the new inputs that add coverage are minimised into the
# target's corpus in the tree (tests/fuzz/corpus/NAME), to be committed.

fuzz_build() {
    mkdir -p build/fuzz
    if ! { cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_FUZZ=ON \
               -DBATON_BUILD_EXAMPLES=OFF -DCMAKE_C_COMPILER=clang \
               -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" &&
           cmake --build build/fuzz -j"$(nproc)"; } >build/fuzz/build.log 2>&1; then
        tail -n 60 build/fuzz/build.log
        echo "fuzz.sh: the fuzz build failed"
        return 1
    fi
}

fuzz_run() {
    local secs=$1 merge=${2:-} f name work seeds start runs cov
    for f in build/fuzz/tests/fuzz_*; do
        [ -x "$f" ] || continue
        name=$(basename "$f")
        # FUZZ_TARGETS="fuzz_a fuzz_b" runs those alone.
        [ -z "${FUZZ_TARGETS:-}" ] || [[ " $FUZZ_TARGETS " == *" $name "* ]] || continue
        work=$(mktemp -d)
        seeds=tests/fuzz/corpus/$name
        mkdir -p "$seeds"
        start=$(date +%s)
        if ! "$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$work/" "$work" "$seeds" >"$work/log" 2>&1; then
            tail -n 40 "$work/log"
            echo "fuzz.sh: $name found a crash; the input is in $work"
            return 1
        fi
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
        cov=$(grep -oE 'cov: [0-9]+' "$work/log" | tail -n1 | cut -d' ' -f2)
        if [ "$merge" = --merge ]; then
            "$f" -merge=1 -timeout=10 -rss_limit_mb=2048 "$seeds" "$work" >>"$work/log" 2>&1 ||
                echo "fuzz.sh: $name: merging its corpus failed (see $work/log)"
        fi
        printf '{"target":"%s","seconds":%d,"runs":%s,"coverage":%s,"corpus":%d,"crashes":0}\n' \
            "$name" "$(( $(date +%s) - start ))" "${runs:-0}" "${cov:-0}" "$(ls "$seeds" | wc -l)"
        rm -rf "$work"
    done
}
