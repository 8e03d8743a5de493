#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requester.h"

int
maro_requester_open(struct maro_requester *rq, struct maro_ctx *c, const char *owner,
    char *errbuf, size_t errlen)
{
	char id[MARO_UUID_LEN + 1];

	memset(rq, 0, sizeof *rq);
	maro_uuid(id);
	snprintf(rq->name, sizeof rq->name, "~%.*s.%.8s", MARO_NAME_MAX - 10,
	    owner && *owner ? owner : "anon", id);
	rq->inbox = maro_inbox_open(c, rq->name, NULL, 0, NULL, errbuf, errlen);
	return rq->inbox ? 0 : -1;
}

void
maro_requester_close(struct maro_requester *rq)
{
	if (rq->inbox)
		maro_inbox_close(rq->inbox);
	rq->inbox = NULL;
	maro_strset_free(&rq->owed);
}

int
maro_requester_expect(struct maro_requester *rq, struct maro_str session_id, unsigned n)
{
	while (n--)
		if (maro_strset_add(&rq->owed, session_id.p, session_id.n) < 0)
			return -1;
	return 0;
}

void
maro_requester_forget(struct maro_requester *rq, struct maro_str session_id)
{
	if (session_id.p)
		maro_strset_take(&rq->owed, session_id.p, session_id.n);
}

size_t
maro_requester_owed(const struct maro_requester *rq)
{
	return rq->owed.used;
}

int
maro_requester_next(struct maro_requester *rq, struct maro_delivery *d)
{
	int rc;

	while ((rc = maro_inbox_next(rq->inbox, d)) == 1) {
		if (d->msg.session_id.p &&
		    maro_strset_take(&rq->owed, d->msg.session_id.p, d->msg.session_id.n))
			return 1;
		rq->strays++;
		maro_inbox_done(rq->inbox, d);
	}
	return rc;
}

int
maro_requester_reply_to(struct maro_requester *rq, struct maro_ctx *c, struct maro_msg *m,
    const char *owner, char *errbuf, size_t errlen)
{
	if (!rq->inbox) {
		char *src = m->source.p ? maro_str_dup(m->source) : NULL;
		int rc = maro_requester_open(rq, c, src && maro_name_valid(src) ? src : owner, errbuf,
		    errlen);

		free(src);
		if (rc < 0)
			return -1;
	}
	m->reply_to = maro_str_c(rq->name);
	return 0;
}
