/*
 * jobs: the job supervisor of maro-pool.  Job types (a name, a count, a
 * CPU list, a command), from the options or a config file; the jobs made
 * from them, named TYPE.HOST.I, each pinned to its share of its type's
 * CPUs, started through child.h with the MARO_ environment the pool gives
 * it; reaped, and restarted with a backoff until a job restarts too often
 * in the window.  It never prints: what ended a job comes back as a struct
 * maro_job_end for the tool to word.
 *
 * maro_jobs_reap reaps every child of the process, and ignores those that
 * are not jobs.
 */
#ifndef MARO_JOBS_H
#define MARO_JOBS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "registry.h"

#define MARO_JOBS_MAX 1024		/* jobs in all, and of one type */
#define MARO_JOBS_MAX_TYPES 32
#define MARO_JOBS_MAX_RESTARTS 1000	/* the largest max_restarts */

/* A job type: how many, which CPUs, what to run. */
struct maro_jobtype {
	char name[MARO_NAME_MAX + 1];
	size_t count;
	int *cpus;		/* the CPU list, or NULL: no pinning; owned */
	size_t ncpus;
	char **argv;		/* what to exec; owned with command when command is set */
	char *command;		/* from a config file: argv is sh -c command */
};

enum maro_job_state { MARO_JOB_IDLE, MARO_JOB_RUNNING, MARO_JOB_WAITING, MARO_JOB_DONE, MARO_JOB_GAVE_UP };

struct maro_job {
	char name[MARO_NAME_MAX + 1];
	struct maro_jobtype *t;
	size_t index;		/* 1.. within its type */
	cpu_set_t cpus;
	char cpulist[256];	/* for MARO_CPUS; "" when not pinned */
	pid_t pid;
	pid_t pgid;		/* the job's process group: its pid, kept after it ended */
	pid_t last_pid;		/* the job's pid when it last ended (reaped): a restart replaces it */
	enum maro_job_state state;
	int64_t restart_at;	/* WAITING: when to start again (monotonic us) */
	int64_t *starts;	/* restart times, a ring of max_restarts + 1 */
	size_t nstarts;
	unsigned long restarts;
};

/*
 * The pool's jobs.  Zeroed, then the caller sets max_restarts, window_us
 * and the names of the jobs' environment, adds types (by hand or with
 * maro_jobs_config_read) and calls maro_jobs_make.  maro_jobs_free
 * releases what it owns.
 */
struct maro_jobs {
	struct maro_jobtype types[MARO_JOBS_MAX_TYPES];
	size_t ntypes;
	struct maro_job *jobs;
	size_t njobs;
	unsigned max_restarts;	/* a job is given up after this many in window_us */
	int64_t window_us;
	/* each job's MARO_GROUP, MARO_REGISTRY, MARO_POOL, MARO_KEYFILE (NULL: none) */
	const char *group, *registry, *pool, *keyfile;
};

/* Why a job ended, and what comes of it. */
enum maro_job_outcome {
	MARO_JOB_STOPPED,	/* while the pool stops: done */
	MARO_JOB_FINISHED,	/* exit status 0: done */
	MARO_JOB_RESTARTING,	/* to start again after delay_us */
	MARO_JOB_GIVEN_UP,	/* recent restarts in the window: no more */
};

struct maro_job_end {
	enum maro_job_outcome outcome;
	char how[64];		/* maro_child_describe: "exited with status 3" */
	size_t recent;		/* GIVEN_UP: the restarts in the window */
	int64_t delay_us;	/* RESTARTING: until the restart */
};

/*
 * "0-3,6": the CPUs, each one this process may use, into *cpus (malloc'd,
 * the caller's) and *n.  0, or -1 with errno: EINVAL with a message in
 * errbuf, ENOMEM.
 */
int maro_jobs_cpus_parse(const char *s, int **cpus, size_t *n, char *errbuf, size_t errlen);

/* A type name: letters, digits, '-' (no '.' or '_': it is the first part of a job's name). */
int maro_jobs_type_valid(const char *s);

/*
 * --config FILE: one job type per line, "TYPE COUNT CPUS COMMAND...", CPUS
 * a list or '-', the command run by /bin/sh -c; '#' starts a comment line.
 * Adds the types to js.  0, or -1 with what is wrong with the file in err
 * ("FILE:LINE: ..."), or with err left empty when out of memory.
 */
int maro_jobs_config_read(struct maro_jobs *js, const char *path, struct maro_buf *err);

/* This host's name as a name component: [A-Za-z0-9-], at most 48 bytes. */
void maro_jobs_host(char *out, size_t len);

/*
 * Makes the jobs of js's types, named TYPE.HOST.I, job I of a type on its
 * share of the type's CPUs (one each, round robin, when fewer).  0, or -1
 * with errno: E2BIG when more than MARO_JOBS_MAX in all, ENOMEM.
 */
int maro_jobs_make(struct maro_jobs *js, const char *host);

/*
 * The environment of job j: this process's with the MARO_ names the pool
 * gives it (MARO_REPLACES_PID after a restart: the pool reaped the job
 * before, and vouches that it is gone).  For maro_jobs_start, freed with
 * maro_child_env_free; NULL when out of memory.
 */
char **maro_jobs_env(const struct maro_jobs *js, const struct maro_job *j);

/*
 * Starts job j with env in its own process group, stdin from /dev/null,
 * pinned.  0 (j RUNNING), or -1 with errno (maro_child_spawn) when its
 * command cannot be run at all; j is then left as it was.
 */
int maro_jobs_start(struct maro_job *j, char **env);

/*
 * Catches SIGCHLD from now on: the descriptor it returns becomes readable
 * when a child ends, for the tool's poll; maro_jobs_reap empties it.  -1
 * with errno.  Once per process.
 */
int maro_jobs_watch(void);

/*
 * Reaps the children that ended until one is a running job, which it
 * returns with what came of it in *e: done when stopping or with status 0,
 * else restarting after a backoff, or given up after max_restarts in the
 * window.  What the job left in its process group gets SIGTERM.  NULL when
 * no job ended.
 */
struct maro_job *maro_jobs_reap(struct maro_jobs *js, int stopping, struct maro_job_end *e);

/*
 * Whether job j is due to start again at now: forgets the group of a job
 * that does not run once it is empty, and kills (SIGKILL) the leftovers of
 * a due job, which must not hold its name.
 */
int maro_jobs_due(struct maro_job *j, int64_t now);

/* The earlier of wake and the next restart. */
int64_t maro_jobs_wake(const struct maro_jobs *js, int64_t wake);

/* Whether a job runs, or waits to start again. */
int maro_jobs_active(const struct maro_jobs *js);

/* How many jobs still run or left something in their process group. */
size_t maro_jobs_left(const struct maro_jobs *js);

/* The counts: "jobs=N running=N restarts=N gaveup=N TYPE=COUNT..." */
void maro_jobs_info(const struct maro_jobs *js, char *buf, size_t len);

void maro_jobs_free(struct maro_jobs *js);

#endif
