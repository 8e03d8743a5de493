#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "convert.h"

static int
fail(struct maro_err *err, const char *msg)
{
	err->offset = 0;
	snprintf(err->msg, sizeof err->msg, "%s", msg);
	return -1;
}

/* The bytes of a byte or text string, chunks joined.  Appended to out. */
static int
string_bytes(const cbor_item_t *it, struct maro_buf *out)
{
	int text = cbor_isa_string(it);
	size_t i, n;
	cbor_item_t **chunks;

	if (text ? cbor_string_is_definite(it) : cbor_bytestring_is_definite(it))
		return maro_buf_append(out, text ? cbor_string_handle(it) : cbor_bytestring_handle(it),
		    text ? cbor_string_length(it) : cbor_bytestring_length(it));
	chunks = text ? cbor_string_chunks_handle(it) : cbor_bytestring_chunks_handle(it);
	n = text ? cbor_string_chunk_count(it) : cbor_bytestring_chunk_count(it);
	for (i = 0; i < n; i++)
		if (string_bytes(chunks[i], out) < 0)
			return -1;
	return 0;
}

static int
base64url(const uint8_t *p, size_t n, struct maro_buf *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		char q[4] = { tab[p[i] >> 2], tab[(p[i] & 3) << 4 | p[i + 1] >> 4],
			tab[(p[i + 1] & 15) << 2 | p[i + 2] >> 6], tab[p[i + 2] & 63] };
		if (maro_buf_append(out, q, 4) < 0)
			return -1;
	}
	if (n - i == 1) {
		char q[2] = { tab[p[i] >> 2], tab[(p[i] & 3) << 4] };
		return maro_buf_append(out, q, 2);
	}
	if (n - i == 2) {
		char q[3] = { tab[p[i] >> 2], tab[(p[i] & 3) << 4 | p[i + 1] >> 4], tab[(p[i + 1] & 15) << 2] };
		return maro_buf_append(out, q, 3);
	}
	return 0;
}

static int diag(const cbor_item_t *it, struct maro_buf *out);

static json_t *
to_json(const cbor_item_t *it, struct maro_err *err)
{
	struct maro_buf b = { 0 };
	json_t *v = NULL;
	size_t i;

	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT: {
		uint64_t u = cbor_get_int(it);

		return u <= INT64_MAX ? json_integer((json_int_t)u) : json_real((double)u);
	}
	case CBOR_TYPE_NEGINT: {
		uint64_t u = cbor_get_int(it);

		return u <= INT64_MAX ? json_integer(-1 - (json_int_t)u) : json_real(-1.0 - (double)u);
	}
	case CBOR_TYPE_BYTESTRING:
		if (string_bytes(it, &b) < 0)
			break;
		{
			struct maro_buf e = { 0 };

			if (base64url(b.p, b.len, &e) == 0)
				v = json_stringn(e.len ? (const char *)e.p : "", e.len);
			maro_buf_free(&e);
		}
		break;
	case CBOR_TYPE_STRING:
		if (string_bytes(it, &b) < 0)
			break;
		v = json_stringn(b.len ? (const char *)b.p : "", b.len);
		if (!v)
			fail(err, "text string is not valid UTF-8");
		break;
	case CBOR_TYPE_ARRAY:
		v = json_array();
		for (i = 0; v && i < cbor_array_size(it); i++) {
			cbor_item_t *e = cbor_array_get(it, i);
			json_t *j = to_json(e, err);

			cbor_decref(&e);
			if (!j || json_array_append_new(v, j) < 0) {
				json_decref(v);
				v = NULL;
			}
		}
		break;
	case CBOR_TYPE_MAP: {
		struct cbor_pair *pairs = cbor_map_handle(it);

		v = json_object();
		for (i = 0; v && i < cbor_map_size(it); i++) {
			json_t *j;

			b.len = 0;
			if (cbor_isa_string(pairs[i].key)) {
				if (string_bytes(pairs[i].key, &b) < 0)
					goto bad_map;
			} else if (diag(pairs[i].key, &b) < 0) {
				goto bad_map;
			}
			if (maro_buf_cstr(&b) < 0 || memchr(b.p, 0, b.len))
				goto bad_map;
			j = to_json(pairs[i].value, err);
			if (!j || json_object_setn_new(v, (const char *)b.p, b.len, j) < 0) {
				if (!j)
					goto bad_map_quiet;
				fail(err, "map key is not valid UTF-8");
				goto bad_map_quiet;
			}
			continue;
bad_map:
			fail(err, "cannot convert a map key");
bad_map_quiet:
			json_decref(v);
			v = NULL;
		}
		break;
	}
	case CBOR_TYPE_TAG: {
		cbor_item_t *t = cbor_tag_item(it);

		v = to_json(t, err);
		cbor_decref(&t);
		break;
	}
	case CBOR_TYPE_FLOAT_CTRL:
		if (cbor_float_ctrl_is_ctrl(it)) {
			uint8_t c = cbor_ctrl_value(it);

			v = c == CBOR_CTRL_TRUE ? json_true() : c == CBOR_CTRL_FALSE ? json_false() : json_null();
		} else {
			double d = cbor_float_get_float(it);

			v = isfinite(d) ? json_real(d) : json_null();
		}
		break;
	}
	maro_buf_free(&b);
	if (!v && !err->msg[0])
		fail(err, "out of memory");
	return v;
}

