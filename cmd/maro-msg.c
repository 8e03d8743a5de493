/*
 * maro-msg: the shell's way into and out of the message stream.  Builds
 * messages from flags or JSON lines, prints a CBOR sequence as JSON lines,
 * diagnostic notation or payloads, checks a stream, and turns requests into
 * replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maro.h"

static void
usage(void)
{
	printf("usage: %s [-f cbor|json|diag|payload] [-i cbor|json] [--check] [--max-size N]\n"
	    "          [--max-depth N] [-q] [-v] < messages\n"
	    "       %s -t TAG [-d DATA]... [--json JSON] [-p DEST]... [-n SOURCE]\n"
	    "          [--task|--notification] [-f FORMAT]\n"
	    "       %s reply [-n SOURCE] [-t TAG] [-d DATA | --json JSON | --payloads FILE\n"
	    "          [--payloads-json]] [-i cbor|json] [-f FORMAT] < requests\n"
	    "       %s -h | -V\n", maro_progname, maro_progname, maro_progname, maro_progname);
}

enum {
	OPT_JSON = 256, OPT_TASK, OPT_NOTIFICATION, OPT_CHECK, OPT_MAX_SIZE, OPT_MAX_DEPTH,
	OPT_PAYLOADS, OPT_PAYLOADS_JSON,
};

static const struct option longopts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "input", required_argument, NULL, 'i' },
	{ "tag", required_argument, NULL, 't' },
	{ "data", required_argument, NULL, 'd' },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "peer", required_argument, NULL, 'p' },
	{ "name", required_argument, NULL, 'n' },
	{ "task", no_argument, NULL, OPT_TASK },
	{ "notification", no_argument, NULL, OPT_NOTIFICATION },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "payloads", required_argument, NULL, OPT_PAYLOADS },
	{ "payloads-json", no_argument, NULL, OPT_PAYLOADS_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct msgtool {
	enum maro_format fmt;
	int json_in, check, reply;
	struct maro_cbor_limits lim;
	struct maro_writer w;
	struct maro_buf line, tmp, payload;
	/* reply mode */
	const char *source, *tag;
	int have_payload;		/* -d or --json: the same payload for every reply */
	FILE *payloads;
	int payloads_json;
	uint64_t count;
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

static void
put(struct msgtool *t, const uint8_t *p, size_t n)
{
	if (maro_writer_put(&t->w, p, n) < 0) {
		if (errno == EPIPE)
			exit(maro_cli_close_stdout(0));
		maro_die(MARO_EXIT_SOFTWARE, "error writing standard output: %s", strerror(errno));
	}
}

static noreturn void
bad_input(struct msgtool *t, const char *where, unsigned long long at, const char *why)
{
	maro_writer_flush(&t->w);
	maro_die(MARO_EXIT_DATAERR, "malformed input at %s %llu: %s", where, at, why);
}

/* The next reply payload from --payloads: one line each.  0, or -1 when it ran out. */
static int
next_payload(struct msgtool *t)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, t->payloads);
	int rc = 0;

	if (n < 0) {
		free(line);
		return -1;
	}
	if (n && line[n - 1] == '\n')
		line[--n] = '\0';
	t->payload.len = 0;
	if (t->payloads_json) {
		json_error_t je;
		json_t *v = json_loadb(line, (size_t)n, JSON_DECODE_ANY, &je);

		if (!v || maro_json_to_cbor(v, &t->payload) < 0)
			rc = -2;
		json_decref(v);
	} else if (maro_buf_cbor_text(&t->payload, line, (size_t)n) < 0) {
		rc = -2;
	}
	free(line);
	return rc;
}

