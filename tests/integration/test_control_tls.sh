# test_control_tls.sh -- the HTTP endpoint over TLS (http.tls), with
# certificates the test makes (openssl): `baton check` refuses http.control
# on a plain listener that is not loopback, and accepts it with TLS; a
# client that trusts the test's CA gets the probes and the API, one that
# does not is refused; plain HTTP on the TLS port gets no answer; a bad key
# is a precise error at start; on SIGHUP a new certificate serves the next
# connections (http_tls_reloaded), a broken one keeps the old
# (http_tls_reload_failed); a reload that turns TLS or http.control off is
# reported as restart_needed_for.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
for tool in curl openssl; do command -v $tool >/dev/null || fail "$tool is not installed"; done

# A CA, and two server certificates it signs (the second for the reload).
mk() { # mk NAME CN: key and certificate signed by the test's CA
    openssl req -newkey rsa:2048 -nodes -keyout "$T/$1.key" -subj "/CN=$2" -out "$T/$1.csr" \
        2>/dev/null || fail "openssl req $1"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$T/$1.ext"
    openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
        -days 2 -extfile "$T/$1.ext" -out "$T/$1.crt" 2>/dev/null || fail "openssl x509 $1"
    chmod 600 "$T/$1.key"
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -subj "/CN=baton test CA" \
    -days 2 -out "$T/ca.crt" 2>/dev/null || fail "openssl CA"
mk one baton-one
mk two baton-two
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/other.key" -subj "/CN=other" -days 2 \
    -out "$T/other.crt" 2>/dev/null || fail "openssl other"
chmod 600 "$T/other.key"

cat > "$T/jobs.yaml" <<'EOF2'
jobs:
  - name: hello
    schedule: "0 0 0 1 1 *"
    command: ["sh", "-c", "echo ran on $BATON_NODE"]
EOF2
TOK=$T/tokens
OP=$("$B" token new ops-bot --role operate --file "$TOK") || fail "token new"
redis_start
P=$(free_port)

# baton check: control on a plain, non-loopback listener is refused; TLS
# (or http.insecure) accepts it; half of http.tls is refused.
node_config c1 tls "$T/jobs.yaml" "http: {listen: \"0.0.0.0:$P\", control: true, tokens_file: $TOK}"
expect_error "plain control off loopback" 78 "give it http.tls: {cert, key}" "$B" check -c "$T/c1.yaml"
node_config c2 tls "$T/jobs.yaml" \
    "http: {listen: \"0.0.0.0:$P\", control: true, tokens_file: $TOK, tls: {cert: $T/one.crt, key: $T/one.key}}"
"$B" check -c "$T/c2.yaml" >/dev/null 2>"$T/check.err" || fail "TLS control refused: $(cat "$T/check.err")"
node_config c3 tls "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", tls: {cert: $T/one.crt}}"
expect_error "cert without key" 78 "http.tls needs both cert and key (key is missing)" "$B" check -c "$T/c3.yaml"
note "check: plain control off loopback refused, with TLS accepted, half a pair refused"

# A key that is not the certificate's, and a key others can read: precise
# errors at start, no server.
node_config bad tls "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", tls: {cert: $T/one.crt, key: $T/other.key}}"
"$B" run -c "$T/bad.yaml" >"$T/bad.out" 2>"$T/bad.err" && fail "a mismatched key started"
grep -qF "http.tls.key $T/other.key: does not match the certificate of $T/one.crt" "$T/bad.err" \
    || fail "mismatched key: $(cat "$T/bad.err")"
chmod 644 "$T/two.key"
node_config bad2 tls "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", tls: {cert: $T/two.crt, key: $T/two.key}}"
"$B" run -c "$T/bad2.yaml" >"$T/bad2.out" 2>"$T/bad2.err" && fail "a readable key started"
grep -qF "mode 0644 lets others read or change it" "$T/bad2.err" || fail "key mode: $(cat "$T/bad2.err")"
chmod 600 "$T/two.key"
note "a mismatched key and a readable key refused at start"

# The server, over TLS, control on, on every interface.
cp "$T/one.crt" "$T/srv.crt"; cp "$T/one.key" "$T/srv.key"; chmod 600 "$T/srv.key"
node_config n1 tls "$T/jobs.yaml" \
    "http: {listen: \"0.0.0.0:$P\", control: true, tokens_file: $TOK, tls: {cert: $T/srv.crt, key: $T/srv.key}}"
