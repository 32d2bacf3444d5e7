# test_package.sh -- the Debian packages, as an operator meets them on a
# pristine Debian 12: deploy/package.sh builds them from the tree; lintian
# finds no error in them; `apt-get install ./baton_*.deb ./libbaton0_*.deb
# ./libbaton-dev_*.deb` installs them into a fresh debootstrap (minbase)
# root, made once per machine the way ../shared/tools/fresh-debian makes it
# and copied for each run; then, in that root, as a user would:
#   - the baton user and /etc/baton (0750 root:baton) exist, the samples are
#     conffiles, the unit is enabled and nothing runs;
#   - baton --version, man baton (and the other pages), baton check on the
#     shipped samples; an operator outside the group baton is told
#     "permission denied: /etc/baton is 0750 root:baton (run as root or join
#     the group baton)";
#   - the unit's ExecStartPre and ExecStart lines, run as its User= in its
#     WorkingDirectory=, against a throwaway redis-server, without the
#     libmicrohttpd12 it recommends: the node leads and runs a job; SIGTERM
#     stops it;
#   - a program compiled with `pkg-config --cflags --libs baton` takes a lock;
#   - systemd-analyze verify and security --offline=true on the installed
#     unit (a chroot cannot run systemd: starting, restarting and stopping it
#     are the maintainer scripts' deb-systemd-invoke lines, checked as text);
#   - an upgrade to the same build with its version bumped keeps an edited
#     conffile and replaces an unedited one whose sample changed;
#   - dpkg -r leaves no process and keeps the configuration; dpkg -P removes
#     it.
# It prints how long the install took, how many packages it brought and the
# disk it used. Needs root (debootstrap, chroot, mount) and the network to
# Debian's archive, as apt-get does. The root gets /proc and a shared apt
# archive cache mounted; both are unmounted at the end, and the root is
# removed only once nothing is mounted in it.
. "$BATON_TESTS_DIR/lib/harness.sh"
SRC=$BATON_SOURCE_DIR
started=$(now_ms)
[ "$(id -u)" = 0 ] || fail "needs root: debootstrap, chroot and mount (CI runs as root)"
for c in debootstrap lintian chroot setpriv flock; do
    command -v "$c" >/dev/null || fail "$c is not installed (bash deploy/setup.sh --deps-only)"
done
# Shared between runs on this machine: the pristine root (fresh-debian's),
# and the .deb files apt downloaded into the roots.
pristine=${FRESH_ROOT:-$(dirname "$(mktemp -u)")/fresh-bookworm}
cache=${BATON_PACKAGE_CACHE:-/var/tmp/baton-package-test}
mkdir -p "$cache/archives/partial"
R=

# --- the root, its mounts and its processes ------------------------------
# in_root CMD...: runs CMD in the root, as root, with a clean environment,
# from / (or from $IN_DIR), within 300 s.
in_root() {
    timeout 300 chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c 'cd "$1" && shift && exec "$@"' sh \
        "${IN_DIR:-/}" "$@" </dev/null
}
# root_pids: the processes whose root directory is the root's.
root_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && echo "${p#/proc/}"
    done
}
# apt_root LINE: the shell command line LINE (apt-get) in the root, as a user
# types it, one at a time on this machine (the archive cache is shared).
apt_root() {
    flock -w 300 "$cache/lock" timeout 300 chroot "$R" /usr/bin/env -i \
        PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        sh -c "$1" </dev/null
}
package_cleanup() {
    [ -n "$R" ] || return 0
    local p
    for p in $(root_pids); do kill -KILL "$p" 2>/dev/null; done
    for p in $(seq 1 50); do [ -z "$(root_pids)" ] && break; sleep 0.1; done
    umount "$R/var/cache/apt/archives" 2>/dev/null
    umount "$R/proc" 2>/dev/null
    # never delete through a mount that is still there
    if findmnt -rn -o TARGET | grep -q "^$R"; then
        echo "[$TEST_NAME] mounts remain under $R: left in place" >&2
    else
        rm -rf "$R" "$R.owner"
    fi
}
trap 'rc=$?; package_cleanup; (exit $rc); harness_cleanup' EXIT

