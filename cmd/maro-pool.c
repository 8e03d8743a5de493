/*
 * maro-pool: keep N job processes alive on this host, each under its own
 * component name; restart the dead with backoff, pin CPUs, stop them all
 * on a signal.  PARL's worker with its job buffer, MARO's resource manager.
 *
 * The pool is a member of the group itself (pool.HOST): its registry entry
 * carries its counts for maro-peers --status, and a request sent to it is
 * answered with the same counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "child.h"
#include "maro.h"

#define MAX_JOBS 1024
#define MAX_TYPES 32
#define MAX_RESTARTS 1000
#define BACKOFF_MIN_US 100000
#define BACKOFF_MAX_US 10000000

extern char **environ;

enum { OPT_JOBS = 256, OPT_JOBS_OLD, OPT_TYPE, OPT_CPUS, OPT_MAX_RESTARTS, OPT_WINDOW, OPT_CONFIG, OPT_NAME, OPT_GRACE };

static const char *const synopsis[] = { "-- COMMAND [ARG...]", "--config FILE [options]", NULL };

static const struct maro_opt opts[] = {
	{ "jobs", 'j', "N", "keep N jobs alive (default: one per CPU of --cpus, or online)", NULL,
	    OPT_JOBS, 0, 0 },
	/* -n N, the old spelling: -n is a name in every other tool */
	{ "old-n", 'n', "N", NULL, NULL, OPT_JOBS_OLD, MARO_OPT_HIDDEN, 0 },
	{ "type", 'T', "TYPE", "the jobs' type: they are named TYPE.HOST.I (default worker)", NULL,
	    OPT_TYPE, 0, 0 },
	{ "cpus", 0, "LIST", "pin job I to the I-th CPU of LIST (0-3,8)", NULL, OPT_CPUS, 0, 0 },
	{ "max-restarts", 0, "K", "give a job up after K restarts in the window (default 10)", NULL,
	    OPT_MAX_RESTARTS, 0, 0 },
	{ "restart-window", 0, "DUR", "the window of --max-restarts (default 1m)", NULL, OPT_WINDOW,
	    0, 0 },
	{ "config", 0, "FILE", "the types, counts, CPUs and commands, one line each", NULL,
	    OPT_CONFIG, 0, 0 },
	{ "name", 0, "NAME", "the pool's own name (default pool.HOST)", NULL, OPT_NAME, 0, 0 },
	{ "grace", 0, "DUR", "between SIGTERM and SIGKILL when stopping (default 5s)", NULL, OPT_GRACE,
	    0, 0 },
	MARO_OPT_SHARED_AS(MARO_SH_TIMEOUT, "stop the jobs after DUR", 0),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of jobs that end", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Keep N job processes alive on this host, each under its own name; restart the dead.",
	synopsis, opts, MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(KEYFILE),
	MARO_TOOL_OPERANDS | MARO_TOOL_STOP_AT_OPERAND,
};

/* A job type: how many, which CPUs, what to run. */
struct jtype {
	char name[MARO_NAME_MAX + 1];
	size_t count;
	int *cpus;		/* the CPU list, or NULL: no pinning */
	size_t ncpus;
	char **argv;		/* what to exec */
};

enum { IDLE, RUNNING, WAITING, DONE, GAVE_UP };

struct job {
	char name[MARO_NAME_MAX + 1];
	struct jtype *t;
	size_t index;		/* 1.. within its type */
	cpu_set_t cpus;
	char cpulist[256];	/* for MARO_CPUS; "" when not pinned */
	pid_t pid;
	pid_t pgid;		/* the job's process group: its pid, kept after it ended */
	pid_t last_pid;		/* the job's pid when it last ended (reaped): a restart replaces it */
	int state;
	int64_t restart_at;	/* WAITING: when to start again (monotonic us) */
	int64_t *starts;	/* restart times, a ring of max_restarts + 1 */
	size_t nstarts;
	unsigned long restarts;
};

