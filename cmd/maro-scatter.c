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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"
#include "session.h"
#include "taskin.h"
#include "workq.h"

enum {
	OPT_WINDOW = 256, OPT_ORDERED, OPT_ASYNC, OPT_JSON_LINES, OPT_PROGRESS, OPT_RETRIES,
	OPT_TASK_TIMEOUT, OPT_FAILED,
};

static const char *const synopsis[] = { "< tasks", NULL };

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "a work queue over the live peers whose name starts "
	    "with PREFIX", 0),
	{ "window", 0, "N", "unanswered tasks per peer (default 1)", NULL, OPT_WINDOW, 0, 0 },
	{ "ordered", 0, NULL, "write the replies in input order", NULL, OPT_ORDERED, 0, 0 },
	{ "async", 0, NULL, "write the tasks as acknowledged; replies go to -n NAME", NULL,
	    OPT_ASYNC, 0, 0 },
	{ "tag", 't', "TAG", "read payload lines: one task with this tag per line", NULL, 't', 0, 0 },
	{ "json-lines", 0, NULL, "with -t: each line is a JSON payload", NULL, OPT_JSON_LINES, 0, 0 },
	{ "progress", 0, "DUR", "say done/failed/left and an ETA every DUR (default 10s)", NULL,
	    OPT_PROGRESS, MARO_OPT_OPTIONAL, 0 },
	{ "retries", 0, "N", "give a task up after N failed attempts", NULL, OPT_RETRIES, 0, 0 },
	{ "task-timeout", 0, "DUR", "an attempt unanswered after DUR failed", NULL, OPT_TASK_TIMEOUT,
	    0, 0 },
	{ "failed", 0, "FILE", "write the tasks given up to FILE", NULL, OPT_FAILED, 0, 0 },
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of what was not answered", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Distribute tasks over peers and write their replies.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH(EXPECT) | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(ADVERTISE) |
	    MARO_SH(MAX_SIZE),
	0,
};


#define NO_PEER MARO_WORKQ_NO_PEER
/* tasks read ahead of the peers, at most (fewer than 64 peers x window 8 starve them) */
#define QUEUE_MAX 1024

struct scatter {
	struct maro_ctx *c;
	struct maro_outbox *ob;
	struct maro_requester rq;
	struct maro_workq q;
	struct maro_taskin in;
	const char *name, *prefix;
	int async, quiet, tty;
	struct maro_tool_out out;
	uint64_t delivered;
	int64_t started;
	int input_done;		/* the total is known */
	int64_t progress_every;	/* --progress: a line this often (us), whatever stderr is; 0: off */
	int64_t next_progress;
	int64_t task_timeout;	/* us; 0: none */
	const char *failed_path;
	struct maro_writer failed_w;	/* --failed: the requests given up */
	int failed_fd;
};

static void
put(void *arg, const uint8_t *p, size_t n)
{
	struct scatter *s = arg;

	maro_tool_out_put(&s->out, p, n);
}

static void
on_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct scatter *s = arg;
	struct maro_msg m;
	struct maro_err err;
	size_t i;

	(void)dest;
	s->delivered++;
	if (!s->async)
		return;
	maro_tool_out_put(&s->out, p, n);
	/* delivered: the task is done, and a peer that leaves later owes nothing */
	if (maro_msg_decode(&m, p, n, &err) >= 0 && maro_workq_answered(&s->q, m.session_id, &i))
		maro_workq_reply(&s->q, i, NULL, 0);
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
	struct maro_msg m;
	struct maro_buf b = { 0 };
	struct maro_err err;

	if (maro_msg_decode(&m, t->msg, t->n, &err) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "task %zu: %s", i + 1, err.msg);	/* we encoded it */
	if (!s->quiet) {
		if (m.payload.p)
			maro_cbor_to_diag(m.payload.p, m.payload.n, &b, &err);
		maro_warn("task %zu of the input given up after %u failed attempt%s (%s): payload %.*s%s",
		    i + 1, t->attempts, t->attempts == 1 ? "" : "s", why,
		    (int)(b.len > 200 ? 200 : b.len), b.len ? (const char *)b.p : "?",
		    b.len > 200 ? "..." : "");
	}
	/*
	 * --failed: the request without its message_id and reply_to, so that
	 * sent again it is a new message, not a copy a receiver drops
	 */
	if (s->failed_fd >= 0) {
		m.message_id = (struct maro_str){ 0 };
		m.reply_to = (struct maro_str){ 0 };
		b.len = 0;
		if (maro_msg_encode(&m, &b) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (maro_writer_put(&s->failed_w, b.p, b.len) < 0)
			maro_warn("error writing the failed tasks: %s", strerror(errno));
	}
	maro_buf_free(&b);
}

