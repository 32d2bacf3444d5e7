/* fuzz_logfmt.c -- libFuzzer target for the log's text format (logfmt.c),
 * which `baton logs` applies to whatever it is given.
 *
 * Every input is formatted as one line, with and without colour. The
 * sanitizers do the checking (no crash, leak or undefined behaviour); the
 * target checks that the text is one line (no newline but those the input
 * line had, which logfmt_line passes through only for non-events) and that
 * an input that is not a JSON event comes back unchanged.
 *
 * Seeds: tests/fuzz/corpus/fuzz_logfmt/ (log lines of every kind).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "logfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    for (int color = 0; color < 2; color++) {
        char *text = logfmt_line(line, size, color != 0);
        if (text == NULL)
            continue; /* out of memory */
        cJSON *ev = cJSON_ParseWithLength(line, size);
        bool event = cJSON_IsObject(ev) &&
                     cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "event"));
        cJSON_Delete(ev);
        /* Not an event: unchanged (up to a NUL in the input). */
        if (!event && strncmp(text, line, strnlen(line, size)) != 0)
            abort();
        free(text);
    }
    return 0;
}
