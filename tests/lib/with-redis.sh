# with-redis.sh CMD [ARGS...] -- runs CMD with a throwaway redis-server.
# CMD gets BATON_TEST_URL (redis://127.0.0.1:PORT/0), BATON_TEST_REDIS_PORT
# and BATON_TEST_REDIS_PID; the server is stopped when CMD ends.
. "$(dirname "$0")/harness.sh"
redis_start
export BATON_TEST_URL=$REDIS_URL BATON_TEST_REDIS_PORT=$REDIS_PORT BATON_TEST_REDIS_PID=$REDIS_PID
"$@"
