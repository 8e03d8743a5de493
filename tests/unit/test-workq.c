#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "workq.h"

struct seen {
	char out[64];		/* the replies written, one letter each */
	size_t given_up[8], ngiven_up;
	size_t given_up_peer;	/* the peer of the last one's last attempt */
	char written[64];	/* the tasks whose reply was written, a digit each, and their sends */
};

static void
put(void *arg, const uint8_t *p, size_t n)
{
	struct seen *w = arg;

	strncat(w->out, (const char *)p, n);
}

static void
given_up(void *arg, size_t i, const struct maro_workq_task *t, const char *why)
{
	struct seen *w = arg;

	if (w->ngiven_up < 8 && t->msg && t->failed && why)
		w->given_up[w->ngiven_up++] = i;
	w->given_up_peer = t->peer;
}

static void
written(void *arg, size_t i, const struct maro_workq_task *t, const uint8_t *p, size_t n)
{
	struct seen *w = arg;
	size_t k = strlen(w->written);

	(void)p;
	(void)n;
	if (k + 3 < sizeof w->written)
		snprintf(w->written + k, 3, "%zu%u", i, t->sends);
}

static size_t
add(struct maro_workq *q, const char *session)
{
	struct maro_dest_at d = { 0 };

	return (size_t)maro_workq_add(q, (const uint8_t *)"req", 3, &d, maro_str_c(session));
}

/* Takes the head of the queue and sends it to the peer picked: that peer, or NO_PEER. */
static size_t
send_next(struct maro_workq *q, size_t *task)
{
	size_t i, p;

	if (!maro_workq_head(q, &i) || (p = maro_workq_pick(q, 0)) == MARO_WORKQ_NO_PEER)
		return MARO_WORKQ_NO_PEER;
	maro_workq_sent(q, i, p, 1000);
	maro_workq_pop(q);
	*task = i;
	return p;
}

static void
answer(struct maro_workq *q, const char *session, const char *reply)
{
	size_t i;

	if (maro_workq_answered(q, maro_str_c(session), &i))
		maro_workq_reply(q, i, (const uint8_t *)reply, strlen(reply));
}

/* Peer p is listed when bit p of mask is set. */
static int
in_mask(unsigned long mask, size_t p)
{
	return mask >> p & 1;
}

/* Peer p is listed unless (p + r) % 5 is 0: a fifth leave, or stay away. */
static int
most(unsigned long r, size_t p)
{
	return (p + r) % 5 != 0;
}

/*
 * A registry listing as maro-scatter's refresh makes it: of peers 0 to
 * npeers - 1 ("w.p"), those that listed(arg, p) names are seen, the others
 * leave and their tasks go back to the queue; the tasks they had in
 * flight, summed.
 */
static unsigned
listing(struct maro_workq *q, size_t npeers, int (*listed)(unsigned long, size_t), unsigned long arg)
{
	char name[32];
	unsigned n, left = 0;
	size_t p;

	maro_workq_peers_begin(q);
	for (p = 0; p < npeers; p++)
		if (listed(arg, p)) {
			snprintf(name, sizeof name, "w.%zu", p);
			maro_workq_peer_seen(q, name);
		}
	while ((p = maro_workq_peer_gone(q)) != MARO_WORKQ_NO_PEER) {
		maro_workq_peer_lost(q, p, &n);
		left += n;
	}
	return left;
}

/* Each peer open for work (live, below the window) is in the heap at its place, and no other. */
static int
heap_ok(const struct maro_workq *q)
{
	size_t p, nopen = 0;

	for (p = 0; p < q->npeers; p++) {
		int open = (q->peers[p].live & 1) && q->peers[p].inflight < q->window;

		if (open != (q->peers[p].at != MARO_WORKQ_NO_PEER) ||
		    (open && (q->peers[p].at >= q->nopen || q->open[q->peers[p].at] != p)))
			return 0;
		nopen += open;
	}
	return nopen == q->nopen;
}

/* The fewest in flight among the live peers below the window (UINT_MAX: none), by looking at each. */
static unsigned
fewest(const struct maro_workq *q)
{
	unsigned least = UINT_MAX;
	size_t p;

	for (p = 0; p < q->npeers; p++)
		if (q->peers[p].live && q->peers[p].inflight < q->window && q->peers[p].inflight < least)
			least = q->peers[p].inflight;
	return least;
}

