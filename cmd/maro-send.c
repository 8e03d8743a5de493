/*
 * maro-send: send messages read from stdin (or built from flags) to named
 * peers, wait until every one is acknowledged and, for task requests, until
 * their replies came back; write the replies to stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "expect.h"
#include "maro.h"
#include "reply.h"
#include "send.h"
#include "requester.h"


static const char *const synopsis[] = {
	"< messages",
	"-t TAG [-d DATA]... [--json JSON] [--task | --notification] [OPTIONS]",
	NULL,
};

/* The run, at file scope so that the rows of opts[] can bind to it. */
static struct sender {
	struct maro_send t;	/* the outbox, the requester, the peers given (lib/send) */
	int quiet;
	int no_wait;		/* best effort: sent once, no acknowledgement awaited */
	int fail_fast;		/* a name with no live member: 69 at once */
	struct maro_tool_out out;
	uint64_t delivered, failed, reported;
	struct maro_tool_replies replies;
	int refused;		/* a peer refused our connection for want of the group key */
	struct maro_input in;	/* standard input, or the messages -t and -d built */
	int input_done, input_status;
	char input_error[512];
} sender;

/* The message built from -t, -d, --json, --task or --notification. */
static struct maro_build build;

static const struct maro_opt opts[] = {
	MARO_OPT_STRV("peer", 'p', "PEER", "send to PEER (else to each message's destination)",
	    &sender.t.peers),
	MARO_OPT_SHARED_AS(MARO_SH_PREFIX, "send to every live peer whose name starts with PREFIX", 0),
	MARO_OPT_STR("tag", 't', "TAG", "build messages with this tag instead of reading stdin",
	    &build.tag),
	MARO_OPT_STRV("data", 'd', "DATA", "a text payload: one message per -d", &build.data),
	MARO_OPT_STR("json", 0, "JSON", "the built message's payload, as JSON", &build.json),
	MARO_OPT_SET("task", 0, "build task requests: wait for their replies (the default)",
	    &build.notification, 0),
	MARO_OPT_FLAG("notification", 0, "build notifications: no reply", &build.notification),
	MARO_OPT_FLAG("async", 0, "write the messages as acknowledged; replies go to -n NAME",
	    &sender.t.async),
	MARO_OPT_FLAG("no-wait", 0, "best effort: send once, wait for no acknowledgement",
	    &sender.no_wait),
	MARO_OPT_FLAG("fail-fast", 0, "a peer name with no live member is 69 at once, not waited for",
	    &sender.fail_fast),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing of what was not delivered", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Send messages to named peers; wait until each is acknowledged and each reply came back.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH(EXPECT) | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(WINDOW) |
	    MARO_SH(ADVERTISE) | MARO_SH(MAX_SIZE),
	0,
};

static void
on_ack(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	struct sender *s = arg;

	(void)dest;
	s->delivered++;
	if (s->t.async)
		maro_tool_out_put(&s->out, p, n);
}

static void
say_undelivered(struct sender *s, const char *dest, const uint8_t *p, size_t n, const char *why)
{
	struct maro_msg m;
	struct maro_err err;

	if (s->quiet || s->reported++ >= 20)
		return;
	if (maro_msg_decode(&m, p, n, &err) < 0 || !m.message_id.p)
		m.message_id = maro_str_c("?");
	maro_warn("not delivered to '%s': %.*s%s%s", dest, (int)m.message_id.n, m.message_id.p,
	    why ? ": " : "", why ? why : "");
}

static void
on_fail(void *arg, const char *dest, const uint8_t *p, size_t n, const char *why)
{
	struct sender *s = arg;
	struct maro_msg m;
	struct maro_err err;

	s->failed++;
	say_undelivered(s, dest, p, n, why);
	/* a request that never arrived is owed no reply */
	if (maro_msg_decode(&m, p, n, &err) == 0 && s->t.rq.inbox)
		maro_requester_forget(&s->t.rq, m.session_id);
}

static void
pending_one(void *arg, const char *dest, const uint8_t *p, size_t n)
{
	say_undelivered(arg, dest, p, n, NULL);
}

static void
missing_one(void *arg, const char *key, size_t len, unsigned count)
{
	struct sender *s = arg;

	if (!s->quiet && s->reported++ < 40)
		maro_warn("no reply in session %.*s%s", (int)len, key, count > 1 ? " (several missing)" : "");
}

