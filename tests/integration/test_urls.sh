# test_urls.sh -- one grammar of Redis URLs: every URL of a list of good and
# bad ones gets the same verdict from `baton check`, `baton run` and `baton
# lock`, and the same message (with file:line:col from check and run alike).
# The library's parser (baton_url_check) is the only one.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
long_path=/tmp/$(printf 'x%.0s' $(seq 1 196)).sock   # 206 bytes: too long for sun_path

# URL|verdict (ok, or the message after "invalid URL: ")
cases=$(cat <<EOF
redis://127.0.0.1:1/0|ok
redis://localhost|ok
redis://[::1]:1/2|ok
redis://u:p%40ss@127.0.0.1:1/0|ok
unix:///tmp/baton-no-such.sock|ok
unix:///tmp/baton-no-such.sock?db=3&user=u&password=x%26y|ok
http://h|unsupported scheme "http://" (use redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster://, rediss-cluster://, redis-quorum:// or rediss-quorum://)
localhost:6379|expected a URL like redis://host:6379/0 or unix:///run/redis/redis.sock
redis://|missing host (redis://host:6379/0)
redis://h:0|invalid port (1..65535)
redis://h:65536|invalid port (1..65535)
redis://h/x|invalid database number after the host (redis://host:6379/0)
redis://h/1?a=b|redis:// URLs take no query (use /DB for the database; TLS parameters need rediss://)
redis://[::1|invalid IPv6 address (write redis://[::1]:6379)
redis://h o|invalid character in the host name
redis://u%00@h|bad percent-escape in the user or password
redis://u:p%zz@h|bad percent-escape in the user or password
unix://relative.sock|the socket path must be absolute (unix:///run/redis/redis.sock)
unix:///run/redis.sock?password=%zz|bad percent-escape
unix:///run/redis.sock?timeout=5|unknown URL parameter "timeout" (use db=, user=, password=)
unix:///run/redis.sock?db=1&db=2|db= is given twice (give each parameter once)
rediss://127.0.0.1:1/0?verify=peer&verify=none|verify= is given twice (give each parameter once)
unix://$long_path|the socket path is 206 bytes long; the system allows at most 107
EOF
)

echo 'jobs: []' > "$T/jobs.yaml"
n=0
while IFS='|' read -r url verdict; do
    n=$((n + 1))
    cfg=$T/c$n.yaml
    printf 'node: n\nredis: "%s"\njobs: %s\nredis_timeout: 200ms\npoll: 1s\n' "$url" "$T/jobs.yaml" > "$cfg"
    want="$cfg:2:8: redis: invalid URL: $verdict"

    # check: validates without connecting.
    "$B" check -c "$cfg" >"$T/check.out" 2>"$T/check.err"; crc=$?
    # run: refuses a bad URL at once with the same line; starts with a good one.
    spawn run "$B" run -c "$cfg"
    for _ in $(seq 1 200); do
        alive "$(pid_of run)" || break
        grep -q '"event":"started"' "$T/run.out" && break
        sleep 0.01
    done
    if alive "$(pid_of run)"; then
        kill -TERM "$(pid_of run)"; wait_exit run 5; rrc=started
    else
        wait_exit run 1; rrc=$EXIT_CODE
    fi
    # lock: the same parser, without a file.
    "$B" lock --url "$url" --wait 0 k -- true >"$T/lock.out" 2>"$T/lock.err"; lrc=$?

    if [ "$verdict" = ok ]; then
        assert_eq 0 "$crc" "check accepts $url ($(cat "$T/check.err"))"
        assert_eq started "$rrc" "run accepts $url ($(cat "$T/run.err"))"
        grep -q 'invalid URL' "$T/lock.err" && fail "lock refuses $url: $(cat "$T/lock.err")"
        [ "$lrc" -ne 0 ] || fail "lock reached a server that does not exist ($url)"
    else
        [ "$crc" -ne 0 ] || fail "check accepts $url"
        [ "$rrc" != started ] && [ "$rrc" -ne 0 ] || fail "run accepts $url"
        grep -qxF "baton: check: $want" "$T/check.err" \
            || fail "check on $url: want [$want], got [$(cat "$T/check.err")]"
        grep -qxF "baton: run: $want" "$T/run.err" \
            || fail "run on $url: want [$want], got [$(cat "$T/run.err")]"
        grep -qF "baton: lock: invalid URL: $verdict" "$T/lock.err" \
            || fail "lock on $url: want [invalid URL: $verdict], got [$(cat "$T/lock.err")]"
        [ "$lrc" -ne 0 ] || fail "lock accepts $url"
    fi
    for f in "$T/check.err" "$T/run.err" "$T/lock.err"; do
        grep -q 'p@ss\|x&y' "$f" && fail "a password in $(basename "$f") for $url"
    done
done <<< "$cases"
note "$n URLs: check, run and lock agree"
note "ok"
