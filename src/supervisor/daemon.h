/* daemon.h -- `baton run`: the supervisor. */
#ifndef BATON_DAEMON_H
#define BATON_DAEMON_H

/* Loads config_path (and its jobs file), then runs the machine until
 * SIGTERM/SIGINT and the lease is handed over. Returns the exit status: 0
 * after a graceful stop; 1 when the configuration cannot be loaded or the
 * process cannot set itself up (the message is on stderr). */
int daemon_run(const char *config_path);

#endif
