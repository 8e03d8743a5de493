#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "jobs.h"

#define BACKOFF_MIN_US 100000
#define BACKOFF_MAX_US 10000000

int
maro_jobs_cpus_parse(const char *s, int **cpus, size_t *n, char *errbuf, size_t errlen)
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
				maro_errbuf_set(errbuf, errlen, "CPU %ld is not available to this process", a);
				free(v);
				errno = EINVAL;
				return -1;
			}
			nv = realloc(v, (k + 1) * sizeof *v);
			if (!nv) {
				free(v);
				errno = ENOMEM;
				return -1;
			}
			v = nv;
			v[k++] = (int)a;
		}
	}
	if (!k)
		goto bad;
	*cpus = v;
	*n = k;
	return 0;
bad:
	maro_errbuf_set(errbuf, errlen, "invalid CPU list '%s' (like 0-3,6)", s);
	free(v);
	errno = EINVAL;
	return -1;
}

int
maro_jobs_type_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 && maro_name_valid(s) && s[0] != '~' && !strpbrk(s, "._");
}

/* What is wrong with a config file, into err: -1, err left empty when out of memory. */
static int __attribute__((format(printf, 2, 3)))
bad(struct maro_buf *err, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	n = maro_buf_puts(err, msg);
	free(msg);
	errno = n < 0 ? ENOMEM : EINVAL;
	return -1;
}

/*
 * One line of a config file, NUL-terminated and not blank: its type added
 * to js.  0, or -1 with a message in err (empty when out of memory).
 */
static int
config_line(struct maro_jobs *js, char *p, const char *path, int lineno, struct maro_buf *err)
{
	char *fields[3], *end, cpuerr[128];
	struct maro_jobtype *t;
	unsigned long count;
	size_t i;

	for (i = 0; i < 3; i++) {
		fields[i] = p;
		p += strcspn(p, " \t");
		if (!*p)
			return bad(err, "%s:%d: expected TYPE COUNT CPUS COMMAND", path, lineno);
		*p++ = '\0';
		p += strspn(p, " \t");
	}
	if (!*p)
		return bad(err, "%s:%d: no command", path, lineno);
	if (!maro_jobs_type_valid(fields[0]))
		return bad(err, "%s:%d: invalid type '%s' (letters, digits, '-')", path, lineno,
		    fields[0]);
	errno = 0;
	count = strtoul(fields[1], &end, 10);
	if (*end || end == fields[1] || errno || count < 1 || count > MARO_JOBS_MAX)
		return bad(err, "%s:%d: invalid count '%s' (1 to %d)", path, lineno, fields[1],
		    MARO_JOBS_MAX);
	if (js->ntypes == MARO_JOBS_MAX_TYPES)
		return bad(err, "%s:%d: at most %d job types", path, lineno,
		    MARO_JOBS_MAX_TYPES);
	for (i = 0; i < js->ntypes; i++)
		if (!strcmp(js->types[i].name, fields[0]))
			return bad(err, "%s:%d: type '%s' given twice", path, lineno, fields[0]);
	t = &js->types[js->ntypes++];
	snprintf(t->name, sizeof t->name, "%s", fields[0]);
	t->count = count;
	if (strcmp(fields[2], "-") &&
	    maro_jobs_cpus_parse(fields[2], &t->cpus, &t->ncpus, cpuerr, sizeof cpuerr) < 0)
		return errno == ENOMEM ? -1 : bad(err, "%s:%d: %s", path, lineno, cpuerr);
	if (!(t->command = strdup(p)) || !(t->argv = calloc(4, sizeof *t->argv)))
		return -1;
	t->argv[0] = "sh";
	t->argv[1] = "-c";
	t->argv[2] = t->command;
	return 0;
}

int
maro_jobs_config_read(struct maro_jobs *js, const char *path, struct maro_buf *err)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, rc = -1;

	if (!f)
		return bad(err, "cannot read '%s': %s", path, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p = line;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		p += strspn(p, " \t");
		if (!*p || *p == '#')
			continue;
		if (config_line(js, p, path, lineno, err) < 0)
			goto out;
	}
	if (ferror(f))
		bad(err, "cannot read '%s': %s", path, strerror(errno));
	else if (!js->ntypes)
		bad(err, "%s: no job types", path);
	else
		rc = 0;