/* One message read: check it, print it (or its reply). */
static void
one(struct msgtool *t, const uint8_t *p, size_t n, const char *where, unsigned long long at)
{
	struct maro_msg m;
	struct maro_err err;
	char id[MARO_UUID_LEN + 1];

	if (maro_msg_decode(&m, p, n, &err) < 0)
		bad_input(t, where, at + (t->json_in ? 0 : err.offset), err.msg);
	t->count++;
	if (t->check)
		return;
	if (t->reply) {
		maro_msg_make_reply(&m, t->source, id);
		if (t->tag)
			m.tag = maro_str_c(t->tag);
		if (t->payloads) {
			int rc = next_payload(t);

			if (rc == -1)
				bad_input(t, where, at, "more requests than lines in the payloads file");
			if (rc == -2)
				bad_input(t, where, at, "invalid JSON in the payloads file");
		}
		if (t->have_payload || t->payloads) {
			m.payload.p = t->payload.p;
			m.payload.n = t->payload.len;
		}
		t->tmp.len = 0;
		if (maro_msg_encode(&m, &t->tmp) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		p = t->tmp.p;
		n = t->tmp.len;
	}
	t->line.len = 0;
	if (maro_format_item(&t->line, t->fmt, p, n, &err) < 0)
		bad_input(t, where, at, err.msg);
	put(t, t->line.p, t->line.len);
}

static void
read_cbor(struct msgtool *t)
{
	struct maro_reader r;
	struct maro_err err;
	const uint8_t *p;
	size_t n;
	uint64_t off;
	int rc;

	maro_reader_init(&r, STDIN_FILENO, &t->lim);
	for (;;) {
		rc = maro_reader_next(&r, &p, &n, &off, &err);
		if (rc == 1) {
			one(t, p, n, "byte offset", (unsigned long long)off);
			continue;
		}
		if (rc < 0)
			bad_input(t, "byte offset", (unsigned long long)err.offset, err.msg);
		if (r.eof)
			break;
		/* nothing complete is buffered: write out before waiting for more */
		if (maro_writer_flush(&t->w) < 0 && errno != EPIPE)
			maro_die(MARO_EXIT_SOFTWARE, "error writing standard output: %s", strerror(errno));
		if (maro_reader_fill(&r) < 0)
			maro_die(MARO_EXIT_INCOMPLETE, "error reading standard input: %s", strerror(errno));
	}
	maro_reader_free(&r);
}

static void
read_json(struct msgtool *t)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long long lineno = 0;

	/* line-buffered: a line in is a message out, at once */
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		json_error_t je;
		json_t *v;

		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)n)
			continue;
		v = json_loadb(line, (size_t)n, 0, &je);
		if (!v) {
			char why[300];

			snprintf(why, sizeof why, "invalid JSON (column %d): %s", je.column, je.text);
			bad_input(t, "line", lineno, why);
		}
		if (!json_is_object(v))
			bad_input(t, "line", lineno, "not a JSON object (a message is an object)");
		t->tmp.len = 0;
		if (maro_json_to_cbor(v, &t->tmp) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		json_decref(v);
		{
			struct maro_buf item = t->tmp;

			t->tmp = (struct maro_buf){ 0 };
			one(t, item.p, item.len, "line", lineno);
			maro_buf_free(&item);
		}
		if (maro_writer_flush(&t->w) < 0 && errno != EPIPE)
			maro_die(MARO_EXIT_SOFTWARE, "error writing standard output: %s", strerror(errno));
	}
	free(line);
}

