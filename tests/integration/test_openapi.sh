# test_openapi.sh -- deploy/openapi.json against a running supervisor with
# http.control (tests/lib/openapi_check.py, python3's standard library):
# every path and method answered with a documented status and a body of
# its schema, the errors each lists provoked and checked, and the server's
# route tables the same set as the document's paths.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
command -v python3 >/dev/null || fail "python3 is not installed"
SRC=$(cd "$BATON_TESTS_DIR/.." && pwd)
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$SRC/deploy/openapi.json" ||
    fail "deploy/openapi.json is not JSON"
cat > "$T/jobs.yaml" <<'EOF2'
jobs:
  - name: hello
    schedule: "0 0 0 1 1 *"
    command: ["sh", "-c", "echo '<b>hi</b>' from $BATON_NODE"]
EOF2
TOK=$T/tokens
OP=$("$B" token new ops-bot --role operate --file "$TOK") || fail "token new"
RO=$("$B" token new viewer --role read --file "$TOK") || fail "token new (read)"
redis_start
P1=$(free_port); P2=$(free_port)
for n in n1 n2; do
    p=$P1; [ $n = n2 ] && p=$P2
    node_config $n oa "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$p\", control: true, tokens_file: $TOK}"
done
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"transition".*"to":"working"' 10 >/dev/null
spawn n2 "$B" run -c "$T/n2.yaml"   # a follower: step-down has a node to hand over to
wait_for_line "$T/n2.out" '"event":"http_listening"' 10 >/dev/null
timeout 150 python3 "$BATON_TESTS_DIR/lib/openapi_check.py" "$SRC/deploy/openapi.json" \
    "http://127.0.0.1:$P2" "$OP" "$RO" hello "$SRC" >"$T/check.out" 2>&1 ||
    fail "$(tail -n 3 "$T/check.out")"
note "$(tail -n 2 "$T/check.out" | tr '\n' ' ')"
