#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "convert.h"
#include "registry.h"
#include "reply.h"
#include "scatter.h"
#include "stats.h"
#include "strset.h"
#include "trace.h"

#define NO_PEER MARO_WORKQ_NO_PEER
#define REFRESH_US 250000
/* input after this long without any is new work: the members are looked at again */
#define PAUSE_US 20000
/* the tasks open are capped (maro_scatter_round) to this many windows */
#define HOT_WINDOWS 16
/* or what keeps this many tasks a second going, at the turn a task takes at its peer */
#define RATE_MIN 10000
/* unless a task's turn at its peer takes this long: work, not a thousand wake-ups */
#define SLOW_US 20000
/* the first turn counted, at most: the turn at which the least cap (HOT_WINDOWS) keeps RATE_MIN going */
#define FIRST_TURN_MAX ((int64_t)HOT_WINDOWS * 1000000 / RATE_MIN)
/* each time no reply comes for this long while tasks are out, the cap doubles */
#define STUCK_US 1000000
static size_t open_max(const struct maro_scatter *sc);

static void
on_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct maro_scatter *sc = arg;
	struct maro_msg m;
	struct maro_err err;
	size_t i;

	(void)dest;
	sc->delivered++;
	if (!sc->async)
		return;
	sc->q.put(sc->q.arg, p, n);
	/* delivered: the task is done, and a peer that leaves later owes nothing */
	if (maro_msg_decode(&m, p, n, &err) >= 0 && maro_workq_answered(&sc->q, m.session_id, &i))
		maro_workq_reply(&sc->q, i, NULL, 0);
}

/*
 * The peer's name moved to a new process (the outbox found it so, or our
 * listing did): the old one took its tasks with it, each a failed attempt,
 * whoever noticed first.  The outbox dropped them: sent to the new holder
 * uncounted, a task that kills its worker would kill each new one too.
 */
static void
on_moved(void *arg, const char *dest, size_t dropped)
{
	struct maro_scatter *sc = arg;
	size_t p;
	unsigned n;

	(void)dropped;
	if ((p = maro_workq_peer_find(&sc->q, dest)) == NO_PEER)
		return;
	sc->q.peers[p].answered_at = 0;	/* the new one's first answer waits for its connections */
	if (maro_workq_peer_replaced(&sc->q, p, &n) < 0)
		sc->nomem = 1;
	else if (n && sc->left)
		sc->left(sc->q.arg, dest, n);
}

int
maro_scatter_start(struct maro_scatter *sc, const char *name)
{
	sc->in.reply_to = sc->async ? name : sc->rq.name;
	sc->started_us = maro_now_us();
	sc->started_s = (int64_t)time(NULL);
	/*
	 * A task takes its first reply and no other, so a resent reply needs
	 * no message-id filter (3 MB less for long runs); its senders are
	 * workers, who want its acks only to free their replies.
	 */
	if (sc->rq.inbox) {
		maro_inbox_no_filter(sc->rq.inbox);
		maro_inbox_hold_acks(sc->rq.inbox, MARO_REPLY_ACK_DELAY_US);
	}
	sc->ob = maro_outbox_new(sc->c, NULL, on_ack, sc);
	if (!sc->ob) {
		errno = ENOMEM;
		return -1;
	}
	/*
	 * async: an acknowledgement is what frees a peer's window (a worker's
	 * acks would otherwise wait 2 ms); without it replies do, and settle
	 */
	if (sc->async)
		maro_outbox_prompt(sc->ob);
	if (sc->prefix)
		maro_outbox_on_moved(sc->ob, on_moved);
	return 0;
}

void
maro_scatter_end(struct maro_scatter *sc)
{
	maro_workq_free(&sc->q);
	maro_taskin_free(&sc->in);
	maro_outbox_free(sc->ob);
	sc->ob = NULL;
	maro_requester_close(&sc->rq);
}

