/* api.h -- the HTTP control API (http.control): authentication of every
 * request but the probes, and the calls that act on the group, carried
 * out through Redis by the code the commands use (trigger.h, pause.h,
 * stepdown.h, history.h), so that any node takes any call.
 *
 *   POST /jobs/JOB/trigger  {"id": ID, "wait": S}   baton trigger [--id] [--wait]
 *   POST /jobs/JOB/pause    {"reason": TEXT}         baton pause JOB
 *   POST /jobs/JOB/resume   {"catchup": BOOL}        baton resume JOB
 *   POST /pause-all         {"reason": TEXT}         baton pause --all
 *   POST /resume-all        {"catchup": BOOL}        baton resume --all
 *   POST /step-down         {"wait": S}              baton step-down
 *   GET  /jobs/JOB/runs?count=N                      baton history JOB --json
 *        {"job", "runs": [...], "pauses": [...]}: the pauses and resumes
 *        that concern the job (pauselog.h) apart from its runs
 *   GET  /runs/ID/output[?job=JOB]                   baton history JOB ID --output --json
 *
 * Tokens: `Authorization: Bearer TOKEN`, checked against http.tokens_file
 * (tokens.h) in constant time; a `read` token may GET, an `operate` token
 * may also POST (403 otherwise). No token, or a wrong one: 401, the same
 * answer for both. /healthz and /readyz are never checked; /, /status and
 * /metrics are unless http.public_read; / without a valid token gets 401
 * with the status page's request for one (statuspage_login()), and with
 * one it is passed the token's role (enum api_grant) for its buttons. An address that sent
 * API_FAIL_MAX wrong tokens within API_FAIL_WINDOW_S gets 429 for
 * API_BLOCK_S for every request without a valid token (a wrong one, none);
 * a valid token is still served, so that one client behind a shared
 * address (NAT, proxy) cannot lock the others out; the table of addresses
 * holds API_ADDRS entries, the oldest forgotten first.
 *
 * Answers are JSON; errors are {"error": "what went wrong", "code":
 * "a_word"} with 400 (bad body or argument), 401, 403, 404 (no such path,
 * job or run), 405 (with Allow), 409 (an id of another job's request, no
 * leader to step down), 413 (a body over HTTP_MAX_BODY), 429, 503 (Redis
 * failing, too many calls waiting, the node stopping).
 *
 * The HTTP thread only checks and queues: API_WORKERS threads, each with
 * a Redis client of its own, carry the calls out (a trigger's wait and a
 * step-down's are bounded by API_WAIT_MAX_S) and answer them
 * (http_call_answer). Each call that changes something is queued as an
 * audit line (`api_call`: the token's name, the action, the job, the
 * remote address, the status) that the loop writes (api_flush_audit); who
 * did it goes into Redis too, as the pause's or the request's `by`:
 * "NAME (token) from ADDR". No token is ever logged or answered. A
 * request refused for its token (401) or its address (429) is audited
 * too, with a null token, at most API_REFUSED_LOG_PER_S lines a second
 * of each status: the next line of its status logged counts those left
 * out (`suppressed`). */
#ifndef BATON_API_H
#define BATON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "http.h"
#include "log.h"

#define API_WORKERS           4
#define API_QUEUE_MAX         32
#define API_WAIT_MAX_S        60
#define API_FAIL_MAX          10
#define API_FAIL_WINDOW_S     60
#define API_BLOCK_S           30
#define API_ADDRS             256
#define API_RUNS_MAX          1000
#define API_REFUSED_LOG_PER_S 5

/* What api_handle() grants a read path it passes (http_response.grant). */
enum api_grant { API_GRANT_PUBLIC, API_GRANT_READ, API_GRANT_OPERATE };

struct api_conf {
    const char *tokens_file;
    bool public_read;
    int64_t history_len; /* history.runs: a pause's records kept (pause.h) */
    const char *group, *node;
    const char *redis_url;
    const struct baton_client_opts *client_opts; /* copied into each worker's client */
    /* True when job is in this node's jobs.yaml. Any thread. */
    bool (*job_known)(void *ctx, const char *job);
    void *ctx;
};

struct api;

/* Loads the tokens and starts the workers. Returns: owned (free with
 * api_free), or NULL with msg (the tokens file's error, file:line:col). */
struct api *api_new(const struct api_conf *conf, char *msg, size_t msglen);

/* The server's hook (http.h): ctx is the struct api. */
enum http_verdict api_handle(void *ctx, const struct http_request *rq, struct http_response *out);

/* Reads the tokens file again (SIGHUP): on success the new tokens apply to
 * the next request; on failure the old ones stay. Returns 0, or -1 with
 * err. Loop's thread. */
int api_reload_tokens(struct api *a, char *err, size_t errlen);

/* Writes the audit lines queued since the last call. Loop's thread. */
void api_flush_audit(struct api *a, struct log *log);

/* Stops the workers: the calls still queued are answered 503; a call
 * being carried out ends within one Redis call. NULL is a no-op. Before
 * http_stop(). */
void api_stop(struct api *a);

/* Frees a (stopped). NULL is a no-op. */
void api_free(struct api *a);

#endif /* BATON_API_H */
