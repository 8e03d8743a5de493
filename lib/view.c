/*
 * view: the registry's entries as text and JSON (view.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "view.h"

/* Appends j as one compact line and releases it; j NULL means out of memory. */
static int
json_line(struct maro_buf *out, json_t *j)
{
	char *s;
	int rc;

	if (!j) {
		errno = ENOMEM;
		return -1;
	}
	s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(4));
	json_decref(j);
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	rc = maro_buf_printf(out, "%s\n", s);
	free(s);
	return rc;
}

/*
 * An entry's stats as an object of numbers (the keys stats.h names), or
 * NULL when it publishes none that can be read.
 */
static json_t *
stats_json(const char *text)
{
	struct maro_stats_view sv;
	json_t *j;
	int k;

	if (maro_stats_parse(text, &sv) == 0 || !(j = json_object()))
		return NULL;
	for (k = 0; k < MARO_STATS_NKEYS; k++) {
		if (!(sv.have & 1u << k))
			continue;
		if (k < MARO_STATS_NINTS)
			json_object_set_new(j, maro_stats_key_name(k), json_integer((json_int_t)sv.n[k]));
		else
			json_object_set_new(j, maro_stats_key_name(k),
			    json_real(sv.rate[k - MARO_STATS_NINTS]));
	}
	return j;
}

static json_t *
entry_json(const struct maro_entry *e, const char *event)
{
	json_t *j = json_object(), *st;

	if (!j)
		return NULL;
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
	json_object_set_new(j, "version", json_string(e->version));
	json_object_set_new(j, "heartbeat_age_ms", json_integer(e->heartbeat_age_ms));
	json_object_set_new(j, "ncpu", json_integer(e->ncpu));
	json_object_set_new(j, "load1", json_real(e->load1));
	json_object_set_new(j, "mem_used_kb", json_integer((json_int_t)e->mem_used_kb));
	json_object_set_new(j, "info", json_string(e->info));
	if ((st = stats_json(e->stats)))
		json_object_set_new(j, "stats", st);
	return j;
}

int
maro_view_entry_json(struct maro_buf *out, const struct maro_entry *e, const char *event)
{
	return json_line(out, entry_json(e, event));
}