int
maro_scatter_add(struct maro_scatter *sc, const uint8_t *p, size_t n, struct maro_err *err)
{
	uint64_t hash = 0;
	ssize_t k;

	if (maro_taskin_make(&sc->in, p, n, err) < 0)
		return -1;
	if (sc->hash) {
		if (maro_joblog_hash(sc->in.req.p, sc->in.req.len, !sc->prefix, &hash, err) < 0)
			return -1;	/* we encoded it: cannot happen */
		switch (sc->resume ? maro_joblog_check(sc->resume, sc->in.seq, hash) : MARO_JOBLOG_RUN) {
		case MARO_JOBLOG_DONE:
			return 1;
		case MARO_JOBLOG_OTHER:
			snprintf(err->msg, sizeof err->msg, "the job log has another task there");
			return 2;
		}
	}
	k = maro_workq_add(&sc->q, sc->in.req.p, sc->in.req.len, &sc->in.dest,
	    maro_taskin_session(&sc->in));
	if (k < 0) {
		errno = ENOMEM;	/* the session's length was checked by taskin */
		return -1;
	}
	maro_workq_task(&sc->q, (size_t)k)->seq = sc->in.seq;
	maro_workq_task(&sc->q, (size_t)k)->hash = hash;
	return 0;
}

/* A task's place in the input, for people: "line 5", "message 5". */
#define PLACE(sc, seq) (sc)->in.tag ? "line" : "message", (unsigned long long)(seq)

/*
 * The cap on the tasks open (maro_scatter_round), or SIZE_MAX: none (nor
 * when it would hold every peer's window: 16 peers or fewer).
 */
static size_t
open_max(const struct maro_scatter *sc)
{
	size_t cap = (size_t)HOT_WINDOWS * sc->q.window, hosts = sc->nhosts ? sc->nhosts : 1;
	/* tasks of 1 ms, one at a time: 10 open, 10 peers busy, 10,000 a second */
	double need = (double)RATE_MIN * sc->q.window * (double)sc->turn_us / 1e6;

	if (need > (double)cap && need < 1e12)
		cap = (size_t)need;
	/* per host: what the cap saves is the wake-ups of one host's processes */
	if (hosts > 1)
		cap = cap < (SIZE_MAX >> 22) / hosts ? cap * hosts : SIZE_MAX >> 21;
	if (!sc->capped || sc->turn_us >= SLOW_US || sc->lifted >= 20 || cap >= SIZE_MAX >> 21 ||
	    (cap << sc->lifted) / sc->q.window >= sc->q.npeers)
		return SIZE_MAX;
	return cap << sc->lifted;
}

/* The tasks to queue at most: max, within the cap on the tasks open. */
static size_t
take_max(const struct maro_scatter *sc, size_t max)
{
	size_t open = sc->q.ntasks - sc->q.ndone, cap = open_max(sc);
	size_t queued = maro_workq_queued(&sc->q);

	if (cap == SIZE_MAX || queued >= max)
		return max;
	return open >= cap ? queued : cap - open < max - queued ? queued + cap - open : max;
}

int
maro_scatter_take(struct maro_scatter *sc, struct maro_reader *r, size_t max)
{
	uint64_t last = sc->resume ? maro_joblog_last(sc->resume) : 0;
	int took = 0;

	sc->want_input = 0;
	sc->after_pause = 0;
	max = take_max(sc, max);
	while (!sc->input_done && maro_workq_queued(&sc->q) < max) {
		const uint8_t *p;
		size_t n;
		uint64_t off;
		struct maro_err err;
		int rc = maro_taskin_next(&sc->in, r, &p, &n, &off, &err), added = -1;

		if (rc == 0) {
			sc->input_done = r->eof;
			sc->want_input = 1;
			if (!sc->dry_since)
				sc->dry_since = maro_now_us();
			if (!sc->input_done || sc->in.seq >= last)
				break;
			snprintf(sc->input_error, sizeof sc->input_error, "the input ended at %s %llu, but job "
			    "log '%s' has a record of %s %llu: not the input it was written for",
			    PLACE(sc, sc->in.seq), sc->resume_name, PLACE(sc, last));
		} else if (rc > 0 && (added = maro_scatter_add(sc, p, n, &err)) >= 0 && added < 2) {
			sc->skipped += (size_t)added;
			took |= !added;
			/* a steady input runs dry between reads too, for microseconds: not a pause */
			if (sc->dry_since && maro_now_us() - sc->dry_since >= PAUSE_US)
				sc->after_pause = 1;
			sc->dry_since = 0;
			continue;
		} else if (added < 0 && rc > 0 && errno == ENOMEM) {
			return -1;
		} else if (added == 2) {
			snprintf(sc->input_error, sizeof sc->input_error, "%s %llu of the input is not the task "
			    "job log '%s' has there: not the input it was written for", PLACE(sc, sc->in.seq),
			    sc->resume_name);
		} else if (rc > 0 && sc->in.tag) {
			snprintf(sc->input_error, sizeof sc->input_error, "malformed input at line %llu: %s",
			    (unsigned long long)sc->in.lineno, err.msg);
		} else {
			size_t avail;
			const uint8_t *q = maro_reader_peek(r, &avail), *end = q + avail;

			/* seq 10 | maro-scatter: say how lines are sent (from the item on) */
			if (rc > 0)
				q = p;
			snprintf(sc->input_error, sizeof sc->input_error,
			    "malformed input at byte offset %llu: %s%s",
			    (unsigned long long)(err.offset + (rc > 0 ? off : 0)), err.msg,
			    maro_cbor_looks_like_text(q, (size_t)(end - q)) ? "; it looks like text, not "
			    "CBOR: give -t TAG to send each line as a task's payload (with --json-lines, "
			    "as JSON)" : "");
		}
		sc->input_bad = 1;
		sc->input_done = 1;
		break;
	}
	return took;
}

