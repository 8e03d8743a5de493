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

enum {
	OPT_JSON = 256, OPT_TASK, OPT_NOTIFICATION, OPT_CHECK, OPT_MAX_SIZE, OPT_MAX_DEPTH,
	OPT_PAYLOADS, OPT_PAYLOADS_JSON,
};

static const char *const synopsis[] = {
	"< messages",
	"-t TAG [-d STR]... [--json JSON] [-p DEST]... [-n SOURCE]",
	" [--task | --notification] [-f FORMAT]",
	"reply [-n SOURCE] [-t TAG] [-d STR | --json JSON | --payloads FILE",
	" [--payloads-json]] [-i cbor|json] [-f FORMAT] [-q] [-v] < requests",
	NULL,
};

static const struct maro_opt opts[] = {
	{ "format", 'f', "FORMAT", "write cbor, json, diag or payload (default: json on a terminal, "
	    "else cbor)", NULL, 'f', 0, 0 },
	{ "input", 'i', "cbor|json", "read a CBOR sequence (the default) or JSON lines", NULL, 'i', 0, 0 },
	{ "check", 0, NULL, "only check the input: exit 0 or 65", NULL, OPT_CHECK, 0, 0 },
	{ "max-size", 0, "BYTES", "the largest message taken (default 16 MiB)", NULL, OPT_MAX_SIZE, 0, 0 },
	{ "max-depth", 0, "N", "the deepest nesting taken (default 64)", NULL, OPT_MAX_DEPTH, 0, 0 },
	{ "tag", 't', "TAG", "build messages with this tag (or, in reply, retag)", NULL, 't', 0, 0 },
	{ "data", 'd', "STR", "a payload: one message per -d", NULL, 'd', MARO_OPT_REPEAT, 0 },
	{ "json", 0, "JSON", "the payload, as JSON", NULL, OPT_JSON, 0, 0 },
	{ "peer", 'p', "DEST", "the destination: one message per -p", NULL, 'p', MARO_OPT_REPEAT, 0 },
	{ "name", 'n', "SOURCE", "the source", "MARO_NAME", 'n', 0, 0 },
	{ "task", 0, NULL, "build task requests (the default)", NULL, OPT_TASK, 0, 0 },
	{ "notification", 0, NULL, "build notifications", NULL, OPT_NOTIFICATION, 0, 0 },
	{ "payloads", 0, "FILE", "reply: one payload per line of FILE, request by request", NULL,
	    OPT_PAYLOADS, 0, 0 },
	{ "payloads-json", 0, NULL, "reply: the lines of --payloads are JSON", NULL,
	    OPT_PAYLOADS_JSON, 0, 0 },
	{ 0 },
};