out:
	free(line);
	fclose(f);
	return rc;
}

void
maro_jobs_host(char *out, size_t len)
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

/* Job i of n of its type gets its share of the type's CPUs (one each, round robin, when fewer). */
static void
assign_cpus(struct maro_job *j, size_t i, size_t n)
{
	const struct maro_jobtype *t = j->t;
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

int
maro_jobs_make(struct maro_jobs *js, const char *host)
{
	size_t i, k, n;

	for (i = 0; i < js->ntypes; i++)
		js->njobs += js->types[i].count;
	if (js->njobs > MARO_JOBS_MAX) {
		errno = E2BIG;
		return -1;
	}
	js->jobs = calloc(js->njobs, sizeof *js->jobs);
	if (!js->jobs)
		return -1;
	for (i = k = 0; i < js->ntypes; i++)
		for (n = 0; n < js->types[i].count; n++, k++) {
			struct maro_job *j = &js->jobs[k];

			j->t = &js->types[i];
			j->index = n + 1;
			snprintf(j->name, sizeof j->name, "%s.%s.%zu", j->t->name, host, n + 1);
			assign_cpus(j, n, js->types[i].count);
			j->starts = calloc(js->max_restarts + 1, sizeof *j->starts);
			if (!j->starts)
				return -1;
		}
	return 0;
}

char **
maro_jobs_env(const struct maro_jobs *js, const struct maro_job *j)
{
	char *set[9] = { NULL }, **env = NULL;
	size_t n = 0, i;

	if (asprintf(&set[n++], "MARO_NAME=%s", j->name) < 0 ||
	    asprintf(&set[n++], "MARO_GROUP=%s", js->group) < 0 ||
	    asprintf(&set[n++], "MARO_REGISTRY=%s", js->registry) < 0 ||
	    asprintf(&set[n++], "MARO_POOL=%s", js->pool) < 0 ||
	    asprintf(&set[n++], "MARO_JOB=%zu", j->index) < 0 ||
	    asprintf(&set[n++], "MARO_CPUS=%s", j->cpulist) < 0 ||
	    /* no key: none inherited either */
	    (js->keyfile ? asprintf(&set[n++], "MARO_KEYFILE=%s", js->keyfile) < 0 :
	    !(set[n++] = strdup("MARO_KEYFILE"))) ||
	    (j->last_pid > 0 ? asprintf(&set[n++], "MARO_REPLACES_PID=%ld", (long)j->last_pid) < 0 :
	    !(set[n++] = strdup("MARO_REPLACES_PID")))) {
		/* a failed asprintf leaves its pointer undefined */
		set[n - 1] = NULL;
		goto out;
	}
	env = maro_child_env(set, n);
out:
	for (i = 0; i < n; i++)
		free(set[i]);
	return env;
}

int
maro_jobs_start(struct maro_job *j, char **env)
{
	struct maro_child_spec cs = { NULL, NULL, NULL, -1, -1, NULL, NULL, -1 };
	pid_t pid;

	cs.argv = j->t->argv;
	cs.env = env;
	cs.cpus = CPU_COUNT(&j->cpus) > 0 ? &j->cpus : NULL;
	pid = maro_child_spawn(&cs);
	if (pid < 0)
		return -1;
	j->pid = j->pgid = pid;
	j->state = MARO_JOB_RUNNING;
	return 0;
}

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

int
maro_jobs_watch(void)
{
	struct sigaction sa = { 0 };

	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	return chld_pipe[0];
}

/* Restarts within the window, now included; the ring keeps the last max_restarts + 1. */
static size_t
recent_restarts(const struct maro_jobs *js, const struct maro_job *j, int64_t now)
{
	size_t cap = js->max_restarts + 1, i, n = 0;

	for (i = 0; i < j->nstarts && i < cap; i++)
		if (now - j->starts[i] < js->window_us)
			n++;
	return n;
}

/* A job ended: done with status 0, else restarted after a backoff or given up. */
static void
ended(struct maro_jobs *js, struct maro_job *j, int wstatus, int stopping, struct maro_job_end *e)
{
	int64_t now = maro_now_us(), delay;

	memset(e, 0, sizeof *e);
	maro_child_describe(wstatus, e->how, sizeof e->how);
	j->last_pid = j->pid;
	j->pid = 0;
	/* a job is its process group: what it left there goes with it */
	if (maro_child_group_alive(j->pgid))
		kill(-j->pgid, SIGTERM);
	if (stopping || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
		j->state = MARO_JOB_DONE;
		e->outcome = stopping ? MARO_JOB_STOPPED : MARO_JOB_FINISHED;
		return;
	}
	e->recent = recent_restarts(js, j, now);
	if (e->recent >= js->max_restarts) {
		j->state = MARO_JOB_GAVE_UP;
		e->outcome = MARO_JOB_GIVEN_UP;
		return;
	}
	delay = BACKOFF_MIN_US << (e->recent < 7 ? e->recent : 7);
	if (delay > BACKOFF_MAX_US)
		delay = BACKOFF_MAX_US;
	j->starts[j->nstarts++ % (js->max_restarts + 1)] = now;
	j->restarts++;
	j->state = MARO_JOB_WAITING;
	j->restart_at = now + delay;
	e->outcome = MARO_JOB_RESTARTING;
	e->delay_us = delay;
}

struct maro_job *
maro_jobs_reap(struct maro_jobs *js, int stopping, struct maro_job_end *e)
{
	int wstatus;
	pid_t pid;
	size_t i;
	char c[64];

	/* before waitpid: a child that ends after it leaves the descriptor readable */
	while (chld_pipe[0] >= 0 && read(chld_pipe[0], c, sizeof c) > 0)
		;
	while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0)
		for (i = 0; i < js->njobs; i++) {
			struct maro_job *j = &js->jobs[i];

			if (j->pid == pid && j->state == MARO_JOB_RUNNING) {
				ended(js, j, wstatus, stopping, e);
				return j;
			}
		}
	return NULL;
}

