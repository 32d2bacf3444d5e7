# test_page.sh -- the status page (GET /) in a real browser: headless
# Chromium shows a follower's page, and the leader it names changes, by the
# page's own refresh, after a SIGTERM handover (the page's title, read from
# the DevTools list of the live browser); the DOM after the page refreshed
# itself (nodes, jobs, a paused job, transitions); no external asset; a
# screenshot, at a desktop and a phone's width; the same page in a terminal
# browser (w3m).
#
#   BATON_SCREENSHOT=deploy/status-page.png   also keep the desktop screenshot
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
for tool in chromium curl w3m; do
    command -v $tool >/dev/null || fail "$tool is not installed (bash deploy/setup.sh --deps-only installs it)"
done
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
        --disable-background-networking --disable-component-update --disable-sync
        --disable-dev-shm-usage --hide-scrollbars)

cat > "$T/jobs.yaml" <<'EOF'
jobs:
  - name: invoice-run
    schedule: "*/2 * * * * *"
    command: ["true"]
  - name: cleanup
    schedule: "*/3 * * * * *"
    shell: "exit 1"
  - name: daily-report
    schedule: "0 7 * * MON-FRI"
    timezone: Europe/Berlin
    command: ["true"]
  - name: archive
    schedule: "@hourly"
    command: ["true"]
    enabled: false
EOF
redis_start
for n in web-1 web-2 web-3; do
    printf 'node: %s\nredis: %s\ngroup: payments\nlease: {ttl: 2s}\nredis_timeout: 300ms\npoll: 1s\nshutdown_grace: 2s\njobs: %s\nhttp: {listen: "127.0.0.1:0"}\n' \
        $n "$REDIS_URL" "$T/jobs.yaml" > "$T/$n.yaml"
    spawn $n "$B" run -c "$T/$n.yaml"
    sleep 0.3 # web-1 leads: the screenshot is the same every time
done
leader() { rcli get 'baton:{payments}:leader' 2>/dev/null | sed -n 's/^[0-9a-f]\{48\}://p'; }
wait_leader() { # wait_leader TIMEOUT_S [NOT_THIS_NODE]
    local deadline=$(( $(now_ms) + $1 * 1000 )) l
    while :; do
        l=$(leader)
        if [ -n "$l" ] && [ "$l" != "${2:-}" ]; then echo "$l"; return 0; fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "no new leader within $1 s (still: '$l')"
        sleep 0.02
    done
}
L1=$(wait_leader 10)
F=$(for n in web-1 web-2 web-3; do [ "$n" != "$L1" ] && echo $n; done | tail -n1)
url=http://$(wait_for_line "$T/$F.out" '"event":"http_listening"' 5 | sed 's/.*"listen":"\([^"]*\)".*/\1/')/
note "leader $L1; the page of follower $F: $url"

note "Chromium shows the page; its title names $L1"
mkdir -p "$T/chrome"
spawn chrome "${CHROME[@]}" --user-data-dir="$T/chrome" --remote-debugging-port=0 "$url"
deadline=$(( $(now_ms) + 60000 ))
until [ -s "$T/chrome/DevToolsActivePort" ]; do
    [ "$(now_ms)" -lt $deadline ] || fail "Chromium did not start: $(tail -n 5 "$T/chrome.err")"
    alive "$(pid_of chrome)" || fail "Chromium exited: $(tail -n 5 "$T/chrome.err")"
    sleep 0.1
done
devtools=http://127.0.0.1:$(head -n1 "$T/chrome/DevToolsActivePort")
title() { curl -s -m 2 "$devtools/json/list" | grep -o '"title": *"baton [^"]*"' | sed 's/.*"\(baton [^"]*\)"/\1/'; }
wait_title() { # wait_title REGEX TIMEOUT_S: prints the title
    local deadline=$(( $(now_ms) + $2 * 1000 )) t
    while :; do
        t=$(title)
        if [[ $t =~ $1 ]]; then echo "$t"; return 0; fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "the page's title is [$t], never /$1/ within $2 s"
        sleep 0.1
    done
}
t=$(wait_title "^baton payments: leader $L1 \\(term [0-9]+\\)$" 30)
note "  title: $t"

note "SIGTERM $L1: the page, refreshing itself, names the new leader"
t0=$(now_ms)
kill -TERM "$(pid_of "$L1")"
L2=$(wait_leader 5 "$L1")
t=$(wait_title "^baton payments: leader $L2 \\(term [0-9]+\\)$" 15)
note "  title: $t, $(( $(now_ms) - t0 )) ms after the SIGTERM (the page refreshes every 2 s)"
wait_exit "$L1" 10
kill -TERM "$(pid_of chrome)"; wait_exit chrome 20

note "baton pause daily-report: the page says who paused it, when and why"
"$B" pause -c "$T/$L2.yaml" --reason "month-end freeze" daily-report > "$T/pause.out" 2>&1 \
    || fail "baton pause: $(cat "$T/pause.out")"
deadline=$(( $(now_ms) + 10000 ))
until curl -s -m 2 "$url" | grep -q '<li><b>daily-report</b> <span class="warn">paused</span> since '; do
    [ "$(now_ms)" -lt $deadline ] || fail "the page does not show daily-report paused: $(curl -s -m 2 "$url" | grep -o '<table id="jobs".*' | head -c 400)"
    sleep 0.2