int
main(int argc, char **argv)
{
	struct msgtool t = { 0 };
	struct maro_build b = { 0 };
	const char *payloads = NULL;
	int ch, quiet = 0, fmt_set = 0;

	maro_cli_init(argv[0]);
	t.fmt = isatty(STDOUT_FILENO) ? MARO_FORMAT_JSON : MARO_FORMAT_CBOR;
	if (argc > 1 && !strcmp(argv[1], "reply")) {
		t.reply = 1;
		argv++;
		argc--;
	}
	while ((ch = getopt_long(argc, argv, "f:i:t:d:p:n:qvhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f': t.fmt = maro_cli_format(optarg); fmt_set = 1; break;
		case 'i':
			if (strcmp(optarg, "cbor") && strcmp(optarg, "json"))
				maro_usage_error("unknown input format '%s' (cbor or json)", optarg);
			t.json_in = !strcmp(optarg, "json");
			break;
		case 't': b.tag = optarg; break;
		case 'd': push(&b.data, &b.ndata, optarg); break;
		case OPT_JSON: b.json = optarg; break;
		case 'p': push(&b.dests, &b.ndests, optarg); break;
		case 'n': b.source = optarg; break;
		case OPT_TASK: b.notification = 0; break;
		case OPT_NOTIFICATION: b.notification = 1; break;
		case OPT_CHECK: t.check = 1; break;
		case OPT_MAX_SIZE: t.lim.max_item = maro_cli_count("--max-size", optarg); break;
		case OPT_MAX_DEPTH:
			t.lim.max_depth = (unsigned)maro_cli_count("--max-depth", optarg);
			if (t.lim.max_depth < 1 || t.lim.max_depth > MARO_CBOR_MAX_DEPTH_LIMIT)
				maro_usage_error("--max-depth must be 1 to %d", MARO_CBOR_MAX_DEPTH_LIMIT);
			break;
		case OPT_PAYLOADS: payloads = optarg; break;
		case OPT_PAYLOADS_JSON: t.payloads_json = 1; break;
		case 'q': quiet = 1; break;
		case 'v': maro_verbose = 1; break;
		case 'h': usage(); return 0;
		case 'V': maro_print_version(); return 0;
		default: maro_usage_error("invalid option");
		}
	}
	/* "reply" may also come after the options */
	if (!t.reply && optind < argc && !strcmp(argv[optind], "reply")) {
		t.reply = 1;
		optind++;
	}
	if (optind < argc)
		maro_usage_error("unexpected argument '%s'", argv[optind]);
	if (b.ndata && b.json)
		maro_usage_error("-d and --json do not go together");
	if (b.ndata + !!b.json + !!payloads > 1 && t.reply)
		maro_usage_error("one payload source: -d, --json or --payloads");
	if (t.reply && (b.ndests || b.notification))
		maro_usage_error("-p and --notification do not go with reply");
	if (!t.reply && payloads)
		maro_usage_error("--payloads goes with reply");
	if (t.reply && b.ndata > 1)
		maro_usage_error("reply takes one -d");
	if (!t.reply && !b.tag && (b.ndata || b.json || b.ndests || b.source))
		maro_usage_error("building a message needs -t TAG");
	if (t.check && (b.tag || t.reply))
		maro_usage_error("--check reads messages: no -t, no reply");
	(void)quiet;
	maro_writer_init(&t.w, STDOUT_FILENO);

	if (b.tag && !t.reply) {
		char err[300];

		if (!b.source && getenv("MARO_NAME") && *getenv("MARO_NAME"))
			b.source = getenv("MARO_NAME");
		if (maro_build_messages(&b, &t.tmp, err, sizeof err) < 0)
			maro_usage_error("%s", err);
		if (t.fmt == MARO_FORMAT_CBOR) {
			put(&t, t.tmp.p, t.tmp.len);
		} else {
			/* print each built message in the chosen format */
			size_t off = 0, len;
			struct maro_err e;

			while (off < t.tmp.len) {
				struct maro_cbor_scan sc;

				maro_cbor_scan_init(&sc, NULL);
				maro_cbor_scan(&sc, t.tmp.p + off, t.tmp.len - off, &len, &e);
				t.line.len = 0;
				if (maro_format_item(&t.line, t.fmt, t.tmp.p + off, len, &e) < 0)
					maro_die(MARO_EXIT_SOFTWARE, "%s", e.msg);
				put(&t, t.line.p, t.line.len);
				off += len;
			}
		}
	} else {
		if (t.reply) {
			t.source = b.source ? b.source : getenv("MARO_NAME");
			if (t.source && !*t.source)
				t.source = NULL;
			t.tag = b.tag;
			if (b.ndata) {
				maro_buf_cbor_text(&t.payload, b.data[0], strlen(b.data[0]));
				t.have_payload = 1;
			} else if (b.json) {
				json_error_t je;
				json_t *v = json_loads(b.json, JSON_DECODE_ANY, &je);

				if (!v)
					maro_usage_error("invalid JSON payload (line %d, column %d): %s", je.line,
					    je.column, je.text);
				maro_json_to_cbor(v, &t.payload);
				json_decref(v);
				t.have_payload = 1;
			} else if (payloads) {
				t.payloads = fopen(payloads, "r");
				if (!t.payloads)
					maro_die(MARO_EXIT_USAGE, "cannot open '%s': %s", payloads, strerror(errno));
			}
		}
		if (!fmt_set && t.check)
			t.fmt = MARO_FORMAT_CBOR;
		if (t.json_in)
			read_json(&t);
		else
			read_cbor(&t);
		if (t.check)
			maro_info("%llu message%s ok", (unsigned long long)t.count, t.count == 1 ? "" : "s");
	}
	if (maro_writer_flush(&t.w) < 0 && errno != EPIPE)
		maro_die(MARO_EXIT_SOFTWARE, "error writing standard output: %s", strerror(errno));
	if (t.payloads)
		fclose(t.payloads);
	maro_writer_free(&t.w);
	maro_buf_free(&t.line);
	maro_buf_free(&t.tmp);
	maro_buf_free(&t.payload);
	free(b.data);
	free(b.dests);
	return 0;
}
