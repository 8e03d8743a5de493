/*
 * maro-dist: MARO's @dist(proxy, handler_dict) as a tool.  Join under a
 * name and, in a loop, run the handler whose event holds, with the messages
 * that triggered it on its standard input; what the handler writes become
 * replies to the triggering task sessions.
 *
 *   --on EVENT CMD     run CMD (sh -c) once per trigger
 *   --co EVENT CMD     one long-lived CMD fed every trigger (the fast path)
 *   --on EVENT --exit  leave the loop
 *
 * Triggering messages are acknowledged when their handler succeeded (a run
 * exited 0; a coprocess answered them), or failed them: a failed run
 * answers its task requests with failure replies (its exit status or
 * signal, the tail of its stderr), and its notifications are only said.
 *
 *   --bundle NAME      first get the bundle NAME serves; handlers run in it
 *   --serve-bundle DIR answer bundle requests with DIR, packed (lib/bundle.h)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "event.h"
#include "handler.h"
#include "hold.h"
#include "maro.h"

#define MAX_HELD 65536
/* for replies already queued when a signal stops us: with MARO_HANDLER_GRACE_US, within maro(7)'s 2.5 s */
#define SIGNAL_GRACE_US 2000000

enum { OPT_ON = 256, OPT_CO, OPT_EXIT, OPT_FAIL_PREFIX, OPT_CLEAR };

static const char *const synopsis[] = { "(--on EVENT CMD | --co EVENT CMD | --on EVENT --exit)...", NULL };

/*
 * The run, at file scope so that the rows of opts[] can bind to it (and
 * not on the stack: zeroing its 2 MiB of handler slots there made them all
 * resident).
 */
static struct dist {
	struct maro_ctx *c;
	struct maro_handler_host x;
	struct maro_handler_set hs;
	struct maro_hold hold;	/* the messages no handler has had yet */
	const char *from, *serve;	/* --bundle, --serve-bundle */
	struct maro_bundle_srv srv;
	struct maro_bundle_got got;
	unsigned live[MARO_EVENT_MAX_UNITS];
	struct maro_loop loop;
	uint64_t runs, failures;
	int taken;		/* another took our name (--takeover): we leave */
} dist;

static const struct maro_opt opts[] = {
	MARO_OPT_FLAG("raw", 0, "handlers read payload lines and write reply lines", &dist.x.raw),
	MARO_OPT_FLAG("json-lines", 0, "with --raw: each reply line is a JSON value, the payload",
	    &dist.x.json_lines),
	MARO_OPT_OWN("fail-prefix", 0, "STR", "with --raw: a reply line starting with STR fails its "
	    "task", OPT_FAIL_PREFIX),
	{ .name = "on", .arg = "EVENT CMD", .help = "when EVENT holds, run CMD (sh -c) on the "
	    "messages", .key = OPT_ON, .flags = MARO_OPT_REPEAT | MARO_OPT_IN_FORM },
	{ .name = "co", .arg = "EVENT CMD", .help = "one long-lived CMD fed every trigger of EVENT",
	    .key = OPT_CO, .flags = MARO_OPT_REPEAT | MARO_OPT_IN_FORM },
	{ .name = "exit", .help = "after --on EVENT: leave when EVENT holds", .key = OPT_EXIT,
	    .flags = MARO_OPT_IN_FORM },
	MARO_OPT_STR("bundle", 0, "NAME", "first get the bundle member NAME serves; handlers run in "
	    "it", &dist.from),
	MARO_OPT_STR("serve-bundle", 0, "DIR", "serve DIR as a bundle to members that ask",
	    &dist.serve),
	MARO_OPT_OWN("clear-bundles", 0, NULL, "alone: clear this user's bundle cache, and exit",
	    OPT_CLEAR),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say less on stderr", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Run a handler whose event holds on the messages that triggered it; its output is the reply.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH_INBOX | MARO_SH(ADVERTISE) | MARO_SH(MAX_SIZE) |
	    MARO_SH(TIMEOUT) | MARO_SH(QUIET),
	MARO_TOOL_NEEDS_NAME | MARO_TOOL_STOP_AT_OPERAND,
};

