/*
 * maro-scatter: distribute tasks over peers and collect their replies.
 *
 * With -P PREFIX it is a work queue: each live peer whose name starts with
 * PREFIX holds at most --window unanswered tasks, so fast peers get more;
 * a peer that dies (its registry entry goes) has its unanswered tasks given
 * to the others, and a peer that joins starts receiving tasks.  Without -P
 * every input message goes to its own destination (MARO's scatter of
 * (destination, payload) pairs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"
#include "scatter.h"

enum { OPT_WINDOW = 256, OPT_PROGRESS, OPT_RETRIES, OPT_TASK_TIMEOUT };

static const char *const synopsis[] = { "< tasks", NULL };

/* The run, at file scope so that the rows of opts[] can bind to it. */
static struct scatter {
	struct maro_scatter sc;
	int quiet, tty;
	struct maro_tool_out out;
	int64_t started;
	struct maro_reader r;
	int input_status;	/* the input's exit status, unless worse happens */
	int64_t progress_every;	/* --progress: a line this often (us), whatever stderr is; 0: off */
	int64_t next_progress;
	int64_t drawn_at;	/* the live line's last redraw */
	size_t last_done;	/* tasks finished at the last look, and since when */
	int64_t last_done_at;
	const char *failed_path;
	struct maro_writer failed_w;	/* --failed: the requests given up (fd -1: none) */
	const char *log_path;
	int resume;
	struct maro_joblog_file log;	/* --joblog: a record per task ended, written out each round */
} scatter;

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "a work queue over the live peers whose name starts "
	    "with PREFIX", 0),
	MARO_OPT_OWN("window", 0, "N", "unanswered tasks per peer (default 1)", OPT_WINDOW),
	MARO_OPT_FLAG("ordered", 0, "write the replies in input order", &scatter.sc.q.ordered),
	MARO_OPT_FLAG("async", 0, "write the tasks as acknowledged; replies go to -n NAME",
	    &scatter.sc.async),
	MARO_OPT_STR("tag", 't', "TAG", "read payload lines: one task with this tag per line",
	    &scatter.sc.in.tag),
	MARO_OPT_FLAG("json-lines", 0, "with -t: each line is a JSON payload", &scatter.sc.in.json_lines),
	{ .name = "progress", .arg = "DUR", .help = "say done/failed/left and an ETA every DUR "
	    "(default 10s)", .key = OPT_PROGRESS, .flags = MARO_OPT_OPTIONAL },
	MARO_OPT_OWN("retries", 0, "N", "give a task up after N failed attempts", OPT_RETRIES),
	MARO_OPT_OWN("task-timeout", 0, "DUR", "an attempt unanswered after DUR failed", OPT_TASK_TIMEOUT),
	MARO_OPT_STR("failed", 0, "FILE", "write the tasks given up to FILE", &scatter.failed_path),
	MARO_OPT_STR("joblog", 0, "FILE", "write a record of each task that ended to FILE",
	    &scatter.log_path),
	MARO_OPT_FLAG("resume", 0, "with --joblog: run only what the log has not done, and add to it",
	    &scatter.resume),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of what was not answered", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Distribute tasks over peers and write their replies.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH(EXPECT) | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(ADVERTISE) |
	    MARO_SH(MAX_SIZE),
	0,
};

/* tasks read ahead of the peers, at most (fewer than 64 peers x window 8 starve them) */
#define QUEUE_MAX 1024

/* A task's place in the input, for people: "line 5", "message 5". */
#define PLACE(s, seq) (s)->sc.in.tag ? "line" : "message", (unsigned long long)(seq)

