# test_systemd.sh -- the systemd unit as `cmake --install` installs it:
# hardened (systemd-analyze security --offline=true: exposure <= 4.5),
# valid (systemd-analyze verify), its paths the installed ones,
# TimeoutStopSec and WatchdogSec consistent with the installed baton.yaml;
# its reload validates first: the ExecReload lines, run in order as systemd
# runs them, refuse a bad jobs.yaml before any SIGHUP and apply a good one;
# the sysusers.d and tmpfiles.d entries apply; the sample configuration is
# never overwritten; deploy/README.md's drop-ins apply to it as written.
. "$BATON_TESTS_DIR/lib/harness.sh"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (apt-get install systemd)"
[ -x "${BATON_NOTIFY_LISTEN:-}" ] || fail "BATON_NOTIFY_LISTEN is not set (run the test through ctest)"
prefix=$T/root
mkdir "$T/cwd" # the install writes nothing where it is run (the source tree, often)
(cd "$T/cwd" && cmake --install "$BATON_BUILD_DIR" --prefix "$prefix") >"$T/install.log" 2>&1 || fail "install: $(tail -5 "$T/install.log")"
[ -z "$(ls -A "$T/cwd")" ] || fail "cmake --install wrote in its working directory: $(ls -A "$T/cwd")"
unit=$prefix/lib/systemd/system/baton.service
for f in "$unit" "$prefix/lib/sysusers.d/baton.conf" "$prefix/lib/tmpfiles.d/baton.conf" \
         "$prefix/etc/baton/baton.yaml" "$prefix/etc/baton/jobs.yaml"; do
    [ -s "$f" ] || fail "not installed: ${f#$prefix/}"
done
# key KEY: the unit's values of KEY, one per line
key() { sed -n "s/^$1=//p" "$unit"; }

note "systemd-analyze security --offline=true"
(cd "$T" && systemd-analyze security --offline=true "$unit") > "$T/security.txt" 2>&1
score=$(sed -n 's/.*Overall exposure level for baton.service: \([0-9.]*\).*/\1/p' "$T/security.txt")
[ -n "$score" ] || fail "no exposure level: $(tail -n 5 "$T/security.txt")"
note "  exposure $score (target <= 4.5)"
awk -v s="$score" 'BEGIN {exit !(s <= 4.5)}' || fail "exposure $score > 4.5: $(grep '✗' "$T/security.txt")"
grep -q "^# it $score, \"OK\"" "$BATON_SOURCE_DIR/deploy/baton.service" \
    || fail "deploy/baton.service's comment does not give the measured exposure $score"

note "systemd-analyze verify; the unit names the installed files"
(cd "$T" && systemd-analyze verify --man=no "$unit") > "$T/verify.txt" 2>&1 || fail "verify: $(cat "$T/verify.txt")"
[ -s "$T/verify.txt" ] && fail "verify has remarks: $(cat "$T/verify.txt")"
assert_eq "notify" "$(key Type)" "Type"
assert_eq "$prefix/bin/baton run -c $prefix/etc/baton/baton.yaml" "$(key ExecStart)" "ExecStart"
assert_eq "$prefix/bin/baton check -c $prefix/etc/baton/baton.yaml
/bin/kill -HUP \$MAINPID" "$(key ExecReload)" "ExecReload: validate, then SIGHUP"
assert_eq baton "$(key User)" "User"
for k in NoNewPrivileges ProtectSystem ProtectHome PrivateTmp CapabilityBoundingSet \
         SystemCallFilter Restart; do
    grep -q "^$k=" "$unit" || fail "the unit does not set $k"
done
assert_eq on-failure "$(key Restart)" "Restart"
assert_eq "" "$(key CapabilityBoundingSet)" "CapabilityBoundingSet (none)"

