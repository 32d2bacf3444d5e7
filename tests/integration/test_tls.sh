# test_tls.sh -- rediss:// against real TLS redis-servers (`--port 0
# --tls-port P`) with certificates this test makes with openssl: plain TLS
# by IP address and by host name; every failure says what failed (wrong CA,
# a server certificate from another CA, wrong host name, expired, a client
# without the certificate a mutual-TLS server requires, a handshake that
# never completes, a port that refuses or closes at once, certificate files
# that hold no certificate or key); capath=; sni= and verify=none; mutual
# TLS; a server that dies under a held lock; and the whole tool
# over TLS: `baton lock`, two `baton run` supervisors electing a leader and
# running a job through a rediss:// URL in their config, `baton status`,
# `history`, `step-down` and `check`; and rediss-sentinel://, TLS to a
# sentinel and to the master it names.
. "$BATON_TESTS_DIR/lib/harness.sh"
. "$BATON_TESTS_DIR/lib/tls.sh"
B=$BATON_BIN
C=$T/certs
tls_make_certs "$C"

# lock_fails NAME URL MESSAGE [STATUS]: `baton lock` exits STATUS (default 69:
# unavailable; 64 for a URL or file it cannot use) with one line holding
# MESSAGE.
lock_fails() { expect_error "$1" "${4:-69}" "$3" "$B" lock --url "$2" tls:k -- true; }

note "plain TLS: by IP address and by host name"
tls_redis_start good "$C/server.pem" "$C/server.key"
GOOD=$TLS_PORT
URL="rediss://127.0.0.1:$GOOD/0?ca=$C/ca.pem"
f1=$("$B" lock --url "$URL" tls:k -- sh -c 'echo $BATON_FENCE') || fail "lock over TLS by IP"
# By host name: localhost, when the machine resolves it (a bare chroot has
# no /etc/hosts); else the same name verified through sni= over the address
# (TLS_TEST_NO_RESOLVE=1 takes that path here too).
if [ -z "${TLS_TEST_NO_RESOLVE:-}" ] && getent hosts localhost >/dev/null; then
    BYNAME="rediss://localhost:$GOOD/0?ca=$C/ca.pem"
else
    note "  localhost does not resolve here: the host name is checked with sni=localhost"
    BYNAME="rediss://127.0.0.1:$GOOD/0?ca=$C/ca.pem&sni=localhost"
fi
f2=$("$B" lock --url "$BYNAME" tls:k -- sh -c 'echo $BATON_FENCE') ||
    fail "lock over TLS by host name ($BYNAME)"
[ "$f2" -gt "$f1" ] || fail "fences over TLS: $f1 then $f2"

note "failures say what failed"
lock_fails "client trusting another CA" "rediss://127.0.0.1:$GOOD/0?ca=$C/otherca.pem" \
    "certificate verify failed: self-signed certificate in certificate chain"
lock_fails "sni naming another host" "$URL&sni=nothere.example" \
    "host name mismatch: expected nothere.example, certificate is for 127.0.0.1, localhost"
tls_redis_start wrongca "$C/wrongca.pem" "$C/wrongca.key"
lock_fails "server certificate from another CA" "rediss://127.0.0.1:$TLS_PORT/0?ca=$C/ca.pem" \
    "rediss://127.0.0.1:$TLS_PORT/0?ca=$C/ca.pem: certificate verify failed: unable to get local issuer certificate"
tls_redis_start expired "$C/expired.pem" "$C/expired.key"
lock_fails "expired server certificate" "rediss://127.0.0.1:$TLS_PORT/0?ca=$C/ca.pem" \
    "certificate verify failed: certificate has expired"
tls_redis_start wrongname "$C/wrongname.pem" "$C/wrongname.key"
WRONGNAME=$TLS_PORT
lock_fails "certificate for another host" "rediss://127.0.0.1:$WRONGNAME/0?ca=$C/ca.pem" \
    "rediss://127.0.0.1:$WRONGNAME/0?ca=$C/ca.pem: host name mismatch: expected 127.0.0.1, certificate is for other.example"

