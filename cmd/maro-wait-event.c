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
#include "hold.h"
#include "maro.h"

/* Messages held while the event does not hold yet; past this, reading pauses. */
#define MAX_HELD 65536

static const char *const synopsis[] = { "EVENT", NULL };

static const struct maro_opt opts[] = {
	MARO_OPT_SHARED_AS(MARO_SH_NAME, "join as NAME (default 'master': where workers report)", 0),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "no progress on a terminal, nothing said at -W", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Join under NAME, wait until EVENT holds, write the messages that satisfied it.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH_INBOX | MARO_SH(TIMEOUT) | MARO_SH(FORMAT) | MARO_SH(ADVERTISE),
	MARO_TOOL_OPERANDS,
};

struct waiter {
	struct maro_event ev;
	struct maro_hold hold;
	unsigned live[MARO_EVENT_MAX_UNITS];
	unsigned have[MARO_EVENT_MAX_UNITS], need[MARO_EVENT_MAX_UNITS];
};

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

	for (i = 0; i < w->hold.n; i++) {
		const struct maro_held *m = &w->hold.msg[i];
		struct maro_err err;

		if (!m->acked && !(taken && w->hold.take[i]))
			continue;
		line->len = 0;
		if (!quiet && maro_format_msg(line, fmt, &m->msg, m->p, m->n, &err) == 0 &&
		    maro_writer_put(out, line->p, line->len) < 0)
			return -1;
		if (!m->acked)
			maro_hold_ack(&w->hold, ib, i);
	}
	return 0;
}

/* How many held messages the event that held takes. */
static size_t
taken(const struct maro_hold *h)
{
	size_t i, k = 0;

	for (i = 0; i < h->n; i++)
		k += h->take[i] != 0;
	return k;
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
	struct maro_loop l;
	enum maro_format fmt;
	char errbuf[512];
	int64_t deadline, next_live;
	int quiet, col, status = MARO_EXIT_OK, tty, done = 0, at;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	at = maro_opt_parse(&tool, &cm, argc, argv, NULL, NULL);
	if (!cm.name)
		cm.name = "master";	/* the name the examples and the seeds' workers report to */
	fmt = cm.format;
	quiet = cm.quiet;
	if (at != argc - 1)
		maro_usage_error(at == argc ? "an EVENT is required" : "one EVENT only (quote it)");
	if (maro_event_parse(&w.ev, argv[at], &col, errbuf, sizeof errbuf) < 0) {
		maro_warn("invalid event at column %d: %s", col, errbuf);
		fprintf(stderr, "  %s\n  %*s^\n", argv[at], col - 1, "");
		return MARO_EXIT_USAGE;
	}

	cm.co.peers = 1;	/* an inbox, connected to no one (transport.h) */
	c = maro_tool_open(&cm, &deadline);
	ib = maro_tool_inbox(c, &cm, NULL);
	maro_info("joined group '%s' as '%s', waiting for %s", c->group, cm.name, argv[at]);
	maro_writer_init(&out, STDOUT_FILENO);
	tty = isatty(STDERR_FILENO) && !quiet;
	maro_loop_init(&l, c, deadline, 1);
	next_live = 0;

	while (!done) {
		struct maro_delivery d;

		maro_loop_begin(&l);
		if (l.now >= next_live) {
			if (maro_hold_live(&w.hold, c->reg, &w.ev, 0, w.live) < 0)
				maro_info("%s", maro_registry_error(c->reg));
			next_live = l.now + 250000;
		}
		while (w.hold.n < MAX_HELD && maro_inbox_next(ib, &d) == 1) {
			struct maro_event_msg em = { d.msg.source, d.msg.tag };

			if (maro_hold_put(&w.hold, &d, NULL, NULL) < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			/* one that can never count would wait in silence */
			if (!maro_event_matches_any(&w.ev, &em))
				maro_cli_report_unmatched(&d.msg, "no unit of the event");
		}
		if (maro_hold_match(&w.hold, &w.ev, w.live, w.have, w.need)) {
			maro_info("the event held with %zu message%s", taken(&w.hold), taken(&w.hold) == 1 ? "" : "s");
			if (put_held(&w, ib, &out, &line, fmt, quiet, 1) == 0 &&
			    (maro_writer_flush(&out) == 0 || errno == EPIPE))
				maro_inbox_flush(ib);
			done = 1;
			break;
		}
		/* a progress report never waits for the others */
		if (maro_hold_ack_sure(&w.hold, ib, &w.ev, w.live))
			maro_inbox_flush(ib);
		if (tty)
			say_progress(&w, 0);
		if ((status = maro_loop_signalled(&l)) != 0)
			break;
		if (maro_loop_expired(&l)) {
			status = MARO_EXIT_TIMEOUT;
			if (tty)
				fputc('\n', stderr);
			if (!quiet)
				say_progress(&w, 1);
			break;
		}
		/* another took the name (--takeover): what is sent to it goes there now */
		if (maro_loop_beat(&l, ib) < 0) {
			maro_warn("%s", maro_registry_error(c->reg));
			status = MARO_EXIT_INCOMPLETE;
			break;
		}
		if (w.hold.n < MAX_HELD)
			maro_loop_inbox(&l, ib);
		maro_loop_at(&l, next_live);
		maro_loop_wait(&l);
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
	maro_loop_free(&l);
	maro_inbox_close(ib);
	maro_ctx_close(c);
	maro_writer_free(&out);
	maro_buf_free(&line);
	maro_hold_free(&w.hold);
	return status;
}
