/* labels.c -- see labels.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobcmd.h"
#include "labels.h"

static bool label_ok(const char *s)
{
    for (; *s != '\0'; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return false;
    return true;
}

int labels_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                char ***out)
{
    char **v;

    if (n->kind != YAMLX_SEQ)
        return yamlx_errorf(d, n, "%s: expected a sequence of labels like [reports, ssd], got %s",
                            what, yamlx_kind_name(n));
    if (n->nitems > LABELS_MAX)
        return yamlx_errorf(d, n, "%s: %zu labels; at most %d", what, n->nitems, LABELS_MAX);
    v = calloc(n->nitems + 1, sizeof *v);
    if (v == NULL)
        return yamlx_errorf(d, NULL, "out of memory");
    for (size_t i = 0; i < n->nitems; i++) {
        const struct yamlx_node *it = n->items[i];
        char w[256];

        snprintf(w, sizeof w, "%s[%zu]", what, i);
        if (yamlx_expect_scalar(d, it, w, "a label") != 0)
            goto out_free;
        if (it->len == 0 || it->len > LABEL_LEN_MAX || !label_ok(it->str)) {
            yamlx_errorf(d, it, "%s: a label is 1-%d letters, digits, '_', '.' or '-'", w,
                         LABEL_LEN_MAX);
            goto out_free;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(v[k], it->str) == 0) {
                yamlx_errorf(d, it, "%s: \"%s\" is given twice", w, it->str);
                goto out_free;
            }
        if ((v[i] = strdup(it->str)) == NULL) {
            yamlx_errorf(d, NULL, "out of memory");
            goto out_free;
        }
    }
    *out = v;
    return 0;
out_free:
    job_strv_free(v);
    return -1;
}
