# test_layers.sh -- nothing includes up the chain of folders (common <- conf
# <- group <- supervisor <- cli; cron, machine and libbaton below all, the
# rest of the tree using libbaton through its installed headers only), and
# src/lib's layers (base, transport, topology, loop, lock: its internal
# headers) call only down, with no circle between their files
# (tests/lib/layers.py says how each is read from the sources). Each rule
# is also shown to fail: on a copy of the tree with one violation put in.
. "$BATON_TESTS_DIR/lib/harness.sh"
root=$BATON_SOURCE_DIR
check="$BATON_TESTS_DIR/lib/layers.py"
out=$(python3 "$check" "$root" 2>&1) || fail "the tree breaks its layering:
$out"

# violate FILE TEXT WANT: a copy of the tree with TEXT appended to FILE
# must fail, with a line matching WANT.
violate() {
    rm -rf "$T/tree"
    mkdir -p "$T/tree"
    cp -r "$root/src" "$root/machine" "$T/tree/"
    printf '%s\n' "$2" >>"$T/tree/$1"
    local got
    got=$(python3 "$check" "$T/tree" 2>&1) && fail "layers.py passed with $1 += [$2]"
    printf '%s\n' "$got" | grep -qE "$3" || fail "layers.py on $1 += [$2]: expected /$3/ in: $got"
}
violate src/group/keys.c '#include "log.h"' 'src/group/keys.c: includes log.h from src/supervisor, a layer above src/group'
violate src/conf/config.c '#include "keys.h"' 'src/conf/config.c: includes keys.h from src/group'
violate src/common/utf8.c '#include "config.h"' 'src/common/utf8.c: includes config.h from src/conf'
violate src/supervisor/log.c '#include "cli.h"' 'includes cli.h from src/cli'
violate src/cron/cron.c '#include "utf8.h"' 'src/cron depends on nothing of ours'
violate src/cli/tools.c '#include "lock_int.h"' "libbaton's internal header"
violate src/lib/baton.h '#include "baton_redis.h"' 'src/lib/baton.h: includes baton_redis.h'
# src/lib: the circles this layering cut (a transport calling into conn.c,
# conn.c into sentinel.c), a call up, a header including up, a function
# declared in another layer's header than its file's.
violate src/lib/sock.c 'static void up(void) { baton__conn_free(0); }' \
    'src/lib: a circle between conn.c, sock.c \(the transport layer\)'
violate src/lib/conn.c 'static void up(void) { baton__sentinel_list(0, 0); }' \
    'src/lib/conn.c: up calls baton__sentinel_list \(sentinel.c, the topology layer\), above the transport layer'
violate src/lib/cluster.c 'static void up(void) { baton__mux_of(0, 0, 0); }' \
    'src/lib/cluster.c: up calls baton__mux_of \(mux.c, the loop layer\)'
violate src/lib/topology_int.h '#include "loop_int.h"' 'src/lib/topology_int.h: includes loop_int.h, which is not below it'
violate src/lib/base_int.h 'int baton__wait_ms_until(int64_t deadline_ns);' \
    'src/lib/call.c: defines baton__wait_ms_until, declared in base_int.h'
cp "$root/src/common/utf8.h" "$T/utf8.h"
violate src/conf/utf8.h "$(cat "$T/utf8.h")" 'utf8.h: a header of this name is in src/common, src/conf'
note "ok"
