#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "workq.h"

#define NO_PEER MARO_WORKQ_NO_PEER

struct maro_workq_task *
maro_workq_task(const struct maro_workq *q, size_t i)
{
	return i >= q->base && i < q->ntasks ? q->tasks[i - q->base] : NULL;
}

/*
 * Task i is finished: free it, and once the oldest tasks are all finished
 * move the open ones to the front of tasks[].
 */
static void
task_free(struct maro_workq *q, size_t i)
{
	struct maro_workq_task *t = maro_workq_task(q, i);

	if (!t)
		return;
	if (t->sent)
		maro_strset_take_h(&q->by_session, t->session, t->session_n, t->session_h);
	free(t->reply);
	free(t);
	q->tasks[i - q->base] = NULL;
	while (q->first < q->ntasks && !q->tasks[q->first - q->base])
		q->first++;
	if (q->first - q->base >= 1024 && q->first - q->base >= (q->ntasks - q->base) / 2) {
		memmove(q->tasks, q->tasks + (q->first - q->base),
		    (q->ntasks - q->first) * sizeof *q->tasks);
		q->base = q->first;
	}
}

/*
 * Peer a goes before peer b (maro_workq_order): fewer tasks in flight (packed:
 * more), or as many and its turn came first (or it moved last).
 */
static int
before(const struct maro_workq *q, size_t a, size_t b)
{
	const struct maro_workq_peer *x = &q->peers[a], *y = &q->peers[b];

	if (x->inflight != y->inflight)
		return q->order == MARO_WORKQ_PACKED ? x->inflight > y->inflight : x->inflight < y->inflight;
	return q->order == MARO_WORKQ_TURNS ? x->turn < y->turn : x->turn > y->turn;
}

static void
heap_set(struct maro_workq *q, size_t k, size_t p)
{
	q->open[k] = p;
	q->peers[p].at = k;
}

/* The open peer at k moves up or down to its place. */
static void
heap_fix(struct maro_workq *q, size_t k)
{
	size_t p = q->open[k];

	while (k > 0 && before(q, p, q->open[(k - 1) / 2])) {
		heap_set(q, k, q->open[(k - 1) / 2]);
		k = (k - 1) / 2;
	}
	for (;;) {
		size_t c = 2 * k + 1;

		if (c >= q->nopen)
			break;
		if (c + 1 < q->nopen && before(q, q->open[c + 1], q->open[c]))
			c++;
		if (!before(q, q->open[c], p))
			break;
		heap_set(q, k, q->open[c]);
		k = c;
	}
	heap_set(q, k, p);
}

/*
 * Peer p's tasks in flight changed (moved) or whether it is live: it is
 * open for work while live and below its window, in turn after the open
 * peers with as many tasks in flight.
 */
static void
peer_update(struct maro_workq *q, size_t p, int moved)
{
	struct maro_workq_peer *e = &q->peers[p];
	int open = e->live && e->inflight < q->window;

	if (moved || (open && e->at == NO_PEER))
		e->turn = ++q->turns;
	if (open && e->at == NO_PEER) {
		e->at = q->nopen++;
		q->open[e->at] = p;
		heap_fix(q, e->at);
	} else if (!open && e->at != NO_PEER) {
		size_t k = e->at;

		e->at = NO_PEER;
		if (k < --q->nopen) {
			heap_set(q, k, q->open[q->nopen]);
			heap_fix(q, k);
		}
	} else if (open && moved) {
		heap_fix(q, e->at);
	}
}

/* Peer p has one task fewer in flight. */
static void
peer_less(struct maro_workq *q, size_t p)
{
	if (p != NO_PEER && q->peers[p].inflight) {
		q->peers[p].inflight--;
		peer_update(q, p, 1);
	}
}

void
maro_workq_free(struct maro_workq *q)
{
	size_t i;

	for (i = q->base; i < q->ntasks; i++) {
		struct maro_workq_task *t = maro_workq_task(q, i);

		if (t) {
			free(t->reply);
			free(t);
		}
	}
	free(q->tasks);
	free(q->queue);
	free(q->peers);
	free(q->open);
	maro_strset_free(&q->by_session);
	maro_strset_free(&q->by_name);
	memset(q, 0, sizeof *q);
}

