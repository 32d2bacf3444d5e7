/* gen_diagram.c -- writes the Mermaid diagram of MACHINE_TABLE, the only
 * source of truth, between the markers of machine/README.md.
 *
 *   gen_diagram                 print the diagram block
 *   gen_diagram --check FILE    exit 1 if FILE's block differs from the table
 *   gen_diagram --update FILE   rewrite FILE's block from the table
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

#define BEGIN_MARK "<!-- BEGIN GENERATED: machine/gen_diagram.c from MACHINE_TABLE -->\n"
#define END_MARK   "<!-- END GENERATED -->\n"

/* One edge of the diagram: "from --> to : event [guards] / action". */
static size_t edge(char *buf, size_t len, const char *indent, const char *from, int e,
                   const struct machine_branch *b, const char *guards)
{
    int n = snprintf(buf, len, "%s%s --> %s : %s", indent, from, machine_state_name(b->next),
                     machine_event_name((enum machine_event)e));
    size_t used = n > 0 ? (size_t)n : 0;
    if (guards != NULL)
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, " [%s]", guards);
    if (b->action != ACT_NONE)
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, " / %s",
                                 machine_action_name(b->action));
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "\n");
    return used;
}

/* A branch as a table cell: "next / action" or "next". */
static size_t branch_text(char *buf, size_t len, const struct machine_branch *b)
{
    int n = b->action == ACT_NONE
                ? snprintf(buf, len, "%s", machine_state_name(b->next))
                : snprintf(buf, len, "%s / %s", machine_state_name(b->next),
                           machine_action_name(b->action));
    return n > 0 ? (size_t)n : 0;
}

static bool branch_eq(const struct machine_branch *a, const struct machine_branch *b)
{
    return a->ignored == b->ignored && a->quiet == b->quiet && a->next == b->next &&
           a->action == b->action;
}

/* True when every state of parent p has the cell of s for event e: its
 * moves out of p are then drawn once, from p (xstate's transitions on a
 * parent). */
static bool shared(enum machine_parent p, int s, int e)
{
    const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
    for (int o = 0; p != P_NONE && o < ST_COUNT; o++) {
        const struct machine_cell *d = machine_cell((enum machine_state)o, (enum machine_event)e);
        if (machine_state_parent((enum machine_state)o) == p &&
            (d->guard != c->guard || d->elif_guard != c->elif_guard ||
             !branch_eq(&d->then, &c->then) || !branch_eq(&d->elif, &c->elif) ||
             !branch_eq(&d->otherwise, &c->otherwise)))
            return false;
    }
    return p != P_NONE;
}

/* The first state of parent p. */
static int first_in(enum machine_parent p)
{
    int s = 0;
    while (s < ST_COUNT && machine_state_parent((enum machine_state)s) != p)
        s++;
    return s;
}

/* The edge of branch b of cell (s, e), drawn in parent p's block (P_NONE:
 * outside every block), with its guards; nothing when it belongs
 * elsewhere. Moves inside a parent are drawn in its block; moves out of it
 * that all its states share, once, from the parent. */
static size_t draw(char *buf, size_t len, int p, int s, int e, const struct machine_branch *b,
                   const char *guards)
{
    enum machine_parent from = machine_state_parent((enum machine_state)s);
    bool within = from != P_NONE && from == machine_state_parent(b->next);
    if ((int)(within ? from : P_NONE) != p)
        return 0;
    if (!within && shared(from, s, e)) {
        if (s != first_in(from))
            return 0;
        return edge(buf, len, "    ", machine_parent_name(from), e, b, guards);
    }
    return edge(buf, len, p == P_NONE ? "    " : "        ",
                machine_state_name((enum machine_state)s), e, b, guards);
}

/* The edges of every cell drawn in parent p's block (P_NONE: the others),
 * each branch of a guarded cell with the guards that pick it. */
