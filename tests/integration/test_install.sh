# test_install.sh -- `cmake --install` gives a usable library: its headers
# (baton.h, baton_election.h, baton_redis.h), libbaton (static and shared), baton.pc, the baton binary and its shim, its man pages,
# shell completions and license; a program
# built with pkg-config against the installed tree runs against a real Redis.
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
         share/zsh/vendor-completions/_baton share/doc/baton/LICENSE; do
    [ -s "$prefix/$f" ] || fail "not installed: $f"
done
MANPATH=$prefix/share/man man -w baton.yaml >/dev/null 2>&1 || fail "man does not find the installed baton.yaml(5)"
grep -qx "License: BSD-3-Clause" "$libdir/pkgconfig/baton.pc" || fail "the installed baton.pc names no license"
cat > "$T/app.c" <<'C'
#include <baton.h>
#include <stdio.h>
static unsigned long long fence;
static int work(struct baton_lock *lk, void *arg) { (void)arg; fence = baton_lock_fence(lk); return 0; }
int main(int argc, char **argv)
{
    struct baton_client *c = NULL;
    if (argc < 2 || baton_client_new(argv[1], NULL, &c) != BATON_OK) {
        fprintf(stderr, "%s\n", baton_client_errstr(c));
        return 1;
    }
    int rc = baton_with_lock(c, "install:check", NULL, work, NULL);
    printf("fence %llu, %s\n", fence, baton_errname(BATON_ETAKEN));
    baton_client_free(c);
    return rc == 0 && fence > 0 ? 0 : 1;
}
C
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
note "ok"
