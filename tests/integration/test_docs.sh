# test_docs.sh -- the README and the generated documents tell the truth: the
# man pages (the configuration, event and environment references among
# them) and the completions are what baton-gendocs makes from the tables
# and deploy/man/NAME.md today; the README documents every subcommand, names
# the license, and speaks of the product, not of its source documents; CI
# runs exactly its test command. (test_docs_facts checks the facts the
# hand-written pages repeat.)
. "$BATON_TESTS_DIR/lib/harness.sh"
root=$BATON_SOURCE_DIR
"$BATON_BUILD_DIR/baton-gendocs" --check "$root" || fail "generated documents out of date"
cmds=$("$BATON_BIN" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/ {print $1}')
at_least 10 "commands in baton --help" "$cmds"
for cmd in $cmds; do
    grep -q "baton $cmd" "$root/README.md" || fail "README.md does not mention 'baton $cmd'"
done
test_cmd=$(grep -m1 -E '^bash tests/run\.sh' "$root/README.md" | awk '{print $1, $2}')
assert_eq "bash tests/run.sh" "$test_cmd" "README's test command"
assert_eq "bash tests/run.sh" "$(grep -vE '^(#|$)' "$root/.ci/run")" ".ci/run runs exactly the README's test command"
grep -qE '^bash examples/demo\.sh' "$root/README.md" || fail "README's demo command"

# The license: a file, named in the README and in baton.pc.
grep -q "BSD 3-Clause License" "$root/LICENSE" || fail "LICENSE is not the BSD 3-Clause text"
grep -q '(LICENSE)' "$root/README.md" || fail "README does not name LICENSE"
grep -qx "License: BSD-3-Clause" "$BATON_BUILD_DIR/baton.pc" || fail "baton.pc names no license"

# No source-document jargon where users read.
for f in README.md src/lib/baton.h deploy/*.md deploy/man/* examples/*.c examples/*.md examples/CMakeLists.txt tests/README.md; do
    if grep -nE '\bseeds? [0-9]{3}\b|\bseed scenario' "$root"/$f; then fail "$f speaks of seeds"; fi
done
for cmd in $cmds; do
    "$BATON_BIN" "$cmd" --help | grep -qiE '\bseed [0-9]' && fail "baton $cmd --help speaks of seeds"
done
# deploy/README.md names only what exists: every `snake_case` name in it is
# a key or an event of the reference, a metric, or a test (it named an
# alert event, tick_dropped, that the supervisor never logs).
known=$("$BATON_BIN" check --reference | sed -n 's/^| `\([a-z_.]*\)` |.*/\1/p' | tr . '\n')
for name in $(grep -oE '`[a-z][a-z0-9]*(_[a-z0-9]+)+`' "$root/deploy/README.md" | tr -d '`' | sort -u); do
    case $name in
        baton_*) grep -q "\"$name" "$root/src/supervisor/ops/metrics_write.c" || fail "deploy/README.md names a metric that does not exist: $name" ;;
        test_*) [ -f "$root/tests/integration/$name.sh" ] || fail "deploy/README.md names a test that does not exist: $name" ;;
        *) grep -qx "$name" <<<"$known" || fail "deploy/README.md names \`$name\`: no key nor event of 'baton check --reference'" ;;
    esac
done
note "ok"
