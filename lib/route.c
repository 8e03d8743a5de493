#include <stdio.h>
#include <string.h>

#include "route.h"

static int
no_route(struct maro_err *err)
{
	err->offset = 0;
	return -1;
}

int
maro_route_of(const struct maro_msg *m, char name[MARO_NAME_MAX + 1], struct maro_err *err)
{
	int request = m->type == MARO_SESSION_TASK && m->stage == MARO_STAGE_REQUEST;
	struct maro_str to = !request && m->reply_to.p ? m->reply_to : m->destination;

	if (!to.p) {
		snprintf(err->msg, sizeof err->msg, "message has no destination (use -p PEER)");
		return no_route(err);
	}
	if (to.n > MARO_NAME_MAX) {
		snprintf(err->msg, sizeof err->msg, "destination longer than %d bytes", MARO_NAME_MAX);
		return no_route(err);
	}
	memcpy(name, to.p, to.n);
	name[to.n] = '\0';
	if (!maro_name_valid(name)) {
		snprintf(err->msg, sizeof err->msg, "invalid destination '%s'", name);
		return no_route(err);
	}
	return 0;
}
