/* daemon.h -- `baton run`: the supervisor. */
#ifndef BATON_DAEMON_H
#define BATON_DAEMON_H

/* What daemon_run() returns (the CLI maps them to exit statuses). */
enum {
    DAEMON_OK = 0,          /* stopped gracefully */
    DAEMON_ESETUP = 1,      /* cannot set itself up */
    DAEMON_ECONFIG = 2,     /* baton.yaml or jobs.yaml missing or invalid */
    DAEMON_ENAME_TAKEN = 3, /* another live supervisor of the group has this node name */
};

/* Loads config_path (and its jobs file), then runs the machine until
 * SIGTERM/SIGINT and the lease is handed over. Returns a DAEMON_* value;
 * the message of a failure is on stderr. */
int daemon_run(const char *config_path);

#endif
