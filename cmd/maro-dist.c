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
 * exited 0; a coprocess answered them).  A failed run leaves them
 * unacknowledged: their senders send them again, and the handler runs again.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "event.h"
#include "hold.h"
#include "maro.h"

#define MAX_HANDLERS 32
#define MAX_HELD 65536
#define SIGNAL_GRACE_US 2000000	/* for replies already queued, when a signal stops us */
/* a handler's process group, after SIGTERM, before SIGKILL: with the above, within maro(7)'s 2.5 s */
#define HANDLER_GRACE_US 500000
/* a coprocess owing answers and silent this long is told it may be buffering */
#define SILENT_US 5000000

enum { OPT_ON = 256, OPT_CO, OPT_EXIT, OPT_RAW };

static const char *const synopsis[] = { "(--on EVENT CMD | --co EVENT CMD | --on EVENT --exit)...", NULL };

static const struct maro_opt opts[] = {
	{ "raw", 0, NULL, "handlers read payload lines and write reply lines", NULL, OPT_RAW, 0, 0 },
	{ "on", 0, "EVENT CMD", "when EVENT holds, run CMD (sh -c) on the messages", NULL, OPT_ON,
	    MARO_OPT_REPEAT | MARO_OPT_IN_FORM, 0 },
	{ "co", 0, "EVENT CMD", "one long-lived CMD fed every trigger of EVENT", NULL, OPT_CO,
	    MARO_OPT_REPEAT | MARO_OPT_IN_FORM, 0 },
	{ "exit", 0, NULL, "after --on EVENT: leave when EVENT holds", NULL, OPT_EXIT, MARO_OPT_IN_FORM, 0 },
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say less on stderr", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Run a handler whose event holds on the messages that triggered it; its output is the reply.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH_INBOX | MARO_SH(ADVERTISE) | MARO_SH(MAX_SIZE) |
	    MARO_SH(TIMEOUT) | MARO_SH(QUIET),
	MARO_TOOL_NEEDS_NAME | MARO_TOOL_STOP_AT_OPERAND,
};

enum { MODE_RUN, MODE_CO, MODE_EXIT };

struct handler {
	struct maro_event ev;
	const char *text, *cmd;
	int mode;
	/* coprocess */
	pid_t pid;
	int in, out;		/* its stdin (we write), its stdout (we read) */
	struct maro_buf wbuf;	/* bytes waiting for its stdin */
	int64_t silent_since;	/* requests handed over and nothing read since: when that began */
	int said_silent;
	struct maro_reader rd;
	struct maro_buf lines;	/* --raw: its output, up to a newline */
	/* triggering task requests waiting for their reply, oldest first */
	struct pending {
		uint8_t *p;
		size_t n;
		uint32_t peer;
		uint64_t seq;
		uint64_t idh;		/* its message_id's hash: ids and the inbox's filter */
		struct maro_msg msg;	/* decoded from p once */
	} *wait;		/* wait[wfirst..nwait): answered from the front, no memmove per task */
	size_t wfirst, nwait, waitcap;
};

struct dist {
	struct maro_ctx *c;
	struct maro_inbox *ib;
	struct maro_outbox *ob;
	const char *name, *group, *registry, *keyfile;
	int raw, quiet;
	struct handler h[MAX_HANDLERS];
	int nh;
	struct maro_hold hold;	/* the messages no handler has had yet */
	unsigned live[MARO_EVENT_MAX_UNITS];
	struct maro_buf reply;	/* a --raw reply's payload */
	uint64_t runs, failures;
	size_t unsent;		/* replies given up on when a signal came: said once, at exit */
};

/*
 * sh -c CMD with stdin from in_fd and stdout to out_fd, and MARO_ names
 * saying whom it runs for (lib/child.h: its own group, dies with us).
 */
