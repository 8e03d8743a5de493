/*
 * maro-wait-event: join under a name, wait until a conditional event holds,
 * write the messages that satisfied it, exit 0.  Messages it did not
 * consume stay unacknowledged: their senders keep them for the next
 * receiver of the name.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "maro.h"

/* Messages held while the event does not hold yet; past this, reading pauses. */
#define MAX_HELD 65536

static void
usage(void)
{
	printf("usage: %s [-n NAME] [-g GROUP] [--registry URL] [--keyfile FILE] [--type TYPE] [--takeover]\n"
	    "          [-W DUR] [-f cbor|json|diag|payload] [-q] [-v] EVENT\n"
	    "       %s -h | -V\n", maro_progname, maro_progname);
}

enum { OPT_REGISTRY = 256, OPT_KEYFILE, OPT_TYPE, OPT_TAKEOVER, OPT_ADVERTISE };

static const struct option longopts[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "group", required_argument, NULL, 'g' },
	{ "registry", required_argument, NULL, OPT_REGISTRY },
	{ "keyfile", required_argument, NULL, OPT_KEYFILE },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "takeover", no_argument, NULL, OPT_TAKEOVER },
	{ "timeout", required_argument, NULL, 'W' },
	{ "format", required_argument, NULL, 'f' },
	{ "advertise", required_argument, NULL, OPT_ADVERTISE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
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
		w->held = realloc(w->held, w->cap * sizeof *w->held);
		w->view = realloc(w->view, w->cap * sizeof *w->view);
		w->take = realloc(w->take, w->cap);
		w->acked = realloc(w->acked, w->cap);
		if (!w->held || !w->view || !w->take || !w->acked)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
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
	struct maro_ctx_opts co = { 0 };
	struct waiter w = { 0 };
	struct maro_entry holder;
	struct maro_writer out;
	struct maro_buf line = { 0 };
	struct maro_ctx *c;
	struct maro_inbox *ib;
	enum maro_format fmt = isatty(STDOUT_FILENO) ? MARO_FORMAT_JSON : MARO_FORMAT_CBOR;
	const char *name = getenv("MARO_NAME"), *type = NULL;
	char errbuf[512];
	int64_t timeout = -1, deadline, next_hb, next_live, now;
	int ch, quiet = 0, takeover = 0, col, status = MARO_EXIT_OK, tty, done = 0;
	size_t i;

	maro_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "n:g:W:f:qvhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n': name = optarg; break;
		case 'g': co.group = optarg; break;
		case OPT_REGISTRY: co.registry_url = optarg; break;
		case OPT_KEYFILE: co.keyfile = optarg; break;
		case OPT_TYPE: type = optarg; break;
		case OPT_TAKEOVER: takeover = 1; break;
		case 'W': timeout = maro_cli_duration("-W", optarg); break;
		case 'f': fmt = maro_cli_format(optarg); break;
		case OPT_ADVERTISE: co.advertise = optarg; break;
		case 'q': quiet = 1; break;
		case 'v': maro_verbose = 1; break;
		case 'h': usage(); return 0;
		case 'V': maro_print_version(); return 0;
		default: maro_usage_error("invalid option");
		}
	}
	if (optind != argc - 1)
		maro_usage_error(optind == argc ? "an EVENT is required" : "one EVENT only (quote it)");
	if (maro_event_parse(&w.ev, argv[optind], &col, errbuf, sizeof errbuf) < 0) {
		maro_warn("invalid event at column %d: %s", col, errbuf);
		fprintf(stderr, "  %s\n  %*s^\n", argv[optind], col - 1, "");
		return MARO_EXIT_USAGE;
	}
	if (!name || !*name)
		maro_usage_error("a name is required (-n NAME or MARO_NAME)");
	if (!maro_name_valid(name))
		maro_usage_error("invalid name '%s'", name);

	mark_must(&w, w.ev.root);

	maro_cli_catch_signals();
	/* -W bounds the whole run, the registry's first words included */
	deadline = timeout >= 0 ? maro_now_us() + timeout : INT64_MAX;
	maro_deadline = deadline;
	c = maro_ctx_open(&co, errbuf, sizeof errbuf);
	if (!c)
		maro_die(errno == EINVAL ? MARO_EXIT_USAGE : MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	ib = maro_inbox_open(c, name, type, takeover, &holder, errbuf, sizeof errbuf);
	if (!ib) {
		if (errno == EEXIST)
			maro_die(MARO_EXIT_UNAVAILABLE, "name '%s' is held by pid %ld on %s (use --takeover)",
			    name, (long)holder.pid, holder.host);
		maro_die(MARO_EXIT_UNAVAILABLE, "%s", errbuf);
	}
	maro_writer_init(&out, STDOUT_FILENO);
	tty = isatty(STDERR_FILENO) && !quiet;
	now = maro_now_us();
	next_hb = now + 1000000;
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
			next_hb = now + 1000000;
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