int
maro_view_event(struct maro_buf *out, const struct maro_entry *e, const char *event, int json)
{
	if (json)
		return maro_view_entry_json(out, e, event);
	if (!strcmp(event, "join"))
		return maro_buf_printf(out, "join %s %s %s %s\n", e->name, e->type, e->host, e->endpoint);
	return maro_buf_printf(out, "leave %s\n", e->name);
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

/* A start, local time: "14:03:07" today, "11-24 14:03" another day. */
static void
start_text(char *buf, size_t len, int64_t secs)
{
	time_t t = (time_t)secs, now = time(NULL);
	struct tm a, b;

	if (!localtime_r(&t, &a) || !localtime_r(&now, &b))
		snprintf(buf, len, "-");
	else if (a.tm_year == b.tm_year && a.tm_yday == b.tm_yday)
		strftime(buf, len, "%H:%M:%S", &a);
	else
		strftime(buf, len, "%m-%d %H:%M", &a);
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

int
maro_view_table(struct maro_buf *out, const struct maro_entry *v, size_t n, int header,
    int verbose)
{
	int wn = WIDEST(v, n, name, "NAME"), wt = WIDEST(v, n, type, "TYPE");
	int wh = WIDEST(v, n, host, "HOST"), we = WIDEST(v, n, endpoint, "ENDPOINT");
	char age[32], mem[32];
	size_t i;
	int rc = 0;

	if (header) {
		rc |= maro_buf_printf(out, "%-*s  %-*s  %-*s  %-*s  %7s  %6s", wn, "NAME", wt, "TYPE",
		    wh, "HOST", we, "ENDPOINT", "PID", "AGE");
		if (verbose)
			rc |= maro_buf_printf(out, "  %4s  %6s  %6s  %s", "NCPU", "LOAD1", "MEM", "INFO");
		rc |= maro_buf_puts(out, "\n");
	}
	for (i = 0; i < n; i++) {
		age_text(age, sizeof age, v[i].heartbeat_age_ms);
		rc |= maro_buf_printf(out, "%-*s  %-*s  %-*s  %-*s  %7ld  %6s", wn, v[i].name, wt,
		    v[i].type, wh, v[i].host, we, v[i].endpoint, (long)v[i].pid, age);
		if (verbose) {
			mem_text(mem, sizeof mem, v[i].mem_used_kb);
			rc |= maro_buf_printf(out, "  %4d  %6.2f  %6s%s%s", v[i].ncpu, v[i].load1, mem,
			    v[i].info[0] ? "  " : "", v[i].info);
		}
		rc |= maro_buf_puts(out, "\n");
	}
	return rc ? -1 : 0;
}

long
maro_view_info_count(const char *info, const char *key)
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

/*
 * A listing of maro_registry_list_jobs: its members, the entries before
 * its first private one (the private ones sort last), and its jobs, the
 * entries of either kind whose job can be read.
 */
struct jobrow {
	const struct maro_entry *e;
	struct maro_stats_job j;
};

static size_t
members_of(const struct maro_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n && v[i].name[0] != '~'; i++)
		;
	return i;
}

/* A job's name: its master's entry's, without the '~' of a private one. */
static const char *
job_name(const struct maro_entry *e)
{
	return e->name + (e->name[0] == '~');
}

struct hoststat {
	const struct maro_entry *latest;	/* the freshest heartbeat says the host's load */
	size_t members;
};

struct typestat {
	const char *type;
	size_t members;
	size_t publish;			/* members that publish stats */
	int flight;			/* one of them has tasks in flight */
	struct maro_stats_view sum;	/* their stats added up (counts and rates) */
};

/* The summary's figures, gathered once for both of its forms. */
struct verstat {
	const char *version;
	size_t members;
};

struct summary {
	struct hoststat *hs;
	struct typestat *ts;
	struct maro_stats_view *sv;	/* each entry's stats, read */
	size_t nh, nt, cpus, npools, publish;
	struct jobrow *jobs;		/* the jobs, in listing order */
	size_t njobs;
	struct verstat *vs;		/* the members' versions, in order of first sight */
	size_t nv, nminor;		/* how many versions; how many MAJOR.MINOR */
};

/* The figures of the stats tables: their keys, as columns. */
static const enum maro_stats_key shown[] = {
	MARO_STATS_IN, MARO_STATS_OUT, MARO_STATS_DONE, MARO_STATS_FAILED, MARO_STATS_FLIGHT,
	MARO_STATS_RDONE, MARO_STATS_RIN, MARO_STATS_ROUT,
};
#define NSHOWN (sizeof shown / sizeof shown[0])

static void
add_stats(struct typestat *t, const struct maro_stats_view *v)
{
	size_t i;

	t->publish++;
	t->flight |= (v->have >> MARO_STATS_FLIGHT) & 1;
	for (i = 0; i < NSHOWN; i++) {
		enum maro_stats_key k = shown[i];

		if (k < MARO_STATS_NINTS)
			t->sum.n[k] += v->have & 1u << k ? v->n[k] : 0;
		else
			t->sum.rate[k - MARO_STATS_NINTS] += maro_stats_value(v, k);
		t->sum.have |= 1u << k;
	}
	if (!t->flight)
		t->sum.have &= ~(1u << MARO_STATS_FLIGHT);
}

static int
by_type(const void *a, const void *b)
{
	return strcmp(((const struct typestat *)a)->type, ((const struct typestat *)b)->type);
}

static void
summary_free(struct summary *s)
{
	free(s->vs);
	free(s->hs);
	free(s->ts);
	free(s->sv);
	free(s->jobs);
}

/* A version's MAJOR.MINOR: the length of its text up to the second dot. */
static size_t
minor_len(const char *v)
{
	const char *dot = strchr(v, '.');

	dot = dot ? strchr(dot + 1, '.') : NULL;
	return dot ? (size_t)(dot - v) : strlen(v);
}

/* One member's version into the summary's counts ("" is not known, not counted). */
static void
count_version(struct summary *s, const char *ver)
{
	size_t k, m;

	if (!*ver)
		return;
	for (k = 0; k < s->nv && strcmp(s->vs[k].version, ver); k++)
		;
	if (k == s->nv) {
		for (m = 0; m < s->nv; m++)
			if (minor_len(s->vs[m].version) == minor_len(ver) &&
			    !strncmp(s->vs[m].version, ver, minor_len(ver)))
				break;
		s->nminor += m == s->nv;
		s->vs[s->nv++].version = ver;
	}
	s->vs[k].members++;
}

/*
 * The figures of the listing v[0..n): of its members, the first *n (set
 * to their number), and of its jobs, all of it.
 */
static int
summarize(struct summary *s, const struct maro_entry *v, size_t *nv)
{
	size_t i, k, n = members_of(v, *nv);

	memset(s, 0, sizeof *s);
	s->hs = calloc(n + 1, sizeof *s->hs);
	s->ts = calloc(n + 1, sizeof *s->ts);
	s->sv = calloc(n + 1, sizeof *s->sv);
	s->jobs = calloc(*nv + 1, sizeof *s->jobs);
	s->vs = calloc(n + 1, sizeof *s->vs);
	if (!s->hs || !s->ts || !s->sv || !s->jobs || !s->vs) {
		summary_free(s);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < *nv; i++)
		if (v[i].job[0] && maro_stats_job_parse(v[i].job, &s->jobs[s->njobs].j)) {
			s->jobs[s->njobs].e = &v[i];
			s->njobs++;
		}
	*nv = n;
	for (i = 0; i < n; i++) {
		for (k = 0; k < s->nh && strcmp(s->hs[k].latest->host, v[i].host); k++)
			;
		if (k == s->nh)
			s->hs[s->nh++].latest = &v[i];
		else if (v[i].heartbeat_age_ms < s->hs[k].latest->heartbeat_age_ms)
			s->hs[k].latest = &v[i];
		s->hs[k].members++;
		for (k = 0; k < s->nt && strcmp(s->ts[k].type, v[i].type); k++)
			;
		if (k == s->nt)
			s->ts[s->nt++].type = v[i].type;
		s->ts[k].members++;
		s->npools += !strcmp(v[i].type, "pool");
		count_version(s, v[i].version);
		if (maro_stats_parse(v[i].stats, &s->sv[i]) > 0) {
			add_stats(&s->ts[k], &s->sv[i]);
			s->publish++;
		}
	}
	qsort(s->ts, s->nt, sizeof *s->ts, by_type);
	for (k = 0; k < s->nh; k++)
		s->cpus += (size_t)(s->hs[k].latest->ncpu > 0 ? s->hs[k].latest->ncpu : 0);
	return 0;
}

/* The jobs, as the summary's "jobs": figures that are not known yet are null. */
static json_t *
jobs_json(const struct summary *s)
{
	json_t *ja = json_array();
	size_t k;

	for (k = 0; ja && k < s->njobs; k++) {
		const struct maro_entry *e = s->jobs[k].e;
		const struct maro_stats_job *jb = &s->jobs[k].j;
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(job_name(e)));
		json_object_set_new(o, "host", json_string(e->host));
		json_object_set_new(o, "pid", json_integer(e->pid));
		json_object_set_new(o, "start", json_integer((json_int_t)jb->start));
		json_object_set_new(o, "total",
		    jb->total >= 0 ? json_integer((json_int_t)jb->total) : json_null());
		json_object_set_new(o, "read", json_integer((json_int_t)jb->read));
		json_object_set_new(o, "done", json_integer((json_int_t)jb->done));
		json_object_set_new(o, "failed", json_integer((json_int_t)jb->failed));
		json_object_set_new(o, "gaveup", json_integer((json_int_t)jb->gaveup));
		json_object_set_new(o, "open", json_integer((json_int_t)jb->open));
		json_object_set_new(o, "rate", json_real(jb->rate));
		json_object_set_new(o, "eta",
		    jb->eta >= 0 ? json_integer((json_int_t)jb->eta) : json_null());
		json_object_set_new(o, "heartbeat_age_ms", json_integer(e->heartbeat_age_ms));
		json_array_append_new(ja, o);
	}
	return ja;
}

