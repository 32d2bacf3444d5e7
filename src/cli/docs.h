/* docs.h -- the documents generated from the tables: the configuration
 * reference read back as rows, the man pages baton(1), baton.yaml(5),
 * jobs.yaml(5) and libbaton(3), and the bash and zsh completions.
 *
 * A man page's prose beyond the tables is Markdown in deploy/man (NAME.N.md,
 * readable on the web as well), whose "## " sections are written into the
 * page (a small subset: paragraphs, "- " bullets, fenced code, tables).
 *
 * The configuration reference is the Markdown that `baton check --reference`
 * prints (config.c and jobkeys.c write it from their tables); it is parsed back
 * here rather than read from those tables' internals, so that the one text
 * `baton check --reference` shows is also what the man pages show.
 */
#ifndef BATON_CLI_DOCS_H
#define BATON_CLI_DOCS_H

#include <stddef.h>
#include <stdio.h>

enum docs_ref_which { DOCS_REF_CONFIG, DOCS_REF_JOBS };

/* One key of the reference; every cell is Markdown, as printed. */
struct docs_ref_row {
    char *key, *type, *def, *bounds, *meaning;
};

struct docs_ref {
    struct docs_ref_row *rows;
    size_t n;
    char **notes; /* the "Also checked at load" bullets, if any */
    size_t nnotes;
    char *text; /* owns the strings above */
};

/* Reads the reference of baton.yaml or jobs.yaml. Returns 0 and *out (free
 * with docs_ref_free), or -1 (out of memory). */
int docs_ref_load(enum docs_ref_which which, struct docs_ref *out);
/* Frees what docs_ref_load returned; a zeroed struct is a no-op. */
void docs_ref_free(struct docs_ref *r);
/* Returns: the type of key in r ("integer"), or NULL. Borrowed from r. */
const char *docs_ref_type(const struct docs_ref *r, const char *key);

/* Writes md without its inline Markdown marks (`code`, **bold**, [text](url)). */
void docs_write_plain(FILE *out, const char *md);

/* ---- generated files; each returns 0, or -1 after a message on stderr ---- */

/* baton(1); md: the Markdown of its sections after COMMANDS. */
int docs_man_baton(FILE *out, const char *md);
/* baton.yaml(5), jobs.yaml(5); md (or NULL): the Markdown of the sections
 * after KEYS. */
int docs_man_reference(FILE *out, enum docs_ref_which which, const char *md);
/* libbaton(3), its sections from the Markdown at md. */
int docs_man_libbaton(FILE *out, const char *md);
int docs_bash_completion(FILE *out);
int docs_zsh_completion(FILE *out);

#endif /* BATON_CLI_DOCS_H */
