/*
 * maro-peers: the live members of a group; wait until the expected peers
 * are there; watch members join and leave.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "maro.h"

enum { OPT_WATCH = 256, OPT_STATUS };

static const char *const synopsis[] = { "", NULL };

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "only the peers whose name starts with PREFIX", 0),
	{ "format", 'f', "text|json", "text (the default) or json", NULL, 'f', 0, 0 },
	{ "status", 0, NULL, "one line per type: how many live, how fresh", NULL, OPT_STATUS, 0, 0 },
	{ "watch", 0, NULL, "then write each join and leave as it happens", NULL, OPT_WATCH, 0, 0 },
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "with -e: list nothing, only wait", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"List the live members of a group; wait for the expected ones; watch them come and go.",
	synopsis, opts, MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(EXPECT) | MARO_SH(TIMEOUT),
	0,
};

struct out {
	int json, quiet;
};

static json_t *
entry_json(const struct maro_entry *e, const char *event)
{
	json_t *j = json_object();

	if (!j)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	if (event)
		json_object_set_new(j, "event", json_string(event));
	json_object_set_new(j, "name", json_string(e->name));
	if (event && !strcmp(event, "leave"))
		return j;
	json_object_set_new(j, "type", json_string(e->type));
	json_object_set_new(j, "host", json_string(e->host));
	json_object_set_new(j, "endpoint", json_string(e->endpoint));
	json_object_set_new(j, "pid", json_integer(e->pid));
	json_object_set_new(j, "started", json_integer(e->started_ms));
	json_object_set_new(j, "heartbeat_age_ms", json_integer(e->heartbeat_age_ms));
	json_object_set_new(j, "ncpu", json_integer(e->ncpu));
	json_object_set_new(j, "load1", json_real(e->load1));
	json_object_set_new(j, "mem_used_kb", json_integer((json_int_t)e->mem_used_kb));
	json_object_set_new(j, "info", json_string(e->info));
	return j;
}

static void
put_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(4));

	if (!s)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	puts(s);
	free(s);
	json_decref(j);
}

static void
age_text(char *buf, size_t len, int64_t ms)
{
	if (ms < 100000)
		snprintf(buf, len, "%.1fs", (double)ms / 1000);
	else
		snprintf(buf, len, "%llds", (long long)(ms / 1000));
}

static void
mem_text(char *buf, size_t len, uint64_t kb)
{
	if (kb >= 1024 * 1024)
		snprintf(buf, len, "%.1fG", (double)kb / (1024 * 1024));
	else
		snprintf(buf, len, "%.0fM", (double)kb / 1024);
}

static int
widest(const struct maro_entry *v, size_t n, size_t off, int min)
{
	size_t i;
	int w = min;

	for (i = 0; i < n; i++) {
		int k = (int)strlen((const char *)&v[i] + off);

		if (k > w)
			w = k;
	}
	return w;
}

#define WIDEST(v, n, field, title) widest(v, n, offsetof(struct maro_entry, field), (int)strlen(title))

/* A header and one aligned row per peer; -v adds the host's status. */
static void
print_table(const struct maro_entry *v, size_t n, const struct out *o)
{
	int wn = WIDEST(v, n, name, "NAME"), wt = WIDEST(v, n, type, "TYPE");
	int wh = WIDEST(v, n, host, "HOST"), we = WIDEST(v, n, endpoint, "ENDPOINT");
	char age[32], mem[32];
	size_t i;

	if (!o->quiet) {
		printf("%-*s  %-*s  %-*s  %-*s  %7s  %6s", wn, "NAME", wt, "TYPE", wh, "HOST", we,
		    "ENDPOINT", "PID", "AGE");
		if (maro_verbose)
			printf("  %4s  %6s  %6s  %s", "NCPU", "LOAD1", "MEM", "INFO");
		putchar('\n');
	}
	for (i = 0; i < n; i++) {
		age_text(age, sizeof age, v[i].heartbeat_age_ms);
		printf("%-*s  %-*s  %-*s  %-*s  %7ld  %6s", wn, v[i].name, wt, v[i].type, wh, v[i].host,
		    we, v[i].endpoint, (long)v[i].pid, age);
		if (maro_verbose) {
			mem_text(mem, sizeof mem, v[i].mem_used_kb);
			printf("  %4d  %6.2f  %6s%s%s", v[i].ncpu, v[i].load1, mem, v[i].info[0] ? "  " : "",
			    v[i].info);
		}
		putchar('\n');
	}
}

