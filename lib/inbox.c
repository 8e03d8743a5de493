#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "inbox.h"
#include "stats.h"
#include "strset.h"

/*
 * The duplicate filter remembers the last DEDUP_KEEP message_ids handed on,
 * as 64-bit hashes in an open-addressing table twice that size.  Senders
 * resend only what is in their window (far smaller), so a duplicate always
 * finds its original here.  The table starts at DEDUP_START ids and doubles
 * when they are all kept, up to DEDUP_KEEP: an inbox that hands on a few
 * thousand messages (a reply inbox, a worker's share of a scatter) touches
 * a table of a few pages, that stays in cache, not all of its 3 MiB.
 */
#define DEDUP_KEEP (1u << 17)
#define DEDUP_START (1u << 12)
#define DEDUP_AHEAD 8
#define MAX_PEERS 4096

struct peer {
	uint8_t id[256];
	size_t idlen;
	struct maro_buf acks;	/* ACK frame being built */
	uint64_t last_first;	/* the range being extended */
	uint32_t last_count;
	size_t last_at;		/* offset of that range in acks */
	int prompt;		/* its last frame asked for acknowledgements at once */
	uint32_t waiting;	/* messages its acks in hand acknowledge */
};

struct maro_inbox {
	struct maro_ctx *c;
	void *sock;
	char name[MARO_NAME_MAX + 1];
	/* the frame being read */
	const uint8_t *frame;
	size_t framelen, pos;
	uint32_t frame_peer;
	/* peers that sent to us, with their pending acknowledgements */
	struct peer *peers;
	size_t npeers;
	size_t npending;	/* peers with acks queued */
	/*
	 * held acknowledgements (maro_inbox_flush_due): since when, a sender
	 * with MARO_ACK_BATCH waiting, one asked for at once; held how long
	 */
	int64_t ack_since;
	int ack_full;
	int ack_prompt;
	int64_t ack_hold_us;
	/* duplicate filter: keep ids in order[] (oldest at order_at), their slots in slots[mask + 1] */
	uint64_t *slots;
	uint64_t *order;
	size_t order_at, order_len, keep, mask;
	uint64_t rejected;
	/* the message after the one handed out, decoded early (see next) */
	struct maro_delivery ahead;
	int have_ahead;
};

/* an id's hash: never 0, which marks an empty slot */
static uint64_t
hash_id(struct maro_str s)
{
	uint64_t h = maro_hash64(s.p, s.n);

	return h ? h : 1;
}

static size_t
dedup_find(const struct maro_inbox *ib, uint64_t h)
{
	size_t i = (size_t)h & ib->mask;

	while (ib->slots[i] && ib->slots[i] != h)
		i = (i + 1) & ib->mask;
	return i;
}

/*
 * The table made ready for keep ids (a power of two, up to DEDUP_KEEP): the
 * ids kept so far put again, with the new mask.  slots and order have room
 * for DEDUP_KEEP from the start, but pages no id has touched cost nothing:
 * it grows in place, with no second table to copy into.  Before the table
 * is full nothing was evicted, so the ids are order[0..order_len).
 */
static void
dedup_grow(struct maro_inbox *ib, size_t keep)
{
	size_t k, i;

	memset(ib->slots, 0, (ib->mask + 1) * sizeof *ib->slots);
	ib->keep = keep;
	ib->mask = keep * 2 - 1;
	for (k = 0; k < ib->order_len; k++) {
		uint64_t h = ib->order[k];

		for (i = (size_t)h & ib->mask; ib->slots[i]; i = (i + 1) & ib->mask)
			;
		ib->slots[i] = h;
	}
}

static void
dedup_remove(struct maro_inbox *ib, uint64_t h)
{
	size_t i = dedup_find(ib, h), j;

	if (!ib->slots[i])
		return;
	/* backward-shift deletion keeps probe chains whole */
	ib->slots[i] = 0;
	for (j = (i + 1) & ib->mask; ib->slots[j]; j = (j + 1) & ib->mask) {
		size_t home = (size_t)ib->slots[j] & ib->mask;

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			ib->slots[i] = ib->slots[j];
			ib->slots[j] = 0;
			i = j;
		}
	}
}

static int
dedup_seen(const struct maro_inbox *ib, uint64_t h)
{
	return h && ib->slots && ib->slots[dedup_find(ib, h)] != 0;
}

