#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "trace.h"
#include "outbox.h"
#include "stats.h"
#include "strset.h"

#define BATCH_BYTES (64 * 1024)
#define LOOKUP_AGAIN_US 100000
#define RETRY_MAX_US 5000000

/* an acknowledged entry keeps a buffer this small for the next message in its slot */
#define KEEP_BYTES 512
/* slots of a new destination's ring */
#define RING_START 16

struct entry {
	uint8_t *p;
	uint32_t n;
	uint32_t cap;		/* of p, which may outlive its message (KEEP_BYTES) */
	uint8_t acked;
	uint8_t sid_known;	/* 0: not looked for yet (by a settle); 1: none; 2: sid_* */
	uint32_t sid_off, sid_n;	/* its session_id: p[sid_off..+sid_n) */
	int64_t sent;
};

/*
 * A message's buffer: a reference count (its entry, and each ZeroMQ message
 * sending it in place), room for the DATA frame's header and the item's,
 * written at commit, then the message.  e->p points at the message.
 */
#define BUF_REFS 16
#define BUF_PREFIX (MARO_FRAME_HEADER + MARO_DATA_ITEM_HEADER)
/* a message this big goes in a frame of its own, sent from its buffer */
#define IN_PLACE_MIN (8 * 1024)

/* a connection's handshakes are looked at this often while it is this young (then at each stall) */
#define HANDSHAKE_POLL_US 20000
#define HANDSHAKE_WATCH_US 2000000

/* A private destination (a reply inbox) with nothing queued this long is closed. */
#define IDLE_CLOSE_US 5000000
/*
 * Any destination with nothing queued this long gives its window's buffers
 * back: a worker that replied to many requesters in turn holds the window
 * of none of them (a ring of a window's slots, each with its buffer, is
 * hundreds of kilobytes).
 */
#define IDLE_TRIM_US 100000

static const uint8_t data_hdr[MARO_FRAME_HEADER] = { 'm', 1, MARO_FRAME_DATA, 0 };

static uint8_t *
buf_new(size_t cap)
{
	uint8_t *b = malloc(BUF_REFS + BUF_PREFIX + cap);

	if (!b)
		return NULL;
	__atomic_store_n((uint32_t *)b, 1, __ATOMIC_RELAXED);
	return b + BUF_REFS + BUF_PREFIX;
}

static uint32_t *
buf_refs(uint8_t *p)
{
	return (uint32_t *)(void *)(p - BUF_PREFIX - BUF_REFS);
}

static void
buf_unref(uint8_t *p)
{
	if (p && __atomic_sub_fetch(buf_refs(p), 1, __ATOMIC_ACQ_REL) == 0)
		free(p - BUF_PREFIX - BUF_REFS);
}

/* ZeroMQ is done with a frame sent in place (called from its I/O thread) */
static void
buf_sent(void *data, void *hint)
{
	(void)data;
	buf_unref(hint);
}

struct dest {
	char name[MARO_NAME_MAX + 1];
	char endpoint[MARO_ENDPOINT_MAX + 1];	/* "": no connection */
	/* the holder of the name it is connected to, with endpoint: who was sent what is unacknowledged */
	pid_t pid;
	int64_t started_ms;
	char host[MARO_HOST_MAX + 1];
	void *sock;
	int64_t next_lookup;
	int64_t retry_us;
	int64_t blocked_since;	/* the socket refused what we had to send (EAGAIN) since then; 0: no */
	int64_t missing_since;	/* the name has had no entry since then; 0: it has one */
	int64_t idle_since;	/* nothing queued since then; 0: busy, or not seen idle yet */
	int64_t connected_at;	/* when sock was made */
	int hs_ok;		/* a handshake on sock succeeded: the key is right */
	int hs_closed;		/* handshakes the peer cut short since */
	int trimmed;		/* its ring is back to its first size, without buffers (ring_trim) */
	/* [head, tail) in the window; [head, next) sent at least once */
	uint64_t head, next, tail;
	size_t mask;
	struct entry *ring;
	size_t unacked;
	size_t bytes;		/* of the unacknowledged messages */
};

struct maro_outbox {
	struct maro_ctx *c;
	maro_outbox_fail_fn *fail;
	maro_outbox_ack_fn *ack;
	maro_outbox_moved_fn *moved;
	void *fail_arg;
	struct dest **dests;
	size_t ndests;
	struct maro_strset by_name;	/* a dest's name -> its index in dests */
	struct dest *last;
	struct dest *open;	/* between maro_outbox_begin and commit */
	uint64_t acked, resent;
	size_t pending;
	int prompt;		/* the caller waits on acknowledgements: frames ask for them at once */
	/* the registry failed (a slow or hung one costs its timeout): no look-up before then */
	int64_t lookup_after;
	/* the last connection that could not be made, for maro_outbox_error */
	int conn_err;
	char conn_err_name[MARO_NAME_MAX + 1];
	char conn_err_why[160];	/* EKEYREJECTED: how */
	int linger_ms;		/* what the sockets get at maro_outbox_free to send what they hold */
	/* messages waiting for room in their window, each [name NUL][u32 length][message] */
	struct maro_buf staged;
	size_t staged_at;	/* the oldest of them */
	size_t nstaged;
};

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

