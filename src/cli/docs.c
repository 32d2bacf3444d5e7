/* docs.c -- see docs.h: the man pages, generated from the
 * subcommand table (commands.c), the exit status table (cli.h), the
 * configuration reference (`baton check --reference`), the event table
 * (events.h), the environment tables (run.h, hook.h), and the prose of
 * deploy/man/NAME.md. The shell completions are completion.c's.
 *
 * The man pages are plain man(7) macros (TH SH SS TP PP IP RS RE nf fi),
 * left-adjusted and without hyphenation so that `man --warnings` is quiet
 * at any width; every hyphen is \- so that options copy and paste.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "docs.h"
#include "events.h"
#include "hook.h"
#include "jobs.h"
#include "log.h"
#include "run.h"

/* ---- the reference, read back ---- */

/* Splits a Markdown table row "| a | b |" into at most max trimmed cells
 * (in place; "\|" is a literal bar). Returns how many. */
static size_t split_row(char *line, char **cells, size_t max)
{
    size_t n = 0;
    char *p = line;
    if (*p != '|')
        return 0;
    p++;
    while (*p != '\0' && n < max) {
        char *start = p, *w = p;
        while (*p != '\0' && *p != '|') {
            if (*p == '\\' && p[1] == '|')
                p++;
            *w++ = *p++;
        }
        if (*p != '|')
            break;
        p++;
        *w = '\0';
        while (*start == ' ')
            start++;
        while (w > start && w[-1] == ' ')
            *--w = '\0';
        cells[n++] = start;
    }
    return n;
}

int docs_ref_load(enum docs_ref_which which, struct docs_ref *out)
{
    size_t len = 0, cap = 0;
    memset(out, 0, sizeof *out);
    FILE *f = open_memstream(&out->text, &len);
    if (f == NULL)
        return -1;
    if (which == DOCS_REF_CONFIG)
        config_write_reference(f);
    else
        jobs_write_reference(f);
    if (fclose(f) != 0)
        goto fail;
    for (char *line = out->text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (strncmp(line, "- ", 2) == 0) {
            char **v = realloc(out->notes, (out->nnotes + 1) * sizeof *v);
            if (v == NULL)
                goto fail;
            out->notes = v;
            out->notes[out->nnotes++] = line + 2;
            continue;
        }
        char *cells[5];
        if (split_row(line, cells, 5) != 5 || strcmp(cells[0], "key") == 0 ||
            strncmp(cells[0], "---", 3) == 0)
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            struct docs_ref_row *v = realloc(out->rows, cap * sizeof *v);
            if (v == NULL)
                goto fail;
            out->rows = v;
        }
        /* The key is written `key`. */
        char *key = cells[0];
        if (key[0] == '`' && key[strlen(key) - 1] == '`') {
            key[strlen(key) - 1] = '\0';
            key++;
        }
        out->rows[out->n++] = (struct docs_ref_row){key, cells[1], cells[2], cells[3], cells[4]};
    }
    return 0;
fail:
    docs_ref_free(out);
    return -1;
}

void docs_ref_free(struct docs_ref *r)
{
    free(r->rows);
    free(r->notes);
    free(r->text);
    memset(r, 0, sizeof *r);
}

const char *docs_ref_type(const struct docs_ref *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].key, key) == 0)
            return r->rows[i].type;
    return NULL;
}

/* ---- inline Markdown ---- */

/* Length of a link "[text](url)" at p, or 0; the text in *t, *tn. */
static size_t link_at(const char *p, const char **t, size_t *tn)
{
    if (*p != '[')
        return 0;
    const char *close = strchr(p, ']');
    if (close == NULL || close[1] != '(')
        return 0;
    const char *end = strchr(close, ')');
    if (end == NULL)
        return 0;
    *t = p + 1;
    *tn = (size_t)(close - p - 1);
    return (size_t)(end - p + 1);
}