static const struct maro_tool tool = {
	"Print, check or build messages; turn requests into replies.",
	synopsis, opts, MARO_SH(QUIET),
	MARO_TOOL_OPERANDS,
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
static const char *reply_source, *reply_tag;
static struct maro_buf reply_payload;	/* -d or --json: the same for every reply */
static struct maro_buf reply_item;
static int have_reply_payload;
static FILE *payloads;			/* --payloads: one line per reply */
static const char *payloads_path;
static int payloads_json;
static uint64_t payloads_lineno;
static char *payloads_line;
static size_t payloads_cap;

/* An argument that becomes a message's text must be UTF-8. */
static const char *
utf8_arg(const char *flag, const char *arg)
{
	if (!maro_utf8_valid(arg, strlen(arg)))
		maro_usage_error("the argument of %s is not valid UTF-8", flag);
	return arg;
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

/* The payload of the next reply: the next line of --payloads. */
static void
next_payload(void)
{
	char *buf;
	ssize_t n;

	errno = 0;
	n = getline(&payloads_line, &payloads_cap, payloads);
	buf = payloads_line;
	if (n < 0) {
		flush();
		if (ferror(payloads))
			maro_die(MARO_EXIT_INCOMPLETE, "error reading '%s': %s", payloads_path,
			    strerror(errno));
		maro_die(MARO_EXIT_DATAERR, "'%s' has %llu lines: no payload for request %llu",
		    payloads_path, (unsigned long long)payloads_lineno, (unsigned long long)count);
	}
	payloads_lineno++;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	reply_payload.len = 0;
	if (payloads_json) {
		json_error_t je;
		json_t *v = json_loadb(buf, (size_t)n, MARO_JSON_LOAD_FLAGS, &je);

		if (!v) {
			flush();
			maro_die(MARO_EXIT_DATAERR, "'%s' line %llu: invalid JSON at column %d: %s",
			    payloads_path, (unsigned long long)payloads_lineno, je.column, je.text);
		}
		if (maro_json_to_cbor(v, &reply_payload) < 0) {
			json_decref(v);
			flush();
			maro_die(MARO_EXIT_DATAERR, "'%s' line %llu: %s", payloads_path,
			    (unsigned long long)payloads_lineno,
			    errno == ELOOP ? "nesting deeper than the limit" : strerror(errno));
		}
		json_decref(v);
	} else {
		if (!maro_utf8_valid(buf, (size_t)n)) {
			flush();
			maro_die(MARO_EXIT_DATAERR, "'%s' line %llu: not valid UTF-8", payloads_path,
			    (unsigned long long)payloads_lineno);
		}
		if (maro_buf_cbor_text(&reply_payload, buf, (size_t)n) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	}
}

/* A request becomes its reply in buf: the envelope from maro_msg_make_reply. */
static void
make_reply(struct maro_msg *m, struct maro_buf *buf, const char *where, uint64_t at)
{
	char id[MARO_UUID_LEN + 1];
	struct maro_err err;

	maro_msg_make_reply(m, reply_source, id);
	if (reply_tag)
		m->tag = maro_str_c(reply_tag);
	if (payloads)
		next_payload();
	if (have_reply_payload || payloads) {
		m->payload.p = reply_payload.p;
		m->payload.n = reply_payload.len;
	}
	buf->len = 0;
	if (maro_msg_encode(m, buf) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	/* a new payload may make it more than a receiver takes */
	if (maro_cbor_check(buf->p, buf->len, &limits, &err) < 0) {
		flush();
		maro_die(MARO_EXIT_DATAERR, "the reply to the request at %s %llu would be refused: %s",
		    where, (unsigned long long)at, err.msg);
	}
}

/* One item read: a message, printed (or its reply), or a fault. */
static void
message(const uint8_t *p, size_t n, const char *where, uint64_t at, int offsets)
{
	struct maro_msg m;
	struct maro_err err;

	if (maro_msg_decode(&m, p, n, &err) < 0)
		bad_input(where, at + (offsets ? err.offset : 0), "%s", err.msg);
	count++;
	if (check)
		return;
	if (reply) {
		make_reply(&m, &reply_item, where, at);
		p = reply_item.p;
		n = reply_item.len;
	}
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

/* A payload for every reply: refused at once if a message holding it would be. */
static void
check_reply_payload(void)
{
	struct maro_msg m = { .tag = { "", 0 } };
	struct maro_buf msg = { 0 };
	struct maro_err err;

	m.payload.p = reply_payload.p;
	m.payload.n = reply_payload.len;
	if (maro_msg_encode(&m, &msg) < 0)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	if (maro_cbor_check(msg.p, msg.len, &limits, &err) < 0)
		maro_usage_error("the replies would be refused: %s", err.msg);
	maro_buf_free(&msg);
	have_reply_payload = 1;
}

/* Reply mode: the payload every reply gets (-d, --json), or the file of them. */
static void
reply_setup(const struct maro_build *b, const char *payloads_file)
{
	if (b->ndata) {
		if (maro_buf_cbor_text(&reply_payload, b->data[0], strlen(b->data[0])) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		check_reply_payload();
	} else if (b->json) {
		json_error_t je;
		json_t *v = json_loads(b->json, MARO_JSON_LOAD_FLAGS, &je);

		if (!v)
			maro_usage_error("invalid JSON payload (line %d, column %d): %s", je.line,
			    je.column, je.text);
		if (maro_json_to_cbor(v, &reply_payload) < 0)
			maro_usage_error("cannot encode the JSON payload: %s",
			    errno == ELOOP ? "nesting deeper than the limit" : strerror(errno));
		json_decref(v);
		check_reply_payload();
	} else if (payloads_file) {
		payloads_path = payloads_file;
		payloads = fopen(payloads_file, "r");
		if (!payloads)
			maro_die(MARO_EXIT_INCOMPLETE, "cannot open '%s': %s", payloads_file,
			    strerror(errno));
	}
}

struct args {
	struct maro_build *b;
	const char *payloads_file, *input;
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
	case 'i': a->input = val; break;
	case 't': b->tag = utf8_arg("-t", val); break;
	case 'd': maro_strv_push(&b->data, &b->ndata, (char *)utf8_arg("-d", val)); break;
	case OPT_JSON: b->json = val; a->njson++; break;
	case 'p': maro_strv_push(&b->dests, &b->ndests, (char *)utf8_arg("-p", val)); break;
	case 'n': b->source = utf8_arg("-n", val); break;
	case OPT_TASK: b->notification = 0; a->type_set = 1; break;
	case OPT_NOTIFICATION: b->notification = 1; a->type_set = 1; break;
	case OPT_CHECK: check = 1; break;
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
	case OPT_PAYLOADS: a->payloads_file = val; break;
	case OPT_PAYLOADS_JSON: payloads_json = 1; break;
	}
}

int
main(int argc, char **argv)
{
	struct maro_common cm;
	struct maro_build b = { 0 };
	struct args a = { &b, NULL, NULL, 0, 0, 0 };
	const char *payloads_file, *input, *env;
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
	payloads_file = a.payloads_file;
	input = a.input;
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
	if (b.ndata && b.json)
		maro_usage_error("-d and --json do not go together");
	if (njson > 1)
		maro_usage_error("one --json payload");
	if (!reply && !b.tag && (b.ndata || b.json || b.ndests || b.source || type_set))
		maro_usage_error("building a message needs -t TAG");
	if (b.tag && !reply && input)
		maro_usage_error("-t builds messages and reads no input: no -i");
	if (b.tag && !reply && check)
		maro_usage_error("-t builds messages: no --check");
	if (reply && (b.ndests || type_set))
		maro_usage_error("reply: no -p, --task or --notification (the request decides)");
	if (reply && b.ndata > 1)
		maro_usage_error("reply takes one -d");
	if (reply && payloads_file && (b.ndata || b.json))
		maro_usage_error("one payload source: -d, --json or --payloads");
	if (!reply && payloads_file)
		maro_usage_error("--payloads goes with reply");
	if (payloads_json && !payloads_file)
		maro_usage_error("--payloads-json goes with --payloads");
	if (check && reply)
		maro_usage_error("--check reads messages: no reply");
	if (check && fmt_set)
		maro_usage_error("--check prints nothing: no -f");
	if (quiet && maro_verbose)
		maro_usage_error("-q and -v do not go together");

	env = getenv("MARO_NAME");
	if ((b.tag || reply) && !b.source && env && *env)
		b.source = utf8_arg("MARO_NAME", env);
	maro_writer_init(&out, STDOUT_FILENO);
	if (b.tag && !reply) {
		build(&b);
	} else {
		if (reply) {
			reply_source = b.source;
			reply_tag = b.tag;
			reply_setup(&b, payloads_file);
		}
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
	if (payloads)
		fclose(payloads);
	maro_writer_free(&out);
	maro_buf_free(&line);
	maro_buf_free(&reply_item);
	maro_buf_free(&reply_payload);
	free(payloads_line);
	free(b.data);
	free(b.dests);
	return MARO_EXIT_OK;
}