struct maro_outbox *
maro_outbox_new(struct maro_ctx *c, maro_outbox_fail_fn *fail, maro_outbox_ack_fn *ack,
    void *arg)
{
	struct maro_outbox *ob = calloc(1, sizeof *ob);

	if (!ob)
		return NULL;
	ob->c = c;
	ob->fail = fail;
	ob->ack = ack;
	ob->fail_arg = arg;
	return ob;
}

static void
dest_free(struct maro_outbox *ob, struct dest *d)
{
	size_t i;

	for (i = 0; i <= d->mask; i++)
		buf_unref(d->ring[i].p);
	if (d->sock)
		ob->c->driver->close(d->sock, ob->linger_ms);
	free(d->ring);
	free(d);
}

/* Forgets dests[i], which has nothing queued: its socket closes. */
static void
dest_remove(struct maro_outbox *ob, size_t i)
{
	struct dest *d = ob->dests[i];

	if (ob->last == d)
		ob->last = NULL;
	maro_strset_take(&ob->by_name, d->name, strlen(d->name));
	dest_free(ob, d);
	ob->dests[i] = ob->dests[--ob->ndests];
	/* the one moved into its place: a present key, which put cannot fail to update */
	if (i < ob->ndests)
		maro_strset_put(&ob->by_name, ob->dests[i]->name, strlen(ob->dests[i]->name), i);
}

void
maro_outbox_free(struct maro_outbox *ob)
{
	size_t i;

	if (!ob)
		return;
	for (i = 0; i < ob->ndests; i++)
		dest_free(ob, ob->dests[i]);
	free(ob->dests);
	maro_strset_free(&ob->by_name);
	maro_buf_free(&ob->staged);
	free(ob);
}

/* The slots of a new ring: the window's, up to RING_START (a power of two). */
static size_t
ring_start(const struct maro_outbox *ob)
{
	size_t cap;

	for (cap = 1; cap < ob->c->window && cap < RING_START; cap <<= 1)
		;
	return cap;
}

/*
 * d has nothing queued: its ring goes back to its first size, and its
 * slots' buffers (each kept for the next message in its slot) are freed.
 * Numbers go on from d->tail, whatever the size.
 */
static void
ring_trim(struct maro_outbox *ob, struct dest *d)
{
	size_t i, cap = ring_start(ob);
	struct entry *r = cap < d->mask + 1 ? calloc(cap, sizeof *r) : NULL;

	for (i = 0; i <= d->mask; i++) {
		buf_unref(d->ring[i].p);
		d->ring[i].p = NULL;
		d->ring[i].cap = 0;
	}
	if (r) {
		free(d->ring);
		d->ring = r;
		d->mask = cap - 1;
	}
	d->trimmed = 1;
}

/* name's dest, with h its maro_hash64 (or 0: not known); made when create says so. */
static struct dest *
dest_get_h(struct maro_outbox *ob, const char *name, uint64_t h, int create)
{
	struct dest *d, **v;
	size_t cap, len;
	uint64_t i;

	if (ob->last && !strcmp(ob->last->name, name))
		return ob->last;
	/* by a table, not a comparison with each: a scatter to hundreds of peers */
	len = strlen(name);
	if (!h)
		h = maro_hash64(name, len);
	if (maro_strset_get_h(&ob->by_name, name, len, h, &i))
		return ob->last = ob->dests[i];
	if (!create)
		return NULL;
	if (!maro_name_valid(name)) {
		errno = EINVAL;
		return NULL;
	}
	/* the ring starts small and doubles while the window lets it fill
	 * (a scatter to 64 peers, 8 tasks each, keeps 64 small rings) */
	cap = ring_start(ob);
	d = calloc(1, sizeof *d);
	if (!d || !(d->ring = calloc(cap, sizeof *d->ring)))
		goto nomem;
	v = realloc(ob->dests, (ob->ndests + 1) * sizeof *v);
	if (!v)
		goto nomem;
	ob->dests = v;
	if (maro_strset_put_h(&ob->by_name, name, len, h, ob->ndests) < 0)
		goto nomem;
	snprintf(d->name, sizeof d->name, "%s", name);
	d->mask = cap - 1;
	d->head = d->next = d->tail = 1;
	d->trimmed = 1;	/* nothing to give back yet */
	d->retry_us = ob->c->retry_us;
	ob->dests[ob->ndests++] = d;
	return ob->last = d;
nomem:
	if (d)
		free(d->ring);
	free(d);
	errno = ENOMEM;
	return NULL;
}

static struct dest *
dest_get(struct maro_outbox *ob, const char *name, int create)
{
	return dest_get_h(ob, name, 0, create);
}