json_t *
maro_cbor_to_json(const uint8_t *p, size_t n, struct maro_err *err)
{
	struct cbor_load_result res;
	cbor_item_t *it;
	json_t *v;

	err->msg[0] = '\0';
	it = cbor_load(p, n, &res);
	if (!it) {
		fail(err, "cannot decode the CBOR item");
		return NULL;
	}
	v = to_json(it, err);
	cbor_decref(&it);
	return v;
}

static int
put_float(double d, struct maro_buf *out)
{
	uint8_t b[9];
	size_t n;
	float f = (float)d;

	if (maro_buf_reserve(out, 9) < 0)
		return -1;
	if ((double)f == d || isnan(d)) {
		/* half when that is exact too: libcbor rounds, so check by decoding back */
		uint8_t h[3];
		struct cbor_load_result r;
		cbor_item_t *it;

		if (cbor_encode_half(f, h, sizeof h) == 3 && (it = cbor_load(h, 3, &r))) {
			int same = cbor_float_get_float(it) == d || (isnan(d) && isnan(cbor_float_get_float(it)));

			cbor_decref(&it);
			if (same)
				return maro_buf_append(out, h, 3);
		}
		n = cbor_encode_single(f, b, sizeof b);
	} else {
		n = cbor_encode_double(d, b, sizeof b);
	}
	return maro_buf_append(out, b, n);
}

int
maro_json_to_cbor(const json_t *v, struct maro_buf *out)
{
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *val;

		if (maro_buf_cbor_head(out, 5, json_object_size(v)) < 0)
			return -1;
		json_object_foreach((json_t *)v, k, val)
			if (maro_buf_cbor_text(out, k, strlen(k)) < 0 || maro_json_to_cbor(val, out) < 0)
				return -1;
		return 0;
	}
	case JSON_ARRAY:
		if (maro_buf_cbor_head(out, 4, json_array_size(v)) < 0)
			return -1;
		for (i = 0; i < json_array_size(v); i++)
			if (maro_json_to_cbor(json_array_get(v, i), out) < 0)
				return -1;
		return 0;
	case JSON_STRING:
		return maro_buf_cbor_text(out, json_string_value(v), json_string_length(v));
	case JSON_INTEGER: {
		json_int_t n = json_integer_value(v);

		return n >= 0 ? maro_buf_cbor_head(out, 0, (uint64_t)n) :
		    maro_buf_cbor_head(out, 1, (uint64_t)(-1 - n));
	}
	case JSON_REAL:
		return put_float(json_real_value(v), out);
	case JSON_TRUE:
		return maro_buf_append(out, "\xf5", 1);
	case JSON_FALSE:
		return maro_buf_append(out, "\xf4", 1);
	case JSON_NULL:
		return maro_buf_append(out, "\xf6", 1);
	}
	errno = EINVAL;
	return -1;
}

static int
diag_float(const cbor_item_t *it, struct maro_buf *out)
{
	double d = cbor_float_get_float(it);
	char s[64];
	int prec;

	if (isnan(d))
		return maro_buf_puts(out, "NaN");
	if (isinf(d))
		return maro_buf_puts(out, d > 0 ? "Infinity" : "-Infinity");
	switch (cbor_float_get_width(it)) {
	case CBOR_FLOAT_16: prec = 5; break;
	case CBOR_FLOAT_32: prec = 9; break;
	default: prec = 17; break;
	}
	/* the shortest that reads back the same */
	for (int p = 1; p <= prec; p++) {
		snprintf(s, sizeof s, "%.*g", p, d);
		if (strtod(s, NULL) == d)
			break;
	}
	if (!strpbrk(s, ".eEn"))
		strcat(s, ".0");
	return maro_buf_puts(out, s);
}

static int
diag_text(const uint8_t *p, size_t n, struct maro_buf *out)
{
	size_t i;

	if (maro_buf_append(out, "\"", 1) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		uint8_t c = p[i];

		if (c == '"' || c == '\\') {
			if (maro_buf_printf(out, "\\%c", c) < 0)
				return -1;
		} else if (c < 0x20 || c == 0x7f) {
			if (maro_buf_printf(out, "\\u%04x", c) < 0)
				return -1;
		} else if (maro_buf_append(out, &c, 1) < 0) {
			return -1;
		}
	}
	return maro_buf_append(out, "\"", 1);
}