/* What goes wrong with a handler or its replies (lib/handler.h), said. */
static void
note(void *arg, const struct maro_handler_note *n)
{
	const char *text = n->h ? n->h->text : "";
	const struct maro_msg *m = n->m;

	switch (n->what) {
	case MARO_HANDLER_REFUSED:
		maro_warn("refused a message from '%.*s' in session %.*s: its payload cannot be %s: %s",
		    (int)m->source.n, m->source.p ? m->source.p : "",
		    (int)m->session_id.n, m->session_id.p ? m->session_id.p : "",
		    ((struct dist *)arg)->x.raw ? "one line for --raw" : "passed on", n->err->msg);
		break;
	case MARO_HANDLER_FEW_LINES:
		maro_warn("handler for '%s' gave fewer lines than requests", text);
		break;
	case MARO_HANDLER_BAD_CBOR:
		if (n->h->co)
			maro_warn("coprocess for '%s' wrote malformed CBOR at byte offset %llu: %s: stopped",
			    text, (unsigned long long)n->offset, n->err->msg);
		else
			maro_warn("handler for '%s' wrote malformed CBOR at byte offset %zu: %s", text,
			    (size_t)n->offset, n->err->msg[0] ? n->err->msg : "truncated");
		break;
	case MARO_HANDLER_SILENT:
		maro_warn("coprocess for '%s' has %zu request%s and has written nothing for %d s: if it "
		    "buffers its output, make it write each answer at once (stdbuf -oL, python3 -u, "
		    "mawk -W interactive, fflush())", text, n->count, n->count == 1 ? "" : "s",
		    (int)(MARO_HANDLER_SILENT_US / 1000000));
		break;
	case MARO_HANDLER_LONG_LINE:
		maro_warn("coprocess for '%s' wrote a line longer than %zu bytes (--max-size) "
		    "at byte offset %llu: stopped", text, n->count, (unsigned long long)n->offset);
		break;
	case MARO_HANDLER_STRAY_LINE:
		maro_warn("coprocess for '%s' wrote a line no request waits for", text);
		break;
	case MARO_HANDLER_NO_DEST:
		maro_warn("handler wrote a message with no destination: dropped");
		break;
	case MARO_HANDLER_UNSENDABLE:
		maro_warn("cannot send to '%s': %s", n->dest, strerror(n->errnum));
		break;
	case MARO_HANDLER_MALFORMED:
		maro_warn("handler wrote a malformed message: %s", n->err->msg);
		break;
	case MARO_HANDLER_NOT_JSON:
		maro_warn("a handler's line for session %.*s is not JSON (%s): failure reply sent",
		    (int)m->session_id.n, m->session_id.p ? m->session_id.p : "", n->err->msg);
		break;
	case MARO_HANDLER_OUTPUT_HELD:
		maro_warn("handler for '%s' ended, but a process it left running holds its standard output "
		    "open: going on with the %llu bytes it wrote (start a background command with its output "
		    "elsewhere: cmd > /dev/null 2>&1 &)", text, (unsigned long long)n->offset);
		break;
	case MARO_HANDLER_NOT_TEXT:
		maro_warn("a handler's line for session %.*s is not valid UTF-8 text: no reply",
		    (int)m->session_id.n, m->session_id.p ? m->session_id.p : "");
		break;
	}
}

/*
 * The reply window, published with each heartbeat (maro-peers(1),
 * maro_window_used and maro_window_size): the replies not yet
 * acknowledged, and the window each requester has (MARO_WINDOW).
 */
static void
publish(const struct dist *d)
{
	maro_stats.window_used = maro_outbox_pending(d->x.ob);
	maro_stats.window = d->c->window;
}

/* Our name was taken over: said once; the loop then stops as for a coprocess that ended. */
static void
taken(struct dist *d)
{
	if (!d->taken++)
		maro_warn("%s", maro_registry_error(d->c->reg));
}

/* While a handler runs: a heartbeat after a second of silence, or when due. */
static void
beat(void *arg, int now)
{
	struct dist *d = arg;
	int64_t t = maro_now_us();

	if (now || t >= d->loop.next_beat) {
		publish(d);
		if (maro_registry_heartbeat(d->c->reg) < 0 && errno == EEXIST)
			taken(d);
		d->loop.next_beat = maro_tool_next_beat(d->c, t);
	}
}

/* While a reply waits for room: the outbox's wait, the heartbeat, the rule to stop. */
static int
wait_room(void *arg, int64_t until)
{
	struct dist *d = arg;
	int k;

	if ((k = maro_loop_stop(&d->loop)) != 0)
		return k;
	maro_loop_begin(&d->loop);
	maro_loop_outbox(&d->loop, d->x.ob);
	maro_loop_at(&d->loop, until);
	maro_loop_wait(&d->loop);
	beat(d, 0);
	return maro_loop_stop(&d->loop);
}