int
maro_outbox_ready(struct maro_outbox *ob, const char *name)
{
	struct dest *d = dest_get(ob, name, 0);

	return !d || (d->tail - d->head < ob->c->window &&
	    (d->unacked == 0 || d->bytes < ob->c->window_bytes));
}

/* The ring is full: twice the slots, the entries at their new places. */
static int
ring_grow(struct dest *d)
{
	size_t cap = (d->mask + 1) * 2;
	struct entry *r = calloc(cap, sizeof *r);
	uint64_t s;

	if (!r)
		return -1;
	/* full: [head, tail) is every slot of the old ring */
	for (s = d->head; s < d->tail; s++)
		r[s & (cap - 1)] = d->ring[s & d->mask];
	free(d->ring);
	d->ring = r;
	d->mask = cap - 1;
	return 0;
}

uint8_t *
maro_outbox_begin(struct maro_outbox *ob, const char *name, size_t n)
{
	return maro_outbox_begin_h(ob, name, 0, n);
}

uint8_t *
maro_outbox_begin_h(struct maro_outbox *ob, const char *name, uint64_t name_h, size_t n)
{
	struct dest *d = dest_get_h(ob, name, name_h, 1);
	struct entry *e;

	if (!d)
		return NULL;
	/* the byte window lets one message of any size in when nothing is in flight */
	if (d->tail - d->head >= ob->c->window || n > UINT32_MAX ||
	    (d->unacked && d->bytes >= ob->c->window_bytes)) {
		errno = n > UINT32_MAX ? EMSGSIZE : EAGAIN;
		return NULL;
	}
	if (d->tail - d->head > d->mask && ring_grow(d) < 0)
		return NULL;
	e = &d->ring[d->tail & d->mask];
	/* the slot's last buffer, when it fits and is ours alone: no allocation per message */
	if (!e->p || e->cap < n || __atomic_load_n(buf_refs(e->p), __ATOMIC_ACQUIRE) != 1) {
		size_t want = n < 128 ? 128 : n;	/* its neighbours are about as big */

		buf_unref(e->p);
		e->cap = 0;
		e->p = buf_new(want);
		if (!e->p)
			return NULL;
		e->cap = (uint32_t)want;
	}
	ob->open = d;
	return e->p;
}

void
maro_outbox_commit(struct maro_outbox *ob, size_t n)
{
	struct dest *d = ob->open;
	struct entry *e = &d->ring[d->tail & d->mask];
	uint8_t *h = e->p - BUF_PREFIX;

	/* the headers it goes with, alone in a frame or copied into one */
	memcpy(h, data_hdr, sizeof data_hdr);
	put_u64(h + MARO_FRAME_HEADER, d->tail);
	h[MARO_FRAME_HEADER + 8] = (uint8_t)(n >> 24);
	h[MARO_FRAME_HEADER + 9] = (uint8_t)(n >> 16);
	h[MARO_FRAME_HEADER + 10] = (uint8_t)(n >> 8);
	h[MARO_FRAME_HEADER + 11] = (uint8_t)n;
	/* a big one goes alone and holds much of the byte window: acknowledge it at once */
	if (n >= IN_PLACE_MIN)
		h[3] = MARO_FRAME_PROMPT;
	e->n = (uint32_t)n;
	e->acked = 0;
	e->sid_known = 0;
	e->sent = 0;
	d->trimmed = 0;
	d->tail++;
	d->unacked++;
	d->bytes += n;
	ob->pending++;
	ob->open = NULL;
}

uint64_t
maro_outbox_commit_sid(struct maro_outbox *ob, size_t n, size_t sid_off, size_t sid_n)
{
	struct dest *d = ob->open;
	uint64_t at = d->tail;
	struct entry *e = &d->ring[at & d->mask];

	maro_outbox_commit(ob, n);
	e->sid_known = 2;
	e->sid_off = (uint32_t)sid_off;
	e->sid_n = (uint32_t)sid_n;
	return at;
}

int
maro_outbox_put(struct maro_outbox *ob, const char *name, const uint8_t *p, size_t n)
{
	uint8_t *q = maro_outbox_begin(ob, name, n);

	if (!q)
		return -1;
	memcpy(q, p, n);
	maro_outbox_commit(ob, n);
	return 0;
}

int
maro_outbox_stage(struct maro_outbox *ob, const char *name, const struct maro_msg *m)
{
	size_t at, nl = strlen(name) + 1;
	uint32_t len = 0;
	uint8_t *q;

	if (!ob->nstaged) {
		q = maro_outbox_begin(ob, name, maro_msg_encoded_max(m));
		if (q) {
			maro_outbox_commit(ob, maro_msg_encode_into(m, q));
			return 0;
		}
		if (errno != EAGAIN)
			return -1;
	}
	/* encoded in place, its length filled in after */
	if (maro_buf_append(&ob->staged, name, nl) < 0 ||
	    maro_buf_append(&ob->staged, &len, sizeof len) < 0)
		return -1;
	at = ob->staged.len;
	if (maro_msg_encode(m, &ob->staged) < 0)
		return -1;
	len = (uint32_t)(ob->staged.len - at);
	memcpy(ob->staged.p + at - sizeof len, &len, sizeof len);
	ob->nstaged++;
	return 0;
}

