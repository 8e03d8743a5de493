#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"
#include "message.h"
#include "unit.h"

/* A delivery of a message from source, tagged tag, with message_id id (into b). */
static int
delivery(struct maro_delivery *d, struct maro_buf *b, const char *source, const char *tag,
    const char *id, uint32_t peer, uint64_t seq)
{
	struct maro_msg m;
	struct maro_err err;

	memset(&m, 0, sizeof m);
	m.tag = maro_str_c(tag);
	m.source = maro_str_c(source);
	m.destination = maro_str_c("waiter");
	m.message_id = maro_str_c(id);
	m.session_id = maro_str_c(id);
	m.type = MARO_SESSION_NOTIFICATION;
	b->len = 0;
	if (maro_msg_encode(&m, b) < 0)
		return -1;
	memset(d, 0, sizeof *d);
	d->p = b->p;
	d->n = b->len;
	d->peer = peer;
	d->seq = seq;
	return maro_msg_decode(&d->msg, d->p, d->n, &err);
}

static int aways;

static int
away(void *arg, const struct maro_delivery *dl)
{
	(void)arg;
	(void)dl;
	aways++;
	return 1;
}

/* put SOURCE TAG ID PEER SEQ, with away() or none */
static int
put(struct maro_hold *h, const char *source, const char *tag, const char *id, uint32_t peer,
    uint64_t seq, int with_away)
{
	struct maro_buf b = { 0 };
	struct maro_delivery d;
	int rc = -1;

	if (delivery(&d, &b, source, tag, id, peer, seq) == 0)
		rc = maro_hold_put(h, &d, with_away ? away : NULL, NULL);
	maro_buf_free(&b);
	return rc;
}

static void
test_resent(void)
{
	struct maro_hold h = { 0 };
	static const char *ids[] = { "id-a", "id-b", "id-c" };
	size_t i;

	for (i = 0; i < 3; i++)
		CHECK(put(&h, "worker.1", "t", ids[i], 1, i + 1, 1) == 0);
	CHECK(h.n == 3);
	/* a resent copy of each, the first, the middle and the last, is not
	 * held twice: only where it came from last changes */
	for (i = 0; i < 3; i++) {
		CHECK(put(&h, "worker.1", "t", ids[i], 2, 10 + i, 1) == 0);
		CHECK(h.n == 3 && h.msg[i].peer == 2 && h.msg[i].seq == 10 + i);
	}
	/* held as it came: its own bytes, its views into them */
	CHECK(maro_str_eq(h.msg[0].msg.message_id, "id-a") && maro_str_eq(h.msg[2].msg.source, "worker.1"));
	CHECK(h.msg[0].serial < h.msg[1].serial && h.msg[1].serial < h.msg[2].serial);
	CHECK(aways == 0);
	maro_hold_free(&h);
}

static void
test_release(void)
{
	struct maro_hold h = { 0 };
	struct maro_event e;
	unsigned live[MARO_EVENT_MAX_UNITS] = { 0 };
	char err[200];
	uint8_t *taken;
	int col;

	CHECK(put(&h, "worker.1", "t", "id-a", 1, 1, 1) == 0);
	CHECK(put(&h, "worker.2", "u", "id-b", 1, 2, 1) == 0);
	CHECK(put(&h, "worker.3", "t", "id-c", 1, 3, 1) == 0);
	CHECK(maro_event_parse(&e, "worker:t:2", &col, err, sizeof err) == 0);
	/* the two oldest that match, not the one between them */
	CHECK(maro_hold_match(&h, &e, live, NULL, NULL) == 1);
	CHECK(h.take[0] && !h.take[1] && h.take[2]);
	/* a caller takes the first's bytes away (they are its own now, and
	 * outlive the release); the third's are released with it */
	taken = h.msg[0].p;
	h.msg[0].p = NULL;
	CHECK(maro_hold_release(&h) == 0);
	free(taken);
	CHECK(h.n == 1 && maro_str_eq(h.msg[0].msg.message_id, "id-b"));
	/* a resent copy of the one taken away goes to away(), not held again */
	aways = 0;
	CHECK(put(&h, "worker.1", "t", "id-a", 2, 7, 1) == 0);
	CHECK(aways == 1 && h.n == 1);
	/* without away() it is held as new */
	CHECK(put(&h, "worker.1", "t", "id-a", 2, 8, 0) == 0);
	CHECK(aways == 1 && h.n == 2 && h.msg[1].seq == 8);
	/* one released with its bytes is forgotten: a resent copy is new work */
	CHECK(put(&h, "worker.3", "t", "id-c", 2, 9, 1) == 0);
	CHECK(aways == 1 && h.n == 3 && maro_str_eq(h.msg[2].msg.message_id, "id-c"));
	maro_hold_free(&h);
}

/* the live peers of each unit's source, as the registry lists them now */
static void
test_live(void)
{
	char dir[] = "/tmp/maro-unit.XXXXXX", url[600], err[512];
	struct maro_hold h = { 0 };
	struct maro_registry *r;
	struct maro_event e;
	unsigned live[MARO_EVENT_MAX_UNITS];
	static const char *names[] = { "worker.1", "worker.2", "manager.1" };
	size_t i;
	int col;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(url, sizeof url, "dir:%s", dir);
	r = maro_registry_open(url, "g", NULL, err, sizeof err);
	CHECK(r != NULL);
	if (!r)
		goto out;
	for (i = 0; i < 3; i++) {
		struct maro_entry en;

		memset(&en, 0, sizeof en);
		snprintf(en.name, sizeof en.name, "%s", names[i]);
		snprintf(en.endpoint, sizeof en.endpoint, "ipc://%s/%zu", dir, i);
		CHECK(maro_registry_register(r, &en, 0, NULL) == 0);
	}
	CHECK(maro_event_parse(&e, "worker:t:50% AND manager:t:1 AND coworker:t:1", &col, err,
	    sizeof err) == 0);
	CHECK(maro_hold_live(&h, r, &e, 0, live) == 0 && live[0] == 2 && live[1] == 1 && live[2] == 0);
	/* the workers leave: read again (max age 0), none is live */
	CHECK(maro_registry_unregister(r, "worker.1") == 0 && maro_registry_unregister(r, "worker.2") == 0);
	CHECK(maro_hold_live(&h, r, &e, 0, live) == 0 && live[0] == 0 && live[1] == 1);
	/* a list younger than the age asked for is not read again */
	CHECK(maro_registry_unregister(r, "manager.1") == 0);
	CHECK(maro_hold_live(&h, r, &e, 60000000, live) == 0 && live[1] == 1);
	CHECK(maro_hold_live(&h, r, &e, 0, live) == 0 && live[1] == 0);
	maro_hold_free(&h);
	maro_registry_close(r);
out:
	unit_rm_rf(dir);
}

void
test_hold(void)
{
	test_resent();
	test_release();
	test_live();
}
