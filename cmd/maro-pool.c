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
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "child.h"
#include "jobs.h"
#include "maro.h"
#include "scheduler.h"

enum { OPT_JOBS = 256, OPT_JOBS_OLD, OPT_MAX_RESTARTS, OPT_WINDOW, OPT_NAME };

static const char *const synopsis[] = { "-- COMMAND [ARG...]", "--config FILE [options]", NULL };

/* The run, at file scope so that the rows of opts[] can bind to it. */
static struct pool {
	struct maro_jobs js;
	int64_t grace_us;
	int quiet;
	char name[MARO_NAME_MAX + 1];
	struct maro_ctx *c;
	struct maro_inbox *ib;
	struct maro_outbox *ob;
	struct maro_buf enc;
	char info[MARO_INFO_MAX + 1];
} pool;

/* What else the command line gave. */
static struct args {
	const char *type, *cpus, *config;
	unsigned long njobs;
} args = { .type = "worker" };

static const struct maro_opt opts[] = {
	MARO_OPT_OWN("jobs", 'j', "N", "keep N jobs alive (default: one per CPU of --cpus, or online)",
	    OPT_JOBS),
	/* -n N, the old spelling: -n is a name in every other tool */
	{ .name = "old-n", .letter = 'n', .arg = "N", .key = OPT_JOBS_OLD, .flags = MARO_OPT_HIDDEN },
	MARO_OPT_STR("type", 'T', "TYPE", "the jobs' type: they are named TYPE.HOST.I (default worker)",
	    &args.type),
	MARO_OPT_STR("cpus", 0, "LIST", "pin job I to the I-th CPU of LIST (0-3,8)", &args.cpus),
	MARO_OPT_OWN("max-restarts", 0, "K", "give a job up after K restarts in the window (default 10)",
	    OPT_MAX_RESTARTS),
	MARO_OPT_OWN("restart-window", 0, "DUR", "the window of --max-restarts (default 1m)",
	    OPT_WINDOW),
	MARO_OPT_STR("config", 0, "FILE", "the types, counts, CPUs and commands, one line each",
	    &args.config),
	MARO_OPT_OWN("name", 0, "NAME", "the pool's own name (default pool.HOST)", OPT_NAME),
	MARO_OPT_DURATION("grace", 0, "DUR", "between SIGTERM and SIGKILL when stopping (default 5s)",
	    &pool.grace_us),
	MARO_OPT_SHARED_AS(MARO_SH_TIMEOUT, "stop the jobs after DUR", 0),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of jobs that end", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Keep N job processes alive on this host, each under its own name; restart the dead.",
	synopsis, opts, MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(KEYFILE),
	MARO_TOOL_OPERANDS | MARO_TOOL_STOP_AT_OPERAND,
};

static void
update_info(struct pool *pl)
{
	maro_jobs_info(&pl->js, pl->info, sizeof pl->info);
	if (pl->c)
		maro_registry_set_info(pl->c->reg, pl->name, pl->info);
}

/* Starts job j.  0, or -1 when its command cannot be run at all (said). */
static int
start(struct pool *pl, struct maro_job *j)
{
	char **env = maro_jobs_env(&pl->js, j);
	int rc, err;

	if (!env)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	rc = maro_jobs_start(j, env);
	err = errno;
	maro_child_env_free(env);
	if (rc < 0) {
		maro_warn("cannot run '%s' for %s: %s", j->t->argv[0], j->name, strerror(err));
		return -1;
	}
	maro_info("started %s (pid %ld%s%s)", j->name, (long)j->pid, j->cpulist[0] ? ", CPUs " : "",
	    j->cpulist);
	return 0;
}