/* The most in flight among the live peers below the window (UINT_MAX: none), by looking at each. */
static unsigned
most_inflight(const struct maro_workq *q)
{
	unsigned m = UINT_MAX;
	size_t p;

	for (p = 0; p < q->npeers; p++)
		if (q->peers[p].live && q->peers[p].inflight < q->window &&
		    (m == UINT_MAX || q->peers[p].inflight > m))
			m = q->peers[p].inflight;
	return m;
}

/*
 * 300 peers, window 3, 20,000 random steps (a task sent, answered, timed
 * out; a peer that leaves, comes back, or is replaced): each pick is a
 * live peer with the fewest in flight below the window, as looking at
 * every peer finds (packed: the most), and none only when there is none;
 * peers with as many take turns.  The order changes now and then.
 */
static void
test_workq_pick(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t i, p, task, bad = 0, heap_wrong = 0;
	unsigned n, seed = 7, turns_ok = 1;
	char sid[32];

	q.window = 3;
	q.put = put;
	q.arg = &w;
	for (p = 0; p < 300; p++) {
		snprintf(sid, sizeof sid, "w.%zu", p);
		maro_workq_peer_seen(&q, sid);
	}
	/* all at 0: each is picked once before any is picked again */
	for (i = 0; i < 300; i++) {
		snprintf(sid, sizeof sid, "t%zu", i);
		add(&q, sid);
		p = send_next(&q, &task);
		if (p == MARO_WORKQ_NO_PEER || q.peers[p].inflight != 1)
			turns_ok = 0;
	}
	CHECK(turns_ok && fewest(&q) == 1);
	for (i = 300; i < 20300; i++) {
		unsigned r;
		size_t k;

		seed = seed * 1103515245 + 12345;
		r = seed >> 16;
		switch (r % 8) {
		case 0: case 1: case 2:	/* a new task goes out */
			snprintf(sid, sizeof sid, "t%zu", i);
			add(&q, sid);
			/* FALLTHROUGH */
		case 3:	/* the queue's head, if a peer has room */
			n = q.order == MARO_WORKQ_PACKED ? most_inflight(&q) : fewest(&q);
			p = maro_workq_head(&q, &k) ? send_next(&q, &task) : MARO_WORKQ_NO_PEER;
			if (maro_workq_head(&q, &k) || p != MARO_WORKQ_NO_PEER)
				bad += p == MARO_WORKQ_NO_PEER ? n != UINT_MAX : q.peers[p].inflight != n + 1;
			break;
		case 4: case 5:	/* an answer to a task in flight */
			k = maro_workq_first(&q) + (r >> 3) % (q.ntasks - maro_workq_first(&q) + 1);
			if (maro_workq_task(&q, k) && maro_workq_task(&q, k)->peer != MARO_WORKQ_NO_PEER)
				answer(&q, maro_workq_task(&q, k)->session, "");
			break;
		case 6:	/* a task in flight timed out */
			k = maro_workq_first(&q) + (r >> 3) % (q.ntasks - maro_workq_first(&q) + 1);
			if (maro_workq_task(&q, k) && !maro_workq_task(&q, k)->done &&
			    maro_workq_task(&q, k)->peer != MARO_WORKQ_NO_PEER)
				maro_workq_fail(&q, k, "timed out");
			break;
		default:	/* a peer leaves, comes back, or is replaced; or a listing */
			p = (r >> 3) % q.npeers;
			/* r is 16 bits: its bit 16, which chose a replacement, was always 0 */
			seed = seed * 1103515245 + 12345;
			if ((seed >> 16) % 8 == 7)	/* the scatter's order changes */
				maro_workq_order(&q, (int)(seed >> 19) % 3);
			else if ((seed >> 16) % 4 == 0)
				listing(&q, q.npeers, most, seed >> 18);
			else if ((seed >> 16) % 4 == 1)
				maro_workq_peer_replaced(&q, p, &n);
			else if (q.peers[p].live)
				maro_workq_peer_lost(&q, p, &n);
			else
				maro_workq_peer_seen(&q, q.peers[p].name);
			break;
		}
		heap_wrong += !heap_ok(&q);
	}
	CHECK(bad == 0 && heap_wrong == 0);
	maro_workq_free(&q);
}