struct pool {
	struct jtype types[MAX_TYPES];
	size_t ntypes;
	struct job *jobs;
	size_t njobs;
	unsigned max_restarts;
	int64_t window_us, grace_us;
	int quiet;
	char name[MARO_NAME_MAX + 1];
	const char *registry, *group, *keyfile;
	struct maro_ctx *c;
	struct maro_inbox *ib;
	struct maro_outbox *ob;
	struct maro_buf enc;
	char info[MARO_INFO_MAX + 1];
};

static int chld_pipe[2] = { -1, -1 };

static void
on_chld(int sig)
{
	int saved = errno;

	(void)sig;
	if (write(chld_pipe[1], "c", 1) < 0) {
		/* full pipe: a wake-up is already pending */
	}
	errno = saved;
}

/* "0-3,6": the CPUs, each one this process may use; -1 with a message in err. */
static int
parse_cpus(const char *s, int **out, size_t *n, char *err, size_t errlen)
{
	cpu_set_t allowed;
	const char *p = s;
	int *v = NULL;
	size_t k = 0;

	if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
		CPU_ZERO(&allowed);
	while (*p) {
		char *end;
		long a, b;

		a = strtol(p, &end, 10);
		if (end == p || a < 0)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				goto bad;
			p = end;
		}
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
		for (; a <= b; a++) {
			int *nv;

			if (a >= CPU_SETSIZE || !CPU_ISSET((int)a, &allowed)) {
				snprintf(err, errlen, "CPU %ld is not available to this process", a);
				free(v);
				return -1;
			}
			nv = realloc(v, (k + 1) * sizeof *v);
			if (!nv)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			v = nv;
			v[k++] = (int)a;
		}
	}
	if (!k)
		goto bad;
	*out = v;
	*n = k;
	return 0;
bad:
	snprintf(err, errlen, "invalid CPU list '%s' (like 0-3,6)", s);
	free(v);
	return -1;
}

static int
type_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 && maro_name_valid(s) && s[0] != '~' && !strpbrk(s, "._");
}

/*
 * --config FILE: one job type per line, "TYPE COUNT CPUS COMMAND...", CPUS
 * a list or '-', the command run by /bin/sh -c; '#' starts a comment line.
 */
static void
read_config(struct pool *pl, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0;

	if (!f)
		maro_die(MARO_EXIT_USAGE, "cannot read '%s': %s", path, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p = line, *fields[3], *end, err[128];
		struct jtype *t;
		unsigned long count;
		int i;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		p += strspn(p, " \t");
		if (!*p || *p == '#')
			continue;
		for (i = 0; i < 3; i++) {
			fields[i] = p;
			p += strcspn(p, " \t");
			if (!*p)
				maro_die(MARO_EXIT_USAGE, "%s:%d: expected TYPE COUNT CPUS COMMAND", path, lineno);
			*p++ = '\0';
			p += strspn(p, " \t");
		}
		if (!*p)
			maro_die(MARO_EXIT_USAGE, "%s:%d: no command", path, lineno);
		if (!type_name_ok(fields[0]))
			maro_die(MARO_EXIT_USAGE, "%s:%d: invalid type '%s' (letters, digits, '-')", path,
			    lineno, fields[0]);
		errno = 0;
		count = strtoul(fields[1], &end, 10);
		if (*end || end == fields[1] || errno || count < 1 || count > MAX_JOBS)
			maro_die(MARO_EXIT_USAGE, "%s:%d: invalid count '%s' (1 to %d)", path, lineno,
			    fields[1], MAX_JOBS);
		if (pl->ntypes == MAX_TYPES)
			maro_die(MARO_EXIT_USAGE, "%s:%d: at most %d job types", path, lineno, MAX_TYPES);
		for (i = 0; i < (int)pl->ntypes; i++)
			if (!strcmp(pl->types[i].name, fields[0]))
				maro_die(MARO_EXIT_USAGE, "%s:%d: type '%s' given twice", path, lineno, fields[0]);
		t = &pl->types[pl->ntypes++];
		snprintf(t->name, sizeof t->name, "%s", fields[0]);
		t->count = count;
		if (strcmp(fields[2], "-") && parse_cpus(fields[2], &t->cpus, &t->ncpus, err, sizeof err) < 0)
			maro_die(MARO_EXIT_USAGE, "%s:%d: %s", path, lineno, err);
		t->argv = calloc(4, sizeof *t->argv);
		if (!t->argv || !(t->argv[2] = strdup(p)))
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		t->argv[0] = "sh";
		t->argv[1] = "-c";
	}
	if (ferror(f))
		maro_die(MARO_EXIT_USAGE, "cannot read '%s': %s", path, strerror(errno));
	free(line);
	fclose(f);
	if (!pl->ntypes)
		maro_die(MARO_EXIT_USAGE, "%s: no job types", path);
}

