/*
 * maro-bcast: one message, encoded once, to every live peer matching a
 * prefix (or the whole group); collect one reply from each, every reply
 * with its replier's name as source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "maro.h"
#include "reply.h"
#include "requester.h"
#include "strset.h"

/* echo hello | maro-bcast: say how text is sent */
#define TEXT_HINT "; it looks like text, not CBOR: build the message with -t TAG -d DATA, " \
	"or make it from JSON with maro-msg -i json"

static const char *const synopsis[] = {
	"< message",
	"-t TAG [-d DATA | --json JSON] [--task | --notification] [OPTIONS]",
	NULL,
};

/* The run, at file scope so that the rows of opts[] can bind to it. */
static struct bcast {
	struct maro_ctx *c;
	struct maro_outbox *ob;
	struct maro_requester rq;
	int async, quiet, blocking;
	struct maro_strset waiting;	/* peer names still owing their reply */
	struct maro_tool_out out;
	uint64_t delivered, failed;
	struct maro_tool_replies replies;
	char session[128];
} bcast;

/* The one message built from -t, -d, --json, --task or --notification. */
static struct maro_build build;

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "to every live peer whose name starts with PREFIX "
	    "(else the whole group)", 0),
	MARO_OPT_STR("tag", 't', "TAG", "build the message with this tag instead of reading stdin",
	    &build.tag),
	/* bound as -d is everywhere, not repeated: the one message has one payload */
	{ .name = "data", .letter = 'd', .arg = "DATA", .help = "its text payload (one message: one "
	    "-d)", .bind = MARO_BIND_STRV, .to = &build.data },
	MARO_OPT_STR("json", 0, "JSON", "its payload, as JSON", &build.json),
	MARO_OPT_SET("task", 0, "build a task request: gather a reply from each (the default)",
	    &build.notification, 0),
	MARO_OPT_FLAG("notification", 0, "build a notification: no replies", &build.notification),
	MARO_OPT_FLAG("async", 0, "write the copies as acknowledged; replies go to -n NAME",
	    &bcast.async),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of what was not delivered", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Send one message to every live peer of a prefix or the group; gather one reply from each.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH(EXPECT) | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(ADVERTISE),
	0,
};

static void
on_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct bcast *b = arg;

	(void)dest;
	b->delivered++;
	if (b->async)
		maro_tool_out_put(&b->out, p, n);
}

static void
say_waiting(void *arg, const char *key, size_t len, unsigned count)
{
	struct bcast *b = arg;

	(void)count;
	if (!b->quiet)
		maro_warn("no reply from '%.*s' in session %s", (int)len, key, b->session);
}

static void
say_pending(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct bcast *b = arg;

	(void)p;
	(void)n;
	if (!b->quiet)
		maro_warn("not delivered to '%s'", dest);
}

/*
 * Peers that left before replying owe nothing more, once they have been gone
 * for DEPART_GRACE_US: a peer such as `maro-recv -C 1 | maro-msg reply |
 * maro-send` leaves the registry before its reply is on the way.
 */
#define DEPART_GRACE_US 3000000

static void
drop_departed(struct bcast *b, int64_t now)
{
	size_t i;

	for (i = 0; i < b->waiting.cap; i++) {
		struct maro_strset_slot *e = &b->waiting.slots[i];
		struct maro_entry ent;

		if (!e->key || !e->count)
			continue;
		if (maro_registry_lookup(b->c->reg, e->key, &ent) != 0) {
			e->value = 0;	/* live, or the registry did not answer */
			continue;
		}
		if (!e->value)
			e->value = (uint64_t)now;	/* first seen gone */
		if (now - (int64_t)e->value < DEPART_GRACE_US)
			continue;
		if (!b->quiet)
			maro_warn("'%s' left before replying", e->key);
		maro_outbox_drop(b->ob, e->key);
		maro_requester_forget(&b->rq, maro_str_c(b->session));
		maro_strset_take(&b->waiting, e->key, e->len);
		b->failed++;
	}
}