void docs_write_plain(FILE *out, const char *md)
{
    for (const char *p = md; *p != '\0'; p++) {
        const char *t;
        size_t tn, n;
        if (*p == '`')
            continue;
        if (p[0] == '*' && p[1] == '*') {
            p++;
            continue;
        }
        n = link_at(p, &t, &tn);
        if (n > 0) {
            fwrite(t, 1, tn, out);
            p += n - 1;
            continue;
        }
        fputc(*p, out);
    }
}

/* Writes n bytes of s escaped for troff text (no line-start handling). */
static void troff_text(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\')
            fputs("\\e", out);
        else if (ch == '-')
            fputs("\\-", out);
        else if (ch == '\n')
            fputc(' ', out);
        else if (ch == '/')
            fputs("/\\:", out); /* a place to break a long path or list */
        else
            fputc(ch, out);
    }
}

/* Writes n bytes of Markdown inline text as troff: `code` and **bold** in
 * bold, links as their text. */
static void troff_md_n(FILE *out, const char *md, size_t len)
{
    const char *stop = md + len;
    for (const char *p = md; p < stop && *p != '\0'; p++) {
        const char *t;
        size_t tn;
        const char *code = *p == '`' ? strchr(p + 1, '`') : NULL;
        const char *bold = p[0] == '*' && p[1] == '*' ? strstr(p + 2, "**") : NULL;
        const char *em = NULL;
        size_t n = link_at(p, &t, &tn);
        if (p[0] == '*' && isalnum((unsigned char)p[1])) { /* *word*, nothing else */
            size_t w = strcspn(p + 1, "* \t\n`");
            em = p[1 + w] == '*' ? p + 1 + w : NULL;
        }
        if (code != NULL) {
            fputs("\\fB", out);
            troff_text(out, p + 1, (size_t)(code - p - 1));
            fputs("\\fR", out);
            p = code;
        } else if (bold != NULL) {
            fputs("\\fB", out);
            for (const char *c = p + 2; c < bold; c++)
                if (*c != '`') /* **`code`** is bold too */
                    troff_text(out, c, 1);
            fputs("\\fR", out);
            p = bold + 1;
        } else if (em != NULL) {
            fputs("\\fI", out);
            troff_text(out, p + 1, (size_t)(em - p - 1));
            fputs("\\fR", out);
            p = em;
        } else if (n > 0) {
            troff_md_n(out, t, tn);
            p += n - 1;
        } else {
            troff_text(out, p, 1);
        }
    }
}

/* The same for a whole string, starting with \& so that a leading . or '
 * is text. */
static void troff_md(FILE *out, const char *md)
{
    fputs("\\&", out);
    troff_md_n(out, md, strlen(md));
}

/* Writes a paragraph of plain text (blank lines: new paragraphs). */
static void troff_paragraphs(FILE *out, const char *text)
{
    const char *p = text;
    while (*p != '\0') {
        const char *end = strstr(p, "\n\n");
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        char *para = strndup(p, n);
        if (para == NULL)
            return;
        fputs(".PP\n", out);
        troff_md(out, para);
        fputc('\n', out);
        free(para);
        p += n;
        while (*p == '\n')
            p++;
    }
}

static void troff_tp(FILE *out, const char *tag_troff, const char *text_md)
{
    fprintf(out, ".TP\n%s\n", tag_troff);
    troff_md(out, text_md);
    fputc('\n', out);
}

static void man_header(FILE *out, const char *name, int section, const char *what)
{
    fprintf(out,
            ".\\\" Generated by baton-gendocs from baton's tables; do not edit.\n"
            ".\\\" Regenerate: cmake --build BUILD --target update_docs\n"
            ".TH %s %d \"\" \"baton %s\" \"%s\"\n"
            ".ad l\n.nh\n",
            name, section, cli_version(), what);
}

/* ---- Markdown pages, as man(7) ---- */

/* Reads the lines of the file at path into a NULL-ended array (owned, one
 * allocation each; free with free_lines), or NULL (errno says why). */
