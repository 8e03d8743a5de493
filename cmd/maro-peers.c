/*
 * maro-peers: the live members of a group; wait until the expected peers
 * are there; watch members join and leave; the cluster's summary, as text,
 * JSON or Prometheus metrics, or served over HTTP with a live page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "maro.h"
#include "monitor.h"

/* how long one request of --serve may wait on the registry */
#define SCRAPE_BUDGET_US 1000000

enum { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS };

static const char *const synopsis[] = { "", NULL };

/* What the command line gave: the bound rows of opts[] write here. */
static struct args {
	struct out *o;
	int watching, summary;
	const char *serve;
} args;

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "only the peers whose name starts with PREFIX", 0),
	MARO_OPT_OWN("format", 'f', "text|json|prometheus", "text (the default), json, or with --status "
	    "prometheus", 'f'),
	MARO_OPT_FLAG("status", 0, "the cluster's summary: its hosts, types, pools and counters",
	    &args.summary),
	MARO_OPT_STR("serve", 0, "ADDR", "serve the status page, /status.json and /metrics on [HOST:]PORT",
	    &args.serve),
	MARO_OPT_FLAG("watch", 0, "then write each join and leave as it happens", &args.watching),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "with -e: list nothing, only wait", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"List the live members of a group; wait for the expected ones; watch them come and go; "
	"the cluster's status, served over HTTP.",
	synopsis, opts, MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(EXPECT) | MARO_SH(TIMEOUT),
	0,
};

struct out {
	int json, quiet, fmt;
	struct maro_buf b;
};