/* Live membership, from the registry: joins get work, leaves give theirs back. */
static int
refresh(struct maro_scatter *sc)
{
	struct maro_strset hosts = { 0 };
	struct maro_entry *v;
	ssize_t k, i;
	size_t p;
	unsigned n;
	int rc = -1;

	k = maro_registry_list(sc->c->reg, sc->prefix, &v);
	if (k < 0)
		return 0;	/* keep the peers we know until the registry answers */
	maro_workq_peers_begin(&sc->q);
	for (i = 0; i < k; i++) {
		int joined = maro_workq_peer_seen(&sc->q, v[i].name);

		if (joined < 0 || maro_strset_add(&hosts, v[i].host, strlen(v[i].host)) < 0)
			goto out;
		if (joined)
			maro_trace("peer '%s' joined", v[i].name);
		/* a new holder of a name we know: on_moved */
		maro_outbox_holder(sc->ob, v[i].name, &v[i]);
		if (sc->nomem)
			goto out;
	}
	/* the outbox forgets what it held for a peer that left */
	while ((p = maro_workq_peer_gone(&sc->q)) != NO_PEER) {
		maro_outbox_drop(sc->ob, sc->q.peers[p].name);
		sc->q.peers[p].answered_at = 0;
		if (maro_workq_peer_lost(&sc->q, p, &n) < 0)
			goto out;
		if (n && sc->left)
			sc->left(sc->q.arg, sc->q.peers[p].name, n);
	}
	sc->nhosts = hosts.used;
	rc = 0;
out:
	maro_strset_free(&hosts);
	free(v);
	return rc;
}

/*
 * The members are looked at every REFRESH_US, or 10 times as long as the
 * last look took, whichever is longer: listing a thousand members (a
 * directory of a thousand files, or a Redis reply of half a megabyte) then
 * costs the scatter a tenth of its time at most, not a third of it.
 */
int
maro_scatter_peers(struct maro_scatter *sc, int64_t now, int fresh)
{
	int64_t every = sc->refresh_took * 10, last;
	int rc;

	if (!sc->prefix)
		return 0;
	if (every < REFRESH_US)
		every = REFRESH_US;
	last = sc->next_refresh - every;
	/* new work after a pause: peers that joined meanwhile get a share of it */
	if (fresh ? now - last < (every > REFRESH_US ? every : 20000) : now < sc->next_refresh)
		return 0;
	rc = refresh(sc);
	sc->refresh_took = maro_now_us() - now;
	every = sc->refresh_took * 10 > REFRESH_US ? sc->refresh_took * 10 : REFRESH_US;
	sc->next_refresh = now + every;
	return rc;
}

int
maro_scatter_timeouts(struct maro_scatter *sc, int64_t now)
{
	int64_t t = sc->task_timeout;
	size_t i;

	if (!t || now < sc->next_check)
		return 0;
	for (i = maro_workq_first(&sc->q); maro_workq_overdue(&sc->q, now, t, &i); i++) {
		struct maro_workq_task *task = maro_workq_task(&sc->q, i);
		const char *peer = sc->q.peers[task->peer].name;

		maro_outbox_settle_at(sc->ob, peer, sc->q.peers[task->peer].name_h, maro_str_c(task->session),
		    task->out_at);
		maro_trace("task %zu of the input timed out at '%s'", i + 1, peer);
		if (maro_workq_fail(&sc->q, i, "timed out") < 0)
			return -1;
	}
	sc->next_check = now + (t < 1000000 ? t / 10 + 1 : 100000);
	return 0;
}

