# test_install.sh -- `cmake --install` gives a usable library: its headers
# (baton.h, baton_election.h, baton_redis.h), libbaton (static and shared), baton.pc, the baton binary and its shim, its man pages,
# shell completions and license; a program
# built with pkg-config against the installed tree runs against a real Redis.
# For the prefixes /usr and /usr/local, every file lands in a directory its
# reader searches (zsh's fpath, bash-completion's, man's, systemd's, the
# commands' own configuration lookup).
. "$BATON_TESTS_DIR/lib/harness.sh"
prefix=$T/root
cmake --install "$BATON_BUILD_DIR" --prefix "$prefix" >"$T/install.log" 2>&1 || fail "install failed: $(tail -5 "$T/install.log")"
libdir=$(ls -d "$prefix"/lib* | head -n1)
for f in "$prefix/bin/baton" "$prefix/include/baton.h" "$prefix/include/baton_election.h" \
         "$prefix/include/baton_redis.h" "$libdir/libbaton.a" "$libdir/libbaton.so" \
         "$libdir/pkgconfig/baton.pc"; do
    [ -e "$f" ] || fail "not installed: ${f#$prefix/}"
done
"$prefix/bin/baton" --version | grep -q '^baton ' || fail "installed baton --version"
for f in share/man/man1/baton.1 share/man/man5/baton.yaml.5 share/man/man5/jobs.yaml.5 \
         share/man/man3/libbaton.3 share/bash-completion/completions/baton \
         share/zsh/site-functions/_baton share/doc/baton/LICENSE; do
    [ -s "$prefix/$f" ] || fail "not installed: $f"
done
MANPATH=$prefix/share/man man -w baton.yaml >/dev/null 2>&1 || fail "man does not find the installed baton.yaml(5)"
grep -qx "License: BSD-3-Clause" "$libdir/pkgconfig/baton.pc" || fail "the installed baton.pc names no license"
cp "$BATON_TESTS_DIR/lib/lock_app.c" "$T/app.c"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc ${BATON_TEST_CFLAGS:-} -o "$T/app" "$T/app.c" $(pkg-config --cflags --libs baton) -Wl,-rpath,"$libdir" \
    || fail "cannot build against the installed library"
cc ${BATON_TEST_CFLAGS:-} -o "$T/app-static" "$T/app.c" $(pkg-config --cflags baton) \
    $(pkg-config --libs --static baton | sed 's/-lbaton/-Wl,-Bstatic -lbaton -Wl,-Bdynamic/') \
    || fail "cannot link the static library"
ldd "$T/app-static" | grep -q libbaton && fail "the static program still needs libbaton.so"
# The other two headers, as a daemon and a tool use them: an election's
# primitives, and a raw command.
cat > "$T/tool.c" <<'C'
#include <baton_election.h>
#include <baton_redis.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    struct baton_client *c = NULL;
    struct baton_election *e = NULL;
    struct baton_reply *r = NULL;
    const char *ping[] = {"PING"};
    if (argc < 2 || baton_client_new(argv[1], NULL, &c) != BATON_OK ||
        baton_election_new(c, "install", NULL, &e) != BATON_OK ||
        baton_election_campaign(e, NULL) != BATON_OK ||
        baton_client_command(c, 1, ping, NULL, &r) != BATON_OK) {
        fprintf(stderr, "%s\n", c != NULL ? baton_client_errstr(c) : "no client");
        return 1;
    }
    printf("term %llu, %s\n", (unsigned long long)baton_election_term(e), r->str);
    baton_reply_free(r);
    baton_election_resign(e);
    baton_election_free(e);
    baton_client_free(c);
    return 0;
}
C
cc ${BATON_TEST_CFLAGS:-} -o "$T/tool" "$T/tool.c" $(pkg-config --cflags --libs baton) -Wl,-rpath,"$libdir" \
    || fail "cannot build against baton_election.h and baton_redis.h"
