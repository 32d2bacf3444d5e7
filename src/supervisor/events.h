/* events.h -- every event the supervisor logs, in one table: name, level
 * and fields. log_emit() takes an enum log_event, so the code cannot log
 * an event that is not here, and baton(1)'s log reference is generated
 * from this table (`baton check --reference`; test_docs keeps them equal).
 *
 * Level: the level the line is written at. A few events choose it per line
 * (VAR): their doc says how, and the code passes it to log_emit_at(). */
#ifndef BATON_EVENTS_H
#define BATON_EVENTS_H

#include <stdbool.h>
#include <stdio.h>

#include "log_level.h"

/* X(ID, name, level, fields, what it means) */
#define LOG_EVENTS(X)                                                                              \
    X(STARTED, "started", INFO, "`version`, `pid`, `config`, `redis` (no password), `jobs`, "      \
      "`lease_ttl_ms`", "the supervisor is up")                                                    \
    X(STOPPED, "stopped", INFO, "", "the supervisor exits")                                        \
    X(TRANSITION, "transition", VAR,                                                               \
      "`from`, `to`, `trigger`, `guard` (when a guard decided), `term`, `fence` (= term), "        \
      "`in_state_ms`",                                                                             \
      "a change of state (info; debug for the routine renewal and poll round trips, and for "      \
      "the end's last move, idle to stopped)")                                                     \
    X(MACHINE_LOOP, "machine_loop", ERROR, "", "an action chain did not end (a table bug)")        \
    X(FOLLOWING, "following", INFO,                                                                \
      "`leader`, `term`, `lease_left_ms`, `turn_ms` (after the lease's end, the wait before this " \
      "node campaigns: 1 ms per member named before it)",                                          \
      "once per term a follower sees")                                                             \
    X(LEASE_RENEWED, "lease_renewed", DEBUG, "`term`, `ttl_ms`", "the lease was extended")         \
    X(LEASE_DEADLINE_MISSED, "lease_deadline_missed", WARN, "`term`",                              \
      "the node paused at or after its stop point (it was stalled)")                               \
    X(LEASE_RELEASED, "lease_released", INFO, "`term`", "the lease was given up")                  \
    X(LEASE_RELEASE_FAILED, "lease_release_failed", WARN, "`term`, `error`, `then`",               \
      "giving up the lease failed; it expires on its own")                                         \
    X(STALE_LEASE_RELEASED, "stale_lease_released", INFO, "`term`",                                \
      "a node that paused gave up, by its token, a lease Redis may still hold for it")             \
    X(REDIS_CONNECTED, "redis_connected", INFO, "`url`", "the first answer from Redis")            \
    X(SECRET_FILE_MODE, "secret_file_mode", WARN, "`warning`",                                     \
      "a password file others can read (it should be mode 0600)")                                  \
    X(TLS_VERIFY_OFF, "tls_verify_off", WARN, "`warning`",                                         \
      "the Redis URL turns TLS certificate verification off (verify=none)")                        \
    X(REDIS_UNREACHABLE, "redis_unreachable", WARN, "`during`, `error`, `retry_in_ms`",            \
      "the first failure of an outage")                                                            \
    X(REDIS_REACHABLE, "redis_reachable", INFO, "`outage_ms`", "the end of an outage")             \
    X(WATCH_LOST, "watch_lost", DEBUG, "`error`",                                                  \
      "the subscription to the group's events broke (it is made again)")                           \
    X(HTTP_LISTENING, "http_listening", INFO, "`listen` (the address bound), `tls`",              \
      "the HTTP endpoint (http.listen) serves /metrics, /healthz, /readyz, /status and /")         \
    X(HTTP_TLS_RELOADED, "http_tls_reloaded", INFO, "`subject`, `not_after`",                      \
      "on SIGHUP, http.tls's files had changed: new connections get the new certificate")          \
    X(HTTP_TLS_RELOAD_FAILED, "http_tls_reload_failed", WARN, "`error`, `then`",                   \
      "on SIGHUP, http.tls's files could not be read or used; the certificate read before stays")  \
    X(API_CALL, "api_call", INFO,                                                                  \
      "`token` (its name, never the token), `action` (trigger, pause, resume, pause-all, "        \
      "resume-all, step-down), `job` (null for the group), `remote` (the client's address), "     \
      "`status` (the HTTP status answered), `result` (ok, or the error's code), `suppressed` "     \
      "(refusals left out before this one)",                                                       \
      "a call of the HTTP control API that changes something (http.control), or was refused "     \
      "one for its token's role; a request refused for no or a wrong token (401) or a blocked "    \
      "address (429), at most 5 lines a second")                                                   \
    X(API_TOKENS_RELOAD_FAILED, "api_tokens_reload_failed", WARN, "`error`, `then`",               \
      "on SIGHUP, http.tokens_file could not be read; the tokens read before stay")                \
    X(SYSTEMD_NOTIFY, "systemd_notify", INFO, "`watchdog_ms` (null without a watchdog)",           \
      "NOTIFY_SOCKET is set: readiness, status and reloads are reported to systemd, and its "      \
      "watchdog pinged every watchdog_ms / 2")                                                     \
    X(SIGNAL_RECEIVED, "signal_received", INFO, "`signal`", "SIGTERM, SIGINT or SIGHUP")           \
    X(STEP_DOWN_REQUESTED, "step_down_requested", INFO, "",                                        \
      "`baton step-down` asked this leader to hand over")                                          \
    X(HANDOVER, "handover", INFO, "`term`, `running`",                                             \
      "the leader gave its lease up at once; its `running` runs finish under their own "          \
      "registration")                                                                              \
    X(HANDOVER_FAILED, "handover_failed", WARN, "`term`, `error`, `then`",                         \
      "the runs could not be registered: they are stopped before the lease ends")                  \
    X(DRAINING, "draining", INFO, "`running`, `grace_ms`",                                         \
      "waiting up to shutdown_grace for runs before exiting")                                      \
    X(DRAIN_TIMEOUT, "drain_timeout", WARN, "`running`", "shutdown_grace is over: TERM, then KILL")\
    X(RELOADED, "reloaded", INFO, "`jobs`, `restart_needed_for`", "SIGHUP applied")                \
    X(RELOAD_FAILED, "reload_failed", ERROR, "`error` (file:line:col: message), `then`",           \
      "SIGHUP found an error: the running configuration stays")                                    \
    X(CATCH_UP, "catch_up", INFO, "`job`, `missed_ticks`, `outside_window`, `superseded`",         \
      "a new leader found ticks missed since the job's last claim")                                \
    X(CATCH_UP_SKIPPED, "catch_up_skipped", WARN, "`term`, `reason`",                              \
      "the lease came from a Redis that may lack the last claims of the term before (a failover "  \
      "to a replica, a restart without persistence): this term catches up no missed tick, so "     \
      "that none runs twice (`min_replicas` keeps the claims across a Sentinel failover)")         \
    X(CLAIM_AHEAD, "claim_ahead", INFO, "`ahead_ms`, `was_ms`, `job`, `late_ms`",                 \
      "the runs of one instant took longer to prepare than the claim-ahead window: a live tick "   \
      "of `job` was claimed `late_ms` after its instant while others of that instant were "       \
      "prepared in time; live ticks are now claimed `ahead_ms` before their instant (doubled, "   \
      "250 ms at most; it shrinks back to 25 ms as the preparations keep up)")                    \
    X(NO_HIGH_WATER_MARK, "no_high_water_mark", INFO, "`job`",                                     \
      "no tick of the job was ever claimed (a new job, or Redis lost its data): it starts "        \
      "from now, without catch-up")                                                                \
    X(TICK_SKIPPED, "tick_skipped", VAR,                                                           \
      "`job`, `scheduled_at`, `until`, `ticks`, `outcome` (skipped, superseded, missed), "         \
      "`reason`, `member` (run_on: all: the one node the record is about)",                         \
      "ticks that do not run, and why (info; warn for missed ticks)")                              \
    X(TICK_MOVE_REFUSED, "tick_move_refused", ERROR, "`job`, `scheduled_at`, `state`, `because`",  \
      "a move in a tick's life that its table refuses (a bug: alert on any); the tick keeps "      \
      "its state and the runner goes on")                                                          \
    X(CLAIM_REFUSED, "claim_refused", WARN, "`job`, `scheduled_at`, `then`",                       \
      "the claim found another leader: the tick is not ours")                                      \
    X(LIMIT_WAIT, "limit_wait", INFO,                                                              \
      "`job`, `scheduled_at`, `pool` and `limit`, or `max_running`",                               \
      "a tick waits, unclaimed, for a run of its pool or its job to end: the limit is reached "    \
      "across the group (once per tick; ticks of a pool are served first come, first served)")    \
    X(LIMIT_WAITED, "limit_waited", INFO, "`job`, `scheduled_at`, `waited_ms`, `then`",            \
      "a tick that waited for a limit was answered otherwise (`then`: ok, taken...)")              \
    X(CLAIM_FAILED, "claim_failed", VAR, "`job`, `scheduled_at`, `error`, `then`",                 \
      "Redis did not answer the claim: it is retried in order within the catch-up window (warn "   \
      "for the first failure of a job's run of them, debug for the next ones)")                    \
    X(CLAIM_FAILURES_ENDED, "claim_failures_ended", INFO, "`job`, `failures`, `outage_ms`, "       \
      "`answered`",                                                                                \
      "the end of a job's run of failed claims: `failures` in `outage_ms`; `answered` false when " \
      "the node stopped leading before a claim got an answer")                                     \
    X(CLAIM_RECOVERED, "claim_recovered", INFO, "`job`, `scheduled_at`, `then`",                   \
      "a claim whose answer was lost had been applied: its retry (or, once the node stopped "      \
      "leading, a lookup) found the tick ours, and `then` says what became of it: run late, "      \
      "recorded skipped or not started, recorded missed or superseded (it left its catch-up "     \
      "window meanwhile), or held (its job was paused meanwhile)")                                 \
    X(JOB_START, "job_start", INFO,                                                                \
      "`job`, `run_id`, `scheduled_at`, `attempt`, `trigger`, `lateness_ms`, `term`, `pid`",       \
      "a run started")                                                                             \
    X(JOB_OUTPUT, "job_output", INFO,                                                              \
      "`job`, `run_id`, `stream` (stdout, stderr), `line`, `partial`, `continued`, "               \
      "`invalid_utf8`",                                                                            \
      "one line of a run's output (see below)")                                                    \
    X(LOG_LINES_DROPPED, "log_lines_dropped", WARN,                                                \
      "`lines`, `bytes`, `events` (lines by event), `since` (the first drop)",                     \
      "the log's reader (stdout) fell behind: lines were dropped so that the supervisor never "    \
      "waits for it, job and hook output once 4 MiB wait, other lines once 5 MiB do; said once "   \
      "the reader caught up (baton_log_lines_dropped_total counts them at once)")                  \
    X(JOB_END, "job_end", VAR,                                                                     \
      "`job`, `run_id`, `scheduled_at`, `attempt`, `duration_ms`, `exit_code` or `signal`, "       \
      "`outcome` (ok, failed, timeout, killed, failed_to_start), `stopped_because`, `error`",      \
      "a run ended (info when ok, warn otherwise, error when it could not start)")                 \
    X(RUN_STATE, "run_state", DEBUG, "`job`, `run_id`, `from`, `to`, `because`",                 \
      "a run was told to stop: terminating, then killing")                                        \
    X(JOB_RETRY, "job_retry", INFO, "`job`, `run_id`, `next_attempt`, `retry_in_ms`",              \
      "a failed run is tried again")                                                               \
    X(JOB_TIMEOUT, "job_timeout", WARN, "`job`, `run_id`, `timeout_ms`",                           \
      "a run outlived its timeout: TERM, then KILL after kill_grace")                              \
    X(RUN_LOST, "run_lost", WARN, "`job`, `run_id`, `reason`",                                     \
      "a run whose leader handed over lost its registration: it is stopped")                       \
    X(ASSIGNED, "assigned", INFO, "`job`, `scheduled_at`, `run_id`, `member`, `attempt`",          \
      "the leader offered a claimed tick to a member (run_on other than leader)")                  \
    X(ACCEPTED, "accepted", INFO, "`job`, `scheduled_at`, `run_id`, `attempt`, `moves`",           \
      "this node accepted a tick the leader offered it; it runs it at the tick's instant")         \
    X(REASSIGNED, "reassigned", INFO,                                                              \
      "`job`, `scheduled_at`, `run_id`, `from`, `to`, `attempt`, `reason`",                        \
      "an offer not accepted in time, or a run whose member was lost before it started it, was "   \
      "offered to another member")                                                                 \
    X(HANDED_BACK, "handed_back", INFO, "`job`, `scheduled_at`, `run_id`, `reason`",              \
      "a tick this node accepted was paused before its instant: given back to the leader, "      \
      "which holds it for the pause's end (run then, or recorded skipped)")                      \
    X(LOST, "lost", WARN, "`job`, `scheduled_at`, `run_id`, `member`, `attempt`, `then`",          \
      "a run on a member was lost (its registration lapsed while it ran): recorded lost, then "    \
      "retried on another member while `retries` allow")                                          \
    X(HISTORY_WRITE_FAILED, "history_write_failed", WARN, "`job`, `run_id`, `error`",              \
      "a history record could not be written")                                                     \
    X(HOOK_START, "hook_start", INFO,                                                              \
      "`job`, `run_id`, `hook` (on_failure, on_success), `attempt`, `run_outcome`, "               \
      "`timeout_ms`, `pid`",                                                                       \
      "a hook started for a run that ended")                                                       \
    X(HOOK_OUTPUT, "hook_output", INFO,                                                            \
      "`job`, `run_id`, `hook`, `stream`, `line`, `partial`, `continued`, `invalid_utf8`",         \
      "one line of a hook's output (as job_output)")                                               \
    X(HOOK_END, "hook_end", VAR,                                                                   \
      "`job`, `run_id`, `hook`, `duration_ms`, `exit_code` or `signal`, `outcome` (ok, failed, "   \
      "timeout, killed, failed_to_start), `error`",                                                \
      "a hook ended (info when ok, warn otherwise; error when it could not start, with the "       \
      "reason: it is not retried)")                                                                \
    X(CONFIG_DRIFT, "config_drift", WARN, "`follower` (the node that drifts), `jobs_hash`, "       \
      "`jobs`, `leader_jobs_hash`, `leader_jobs`",                                                 \
      "the leader found a node whose effective jobs differ from its own (once per change)")        \
    X(CONFIG_DRIFT_RESOLVED, "config_drift_resolved", INFO, "`follower`, `jobs_hash`",             \
      "a node that drifted runs the leader's jobs again")                                         \
    X(TRIGGER_RECEIVED, "trigger_received", INFO, "`job`, `trigger_id`, `attempt`, `by`",          \
      "the leader took a `baton trigger` request; it runs as the job's concurrency allows "        \
      "(attempt > 1: the leader that claimed it before died before starting it)")                  \
    X(TRIGGER_REJECTED, "trigger_rejected", WARN, "`job`, `trigger_id`, `reason`",                 \
      "a request for a job the leader's jobs.yaml does not have: it is done, not run")             \
    X(TRIGGER_LEFT, "trigger_left", WARN, "`job`, `trigger_id`, `attempt`, `reason`",              \
      "a request claimed too late to start (a stall): the next leader runs it")                    \
    X(TRIGGER_LOST, "trigger_lost", WARN, "`job`, `trigger_id`, `attempt`, `reason`",              \
      "a manual run whose node stopped answering while it ran: presumed killed (the node's "    \
      "own report, if it comes, replaces it), not run again")                 \
    X(JOB_PAUSED, "job_paused", INFO, "`job` (`*`: every job), `since`, `by`, `reason`",           \
      "the leader sees a job paused (`baton pause`): its ticks are skipped")                       \
    X(JOB_RESUMED, "job_resumed", INFO, "`job` (`*`: every job), `catchup`, `skipped_until`, `by`",\
      "the leader sees a job resumed: from `skipped_until` on (catchup false), or catching up "    \
      "the paused ticks within its window (catchup true)")

enum log_event {
#define LOG_EVENT_ENUM_(id, name, level, fields, doc) LE_##id,
    LOG_EVENTS(LOG_EVENT_ENUM_)
#undef LOG_EVENT_ENUM_
        LE_COUNT
};

/* Returns: the event's name ("?" out of range). Static. */
const char *log_event_name(enum log_event e);
/* Returns: the event's level in the table; for a VAR event, the most
 * common one (its doc says when it differs). */
enum log_level log_event_level(enum log_event e);
/* True when the level is chosen per line. */
bool log_event_varies(enum log_event e);
/* The event's fields and meaning, as the reference writes them (Markdown:
 * `name`, ...). Static. */
const char *log_event_fields(enum log_event e);
const char *log_event_doc(enum log_event e);

/* Writes the log reference, a Markdown table (event, level, fields,
 * meaning), for `baton check --reference` and baton(1). */
void log_events_write_reference(FILE *out);

#endif /* BATON_EVENTS_H */