note "deploy/README.md's drop-ins, pasted as written, apply to the unit"
# Each sh block of deploy/README.md that writes a drop-in, as a rendered
# page shows it (without its list indentation), run with /etc/systemd/system
# under $T and systemctl only recorded; then the unit with that drop-in:
# verify has no remark (an unknown key or a bad value would be one), and
# the key is one the unit sets or names in its comments.
dropins=$T/etc-systemd/baton.service.d
awk '/^ *```sh$/ { ind = index($0, "`") - 1; code = 1; n++; next }
     code && /^ *```$/ { code = 0; next }
     code { print substr($0, ind + 1) > (dir "/block." n) }' dir="$T" "$BATON_SOURCE_DIR/deploy/README.md"
blocks=0
for b in "$T"/block.*; do
    grep -q 'baton.service.d' "$b" || continue
    blocks=$((blocks + 1))
    rm -rf "$dropins" "$unit.d"
    sed "s|/etc/systemd/system|$T/etc-systemd|g" "$b" >"$b.sh"
    (systemctl() { echo "systemctl $*" >>"$T/systemctl.log"; }; . "$b.sh") >"$T/block.out" 2>&1 ||
        fail "deploy/README.md's block fails as written: $(cat "$b") -- $(cat "$T/block.out")"
    conf=$(ls "$dropins"/*.conf 2>/dev/null)
    [ -n "$conf" ] || fail "deploy/README.md's block writes no drop-in: $(cat "$b")"
    cp -r "$dropins" "$unit.d"
    (cd "$T" && systemd-analyze verify --man=no "$unit") >"$T/verify-dropin.txt" 2>&1 ||
        fail "verify with $(basename "$conf"): $(cat "$T/verify-dropin.txt")"
    [ -s "$T/verify-dropin.txt" ] && fail "verify with $(basename "$conf") has remarks: $(cat "$T/verify-dropin.txt")"
    for k in $(sed -n 's/^\([A-Za-z]*\)=.*/\1/p' "$conf"); do
        grep -qE "^#? *$k=" "$unit" || fail "the drop-in sets $k, which the unit neither sets nor names"
    done
    rm -rf "$unit.d"
done
assert_eq 3 "$blocks" "drop-ins in deploy/README.md (write paths, a JIT, home directories)"
grep -q 'daemon-reload' "$T/systemctl.log" || fail "deploy/README.md's drop-ins are not followed by systemctl daemon-reload"

note "TimeoutStopSec and WatchdogSec fit the installed baton.yaml"
secs() { echo "${1%s}"; } # 45s -> 45
"$prefix/bin/baton" check -c "$prefix/etc/baton/baton.yaml" > "$T/check.txt" 2>&1 || fail "the installed baton.yaml: $(cat "$T/check.txt")"
grace=$(sed -n 's/^shutdown_grace: \([0-9]*\)s$/\1/p' "$T/check.txt")
timeout_s=$(sed -n 's/^redis_timeout: \([0-9]*\)s$/\1/p' "$T/check.txt")
kill_grace=$("$prefix/bin/baton" check --reference | awk -F'|' '$2 ~ /`kill_grace`/ {gsub(/[` s]/, "", $4); print $4}')
[ -n "$grace" ] && [ -n "$timeout_s" ] && [ -n "$kill_grace" ] || fail "cannot read shutdown_grace/redis_timeout/kill_grace ($grace/$timeout_s/$kill_grace)"
stop=$(secs "$(key TimeoutStopSec)")
[ "$stop" -ge $(( grace + kill_grace + 5 )) ] || fail "TimeoutStopSec ${stop}s < shutdown_grace ${grace}s + kill_grace ${kill_grace}s + 5s"
wd=$(secs "$(key WatchdogSec)")
[ "$wd" -ge $(( 4 * timeout_s )) ] || fail "WatchdogSec ${wd}s < 4 x redis_timeout"
note "  TimeoutStopSec ${stop}s >= shutdown_grace ${grace}s + kill_grace ${kill_grace}s + 5s; WatchdogSec ${wd}s"