/* Reaps every child that ended, and says what came of each job.  Returns how many jobs. */
static int
reap(struct pool *pl, int stopping)
{
	struct maro_job_end e;
	struct maro_job *j;
	int n = 0;

	while ((j = maro_jobs_reap(&pl->js, stopping, &e))) {
		n++;
		switch (e.outcome) {
		case MARO_JOB_STOPPED:
			maro_info("%s %s", j->name, e.how);
			break;
		case MARO_JOB_FINISHED:
			if (!pl->quiet)
				maro_warn("%s finished (status 0)", j->name);
			break;
		case MARO_JOB_GIVEN_UP:
			maro_warn("%s %s; giving up after %zu restarts in %.0fs", j->name, e.how, e.recent,
			    (double)pl->js.window_us / 1e6);
			break;
		case MARO_JOB_RESTARTING:
			if (!pl->quiet)
				maro_warn("%s %s; restart %lu in %.1fs", j->name, e.how, j->restarts,
				    (double)e.delay_us / 1e6);
			break;
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
	struct maro_job *j;

	for (j = pl->js.jobs; j < pl->js.jobs + pl->js.njobs; j++)
		if (maro_child_group_alive(j->pgid))
			kill(-j->pgid, SIGTERM);
	for (;;) {
		reap(pl, 1);
		if (!maro_jobs_left(&pl->js))
			break;
		if (maro_now_us() >= until) {
			for (j = pl->js.jobs; j < pl->js.jobs + pl->js.njobs; j++)
				if (maro_child_group_alive(j->pgid)) {
					maro_warn("%s did not stop in time: killing it", j->name);
					kill(-j->pgid, SIGKILL);
				}
			until = INT64_MAX;
		}
		usleep(10000);
	}
}

static void
own(void *arg, int key, char *val)
{
	struct pool *pl = arg;

	switch (key) {
	case OPT_JOBS_OLD:
		maro_warn("-n N is the old spelling of -j N (--jobs); it will mean a name, as in the "
		    "other tools");
		/* FALLTHROUGH */
	case OPT_JOBS:
		args.njobs = maro_cli_count("-j", val);
		if (args.njobs < 1 || args.njobs > MARO_JOBS_MAX)
			maro_usage_error("-j must be 1 to %d", MARO_JOBS_MAX);
		break;
	case OPT_MAX_RESTARTS:
		pl->js.max_restarts = (unsigned)maro_cli_count("--max-restarts", val);
		if (pl->js.max_restarts > MARO_JOBS_MAX_RESTARTS)
			maro_usage_error("--max-restarts is at most %d", MARO_JOBS_MAX_RESTARTS);
		break;
	case OPT_WINDOW:
		pl->js.window_us = maro_cli_duration("--restart-window", val);
		if (pl->js.window_us <= 0)
			maro_usage_error("--restart-window must be positive");
		break;
	case OPT_NAME:
		snprintf(pl->name, sizeof pl->name, "%s", val);
		if (strlen(val) > MARO_NAME_MAX || !maro_name_valid(val) || val[0] == '~')
			maro_usage_error("invalid --name (letters, digits, '.', '_', '-')");
		break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct pool *pl = &pool;
	struct maro_jobs *js = &pl->js;
	struct maro_buf err = { 0 };
	char errbuf[512], host[64];
	struct maro_loop l;
	int status = MARO_EXIT_OK, stopping = 0, finished = 0, chld_fd;
	size_t i;

	maro_cli_init(argv[0]);
	js->max_restarts = 10;
	js->window_us = 60000000;
	pl->grace_us = 5000000;
	maro_common_init(&cm);
	optind = maro_opt_parse(&tool, &cm, argc, argv, own, pl);
	pl->quiet = cm.quiet;
	if (args.config) {
		if (optind < argc || args.njobs || args.cpus || strcmp(args.type, "worker"))
			maro_usage_error("--config gives the types, counts, CPUs and commands: no -j, -T, "
			    "--cpus or COMMAND with it");
		if (maro_jobs_config_read(js, args.config, &err) < 0) {
			if (!err.len || maro_buf_cstr(&err) < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			maro_die(MARO_EXIT_USAGE, "%s", (char *)err.p);
		}
	} else {
		struct maro_jobtype *t = &js->types[js->ntypes++];

		if (optind >= argc)
			maro_usage_error("no command (maro-pool -j N -- COMMAND [ARG...])");
		if (!maro_jobs_type_valid(args.type))
			maro_usage_error("invalid type '%s' (letters, digits, '-')", args.type);
		snprintf(t->name, sizeof t->name, "%s", args.type);
		t->argv = argv + optind;
		if (args.cpus && maro_jobs_cpus_parse(args.cpus, &t->cpus, &t->ncpus, errbuf, sizeof errbuf) < 0) {
			if (errno == ENOMEM)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			maro_usage_error("%s", errbuf);
		}
		if (!args.njobs) {
			/* under a scheduler, the CPUs it gave the job on this node */
			long online = sysconf(_SC_NPROCESSORS_ONLN);
			unsigned long given = maro_scheduler_cpus();

			args.njobs = t->cpus ? t->ncpus : given ? given : online > 0 ? (unsigned long)online : 1;
		}
		t->count = args.njobs;
	}

	maro_jobs_host(host, sizeof host);
	if (maro_jobs_make(js, host) < 0) {
		if (errno == E2BIG)
			maro_usage_error("at most %d jobs in all", MARO_JOBS_MAX);
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	}
	if (!pl->name[0])
		snprintf(pl->name, sizeof pl->name, "pool.%s", host);
	js->pool = pl->name;
	js->group = cm.co.group ? cm.co.group : getenv("MARO_GROUP");
	if (!js->group || !*js->group)
		js->group = "maro";
	js->registry = cm.co.registry_url ? cm.co.registry_url : getenv("MARO_REGISTRY");
	if (!js->registry || !*js->registry)
		js->registry = maro_registry_default_url();
	js->keyfile = cm.co.keyfile ? cm.co.keyfile : getenv("MARO_KEYFILE");
	if (js->keyfile && !*js->keyfile)
		js->keyfile = NULL;

	maro_cli_catch_signals();
	if ((chld_fd = maro_jobs_watch()) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "pipe: %s", strerror(errno));
	pl->c = maro_tool_ctx(&cm);
	cm.name = pl->name;
	cm.type = "pool";
	pl->ib = maro_tool_inbox(pl->c, &cm, "another pool here? give this one --name");
	pl->ob = maro_outbox_new(pl->c, NULL, NULL, pl);
	if (!pl->ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");

	for (i = 0; i < js->njobs; i++)
		if (start(pl, &js->jobs[i]) < 0) {
			status = MARO_EXIT_USAGE;
			stop_all(pl);
			goto out;
		}
	update_info(pl);
	maro_info("%zu jobs started; pool '%s'", js->njobs, pl->name);

	maro_loop_init(&l, pl->c, cm.timeout >= 0 ? maro_now_us() + cm.timeout : INT64_MAX, 1);
	while (!finished) {
		struct maro_delivery dl;
		int changed = 0;

		changed += reap(pl, 0);
		maro_loop_begin(&l);
		for (i = 0; i < js->njobs; i++)
			if (maro_jobs_due(&js->jobs[i], l.now)) {
				if (start(pl, &js->jobs[i]) < 0)
					js->jobs[i].state = MARO_JOB_GAVE_UP;
				changed++;
			}
		finished = !maro_jobs_active(js);
		if (changed)
			update_info(pl);
		while (maro_inbox_next(pl->ib, &dl) == 1)
			answer(pl, &dl);
		maro_outbox_run(pl->ob);
		maro_inbox_flush(pl->ib);
		if ((status = maro_loop_stop(&l)) != 0) {
			stopping = 1;
			break;
		}
		maro_loop_beat(&l, pl->ib);
		if (finished)
			break;
		maro_loop_inbox(&l, pl->ib);
		maro_loop_fd(&l, chld_fd, MARO_LOOP_IN);
		maro_loop_outbox(&l, pl->ob);
		maro_loop_at(&l, maro_jobs_wake(js, INT64_MAX));
		maro_loop_wait(&l);
	}
	if (stopping)
		stop_all(pl);
	if (status == MARO_EXIT_OK)
		for (i = 0; i < js->njobs; i++)
			if (js->jobs[i].state == MARO_JOB_GAVE_UP)
				status = MARO_EXIT_INCOMPLETE;
	maro_loop_free(&l);
out:
	maro_outbox_free(pl->ob);
	maro_cli_report_malformed(pl->ib);
	maro_inbox_close(pl->ib);
	maro_ctx_close(pl->c);
	maro_jobs_free(js);
	maro_buf_free(&pl->enc);
	return status;
}