done

note "the DOM once the page has refreshed itself"
timeout 90 "${CHROME[@]}" --user-data-dir="$T/chrome-dom" --virtual-time-budget=5000 --dump-dom "$url" \
    >"$T/dom.html" 2>"$T/dom.err" || fail "chromium --dump-dom: $(tail -n 5 "$T/dom.err")"
grep -qE '<body data-refreshed="[1-9][0-9]*">' "$T/dom.html" || fail "the page did not refresh itself: $(grep -o '<body[^>]*>' "$T/dom.html")"
grep -q "<dd id=\"leader\" data-leader=\"$L2\">" "$T/dom.html" || fail "the DOM names another leader: $(grep 'id="leader"' "$T/dom.html")"
rows() { awk -v id="$1" 'index($0, "<table id=\"" id "\"") {on = 1} on && /<\/table>/ {on = 0} on' "$T/dom.html" | grep -c '<tr><td'; }
assert_eq 3 "$(rows nodes)" "node rows (the one that left is listed as stopped)"
grep -q "<td>$L1</td><td class=\"mute\">stopped</td>" "$T/dom.html" || fail "$L1 is not shown stopped"
assert_eq 4 "$(rows jobs)" "job rows"
grep -q '<td>archive</td><td><span class="mute">never</span></td><td></td><td><span class="mute">disabled' "$T/dom.html" \
    || fail "the disabled job is not shown so"
grep -q '<td>invoice-run</td>.*class="ok">ok' "$T/dom.html" || fail "invoice-run's last run is not shown ok"
grep -q '<td>cleanup</td>.*class="bad">failed <span class="mute">(exit 1)' "$T/dom.html" || fail "cleanup's failure is not shown"
[ "$(rows transitions)" -ge 2 ] || fail "no transitions shown"
grep -q '<td>daily-report</td>.*<td><span class="warn" title="since [^"]* by [^"]*: month-end freeze">paused</span></td>' "$T/dom.html" \
    || fail "daily-report's row does not say paused: $(grep '<td>daily-report' "$T/dom.html")"
grep -qE '<li><b>daily-report</b> <span class="warn">paused</span> since [0-9T:.-]+Z by [^ ]+: month-end freeze</li>' "$T/dom.html" \
    || fail "the page does not say who paused daily-report: $(grep -A3 'id="paused"' "$T/dom.html")"
# Self-contained: nothing is loaded from elsewhere.
grep -qiE '<(script|img|link|iframe)[^>]*(src|href)=' "$T/dom.html" && fail "the page loads an asset"
grep -qiE '(src|href|url\()=?"?(https?:)?//' "$T/dom.html" && fail "the page refers to another origin"
curl -s -D "$T/headers" -o /dev/null "$url"
grep -qi "^Content-Security-Policy: default-src 'none'" "$T/headers" || fail "no CSP on the page"

note "screenshots: desktop and phone"
for size in 1100,900 390,844; do
    png=$T/page-${size%,*}.png
    timeout 90 "${CHROME[@]}" --user-data-dir="$T/chrome-shot" --virtual-time-budget=3000 \
        --window-size=$size --screenshot="$png" "$url" >"$T/shot.out" 2>&1 || fail "screenshot: $(tail -n 5 "$T/shot.out")"
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
    [ "$(stat -c %s "$png")" -gt 10000 ] || fail "$png is suspiciously small"
done
if [ -n "${BATON_SCREENSHOT:-}" ]; then
    cp "$T/page-1100.png" "$BATON_SCREENSHOT" && note "  kept $BATON_SCREENSHOT"
fi

note "a terminal browser reads it (w3m, no JavaScript)"
# -O UTF-8: a machine without a UTF-8 locale would get "?" for "·".
w3m -dump -cols 100 -O UTF-8 "$url" > "$T/w3m.txt" 2>&1 || fail "w3m: $(cat "$T/w3m.txt")"
grep -qE "^ +$L2 · term [0-9]+ · lease" "$T/w3m.txt" || fail "w3m shows no leader line: $(head -n 12 "$T/w3m.txt")"
grep -qE "^invoice-run +[0-9.]+ m?s ago +ok \(exit 0\) +in .* \*/2 \* \* \* \* \* " "$T/w3m.txt" \
    || fail "w3m shows no job table: $(cat "$T/w3m.txt")"
grep -q "^Refresh (5 sec)" "$T/w3m.txt" || fail "no refresh without JavaScript"
grep -aqE "^daily-report .* paused " "$T/w3m.txt" || fail "w3m does not show daily-report paused: $(grep -a daily-report "$T/w3m.txt")"
grep -aqE "^ +[^ ]+ daily-report paused since [0-9T:.-]+Z by [^ ]+: month-end freeze$" "$T/w3m.txt" \
    || fail "w3m does not say who paused daily-report: $(grep -a -n paused "$T/w3m.txt")"

for n in web-1 web-2 web-3; do [ -n "${PROC_PID[$n]:-}" ] && kill -TERM "$(pid_of $n)"; done
for n in web-1 web-2 web-3; do [ -n "${PROC_PID[$n]:-}" ] && { wait_exit $n 10; assert_eq 0 "$EXIT_CODE" "$n's exit status"; }; done
note "ok"
