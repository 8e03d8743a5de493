#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "cli.h"
#include "clock.h"
#include "inbox.h"
#include "outbox.h"
#include "strset.h"
#include "unit.h"

/*
 * An inbox's held acknowledgements (maro(7), DELIVERY): due when one
 * sender has MARO_ACK_BATCH messages waiting for them, not when all its
 * senders together have; real sockets, two senders speaking the wire
 * protocol by hand.
 */

static void
put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* One DATA frame (flags 0) of count notifications, sequence numbers from first. */
static int
send_frame(void *s, uint64_t first, int count)
{
	struct maro_buf f = { 0 };
	uint8_t hdr[MARO_FRAME_HEADER] = { 'm', 1, MARO_FRAME_DATA, 0 };
	int rc = -1;

	if (maro_buf_append(&f, hdr, sizeof hdr) < 0)
		return -1;
	for (int i = 0; i < count; i++) {
		struct maro_msg m;
		struct maro_buf enc = { 0 };
		char ids[2][MARO_UUID_LEN + 1];
		uint8_t item[MARO_DATA_ITEM_HEADER];

		memset(&m, 0, sizeof m);
		m.tag = maro_str_c("echo");
		m.type = MARO_SESSION_NOTIFICATION;
		m.payload.p = (const uint8_t *)"\x61x";
		m.payload.n = 2;
		maro_msg_fill(&m, "unit", ids);
		if (maro_msg_encode(&m, &enc) < 0)
			goto out;
		put_be(item, first + (uint64_t)i, 8);
		put_be(item + 8, enc.len, 4);
		if (maro_buf_append(&f, item, sizeof item) < 0 || maro_buf_append(&f, enc.p, enc.len) < 0) {
			maro_buf_free(&enc);
			goto out;
		}
		maro_buf_free(&enc);
	}
	rc = zmq_send(s, f.p, f.len, 0) == (int)f.len ? 0 : -1;
out:
	maro_buf_free(&f);
	return rc;
}

/* Hands on every message waiting (up to 2 s for want): how many. */
static int
take_all(struct maro_ctx *c, struct maro_inbox *ib, int want)
{
	struct maro_delivery d;
	int64_t until = maro_now_us() + 2000000;
	int got = 0;

	while (got < want && maro_now_us() < until) {
		struct maro_pollitem it = { maro_inbox_pollable(ib), 0, MARO_POLLIN, 0 };

		while (maro_inbox_next(ib, &d) == 1) {
			maro_inbox_done(ib, &d);
			got++;
		}
		if (got < want)
			maro_poll(c, &it, 1, 10);
	}
	return got;
}

/* The messages an ACK frame to s acknowledges within ms: 0 when none came. */
static long
acked(void *s, int ms)
{
	zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
	uint8_t buf[4096];
	long n = 0;
	int k;

	if (zmq_poll(&it, 1, ms) <= 0)
		return 0;
	while ((k = zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT)) >= MARO_FRAME_HEADER) {
		if (buf[2] != MARO_FRAME_ACK)
			continue;
		for (int off = MARO_FRAME_HEADER; off + MARO_ACK_ITEM <= k; off += MARO_ACK_ITEM)
			n += (long)buf[off + 8] << 24 | (long)buf[off + 9] << 16 | (long)buf[off + 10] << 8 | buf[off + 11];
	}
	return n;
}

