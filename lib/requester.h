/*
 * requester: the requester's side of task sessions (maro(7), SESSIONS).
 *
 * A requester owns a private reply inbox ("~owner.xxxxxxxx", put in the
 * reply_to of its requests) and counts the replies each session is still
 * owed.  maro_requester_next() returns only owed replies: a second reply to
 * an answered session, or a stray, is acknowledged and counted, never
 * returned.
 */
#ifndef MARO_REQUESTER_H
#define MARO_REQUESTER_H

#include "inbox.h"
#include "strset.h"
#include "transport.h"

struct maro_requester {
	struct maro_inbox *inbox;
	char name[MARO_NAME_MAX + 1];
	struct maro_strset owed;
	uint64_t strays;
};

/* Opens the reply inbox.  0, or -1 with errno and a message in errbuf. */
int maro_requester_open(struct maro_requester *rq, struct maro_ctx *c, const char *owner,
    char *errbuf, size_t errlen);
void maro_requester_close(struct maro_requester *rq);
/*
 * Points m's reply_to at the reply inbox, opening it on first need under
 * the name of m's source, else of owner (~NAME.xxxxxxxx; anonymous when
 * neither is a valid name).  0, or -1 as maro_requester_open.
 */
int maro_requester_reply_to(struct maro_requester *rq, struct maro_ctx *c, struct maro_msg *m,
    const char *owner, char *errbuf, size_t errlen);
/* session_id is owed n more replies. */
int maro_requester_expect(struct maro_requester *rq, struct maro_str session_id, unsigned n);
/* A request that was never delivered is owed nothing: forget one reply. */
void maro_requester_forget(struct maro_requester *rq, struct maro_str session_id);
/* Replies still owed, over all sessions (sessions, not replies: see strset). */
size_t maro_requester_owed(const struct maro_requester *rq);
/* 1 with an owed reply in *d (its count taken), 0 when none is waiting, -1 on error. */
int maro_requester_next(struct maro_requester *rq, struct maro_delivery *d);

#endif
