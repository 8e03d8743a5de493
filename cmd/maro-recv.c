/*
 * maro-recv: join a group under a name and write the messages it receives
 * to stdout.  A message is acknowledged only after it was written out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"
#include "strset.h"

enum { OPT_SESSION = 256, OPT_SESSIONS_FROM };

static const char *const synopsis[] = { "", NULL };

struct filter {
	struct maro_strv tags, froms;
	struct maro_strset sessions;	/* replies still expected, per session id */
	int by_session;
};

/* What the command line gave: the bound rows of opts[] write here. */
static struct args {
	struct filter f;
	uint64_t count;
	int counted;		/* -C given: 0 is a count too (head -n 0) */
	int64_t idle;
} args = { .idle = -1 };

static const struct maro_opt opts[] = {
	MARO_OPT_OWN("count", 'C', "N", "exit after N messages", 'C'),
	MARO_OPT_DURATION("idle-timeout", 0, "DUR", "exit after DUR without a message", &args.idle),
	MARO_OPT_STRV("tag", 0, "TAG", "only messages with this tag", &args.f.tags),
	MARO_OPT_STRV("from", 0, "PREFIX", "only messages from a source starting with PREFIX",
	    &args.f.froms),
	{ .name = "session", .arg = "ID", .help = "only the reply in session ID, then exit", .key = OPT_SESSION, .flags = MARO_OPT_REPEAT },
	MARO_OPT_OWN("sessions-from", 0, "FILE", "the replies to the requests of FILE (an --async output)", OPT_SESSIONS_FROM),
	MARO_OPT_SHARED_AS(MARO_SH_QUIET, "say nothing at -W", 0),
	{ 0 },
};

static const struct maro_tool tool = {
	"Join a group under NAME and write the messages it receives to standard output.",
	synopsis, opts, MARO_SH_MEMBER | MARO_SH_INBOX | MARO_SH(FORMAT) | MARO_SH(TIMEOUT) | MARO_SH(ADVERTISE) |
	    MARO_SH(MAX_SIZE),
	MARO_TOOL_NEEDS_NAME,
};

/* Every message of FILE (the output of an --async tool) expects one reply in its session. */
static void
load_sessions(struct filter *f, const char *path)
{
	struct maro_reader r;
	struct maro_err err;
	const uint8_t *p;
	size_t n;
	uint64_t off;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO, rc;

	if (fd < 0)
		maro_die(MARO_EXIT_USAGE, "cannot open '%s': %s", path, strerror(errno));
	maro_reader_init(&r, fd, NULL);
	while ((rc = maro_reader_read(&r, &p, &n, &off, &err)) == 1) {
		struct maro_msg m;

		if (maro_msg_decode(&m, p, n, &err) < 0)
			maro_die(MARO_EXIT_DATAERR, "'%s': malformed input at byte offset %llu: %s",
			    path, (unsigned long long)(off + err.offset), err.msg);
		if (!m.session_id.p)
			maro_die(MARO_EXIT_DATAERR, "'%s': message at byte offset %llu has no session_id",
			    path, (unsigned long long)off);
		maro_strset_add(&f->sessions, m.session_id.p, m.session_id.n);
	}
	if (rc < 0)
		maro_die(MARO_EXIT_DATAERR, "'%s': malformed input at byte offset %llu: %s", path,
		    (unsigned long long)err.offset, err.msg[0] ? err.msg : strerror(errno));
	maro_reader_free(&r);
	if (fd != STDIN_FILENO)
		close(fd);
	f->by_session = 1;
}

static int
wanted(struct filter *f, const struct maro_msg *m)
{
	size_t i;
	int ok;

	if (f->tags.n) {
		for (ok = 0, i = 0; i < f->tags.n && !ok; i++)
			ok = maro_str_eq(m->tag, f->tags.v[i]);
		if (!ok)
			return 0;
	}
	if (f->froms.n) {
		for (ok = 0, i = 0; i < f->froms.n && !ok; i++)
			ok = maro_str_has_prefix(m->source, f->froms.v[i]);
		if (!ok)
			return 0;
	}
	if (f->by_session)
		return m->session_id.p && maro_strset_take(&f->sessions, m->session_id.p, m->session_id.n);
	return 1;
}

static void
say_missing(void *arg, const char *key, size_t len, unsigned count)
{
	(void)arg;
	maro_warn("no reply in session %.*s (%u missing)", (int)len, key, count);
}

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;

	switch (key) {
	case 'C': a->count = maro_cli_count("-C", val); a->counted = 1; break;
	case OPT_SESSION:
		maro_strset_add(&a->f.sessions, val, strlen(val));
		a->f.by_session = 1;
		break;
	case OPT_SESSIONS_FROM: load_sessions(&a->f, val); break;
	}
}

/*
 * Writing standard output failed with err after got messages: the status
 * to leave with (the reader went away, EPIPE: status, unchanged).
 */
