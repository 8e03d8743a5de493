#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "cli.h"
#include "registry.h"
#include "reply.h"
#include "strset.h"
#include "tool.h"

struct maro_ctx *
maro_tool_ctx(struct maro_common *cm)
{
	struct maro_ctx *c;
	char errbuf[512];

	c = maro_ctx_open(&cm->co, errbuf, sizeof errbuf);
	if (!c && maro_signal)
		exit(maro_signal_status());	/* interrupted while the registry was asked */
	if (!c)
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	return c;
}

/*
 * ZeroMQ's I/O thread allocates each frame it receives (up to 64 KiB) and
 * the tool frees them in bursts: glibc gave the freed top of the heap back
 * to the kernel each time (above 128 KiB) and faulted it in again for the
 * next frames, a third of a streaming receiver's system time.  Kept up to
 * this much, the heap holds no more than the tool's peak use.
 */
#define KEEP_FREE_HEAP (4 * 1024 * 1024)

struct maro_ctx *
maro_tool_open(struct maro_common *cm, int64_t *deadline)
{
	mallopt(M_TRIM_THRESHOLD, KEEP_FREE_HEAP);
	maro_cli_catch_signals();
	*deadline = cm->timeout >= 0 ? maro_now_us() + cm->timeout : INT64_MAX;
	maro_deadline = *deadline;
	return maro_tool_ctx(cm);
}

struct maro_registry *
maro_tool_registry(struct maro_common *cm, int64_t *deadline)
{
	const char *group = cm->co.group ? cm->co.group : getenv("MARO_GROUP");
	struct maro_registry_opts ro = { .keyfile = cm->co.keyfile };
	struct maro_registry *r;
	char errbuf[512];

	maro_cli_catch_signals();
	*deadline = cm->timeout >= 0 ? maro_now_us() + cm->timeout : INT64_MAX;
	maro_deadline = *deadline;
	if (!group || !*group)
		group = "maro";
	r = maro_registry_open(cm->co.registry_url, group, &ro, errbuf, sizeof errbuf);
	if (!r && maro_signal)
		exit(maro_signal_status());
	if (!r)
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	maro_info("group '%s' in the %s registry", group, maro_registry_kind(r));
	return r;
}

struct maro_inbox *
maro_tool_inbox(struct maro_ctx *c, const struct maro_common *cm, const char *hint)
{
	struct maro_entry holder;
	struct maro_inbox *ib;
	char errbuf[512];

	ib = maro_inbox_open(c, cm->name, cm->type, cm->takeover, &holder, errbuf, sizeof errbuf);
	if (!ib && maro_signal)
		exit(maro_signal_status());
	if (!ib) {
		int held = errno == EEXIST;

		/* refused: the socket file and the owner file made for it go with it */
		maro_ctx_abandon(c);
		if (held)
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

int
maro_tool_stop(int64_t deadline)
{
	if (maro_signal)
		return maro_signal_status();
	return maro_now_us() >= deadline ? MARO_EXIT_TIMEOUT : 0;
}

int64_t
maro_tool_next_beat(struct maro_ctx *c, int64_t now)
{
	static unsigned seed;
	int64_t third = maro_registry_ttl_ms(c->reg) * 1000 / 3;

	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)now;
	return now + third - (int64_t)((uint64_t)rand_r(&seed) % (uint64_t)(third / 4 + 1));
}

int
maro_tool_beat(struct maro_ctx *c, struct maro_inbox *ib, int64_t now, int64_t *next)
{
	int taken;

	if (now < *next)
		return 0;
	taken = maro_registry_heartbeat(c->reg) < 0 && errno == EEXIST;
	if (ib) {
		maro_cli_report_rejected(c);
		maro_cli_report_malformed(ib);
	}
	*next = maro_tool_next_beat(c, now);
	if (taken)
		errno = EEXIST;
	return taken ? -1 : 0;
}

void
maro_tool_say_waiting(const struct maro_common *cm, struct maro_ctx *c, const char *what,
    int64_t deadline, int fail_fast)
{
	const char *url = cm->co.registry_url ? cm->co.registry_url : getenv("MARO_REGISTRY");
	int dir;
	char wait[64];

	if (!url || !*url)
		url = maro_registry_default_url();
	dir = !strncmp(url, "dir:", 4);
	if (fail_fast)
		snprintf(wait, sizeof wait, "not waiting for it (--fail-fast)");
	else if (deadline == INT64_MAX)
		snprintf(wait, sizeof wait, "waiting without end; -W sets a bound");
	else
		snprintf(wait, sizeof wait, "waiting (-W: %llds left)",
		    (long long)((deadline - maro_now_us() + 999999) / 1000000));
	/* a redis URL may carry a password: only a dir: one is said */
	maro_warn("%s in group '%s' %s%s%s; %s", what, c->group, dir ? "on " : "of the ",
	    dir ? url : maro_registry_kind(c->reg), dir ? "" : " registry", wait);
}

struct missing {
	const struct maro_common *cm;
	struct maro_ctx *c;
	int64_t now, deadline;
	int fail_fast;
};

static void
say_missing(void *arg, const char *dest, int64_t since)
{
	static struct maro_strset said;
	struct missing *m = arg;
	char what[MARO_NAME_MAX + 32];

	if ((!m->fail_fast && !maro_verbose && m->now - since < 1000000) ||
	    maro_strset_count(&said, dest, strlen(dest)) || maro_strset_add(&said, dest, strlen(dest)) < 0)
		return;
	snprintf(what, sizeof what, "no member named '%s'", dest);
	maro_tool_say_waiting(m->cm, m->c, what, m->deadline, m->fail_fast);
}

size_t
maro_tool_report_missing(const struct maro_common *cm, struct maro_ctx *c, struct maro_outbox *ob,
    int64_t deadline, int fail_fast)
{
	static int64_t next;
	struct missing m = { cm, c, maro_now_us(), deadline, fail_fast };

	/* a thousand destinations are not walked at every turn */
	if (m.now < next && !fail_fast)
		return 0;
	next = m.now + 200000;
	return maro_outbox_foreach_missing(ob, say_missing, &m);
}

void
maro_tool_report_no_peer(const struct maro_common *cm, struct maro_ctx *c, const char *prefix,
    int waiting, int64_t deadline)
{
	static int64_t since;
	static int said;
	char what[MARO_NAME_MAX + 32];

	if (said || !waiting) {
		since = 0;
		return;
	}
	if (!since)
		since = maro_now_us();
	if (!maro_verbose && maro_now_us() - since < 1000000)
		return;
	said = 1;
	snprintf(what, sizeof what, "no live peer matches '%s'", prefix);
	maro_tool_say_waiting(cm, c, what, deadline, 0);
}
