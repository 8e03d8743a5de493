/*
 * hold: the messages a receiver holds while it waits for a conditional
 * event (event.h) to hold over them: maro-wait-event's one event,
 * maro-dist's handlers' events.
 *
 * A message is held as it came (a copy of its bytes, decoded once), in
 * arrival order, until it is released; a resent copy of one held (the
 * same message_id) is not held twice: only where it came from last is
 * kept, which is where its acknowledgement goes.  Matching takes the
 * oldest messages that satisfy an event (take[]); the live peers that
 * percentages (P%) count come from the registry's list, read at most as
 * often as the caller says.
 */
#ifndef MARO_HOLD_H
#define MARO_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "inbox.h"
#include "registry.h"
#include "strset.h"

struct maro_held {
	uint8_t *p;		/* its bytes, owned; a caller that takes them sets p to NULL */
	size_t n;
	uint32_t peer;		/* where it came from last: where its acknowledgement goes */
	uint64_t seq;
	uint64_t serial;	/* in arrival order: msg[] is sorted by it */
	uint64_t idh;		/* its message_id's hash (maro_inbox_id_hash), hashed once */
	unsigned char acked;	/* acknowledged already (maro_hold_ack_sure): 1 + the unit it counted toward */
	struct maro_msg msg;	/* views into p */
};

struct maro_hold {
	struct maro_held *msg;	/* msg[0..n), oldest first */
	size_t n, cap;
	unsigned char *take;	/* what the last match consumed: n entries */
	struct maro_event_msg *view;
	struct maro_strset ids;	/* message ids: held (their serial), or away (maro_hold_release) */
	uint64_t serial;	/* of the next message held */
	struct maro_entry *members;	/* the registry's list, for percentages */
	ssize_t nmembers;
	int64_t members_at;
	unsigned counted[MARO_EVENT_MAX_UNITS];	/* maro_hold_ack_sure's, per unit */
};

/*
 * Holds the message of dl (a zeroed maro_hold is empty).  A resent copy of
 * one held only updates where it came from.  A resent copy of one whose
 * bytes a caller took away (maro_hold_release) goes to away(arg, dl), when
 * away is not NULL: 1 when it took note of it, 0 to hold it as new.
 * 0, or -1 ENOMEM.
 */
int maro_hold_put(struct maro_hold *h, const struct maro_delivery *dl,
    int (*away)(void *arg, const struct maro_delivery *dl), void *arg);

/*
 * Counts into live[u], for each unit u of e, the live peers whose names
 * start with the unit's source, from the registry's list, read again when
 * the last read is max_age_us old or older (0: at every call).  0, or -1
 * when that read failed (maro_registry_error): then counted from the list
 * read last.
 */
int maro_hold_live(struct maro_hold *h, struct maro_registry *reg, const struct maro_event *e,
    int64_t max_age_us, unsigned *live);

/*
 * Tries e over the messages held, oldest first (maro_event_match): 1 when
 * it holds, with h->take[i] set for each message it consumes, else 0.
 * have and need (or NULL) as maro_event_match's.
 */
int maro_hold_match(struct maro_hold *h, const struct maro_event *e, const unsigned *live,
    unsigned *have, unsigned *need);

/*
 * Takes, besides the last match's, every message held that u matches:
 * for an event of one message at a time, what matching again and again
 * would take, in the same order, in one pass.  How many it added.
 */
size_t maro_hold_take_all(struct maro_hold *h, const struct maro_event_unit *u);

/*
 * Acknowledges every message held that counts toward a unit e needs
 * whatever happens (no OR above it), oldest first, up to the number the
 * unit needs: its sender is free at once, and a surplus is left for the
 * next receiver of the name.  A message for a unit under an OR waits for
 * the event, which may take the other branch.  For a hold matched against
 * e alone.  How many it acknowledged.
 */
size_t maro_hold_ack_sure(struct maro_hold *h, struct maro_inbox *ib, const struct maro_event *e,
    const unsigned *live);

/* Acknowledges message i (maro_inbox_done). */
void maro_hold_ack(struct maro_hold *h, struct maro_inbox *ib, size_t i);

/*
 * Drops the messages taken (h->take) from the hold.  The id of one whose
 * bytes the caller took (p set to NULL) stays known as away, until
 * maro_hold_forget: its resent copies are not new work.  0, or -1 ENOMEM.
 */
int maro_hold_release(struct maro_hold *h);

/* Forgets the id (idh its hash) of a message taken away: done with. */
void maro_hold_forget(struct maro_hold *h, struct maro_str id, uint64_t idh);

void maro_hold_free(struct maro_hold *h);

#endif