spawn n1 "$B" run -c "$T/n1.yaml"
wait_for_line "$T/n1.out" '"event":"transition".*"to":"working"' 10 >/dev/null
grep -q '"event":"http_listening".*"tls":true' "$T/n1.out" || fail "http_listening without tls:true"
U=https://127.0.0.1:$P
S=(--cacert "$T/ca.crt" -s -m 10)
code() { curl -o /dev/null -w '%{http_code}' "$@" || true; }
assert_eq 200 "$(code "${S[@]}" "$U/healthz")" "/healthz over TLS"
assert_eq 200 "$(code "${S[@]}" "$U/readyz")" "/readyz over TLS"
assert_eq 401 "$(code "${S[@]}" "$U/status")" "/status without a token over TLS"
assert_eq 200 "$(code "${S[@]}" -H "Authorization: Bearer $OP" "$U/status")" "/status with a token"
out=$(curl "${S[@]}" -X POST -H "Authorization: Bearer $OP" -d '{"wait":10}' "$U/jobs/hello/trigger")
grep -q '"exit_code":0' <<<"$out" || fail "trigger over TLS: $out"
# A client that does not trust the certificate is refused (curl: 60).
curl -s -m 10 -o /dev/null "$U/healthz"; rc=$?
assert_eq 60 "$rc" "a client without the CA (curl's exit status)"
curl -s -m 10 -o /dev/null --cacert "$T/other.crt" "$U/healthz"; rc=$?
assert_eq 60 "$rc" "a client trusting another CA"
# Plain HTTP on the TLS port gets no HTTP answer.
assert_eq 000 "$(code -s -m 5 "http://127.0.0.1:$P/healthz")" "plain HTTP on the TLS port"
assert_eq 200 "$(code "${S[@]}" "$U/healthz")" "/healthz after a plain client"
subject() { openssl s_client -connect "127.0.0.1:$P" -CAfile "$T/ca.crt" </dev/null 2>/dev/null \
                | openssl x509 -noout -subject 2>/dev/null; }
grep -q "baton-one" <<<"$(subject)" || fail "first certificate: $(subject)"
note "TLS: probes, 401, API answered; an untrusting client and plain HTTP refused"

# SIGHUP with a new certificate: the next connections get it.
cp "$T/two.crt" "$T/srv.crt"; cp "$T/two.key" "$T/srv.key"
kill -HUP "$(pid_of n1)"
wait_for_line "$T/n1.out" '"event":"http_tls_reloaded".*baton-two' 10 >/dev/null
for _ in $(seq 50); do grep -q baton-two <<<"$(subject)" && break; sleep 0.1; done
grep -q "baton-two" <<<"$(subject)" || fail "after SIGHUP: $(subject)"
assert_eq 200 "$(code "${S[@]}" "$U/healthz")" "/healthz with the new certificate"
# A broken pair keeps the old certificate.
cp "$T/one.crt" "$T/srv.crt"
kill -HUP "$(pid_of n1)"
wait_for_line "$T/n1.out" '"event":"http_tls_reload_failed".*does not match' 10 >/dev/null
grep -q "baton-two" <<<"$(subject)" || fail "after a broken reload: $(subject)"
assert_eq 200 "$(code "${S[@]}" "$U/healthz")" "/healthz after a broken reload"
note "SIGHUP: a new certificate served, a broken pair kept the old"

# A reload that turns TLS off, or http.control off, needs a restart.
cp "$T/two.crt" "$T/srv.crt"
node_config n1 tls "$T/jobs.yaml" "http: {listen: \"127.0.0.1:$P\", control: false, public_read: true}"
kill -HUP "$(pid_of n1)"
line=$(wait_for_line "$T/n1.out" '"event":"reloaded".*restart_needed_for' 10)
for k in http.listen http.control http.public_read http.tls; do
    grep -qF "\"$k\"" <<<"$line" || fail "restart_needed_for lacks $k: $line"
done
assert_eq 401 "$(code "${S[@]}" "$U/status")" "control still on after the reload"
assert_eq 200 "$(code "${S[@]}" "$U/healthz")" "TLS still on after the reload"
note "a reload turning TLS, control or public_read off: restart_needed_for, the running server kept"
