#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "reply.h"

void
maro_reply_init(struct maro_reply *rp, const char *source, const char *tag,
    const struct maro_cbor_limits *lim)
{
	memset(rp, 0, sizeof *rp);
	rp->source = source;
	rp->tag = tag;
	if (lim)
		rp->limits = *lim;
}

void
maro_reply_free(struct maro_reply *rp)
{
	if (rp->file)
		fclose(rp->file);
	maro_buf_free(&rp->payload);
	maro_buf_free(&rp->msg);
	free(rp->line);
}

static int
fail(struct maro_reply_err *e, enum maro_reply_fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(struct maro_reply_err *e, enum maro_reply_fault fault, const char *fmt, ...)
{
	va_list ap;

	e->fault = fault;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A payload for every reply: refused at once if a message holding it would be. */
static int
check_fixed(struct maro_reply *rp, struct maro_reply_err *e)
{
	struct maro_msg m = { .tag = { "", 0 } };
	struct maro_buf msg = { 0 };
	struct maro_err err;
	int rc = 0;

	m.payload.p = rp->payload.p;
	m.payload.n = rp->payload.len;
	if (maro_msg_encode(&m, &msg) < 0)
		rc = fail(e, MARO_REPLY_NOMEM, NULL);
	else if (maro_cbor_check(msg.p, msg.len, &rp->limits, &err) < 0)
		rc = fail(e, MARO_REPLY_REFUSED, "%s", err.msg);
	maro_buf_free(&msg);
	rp->fixed = rc == 0;
	return rc;
}

int
maro_reply_set_text(struct maro_reply *rp, const char *text, struct maro_reply_err *e)
{
	rp->payload.len = 0;
	if (maro_buf_cbor_text(&rp->payload, text, strlen(text)) < 0)
		return fail(e, MARO_REPLY_NOMEM, NULL);
	return check_fixed(rp, e);
}

int
maro_reply_set_json(struct maro_reply *rp, const char *json, struct maro_reply_err *e)
{
	json_error_t je;
	json_t *v = json_loads(json, MARO_JSON_LOAD_FLAGS, &je);
	int rc;

	if (!v)
		return fail(e, MARO_REPLY_PAYLOAD, "invalid JSON payload (line %d, column %d): %s",
		    je.line, je.column, je.text);
	rp->payload.len = 0;
	rc = maro_json_to_cbor(v, &rp->payload);
	json_decref(v);
	if (rc < 0)
		return fail(e, MARO_REPLY_PAYLOAD, "cannot encode the JSON payload: %s",
		    errno == ELOOP ? "nesting deeper than the limit" : strerror(errno));
	return check_fixed(rp, e);
}

int
maro_reply_open(struct maro_reply *rp, const char *path, int json, struct maro_reply_err *e)
{
	rp->file = fopen(path, "r");
	if (!rp->file) {
		e->errnum = errno;
		return fail(e, MARO_REPLY_IO, NULL);
	}
	rp->json = json;
	return 0;
}

/* The payload of the next reply: the next line of the file. */
static int
next_payload(struct maro_reply *rp, struct maro_reply_err *e)
{
	char *buf;
	ssize_t n;

	errno = 0;
	n = getline(&rp->line, &rp->cap, rp->file);
	buf = rp->line;
	e->line = rp->lineno;
	if (n < 0 && ferror(rp->file)) {
		e->errnum = errno;
		return fail(e, MARO_REPLY_IO, NULL);
	}
	if (n < 0)
		return fail(e, MARO_REPLY_SHORT, NULL);
	e->line = ++rp->lineno;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	rp->payload.len = 0;
	if (rp->json) {
		json_error_t je;
		json_t *v = json_loadb(buf, (size_t)n, MARO_JSON_LOAD_FLAGS, &je);
		int rc;

		if (!v)
			return fail(e, MARO_REPLY_LINE, "invalid JSON at column %d: %s", je.column, je.text);
		rc = maro_json_to_cbor(v, &rp->payload);
		json_decref(v);
		if (rc < 0)
			return fail(e, MARO_REPLY_LINE, "%s",
			    errno == ELOOP ? "nesting deeper than the limit" : strerror(errno));
		return 0;
	}
	if (!maro_utf8_valid(buf, (size_t)n))
		return fail(e, MARO_REPLY_LINE, "not valid UTF-8");
	if (maro_buf_cbor_text(&rp->payload, buf, (size_t)n) < 0)
		return fail(e, MARO_REPLY_NOMEM, NULL);
	return 0;
}

int
maro_reply_make(struct maro_reply *rp, struct maro_msg *m, const uint8_t **p, size_t *n,
    struct maro_reply_err *e)
{
	struct maro_err err;

	maro_msg_make_reply(m, rp->source, rp->id);
	if (rp->tag)
		m->tag = maro_str_c(rp->tag);
	if (rp->file && next_payload(rp, e) < 0)
		return -1;
	if (rp->fixed || rp->file) {
		m->payload.p = rp->payload.p;
		m->payload.n = rp->payload.len;
	}
	rp->msg.len = 0;
	if (maro_msg_encode(m, &rp->msg) < 0)
		return fail(e, MARO_REPLY_NOMEM, NULL);
	/* a new payload may make it more than a receiver takes */
	if (maro_cbor_check(rp->msg.p, rp->msg.len, &rp->limits, &err) < 0)
		return fail(e, MARO_REPLY_REFUSED, "%s", err.msg);
	*p = rp->msg.p;
	*n = rp->msg.len;
	return 0;
}
