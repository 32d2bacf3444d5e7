# bench_tls.sh [--smoke] [--seconds S] [--threads N] -- the cost of TLS and
# of durable grants (WAIT), printed as JSON (tls_lock_cycles.c says what is
# measured). Starts, with certificates made by openssl, one redis-server
# with a plain TCP port and a TLS port, and a replica of it. For scale, the
# same server's own TLS cost in the same run: redis-benchmark SET with as
# many clients as threads, plain and TLS (a second JSON line).
BATON_TESTS_DIR=${BATON_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$BATON_TESTS_DIR/lib/harness.sh" || exit 2
. "$BATON_TESTS_DIR/lib/tls.sh"
args=() threads=16 smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) args+=(--seconds 0.4 --threads 4); threads=4 smoke=1 ;;
    --seconds) args+=("$1" "$2"); shift ;;
    --threads) args+=("$1" "$2"); threads=$2; shift ;;
    *) fail "usage: bench_tls.sh [--smoke] [--seconds S] [--threads N]" ;;
    esac
    shift
done
prog=$BATON_BUILD_DIR/tests/tls_lock_cycles
[ -x "$prog" ] || fail "$prog is not built"
tls_make_certs "$T/certs"
tport=$(free_port)
redis_start --tls-port "$tport" --tls-cert-file "$T/certs/server.pem" \
    --tls-key-file "$T/certs/server.key" --tls-ca-cert-file "$T/certs/ca.pem" --tls-auth-clients no
master=$REDIS_PORT
redis_start --replicaof 127.0.0.1 "$master"
deadline=$(( $(now_ms) + 10000 ))
until redis-cli -p "$REDIS_PORT" info replication | grep -q 'master_link_status:up'; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "the replica did not connect"
    sleep 0.05
done
"$prog" --plain "redis://127.0.0.1:$master/0" --tls "rediss://127.0.0.1:$tport/0?ca=$T/certs/ca.pem" \
    "${args[@]}" || fail "tls_lock_cycles failed"
command -v redis-benchmark >/dev/null || fail "redis-benchmark is not installed (apt-get install redis-tools)"
n=$(( smoke ? 5000 : 100000 ))
# rb CLIENTS REQUESTS ARGS...: redis-benchmark SET's requests/s
rb() {
    local c=$1 m=$2
    shift 2
    redis-benchmark -t set -n "$m" -c "$c" --csv "$@" 2>/dev/null | tail -n1 | cut -d'"' -f4
}
# set_json CLIENTS REQUESTS: {"clients", "plain_per_s", "tls_per_s", "tls_ratio"}
set_json() {
    local plain tls
    plain=$(rb "$1" "$2" -p "$master") tls=$(rb "$1" "$2" -p "$tport" --tls --cacert "$T/certs/ca.pem")
    [ -n "$plain" ] && [ -n "$tls" ] || fail "redis-benchmark failed"
    echo "{\"clients\":$1,\"plain_per_s\":$plain,\"tls_per_s\":$tls,\"tls_ratio\":$(awk "BEGIN{printf \"%.2f\", $tls / $plain}")}"
}
many=$(set_json "$threads" "$n") || exit 1
one=$(set_json 1 $(( n / 2 ))) || exit 1
echo "{\"redis_benchmark_set\":$many,\"redis_benchmark_set_one_client\":$one}"
