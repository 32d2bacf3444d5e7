/* gendocs.c -- baton-gendocs: writes the files generated from baton's tables
 * into the source tree, or checks that they are current.
 *
 *   baton-gendocs --check  SRCDIR   exit 1 (naming the stale files) unless
 *                                   every file below matches the tables
 *   baton-gendocs --update SRCDIR   rewrite the stale ones
 *
 * The files: deploy/man/baton.1, baton.yaml.5, jobs.yaml.5, libbaton.3
 * (their prose beyond the tables from deploy/man/baton.1.md, jobs.yaml.5.md
 * and libbaton.3.md), deploy/completion/baton.bash and _baton (bash and
 * zsh). The build target `update_docs` runs --update; the test
 * `docs_current` runs --check.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "docs.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    if (f == NULL)
        return NULL;
    for (;;) {
        if (*len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *p = realloc(buf, cap);
            if (p == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t n = fread(buf + *len, 1, cap - *len - 1, f);
        *len += n;
        if (n == 0)
            break;
    }
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Compares want with the file at path; with update, rewrites it when they
 * differ. Returns true when the file is (now) current. */
static bool settle(const char *path, const char *want, size_t wlen, bool update)
{
    size_t hlen;
    char *have = read_file(path, &hlen);
    bool same = have != NULL && hlen == wlen && memcmp(have, want, wlen) == 0;
    free(have);
    if (same)
        return true;
    if (!update) {
        fprintf(stderr, "baton-gendocs: %s is out of date\n", path);
        return false;
    }
    FILE *f = fopen(path, "we");
    if (f == NULL || fwrite(want, 1, wlen, f) != wlen || fclose(f) != 0) {
        fprintf(stderr, "baton-gendocs: %s: %s\n", path, strerror(errno));
        return false;
    }
    fprintf(stderr, "baton-gendocs: wrote %s\n", path);
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--update") != 0)) {
        fprintf(stderr, "usage: baton-gendocs --check|--update SRCDIR\n");
        return 64;
    }
    bool update = strcmp(argv[1], "--update") == 0, ok = true;
    const char *src = argv[2];
    char path[4096], md[4096];
    static const struct {
        const char *file;
        int kind;
    } files[] = {
        {"deploy/man/baton.1", 0},           {"deploy/man/baton.yaml.5", 1},
        {"deploy/man/jobs.yaml.5", 2},       {"deploy/man/libbaton.3", 3},
        {"deploy/completion/baton.bash", 4}, {"deploy/completion/_baton", 5},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f == NULL)
            return 1;
        int rc = -1;
        snprintf(md, sizeof md, "%s/%s.md", src, files[i].file);
        switch (files[i].kind) {
        case 0: rc = docs_man_baton(f, md); break;
        case 1: rc = docs_man_reference(f, DOCS_REF_CONFIG, NULL); break;
        case 2: rc = docs_man_reference(f, DOCS_REF_JOBS, md); break;
        case 3: rc = docs_man_libbaton(f, md); break;
        case 4: rc = docs_bash_completion(f); break;
        case 5: rc = docs_zsh_completion(f); break;
        default: break;
        }
        if (fclose(f) != 0 || rc != 0) {
            free(buf);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s", src, files[i].file);
        ok = settle(path, buf, len, update) && ok;
        free(buf);
    }

    if (!ok && !update)
        fprintf(stderr, "baton-gendocs: regenerate: cmake --build BUILD --target update_docs\n");
    return ok ? 0 : 1;
}
