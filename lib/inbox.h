/*
 * inbox: a bound socket under a registered name that receives messages and
 * acknowledges those the caller handed on (maro(7), DELIVERY).
 *
 * Duplicates (a message_id already handed on by this inbox) are
 * acknowledged again and never returned.  Malformed frames and messages
 * from a broken or hostile peer are counted and skipped, never returned and
 * never acknowledged.
 */
#ifndef MARO_INBOX_H
#define MARO_INBOX_H

#include <stddef.h>
#include <stdint.h>

#include "message.h"
#include "registry.h"
#include "transport.h"

struct maro_inbox;

struct maro_delivery {
	const uint8_t *p;	/* the encoded message, valid until the next maro_inbox_next */
	size_t n;
	struct maro_msg msg;	/* decoded views into p */
	uint32_t peer;
	uint64_t seq;
	uint64_t id_hash;	/* of msg.message_id, for the duplicate filter; 0: not computed */
};

/*
 * Binds and registers name (type from the name unless type is given).  A
 * name starting with '~' is private.  NULL on failure with errno and a
 * message in errbuf; EEXIST when another live process holds the name (and
 * takeover is 0): *holder says who.
 */
struct maro_inbox *maro_inbox_open(struct maro_ctx *c, const char *name, const char *type,
    int takeover, struct maro_entry *holder, char *errbuf, size_t errlen);
/*
 * Unregisters and closes.  Acknowledgements still queued are sent first
 * (waiting up to a second for a full queue): call maro_inbox_discard()
 * before when what they acknowledge was not handed on after all.
 */
void maro_inbox_close(struct maro_inbox *ib);
const char *maro_inbox_name(const struct maro_inbox *ib);
/* What maro_poll takes for this inbox (an item's socket). */
void *maro_inbox_pollable(struct maro_inbox *ib);
/* 1 with *d, 0 when nothing is waiting, -1 on an error of the socket. */
int maro_inbox_next(struct maro_inbox *ib, struct maro_delivery *d);
/*
 * The message is handed on: its acknowledgement goes out with the next
 * flush and its message_id joins the duplicate filter.
 */
int maro_inbox_done(struct maro_inbox *ib, const struct maro_delivery *d);
/*
 * The message is handed on, and answered by a reply its sender settles it
 * with (maro_outbox_settle): a request to a private reply inbox.  Its
 * message_id joins the duplicate filter; no acknowledgement goes, since
 * the reply is one (a resend of it is acknowledged as a duplicate).
 */
void maro_inbox_settled(struct maro_inbox *ib, struct maro_str message_id);
/* The same by the id's hash (a delivery's id_hash, or maro_inbox_id_hash). */
void maro_inbox_settled_hash(struct maro_inbox *ib, uint64_t id_hash);
/* The hash the inbox keeps of a message_id: never 0. */
uint64_t maro_inbox_id_hash(struct maro_str message_id);
/* Sends every queued acknowledgement.  Call after the output was flushed. */
int maro_inbox_flush(struct maro_inbox *ib);
/*
 * The same, but only once they are due: a sender asked for them at once
 * (its frame said so: it waits on them), MARO_ACK_BATCH messages of one
 * sender wait, or the oldest waited MARO_ACK_DELAY_US (or what
 * maro_inbox_hold_acks set).  Holding them lets one frame acknowledge
 * many messages.  Poll no longer than maro_inbox_ack_deadline.
 */
int maro_inbox_flush_due(struct maro_inbox *ib);
/* When held acknowledgements are due (monotonic us), or INT64_MAX. */
int64_t maro_inbox_ack_deadline(const struct maro_inbox *ib);
/*
 * Holds acknowledgements up to us (instead of MARO_ACK_DELAY_US) when no
 * sender waits on them: for a reply inbox, whose senders (workers) need
 * them only to free what they keep.
 */
void maro_inbox_hold_acks(struct maro_inbox *ib, int64_t us);
/* Forgets every queued acknowledgement (their senders resend). */
void maro_inbox_discard(struct maro_inbox *ib);
/*
 * Turns the duplicate filter off and frees it: for a reader that drops
 * duplicates by itself (a requester whose every session takes one reply).
 */
void maro_inbox_no_filter(struct maro_inbox *ib);
/* Frames or messages dropped as malformed so far. */
uint64_t maro_inbox_rejected(const struct maro_inbox *ib);

#endif
