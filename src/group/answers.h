/* answers.h -- small readers of the masters' answers (baton.h's struct
 * baton_answers) that several modules share. On one server there is one
 * answer; over a Redlock quorum, one per master, each module reducing them
 * as its data requires (claim.h, pause.h, history.h, trigger.h). */
#ifndef BATON_ANSWERS_H
#define BATON_ANSWERS_H

#include <stddef.h>

#include "baton_redis.h"

/* Checks that a majority of the masters answered without an error
 * (baton_answers_check(): else its code, the detail in c's errstr: on one
 * server, the server's own words) and that every master that answered gave
 * an array, and adds up their elements into *total (room for a union of
 * them). Returns 0, that code, or BATON_EPROTO when an answer is not an
 * array. */
int answers_arrays(struct baton_client *c, const struct baton_answers *a, size_t *total);

#endif /* BATON_ANSWERS_H */
