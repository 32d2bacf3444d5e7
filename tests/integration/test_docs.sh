# test_docs.sh -- the README tells the truth: its configuration reference is
# the one the code generates, it documents every subcommand, and CI runs
# exactly its test command.
. "$BATON_TESTS_DIR/lib/harness.sh"
root=$BATON_SOURCE_DIR
bash "$BATON_TESTS_DIR/lib/readme-reference.sh" || fail "README reference out of date"
for cmd in $("$BATON_BIN" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/ {print $1}'); do
    grep -q "baton $cmd" "$root/README.md" || fail "README.md does not mention 'baton $cmd'"
done
test_cmd=$(grep -m1 -E '^bash tests/run\.sh' "$root/README.md" | awk '{print $1, $2}')
assert_eq "bash tests/run.sh" "$test_cmd" "README's test command"
assert_eq "bash tests/run.sh" "$(grep -vE '^(#|$)' "$root/.ci/run")" ".ci/run runs exactly the README's test command"
grep -qE '^bash examples/demo\.sh' "$root/README.md" || fail "README's demo command"
note "ok"