/* Puts staged messages into the outbox until a window is full.  1 when all went. */
static int
flush_staged(struct sender *s)
{
	char dest[MARO_NAME_MAX + 1];
	int rc = maro_outbox_flush(s->t.ob, dest);

	if (rc < 0)
		maro_die(MARO_EXIT_SOFTWARE, "cannot queue a message for '%s': %s", dest, strerror(errno));
	return rc;
}

/* One input message (m, if decoded already), taken (lib/send); what cannot be is said here.  0, or -1 with err. */
static int
take(struct sender *s, const uint8_t *p, size_t n, struct maro_msg *m, struct maro_err *err)
{
	char why[512];

	switch (m ? maro_send_take_msg(&s->t, m, err, why, sizeof why) :
	    maro_send_take(&s->t, p, n, err, why, sizeof why)) {
	case MARO_SEND_BAD:
		return -1;
	case MARO_SEND_INBOX:
		maro_die(MARO_EXIT_UNAVAILABLE, "cannot open a reply inbox: %s", why);
	case MARO_SEND_NO_NAME:
		maro_usage_error("task requests sent with --async or --no-wait need a name for their replies (-n NAME)");
	case MARO_SEND_QUEUE:
		maro_die(MARO_EXIT_SOFTWARE, "cannot queue a message for '%s': %s", why, strerror(errno));
	case MARO_SEND_NOMEM:
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	}
	return 0;
}

static void
drain_replies(struct sender *s)
{
	struct maro_delivery d;

	while (maro_requester_next(&s->t.rq, &d) == 1) {
		/* a reply proves its request arrived, acknowledged or not */
		maro_outbox_settle_reply(s->t.ob, &d.msg);
		/* a failure reply: the task failed, said, not written out */
		if (maro_tool_reply(&s->replies, &d.msg))
			maro_tool_out_put(&s->out, d.p, d.n);
		if (s->out.error)
			return;
		maro_inbox_done(s->t.rq.inbox, &d);
	}
}

/*
 * Whether the input from the faulty item on (p; NULL: from what the
 * reader holds) reads as text: echo hello | maro-send is told how text
 * is sent.
 */
static int
looks_like_text(struct maro_input *in, const uint8_t *p)
{
	size_t avail;
	const uint8_t *q;

	if (in->kind != MARO_INPUT_CBOR)
		return 0;
	q = maro_reader_peek(&in->r, &avail);
	return p ? maro_cbor_looks_like_text(p, (size_t)(q + avail - p)) :
	    maro_cbor_looks_like_text(q, avail);
}

/*
 * Takes input messages while every window has room and replies are not
 * too far behind; malformed input ends the input (65, said at the end).
 */
static void
take_input(struct sender *s)
{
	while (!s->input_done && flush_staged(s) && !maro_send_full(&s->t)) {
		const uint8_t *p;
		size_t n;
		uint64_t off;
		struct maro_err err;
		struct maro_msg m;
		int rc, decoded;

		rc = maro_input_next_msg(&s->in, &p, &n, &off, &m, &decoded, &err);
		if (rc == 0 && s->in.eof) {
			s->input_done = 1;
			break;
		}
		if (rc == 0)
			break;
		if (rc < 0 || take(s, p, n, decoded ? &m : NULL, &err) < 0) {
			if (rc >= 0)
				err.offset += off;
			snprintf(s->input_error, sizeof s->input_error,
			    "malformed input at byte offset %llu: %s%s",
			    (unsigned long long)err.offset, err.msg,
			    looks_like_text(&s->in, rc >= 0 ? p : NULL) ? "; it looks like text, not "
			    "CBOR: build a message with -t TAG -d DATA, or make messages from JSON "
			    "lines with maro-msg -i json" : "");
			s->input_status = MARO_EXIT_DATAERR;
			s->input_done = 1;
			break;
		}
	}
}

/*
 * The status to leave with, from the loop's (0, 124 at -W, 69 with
 * --fail-fast, a signal's), what was delivered, replied and refused, and
 * the input: what is missing said on the way.
 */
