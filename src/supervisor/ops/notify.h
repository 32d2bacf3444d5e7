/* notify.h -- telling systemd how the supervisor is doing: sd_notify(3)
 * from libsystemd, for a `Type=notify` unit.
 *
 *   READY=1        once, after the first decision (working or waiting)
 *   STATUS=...     the state and term, on every transition that changes it
 *   RELOADING=1    when SIGHUP arrives; READY=1 once the reload is applied
 *                  or refused
 *   STOPPING=1     when SIGTERM or SIGINT arrives, with EXTEND_TIMEOUT_USEC=
 *                  the drain's budget (shutdown_grace + the longest
 *                  kill_grace + a margin), so that systemd's stop timeout
 *                  follows shutdown_grace rather than the unit's
 *                  TimeoutStopSec alone
 *   WATCHDOG=1     every WATCHDOG_USEC / 2, from the event loop (ops.c arms
 *                  a timer of the loop for it), so that systemd restarts a
 *                  supervisor whose loop hangs
 *
 * Without NOTIFY_SOCKET in the environment every call does nothing, and
 * libsystemd is not even loaded (it is opened then: dynlib.h). A
 * build without libsystemd (BATON_HAVE_SYSTEMD undefined) cannot notify:
 * notify_init() then refuses to start under NOTIFY_SOCKET rather than
 * leave a Type=notify unit waiting for a READY=1 that never comes.
 * Called on the supervisor's loop only. */
#ifndef BATON_NOTIFY_H
#define BATON_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct notify {
    bool enabled;        /* NOTIFY_SOCKET is set */
    int (*send)(int unset_environment, const char *state); /* sd_notify, opened then */
    int64_t watchdog_ns; /* WATCHDOG_USEC for this process (0: none) */
    bool ready;          /* READY=1 sent */
    bool reloading;
    bool stopping;
};

/* Reads the environment and, under NOTIFY_SOCKET, opens libsystemd.
 * Returns 0, or -1 with a message in msg when NOTIFY_SOCKET is set in a
 * build without libsystemd or where libsystemd.so cannot be opened. */
int notify_init(struct notify *n, char *msg, size_t msglen);

/* READY=1 (once) with STATUS=status. */
void notify_ready(struct notify *n, const char *status);
/* STATUS=status; after a reload, READY=1 too. */
void notify_status(struct notify *n, const char *status);
/* RELOADING=1 (with MONOTONIC_USEC, for systemd 253's notify-reload). */
void notify_reloading(struct notify *n);
/* STOPPING=1 (once), and EXTEND_TIMEOUT_USEC=extend_us when > 0. */
void notify_stopping(struct notify *n, const char *status, int64_t extend_us);
/* WATCHDOG=1. */
void notify_watchdog(struct notify *n);

/* True when this build has libsystemd. */
bool notify_available(void);

#endif /* BATON_NOTIFY_H */
