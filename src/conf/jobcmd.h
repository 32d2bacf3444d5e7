/* jobcmd.h -- a job's command and what exec(2) takes of it, for jobs.c
 * (struct job_cmd, a hook's command, is jobs.h's): argv and shell lines
 * read from the file, string vectors, and the sizes exec refuses, which a
 * job is refused for at load (so `baton check` refuses it too). */
#ifndef BATON_JOBCMD_H
#define BATON_JOBCMD_H

#include <stdbool.h>
#include <stddef.h>

#include "jobs.h"

/* What exec(2) takes on Linux (fs/exec.c): one argument or variable of at
 * most MAX_ARG_STRLEN bytes with its NUL (32 pages of 4 KiB), and all of
 * them, with a pointer each, within a quarter of the stack limit, capped at
 * 6 MiB and at least 128 KiB. A job's command and env are refused at load
 * (so `baton check` refuses them too) when exec would refuse them: each
 * string on its own, and together within JOB_EXEC_MAX (half of the limit
 * under the default 8 MiB stack) and within this machine's limit less
 * baton's environment and JOB_EXEC_RESERVE for what baton adds (the
 * shim's arguments, the command's path, BATON_*). A hook gets the job's
 * env too. */
#define JOB_ARG_STRLEN   (32 * 4096)
#define JOB_EXEC_MAX     (1024 * 1024)
#define JOB_EXEC_RESERVE (16 * 1024)
#define EXEC_LIMIT_MIN   (32 * 4096)
#define EXEC_LIMIT_CAP   (6 * 1024 * 1024)

/* Frees a NULL-terminated vector of strings and the strings. NULL is a
 * no-op. */
void job_strv_free(char **v);
/* Its length (0 for NULL). */
size_t job_strv_len(char **v);

/* A shell: line is one argument of exec (/bin/sh -c LINE). The check of
 * the table's `shell` row and of a hook's {shell: ...}. Returns 0, or -1
 * with the reason in msg. */
int job_shell_check(const char *s, char *msg, size_t msglen);

/* Reads the sequence n as an argv into *out (NULL-terminated, owned). An
 * empty sequence is refused, or gives *out NULL when allow_empty. Returns
 * 0, or -1 with the error in d. */
int job_argv_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                  bool allow_empty, char ***out);

/* Refuses a job whose command (or hook) and env exec would refuse: 0, or
 * -1 with "its command and env take N bytes for exec..." in msg. */
int job_exec_check(const struct job *j, char *msg, size_t msglen);

#endif /* BATON_JOBCMD_H */