static json_t *
status_json(const struct summary *s, const struct maro_entry *v, size_t n)
{
	json_t *j = json_object(), *ja;
	size_t i, k;

	if (!j)
		return NULL;
	json_object_set_new(j, "jobs", jobs_json(s));
	json_object_set_new(j, "hosts", json_integer((json_int_t)s->nh));
	json_object_set_new(j, "members", json_integer((json_int_t)n));
	json_object_set_new(j, "cpus", json_integer((json_int_t)s->cpus));
	ja = json_object();
	for (k = 0; k < s->nv; k++)
		json_object_set_new(ja, s->vs[k].version, json_integer((json_int_t)s->vs[k].members));
	json_object_set_new(j, "versions", ja);
	ja = json_array();
	for (k = 0; k < s->nh; k++) {
		const struct maro_entry *e = s->hs[k].latest;
		json_t *h = json_object();

		json_object_set_new(h, "host", json_string(e->host));
		json_object_set_new(h, "ncpu", json_integer(e->ncpu));
		json_object_set_new(h, "load1", json_real(e->load1));
		json_object_set_new(h, "mem_used_kb", json_integer((json_int_t)e->mem_used_kb));
		json_object_set_new(h, "members", json_integer((json_int_t)s->hs[k].members));
		json_array_append_new(ja, h);
	}
	json_object_set_new(j, "host_status", ja);
	ja = json_object();
	for (k = 0; k < s->nt; k++)
		json_object_set_new(ja, s->ts[k].type, json_integer((json_int_t)s->ts[k].members));
	json_object_set_new(j, "types", ja);
	ja = json_array();
	for (i = 0; i < n; i++) {
		json_t *p;

		if (strcmp(v[i].type, "pool"))
			continue;
		p = json_object();
		json_object_set_new(p, "name", json_string(v[i].name));
		json_object_set_new(p, "host", json_string(v[i].host));
		json_object_set_new(p, "jobs", json_integer(maro_view_info_count(v[i].info, "jobs")));
		json_object_set_new(p, "running", json_integer(maro_view_info_count(v[i].info, "running")));
		json_object_set_new(p, "restarts",
		    json_integer(maro_view_info_count(v[i].info, "restarts")));
		json_object_set_new(p, "gaveup", json_integer(maro_view_info_count(v[i].info, "gaveup")));
		json_array_append_new(ja, p);
	}
	json_object_set_new(j, "pools", ja);
	ja = json_object();
	for (k = 0; k < s->nt; k++) {
		json_t *t;
		size_t f;

		if (!s->ts[k].publish)
			continue;
		t = json_object();
		json_object_set_new(t, "publishers", json_integer((json_int_t)s->ts[k].publish));
		for (f = 0; f < NSHOWN; f++) {
			enum maro_stats_key key = shown[f];

			if (!(s->ts[k].sum.have & 1u << key))
				continue;
			json_object_set_new(t, maro_stats_key_name(key), key < MARO_STATS_NINTS ?
			    json_integer((json_int_t)s->ts[k].sum.n[key]) :
			    json_real(s->ts[k].sum.rate[key - MARO_STATS_NINTS]));
		}
		json_object_set_new(ja, s->ts[k].type, t);
	}
	json_object_set_new(j, "type_stats", ja);
	ja = json_array();
	for (i = 0; i < n; i++) {
		json_t *c, *st;

		if (!s->sv[i].have || !(st = stats_json(v[i].stats)))
			continue;
		c = json_object();
		json_object_set_new(c, "name", json_string(v[i].name));
		json_object_set_new(c, "type", json_string(v[i].type));
		json_object_set_new(c, "host", json_string(v[i].host));
		json_object_set_new(c, "heartbeat_age_ms", json_integer(v[i].heartbeat_age_ms));
		json_object_set_new(c, "stats", st);
		json_array_append_new(ja, c);
	}
	json_object_set_new(j, "components", ja);
	return j;
}

