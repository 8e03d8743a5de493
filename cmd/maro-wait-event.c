/*
 * maro-wait-event: join under a name, wait until a conditional event holds,
 * write the messages that satisfied it, exit 0.  Messages it did not
 * consume stay unacknowledged: their senders keep them for the next
 * receiver of the name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "maro.h"

/* Messages held while the event does not hold yet; past this, reading pauses. */
#define MAX_HELD 65536

static const char *const synopsis[] = { "EVENT", NULL };

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "no progress on a terminal, nothing said at -W", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Join under NAME, wait until EVENT holds, write the messages that satisfied it.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH_INBOX | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(ADVERTISE),
	MARO_TOOL_NEEDS_NAME | MARO_TOOL_OPERANDS,
};

struct held {
	uint8_t *p;
	size_t n;
	uint32_t peer;
	uint64_t seq;
	struct maro_msg msg;	/* views into p */
};

struct waiter {
	struct maro_event ev;
	struct held *held;
	size_t nheld, cap;
	struct maro_strset ids;		/* message ids held, so a resent copy is not held twice */
	struct maro_event_msg *view;
	unsigned char *take;
	unsigned char *acked;		/* counted toward a unit, and acknowledged */
	unsigned counted[MARO_EVENT_MAX_UNITS];
	unsigned char must[MARO_EVENT_MAX_UNITS];	/* no OR above the unit */
	unsigned live[MARO_EVENT_MAX_UNITS];
	unsigned have[MARO_EVENT_MAX_UNITS], need[MARO_EVENT_MAX_UNITS];
};