/* Puts task i at the back of the queue. */
static int
enqueue(struct maro_workq *q, size_t i)
{
	if (q->head && q->head >= q->nqueue / 2) {
		memmove(q->queue, q->queue + q->head, (q->nqueue - q->head) * sizeof *q->queue);
		q->nqueue -= q->head;
		q->head = 0;
	}
	if (q->nqueue == q->queue_cap) {
		size_t cap = q->queue_cap ? q->queue_cap * 2 : 64;
		size_t *v = realloc(q->queue, cap * sizeof *v);

		if (!v)
			return -1;
		q->queue = v;
		q->queue_cap = cap;
	}
	q->queue[q->nqueue++] = i;
	return 0;
}

ssize_t
maro_workq_add(struct maro_workq *q, const uint8_t *req, size_t n,
    const struct maro_dest_at *dest, struct maro_str session)
{
	struct maro_workq_task *t;

	if (session.n > MARO_WORKQ_SESSION_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (q->ntasks - q->base == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct maro_workq_task **v = realloc(q->tasks, cap * sizeof *v);

		if (!v)
			return -1;
		q->tasks = v;
		q->cap = cap;
	}
	/* one block for the task and its request: 1 allocation, not 2 of odd sizes */
	t = calloc(1, sizeof *t + n);
	if (!t)
		return -1;
	memcpy(t->req, req, n);
	t->msg = t->req;
	t->n = n;
	t->dest = *dest;
	t->peer = t->failed_at = NO_PEER;
	memcpy(t->session, session.p, session.n);
	t->session[session.n] = '\0';
	t->session_n = session.n;
	t->session_h = maro_hash64(session.p, session.n);
	if (enqueue(q, q->ntasks) < 0) {
		free(t);
		return -1;
	}
	q->tasks[q->ntasks - q->base] = t;
	return (ssize_t)q->ntasks++;
}

size_t
maro_workq_queued(const struct maro_workq *q)
{
	return q->nqueue - q->head;
}

int
maro_workq_head(struct maro_workq *q, size_t *i)
{
	while (q->head < q->nqueue) {
		struct maro_workq_task *t = maro_workq_task(q, q->queue[q->head]);

		/* answered after its peer was given up on: nothing to send */
		if (t && !t->done) {
			*i = q->queue[q->head];
			return 1;
		}
		q->head++;
	}
	return 0;
}

void
maro_workq_pop(struct maro_workq *q)
{
	if (q->head < q->nqueue)
		q->head++;
}

size_t
maro_workq_pick(struct maro_workq *q, int past_window)
{
	size_t i, best = q->nopen ? q->open[0] : NO_PEER;

	/* past the window (--async: acks, not replies, free a peer): round robin over the live */
	for (i = 0; best == NO_PEER && past_window && i < q->npeers; i++) {
		size_t p = (q->rr + i) % q->npeers;

		if (q->peers[p].live)
			best = p;
	}
	if (best != NO_PEER)
		q->rr = best + 1;
	return best;
}

size_t
maro_workq_pick_for(struct maro_workq *q, size_t i, int past_window)
{
	const struct maro_workq_task *t = maro_workq_task(q, i);
	size_t c;

	/* the second in line is a child of the first in the heap */
	if (t && t->failed_at != NO_PEER && q->nopen > 1 && q->open[0] == t->failed_at) {
		c = q->nopen > 2 && before(q, q->open[2], q->open[1]) ? 2 : 1;
		q->rr = q->open[c] + 1;
		return q->open[c];
	}
	return maro_workq_pick(q, past_window);
}

void
maro_workq_order(struct maro_workq *q, int order)
{
	size_t k, n = q->nopen;

	if (order == q->order)
		return;
	q->order = order;
	/* the heap again, in the new order: each peer put in as the last leaf */
	for (q->nopen = 0, k = 0; k < n; k++) {
		q->nopen++;
		heap_fix(q, k);
	}
}

int
maro_workq_sent(struct maro_workq *q, size_t i, size_t p, int64_t now)
{
	struct maro_workq_task *t = maro_workq_task(q, i);

	/*
	 * only now can a reply or an ack come for it: the tasks read ahead
	 * stay out of this table, which stays small
	 */
	if (!t->sent) {
		if (maro_strset_put_h(&q->by_session, t->session, t->session_n, t->session_h, i) < 0)
			return -1;
		t->sent = 1;
		t->first_at = now;
	}
	t->sends++;
	t->peer = p;
	t->sent_at = now;
	if (p != NO_PEER) {
		q->peers[p].inflight++;
		peer_update(q, p, 1);
	}
	return 0;
}

int
maro_workq_find(const struct maro_workq *q, struct maro_str session, size_t *i)
{
	uint64_t v;
	const struct maro_workq_task *t;

	if (!session.p || !maro_strset_get(&q->by_session, session.p, session.n, &v) ||
	    !(t = maro_workq_task(q, v)) || t->done)
		return 0;
	*i = v;
	return 1;
}

struct maro_workq_task *
maro_workq_answer(struct maro_workq *q, size_t i)
{
	struct maro_workq_task *t = maro_workq_task(q, i);

	t->done = 1;
	q->ndone++;
	peer_less(q, t->peer);
	t->msg = NULL;
	return t;
}

struct maro_workq_task *
maro_workq_answered(struct maro_workq *q, struct maro_str session, size_t *i)
{
	return maro_workq_find(q, session, i) ? maro_workq_answer(q, *i) : NULL;
}

static void
put(struct maro_workq *q, size_t i, const struct maro_workq_task *t, const uint8_t *p, size_t n)
{
	q->put(q->arg, p, n);
	if (q->written)
		q->written(q->arg, i, t, p, n);
}

/* Ordered: writes the replies whose tasks before them are all finished. */
static void
ordered_out(struct maro_workq *q)
{
	while (q->next_out < q->ntasks && maro_workq_task(q, q->next_out)->done) {
		struct maro_workq_task *o = maro_workq_task(q, q->next_out);

		if (o->reply)
			put(q, q->next_out, o, o->reply, o->reply_n);
		task_free(q, q->next_out++);
	}
}

int
maro_workq_reply(struct maro_workq *q, size_t i, const uint8_t *p, size_t n)
{
	struct maro_workq_task *t = maro_workq_task(q, i);

	if (!q->ordered) {
		if (p)
			put(q, i, t, p, n);
		task_free(q, i);
		return 0;
	}
	if (p) {
		t->reply = malloc(n ? n : 1);
		if (!t->reply)
			return -1;
		memcpy(t->reply, p, n);
		t->reply_n = n;
	}
	ordered_out(q);
	return 0;
}

int
maro_workq_fail(struct maro_workq *q, size_t i, const char *why)
{
	struct maro_workq_task *t = maro_workq_task(q, i);

	peer_less(q, t->peer);
	t->attempts++;
	q->nfails++;
	if (!q->retries || t->attempts < q->retries) {
		t->failed_at = t->peer;
		t->peer = NO_PEER;
		return enqueue(q, i);
	}
	t->done = t->failed = 1;
	q->ndone++;
	q->nfailed++;
	if (q->given_up)
		q->given_up(q->arg, i, t, why);
	if (q->ordered)
		ordered_out(q);
	else
		task_free(q, i);
	return 0;
}

int
maro_workq_overdue(const struct maro_workq *q, int64_t now, int64_t timeout, size_t *i)
{
	for (; *i < q->ntasks; ++*i) {
		struct maro_workq_task *t = maro_workq_task(q, *i);

		if (t && !t->done && t->peer != NO_PEER && now - t->sent_at >= timeout)
			return 1;
	}
	return 0;
}

size_t
maro_workq_first(const struct maro_workq *q)
{
	return q->first;
}

void
maro_workq_peers_begin(struct maro_workq *q)
{
	size_t p;

	for (p = 0; p < q->npeers; p++)
		q->peers[p].live |= 2;	/* to be confirmed */
}

int
maro_workq_peer_seen(struct maro_workq *q, const char *name)
{
	struct maro_workq_peer *v;
	size_t p = maro_workq_peer_find(q, name), *o;
	int was;

	if (p == NO_PEER) {
		p = q->npeers;
		v = realloc(q->peers, (q->npeers + 1) * sizeof *v);
		if (!v)
			return -1;
		q->peers = v;
		o = realloc(q->open, (q->npeers + 1) * sizeof *o);
		if (!o)
			return -1;
		q->open = o;
		if (maro_strset_put(&q->by_name, name, strlen(name), p) < 0)
			return -1;
		memset(&q->peers[p], 0, sizeof *q->peers);
		snprintf(q->peers[p].name, sizeof q->peers[p].name, "%s", name);
		q->peers[p].name_h = maro_hash64(name, strlen(name));
		q->peers[p].at = NO_PEER;
		q->npeers++;
	}
	was = q->peers[p].live;
	q->peers[p].live = 1;
	/* one that left is 2 here, not 0, when maro_workq_peers_begin came first (a listing) */
	if (!(was & 1))
		peer_update(q, p, 0);
	return !was;
}

size_t
maro_workq_peer_find(const struct maro_workq *q, const char *name)
{
	uint64_t p;

	return maro_strset_get(&q->by_name, name, strlen(name), &p) ? (size_t)p : NO_PEER;
}

size_t
maro_workq_peer_gone(const struct maro_workq *q)
{
	size_t p;

	for (p = 0; p < q->npeers; p++)
		if (q->peers[p].live & 2)
			return p;
	return NO_PEER;
}

int
maro_workq_peer_replaced(struct maro_workq *q, size_t p, unsigned *inflight)
{
	size_t i;

	*inflight = q->peers[p].inflight;
	for (i = q->first; i < q->ntasks; i++) {
		struct maro_workq_task *t = maro_workq_task(q, i);

		if (t && !t->done && t->peer == p && maro_workq_fail(q, i, "its peer left") < 0)
			return -1;
	}
	q->peers[p].inflight = 0;
	peer_update(q, p, 1);
	return 0;
}

int
maro_workq_peer_lost(struct maro_workq *q, size_t p, unsigned *inflight)
{
	q->peers[p].live = 0;
	peer_update(q, p, 0);
	return maro_workq_peer_replaced(q, p, inflight);
}

void
maro_workq_flush(struct maro_workq *q)
{
	size_t i;

	for (i = q->next_out; i < q->ntasks; i++) {
		struct maro_workq_task *t = maro_workq_task(q, i);

		if (t && t->done && t->reply)
			put(q, i, t, t->reply, t->reply_n);
	}
}

/* a time left, rounded to the second (maro_duration_text) */
static void
say_duration(char *out, size_t len, double secs)
{
	maro_duration_text(out, len, secs < 0 ? 0 : secs > 359999 ? 359999 : (int64_t)(secs + 0.5));
}

void
maro_workq_progress(const struct maro_workq *q, double secs, double idle, int total_known, char *out,
    size_t len)
{
	double rate = secs > 0 ? (double)q->ndone / secs : 0.0;
	/* the time left when the last task finished, at the rate then */
	double was_left = secs > idle && q->ndone ? (double)(q->ntasks - q->ndone) * (secs - idle) / (double)q->ndone : 0;
	char eta[64] = "", left[32], failed[32] = "";

	/* stalled: no time left can be told, only how long nothing moved */
	if (q->ndone && q->ndone < q->ntasks && idle >= 2 && idle >= 2 * was_left) {
		say_duration(left, sizeof left, idle);
		snprintf(eta, sizeof eta, ", none finished for %s", left);
	} else if (total_known && q->ndone < q->ntasks && rate > 0) {
		say_duration(left, sizeof left, (double)(q->ntasks - q->ndone) / rate);
		snprintf(eta, sizeof eta, ", %s left", strcmp(left, "0s") ? left : "<1s");
	}
	if (q->nfailed)
		snprintf(failed, sizeof failed, ", %zu given up", q->nfailed);
	snprintf(out, len, "%zu/%zu%s done%s, %.0f/s%s", q->ndone - q->nfailed, q->ntasks,
	    total_known ? "" : "+", failed, rate, eta);
}
