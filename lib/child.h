/*
 * child: the programs a tool runs (maro-dist's handlers, maro-pool's jobs).
 *
 * A child runs in its own process group, so that stopping it reaches what
 * it started, and dies with its parent, even a parent killed by SIGKILL
 * (PR_SET_PDEATHSIG).  It starts with the default dispositions of the
 * signals a tool catches or ignores, and nothing blocked.
 */
#ifndef MARO_CHILD_H
#define MARO_CHILD_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct maro_child_spec {
	const char *path;		/* the program; NULL: argv[0], looked up in PATH */
	char *const *argv;
	char *const *env;		/* its environment; NULL: this process's */
	int in_fd;			/* its standard input; -1: /dev/null */
	int out_fd;			/* its standard output; -1: this process's */
	const cpu_set_t *cpus;		/* the CPUs it may run on; NULL: any */
	const char *dir;		/* its working directory; NULL: this process's */
	int err_fd;			/* its standard error; -1: this process's */
};

/*
 * An environment for a child, made before the fork (between fork and exec
 * only async-signal-safe calls are safe: a ZeroMQ thread may hold the
 * allocator's lock): this process's, but for the variables set names,
 * then set's "NAME=VALUE" strings (n of them; a bare "NAME" only takes
 * NAME out).  All copied; NULL when out of memory.
 */
char **maro_child_env(char *const *set, size_t n);
void maro_child_env_free(char **env);

/*
 * Starts a child.  Its pid (also its process group), or -1 with errno: the
 * fork's, or the child's when it could not be pinned or run (it is then
 * reaped).
 */
pid_t maro_child_spawn(const struct maro_child_spec *s);

/*
 * Stops the process group of pid: SIGTERM, then SIGKILL after grace_us if
 * pid is not gone; pid is reaped, and what it left in its group killed.
 * Returns pid's wait status.
 */
int maro_child_stop(pid_t pid, int64_t grace_us);

/* Whether process group pgid still has a member (what a child started may outlive it). */
int maro_child_group_alive(pid_t pgid);

/* How a child ended, for a message: "exited with status 3", "was killed by SIGKILL". */
void maro_child_describe(int wstatus, char *buf, size_t len);

#endif
