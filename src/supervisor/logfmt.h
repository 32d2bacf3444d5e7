/* logfmt.h -- the supervisor's log lines as text for humans: one line per
 * event, used by the log itself when `log.format` is text (or auto on a
 * terminal) and by `baton logs`, which turns JSON lines into the same text
 * (like bunyan's CLI). Pure: no I/O, no clock.
 *
 *   2026-11-22T02:30:23.573Z INFO  node-b transition acquiring -> working (acquired) term=2
 *   2026-11-22T02:30:25.001Z INFO  node-b job_output hello: hello from node-b  stream=stdout
 *   2026-11-22T02:30:29.004Z WARN  node-b job_end flaky failed  exit_code=1 duration_ms=3 ...
 *
 * After the time, level and node come the event's name and, for the events
 * of a table (transition, job_start, job_end...), a short phrase; every
 * other field follows as key=value (values quoted when they hold spaces,
 * arrays and objects as compact JSON), so nothing is lost. Values that are
 * internal names (a transition's guard "not runs_left", its trigger
 * "renew_due", a run's stopped_because "lease_lost") read as words ("no
 * run left", "renewal due", "this node lost its lease"); the JSON keeps
 * the names. `ts`, `level`,
 * `event`, `node` and `group` are the line's head (`group` is shown, as
 * group=G, only when it is not "default").
 *
 * With colour (ANSI escapes): the level is coloured (debug dim, warn yellow,
 * error red), the node takes one of six colours chosen by its name (cyans,
 * blues, magentas: none that reads as a warning or an error), and the
 * phrase is bold.
 *
 * Those colours are the only escapes written: every text taken from the
 * line (a job's output, a node name, any field) has the characters a
 * terminal acts on escaped (utf8_term_escape, utf8.h), so that a line is
 * one line on the screen and cannot retitle or clear it.
 */
#ifndef BATON_LOGFMT_H
#define BATON_LOGFMT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Formats one event (a JSON object as the log writes it). Returns: owned
 * text without a newline (free()), or NULL on ENOMEM. */
char *logfmt_event(const cJSON *event, bool color);

/* Formats one input line (without its newline): a JSON object becomes text
 * as above; anything else is returned as it is, but for the characters a
 * terminal acts on (escaped). Returns: owned (free()), or NULL on ENOMEM. */
char *logfmt_line(const char *line, size_t len, bool color);

/* The words a value of field reads as (NULL: it reads as it is), for the
 * page too; and, for tests, the event of phrase row i (NULL past the
 * last). Static. */
const char *logfmt_phrase_event(size_t i);
const char *logfmt_words(const char *field, const char *value);

#endif /* BATON_LOGFMT_H */