/* This host's name as a name component: [A-Za-z0-9-], at most 48 bytes. */
static void
host_part(char *out, size_t len)
{
	char h[MARO_HOST_MAX + 1] = "";
	size_t i;

	if (gethostname(h, sizeof h - 1) < 0 || !h[0])
		snprintf(h, sizeof h, "localhost");
	for (i = 0; h[i] && i < 48 && i + 1 < len; i++)
		out[i] = (h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
		    (h[i] >= '0' && h[i] <= '9') || h[i] == '-' ? h[i] : '-';
	out[i] = '\0';
}

/* Job i of n of a type gets its share of the type's CPUs (one each, round robin, when fewer). */
static void
assign_cpus(struct job *j, size_t i, size_t n)
{
	const struct jtype *t = j->t;
	size_t a, b, k, len = 0;

	CPU_ZERO(&j->cpus);
	j->cpulist[0] = '\0';
	if (!t->cpus)
		return;
	if (t->ncpus >= n) {
		a = i * t->ncpus / n;
		b = (i + 1) * t->ncpus / n;
	} else {
		a = i % t->ncpus;
		b = a + 1;
	}
	for (k = a; k < b; k++) {
		CPU_SET(t->cpus[k], &j->cpus);
		len += (size_t)snprintf(j->cpulist + len, sizeof j->cpulist - len, "%s%d", k > a ? "," : "",
		    t->cpus[k]);
		if (len >= sizeof j->cpulist)
			break;
	}
}

static void
update_info(struct pool *pl)
{
	size_t i, running = 0, gaveup = 0, len;
	unsigned long restarts = 0;

	for (i = 0; i < pl->njobs; i++) {
		running += pl->jobs[i].state == RUNNING;
		gaveup += pl->jobs[i].state == GAVE_UP;
		restarts += pl->jobs[i].restarts;
	}
	len = (size_t)snprintf(pl->info, sizeof pl->info, "jobs=%zu running=%zu restarts=%lu gaveup=%zu",
	    pl->njobs, running, restarts, gaveup);
	for (i = 0; i < pl->ntypes && len < sizeof pl->info; i++)
		len += (size_t)snprintf(pl->info + len, sizeof pl->info - len, " %s=%zu",
		    pl->types[i].name, pl->types[i].count);
	if (pl->c)
		maro_registry_set_info(pl->c->reg, pl->name, pl->info);
}

/* The environment of a job: ours with the MARO_ names the pool gives it. */
static char **
job_env(struct pool *pl, const struct job *j)
{
	char *set[9] = { NULL }, **env;
	size_t n = 0, i;

	if (asprintf(&set[n++], "MARO_NAME=%s", j->name) < 0 ||
	    asprintf(&set[n++], "MARO_GROUP=%s", pl->group) < 0 ||
	    asprintf(&set[n++], "MARO_REGISTRY=%s", pl->registry) < 0 ||
	    asprintf(&set[n++], "MARO_POOL=%s", pl->name) < 0 ||
	    asprintf(&set[n++], "MARO_JOB=%zu", j->index) < 0 ||
	    asprintf(&set[n++], "MARO_CPUS=%s", j->cpulist) < 0 ||
	    /* no key: none inherited either */
	    (pl->keyfile ? asprintf(&set[n++], "MARO_KEYFILE=%s", pl->keyfile) < 0 :
	    !(set[n++] = strdup("MARO_KEYFILE"))) ||
	    /* a restart: the pool reaped the job before, and vouches that it is gone */
	    (j->last_pid > 0 ? asprintf(&set[n++], "MARO_REPLACES_PID=%ld", (long)j->last_pid) < 0 :
	    !(set[n++] = strdup("MARO_REPLACES_PID"))))
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	env = maro_child_env(set, n);
	for (i = 0; i < n; i++)
		free(set[i]);
	if (!env)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	return env;
}

/*
 * Starts job j in its own process group (so that stopping it reaches its
 * children), stdin from /dev/null, pinned.  Between fork and exec the
 * child calls only async-signal-safe functions: the ZeroMQ threads may
 * hold locks.  0, or -1 when the command cannot be run at all (said).
 */
static int
spawn(struct pool *pl, struct job *j)
{
	char **env = job_env(pl, j);
	struct maro_child_spec cs = { NULL, NULL, NULL, -1, -1, NULL };
	int err;
	pid_t pid;

	cs.argv = j->t->argv;
	cs.env = env;
	cs.cpus = CPU_COUNT(&j->cpus) > 0 ? &j->cpus : NULL;
	pid = maro_child_spawn(&cs);
	err = errno;
	maro_child_env_free(env);
	if (pid < 0) {
		maro_warn("cannot run '%s' for %s: %s", j->t->argv[0], j->name, strerror(err));
		return -1;
	}
	j->pid = j->pgid = pid;
	j->state = RUNNING;
	maro_info("started %s (pid %ld%s%s)", j->name, (long)pid, j->cpulist[0] ? ", CPUs " : "",
	    j->cpulist);
	return 0;
}

/* Restarts within the window, now included; the ring keeps the last max_restarts + 1. */
static size_t
recent_restarts(struct pool *pl, struct job *j, int64_t now)
{
	size_t cap = pl->max_restarts + 1, i, n = 0;

	for (i = 0; i < j->nstarts && i < cap; i++)
		if (now - j->starts[i] < pl->window_us)
			n++;
	return n;
}

/* A job's group still has members (what the job started may outlive it). */
static int
group_alive(const struct job *j)
{
	return maro_child_group_alive(j->pgid);
}

/* A job ended: done with status 0, else restarted after a backoff or given up. */
static void
ended(struct pool *pl, struct job *j, int wstatus, int stopping)
{
	char how[64];
	int64_t now = maro_now_us(), delay;
	size_t recent;

	maro_child_describe(wstatus, how, sizeof how);
	j->last_pid = j->pid;
	j->pid = 0;
	/* a job is its process group: what it left there goes with it */
	if (group_alive(j))
		kill(-j->pgid, SIGTERM);
	if (stopping) {
		j->state = DONE;
		maro_info("%s %s", j->name, how);
		return;
	}
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
		j->state = DONE;
		if (!pl->quiet)
			maro_warn("%s finished (status 0)", j->name);
		return;
	}
	recent = recent_restarts(pl, j, now);
	if (recent >= pl->max_restarts) {
		j->state = GAVE_UP;
		maro_warn("%s %s; giving up after %zu restarts in %.0fs", j->name, how, recent,
		    (double)pl->window_us / 1e6);
		return;
	}
	delay = BACKOFF_MIN_US << (recent < 7 ? recent : 7);
	if (delay > BACKOFF_MAX_US)
		delay = BACKOFF_MAX_US;
	j->starts[j->nstarts++ % (pl->max_restarts + 1)] = now;
	j->restarts++;
	j->state = WAITING;
	j->restart_at = now + delay;
	if (!pl->quiet)
		maro_warn("%s %s; restart %lu in %.1fs", j->name, how, j->restarts, (double)delay / 1e6);
}