note "sni= verifies that name; verify=none verifies nothing"
"$B" lock --url "rediss://127.0.0.1:$WRONGNAME/0?ca=$C/ca.pem&sni=other.example" tls:k -- true ||
    fail "sni=other.example against its certificate"
"$B" lock --url "rediss://127.0.0.1:$WRONGNAME/0?verify=none" tls:k -- true ||
    fail "verify=none against a certificate for another host"

note "mutual TLS"
tls_redis_start mtls "$C/server.pem" "$C/server.key" --tls-auth-clients yes
MTLS=$TLS_PORT
"$B" lock --url "rediss://127.0.0.1:$MTLS/0?ca=$C/ca.pem&cert=$C/client.pem&key=$C/client.key" \
    tls:k -- true || fail "mutual TLS with a client certificate"
lock_fails "mutual TLS without a client certificate" "rediss://127.0.0.1:$MTLS/0?ca=$C/ca.pem" \
    "the server ended the TLS session: tlsv13 alert certificate required (the server requires a client certificate: give cert= and key=)"
lock_fails "a client key that is not the certificate's" \
    "rediss://127.0.0.1:$MTLS/0?ca=$C/ca.pem&cert=$C/client.pem&key=$C/server.key" \
    "cannot load the client key $C/server.key: key values mismatch" 64

note "certificate files: a CA directory; files that hold no certificate or key say so"
mkdir -p "$C/capath"
cp "$C/ca.pem" "$C/capath/"
openssl rehash "$C/capath" >/dev/null 2>&1 || fail "openssl rehash $C/capath"
"$B" lock --url "rediss://127.0.0.1:$GOOD/0?capath=$C/capath" tls:k -- true ||
    fail "capath= with the CA, hashed"
mkdir -p "$C/emptypath"
lock_fails "capath= without the CA" "rediss://127.0.0.1:$GOOD/0?capath=$C/emptypath" \
    "certificate verify failed: self-signed certificate in certificate chain"
lock_fails "ca= a file with no certificate" "rediss://127.0.0.1:$GOOD/0?ca=$C/index.txt" \
    "cannot load the CA $C/index.txt: no certificate or crl found" 64
lock_fails "cert= a key, not a certificate" \
    "rediss://127.0.0.1:$MTLS/0?ca=$C/ca.pem&cert=$C/client.key&key=$C/client.key" \
    "cannot load the client certificate $C/client.key: no certificate in PEM format found" 64
lock_fails "key= a certificate, not a key" \
    "rediss://127.0.0.1:$MTLS/0?ca=$C/ca.pem&cert=$C/client.pem&key=$C/client.pem" \
    "cannot load the client key $C/client.pem: no private key in PEM format found" 64
lock_fails "ca= a file that does not exist" "rediss://127.0.0.1:$GOOD/0?ca=$C/nothere.pem" \
    "cannot read the CA file $C/nothere.pem: No such file or directory" 64

note "a refused port, and a server that closes at once, are told apart"
lock_fails "TLS to a port nobody listens on" "rediss://127.0.0.1:1/0?ca=$C/ca.pem" \
    "rediss://127.0.0.1:1/0?ca=$C/ca.pem: cannot connect: Connection refused"
fake_server ""
lock_fails "a server that closes the connection at once" "rediss://127.0.0.1:$FAKE_PORT/0?ca=$C/ca.pem" \
    "TLS handshake failed: connection closed by the server (is it a TLS port?)"
fake_server --reset
lock_fails "a server that resets the connection on the first bytes" \
    "rediss://127.0.0.1:$FAKE_PORT/0?ca=$C/ca.pem" \
    "TLS handshake failed: connection closed by the server (is it a TLS port?)"

note "the TLS server dies while the lock is held: the command is stopped within the lease"
tls_redis_start doomed "$C/server.pem" "$C/server.key"
spawn doomed "$B" lock --url "rediss://127.0.0.1:$TLS_PORT/0?ca=$C/ca.pem" --ttl 1s tls:doomed -- \
    sh -c 'echo started; exec sleep 30'