static char **read_lines(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    char **lines = NULL, *line = NULL;
    size_t n = 0, cap = 0;
    ssize_t got;
    bool oom = false;
    while ((got = getline(&line, &cap, f)) >= 0) {
        if (got > 0 && line[got - 1] == '\n')
            line[got - 1] = '\0';
        char **v = realloc(lines, (n + 2) * sizeof *v);
        if (v == NULL) {
            oom = true;
            break;
        }
        lines = v;
        lines[n++] = line;
        lines[n] = NULL;
        line = NULL;
        cap = 0;
    }
    free(line);
    fclose(f);
    if (oom || lines == NULL) {
        for (size_t i = 0; i < n; i++)
            free(lines[i]);
        free(lines);
        errno = oom ? ENOMEM : ENODATA;
        return NULL;
    }
    return lines;
}

static void free_lines(char **lines)
{
    for (size_t i = 0; lines != NULL && lines[i] != NULL; i++)
        free(lines[i]);
    free(lines);
}

static bool is_table_rule(const char *l)
{
    return l != NULL && l[0] == '|' && strspn(l, "|-: ") == strlen(l) && strchr(l, '-') != NULL;
}

/* A table row as a tagged paragraph: its first cell the tag; the others
 * the text (after a table of more than two columns, each named by its
 * header). */
static void table_row(FILE *out, char **cells, size_t n, char **head, size_t nhead)
{
    fputs(".TP\n", out);
    if (strpbrk(cells[0], "`*[") != NULL) { /* its own marks */
        troff_md(out, cells[0]);
    } else {
        fputs("\\fB", out);
        troff_text(out, cells[0], strlen(cells[0]));
        fputs("\\fR", out);
    }
    fputc('\n', out);
    for (size_t i = 1; i < n; i++) {
        if (n > 2 && i < nhead) {
            fputs(i > 1 ? "; " : "", out);
            troff_md(out, head[i]);
            fputs(": ", out);
        } else if (i > 1) {
            fputs("; ", out);
        }
        troff_md(out, cells[i]);
    }
    fputc('\n', out);
}

#define MD_CELLS_MAX 8

/* Writes the Markdown subset of deploy/man/NAME.md as man(7): "## X" as .SH
 * X (upper case), "### X" as .SS, paragraphs, fenced code, "- " bullets
 * (indented lines continue them) and tables (as tagged paragraphs). The
 * lines before the first "## " (the page's title and a word for those who
 * read it on the web) are not written; nor are HTML comments and images. */
static void md_to_troff(FILE *out, char **lines)
{
    bool code = false, para = false, on = false;
    char *head[MD_CELLS_MAX], *headcopy = NULL;
    size_t nhead = 0;
    for (size_t i = 0; lines[i] != NULL; i++) {
        char *l = lines[i];
        if (!on && strncmp(l, "## ", 3) != 0)
            continue;
        on = true;
        if (strncmp(l, "```", 3) == 0) {
            fputs(code ? ".fi\n.RE\n" : ".PP\n.RS 4\n.nf\n", out);
            code = !code;
            para = false;
            continue;
        }
        if (code) {
            fputs("\\&", out);
            troff_text(out, l, strlen(l));
            fputc('\n', out);
            continue;
        }
        if (strncmp(l, "## ", 3) == 0 || strncmp(l, "### ", 4) == 0) {
            bool sub = l[2] == '#';
            const char *t = l + (sub ? 4 : 3);
            fputs(sub ? ".SS \"" : ".SH \"", out);
            for (const char *c = t; *c != '\0'; c++) {
                if (*c == '`' || *c == '"')
                    continue;
                char up = sub ? *c : (char)toupper((unsigned char)*c);
                troff_text(out, &up, 1);
            }
            fputs("\"\n", out);
            para = false;
            continue;
        }
        while (*l == ' ')
            l++;
        if (l[0] == '\0' || strncmp(l, "<!--", 4) == 0 || strncmp(l, "![", 2) == 0) {
            para = false;
            continue;
        }
        if (l[0] == '|') {
            char *copy = strdup(l), *cells[MD_CELLS_MAX];
            size_t n = copy != NULL ? split_row(copy, cells, MD_CELLS_MAX) : 0;
            if (is_table_rule(l)) {
                /* the header was the row before */
            } else if (is_table_rule(lines[i + 1])) {
                free(headcopy);
                headcopy = copy;
                copy = NULL;
                nhead = split_row(headcopy, head, MD_CELLS_MAX);
            } else if (n >= 2) {
                table_row(out, cells, n, head, nhead);
            }
            free(copy);
            para = false;
            continue;
        }
        if (strncmp(l, "- ", 2) == 0) {
            fputs(".IP \\(bu 2\n", out);
            troff_md(out, l + 2);
            fputc('\n', out);
            para = true;
            continue;
        }
        if (!para)
            fputs(".PP\n", out);
        para = true;
        troff_md(out, l);
        fputc('\n', out);
    }
    if (code)
        fputs(".fi\n.RE\n", out);
    free(headcopy);
}