static struct job *
job_of(struct pool *pl, pid_t pid)
{
	size_t i;

	for (i = 0; i < pl->njobs; i++)
		if (pl->jobs[i].pid == pid && pl->jobs[i].state == RUNNING)
			return &pl->jobs[i];
	return NULL;
}

/* Reaps every child that ended.  Returns how many. */
static int
reap(struct pool *pl, int stopping)
{
	int wstatus, n = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
		struct job *j = job_of(pl, pid);

		if (j) {
			ended(pl, j, wstatus, stopping);
			n++;
		}
	}
	return n;
}

/* A request to the pool gets its counts back; anything else is taken and said. */
static void
answer(struct pool *pl, struct maro_delivery *dl)
{
	struct maro_msg m = dl->msg;
	struct maro_buf payload = { 0 };
	char id[MARO_UUID_LEN + 1], to[MARO_NAME_MAX + 1];

	if (m.type == MARO_SESSION_NOTIFICATION || m.stage != MARO_STAGE_REQUEST ||
	    !(m.reply_to.p || m.source.p)) {
		maro_warn("took a message tagged '%.*s' that asks for no reply (a pool answers requests "
		    "with its counts)", (int)(m.tag.n < 64 ? m.tag.n : 64), m.tag.p);
		maro_inbox_done(pl->ib, dl);
		return;
	}
	maro_msg_make_reply(&m, pl->name, id);
	maro_buf_cbor_text(&payload, pl->info, strlen(pl->info));
	m.payload.p = payload.p;
	m.payload.n = payload.len;
	pl->enc.len = 0;
	if (m.reply_to.p)
		snprintf(to, sizeof to, "%.*s", (int)m.reply_to.n, m.reply_to.p);
	else
		snprintf(to, sizeof to, "%.*s", (int)m.destination.n, m.destination.p);
	if (maro_msg_encode(&m, &pl->enc) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	/* a reply that finds a full window is not acknowledged: its sender asks again */
	if (maro_outbox_put(pl->ob, to, pl->enc.p, pl->enc.len) == 0)
		maro_inbox_done(pl->ib, dl);
	maro_buf_free(&payload);
}

/*
 * SIGTERM to every job's process group; SIGKILL to the groups left after
 * the grace period.  Returns when every group is empty.
 */
static void
stop_all(struct pool *pl)
{
	int64_t until = maro_now_us() + pl->grace_us;
	size_t i, left;

	for (i = 0; i < pl->njobs; i++)
		if (group_alive(&pl->jobs[i]))
			kill(-pl->jobs[i].pgid, SIGTERM);
	for (;;) {
		reap(pl, 1);
		for (i = left = 0; i < pl->njobs; i++)
			left += pl->jobs[i].state == RUNNING || group_alive(&pl->jobs[i]);
		if (!left)
			break;
		if (maro_now_us() >= until) {
			for (i = 0; i < pl->njobs; i++)
				if (group_alive(&pl->jobs[i])) {
					maro_warn("%s did not stop in time: killing it", pl->jobs[i].name);
					kill(-pl->jobs[i].pgid, SIGKILL);
				}
			until = INT64_MAX;
		}
		usleep(10000);
	}
}

struct args {
	struct pool *pl;
	const char *type, *cpus, *config;
	unsigned long njobs;
};

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;
	struct pool *pl = a->pl;

	switch (key) {
	case OPT_JOBS_OLD:
		maro_warn("-n N is the old spelling of -j N (--jobs); it will mean a name, as in the "
		    "other tools");
		/* FALLTHROUGH */
	case OPT_JOBS:
		a->njobs = maro_cli_count("-j", val);
		if (a->njobs < 1 || a->njobs > MAX_JOBS)
			maro_usage_error("-j must be 1 to %d", MAX_JOBS);
		break;
	case OPT_TYPE: a->type = val; break;
	case OPT_CPUS: a->cpus = val; break;
	case OPT_MAX_RESTARTS:
		pl->max_restarts = (unsigned)maro_cli_count("--max-restarts", val);
		if (pl->max_restarts > MAX_RESTARTS)
			maro_usage_error("--max-restarts is at most %d", MAX_RESTARTS);
		break;
	case OPT_WINDOW:
		pl->window_us = maro_cli_duration("--restart-window", val);
		if (pl->window_us <= 0)
			maro_usage_error("--restart-window must be positive");
		break;
	case OPT_CONFIG: a->config = val; break;
	case OPT_NAME:
		snprintf(pl->name, sizeof pl->name, "%s", val);
		if (strlen(val) > MARO_NAME_MAX || !maro_name_valid(val) || val[0] == '~')
			maro_usage_error("invalid --name (letters, digits, '.', '_', '-')");
		break;
	case OPT_GRACE: pl->grace_us = maro_cli_duration("--grace", val); break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct pool pl = { 0 };
	struct args a = { &pl, "worker", NULL, NULL, 0 };
	const char *type, *cpus, *config;
	char errbuf[512], host[64];
	unsigned long njobs;
	int64_t timeout, deadline, next_hb, now;
	int status = MARO_EXIT_OK, stopping = 0, finished = 0;
	size_t i, k;

	maro_cli_init(argv[0]);
	pl.max_restarts = 10;
	pl.window_us = 60000000;
	pl.grace_us = 5000000;
	maro_common_init(&cm);
	optind = maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	type = a.type;
	cpus = a.cpus;
	config = a.config;
	njobs = a.njobs;
	timeout = cm.timeout;
	pl.quiet = cm.quiet;
	if (config) {
		if (optind < argc || njobs || cpus || strcmp(type, "worker"))
			maro_usage_error("--config gives the types, counts, CPUs and commands: no -j, -T, "
			    "--cpus or COMMAND with it");
		read_config(&pl, config);
	} else {
		struct jtype *t = &pl.types[pl.ntypes++];

		if (optind >= argc)
			maro_usage_error("no command (maro-pool -j N -- COMMAND [ARG...])");
		if (!type_name_ok(type))
			maro_usage_error("invalid type '%s' (letters, digits, '-')", type);
		snprintf(t->name, sizeof t->name, "%s", type);
		t->argv = argv + optind;
		if (cpus && parse_cpus(cpus, &t->cpus, &t->ncpus, errbuf, sizeof errbuf) < 0)
			maro_usage_error("%s", errbuf);
		if (!njobs) {
			long online = sysconf(_SC_NPROCESSORS_ONLN);

			njobs = t->cpus ? t->ncpus : online > 0 ? (unsigned long)online : 1;
		}
		t->count = njobs;
	}

	/* the jobs, named TYPE.HOST.I */
	host_part(host, sizeof host);
	for (i = 0; i < pl.ntypes; i++)
		pl.njobs += pl.types[i].count;
	if (pl.njobs > MAX_JOBS)
		maro_usage_error("at most %d jobs in all", MAX_JOBS);
	pl.jobs = calloc(pl.njobs, sizeof *pl.jobs);
	if (!pl.jobs)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	for (i = k = 0; i < pl.ntypes; i++) {
		size_t n;

		for (n = 0; n < pl.types[i].count; n++, k++) {
			struct job *j = &pl.jobs[k];

			j->t = &pl.types[i];
			j->index = n + 1;
			snprintf(j->name, sizeof j->name, "%s.%s.%zu", j->t->name, host, n + 1);
			assign_cpus(j, n, pl.types[i].count);
			j->starts = calloc(pl.max_restarts + 1, sizeof *j->starts);
			if (!j->starts)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		}
	}
	if (!pl.name[0])
		snprintf(pl.name, sizeof pl.name, "pool.%s", host);
	pl.group = cm.co.group ? cm.co.group : getenv("MARO_GROUP");
	if (!pl.group || !*pl.group)
		pl.group = "maro";
	pl.registry = cm.co.registry_url ? cm.co.registry_url : getenv("MARO_REGISTRY");
	if (!pl.registry || !*pl.registry)
		pl.registry = maro_registry_default_url();
	pl.keyfile = cm.co.keyfile ? cm.co.keyfile : getenv("MARO_KEYFILE");
	if (pl.keyfile && !*pl.keyfile)
		pl.keyfile = NULL;

	maro_cli_catch_signals();
	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "pipe: %s", strerror(errno));
	{
		struct sigaction sa = { 0 };

		sa.sa_handler = on_chld;
		sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGCHLD, &sa, NULL);
	}
	pl.c = maro_tool_ctx(&cm);
	cm.name = pl.name;
	cm.type = "pool";
	pl.ib = maro_tool_inbox(pl.c, &cm, "another pool here? give this one --name");
	pl.ob = maro_outbox_new(pl.c, NULL, NULL, &pl);
	if (!pl.ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");

	for (i = 0; i < pl.njobs; i++)
		if (spawn(&pl, &pl.jobs[i]) < 0) {
			status = MARO_EXIT_USAGE;
			stop_all(&pl);
			goto out;
		}
	update_info(&pl);
	maro_info("%zu jobs started; pool '%s'", pl.njobs, pl.name);

	now = maro_now_us();
	deadline = timeout >= 0 ? now + timeout : INT64_MAX;
	next_hb = maro_tool_next_beat(pl.c, now);
	while (!finished) {
		zmq_pollitem_t items[1100];
		struct maro_delivery dl;
		int nitems = 0, changed = 0;
		int64_t wake;
		char c[64];

		while (read(chld_pipe[0], c, sizeof c) > 0)
			;
		changed += reap(&pl, 0);
		now = maro_now_us();
		finished = 1;
		for (i = 0; i < pl.njobs; i++) {
			struct job *j = &pl.jobs[i];

			if (j->state != RUNNING && j->pgid > 0 && !group_alive(j))
				j->pgid = 0;
			if (j->state == WAITING && now >= j->restart_at) {
				/* leftovers that ignored SIGTERM must not hold the name */
				if (j->pgid > 0)
					kill(-j->pgid, SIGKILL);
				if (spawn(&pl, j) < 0)
					j->state = GAVE_UP;
				changed++;
			}
			if (j->state == RUNNING || j->state == WAITING)
				finished = 0;
		}
		if (changed)
			update_info(&pl);
		while (maro_inbox_next(pl.ib, &dl) == 1)
			answer(&pl, &dl);
		maro_outbox_run(pl.ob);
		maro_inbox_flush(pl.ib);
		if (maro_signal) {
			status = maro_signal_status();
			stopping = 1;
			break;
		}
		if (now >= deadline) {
			status = MARO_EXIT_TIMEOUT;
			stopping = 1;
			break;
		}
		if (now >= next_hb) {
			maro_registry_heartbeat(pl.c->reg);
			maro_cli_report_rejected(pl.c);
			maro_cli_report_malformed(pl.ib);
			next_hb = maro_tool_next_beat(pl.c, now);
		}
		if (finished)
			break;
		items[nitems++] = (zmq_pollitem_t){ maro_inbox_pollable(pl.ib), 0, ZMQ_POLLIN, 0 };
		items[nitems++] = (zmq_pollitem_t){ NULL, chld_pipe[0], ZMQ_POLLIN, 0 };
		nitems += maro_outbox_pollitems(pl.ob, items + nitems, 1024);
		wake = maro_outbox_deadline(pl.ob);
		if (deadline < wake)
			wake = deadline;
		if (next_hb < wake)
			wake = next_hb;
		for (i = 0; i < pl.njobs; i++)
			if (pl.jobs[i].state == WAITING && pl.jobs[i].restart_at < wake)
				wake = pl.jobs[i].restart_at;
		if (maro_poll(pl.c, items, nitems, wake <= now ? 0 : (long)((wake - now + 999) / 1000)) < 0 &&
		    errno != EINTR)
			maro_die(MARO_EXIT_SOFTWARE, "poll: %s", zmq_strerror(errno));
	}
	if (stopping)
		stop_all(&pl);
	if (status == MARO_EXIT_OK)
		for (i = 0; i < pl.njobs; i++)
			if (pl.jobs[i].state == GAVE_UP)
				status = MARO_EXIT_INCOMPLETE;
out:
	maro_outbox_free(pl.ob);
	maro_cli_report_malformed(pl.ib);
	maro_inbox_close(pl.ib);
	maro_ctx_close(pl.c);
	for (i = 0; i < pl.njobs; i++)
		free(pl.jobs[i].starts);
	free(pl.jobs);
	for (i = 0; i < pl.ntypes; i++) {
		free(pl.types[i].cpus);
		if (config) {
			free(pl.types[i].argv[2]);
			free(pl.types[i].argv);
		}
	}
	maro_buf_free(&pl.enc);
	return status;
}
