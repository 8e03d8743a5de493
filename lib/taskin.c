#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "convert.h"
#include "taskin.h"
#include "workq.h"

int
maro_taskin_next(struct maro_taskin *in, struct maro_reader *r, const uint8_t **p, size_t *n,
    uint64_t *off, struct maro_err *err)
{
	const uint8_t *nl;

	if (!in->tag) {
		int rc = maro_reader_next(r, p, n, off, err);

		in->seq += rc > 0;
		return rc;
	}
	for (;;) {
		size_t avail = r->buf.len - r->start;

		if (!avail)
			return 0;
		nl = memchr(r->buf.p + r->start, '\n', avail);
		if (!nl && !r->eof)
			return 0;
		*p = r->buf.p + r->start;
		*n = nl ? (size_t)(nl - *p) : avail;
		*off = r->base + r->start;
		r->start += *n + (nl != NULL);
		in->lineno++;
		in->seq = in->lineno;
		if (*n)
			return 1;
	}
}

/* The payload of a line: a JSON value, or the line as a text string.  0, or -1 (EINVAL with err). */
static int
line_payload(const struct maro_taskin *in, const uint8_t *p, size_t n, struct maro_buf *payload,
    struct maro_err *err)
{
	json_error_t je;
	json_t *v;
	int rc;

	if (!in->json_lines) {
		if (maro_buf_cbor_text(payload, (const char *)p, n) == 0)
			return 0;
		if (errno == EILSEQ) {
			snprintf(err->msg, sizeof err->msg, "not valid UTF-8 text");
			errno = EINVAL;
		}
		return -1;
	}
	v = json_loadb((const char *)p, n, MARO_JSON_LOAD_FLAGS, &je);
	if (!v) {
		snprintf(err->msg, sizeof err->msg, "invalid JSON: %s", je.text);
		errno = EINVAL;
		return -1;
	}
	rc = maro_json_to_cbor(v, payload);
	json_decref(v);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

int
maro_taskin_make(struct maro_taskin *in, const uint8_t *p, size_t n, struct maro_err *err)
{
	struct maro_buf payload = { 0 };
	struct maro_msg m;
	char ids[2][MARO_UUID_LEN + 1];
	int rc = -1, err_keep;

	err->offset = 0;
	if (in->tag) {
		memset(&m, 0, sizeof m);
		m.tag = maro_str_c(in->tag);
		if (line_payload(in, p, n, &payload, err) < 0)
			goto out;
		m.payload.p = payload.p;
		m.payload.n = payload.len;
	} else if (maro_msg_decode(&m, p, n, err) < 0) {
		errno = EINVAL;
		goto out;
	}
	errno = EINVAL;
	if (in->need_dest && !m.destination.p) {
		snprintf(err->msg, sizeof err->msg, "message has no destination (or use -P PREFIX)");
		goto out;
	}
	maro_msg_fill(&m, in->source, ids);
	if (m.session_id.n > MARO_WORKQ_SESSION_MAX) {
		snprintf(err->msg, sizeof err->msg, "session_id longer than %d bytes",
		    MARO_WORKQ_SESSION_MAX);
		goto out;
	}
	m.type = MARO_SESSION_TASK;
	m.stage = MARO_STAGE_REQUEST;
	m.reply_to = maro_str_c(in->reply_to);
	in->req.len = 0;
	if (maro_msg_encode_dest(&m, &in->req, &in->dest) < 0) {
		errno = ENOMEM;
		goto out;
	}
	rc = 0;
out:
	err_keep = errno;
	maro_buf_free(&payload);
	errno = err_keep;
	return rc;
}

/* Is the extra pair at p (a key and its value) the key "failed"? */
static int
is_failed_key(const struct maro_span *x)
{
	static const uint8_t key[] = { 0x66, 'f', 'a', 'i', 'l', 'e', 'd' };

	return x->n > sizeof key && !memcmp(x->p, key, sizeof key);
}

int
maro_taskin_unsent(const uint8_t *req, size_t n, const struct maro_buf *note,
    struct maro_buf *out, struct maro_err *err)
{
	struct maro_msg m;
	size_t i, k = 0;

	if (maro_msg_decode(&m, req, n, err) < 0)
		return -1;
	m.message_id = (struct maro_str){ 0 };
	m.reply_to = (struct maro_str){ 0 };
	/* a task that failed before (fed again from --failed) says only its last failure */
	for (i = 0; note && i < m.nextra; i++)
		if (!is_failed_key(&m.extra[i]))
			m.extra[k++] = m.extra[i];
	if (note) {
		if (k == MARO_MSG_MAX_EXTRA) {
			snprintf(err->msg, sizeof err->msg, "more than %d unknown keys", MARO_MSG_MAX_EXTRA);
			errno = EINVAL;
			return -1;
		}
		m.extra[k++] = (struct maro_span){ note->p, note->len };
		m.nextra = k;
	}
	if (maro_msg_encode(&m, out) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

struct maro_str
maro_taskin_session(const struct maro_taskin *in)
{
	return (struct maro_str){ (const char *)in->req.p + in->dest.sid, in->dest.sid_n };
}

void
maro_taskin_free(struct maro_taskin *in)
{
	maro_buf_free(&in->req);
}