static int
diag_string(const cbor_item_t *it, struct maro_buf *out)
{
	int text = cbor_isa_string(it);
	struct maro_buf b = { 0 };
	size_t i, n;
	int rc;

	if (!(text ? cbor_string_is_definite(it) : cbor_bytestring_is_definite(it))) {
		cbor_item_t **chunks = text ? cbor_string_chunks_handle(it) : cbor_bytestring_chunks_handle(it);

		n = text ? cbor_string_chunk_count(it) : cbor_bytestring_chunk_count(it);
		if (maro_buf_puts(out, "(_ ") < 0)
			return -1;
		for (i = 0; i < n; i++)
			if ((i && maro_buf_puts(out, ", ") < 0) || diag_string(chunks[i], out) < 0)
				return -1;
		return maro_buf_puts(out, ")");
	}
	if (string_bytes(it, &b) < 0)
		return -1;
	if (text) {
		rc = diag_text(b.p, b.len, out);
	} else {
		rc = maro_buf_puts(out, "h'");
		for (i = 0; rc == 0 && i < b.len; i++)
			rc = maro_buf_printf(out, "%02x", b.p[i]);
		if (rc == 0)
			rc = maro_buf_puts(out, "'");
	}
	maro_buf_free(&b);
	return rc;
}

static int
diag(const cbor_item_t *it, struct maro_buf *out)
{
	size_t i;

	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT:
		return maro_buf_printf(out, "%llu", (unsigned long long)cbor_get_int(it));
	case CBOR_TYPE_NEGINT: {
		uint64_t u = cbor_get_int(it);

		if (u == UINT64_MAX)
			return maro_buf_puts(out, "-18446744073709551616");
		return maro_buf_printf(out, "-%llu", (unsigned long long)u + 1);
	}
	case CBOR_TYPE_BYTESTRING:
	case CBOR_TYPE_STRING:
		return diag_string(it, out);
	case CBOR_TYPE_ARRAY:
		if (maro_buf_puts(out, cbor_array_is_indefinite(it) ? "[_ " : "[") < 0)
			return -1;
		for (i = 0; i < cbor_array_size(it); i++) {
			cbor_item_t *e = cbor_array_get(it, i);
			int rc = (i ? maro_buf_puts(out, ", ") : 0) < 0 ? -1 : diag(e, out);

			cbor_decref(&e);
			if (rc < 0)
				return -1;
		}
		return maro_buf_puts(out, "]");
	case CBOR_TYPE_MAP: {
		struct cbor_pair *pairs = cbor_map_handle(it);

		if (maro_buf_puts(out, cbor_map_is_indefinite(it) ? "{_ " : "{") < 0)
			return -1;
		for (i = 0; i < cbor_map_size(it); i++)
			if ((i && maro_buf_puts(out, ", ") < 0) || diag(pairs[i].key, out) < 0 ||
			    maro_buf_puts(out, ": ") < 0 || diag(pairs[i].value, out) < 0)
				return -1;
		return maro_buf_puts(out, "}");
	}
	case CBOR_TYPE_TAG: {
		cbor_item_t *t = cbor_tag_item(it);
		int rc = maro_buf_printf(out, "%llu(", (unsigned long long)cbor_tag_value(it)) < 0 ||
		    diag(t, out) < 0 || maro_buf_puts(out, ")") < 0 ? -1 : 0;

		cbor_decref(&t);
		return rc;
	}
	case CBOR_TYPE_FLOAT_CTRL:
		if (!cbor_float_ctrl_is_ctrl(it))
			return diag_float(it, out);
		switch (cbor_ctrl_value(it)) {
		case CBOR_CTRL_FALSE: return maro_buf_puts(out, "false");
		case CBOR_CTRL_TRUE: return maro_buf_puts(out, "true");
		case CBOR_CTRL_NULL: return maro_buf_puts(out, "null");
		case CBOR_CTRL_UNDEF: return maro_buf_puts(out, "undefined");
		default: return maro_buf_printf(out, "simple(%u)", cbor_ctrl_value(it));
		}
	}
	return -1;
}

int
maro_cbor_to_diag(const uint8_t *p, size_t n, struct maro_buf *out, struct maro_err *err)
{
	struct cbor_load_result res;
	cbor_item_t *it = cbor_load(p, n, &res);
	int rc;

	err->msg[0] = '\0';
	if (!it)
		return fail(err, "cannot decode the CBOR item");
	rc = diag(it, out);
	cbor_decref(&it);
	if (rc < 0)
		return fail(err, "out of memory");
	return 0;
}
