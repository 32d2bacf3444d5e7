/* marks.h -- the high-water marks a leadership starts from (claim.h): each
 * job's last tick decided, read from Redis when this node starts leading
 * (or later, per job, when that read failed) and applied to the job's
 * queue (ticks_take_mark: the ticks missed since are caught up within its
 * window), and written for the jobs Redis had none of.
 *
 * This part owns what the term's start says of them: whether its grant
 * came from a server that may lack the last writes of the term before
 * (baton_election_server_changed: no catch-up from before the term, said
 * once), and when the leadership began. A job whose claim's answer was
 * lost at or before its mark is settled as its mark is read
 * (claimer_settle). */
#ifndef BATON_MARKS_H
#define BATON_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rctx.h"

struct claimer;
struct jobstate;

struct marks {
    bool no_catchup, no_catchup_logged; /* no catch-up from before this term; said */
    int64_t lead_wall_s;                /* when this leadership began (Unix s) */
};

/* A leadership begins, its grant from a server that may lack the last
 * writes of the term before (server_changed) or not: every job of states
 * (a list: jobstate.next) reads its mark, CLAIM_MARKS_MAX per read, until
 * a read fails; a job whose mark could not be read reads it in its turn
 * (marks_read). */
void marks_lead(const struct rctx *x, struct marks *m, struct claimer *c, struct jobstate *states,
                bool server_changed);
/* Reads the marks of the n jobs of js[] (at most CLAIM_MARKS_MAX) and
 * applies them (ticks.h), settles their lost claims they pass, writes the
 * marks Redis had none of. Returns false when they could not be read. */
bool marks_read(const struct rctx *x, struct marks *m, struct claimer *c, struct jobstate **js,
                size_t n);
/* Writes the marks of those of js[0..n) that Redis had none of. */
void marks_write(const struct rctx *x, struct jobstate **js, size_t n);

#endif
