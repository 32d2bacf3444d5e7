/* main.c -- `baton`: dispatches to the subcommand table (commands.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_write_main_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        cli_write_main_help(stdout);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
        printf("baton %s\n", cli_version());
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    const struct cli_cmd *c = cli_find(a);
    if (c == NULL) {
        if (a[0] == '-')
            fprintf(stderr, "baton: %s: unknown option; see 'baton --help'\n", a);
        else
            fprintf(stderr, "baton: unknown command '%s'; see 'baton --help'\n", a);
        return CLI_EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