static void
dedup_add(struct maro_inbox *ib, uint64_t h)
{
	size_t i;

	if (!h || !ib->slots)
		return;
	i = dedup_find(ib, h);
	if (ib->slots[i])
		return;
	/* all kept: a table twice the size while there is room, else the oldest goes */
	if (ib->order_len == ib->keep && ib->keep < DEDUP_KEEP) {
		dedup_grow(ib, ib->keep * 2);
		i = dedup_find(ib, h);
	}
	if (ib->order_len == ib->keep) {
		/*
		 * The id evicted a few deliveries from now: its slot is far from
		 * this one, so fetch it early (it cost a cache miss per message).
		 */
		__builtin_prefetch(&ib->slots[ib->order[(ib->order_at + DEDUP_AHEAD) & (ib->keep - 1)] & ib->mask], 1);
		dedup_remove(ib, ib->order[ib->order_at]);
		ib->order_at = (ib->order_at + 1) & (ib->keep - 1);
		ib->order_len--;
		i = dedup_find(ib, h);
	}
	ib->slots[i] = h;
	ib->order[(ib->order_at + ib->order_len) & (ib->keep - 1)] = h;
	ib->order_len++;
}

struct maro_inbox *
maro_inbox_open(struct maro_ctx *c, const char *name, const char *type, int takeover,
    struct maro_entry *holder, char *errbuf, size_t errlen)
{
	struct maro_inbox *ib = calloc(1, sizeof *ib);
	struct maro_entry e;
	int err;

	if (!ib)
		return NULL;
	ib->c = c;
	ib->ack_hold_us = MARO_ACK_DELAY_US;
	snprintf(ib->name, sizeof ib->name, "%s", name);
	/* zeroed pages, touched only as the table grows into them */
	ib->slots = calloc(DEDUP_KEEP * 2, sizeof *ib->slots);
	ib->order = calloc(DEDUP_KEEP, sizeof *ib->order);
	if (!ib->slots || !ib->order)
		goto fail;
	ib->keep = DEDUP_START;
	ib->mask = DEDUP_START * 2 - 1;
	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "%s", name);
	if (type && *type)
		snprintf(e.type, sizeof e.type, "%s", type);
	else
		maro_name_type(name[0] == '~' ? name + 1 : name, e.type);
	ib->sock = c->driver->bind(c, e.endpoint);
	if (!ib->sock) {
		if (errbuf)
			snprintf(errbuf, errlen, "cannot bind an inbox: %s", strerror(errno));
		goto fail;
	}
	if (maro_registry_register(c->reg, &e, takeover, holder) < 0) {
		if (errbuf)
			snprintf(errbuf, errlen, "%s", maro_registry_error(c->reg));
		goto fail;
	}
	return ib;
fail:
	err = errno;
	if (ib->sock)
		c->driver->close(ib->sock, 0);
	free(ib->slots);
	free(ib->order);
	free(ib);
	errno = err;
	return NULL;
}

void
maro_inbox_close(struct maro_inbox *ib)
{
	size_t i;

	if (!ib)
		return;
	/* a queue that was full when these were sent may have room now */
	for (i = 0; i < 100 && ib->npending; i++)
		if (maro_inbox_flush(ib) < 0 && ib->npending)
			usleep(10000);
	/*
	 * No pause for the senders to read their last acknowledgements: the
	 * socket's linger below sends them, and a peer keeps what it received
	 * after the connection goes, read or not.
	 */
	maro_registry_unregister(ib->c->reg, ib->name);
	/* linger a little so the last acknowledgements leave */
	ib->c->driver->close(ib->sock, 2000);
	for (i = 0; i < ib->npeers; i++)
		maro_buf_free(&ib->peers[i].acks);
	free(ib->peers);
	free(ib->slots);
	free(ib->order);
	free(ib);
}

void
maro_inbox_discard(struct maro_inbox *ib)
{
	size_t i;

	for (i = 0; i < ib->npeers; i++)
		ib->peers[i].acks.len = ib->peers[i].waiting = 0;
	ib->npending = 0;
	ib->ack_since = 0;
	ib->ack_full = 0;
	ib->ack_prompt = 0;
}

void
maro_inbox_no_filter(struct maro_inbox *ib)
{
	free(ib->slots);
	free(ib->order);
	ib->slots = ib->order = NULL;
	ib->order_len = ib->order_at = ib->keep = ib->mask = 0;
}