wait_for_line "$T/doomed.out" '^started$' 10 >/dev/null
t0=$(now_ms)
kill -KILL "$TLS_PID_doomed"
wait_exit doomed 10
assert_eq 70 "$EXIT_CODE" "baton lock after its TLS server died ($(cat "$T/doomed.err"))"
grep -qF "tls:doomed: the lease could not be confirmed before its deadline; the command was stopped" \
    "$T/doomed.err" || fail "baton lock after its TLS server died: $(cat "$T/doomed.err")"
[ $(( $(now_ms) - t0 )) -lt 1500 ] ||
    fail "the command outlived the 1 s lease by $(( $(now_ms) - t0 - 1000 )) ms"

note "a handshake that never completes is bounded by the connect timeout"
redis_start
lock_fails "TLS to a plain-TCP port" "rediss://127.0.0.1:$REDIS_PORT/0?ca=$C/ca.pem" \
    "TLS handshake timed out after 2000 ms"
kill -STOP "$TLS_PID_good"
t0=$(now_ms)
lock_fails "a frozen TLS server" "$URL" "TLS handshake timed out after 2000 ms"
kill -CONT "$TLS_PID_good"
[ $(( $(now_ms) - t0 )) -lt 6000 ] || fail "the frozen server held baton lock for $(( $(now_ms) - t0 )) ms"

note "rediss-sentinel://: TLS to the sentinel and to the master it names"
command -v redis-sentinel >/dev/null || fail "redis-sentinel is not installed (apt-get install redis-sentinel)"
tls_redis_start smaster "$C/server.pem" "$C/server.key"
SMASTER=$TLS_PORT
sdir=$T/tls-sentinel
mkdir -p "$sdir"
for attempt in 1 2 3 4 5; do
    sport=$(free_port)
    cat >"$sdir/sentinel.conf" <<EOT
port 0
tls-port $sport
tls-cert-file $C/server.pem
tls-key-file $C/server.key
tls-ca-cert-file $C/ca.pem
tls-auth-clients no
tls-replication yes
bind 127.0.0.1
daemonize no
dir $sdir
logfile $sdir/sentinel.log
sentinel monitor tlsgroup 127.0.0.1 $SMASTER 1
EOT
    redis-sentinel "$sdir/sentinel.conf" </dev/null >/dev/null 2>&1 &
    spid=$!
    up=0
    for n in $(seq 1 250); do
        kill -0 "$spid" 2>/dev/null || break
        if redis-cli --tls --cacert "$C/ca.pem" -p "$sport" sentinel get-master-addr-by-name tlsgroup 2>/dev/null | grep -q "^$SMASTER\$"; then
            up=1; break
        fi
        sleep 0.02
    done
    [ $up = 1 ] && break
    kill -KILL "$spid" 2>/dev/null
done
[ $up = 1 ] || fail "the TLS sentinel did not start"
HARNESS_REDIS_PIDS+=("$spid")
SURL="rediss-sentinel://127.0.0.1:$sport/0?master=tlsgroup&ca=$C/ca.pem"
f=$("$B" lock --url "$SURL" tls:s -- sh -c 'echo $BATON_FENCE') || fail "lock through a TLS sentinel"
[ "$f" -gt 0 ] || fail "fence through a TLS sentinel: $f"
lock_fails "a TLS sentinel trusting another CA" "rediss-sentinel://127.0.0.1:$sport/0?master=tlsgroup&ca=$C/otherca.pem" \
    "sentinel 127.0.0.1:$sport: certificate verify failed: self-signed certificate in certificate chain"

# ---- the supervisor and the operator tools over TLS ------------------------------
note "two supervisors over rediss://, and every tool"
cat >"$T/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: "echo tick"
EOF
for n in a b; do
    cat >"$T/node-$n.yaml" <<EOF
node: node-$n
redis: "$URL"
group: tls
lease: {ttl: 2s}
redis_timeout: 500ms
poll: 1s
shutdown_grace: 1s
jobs: $T/jobs.yaml
EOF
done
spawn node-a "$B" run -c "$T/node-a.yaml"
spawn node-b "$B" run -c "$T/node-b.yaml"
wait_for_line "$T/node-a.out" '"to":"working"|"event":"following"' 15 >/dev/null
wait_for_line "$T/node-b.out" '"to":"working"|"event":"following"' 15 >/dev/null
deadline=$(( $(now_ms) + 15000 ))
until grep -qh '"event":"job_end".*"job":"tick"' "$T/node-a.out" "$T/node-b.out" 2>/dev/null; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no run of tick over TLS within 15 s"
    sleep 0.05
