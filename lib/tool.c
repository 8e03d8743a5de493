#include <errno.h>

#include "cli.h"
#include "tool.h"

struct maro_ctx *
maro_tool_open(struct maro_common *cm, int64_t *deadline)
{
	struct maro_ctx *c;
	char errbuf[512];

	maro_cli_catch_signals();
	*deadline = cm->timeout >= 0 ? maro_now_us() + cm->timeout : INT64_MAX;
	maro_deadline = *deadline;
	c = maro_ctx_open(&cm->co, errbuf, sizeof errbuf);
	if (!c)
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	return c;
}

struct maro_inbox *
maro_tool_inbox(struct maro_ctx *c, const struct maro_common *cm, const char *hint)
{
	struct maro_entry holder;
	struct maro_inbox *ib;
	char errbuf[512];

	ib = maro_inbox_open(c, cm->name, cm->type, cm->takeover, &holder, errbuf, sizeof errbuf);
	if (!ib) {
		if (errno == EEXIST)
			maro_die(MARO_EXIT_UNAVAILABLE, "name '%s' is held by pid %ld on %s (%s)", cm->name,
			    (long)holder.pid, holder.host, hint ? hint : "use --takeover");
		maro_die(MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	}
	return ib;
}

int
maro_tool_expect(struct maro_ctx *c, struct maro_common *cm, int64_t deadline)
{
	return cm->nexpect ? maro_cli_expect_wait(c->reg, cm->expect, cm->nexpect, deadline) : 0;
}
