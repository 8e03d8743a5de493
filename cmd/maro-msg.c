/*
 * maro-msg: the shell's way into and out of the message stream.  Prints a
 * stream of messages as CBOR, JSON lines, diagnostic notation or payloads
 * (or only checks it), builds messages from flags, and turns requests into
 * replies.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"

enum { OPT_JSON = 256, OPT_TASK, OPT_NOTIFICATION, OPT_MAX_SIZE, OPT_MAX_DEPTH };

static const char *const synopsis[] = {
	"< messages",
	"-t TAG [-d STR]... [--json JSON] [-p DEST]... [-n SOURCE]",
	" [--task | --notification] [-f FORMAT]",
	"reply [-n SOURCE] [-t TAG] [-d STR | --json JSON | --payloads FILE",
	" [--payloads-json]] [-i cbor|json] [-f FORMAT] [-q] [-v] < requests",
	NULL,
};

/* Every message read or built goes out through these. */
static enum maro_format format;
static int check;
static struct maro_cbor_limits limits;
static struct maro_writer out;
static struct maro_buf line;		/* one message in the output format */
static uint64_t count;

/* Reply mode: what replaces the envelope and the payload. */
static int reply;
static struct maro_reply rp;
static const char *payloads_path;	/* --payloads */
static int payloads_json;

/* The messages the flags describe (or, in reply, the replies' parts), and -i. */
static struct maro_build given;
static const char *input;

static const struct maro_opt opts[] = {
	MARO_OPT_OWN("format", 'f', "FORMAT", "write cbor, json, diag or payload (default: json on a "
	    "terminal, else cbor)", 'f'),
	MARO_OPT_STR("input", 'i', "cbor|json", "read a CBOR sequence (the default) or JSON lines",
	    &input),
	MARO_OPT_FLAG("check", 0, "only check the input: exit 0 or 65", &check),
	MARO_OPT_OWN("max-size", 0, "BYTES", "the largest message taken (default 16 MiB)", OPT_MAX_SIZE),
	MARO_OPT_OWN("max-depth", 0, "N", "the deepest nesting taken (default 64)", OPT_MAX_DEPTH),
	MARO_OPT_STR("tag", 't', "TAG", "build messages with this tag (or, in reply, retag)",
	    &given.tag),
	MARO_OPT_STRV("data", 'd', "STR", "a text payload: one message per -d", &given.data),
	MARO_OPT_OWN("json", 0, "JSON", "the payload, as JSON", OPT_JSON),
	MARO_OPT_STRV("peer", 'p', "DEST", "the destination: one message per -p", &given.dests),
	{ .name = "name", .letter = 'n', .arg = "SOURCE", .help = "the source", .env = "MARO_NAME",
	    .bind = MARO_BIND_STR, .to = &given.source },
	MARO_OPT_OWN("task", 0, NULL, "build task requests (the default)", OPT_TASK),
	MARO_OPT_OWN("notification", 0, NULL, "build notifications", OPT_NOTIFICATION),
	MARO_OPT_STR("payloads", 0, "FILE", "reply: one payload per line of FILE, request by request",
	    &payloads_path),
	MARO_OPT_FLAG("payloads-json", 0, "reply: the lines of --payloads are JSON", &payloads_json),
	{ 0 },
};

static const struct maro_tool tool = {
	"Print, check or build messages; turn requests into replies.",
	synopsis, opts, MARO_SH(QUIET),
	MARO_TOOL_OPERANDS,
};


/* An argument that becomes a message's text must be UTF-8. */
static const char *
utf8_arg(const char *flag, const char *arg)
{
	if (!maro_utf8_valid(arg, strlen(arg)))
		maro_usage_error("the argument of %s is not valid UTF-8", flag);
	return arg;
}

/* The flags' text that goes into messages (-t, -d, -p, -n), checked as UTF-8. */
static void
utf8_args(const struct maro_build *b)
{
	size_t i;

	if (b->tag)
		utf8_arg("-t", b->tag);
	for (i = 0; i < b->data.n; i++)
		utf8_arg("-d", b->data.v[i]);
	for (i = 0; i < b->dests.n; i++)
		utf8_arg("-p", b->dests.v[i]);
	if (b->source)
		utf8_arg("-n", b->source);
}

/* Whoever reads our output went away: end quietly, as yes(1) | head does. */
static void
write_error(void)
{
	if (errno == EPIPE)
		exit(MARO_EXIT_OK);
	maro_die(MARO_EXIT_INCOMPLETE, "error writing standard output: %s", strerror(errno));
}

static void
flush(void)
{
	if (maro_writer_flush(&out) < 0)
		write_error();
}