static int
outcome(struct sender *s, int status)
{
	if (s->no_wait && status == MARO_EXIT_TIMEOUT) {
		size_t unsent = maro_outbox_unsent(s->t.ob);

		if (!s->quiet)
			maro_warn("timed out: %zu message%s not sent%s", unsent, unsent == 1 ? "" : "s",
			    maro_outbox_staged(s->t.ob) || !s->input_done ? ", and more not read" : "");
		/* some went: incomplete; none: a timeout */
		if (s->delivered || maro_outbox_pending(s->t.ob) > unsent)
			status = MARO_EXIT_INCOMPLETE;
	} else if (status == MARO_EXIT_TIMEOUT || status == MARO_EXIT_UNAVAILABLE || maro_signal || s->failed) {
		size_t undelivered = maro_outbox_pending(s->t.ob) + s->failed;
		size_t missing = maro_requester_owed(&s->t.rq);

		maro_outbox_foreach_pending(s->t.ob, pending_one, s);
		maro_strset_foreach(&s->t.rq.owed, missing_one, s);
		if (!s->quiet && s->reported > 20)
			maro_warn("%llu messages reported in all", (unsigned long long)s->reported);
		if (status == MARO_EXIT_TIMEOUT && (undelivered || missing)) {
			if (!s->quiet)
				maro_warn("timed out: %zu not delivered, %zu repl%s missing", undelivered,
				    missing, missing == 1 ? "y" : "ies");
			/* replies were awaited: none at all is a timeout, some is incomplete */
			if (s->t.rq.inbox ? s->replies.got > 0 : s->delivered > 0)
				status = MARO_EXIT_INCOMPLETE;
		} else if (status == MARO_EXIT_OK) {
			status = MARO_EXIT_INCOMPLETE;
		}
	}
	/* a peer that cannot serve (no handler, not our key) is unavailable; a failure reply, a failed task */
	status = maro_tool_replies_status(&s->replies, status);
	if (s->refused)
		status = maro_status_worse(status, MARO_EXIT_UNAVAILABLE);
	status = maro_status_worse(status, s->input_status);
	if (s->input_error[0])
		maro_warn("%s", s->input_error);
	maro_info("%llu delivered, %llu resent, %llu replies", (unsigned long long)s->delivered,
	    (unsigned long long)maro_outbox_resent(s->t.ob), (unsigned long long)s->replies.got);
	return status;
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct sender *s = &sender;
	struct maro_build *b = &build;
	struct maro_buf built = { 0 };
	const char *prefix;
	char errbuf[512];
	struct maro_loop l = { 0 };
	int64_t deadline;
	ssize_t k;
	int status = MARO_EXIT_OK, lingers;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, NULL, NULL);
	s->t.name = cm.name;
	s->quiet = cm.quiet;
	s->t.async |= s->no_wait;	/* best effort is sent as async, with nothing awaited */
	prefix = cm.prefix;
	if ((b->data.n || b->json) && !b->tag)
		maro_usage_error("-d and --json need -t TAG");
	if (b->data.n && b->json)
		maro_usage_error("-d and --json do not go together");
	if (prefix && s->t.peers.n)
		maro_usage_error("-p and -P do not go together");
	for (size_t i = 0; i < s->t.peers.n; i++)
		if (!maro_name_valid(s->t.peers.v[i]))
			maro_usage_error("invalid peer name '%s'", s->t.peers.v[i]);
	if (b->tag) {
		b->source = s->t.name;
		if (maro_build_messages(b, &built, errbuf, sizeof errbuf) < 0)
			maro_usage_error("%s", errbuf);
	} else if (isatty(STDIN_FILENO)) {
		maro_warn("reading CBOR messages from the terminal (build them with -t, or pipe maro-msg)");
	}

	if (!prefix)
		cm.co.peers = s->t.peers.n;	/* -p: so many, and no more (transport.h) */
	s->t.c = maro_tool_open(&cm, &deadline);
	if ((status = maro_tool_expect(s->t.c, &cm, deadline)) != 0)
		goto out;
	k = prefix ? maro_registry_names(s->t.c->reg, prefix, &s->t.peers.v, &s->t.peers.n) : 1;
	if (k < 0)
		maro_die(errno == ENOMEM ? MARO_EXIT_SOFTWARE : MARO_EXIT_UNAVAILABLE, "%s",
		    errno == ENOMEM ? "out of memory" : maro_registry_error(s->t.c->reg));
	if (k == 0)
		maro_die(MARO_EXIT_UNAVAILABLE, "no live peer matches '%s'", prefix);
	s->t.ob = maro_outbox_new(s->t.c, on_fail, on_ack, s);
	if (!s->t.ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	maro_tool_out_init(&s->out, cm.format);
	if (b->tag)
		maro_input_init_mem(&s->in, built.p, built.len);
	else
		maro_input_init(&s->in, MARO_INPUT_CBOR, STDIN_FILENO, &s->t.c->limits);
	/*
	 * the reply inbox, a member, opens with the first task: the heartbeat
	 * runs from the start (a beat with no entry of ours writes nothing)
	 */
	maro_loop_init(&l, s->t.c, deadline, 1);

	for (;;) {
		int stdin_at = -1, again;

		/* acknowledgements first: they make room for more input */
		maro_outbox_run(s->t.ob);
		/* take input while every window has room and replies are not too far behind */
		take_input(s);
		/* all sent: what is left is waiting for acks, which receivers then send at once */
		if (s->input_done && maro_outbox_staged(s->t.ob) == 0)
			maro_outbox_prompt(s->t.ob);
		maro_outbox_run(s->t.ob);
		if (maro_cli_report_outbox(s->t.ob) == EKEYREJECTED)
			s->refused = 1;
		/* a name nobody holds is said, not waited for in silence */
		if (maro_tool_report_missing(&cm, s->t.c, s->t.ob, deadline, s->fail_fast) && s->fail_fast) {
			status = MARO_EXIT_UNAVAILABLE;
			break;
		}
		if (s->t.rq.inbox)
			drain_replies(s);
		/*
		 * that run may have read the acknowledgement of everything in
		 * flight: then nothing more will come to wake the poll, and
		 * what waits staged must go now
		 */
		again = maro_outbox_staged(s->t.ob) && flush_staged(s);
		if ((status = maro_tool_out_flush(&s->out)) != 0)
			goto out;
		if (s->t.rq.inbox)
			maro_inbox_flush(s->t.rq.inbox);
		if (s->input_done && maro_outbox_staged(s->t.ob) == 0 && maro_outbox_pending(s->t.ob) == 0 &&
		    maro_requester_owed(&s->t.rq) == 0)
			break;
		/* --no-wait: each message went once to its peer's connection */
		if (s->no_wait && s->input_done && maro_outbox_staged(s->t.ob) == 0 && maro_outbox_unsent(s->t.ob) == 0)
			break;
		if ((status = maro_loop_stop(&l)) != 0)
			break;
		maro_loop_beat(&l, NULL);
		maro_loop_begin(&l);
		if (!s->input_done && !b->tag && maro_outbox_staged(s->t.ob) == 0 && !maro_send_full(&s->t))
			stdin_at = maro_loop_fd(&l, STDIN_FILENO, MARO_LOOP_IN);
		if (s->t.rq.inbox)
			maro_loop_inbox(&l, s->t.rq.inbox);
		maro_loop_outbox(&l, s->t.ob);
		if (again)
			maro_loop_soon(&l);
		maro_loop_wait(&l);
		if (stdin_at >= 0 && (maro_loop_ready(&l, stdin_at) & (MARO_LOOP_IN | MARO_LOOP_ERR))) {
			if (maro_input_fill(&s->in) < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(s->input_error, sizeof s->input_error, "error reading standard input: %s",
				    strerror(errno));
				s->input_status = MARO_EXIT_SOFTWARE;
				s->input_done = 1;
			}
		}
	}

	status = outcome(s, status);
out:
	/* what went to a connection gets a last moment to leave it, within -W */
	if (s->no_wait && s->t.ob)
		maro_outbox_linger(s->t.ob, (int)(maro_budget_us(1000000, 0) / 1000));
	lingers = s->t.rq.inbox || (s->no_wait && s->t.ob);	/* a reply inbox: its last acks */
	maro_requester_close(&s->t.rq);
	maro_loop_free(&l);
	if (MARO_CAN_ABANDON && !lingers)
		maro_cli_leave(s->t.c, status);	/* nothing lingers: the sockets are the exit's (transport.h) */
	maro_outbox_free(s->t.ob);
	maro_ctx_close(s->t.c);
	maro_tool_out_free(&s->out);
	maro_input_free(&s->in);
	maro_buf_free(&built);
	if (prefix)
		for (size_t i = 0; i < s->t.peers.n; i++)
			free(s->t.peers.v[i]);	/* -P names were copied */
	maro_strv_free(&s->t.peers);
	maro_strv_free(&b->data);
	maro_common_free(&cm);
	return status;
}