/* One row of a stats table: title, then the figures of v ("-" for those absent). */
static int
stats_row(struct maro_buf *out, int w, const char *title, const struct maro_stats_view *v)
{
	static const int width[NSHOWN] = { 10, 10, 10, 7, 7, 9, 9, 9 };
	size_t f;
	int rc = maro_buf_printf(out, "%-*s", w, title);

	for (f = 0; f < NSHOWN; f++) {
		enum maro_stats_key k = shown[f];

		if (k == MARO_STATS_FLIGHT && !(v->have & 1u << k))
			rc |= maro_buf_printf(out, "  %*s", width[f], "-");
		else if (k < MARO_STATS_NINTS)
			rc |= maro_buf_printf(out, "  %*llu", width[f], (unsigned long long)
			    (v->have & 1u << k ? v->n[k] : 0));
		else
			rc |= maro_buf_printf(out, "  %*.1f", width[f], maro_stats_value(v, k));
	}
	return rc | maro_buf_puts(out, "\n");
}

/*
 * What the members that publish stats did: their sums per type, then one
 * row each.
 */
static int
stats_text(struct maro_buf *out, const struct summary *s, const struct maro_entry *v, size_t n)
{
	size_t i, k;
	int w = 24, rc = 0;

	if (!s->publish)
		return 0;
	for (i = 0; i < n; i++)
		if (s->sv[i].have && (int)strlen(v[i].name) > w)
			w = (int)strlen(v[i].name);
	for (k = 0; k < 2; k++) {
		rc |= maro_buf_printf(out, "\n%-*s  %10s  %10s  %10s  %7s  %7s  %9s  %9s  %9s\n", w,
		    k ? "NAME" : "TYPE", "IN", "OUT", "DONE", "FAILED", "FLIGHT", "DONE/s", "IN/s",
		    "OUT/s");
		if (k == 0) {
			for (i = 0; i < s->nt; i++)
				if (s->ts[i].publish)
					rc |= stats_row(out, w, s->ts[i].type, &s->ts[i].sum);
		} else {
			for (i = 0; i < n; i++)
				if (s->sv[i].have)
					rc |= stats_row(out, w, v[i].name, &s->sv[i]);
		}
	}
	return rc;
}

