/*
 * maro-recv: join a group under a name and write the messages it receives
 * to stdout.  A message is acknowledged only after it was written out.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"
#include "strset.h"

static void
usage(void)
{
	printf("usage: %s -n NAME [-g GROUP] [--registry URL] [--keyfile FILE] [--type TYPE] [--takeover]\n"
	    "          [-f cbor|json|diag|payload] [-C N] [-W DUR] [--idle-timeout DUR]\n"
	    "          [--tag TAG]... [--from PREFIX]... [--session ID]... [--sessions-from FILE]\n"
	    "          [--advertise HOST] [--max-size BYTES] [-q] [-v]\n"
	    "       %s -h | -V\n", maro_progname, maro_progname);
}

enum {
	OPT_REGISTRY = 256, OPT_KEYFILE, OPT_TYPE, OPT_TAKEOVER, OPT_IDLE, OPT_TAG, OPT_FROM,
	OPT_SESSION, OPT_SESSIONS_FROM, OPT_ADVERTISE, OPT_MAX_SIZE,
};

static const struct option longopts[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "group", required_argument, NULL, 'g' },
	{ "registry", required_argument, NULL, OPT_REGISTRY },
	{ "keyfile", required_argument, NULL, OPT_KEYFILE },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "takeover", no_argument, NULL, OPT_TAKEOVER },
	{ "format", required_argument, NULL, 'f' },
	{ "count", required_argument, NULL, 'C' },
	{ "timeout", required_argument, NULL, 'W' },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "session", required_argument, NULL, OPT_SESSION },
	{ "sessions-from", required_argument, NULL, OPT_SESSIONS_FROM },
	{ "advertise", required_argument, NULL, OPT_ADVERTISE },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct filter {
	char **tags, **froms;
	size_t ntags, nfroms;
	struct maro_strset sessions;	/* replies still expected, per session id */
	int by_session;
};