/* Writes out what the views put in o->b: -1 when stdout is gone (maro_cli_close_stdout says why). */
static int
put(struct out *o, int rc)
{
	if (rc < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	rc = o->b.len && fwrite(o->b.p, 1, o->b.len, stdout) != o->b.len ? -1 : 0;
	maro_buf_reset(&o->b);
	return rc;
}

/*
 * An empty listing says why on stderr: a group no one ever joined (a typo?)
 * names the groups there are; the listing stays what it is, and the exit
 * status 0.
 */
static void
say_empty(struct maro_registry *r)
{
	char note[512];

	if (maro_cli_no_group(r, note, sizeof note) == 1)
		maro_warn("%s", note);
	else
		maro_warn("no live members in group '%s' in %s", maro_registry_group(r),
		    maro_registry_url(r));
}

static int
show(struct maro_registry *r, const char *prefix, struct out *o)
{
	struct maro_entry *v;
	ssize_t n = maro_registry_list(r, prefix, &v), i;
	int rc = 0;

	if (n < 0) {
		maro_warn("%s", maro_registry_error(r));
		return MARO_EXIT_UNAVAILABLE;
	}
	if (n == 0 && (!prefix || !*prefix))
		say_empty(r);
	if (!o->json)
		rc = maro_view_table(&o->b, v, (size_t)n, !o->quiet, maro_verbose);
	for (i = 0; o->json && i < n && rc == 0; i++)
		rc = maro_view_entry_json(&o->b, &v[i], NULL);
	put(o, rc);
	free(v);
	return 0;
}

static int
event(void *arg, const struct maro_entry *e, const char *what)
{
	struct out *o = arg;

	if (put(o, maro_view_event(&o->b, e, what, o->json)) < 0)
		return -1;
	return fflush(stdout) == EOF ? -1 : 0;
}

/*
 * Sleeps until `until` (0) or the deadline (1), whichever is first, in
 * slices of at most 100 ms; a signal ends it with its status.
 */
static int
rest(int64_t until, int64_t deadline)
{
	for (;;) {
		int64_t now = maro_now_us(), left = (until < deadline ? until : deadline) - now;
		struct timespec ts = { 0, 0 };

		if (maro_signal)
			return maro_signal_status();
		if (now >= until)
			return 0;
		if (now >= deadline)
			return 1;
		ts.tv_nsec = (long)(left > 100000 ? 100000 : left) * 1000;
		nanosleep(&ts, NULL);
	}
}

/*
 * --status: the summary once, or with --watch every second until -W or a
 * signal (the screen cleared first on a terminal; one JSON line each with -f json).
 */
static int
status_view(struct maro_registry *r, const char *group, const char *prefix, struct out *o,
    int watching, int64_t deadline)
{
	int tty = isatty(STDOUT_FILENO), failing = 0, st;

	for (;;) {
		struct maro_entry *v;
		ssize_t n = maro_registry_list_jobs(r, prefix, &v);

		if (n < 0 && o->fmt == FMT_PROMETHEUS) {
			/* the outage as a metric too, for a textfile collector */
			put(o, maro_view_prometheus(&o->b, NULL, -1, group));
			maro_warn("%s", maro_registry_error(r));
			return MARO_EXIT_UNAVAILABLE;
		}
		if (n < 0) {
			if (!watching) {
				maro_warn("%s", maro_registry_error(r));
				return MARO_EXIT_UNAVAILABLE;
			}
			if (!failing)
				maro_warn("%s (still watching)", maro_registry_error(r));
			failing = 1;
		} else {
			int rc = 0;

			failing = 0;
			if (watching && tty && !o->json)
				rc = maro_buf_puts(&o->b, "\033[H\033[2J");
			if (rc == 0 && o->fmt == FMT_PROMETHEUS)
				rc = maro_view_prometheus(&o->b, v, n, group);
			else if (rc == 0)
				rc = maro_view_status(&o->b, v, (size_t)n, o->json);
			if (n == 0 && !watching && (!prefix || !*prefix))
				say_empty(r);
			if (rc == 0 && watching && !tty && !o->json)
				rc = maro_buf_puts(&o->b, "\n");
			free(v);
			if (put(o, rc) < 0 || fflush(stdout) == EOF)
				return 0;	/* maro_cli_close_stdout says why, if it matters */
		}
		if (!watching)
			return 0;
		if ((st = rest(maro_now_us() + 1000000, deadline)))
			return st == 1 ? 0 : st;
	}
}

/*
 * Polls the registry and prints the difference with the last poll.  A
 * registry that fails meanwhile (a restarting Redis) is said once and
 * polled again; membership is compared only between good polls.
 */
static int
watch(struct maro_registry *r, const char *prefix, struct out *o, int64_t deadline)
{
	struct maro_entry *old = NULL, *cur;
	size_t nold = 0;
	ssize_t n;
	int failing = 0, status = 0;

	for (;;) {
		n = maro_registry_list(r, prefix, &cur);
		if (n < 0 && !failing) {
			maro_warn("%s (still watching)", maro_registry_error(r));
			failing = 1;
		}
		if (n >= 0) {
			if (failing)
				maro_warn("registry reachable again");
			failing = 0;
			status = maro_view_diff(old, nold, cur, (size_t)n, event, o);
			free(old);
			old = cur;
			nold = (size_t)n;
		}
		if (status < 0) {
			status = 0;	/* stdout is gone: maro_cli_close_stdout says why, if it matters */
			break;
		}
		/* the registry poll interval */
		if ((status = rest(maro_now_us() + 100000, deadline))) {
			status = status == 1 ? 0 : status;
			break;
		}
	}
	free(old);
	return status;
}

/*
 * --serve: answers HTTP requests (lib/monitor) until -W or a signal.  The
 * address listened on is said on stdout as a URL, once it listens.
 */
static int
serve(struct maro_registry **r, const char *url, const char *group, const char *prefix,
    const char *addr, int64_t deadline)
{
	struct maro_monitor m = { .r = *r, .url = url, .group = group, .prefix = prefix,
	    .budget_us = SCRAPE_BUDGET_US };
	struct maro_http *h;
	char errbuf[512];
	int status = 0;

	if (!(h = maro_http_open(addr, maro_monitor_answer, &m, errbuf, sizeof errbuf)))
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	maro_info("serving group '%s'", group);
	if (printf("http://%s/\n", maro_http_address(h)) < 0 || fflush(stdout) == EOF)
		status = -1;
	while (status == 0 && !(status = maro_tool_stop(deadline)))
		if (maro_http_run(h, 100) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "the HTTP server failed: %s", strerror(errno));
	maro_http_close(h);
	maro_monitor_free(&m);
	*r = m.r;	/* the monitor's, if it opened it */
	/* -W ends serving as it ends --watch: done, not timed out */
	return status == MARO_EXIT_TIMEOUT || status < 0 ? 0 : status;
}

/*
 * The registry, for --serve and -f prometheus, which go on (or say so in
 * their metrics) when it is unavailable: NULL then, with errbuf; dies only
 * for a bad URL or group (2) or a signal, as maro_tool_registry.
 */
static struct maro_registry *
open_registry(struct maro_common *cm, const char *group, int64_t *deadline, char *errbuf,
    size_t errlen)
{
	struct maro_registry *r;

	maro_cli_catch_signals();
	*deadline = cm->timeout >= 0 ? maro_now_us() + cm->timeout : INT64_MAX;
	maro_deadline = *deadline;
	r = maro_registry_open(cm->co.registry_url, group, NULL, errbuf, errlen);
	if (!r && maro_signal)
		exit(maro_signal_status());
	if (!r && errno == EINVAL)
		maro_die(MARO_EXIT_USAGE, "%s", errbuf);
	if (r)
		maro_info("group '%s' in the %s registry", group, maro_registry_kind(r));
	return r;
}

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;

	switch (key) {
	case 'f':
		if (strcmp(val, "text") && strcmp(val, "json") && strcmp(val, "prometheus"))
			maro_usage_error("unknown format '%s' (text, json or prometheus)", val);
		a->o->json = !strcmp(val, "json");
		a->o->fmt = a->o->json ? FMT_JSON : !strcmp(val, "text") ? FMT_TEXT : FMT_PROMETHEUS;
		break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct maro_registry *r;
	struct out o = { 0, 0, FMT_TEXT, { 0 } };
	const char *group;
	int64_t deadline;
	int status = 0;
	char errbuf[512];

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	args.o = &o;
	maro_opt_parse(&tool, &cm, argc, argv, own, &args);
	o.quiet = cm.quiet;
	if (o.fmt == FMT_PROMETHEUS && !args.summary)
		maro_usage_error("-f prometheus is a form of --status (give --status)");
	if (o.fmt == FMT_PROMETHEUS && args.watching)
		maro_usage_error("-f prometheus does not go with --watch (--serve serves the metrics)");
	if (args.serve && (args.watching || args.summary))
		maro_usage_error("--serve does not go with --watch or --status");
	group = cm.co.group ? cm.co.group : getenv("MARO_GROUP");
	if (!group || !*group)
		group = "maro";	/* as maro_tool_registry reads it */
	if ((args.serve || o.fmt == FMT_PROMETHEUS) && !cm.nexpect)
		r = open_registry(&cm, group, &deadline, errbuf, sizeof errbuf);
	else
		r = maro_tool_registry(&cm, &deadline);
	if (!r && !args.serve) {
		/* -f prometheus: the outage as a metric too, for a textfile collector */
		put(&o, maro_view_prometheus(&o.b, NULL, -1, group));
		maro_warn("%s", errbuf);
		status = MARO_EXIT_UNAVAILABLE;
	} else if (!r) {
		maro_warn("%s (serving all the same)", errbuf);
	}
	if (r && cm.nexpect)
		status = maro_cli_expect_wait(r, cm.expect, cm.nexpect, deadline);
	if (status == 0 && args.serve)
		status = serve(&r, cm.co.registry_url, group, cm.prefix, args.serve, deadline);
	else if (status == 0 && args.summary)
		status = status_view(r, group, cm.prefix, &o, args.watching, deadline);
	else if (status == 0 && args.watching)
		status = watch(r, cm.prefix, &o, deadline);
	else if (status == 0 && !(cm.nexpect && o.quiet))
		status = show(r, cm.prefix, &o);
	if (r)
		maro_registry_close(r);
	maro_buf_free(&o.b);
	maro_common_free(&cm);
	return maro_cli_close_stdout(status);
}