const char *
maro_inbox_name(const struct maro_inbox *ib)
{
	return ib->name;
}

void *
maro_inbox_pollable(struct maro_inbox *ib)
{
	return ib->c->driver->handle(ib->sock);
}

uint64_t
maro_inbox_rejected(const struct maro_inbox *ib)
{
	return ib->rejected;
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int
peer_index(struct maro_inbox *ib, const void *id, size_t idlen, uint32_t *out)
{
	size_t i;

	if (idlen > sizeof ib->peers[0].id)
		return -1;
	for (i = ib->npeers; i-- > 0;)
		if (ib->peers[i].idlen == idlen && memcmp(ib->peers[i].id, id, idlen) == 0) {
			*out = (uint32_t)i;
			return 0;
		}
	if (ib->npeers == MAX_PEERS) {
		/* forget a peer that has nothing queued */
		for (i = 0; i < ib->npeers && ib->peers[i].acks.len; i++)
			;
		if (i == ib->npeers)
			return -1;
		maro_buf_free(&ib->peers[i].acks);
		ib->peers[i] = ib->peers[--ib->npeers];
	}
	if (ib->npeers % 64 == 0) {
		struct peer *p = realloc(ib->peers, (ib->npeers + 64) * sizeof *p);

		if (!p)
			return -1;
		ib->peers = p;
	}
	memset(&ib->peers[ib->npeers], 0, sizeof ib->peers[0]);
	memcpy(ib->peers[ib->npeers].id, id, idlen);
	ib->peers[ib->npeers].idlen = idlen;
	*out = (uint32_t)ib->npeers++;
	return 0;
}

static int
queue_ack(struct maro_inbox *ib, uint32_t peer, uint64_t seq)
{
	struct peer *p = &ib->peers[peer];
	uint8_t item[MARO_ACK_ITEM];

	if (!ib->npending)
		ib->ack_since = maro_now_us();
	ib->ack_prompt |= p->prompt;
	if (++p->waiting >= MARO_ACK_BATCH)
		ib->ack_full = 1;
	if (p->acks.len && p->last_first + p->last_count == seq) {
		put_u32(p->acks.p + p->last_at + 8, ++p->last_count);
		return 0;
	}
	if (!p->acks.len) {
		static const uint8_t hdr[MARO_FRAME_HEADER] = { 'm', 1, MARO_FRAME_ACK, 0 };

		if (maro_buf_append(&p->acks, hdr, sizeof hdr) < 0)
			return -1;
		ib->npending++;
	}
	put_u64(item, seq);
	put_u32(item + 8, 1);
	p->last_at = p->acks.len;
	p->last_first = seq;
	p->last_count = 1;
	return maro_buf_append(&p->acks, item, sizeof item);
}

int
maro_inbox_flush(struct maro_inbox *ib)
{
	size_t i;
	int rc = 0;

	if (!ib->npending)
		return 0;
	for (i = 0; i < ib->npeers; i++) {
		struct peer *p = &ib->peers[i];

		if (!p->acks.len)
			continue;
		if (ib->c->driver->send(ib->sock, p->id, p->idlen, p->acks.p, p->acks.len) < 0) {
			if (errno == EAGAIN) {
				rc = -1;	/* its queue is full: keep them for the next flush */
				continue;
			}
			/* a peer that went away cannot take its acks: it resends elsewhere */
		}
		p->acks.len = 0;
		p->waiting = 0;
		ib->npending--;
	}
	if (ib->npending) {
		/* some could not go: try again after another delay, not in a busy loop */
		ib->ack_since = maro_now_us();
	} else {
		ib->ack_since = 0;
		ib->ack_full = 0;
		ib->ack_prompt = 0;
	}
	return rc;
}

int
maro_inbox_flush_due(struct maro_inbox *ib)
{
	if (!ib->npending)
		return 0;
	if (ib->ack_prompt || ib->ack_full || maro_now_us() - ib->ack_since >= ib->ack_hold_us)
		return maro_inbox_flush(ib);
	return 0;
}

int64_t
maro_inbox_ack_deadline(const struct maro_inbox *ib)
{
	return ib->npending ? ib->ack_since + ib->ack_hold_us : INT64_MAX;
}

void
maro_inbox_hold_acks(struct maro_inbox *ib, int64_t us)
{
	ib->ack_hold_us = us;
}

/*
 * The next well-formed message: from the frame in hand, or (read) from a
 * new frame.  1 with d filled in and its id hashed; 0: nothing (more).
 */
static int
take(struct maro_inbox *ib, struct maro_delivery *d, int read)
{
	for (;;) {
		struct maro_err err;
		uint64_t seq;
		uint32_t len;

		if (!ib->frame || ib->pos >= ib->framelen) {
			const void *from, *p;
			size_t fromlen, n;
			int rc;

			if (!read)
				return 0;
			ib->frame = NULL;
			rc = ib->c->driver->recv(ib->sock, &from, &fromlen, &p, &n);
			if (rc <= 0)
				return rc;
			if (!p || n < MARO_FRAME_HEADER || memcmp(p, "m\1D", 3) != 0 ||
			    peer_index(ib, from, fromlen, &ib->frame_peer) < 0) {
				ib->rejected++;
				continue;
			}
			ib->frame = p;
			ib->framelen = n;
			ib->peers[ib->frame_peer].prompt = (((const uint8_t *)p)[3] & MARO_FRAME_PROMPT) != 0;
			ib->pos = MARO_FRAME_HEADER;
		}
		if (ib->framelen - ib->pos < MARO_DATA_ITEM_HEADER) {
			ib->rejected++;
			ib->frame = NULL;
			continue;
		}
		seq = get_u64(ib->frame + ib->pos);
		len = get_u32(ib->frame + ib->pos + 8);
		ib->pos += MARO_DATA_ITEM_HEADER;
		if (len > ib->framelen - ib->pos) {
			ib->rejected++;
			ib->frame = NULL;
			continue;
		}
		d->p = ib->frame + ib->pos;
		d->n = len;
		d->peer = ib->frame_peer;
		d->seq = seq;
		ib->pos += len;
		if (maro_msg_decode_checked(&d->msg, d->p, d->n, &ib->c->limits, &err) < 0) {
			ib->rejected++;
			continue;
		}
		d->id_hash = d->msg.message_id.p ? hash_id(d->msg.message_id) : 0;
		return 1;
	}
}

/* *d = *from, but only the unknown keys there are (the struct holds room for 32) */
static void
copy_delivery(struct maro_delivery *d, const struct maro_delivery *from)
{
	d->p = from->p;
	d->n = from->n;
	memcpy(&d->msg, &from->msg, offsetof(struct maro_msg, extra));
	memcpy(d->msg.extra, from->msg.extra, from->msg.nextra * sizeof from->msg.extra[0]);
	d->peer = from->peer;
	d->seq = from->seq;
	d->id_hash = from->id_hash;
}

int
maro_inbox_next(struct maro_inbox *ib, struct maro_delivery *d)
{
	for (;;) {
		int rc;

		if (ib->have_ahead) {
			copy_delivery(d, &ib->ahead);
			ib->have_ahead = 0;
		} else if ((rc = take(ib, d, 1)) <= 0) {
			return rc;
		}
		/*
		 * Decode the message after this one (same frame, so d stays
		 * valid) and fetch its filter slot: by the time it is asked
		 * about, the slot is in cache, not a miss per message.
		 */
		if (take(ib, &ib->ahead, 0) == 1) {
			ib->have_ahead = 1;
			if (ib->ahead.id_hash && ib->slots)
				__builtin_prefetch(&ib->slots[ib->ahead.id_hash & ib->mask]);
		}
		if (dedup_seen(ib, d->id_hash)) {
			if (queue_ack(ib, d->peer, d->seq) < 0)
				return -1;
			continue;
		}
		return 1;
	}
}

void
maro_inbox_settled(struct maro_inbox *ib, struct maro_str message_id)
{
	if (message_id.p)
		dedup_add(ib, hash_id(message_id));
}

void
maro_inbox_settled_hash(struct maro_inbox *ib, uint64_t id_hash)
{
	if (id_hash)
		dedup_add(ib, id_hash);
}

uint64_t
maro_inbox_id_hash(struct maro_str message_id)
{
	return hash_id(message_id);
}

int
maro_inbox_done(struct maro_inbox *ib, const struct maro_delivery *d)
{
	/* a delivery the caller made itself has no hash yet */
	if (d->id_hash)
		dedup_add(ib, d->id_hash);
	else
		maro_inbox_settled(ib, d->msg.message_id);
	maro_stats.msgs_in++;
	maro_stats.bytes_in += d->n;
	return queue_ack(ib, d->peer, d->seq);
}