/* Where n tasks go over four peers (window 3) in that order: how many each took, "2211". */
static void
spread(int order, unsigned n, char out[5])
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t p, task;
	char sid[32];
	unsigned i;

	q.window = 3;
	q.put = put;
	q.arg = &w;
	for (p = 0; p < 4; p++) {
		snprintf(sid, sizeof sid, "w.%zu", p);
		maro_workq_peer_seen(&q, sid);
	}
	maro_workq_order(&q, order);
	for (i = 0; i < n; i++) {
		snprintf(sid, sizeof sid, "t%u", i);
		add(&q, sid);
		send_next(&q, &task);
	}
	for (p = 0; p < 4; p++)
		out[p] = (char)('0' + q.peers[p].inflight);
	out[4] = '\0';
	maro_workq_free(&q);
}

/*
 * The orders of the pick: six tasks over four peers with a window of 3
 * are spread (2, 2, 1, 1: taking turns from the first peer, or from the
 * one that moved last) or packed (two windows full, from the last peer
 * to join); a peer that
 * answered gets the next task first (LAST), or after those that waited
 * longer (TURNS); an order that changes with tasks in flight keeps every
 * open peer in the heap.
 */
static void
test_workq_order(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t p, task;
	char got[5], sid[32];
	int order;

	spread(MARO_WORKQ_TURNS, 6, got);
	CHECK(strcmp(got, "2211") == 0);
	spread(MARO_WORKQ_LAST, 6, got);
	CHECK(strcmp(got, "2211") == 0);
	spread(MARO_WORKQ_PACKED, 6, got);
	CHECK(strcmp(got, "0033") == 0);
	spread(MARO_WORKQ_PACKED, 7, got);
	CHECK(strcmp(got, "0133") == 0);
	for (order = MARO_WORKQ_TURNS; order <= MARO_WORKQ_LAST; order++) {
		q.window = 2;
		q.put = put;
		q.arg = &w;
		for (p = 0; p < 4; p++) {
			snprintf(sid, sizeof sid, "w.%zu", p);
			maro_workq_peer_seen(&q, sid);
		}
		maro_workq_order(&q, order);
		add(&q, "a");
		add(&q, "b");
		add(&q, "c");
		p = send_next(&q, &task);
		send_next(&q, &task);
		answer(&q, "a", "A");
		/* TURNS: the third peer, idle since it joined; LAST: the first, which just answered */
		CHECK(send_next(&q, &task) == (order == MARO_WORKQ_TURNS ? 2 : p));
		maro_workq_order(&q, MARO_WORKQ_PACKED);
		CHECK(heap_ok(&q) && q.nopen == 4);
		maro_workq_free(&q);
		memset(&w, 0, sizeof w);
	}
}

/*
 * The soak's Redis restart: a listing finds none of the six peers, which
 * leave with two tasks each in flight, back to the queue; the next finds
 * them all again. They take the twelve tasks again, two each, and then a
 * peer that leaves alone and comes back, or is replaced meanwhile, takes
 * tasks too.
 */
static void
test_workq_rejoin(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t i, p, task, per[6] = { 0 };
	unsigned n;
	int all2 = 1;
	char sid[32];

	q.window = 2;
	q.put = put;
	q.arg = &w;
	CHECK(listing(&q, 6, in_mask, 0x3f) == 0 && q.npeers == 6 && heap_ok(&q));
	for (i = 0; i < 20; i++) {
		snprintf(sid, sizeof sid, "t%zu", i);
		add(&q, sid);
	}
	for (i = 0; i < 12; i++)
		CHECK(send_next(&q, &task) != MARO_WORKQ_NO_PEER);
	CHECK(send_next(&q, &task) == MARO_WORKQ_NO_PEER);
	/* Redis restarted: no one listed, all six leave with 2 each */
	CHECK(listing(&q, 6, in_mask, 0) == 12 && q.nopen == 0 && heap_ok(&q));
	/* they registered again: all six live, not new, and open */
	CHECK(listing(&q, 6, in_mask, 0x3f) == 0 && heap_ok(&q));
	CHECK(q.nopen == 6);
	for (i = 0; i < 12; i++) {
		p = send_next(&q, &task);
		if (p == MARO_WORKQ_NO_PEER)
			break;
		per[p]++;
	}
	CHECK(i == 12);
	for (p = 0; p < 6; p++)
		all2 &= per[p] == 2;
	CHECK(all2 && send_next(&q, &task) == MARO_WORKQ_NO_PEER && heap_ok(&q));
	/* w.3 alone leaves and comes back; w.4 is replaced (a new holder) meanwhile */
	CHECK(listing(&q, 6, in_mask, 0x37) == 2 && heap_ok(&q));
	CHECK(maro_workq_peer_replaced(&q, 4, &n) == 0 && n == 2 && heap_ok(&q));
	CHECK(listing(&q, 6, in_mask, 0x3f) == 0 && heap_ok(&q) && q.nopen == 2);
	p = send_next(&q, &task);
	CHECK(p == 3 || p == 4);
	maro_workq_free(&q);
}