static void
record(struct scatter *s, const struct maro_workq_task *t, const uint8_t *reply, size_t n,
    const char *why)
{
	if (s->log.fd < 0)
		return;
	s->log.rec.len = 0;
	if (maro_scatter_record(&s->sc, t, reply, n, why, &s->log.rec) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	if (maro_writer_put(&s->log.w, s->log.rec.p, s->log.rec.len) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "error writing '%s': %s", s->log_path, strerror(errno));
}

/* written after its reply: a record says that reply is out */
static void
written(void *arg, size_t i, const struct maro_workq_task *t, const uint8_t *p, size_t n)
{
	(void)i;
	record(arg, t, p, n, NULL);
}

static void
put(void *arg, const uint8_t *p, size_t n)
{
	struct scatter *s = arg;

	maro_tool_out_put(&s->out, p, n);
}

/*
 * Task i failed --retries times (the last: why): named on standard error
 * with its place in the input and its payload, its request written to
 * --failed, and the run goes on without it.
 */
static void
given_up(void *arg, size_t i, const struct maro_workq_task *t, const char *why)
{
	struct scatter *s = arg;
	struct maro_buf b = { 0 };
	struct maro_err err;

	(void)i;
	if (!s->quiet)
		maro_warn("%s %llu of the input given up after %u failed attempt%s (%s): payload %s",
		    PLACE(s, t->seq), t->attempts, t->attempts == 1 ? "" : "s", why, maro_scatter_payload(t, &b));
	record(s, t, NULL, 0, why);
	/* --failed: the request as a new message, to be sent again */
	b.len = 0;
	if (s->failed_w.fd >= 0) {
		if (maro_scatter_unsent(&s->sc, t, why, &b, &err) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "task at %s %llu: %s", PLACE(s, t->seq), err.msg);
		if (maro_writer_put(&s->failed_w, b.p, b.len) < 0)
			maro_warn("error writing the failed tasks: %s", strerror(errno));
	}
	maro_buf_free(&b);
}

static void
left(void *arg, const char *peer, unsigned n)
{
	maro_warn("peer '%s' left with %u unanswered task%s: sending them elsewhere", peer, n,
	    n == 1 ? "" : "s");
}

/* a live line is redrawn at most this often: a terminal is not a log */
#define REDRAW_US 100000

/*
 * Progress on standard error: on a terminal a live line, redrawn at most
 * every REDRAW_US; with --progress a line every so often, for a log.
 */
static void
progress(struct scatter *s, int final)
{
	int64_t now = maro_now_us();
	int line = s->progress_every && (final || now >= s->next_progress);
	char text[256];

	if (s->sc.q.ndone != s->last_done) {
		s->last_done = s->sc.q.ndone;
		s->last_done_at = now;
	}
	if (s->quiet || (!s->tty && !line))
		return;
	if (s->tty && !s->progress_every && !final && now - s->drawn_at < REDRAW_US)
		return;
	maro_workq_progress(&s->sc.q, (double)(now - s->started) / 1e6,
	    (double)(now - s->last_done_at) / 1e6, s->sc.input_done, text, sizeof text);
	if (s->tty && !s->progress_every) {
		fprintf(stderr, "\r%s: %s\033[K%s", maro_progname, text, final ? "\n" : "");
		s->drawn_at = now;
		return;
	}
	if (!line)
		return;
	fprintf(stderr, "%s: %s\n", maro_progname, text);
	s->next_progress = now + s->progress_every;
}

static void
say_missing(struct scatter *s)
{
	size_t i, k = 0;

	for (i = maro_workq_first(&s->sc.q); i < s->sc.q.ntasks && k < 40 && !s->quiet; i++) {
		struct maro_workq_task *t = maro_workq_task(&s->sc.q, i);
		struct maro_buf b = { 0 };

		if (t && !t->done && ++k)
			maro_warn("no reply in session %s (%s %llu of the input): payload %s", t->session,
			    PLACE(s, t->seq), maro_scatter_payload(t, &b));
		maro_buf_free(&b);
	}
}

/*
 * A signal: one line for the run, not one per task read ahead (those
 * open are named under -v), and how to go on when a job log has it.
 */
static void
say_interrupted(struct scatter *s)
{
	size_t open, waiting;

	maro_scatter_unfinished(&s->sc, &open, &waiting);
	maro_warn("interrupted: %zu of %zu%s tasks done, %zu given up, %zu open, %zu not sent",
	    s->sc.q.ndone - s->sc.q.nfailed, s->sc.q.ntasks, s->sc.input_done ? "" : "+", s->sc.q.nfailed,
	    open, waiting);
	if (s->log.fd >= 0)
		maro_warn("job log '%s' has the tasks that ended: the same command, on the same input, "
		    "with --resume does the rest", s->log_path);
}

static void
own(void *arg, int key, char *val)
{
	struct scatter *s = arg;

	switch (key) {
	case OPT_WINDOW:
		s->sc.q.window = (unsigned)maro_cli_count("--window", val);
		if (s->sc.q.window < 1 || s->sc.q.window > 65536)
			maro_usage_error("--window must be 1 to 65536");
		break;
	case OPT_PROGRESS:
		s->progress_every = val ? maro_cli_duration("--progress", val) : 10000000;
		if (s->progress_every < 100000)
			maro_usage_error("--progress must be 100ms or more");
		break;
	case OPT_RETRIES:
		s->sc.q.retries = (unsigned)maro_cli_count("--retries", val);
		if (s->sc.q.retries < 1 || s->sc.q.retries > 1000000)
			maro_usage_error("--retries must be 1 to 1000000");
		break;
	case OPT_TASK_TIMEOUT:
		s->sc.task_timeout = maro_cli_duration("--task-timeout", val);
		if (s->sc.task_timeout < 1000)
			maro_usage_error("--task-timeout must be 1ms or more");
		break;
	}
}

/*
 * The status to leave with, from the loop's (0, 124 at -W, 130 or 143
 * after a signal) and the tasks' fates, the input's and the files':
 * what is missing, given up or could not be written said on the way.
 */
static int
outcome(struct scatter *s, int status)
{
	struct maro_scatter *sc = &s->sc;

	if (status == MARO_EXIT_TIMEOUT || maro_signal) {
		size_t missing = maro_scatter_missing(sc);

		if (maro_signal && !s->quiet)
			say_interrupted(s);
		if (!sc->async && (!maro_signal || maro_verbose))
			say_missing(s);
		/* --ordered: the replies held behind the holes say_missing named */
		if (sc->q.ordered) {
			maro_scatter_flush_held(sc);
			maro_tool_out_flush(&s->out);	/* says what failed; the status is the timeout's */
		}
		if (status == MARO_EXIT_TIMEOUT) {
			/* the input had not ended: what it still held was never run */
			int unread = !sc->input_done;

			if (!s->quiet)
				maro_warn("timed out: %zu of %zu tasks %s%s", missing, sc->q.ntasks,
				    sc->async ? "not delivered" : "unanswered",
				    unread ? ", before the input ended" : "");
			/* some answered (with --async: delivered) is done in part; none, a timeout */
			if ((missing || unread) && (sc->async ? sc->delivered > 0 : sc->q.ndone > 0))
				status = MARO_EXIT_INCOMPLETE;
			else if (!missing && !unread)
				status = MARO_EXIT_OK;
		}
	}
	if (sc->q.nfailed && status == MARO_EXIT_OK) {
		if (!s->quiet && sc->q.retries)
			maro_warn("%zu of %zu tasks given up after %u failed attempts", sc->q.nfailed,
			    sc->q.ntasks, sc->q.retries);
		else if (!s->quiet)	/* failure replies, without --retries */
			maro_warn("%zu of %zu tasks given up", sc->q.nfailed, sc->q.ntasks);
		status = MARO_EXIT_TASKS_FAILED;
	}
	status = maro_status_worse(status, s->input_status);
	if (sc->input_error[0])
		maro_warn("%s", sc->input_error);
	if (s->failed_w.fd >= 0 && maro_writer_close(&s->failed_w) < 0) {
		maro_warn("error writing '%s': %s", s->failed_path, strerror(errno));
		status = maro_status_worse(status, MARO_EXIT_SOFTWARE);
	}
	if (s->log.fd >= 0 && maro_joblog_close(&s->log) < 0) {
		maro_warn("error writing '%s': %s", s->log_path, strerror(errno));
		status = maro_status_worse(status, MARO_EXIT_SOFTWARE);
	}
	if (sc->skipped)
		maro_info("%zu tasks done before, in job log '%s', not run again", sc->skipped, s->log_path);
	maro_info("%zu tasks, %zu answered, %llu resent, %llu stray replies", sc->q.ntasks, sc->q.ndone,
	    (unsigned long long)maro_outbox_resent(sc->ob), (unsigned long long)sc->rq.strays);
	return status;
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct scatter *s = &scatter;
	struct maro_scatter *sc = &s->sc;
	char errbuf[512];
	struct maro_err err;
	struct maro_loop l = { 0 };
	int64_t deadline;
	int status = MARO_EXIT_OK;

	maro_cli_init(argv[0]);
	s->failed_w.fd = s->log.fd = -1;
	sc->q.window = 1;
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, s);
	sc->prefix = cm.prefix;
	s->quiet = cm.quiet;
	if (s->quiet)
		s->progress_every = 0;	/* -q says nothing, --progress included: no timer for it */
	if (sc->in.json_lines && !sc->in.tag)
		maro_usage_error("--json-lines needs -t TAG");
	if (sc->async && sc->q.ordered)
		maro_usage_error("--async and --ordered do not go together");
	if (sc->async && !cm.name)
		maro_usage_error("--async needs a name for the replies (-n NAME)");
	if ((sc->task_timeout || sc->q.retries || s->failed_path) && (!sc->prefix || sc->async))
		maro_usage_error("--retries, --task-timeout and --failed need -P PREFIX, without --async");
	if (s->resume && !s->log_path)
		maro_usage_error("--resume needs --joblog FILE");
	if (s->log_path && sc->async)
		maro_usage_error("--joblog needs replies: not with --async");
	if (s->log_path && maro_scatter_joblog(sc, &s->log, s->log_path, s->resume, &err) < 0) {
		if (errno == EINVAL)
			maro_die(MARO_EXIT_DATAERR, "'%s' line %llu: %s", s->log_path,
			    (unsigned long long)err.offset, err.msg);
		maro_die(MARO_EXIT_UNAVAILABLE, "%s", err.msg);
	}
	if (s->failed_path && maro_writer_open(&s->failed_w, s->failed_path) < 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "cannot open '%s': %s", s->failed_path, strerror(errno));
	if (isatty(STDIN_FILENO))
		maro_warn("reading %s from the terminal", sc->in.tag ? "payload lines" : "CBOR messages");

	sc->c = maro_tool_open(&cm, &deadline);
	s->tty = isatty(STDERR_FILENO);
	if ((status = maro_tool_expect(sc->c, &cm, deadline)) != 0)
		goto out;
	if (!sc->async && maro_requester_open(&sc->rq, sc->c, cm.name, errbuf, sizeof errbuf) < 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "cannot open a reply inbox: %s", errbuf);
	sc->q.put = put;
	sc->q.given_up = given_up;
	sc->q.written = s->log_path ? written : NULL;
	sc->q.arg = s;
	sc->left = left;
	sc->in.need_dest = !sc->prefix;
	sc->in.source = cm.name;
	if (maro_scatter_start(sc, cm.name) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	maro_tool_out_init(&s->out, cm.format);
	maro_reader_init(&s->r, STDIN_FILENO, &sc->c->limits);
	s->started = maro_now_us();
	s->next_progress = s->started + s->progress_every;
	s->last_done_at = s->started;
	/* without --async, its reply inbox is a member: it beats */
	maro_loop_init(&l, sc->c, deadline, sc->rq.inbox != NULL);
	/* the job is listed from its start (maro-peers --status) */
	maro_scatter_publish(sc, s->started);

	for (;;) {
		int stdin_at = -1, moved, rc;

		if ((moved = maro_scatter_round(sc, &s->r, QUEUE_MAX, maro_now_us())) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (sc->input_bad)
			s->input_status = MARO_EXIT_DATAERR;
		/* a peer that refused us for want of the key: its tasks are lost to it; stop */
		if (maro_cli_report_outbox(sc->ob) == EKEYREJECTED) {
			status = MARO_EXIT_UNAVAILABLE;
			break;
		}
		/* tasks that wait for a peer nobody is: said, not waited for in silence */
		maro_tool_report_missing(&cm, sc->c, sc->ob, deadline, 0);
		if (sc->prefix)
			maro_tool_report_no_peer(&cm, sc->c, sc->prefix,
			    !maro_scatter_live(sc) && maro_workq_queued(&sc->q), deadline);
		if ((rc = maro_scatter_replies(sc)) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		moved |= rc;
		if ((status = maro_tool_out_flush(&s->out)) != 0)
			goto out;
		/* after the replies: a record says its reply was written */
		if (s->log.fd >= 0 && maro_writer_flush(&s->log.w) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "error writing '%s': %s", s->log_path, strerror(errno));
		/* held a little, so that one frame acknowledges many replies */
		if (sc->rq.inbox)
			maro_inbox_flush_due(sc->rq.inbox);
		progress(s, 0);
		if (sc->input_done && maro_workq_queued(&sc->q) == 0 && maro_scatter_missing(sc) == 0)
			break;
		if ((status = maro_loop_stop(&l)) != 0)
			break;
		if (sc->rq.inbox && l.now >= l.next_beat)
			maro_scatter_publish(sc, l.now);
		maro_loop_beat(&l, NULL);
		maro_loop_begin(&l);
		if (maro_scatter_wants_input(sc, QUEUE_MAX))
			stdin_at = maro_loop_fd(&l, STDIN_FILENO, MARO_LOOP_IN);
		if (sc->rq.inbox)
			maro_loop_inbox(&l, sc->rq.inbox);
		maro_loop_outbox(&l, sc->ob);
		maro_loop_at(&l, maro_scatter_wake(sc, INT64_MAX));
		if (s->progress_every)
			maro_loop_at(&l, s->next_progress);
		/* the live line: what changed since its last redraw, shown within REDRAW_US */
		if (s->tty && !s->quiet && !s->progress_every)
			maro_loop_at(&l, s->drawn_at + REDRAW_US);
		/* something moved: go round again before sleeping */
		if (moved)
			maro_loop_soon(&l);
		maro_loop_wait(&l);
		if (stdin_at >= 0 && (maro_loop_ready(&l, stdin_at) & (MARO_LOOP_IN | MARO_LOOP_ERR)) &&
		    maro_scatter_fill(sc, &s->r) < 0)
			s->input_status = MARO_EXIT_SOFTWARE;
	}
	progress(s, 1);
	status = outcome(s, status);
out:
	maro_loop_free(&l);
	maro_scatter_end(sc);
	maro_common_free(&cm);
	maro_reader_free(&s->r);
	maro_ctx_close(sc->c);
	maro_tool_out_free(&s->out);
	if (s->failed_w.fd >= 0)
		close(s->failed_w.fd);
	maro_writer_free(&s->failed_w);
	s->log.w.buf.len = 0;	/* here early: its records may be of replies not written */
	maro_joblog_close(&s->log);
	return status;
}