static size_t edges(char *buf, size_t len, int p)
{
    size_t n = 0;
#define AT buf + n, n < len ? len - n : 0
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c =
                machine_cell((enum machine_state)s, (enum machine_event)e);
            if (c->guard == G_ALWAYS) {
                if (!c->then.ignored)
                    n += draw(AT, p, s, e, &c->then, NULL);
                continue;
            }
            const char *g = machine_guard_name(c->guard);
            char not_g[64], elif[128], not_elif[128];
            snprintf(not_g, sizeof not_g, "not %s", g);
            snprintf(elif, sizeof elif, "not %s, %s", g, machine_guard_name(c->elif_guard));
            snprintf(not_elif, sizeof not_elif, "not %s, not %s", g,
                     machine_guard_name(c->elif_guard));
            n += draw(AT, p, s, e, &c->then, g);
            if (c->elif_guard != G_ALWAYS)
                n += draw(AT, p, s, e, &c->elif, elif);
            n += draw(AT, p, s, e, &c->otherwise, c->elif_guard != G_ALWAYS ? not_elif : not_g);
        }
#undef AT
    return n;
}

/* Appends the block to buf (at least 16 KiB). */
static void render(char *buf, size_t len)
{
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
#define AT       buf + n, n < len ? len - n : 0
    OUT("%s```mermaid\nstateDiagram-v2\n    [*] --> idle\n", BEGIN_MARK);
    for (int p = 1; p < P_COUNT; p++) {
        OUT("    state %s {\n", machine_parent_name((enum machine_parent)p));
        n += edges(AT, p);
        OUT("    }\n");
    }
    n += edges(AT, P_NONE);
    for (int p = 1; p < P_COUNT; p++)
        OUT("    note right of %s : exit / %s\n", machine_parent_name((enum machine_parent)p),
            machine_action_name(machine_parent_exit((enum machine_parent)p)));
    OUT("    %s --> [*]\n```\n\n", machine_state_name(MACHINE_FINAL));
    OUT("| state \\ event |");
    for (int e = 0; e < EV_COUNT; e++)
        OUT(" %s |", machine_event_name((enum machine_event)e));
    OUT("\n|---|");
    for (int e = 0; e < EV_COUNT; e++)
        OUT("---|");
    OUT("\n");
    for (int s = 0; s < ST_COUNT; s++) {
        enum machine_parent p = machine_state_parent((enum machine_state)s);
        OUT("| **%s**", machine_state_name((enum machine_state)s));
        if (p != P_NONE)
            OUT(" (in %s)", machine_parent_name(p));
        OUT(" |");
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c =
                machine_cell((enum machine_state)s, (enum machine_event)e);
            OUT(" ");
            if (c->guard != G_ALWAYS) {
                OUT("[%s] ", machine_guard_name(c->guard));
                n += branch_text(AT, &c->then);
                if (c->elif_guard != G_ALWAYS) {
                    OUT("; [%s] ", machine_guard_name(c->elif_guard));
                    n += branch_text(AT, &c->elif);
                }
                OUT("; else ");
                n += branch_text(AT, &c->otherwise);
            } else if (c->then.ignored) {
                OUT("·");
            } else {
                n += branch_text(AT, &c->then);
            }
            OUT(" |");
        }
        OUT("\n");
    }
    OUT("\nGuards: ");
    for (int g = 1; g < G_COUNT; g++)
        OUT("%s`%s`", g > 1 ? ", " : "", machine_guard_name((enum machine_guard)g));
    OUT(" (defined beside the table in machine.h, evaluated by the supervisor).");
    for (int p = 1; p < P_COUNT; p++) {
        OUT(" Parent `%s` (", machine_parent_name((enum machine_parent)p));
        for (int s = 0, k = 0; s < ST_COUNT; s++)
            if ((int)machine_state_parent((enum machine_state)s) == p)
                OUT("%s`%s`", k++ > 0 ? ", " : "", machine_state_name((enum machine_state)s));
        OUT("): a move that leaves it runs `%s` first.",
            machine_action_name(machine_parent_exit((enum machine_parent)p)));
    }
    OUT(" Final state: `%s`.\n", machine_state_name(MACHINE_FINAL));
    OUT("%s", END_MARK);
#undef AT
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