/* Writes the sections of the Markdown page at path. Returns 0, or -1 after
 * a message. */
static int md_sections(FILE *out, const char *path)
{
    char **lines = read_lines(path);
    if (lines == NULL) {
        fprintf(stderr, "baton-gendocs: %s: %s\n", path, strerror(errno));
        return -1;
    }
    md_to_troff(out, lines);
    free_lines(lines);
    return 0;
}

/* ---- the environment of runs and hooks (run.h, hook.h) ---- */

enum env_set { ENV_RUN, ENV_HOOK_ONLY, ENV_HOOK_SHARED };

static bool run_has(const char *name)
{
    for (int i = 0; i < RUN_ENV_COUNT; i++)
        if (strcmp(run_env_name((enum run_env_var)i), name) == 0)
            return true;
    return false;
}

/* Writes the names of set in bold, joined by commas: for ENV_RUN and
 * ENV_HOOK_ONLY as the tag of a tagged paragraph, for ENV_HOOK_SHARED as
 * words of a sentence. */
static void env_names(FILE *out, enum env_set set)
{
    bool first = true;
    if (set != ENV_HOOK_SHARED)
        fputs(".TP\n", out);
    for (int i = 0; i < (set == ENV_RUN ? RUN_ENV_COUNT : HOOK_ENV_COUNT); i++) {
        const char *name = set == ENV_RUN ? run_env_name((enum run_env_var)i)
                                          : hook_env_name((enum hook_env_var)i);
        if (set != ENV_RUN && run_has(name) != (set == ENV_HOOK_SHARED))
            continue;
        fprintf(out, "%s\\fB", first ? "" : ", ");
        troff_text(out, name, strlen(name));
        fputs("\\fR", out);
        first = false;
    }
    fputs(set == ENV_HOOK_SHARED ? " " : "\n", out);
}

/* The ENVIRONMENT section of jobs.yaml(5): every variable, its meaning. */
/* A variable and its meaning, as a tagged paragraph. */
static void env_entry(FILE *out, const char *name, const char *doc)
{
    fputs(".TP\n\\fB", out);
    troff_text(out, name, strlen(name));
    fputs("\\fR\n", out);
    troff_md(out, doc);
    fputc('\n', out);
}

static void env_section(FILE *out)
{
    fputs(".SH ENVIRONMENT\n.PP\nEvery run gets, besides the job's \\fBenv\\fR:\n", out);
    for (int i = 0; i < RUN_ENV_COUNT; i++)
        env_entry(out, run_env_name((enum run_env_var)i), run_env_doc((enum run_env_var)i));
    fputs(".PP\nA hook (\\fBon_failure\\fR, \\fBon_success\\fR) gets, besides the job's "
          "\\fBenv\\fR, each when it applies (no \\fBBATON_FENCE\\fR: a hook reports a run "
          "that is over, it is not fenced):\n",
          out);
    for (int i = 0; i < HOOK_ENV_COUNT; i++)
        env_entry(out, hook_env_name((enum hook_env_var)i), hook_env_doc((enum hook_env_var)i));
}

/* ---- baton(1) ---- */