static int
show(struct maro_registry *r, const char *prefix, const struct out *o)
{
	struct maro_entry *v;
	ssize_t n = maro_registry_list(r, prefix, &v), i;

	if (n < 0) {
		maro_warn("%s", maro_registry_error(r));
		return MARO_EXIT_UNAVAILABLE;
	}
	if (o->json)
		for (i = 0; i < n; i++)
			put_json(entry_json(&v[i], NULL));
	else
		print_table(v, (size_t)n, o);
	free(v);
	return 0;
}

static const struct maro_entry *
find(const struct maro_entry *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/* The same member, not a new holder of the name (a takeover is a leave and a join). */
static int
same(const struct maro_entry *a, const struct maro_entry *b)
{
	return a->pid == b->pid && a->started_ms == b->started_ms && !strcmp(a->host, b->host) &&
	    !strcmp(a->endpoint, b->endpoint);
}

static int
event(const struct maro_entry *e, const char *what, const struct out *o)
{
	if (o->json)
		put_json(entry_json(e, what));
	else if (!strcmp(what, "join"))
		printf("join %s %s %s %s\n", e->name, e->type, e->host, e->endpoint);
	else
		printf("leave %s\n", e->name);
	return fflush(stdout) == EOF ? -1 : 0;
}

/* The counts a pool keeps in its info ("jobs=4 running=4 restarts=1 gaveup=0 ..."). */
static long
info_count(const char *info, const char *key)
{
	size_t k = strlen(key);
	const char *p = info;

	while ((p = strstr(p, key))) {
		if ((p == info || p[-1] == ' ') && p[k] == '=')
			return strtol(p + k + 1, NULL, 10);
		p += k;
	}
	return -1;
}

struct hoststat {
	const struct maro_entry *latest;	/* the freshest heartbeat says the host's load */
	size_t members;
};

struct typestat {
	const char *type;
	size_t members;
};

static int
by_type(const void *a, const void *b)
{
	return strcmp(((const struct typestat *)a)->type, ((const struct typestat *)b)->type);
}

/*
 * The cluster in one view: hosts with their CPUs, load and memory, members
 * per type, and pools with their job counts (PARL's xparl status).
 */
static void
print_status(const struct maro_entry *v, size_t n, const struct out *o)
{
	struct hoststat *hs = calloc(n + 1, sizeof *hs);
	struct typestat *ts = calloc(n + 1, sizeof *ts);
	size_t nh = 0, nt = 0, i, k, cpus = 0, npools = 0;
	json_t *j = NULL, *ja = NULL;

	if (!hs || !ts)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	for (i = 0; i < n; i++) {
		for (k = 0; k < nh && strcmp(hs[k].latest->host, v[i].host); k++)
			;
		if (k == nh)
			hs[nh++].latest = &v[i];
		else if (v[i].heartbeat_age_ms < hs[k].latest->heartbeat_age_ms)
			hs[k].latest = &v[i];
		hs[k].members++;
		for (k = 0; k < nt && strcmp(ts[k].type, v[i].type); k++)
			;
		if (k == nt)
			ts[nt++].type = v[i].type;
		ts[k].members++;
		npools += !strcmp(v[i].type, "pool");
	}
	qsort(ts, nt, sizeof *ts, by_type);
	for (k = 0; k < nh; k++)
		cpus += (size_t)(hs[k].latest->ncpu > 0 ? hs[k].latest->ncpu : 0);
	if (o->json) {
		j = json_object();
		json_object_set_new(j, "hosts", json_integer((json_int_t)nh));
		json_object_set_new(j, "members", json_integer((json_int_t)n));
		json_object_set_new(j, "cpus", json_integer((json_int_t)cpus));
		ja = json_array();
		for (k = 0; k < nh; k++) {
			const struct maro_entry *e = hs[k].latest;
			json_t *h = json_object();

			json_object_set_new(h, "host", json_string(e->host));
			json_object_set_new(h, "ncpu", json_integer(e->ncpu));
			json_object_set_new(h, "load1", json_real(e->load1));
			json_object_set_new(h, "mem_used_kb", json_integer((json_int_t)e->mem_used_kb));
			json_object_set_new(h, "members", json_integer((json_int_t)hs[k].members));
			json_array_append_new(ja, h);
		}
		json_object_set_new(j, "host_status", ja);
		ja = json_object();
		for (k = 0; k < nt; k++)
			json_object_set_new(ja, ts[k].type, json_integer((json_int_t)ts[k].members));
		json_object_set_new(j, "types", ja);
		ja = json_array();
		for (i = 0; i < n; i++) {
			json_t *p;

			if (strcmp(v[i].type, "pool"))
				continue;
			p = json_object();
			json_object_set_new(p, "name", json_string(v[i].name));
			json_object_set_new(p, "host", json_string(v[i].host));
			json_object_set_new(p, "jobs", json_integer(info_count(v[i].info, "jobs")));
			json_object_set_new(p, "running", json_integer(info_count(v[i].info, "running")));
			json_object_set_new(p, "restarts", json_integer(info_count(v[i].info, "restarts")));
			json_object_set_new(p, "gaveup", json_integer(info_count(v[i].info, "gaveup")));
			json_array_append_new(ja, p);
		}
		json_object_set_new(j, "pools", ja);
		put_json(j);
		free(hs);
		free(ts);
		return;
	}
	printf("hosts %zu, members %zu, CPUs %zu\n\n", nh, n, cpus);
	printf("%-24s  %4s  %6s  %7s  %7s\n", "HOST", "NCPU", "LOAD1", "MEM", "MEMBERS");
	for (k = 0; k < nh; k++) {
		const struct maro_entry *e = hs[k].latest;
		char mem[32];

		mem_text(mem, sizeof mem, e->mem_used_kb);
		printf("%-24s  %4d  %6.2f  %7s  %7zu\n", e->host, e->ncpu, e->load1, mem, hs[k].members);
	}
	printf("\n%-24s  %7s\n", "TYPE", "MEMBERS");
	for (k = 0; k < nt; k++)
		printf("%-24s  %7zu\n", ts[k].type, ts[k].members);
	if (npools) {
		printf("\n%-24s  %-16s  %5s  %7s  %8s  %6s\n", "POOL", "HOST", "JOBS", "RUNNING", "RESTARTS",
		    "GAVEUP");
		for (i = 0; i < n; i++)
			if (!strcmp(v[i].type, "pool"))
				printf("%-24s  %-16s  %5ld  %7ld  %8ld  %6ld\n", v[i].name, v[i].host,
				    info_count(v[i].info, "jobs"), info_count(v[i].info, "running"),
				    info_count(v[i].info, "restarts"), info_count(v[i].info, "gaveup"));
	}
	free(hs);
	free(ts);
}

/*
 * --status: the summary once, or with --watch every second until -W or a
 * signal (the screen cleared first on a terminal; one JSON line each with -f json).
 */
static int
status_view(struct maro_registry *r, const char *prefix, const struct out *o, int watching,
    int64_t deadline)
{
	int tty = isatty(STDOUT_FILENO), failing = 0;
	int64_t next;

	for (;;) {
		struct maro_entry *v;
		ssize_t n = maro_registry_list(r, prefix, &v);

		if (n < 0) {
			if (!watching) {
				maro_warn("%s", maro_registry_error(r));
				return MARO_EXIT_UNAVAILABLE;
			}
			if (!failing)
				maro_warn("%s (still watching)", maro_registry_error(r));
			failing = 1;
		} else {
			failing = 0;
			if (watching && tty && !o->json)
				fputs("\033[H\033[2J", stdout);
			print_status(v, (size_t)n, o);
			free(v);
			if (watching && !tty && !o->json)
				putchar('\n');
			if (fflush(stdout) == EOF)
				return 0;	/* maro_cli_close_stdout says why, if it matters */
		}
		if (!watching)
			return 0;
		next = maro_now_us() + 1000000;
		for (;;) {
			int64_t now = maro_now_us();
			struct timespec ts = { 0, 100000000 };

			if (maro_signal)
				return maro_signal_status();
			if (now >= deadline)
				return 0;
			if (now >= next)
				break;
			nanosleep(&ts, NULL);
		}
	}
}

/*
 * Polls the registry and prints the difference with the last poll.  A
 * registry that fails meanwhile (a restarting Redis) is said once and
 * polled again; membership is compared only between good polls.
 */
static int
watch(struct maro_registry *r, const char *prefix, const struct out *o, int64_t deadline)
{
	struct maro_entry *old = NULL, *cur;
	size_t nold = 0, i;
	ssize_t n;
	int failing = 0, status = 0;

	for (;;) {
		int64_t left;
		struct timespec ts;

		n = maro_registry_list(r, prefix, &cur);
		if (n < 0 && !failing) {
			maro_warn("%s (still watching)", maro_registry_error(r));
			failing = 1;
		}
		if (n >= 0) {
			if (failing)
				maro_warn("registry reachable again");
			failing = 0;
			for (i = 0; i < nold && status == 0; i++) {
				const struct maro_entry *e = find(cur, (size_t)n, old[i].name);

				if (!e || !same(e, &old[i]))
					status = event(&old[i], "leave", o);
			}
			for (i = 0; i < (size_t)n && status == 0; i++) {
				const struct maro_entry *e = find(old, nold, cur[i].name);

				if (!e || !same(e, &cur[i]))
					status = event(&cur[i], "join", o);
			}
			free(old);
			old = cur;
			nold = (size_t)n;
		}
		if (status < 0) {
			status = 0;	/* stdout is gone: maro_cli_close_stdout says why, if it matters */
			break;
		}
		if (maro_signal) {
			status = maro_signal_status();
			break;
		}
		left = deadline - maro_now_us();
		if (left <= 0)
			break;
		if (left > 100000)
			left = 100000;	/* the registry poll interval */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000;
		nanosleep(&ts, NULL);
		if (maro_signal) {
			status = maro_signal_status();
			break;
		}
	}
	free(old);
	return status;
}

struct args {
	struct out *o;
	int watching, summary;
};

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;

	switch (key) {
	case 'f':
		if (strcmp(val, "text") && strcmp(val, "json"))
			maro_usage_error("unknown format '%s' (text or json)", val);
		a->o->json = !strcmp(val, "json");
		break;
	case OPT_WATCH: a->watching = 1; break;
	case OPT_STATUS: a->summary = 1; break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct maro_registry *r;
	struct out o = { 0, 0 };
	struct args a = { &o, 0, 0 };
	const char *group, *prefix;
	char errbuf[512];
	size_t nex;
	int64_t deadline;
	int watching, status, summary;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	watching = a.watching;
	summary = a.summary;
	o.quiet = cm.quiet;
	prefix = cm.prefix;
	nex = cm.nexpect;
	group = cm.co.group ? cm.co.group : getenv("MARO_GROUP");
	if (!group || !*group)
		group = "maro";

	maro_cli_catch_signals();
	deadline = cm.timeout >= 0 ? maro_now_us() + cm.timeout : INT64_MAX;
	maro_deadline = deadline;
	r = maro_registry_open(cm.co.registry_url, group, NULL, errbuf, sizeof errbuf);
	if (!r)
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	maro_info("group '%s' in the %s registry", group, maro_registry_kind(r));
	status = nex ? maro_cli_expect_wait(r, cm.expect, nex, deadline) : 0;
	if (status == 0 && summary)
		status = status_view(r, prefix, &o, watching, deadline);
	else if (status == 0 && watching)
		status = watch(r, prefix, &o, deadline);
	else if (status == 0 && !(nex && o.quiet))
		status = show(r, prefix, &o);
	maro_registry_close(r);
	maro_common_free(&cm);
	return maro_cli_close_stdout(status);
}
