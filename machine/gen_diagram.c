/* gen_diagram.c -- writes the Mermaid diagram of MACHINE_TABLE, the only
 * source of truth, between the markers of machine/README.md.
 *
 *   gen_diagram                 print the diagram block
 *   gen_diagram --check FILE    exit 1 if FILE's block differs from the table
 *   gen_diagram --update FILE   rewrite FILE's block from the table
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

#define BEGIN_MARK "<!-- BEGIN GENERATED: machine/gen_diagram.c from MACHINE_TABLE -->\n"
#define END_MARK   "<!-- END GENERATED -->\n"

/* Appends the block to buf (at least 16 KiB). */
static void render(char *buf, size_t len)
{
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
    OUT("%s```mermaid\nstateDiagram-v2\n    [*] --> idle\n", BEGIN_MARK);
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c =
                machine_cell((enum machine_state)s, (enum machine_event)e);
            if (c->ignored)
                continue;
            OUT("    %s --> %s : %s", machine_state_name((enum machine_state)s),
                machine_state_name(c->next), machine_event_name((enum machine_event)e));
            if (c->action != ACT_NONE)
                OUT(" / %s", machine_action_name(c->action));
            OUT("\n");
        }
    OUT("    idle --> [*] : (after finish on stop)\n```\n\n");
    OUT("| state \\ event |");
    for (int e = 0; e < EV_COUNT; e++)
        OUT(" %s |", machine_event_name((enum machine_event)e));
    OUT("\n|---|");
    for (int e = 0; e < EV_COUNT; e++)
        OUT("---|");
    OUT("\n");
    for (int s = 0; s < ST_COUNT; s++) {
        OUT("| **%s** |", machine_state_name((enum machine_state)s));
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c =
                machine_cell((enum machine_state)s, (enum machine_event)e);
            if (c->ignored)
                OUT(" · |");
            else if (c->action == ACT_NONE)
                OUT(" %s |", machine_state_name(c->next));
            else
                OUT(" %s / %s |", machine_state_name(c->next), machine_action_name(c->action));
        }
        OUT("\n");
    }
    OUT("%s", END_MARK);
#undef OUT
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *s = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *g = realloc(s, cap);
            if (g == NULL) {
                free(s);
                fclose(f);
                return NULL;
            }
            s = g;
        }
        size_t r = fread(s + n, 1, 4096, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    s[n] = '\0';
    return s;
}

int main(int argc, char **argv)
{
    static char block[65536];
    render(block, sizeof block);
    if (argc == 1) {
        fputs(block, stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--update") != 0)) {
        fprintf(stderr, "usage: gen_diagram [--check|--update FILE]\n");
        return 2;
    }
    char *text = slurp(argv[2]);
    if (text == NULL) {
        fprintf(stderr, "gen_diagram: cannot read %s\n", argv[2]);
        return 2;
    }
    char *b = strstr(text, BEGIN_MARK);
    char *e = b ? strstr(b, END_MARK) : NULL;
    if (b == NULL || e == NULL) {
        fprintf(stderr, "gen_diagram: %s has no generated block (markers missing)\n", argv[2]);
        free(text);
        return 2;
    }
    e += strlen(END_MARK);
    int rc = 0;
    if (strcmp(argv[1], "--check") == 0) {
        if ((size_t)(e - b) != strlen(block) || memcmp(b, block, strlen(block)) != 0) {
            fprintf(stderr,
                    "gen_diagram: the diagram in %s does not match MACHINE_TABLE; "
                    "regenerate it: gen_diagram --update %s\n",
                    argv[2], argv[2]);
            rc = 1;
        }
    } else {
        FILE *f = fopen(argv[2], "wb");
        if (f == NULL || fwrite(text, 1, (size_t)(b - text), f) != (size_t)(b - text) ||
            fputs(block, f) < 0 || fputs(e, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "gen_diagram: cannot write %s\n", argv[2]);
            rc = 2;
        }
    }
    free(text);
    return rc;
}