redis_start
out1=$("$T/app" "$REDIS_URL") || fail "shared library program: $out1"
out2=$("$T/app-static" "$REDIS_URL") || fail "static library program: $out2"
f1=$(echo "$out1" | sed -n 's/^fence \([0-9]*\), ETAKEN$/\1/p')
f2=$(echo "$out2" | sed -n 's/^fence \([0-9]*\), ETAKEN$/\1/p')
[ -n "$f1" ] && [ -n "$f2" ] && [ "$f2" -gt "$f1" ] || fail "fences of the two programs: [$out1] then [$out2]"
out4=$("$T/tool" "$REDIS_URL") || fail "election and command program: $out4"
echo "$out4" | grep -qE '^term [1-9][0-9]*, PONG$' || fail "election and command program printed [$out4]"
# The installed baton finds its shim (libexec/baton/baton-shim) from its own
# place, wherever the prefix is: a command runs under it.
[ -x "$prefix/libexec/baton/baton-shim" ] || fail "not installed: libexec/baton/baton-shim"
out3=$("$prefix/bin/baton" lock --url "$REDIS_URL" install:cmd -- sh -c 'echo "ran $BATON_FENCE"') ||
    fail "the installed baton lock could not run its command: $out3"
echo "$out3" | grep -q '^ran [0-9]' || fail "the installed baton lock's command printed [$out3]"

note "--prefix /usr and /usr/local: every file where its reader looks"
# The build's own lookup: the no-configuration message names its
# SYSCONFDIR/baton/baton.yaml; /etc/baton/baton.yaml comes after it (config.h).
mkdir "$T/nowhere"
sys_cfg=$(cd "$T/nowhere" && "$prefix/bin/baton" check 2>&1 | sed -n 's/.*create .\/baton.yaml or \(.*\)$/\1/p')
[ -n "$sys_cfg" ] || fail "the no-configuration message names no file"
zsh_fpath=$(zsh -fc 'print -l $fpath')
unit_paths=$(systemd-analyze unit-paths)
for p in /usr /usr/local; do
    d=$T/dest$p
    DESTDIR=$d cmake --install "$BATON_BUILD_DIR" --prefix "$p" >"$T/install-dest.log" 2>&1 ||
        fail "DESTDIR install --prefix $p: $(tail -5 "$T/install-dest.log")"
    # found_in DIR... FILE: FILE is installed in one of the directories DIR
    found_in() {
        local f=${*: -1} dir
        for dir in "${@:1:$#-1}"; do [ -e "$d$dir/$f" ] && return 0; done
        fail "--prefix $p: $f is in none of: ${*:1:$#-1} ($(cd "$d" && find . -name "$f"))"
    }
    while read -r dir; do
        [ -e "$d$dir/_baton" ] && break
    done <<<"$zsh_fpath"
    [ -e "$d$dir/_baton" ] || fail "--prefix $p: _baton is on no directory of zsh's fpath ($(cd "$d" && find . -name _baton))"
    # bash-completion: XDG_DATA_DIRS (/usr/local/share:/usr/share)/bash-completion/completions
    found_in /usr/local/share/bash-completion/completions /usr/share/bash-completion/completions baton
    for m in man1/baton.1 man5/baton.yaml.5 man5/jobs.yaml.5 man3/libbaton.3; do
        found_in /usr/share/man /usr/local/share/man "$m"
    done
    unit_dir=
    while read -r dir; do
        [ -e "$d$dir/baton.service" ] && unit_dir=$dir && break
    done <<<"$unit_paths"
    [ -n "$unit_dir" ] || fail "--prefix $p: baton.service is on none of systemd's unit paths"
    # systemd-sysusers and systemd-tmpfiles read /usr/local/lib/*.d and /usr/lib/*.d.
    found_in /usr/local/lib/sysusers.d /usr/lib/sysusers.d baton.conf
    found_in /usr/local/lib/tmpfiles.d /usr/lib/tmpfiles.d baton.conf
    # baton.pc on pkg-config's path, baton.h on the compiler's.
    found_in $(pkg-config --variable pc_path pkg-config | tr : ' ') baton.pc
    found_in /usr/local/include /usr/include baton.h
    # the samples where the commands look: this build's SYSCONFDIR, else /etc/baton
    [ -e "$d$sys_cfg" ] || [ -e "$d/etc/baton/baton.yaml" ] ||
        fail "--prefix $p: the sample baton.yaml is neither in $sys_cfg nor in /etc/baton ($(cd "$d" && find . -name baton.yaml))"
    # the unit runs the installed baton on the installed sample
    grep -qx "ExecStart=$p/bin/baton run -c $([ "$p" = /usr ] && echo /etc || echo $p/etc)/baton/baton.yaml" \
        "$d$unit_dir/baton.service" || fail "--prefix $p: the unit's ExecStart: $(grep ExecStart= "$d$unit_dir/baton.service")"
done
note "ok"
