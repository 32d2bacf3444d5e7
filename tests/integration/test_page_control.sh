# test_page_control.sh -- the status page with the control API, driven in
# Debian's headless Chromium through puppeteer-core (tests/browser, npm,
# test-only; no browser download): without a token the page asks for one;
# a read token shows no button; an operate token's Run now makes a run
# appear under Running now with its node and elapsed time; Pause asks a
# reason, and one holding <script> shows as text; a job's runs and a run's
# output (with markup) shown as text; Resume.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v chromium >/dev/null || fail "chromium is not installed (bash deploy/setup.sh --deps-only installs it)"
command -v node >/dev/null || fail "node is not installed (bash deploy/setup.sh --deps-only installs it)"
BROWSER=$BATON_TESTS_DIR/browser
[ -d "$BROWSER/node_modules/puppeteer-core" ] ||
    fail "puppeteer-core is not installed: npm ci --prefix $BROWSER (bash deploy/setup.sh --deps-only does it)"

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
timeout 120 node "$BROWSER/control_page.js" "http://127.0.0.1:$P" "$OP" "$RO" n1 >"$T/browser.out" 2>&1 ||
    fail "the page: $(cat "$T/browser.out")"
while read -r line; do note "$line"; done <"$T/browser.out"
grep -q '"event":"api_call".*"action":"pause".*"status":200' "$T/n1.out" || fail "no audit line of the pause"
grep -F -- "$OP" "$T/n1.out" && fail "the token is in the log"
note "the page's calls audited; no token in the log"