/* "\fB\-c\fR \fIFILE\fR, \fB\-\-config\fR \fIFILE\fR" */
static void option_tag(FILE *out, const struct cli_opt *o)
{
    if (o->id < CLI_OPT_LONG) {
        fprintf(out, "\\fB\\-%c\\fR", o->id);
        if (o->arg != NULL)
            fprintf(out, " \\fI%s\\fR", o->arg);
        fputs(", ", out);
    }
    fputs("\\fB\\-\\-", out);
    troff_text(out, o->name, strlen(o->name));
    fputs("\\fR", out);
    if (o->arg != NULL)
        fprintf(out, " \\fI%s\\fR", o->arg);
}

static void man_synopsis(FILE *out, const struct cli_cmd *c)
{
    fprintf(out, "\\fBbaton %s\\fR", c->name);
    for (const struct cli_opt *o = c->opts; o != NULL && o->name != NULL; o++) {
        if (o->id < CLI_OPT_LONG)
            fprintf(out, " [\\fB\\-%c\\fR", o->id);
        else {
            fputs(" [\\fB\\-\\-", out);
            troff_text(out, o->name, strlen(o->name));
            fputs("\\fR", out);
        }
        if (o->id < CLI_OPT_LONG)
            fputs("\\fR", out);
        if (o->arg != NULL)
            fprintf(out, " \\fI%s\\fR", o->arg);
        fputc(']', out);
    }
    if (c->operands != NULL && c->operands[0] != '\0') {
        fputc(' ', out);
        troff_text(out, c->operands, strlen(c->operands));
    }
    fputc('\n', out);
}

static void man_command(FILE *out, const struct cli_cmd *c)
{
    fprintf(out, ".SS \"baton %s\"\n", c->name);
    fputs(".PP\n", out);
    man_synopsis(out, c);
    troff_paragraphs(out, c->description);
    fputs(".PP\nOptions:\n.RS\n", out);
    for (size_t pass = 0; pass < 2; pass++)
        for (const struct cli_opt *o = pass == 0 ? c->opts : cli_common_opts;
             o != NULL && o->name != NULL; o++) {
            fputs(".TP\n", out);
            option_tag(out, o);
            fputc('\n', out);
            troff_md(out, o->help);
            fputc('\n', out);
        }
    fputs(".RE\n", out);
    for (const struct cli_section *s = c->sections; s != NULL && s->title != NULL; s++) {
        /* Titles are plain lower-case words: "signals" reads "Signals:". */
        fprintf(out, ".PP\n%c%s:\n.RS\n", toupper((unsigned char)s->title[0]), s->title + 1);
        for (const struct cli_item *i = s->items; i->term != NULL; i++) {
            fputs(".TP\n\\fB", out);
            troff_text(out, i->term, strlen(i->term));
            fputs("\\fR\n", out);
            troff_md(out, i->text);
            fputc('\n', out);
        }
        fputs(".RE\n", out);
    }
    if (c->flags & CLI_CONFIG_KEYS)
        fputs(".PP\nConfiguration: every key of baton.yaml is described in\n"
              ".BR baton.yaml (5).\n",
              out);
    fputs(".PP\nExit status:\n.RS\n", out);
    for (const struct cli_exit *e = c->exits; e->code >= 0; e++) {
        fprintf(out, ".TP\n\\fB%d\\fR\n", e->code);
        troff_md(out, e->text);
        fputc('\n', out);
    }
    fputs(".RE\n", out);
}

