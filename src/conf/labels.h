/* labels.h -- node labels, one grammar for baton.yaml's `labels:` (what a
 * node carries) and jobs.yaml's `run_on: {labels: [...]}` (what a job's
 * node must carry): a sequence of distinct names of letters, digits and
 * _ . - (1-64 characters), at most 16. */
#ifndef BATON_LABELS_H
#define BATON_LABELS_H

#include "yamlx.h"

#define LABELS_MAX    16
#define LABEL_LEN_MAX 64

/* Reads the sequence n into *out (NULL-terminated, owned: job_strv_free;
 * an empty sequence gives an empty vector, not NULL). what names n in
 * messages. Returns 0, or -1 with "file:line:col: WHAT[i]: message" in d
 * (*out untouched). */
int labels_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                char ***out);

#endif
