/* lock_app.c -- a program a user would write against an installed libbaton:
 * test_install and test_package build it with `pkg-config --cflags --libs
 * baton` (shared and static). `lock_app URL` takes the lock "install:check"
 * once and prints "fence N, ETAKEN" (the fence of its grant; an error name,
 * so that the error table is reached too); exits 0 when it got a fence. */
#include <baton.h>
#include <stdio.h>

static unsigned long long fence;

static int work(struct baton_lock *lk, void *arg)
{
    (void)arg;
    fence = baton_lock_fence(lk);
    return 0;
}

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