int
maro_outbox_flush(struct maro_outbox *ob, char name[MARO_NAME_MAX + 1])
{
	while (ob->staged_at < ob->staged.len) {
		const char *dest = (const char *)ob->staged.p + ob->staged_at;
		size_t nl = strlen(dest) + 1;
		uint32_t len;

		memcpy(&len, ob->staged.p + ob->staged_at + nl, sizeof len);
		if (maro_outbox_put(ob, dest, ob->staged.p + ob->staged_at + nl + sizeof len, len) < 0) {
			if (errno == EAGAIN)
				return 0;
			snprintf(name, MARO_NAME_MAX + 1, "%s", dest);
			return -1;
		}
		ob->staged_at += nl + sizeof len + len;
		ob->nstaged--;
	}
	ob->staged.len = ob->staged_at = 0;
	return 1;
}

size_t
maro_outbox_staged(const struct maro_outbox *ob)
{
	return ob->nstaged;
}

static void
entry_done(struct maro_outbox *ob, struct dest *d, struct entry *e)
{
	if (e->cap > KEEP_BYTES) {
		buf_unref(e->p);
		e->p = NULL;
		e->cap = 0;
	}
	e->acked = 1;
	d->unacked--;
	d->bytes -= e->n;
	ob->pending--;
}

static void
advance_head(struct dest *d)
{
	while (d->head < d->tail && d->ring[d->head & d->mask].acked)
		d->head++;
	if (d->next < d->head)
		d->next = d->head;
}

/* The destination is gone for good: every message still queued for it fails. */
static void
dest_fail(struct maro_outbox *ob, struct dest *d, const char *why)
{
	uint64_t s;

	for (s = d->head; s < d->tail; s++) {
		struct entry *e = &d->ring[s & d->mask];

		if (e->acked)
			continue;
		if (ob->fail)
			ob->fail(ob->fail_arg, d->name, e->p, e->n, why);
		entry_done(ob, d, e);
	}
	advance_head(d);
}

size_t
maro_outbox_drop(struct maro_outbox *ob, const char *name)
{
	struct dest *d = dest_get(ob, name, 0);
	size_t n = 0;
	uint64_t s;

	if (!d)
		return 0;
	for (s = d->head; s < d->tail; s++) {
		struct entry *e = &d->ring[s & d->mask];

		if (!e->acked) {
			entry_done(ob, d, e);
			n++;
		}
	}
	advance_head(d);
	if (d->sock)
		ob->c->driver->close(d->sock, 0);
	d->sock = NULL;
	d->endpoint[0] = '\0';
	return n;
}

/*
 * Whether a message's session_id is sid.  Every reply is compared with
 * each message in flight to its sender (a window of 64 is 64 compares), and
 * ids are random: their first 8 bytes tell almost all apart without a call.
 */
static int
same_sid(const uint8_t *p, size_t n, struct maro_str sid)
{
	uint64_t a, b;

	if (n != sid.n)
		return 0;
	if (n >= sizeof a) {
		memcpy(&a, p, sizeof a);
		memcpy(&b, sid.p, sizeof b);
		if (a != b)
			return 0;
	}
	return !memcmp(p, sid.p, n);
}

/* Entry e of d, unacknowledged, was delivered: acknowledged, or a reply in its session came. */
static void
delivered(struct maro_outbox *ob, struct dest *d, struct entry *e)
{
	if (ob->ack)
		ob->ack(ob->fail_arg, d->name, e->p, e->n);
	entry_done(ob, d, e);
	ob->acked++;
	maro_stats.msgs_out++;
	maro_stats.bytes_out += e->n;
}

size_t
maro_outbox_settle_at(struct maro_outbox *ob, const char *name, uint64_t name_h,
    struct maro_str session_id, uint64_t at)
{
	struct dest *d = session_id.p ? dest_get_h(ob, name, name_h, 0) : NULL;
	struct entry *e;
	size_t n = 0;
	uint64_t s;

	if (!d)
		return 0;
	/* where the caller saw it go (maro_outbox_commit_sid): one compare, not one per message in flight */
	e = &d->ring[at & d->mask];
	if (at >= d->head && at < d->tail && !e->acked && e->sid_known == 2 &&
	    same_sid(e->p + e->sid_off, e->sid_n, session_id)) {
		delivered(ob, d, e);
		advance_head(d);
		return 1;
	}
	for (s = d->head; s < d->tail; s++) {
		e = &d->ring[s & d->mask];
		if (e->acked)
			continue;
		/* each message is looked into once for this, not once per reply */
		if (!e->sid_known) {
			struct maro_str sid;

			e->sid_known = 1;
			if (maro_msg_text(e->p, e->n, "session_id", &sid) == 1) {
				e->sid_off = (uint32_t)((const uint8_t *)sid.p - e->p);
				e->sid_n = (uint32_t)sid.n;
				e->sid_known = 2;
			}
		}
		if (e->sid_known != 2 || !same_sid(e->p + e->sid_off, e->sid_n, session_id))
			continue;
		delivered(ob, d, e);
		n++;
	}
	advance_head(d);
	return n;
}