static void
push(char ***v, size_t *n, char *s)
{
	char **t = realloc(*v, (*n + 1) * sizeof *t);

	if (!t)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	t[(*n)++] = s;
	*v = t;
}

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

	if (f->ntags) {
		for (ok = 0, i = 0; i < f->ntags && !ok; i++)
			ok = maro_str_eq(m->tag, f->tags[i]);
		if (!ok)
			return 0;
	}
	if (f->nfroms) {
		for (ok = 0, i = 0; i < f->nfroms && !ok; i++)
			ok = maro_str_has_prefix(m->source, f->froms[i]);
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

int
main(int argc, char **argv)
{
	struct maro_ctx_opts co = { 0 };
	struct filter f = { 0 };
	struct maro_entry holder;
	struct maro_writer w;
	struct maro_buf line = { 0 };
	struct maro_ctx *c;
	struct maro_inbox *ib;
	enum maro_format fmt = isatty(STDOUT_FILENO) ? MARO_FORMAT_JSON : MARO_FORMAT_CBOR;
	const char *name = getenv("MARO_NAME"), *type = NULL;
	char errbuf[512];
	uint64_t count = 0, got = 0;
	int64_t timeout = -1, idle = -1, deadline, idle_at, next_hb, now;
	int takeover = 0, ch, status = MARO_EXIT_OK, stop = 0, quiet = 0;

	maro_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "n:g:f:C:W:qvhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n': name = optarg; break;
		case 'g': co.group = optarg; break;
		case OPT_REGISTRY: co.registry_url = optarg; break;
		case OPT_KEYFILE: co.keyfile = optarg; break;
		case OPT_TYPE: type = optarg; break;
		case OPT_TAKEOVER: takeover = 1; break;
		case 'f': fmt = maro_cli_format(optarg); break;
		case 'C': count = maro_cli_count("-C", optarg); break;
		case 'W': timeout = maro_cli_duration("-W", optarg); break;
		case OPT_IDLE: idle = maro_cli_duration("--idle-timeout", optarg); break;
		case OPT_TAG: push(&f.tags, &f.ntags, optarg); break;
		case OPT_FROM: push(&f.froms, &f.nfroms, optarg); break;
		case OPT_SESSION:
			maro_strset_add(&f.sessions, optarg, strlen(optarg));
			f.by_session = 1;
			break;
		case OPT_SESSIONS_FROM: load_sessions(&f, optarg); break;
		case OPT_ADVERTISE: co.advertise = optarg; break;
		case OPT_MAX_SIZE: co.max_message = maro_cli_count("--max-size", optarg); break;
		case 'q': quiet = 1; break;
		case 'v': maro_verbose = 1; break;
		case 'h': usage(); return 0;
		case 'V': maro_print_version(); return 0;
		default: maro_usage_error("invalid option");
		}
	}
	if (optind < argc)
		maro_usage_error("unexpected argument '%s'", argv[optind]);
	if (!name || !*name)
		maro_usage_error("a name is required (-n NAME or MARO_NAME)");
	if (!maro_name_valid(name))
		maro_usage_error("invalid name '%s' (letters, digits, '.', '_', '-', not first '.' or '_')", name);
	if (type && !maro_name_valid(type))
		maro_usage_error("invalid type '%s'", type);
	if (f.by_session && count)
		maro_usage_error("-C and --session/--sessions-from do not go together");
	if (f.by_session && f.sessions.used == 0)
		return 0;	/* no session to wait for */

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
	maro_info("joined group '%s' as '%s'", c->group, name);
	maro_writer_init(&w, STDOUT_FILENO);

	now = maro_now_us();
	idle_at = idle >= 0 ? now + idle : INT64_MAX;
	next_hb = now + 1000000;
	while (!stop) {
		zmq_pollitem_t it = { maro_inbox_pollable(ib), 0, ZMQ_POLLIN, 0 };
		struct maro_delivery d;
		int64_t wake = deadline < idle_at ? deadline : idle_at;
		long ms;
		int rc;

		if (next_hb < wake)
			wake = next_hb;
		ms = maro_wait_ms(wake);
		if (maro_poll(c, &it, 1, ms) < 0 && errno != EINTR)
			maro_die(MARO_EXIT_SOFTWARE, "poll: %s", zmq_strerror(errno));
		if (maro_signal) {
			status = maro_signal_status();
			break;
		}
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
			maro_die(MARO_EXIT_SOFTWARE, "receiving: %s", zmq_strerror(errno));
		/* the queue drained: write out, then acknowledge what was written */
		if (maro_writer_flush(&w) < 0)
			goto out_write;
		maro_inbox_flush(ib);
		now = maro_now_us();
		if (it.revents & ZMQ_POLLIN)
			idle_at = idle >= 0 ? now + idle : INT64_MAX;
		if (now >= next_hb) {
			if (maro_registry_heartbeat(c->reg) < 0 && errno == EEXIST) {
				maro_warn("%s", maro_registry_error(c->reg));
				status = MARO_EXIT_INCOMPLETE;
				break;
			}
			maro_cli_report_rejected(c);
			maro_cli_report_malformed(ib);
			next_hb = now + 1000000;
		}
		if (!stop && now >= deadline) {
			status = MARO_EXIT_TIMEOUT;
			if (!quiet)
				maro_warn("timed out after %llu message%s", (unsigned long long)got,
				    got == 1 ? "" : "s");
			break;
		}
		if (!stop && now >= idle_at)
			break;
	}
	if (f.by_session && f.sessions.used) {
		maro_strset_foreach(&f.sessions, say_missing, NULL);
		if (status == MARO_EXIT_TIMEOUT)
			status = got ? MARO_EXIT_INCOMPLETE : MARO_EXIT_TIMEOUT;
	}
	maro_cli_report_malformed(ib);
	maro_inbox_close(ib);
	maro_ctx_close(c);
	maro_writer_free(&w);
	maro_buf_free(&line);
	maro_strset_free(&f.sessions);
	free(f.tags);
	free(f.froms);
	return status;
out_write:
	/* EPIPE: the reader went away; what was not written is not acknowledged */
	{
		int err = errno;

		/* a signal ends a blocked write: leave as for the signal */
		if (err == EINTR && maro_signal) {
			status = maro_signal_status();
		} else if (err == ETIMEDOUT) {
			/* -W came while standard output took nothing */
			status = MARO_EXIT_TIMEOUT;
			maro_warn("timed out writing standard output after %llu message%s",
			    (unsigned long long)got, got == 1 ? "" : "s");
		} else if (err != EPIPE) {
			status = MARO_EXIT_SOFTWARE;
			maro_warn("error writing standard output: %s", strerror(err));
		}
		maro_inbox_discard(ib);
		maro_inbox_close(ib);
		maro_ctx_close(c);
		maro_writer_free(&w);
		maro_buf_free(&line);
		maro_strset_free(&f.sessions);
		free(f.tags);
		free(f.froms);
		return status;
	}
}