/* The replies that came: each peer's first written (a failure reply said), others ignored. */
static void
take_replies(struct bcast *b)
{
	struct maro_delivery d;

	while (maro_requester_next(&b->rq, &d) == 1) {
		char src[MARO_NAME_MAX + 1];

		snprintf(src, sizeof src, "%.*s", (int)d.msg.source.n, d.msg.source.p ? d.msg.source.p : "");
		if (!maro_strset_take(&b->waiting, src, strlen(src))) {
			/* a reply from nobody we asked: give its count back */
			maro_requester_expect(&b->rq, d.msg.session_id, 1);
			maro_info("ignoring a reply from '%s'", src);
		} else {
			maro_outbox_settle(b->ob, src, d.msg.session_id);
			/* a failure reply: said, not written out */
			if (maro_tool_reply(&b->replies, &d.msg))
				maro_tool_out_put(&b->out, d.p, d.n);
		}
		maro_inbox_done(b->rq.inbox, &d);
	}
}

/* The one message on standard input, into in; anything else dies (65). */
static void
read_one(struct maro_buf *in)
{
	struct maro_reader r;
	struct maro_err err;
	const uint8_t *p;
	size_t n;
	int rc;

	maro_reader_init(&r, STDIN_FILENO, NULL);
	rc = maro_reader_read(&r, &p, &n, NULL, &err);
	if (rc == 1)
		maro_buf_append(in, p, n);
	if (rc == 1 && (rc = maro_reader_read(&r, &p, &n, NULL, &err)) == 1) {
		err.offset = n;
		snprintf(err.msg, sizeof err.msg, "more than one message (maro-bcast sends one)");
		rc = -1;
	}
	if (rc < 0) {
		const uint8_t *q = maro_reader_peek(&r, &n);

		maro_die(MARO_EXIT_DATAERR, "malformed input at byte offset %llu: %s%s",
		    (unsigned long long)err.offset, err.msg[0] ? err.msg : strerror(errno),
		    maro_cbor_looks_like_text(q, n) ? TEXT_HINT : "");
	}
	maro_reader_free(&r);
	if (!in->len)
		maro_die(MARO_EXIT_DATAERR, "no message on standard input");
}

/*
 * The status to leave with, from the loop's (0, 124 at -W, 69 for a
 * refusal, a signal's) and what was delivered and answered: who did not
 * take it, or owes a reply, said on the way.
 */
