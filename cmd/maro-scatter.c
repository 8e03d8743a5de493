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
#include "strset.h"

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

#define NO_PEER ((size_t)-1)
/* tasks read ahead of the peers, at most (fewer than 64 peers x window 8 starve them) */
#define QUEUE_MAX 1024

/*
 * A task lives from its input until its reply is written (with --async,
 * until its delivery is acknowledged); then it is freed and its slot in
 * tasks[] is NULL, so that a long run holds only the tasks still open.
 */
struct task {
	uint8_t *msg;		/* the request as read, filled in */
	size_t n;
	struct maro_dest_at dest;	/* where a peer's name goes into msg */
	char session[128];
	size_t peer;		/* where it is in flight, or NO_PEER */
	int sent;		/* in by_session and owed a reply: from its first dispatch */
	int done;		/* answered, or given up (failed) */
	int failed;
	unsigned attempts;	/* dispatches that failed: its peer died, or it timed out */
	int64_t dispatched;	/* when it last went to a peer (--task-timeout) */
	uint8_t *reply;		/* held for --ordered */
	size_t reply_n;
	uint8_t req[];		/* msg points here until the task is answered */
};

struct peer {
	char name[MARO_NAME_MAX + 1];
	int live;
	unsigned inflight;
};

struct scatter {
	struct maro_ctx *c;
	struct maro_outbox *ob;
	struct maro_requester rq;
	const char *name, *prefix, *tag;
	unsigned window;
	int ordered, async, json_lines, quiet, tty;
	/* task i (counted from 0 over the run) is tasks[i - base], or NULL once finished */
	struct task **tasks;
	size_t base, ntasks, cap, ndone, next_out;
	size_t first;			/* tasks before it are all finished */
	struct maro_strset by_session;	/* session id -> task index */
	/* tasks waiting for a peer: requeue[rq_head .. nrequeue) */
	size_t *requeue;
	size_t rq_head, nrequeue, requeue_cap;
	struct peer *peers;
	size_t npeers, rr;
	struct maro_tool_out out;
	struct maro_buf enc;
	uint64_t delivered;
	int64_t started;
	int input_done;		/* the total is known */
	uint64_t lineno;	/* -t: the line next_input returned last (1 for the first) */
	uint64_t lines_read;	/* -t: lines taken from the input so far */
	int64_t progress_every;	/* --progress: a line this often (us), whatever stderr is; 0: off */
	int64_t next_progress;
	unsigned retries;	/* give a task up after this many failed attempts; 0: never */
	int64_t task_timeout;	/* us; 0: none */
	size_t nfailed;
	struct maro_writer failed_w;	/* --failed: the requests given up */
	int failed_fd;
};

static struct task *
task_at(const struct scatter *s, size_t i)
{
	return i >= s->base && i < s->ntasks ? s->tasks[i - s->base] : NULL;
}

/*
 * Task i is finished: free it, and once the oldest tasks are all finished
 * move the open ones to the front of tasks[].
 */
static void
task_free(struct scatter *s, size_t i)
{
	struct task *t = task_at(s, i);

	if (!t)
		return;
	if (t->sent)
		maro_strset_take(&s->by_session, t->session, strlen(t->session));
	free(t->reply);
	free(t);
	s->tasks[i - s->base] = NULL;
	while (s->first < s->ntasks && !s->tasks[s->first - s->base])
		s->first++;
	if (s->first - s->base >= 1024 && s->first - s->base >= (s->ntasks - s->base) / 2) {
		memmove(s->tasks, s->tasks + (s->first - s->base), (s->ntasks - s->first) * sizeof *s->tasks);
		s->base = s->first;
	}
}

static void
on_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct scatter *s = arg;
	struct maro_msg m;
	struct maro_err err;
	uint64_t i;
	struct task *t;

	(void)dest;
	s->delivered++;
	if (!s->async)
		return;
	maro_tool_out_put(&s->out, p, n);
	/* delivered: the task is done, and a peer that leaves later owes nothing */
	if (maro_msg_decode(&m, p, n, &err) < 0 ||
	    !maro_strset_get(&s->by_session, m.session_id.p, m.session_id.n, &i) ||
	    !(t = task_at(s, i)) || t->done)
		return;
	t->done = 1;
	s->ndone++;
	if (t->peer != NO_PEER && s->peers[t->peer].inflight)
		s->peers[t->peer].inflight--;
	task_free(s, i);
}