static pid_t
spawn(struct dist *d, struct handler *h, int in_fd, int out_fd)
{
	char *argv[] = { "sh", "-c", (char *)h->cmd, NULL };
	char type[MARO_NAME_MAX + 1], *set[6] = { NULL }, **env;
	struct maro_child_spec cs = { "/bin/sh", argv, NULL, in_fd, out_fd, NULL };
	size_t n = 0, i;
	pid_t pid;

	maro_name_type(d->name, type);
	if (asprintf(&set[n++], "MARO_NAME=%s", d->name) < 0 ||
	    asprintf(&set[n++], "MARO_TYPE=%s", type) < 0 ||
	    asprintf(&set[n++], "MARO_GROUP=%s", d->c->group) < 0 ||
	    asprintf(&set[n++], "MARO_EVENT=%s", h->text) < 0 ||
	    (d->registry && asprintf(&set[n++], "MARO_REGISTRY=%s", d->registry) < 0) ||
	    (d->keyfile && asprintf(&set[n++], "MARO_KEYFILE=%s", d->keyfile) < 0) ||
	    !(env = maro_child_env(set, n)))
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	cs.env = env;
	pid = maro_child_spawn(&cs);
	if (pid < 0)
		maro_die(MARO_EXIT_SOFTWARE, "cannot run sh for '%s': %s", h->text, strerror(errno));
	maro_child_env_free(env);
	for (i = 0; i < n; i++)
		free(set[i]);
	return pid;
}

/* Stops a handler and what it started: maro_child_stop; its wait status. */
static int
stop_group(pid_t pid)
{
	return maro_child_stop(pid, HANDLER_GRACE_US);
}

/*
 * Waits for a handler to end, heartbeating; on SIGINT or SIGTERM it is
 * stopped (stop_group).  Its wait status.
 */