int docs_man_baton(FILE *out, const char *md)
{
    size_t n, ne;
    const struct cli_cmd *const *cmds = cli_commands(&n);
    const struct cli_exit_info *ex = cli_exit_codes(&ne);
    man_header(out, "BATON", 1, "User Commands");
    fputs(".SH NAME\nbaton \\- distributed locks with fencing tokens, and exactly\\-once cron "
          "for a fleet, over Redis\n"
          ".SH SYNOPSIS\n\\fBbaton\\fR [\\fB\\-\\-version\\fR] [\\fB\\-\\-help\\fR] "
          "\\fICOMMAND\\fR [\\fIARGS\\fR]\n"
          ".SH DESCRIPTION\n"
          ".PP\n\\fBbaton run\\fR is a supervisor, one per server: the supervisors of a group "
          "elect a leader through a lease in Redis, and the leader runs the cron jobs of "
          "jobs.yaml, each tick exactly once across the group. \\fBbaton lock\\fR runs a "
          "command under a lock, like \\fBflock\\fR(1) across machines. The other commands "
          "inspect and steer a group. The library underneath is \\fBlibbaton\\fR(3).\n"
          ".PP\nCommands:\n.RS\n",
          out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, ".TP\n\\fB%s\\fR\n", cmds[i]->name);
        troff_md(out, cmds[i]->summary);
        fputc('\n', out);
    }
    fputs(".RE\n.PP\nEvery command takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR and "
          "\\fB\\-V\\fR, \\fB\\-\\-version\\fR, after the command's name too.\n"
          ".SH COMMANDS\n",
          out);
    for (size_t i = 0; i < n; i++)
        man_command(out, cmds[i]);
    if (md_sections(out, md) != 0)
        return -1;
    fputs(".SH EXIT STATUS\n.PP\nThe same table holds for every command; each command above "
          "lists the statuses it uses. \\fBbaton lock\\fR also exits with its command's "
          "status, 128+N when the command was killed by signal N.\n",
          out);
    for (size_t i = 0; i < ne; i++) {
        char tag[64];
        snprintf(tag, sizeof tag, "\\fB%d\\fR", ex[i].code);
        troff_tp(out, tag, ex[i].text);
        if (ex[i].sysexit[0] != '\0')
            fprintf(out, "(%s)\n", ex[i].sysexit);
    }
    fputs(".SH LOG EVENTS\n.PP\n\\fBbaton run\\fR writes one JSON object per line "
          "(or one text line, see \\fBlog.format\\fR in \\fBbaton.yaml\\fR(5)) with "
          "\\fIts\\fR, \\fIlevel\\fR, \\fIevent\\fR, \\fInode\\fR and \\fIgroup\\fR, then "
          "the event's fields:\n",
          out);
    for (int e = 0; e < LE_COUNT; e++) {
        char tag[96];
        snprintf(tag, sizeof tag, "\\fB%s\\fR (%s)", log_event_name((enum log_event)e),
                 log_event_varies((enum log_event)e)
                     ? "level varies"
                     : log_level_name(log_event_level((enum log_event)e)));
        troff_tp(out, tag, log_event_doc((enum log_event)e));
        if (log_event_fields((enum log_event)e)[0] != '\0') {
            fputs("Fields: ", out);
            troff_md(out, log_event_fields((enum log_event)e));
            fputc('\n', out);
        }
    }
    fputs(".SH ENVIRONMENT\n"
          ".TP\n\\fBBATON_REDIS_URL\\fR\n"
          "The Redis URL of \\fBbaton lock\\fR when \\fB\\-\\-url\\fR is not given.\n"
          ".TP\n\\fBNO_COLOR\\fR\n"
          "When set and not empty, no colour on a terminal (\\fBbaton logs\\fR, the text "
          "log).\n",
          out);
    env_names(out, ENV_RUN);
    fputs("Given to every job run, besides its job's env; see \\fBjobs.yaml\\fR(5).\n", out);
    env_names(out, ENV_HOOK_ONLY);
    fputs("Given to a job's \\fBon_failure\\fR or \\fBon_success\\fR hook, each when it "
          "applies, with ",
          out);
    env_names(out, ENV_HOOK_SHARED);
    fputs("of its run; see \\fBjobs.yaml\\fR(5).\n", out);
    fputs(".TP\n\\fBBATON_LOCK_KEY\\fR, \\fBBATON_FENCE\\fR\n"
          "Given to the command of \\fBbaton lock\\fR: the key and the lock's fencing token.\n"
          ".SH FILES\n"
          ".TP\n\\fI./baton.yaml\\fR, \\fI/etc/baton/baton.yaml\\fR\n"
          "The configuration read without \\fB\\-c\\fR, the first that exists; see "
          "\\fBbaton.yaml\\fR(5). A baton built for a prefix other than \\fI/usr\\fR "
          "(the package's) looks in its own \\fISYSCONFDIR/baton/baton.yaml\\fR "
          "between the two, where \\fBcmake \\-\\-install\\fR puts the samples: "
          "\\fI/usr/local/etc/baton/baton.yaml\\fR for the default prefix "
          "\\fI/usr/local\\fR. A file this user may not read is an error that says who may "
          "(\\fI/etc/baton\\fR is 0750 root:baton), not a reason to look further.\n"
          ".TP\n\\fIjobs.yaml\\fR\n"
          "The jobs, beside baton.yaml unless it says otherwise; see \\fBjobs.yaml\\fR(5).\n"
          ".SH SEE ALSO\n"
          "\\fBbaton.yaml\\fR(5), \\fBjobs.yaml\\fR(5), \\fBlibbaton\\fR(3), "
          "\\fBflock\\fR(1), \\fBcrontab\\fR(5), \\fBsysexits.h\\fR(3head)\n",
          out);
    return ferror(out) ? -1 : 0;
}