/* Runs a per-trigger handler over the messages taken, and says how it ended. */
static void
run_once(struct dist *d, struct maro_handler_entry *h)
{
	enum maro_handler_end end;
	struct maro_err err;
	char how[128];
	int wstatus;

	if (maro_handler_run(&d->x, &h->run, d->hold.take, &end, &wstatus, &err) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "%s", err.msg);
	d->runs++;
	if (end == MARO_HANDLER_STOPPED)
		maro_info("handler for '%s' stopped by the signal: its messages stay unacknowledged", h->run.text);
	if (end != MARO_HANDLER_OVER && end != MARO_HANDLER_FAILED)
		return;
	d->failures++;
	if (end == MARO_HANDLER_OVER)
		snprintf(how, sizeof how, "wrote more than %zu bytes (--max-size): stopped", d->c->limits.max_item);
	else if (WIFEXITED(wstatus))
		snprintf(how, sizeof how, "exited %d", WEXITSTATUS(wstatus));
	else
		snprintf(how, sizeof how, "killed by SIG%s", sigabbrev_np(WTERMSIG(wstatus)) ?
		    sigabbrev_np(WTERMSIG(wstatus)) : "?");
	/* a notification has no one to answer: it is said here, and acknowledged */
	if (d->x.failed_requests || !d->x.failed_notes)
		maro_warn("handler for '%s' %s: %zu task request%s answered with a failure reply", h->run.text,
		    how, d->x.failed_requests, d->x.failed_requests == 1 ? "" : "s");
	if (d->x.failed_notes)
		maro_warn("handler for '%s' %s: %zu notification%s acknowledged, not handled", h->run.text,
		    how, d->x.failed_notes, d->x.failed_notes == 1 ? "" : "s");
}

/* Whether a message could ever count toward a handler's event. */
static int
matched(const struct maro_handler_set *hs, const struct maro_msg *m)
{
	struct maro_event_msg em = { m->source, m->tag };

	for (int i = 0; i < hs->n; i++)
		if (maro_event_matches_any(&hs->h[i].ev, &em))
			return 1;
	return 0;
}