static int
write_failed(int err, uint64_t got, int status)
{
	if (err == EPIPE)
		return status;
	if (err == ETIMEDOUT) {
		/* -W came while standard output took nothing */
		maro_warn("timed out writing standard output after %llu message%s",
		    (unsigned long long)got, got == 1 ? "" : "s");
		return MARO_EXIT_TIMEOUT;
	}
	return maro_cli_output_failed(err);
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct filter f;
	struct maro_writer w;
	struct maro_buf line = { 0 };
	struct maro_ctx *c;
	struct maro_inbox *ib;
	struct maro_loop l;
	enum maro_format fmt;
	const char *name;
	uint64_t count, got = 0;
	int64_t idle, deadline, idle_at;
	int status = MARO_EXIT_OK, stop = 0, quiet;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	maro_opt_parse(&tool, &cm, argc, argv, own, &args);
	f = args.f;
	count = args.count;
	idle = args.idle;
	fmt = cm.format;
	name = cm.name;
	quiet = cm.quiet;
	if (f.by_session && args.counted)
		maro_usage_error("-C and --session/--sessions-from do not go together");
	if ((f.by_session && f.sessions.used == 0) || (args.counted && count == 0))
		return 0;	/* no session to wait for, or no message to take: done */

	cm.co.peers = 1;	/* an inbox, connected to no one (transport.h) */
	c = maro_tool_open(&cm, &deadline);
	ib = maro_tool_inbox(c, &cm, NULL);
	maro_info("joined group '%s' as '%s'", c->group, name);
	maro_writer_init(&w, STDOUT_FILENO);

	maro_loop_init(&l, c, deadline, 1);
	idle_at = idle >= 0 ? l.now + idle : INT64_MAX;
	while (!stop) {
		struct maro_delivery d;
		int slot, rc;

		maro_loop_begin(&l);
		slot = maro_loop_inbox(&l, ib);
		maro_loop_at(&l, idle_at);
		maro_loop_wait(&l);
		if ((status = maro_loop_signalled(&l)) != 0)
			break;
		while ((rc = maro_inbox_next(ib, &d)) == 1) {
			struct maro_err err;

			if (!wanted(&f, &d.msg))
				continue;	/* not ours to hand on: the sender keeps it */
			line.len = 0;
			/* CBOR goes out as it came: no copy through line */
			if (fmt != MARO_FORMAT_CBOR && maro_format_msg(&line, fmt, &d.msg, d.p, d.n, &err) < 0) {
				maro_warn("cannot print a message from '%.*s' as %s: %s",
				    (int)d.msg.source.n, d.msg.source.p ? d.msg.source.p : "",
				    fmt == MARO_FORMAT_JSON ? "JSON" : "text", err.msg);
				continue;
			}
			if (fmt == MARO_FORMAT_CBOR ? maro_writer_put(&w, d.p, d.n) < 0 :
			    maro_writer_put(&w, line.p, line.len) < 0)
				goto out_write;
			maro_inbox_done(ib, &d);
			got++;
			if ((count && got == count) || (f.by_session && f.sessions.used == 0)) {
				stop = 1;
				break;
			}
		}
		if (rc < 0)
			maro_die(MARO_EXIT_SOFTWARE, "receiving: %s", maro_transport_strerror(errno));
		/* the queue drained: write out, then acknowledge what was written */
		if (maro_writer_flush(&w) < 0)
			goto out_write;
		maro_inbox_flush(ib);
		/* a message came: the idle time starts again after it was written */
		maro_loop_tick(&l);
		if (maro_loop_ready(&l, slot) & MARO_LOOP_IN)
			idle_at = idle >= 0 ? l.now + idle : INT64_MAX;
		if (maro_loop_beat(&l, ib) < 0) {
			maro_warn("%s", maro_registry_error(c->reg));
			status = MARO_EXIT_INCOMPLETE;
			break;
		}
		if (!stop && maro_loop_expired(&l)) {
			status = MARO_EXIT_TIMEOUT;
			if (!quiet)
				maro_warn("timed out after %llu message%s", (unsigned long long)got,
				    got == 1 ? "" : "s");
			break;
		}
		if (!stop && l.now >= idle_at)
			break;
	}
	if (f.by_session && f.sessions.used) {
		maro_strset_foreach(&f.sessions, say_missing, NULL);
		if (status == MARO_EXIT_TIMEOUT)
			status = got ? MARO_EXIT_INCOMPLETE : MARO_EXIT_TIMEOUT;
	}
	maro_cli_report_malformed(ib);
out:
	maro_loop_free(&l);
	maro_inbox_close(ib);
	maro_ctx_close(c);
	maro_writer_free(&w);
	maro_buf_free(&line);
	maro_strset_free(&f.sessions);
	maro_strv_free(&f.tags);
	maro_strv_free(&f.froms);
	return status;
out_write:
	/* EPIPE: the reader went away; what was not written is not acknowledged */
	status = write_failed(errno, got, status);
	maro_inbox_discard(ib);
	goto out;
}