size_t
maro_outbox_settle(struct maro_outbox *ob, const char *name, struct maro_str session_id)
{
	return maro_outbox_settle_at(ob, name, 0, session_id, 0);
}

size_t
maro_outbox_settle_reply(struct maro_outbox *ob, const struct maro_msg *reply)
{
	char src[MARO_NAME_MAX + 1];

	snprintf(src, sizeof src, "%.*s", (int)reply->source.n, reply->source.p ? reply->source.p : "");
	return maro_outbox_settle(ob, src, reply->session_id);
}

void
maro_outbox_on_moved(struct maro_outbox *ob, maro_outbox_moved_fn *fn)
{
	ob->moved = fn;
}

static void
holder_set(struct dest *d, const struct maro_entry *e)
{
	snprintf(d->endpoint, sizeof d->endpoint, "%s", e->endpoint);
	d->pid = e->pid;
	d->started_ms = e->started_ms;
	snprintf(d->host, sizeof d->host, "%s", e->host);
}

static void
dest_connect(struct maro_outbox *ob, struct dest *d, const struct maro_entry *e)
{
	if (d->sock)
		ob->c->driver->close(d->sock, 0);
	holder_set(d, e);
	maro_trace("connecting to '%s' at %s", d->name, e->endpoint);
	d->sock = ob->c->driver->connect(ob->c, e->endpoint);
	d->connected_at = maro_now_us();
	d->hs_ok = d->hs_closed = 0;
	if (!d->sock) {
		/* tried again at the next look-up; the caller hears of it */
		ob->conn_err = errno ? errno : EIO;
		snprintf(ob->conn_err_name, sizeof ob->conn_err_name, "%s", d->name);
		d->endpoint[0] = '\0';
	}
	/* whatever the old connection had in flight goes again */
	d->next = d->head;
	d->blocked_since = 0;
}

/* d's peer refused our connection for want of the group key: its messages fail now. */
static void
dest_refused(struct maro_outbox *ob, struct dest *d, const char *how)
{
	ob->conn_err = EKEYREJECTED;
	snprintf(ob->conn_err_name, sizeof ob->conn_err_name, "%s", d->name);
	snprintf(ob->conn_err_why, sizeof ob->conn_err_why, "%s", how);
	maro_trace("'%s' refused our connection: %s", d->name, how);
	dest_fail(ob, d, "refused for want of the group key");
}

/*
 * What the handshakes of d's connection tell: a key on one side only, or
 * another group's, fails d's messages at once rather than at the
 * sender's deadline.  A peer that cut two handshakes short in a row
 * refused us too (one could be a peer that just died): with a key on one
 * side only, the side that sees the mismatch first closes, and which one
 * that is is a race.
 */
static void
dest_handshake(struct maro_outbox *ob, struct dest *d)
{
	switch (ob->c->driver->handshake(d->sock)) {
	case MARO_HS_OK:
		d->hs_ok = 1;
		d->hs_closed = 0;
		break;
	case MARO_HS_MECHANISM:
		dest_refused(ob, d, ob->c->key ? "it has no group key and we have one" :
		    "it has a group key and we have none (MARO_KEYFILE)");
		break;
	case MARO_HS_REFUSED:
		dest_refused(ob, d, "it refused our group key");
		break;
	case MARO_HS_CLOSED:
		/* which side saw the mismatch first is a race: the peer may just close */
		if (++d->hs_closed >= 2)
			dest_refused(ob, d, ob->c->key ? "it has no group key, or another group's" :
			    "it has a group key and we have none (MARO_KEYFILE)");
		break;
	}
}

/* The same process as the one d is connected to (as maro_view_same, a layer up, says). */
static int
same_holder(const struct dest *d, const struct maro_entry *e)
{
	return d->pid == e->pid && d->started_ms == e->started_ms && !strcmp(d->host, e->host) &&
	    !strcmp(d->endpoint, e->endpoint);
}

/*
 * d's name is held by e: connects to it when it is somewhere new.  A new
 * holder of a name d is connected to: by default what the old one did not
 * acknowledge goes to the new one; with a moved callback it is dropped and
 * the owner told, after.  1 when the holder was new, else 0.
 */
