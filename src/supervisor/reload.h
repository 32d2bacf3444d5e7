/* reload.h -- a SIGHUP's reading of baton.yaml and jobs.yaml, on a thread
 * of its own.
 *
 * Parsing 10,000 jobs takes a core for a few hundred ms, and the loop has
 * ticks to start meanwhile: the files are read (and the HTTP view's copy
 * of the jobs made) on a thread, and the loop is handed the result when the
 * thread is done (a byte on a pipe it watches). What to do with it is the
 * daemon's (reload_done_fn); this file only reads. One reading at a time:
 * a SIGHUP during one asks for another once it is applied. Loop thread
 * only, but for the reading itself. */
#ifndef BATON_RELOAD_H
#define BATON_RELOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "jobs.h"
#include "loop.h"
#include "ops.h"

/* The files were read: cfg, jobs and defs are the callee's (owned; NULL
 * with the message in err when they could not be read: defs is NULL too
 * when no thread could be had). Returns whether a reading asked for
 * meanwhile may start (false: the daemon is stopping). */
typedef bool (*reload_done_fn)(void *ctx, struct config *cfg, struct jobs *jobs,
                               struct ops_defs *defs, const char *err);

struct reloader {
    struct loop *loop; /* borrowed */
    const char *path;  /* borrowed: the configuration's path */
    reload_done_fn done;
    void *ctx;
    bool running; /* a thread reads; `again`: another SIGHUP came meanwhile */
    bool again;
    pthread_t thread;
    int pipe[2];
    struct loop_watch watch;
    struct config *cfg; /* the thread's results, taken by on_read */
    struct jobs *jobs;
    struct ops_defs *defs;
    char err[1024];
};

/* Reads the configuration at path and its jobs: *cfg and *jobs (owned), or
 * NULL in both with the message in err. Any thread. */
void reload_read(const char *path, struct config **cfg, struct jobs **jobs, char *err,
                 size_t len);

/* Sets rl up to read path on loop's behalf and hand the result to done. */
void reloader_init(struct reloader *rl, struct loop *loop, const char *path,
                   reload_done_fn done, void *ctx);

/* SIGHUP: starts a reading, or asks for one more after the reading under
 * way. When no thread can be had, reads on the loop and calls done at once. */
void reloader_start(struct reloader *rl);

/* Waits for the reading under way, if any, and frees what it read (not
 * applied). rl may be started again after. */
void reloader_fini(struct reloader *rl);

#endif
