#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"
#include "input.h"

void
maro_input_init(struct maro_input *in, enum maro_input_kind kind, int fd,
    const struct maro_cbor_limits *lim)
{
	memset(in, 0, sizeof *in);
	in->kind = kind;
	in->where = kind == MARO_INPUT_JSON ? "line" : "byte offset";
	/* the reader keeps fd and the limits for either kind */
	maro_reader_init(&in->r, fd, lim);
	if (lim)
		in->lim = *lim;
}

void
maro_input_init_mem(struct maro_input *in, const uint8_t *p, size_t n)
{
	maro_input_init(in, MARO_INPUT_MEM, -1, NULL);
	in->eof = 1;
	in->mem = p;
	in->mem_len = n;
}

void
maro_input_free(struct maro_input *in)
{
	maro_reader_free(&in->r);
	maro_buf_free(&in->in);
	maro_buf_free(&in->item);
}

/* A fault at position at; why NULL: err->msg says it already. */
static int
bad_at(struct maro_err *err, uint64_t at, const char *why)
{
	err->offset = at;
	if (why)
		snprintf(err->msg, sizeof err->msg, "%s", why);
	errno = EBADMSG;
	return -1;
}

/* One line: 1 with its message in in->item, 0 when it is blank, or -1. */
static int
json_line(struct maro_input *in, const char *s, size_t n, struct maro_err *err)
{
	json_error_t je;
	json_t *v;
	int rc;

	if (strspn(s, " \t\r") >= n)
		return 0;
	/* a repeated key is refused, as it is in a CBOR message */
	v = json_loadb(s, n, MARO_JSON_LOAD_FLAGS, &je);
	if (!v) {
		snprintf(err->msg, sizeof err->msg, "invalid JSON at column %d: %s", je.column, je.text);
		return bad_at(err, in->lineno, NULL);
	}
	if (!json_is_object(v)) {
		json_decref(v);
		return bad_at(err, in->lineno, "not a JSON object (a message is an object)");
	}
	in->item.len = 0;
	rc = maro_json_to_cbor(v, &in->item);
	json_decref(v);
	if (rc < 0 && errno == ELOOP)
		return bad_at(err, in->lineno, "nesting deeper than the limit");
	if (rc < 0) {
		errno = ENOMEM;
		return -1;
	}
	if (maro_cbor_check(in->item.p, in->item.len, &in->lim, err) < 0)
		return bad_at(err, in->lineno, NULL);
	return 1;
}

static int
json_next(struct maro_input *in, struct maro_err *err)
{
	/* JSON spends more bytes than CBOR, but not without end */
	size_t max_line = (in->lim.max_item ? in->lim.max_item : MARO_CBOR_DEFAULT_MAX_ITEM) * 8;

	for (;;) {
		uint8_t *nl = in->in.len > in->seen ?
		    memchr(in->in.p + in->seen, '\n', in->in.len - in->seen) : NULL;
		size_t end;
		int rc;

		if (!nl && !(in->eof && in->start < in->in.len))
			break;
		end = nl ? (size_t)(nl - in->in.p) : in->in.len;
		in->in.p[end] = '\0';	/* the newline, or the byte past the end fill keeps */
		in->lineno++;
		rc = json_line(in, (const char *)in->in.p + in->start, end - in->start, err);
		in->start = in->seen = nl ? end + 1 : in->in.len;
		if (rc != 0)
			return rc;
	}
	if (in->eof)
		return 0;
	in->seen = in->in.len;
	if (in->in.len - in->start > max_line) {
		snprintf(err->msg, sizeof err->msg, "line longer than %zu bytes", max_line);
		return bad_at(err, in->lineno + 1, NULL);
	}
	return 0;
}

int
maro_input_next(struct maro_input *in, const uint8_t **p, size_t *n, uint64_t *at,
    struct maro_err *err)
{
	int rc;

	switch (in->kind) {
	case MARO_INPUT_CBOR:
		rc = maro_reader_next(&in->r, p, n, at, err);
		if (rc < 0)
			errno = EBADMSG;
		in->eof = in->r.eof;
		return rc;
	case MARO_INPUT_JSON:
		rc = json_next(in, err);
		if (rc > 0) {
			*p = in->item.p;
			*n = in->item.len;
			*at = in->lineno;
		}
		return rc;
	case MARO_INPUT_MEM:
		break;
	}
	if (in->mem_at == in->mem_len)
		return 0;
	/* built by us: well-formed, and no limit of a receiver's to check */
	maro_cbor_scan_init(&in->scan, NULL);
	*n = in->mem_len - in->mem_at;
	if (maro_cbor_scan(&in->scan, in->mem + in->mem_at, *n, n, err) == MARO_SCAN_ERROR)
		return bad_at(err, in->mem_at + err->offset, NULL);
	*p = in->mem + in->mem_at;
	*at = in->mem_at;
	in->mem_at += *n;
	return 1;
}

int
maro_input_next_msg(struct maro_input *in, const uint8_t **p, size_t *n, uint64_t *at,
    struct maro_msg *m, int *decoded, struct maro_err *err)
{
	*decoded = 0;
	if (in->kind == MARO_INPUT_CBOR) {
		size_t avail;
		const uint8_t *q = maro_reader_peek(&in->r, &avail);

		/*
		 * the decode finds where the message ends: no scan before it (a
		 * tenth of a streaming sender); one that does not end within what
		 * was read, or is not a message, takes the scan below, which says
		 * why or waits for more
		 */
		if (avail && maro_msg_decode_prefix(m, q, avail, &in->r.scan.lim, n) == 0) {
			maro_reader_skip(&in->r, *n, at);
			*p = q;
			*decoded = 1;
			return 1;
		}
	}
	return maro_input_next(in, p, n, at, err);
}

ssize_t
maro_input_fill(struct maro_input *in)
{
	ssize_t n;

	if (in->kind == MARO_INPUT_CBOR) {
		n = maro_reader_fill(&in->r);
		in->eof = in->r.eof;
		return n;
	}
	if (in->eof)
		return 0;
	if (in->start > 0) {
		memmove(in->in.p, in->in.p + in->start, in->in.len - in->start);
		in->in.len -= in->start;
		in->seen -= in->start;
		in->start = 0;
	}
	if (maro_buf_reserve(&in->in, 65536) < 0)
		return -1;
	/* one byte spare: a line's end becomes its NUL */
	do
		n = read(in->r.fd, in->in.p + in->in.len, in->in.cap - in->in.len - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n == 0)
		in->eof = 1;
	in->in.len += (size_t)n;
	return n;
}