/* Tries every handler in order; runs the first whose event holds.  1 when the loop must end. */
static int
dispatch(struct dist *d, int *ran)
{
	int i, u;

	*ran = 0;
	for (i = 0; i < d->hs.n; i++) {
		struct maro_handler_entry *h = &d->hs.h[i];
		size_t j;
		int any = 0;

		/* live peers: only percentages need them */
		for (u = 0; u < h->ev.nunits; u++)
			any |= h->ev.units[u].percent;
		if (any)
			maro_hold_live(&d->hold, d->c->reg, &h->ev, 250000, d->live);
		if (!maro_hold_match(&d->hold, &h->ev, d->live, NULL, NULL))
			continue;
		*ran = 1;
		if (h->mode == MARO_HANDLER_EXIT) {
			for (j = 0; j < d->hold.n; j++)
				if (d->hold.take[j])
					maro_hold_ack(&d->hold, d->x.ib, j);
		} else if (h->mode == MARO_HANDLER_CO) {
			/* one message at a time: all that match at once, as triggers again and again would */
			if (h->ev.nunits == 1 && !h->ev.units[0].percent && h->ev.units[0].amount == 1)
				d->runs += maro_hold_take_all(&d->hold, &h->ev.units[0]);	/* a trigger each */
			if (maro_handler_co_feed(&d->x, &h->run, d->hold.take) < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			d->runs++;
		} else {
			run_once(d, h);
		}
		if (maro_hold_release(&d->hold) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		return h->mode == MARO_HANDLER_EXIT;
	}
	return 0;
}

struct args {
	struct dist *d;
	int argc;
	char **argv;
};

/* --on EVENT CMD, --co EVENT CMD, --on EVENT --exit: the command is the next word */
static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;
	struct dist *d = a->d;
	struct maro_handler_entry *h = &d->hs.h[d->hs.n];
	char errbuf[512];
	int col;

	switch (key) {
	case OPT_FAIL_PREFIX:
		if (!*val || strchr(val, '\n'))
			maro_usage_error("--fail-prefix must be one line, not empty");
		d->x.fail_prefix = val;
		return;
	case OPT_CLEAR:
		if (a->argc != 2)
			maro_usage_error("--clear-bundles goes alone");
		exit(maro_tool_bundle_clear());
	case OPT_EXIT: maro_usage_error("--exit goes after --on EVENT");
	}
	if (d->hs.n == MARO_HANDLER_MAX)
		maro_usage_error("at most %d handlers", MARO_HANDLER_MAX);
	memset(h, 0, sizeof *h);
	h->run.text = val;
	if (maro_event_parse(&h->ev, val, &col, errbuf, sizeof errbuf) < 0) {
		maro_warn("invalid event at column %d: %s", col, errbuf);
		fprintf(stderr, "  %s\n  %*s^\n", val, col - 1, "");
		exit(MARO_EXIT_USAGE);
	}
	if (optind < a->argc && !strcmp(a->argv[optind], "--exit") && key == OPT_ON) {
		h->mode = MARO_HANDLER_EXIT;
		optind++;
	} else if (optind < a->argc) {
		h->run.cmd = a->argv[optind++];
		h->mode = key == OPT_CO ? MARO_HANDLER_CO : MARO_HANDLER_RUN;
	} else {
		maro_usage_error("%s '%s' needs a command", key == OPT_CO ? "--co" : "--on", val);
	}
	d->hs.n++;
}

/* The loop waits on the running coprocesses' output, and their input while bytes wait for it. */
static void
wait_on_coprocesses(struct maro_loop *l, const struct maro_handler_set *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->h[i].mode == MARO_HANDLER_CO && s->h[i].run.pid > 0) {
			maro_loop_fd(l, s->h[i].run.out, MARO_LOOP_IN);
			if (s->h[i].run.wbuf.len)
				maro_loop_fd(l, s->h[i].run.in, MARO_LOOP_OUT);
		}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct dist *d = &dist;
	struct args a = { d, argc, argv };
	int64_t deadline;
	int status = MARO_EXIT_OK, stop = 0, i;
	struct maro_err err;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	if (!d->hs.n && !d->serve)
		maro_usage_error("no handler (--on EVENT CMD or --co EVENT CMD) and no --serve-bundle");
	if (d->x.json_lines && !d->x.raw)
		maro_usage_error("--json-lines goes with --raw");
	if (d->x.fail_prefix && !d->x.raw)
		maro_usage_error("--fail-prefix goes with --raw");
	d->x.name = cm.name;
	d->x.registry = cm.co.registry_url ? cm.co.registry_url : getenv("MARO_REGISTRY");
	d->x.keyfile = cm.co.keyfile;
	d->x.hold = &d->hold;
	d->x.note = note;
	d->x.beat = beat;
	d->x.wait = wait_room;
	d->x.arg = d;

	d->x.c = d->c = maro_tool_open(&cm, &deadline);
	if (d->serve && (i = maro_bundle_srv_open(&d->srv, d->serve, &err)) != 0)
		maro_die(i == MARO_BUNDLE_BAD_DIR ? MARO_EXIT_DATAERR : MARO_EXIT_UNAVAILABLE, "%s", err.msg);
	if (d->from)
		d->x.dir = maro_tool_bundle(d->c, &cm, d->from, deadline, &d->got);
	d->x.ib = maro_tool_inbox(d->c, &cm, NULL);
	d->x.ob = maro_outbox_new(d->c, NULL, NULL, d);
	if (!d->x.ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	if (maro_handler_set_start(&d->hs, &d->x, &err) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "%s", err.msg);
	maro_loop_init(&d->loop, d->c, deadline, 1);
	maro_stats.has_flight = 1;	/* lib/handler counts the requests its handlers have */

	for (;;) {
		int ran, k;
		struct maro_delivery dl;

		while (d->hold.n < MAX_HELD && maro_inbox_next(d->x.ib, &dl) == 1) {
			if (d->serve && maro_str_eq(dl.msg.tag, MARO_BUNDLE_TAG)) {
				if (maro_handler_bundle(&d->x, &d->srv, &dl) < 0 && !maro_loop_stop(&d->loop))
					maro_die(MARO_EXIT_SOFTWARE, "out of memory");
				continue;
			}
			/* no handler will ever take it: say so now, not at the sender's -W */
			if (maro_handler_set_untaken(&d->hs, &dl.msg)) {
				if (maro_handler_no_handler(&d->x, &dl) < 0 && !maro_loop_stop(&d->loop))
					maro_die(MARO_EXIT_SOFTWARE, "out of memory");
				continue;
			}
			if (maro_hold_put(&d->hold, &dl, maro_handler_set_resent, &d->hs) < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			/* one no handler takes (a notification) would wait in silence */
			if (!matched(&d->hs, &dl.msg))
				maro_cli_report_unmatched(&dl.msg, "no handler's event");
		}
		if (!stop) {
			do
				stop = dispatch(d, &ran);
			while (ran && !stop);
		}
		for (i = 0; i < d->hs.n; i++) {
			struct maro_handler *co = &d->hs.h[i].run;

			if (d->hs.h[i].mode != MARO_HANDLER_CO || co->pid <= 0 || (k = maro_handler_co_pump(&d->x, co)) >= 0)
				continue;
			if (k == -2) {
				status = MARO_EXIT_DATAERR;	/* said; it is stopped below */
			} else {
				maro_warn("coprocess for '%s' ended", co->text);
				status = MARO_EXIT_INCOMPLETE;
				co->pid = -co->pid;
			}
			stop = 1;
		}
		if (stop)
			maro_outbox_prompt(d->x.ob);
		maro_outbox_run(d->x.ob);
		/* held a little, so that acks share frames (answered tasks need none) */
		maro_inbox_flush_due(d->x.ib);
		/* replies a -W left unsent: the status says so (below), not 0 */
		if (stop && maro_outbox_pending(d->x.ob) == 0 && !d->x.unsent)
			break;
		if ((k = maro_loop_stop(&d->loop)) != 0) {
			status = k == MARO_EXIT_TIMEOUT && stop ? MARO_EXIT_INCOMPLETE : k;
			break;
		}
		publish(d);
		if (maro_loop_beat(&d->loop, d->x.ib) < 0)
			taken(d);
		if (d->taken && !stop) {
			status = MARO_EXIT_INCOMPLETE;
			stop = 1;
		}
		maro_loop_begin(&d->loop);
		if (!stop && d->hold.n < MAX_HELD)
			maro_loop_inbox(&d->loop, d->x.ib);
		wait_on_coprocesses(&d->loop, &d->hs);
		maro_loop_outbox(&d->loop, d->x.ob);
		maro_loop_at(&d->loop, maro_inbox_ack_deadline(d->x.ib));
		/* percentages move with membership: look again now and then */
		if (d->hold.n)
			maro_loop_at(&d->loop, d->loop.now + 500000);
		maro_loop_wait(&d->loop);
	}
	/* coprocesses: close their input, let them finish, reap them; requests they never
	 * answered stay unacknowledged: their senders keep them */
	maro_handler_set_free(&d->hs);
	/* replies already queued (their requests may be acknowledged): a moment to deliver them */
	if (maro_signal && maro_outbox_pending(d->x.ob)) {
		maro_info("stopping: %zu replies queued, waiting up to %d s for them",
		    maro_outbox_pending(d->x.ob), SIGNAL_GRACE_US / 1000000);
		maro_outbox_prompt(d->x.ob);
		maro_loop_until(&d->loop, maro_now_us() + SIGNAL_GRACE_US);
		for (;;) {
			maro_outbox_run(d->x.ob);
			if (!maro_outbox_pending(d->x.ob) || maro_loop_expired(&d->loop))
				break;
			maro_loop_begin(&d->loop);
			maro_loop_outbox(&d->loop, d->x.ob);
			maro_loop_at(&d->loop, d->loop.now + 50000);
			maro_loop_wait(&d->loop);
		}
	}
	if (d->x.unsent || (maro_signal && maro_outbox_pending(d->x.ob)))
		maro_warn("stopped by %s: %zu replies not sent, %zu sent but not acknowledged",
		    maro_signal ? "a signal" : "-W", d->x.unsent, maro_outbox_pending(d->x.ob));
	maro_info("%llu triggers, %llu failed", (unsigned long long)d->runs, (unsigned long long)d->failures);
	maro_cli_report_malformed(d->x.ib);
	maro_loop_free(&d->loop);
	maro_inbox_close(d->x.ib);
	maro_outbox_free(d->x.ob);
	maro_ctx_close(d->c);
	maro_hold_free(&d->hold);
	maro_buf_free(&d->x.reply);
	maro_bundle_srv_close(&d->srv);
	return status;
}
