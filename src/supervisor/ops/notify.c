/* notify.c -- see notify.h. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "notify.h"

#ifdef BATON_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

#include "dynlib.h"

bool notify_available(void)
{
    return true;
}

int notify_init(struct notify *n, char *msg, size_t msglen)
{
    uint64_t usec = 0;
    __typeof__(sd_watchdog_enabled) *watchdog_enabled = NULL;
    __typeof__(sd_notify) *send = NULL;
    *n = (struct notify){0};
    const char *sock = getenv("NOTIFY_SOCKET");
    if (sock == NULL || sock[0] == '\0')
        return 0;
    const struct dynlib_sym syms[] = {{"sd_notify", &send},
                                      {"sd_watchdog_enabled", &watchdog_enabled}};
    if (dynlib_open(BATON_SYSTEMD_SONAME, "NOTIFY_SOCKET (a Type=notify unit)", "libsystemd0", syms,
                    sizeof syms / sizeof syms[0], msg, msglen) != 0)
        return -1;
    n->enabled = true;
    n->send = send;
    /* > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID, if set, is ours. */
    if (watchdog_enabled(0, &usec) > 0)
        n->watchdog_ns = (int64_t)usec * 1000;
    return 0;
}

static void send_msg(const struct notify *n, const char *text)
{
    if (n->enabled)
        (void)n->send(0, text); /* best effort: systemd says nothing back */
}

#else

bool notify_available(void)
{
    return false;
}

int notify_init(struct notify *n, char *msg, size_t msglen)
{
    *n = (struct notify){0};
    const char *sock = getenv("NOTIFY_SOCKET");
    if (sock != NULL && sock[0] != '\0') {
        snprintf(msg, msglen,
                 "NOTIFY_SOCKET is set (a Type=notify unit?) but this baton was built without "
                 "libsystemd: install libsystemd-dev and rebuild, or use Type=exec");
        return -1;
    }
    return 0;
}

static void send_msg(const struct notify *n, const char *text)
{
    (void)n;
    (void)text;
}

#endif

/* Sends head, then STATUS=status when given (one datagram). */
static void send_with_status(const struct notify *n, const char *head, const char *status)
{
    char buf[600];
    if (!n->enabled)
        return;
    if (status != NULL)
        snprintf(buf, sizeof buf, "%s%sSTATUS=%s", head, head[0] != '\0' ? "\n" : "", status);
    else
        snprintf(buf, sizeof buf, "%s", head);
    send_msg(n, buf);
}

void notify_ready(struct notify *n, const char *status)
{
    if (n->ready)
        return;
    n->ready = true;
    send_with_status(n, "READY=1", status);
}

void notify_status(struct notify *n, const char *status)
{
    if (n->reloading && n->ready) {
        n->reloading = false;
        send_with_status(n, "READY=1", status);
        return;
    }
    send_with_status(n, "", status);
}

void notify_reloading(struct notify *n)
{
    char buf[64];
    if (!n->ready)
        return; /* not started yet: nothing to reload in systemd's eyes */
    n->reloading = true;
    snprintf(buf, sizeof buf, "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)(mono_ns() / 1000));
    send_with_status(n, buf, "reloading baton.yaml and jobs.yaml");
}

void notify_stopping(struct notify *n, const char *status, int64_t extend_us)
{
    char buf[64];
    if (n->stopping)
        return;
    n->stopping = true;
    if (extend_us > 0)
        snprintf(buf, sizeof buf, "STOPPING=1\nEXTEND_TIMEOUT_USEC=%lld", (long long)extend_us);
    else
        snprintf(buf, sizeof buf, "STOPPING=1");
    send_with_status(n, buf, status);
}

void notify_watchdog(struct notify *n)
{
    send_with_status(n, "WATCHDOG=1", NULL);
}