static void
test_held(struct maro_ctx *c)
{
	char err[512];
	struct maro_entry e;
	struct maro_inbox *ib = maro_inbox_open(c, "acks.1", NULL, 0, NULL, err, sizeof err);
	void *zctx = zmq_ctx_new(), *a, *b;
	int linger = 0, timeout = 2000;

	CHECK(ib != NULL);
	if (!ib) {
		fprintf(stderr, "inbox: %s\n", err);
		return;
	}
	/* no timer: only a full sender or a prompt makes them due */
	maro_inbox_hold_acks(ib, 60000000);
	CHECK(maro_registry_lookup(c->reg, "acks.1", &e) == 1);
	a = zmq_socket(zctx, ZMQ_DEALER);
	b = zmq_socket(zctx, ZMQ_DEALER);
	zmq_setsockopt(a, ZMQ_LINGER, &linger, sizeof linger);
	zmq_setsockopt(b, ZMQ_LINGER, &linger, sizeof linger);
	zmq_setsockopt(a, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
	zmq_setsockopt(b, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
	CHECK(zmq_connect(a, e.endpoint) == 0);
	CHECK(zmq_connect(b, e.endpoint) == 0);
	/* 300 messages wait, 200 of one sender and 100 of the other: not due */
	CHECK(send_frame(a, 1, 200) == 0);
	CHECK(send_frame(b, 1, 100) == 0);
	CHECK(take_all(c, ib, 300) == 300);
	CHECK(maro_inbox_flush_due(ib) == 0);
	CHECK(acked(a, 100) == 0);
	CHECK(acked(b, 0) == 0);
	CHECK(maro_inbox_ack_deadline(ib) > maro_now_us() + 50000000);
	/* 56 more of the first: it has MARO_ACK_BATCH waiting, and all go */
	CHECK(send_frame(a, 201, MARO_ACK_BATCH - 200) == 0);
	CHECK(take_all(c, ib, MARO_ACK_BATCH - 200) == MARO_ACK_BATCH - 200);
	CHECK(maro_inbox_flush_due(ib) == 0);
	CHECK(acked(a, 2000) == MARO_ACK_BATCH);
	CHECK(acked(b, 2000) == 100);
	CHECK(maro_inbox_ack_deadline(ib) == INT64_MAX);
	zmq_close(a);
	zmq_close(b);
	zmq_ctx_term(zctx);
	maro_inbox_close(ib);
}

static void
count_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	(void)dest;
	(void)p;
	(void)n;
	++*(int *)arg;
}

/* Queues a request in session sid to dest the way a scatter does: its number in dest's window. */
static uint64_t
queue_sid(struct maro_outbox *ob, const char *dest, const char *sid)
{
	struct maro_msg m = { 0 };
	struct maro_buf b = { 0 };
	struct maro_str at;
	uint8_t *q;
	uint64_t n = 0;

	m.tag = maro_str_c("echo");
	m.source = maro_str_c("unit");
	m.destination = maro_str_c(dest);
	m.message_id = maro_str_c(sid);
	m.session_id = maro_str_c(sid);
	if (maro_msg_encode(&m, &b) == 0 && maro_msg_text(b.p, b.len, "session_id", &at) == 1 &&
	    (q = maro_outbox_begin(ob, dest, b.len))) {
		memcpy(q, b.p, b.len);
		n = maro_outbox_commit_sid(ob, b.len, (size_t)((const uint8_t *)at.p - b.p), at.n);
	}
	maro_buf_free(&b);
	return n;
}

/*
 * A reply settles its request (maro_outbox_settle_at) at the place the
 * request went to, or, when it is not there, wherever it is in the window:
 * nothing else is settled, nothing is missed.  No peer: the outbox only
 * queues until it runs.
 */
static void
test_settle_at(struct maro_ctx *c)
{
	int acks = 0;
	struct maro_outbox *ob = maro_outbox_new(c, NULL, count_ack, &acks);
	const char *dest = "nobody.1";
	uint64_t h = maro_hash64(dest, strlen(dest)), at[4];

	CHECK(ob != NULL);
	if (!ob)
		return;
	at[0] = queue_sid(ob, dest, "sid-a");
	at[1] = queue_sid(ob, dest, "sid-b");
	at[2] = queue_sid(ob, dest, "sid-c");
	at[3] = queue_sid(ob, dest, "sid-d");
	CHECK(at[0] && at[1] == at[0] + 1 && at[3] == at[0] + 3 && maro_outbox_pending(ob) == 4);
	/* at its place: that one, and only it */
	CHECK(maro_outbox_settle_at(ob, dest, h, maro_str_c("sid-c"), at[2]) == 1);
	CHECK(acks == 1 && maro_outbox_pending(ob) == 3);
	/* settled already: no other is taken for it */
	CHECK(maro_outbox_settle_at(ob, dest, h, maro_str_c("sid-c"), at[2]) == 0);
	CHECK(acks == 1 && maro_outbox_pending(ob) == 3);
	/* a place that holds another request: found by its session, the other left alone */
	CHECK(maro_outbox_settle_at(ob, dest, 0, maro_str_c("sid-a"), at[3]) == 1);
	CHECK(acks == 2 && maro_outbox_pending(ob) == 2);
	/* a place outside the window, the name's hash not known */
	CHECK(maro_outbox_settle_at(ob, dest, 0, maro_str_c("sid-d"), at[3] + 100) == 1);
	CHECK(maro_outbox_settle(ob, dest, maro_str_c("sid-b")) == 1);
	CHECK(acks == 4 && maro_outbox_pending(ob) == 0);
	/* a session never sent, another name */
	CHECK(maro_outbox_settle_at(ob, dest, h, maro_str_c("sid-e"), at[0]) == 0);
	CHECK(maro_outbox_settle_at(ob, "nobody.2", 0, maro_str_c("sid-a"), at[0]) == 0);
	maro_outbox_free(ob);
}

/*
 * A window that was full gives its buffers back once nothing has been
 * queued to it for 100 ms (a worker that answered many requesters in turn
 * keeps none of their windows), and the outbox's deadline says when.
 */
static void
test_trim(struct maro_ctx *c)
{
	struct maro_outbox *ob = maro_outbox_new(c, NULL, NULL, NULL);
	const char *dest = "~nobody.2";
	char sid[32];
	size_t k, settled = 0, full;
	int64_t t0;

	CHECK(ob != NULL);
	if (!ob)
		return;
	for (k = 0; k < 200; k++) {
		snprintf(sid, sizeof sid, "sid-%zu", k);
		queue_sid(ob, dest, sid);
	}
	full = maro_outbox_held(ob);
	CHECK(maro_outbox_pending(ob) == 200 && full >= 200 * 128);
	for (k = 0; k < 200; k++) {
		snprintf(sid, sizeof sid, "sid-%zu", k);
		settled += maro_outbox_settle(ob, dest, maro_str_c(sid));
	}
	CHECK(settled == 200 && maro_outbox_pending(ob) == 0);
	/* idle from this run on: kept a while (a next burst reuses them), then given back */
	t0 = maro_now_us();
	maro_outbox_run(ob);
	CHECK(maro_outbox_held(ob) == full && maro_outbox_deadline(ob) <= t0 + 100000 + 50000);
	while (maro_now_us() < t0 + 120000)
		usleep(10000);
	maro_outbox_run(ob);
	CHECK(maro_outbox_held(ob) < 1024 && maro_outbox_deadline(ob) == INT64_MAX);
	/* and used again as before */
	CHECK(queue_sid(ob, dest, "sid-again") && maro_outbox_pending(ob) == 1);
	CHECK(maro_outbox_settle(ob, dest, maro_str_c("sid-again")) == 1);
	maro_outbox_free(ob);
}

void
test_inbox(void)
{
	char dir[64];
	struct maro_ctx *c = unit_ctx_open("inbox", dir, sizeof dir, "tcp");

	if (!c)
		return;
	test_held(c);
	test_settle_at(c);
	test_trim(c);
	unit_ctx_close(c, dir);
}
