/* fuzz_config.c -- libFuzzer target for both configuration parsers.
 *
 * Every input is read as a baton.yaml (config_load_buffer) and as a
 * jobs.yaml (jobs_load_buffer); what loads is written back out through
 * config_write_effective, and every job is looked up by name. The sanitizers
 * do the checking: no crash, no leak, no undefined behaviour, and an error
 * message that is always "name:" followed by a NUL-terminated line.
 *
 * Seeds: tests/fuzz/corpus/fuzz_config/ (the samples and the bad files).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jobs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const char *err, const char *name)
{
    size_t n = strlen(name);

    /* A rejected file always says which file, and on one line. */
    if (strncmp(err, name, n) != 0 || err[n] != ':' || strchr(err, '\n') != NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Tiny error buffers on some inputs exercise truncation. */
    size_t errlen = size > 0 && data[0] == '#' ? 24 : 1024;
    char err[1024];
    struct config *c = NULL;
    struct jobs *j = NULL;

    if (config_load_buffer("/etc/baton/fuzz.yaml", (const char *)data, size, &c, err, errlen) ==
        0) {
        FILE *out = fopen("/dev/null", "w");

        if (out != NULL) {
            config_write_effective(c, out);
            fclose(out);
        }
        config_free(c);
    } else if (c != NULL) {
        abort();
    } else if (errlen > 24) {
        check_error(err, "/etc/baton/fuzz.yaml");
    }

    if (jobs_load_buffer("jobs.yaml", (const char *)data, size, "UTC", &j, err, errlen) == 0) {
        for (size_t i = 0; i < j->n; i++)
            if (jobs_find(j, j->v[i].name) != &j->v[i] || j->v[i].expr == NULL ||
                j->v[i].tz == NULL || (j->v[i].argv == NULL) == (j->v[i].shell == NULL))
                abort();
        jobs_free(j);
    } else if (j != NULL) {
        abort();
    } else if (errlen > 24) {
        check_error(err, "jobs.yaml");
    }
    return 0;
}
