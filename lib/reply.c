#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "reply.h"
#include "utf8.h"

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

#define ERROR_KEY "\x65" MARO_REPLY_ERROR_KEY

int
maro_reply_failure(struct maro_msg *m, const char *src, char id[MARO_UUID_LEN + 1],
    const char *error, const char *text, struct maro_buf *buf)
{
	size_t i, k, t, tn = strlen(text), en = strlen(error);

	buf->len = 0;
	/* the key and its value, then the payload: one buffer, not moved after */
	if (maro_buf_reserve(buf, sizeof ERROR_KEY + en + tn + 18) < 0 ||
	    maro_buf_append(buf, ERROR_KEY, sizeof ERROR_KEY - 1) < 0 ||
	    maro_buf_cbor_text(buf, error, en) < 0)
		return -1;
	t = buf->len;
	if (maro_buf_cbor_text(buf, text, tn) < 0)
		return -1;
	maro_msg_make_reply(m, src, id);
	m->payload.p = buf->p + t;
	m->payload.n = buf->len - t;
	/* an "error" the request had goes: the reply's is ours */
	for (i = k = 0; i < m->nextra; i++)
		if (m->extra[i].n < sizeof ERROR_KEY - 1 || memcmp(m->extra[i].p, ERROR_KEY, sizeof ERROR_KEY - 1))
			m->extra[k++] = m->extra[i];
	m->nextra = k;
	if (m->nextra == MARO_MSG_MAX_EXTRA) {
		errno = EINVAL;
		return -1;
	}
	m->extra[m->nextra++] = (struct maro_span){ buf->p, t };
	return 0;
}

/* A definite text item of up to 65535 bytes at p[0..n): its bytes, else 0. */
static int
short_text(const uint8_t *p, size_t n, struct maro_str *out)
{
	size_t head, len;

	if (!p || n < 1 || (p[0] & 0xe0) != 0x60)
		return 0;
	len = p[0] & 0x1f;
	head = 1;
	if (len == 24 && n >= 2) {
		len = p[1];
		head = 2;
	} else if (len == 25 && n >= 3) {
		len = (size_t)p[1] << 8 | p[2];
		head = 3;
	} else if (len >= 24) {
		return 0;
	}
	if (head + len != n)
		return 0;
	*out = (struct maro_str){ (const char *)p + head, len };
	return 1;
}

int
maro_reply_error(const struct maro_msg *m, struct maro_str *error, struct maro_str *text)
{
	size_t i, n = sizeof ERROR_KEY - 1;

	if (m->stage != MARO_STAGE_COMPLETE)
		return 0;
	for (i = 0; i < m->nextra; i++) {
		if (m->extra[i].n < n || memcmp(m->extra[i].p, ERROR_KEY, n))
			continue;
		if (!short_text(m->extra[i].p + n, m->extra[i].n - n, error))
			*error = maro_str_c("failed");
		if (!short_text(m->payload.p, m->payload.n, text))
			*text = *error;
		return 1;
	}
	return 0;
}

int
maro_reply_failure_say(const struct maro_msg *m, char *out, size_t len)
{
	struct maro_str error, text;
	const char *src = m->source.p ? m->source.p : "";
	int srcn = (int)m->source.n, k;

	if (!maro_reply_error(m, &error, &text))
		return 0;
	if (maro_str_eq(error, MARO_REPLY_NO_HANDLER)) {
		snprintf(out, len, "'%.*s' has no handler for tag '%.*s'", srcn, src, (int)m->tag.n, m->tag.p);
		return 2;
	}
	k = snprintf(out, len, "'%.*s' failed the task in session %.*s: ", srcn, src,
	    (int)m->session_id.n, m->session_id.p ? m->session_id.p : "");
	if (k >= 0 && (size_t)k < len)
		maro_reply_escape(text, out + k, len - (size_t)k);
	return 1;
}

int
maro_reply_error_final(struct maro_str error)
{
	return maro_str_eq(error, MARO_REPLY_NO_HANDLER) || maro_str_eq(error, MARO_REPLY_NOT_JSON);
}

void
maro_reply_escape(struct maro_str s, char *out, size_t len)
{
	const uint8_t *p = (const uint8_t *)s.p;
	size_t i, k = 0, cap = s.n * 4 + 1, from;
	char *all;

	if (!len)
		return;
	if (!(all = malloc(cap))) {
		*out = '\0';
		return;
	}
	for (i = 0; i < s.n; i++) {
		if (p[i] == '\n' || p[i] == '\t') {
			all[k++] = '\\';
			all[k++] = p[i] == '\n' ? 'n' : 't';
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			k += (size_t)snprintf(all + k, cap - k, "\\x%02x", p[i]);
		} else if (p[i] == 0xc2 && i + 1 < s.n && p[i + 1] >= 0x80 && p[i + 1] < 0xa0) {
			/* a C1 control, as UTF-8: some terminals act on it */
			k += (size_t)snprintf(all + k, cap - k, "\\x%02x", p[++i]);
		} else {
			all[k++] = (char)p[i];
		}
	}
	all[k] = '\0';
	/* too long: its end, which says most (the last lines of a stderr), after "..." */
	if (k >= len && len > 4) {
		from = k - (len - 4);
		while (from < k && ((uint8_t)all[from] & 0xc0) == 0x80)
			from++;
		snprintf(out, len, "...%s", all + from);
	} else {
		snprintf(out, len, "%s", all);
	}
	free(all);
}