/*
 * Sends task i to peer p (or to its own destination when p is NO_PEER):
 * 0; 1 when it cannot now (the window to it is full); -1 with ENOMEM.  The task
 * was encoded once, when read: a peer's name is spliced into it
 * (maro_msg_redirect), not decoded and encoded again for every dispatch.
 */
static int
send_task(struct maro_scatter *sc, size_t i, size_t p)
{
	struct maro_workq_task *t = maro_workq_task(&sc->q, i);

	if (p != NO_PEER) {
		const char *dest = sc->q.peers[p].name;
		uint8_t *q = maro_outbox_begin_h(sc->ob, dest, sc->q.peers[p].name_h,
		    maro_msg_redirect_max(t->n, strlen(dest)));
		size_t n;

		if (!q)
			return 1;
		n = maro_msg_redirect(q, t->msg, t->n, &t->dest, maro_str_c(dest));
		/* the session_id, after the destination, moved by the change in length: settle needs no search */
		t->out_at = maro_outbox_commit_sid(sc->ob, n, t->dest.sid + n - t->n, t->dest.sid_n);
	} else {
		struct maro_str d;
		char buf[MARO_NAME_MAX + 1];

		if (maro_msg_text(t->msg, t->n, "destination", &d) != 1)
			return 1;	/* taskin saw it: cannot happen */
		snprintf(buf, sizeof buf, "%.*s", (int)d.n, d.p);
		if (maro_outbox_put(sc->ob, buf, t->msg, t->n) < 0)
			return 1;
	}
	/* the reply it is owed is known by its session in the work queue (maro_scatter_replies) */
	if (maro_workq_sent(&sc->q, i, p, maro_now_us()) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
maro_scatter_dispatch(struct maro_scatter *sc)
{
	size_t i, p;
	int moved = 0, rc;

	if (sc->nomem) {
		errno = ENOMEM;	/* a peer's tasks could not go back to the queue (on_moved) */
		return -1;
	}
	while (maro_workq_head(&sc->q, &i)) {
		if (!sc->prefix)
			p = NO_PEER;
		else if ((p = maro_workq_pick_for(&sc->q, i, sc->async)) == NO_PEER)
			break;
		if ((rc = send_task(sc, i, p)) != 0)
			return rc < 0 ? -1 : moved;	/* 1: that peer's outbox window is full */
		maro_workq_pop(&sc->q);
		moved = 1;
	}
	return moved;
}

/*
 * A failure reply (reply.h) fails an attempt of its task (i, open): one
 * that another attempt would fail the same (no handler, a line not JSON)
 * gives it up at once, whatever --retries says; any other (a handler
 * that exited non-zero, was killed, or failed the task on purpose) counts
 * toward --retries as a timeout does, and without --retries gives it up
 * at once: nothing is sent again forever.  The reason goes to the job log,
 * --failed and the terminal, escaped.  It then takes no other reply.
 * 1 when it was one, 0 when not, -1 with ENOMEM.
 */
static int
failure_reply(struct maro_scatter *sc, const struct maro_msg *m, size_t i)
{
	struct maro_str error, text, id;
	struct maro_workq_task *t;
	unsigned retries = sc->q.retries;
	char why[1200], fresh[MARO_UUID_LEN + 1];
	int rc, k;

	if (!maro_reply_error(m, &error, &text))
		return 0;
	k = snprintf(why, sizeof why, "'%.*s': ", (int)m->source.n, m->source.p ? m->source.p : "");
	maro_reply_escape(text, why + k, sizeof why - (size_t)k);
	if (maro_reply_error_final(error) || !sc->q.retries)
		sc->q.retries = 1;
	rc = maro_workq_fail(&sc->q, i, why);
	sc->q.retries = retries;
	if (rc < 0)
		return -1;
	/*
	 * sent again, it is a new message: the peer that failed it took the
	 * old one, and would drop it as a duplicate (maro(7), DELIVERY)
	 */
	if ((t = maro_workq_task(&sc->q, i)) && !t->done && t->msg &&
	    maro_msg_text(t->msg, t->n, "message_id", &id) == 1 && id.n == MARO_UUID_LEN) {
		maro_uuid(fresh);
		memcpy((char *)id.p, fresh, MARO_UUID_LEN);
	}
	return 1;
}

/*
 * Task t's reply came from peer e at now: its turn there (from its send,
 * or the peer's answer before when it waited behind that one) goes into
 * the average the cap on the tasks open follows.
 */
static void
took_turn(struct maro_scatter *sc, struct maro_workq_peer *e, const struct maro_workq_task *t,
    int64_t now)
{
	int64_t turn = now - (e->answered_at > t->sent_at ? e->answered_at : t->sent_at);

	if (!e->answered_at) {
		e->answered_at = now;
		return;
	}
	sc->quiet_since = now;
	e->answered_at = now;
	if (turn < 1)
		turn = 1;
	/*
	 * slow only when many say so, not the first alone: workers still
	 * starting (or a host loaded for a moment) answer slowly at first, and
	 * an average that started there would lift the cap at once and send
	 * the first tasks to every peer.  It starts no higher than the cap
	 * holds at (need = cap in open_max), then goes up by a 64th a turn.
	 */
	if (!sc->turn_us)
		sc->turn_us = turn < FIRST_TURN_MAX ? turn : FIRST_TURN_MAX;
	/* down at once, up by a 64th: the turn a task takes, not the waits of a loaded host */
	sc->turn_us = turn < sc->turn_us ? turn : sc->turn_us + (turn - sc->turn_us) / 64;
}

int
maro_scatter_replies(struct maro_scatter *sc)
{
	struct maro_delivery d;
	struct maro_workq_task *t;
	size_t i;
	int moved = 0, rc;
	int64_t now = 0;

	if (!sc->rq.inbox)
		return 0;
	while (maro_inbox_next(sc->rq.inbox, &d) == 1) {
		moved = 1;	/* a peer may be free again */
		if (!now)
			now = maro_now_us();
		/* a task takes its first reply, and no other: a stray is a reply to none open */
		if (!maro_workq_find(&sc->q, d.msg.session_id, &i)) {
			sc->rq.strays++;
			maro_inbox_done(sc->rq.inbox, &d);
			continue;
		}
		t = maro_workq_task(&sc->q, i);
		if (t->peer != NO_PEER)
			maro_outbox_settle_at(sc->ob, sc->q.peers[t->peer].name, sc->q.peers[t->peer].name_h,
			    d.msg.session_id, t->out_at);
		if ((rc = failure_reply(sc, &d.msg, i)) < 0)
			return -1;
		if (!rc) {
			if (t->peer != NO_PEER)
				took_turn(sc, &sc->q.peers[t->peer], t, now);
			maro_workq_answer(&sc->q, i);
			if (maro_workq_reply(&sc->q, i, d.p, d.n) < 0)
				return -1;
		}
		maro_inbox_done(sc->rq.inbox, &d);
	}
	return moved;
}

size_t
maro_scatter_missing(const struct maro_scatter *sc)
{
	/* with async a task is done when delivered (on_ack): one never sent is missing too */
	return sc->q.ntasks - sc->q.ndone;
}

void
maro_scatter_unfinished(const struct maro_scatter *sc, size_t *open, size_t *waiting)
{
	*open = *waiting = 0;
	for (size_t i = maro_workq_first(&sc->q); i < sc->q.ntasks; i++) {
		const struct maro_workq_task *t = maro_workq_task(&sc->q, i);

		if (t && !t->done)
			++*(t->sent ? open : waiting);
	}
}

/* The oldest task open, out since then (its first send), or 0 when it has not gone out. */
static int64_t
oldest_out(const struct maro_scatter *sc)
{
	const struct maro_workq_task *t = maro_workq_task(&sc->q, maro_workq_first(&sc->q));

	return t && t->sent && !t->done ? t->first_at : 0;
}

int64_t
maro_scatter_wake(const struct maro_scatter *sc, int64_t wake)
{
	int64_t ob = maro_outbox_deadline(sc->ob);

	if (ob < wake)
		wake = ob;
	if (sc->task_timeout && sc->next_check < wake)
		wake = sc->next_check;
	if (sc->prefix && sc->next_refresh < wake)
		wake = sc->next_refresh;
	if (sc->rq.inbox && maro_inbox_ack_deadline(sc->rq.inbox) < wake)
		wake = maro_inbox_ack_deadline(sc->rq.inbox);
	/* a task out and no reply for STUCK_US double the cap: look then */
	if (sc->capped && oldest_out(sc)) {
		int64_t at = (oldest_out(sc) > sc->quiet_since ? oldest_out(sc) : sc->quiet_since) + STUCK_US;

		if (at < wake)
			wake = at;
	}
	return wake;
}

void
maro_scatter_job(const struct maro_scatter *sc, int64_t now, struct maro_stats_job *j)
{
	const struct maro_workq *q = &sc->q;
	double secs = (double)(now - sc->started_us) / 1e6;
	size_t open, waiting;

	maro_scatter_unfinished(sc, &open, &waiting);
	memset(j, 0, sizeof *j);
	j->start = sc->started_s;
	/* an input cut short by an error has ended too: what was read is all there is */
	j->total = sc->input_done ? (int64_t)q->ntasks : -1;
	j->read = q->ntasks;
	j->done = q->ndone - q->nfailed;
	j->failed = q->nfails;
	j->gaveup = q->nfailed;
	j->open = open;
	/* over less time, a rate would be noise */
	j->rate = secs >= 0.25 ? (double)q->ndone / secs : 0;
	j->eta = -1;
	if (j->total >= 0 && q->ndone == q->ntasks)
		j->eta = 0;
	else if (j->total >= 0 && j->rate > 0) {
		double left = (double)(q->ntasks - q->ndone) / j->rate;

		/* rounded up (no ceil: the tools load no libm) */
		j->eta = (int64_t)left;
		j->eta += (double)j->eta < left;
	}
}

void
maro_scatter_publish(const struct maro_scatter *sc, int64_t now)
{
	const struct maro_workq *q = &sc->q;
	struct maro_stats_job j;
	char job[MARO_STATS_JOB_MAX + 1];
	uint64_t flight = 0, window = 0;
	size_t p;

	for (p = 0; p < q->npeers; p++) {
		flight += q->peers[p].inflight;
		window += q->peers[p].live & 1 ? q->window : 0;
	}
	maro_stats.tasks_done = q->ndone - q->nfailed;
	maro_stats.tasks_failed = q->nfailed;
	maro_stats.has_flight = 1;
	maro_stats.tasks_inflight = flight;
	maro_stats.window_used = flight;
	maro_stats.window = window;
	if (!sc->rq.inbox)
		return;
	maro_scatter_job(sc, now, &j);
	maro_stats_job_text(&j, job, sizeof job);
	/* a registry that does not answer now is asked again at the heartbeat */
	maro_registry_set_job(sc->c->reg, sc->rq.name, job);
}

const char *
maro_scatter_payload(const struct maro_workq_task *t, struct maro_buf *b)
{
	struct maro_msg m;
	struct maro_err err;

	if (maro_msg_decode(&m, t->req, t->n, &err) < 0 || !m.payload.p ||
	    maro_cbor_to_diag(m.payload.p, m.payload.n, b, &err) < 0 || maro_buf_cstr(b) < 0)
		return "?";
	if (b->len > 200)
		memcpy(b->p + maro_joblog_cut(b->p, b->len, 197), "...", 4);
	return (const char *)b->p;
}

/* The peer of t's last attempt, or none. */
static struct maro_str
last_peer(const struct maro_scatter *sc, const struct maro_workq_task *t)
{
	return t->peer == NO_PEER ? (struct maro_str){ 0 } : maro_str_c(sc->q.peers[t->peer].name);
}

int
maro_scatter_record(const struct maro_scatter *sc, const struct maro_workq_task *t,
    const uint8_t *reply, size_t n, const char *why, struct maro_buf *out)
{
	struct maro_joblog_rec r = { 0 };
	struct maro_str worker = { 0 };
	struct maro_msg m;
	struct maro_err err;
	struct timespec ts;
	int64_t now = maro_now_us();

	clock_gettime(CLOCK_REALTIME, &ts);
	/* who answered: its reply's source, not the peer it went to last */
	if (!reply || maro_msg_text(reply, n, "source", &worker) != 1)
		worker = reply ? (struct maro_str){ 0 } : last_peer(sc, t);
	r.seq = t->seq;
	r.hash = t->hash;
	r.worker = worker.p;
	r.worker_n = worker.n;
	r.attempts = t->sends;
	r.duration_us = t->sent ? now - t->first_at : 0;
	r.start_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - r.duration_us;
	r.why = why;
	/* t->msg is gone once answered; its bytes are not */
	if (maro_msg_decode(&m, t->req, t->n, &err) == 0 && m.payload.p) {
		r.payload = m.payload.p;
		r.payload_n = m.payload.n;
	}
	return maro_joblog_format(out, &r);
}

int
maro_scatter_unsent(const struct maro_scatter *sc, const struct maro_workq_task *t,
    const char *why, struct maro_buf *out, struct maro_err *err)
{
	struct maro_buf note = { 0 };
	struct maro_str worker = last_peer(sc, t);
	int rc;

	rc = maro_buf_cbor_text(&note, "failed", 6) < 0 ||
	    maro_buf_cbor_head(&note, 5, worker.p ? 4 : 3) < 0 ||
	    maro_buf_cbor_text(&note, sc->in.tag ? "line" : "message", sc->in.tag ? 4 : 7) < 0 ||
	    maro_buf_cbor_head(&note, 0, t->seq) < 0 ||
	    maro_buf_cbor_text(&note, "attempts", 8) < 0 ||
	    maro_buf_cbor_head(&note, 0, t->attempts) < 0 ||
	    maro_buf_cbor_text(&note, "why", 3) < 0 ||
	    maro_buf_cbor_text(&note, why, strlen(why)) < 0 ||
	    (worker.p && (maro_buf_cbor_text(&note, "worker", 6) < 0 ||
	    maro_buf_cbor_text(&note, worker.p, worker.n) < 0)) ? -1 : 0;
	if (rc == 0)
		rc = maro_taskin_unsent(t->msg ? t->msg : t->req, t->n, &note, out, err);
	maro_buf_free(&note);
	return rc;
}

int
maro_scatter_round(struct maro_scatter *sc, struct maro_reader *r, size_t max, int64_t now)
{
	int64_t oldest = oldest_out(sc);
	int moved, rc = 0;

	/* the work to as few peers as keep up, packed (scatter.h) */
	sc->capped = sc->prefix && !sc->async;
	if (!oldest || now - oldest < STUCK_US) {
		sc->lifted = 0;	/* every task out went lately: none hangs */
	} else if (now - sc->quiet_since >= STUCK_US) {
		sc->lifted++;	/* and none came back for as long: more peers */
		sc->quiet_since = now;
	}
	maro_workq_order(&sc->q, open_max(sc) == SIZE_MAX ? MARO_WORKQ_TURNS :
	    sc->turn_us ? MARO_WORKQ_PACKED : MARO_WORKQ_LAST);
	if (maro_scatter_peers(sc, now, 0) < 0 || maro_scatter_timeouts(sc, now) < 0)
		return -1;
	maro_outbox_run(sc->ob);	/* acknowledgements make room */
	if ((moved = maro_scatter_take(sc, r, max)) < 0)
		return -1;
	if ((sc->after_pause && maro_scatter_peers(sc, now, 1) < 0) || (rc = maro_scatter_dispatch(sc)) < 0)
		return -1;
	maro_outbox_run(sc->ob);
	return moved | rc;
}

int
maro_scatter_wants_input(const struct maro_scatter *sc, size_t max)
{
	/*
	 * read only when what was read is used up: reading whenever the
	 * queue had room buffered the whole input (2 MB for 200k lines,
	 * without bound for more)
	 */
	return !sc->input_done && sc->want_input && maro_workq_queued(&sc->q) < take_max(sc, max);
}

int
maro_scatter_fill(struct maro_scatter *sc, struct maro_reader *r)
{
	if (maro_reader_fill(r) >= 0 || errno == EINTR)
		return 0;
	snprintf(sc->input_error, sizeof sc->input_error, "error reading standard input: %s",
	    strerror(errno));
	sc->input_done = 1;
	return -1;
}

int
maro_scatter_joblog(struct maro_scatter *sc, struct maro_joblog_file *log, const char *path,
    int resume, struct maro_err *err)
{
	if (maro_joblog_open(log, path, resume, err) < 0)
		return -1;
	sc->hash = 1;
	sc->resume = resume ? &log->had : NULL;
	sc->resume_name = path;
	return 0;
}

void
maro_scatter_flush_held(struct maro_scatter *sc)
{
	maro_io_interrupt = NULL;
	maro_deadline = maro_now_us() + 1000000;
	maro_workq_flush(&sc->q);
}

size_t
maro_scatter_live(const struct maro_scatter *sc)
{
	size_t p, live = 0;

	for (p = 0; p < sc->q.npeers; p++)
		live += (sc->q.peers[p].live & 1) != 0;
	return live;
}