done
"$B" check -c "$T/node-a.yaml" >"$T/check.out" 2>&1 || fail "check over TLS: $(cat "$T/check.out")"
grep -q "^redis: rediss://127.0.0.1:$GOOD/0?ca=$C/ca.pem$" "$T/check.out" || fail "check: the effective URL in $(cat "$T/check.out")"
out=$("$B" status -c "$T/node-a.yaml" 2>&1) || fail "status over TLS: $out"
printf '%s\n' "$out" | grep -qE '^leader:  node-[ab] \(term [0-9]+, ' || fail "status over TLS: $out"
out=$("$B" history -c "$T/node-a.yaml" tick 2>&1) || fail "history over TLS: $out"
printf '%s\n' "$out" | grep -q 'ok (exit 0)' || fail "history over TLS: $out"
out=$("$B" step-down -c "$T/node-a.yaml" --wait 5s 2>&1) || fail "step-down over TLS: $out"
printf '%s\n' "$out" | grep -qE 'stepped down; node-[ab] leads now' || fail "step-down over TLS: $out"
grep -q '"level":"warn"' "$T/node-a.out" && fail "a warning with verified TLS: $(grep '"level":"warn"' "$T/node-a.out")"

note "verify=none is logged at warn"
cat >"$T/node-c.yaml" <<EOF
node: node-c
redis: "rediss://127.0.0.1:$GOOD/0?verify=none"
group: tls-insecure
jobs: $T/jobs.yaml
EOF
spawn node-c "$B" run -c "$T/node-c.yaml"
wait_for_line "$T/node-c.out" '"level":"warn","event":"tls_verify_off"' 10 >/dev/null
wait_for_line "$T/node-c.out" '"to":"working"' 10 >/dev/null

note "verify=none warns on stderr in every command that connects; a verified URL does not"
warned="baton: %s: warning: TLS certificate verification is off (verify=none): anyone on the network path can pose as Redis"
# warns NAME ARGS...: the command prints the warning once, on stderr.
warns() {
    local name=$1; shift
    "$B" "$name" "$@" >"$T/w.out" 2>"$T/w.err"
    # shellcheck disable=SC2059
    assert_eq 1 "$(grep -cxF "$(printf "$warned" "$name")" "$T/w.err")" \
        "the verify=none warning of baton $name (stderr: $(cat "$T/w.err"))"
    grep -q 'verification is off' "$T/w.out" && fail "baton $name: the warning on stdout"
    return 0
}
warns lock --url "rediss://127.0.0.1:$GOOD/0?verify=none" tls:k -- true
warns status -c "$T/node-c.yaml"
warns history -c "$T/node-c.yaml" tick
warns pause -c "$T/node-c.yaml" tick
warns resume -c "$T/node-c.yaml" tick
warns trigger -c "$T/node-c.yaml" tick
warns step-down -c "$T/node-c.yaml" --wait 5s
"$B" lock --url "$URL" tls:k -- true 2>"$T/w.err" || fail "lock over verified TLS: $(cat "$T/w.err")"
grep -q 'verification is off' "$T/w.err" && fail "lock over verified TLS warns: $(cat "$T/w.err")"
"$B" status -c "$T/node-a.yaml" >/dev/null 2>"$T/w.err" || fail "status over verified TLS"
grep -q 'verification is off' "$T/w.err" && fail "status over verified TLS warns: $(cat "$T/w.err")"
note "a repeated TLS parameter is refused, whichever comes last"
lock_fails "verify= twice" "rediss://127.0.0.1:$GOOD/0?ca=$C/ca.pem&verify=peer&verify=none" \
    "invalid URL: verify= is given twice (give each parameter once)" 64
for n in a b c; do kill -TERM "$(pid_of "node-$n")"; done
for n in a b c; do wait_exit "node-$n" 15; assert_eq 0 "$EXIT_CODE" "exit status of node-$n"; done
note "ok"
