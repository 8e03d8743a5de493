/*
 * send: the messages of maro-send, each filled in (maro_msg_fill), routed
 * (to the peers given, else to its own destination) and staged in the
 * outbox, a copy per peer; a task request's replies are awaited by the
 * requester, unless it goes async (its replies to the member's name).
 * Nothing here prints: the faults are returned for the tool to say.
 */
#ifndef MARO_SEND_H
#define MARO_SEND_H

#include <stddef.h>
#include <stdint.h>

#include "outbox.h"
#include "requester.h"
#include "strv.h"

struct maro_send {
	struct maro_ctx *c;
	struct maro_outbox *ob;
	struct maro_requester rq;	/* rq.inbox is NULL until a request needs it */
	const char *name;
	int async;
	struct maro_strv peers;	/* the peers given; none: each message's own destination */
};

/* What maro_send_take could not do. */
enum maro_send_fault {
	MARO_SEND_BAD = 1,	/* not a message, or one without a route: err says why */
	MARO_SEND_INBOX,	/* the reply inbox could not be opened: why says why */
	MARO_SEND_NO_NAME,	/* a task request sent async needs the member's name for its replies */
	MARO_SEND_QUEUE,	/* it could not be staged for the peer named in why: errno */
	MARO_SEND_NOMEM,	/* out of memory */
};

/* One input message (n bytes at p) staged for its peers: 0, or a fault (above). */
int maro_send_take(struct maro_send *t, const uint8_t *p, size_t n, struct maro_err *err, char *why,
    size_t len);
/* The same for a message decoded already (m is filled in: it may be changed). */
int maro_send_take_msg(struct maro_send *t, struct maro_msg *m, struct maro_err *err, char *why,
    size_t len);
/* Do the sessions awaiting replies reach the context's max_pending (read no more input until some come)? */
int maro_send_full(const struct maro_send *t);

#endif