/* The pools' table, when there are pools. */
static int
pools_text(struct maro_buf *out, const struct summary *s, const struct maro_entry *v, size_t n)
{
	size_t i;
	int rc = 0;

	if (!s->npools)
		return 0;
	rc |= maro_buf_printf(out, "\n%-24s  %-16s  %5s  %7s  %8s  %6s\n", "POOL", "HOST", "JOBS",
	    "RUNNING", "RESTARTS", "GAVEUP");
	for (i = 0; i < n; i++)
		if (!strcmp(v[i].type, "pool"))
			rc |= maro_buf_printf(out, "%-24s  %-16s  %5ld  %7ld  %8ld  %6ld\n", v[i].name,
			    v[i].host, maro_view_info_count(v[i].info, "jobs"),
			    maro_view_info_count(v[i].info, "running"),
			    maro_view_info_count(v[i].info, "restarts"),
			    maro_view_info_count(v[i].info, "gaveup"));
	return rc ? -1 : 0;
}

/*
 * The jobs' table, when there are jobs: TOTAL is the tasks read and a '+'
 * until the input has ended, DONE/s the tasks finished a second.
 */
static int
jobs_text(struct maro_buf *out, const struct summary *s)
{
	size_t k;
	int w = 24, wh = 16, rc = 0;

	if (!s->njobs)
		return 0;
	for (k = 0; k < s->njobs; k++) {
		if ((int)strlen(job_name(s->jobs[k].e)) > w)
			w = (int)strlen(job_name(s->jobs[k].e));
		if ((int)strlen(s->jobs[k].e->host) > wh)
			wh = (int)strlen(s->jobs[k].e->host);
	}
	rc |= maro_buf_printf(out, "%-*s  %-*s  %11s  %10s  %10s  %7s  %7s  %7s  %9s  %7s  %6s\n", w,
	    "JOB", wh, "HOST", "STARTED", "TOTAL", "DONE", "FAILED", "GAVEUP", "OPEN", "DONE/s", "ETA",
	    "AGE");
	for (k = 0; k < s->njobs; k++) {
		const struct maro_stats_job *jb = &s->jobs[k].j;
		char total[32], start[32], eta[32] = "-", age[32];

		if (jb->total >= 0)
			snprintf(total, sizeof total, "%lld", (long long)jb->total);
		else
			snprintf(total, sizeof total, "%llu+", (unsigned long long)jb->read);
		start_text(start, sizeof start, jb->start);
		if (jb->eta >= 0)
			maro_duration_text(eta, sizeof eta, jb->eta);
		age_text(age, sizeof age, s->jobs[k].e->heartbeat_age_ms);
		rc |= maro_buf_printf(out, "%-*s  %-*s  %11s  %10s  %10llu  %7llu  %7llu  %7llu  %9.1f  %7s  %6s\n",
		    w, job_name(s->jobs[k].e), wh, s->jobs[k].e->host, start, total,
		    (unsigned long long)jb->done, (unsigned long long)jb->failed,
		    (unsigned long long)jb->gaveup, (unsigned long long)jb->open, jb->rate, eta, age);
	}
	return rc | maro_buf_puts(out, "\n");
}

static int
status_text(struct maro_buf *out, const struct summary *s, const struct maro_entry *v, size_t n)
{
	size_t k;
	int rc = 0;

	rc |= jobs_text(out, s);
	rc |= maro_buf_printf(out, "hosts %zu, members %zu, CPUs %zu\n", s->nh, n, s->cpus);
	/* members that cannot talk to each other: said, with how many run each */
	if (s->nminor > 1) {
		rc |= maro_buf_puts(out, "versions");
		for (k = 0; k < s->nv; k++)
			rc |= maro_buf_printf(out, "%s %s (%zu)", k ? "," : "", s->vs[k].version,
			    s->vs[k].members);
		rc |= maro_buf_puts(out, ": members of another MAJOR.MINOR cannot talk to each other\n");
	}
	rc |= maro_buf_puts(out, "\n");
	rc |= maro_buf_printf(out, "%-24s  %4s  %6s  %7s  %7s\n", "HOST", "NCPU", "LOAD1", "MEM",
	    "MEMBERS");
	for (k = 0; k < s->nh; k++) {
		const struct maro_entry *e = s->hs[k].latest;
		char mem[32];

		mem_text(mem, sizeof mem, e->mem_used_kb);
		rc |= maro_buf_printf(out, "%-24s  %4d  %6.2f  %7s  %7zu\n", e->host, e->ncpu, e->load1,
		    mem, s->hs[k].members);
	}
	rc |= maro_buf_printf(out, "\n%-24s  %7s\n", "TYPE", "MEMBERS");
	for (k = 0; k < s->nt; k++)
		rc |= maro_buf_printf(out, "%-24s  %7zu\n", s->ts[k].type, s->ts[k].members);
	rc |= pools_text(out, s, v, n);
	rc |= stats_text(out, s, v, n);
	return rc ? -1 : 0;
}

