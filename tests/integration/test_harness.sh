# test_harness.sh -- the harness's own promises that other tests rely on:
# a redis-server counts as started only when the server answering on its
# port is the process just launched (a port held by another server of the
# test, or of a test running beside it, answers PING too).
. "$BATON_TESTS_DIR/lib/harness.sh"
redis_start
first_port=$REDIS_PORT first_pid=$REDIS_PID
note "a port another redis-server holds is not taken for a new one's"
( REDIS_ARGS=(); REDIS_DIR="$T/second"; mkdir -p "$REDIS_DIR"; redis_launch "$first_port" ) &&
    fail "redis_launch on port $first_port (held by pid $first_pid) reported success"
serves_as "$first_pid" redis-cli -p "$first_port" || fail "the first server no longer answers as itself"
note "redis_start picks another port then"
redis_start
[ "$REDIS_PORT" != "$first_port" ] || fail "two servers on port $first_port"
serves_as "$REDIS_PID" redis-cli -p "$REDIS_PORT" || fail "the second server does not answer as itself"
note "ok"