/* --task-timeout: tasks a peer has held that long fail an attempt, and may go elsewhere. */
static void
check_task_timeouts(struct scatter *s, int64_t now)
{
	size_t i = maro_workq_first(&s->q);

	for (; maro_workq_overdue(&s->q, now, s->task_timeout, &i); i++) {
		struct maro_workq_task *t = maro_workq_task(&s->q, i);
		const char *peer = s->q.peers[t->peer].name;

		maro_outbox_settle(s->ob, peer, maro_str_c(t->session));
		maro_info("task %zu of the input timed out at '%s'", i + 1, peer);
		if (maro_workq_fail(&s->q, i, "timed out") < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	}
}

/*
 * Live membership, from the registry: joins get work, leaves give theirs
 * back (and the outbox forgets what it held for them).
 */
static int
refresh_peers(struct scatter *s)
{
	struct maro_entry *v;
	ssize_t k, i;
	size_t p;
	unsigned n;
	int rc;

	k = maro_registry_list(s->c->reg, s->prefix, &v);
	if (k < 0)
		return -1;	/* keep the peers we know until the registry answers */
	maro_workq_peers_begin(&s->q);
	for (i = 0; i < k; i++) {
		if ((rc = maro_workq_peer_seen(&s->q, v[i].name)) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (rc)
			maro_info("peer '%s' joined", v[i].name);
	}
	while ((p = maro_workq_peer_gone(&s->q)) != NO_PEER) {
		const char *name = s->q.peers[p].name;

		maro_outbox_drop(s->ob, name);
		if (maro_workq_peer_lost(&s->q, p, &n) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (n)
			maro_warn("peer '%s' left with %u unanswered task%s: sending them elsewhere",
			    name, n, n == 1 ? "" : "s");
	}
	free(v);
	return 0;
}

/*
 * Sends task i to peer p (or to its own destination when p is NO_PEER).
 * The task was encoded once, when read: a peer's name is spliced into it
 * (maro_msg_redirect), not decoded and encoded again for every dispatch.
 */
static int
dispatch(struct scatter *s, size_t i, size_t p)
{
	struct maro_workq_task *t = maro_workq_task(&s->q, i);
	int first = !t->sent;

	if (p != NO_PEER) {
		const char *dest = s->q.peers[p].name;
		uint8_t *q = maro_outbox_begin(s->ob, dest, maro_msg_redirect_max(t->n, strlen(dest)));
		size_t n;

		if (!q)
			return -1;	/* EAGAIN: the window to dest is full */
		n = maro_msg_redirect(q, t->msg, t->n, &t->dest, maro_str_c(dest));
		/* the session_id, after the destination, moved by the change in length: settle needs no search */
		maro_outbox_commit_sid(s->ob, n, t->dest.sid + n - t->n, t->dest.sid_n);
	} else {
		struct maro_str d;
		char buf[MARO_NAME_MAX + 1];

		if (maro_msg_text(t->msg, t->n, "destination", &d) != 1)
			return -1;	/* add_task saw it: cannot happen */
		snprintf(buf, sizeof buf, "%.*s", (int)d.n, d.p);
		if (maro_outbox_put(s->ob, buf, t->msg, t->n) < 0)
			return -1;
	}
	/* from its first dispatch a reply can come for it (with --async, an ack) */
	if (maro_workq_sent(&s->q, i, p, maro_now_us()) < 0 ||
	    (first && !s->async && maro_requester_expect(&s->rq, maro_str_c(t->session), 1) < 0))
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	return 0;
}

/* Turns one input item (a message, or a payload line with -t) into a task. */
static int
add_task(struct scatter *s, const uint8_t *p, size_t n, struct maro_err *err)
{
	if (maro_taskin_make(&s->in, p, n, err) < 0) {
		if (errno == ENOMEM)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		return -1;
	}
	if (maro_workq_add(&s->q, s->in.req.p, s->in.req.len, &s->in.dest,
	    maro_taskin_session(&s->in)) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	return 0;
}

/* A reply: the first for its task is written (with --ordered, in its turn), others dropped. */
static void
task_answered(struct scatter *s, struct maro_delivery *d)
{
	size_t i;
	struct maro_workq_task *t = maro_workq_answered(&s->q, d->msg.session_id, &i);

	if (!t)
		return;
	if (t->peer != NO_PEER)
		maro_outbox_settle(s->ob, s->q.peers[t->peer].name, d->msg.session_id);
	if (maro_workq_reply(&s->q, i, d->p, d->n) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
}

/*
 * Progress on standard error: on a terminal a live line, redrawn; with
 * --progress a line every so often, for a log.
 */
static void
progress(struct scatter *s, int final)
{
	int64_t now = maro_now_us();
	int line = s->progress_every && (final || now >= s->next_progress);
	char text[256];

	if (s->quiet || (!s->tty && !line))
		return;
	maro_workq_progress(&s->q, (double)(now - s->started) / 1e6, s->input_done, text, sizeof text);
	if (s->tty && !s->progress_every) {
		fprintf(stderr, "\r%s: %s\033[K%s", maro_progname, text, final ? "\n" : "");
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

	for (i = maro_workq_first(&s->q); i < s->q.ntasks && k < 40 && !s->quiet; i++) {
		struct maro_workq_task *t = maro_workq_task(&s->q, i);

		if (t && !t->done && ++k)
			maro_warn("no reply in session %s (task %zu of the input)", t->session, i + 1);
	}
}

/*
 * --ordered, at a timeout or a signal: the replies held behind a task that
 * got none are written after all, in the order of their tasks, so that
 * nothing answered (and acknowledged) is lost; the holes are named by
 * say_missing.  In a last second, past -W or a signal.
 */
static void
flush_ordered(struct scatter *s)
{
	maro_io_interrupt = NULL;
	maro_deadline = maro_now_us() + 1000000;
	maro_workq_flush(&s->q);
	maro_tool_out_flush(&s->out);	/* says what failed; the status is the timeout's */
}

static void
own(void *arg, int key, char *val)
{
	struct scatter *s = arg;

	switch (key) {
	case OPT_WINDOW:
		s->q.window = (unsigned)maro_cli_count("--window", val);
		if (s->q.window < 1 || s->q.window > 65536)
			maro_usage_error("--window must be 1 to 65536");
		break;
	case OPT_ORDERED: s->q.ordered = 1; break;
	case OPT_ASYNC: s->async = 1; break;
	case 't': s->in.tag = val; break;
	case OPT_JSON_LINES: s->in.json_lines = 1; break;
	case OPT_PROGRESS:
		s->progress_every = val ? maro_cli_duration("--progress", val) : 10000000;
		if (s->progress_every < 100000)
			maro_usage_error("--progress must be 100ms or more");
		break;
	case OPT_RETRIES:
		s->q.retries = (unsigned)maro_cli_count("--retries", val);
		if (s->q.retries < 1 || s->q.retries > 1000000)
			maro_usage_error("--retries must be 1 to 1000000");
		break;
	case OPT_TASK_TIMEOUT:
		s->task_timeout = maro_cli_duration("--task-timeout", val);
		if (s->task_timeout < 1000)
			maro_usage_error("--task-timeout must be 1ms or more");
		break;
	case OPT_FAILED: s->failed_path = val; break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct scatter s = { 0 };
	struct maro_reader r;
	char errbuf[512], input_error[300] = "";
	int64_t deadline, next_hb, next_refresh, now;
	int want_input = 1;	/* the reader holds no whole item: read stdin */
	int status = MARO_EXIT_OK, input_done = 0, input_status = 0;
	int64_t next_task_check = 0;

	maro_cli_init(argv[0]);
	s.failed_fd = -1;
	memset(&r, 0, sizeof r);
	s.q.window = 1;
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &s);
	s.name = cm.name;
	s.prefix = cm.prefix;
	s.quiet = cm.quiet;
	if (s.in.json_lines && !s.in.tag)
		maro_usage_error("--json-lines needs -t TAG");
	if (s.async && s.q.ordered)
		maro_usage_error("--async and --ordered do not go together");
	if (s.async && !s.name)
		maro_usage_error("--async needs a name for the replies (-n NAME)");
	if ((s.task_timeout || s.q.retries || s.failed_path) && (!s.prefix || s.async))
		maro_usage_error("--retries, --task-timeout and --failed need -P PREFIX, without --async");
	if (s.failed_path) {
		s.failed_fd = open(s.failed_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (s.failed_fd < 0)
			maro_die(MARO_EXIT_UNAVAILABLE, "cannot open '%s': %s", s.failed_path, strerror(errno));
		maro_writer_init(&s.failed_w, s.failed_fd);
	}
	if (isatty(STDIN_FILENO))
		maro_warn("reading %s from the terminal", s.in.tag ? "payload lines" : "CBOR messages");

	s.c = maro_tool_open(&cm, &deadline);
	s.tty = isatty(STDERR_FILENO);
	now = maro_now_us();
	if ((status = maro_tool_expect(s.c, &cm, deadline)) != 0)
		goto out;
	if (!s.async && maro_requester_open(&s.rq, s.c, s.name, errbuf, sizeof errbuf) < 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "cannot open a reply inbox: %s", errbuf);
	/*
	 * A task takes its first reply and no other (task_answered), so a
	 * resent reply needs no message-id filter: 3 MB less for long runs.
	 */
	if (s.rq.inbox)
		maro_inbox_no_filter(s.rq.inbox);
	s.q.put = put;
	s.q.given_up = given_up;
	s.q.arg = &s;
	s.in.need_dest = !s.prefix;
	s.in.source = s.name;
	s.in.reply_to = s.async ? s.name : s.rq.name;
	s.ob = maro_outbox_new(s.c, NULL, on_ack, &s);
	if (!s.ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	/*
	 * --async: an acknowledgement is what frees a peer's window (a worker's
	 * acks would otherwise wait 2 ms); without it replies do, and settle
	 */
	if (s.async)
		maro_outbox_prompt(s.ob);
	maro_tool_out_init(&s.out, cm.format);
	maro_reader_init(&r, STDIN_FILENO, &s.c->limits);
	s.started = maro_now_us();
	s.next_progress = s.started + s.progress_every;
	next_hb = maro_tool_next_beat(s.c, s.started);
	next_refresh = 0;

	for (;;) {
		zmq_pollitem_t items[1100];
		int nitems = 0, stdin_at = -1, moved = 0, fresh = 0;
		int64_t wake;
		long ms;
		size_t p, i;

		now = maro_now_us();
		if (s.prefix && now >= next_refresh) {
			refresh_peers(&s);
			next_refresh = now + 250000;
		}
		if (s.task_timeout && now >= next_task_check) {
			check_task_timeouts(&s, now);
			next_task_check = now + (s.task_timeout < 1000000 ? s.task_timeout / 10 + 1 : 100000);
		}
		maro_outbox_run(s.ob);	/* acknowledgements make room */
		/* read ahead: input becomes queued tasks, a bounded number of them */
		want_input = 0;
		while (!input_done && maro_workq_queued(&s.q) < QUEUE_MAX) {
			const uint8_t *ip;
			size_t n;
			uint64_t off;
			struct maro_err err;
			int rc = maro_taskin_next(&s.in, &r, &ip, &n, &off, &err);

			if (rc == 0) {
				if (r.eof)
					input_done = 1;
				want_input = 1;
				break;
			}
			if (rc < 0 || add_task(&s, ip, n, &err) < 0) {
				if (rc >= 0)
					err.offset += off;
				if (s.in.tag && rc >= 0)
					snprintf(input_error, sizeof input_error, "malformed input at line %llu: %s",
					    (unsigned long long)s.in.lineno, err.msg);
				else
					snprintf(input_error, sizeof input_error,
					    "malformed input at byte offset %llu: %s",
					    (unsigned long long)err.offset, err.msg);
				input_status = MARO_EXIT_DATAERR;
				input_done = 1;
				break;
			}
			moved = 1;
			fresh = 1;
		}
		/* new work after a pause: peers that joined meanwhile get a share of it */
		if (fresh && s.prefix && next_refresh - 250000 + 20000 <= now) {
			refresh_peers(&s);
			next_refresh = now + 250000;
		}
		/* give work: the queue holds re-queued tasks first, then new ones */
		while (maro_workq_head(&s.q, &i)) {
			if (!s.prefix)
				p = NO_PEER;
			else if ((p = maro_workq_pick(&s.q, s.async)) == NO_PEER)
				break;
			if (dispatch(&s, i, p) < 0)
				break;	/* that peer's outbox window is full */
			maro_workq_pop(&s.q);
			moved = 1;
		}
		maro_outbox_run(s.ob);
		maro_cli_report_outbox(s.ob);
		if (s.rq.inbox) {
			struct maro_delivery d;

			while (maro_requester_next(&s.rq, &d) == 1) {
				moved = 1;	/* a peer may be free again */
				task_answered(&s, &d);
				maro_inbox_done(s.rq.inbox, &d);
			}
		}
		if ((status = maro_tool_out_flush(&s.out)) != 0)
			goto out;
		/* held a little, so that one frame acknowledges many replies */
		if (s.rq.inbox)
			maro_inbox_flush_due(s.rq.inbox);
		s.input_done = input_done;
		progress(&s, 0);
		if (input_done && maro_workq_queued(&s.q) == 0 &&
		    (s.async ? maro_outbox_pending(s.ob) == 0 : s.q.ndone == s.q.ntasks))
			break;
		if ((status = maro_tool_stop(deadline)) != 0)
			break;
		now = maro_now_us();
		if (now >= next_hb) {
			if (s.rq.inbox)
				maro_registry_heartbeat(s.c->reg);
			next_hb = maro_tool_next_beat(s.c, now);
		}
		/*
		 * read only when what was read is used up: reading whenever the
		 * queue had room buffered the whole input (2 MB for 200k lines,
		 * without bound for more)
		 */
		if (!input_done && want_input && maro_workq_queued(&s.q) < QUEUE_MAX) {
			stdin_at = nitems;
			items[nitems++] = (zmq_pollitem_t){ NULL, STDIN_FILENO, ZMQ_POLLIN, 0 };
		}
		if (s.rq.inbox)
			items[nitems++] = (zmq_pollitem_t){ maro_inbox_pollable(s.rq.inbox), 0, ZMQ_POLLIN, 0 };
		nitems += maro_outbox_pollitems(s.ob, items + nitems, 1024);
		wake = maro_outbox_deadline(s.ob);
		if (deadline < wake)
			wake = deadline;
		if (next_hb < wake)
			wake = next_hb;
		if (s.progress_every && s.next_progress < wake)
			wake = s.next_progress;
		if (s.task_timeout && next_task_check < wake)
			wake = next_task_check;
		if (s.prefix && next_refresh < wake)
			wake = next_refresh;
		if (s.rq.inbox && maro_inbox_ack_deadline(s.rq.inbox) < wake)
			wake = maro_inbox_ack_deadline(s.rq.inbox);
		ms = maro_wait_ms(wake);
		/* something moved: go round again before sleeping */
		if (ms < 0 || moved)
			ms = 0;
		if (maro_poll(s.c, items, nitems, ms) < 0 && errno != EINTR)
			maro_die(MARO_EXIT_SOFTWARE, "poll: %s", zmq_strerror(errno));
		if (stdin_at >= 0 && (items[stdin_at].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) &&
		    maro_reader_fill(&r) < 0 && errno != EINTR) {
			snprintf(input_error, sizeof input_error, "error reading standard input: %s",
			    strerror(errno));
			input_status = MARO_EXIT_SOFTWARE;
			input_done = 1;
		}
	}
	s.input_done = input_done;
	progress(&s, 1);
	if (status == MARO_EXIT_TIMEOUT || maro_signal) {
		size_t missing = s.async ? maro_outbox_pending(s.ob) : s.q.ntasks - s.q.ndone;

		if (!s.async)
			say_missing(&s);
		if (s.q.ordered)
			flush_ordered(&s);
		if (status == MARO_EXIT_TIMEOUT) {
			if (!s.quiet)
				maro_warn("timed out: %zu of %zu tasks %s", missing, s.q.ntasks,
				    s.async ? "not delivered" : "unanswered");
			/* some answered (with --async: delivered) is done in part; none, a timeout */
			if (missing && (s.async ? s.delivered > 0 : s.q.ndone > 0))
				status = MARO_EXIT_INCOMPLETE;
			else if (!missing)
				status = MARO_EXIT_OK;
		}
	}
	if (s.q.nfailed && status == MARO_EXIT_OK) {
		if (!s.quiet)
			maro_warn("%zu of %zu tasks given up after %u failed attempts", s.q.nfailed,
			    s.q.ntasks, s.q.retries);
		status = MARO_EXIT_TASKS_FAILED;
	}
	if (input_status && (status == MARO_EXIT_OK || status == MARO_EXIT_TASKS_FAILED))
		status = input_status;
	if (input_error[0])
		maro_warn("%s", input_error);
	if (s.failed_fd >= 0 && (maro_writer_flush(&s.failed_w) < 0 || close(s.failed_fd) < 0)) {
		maro_warn("error writing '%s': %s", s.failed_path, strerror(errno));
		if (status == MARO_EXIT_OK || status == MARO_EXIT_TASKS_FAILED)
			status = MARO_EXIT_SOFTWARE;
	}
	s.failed_fd = -1;
	maro_info("%zu tasks, %zu answered, %llu resent, %llu stray replies", s.q.ntasks, s.q.ndone,
	    (unsigned long long)maro_outbox_resent(s.ob), (unsigned long long)s.rq.strays);
out:
	maro_workq_free(&s.q);
	maro_taskin_free(&s.in);
	maro_common_free(&cm);
	maro_reader_free(&r);
	maro_outbox_free(s.ob);
	maro_requester_close(&s.rq);
	maro_ctx_close(s.c);
	maro_tool_out_free(&s.out);
	if (s.failed_fd >= 0)
		close(s.failed_fd);
	if (s.failed_path)
		maro_writer_free(&s.failed_w);
	return status;
}
