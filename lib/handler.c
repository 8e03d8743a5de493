#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "convert.h"
#include "format.h"
#include "handler.h"
#include "registry.h"
#include "reply.h"
#include "stats.h"
#include "utf8.h"

static void
note(struct maro_handler_host *x, const struct maro_handler_note *n)
{
	x->note(x->arg, n);
}

static void
note_err(struct maro_handler_host *x, const struct maro_handler *h, enum maro_handler_what what,
    uint64_t offset, const struct maro_err *err)
{
	struct maro_handler_note n = { .what = what, .h = h, .err = err, .offset = offset };

	note(x, &n);
}

int
maro_handler_init(struct maro_handler *h, const struct maro_handler_host *x, const char *text,
    const char *cmd, int co)
{
	char type[MARO_NAME_MAX + 1], *set[6] = { NULL };
	size_t n = 0, i;
	int rc = -1;

	memset(h, 0, sizeof *h);
	h->text = text;
	h->cmd = cmd;
	h->co = co;
	h->dir = x->dir;
	h->in = h->out = -1;
	maro_name_type(x->name, type);
	if (asprintf(&set[n++], "MARO_NAME=%s", x->name) < 0 ||
	    asprintf(&set[n++], "MARO_TYPE=%s", type) < 0 ||
	    asprintf(&set[n++], "MARO_GROUP=%s", x->c->group) < 0 ||
	    asprintf(&set[n++], "MARO_EVENT=%s", text) < 0 ||
	    (x->registry && asprintf(&set[n++], "MARO_REGISTRY=%s", x->registry) < 0) ||
	    (x->keyfile && asprintf(&set[n++], "MARO_KEYFILE=%s", x->keyfile) < 0) ||
	    !(h->env = maro_child_env(set, n)))
		goto out;
	rc = 0;
out:
	for (i = 0; i < n; i++)
		free(set[i]);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

/*
 * sh -c CMD with stdin from in_fd, stdout to out_fd and stderr to err_fd
 * (-1: ours).  Its pid, or -1 (why in err).
 */
static pid_t
spawn(struct maro_handler *h, int in_fd, int out_fd, int err_fd, struct maro_err *err)
{
	char *argv[] = { "sh", "-c", (char *)h->cmd, NULL };
	struct maro_child_spec cs = { "/bin/sh", argv, h->env, in_fd, out_fd, NULL, h->dir, err_fd };
	pid_t pid = maro_child_spawn(&cs);

	if (pid < 0)
		snprintf(err->msg, sizeof err->msg, "cannot run sh for '%s': %s", h->text, strerror(errno));
	return pid;
}

/*
 * raw: the one line a handler reads for m: a text payload as it is, or as
 * a JSON string when it holds a line break; any other payload as a JSON
 * line; none as an empty line.  -1 (why in err) for a payload JSON cannot
 * express.
 */
static int
raw_line(struct maro_buf *out, const struct maro_held *m, struct maro_err *err)
{
	size_t at = out->len;
	json_t *j;
	char *s;
	int rc;

	if (maro_format_msg(out, MARO_FORMAT_PAYLOAD, &m->msg, m->p, m->n, err) == 0 &&
	    out->len > at && !memchr(out->p + at, '\n', out->len - at - 1))
		return 0;
	out->len = at;
	if (!m->msg.payload.p || !(j = maro_cbor_to_json(m->msg.payload.p, m->msg.payload.n, err)))
		return -1;
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	json_decref(j);
	rc = s && maro_buf_puts(out, s) == 0 && maro_buf_append(out, "\n", 1) == 0 ? 0 : -1;
	free(s);
	if (rc < 0)
		snprintf(err->msg, sizeof err->msg, "out of memory");
	return rc;
}

static void
ack(struct maro_handler_host *x, uint32_t peer, uint64_t seq, const struct maro_msg *m, size_t n)
{
	struct maro_delivery dl = { .n = n, .peer = peer, .seq = seq, .msg = *m };

	maro_inbox_done(x->ib, &dl);
}

/*
 * What a handler reads for m appended to out.  -1 when m cannot be given
 * to it: then it was refused (noted, and acknowledged: its sender gets no
 * reply).
 */
static int
input(struct maro_handler_host *x, struct maro_buf *out, const struct maro_held *m)
{
	struct maro_handler_note n = { .what = MARO_HANDLER_REFUSED, .m = &m->msg };
	struct maro_err err;

	if (x->raw ? raw_line(out, m, &err) == 0 :
	    maro_format_msg(out, MARO_FORMAT_CBOR, &m->msg, m->p, m->n, &err) == 0)
		return 0;
	n.err = &err;
	note(x, &n);
	ack(x, m->peer, m->seq, &m->msg, m->n);
	return -1;
}

static int
is_request(const struct maro_msg *m)
{
	return m->type != MARO_SESSION_NOTIFICATION && m->stage == MARO_STAGE_REQUEST;
}

/*
 * Sends m (filled in): a reply goes to its reply_to, else to its
 * destination.  Encoded straight into the outbox; a full window to the
 * destination is waited for, never dropped.  0 when queued (or when it
 * never can be: noted), -1 when a signal came while it waited, or the
 * tool's -W passed: then its request must not be acknowledged, and stays
 * with its sender.
 */
static int
send_msg(struct maro_handler_host *x, struct maro_msg *m)
{
	char ids[2][MARO_UUID_LEN + 1], dest[MARO_NAME_MAX + 1];
	struct maro_handler_note n = { .what = MARO_HANDLER_NO_DEST };
	struct maro_str to;
	uint8_t *q;

	maro_msg_fill(m, x->name, ids);
	to = m->stage != MARO_STAGE_REQUEST && m->reply_to.p ? m->reply_to : m->destination;
	if (!to.p || to.n > MARO_NAME_MAX) {
		note(x, &n);
		return 0;	/* the handler's fault: its request is done with */
	}
	memcpy(dest, to.p, to.n);
	dest[to.n] = '\0';
	while (!(q = maro_outbox_begin(x->ob, dest, maro_msg_encoded_max(m)))) {
		uint64_t acked;

		if (errno != EAGAIN) {
			n.what = MARO_HANDLER_UNSENDABLE;
			n.dest = dest;
			n.errnum = errno;
			note(x, &n);
			return 0;	/* it never can be: its request is done with */
		}
		if (maro_signal) {
			x->unsent++;
			return -1;
		}
		acked = maro_outbox_acked(x->ob);
		maro_outbox_run(x->ob);
		/* that run made room: nothing more may come to end the poll early */
		if (maro_outbox_acked(x->ob) != acked)
			continue;
		/* however long the room takes, the member stays listed, and -W holds */
		if (x->wait(x->arg, maro_now_us() + 100000) != 0) {
			x->unsent++;
			return -1;
		}
	}
	maro_outbox_commit(x->ob, maro_msg_encode_into(m, q));
	return 0;
}

/* Sends one message a handler wrote.  0, or -1 when it was not queued. */
static int
route(struct maro_handler_host *x, const uint8_t *p, size_t n)
{
	struct maro_msg m;
	struct maro_err err;

	if (maro_msg_decode(&m, p, n, &err) < 0) {
		note_err(x, NULL, MARO_HANDLER_MALFORMED, 0, &err);
		return 0;	/* the handler's fault: its request is done with */
	}
	return send_msg(x, &m);
}

/*
 * json_lines: the reply to request m (a copy) with the JSON value of a
 * line as its payload; a line that is not JSON answers m with a failure
 * reply instead (MARO_REPLY_NOT_JSON), noted.  As send_msg.
 */
static int
route_json(struct maro_handler_host *x, struct maro_msg *m, const char *line, size_t len)
{
	struct maro_handler_note n = { .what = MARO_HANDLER_NOT_JSON, .m = m };
	struct maro_err err;
	char id[MARO_UUID_LEN + 1], text[sizeof err.msg + 64];
	json_error_t je;
	json_t *v = json_loadb(line, len, MARO_JSON_LOAD_FLAGS, &je);

	if (v) {
		maro_msg_make_reply(m, x->name, id);
		x->reply.len = 0;
		if (maro_json_to_cbor(v, &x->reply) < 0) {
			json_decref(v);
			return -1;
		}
		json_decref(v);
		m->payload.p = x->reply.p;
		m->payload.n = x->reply.len;
		return send_msg(x, m);
	}
	snprintf(err.msg, sizeof err.msg, "%s at column %d", je.text, je.column);
	n.err = &err;
	note(x, &n);
	maro_stats.tasks_failed++;
	snprintf(text, sizeof text, "the handler's line is not JSON: %s", err.msg);
	if (maro_reply_failure(m, x->name, id, MARO_REPLY_NOT_JSON, text, &x->reply) < 0)
		return -1;
	return send_msg(x, m);
}

int
maro_handler_no_handler(struct maro_handler_host *x, const struct maro_delivery *dl)
{
	struct maro_msg m = dl->msg;
	char id[MARO_UUID_LEN + 1], text[MARO_NAME_MAX + 32];

	snprintf(text, sizeof text, "no handler for tag '%.*s'", (int)m.tag.n, m.tag.p);
	if (maro_reply_failure(&m, x->name, id, MARO_REPLY_NO_HANDLER, text, &x->reply) < 0 ||
	    send_msg(x, &m) < 0)
		return -1;
	maro_inbox_done(x->ib, dl);
	maro_stats.tasks_failed++;
	return 0;
}

int
maro_handler_answer(struct maro_handler_host *x, const struct maro_delivery *dl,
    const char *error, const void *p, size_t n)
{
	struct maro_msg m = dl->msg;
	char id[MARO_UUID_LEN + 1];

	if (error) {
		if (maro_reply_failure(&m, x->name, id, error, p, &x->reply) < 0)
			return -1;
	} else {
		maro_msg_make_reply(&m, x->name, id);
		m.payload.p = p;
		m.payload.n = n;
	}
	if (send_msg(x, &m) < 0)
		return -1;
	maro_inbox_done(x->ib, dl);
	return 0;
}

int
maro_handler_bundle(struct maro_handler_host *x, struct maro_bundle_srv *s, const struct maro_delivery *dl)
{
	char why[300];

	if (maro_bundle_srv_answer(s, dl->msg.payload.p, dl->msg.payload.n, &x->reply, why, sizeof why) == 0)
		return maro_handler_answer(x, dl, NULL, x->reply.p, x->reply.len);
	return maro_handler_answer(x, dl, "no bundle", why, strlen(why));
}

/* Answers request req (decoded) with a "failed" failure reply of text (valid UTF-8).  As send_msg. */
static int
fail_request(struct maro_handler_host *x, const struct maro_msg *req, const char *text)
{
	struct maro_msg m;
	char id[MARO_UUID_LEN + 1];

	memcpy(&m, req, offsetof(struct maro_msg, extra));
	memcpy(m.extra, req->extra, req->nextra * sizeof req->extra[0]);
	if (maro_reply_failure(&m, x->name, id, MARO_REPLY_FAILED, text, &x->reply) < 0)
		return -1;
	maro_stats.tasks_failed++;
	return send_msg(x, &m);
}

/*
 * The reply to request req (decoded) with a payload line from a raw
 * handler; a line that starts with x->fail_prefix fails it instead (the
 * rest of the line, text, its reason).  As send_msg.
 */
static int
route_raw(struct maro_handler_host *x, const struct maro_msg *req, const char *line, size_t len)
{
	struct maro_handler_note n = { .what = MARO_HANDLER_NOT_TEXT, .m = req };
	struct maro_msg m;
	char id[MARO_UUID_LEN + 1];
	size_t fp = x->fail_prefix ? strlen(x->fail_prefix) : 0;

	if (fp && len >= fp && !memcmp(line, x->fail_prefix, fp)) {
		char *text = strndup(line + fp, len - fp);
		int rc;

		if (!text)
			return -1;
		if (!maro_utf8_valid(text, strlen(text))) {
			note(x, &n);
			free(text);
			return -1;
		}
		rc = fail_request(x, req, *text ? text : "failed by the handler");
		free(text);
		return rc;
	}
	/* its unknown keys go back too: copy those there are, not all 32 slots */
	memcpy(&m, req, offsetof(struct maro_msg, extra));
	memcpy(m.extra, req->extra, req->nextra * sizeof req->extra[0]);
	if (x->json_lines)
		return route_json(x, &m, line, len);
	maro_msg_make_reply(&m, x->name, id);
	x->reply.len = 0;
	if (maro_buf_cbor_text(&x->reply, line, len) < 0) {
		/* not text: no reply, the request stays with its sender */
		if (errno == EILSEQ)
			note(x, &n);
		return -1;
	}
	m.payload.p = x->reply.p;
	m.payload.n = x->reply.len;
	return send_msg(x, &m);
}

/*
 * Waits for a handler to end, heartbeating; on a signal it is stopped.
 * Its wait status.
 */
static int
wait_end(struct maro_handler_host *x, pid_t pid)
{
	int wstatus = 0;
	useconds_t pause = 100;
	pid_t r;

	for (;;) {
		if (maro_signal)
			return maro_child_stop(pid, MARO_HANDLER_GRACE_US);
		r = waitpid(pid, &wstatus, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return wstatus;
		x->beat(x->arg, 0);
		/*
		 * a handler that closed its output is most often exiting: look
		 * again soon, then less often (a flat 20 ms cost each short run
		 * most of that, 3.7 ms a task over 4 workers)
		 */
		usleep(pause);
		if (pause < 20000)
			pause *= 2;
	}
}

/* Keeps the last MARO_HANDLER_TAIL bytes of what a run wrote on its standard error. */
static int
keep_tail(struct maro_buf *tail, const uint8_t *p, size_t n)
{
	if (n > MARO_HANDLER_TAIL) {
		p += n - MARO_HANDLER_TAIL;
		n = MARO_HANDLER_TAIL;
	}
	if (tail->len + n > 2 * MARO_HANDLER_TAIL) {
		memmove(tail->p, tail->p + tail->len - MARO_HANDLER_TAIL, MARO_HANDLER_TAIL);
		tail->len = MARO_HANDLER_TAIL;
	}
	return maro_buf_append(tail, p, n);
}

/*
 * A run's standard error: passed on to ours as it comes (it is the user's
 * own program speaking), its tail kept for a failure reply.  1 when it
 * read some, 2 when there was none to read, 0 at its end, -1 when out of
 * memory.
 */
static int
read_err(int fd, struct maro_buf *tail)
{
	uint8_t b[4096];
	ssize_t n = read(fd, b, sizeof b);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 2 : 0;
	if (n == 0)
		return 0;
	for (ssize_t k = 0, w; k < n; k += w)
		if ((w = write(STDERR_FILENO, b + k, (size_t)(n - k))) <= 0)
			break;
	return keep_tail(tail, b, (size_t)n) < 0 ? -1 : 1;
}

/* Has pid ended?  It stays to be reaped (WNOWAIT). */
static int
ended(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/*
 * Reads the output of run h (pid) to its end, heartbeating while it
 * works, at most max bytes of it, and its standard error (*errfd, set to
 * -1 at its end: read_err); a signal stops the reading.  Its end is also
 * MARO_HANDLER_HELD_US after pid ended with its output still open: a
 * process it left in the background holds it (noted).  1 when it wrote
 * more.
 */
static int
read_all(struct maro_handler_host *x, struct maro_handler *h, pid_t pid, int fd, int *errfd,
    struct maro_buf *tail, struct maro_buf *out, size_t max)
{
	int64_t now, beat_at = maro_now_us(), look_at = 0, ended_at = 0;

	for (;;) {
		struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { *errfd, POLLIN, 0 } };
		ssize_t n;
		int k;

		if (maro_signal)
			return 0;
		k = poll(pfd, *errfd >= 0 ? 2 : 1, 250);
		now = maro_now_us();
		if (k == 0 && now - beat_at >= 1000000) {
			x->beat(x->arg, 1);
			beat_at = now;
		} else {
			/* a handler that writes all the time: the member stays listed */
			x->beat(x->arg, 0);
		}
		if (now >= look_at) {
			look_at = now + 250000;
			if (!ended_at && ended(pid))
				ended_at = now;
			if (ended_at && now - ended_at >= MARO_HANDLER_HELD_US) {
				note_err(x, h, MARO_HANDLER_OUTPUT_HELD, out->len, NULL);
				return 0;
			}
		}
		if (k <= 0)
			continue;
		if (*errfd >= 0 && pfd[1].revents) {
			if ((k = read_err(*errfd, tail)) < 0)
				return -1;
			if (k == 0) {
				close(*errfd);
				*errfd = -1;
			}
		}
		if (!pfd[0].revents)
			continue;
		if (out->len >= max)
			return 1;
		if (maro_buf_reserve(out, 65536) < 0)
			return -1;
		n = read(fd, out->p + out->len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		out->len += (size_t)n;
	}
}

/*
 * The text of a failure reply, in out: how the run ended ("exited 1",
 * "killed by SIGKILL", "wrote more than N bytes") and the end of its
 * standard error, from a line's start when one is there, as valid UTF-8
 * (a byte that is not, or a NUL, as '?'): what goes on the wire is not
 * escaped; those who print it are.
 */
static int
failure_text(struct maro_buf *out, int wstatus, int over, size_t max, struct maro_buf *tail)
{
	uint8_t *p = tail->p;
	size_t n = tail->len, i;
	const char *sig;
	int rc;

	if (over)
		rc = maro_buf_printf(out, "wrote more than %zu bytes (--max-size)", max);
	else if (WIFEXITED(wstatus))
		rc = maro_buf_printf(out, "exited %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus) && (sig = sigabbrev_np(WTERMSIG(wstatus))))
		rc = maro_buf_printf(out, "killed by SIG%s", sig);
	else
		rc = maro_buf_printf(out, "ended (status 0x%x)", wstatus);
	if (rc < 0)
		return -1;
	if (n > MARO_HANDLER_TAIL) {
		uint8_t *nl;

		p += n - MARO_HANDLER_TAIL;
		n = MARO_HANDLER_TAIL;
		if ((nl = memchr(p, '\n', n)) && nl + 1 < p + n) {
			n -= (size_t)(nl + 1 - p);
			p = nl + 1;
		}
	}
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (!n)
		return maro_buf_append(out, "", 1);
	if (maro_buf_puts(out, ": ") < 0)
		return -1;
	for (i = 0; i < n;) {
		size_t len = p[i] < 0x80 ? 1 : (p[i] & 0xe0) == 0xc0 ? 2 : (p[i] & 0xf0) == 0xe0 ? 3 :
		    (p[i] & 0xf8) == 0xf0 ? 4 : 0;

		if (!len || i + len > n || !maro_utf8_valid(p + i, len) || !p[i]) {
			if (maro_buf_append(out, "?", 1) < 0)
				return -1;
			i++;
			continue;
		}
		if (maro_buf_append(out, p + i, len) < 0)
			return -1;
		i += len;
	}
	return maro_buf_append(out, "", 1);
}

/* Sends what a run wrote, the replies to the messages fed.  1 when one was not sent. */
static int
send_run(struct maro_handler_host *x, struct maro_handler *h, const unsigned char *fed,
    const struct maro_buf *out)
{
	struct maro_hold *hd = x->hold;
	int unsent = 0, few = 0;
	size_t i;

	if (x->raw) {
		const char *line = (const char *)out->p, *end = line + out->len;

		for (i = 0; i < hd->n; i++) {
			const char *nl;

			if (!fed[i] || !is_request(&hd->msg[i].msg))
				continue;
			if (line >= end) {
				/* said once; each request left gets an answer all the same */
				if (!few++)
					note_err(x, h, MARO_HANDLER_FEW_LINES, 0, NULL);
				if (fail_request(x, &hd->msg[i].msg, "the handler wrote no line for it") < 0)
					unsent = 1;
				continue;
			}
			nl = memchr(line, '\n', (size_t)(end - line));
			if (!nl)
				nl = end;
			if (route_raw(x, &hd->msg[i].msg, line, (size_t)(nl - line)) < 0)
				unsent = 1;
			line = nl + 1;
		}
		return unsent;
	}
	for (size_t off = 0, len; off < out->len; off += len) {
		struct maro_err err;
		struct maro_cbor_scan sc;

		maro_cbor_scan_init(&sc, &x->c->limits);
		if (maro_cbor_scan(&sc, out->p + off, out->len - off, &len, &err) != MARO_SCAN_DONE) {
			note_err(x, h, MARO_HANDLER_BAD_CBOR, off + (size_t)err.offset, &err);
			break;
		}
		if (route(x, out->p + off, len) < 0)
			unsent = 1;
	}
	return unsent;
}

/*
 * A run that failed (wstatus, or over: it wrote too much): each task
 * request fed answered with a failure reply (failure_text) and
 * acknowledged; each notification acknowledged, having no one to answer
 * (the tool says so).  Counted in x->failed_requests, x->failed_notes.
 */
static int
fail_run(struct maro_handler_host *x, const unsigned char *fed, int wstatus, int over,
    struct maro_buf *tail)
{
	struct maro_hold *hd = x->hold;
	struct maro_buf text = { 0 };
	size_t i;

	if (failure_text(&text, wstatus, over, x->c->limits.max_item, tail) < 0)
		return -1;
	for (i = 0; i < hd->n; i++) {
		if (!fed[i])
			continue;
		if (is_request(&hd->msg[i].msg)) {
			/* a signal while it waited: it stays with its sender */
			if (fail_request(x, &hd->msg[i].msg, (const char *)text.p) < 0)
				continue;
			x->failed_requests++;
		} else {
			x->failed_notes++;
			maro_stats.tasks_failed++;
		}
		maro_hold_ack(hd, x->ib, i);
	}
	maro_buf_free(&text);
	return 0;
}

int
maro_handler_run(struct maro_handler_host *x, struct maro_handler *h, const unsigned char *take,
    enum maro_handler_end *end, int *wstatus, struct maro_err *err)
{
	struct maro_hold *hd = x->hold;
	unsigned char *fed;	/* take, but for those refused (input) */
	struct maro_buf in = { 0 }, out = { 0 }, tail = { 0 };
	int infd = -1, pipefd[2] = { -1, -1 }, errp[2] = { -1, -1 }, rc = -1, over;
	size_t i, nfed = 0, max = x->c->limits.max_item;
	pid_t pid;
	const char *tmp = getenv("TMPDIR");
	char *path = NULL;

	err->msg[0] = '\0';
	x->failed_requests = x->failed_notes = 0;
	if (!(fed = malloc(hd->n + 1)))
		goto nomem;
	for (i = 0; i < hd->n; i++) {
		fed[i] = take[i] && input(x, &in, &hd->msg[i]) == 0;
		nfed += fed[i];
	}
	maro_stats.tasks_inflight += nfed;
	/* the input goes through an unlinked file: the handler may read it at leisure */
	/* close-on-exec: only the dup2'ed copies reach the handler, so its
	 * background children cannot hold our pipe open */
	if (asprintf(&path, "%s/maro-dist.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0) {
		path = NULL;
		goto nomem;
	}
	infd = mkostemp(path, O_CLOEXEC);
	if (infd < 0 || pipe2(pipefd, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(err->msg, sizeof err->msg, "cannot set up a handler in '%s': %s", path, strerror(errno));
		goto out;
	}
	unlink(path);
	if (write(infd, in.p, in.len) != (ssize_t)in.len || lseek(infd, 0, SEEK_SET) < 0) {
		snprintf(err->msg, sizeof err->msg, "cannot set up a handler: %s", strerror(errno));
		goto out;
	}
	if ((pid = spawn(h, infd, pipefd[1], errp[1], err)) < 0)
		goto out;
	close(infd);
	close(pipefd[1]);
	close(errp[1]);
	infd = pipefd[1] = errp[1] = -1;
	over = read_all(x, h, pid, pipefd[0], &errp[0], &tail, &out, max);
	close(pipefd[0]);
	pipefd[0] = -1;
	if (over < 0) {
		maro_child_stop(pid, MARO_HANDLER_GRACE_US);
		goto nomem;
	}
	*wstatus = over ? maro_child_stop(pid, MARO_HANDLER_GRACE_US) : wait_end(x, pid);
	/* what it wrote on its way out; not what a child it left behind may write later */
	if (errp[0] >= 0) {
		fcntl(errp[0], F_SETFL, O_NONBLOCK);
		while ((rc = read_err(errp[0], &tail)) == 1)
			;
		if (rc < 0)
			goto nomem;
	}
	rc = 0;
	if (maro_signal)
		*end = MARO_HANDLER_STOPPED;
	else if (over)
		*end = MARO_HANDLER_OVER;
	else if (!WIFEXITED(*wstatus) || WEXITSTATUS(*wstatus) != 0)
		*end = MARO_HANDLER_FAILED;
	else
		*end = MARO_HANDLER_DONE;
	/* a reply not sent: none of these is acknowledged, their senders keep them */
	if (*end == MARO_HANDLER_DONE && !send_run(x, h, fed, &out)) {
		for (i = 0; i < hd->n; i++)
			if (fed[i])
				maro_hold_ack(hd, x->ib, i);
		maro_stats.tasks_done += nfed;
	}
	if ((*end == MARO_HANDLER_FAILED || *end == MARO_HANDLER_OVER) &&
	    fail_run(x, fed, *wstatus, over, &tail) < 0)
		goto nomem;
	goto out;
nomem:
	rc = -1;
	snprintf(err->msg, sizeof err->msg, "out of memory");
out:
	maro_stats.tasks_inflight -= nfed;
	if (infd >= 0)
		close(infd);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	free(path);
	free(fed);
	maro_buf_free(&in);
	maro_buf_free(&out);
	maro_buf_free(&tail);
	return rc;
}

int
maro_handler_co_start(struct maro_handler_host *x, struct maro_handler *h, struct maro_err *err)
{
	int to[2], from[2];

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
		snprintf(err->msg, sizeof err->msg, "pipe: %s", strerror(errno));
		return -1;
	}
	h->pid = spawn(h, to[0], from[1], -1, err);
	if (h->pid < 0)
		return -1;
	close(to[0]);
	close(from[1]);
	h->in = to[1];
	h->out = from[0];
	fcntl(h->in, F_SETFL, O_NONBLOCK);
	fcntl(h->out, F_SETFL, O_NONBLOCK);
	maro_reader_init(&h->rd, h->out, &x->c->limits);
	return 0;
}

int
maro_handler_co_feed(struct maro_handler_host *x, struct maro_handler *h, const unsigned char *take)
{
	struct maro_hold *hd = x->hold;
	size_t i;

	for (i = 0; i < hd->n; i++) {
		struct maro_held *m = &hd->msg[i];
		struct maro_handler_wait *w;

		if (!take[i] || input(x, &h->wbuf, m) < 0)
			continue;
		if (!is_request(&m->msg)) {
			ack(x, m->peer, m->seq, &m->msg, m->n);
			maro_stats.tasks_done++;
			continue;
		}
		if (h->nwait == h->waitcap && h->wfirst) {
			memmove(h->wait, h->wait + h->wfirst, (h->nwait - h->wfirst) * sizeof *h->wait);
			h->nwait -= h->wfirst;
			h->wfirst = 0;
		}
		if (h->nwait == h->waitcap) {
			size_t cap = h->waitcap ? h->waitcap * 2 : 64;

			if (!(w = realloc(h->wait, cap * sizeof *h->wait)))
				return -1;
			h->wait = w;
			h->waitcap = cap;
		}
		w = &h->wait[h->nwait++];
		maro_stats.tasks_inflight++;
		w->p = m->p;
		w->n = m->n;
		w->peer = m->peer;
		w->seq = m->seq;
		w->idh = m->idh;
		/* its spans point into p, which moves along; the extras it has, not 32 */
		memcpy(&w->msg, &m->msg, offsetof(struct maro_msg, extra));
		memcpy(w->msg.extra, m->msg.extra, m->msg.nextra * sizeof m->msg.extra[0]);
		m->p = NULL;	/* now the waiting list's */
	}
	return 0;
}

/*
 * The reply for a waiting request went out (sent), or was given up on:
 * acknowledge that request, unless the reply goes to its sender's private
 * reply inbox, where it settles the request (maro(7), DELIVERY): then an
 * ack would be one more frame, and one more wake-up, per task.  One given
 * up on is only forgotten: its sender keeps it.
 */
static void
answered(struct maro_handler_host *x, struct maro_handler *h, size_t k, int sent)
{
	const struct maro_msg *m = &h->wait[k].msg;

	/* only its id is needed: no copy of the message per task */
	if (sent && m->reply_to.p && m->reply_to.n > 1 && m->reply_to.p[0] == '~') {
		maro_inbox_settled_hash(x->ib, h->wait[k].idh);
		maro_stats.msgs_in++;	/* handed on, as maro_inbox_done counts it */
		maro_stats.bytes_in += h->wait[k].n;
	} else if (sent) {
		ack(x, h->wait[k].peer, h->wait[k].seq, m, h->wait[k].n);
	}
	maro_stats.tasks_inflight--;
	if (sent)
		maro_stats.tasks_done++;
	else
		maro_stats.tasks_failed++;
	maro_hold_forget(x->hold, m->message_id, h->wait[k].idh);
	free(h->wait[k].p);
	if (k == h->wfirst)
		h->wfirst++;
	else
		memmove(h->wait + k, h->wait + k + 1, (--h->nwait - k) * sizeof *h->wait);
	if (h->wfirst == h->nwait)
		h->wfirst = h->nwait = 0;
}

/*
 * A coprocess that has had requests, all handed over, and has written
 * nothing for MARO_HANDLER_SILENT_US most likely holds its answers in a
 * stdio buffer (a pipe is not a terminal): noted once.
 */
static void
silent(struct maro_handler_host *x, struct maro_handler *h)
{
	struct maro_handler_note n = { .what = MARO_HANDLER_SILENT, .h = h };
	int64_t now = maro_now_us();

	if (h->nwait == h->wfirst || h->wbuf.len) {
		h->silent_since = 0;
		return;
	}
	if (!h->silent_since)
		h->silent_since = now;
	if (h->said_silent || now - h->silent_since < MARO_HANDLER_SILENT_US)
		return;
	h->said_silent = 1;
	n.count = h->nwait - h->wfirst;
	note(x, &n);
}

/* raw: each line answers the oldest waiting request.  As maro_handler_co_pump. */
static int
pump_lines(struct maro_handler_host *x, struct maro_handler *h)
{
	size_t max = x->c->limits.max_item;

	while (h->rd.buf.len > h->rd.start) {
		const char *s = (const char *)h->rd.buf.p + h->rd.start;
		const char *nl = memchr(s, '\n', h->rd.buf.len - h->rd.start);

		if (!nl && h->rd.buf.len - h->rd.start > max) {
			struct maro_handler_note n = { .what = MARO_HANDLER_LONG_LINE, .h = h,
				.offset = h->rd.base + h->rd.start, .count = max };

			note(x, &n);
			return -2;
		}
		if (!nl)
			break;
		if (h->nwait > h->wfirst)
			answered(x, h, h->wfirst, route_raw(x, &h->wait[h->wfirst].msg, s, (size_t)(nl - s)) == 0);
		else
			note_err(x, h, MARO_HANDLER_STRAY_LINE, 0, NULL);
		h->rd.start += (size_t)(nl - s) + 1;
	}
	return h->rd.eof ? -1 : 0;
}

int
maro_handler_co_pump(struct maro_handler_host *x, struct maro_handler *h)
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
	/* what is buffered stays within max_item: a coprocess that floods is read no faster */
	while (h->rd.buf.len - h->rd.start <= x->c->limits.max_item) {
		k = maro_reader_fill(&h->rd);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (k < 0 || (k == 0 && h->rd.eof && !maro_reader_pending(&h->rd)))
			return -1;
		if (k == 0)
			break;
		h->silent_since = 0;
	}
	silent(x, h);
	if (x->raw)
		return pump_lines(x, h);
	for (;;) {
		struct maro_msg m;
		int rc = maro_reader_next(&h->rd, &p, &n, &off, &err);

		if (rc == 0)
			break;
		if (rc < 0) {
			note_err(x, h, MARO_HANDLER_BAD_CBOR, err.offset, &err);
			return -2;
		}
		/* not sent: its request stays waiting, unacknowledged */
		if (route(x, p, n) < 0 || maro_msg_decode(&m, p, n, &err) < 0 || !m.session_id.p)
			continue;
		for (size_t i = h->wfirst; i < h->nwait; i++) {
			const struct maro_msg *w = &h->wait[i].msg;

			if (w->session_id.n == m.session_id.n &&
			    !memcmp(w->session_id.p, m.session_id.p, m.session_id.n)) {
				answered(x, h, i, 1);
				break;
			}
		}
	}
	return 0;
}

int
maro_handler_co_resent(struct maro_handler *h, const struct maro_delivery *dl)
{
	for (size_t k = h->wfirst; k < h->nwait; k++) {
		const struct maro_msg *w = &h->wait[k].msg;

		if (w->message_id.n == dl->msg.message_id.n &&
		    !memcmp(w->message_id.p, dl->msg.message_id.p, w->message_id.n)) {
			h->wait[k].peer = dl->peer;
			h->wait[k].seq = dl->seq;
			return 1;
		}
	}
	return 0;
}

void
maro_handler_free(struct maro_handler *h)
{
	if (h->in >= 0)
		close(h->in);
	/* one that ended is reaped, and what it left in its group killed */
	if (h->pid)
		maro_child_stop(h->pid > 0 ? h->pid : -h->pid, MARO_HANDLER_GRACE_US);
	if (h->out >= 0)
		close(h->out);
	maro_reader_free(&h->rd);
	maro_buf_free(&h->wbuf);
	while (h->nwait > h->wfirst) {
		free(h->wait[--h->nwait].p);
		maro_stats.tasks_inflight--;
	}
	free(h->wait);
	maro_child_env_free(h->env);
	memset(h, 0, sizeof *h);
}

int
maro_handler_set_start(struct maro_handler_set *s, struct maro_handler_host *x, struct maro_err *err)
{
	for (int i = 0; i < s->n; i++) {
		struct maro_handler_entry *e = &s->h[i];

		if (e->mode != MARO_HANDLER_EXIT &&
		    maro_handler_init(&e->run, x, e->run.text, e->run.cmd, e->mode == MARO_HANDLER_CO) < 0) {
			snprintf(err->msg, sizeof err->msg, "out of memory");
			return -1;
		}
		if (e->mode == MARO_HANDLER_CO && maro_handler_co_start(x, &e->run, err) < 0)
			return -1;
	}
	return 0;
}

int
maro_handler_set_resent(void *arg, const struct maro_delivery *dl)
{
	struct maro_handler_set *s = arg;

	for (int i = 0; i < s->n; i++)
		if (s->h[i].mode == MARO_HANDLER_CO && maro_handler_co_resent(&s->h[i].run, dl))
			return 1;
	return 0;
}

int
maro_handler_set_untaken(const struct maro_handler_set *s, const struct maro_msg *m)
{
	struct maro_event_msg em = { m->source, m->tag };

	if (m->type != MARO_SESSION_TASK || m->stage != MARO_STAGE_REQUEST)
		return 0;
	for (int i = 0; i < s->n; i++)
		for (int u = 0; u < s->h[i].ev.nunits; u++)
			if (maro_event_unit_matches(&s->h[i].ev.units[u], &em))
				return 0;
	return 1;
}

void
maro_handler_set_free(struct maro_handler_set *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->h[i].mode != MARO_HANDLER_EXIT)
			maro_handler_free(&s->h[i].run);
}
