/* jsonl_check.c -- checks that a file is JSON lines: every line one JSON
 * object (RFC 8259), valid UTF-8, nothing after it. For tests of the
 * supervisor's log.
 *
 *   jsonl_check FILE     prints the number of lines; exit 0
 *                        or "FILE:N: why" and exit 1 at the first bad line
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: jsonl_check FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long no = 0;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        no++;
        if (n == 0 || line[n - 1] != '\n') {
            fprintf(stderr, "%s:%ld: no newline at the end of the line\n", argv[1], no);
            rc = 1;
            break;
        }
        if (memchr(line, '\0', (size_t)n) != NULL) {
            fprintf(stderr, "%s:%ld: a raw NUL byte\n", argv[1], no);
            rc = 1;
            break;
        }
        if (!utf8_valid(line, (size_t)n)) {
            fprintf(stderr, "%s:%ld: not valid UTF-8\n", argv[1], no);
            rc = 1;
            break;
        }
        line[n - 1] = '\0';
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithOpts(line, &end, 1);
        if (o == NULL || !cJSON_IsObject(o)) {
            fprintf(stderr, "%s:%ld: not a JSON object: %.200s\n", argv[1], no, line);
            cJSON_Delete(o);
            rc = 1;
            break;
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    if (rc == 0)
        printf("%ld\n", no);
    return rc;
}
