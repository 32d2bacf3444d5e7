/* jsonl_check.c -- checks that a file is JSON lines: every line one JSON
 * object (RFC 8259), valid UTF-8, nothing after it, and no object (at any
 * depth) with two members of the same name: RFC 8259 says such names
 * SHOULD be unique, and readers disagree on which one wins (jq and Python
 * keep the last, cJSON the first). For tests of the supervisor's log.
 *
 *   jsonl_check FILE          prints the number of lines; exit 0
 *                             or "FILE:N: why" and exit 1 at the first bad line
 *   jsonl_check --log FILE... checks, in each FILE, the lines that start as
 *                             the supervisor's log lines do ({"ts":"); other
 *                             lines, and a last line the writer had not
 *                             finished (no newline: a process killed while
 *                             writing), are not looked at. Prints nothing
 *                             when all are good; exit 1 after the first bad
 *                             line of each file. (The harness runs it over
 *                             every test's output.)
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define LOG_LINE_START "{\"ts\":\""

/* The first name that two members of one object of o's tree share, or NULL. */
static const char *duplicate_name(const cJSON *o)
{
    for (const cJSON *a = o != NULL ? o->child : NULL; a != NULL; a = a->next) {
        if (cJSON_IsObject(o))
            for (const cJSON *b = a->next; b != NULL; b = b->next)
                if (strcmp(a->string, b->string) == 0)
                    return a->string;
        const char *d = duplicate_name(a);
        if (d != NULL)
            return d;
    }
    return NULL;
}

/* Why line no of path (n bytes with its newline, writable) is not a good
 * JSON line, printed; false then. */
static bool check_line(const char *path, long no, char *line, size_t n)
{
    if (memchr(line, '\0', n) != NULL) {
        fprintf(stderr, "%s:%ld: a raw NUL byte\n", path, no);
        return false;
    }
    if (!utf8_valid(line, n)) {
        fprintf(stderr, "%s:%ld: not valid UTF-8\n", path, no);
        return false;
    }
    line[n - 1] = '\0';
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithOpts(line, &end, 1);
    bool ok = o != NULL && cJSON_IsObject(o);
    if (!ok) {
        fprintf(stderr, "%s:%ld: not a JSON object: %.200s\n", path, no, line);
    } else {
        const char *d = duplicate_name(o);
        if (d != NULL) {
            fprintf(stderr, "%s:%ld: two members named \"%s\": %.300s\n", path, no, d, line);
            ok = false;
        }
    }
    cJSON_Delete(o);
    return ok;
}

/* Checks path. log: only the log lines, as above. Returns 0, 1 (a bad
 * line), or 2 (cannot be read). */
static int check_file(const char *path, bool log, long *lines)
{
    FILE *f = fopen(path, "rbe");
    if (f == NULL) {
        perror(path);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long no = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        no++;
        bool complete = n > 0 && line[n - 1] == '\n';
        if (log && (!complete || strncmp(line, LOG_LINE_START, strlen(LOG_LINE_START)) != 0))
            continue;
        if (!complete) {
            fprintf(stderr, "%s:%ld: no newline at the end of the line\n", path, no);
            rc = 1;
        } else if (!check_line(path, no, line, (size_t)n)) {
            rc = 1;
        }
    }
    free(line);
    fclose(f);
    *lines = no;
    return rc;
}

int main(int argc, char **argv)
{
    long lines = 0;
    if (argc >= 2 && strcmp(argv[1], "--log") == 0) {
        int rc = 0;
        for (int i = 2; i < argc; i++) {
            int r = check_file(argv[i], true, &lines);
            rc = r > rc ? r : rc;
        }
        return rc;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: jsonl_check FILE | jsonl_check --log FILE...\n");
        return 2;
    }
    int rc = check_file(argv[1], false, &lines);
    if (rc == 0)
        printf("%ld\n", lines);
    return rc;
}
