# test_page_control.sh -- the status page with the control API, driven in
# Debian's headless Chromium: without a token the page asks for one; a read
# token shows no button; an operate token's Run now makes a run appear under
# Running now with its node and elapsed time; Pause asks a reason, and one
# holding <script> shows as text; a job's runs and a run's output (with
# markup) shown as text; Resume.
# Two drivers run the same scenario: tests/browser/control_page.py (cdp.py:
# the DevTools protocol over --remote-debugging-pipe, python3's standard
# library only) always, and tests/browser/control_page.js (puppeteer-core,
# npm, test-only, no browser download) as the reference when npm ci
# installed it (the registry may be unreachable: then the test says so).
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v chromium >/dev/null || fail "chromium is not installed (bash deploy/setup.sh --deps-only installs it)"
command -v python3 >/dev/null || fail "python3 is not installed (bash deploy/setup.sh --deps-only installs it)"
BROWSER=$BATON_TESTS_DIR/browser
DRIVERS=python
if [ ! -d "$BROWSER/node_modules/puppeteer-core" ]; then
    note "driver: python CDP over a pipe (puppeteer-core not installed: npm ci --prefix $BROWSER did not run or failed)"
elif ! command -v node >/dev/null; then
    note "driver: python CDP over a pipe (puppeteer-core not installed: node is not installed)"
else
    DRIVERS="puppeteer python"
fi

cat > "$T/jobs.yaml" <<'EOF2'
jobs:
  - name: hello
    schedule: "0 0 0 1 1 *"
    command: ["true"]
  - name: slow
    schedule: "0 0 0 1 1 *"
    shell: "echo '<i>slow</i> on' $BATON_NODE; sleep 4"
EOF2
TOK=$T/tokens
OP=$("$B" token new ops-bot --role operate --file "$TOK") || fail "token new"
RO=$("$B" token new viewer --role read --file "$TOK") || fail "token new (read)"
redis_start
P=$(free_port)
node_config n1 page "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", control: true, tokens_file: $TOK}"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"transition".*"to":"working"' 10 >/dev/null
# Each run pauses hello and resumes it at its end, so the second starts as
# the first did (slow is run once more).
for d in $DRIVERS; do
    case $d in
        puppeteer) note "driver: puppeteer-core"
                   drive=(node "$BROWSER/control_page.js") ;;
        python) [ "$DRIVERS" = python ] || note "driver: python CDP over a pipe (beside puppeteer-core)"
                drive=(python3 "$BROWSER/control_page.py") ;;
    esac
    timeout 120 "${drive[@]}" "http://127.0.0.1:$P" "$OP" "$RO" n1 >"$T/browser.$d.out" 2>&1 ||
        fail "the page ($d driver): $(cat "$T/browser.$d.out")"
    while read -r line; do note "$d: $line"; done <"$T/browser.$d.out"
done
grep -q '"event":"api_call".*"action":"pause".*"status":200' "$T/n1.out" || fail "no audit line of the pause"
grep -F -- "$OP" "$T/n1.out" && fail "the token is in the log"
note "the page's calls audited; no token in the log"