note "systemctl reload, as systemd runs it: ExecReload lines in order, stop at the first failure"
redis_start
cfg=$prefix/etc/baton/baton.yaml
sed -i "s|^redis: .*|redis: $REDIS_URL|; s|^#node: .*|node: unit-1|" "$cfg"
cat > "$prefix/etc/baton/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    command: ["true"]
EOF
spawn notify "$BATON_NOTIFY_LISTEN" "$T/notify.sock" 120
wait_for_line "$T/notify.out" '^ready$' 5 >/dev/null
# ExecStart, as systemd would run it
read -r -a start <<< "$(key ExecStart)"
NOTIFY_SOCKET=$T/notify.sock spawn baton "${start[@]}"
wait_for_line "$T/notify.out" 'READY=1' 10 >/dev/null
MAINPID=$(pid_of baton)
reload() { # runs the ExecReload lines; returns the first failure's status
    local line rc
    while IFS= read -r line; do
        line=${line//\$MAINPID/$MAINPID}
        read -r -a cmd <<< "$line"
        "${cmd[@]}" >>"$T/reload.out" 2>&1 || { rc=$?; return $rc; }
    done < <(key ExecReload)
    return 0
}
printf 'jobs:\n  - name: tick\n    schedule: "61 * * * *"\n    command: ["true"]\n' > "$prefix/etc/baton/jobs.yaml"
reload; rc=$?
assert_eq 78 "$rc" "a reload with a bad jobs.yaml fails (baton check's EX_CONFIG)"
grep -q "jobs.yaml:3:[0-9]*: " "$T/reload.out" || fail "the failed reload does not say file:line:col: $(cat "$T/reload.out")"
sleep 0.5
grep -q '"event":"signal_received"' "$T/baton.out" && fail "a bad file reached the supervisor: $(grep signal_received "$T/baton.out")"
grep -q 'RELOADING=1' "$T/notify.out" && fail "RELOADING=1 for a reload that failed validation"
cat > "$prefix/etc/baton/jobs.yaml" <<'EOF'
jobs:
  - name: tick
    schedule: "* * * * * *"
    command: ["true"]
  - name: tock
    schedule: "*/2 * * * * *"
    command: ["true"]
EOF
reload || fail "a good reload failed: $(cat "$T/reload.out")"
wait_for_line "$T/baton.out" '"event":"reloaded".*"jobs":2' 5 >/dev/null
wait_for_line "$T/notify.out" 'RELOADING=1' 5 >/dev/null
[ "$(grep -c 'READY=1' "$T/notify.out")" -ge 2 ] || fail "no READY=1 after the reload: $(cat "$T/notify.out")"
kill -TERM "$MAINPID"
wait_exit baton 15
assert_eq 0 "$EXIT_CODE" "baton run's exit status after SIGTERM"
grep -q 'STOPPING=1' "$T/notify.out" || fail "no STOPPING=1"

note "sysusers.d and tmpfiles.d entries apply"
sys=$T/sysroot
mkdir -p "$sys/etc"
touch "$sys/etc/passwd" "$sys/etc/group" "$sys/etc/shadow" "$sys/etc/gshadow"
systemd-sysusers --root="$sys" "$prefix/lib/sysusers.d/baton.conf" >"$T/sysusers.txt" 2>&1 || fail "sysusers: $(cat "$T/sysusers.txt")"
grep -q '^baton:x:[0-9]*:[0-9]*:baton supervisor:/var/lib/baton:/usr/sbin/nologin$' "$sys/etc/passwd" \
    || fail "no baton user: $(cat "$sys/etc/passwd")"
systemd-tmpfiles --root="$sys" --create "$prefix/lib/tmpfiles.d/baton.conf" >"$T/tmpfiles.txt" 2>&1 || fail "tmpfiles: $(cat "$T/tmpfiles.txt")"
[ -d "$sys/var/lib/baton" ] || fail "tmpfiles did not create /var/lib/baton"
assert_eq 750 "$(stat -c %a "$sys/var/lib/baton")" "/var/lib/baton's mode"
assert_eq 750 "$(stat -c %a "$sys$prefix/etc/baton")" "the configuration directory's mode"

note "a second install keeps the configuration"
echo "# mine" >> "$cfg"
cmake --install "$BATON_BUILD_DIR" --prefix "$prefix" >"$T/install2.log" 2>&1 || fail "second install failed"
tail -n1 "$cfg" | grep -qx "# mine" || fail "the second install overwrote baton.yaml"
grep -q "Keeping: $cfg" "$T/install2.log" || fail "the install does not say it kept baton.yaml"
note "ok"