static int
dest_holder(struct maro_outbox *ob, struct dest *d, const struct maro_entry *e)
{
	uint64_t s;
	size_t n = 0;
	int moved = d->sock && !same_holder(d, e);

	if (moved && ob->moved) {
		maro_trace("'%s' has a new holder (pid %ld at %s)", d->name, (long)e->pid, e->endpoint);
		for (s = d->head; s < d->tail; s++) {
			struct entry *en = &d->ring[s & d->mask];

			if (!en->acked) {
				entry_done(ob, d, en);
				n++;
			}
		}
		advance_head(d);
		dest_connect(ob, d, e);
		ob->moved(ob->fail_arg, d->name, n);
		return 1;
	}
	if (!d->sock || strcmp(e->endpoint, d->endpoint) != 0)
		dest_connect(ob, d, e);
	else if (moved)
		holder_set(d, e);	/* at the same endpoint: the socket reconnects by itself */
	return moved;
}

int
maro_outbox_holder(struct maro_outbox *ob, const char *name, const struct maro_entry *e)
{
	struct dest *d = dest_get(ob, name, 0);

	return d && d->sock && dest_holder(ob, d, e);
}

/* Looks the name up; connects when it (re)appears somewhere new. */
static void
dest_lookup(struct maro_outbox *ob, struct dest *d, int64_t now)
{
	struct maro_entry e;
	int rc;

	if (ob->lookup_after > now) {
		d->next_lookup = ob->lookup_after;
		return;
	}
	errno = 0;
	rc = maro_registry_lookup(ob->c->reg, d->name, &e);
	if (rc == 0 && errno == EKEYREJECTED) {
		/* as a handshake would say, had the entry been trusted enough to connect */
		dest_refused(ob, d, "its entry lacks our group key's MAC: it has no group key, or another group's");
		return;
	}
	/* the next one counts from now: a look-up may take long */
	now = maro_now_us();
	d->next_lookup = now + LOOKUP_AGAIN_US;
	if (rc < 0) {
		/*
		 * registry unreachable: keep what we have, ask again; the other
		 * destinations wait for that too, or a hung registry would cost
		 * its timeout once for each of them
		 */
		ob->lookup_after = d->next_lookup;
		return;
	}
	if (rc == 0 || !maro_endpoint_valid(e.endpoint)) {
		/*
		 * a reply inbox never comes back under its name once its
		 * requester is gone; but a registry that restarted has lost
		 * every entry until their owners' next heartbeat: wait a TTL
		 */
		if (!d->missing_since)
			d->missing_since = now;
		if (d->name[0] == '~' && now - d->missing_since >= maro_registry_ttl_ms(ob->c->reg) * 1000) {
			dest_fail(ob, d, "the requester's reply inbox is gone");
			d->missing_since = 0;
		}
		return;
	}
	d->missing_since = 0;
	dest_holder(ob, d, &e);
	/* a connection that could not be made is tried again at the next look-up */
	if (d->sock)
		d->next_lookup = INT64_MAX;
}

static void
read_acks(struct maro_outbox *ob, struct dest *d)
{
	const void *p;
	size_t n;

	while (ob->c->driver->recv(d->sock, NULL, NULL, &p, &n) == 1) {
		const uint8_t *b = p;
		size_t off;
		int progress = 0;

		if (!b || n < MARO_FRAME_HEADER || memcmp(b, "m\1A", 3) != 0)
			continue;
		for (off = MARO_FRAME_HEADER; off + MARO_ACK_ITEM <= n; off += MARO_ACK_ITEM) {
			uint64_t first = get_u64(b + off), s;
			uint32_t count = (uint32_t)b[off + 8] << 24 | (uint32_t)b[off + 9] << 16 |
			    (uint32_t)b[off + 10] << 8 | b[off + 11];

			for (s = first; s - first < count && s < d->tail; s++) {
				struct entry *e;

				if (s < d->head)
					continue;
				e = &d->ring[s & d->mask];
				if (!e->acked) {
					delivered(ob, d, e);
					progress = 1;
				}
			}
		}
		if (progress) {
			advance_head(d);
			d->retry_us = ob->c->retry_us;
		}
	}
}

/* A DATA frame of the entries [from, stop) of d that are not acknowledged. */
struct frame_fill {
	struct dest *d;
	uint64_t from, stop;
	uint8_t flags;
};

static void
fill_frame(void *arg, uint8_t *q)
{
	const struct frame_fill *f = arg;
	uint64_t s;

	memcpy(q, data_hdr, sizeof data_hdr);
	q[3] = f->flags;
	q += sizeof data_hdr;
	for (s = f->from; s < f->stop; s++) {
		const struct entry *e = &f->d->ring[s & f->d->mask];

		if (e->acked)
			continue;
		memcpy(q, e->p - MARO_DATA_ITEM_HEADER, MARO_DATA_ITEM_HEADER + e->n);
		q += MARO_DATA_ITEM_HEADER + e->n;
	}
}