int
maro_view_status(struct maro_buf *out, const struct maro_entry *v, size_t n, int json)
{
	struct summary s;
	int rc;

	if (summarize(&s, v, &n) < 0)
		return -1;
	rc = json ? json_line(out, status_json(&s, v, n)) : status_text(out, &s, v, n);
	summary_free(&s);
	return rc;
}

/*
 * The Prometheus exposition text (text format 0.0.4): each family's HELP
 * and TYPE, then its samples, all of one family together.
 */

/* A label value with the three characters the format escapes. */
static int
prom_label(struct maro_buf *out, const char *key, const char *val, int first)
{
	int rc = maro_buf_printf(out, "%s%s=\"", first ? "" : ",", key);

	for (; *val && rc == 0; val++) {
		if (*val == '\\')
			rc = maro_buf_puts(out, "\\\\");
		else if (*val == '"')
			rc = maro_buf_puts(out, "\\\"");
		else if (*val == '\n')
			rc = maro_buf_puts(out, "\\n");
		else
			rc = maro_buf_append(out, val, 1);
	}
	return rc | maro_buf_puts(out, "\"");
}

static int
prom_family(struct maro_buf *out, const char *name, const char *type, const char *help)
{
	return maro_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * One sample: name{group="G"[,name=...,type=...,host=...]} value.  e NULL:
 * the group's label only; with e, host alone when hostonly.
 */
static int
prom_sample(struct maro_buf *out, const char *name, const char *group, const struct maro_entry *e,
    int hostonly, const char *extra_key, const char *extra, double value)
{
	int rc = maro_buf_printf(out, "%s{", name);

	rc |= prom_label(out, "group", group, 1);
	if (e && !hostonly) {
		rc |= prom_label(out, "name", e->name, 0);
		rc |= prom_label(out, "type", e->type, 0);
	}
	if (e)
		rc |= prom_label(out, "host", e->host, 0);
	if (extra_key)
		rc |= prom_label(out, extra_key, extra, 0);
	return rc | maro_buf_printf(out, "} %.15g\n", value);
}

/* The families read from the members' stats, as maro-peers(1) documents them. */
static const struct {
	enum maro_stats_key key;
	const char *name, *type, *help;
} prom_stats[] = {
	{ MARO_STATS_IN, "maro_messages_in_total", "counter",
	    "Messages the member's inbox handed on (duplicates not counted)." },
	{ MARO_STATS_OUT, "maro_messages_out_total", "counter",
	    "Messages the member sent that their receivers acknowledged." },
	{ MARO_STATS_BIN, "maro_bytes_in_total", "counter", "Bytes of the messages counted in." },
	{ MARO_STATS_BOUT, "maro_bytes_out_total", "counter", "Bytes of the messages counted out." },
	{ MARO_STATS_RESENT, "maro_messages_resent_total", "counter",
	    "Messages the member sent again, unacknowledged at first." },
	{ MARO_STATS_DONE, "maro_tasks_done_total", "counter", "Tasks the member completed." },
	{ MARO_STATS_FAILED, "maro_tasks_failed_total", "counter", "Tasks that failed." },
	{ MARO_STATS_FLIGHT, "maro_tasks_in_flight", "gauge",
	    "Tasks sent or taken and not yet answered." },
	{ MARO_STATS_WIN_USED, "maro_window_used", "gauge",
	    "Messages in the member's send window, unacknowledged." },
	{ MARO_STATS_WIN, "maro_window_size", "gauge", "The size of the member's send window." },
};

static int
prom_members(struct maro_buf *out, const struct summary *s, const struct maro_entry *v, size_t n,
    const char *group)
{
	size_t i, f;
	int rc = 0;

	rc |= prom_family(out, "maro_component_up", "gauge",
	    "1 for each live member of the group (its heartbeat is fresh).");
	for (i = 0; i < n; i++)
		rc |= prom_sample(out, "maro_component_up", group, &v[i], 0, NULL, NULL, 1);
	rc |= prom_family(out, "maro_component_heartbeat_age_seconds", "gauge",
	    "Seconds since the member's last heartbeat.");
	for (i = 0; i < n; i++)
		rc |= prom_sample(out, "maro_component_heartbeat_age_seconds", group, &v[i], 0, NULL,
		    NULL, (double)v[i].heartbeat_age_ms / 1000);
	rc |= prom_family(out, "maro_component_start_time_seconds", "gauge",
	    "When the member registered, in seconds since the epoch.");
	for (i = 0; i < n; i++)
		rc |= prom_sample(out, "maro_component_start_time_seconds", group, &v[i], 0, NULL,
		    NULL, (double)v[i].started_ms / 1000);
	for (f = 0; f < sizeof prom_stats / sizeof prom_stats[0]; f++) {
		enum maro_stats_key k = prom_stats[f].key;
		int head = 0;

		for (i = 0; i < n; i++) {
			if (!(s->sv[i].have & 1u << k))
				continue;
			if (!head++)
				rc |= prom_family(out, prom_stats[f].name, prom_stats[f].type,
				    prom_stats[f].help);
			rc |= prom_sample(out, prom_stats[f].name, group, &v[i], 0, NULL, NULL,
			    (double)s->sv[i].n[k]);
		}
	}
	return rc;
}

/* One sample of job r: name{group="G",name="JOB",host="H"[,state="S"]} value. */
static int
prom_job(struct maro_buf *out, const char *name, const char *group, const struct jobrow *r,
    const char *state, double value)
{
	int rc = maro_buf_printf(out, "%s{", name);

	rc |= prom_label(out, "group", group, 1);
	rc |= prom_label(out, "name", job_name(r->e), 0);
	rc |= prom_label(out, "host", r->e->host, 0);
	if (state)
		rc |= prom_label(out, "state", state, 0);
	return rc | maro_buf_printf(out, "} %.15g\n", value);
}

/*
 * The jobs, first: their tasks by state (done, gaveup, open and waiting
 * add up to those read), the attempts that failed, the input's tasks and
 * the time left when they are known, and the start.  Not a label "job":
 * Prometheus gives that name to the scrape job's, and would rename ours.
 */
static int
prom_jobs(struct maro_buf *out, const struct summary *s, const char *group)
{
	size_t k;
	int rc = 0, head = 0;

	if (!s->njobs)
		return 0;
	rc |= prom_family(out, "maro_job_tasks", "gauge",
	    "The job's tasks read so far, by state: done (answered), gaveup (given up), "
	    "open (sent, not finished), waiting (not yet sent).");
	for (k = 0; k < s->njobs; k++) {
		const struct maro_stats_job *jb = &s->jobs[k].j;
		uint64_t sent = jb->done + jb->gaveup + jb->open;

		rc |= prom_job(out, "maro_job_tasks", group, &s->jobs[k], "done", (double)jb->done);
		rc |= prom_job(out, "maro_job_tasks", group, &s->jobs[k], "gaveup", (double)jb->gaveup);
		rc |= prom_job(out, "maro_job_tasks", group, &s->jobs[k], "open", (double)jb->open);
		rc |= prom_job(out, "maro_job_tasks", group, &s->jobs[k], "waiting",
		    jb->read > sent ? (double)(jb->read - sent) : 0);
	}
	rc |= prom_family(out, "maro_job_attempts_failed_total", "counter",
	    "Attempts of the job's tasks that failed (a failure reply, a timeout, a worker gone).");
	for (k = 0; k < s->njobs; k++)
		rc |= prom_job(out, "maro_job_attempts_failed_total", group, &s->jobs[k], NULL,
		    (double)s->jobs[k].j.failed);
	for (k = 0; k < s->njobs; k++) {
		if (s->jobs[k].j.total < 0)
			continue;
		if (!head++)
			rc |= prom_family(out, "maro_job_input_tasks", "gauge",
			    "The tasks of the job's whole input, once it has ended.");
		rc |= prom_job(out, "maro_job_input_tasks", group, &s->jobs[k], NULL,
		    (double)s->jobs[k].j.total);
	}
	rc |= prom_family(out, "maro_job_start_time_seconds", "gauge",
	    "When the job began, in seconds since the epoch.");
	for (k = 0; k < s->njobs; k++)
		rc |= prom_job(out, "maro_job_start_time_seconds", group, &s->jobs[k], NULL,
		    (double)s->jobs[k].j.start);
	head = 0;
	for (k = 0; k < s->njobs; k++) {
		if (s->jobs[k].j.eta < 0)
			continue;
		if (!head++)
			rc |= prom_family(out, "maro_job_eta_seconds", "gauge",
			    "The time the job has left at its rate so far, once its input has ended.");
		rc |= prom_job(out, "maro_job_eta_seconds", group, &s->jobs[k], NULL,
		    (double)s->jobs[k].j.eta);
	}
	return rc;
}

static int
prom_hosts(struct maro_buf *out, const struct summary *s, const char *group)
{
	static const char *const name[] = { "maro_host_cpus", "maro_host_load1",
		"maro_host_memory_used_bytes", "maro_host_members" };
	static const char *const help[] = { "The host's CPUs.", "The host's 1-minute load average.",
		"Memory in use on the host, in bytes.", "Members of the group on the host." };
	size_t f, k;
	int rc = 0;

	for (f = 0; f < 4; f++) {
		rc |= prom_family(out, name[f], "gauge", help[f]);
		for (k = 0; k < s->nh; k++) {
			const struct maro_entry *e = s->hs[k].latest;
			double x = f == 0 ? e->ncpu : f == 1 ? e->load1 : f == 2 ?
			    (double)e->mem_used_kb * 1024 : (double)s->hs[k].members;

			rc |= prom_sample(out, name[f], group, e, 1, NULL, NULL, x);
		}
	}
	rc |= prom_family(out, "maro_members", "gauge", "Live members of the group, per type.");
	for (k = 0; k < s->nt; k++)
		rc |= prom_sample(out, "maro_members", group, NULL, 0, "type", s->ts[k].type,
		    (double)s->ts[k].members);
	return rc;
}

static int
prom_pools(struct maro_buf *out, const struct summary *s, const struct maro_entry *v, size_t n,
    const char *group)
{
	static const char *const key[] = { "jobs", "running", "restarts", "gaveup" };
	static const char *const name[] = { "maro_pool_jobs", "maro_pool_jobs_running",
		"maro_pool_restarts_total", "maro_pool_jobs_gaveup_total" };
	static const char *const type[] = { "gauge", "gauge", "counter", "counter" };
	static const char *const help[] = { "The jobs a maro-pool keeps alive.",
		"The pool's jobs running now.", "Jobs the pool started again after they ended.",
		"Jobs the pool gave up restarting." };
	size_t f, i;
	int rc = 0;

	if (!s->npools)
		return 0;
	for (f = 0; f < 4; f++) {
		int head = 0;

		for (i = 0; i < n; i++) {
			long x;

			if (strcmp(v[i].type, "pool") || (x = maro_view_info_count(v[i].info, key[f])) < 0)
				continue;
			if (!head++)
				rc |= prom_family(out, name[f], type[f], help[f]);
			rc |= prom_sample(out, name[f], group, &v[i], 0, NULL, NULL, (double)x);
		}
	}
	return rc;
}

int
maro_view_prometheus(struct maro_buf *out, const struct maro_entry *v, ssize_t n, const char *group)
{
	struct summary s;
	size_t nv;
	int rc = 0;

	rc |= prom_family(out, "maro_registry_up", "gauge",
	    "1 when the group's registry answered the last listing, 0 when it did not.");
	rc |= prom_sample(out, "maro_registry_up", group, NULL, 0, NULL, NULL, n >= 0);
	if (n < 0)
		return rc ? -1 : 0;
	nv = (size_t)n;
	if (summarize(&s, v, &nv) < 0)
		return -1;
	rc |= prom_jobs(out, &s, group);
	rc |= prom_members(out, &s, v, nv, group);
	rc |= prom_hosts(out, &s, group);
	rc |= prom_pools(out, &s, v, nv, group);
	summary_free(&s);
	return rc ? -1 : 0;
}

int
maro_view_same(const struct maro_entry *a, const struct maro_entry *b)
{
	return a->pid == b->pid && a->started_ms == b->started_ms && !strcmp(a->host, b->host) &&
	    !strcmp(a->endpoint, b->endpoint);
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

int
maro_view_diff(const struct maro_entry *old, size_t nold, const struct maro_entry *cur,
    size_t ncur, int (*fn)(void *arg, const struct maro_entry *e, const char *event), void *arg)
{
	size_t i;
	int rc;

	for (i = 0; i < nold; i++) {
		const struct maro_entry *e = find(cur, ncur, old[i].name);

		if ((!e || !maro_view_same(e, &old[i])) && (rc = fn(arg, &old[i], "leave")))
			return rc;
	}
	for (i = 0; i < ncur; i++) {
		const struct maro_entry *e = find(old, nold, cur[i].name);

		if ((!e || !maro_view_same(e, &cur[i])) && (rc = fn(arg, &cur[i], "join")))
			return rc;
	}
	return 0;
}
