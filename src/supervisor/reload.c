/* reload.c -- see reload.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "reload.h"

/* Loads the jobs file of cfg. Returns NULL with a message in err. */
static struct jobs *load_jobs(const struct config *cfg, char *err, size_t errlen)
{
    struct jobs *j = NULL;
    if (access(cfg->jobs_path, F_OK) != 0) {
        snprintf(err, errlen, "%s: %s", cfg->jobs_path, strerror(errno));
        return NULL;
    }
    if (config_load_jobs(cfg, &j, err, errlen) != 0)
        return NULL;
    return j;
}

void reload_read(const char *path, struct config **cfg, struct jobs **jobs, char *err,
                 size_t len)
{
    *cfg = NULL;
    *jobs = NULL;
    if (config_load(path, cfg, err, len) == 0)
        *jobs = load_jobs(*cfg, err, len);
    if (*jobs == NULL) {
        config_free(*cfg);
        *cfg = NULL;
    }
}

void reloader_init(struct reloader *rl, struct loop *loop, const char *path,
                   reload_done_fn done, void *ctx)
{
    *rl = (struct reloader){.loop = loop, .path = path, .done = done, .ctx = ctx,
                            .pipe = {-1, -1}};
}

static void *read_thread(void *arg)
{
    struct reloader *rl = arg;
    reload_read(rl->path, &rl->cfg, &rl->jobs, rl->err, sizeof rl->err);
    rl->defs = rl->jobs != NULL ? ops_defs_new(rl->jobs) : NULL;
    ssize_t n = write(rl->pipe[1], "r", 1); /* the loop takes it from here */
    (void)n;
    return NULL;
}

/* Waits for the reading thread, if any, and closes its pipe. */
static void join(struct reloader *rl)
{
    if (!rl->running)
        return;
    pthread_join(rl->thread, NULL);
    loop_del(rl->loop, &rl->watch);
    close(rl->pipe[0]);
    close(rl->pipe[1]);
    rl->running = false;
}

/* The thread has read the files: hand them over, and read again if
 * another SIGHUP came meanwhile and the daemon still wants it. */
static void on_read(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct reloader *rl = ctx;
    (void)w;
    (void)events;
    join(rl);
    struct config *cfg = rl->cfg;
    struct jobs *jobs = rl->jobs;
    struct ops_defs *defs = rl->defs;
    rl->cfg = NULL;
    rl->jobs = NULL;
    rl->defs = NULL;
    bool more = rl->done(rl->ctx, cfg, jobs, defs, rl->err);
    if (rl->again && more) {
        rl->again = false;
        reloader_start(rl);
    }
}

void reloader_start(struct reloader *rl)
{
    if (rl->running) {
        rl->again = true; /* read once more when this one is applied */
        return;
    }
    rl->cfg = NULL;
    rl->jobs = NULL;
    rl->defs = NULL;
    if (pipe2(rl->pipe, O_CLOEXEC) == 0) {
        rl->watch = (struct loop_watch){.fd = rl->pipe[0], .cb = on_read, .ctx = rl};
        if (loop_add(rl->loop, &rl->watch) == 0) {
            /* Signals stay blocked in the thread: it inherits the mask. */
            if (pthread_create(&rl->thread, NULL, read_thread, rl) == 0) {
                rl->running = true;
                return;
            }
            loop_del(rl->loop, &rl->watch);
        }
        close(rl->pipe[0]);
        close(rl->pipe[1]);
    }
    struct config *cfg;
    struct jobs *jobs;
    reload_read(rl->path, &cfg, &jobs, rl->err, sizeof rl->err);
    (void)rl->done(rl->ctx, cfg, jobs, NULL, rl->err);
}

void reloader_fini(struct reloader *rl)
{
    join(rl); /* a reading still going: its results are not applied */
    config_free(rl->cfg);
    jobs_free(rl->jobs);
    ops_defs_unref(rl->defs);
    rl->cfg = NULL;
    rl->jobs = NULL;
    rl->defs = NULL;
    rl->again = false;
}