static size_t
peer_find(struct scatter *s, const char *name, int add)
{
	size_t i;

	for (i = 0; i < s->npeers; i++)
		if (!strcmp(s->peers[i].name, name))
			return i;
	if (!add)
		return NO_PEER;
	s->peers = maro_xrealloc(s->peers, (s->npeers + 1) * sizeof *s->peers);
	memset(&s->peers[s->npeers], 0, sizeof s->peers[0]);
	snprintf(s->peers[s->npeers].name, sizeof s->peers[0].name, "%s", name);
	return s->npeers++;
}

/* Puts task i at the back of the queue of tasks waiting for a peer. */
static void
queue_task(struct scatter *s, size_t i)
{
	if (s->rq_head && s->rq_head >= s->nrequeue / 2) {
		memmove(s->requeue, s->requeue + s->rq_head, (s->nrequeue - s->rq_head) * sizeof *s->requeue);
		s->nrequeue -= s->rq_head;
		s->rq_head = 0;
	}
	if (s->nrequeue == s->requeue_cap) {
		s->requeue_cap = s->requeue_cap ? s->requeue_cap * 2 : 64;
		s->requeue = maro_xrealloc(s->requeue, s->requeue_cap * sizeof *s->requeue);
	}
	s->requeue[s->nrequeue++] = i;
}

/* --async: no window, round robin over the live peers. */
static size_t
any_live_peer(struct scatter *s)
{
	size_t i;

	for (i = 0; i < s->npeers; i++) {
		size_t p = (s->rr + i) % s->npeers;

		if (s->peers[p].live) {
			s->rr = p + 1;
			return p;
		}
	}
	return NO_PEER;
}

/* --ordered: writes the replies whose tasks before them are all finished. */
static void
ordered_out(struct scatter *s)
{
	while (s->next_out < s->ntasks && task_at(s, s->next_out)->done) {
		struct task *o = task_at(s, s->next_out);

		if (o->reply)
			maro_tool_out_put(&s->out, o->reply, o->reply_n);
		task_free(s, s->next_out++);
	}
}

/*
 * Task i failed an attempt (why): it goes back to the queue, or with
 * --retries, once it failed that often, it is given up: named on standard
 * error with its place in the input and its payload, its request written
 * to --failed, and the run goes on without it.
 */
static void
task_failed(struct scatter *s, size_t i, const char *why)
{
	struct task *t = task_at(s, i);
	struct maro_msg m;
	struct maro_buf b = { 0 };
	struct maro_err err;

	t->peer = NO_PEER;
	t->attempts++;
	if (!s->retries || t->attempts < s->retries) {
		queue_task(s, i);
		return;
	}
	t->done = t->failed = 1;
	s->ndone++;
	s->nfailed++;
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
	if (s->ordered)
		ordered_out(s);
	else
		task_free(s, i);
}

/* --task-timeout: tasks a peer has held that long fail an attempt, and may go elsewhere. */
static void
check_task_timeouts(struct scatter *s, int64_t now)
{
	size_t i;

	for (i = s->first; i < s->ntasks; i++) {
		struct task *t = task_at(s, i);
		size_t p;

		if (!t || t->done || t->peer == NO_PEER || now - t->dispatched < s->task_timeout)
			continue;
		p = t->peer;
		maro_outbox_settle(s->ob, s->peers[p].name, maro_str_c(t->session));
		if (s->peers[p].inflight)
			s->peers[p].inflight--;
		maro_info("task %zu of the input timed out at '%s'", i + 1, s->peers[p].name);
		task_failed(s, i, "timed out");
	}
}

/* A peer left: its unanswered tasks go back to the queue, the outbox forgets them. */
static void
peer_lost(struct scatter *s, size_t p)
{
	size_t i;

	s->peers[p].live = 0;
	maro_outbox_drop(s->ob, s->peers[p].name);
	for (i = s->base; i < s->ntasks; i++) {
		struct task *t = task_at(s, i);

		if (!t || t->done || t->peer != p)
			continue;
		task_failed(s, i, "its peer left");
	}
	if (s->peers[p].inflight)
		maro_warn("peer '%s' left with %u unanswered task%s: sending them elsewhere",
		    s->peers[p].name, s->peers[p].inflight, s->peers[p].inflight == 1 ? "" : "s");
	s->peers[p].inflight = 0;
}

