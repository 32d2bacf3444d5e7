/* members.h -- who is in a group: each supervisor's heartbeat, and reading
 * them back for `baton status`.
 *
 * Keys (group G; see keys.h):
 *   baton:{G}:nodes  hash: node -> JSON {"state","term","pid","version","since"}
 *   baton:{G}:seen   hash: node -> last heartbeat, server time in ms
 * A heartbeat is one script: it writes both fields and forgets nodes not
 * seen for an hour. Time is the server's, never a node's. */
#ifndef BATON_MEMBERS_H
#define BATON_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "baton.h"

/* Writes node's heartbeat; info_json is a JSON object (the node's state).
 * Returns 0 or a BATON_E* code. */
int members_heartbeat(struct baton_client *c, const char *group, const char *node,
                      const char *info_json);

struct member {
    char *node;
    char *info_json; /* as written by the node */
    int64_t seen_ago_ms;
};

/* Reads every node seen in the last hour, most recent first. Returns 0 and
 * *out and *n (owned; free with members_free), or a BATON_E* code. */
int members_read(struct baton_client *c, const char *group, struct member **out, size_t *n);
void members_free(struct member *m, size_t n);

#endif