int
maro_jobs_due(struct maro_job *j, int64_t now)
{
	if (j->state != MARO_JOB_RUNNING && j->pgid > 0 && !maro_child_group_alive(j->pgid))
		j->pgid = 0;
	if (j->state != MARO_JOB_WAITING || now < j->restart_at)
		return 0;
	/* leftovers that ignored SIGTERM must not hold the name */
	if (j->pgid > 0)
		kill(-j->pgid, SIGKILL);
	return 1;
}

int64_t
maro_jobs_wake(const struct maro_jobs *js, int64_t wake)
{
	size_t i;

	for (i = 0; i < js->njobs; i++)
		if (js->jobs[i].state == MARO_JOB_WAITING && js->jobs[i].restart_at < wake)
			wake = js->jobs[i].restart_at;
	return wake;
}

int
maro_jobs_active(const struct maro_jobs *js)
{
	size_t i;

	for (i = 0; i < js->njobs; i++)
		if (js->jobs[i].state == MARO_JOB_RUNNING || js->jobs[i].state == MARO_JOB_WAITING)
			return 1;
	return 0;
}

size_t
maro_jobs_left(const struct maro_jobs *js)
{
	size_t i, left = 0;

	for (i = 0; i < js->njobs; i++)
		left += js->jobs[i].state == MARO_JOB_RUNNING || maro_child_group_alive(js->jobs[i].pgid);
	return left;
}

void
maro_jobs_info(const struct maro_jobs *js, char *buf, size_t len)
{
	size_t i, running = 0, gaveup = 0, n;
	unsigned long restarts = 0;

	for (i = 0; i < js->njobs; i++) {
		running += js->jobs[i].state == MARO_JOB_RUNNING;
		gaveup += js->jobs[i].state == MARO_JOB_GAVE_UP;
		restarts += js->jobs[i].restarts;
	}
	n = (size_t)snprintf(buf, len, "jobs=%zu running=%zu restarts=%lu gaveup=%zu", js->njobs, running,
	    restarts, gaveup);
	for (i = 0; i < js->ntypes && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %s=%zu", js->types[i].name, js->types[i].count);
}

void
maro_jobs_free(struct maro_jobs *js)
{
	size_t i;

	for (i = 0; js->jobs && i < js->njobs; i++)
		free(js->jobs[i].starts);
	free(js->jobs);
	for (i = 0; i < js->ntypes; i++) {
		free(js->types[i].cpus);
		if (js->types[i].command) {
			free(js->types[i].command);
			free(js->types[i].argv);
		}
	}
	memset(js, 0, sizeof *js);
}