/* Live membership, from the registry: joins get work, leaves give theirs back. */
static int
refresh_peers(struct scatter *s)
{
	struct maro_entry *v;
	ssize_t k, i;
	size_t p;

	k = maro_registry_list(s->c->reg, s->prefix, &v);
	if (k < 0)
		return -1;	/* keep the peers we know until the registry answers */
	for (p = 0; p < s->npeers; p++)
		s->peers[p].live |= 2;	/* to be confirmed */
	for (i = 0; i < k; i++) {
		p = peer_find(s, v[i].name, 1);
		if (!s->peers[p].live)
			maro_info("peer '%s' joined", v[i].name);
		s->peers[p].live = 1;
	}
	for (p = 0; p < s->npeers; p++)
		if (s->peers[p].live & 2)
			peer_lost(s, p);
	free(v);
	return 0;
}

/* The live peer with the fewest tasks in flight, below the window (round robin on ties). */
static size_t
pick_peer(struct scatter *s)
{
	size_t i, best = NO_PEER;

	for (i = 0; i < s->npeers; i++) {
		size_t p = (s->rr + i) % s->npeers;

		if (s->peers[p].live && s->peers[p].inflight < s->window &&
		    (best == NO_PEER || s->peers[p].inflight < s->peers[best].inflight))
			best = p;
	}
	if (best != NO_PEER)
		s->rr = best + 1;
	return best;
}

/*
 * Sends task i to peer p (or to its own destination when p is NO_PEER).
 * The task was encoded once, when read: a peer's name is spliced into it
 * (maro_msg_redirect), not decoded and encoded again for every dispatch.
 */
