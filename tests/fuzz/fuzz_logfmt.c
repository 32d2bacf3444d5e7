/* fuzz_logfmt.c -- libFuzzer target for the log's text format (logfmt.c),
 * which `baton logs` applies to whatever it is given.
 *
 * Every input is formatted as one line, with and without colour. The
 * sanitizers do the checking (no crash, leak or undefined behaviour); the
 * target checks that an input that is not a JSON event comes back as it
 * was, escaped for a terminal (utf8_term_escape: a tab becomes \t), and
 * that no text, without colour, holds a control character a terminal
 * would act on (so one line, never a forged one).
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
#include "utf8.h"

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
        /* Not an event: the input, escaped for a terminal. */
        if (!event) {
            size_t need = utf8_term_escape(line, size, NULL, 0);
            char *want = malloc(need + 1);
            if (want != NULL) {
                utf8_term_escape(line, size, want, need + 1);
                if (strcmp(text, want) != 0)
                    abort();
                free(want);
            }
        }
        /* Without colour, no C0 control or DEL: one line, as shown. */
        for (const unsigned char *p = (const unsigned char *)text; !color && *p != '\0'; p++)
            if (*p < 0x20 || *p == 0x7f)
                abort();
        free(text);
    }
    return 0;
}
