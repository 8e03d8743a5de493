#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "input.h"
#include "route.h"
#include "unit.h"

/* All of s through a pipe as JSON lines: how many messages came before the end or the fault. */
static int
json_lines(const char *s, struct maro_cbor_limits *lim, int *rc, uint64_t *at, struct maro_err *err)
{
	struct maro_input in;
	const uint8_t *p;
	size_t n;
	int fd[2], got = 0;

	if (pipe(fd) < 0)
		return -1;
	if (write(fd[1], s, strlen(s)) != (ssize_t)strlen(s))
		return -1;
	close(fd[1]);
	maro_input_init(&in, MARO_INPUT_JSON, fd[0], lim);
	for (;;) {
		*rc = maro_input_next(&in, &p, &n, at, err);
		if (*rc > 0) {
			got++;
			continue;
		}
		if (*rc < 0 || in.eof || maro_input_fill(&in) < 0)
			break;
	}
	maro_input_free(&in);
	close(fd[0]);
	return got;
}

void
test_input(void)
{
	struct maro_build b = { .tag = "t" };
	struct maro_buf seq = { 0 };
	struct maro_cbor_limits lim = { 64, 0 };
	struct maro_input in;
	struct maro_err err;
	struct maro_msg m;
	char *data[2] = { "a", "b" }, errbuf[200], name[MARO_NAME_MAX + 1];
	const uint8_t *p;
	uint64_t at;
	size_t n;
	int rc;

	/* blank lines are skipped, but counted; the last line needs no newline */
	CHECK(json_lines("{\"tag\":\"a\"}\n\n \t\n{\"tag\":\"b\"}", NULL, &rc, &at, &err) == 2 && rc == 0);
	CHECK(json_lines("{\"tag\":\"a\"}\n\n[1]\n", NULL, &rc, &at, &err) == 1 && rc < 0 &&
	    errno == EBADMSG && err.offset == 3 && strstr(err.msg, "not a JSON object"));
	CHECK(json_lines("{\"a\":1,\"a\":2}\n", NULL, &rc, &at, &err) == 0 && rc < 0 && err.offset == 1 &&
	    strstr(err.msg, "invalid JSON at column"));
	/* a line too long is refused at the line it starts, before its end is read */
	memset(errbuf, 'x', sizeof errbuf - 1);
	errbuf[sizeof errbuf - 1] = '\0';
	CHECK(json_lines("{}\n{}\n", &lim, &rc, &at, &err) == 2 && at == 2);
	lim.max_item = 16;
	CHECK(json_lines(errbuf, &lim, &rc, &at, &err) == 0 && rc < 0 && err.offset == 1 &&
	    !strcmp(err.msg, "line longer than 128 bytes"));

	/* in memory: each message built, at its offset, then the end */
	b.data.v = data;
	b.data.n = 2;
	CHECK(maro_build_messages(&b, &seq, errbuf, sizeof errbuf) == 0);
	maro_input_init_mem(&in, seq.p, seq.len);
	CHECK(in.eof && maro_input_next(&in, &p, &n, &at, &err) == 1 && p == seq.p && at == 0);
	CHECK(maro_input_next(&in, &p, &n, &at, &err) == 1 && at + n == seq.len);
	CHECK(maro_input_next(&in, &p, &n, &at, &err) == 0);
	maro_input_free(&in);

	/* route: a request to its destination, anything else back to its reply_to */
	memset(&m, 0, sizeof m);
	m.type = MARO_SESSION_TASK;
	m.stage = MARO_STAGE_REQUEST;
	m.reply_to = maro_str_c("back");
	CHECK(maro_route_of(&m, name, &err) < 0 && strstr(err.msg, "no destination"));
	m.destination = maro_str_c("there");
	CHECK(maro_route_of(&m, name, &err) == 0 && !strcmp(name, "there"));
	m.stage = MARO_STAGE_COMPLETE;
	CHECK(maro_route_of(&m, name, &err) == 0 && !strcmp(name, "back"));
	m.reply_to = maro_str_c("no good");
	CHECK(maro_route_of(&m, name, &err) < 0 && !strcmp(err.msg, "invalid destination 'no good'"));
	maro_buf_free(&seq);
}