static void
send_queued(struct maro_outbox *ob, struct dest *d, int64_t now)
{
	while (d->next < d->tail) {
		struct frame_fill f = { d, d->next, d->next, 0 };
		size_t len = MARO_FRAME_HEADER;
		uint64_t s;
		struct entry *big = NULL;
		int rc = 0;

		/* measure the frame, then have it written into the message */
		for (s = d->next; s < d->tail; s++) {
			struct entry *e = &d->ring[s & d->mask];

			if (e->acked)
				continue;
			if (e->n >= IN_PLACE_MIN) {
				/* a big one goes alone, from its own buffer: no copy */
				if (len == MARO_FRAME_HEADER) {
					big = e;
					s++;
				}
				break;
			}
			if (len > MARO_FRAME_HEADER && len + MARO_DATA_ITEM_HEADER + e->n > BATCH_BYTES)
				break;
			len += MARO_DATA_ITEM_HEADER + e->n;
			if (e->sent)
				f.flags = MARO_FRAME_PROMPT;	/* a resend: we are waiting */
		}
		f.stop = s;
		/* the window half used, or the caller finishing: it waits on these acks */
		if (ob->prompt || (d->tail - d->head) * 2 >= ob->c->window ||
		    d->bytes * 2 >= ob->c->window_bytes)
			f.flags = MARO_FRAME_PROMPT;
		if (big) {
			__atomic_add_fetch(buf_refs(big->p), 1, __ATOMIC_RELAXED);
			rc = ob->c->driver->send_ref(d->sock, big->p - BUF_PREFIX, BUF_PREFIX + big->n,
			    buf_sent, big->p);
		} else if (len > MARO_FRAME_HEADER) {
			rc = ob->c->driver->send_fill(d->sock, len, fill_frame, &f);
		}
		if (rc < 0) {
			/* EAGAIN: not connected or full; poll says when */
			if (!d->blocked_since)
				d->blocked_since = now;
			return;
		}
		d->blocked_since = 0;
		for (s = d->next; s < f.stop; s++) {
			struct entry *e = &d->ring[s & d->mask];

			if (!e->acked) {
				if (e->sent) {
					ob->resent++;
					maro_stats.resent++;
				}
				e->sent = now;
			}
		}
		d->next = f.stop;
	}
}

/*
 * A connection that takes nothing while not one descriptor is free: its
 * I/O thread's connect most likely failed for want of one, which libzmq
 * retries in silence.  Said as a connection that could not be made.
 */
static void
stalled_for_fds(struct maro_outbox *ob, const struct dest *d)
{
	if (maro_fds_free(1))
		return;
	ob->conn_err = EMFILE;
	snprintf(ob->conn_err_name, sizeof ob->conn_err_name, "%s", d->name);
}

void
maro_outbox_prompt(struct maro_outbox *ob)
{
	ob->prompt = 1;
}

int
maro_outbox_run(struct maro_outbox *ob)
{
	int64_t now = maro_now_us();
	size_t i;

	for (i = 0; i < ob->ndests; i++) {
		struct dest *d = ob->dests[i];

		if (d->head != d->tail) {
			d->idle_since = 0;
		} else if (!d->idle_since || d == ob->open) {
			d->idle_since = now;
		} else if (d->name[0] == '~' && now - d->idle_since >= IDLE_CLOSE_US) {
			/*
			 * a reply inbox with nothing to send to it: its requester
			 * has most likely finished, and its socket would try to
			 * reconnect to it for ever, holding a descriptor.  One
			 * more reply to it connects again.
			 */
			maro_trace("closed the connection to '%s': nothing to send to it for %d s", d->name,
			    IDLE_CLOSE_US / 1000000);
			dest_remove(ob, i--);
			continue;
		} else if (!d->trimmed && now - d->idle_since >= IDLE_TRIM_US) {
			ring_trim(ob, d);
		}
		if (d->head == d->tail && !d->sock)
			continue;
		if (d->sock && !d->hs_ok && ob->c->driver->handshake)
			dest_handshake(ob, d);
		/* acknowledgements first: a reconnect below would lose them */
		if (d->sock)
			read_acks(ob, d);
		if (!d->sock || d->next_lookup <= now) {
			if (d->head == d->tail)
				continue;
			dest_lookup(ob, d, now);
			if (!d->sock)
				continue;
		}
		/*
		 * a connection that never takes anything (its peer died before we
		 * connected, or moved): look the name up again, as for a stall
		 */
		if (d->blocked_since && d->blocked_since + d->retry_us <= now) {
			stalled_for_fds(ob, d);
			dest_lookup(ob, d, now);
			d->blocked_since = now;
			d->retry_us = d->retry_us * 2 > RETRY_MAX_US ? RETRY_MAX_US : d->retry_us * 2;
		}
		/* stalled: look the name up again, and send the window again */
		if (d->head < d->next && d->ring[d->head & d->mask].sent + d->retry_us <= now) {
			if (maro_trace_hook) {
				uint64_t s, k = 0;

				for (s = d->head; s < d->next; s++)
					k += !d->ring[s & d->mask].acked;
				maro_trace("no acknowledgement from '%s' in %lld ms: sending %llu again",
				    d->name, (long long)(d->retry_us / 1000), (unsigned long long)k);
			}
			stalled_for_fds(ob, d);
			dest_lookup(ob, d, now);
			d->next = d->head;
			d->retry_us = d->retry_us * 2 > RETRY_MAX_US ? RETRY_MAX_US : d->retry_us * 2;
		}
		if (d->sock && d->next < d->tail)
			send_queued(ob, d, now);
	}
	return 0;
}