static int
outcome(struct bcast *b, int status)
{
	if (status == MARO_EXIT_TIMEOUT || maro_signal) {
		maro_outbox_foreach_pending(b->ob, say_pending, b);
		if (b->blocking)
			maro_strset_foreach(&b->waiting, say_waiting, b);
		if (status == MARO_EXIT_TIMEOUT && (b->replies.got || (!b->blocking && b->delivered)))
			status = MARO_EXIT_INCOMPLETE;
	}
	/* then what failed, by the one rule: as maro-send */
	if (b->failed)
		status = maro_status_worse(status, MARO_EXIT_INCOMPLETE);
	status = maro_tool_replies_status(&b->replies, status);
	maro_info("%llu delivered, %llu replies", (unsigned long long)b->delivered,
	    (unsigned long long)b->replies.got);
	return status;
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct bcast *b = &bcast;
	struct maro_build *mb = &build;
	struct maro_entry *peers = NULL;
	struct maro_buf in = { 0 }, enc = { 0 };
	struct maro_msg m;
	struct maro_err err;
	const char *prefix, *name;
	char errbuf[512], ids[2][MARO_UUID_LEN + 1];
	ssize_t npeers, i;
	struct maro_loop l = { 0 };
	int64_t deadline, next_check;
	int status = MARO_EXIT_OK;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, NULL, NULL);
	name = cm.name;
	prefix = cm.prefix;
	b->quiet = cm.quiet;
	if (mb->data.n > 1)
		maro_usage_error("one -d at most: one message is sent");
	if ((mb->data.n || mb->json) && !mb->tag)
		maro_usage_error("-d and --json need -t TAG");
	if (mb->data.n && mb->json)
		maro_usage_error("-d and --json do not go together");
	if (b->async && !name)
		maro_usage_error("--async needs a name for the replies (-n NAME)");

	/* the one message: from flags, or the one message on stdin */
	if (mb->tag) {
		mb->source = name;
		if (maro_build_messages(mb, &in, errbuf, sizeof errbuf) < 0)
			maro_usage_error("%s", errbuf);
	} else {
		read_one(&in);
	}
	if (maro_msg_decode(&m, in.p, in.len, &err) < 0)
		maro_die(MARO_EXIT_DATAERR, "malformed input at byte offset %llu: %s%s",
		    (unsigned long long)err.offset, err.msg,
		    maro_cbor_looks_like_text(in.p, in.len) ? TEXT_HINT : "");

	b->c = maro_tool_open(&cm, &deadline);
	if ((status = maro_tool_expect(b->c, &cm, deadline)) != 0)
		goto out;
	npeers = maro_registry_list(b->c->reg, prefix, &peers);
	if (npeers < 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "%s", maro_registry_error(b->c->reg));
	if (npeers == 0) {
		maro_warn("no live peer%s%s%s", prefix ? " matches '" : "", prefix ? prefix : "",
		    prefix ? "'" : " in the group");
		status = MARO_EXIT_UNAVAILABLE;
		goto out;
	}

	maro_msg_fill(&m, name, ids);
	b->blocking = !b->async && m.type == MARO_SESSION_TASK && m.stage == MARO_STAGE_REQUEST;
	if (b->blocking && maro_requester_open(&b->rq, b->c, name, errbuf, sizeof errbuf) < 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "cannot open a reply inbox: %s", errbuf);
	if (b->blocking)
		m.reply_to = maro_str_c(b->rq.name);
	else if (b->async && m.type == MARO_SESSION_TASK && !m.reply_to.p)
		m.reply_to = maro_str_c(name);
	snprintf(b->session, sizeof b->session, "%.*s", (int)m.session_id.n, m.session_id.p);

	b->ob = maro_outbox_new(b->c, NULL, on_ack, b);
	if (!b->ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	/* one round, and then waiting on it: receivers acknowledge at once */
	maro_outbox_prompt(b->ob);
	maro_tool_out_init(&b->out, cm.format);
	for (i = 0; i < npeers; i++) {
		/*
		 * each peer's copy names it as destination: a replier that swaps
		 * source and destination (maro-msg reply) answers under its own name
		 */
		m.destination = maro_str_c(peers[i].name);
		enc.len = 0;
		if (maro_msg_encode(&m, &enc) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (maro_outbox_put(b->ob, peers[i].name, enc.p, enc.len) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "cannot queue for '%s': %s", peers[i].name,
			    strerror(errno));
		if (b->blocking) {
			maro_strset_put(&b->waiting, peers[i].name, strlen(peers[i].name), 0);
			maro_requester_expect(&b->rq, m.session_id, 1);
		}
	}
	maro_info("sent to %zd peer%s", npeers, npeers == 1 ? "" : "s");
	maro_loop_init(&l, b->c, deadline, 0);
	next_check = l.now + 500000;

	for (;;) {
		maro_outbox_run(b->ob);
		/* a peer that refused us for want of the key never answers: no use waiting */
		if (maro_cli_report_outbox(b->ob) == EKEYREJECTED) {
			status = MARO_EXIT_UNAVAILABLE;
			break;
		}
		if (b->blocking)
			take_replies(b);
		if ((status = maro_tool_out_flush(&b->out)) != 0)
			goto out;
		if (b->blocking)
			maro_inbox_flush(b->rq.inbox);
		if (maro_outbox_pending(b->ob) == 0 && (!b->blocking || b->waiting.used == 0))
			break;
		if ((status = maro_loop_stop(&l)) != 0)
			break;
		/* the reply inbox's entry, and who left before answering */
		if (l.now >= next_check) {
			if (b->blocking) {
				maro_registry_heartbeat(b->c->reg);
				drop_departed(b, l.now);
			}
			next_check = l.now + 500000;
		}
		maro_loop_begin(&l);
		if (b->blocking)
			maro_loop_inbox(&l, b->rq.inbox);
		maro_loop_outbox(&l, b->ob);
		maro_loop_at(&l, next_check);
		maro_loop_wait(&l);
	}
	status = outcome(b, status);
out:
	maro_loop_free(&l);
	maro_outbox_free(b->ob);
	maro_requester_close(&b->rq);
	maro_ctx_close(b->c);
	maro_tool_out_free(&b->out);
	maro_strset_free(&b->waiting);
	maro_buf_free(&in);
	maro_buf_free(&enc);
	free(peers);
	maro_common_free(&cm);
	return status;
}