/*
 * A task whose attempt failed at a peer goes to another one with room,
 * back to the same only when it alone has room.
 */
static void
test_workq_elsewhere(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t i, p, other, task;

	q.window = 1;
	q.retries = 3;
	q.put = put;
	q.arg = &w;
	maro_workq_peer_seen(&q, "a");
	maro_workq_peer_seen(&q, "b");
	maro_workq_peer_seen(&q, "c");
	/* as a scatter orders them once replies came: the last to move first, which p is */
	maro_workq_order(&q, MARO_WORKQ_LAST);
	add(&q, "x");
	add(&q, "y");
	p = send_next(&q, &task);
	CHECK(p != MARO_WORKQ_NO_PEER && task == 0);
	CHECK(maro_workq_fail(&q, 0, "failed") == 0 && maro_workq_task(&q, 0)->failed_at == p);
	/* x is behind y now; y goes anywhere, then x not to p while another has room */
	CHECK(send_next(&q, &task) != MARO_WORKQ_NO_PEER && task == 1);
	CHECK(maro_workq_head(&q, &i) && i == 0);
	other = maro_workq_pick_for(&q, i, 0);
	CHECK(other != MARO_WORKQ_NO_PEER && other != p);
	CHECK(maro_workq_sent(&q, i, other, 2000) == 0);
	maro_workq_pop(&q);
	/* failed there too: of p and other, both with room, p */
	CHECK(maro_workq_fail(&q, 0, "failed") == 0 && maro_workq_task(&q, 0)->failed_at == other);
	CHECK(q.nopen == 2 && maro_workq_head(&q, &i) && maro_workq_pick_for(&q, i, 0) != other);
	maro_workq_free(&q);
}

/*
 * A task that fails again and again goes back to the queue each time: the
 * queue is compacted as it goes, its room the few tasks waiting, not every
 * attempt made.
 */
static void
test_workq_requeue(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	size_t i, task, lost = 0;

	q.window = 1;
	q.put = put;
	q.arg = &w;
	maro_workq_peer_seen(&q, "w.1");
	CHECK(add(&q, "s0") == 0 && add(&q, "s1") == 1);
	for (i = 0; i < 100000; i++) {
		if (send_next(&q, &task) == MARO_WORKQ_NO_PEER || maro_workq_fail(&q, task, "x") < 0)
			lost++;
	}
	CHECK(lost == 0 && maro_workq_queued(&q) == 2);
	CHECK(q.queue_cap <= 64);
	maro_workq_free(&q);
}