/* ---- baton.yaml(5), jobs.yaml(5) ---- */

static void reference_entries(FILE *out, const struct docs_ref *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct docs_ref_row *row = &r->rows[i];
        fputs(".TP\n\\fB", out);
        troff_text(out, row->key, strlen(row->key));
        fputs("\\fR (", out);
        troff_text(out, row->type, strlen(row->type));
        fputs(")\n", out);
        troff_md(out, row->meaning);
        fputs("\n.br\nDefault: ", out);
        troff_md(out, row->def);
        fputc('\n', out);
        if (row->bounds[0] != '\0') {
            fputs(".br\nValues: ", out);
            troff_md(out, row->bounds);
            fputc('\n', out);
        }
    }
}

int docs_man_reference(FILE *out, enum docs_ref_which which, const char *md)
{
    struct docs_ref r;
    if (docs_ref_load(which, &r) != 0) {
        fprintf(stderr, "baton-gendocs: out of memory\n");
        return -1;
    }
    if (which == DOCS_REF_CONFIG) {
        man_header(out, "BATON.YAML", 5, "File Formats");
        fputs(".SH NAME\nbaton.yaml \\- configuration of the baton supervisor\n"
              ".SH SYNOPSIS\n\\fI/etc/baton/baton.yaml\\fR, \\fI./baton.yaml\\fR, or the file "
              "given to \\fB\\-c\\fR\n"
              ".SH DESCRIPTION\n"
              ".PP\nThe configuration of \\fBbaton run\\fR (and of \\fBbaton status\\fR, "
              "\\fBhistory\\fR, \\fBstep\\-down\\fR and \\fBcheck\\fR, which read the same "
              "file): a YAML mapping of the keys below; a dotted key is written nested "
              "(\\fBlease.ttl\\fR is \\fBlease: {ttl: 10s}\\fR). Every key is optional: an "
              "empty file means all defaults.\n"
              ".PP\nDurations are written 500ms, 10s, 2m, 1h30m, 1d, or 0 (each unit once, "
              "largest first: 1h1h is refused). Booleans (true, false) and integers are written "
              "unquoted (\"false\" is a string), integers without a leading zero (010 is octal "
              "to YAML 1.1). Errors read "
              "\\fIfile\\fR:\\fIline\\fR:\\fIcol\\fR: \\fImessage\\fR and reject the file whole; "
              "\\fBbaton check\\fR validates it without starting anything. YAML anchors, "
              "aliases, tags and several documents are refused. The source's "
              "\\fIconfig/baton.yaml\\fR is an annotated sample of every key.\n"
              ".SH KEYS\n",
              out);
    } else {
        man_header(out, "JOBS.YAML", 5, "File Formats");
        fputs(".SH NAME\njobs.yaml \\- the cron jobs a baton group runs\n"
              ".SH SYNOPSIS\n.nf\n"
              "defaults:\n  timeout: 10m\njobs:\n  \\- name: daily\\-report\n"
              "    schedule: \"0 7 * * MON\\-FRI\"\n    timezone: Europe/Berlin\n"
              "    command: [\"/usr/local/bin/report\", \"\\-\\-daily\"]\n.fi\n"
              ".SH DESCRIPTION\n"
              ".PP\nThe jobs that the leader of a \\fBbaton run\\fR group runs, each tick "
              "exactly once across the group. The file named by the configuration's "
              "\\fBjobs\\fR key holds \\fBjobs:\\fR, a list of jobs, and optionally "
              "\\fBdefaults:\\fR, keys applied to every job that does not set them (env is "
              "merged). An empty file is a valid set of no jobs.\n"
              ".PP\nEvery run gets, besides its \\fBenv\\fR, the variables of ENVIRONMENT "
              "below. Its stdout and stderr become log lines, and their last "
              "\\fBhistory.output_bytes\\fR (see \\fBbaton.yaml\\fR(5)) are kept with its record "
              "(OUTPUT KEPT below). \\fBon_failure\\fR and \\fBon_success\\fR run a command "
              "after a run (HOOKS below). Schedules are cron expressions (CRON EXPRESSIONS "
              "below); \\fBbaton next\\fR prints the fire times of one. The source's "
              "\\fIconfig/jobs.yaml\\fR is an annotated sample of every key.\n"
              ".SH KEYS\n",
              out);
    }
    reference_entries(out, &r);
    if (r.nnotes > 0) {
        fputs(".PP\nAlso checked at load:\n", out);
        for (size_t i = 0; i < r.nnotes; i++) {
            fputs(".IP \\(bu 2\n", out);
            troff_md(out, r.notes[i]);
            fputc('\n', out);
        }
    }
    if (md != NULL && md_sections(out, md) != 0) {
        docs_ref_free(&r);
        return -1;
    }
    if (which == DOCS_REF_JOBS)
        env_section(out);
    fputs(".SH SEE ALSO\n", out);
    fputs(which == DOCS_REF_CONFIG
              ? "\\fBbaton\\fR(1), \\fBjobs.yaml\\fR(5)\n"
              : "\\fBbaton\\fR(1), \\fBbaton.yaml\\fR(5), \\fBcrontab\\fR(5)\n",
          out);
    docs_ref_free(&r);
    return ferror(out) ? -1 : 0;
}

