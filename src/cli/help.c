/* help.c -- `--help` from the subcommand descriptors: the usage line, the
 * description, every option, the extra sections and the exit statuses. The
 * man page (docs.c) reads the same descriptors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "docs.h"

#define WIDTH 79

/* Writes n bytes of a word without its Markdown code marks (`). Returns the
 * width written. */
static int put_word(FILE *out, const char *w, size_t n)
{
    int width = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] != '`') {
            fputc(w[i], out);
            width++;
        }
    return width;
}

void cli_wrap(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    int at = col;
    bool line_start = true;
    while (*p != '\0') {
        if (*p == '\n') {
            /* A blank line ends a paragraph; a single newline is a space. */
            if (p[1] == '\n') {
                fputs("\n\n", out);
                p += 2;
                while (*p == '\n')
                    p++;
                fprintf(out, "%*s", indent, "");
                at = indent;
                line_start = true;
                continue;
            }
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t n = strcspn(p, " \n");
        int width = 0;
        for (size_t i = 0; i < n; i++)
            width += p[i] != '`';
        if (!line_start && at + 1 + width > WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            at = indent;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', out);
            at++;
        }
        at += put_word(out, p, n);
        p += n;
        line_start = false;
    }
    fputc('\n', out);
}

/* "-c FILE" or "--url URL" or "-v": how the synopsis shows an option. */
static void synopsis_opt(const struct cli_opt *o, char *buf, size_t len)
{
    if (o->id < CLI_OPT_LONG)
        snprintf(buf, len, "[-%c%s%s]", o->id, o->arg ? " " : "", o->arg ? o->arg : "");
    else
        snprintf(buf, len, "[--%s%s%s]", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_write_usage(const struct cli_cmd *c, FILE *out)
{
    char *line = NULL, word[128];
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (f == NULL)
        return;
    fprintf(f, "baton %s", c->name);
    for (const struct cli_opt *o = c->opts; o != NULL && o->name != NULL; o++) {
        synopsis_opt(o, word, sizeof word);
        fprintf(f, " %s", word);
    }
    if (c->operands != NULL && c->operands[0] != '\0')
        fprintf(f, " %s", c->operands);
    if (fclose(f) != 0) {
        free(line);
        return;
    }
    fputs("usage: ", out);
    cli_wrap(out, line, 7, 13 + (int)strlen(c->name));
    free(line);
}

/* "  -c, --config FILE" or "      --json". */
static int option_label(const struct cli_opt *o, char *buf, size_t len)
{
    if (o->id < CLI_OPT_LONG)
        return snprintf(buf, len, "  -%c, --%s%s%s", o->id, o->name, o->arg ? " " : "",
                        o->arg ? o->arg : "");
    return snprintf(buf, len, "      --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

static void write_options(const struct cli_opt *opts, FILE *out)
{
    char label[96];
    for (const struct cli_opt *o = opts; o != NULL && o->name != NULL; o++) {
        int n = option_label(o, label, sizeof label);
        fputs(label, out);
        if (n > 22) {
            fprintf(out, "\n%*s", 24, "");
            n = 24;
        } else {
            fprintf(out, "%*s", 24 - n, "");
            n = 24;
        }
        cli_wrap(out, o->help, n, 24);
    }
}

static void write_items(const struct cli_item *items, FILE *out)
{
    for (const struct cli_item *i = items; i->term != NULL; i++) {
        int n = fprintf(out, "  %s", i->term);
        if (n > 18)
            fprintf(out, "\n%*s", 20, "");
        else
            fprintf(out, "%*s", 20 - n, "");
        cli_wrap(out, i->text, 20, 20);
    }
}

/* The baton.yaml keys, from the reference `baton check --reference` prints. */
static void write_config_keys(FILE *out)
{
    struct docs_ref ref;
    if (docs_ref_load(DOCS_REF_CONFIG, &ref) != 0)
        return;
    fputs("\nconfiguration (baton.yaml; 'baton check --reference' says more):\n", out);
    for (size_t i = 0; i < ref.n; i++) {
        char text[1024];
        int n = fprintf(out, "  %s", ref.rows[i].key);
        if (n > 18)
            fprintf(out, "\n%*s", 20, "");
        else
            fprintf(out, "%*s", 20 - n, "");
        snprintf(text, sizeof text, "%s (default %s)", ref.rows[i].meaning, ref.rows[i].def);
        cli_wrap(out, text, 20, 20);
    }
    docs_ref_free(&ref);
}

static void write_exits(const struct cli_exit *exits, FILE *out)
{
    fputs("\nexit status:\n", out);
    for (const struct cli_exit *e = exits; e->code >= 0; e++) {
        int n = fprintf(out, "  %d", e->code);
        fprintf(out, "%*s", 8 - n, "");
        cli_wrap(out, e->text, 8, 8);
    }
}

void cli_write_help(const struct cli_cmd *c, FILE *out)
{
    cli_write_usage(c, out);
    fputc('\n', out);
    cli_wrap(out, c->description, 0, 0);
    fputs("\noptions:\n", out);
    write_options(c->opts, out);
    write_options(cli_common_opts, out);
    for (const struct cli_section *s = c->sections; s != NULL && s->title != NULL; s++) {
        fprintf(out, "\n%s:\n", s->title);
        write_items(s->items, out);
    }
    if (c->flags & CLI_CONFIG_KEYS)
        write_config_keys(out);
    write_exits(c->exits, out);
}

void cli_write_main_help(FILE *out)
{
    size_t n;
    const struct cli_cmd *const *cmds = cli_commands(&n);
    fputs("usage: baton [--version] [--help] COMMAND [ARGS]\n\n"
          "Distributed locks with fencing tokens, and exactly-once cron for a fleet,\n"
          "over Redis.\n\ncommands:\n",
          out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %-10s ", cmds[i]->name);
        cli_wrap(out, cmds[i]->summary, 13, 13);
    }
    fputs("\n'baton COMMAND --help' (or 'baton help COMMAND') describes a command,\n"
          "'baton help exit-codes' the exit statuses. Manual: baton(1), baton.yaml(5),\n"
          "jobs.yaml(5), libbaton(3).\n",
          out);
}