static void
hold(struct waiter *w, const struct maro_delivery *d)
{
	struct held *h;
	struct maro_err err;

	uint64_t at;

	/* a resent copy: acknowledge it, when the time comes, where it came from last */
	if (d->msg.message_id.p && maro_strset_get(&w->ids, d->msg.message_id.p, d->msg.message_id.n, &at)) {
		w->held[at].peer = d->peer;
		w->held[at].seq = d->seq;
		return;
	}
	if (w->nheld == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 256;
		w->held = maro_xrealloc(w->held, w->cap * sizeof *w->held);
		w->view = maro_xrealloc(w->view, w->cap * sizeof *w->view);
		w->take = maro_xrealloc(w->take, w->cap);
		w->acked = maro_xrealloc(w->acked, w->cap);
	}
	h = &w->held[w->nheld];
	h->p = malloc(d->n);
	if (!h->p)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	memcpy(h->p, d->p, d->n);
	h->n = d->n;
	h->peer = d->peer;
	h->seq = d->seq;
	w->acked[w->nheld] = 0;
	maro_msg_decode(&h->msg, h->p, h->n, &err);
	if (h->msg.message_id.p &&
	    maro_strset_put(&w->ids, h->msg.message_id.p, h->msg.message_id.n, w->nheld) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	w->nheld++;
}

/* Live peers matching each unit's source, for percentages. */
static int
count_live(struct waiter *w, struct maro_registry *reg)
{
	struct maro_entry *v;
	ssize_t k, i;
	int u;

	k = maro_registry_list(reg, NULL, &v);
	if (k < 0)
		return -1;
	for (u = 0; u < w->ev.nunits; u++) {
		w->live[u] = 0;
		for (i = 0; i < k; i++)
			if (!strncmp(v[i].name, w->ev.units[u].source, strlen(w->ev.units[u].source)))
				w->live[u]++;
	}
	free(v);
	return 0;
}

/* Marks the units every way for the event to hold needs: no OR above them. */
static void
mark_must(struct waiter *w, int node)
{
	const struct maro_event_node *n = &w->ev.nodes[node];
	int i;

	if (n->kind == MARO_EVENT_UNIT)
		w->must[n->unit] = 1;
	else if (n->kind == MARO_EVENT_AND)
		for (i = 0; i < n->nchild; i++)
			mark_must(w, n->child[i]);
}

/*
 * Acknowledges every held message that counts toward a unit the event
 * needs whatever happens (mark_must), oldest first, up to the number the
 * unit needs: its sender is free at once, and a surplus is left for the
 * next receiver of the name.  A message for a unit under an OR waits for
 * the event, which may take the other branch.  Returns how many it
 * acknowledged.
 */
static size_t
count(struct waiter *w, struct maro_inbox *ib)
{
	struct maro_event_msg m;
	size_t i, n = 0;
	int u;

	for (i = 0; i < w->nheld; i++) {
		if (w->acked[i])
			continue;
		m.source = w->held[i].msg.source;
		m.tag = w->held[i].msg.tag;
		for (u = 0; u < w->ev.nunits; u++) {
			const struct maro_event_unit *eu = &w->ev.units[u];

			if (w->must[u] && w->counted[u] < maro_event_need(eu, w->live[u]) &&
			    maro_event_unit_matches(eu, &m)) {
				struct maro_delivery ack = { .peer = w->held[i].peer,
					.seq = w->held[i].seq, .msg = w->held[i].msg };

				maro_inbox_done(ib, &ack);
				w->acked[i] = 1;
				w->counted[u]++;
				n++;
				break;
			}
		}
	}
	return n;
}

/*
 * Writes the messages taken (when the event holds) or only those already
 * acknowledged (at a timeout or a signal), oldest first, and acknowledges
 * what it wrote.  -1 when standard output failed.
 */
static int
put_held(struct waiter *w, struct maro_inbox *ib, struct maro_writer *out, struct maro_buf *line,
    enum maro_format fmt, int quiet, int taken)
{
	size_t i;

	for (i = 0; i < w->nheld; i++) {
		struct maro_err err;
		struct maro_delivery ack = { .peer = w->held[i].peer, .seq = w->held[i].seq,
			.msg = w->held[i].msg };

		if (!w->acked[i] && !(taken && w->take[i]))
			continue;
		line->len = 0;
		if (!quiet && maro_format_msg(line, fmt, &w->held[i].msg, w->held[i].p, w->held[i].n, &err) == 0 &&
		    maro_writer_put(out, line->p, line->len) < 0)
			return -1;
		if (!w->acked[i])
			maro_inbox_done(ib, &ack);
	}
	return 0;
}

static int
holds(struct waiter *w)
{
	size_t i;

	for (i = 0; i < w->nheld; i++) {
		w->view[i].source = w->held[i].msg.source;
		w->view[i].tag = w->held[i].msg.tag;
	}
	return maro_event_match(&w->ev, w->view, w->nheld, w->live, w->take ? w->take : (unsigned char *)"",
	    w->have, w->need);
}

static void
say_progress(struct waiter *w, int final)
{
	char line[1024], unit[300];
	size_t off = 0;
	int u;

	for (u = 0; u < w->ev.nunits && off < sizeof line - 320; u++) {
		const struct maro_event_unit *eu = &w->ev.units[u];

		snprintf(unit, sizeof unit, "%s:%s", eu->source[0] ? eu->source : "*",
		    eu->tag[0] ? eu->tag : "*");
		if (w->need[u])
			off += (size_t)snprintf(line + off, sizeof line - off, "%s%s %u/%u", u ? ", " : "",
			    unit, w->have[u], w->need[u]);
		else
			off += (size_t)snprintf(line + off, sizeof line - off, "%s%s %u/%u%% of no live peer",
			    u ? ", " : "", unit, w->have[u], eu->amount);
	}
	if (final)
		maro_warn("timed out; still missing: %s", line);
	else
		fprintf(stderr, "\r%s: %s\033[K", maro_progname, line);
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct waiter w = { 0 };
	struct maro_writer out;
	struct maro_buf line = { 0 };
	struct maro_ctx *c;
	struct maro_inbox *ib;
	enum maro_format fmt;
	char errbuf[512];
	int64_t deadline, next_hb, next_live, now;
	int quiet, col, status = MARO_EXIT_OK, tty, done = 0, at;
	size_t i;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	at = maro_opt_parse(&tool, &cm, argc, argv, NULL, NULL);
	fmt = cm.format;
	quiet = cm.quiet;
	if (at != argc - 1)
		maro_usage_error(at == argc ? "an EVENT is required" : "one EVENT only (quote it)");
	if (maro_event_parse(&w.ev, argv[at], &col, errbuf, sizeof errbuf) < 0) {
		maro_warn("invalid event at column %d: %s", col, errbuf);
		fprintf(stderr, "  %s\n  %*s^\n", argv[at], col - 1, "");
		return MARO_EXIT_USAGE;
	}
	mark_must(&w, w.ev.root);

	c = maro_tool_open(&cm, &deadline);
	ib = maro_tool_inbox(c, &cm, NULL);
	maro_writer_init(&out, STDOUT_FILENO);
	tty = isatty(STDERR_FILENO) && !quiet;
	now = maro_now_us();
	next_hb = maro_tool_next_beat(c, now);
	next_live = 0;

	while (!done) {
		zmq_pollitem_t it = { maro_inbox_pollable(ib), 0, ZMQ_POLLIN, 0 };
		struct maro_delivery d;
		int64_t wake;

		now = maro_now_us();
		if (now >= next_live) {
			if (count_live(&w, c->reg) < 0)
				maro_info("%s", maro_registry_error(c->reg));
			next_live = now + 250000;
		}
		while (w.nheld < MAX_HELD && maro_inbox_next(ib, &d) == 1)
			hold(&w, &d);
		if (holds(&w)) {
			if (put_held(&w, ib, &out, &line, fmt, quiet, 1) == 0 &&
			    (maro_writer_flush(&out) == 0 || errno == EPIPE))
				maro_inbox_flush(ib);
			done = 1;
			break;
		}
		/* a progress report never waits for the others */
		if (count(&w, ib))
			maro_inbox_flush(ib);
		if (tty)
			say_progress(&w, 0);
		if (maro_signal) {
			status = maro_signal_status();
			break;
		}
		if (now >= deadline) {
			status = MARO_EXIT_TIMEOUT;
			if (tty)
				fputc('\n', stderr);
			if (!quiet)
				say_progress(&w, 1);
			break;
		}
		if (now >= next_hb) {
			maro_registry_heartbeat(c->reg);
			maro_cli_report_rejected(c);
			maro_cli_report_malformed(ib);
			next_hb = maro_tool_next_beat(c, now);
		}
		wake = deadline < next_hb ? deadline : next_hb;
		if (next_live < wake)
			wake = next_live;
		if (maro_poll(c, &it, w.nheld < MAX_HELD ? 1 : 0, maro_wait_ms(wake)) < 0 &&
		    errno != EINTR)
			maro_die(MARO_EXIT_SOFTWARE, "poll: %s", zmq_strerror(errno));
	}
	if (done && tty)
		fputc('\n', stderr);
	/*
	 * What was counted was acknowledged: it is written however the run
	 * ends (-W, a signal), in one last second.
	 */
	if (!done) {
		maro_io_interrupt = NULL;
		maro_deadline = maro_now_us() + 1000000;
		if (put_held(&w, ib, &out, &line, fmt, quiet, 0) == 0)
			maro_writer_flush(&out);
	}
	maro_cli_report_malformed(ib);
	maro_inbox_close(ib);
	maro_ctx_close(c);
	maro_writer_free(&out);
	maro_buf_free(&line);
	for (i = 0; i < w.nheld; i++)
		free(w.held[i].p);
	free(w.held);
	free(w.view);
	free(w.take);
	free(w.acked);
	maro_strset_free(&w.ids);
	return status;
}
