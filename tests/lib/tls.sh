# tls.sh -- certificates and TLS redis-servers for tests and benchmarks.
# Source it after harness.sh:
#   . "$BATON_TESTS_DIR/lib/tls.sh"
#   tls_make_certs DIR      makes, in DIR (all signed by DIR/ca.pem unless
#                           said otherwise; keys without passphrase):
#       ca.pem              the CA the clients trust
#       server.{pem,key}    for IP 127.0.0.1 and DNS localhost
#       client.{pem,key}    a client certificate (mutual TLS)
#       wrongname.{pem,key} for DNS other.example only
#       expired.{pem,key}   for 127.0.0.1, valid in January 2020 only
#       otherca.pem         another CA; wrongca.{pem,key}: for 127.0.0.1,
#                           signed by it
#   tls_redis_start NAME CERT KEY [REDIS-SERVER ARGS...]
#                           starts redis-server with --port 0 and a TLS port
#                           on loopback, presenting CERT; sets TLS_PORT
#                           and TLS_PID_<NAME>; --tls-auth-clients is "no"
#                           unless the args say otherwise.
# Fails (never skips) when openssl or redis-server is missing.

command -v openssl >/dev/null || fail "openssl is not installed (apt-get install openssl)"

# tls_sign DIR NAME SUBJ SAN [CA-NAME] [openssl ca args...]: a key and a
# certificate signed by DIR/CA-NAME.pem (default ca).
tls_sign() {
    local dir=$1 name=$2 subj=$3 san=$4 ca=${5:-ca}
    shift 5 2>/dev/null || shift $#
    openssl req -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -out "$dir/$name.csr" \
        -subj "$subj" -addext "subjectAltName=$san" >/dev/null 2>&1 ||
        fail "openssl: cannot make the request for $name"
    openssl ca -batch -config "$dir/ca.cnf" -cert "$dir/$ca.pem" -keyfile "$dir/$ca.key" \
        -in "$dir/$name.csr" -out "$dir/$name.pem" -notext "$@" >/dev/null 2>&1 ||
        fail "openssl: cannot sign $name"
    chmod 600 "$dir/$name.key"
}

tls_make_certs() {
    local dir=$1
    mkdir -p "$dir/newcerts"
    : >"$dir/index.txt"
    echo 01 >"$dir/serial"
    cat >"$dir/ca.cnf" <<EOF
[ ca ]
default_ca = CA_default
[ CA_default ]
dir = $dir
database = $dir/index.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
default_md = sha256
policy = policy_any
copy_extensions = copy
unique_subject = no
[ policy_any ]
commonName = supplied
EOF
    local c
    for c in ca otherca; do
        openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/$c.key" -out "$dir/$c.pem" \
            -days 2 -subj "/CN=baton-test-$c" >/dev/null 2>&1 || fail "openssl: cannot make $c"
    done
    tls_sign "$dir" server /CN=localhost "IP:127.0.0.1,DNS:localhost" ca -days 2
    tls_sign "$dir" client /CN=baton-client "DNS:baton-client" ca -days 2
    tls_sign "$dir" wrongname /CN=other.example "DNS:other.example" ca -days 2
    tls_sign "$dir" expired /CN=localhost "IP:127.0.0.1,DNS:localhost" ca \
        -startdate 20200101000000Z -enddate 20200102000000Z
    tls_sign "$dir" wrongca /CN=localhost "IP:127.0.0.1,DNS:localhost" otherca -days 2
}

tls_redis_start() {
    command -v redis-server >/dev/null || fail "redis-server is not installed (apt-get install redis-server)"
    local name=$1 cert=$2 key=$3 ca
    shift 3
    ca=$(dirname "$cert")/ca.pem
    local attempt port pid i dir
    for attempt in $(seq 1 30); do
        port=$(free_port)
        dir="$T/redis-tls-$name"
        mkdir -p "$dir"
        redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --dir "$dir" --save '' \
            --appendonly no --daemonize no --logfile "$dir/redis.log" \
            --tls-cert-file "$cert" --tls-key-file "$key" --tls-ca-cert-file "$ca" \
            --tls-auth-clients no "$@" </dev/null >/dev/null 2>&1 &
        pid=$!
        for i in $(seq 1 250); do
            # The server on the port is the one started (serves_as), over TLS
            # whatever its certificate.
            if ! kill -0 "$pid" 2>/dev/null; then break; fi
            if serves_as "$pid" redis-cli --tls --insecure --cert "$(dirname "$cert")/client.pem" \
                --key "$(dirname "$cert")/client.key" -p "$port"; then
                HARNESS_REDIS_PIDS+=("$pid")
                TLS_PORT=$port
                printf -v "TLS_PID_$name" '%s' "$pid"
                return 0
            fi
            sleep 0.02
        done
        kill -KILL "$pid" 2>/dev/null
    done
    fail "could not start a TLS redis-server ($name)"
}