# --- build and lint -------------------------------------------------------
note "bash deploy/package.sh"
t=$(now_ms)
timeout 600 nice -n 10 bash "$SRC/deploy/package.sh" "$T/pkgs" >"$T/package.txt" 2>&1 ||
    fail "deploy/package.sh failed: $(tail -n 30 "$T/package.txt")"
version=$(dpkg-parsechangelog -l "$SRC/deploy/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
debs=()
for p in baton libbaton0 libbaton-dev; do
    f=$T/pkgs/${p}_${version}_$arch.deb
    [ -s "$f" ] || fail "package.sh made no $(basename "$f"): $(ls "$T/pkgs")"
    debs+=("$f")
    note "  $(basename "$f"): $(( $(stat -c %s "$f") / 1024 )) KiB, installed $(dpkg-deb -f "$f" Installed-Size) KiB"
done
note "  built in $(( ($(now_ms) - t) / 1000 )) s"

note "lintian: no error"
lintian --fail-on error --display-info "$T/pkgs/baton_${version}_$arch.changes" >"$T/lintian.txt" 2>&1 ||
    fail "lintian: $(grep -E '^[EW]:' "$T/lintian.txt" || tail -n 20 "$T/lintian.txt")"
grep -E '^[EWIP]:' "$T/lintian.txt" | sed "s/^/[$TEST_NAME]   /"

# --- a pristine Debian 12 -------------------------------------------------
if [ ! -x "$pristine/bin/bash" ]; then
    note "making the pristine Debian 12 root (once per machine): $pristine"
    t=$(now_ms)
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
    (
        flock -w 600 9 || exit 1
        [ -x "$pristine/bin/bash" ] && exit 0
        rm -rf "$pristine.part"
        timeout 600 debootstrap --variant=minbase --include=git,ca-certificates bookworm \
            "$pristine.part" ${mirror:+"$mirror"} >"$T/debootstrap.txt" 2>&1 &&
            mv "$pristine.part" "$pristine"
    ) 9>"$pristine.lock" || fail "debootstrap failed: $(tail -n 20 "$T/debootstrap.txt" 2>/dev/null)"
    note "  made in $(( ($(now_ms) - t) / 1000 )) s"
fi
# The roots of runs that were killed before their cleanup (their owner is
# gone): unmounted, then removed.
for old in "${TMPDIR:-/tmp}"/baton-package-root.*/; do
    old=${old%/}
    [ -d "$old" ] && [ -f "$old.owner" ] && ! kill -0 "$(cat "$old.owner")" 2>/dev/null || continue
    umount "$old/var/cache/apt/archives" "$old/proc" 2>/dev/null
    findmnt -rn -o TARGET | grep -q "^$old" || rm -rf "$old" "$old.owner"
done
R=$(mktemp -d "${TMPDIR:-/tmp}/baton-package-root.XXXXXX")
echo $$ >"$R.owner"
cp -a "$pristine/." "$R/" || fail "cannot copy $pristine"
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null
mount -t proc proc "$R/proc" || fail "cannot mount /proc in the root"
mount --bind "$cache/archives" "$R/var/cache/apt/archives" || fail "cannot mount the apt cache in the root"
apt_root 'apt-get update -qq' >"$T/apt-update.txt" 2>&1 || fail "apt-get update in the root: $(tail -n 5 "$T/apt-update.txt")"

# --- apt-get install ./baton_*.deb ./libbaton0_*.deb ./libbaton-dev_*.deb --
note "apt-get install ./baton_*.deb ./libbaton0_*.deb ./libbaton-dev_*.deb, in a pristine Debian 12"
mkdir -p "$R/tmp/pkgs"
cp "${debs[@]}" "$R/tmp/pkgs/"
chmod -R a+rX "$R/tmp/pkgs" # (apt's download user reads them)
count_installed() { in_root dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii'; }
n0=$(count_installed) t=$(now_ms)
apt_root 'cd /tmp/pkgs && apt-get install -y ./baton_*.deb ./libbaton0_*.deb ./libbaton-dev_*.deb' \
    >"$T/install.txt" 2>&1 || fail "apt-get install: $(tail -n 20 "$T/install.txt")"
install_s=$(awk -v ms=$(( $(now_ms) - t )) 'BEGIN {printf "%.1f", ms / 1000}')
n1=$(count_installed)
disk=$(sed -n 's/^After this operation, \(.*\) of additional disk space will be used.*/\1/p' "$T/install.txt")
note "  $(( n1 - n0 )) packages, $disk, $install_s s (downloads included unless cached)"
for p in baton libbaton0 libbaton-dev; do
    assert_eq "ii $version" "$(in_root dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$p" | tr -s ' ')" "$p installed"
done

note "installed: the baton user, /etc/baton 0750 root:baton, conffiles, the unit enabled, nothing running"
in_root getent passwd baton | grep -qE '^baton:x:[0-9]+:[0-9]+:[^:]*:/var/lib/baton:/usr/sbin/nologin$' ||
    fail "the baton user: $(in_root getent passwd baton)"
ids() { stat -c '%a %u %g' "$1"; }
uid=$(awk -F: '$1 == "baton" {print $3}' "$R/etc/passwd")
gid=$(awk -F: '$1 == "baton" {print $3}' "$R/etc/group")
assert_eq "750 0 $gid" "$(ids "$R/etc/baton")" "/etc/baton's mode and owners"
assert_eq "640 0 $gid" "$(ids "$R/etc/baton/baton.yaml")" "/etc/baton/baton.yaml's mode and owners"
assert_eq "750 $uid $gid" "$(ids "$R/var/lib/baton")" "/var/lib/baton's mode and owners"
assert_eq "/etc/baton/baton.yaml /etc/baton/jobs.yaml" \
    "$(in_root dpkg-query -W -f='${Conffiles}' baton | awk 'NF {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')" "baton's conffiles"
assert_eq /lib/systemd/system/baton.service "$(readlink "$R/etc/systemd/system/multi-user.target.wants/baton.service")" \
    "the unit enabled (multi-user.target.wants)"
[ -z "$(root_pids)" ] || fail "the install left processes running: $(ps -o pid,args -p "$(root_pids | paste -sd,)")"
# The maintainer scripts, as systemd would run them: no start on a fresh
# install, try-restart (only if it runs) on an upgrade, a stop on removal.
postinst=$(in_root cat /var/lib/dpkg/info/baton.postinst)
grep -q "deb-systemd-invoke try-restart 'baton.service'" <<<"$postinst" || fail "the postinst does not try-restart on upgrade"
grep -qE 'deb-systemd-invoke (start|restart) ' <<<"$postinst" && fail "the postinst starts the unit: $postinst"
grep -q 'deb-systemd-invoke stop baton.service' "$R/var/lib/dpkg/info/baton.prerm" || fail "the prerm does not stop the unit"

note "baton --version, man, baton check on the shipped samples"
assert_eq "baton ${version%%[-+~]*}" "$(in_root baton --version)" "baton --version"
apt_root 'apt-get install -y -qq --no-install-recommends man-db gcc libc6-dev pkg-config' >"$T/tools.txt" 2>&1 ||
    fail "the test's tools in the root: $(tail -n 20 "$T/tools.txt")"
in_root man baton >"$T/man.txt" 2>&1 || fail "man baton: $(head -n 5 "$T/man.txt")"
grep -q 'baton - ' "$T/man.txt" || fail "man baton: $(head -n 5 "$T/man.txt")"
for page in baton.yaml jobs.yaml "3 libbaton"; do
    in_root man $page >/dev/null 2>&1 || fail "man $page"
done
in_root baton check >"$T/check.txt" 2>&1 || fail "baton check on the samples: $(cat "$T/check.txt")"
grep -q '^ok: /etc/baton/baton.yaml and /etc/baton/jobs.yaml are valid' "$T/check.txt" ||
    fail "baton check on the samples: $(tail -n 3 "$T/check.txt")"
IN_DIR=/tmp in_root setpriv --reuid=nobody --regid=nogroup --clear-groups baton status >"$T/nobody.txt" 2>&1
assert_eq 78 "$?" "baton status as nobody (exit status)"
assert_eq "baton: status: /etc/baton/baton.yaml: permission denied: /etc/baton is 0750 root:baton (run as root or join the group baton)" \
    "$(cat "$T/nobody.txt")" "baton status as nobody"

note "the unit's ExecStartPre and ExecStart, as its User= in its WorkingDirectory=: a leader runs a job"
# without what baton only recommends: libmicrohttpd12 (the HTTP endpoint)
in_root dpkg -r libmicrohttpd12 >"$T/no-mhd.txt" 2>&1 || fail "dpkg -r libmicrohttpd12: $(cat "$T/no-mhd.txt")"
unit=$R/lib/systemd/system/baton.service
assert_eq baton "$(sed -n 's/^User=//p' "$unit")" "the unit's User="
workdir=$(sed -n 's/^WorkingDirectory=//p' "$unit")
redis_start
cp "$R/etc/baton/jobs.yaml" "$T/jobs.yaml.shipped"
sed -i "s|^redis: .*|redis: $REDIS_URL|; s|^#node: .*|node: packaged-1|" "$R/etc/baton/baton.yaml"
cat >"$R/etc/baton/jobs.yaml" <<'EOF'
jobs:
  - name: stamp
    schedule: "* * * * * *"
    shell: "date +%s >> stamps"
EOF
# as the unit runs its commands (User=, WorkingDirectory=), each exec'ing
# the next: the pid spawn records is baton's
as_unit=(chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
         setpriv --reuid=baton --regid=baton --init-groups sh -c 'cd "$1" && shift && exec "$@"' sh "$workdir")
read -r -a pre <<<"$(sed -n 's/^ExecStartPre=//p' "$unit")"
read -r -a start <<<"$(sed -n 's/^ExecStart=//p' "$unit")"
timeout 60 "${as_unit[@]}" "${pre[@]}" >"$T/pre.txt" 2>&1 </dev/null || fail "ExecStartPre ${pre[*]}: $(cat "$T/pre.txt")"
spawn baton "${as_unit[@]}" "${start[@]}"
wait_for_line "$T/baton.out" '"event":"transition".*"to":"working"' 15 >/dev/null
wait_for_line "$T/baton.out" '"event":"job_end".*"job":"stamp".*"outcome":"ok"' 10 >/dev/null
[ -s "$R$workdir/stamps" ] || fail "the job wrote nothing in $workdir"
assert_eq "$uid" "$(stat -c %u "$R$workdir/stamps")" "the owner of what the job wrote"
in_root baton status >"$T/status.txt" 2>&1 || fail "baton status: $(cat "$T/status.txt")"
grep -qE '^leader: +packaged-1 ' "$T/status.txt" || fail "baton status: $(cat "$T/status.txt")"
kill -TERM "$(pid_of baton)"
wait_exit baton 15
assert_eq 0 "$EXIT_CODE" "baton run's exit status after SIGTERM"

note "a program built with pkg-config --cflags --libs baton takes a lock"
cp "$BATON_TESTS_DIR/lib/lock_app.c" "$R/tmp/app.c"
IN_DIR=/tmp in_root sh -c 'cc -o app app.c $(pkg-config --cflags --libs baton)' >"$T/cc.txt" 2>&1 ||
    fail "cc with pkg-config baton: $(cat "$T/cc.txt")"
out=$(in_root /tmp/app "$REDIS_URL" 2>&1) || fail "the program: $out"
echo "$out" | grep -qE '^fence [1-9][0-9]*, ETAKEN$' || fail "the program printed [$out]"
in_root ldd /tmp/app | grep -qE 'libbaton.so.0 => (/usr)?/lib/[^ ]*/libbaton.so.0' || fail "the program does not use libbaton0's library"
# libbaton-dev ships every public header, each compiling on its own
for h in baton.h baton_election.h baton_redis.h; do
    printf '#include <%s>\nint main(void) { return 0; }\n' "$h" >"$R/tmp/hdr.c"
    IN_DIR=/tmp in_root sh -c 'cc -Wall -Werror -fsyntax-only hdr.c $(pkg-config --cflags baton)' >"$T/hdr.txt" 2>&1 ||
        fail "libbaton-dev's $h: $(cat "$T/hdr.txt")"
done

note "systemd-analyze verify and security --offline=true on the installed unit"
in_root systemd-analyze verify --man=no /lib/systemd/system/baton.service >"$T/verify.txt" 2>&1 ||
    fail "verify: $(cat "$T/verify.txt")"
[ -s "$T/verify.txt" ] && fail "verify has remarks: $(cat "$T/verify.txt")"
in_root systemd-analyze security --offline=true /lib/systemd/system/baton.service >"$T/security.txt" 2>&1
score=$(sed -n 's/.*Overall exposure level for baton.service: \([0-9.]*\).*/\1/p' "$T/security.txt")
[ -n "$score" ] || fail "no exposure level: $(tail -n 5 "$T/security.txt")"
awk -v s="$score" 'BEGIN {exit !(s <= 4.5)}' || fail "exposure $score > 4.5"
note "  exposure $score"

note "an upgrade (the same build, its version bumped) keeps the edited baton.yaml, replaces the unedited jobs.yaml"
cp "$T/jobs.yaml.shipped" "$R/etc/baton/jobs.yaml" # as shipped again: unedited
v2=${version}+upgrade1
mkdir -p "$R/tmp/pkgs2"
for f in "${debs[@]}"; do
    d=$T/repack/$(basename "$f" .deb)
    mkdir -p "$d"
    dpkg-deb -R "$f" "$d"
    sed -i "s/^Version: .*/Version: $v2/; s/libbaton0 (= $version)/libbaton0 (= $v2)/" "$d/DEBIAN/control"
    # the new sample (conffiles are not in md5sums: dpkg hashes them itself)
    [ -f "$d/etc/baton/jobs.yaml" ] && echo "# (the sample of $v2)" >>"$d/etc/baton/jobs.yaml"
    dpkg-deb --root-owner-group -b "$d" "$R/tmp/pkgs2/" >/dev/null || fail "cannot repack $(basename "$f")"
done
chmod -R a+rX "$R/tmp/pkgs2"
apt_root 'cd /tmp/pkgs2 && apt-get install -y ./baton_*.deb ./libbaton0_*.deb ./libbaton-dev_*.deb' \
    >"$T/upgrade.txt" 2>&1 || fail "the upgrade: $(tail -n 20 "$T/upgrade.txt")"
assert_eq "$v2" "$(in_root dpkg-query -W -f='${Version}' baton)" "baton's version after the upgrade"
grep -qx "redis: $REDIS_URL" "$R/etc/baton/baton.yaml" || fail "the upgrade lost the edited baton.yaml: $(grep '^redis' "$R/etc/baton/baton.yaml")"
assert_eq "# (the sample of $v2)" "$(tail -n 1 "$R/etc/baton/jobs.yaml")" "the unedited jobs.yaml after the upgrade"
assert_eq "750 0 $gid" "$(ids "$R/etc/baton")" "/etc/baton after the upgrade"
assert_eq "640 0 $gid" "$(ids "$R/etc/baton/baton.yaml")" "baton.yaml after the upgrade"
[ -z "$(root_pids)" ] || fail "the upgrade left processes running"

note "dpkg -r: no process left, the configuration kept; dpkg -P: the configuration gone"
in_root dpkg -r libbaton-dev baton libbaton0 >"$T/remove.txt" 2>&1 || fail "dpkg -r: $(cat "$T/remove.txt")"
[ -z "$(root_pids)" ] || fail "dpkg -r left processes running"
[ -e "$R/usr/bin/baton" ] && fail "dpkg -r left /usr/bin/baton"
[ -f "$R/etc/baton/baton.yaml" ] || fail "dpkg -r removed /etc/baton/baton.yaml"
assert_eq "rc" "$(in_root dpkg-query -W -f='${db:Status-Abbrev}' baton | tr -d ' ')" "baton's state after dpkg -r"
in_root dpkg -P baton libbaton0 libbaton-dev >"$T/purge.txt" 2>&1 || fail "dpkg -P: $(cat "$T/purge.txt")"
for gone in /etc/baton /var/lib/baton /etc/systemd/system/multi-user.target.wants/baton.service; do
    [ -e "$R$gone" ] || [ -L "$R$gone" ] && fail "dpkg -P left $gone"
done
note "ok in $(( ($(now_ms) - started) / 1000 )) s"