int64_t
maro_outbox_deadline(const struct maro_outbox *ob)
{
	int64_t t = INT64_MAX, now = 0;
	size_t i;

	for (i = 0; i < ob->ndests; i++) {
		const struct dest *d = ob->dests[i];

		if (d->head == d->tail) {
			/* its buffers are given back then (maro_outbox_run) */
			if (!d->trimmed && d->idle_since && d->idle_since + IDLE_TRIM_US < t)
				t = d->idle_since + IDLE_TRIM_US;
			continue;
		}
		/* the clock read once, not three times for each of a thousand peers */
		if (!now)
			now = maro_now_us();
		if (!d->sock && d->next_lookup < t)
			t = d->next_lookup;
		/* unsent (the socket said EAGAIN): poll says when it can take more,
		 * but a connection that completes does not always say so: look again soon */
		if (d->sock && d->next < d->tail && now + 50000 < t)
			t = now + 50000;
		if (d->head < d->next && d->ring[d->head & d->mask].sent + d->retry_us < t)
			t = d->ring[d->head & d->mask].sent + d->retry_us;
		if (d->blocked_since && d->blocked_since + d->retry_us < t)
			t = d->blocked_since + d->retry_us;
		/* a fresh connection's handshake: a refusal is told within a second */
		if (d->sock && !d->hs_ok && ob->c->driver->handshake &&
		    now - d->connected_at < HANDSHAKE_WATCH_US && now + HANDSHAKE_POLL_US < t)
			t = now + HANDSHAKE_POLL_US;
	}
	return t;
}

int
maro_outbox_pollitems(struct maro_outbox *ob, struct maro_pollitem *items, int max)
{
	size_t i;
	int k = 0;

	for (i = 0; i < ob->ndests && k < max; i++) {
		struct dest *d = ob->dests[i];

		if (!d->sock)
			continue;
		items[k].socket = ob->c->driver->handle(d->sock);
		items[k].fd = 0;
		items[k].events = MARO_POLLIN | (d->next < d->tail ? MARO_POLLOUT : 0);
		items[k].revents = 0;
		k++;
	}
	return k;
}

int
maro_outbox_error(struct maro_outbox *ob, char name[MARO_NAME_MAX + 1])
{
	int err = ob->conn_err;

	if (err && name)
		memcpy(name, ob->conn_err_name, sizeof ob->conn_err_name);
	if (err != EKEYREJECTED)
		ob->conn_err_why[0] = '\0';
	ob->conn_err = 0;
	return err;
}

const char *
maro_outbox_refusal(const struct maro_outbox *ob)
{
	return ob->conn_err_why;
}

size_t
maro_outbox_pending(const struct maro_outbox *ob)
{
	return ob->pending;
}

size_t
maro_outbox_held(const struct maro_outbox *ob)
{
	size_t i, k, n = 0;

	for (i = 0; i < ob->ndests; i++) {
		const struct dest *d = ob->dests[i];

		n += (d->mask + 1) * sizeof *d->ring;
		for (k = 0; k <= d->mask; k++)
			n += d->ring[k].cap;
	}
	return n;
}

size_t
maro_outbox_unsent(const struct maro_outbox *ob)
{
	size_t i, n = 0;

	for (i = 0; i < ob->ndests; i++)
		n += (size_t)(ob->dests[i]->tail - ob->dests[i]->next);
	return n;
}

void
maro_outbox_linger(struct maro_outbox *ob, int ms)
{
	ob->linger_ms = ms < 0 ? 0 : ms;
}

uint64_t
maro_outbox_acked(const struct maro_outbox *ob)
{
	return ob->acked;
}

uint64_t
maro_outbox_resent(const struct maro_outbox *ob)
{
	return ob->resent;
}

void
maro_outbox_foreach_pending(struct maro_outbox *ob,
    void (*fn)(void *arg, const char *dest, const uint8_t *msg, size_t n), void *arg)
{
	size_t i;
	uint64_t s;

	for (i = 0; i < ob->ndests; i++) {
		struct dest *d = ob->dests[i];

		for (s = d->head; s < d->tail; s++) {
			struct entry *e = &d->ring[s & d->mask];

			if (!e->acked)
				fn(arg, d->name, e->p, e->n);
		}
	}
}

size_t
maro_outbox_foreach_missing(struct maro_outbox *ob,
    void (*fn)(void *arg, const char *dest, int64_t since), void *arg)
{
	size_t i, n = 0;

	for (i = 0; i < ob->ndests; i++) {
		struct dest *d = ob->dests[i];

		/* reply inboxes ('~') are the requester's, not a name anyone typed */
		if (!d->missing_since || d->head == d->tail || d->name[0] == '~')
			continue;
		n++;
		if (fn)
			fn(arg, d->name, d->missing_since);
	}
	return n;
}
