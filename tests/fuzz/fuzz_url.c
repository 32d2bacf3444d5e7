/* fuzz_url.c -- libFuzzer target: the Redis URL parser (baton_url_check(),
 * the one parser behind baton_client_new()) and the password masking that
 * logs and error messages go through (secrets_mask_url()).
 *
 * Checks, beyond "no crash, no hang, no leak": every message and redacted
 * URL comes back terminated within its buffer, a URL that is accepted is
 * accepted again in its redacted form (or refused with a message, as a
 * redacted password may leave an empty one), and masking (a fixed ***)
 * never lengthens a URL and clears the bytes it frees.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *buf, size_t len)
{
    if (memchr(buf, '\0', len) == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char redacted[512], again[512], err[256];

    if (size > 4096)
        return 0;
    char *url = malloc(size + 1);
    if (url == NULL)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';

    memset(redacted, 'x', sizeof redacted);
    memset(err, 'x', sizeof err);
    int rc = baton_url_check(url, redacted, sizeof redacted, err, sizeof err);
    if (rc == BATON_OK) {
        terminated(redacted, sizeof redacted);
        if (strlen(redacted) + 1 < sizeof redacted) {
            err[0] = '\0';
            rc = baton_url_check(redacted, again, sizeof again, err, sizeof err);
            if (rc != BATON_OK && err[0] == '\0')
                abort(); /* refused without saying why */
        }
    } else {
        terminated(err, sizeof err);
        if (rc != BATON_EINVAL && rc != BATON_ENOMEM)
            abort();
        if (rc == BATON_EINVAL && err[0] == '\0')
            abort();
    }

    size_t before = strlen(url);
    secrets_mask_url(url);
    if (strlen(url) > before)
        abort();
    for (size_t i = strlen(url); i < before; i++)
        if (url[i] != '\0')
            abort(); /* what the fixed mask freed is cleared */
    free(url);
    return 0;
}
