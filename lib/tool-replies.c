#include "cli.h"
#include "reply.h"
#include "tool-replies.h"

int
maro_tool_reply(struct maro_tool_replies *r, const struct maro_msg *m)
{
	char why[512];
	int k = maro_reply_failure_say(m, why, sizeof why);

	r->got++;
	r->no_handler += k == 2;
	r->failed += k == 1;
	if (k)
		maro_warn("%s", why);
	return !k;
}

int
maro_tool_replies_status(const struct maro_tool_replies *r, int status)
{
	if (r->no_handler)
		status = maro_status_worse(status, MARO_EXIT_UNAVAILABLE);
	if (r->failed)
		status = maro_status_worse(status, MARO_EXIT_TASKS_FAILED);
	return status;
}