/* ---- libbaton(3) ---- */

int docs_man_libbaton(FILE *out, const char *md)
{
    man_header(out, "LIBBATON", 3, "Library Functions Manual");
    fputs(".SH NAME\nlibbaton \\- distributed locks with fencing tokens over Redis\n"
          ".SH SYNOPSIS\n.nf\n\\fB#include <baton.h>\\fR\n"
          "\\fB#include <baton_election.h>\\fR   /* the election primitives */\n"
          "\\fB#include <baton_redis.h>\\fR      /* raw Redis calls */\n.fi\n.PP\n"
          "Link with \\fI$(pkg\\-config \\-\\-cflags \\-\\-libs baton)\\fR.\n",
          out);
    if (md_sections(out, md) != 0)
        return -1;
    fputs(".SH FILES\n.TP\n\\fIbaton.h\\fR\nFor lock users: the client, locks (blocking and "
          "asynchronous), semaphores, multi-locks, once, leaders, stats and errors.\n"
          ".TP\n\\fIbaton_election.h\\fR\nThe election primitives, one bounded Redis call "
          "each, for a daemon that drives its campaign from its own event loop.\n"
          ".TP\n\\fIbaton_redis.h\\fR\nRaw Redis calls for tools that keep their own data "
          "beside the locks: a command or script, on the client's connections or on every "
          "master of a quorum.\n"
          ".PP\nEach is the reference for what it declares: every function states its "
          "contract, ownership and thread safety.\n"
          ".SH SEE ALSO\n\\fBbaton\\fR(1), \\fBpkg\\-config\\fR(1)\n",
          out);
    return ferror(out) ? -1 : 0;
}