void
test_workq(void)
{
	struct maro_workq q = { 0 };
	struct seen w = { 0 };
	struct maro_dest_at d = { 0 };
	char longid[200], text[128];
	size_t i, t0, t1, t2, a, b;
	unsigned n;

	q.window = 1;
	q.put = put;
	q.given_up = given_up;
	q.arg = &w;
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	CHECK(maro_workq_add(&q, (const uint8_t *)"r", 1, &d, maro_str_c(longid)) == -1);
	CHECK(add(&q, "s0") == 0 && add(&q, "s1") == 1 && add(&q, "s2") == 2);
	CHECK(q.ntasks == 3 && maro_workq_queued(&q) == 3);
	/* no peer yet: nothing to pick */
	CHECK(maro_workq_pick(&q, 1) == MARO_WORKQ_NO_PEER);
	maro_workq_peers_begin(&q);
	CHECK(maro_workq_peer_seen(&q, "a") == 1 && maro_workq_peer_seen(&q, "b") == 1);
	CHECK(maro_workq_peer_gone(&q) == MARO_WORKQ_NO_PEER);
	/* window 1: each peer takes one, then none has room (but past the window one does) */
	a = send_next(&q, &t0);
	b = send_next(&q, &t1);
	CHECK(a != MARO_WORKQ_NO_PEER && b != MARO_WORKQ_NO_PEER && a != b);
	CHECK(t0 == 0 && t1 == 1 && q.peers[a].inflight == 1 && q.peers[b].inflight == 1);
	CHECK(maro_workq_pick(&q, 0) == MARO_WORKQ_NO_PEER && maro_workq_pick(&q, 1) != MARO_WORKQ_NO_PEER);
	/* an answer frees its peer, and a second answer to the same session is nothing */
	answer(&q, "s1", "B");
	CHECK(q.ndone == 1 && q.peers[b].inflight == 0 && !strcmp(w.out, "B"));
	answer(&q, "s1", "B");
	CHECK(q.ndone == 1 && !strcmp(w.out, "B"));
	CHECK(send_next(&q, &t2) == b && t2 == 2);
	/* overdue: only what was sent before now - timeout */
	i = maro_workq_first(&q);
	CHECK(maro_workq_overdue(&q, 1500, 1000, &i) == 0);
	i = maro_workq_first(&q);
	CHECK(maro_workq_overdue(&q, 2000, 1000, &i) == 1 && i == 0);
	/* peer a left: its task goes back to the queue, and to b once b has room */
	maro_workq_peers_begin(&q);
	CHECK(maro_workq_peer_seen(&q, "b") == 0);
	CHECK(maro_workq_peer_gone(&q) == a);
	CHECK(maro_workq_peer_lost(&q, a, &n) == 0 && n == 1 && q.peers[a].inflight == 0);
	CHECK(maro_workq_peer_gone(&q) == MARO_WORKQ_NO_PEER && !q.peers[a].live);
	CHECK(maro_workq_task(&q, 0)->attempts == 1 && maro_workq_queued(&q) == 1);
	CHECK(send_next(&q, &t0) == MARO_WORKQ_NO_PEER);
	answer(&q, "s2", "C");
	CHECK(send_next(&q, &t0) == b && t0 == 0);
	answer(&q, "s0", "A");
	CHECK(q.ndone == 3 && q.ntasks == 3 && !strcmp(w.out, "BCA"));
	CHECK(maro_workq_first(&q) == 3 && maro_workq_task(&q, 0) == NULL);
	/* a peer that comes back is live again, not new */
	maro_workq_peers_begin(&q);
	CHECK(maro_workq_peer_seen(&q, "a") == 0 && q.peers[a].live == 1);
	maro_workq_progress(&q, 1.0, 0, 1, text, sizeof text);
	CHECK(!strcmp(text, "3/3 done, 3/s"));
	maro_workq_free(&q);

	/* ordered, with retries 2: replies in input order; a task given up leaves a hole */
	memset(&w, 0, sizeof w);
	q.window = 4;
	q.retries = 2;
	q.ordered = 1;
	q.put = put;
	q.given_up = given_up;
	q.written = written;
	q.arg = &w;
	add(&q, "o0");
	add(&q, "o1");
	add(&q, "o2");
	maro_workq_peer_seen(&q, "p");
	/* a task is found by its session from its send until it is answered or given up */
	CHECK(!maro_workq_find(&q, maro_str_c("o0"), &i));
	CHECK(send_next(&q, &t0) == 0 && send_next(&q, &t1) == 0 && send_next(&q, &t2) == 0);
	CHECK(maro_workq_find(&q, maro_str_c("o1"), &i) && i == 1 && !maro_workq_find(&q, maro_str_c("o9"), &i));
	answer(&q, "o2", "Z");
	answer(&q, "o1", "Y");
	CHECK(!strcmp(w.out, "") && q.ndone == 2 && !strcmp(w.written, ""));
	/* answered, its reply held for the order: no longer found */
	CHECK(!maro_workq_find(&q, maro_str_c("o1"), &i) && maro_workq_find(&q, maro_str_c("o0"), &i) && i == 0);
	/* o0 fails once (back to the queue), then again: given up, and the held replies go out */
	CHECK(maro_workq_fail(&q, 0, "timed out") == 0 && w.ngiven_up == 0 && q.peers[0].inflight == 0);
	CHECK(send_next(&q, &t0) == 0 && t0 == 0);
	CHECK(maro_workq_fail(&q, 0, "timed out") == 0 && w.ngiven_up == 1 && w.given_up[0] == 0);
	CHECK(!maro_workq_find(&q, maro_str_c("o0"), &i));
	CHECK(q.nfailed == 1 && q.ndone == 3 && q.nfails == 2 && !strcmp(w.out, "YZ"));
	/* told of each reply as it is written, in order, not as it came; the given up kept its peer */
	CHECK(!strcmp(w.written, "1121") && w.given_up_peer == 0);
	/* a task given up is not done */
	maro_workq_progress(&q, 0, 0, 0, text, sizeof text);
	CHECK(!strcmp(text, "2/3+ done, 1 given up, 0/s"));
	/* one left, three finished in 7 s: 2.3 s were left then; stalled once twice that passed */
	add(&q, "o3");
	maro_workq_progress(&q, 10.0, 1.9, 1, text, sizeof text);
	CHECK(!strcmp(text, "2/4 done, 1 given up, 0/s, 3s left"));
	maro_workq_progress(&q, 10.0, 3.0, 1, text, sizeof text);
	CHECK(!strcmp(text, "2/4 done, 1 given up, 0/s, 3s left"));
	maro_workq_progress(&q, 10.0, 5.0, 1, text, sizeof text);
	CHECK(!strcmp(text, "2/4 done, 1 given up, 0/s, none finished for 5s"));
	/* at exactly twice (4 s idle, 2 s left at 6 s): stalled already */
	maro_workq_progress(&q, 10.0, 4.0, 1, text, sizeof text);
	CHECK(!strcmp(text, "2/4 done, 1 given up, 0/s, none finished for 4s"));
	/* quick ones: under a second left */
	maro_workq_progress(&q, 0.1, 0.05, 1, text, sizeof text);
	CHECK(!strcmp(text, "2/4 done, 1 given up, 30/s, <1s left"));
	maro_workq_free(&q);

	/* ordered flush: the replies behind a hole are written at the end, in order */
	memset(&w, 0, sizeof w);
	q.window = 4;
	q.ordered = 1;
	q.put = put;
	q.arg = &w;
	add(&q, "f0");
	add(&q, "f1");
	add(&q, "f2");
	maro_workq_peer_seen(&q, "p");
	CHECK(send_next(&q, &t0) == 0 && send_next(&q, &t1) == 0 && send_next(&q, &t2) == 0);
	answer(&q, "f2", "3");
	answer(&q, "f1", "2");
	CHECK(!strcmp(w.out, ""));
	maro_workq_flush(&q);
	CHECK(!strcmp(w.out, "23"));
	maro_workq_free(&q);

	/* a long run holds only the open tasks: tasks[] moves them to the front */
	memset(&w, 0, sizeof w);
	q.window = 1;
	q.put = put;
	q.arg = &w;
	maro_workq_peer_seen(&q, "p");
	for (i = 0; i < 100000; i++) {
		char sid[32];

		snprintf(sid, sizeof sid, "l%zu", i);
		add(&q, sid);
		if (send_next(&q, &t0) != 0 || t0 != i)
			break;
		if (maro_workq_answered(&q, maro_str_c(sid), &t1))
			maro_workq_reply(&q, t1, NULL, 0);
	}
	CHECK(i == 100000 && q.ndone == 100000 && q.cap <= 2048 && q.by_session.used == 0);
	maro_workq_free(&q);

	/*
	 * retries 2: a peer whose name a new process took (a restarted worker)
	 * failed its task an attempt, and stays live; the second such gives it up
	 */
	memset(&w, 0, sizeof w);
	q.window = 1;
	q.retries = 2;
	q.put = put;
	q.given_up = given_up;
	q.arg = &w;
	add(&q, "k0");
	maro_workq_peer_seen(&q, "p");
	CHECK(send_next(&q, &t0) == 0 && t0 == 0);
	CHECK(maro_workq_peer_replaced(&q, 0, &n) == 0 && n == 1 && q.peers[0].live == 1);
	CHECK(q.peers[0].inflight == 0 && maro_workq_task(&q, 0)->attempts == 1 && w.ngiven_up == 0);
	CHECK(send_next(&q, &t0) == 0 && t0 == 0);
	CHECK(maro_workq_peer_replaced(&q, 0, &n) == 0 && n == 1 && q.peers[0].live == 1);
	CHECK(w.ngiven_up == 1 && w.given_up[0] == 0 && q.nfailed == 1 && q.ndone == 1);
	/* a peer replaced with nothing in flight loses nothing */
	CHECK(maro_workq_peer_replaced(&q, 0, &n) == 0 && n == 0 && q.nfailed == 1);
	maro_workq_free(&q);
	test_workq_pick();
	test_workq_order();
	test_workq_rejoin();
	test_workq_elsewhere();
	test_workq_requeue();
}
