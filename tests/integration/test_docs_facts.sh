# test_docs_facts.sh -- the facts the hand-written documents repeat, where
# they can drift from the code: the variables a run and a hook get, the log
# events named, the terms of sample logs (tests/lib/docs_facts.py, against
# `baton check --reference`, `baton lock --help`, baton.h and the CMake
# options); the sample log line of baton(1) as `baton logs` prints it; the
# README as a front door (at most 400 lines, a job in its first 50, its
# baton.yaml and jobs.yaml valid); and every relative link of the Markdown
# pages leading to a file, and to a heading of it.
. "$BATON_TESTS_DIR/lib/harness.sh"
root=$BATON_SOURCE_DIR
B=$BATON_BIN
cd "$root" || fail "no source tree at $root"

note "variables, events and terms named in the documents are the code's"
"$B" check --reference >"$T/reference.md" || fail "baton check --reference failed"
"$B" lock --help >"$T/lock-help.txt" || fail "baton lock --help failed"
docs=(README.md deploy/*.md deploy/man/* config/*.yaml examples/README.md examples/hooks/jobs.yaml
      tests/README.md machine/README.md)
python3 "$BATON_TESTS_DIR/lib/docs_facts.py" "$T/reference.md" "$T/lock-help.txt" src/lib/baton.h \
    CMakeLists.txt "${docs[@]}" >"$T/facts.txt" 2>&1
rc=$?
[ "$rc" -le 1 ] || fail "docs_facts.py failed: $(cat "$T/facts.txt")"
[ ! -s "$T/facts.txt" ] || fail "documents that disagree with the code:
$(cat "$T/facts.txt")"

note "deploy/operations.md's metrics are the metrics metrics_write.c writes, every one of them"
families=$(grep -oE 'family\(out, "baton_[a-z_]+' src/supervisor/ops/metrics_write.c | sed 's/.*"//')
[ -n "$families" ] || fail "no metric family found in src/supervisor/ops/metrics_write.c"
for name in $families; do
    grep -q "\`$name\`" deploy/operations.md || fail "deploy/operations.md does not list the metric $name"
done
for name in $(grep -oE '`baton_[a-z_]+`' deploy/operations.md | tr -d '`' | sort -u); do
    grep -q "\"$name" src/supervisor/ops/metrics_write.c || fail "deploy/operations.md lists a metric that does not exist: $name"
done

note "baton(1)'s sample log line is what baton logs prints for its JSON"
json=$(awk '/^```json$/ {on = 1; next} on {print; exit}' deploy/man/baton.1.md)
text=$(awk '/^```text$/ {on = 1; next} on {print; exit}' deploy/man/baton.1.md)
[ -n "$json" ] && [ -n "$text" ] || fail "no json and text samples in deploy/man/baton.1.md"
assert_eq "$text" "$(printf '%s\n' "$json" | "$B" logs --color never)" "the text of baton(1)'s sample line"

note "the README: at most 400 lines, a job in its first 50, a valid baton.yaml and jobs.yaml"
lines=$(wc -l <README.md)
[ "$lines" -le 400 ] || fail "README.md has $lines lines (at most 400)"
first=$(grep -n -m1 '^ *schedule: ' README.md | cut -d: -f1)
[ -n "$first" ] && [ "$first" -le 50 ] || fail "README.md's first job schedule is on line ${first:-none} (at most 50)"
awk '/^## A job in ten lines/ {on = 1; next} /^## / {on = 0} on && /^```yaml$/ {n++; code = 1; next}
     code && /^```$/ {code = 0; next} code {print > (dir "/block" n ".yaml")}' dir="$T" README.md
grep -q '^redis: ' "$T/block1.yaml" && grep -q '^jobs:' "$T/block2.yaml" \
    || fail "no baton.yaml and jobs.yaml blocks under '## A job in ten lines'"
mkdir -p "$T/front" && mv "$T/block1.yaml" "$T/front/baton.yaml" && mv "$T/block2.yaml" "$T/front/jobs.yaml"
"$B" check -c "$T/front/baton.yaml" >"$T/check.out" 2>&1 || fail "baton check of the README's files: $(cat "$T/check.out")"
grep -qx "ok: $T/front/baton.yaml and $T/front/jobs.yaml are valid (2 jobs)" "$T/check.out" \
    || fail "the README's jobs.yaml: $(tail -n 3 "$T/check.out")"

note "relative links lead to a file, and to a heading of it"
python3 - README.md deploy/*.md deploy/man/*.md examples/README.md tests/README.md machine/README.md \
    >"$T/links.txt" 2>&1 <<'EOF'
import os, re, sys

def slug(heading):  # GitHub's: lower case, no punctuation but - and _, spaces as -
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')

def anchors(path):
    text = re.sub(r'```.*?```', '', open(path, encoding='utf-8').read(), flags=re.S)
    return {slug(m) for m in re.findall(r'^#+ (.*)$', text, re.M)}

bad = 0
for path in sys.argv[1:]:
    text = re.sub(r'```.*?```', '', open(path, encoding='utf-8').read(), flags=re.S)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target):
            continue
        file, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(dest):
            print('%s: %s: no such file' % (path, target)); bad += 1
        elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
            print('%s: %s: no such heading' % (path, target)); bad += 1
sys.exit(1 if bad else 0)
EOF
[ $? -eq 0 ] || fail "broken links:
$(cat "$T/links.txt")"
note "ok"