/* Stops at a fault in the input, after writing out everything before it. */
static noreturn void bad_input(const char *where, uint64_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static noreturn void
bad_input(const char *where, uint64_t at, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (maro_writer_flush(&out) < 0 && errno != EPIPE)
		maro_warn("error writing standard output: %s", strerror(errno));
	maro_die(MARO_EXIT_DATAERR, "malformed input at %s %llu: %s", where, (unsigned long long)at,
	    why);
}

static void
emit(const uint8_t *p, size_t n, const char *where, uint64_t at)
{
	struct maro_err err;

	line.len = 0;
	/* asked for that format: what it cannot say is an error, named */
	if (maro_format_item(&line, (enum maro_format)(format | MARO_FORMAT_STRICT), p, n, &err) < 0)
		bad_input(where, at, "%s", err.msg);
	if (maro_writer_put(&out, line.p, line.len) < 0)
		write_error();
}

/* A request could not become its reply: say why, after what was written before it. */
static noreturn void
reply_failed(const struct maro_reply_err *e, const char *where, uint64_t at)
{
	if (e->fault == MARO_REPLY_NOMEM)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	flush();
	if (e->fault == MARO_REPLY_IO)
		maro_die(MARO_EXIT_INCOMPLETE, "error reading '%s': %s", payloads_path,
		    strerror(e->errnum));
	if (e->fault == MARO_REPLY_SHORT)
		maro_die(MARO_EXIT_DATAERR, "'%s' has %llu lines: no payload for request %llu",
		    payloads_path, (unsigned long long)e->line, (unsigned long long)count);
	if (e->fault == MARO_REPLY_LINE)
		maro_die(MARO_EXIT_DATAERR, "'%s' line %llu: %s", payloads_path,
		    (unsigned long long)e->line, e->msg);
	maro_die(MARO_EXIT_DATAERR, "the reply to the request at %s %llu would be refused: %s",
	    where, (unsigned long long)at, e->msg);
}

/* One item read: a message, printed (or its reply), or a fault. */
static void
message(const uint8_t *p, size_t n, const char *where, uint64_t at, int offsets)
{
	struct maro_msg m;
	struct maro_err err;
	struct maro_reply_err rerr;

	if (maro_msg_decode(&m, p, n, &err) < 0)
		bad_input(where, at + (offsets ? err.offset : 0), "%s", err.msg);
	count++;
	if (check)
		return;
	if (reply && maro_reply_make(&rp, &m, &p, &n, &rerr) < 0)
		reply_failed(&rerr, where, at);
	emit(p, n, where, at);
}

/* Every message of stdin, as a CBOR sequence or JSON lines. */
static void
read_input(enum maro_input_kind kind)
{
	struct maro_input in;
	struct maro_err err;
	const uint8_t *p;
	uint64_t at;
	size_t n;
	int rc;

	maro_input_init(&in, kind, STDIN_FILENO, &limits);
	for (;;) {
		rc = maro_input_next(&in, &p, &n, &at, &err);
		if (rc > 0) {
			message(p, n, in.where, at, kind == MARO_INPUT_CBOR);
			continue;
		}
		if (rc < 0 && errno == ENOMEM)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		if (rc < 0)
			bad_input(in.where, err.offset, "%s", err.msg);
		if (in.eof)
			break;
		/* nothing complete is buffered: write out before waiting for more */
		flush();
		if (maro_input_fill(&in) < 0) {
			if (kind == MARO_INPUT_JSON && errno == ENOMEM)
				maro_die(MARO_EXIT_SOFTWARE, "out of memory");
			maro_die(MARO_EXIT_INCOMPLETE, "error reading standard input: %s", strerror(errno));
		}
	}
	maro_input_free(&in);
}

/* Build mode: the messages the flags describe, each checked as a receiver would. */
static void
build(const struct maro_build *b)
{
	static struct maro_cbor_scan scan;
	struct maro_buf seq = { 0 };
	struct maro_msg m;
	struct maro_err err;
	char why[300];
	size_t off, len;

	if (maro_build_messages(b, &seq, why, sizeof why) < 0) {
		if (!strstr(why, "JSON"))
			maro_die(MARO_EXIT_SOFTWARE, "%s", why);
		maro_usage_error("%s", why);
	}
	for (off = 0; off < seq.len; off += len) {
		maro_cbor_scan_init(&scan, &limits);
		if (maro_cbor_scan(&scan, seq.p + off, seq.len - off, &len, &err) != MARO_SCAN_DONE)
			maro_usage_error("the message would be refused: %s", err.msg);
		if (maro_msg_decode(&m, seq.p + off, len, &err) < 0)
			maro_usage_error("the message would be refused: %s", err.msg);
		count++;
		emit(seq.p + off, len, "message", count);
	}
	maro_buf_free(&seq);
}

/* Reply mode: the payload every reply gets (-d, --json), or the file of them. */
static void
reply_setup(const struct maro_build *b)
{
	struct maro_reply_err e;
	int rc = 0;

	maro_reply_init(&rp, b->source, b->tag, &limits);
	if (b->data.n)
		rc = maro_reply_set_text(&rp, b->data.v[0], &e);
	else if (b->json)
		rc = maro_reply_set_json(&rp, b->json, &e);
	else if (payloads_path)
		rc = maro_reply_open(&rp, payloads_path, payloads_json, &e);
	if (rc == 0)
		return;
	if (e.fault == MARO_REPLY_NOMEM)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	if (e.fault == MARO_REPLY_IO)
		maro_die(MARO_EXIT_INCOMPLETE, "cannot open '%s': %s", payloads_path, strerror(e.errnum));
	if (e.fault == MARO_REPLY_REFUSED)
		maro_usage_error("the replies would be refused: %s", e.msg);
	maro_usage_error("%s", e.msg);
}

struct args {
	struct maro_build *b;
	int fmt_set, njson, type_set;
};

static void
own(void *arg, int key, char *val)
{
	struct args *a = arg;
	struct maro_build *b = a->b;
	uint64_t v;

	switch (key) {
	case 'f': format = maro_cli_format(val); a->fmt_set = 1; break;
	case OPT_JSON: b->json = val; a->njson++; break;
	case OPT_TASK: b->notification = 0; a->type_set = 1; break;
	case OPT_NOTIFICATION: b->notification = 1; a->type_set = 1; break;
	case OPT_MAX_SIZE:
		v = maro_cli_count("--max-size", val);
		if (v < 1 || v > SIZE_MAX / 16)
			maro_usage_error("--max-size must be 1 to %zu", SIZE_MAX / 16);
		limits.max_item = (size_t)v;
		break;
	case OPT_MAX_DEPTH:
		v = maro_cli_count("--max-depth", val);
		if (v < 1 || v > MARO_CBOR_MAX_DEPTH_LIMIT)
			maro_usage_error("--max-depth must be 1 to %d", MARO_CBOR_MAX_DEPTH_LIMIT);
		limits.max_depth = (unsigned)v;
		break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct maro_build *b = &given;
	struct args a = { b, 0, 0, 0 };
	const char *env;
	int quiet, fmt_set, json_in, njson, type_set;

	maro_cli_init(argv[0]);
	format = isatty(STDOUT_FILENO) ? MARO_FORMAT_JSON : MARO_FORMAT_CBOR;
	if (argc > 1 && !strcmp(argv[1], "reply")) {
		reply = 1;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	maro_common_init(&cm);
	optind = maro_opt_parse(&tool, &cm, argc, argv, own, &a);
	utf8_args(b);
	fmt_set = a.fmt_set;
	njson = a.njson;
	type_set = a.type_set;
	quiet = cm.quiet;
	/* "reply" may also come after the options */
	if (!reply && optind < argc && !strcmp(argv[optind], "reply")) {
		reply = 1;
		optind++;
	}
	if (optind < argc)
		maro_usage_error("unexpected argument '%s'", argv[optind]);
	json_in = input && !strcmp(input, "json");
	if (input && !json_in && strcmp(input, "cbor"))
		maro_usage_error("unknown input format '%s' (cbor or json)", input);
	if (b->data.n && b->json)
		maro_usage_error("-d and --json do not go together");
	if (njson > 1)
		maro_usage_error("one --json payload");
	if (!reply && !b->tag && (b->data.n || b->json || b->dests.n || b->source || type_set))
		maro_usage_error("building a message needs -t TAG");
	if (b->tag && !reply && input)
		maro_usage_error("-t builds messages and reads no input: no -i");
	if (b->tag && !reply && check)
		maro_usage_error("-t builds messages: no --check");
	if (reply && (b->dests.n || type_set))
		maro_usage_error("reply: no -p, --task or --notification (the request decides)");
	if (reply && b->data.n > 1)
		maro_usage_error("reply takes one -d");
	if (reply && payloads_path && (b->data.n || b->json))
		maro_usage_error("one payload source: -d, --json or --payloads");
	if (!reply && payloads_path)
		maro_usage_error("--payloads goes with reply");
	if (payloads_json && !payloads_path)
		maro_usage_error("--payloads-json goes with --payloads");
	if (check && reply)
		maro_usage_error("--check reads messages: no reply");
	if (check && fmt_set)
		maro_usage_error("--check prints nothing: no -f");
	if (quiet && maro_verbose)
		maro_usage_error("-q and -v do not go together");

	env = getenv("MARO_NAME");
	if ((b->tag || reply) && !b->source && env && *env)
		b->source = utf8_arg("MARO_NAME", env);
	maro_writer_init(&out, STDOUT_FILENO);
	if (b->tag && !reply) {
		build(b);
	} else {
		if (reply)
			reply_setup(b);
		if (!quiet && isatty(STDIN_FILENO))
			maro_warn("reading %s from the terminal; end with ^D",
			    json_in ? "JSON messages, one per line," : "a CBOR message stream");
		read_input(json_in ? MARO_INPUT_JSON : MARO_INPUT_CBOR);
	}
	flush();
	if (check)
		maro_info("%llu message%s ok", (unsigned long long)count, count == 1 ? "" : "s");
	else
		maro_info("%llu message%s written", (unsigned long long)count, count == 1 ? "" : "s");
	if (reply)
		maro_reply_free(&rp);
	maro_writer_free(&out);
	maro_buf_free(&line);
	maro_strv_free(&b->data);
	maro_strv_free(&b->dests);
	return MARO_EXIT_OK;
}
