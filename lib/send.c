#include <errno.h>
#include <stdio.h>

#include "route.h"
#include "send.h"

int
maro_send_take(struct maro_send *t, const uint8_t *p, size_t n, struct maro_err *err, char *why,
    size_t len)
{
	struct maro_msg m;

	if (maro_msg_decode(&m, p, n, err) < 0)
		return MARO_SEND_BAD;
	return maro_send_take_msg(t, &m, err, why, len);
}

int
maro_send_take_msg(struct maro_send *t, struct maro_msg *m, struct maro_err *err, char *why,
    size_t len)
{
	char ids[2][MARO_UUID_LEN + 1];
	const char *one[1];
	char route[MARO_NAME_MAX + 1];
	const char *const *targets = (const char *const *)t->peers.v;
	size_t ntargets = t->peers.n, i;
	int request;

	maro_msg_fill(m, t->name, ids);
	request = m->type == MARO_SESSION_TASK && m->stage == MARO_STAGE_REQUEST;
	if (request && !m->reply_to.p) {
		if (!t->async) {
			if (maro_requester_reply_to(&t->rq, t->c, m, t->name, why, len) < 0)
				return MARO_SEND_INBOX;
		} else if (t->name) {
			m->reply_to = maro_str_c(t->name);
		} else {
			return MARO_SEND_NO_NAME;
		}
	}
	if (!ntargets) {
		if (maro_route_of(m, route, err) < 0)
			return MARO_SEND_BAD;
		one[0] = route;
		targets = one;
		ntargets = 1;
	}
	for (i = 0; i < ntargets; i++) {
		if (t->peers.n)
			m->destination = maro_str_c(targets[i]);
		if (maro_outbox_stage(t->ob, targets[i], m) < 0) {
			int e = errno;

			snprintf(why, len, "%s", targets[i]);
			errno = e;
			return MARO_SEND_QUEUE;
		}
		if (request && !t->async && maro_str_eq(m->reply_to, t->rq.name) &&
		    maro_requester_expect(&t->rq, m->session_id, 1) < 0)
			return MARO_SEND_NOMEM;
	}
	return 0;
}

int
maro_send_full(const struct maro_send *t)
{
	return t->rq.inbox && maro_requester_owed(&t->rq) >= t->c->max_pending;
}