static int
dispatch(struct scatter *s, size_t i, size_t p)
{
	struct task *t = task_at(s, i);
	struct maro_str session = maro_str_c(t->session);

	if (p != NO_PEER) {
		const char *dest = s->peers[p].name;
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
	/*
	 * only now can a reply or an ack come for it: the tasks read ahead
	 * (up to QUEUE_MAX) stay out of these tables, which stay small
	 */
	if (!t->sent) {
		if (maro_strset_put(&s->by_session, session.p, session.n, i) < 0 ||
		    (!s->async && maro_requester_expect(&s->rq, session, 1) < 0))
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		t->sent = 1;
	}
	t->peer = p;
	t->dispatched = maro_now_us();
	if (p != NO_PEER)
		s->peers[p].inflight++;
	return 0;
}

/* Turns one input item (a message, or a payload line with -t) into a task. */
static int
add_task(struct scatter *s, const uint8_t *p, size_t n, struct maro_err *err)
{
	struct maro_buf payload = { 0 };
	struct maro_msg m;
	char ids[2][MARO_UUID_LEN + 1];
	struct maro_dest_at dest;
	struct task *t;
	int rc = -1;

	err->offset = 0;
	if (s->tag) {
		memset(&m, 0, sizeof m);
		m.tag = maro_str_c(s->tag);
		if (s->json_lines) {
			json_error_t je;
			json_t *v = json_loadb((const char *)p, n, MARO_JSON_LOAD_FLAGS, &je);

			if (!v) {
				snprintf(err->msg, sizeof err->msg, "invalid JSON: %s", je.text);
				goto out;
			}
			rc = maro_json_to_cbor(v, &payload);
			json_decref(v);
			if (rc < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			rc = -1;
		} else if (maro_buf_cbor_text(&payload, (const char *)p, n) < 0) {
			if (errno != EILSEQ)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			snprintf(err->msg, sizeof err->msg, "not valid UTF-8 text");
			goto out;
		}
		m.payload.p = payload.p;
		m.payload.n = payload.len;
	} else if (maro_msg_decode(&m, p, n, err) < 0) {
		goto out;
	}
	if (!s->prefix && !m.destination.p) {
		snprintf(err->msg, sizeof err->msg, "message has no destination (or use -P PREFIX)");
		goto out;
	}
	maro_msg_fill(&m, s->name, ids);
	if (m.session_id.n >= sizeof t->session) {
		snprintf(err->msg, sizeof err->msg, "session_id longer than %zu bytes",
		    sizeof t->session - 1);
		goto out;
	}
	m.type = MARO_SESSION_TASK;
	m.stage = MARO_STAGE_REQUEST;
	m.reply_to = maro_str_c(s->async ? s->name : s->rq.name);
	/* one block for the task and its request: 1 allocation, not 2 of odd sizes */
	s->enc.len = 0;
	if (maro_msg_encode_dest(&m, &s->enc, &dest) < 0 || !(t = calloc(1, sizeof *t + s->enc.len)))
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	memcpy(t->req, s->enc.p, s->enc.len);
	t->msg = t->req;
	t->n = s->enc.len;
	t->dest = dest;
	t->peer = NO_PEER;
	memcpy(t->session, m.session_id.p, m.session_id.n);	/* shorter than it: checked above */
	t->session[m.session_id.n] = '\0';
	if (s->ntasks - s->base == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->tasks = maro_xrealloc(s->tasks, s->cap * sizeof *s->tasks);
	}
	s->tasks[s->ntasks - s->base] = t;
	s->ntasks++;
	rc = 0;
out:
	maro_buf_free(&payload);
	return rc;
}

static void
task_answered(struct scatter *s, struct maro_delivery *d)
{
	uint64_t i;
	struct task *t;

	if (!maro_strset_get(&s->by_session, d->msg.session_id.p, d->msg.session_id.n, &i) ||
	    !(t = task_at(s, i)) || t->done)
		return;
	t->done = 1;
	s->ndone++;
	if (t->peer != NO_PEER)
		maro_outbox_settle(s->ob, s->peers[t->peer].name, d->msg.session_id);
	if (t->peer != NO_PEER && s->peers[t->peer].inflight)
		s->peers[t->peer].inflight--;
	t->msg = NULL;
	if (!s->ordered) {
		maro_tool_out_put(&s->out, d->p, d->n);
		task_free(s, i);
		return;
	}
	t->reply = malloc(d->n);
	if (!t->reply)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	memcpy(t->reply, d->p, d->n);
	t->reply_n = d->n;
	ordered_out(s);
}

/* "12s", "4m05s", "1h02m": a time left, for people */
static void
say_duration(char *out, size_t len, double secs)
{
	long t = secs < 0 ? 0 : secs > 359999 ? 359999 : (long)(secs + 0.5);

	if (t < 60)
		snprintf(out, len, "%lds", t);
	else if (t < 3600)
		snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(out, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

/*
 * Progress on standard error: on a terminal a live line, redrawn; with
 * --progress a line every so often, for a log.  Tasks done, the total (once
 * the input ended; until then the tasks read, with a '+'), the rate, and
 * the time left at that rate once the total is known.
 */
static void
progress(struct scatter *s, int final)
{
	int64_t now = maro_now_us();
	double secs = (double)(now - s->started) / 1e6;
	double rate = secs > 0 ? (double)s->ndone / secs : 0.0;
	char eta[64] = "", left[32], failed[32] = "";
	int line = s->progress_every && (final || now >= s->next_progress);

	if (s->quiet || (!s->tty && !line))
		return;
	if (s->input_done && s->ndone < s->ntasks && rate > 0) {
		say_duration(left, sizeof left, (double)(s->ntasks - s->ndone) / rate);
		snprintf(eta, sizeof eta, ", %s left", left);
	}
	if (s->nfailed)
		snprintf(failed, sizeof failed, " (%zu failed)", s->nfailed);
	if (s->tty && !s->progress_every) {
		fprintf(stderr, "\r%s: %zu/%zu%s done%s, %.0f/s%s\033[K%s", maro_progname, s->ndone,
		    s->ntasks, s->input_done ? "" : "+", failed, rate, eta, final ? "\n" : "");
		return;
	}
	if (!line)
		return;
	fprintf(stderr, "%s: %zu/%zu%s done%s, %.0f/s%s\n", maro_progname, s->ndone, s->ntasks,
	    s->input_done ? "" : "+", failed, rate, eta);
	s->next_progress = now + s->progress_every;
}

static void
say_missing(struct scatter *s)
{
	size_t i, k = 0;

	for (i = s->base; i < s->ntasks; i++)
		if (task_at(s, i) && !task_at(s, i)->done && k++ < 40 && !s->quiet)
			maro_warn("no reply in session %s (task %zu of the input)", task_at(s, i)->session, i + 1);
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
	size_t i;

	maro_io_interrupt = NULL;
	maro_deadline = maro_now_us() + 1000000;
	for (i = s->next_out; i < s->ntasks; i++) {
		struct task *t = task_at(s, i);

		if (t && t->done && t->reply)
			maro_tool_out_put(&s->out, t->reply, t->reply_n);
	}
	maro_tool_out_flush(&s->out);	/* says what failed; the status is the timeout's */
}

/* Next input item: a CBOR message, or with -t one line.  1, 0 (none yet / end), -1 error. */
static int
next_input(struct scatter *s, struct maro_reader *r, const uint8_t **p, size_t *n,
    uint64_t *off, struct maro_err *err)
{
	const uint8_t *nl;

	if (!s->tag)
		return maro_reader_next(r, p, n, off, err);
	for (;;) {
		size_t avail = r->buf.len - r->start;

		if (!avail)
			return 0;
		nl = memchr(r->buf.p + r->start, '\n', avail);
		if (!nl && !r->eof)
			return 0;
		*p = r->buf.p + r->start;
		*n = nl ? (size_t)(nl - *p) : avail;
		*off = r->base + r->start;
		r->start += *n + (nl != NULL);
		s->lineno = ++s->lines_read;
		if (*n)
			return 1;
	}
}

struct args {
	struct scatter *s;
	const char *failed_path;
};

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;
	struct scatter *s = a->s;

	switch (key) {
	case OPT_WINDOW:
		s->window = (unsigned)maro_cli_count("--window", val);
		if (s->window < 1 || s->window > 65536)
			maro_usage_error("--window must be 1 to 65536");
		break;
	case OPT_ORDERED: s->ordered = 1; break;
	case OPT_ASYNC: s->async = 1; break;
	case 't': s->tag = val; break;
	case OPT_JSON_LINES: s->json_lines = 1; break;
	case OPT_PROGRESS:
		s->progress_every = val ? maro_cli_duration("--progress", val) : 10000000;
		if (s->progress_every < 100000)
			maro_usage_error("--progress must be 100ms or more");
		break;
	case OPT_RETRIES:
		s->retries = (unsigned)maro_cli_count("--retries", val);
		if (s->retries < 1 || s->retries > 1000000)
			maro_usage_error("--retries must be 1 to 1000000");
		break;
	case OPT_TASK_TIMEOUT:
		s->task_timeout = maro_cli_duration("--task-timeout", val);
		if (s->task_timeout < 1000)
			maro_usage_error("--task-timeout must be 1ms or more");
		break;
	case OPT_FAILED: a->failed_path = val; break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct scatter s = { 0 };
	struct args a = { &s, NULL };
	struct maro_reader r;
	char errbuf[512], input_error[300] = "";
	int64_t deadline, next_hb, next_refresh, now;
	int want_input = 1;	/* the reader holds no whole item: read stdin */
	int status = MARO_EXIT_OK, input_done = 0, input_status = 0;
	const char *failed_path;
	int64_t next_task_check = 0;

	maro_cli_init(argv[0]);
	s.failed_fd = -1;
	memset(&r, 0, sizeof r);
	s.window = 1;
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	failed_path = a.failed_path;
	s.name = cm.name;
	s.prefix = cm.prefix;
	s.quiet = cm.quiet;
	if (s.json_lines && !s.tag)
		maro_usage_error("--json-lines needs -t TAG");
	if (s.async && s.ordered)
		maro_usage_error("--async and --ordered do not go together");
	if (s.async && !s.name)
		maro_usage_error("--async needs a name for the replies (-n NAME)");
	if ((s.task_timeout || s.retries || failed_path) && (!s.prefix || s.async))
		maro_usage_error("--retries, --task-timeout and --failed need -P PREFIX, without --async");
	if (failed_path) {
		s.failed_fd = open(failed_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (s.failed_fd < 0)
			maro_die(MARO_EXIT_UNAVAILABLE, "cannot open '%s': %s", failed_path, strerror(errno));
		maro_writer_init(&s.failed_w, s.failed_fd);
	}
	if (isatty(STDIN_FILENO))
		maro_warn("reading %s from the terminal", s.tag ? "payload lines" : "CBOR messages");

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
		size_t p;

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
		while (!input_done && s.nrequeue - s.rq_head < QUEUE_MAX) {
			const uint8_t *ip;
			size_t n;
			uint64_t off;
			struct maro_err err;
			int rc = next_input(&s, &r, &ip, &n, &off, &err);

			if (rc == 0) {
				if (r.eof)
					input_done = 1;
				want_input = 1;
				break;
			}
			if (rc < 0 || add_task(&s, ip, n, &err) < 0) {
				if (rc >= 0)
					err.offset += off;
				if (s.tag && rc >= 0)
					snprintf(input_error, sizeof input_error, "malformed input at line %llu: %s",
					    (unsigned long long)s.lineno, err.msg);
				else
					snprintf(input_error, sizeof input_error,
					    "malformed input at byte offset %llu: %s",
					    (unsigned long long)err.offset, err.msg);
				input_status = MARO_EXIT_DATAERR;
				input_done = 1;
				break;
			}
			queue_task(&s, s.ntasks - 1);
			moved = 1;
			fresh = 1;
		}
		/* new work after a pause: peers that joined meanwhile get a share of it */
		if (fresh && s.prefix && next_refresh - 250000 + 20000 <= now) {
			refresh_peers(&s);
			next_refresh = now + 250000;
		}
		/* give work: the queue holds re-queued tasks first, then new ones */
		while (s.rq_head < s.nrequeue) {
			struct task *t = task_at(&s, s.requeue[s.rq_head]);

			/* answered after its peer was given up on: nothing to send */
			if (!t || t->done) {
				s.rq_head++;
				continue;
			}
			if (!s.prefix)
				p = NO_PEER;
			else if ((p = pick_peer(&s)) == NO_PEER && s.async)
				p = any_live_peer(&s);
			if (s.prefix && p == NO_PEER)
				break;
			if (dispatch(&s, s.requeue[s.rq_head], p) < 0)
				break;	/* that peer's outbox window is full */
			s.rq_head++;
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
		if (input_done && s.rq_head == s.nrequeue &&
		    (s.async ? maro_outbox_pending(s.ob) == 0 : s.ndone == s.ntasks))
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
		if (!input_done && want_input && s.nrequeue - s.rq_head < QUEUE_MAX) {
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
		size_t missing = s.async ? maro_outbox_pending(s.ob) : s.ntasks - s.ndone;

		if (!s.async)
			say_missing(&s);
		if (s.ordered)
			flush_ordered(&s);
		if (status == MARO_EXIT_TIMEOUT) {
			if (!s.quiet)
				maro_warn("timed out: %zu of %zu tasks %s", missing, s.ntasks,
				    s.async ? "not delivered" : "unanswered");
			/* some answered (with --async: delivered) is done in part; none, a timeout */
			if (missing && (s.async ? s.delivered > 0 : s.ndone > 0))
				status = MARO_EXIT_INCOMPLETE;
			else if (!missing)
				status = MARO_EXIT_OK;
		}
	}
	if (s.nfailed && status == MARO_EXIT_OK) {
		if (!s.quiet)
			maro_warn("%zu of %zu tasks given up after %u failed attempts", s.nfailed, s.ntasks,
			    s.retries);
		status = MARO_EXIT_TASKS_FAILED;
	}
	if (input_status && (status == MARO_EXIT_OK || status == MARO_EXIT_TASKS_FAILED))
		status = input_status;
	if (input_error[0])
		maro_warn("%s", input_error);
	if (s.failed_fd >= 0 && (maro_writer_flush(&s.failed_w) < 0 || close(s.failed_fd) < 0)) {
		maro_warn("error writing '%s': %s", failed_path, strerror(errno));
		if (status == MARO_EXIT_OK || status == MARO_EXIT_TASKS_FAILED)
			status = MARO_EXIT_SOFTWARE;
	}
	s.failed_fd = -1;
	maro_info("%zu tasks, %zu answered, %llu resent, %llu stray replies", s.ntasks, s.ndone,
	    (unsigned long long)maro_outbox_resent(s.ob), (unsigned long long)s.rq.strays);
out:
	for (size_t i = s.base; i < s.ntasks; i++) {
		if (task_at(&s, i)) {
			free(task_at(&s, i)->reply);
			free(task_at(&s, i));
		}
	}
	free(s.tasks);
	free(s.requeue);
	free(s.peers);
	maro_common_free(&cm);
	maro_strset_free(&s.by_session);

	maro_buf_free(&s.enc);
	maro_reader_free(&r);
	maro_outbox_free(s.ob);
	maro_requester_close(&s.rq);
	maro_ctx_close(s.c);
	maro_tool_out_free(&s.out);
	if (s.failed_fd >= 0)
		close(s.failed_fd);
	if (failed_path)
		maro_writer_free(&s.failed_w);
	return status;
}