static int
wait_handler(struct dist *d, pid_t pid)
{
	int64_t next_hb = maro_tool_next_beat(d->c, maro_now_us());
	int wstatus = 0;
	pid_t r;

	for (;;) {
		if (maro_signal)
			return stop_group(pid);
		r = waitpid(pid, &wstatus, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return wstatus;
		if (maro_now_us() >= next_hb) {
			maro_registry_heartbeat(d->c->reg);
			next_hb = maro_tool_next_beat(d->c, maro_now_us());
		}
		usleep(20000);
	}
}

/*
 * --raw: the one line a handler reads for m, and never more or less, since
 * the lines it writes back are paired with the requests in order: a text
 * payload as it is, or as a JSON string when it holds a line break; any
 * other payload as a JSON line; none as an empty line.  -1 (why in err)
 * for a payload JSON cannot express.
 */
static int
raw_line(struct maro_buf *out, const struct maro_held *m, struct maro_err *err)
{
	size_t at = out->len;
	json_t *j;
	char *s;

	if (maro_format_msg(out, MARO_FORMAT_PAYLOAD, &m->msg, m->p, m->n, err) == 0 &&
	    out->len > at && !memchr(out->p + at, '\n', out->len - at - 1))
		return 0;
	out->len = at;
	if (!m->msg.payload.p || !(j = maro_cbor_to_json(m->msg.payload.p, m->msg.payload.n, err)))
		return -1;
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	json_decref(j);
	if (!s || maro_buf_puts(out, s) < 0 || maro_buf_append(out, "\n", 1) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	free(s);
	return 0;
}

/*
 * What a handler reads: the messages as CBOR, or with --raw their payloads
 * as lines.  -1 when m cannot be given to it: then it was refused (said,
 * and acknowledged: its sender gets no reply).
 */
static int handler_input(struct dist *d, struct maro_buf *out, const struct maro_held *m);

static void ack(struct dist *d, uint32_t peer, uint64_t seq, const struct maro_msg *m);

static int
handler_input(struct dist *d, struct maro_buf *out, const struct maro_held *m)
{
	struct maro_err err;

	if (d->raw ? raw_line(out, m, &err) == 0 :
	    maro_format_msg(out, MARO_FORMAT_CBOR, &m->msg, m->p, m->n, &err) == 0)
		return 0;
	maro_warn("refused a message from '%.*s' in session %.*s: its payload cannot be %s: %s",
	    (int)m->msg.source.n, m->msg.source.p ? m->msg.source.p : "",
	    (int)m->msg.session_id.n, m->msg.session_id.p ? m->msg.session_id.p : "",
	    d->raw ? "one line for --raw" : "passed on", err.msg);
	ack(d, m->peer, m->seq, &m->msg);
	return -1;
}

/*
 * Sends m (filled in): a reply goes to its reply_to, else to its
 * destination.  Encoded straight into the outbox; a full window to the
 * destination is waited for, never dropped.  0 when queued (or when it
 * never can be: said), -1 when a signal came while it waited: then its
 * request must not be acknowledged, and stays with its sender.
 */
static int
send_msg(struct dist *d, struct maro_msg *m)
{
	char ids[2][MARO_UUID_LEN + 1], dest[MARO_NAME_MAX + 1];
	struct maro_str to;
	uint8_t *q;

	maro_msg_fill(m, d->name, ids);
	to = m->stage != MARO_STAGE_REQUEST && m->reply_to.p ? m->reply_to : m->destination;
	if (!to.p || to.n > MARO_NAME_MAX) {
		maro_warn("handler wrote a message with no destination: dropped");
		return 0;	/* the handler's fault: its request is done with */
	}
	memcpy(dest, to.p, to.n);
	dest[to.n] = '\0';
	while (!(q = maro_outbox_begin(d->ob, dest, maro_msg_encoded_max(m)))) {
		zmq_pollitem_t items[1024];
		uint64_t acked;
		int k;

		if (errno != EAGAIN) {
			maro_warn("cannot send to '%s': %s", dest, strerror(errno));
			return 0;	/* it never can be: its request is done with */
		}
		if (maro_signal) {
			d->unsent++;
			return -1;
		}
		acked = maro_outbox_acked(d->ob);
		maro_outbox_run(d->ob);
		/* that run made room: nothing more may come to end the poll early */
		if (maro_outbox_acked(d->ob) != acked)
			continue;
		k = maro_outbox_pollitems(d->ob, items, 1024);
		maro_poll(d->c, items, k, 100);
	}
	maro_outbox_commit(d->ob, maro_msg_encode_into(m, q));
	return 0;
}

/* Sends one message a handler wrote.  0, or -1 when it was not queued. */
static int
route(struct dist *d, const uint8_t *p, size_t n)
{
	struct maro_msg m;
	struct maro_err err;

	if (maro_msg_decode(&m, p, n, &err) < 0) {
		maro_warn("handler wrote a malformed message: %s", err.msg);
		return 0;	/* the handler's fault: its request is done with */
	}
	return send_msg(d, &m);
}

/* The reply to request req (decoded) with a payload line from a --raw handler.  As send_msg. */
static int
route_raw(struct dist *d, const struct maro_msg *req, const char *line, size_t len)
{
	struct maro_msg m;
	char id[MARO_UUID_LEN + 1];

	/* its unknown keys go back too: copy those there are, not all 32 slots */
	memcpy(&m, req, offsetof(struct maro_msg, extra));
	memcpy(m.extra, req->extra, req->nextra * sizeof req->extra[0]);
	maro_msg_make_reply(&m, d->name, id);
	d->reply.len = 0;
	if (maro_buf_cbor_text(&d->reply, line, len) < 0) {
		if (errno != EILSEQ)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		/* not text: no reply, the request stays with its sender */
		maro_warn("a handler's line for session %.*s is not valid UTF-8 text: no reply",
		    (int)req->session_id.n, req->session_id.p ? req->session_id.p : "");
		return -1;
	}
	m.payload.p = d->reply.p;
	m.payload.n = d->reply.len;
	return send_msg(d, &m);
}

static int
is_request(const struct maro_msg *m)
{
	return m->type != MARO_SESSION_NOTIFICATION && m->stage == MARO_STAGE_REQUEST;
}

static void
ack(struct dist *d, uint32_t peer, uint64_t seq, const struct maro_msg *m)
{
	struct maro_delivery dl = { .peer = peer, .seq = seq, .msg = *m };

	maro_inbox_done(d->ib, &dl);
}

/* Runs a per-trigger handler over the messages marked in take.  0 success, -1 failure. */
static int
run_once(struct dist *d, struct handler *h, const unsigned char *take)
{
	unsigned char *fed;	/* take, but for those refused (handler_input) */
	struct maro_buf in = { 0 }, out = { 0 };
	int infd, pipefd[2], wstatus, rc = -1, unsent = 0, over = 0;
	size_t i, max = d->c->limits.max_item;
	pid_t pid;
	const char *tmp = getenv("TMPDIR");
	char *path;

	fed = maro_xrealloc(NULL, d->hold.n + 1);
	for (i = 0; i < d->hold.n; i++)
		fed[i] = take[i] && handler_input(d, &in, &d->hold.msg[i]) == 0;
	/* the input goes through an unlinked file: the handler may read it at leisure */
	/* close-on-exec: only the dup2'ed copies reach the handler, so its
	 * background children cannot hold our pipe open */
	if (asprintf(&path, "%s/maro-dist.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	infd = mkostemp(path, O_CLOEXEC);
	if (infd < 0 || pipe2(pipefd, O_CLOEXEC) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "cannot set up a handler in '%s': %s", path, strerror(errno));
	unlink(path);
	free(path);
	if (write(infd, in.p, in.len) != (ssize_t)in.len || lseek(infd, 0, SEEK_SET) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "cannot set up a handler: %s", strerror(errno));
	pid = spawn(d, h, infd, pipefd[1]);
	close(infd);
	close(pipefd[1]);
	d->runs++;
	/*
	 * read its output, heartbeating while it works, at most --max-size
	 * bytes of it; a signal stops it
	 */
	for (;;) {
		struct pollfd pfd = { pipefd[0], POLLIN, 0 };
		ssize_t n;
		int k;

		if (maro_signal)
			break;
		k = poll(&pfd, 1, 1000);
		if (k == 0)
			maro_registry_heartbeat(d->c->reg);
		if (k <= 0)
			continue;
		if (out.len >= max) {
			over = 1;
			break;
		}
		if (maro_buf_reserve(&out, 65536) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		n = read(pipefd[0], out.p + out.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out.len += (size_t)n;
	}
	close(pipefd[0]);
	wstatus = over ? stop_group(pid) : wait_handler(d, pid);
	if (maro_signal) {
		maro_info("handler for '%s' stopped by the signal: its messages stay unacknowledged", h->text);
		goto out;
	}
	if (over) {
		d->failures++;
		maro_warn("handler for '%s' wrote more than %zu bytes (--max-size): stopped, "
		    "its messages stay unacknowledged", h->text, max);
		goto out;
	}
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
		d->failures++;
		if (WIFEXITED(wstatus))
			maro_warn("handler for '%s' exited %d: its messages stay unacknowledged",
			    h->text, WEXITSTATUS(wstatus));
		else
			maro_warn("handler for '%s' killed by signal %d: its messages stay unacknowledged",
			    h->text, WTERMSIG(wstatus));
		goto out;
	}
	if (d->raw) {
		const char *line = (const char *)out.p, *end = line + out.len;

		for (i = 0; i < d->hold.n; i++) {
			const char *nl;

			if (!fed[i] || !is_request(&d->hold.msg[i].msg))
				continue;
			if (line >= end) {
				maro_warn("handler for '%s' gave fewer lines than requests", h->text);
				break;
			}
			nl = memchr(line, '\n', (size_t)(end - line));
			if (!nl)
				nl = end;
			if (route_raw(d, &d->hold.msg[i].msg, line, (size_t)(nl - line)) < 0)
				unsent = 1;
			line = nl + 1;
		}
	} else {
		size_t off = 0, len;

		while (off < out.len) {
			struct maro_err err;

			struct maro_cbor_scan sc;

			maro_cbor_scan_init(&sc, &d->c->limits);
			if (maro_cbor_scan(&sc, out.p + off, out.len - off, &len, &err) != MARO_SCAN_DONE) {
				maro_warn("handler for '%s' wrote malformed CBOR at byte offset %zu: %s",
				    h->text, off + (size_t)err.offset, err.msg[0] ? err.msg : "truncated");
				break;
			}
			if (route(d, out.p + off, len) < 0)
				unsent = 1;
			off += len;
		}
	}
	/* a reply not sent: none of these is acknowledged, their senders keep them */
	for (i = 0; i < d->hold.n && !unsent; i++)
		if (fed[i])
			maro_hold_ack(&d->hold, d->ib, i);
	rc = 0;
out:
	free(fed);
	maro_buf_free(&in);
	maro_buf_free(&out);
	return rc;
}

static void
co_start(struct dist *d, struct handler *h)
{
	int to[2], from[2];

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "pipe: %s", strerror(errno));
	h->pid = spawn(d, h, to[0], from[1]);
	close(to[0]);
	close(from[1]);
	h->in = to[1];
	h->out = from[0];
	fcntl(h->in, F_SETFL, O_NONBLOCK);
	fcntl(h->out, F_SETFL, O_NONBLOCK);
	maro_reader_init(&h->rd, h->out, &d->c->limits);
}

/* Hands triggering messages to a coprocess; requests wait for their replies. */
static void
co_feed(struct dist *d, struct handler *h, const unsigned char *take)
{
	size_t i;

	for (i = 0; i < d->hold.n; i++) {
		struct maro_held *m = &d->hold.msg[i];

		if (!take[i] || handler_input(d, &h->wbuf, m) < 0)
			continue;
		if (!is_request(&m->msg)) {
			ack(d, m->peer, m->seq, &m->msg);
			continue;
		}
		if (h->nwait == h->waitcap && h->wfirst) {
			memmove(h->wait, h->wait + h->wfirst, (h->nwait - h->wfirst) * sizeof *h->wait);
			h->nwait -= h->wfirst;
			h->wfirst = 0;
		}
		if (h->nwait == h->waitcap) {
			h->waitcap = h->waitcap ? h->waitcap * 2 : 64;
			h->wait = maro_xrealloc(h->wait, h->waitcap * sizeof *h->wait);
		}
		h->wait[h->nwait].p = m->p;
		h->wait[h->nwait].n = m->n;
		h->wait[h->nwait].peer = m->peer;
		h->wait[h->nwait].seq = m->seq;
		h->wait[h->nwait].idh = m->idh;
		/* its spans point into p, which moves along; the extras it has, not 32 */
		memcpy(&h->wait[h->nwait].msg, &m->msg, offsetof(struct maro_msg, extra));
		memcpy(h->wait[h->nwait].msg.extra, m->msg.extra, m->msg.nextra * sizeof m->msg.extra[0]);
		h->nwait++;
		m->p = NULL;	/* now the pending list's */
	}
	d->runs++;
}

/*
 * The reply for a waiting request went out (sent), or was given up on:
 * acknowledge that request, unless the reply goes to its sender's private
 * reply inbox, where it settles the request (maro(7), DELIVERY): then an
 * ack would be one more frame, and one more wake-up, per task.  One given
 * up on is only forgotten: its sender keeps it.
 */
static void
co_answered(struct dist *d, struct handler *h, size_t k, int sent)
{
	const struct maro_msg *m = &h->wait[k].msg;

	/* only its id is needed: no copy of the message per task */
	if (sent && m->reply_to.p && m->reply_to.n > 1 && m->reply_to.p[0] == '~')
		maro_inbox_settled_hash(d->ib, h->wait[k].idh);
	else if (sent)
		ack(d, h->wait[k].peer, h->wait[k].seq, m);
	maro_hold_forget(&d->hold, m->message_id, h->wait[k].idh);
	free(h->wait[k].p);
	if (k == h->wfirst)
		h->wfirst++;
	else
		memmove(h->wait + k, h->wait + k + 1, (--h->nwait - k) * sizeof *h->wait);
	if (h->wfirst == h->nwait)
		h->wfirst = h->nwait = 0;
}

/* Moves bytes between maro-dist and a coprocess.  -1 when the coprocess is gone. */
/*
 * A coprocess that has had requests, all handed over, and has written
 * nothing for SILENT_US most likely holds its answers in a stdio buffer
 * (a pipe is not a terminal): said once, naming the cure.
 */
static void
say_silent(struct handler *h)
{
	int64_t now = maro_now_us();

	if (h->nwait == h->wfirst || h->wbuf.len) {
		h->silent_since = 0;
		return;
	}
	if (!h->silent_since)
		h->silent_since = now;
	if (h->said_silent || now - h->silent_since < SILENT_US)
		return;
	h->said_silent = 1;
	maro_warn("coprocess for '%s' has %zu request%s and has written nothing for %d s: if it "
	    "buffers its output, make it write each answer at once (stdbuf -oL, python3 -u, "
	    "mawk -W interactive, fflush())", h->text, h->nwait - h->wfirst,
	    h->nwait - h->wfirst == 1 ? "" : "s", (int)(SILENT_US / 1000000));
}

static int
co_pump(struct dist *d, struct handler *h)
{
	const uint8_t *p;
	size_t n;
	uint64_t off;
	struct maro_err err;
	ssize_t k;

	while (h->wbuf.len) {
		k = write(h->in, h->wbuf.p, h->wbuf.len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			break;
		if (k < 0)
			return -1;
		memmove(h->wbuf.p, h->wbuf.p + k, h->wbuf.len - (size_t)k);
		h->wbuf.len -= (size_t)k;
	}
	/* what is buffered stays within --max-size: a coprocess that floods is read no faster */
	while (h->rd.buf.len - h->rd.start <= d->c->limits.max_item) {
		k = maro_reader_fill(&h->rd);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (k < 0 || (k == 0 && h->rd.eof && !maro_reader_pending(&h->rd)))
			return -1;
		if (k == 0)
			break;
		h->silent_since = 0;
	}
	say_silent(h);
	if (d->raw) {
		/* lines: each answers the oldest waiting request */
		while (h->rd.buf.len > h->rd.start) {
			const char *s = (const char *)h->rd.buf.p + h->rd.start;
			const char *nl = memchr(s, '\n', h->rd.buf.len - h->rd.start);

			if (!nl && h->rd.buf.len - h->rd.start > d->c->limits.max_item) {
				maro_warn("coprocess for '%s' wrote a line longer than %zu bytes (--max-size) "
				    "at byte offset %llu: stopped", h->text, d->c->limits.max_item,
				    (unsigned long long)(h->rd.base + h->rd.start));
				return -2;
			}
			if (!nl)
				break;
			if (h->nwait > h->wfirst) {
				int sent = route_raw(d, &h->wait[h->wfirst].msg, s, (size_t)(nl - s)) == 0;

				co_answered(d, h, h->wfirst, sent);
			} else {
				maro_warn("coprocess for '%s' wrote a line no request waits for", h->text);
			}
			h->rd.start += (size_t)(nl - s) + 1;
		}
		return h->rd.eof ? -1 : 0;
	}
	for (;;) {
		struct maro_msg m;
		size_t i;
		int rc = maro_reader_next(&h->rd, &p, &n, &off, &err);

		if (rc == 0)
			break;
		if (rc < 0) {
			maro_warn("coprocess for '%s' wrote malformed CBOR at byte offset %llu: %s: stopped",
			    h->text, (unsigned long long)err.offset, err.msg);
			return -2;
		}
		/* not sent: its request stays waiting, unacknowledged */
		if (route(d, p, n) < 0 || maro_msg_decode(&m, p, n, &err) < 0 || !m.session_id.p)
			continue;
		for (i = h->wfirst; i < h->nwait; i++) {
			const struct maro_msg *w = &h->wait[i].msg;

			if (w->session_id.n == m.session_id.n &&
			    !memcmp(w->session_id.p, m.session_id.p, m.session_id.n)) {
				co_answered(d, h, i, 1);
				break;
			}
		}
	}
	return 0;
}

/*
 * A resent copy of a request a coprocess has (maro_hold_put): its
 * acknowledgement goes where it came from last.  1 when found.
 */
static int
co_resent(void *arg, const struct maro_delivery *dl)
{
	struct dist *d = arg;

	for (int i = 0; i < d->nh; i++) {
		struct handler *hd = &d->h[i];

		for (size_t k = hd->wfirst; k < hd->nwait; k++) {
			const struct maro_msg *w = &hd->wait[k].msg;

			if (w->message_id.n == dl->msg.message_id.n &&
			    !memcmp(w->message_id.p, dl->msg.message_id.p, w->message_id.n)) {
				hd->wait[k].peer = dl->peer;
				hd->wait[k].seq = dl->seq;
				return 1;
			}
		}
	}
	return 0;
}

/* Tries every handler in order; runs the first whose event holds.  1 when the loop must end. */
static int
dispatch(struct dist *d, int *ran)
{
	int i, u;

	*ran = 0;
	for (i = 0; i < d->nh; i++) {
		struct handler *h = &d->h[i];
		size_t j;
		int stop = 0, any = 0;

		/* live peers: only percentages need them */
		for (u = 0; u < h->ev.nunits; u++)
			any |= h->ev.units[u].percent;
		if (any)
			maro_hold_live(&d->hold, d->c->reg, &h->ev, 250000, d->live);
		if (!maro_hold_match(&d->hold, &h->ev, d->live, NULL, NULL))
			continue;
		/*
		 * A coprocess whose event is one message at a time gets every
		 * matching message at once: what triggering it again and again
		 * would feed it, in the same order, without a pass per message.
		 */
		if (h->mode == MODE_CO && h->ev.nunits == 1 && !h->ev.units[0].percent &&
		    h->ev.units[0].amount == 1)
			d->runs += maro_hold_take_all(&d->hold, &h->ev.units[0]);	/* a trigger each */
		*ran = 1;
		if (h->mode == MODE_EXIT) {
			for (j = 0; j < d->hold.n; j++)
				if (d->hold.take[j])
					maro_hold_ack(&d->hold, d->ib, j);
			stop = 1;
		} else if (h->mode == MODE_CO) {
			co_feed(d, h, d->hold.take);
		} else {
			run_once(d, h, d->hold.take);
		}
		if (maro_hold_release(&d->hold) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		return stop;
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
	struct handler *h = &d->h[d->nh];
	char errbuf[512];
	int col;

	switch (key) {
	case OPT_RAW: d->raw = 1; return;
	case OPT_EXIT: maro_usage_error("--exit goes after --on EVENT");
	}
	if (d->nh == MAX_HANDLERS)
		maro_usage_error("at most %d handlers", MAX_HANDLERS);
	memset(h, 0, sizeof *h);
	h->text = val;
	if (maro_event_parse(&h->ev, val, &col, errbuf, sizeof errbuf) < 0) {
		maro_warn("invalid event at column %d: %s", col, errbuf);
		fprintf(stderr, "  %s\n  %*s^\n", val, col - 1, "");
		exit(MARO_EXIT_USAGE);
	}
	if (optind < a->argc && !strcmp(a->argv[optind], "--exit") && key == OPT_ON) {
		h->mode = MODE_EXIT;
		optind++;
	} else if (optind < a->argc) {
		h->cmd = a->argv[optind++];
		h->mode = key == OPT_CO ? MODE_CO : MODE_RUN;
	} else {
		maro_usage_error("%s '%s' needs a command", key == OPT_CO ? "--co" : "--on", val);
	}
	h->in = h->out = -1;
	d->nh++;
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct dist d = { 0 };
	struct args a = { &d, argc, argv };
	int64_t deadline, next_hb, now;
	int status = MARO_EXIT_OK, stop = 0, i;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	if (!d.nh)
		maro_usage_error("no handler (--on EVENT CMD or --co EVENT CMD)");
	d.name = cm.name;
	d.quiet = cm.quiet;
	d.registry = cm.co.registry_url ? cm.co.registry_url : getenv("MARO_REGISTRY");
	d.keyfile = cm.co.keyfile;

	d.c = maro_tool_open(&cm, &deadline);
	d.ib = maro_tool_inbox(d.c, &cm, NULL);
	d.ob = maro_outbox_new(d.c, NULL, NULL, &d);
	if (!d.ob)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	for (i = 0; i < d.nh; i++)
		if (d.h[i].mode == MODE_CO)
			co_start(&d, &d.h[i]);
	now = maro_now_us();
	next_hb = maro_tool_next_beat(d.c, now);

	for (;;) {
		zmq_pollitem_t items[1100];
		int nitems = 0, ran, k;
		struct maro_delivery dl;
		int64_t wake;

		while (d.hold.n < MAX_HELD && maro_inbox_next(d.ib, &dl) == 1)
			if (maro_hold_put(&d.hold, &dl, co_resent, &d) < 0)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (!stop) {
			do
				stop = dispatch(&d, &ran);
			while (ran && !stop);
		}
		for (i = 0; i < d.nh; i++)
			if (d.h[i].mode == MODE_CO && d.h[i].pid > 0 && (k = co_pump(&d, &d.h[i])) < 0) {
				if (k == -2) {
					status = MARO_EXIT_DATAERR;	/* said; it is stopped below */
				} else {
					maro_warn("coprocess for '%s' ended", d.h[i].text);
					status = MARO_EXIT_INCOMPLETE;
					d.h[i].pid = -d.h[i].pid;
				}
				stop = 1;
			}
		if (stop)
			maro_outbox_prompt(d.ob);
		maro_outbox_run(d.ob);
		/* held a little, so that acks share frames (answered tasks need none) */
		maro_inbox_flush_due(d.ib);
		if (stop && maro_outbox_pending(d.ob) == 0)
			break;
		if ((k = maro_tool_stop(deadline)) != 0) {
			status = k == MARO_EXIT_TIMEOUT && stop ? MARO_EXIT_INCOMPLETE : k;
			break;
		}
		now = maro_now_us();
		if (now >= next_hb) {
			maro_registry_heartbeat(d.c->reg);
			maro_cli_report_rejected(d.c);
			maro_cli_report_malformed(d.ib);
			next_hb = maro_tool_next_beat(d.c, now);
		}
		if (!stop && d.hold.n < MAX_HELD)
			items[nitems++] = (zmq_pollitem_t){ maro_inbox_pollable(d.ib), 0, ZMQ_POLLIN, 0 };
		for (i = 0; i < d.nh; i++)
			if (d.h[i].mode == MODE_CO && d.h[i].pid > 0) {
				items[nitems++] = (zmq_pollitem_t){ NULL, d.h[i].out, ZMQ_POLLIN, 0 };
				if (d.h[i].wbuf.len)
					items[nitems++] = (zmq_pollitem_t){ NULL, d.h[i].in, ZMQ_POLLOUT, 0 };
			}
		nitems += maro_outbox_pollitems(d.ob, items + nitems, 1024);
		wake = maro_outbox_deadline(d.ob);
		if (deadline < wake)
			wake = deadline;
		if (next_hb < wake)
			wake = next_hb;
		if (maro_inbox_ack_deadline(d.ib) < wake)
			wake = maro_inbox_ack_deadline(d.ib);
		/* percentages move with membership: look again now and then */
		if (now + 500000 < wake && d.hold.n)
			wake = now + 500000;
		if (maro_poll(d.c, items, nitems, maro_wait_ms(wake)) < 0 &&
		    errno != EINTR)
			maro_die(MARO_EXIT_SOFTWARE, "poll: %s", zmq_strerror(errno));
	}
	/* coprocesses: close their input, let them finish, reap them */
	for (i = 0; i < d.nh; i++) {
		struct handler *h = &d.h[i];

		if (h->mode != MODE_CO)
			continue;
		if (h->in >= 0)
			close(h->in);
		if (h->pid > 0)
			stop_group(h->pid);
		else if (h->pid < 0)
			stop_group(-h->pid);	/* ended: reaped, and what it left in its group */
		if (h->out >= 0)
			close(h->out);
		maro_reader_free(&h->rd);
		maro_buf_free(&h->wbuf);
		/* requests it never answered stay unacknowledged: their senders keep them */
		while (h->nwait > h->wfirst)
			free(h->wait[--h->nwait].p);
		free(h->wait);
	}
	/* replies already queued (their requests may be acknowledged): a moment to deliver them */
	if (maro_signal && maro_outbox_pending(d.ob)) {
		int64_t until = maro_now_us() + SIGNAL_GRACE_US;

		maro_info("stopping: %zu replies queued, waiting up to %d s for them",
		    maro_outbox_pending(d.ob), SIGNAL_GRACE_US / 1000000);
		maro_outbox_prompt(d.ob);
		for (;;) {
			zmq_pollitem_t items[1024];
			int k;

			maro_outbox_run(d.ob);
			if (!maro_outbox_pending(d.ob) || maro_now_us() >= until)
				break;
			k = maro_outbox_pollitems(d.ob, items, 1024);
			maro_poll(d.c, items, k, 50);
		}
	}
	if (maro_signal && (d.unsent || maro_outbox_pending(d.ob)))
		maro_warn("stopped by a signal: %zu replies not sent, %zu sent but not acknowledged",
		    d.unsent, maro_outbox_pending(d.ob));
	maro_info("%llu triggers, %llu failed", (unsigned long long)d.runs, (unsigned long long)d.failures);
	maro_cli_report_malformed(d.ib);
	maro_inbox_close(d.ib);
	maro_outbox_free(d.ob);
	maro_ctx_close(d.c);
	maro_hold_free(&d.hold);
	maro_buf_free(&d.reply);
	return status;
}
