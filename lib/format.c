#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "format.h"
#include "message.h"

static int
json_line(struct maro_buf *out, const uint8_t *p, size_t n, struct maro_err *err)
{
	json_t *j = maro_cbor_to_json(p, n, err);
	char *s;
	int rc = -1;

	if (!j)
		return -1;
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	if (!s) {
		snprintf(err->msg, sizeof err->msg, "cannot print as JSON");
		goto out;
	}
	rc = maro_buf_puts(out, s) < 0 || maro_buf_append(out, "\n", 1) < 0 ? -1 : 0;
	free(s);
out:
	json_decref(j);
	return rc;
}

/*
 * Appends the bytes of the well-formed text string (n bytes at p, as the
 * scanner passed it): after its head, or its chunks' up to the break.
 */
static int
text_bytes(struct maro_buf *out, const uint8_t *p, size_t n)
{
	size_t pos, h;
	unsigned major;
	uint64_t len = 0;

	h = maro_cbor_head(p, n, &major, &len);
	if (len != UINT64_MAX)
		return maro_buf_append(out, p + h, (size_t)len);
	for (pos = h; pos < n && p[pos] != 0xff; pos += h + (size_t)len) {
		if (!(h = maro_cbor_head(p + pos, n - pos, &major, &len)))
			break;	/* cannot be: the scanner checked every chunk */
		if (maro_buf_append(out, p + pos + h, (size_t)len) < 0)
			return -1;
	}
	return 0;
}

/*
 * What the human formats cannot say (a value libcbor 0.8 cannot decode, a
 * text that is not UTF-8, nesting past the limit): the item's own bytes,
 * whole, as the JSON line {"cbor":"BASE64URL"} (maro(7)), so that a
 * receiver prints and acknowledges every message it was given.
 */
static int
fallback_line(struct maro_buf *out, size_t at, const uint8_t *p, size_t n)
{
	out->len = at;
	if (maro_buf_puts(out, "{\"cbor\":\"") < 0 || maro_base64url(p, n, out) < 0 ||
	    maro_buf_puts(out, "\"}\n") < 0)
		return -1;
	return 0;
}

int
maro_format_msg(struct maro_buf *out, enum maro_format f, const struct maro_msg *m,
    const uint8_t *p, size_t n, struct maro_err *err)
{
	size_t at = out->len;
	int strict = (int)f & MARO_FORMAT_STRICT;

	err->offset = 0;
	err->msg[0] = '\0';
	switch ((enum maro_format)((int)f & ~MARO_FORMAT_STRICT)) {
	case MARO_FORMAT_CBOR:
		return maro_buf_append(out, p, n);
	case MARO_FORMAT_JSON:
		if (json_line(out, p, n, err) < 0)
			return strict ? -1 : fallback_line(out, at, p, n);
		return 0;
	case MARO_FORMAT_DIAG:
		if (maro_cbor_to_diag(p, n, out, err) < 0)
			return strict ? -1 : fallback_line(out, at, p, n);
		return maro_buf_append(out, "\n", 1);
	case MARO_FORMAT_PAYLOAD:
		if (!m->payload.p)
			return maro_buf_append(out, "\n", 1);
		if ((m->payload.p[0] >> 5) == 3) {
			/* text: its bytes as they are, the chunks of an indefinite one joined */
			if (text_bytes(out, m->payload.p, m->payload.n) < 0)
				return -1;
			return maro_buf_append(out, "\n", 1);
		}
		if (json_line(out, m->payload.p, m->payload.n, err) < 0)
			return strict ? -1 : fallback_line(out, at, m->payload.p, m->payload.n);
		return 0;
	case MARO_FORMAT_STRICT:
		break;
	}
	return -1;
}

int
maro_format_item(struct maro_buf *out, enum maro_format f, const uint8_t *p, size_t n,
    struct maro_err *err)
{
	struct maro_msg m;

	int payload = ((int)f & ~MARO_FORMAT_STRICT) == MARO_FORMAT_PAYLOAD;

	/* only the payload format needs the message's fields */
	if (payload && maro_msg_decode(&m, p, n, err) < 0)
		return -1;
	return maro_format_msg(out, f, payload ? &m : NULL, p, n, err);
}
