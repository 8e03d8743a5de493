#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "convert.h"

/*
 * The recursion below follows the nesting of the item.  The scanner check in
 * load() bounds that nesting by MARO_CBOR_MAX_DEPTH_LIMIT before libcbor
 * builds anything, so the stack use is bounded whatever the bytes say.
 */

/* Byte-string encodings for JSON: RFC 8949 section 3.4.5.2 expected conversions. */
enum hint { HINT_BASE64URL, HINT_BASE64, HINT_BASE16 };

static int
fail(struct maro_err *err, size_t off, const char *msg)
{
	err->offset = off;
	snprintf(err->msg, sizeof err->msg, "%s", msg);
	return -1;
}

static int
nomem(struct maro_err *err)
{
	if (!err->msg[0])
		fail(err, 0, "out of memory");
	return -1;
}

/*
 * Where the well-formed item (n bytes at p) has a head that libcbor 0.8
 * refuses: simple values 0-19 and 32-255, tags 6-20; n if none.  Heads
 * follow one another in order, so a walk over them, skipping the bytes of
 * definite strings, sees them all.
 */
static size_t
unloadable(const uint8_t *p, size_t n)
{
	size_t pos = 0, h;

	while (pos < n) {
		uint8_t b = p[pos];
		unsigned major;
		uint64_t len;

		if ((b >= 0xe0 && b <= 0xf3) || b == 0xf8 || (b >= 0xc6 && b <= 0xd4))
			return pos;
		if (!(h = maro_cbor_head(p + pos, n - pos, &major, &len)))
			return n;	/* not well-formed after all: say nothing more */
		pos += h;
		if ((major == 2 || major == 3) && len != UINT64_MAX) {
			if (len > n - pos)
				return n;
			pos += (size_t)len;
		}
	}
	return n;
}

/*
 * Checks p[0..n) as the scanner does (exactly one well-formed item, nested
 * at most MARO_CBOR_MAX_DEPTH_LIMIT deep, no length that outruns n) before
 * libcbor sees it, then has libcbor build it.
 */
static cbor_item_t *
load(const uint8_t *p, size_t n, struct maro_err *err)
{
	struct maro_cbor_limits lim = { n ? n : 1, MARO_CBOR_MAX_DEPTH_LIMIT };
	struct cbor_load_result res;
	cbor_item_t *it;
	size_t at;

	err->offset = 0;
	err->msg[0] = '\0';
	if (maro_cbor_check(p, n, &lim, err) < 0)
		return NULL;
	it = cbor_load(p, n, &res);
	if (it && res.read == n)
		return it;
	/*
	 * well-formed, so what libcbor finds wrong is UTF-8 (it checks), memory,
	 * or a head it does not decode (our scanner reads them)
	 */
	if (!it && (at = unloadable(p, n)) < n) {
		char msg[160];

		snprintf(msg, sizeof msg, "%s %u cannot be converted (libcbor %d.%d does not decode it)",
		    p[at] >> 5 == 6 ? "tag" : "simple value", p[at] == 0xf8 ? p[at + 1] : p[at] & 31u,
		    CBOR_MAJOR_VERSION, CBOR_MINOR_VERSION);
		fail(err, at, msg);
	} else if (it)
		fail(err, res.read, "cannot decode the CBOR item");
	else if (res.error.code == CBOR_ERR_SYNTAXERROR)
		fail(err, res.error.position, "text string is not valid UTF-8");
	else if (res.error.code == CBOR_ERR_MEMERROR)
		fail(err, 0, "out of memory");
	else
		fail(err, res.error.position, "cannot decode the CBOR item");
	if (it)
		cbor_decref(&it);
	return NULL;
}

/* jansson checks UTF-8 when it makes a string. */
static int
utf8_valid(const uint8_t *p, size_t n)
{
	json_t *s = json_stringn(n ? (const char *)p : "", n);

	if (!s)
		return 0;
	json_decref(s);
	return 1;
}

/*
 * The bytes of a byte or text string in *p, *n: a definite string's own
 * bytes (tmp untouched), an indefinite one's chunks joined in tmp.  The
 * caller checks the UTF-8 of a definite text string; each chunk of an
 * indefinite one is checked here, as it must be valid by itself (RFC 8949
 * section 3.2.3).
 */
static int
string_bytes(const cbor_item_t *it, struct maro_buf *tmp, const uint8_t **p, size_t *n,
    struct maro_err *err)
{
	int text = cbor_isa_string(it);
	cbor_item_t **chunks;
	size_t i, count;

	if (text ? cbor_string_is_definite(it) : cbor_bytestring_is_definite(it)) {
		*p = text ? cbor_string_handle(it) : cbor_bytestring_handle(it);
		*n = text ? cbor_string_length(it) : cbor_bytestring_length(it);
		if (!*p)
			*p = (const uint8_t *)"";
		return 0;
	}
	if (!tmp)	/* a chunk that is itself indefinite: the scanner refuses those */
		return fail(err, 0, "malformed indefinite-length string chunk");
	chunks = text ? cbor_string_chunks_handle(it) : cbor_bytestring_chunks_handle(it);
	count = text ? cbor_string_chunk_count(it) : cbor_bytestring_chunk_count(it);
	tmp->len = 0;
	for (i = 0; i < count; i++) {
		const uint8_t *cp;
		size_t cn;

		if (string_bytes(chunks[i], NULL, &cp, &cn, err) < 0)
			return -1;
		if (text && !utf8_valid(cp, cn))
			return fail(err, 0, "text string is not valid UTF-8");
		if (maro_buf_append(tmp, cp, cn) < 0)
			return nomem(err);
	}
	if (maro_buf_cstr(tmp) < 0)
		return nomem(err);
	*p = tmp->p;
	*n = tmp->len;
	return 0;
}

/* RFC 4648 base64url without padding, or base64 with it. */
static int
base64(const uint8_t *p, size_t n, int url, struct maro_buf *out);

int
maro_base64url(const uint8_t *p, size_t n, struct maro_buf *out)
{
	return base64(p, n, 1, out);
}

static int
base64(const uint8_t *p, size_t n, int url, struct maro_buf *out)
{
	const char *tab = url ?
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" :
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = n - i, k;
		char q[4];

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		for (k = 0; k < 4; k++)
			q[k] = tab[v >> (18 - 6 * k) & 63];
		if (left < 3 && !url)
			memset(q + left + 1, '=', 3 - left);
		if (maro_buf_append(out, q, left < 3 && url ? left + 1 : 4) < 0)
			return -1;
	}
	return 0;
}

static int diag(const cbor_item_t *it, struct maro_buf *out, unsigned depth, struct maro_err *err);

static json_t *
bytes_to_json(const cbor_item_t *it, enum hint hint, struct maro_err *err)
{
	struct maro_buf tmp = { 0 }, enc = { 0 };
	const uint8_t *p;
	size_t n, i;
	json_t *v = NULL;
	int rc = 0;

	if (string_bytes(it, &tmp, &p, &n, err) < 0)
		goto out;
	if (hint == HINT_BASE16)
		for (i = 0; rc == 0 && i < n; i++)
			rc = maro_buf_printf(&enc, "%02x", p[i]);
	else
		rc = base64(p, n, hint == HINT_BASE64URL, &enc);
	if (rc == 0)
		v = json_stringn(enc.len ? (const char *)enc.p : "", enc.len);
	if (!v)
		nomem(err);
out:
	maro_buf_free(&enc);
	maro_buf_free(&tmp);
	return v;
}

static json_t *
text_to_json(const cbor_item_t *it, struct maro_err *err)
{
	struct maro_buf tmp = { 0 };
	const uint8_t *p;
	size_t n;
	json_t *v = NULL;

	/* jansson refuses text that is not UTF-8 */
	if (string_bytes(it, &tmp, &p, &n, err) == 0 && !(v = json_stringn((const char *)p, n)))
		fail(err, 0, "text string is not valid UTF-8");
	maro_buf_free(&tmp);
	return v;
}

static json_t *to_json(const cbor_item_t *it, enum hint hint, unsigned depth,
    struct maro_err *err);

static json_t *
map_to_json(const cbor_item_t *it, enum hint hint, unsigned depth, struct maro_err *err)
{
	struct cbor_pair *pairs = cbor_map_handle(it);
	struct maro_buf key = { 0 };
	json_t *obj = json_object(), *v;
	size_t i;

	for (i = 0; obj && i < cbor_map_size(it); i++) {
		const uint8_t *kp;
		size_t kn;

		/* text keys as they are, any other key as its diagnostic notation */
		if (cbor_isa_string(pairs[i].key)) {
			if (string_bytes(pairs[i].key, &key, &kp, &kn, err) < 0)
				goto bad;
			if (!utf8_valid(kp, kn)) {
				fail(err, 0, "map key is not valid UTF-8");
				goto bad;
			}
		} else {
			key.len = 0;
			if (diag(pairs[i].key, &key, depth + 1, err) < 0)
				goto bad;
			kp = key.p;
			kn = key.len;
		}
		/* jansson reads no NUL in a key: what we write must read back */
		if (kn && memchr(kp, '\0', kn)) {
			fail(err, 0, "map key holds a NUL character (JSON input could not read it back)");
			goto bad;
		}
		v = to_json(pairs[i].value, hint, depth + 1, err);
		if (!v)
			goto bad;
		/* a repeated key: the later value wins, as in most JSON parsers */
		if (json_object_setn_new(obj, kn ? (const char *)kp : "", kn, v) < 0) {
			nomem(err);
			goto bad;
		}
	}
	if (!obj)
		nomem(err);
	maro_buf_free(&key);
	return obj;
bad:
	maro_buf_free(&key);
	json_decref(obj);
	return NULL;
}

static json_t *
to_json(const cbor_item_t *it, enum hint hint, unsigned depth, struct maro_err *err)
{
	json_t *v = NULL, *e;
	size_t i;

	if (depth > MARO_CBOR_MAX_DEPTH_LIMIT) {
		fail(err, 0, "nesting deeper than the limit");
		return NULL;
	}
	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT: {
		uint64_t u = cbor_get_int(it);

		/* beyond json_int_t: the nearest double, as JSON parsers read big numbers */
		v = u <= INT64_MAX ? json_integer((json_int_t)u) : json_real((double)u);
		break;
	}
	case CBOR_TYPE_NEGINT: {
		uint64_t u = cbor_get_int(it);

		v = u <= INT64_MAX ? json_integer(-1 - (json_int_t)u) : json_real(-1.0 - (double)u);
		break;
	}
	case CBOR_TYPE_BYTESTRING:
		return bytes_to_json(it, hint, err);
	case CBOR_TYPE_STRING:
		return text_to_json(it, err);
	case CBOR_TYPE_ARRAY: {
		cbor_item_t **items = cbor_array_handle(it);

		v = json_array();
		for (i = 0; v && i < cbor_array_size(it); i++) {
			if (!(e = to_json(items[i], hint, depth + 1, err)) || json_array_append_new(v, e) < 0) {
				json_decref(v);
				v = NULL;
			}
		}
		break;
	}
	case CBOR_TYPE_MAP:
		return map_to_json(it, hint, depth, err);
	case CBOR_TYPE_TAG: {
		cbor_item_t *t = cbor_tag_item(it);
		uint64_t tag = cbor_tag_value(it);

		/* a bignum: its bytes in base64url, a negative one after a '~' (RFC 8949 6.1) */
		if ((tag == 2 || tag == 3) && cbor_isa_bytestring(t)) {
			v = bytes_to_json(t, HINT_BASE64URL, err);
			cbor_decref(&t);
			if (v && tag == 3) {
				struct maro_buf b = { 0 };
				json_t *neg = NULL;

				if (maro_buf_append(&b, "~", 1) == 0 &&
				    maro_buf_append(&b, json_string_value(v), json_string_length(v)) == 0)
					neg = json_stringn((const char *)b.p, b.len);
				maro_buf_free(&b);
				json_decref(v);
				if (!(v = neg))
					nomem(err);
			}
			return v;
		}
		/* the tag number is dropped; 21-23 say how to write the byte strings inside */
		if (tag == 21)
			hint = HINT_BASE64URL;
		else if (tag == 22)
			hint = HINT_BASE64;
		else if (tag == 23)
			hint = HINT_BASE16;
		v = to_json(t, hint, depth + 1, err);
		cbor_decref(&t);
		return v;
	}
	case CBOR_TYPE_FLOAT_CTRL:
		if (cbor_float_ctrl_is_ctrl(it)) {
			uint8_t c = cbor_ctrl_value(it);

			v = c == CBOR_CTRL_TRUE ? json_true() : c == CBOR_CTRL_FALSE ? json_false() :
			    json_null();
		} else {
			double d = cbor_float_get_float(it);

			v = isfinite(d) ? json_real(d) : json_null();
		}
		break;
	}
	if (!v)
		nomem(err);
	return v;
}

json_t *
maro_cbor_to_json(const uint8_t *p, size_t n, struct maro_err *err)
{
	cbor_item_t *it = load(p, n, err);
	json_t *v;

	if (!it)
		return NULL;
	v = to_json(it, HINT_BASE64URL, 0, err);
	cbor_decref(&it);
	return v;
}

/*
 * The bits of the half float (RFC 8949 appendix D) that is exactly d, if
 * there is one.  Not libcbor's cbor_encode_half: it rounds, and gets
 * subnormals wrong (3 * 2^-24 comes out as 2 * 2^-24).
 */
static int
half_bits(double d, uint8_t out[2])
{
	double a = fabs(d), q;
	unsigned bits;
	int e;

	if (isinf(a)) {
		bits = 0x7c00;
	} else if (a == 0) {
		bits = 0;
	} else {
		frexp(a, &e);	/* 2^(e-1) <= a < 2^e */
		if (e > 16)
			return 0;
		if (e >= -13) {
			/* normal: a = q * 2^(e-11), q in [1024, 2048), exponent field e + 14 */
			q = ldexp(a, 11 - e);
			if (q != floor(q))
				return 0;
			bits = (unsigned)(e + 14) << 10 | ((unsigned)q - 1024);
		} else {
			/* subnormal: a = q * 2^-24, q < 1024 */
			q = ldexp(a, 24);
			if (q != floor(q))
				return 0;
			bits = (unsigned)q;
		}
	}
	if (signbit(d))
		bits |= 0x8000;
	out[0] = (uint8_t)(bits >> 8);
	out[1] = (uint8_t)bits;
	return 1;
}

/* The shortest of half, single and double that holds d exactly. */
static int
put_float(double d, struct maro_buf *out)
{
	uint8_t b[9] = { 0xf9 };
	size_t n;

	if (isnan(d))
		return maro_buf_append(out, "\xf9\x7e\x00", 3);
	if (half_bits(d, b + 1))
		return maro_buf_append(out, b, 3);
	/* a double beyond float's range cannot be cast to float: it is not one */
	if (fabs(d) <= FLT_MAX && (double)(float)d == d)
		n = cbor_encode_single((float)d, b, sizeof b);
	else
		n = cbor_encode_double(d, b, sizeof b);
	return maro_buf_append(out, b, n);
}

/* jansson's own parser nests at most this deep; a deeper value is a loop. */
#ifdef JSON_PARSER_MAX_DEPTH
#define JSON_MAX_DEPTH JSON_PARSER_MAX_DEPTH
#else
#define JSON_MAX_DEPTH 2048
#endif

static int
json_to_cbor(const json_t *v, struct maro_buf *out, unsigned depth)
{
	size_t i;

	if (depth > JSON_MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		size_t klen;
		json_t *val;

		if (maro_buf_cbor_head(out, 5, json_object_size(v)) < 0)
			return -1;
		json_object_keylen_foreach((json_t *)v, k, klen, val)
			if (maro_buf_cbor_text(out, k, klen) < 0 || json_to_cbor(val, out, depth + 1) < 0)
				return -1;
		return 0;
	}
	case JSON_ARRAY:
		if (maro_buf_cbor_head(out, 4, json_array_size(v)) < 0)
			return -1;
		for (i = 0; i < json_array_size(v); i++)
			if (json_to_cbor(json_array_get(v, i), out, depth + 1) < 0)
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

int
maro_json_to_cbor(const json_t *v, struct maro_buf *out)
{
	size_t len = out->len;

	if (!v) {
		errno = EINVAL;
		return -1;
	}
	if (json_to_cbor(v, out, 0) < 0) {
		out->len = len;
		return -1;
	}
	return 0;
}

/*
 * The shortest decimal m * 10^q that reads back as d (d finite, positive).
 * At each precision printf gives the nearest decimal; when d lies halfway,
 * that one may read back wrong while its neighbour reads back right
 * (2^-24 is 5.960464477539063e-8, not ...062e-8), so both are tried.
 */
static void
shortest(double d, uint64_t *m, int *q)
{
	char s[48], *e;
	int prec, exp, i;

	for (prec = 1; prec <= 17; prec++) {
		uint64_t base, cand[3];

		snprintf(s, sizeof s, "%.*e", prec - 1, d);
		e = strchr(s, 'e');
		exp = atoi(e + 1) - (prec - 1);
		for (base = 0, i = 0; s + i < e; i++)
			if (s[i] != '.')
				base = base * 10 + (uint64_t)(s[i] - '0');
		cand[0] = base;
		cand[1] = base + 1;
		cand[2] = base - 1;
		for (i = 0; i < 3; i++) {
			snprintf(s, sizeof s, "%llue%d", (unsigned long long)cand[i], exp);
			if (cand[i] && strtod(s, NULL) == d) {
				*m = cand[i];
				*q = exp;
				return;
			}
		}
	}
	/* not reached: 17 digits always read back */
	*m = 0;
	*q = 0;
}

/*
 * A float as RFC 8949 appendix A writes it: the shortest decimal that reads
 * back as the same value (the value the item's width holds), laid out as
 * ECMAScript's Number::toString does, with ".0" where it would have no
 * fraction: 1.5, 100000.0, 1.0e+300, 5.960464477539063e-8.
 */
static int
diag_float(double d, struct maro_buf *out)
{
	char digits[24];
	uint64_t m;
	int q, k, n;

	if (isnan(d))
		return maro_buf_puts(out, "NaN");
	if (isinf(d))
		return maro_buf_puts(out, d > 0 ? "Infinity" : "-Infinity");
	if (signbit(d) && maro_buf_puts(out, "-") < 0)
		return -1;
	if (d == 0)
		return maro_buf_puts(out, "0.0");
	shortest(fabs(d), &m, &q);
	while (m % 10 == 0) {
		m /= 10;
		q++;
	}
	k = snprintf(digits, sizeof digits, "%llu", (unsigned long long)m);
	/* the value is 0.DIGITS * 10^n */
	n = k + q;
	if (k <= n && n <= 21)
		return maro_buf_printf(out, "%s%.*s.0", digits, n - k, "000000000000000000000");
	if (0 < n && n <= 21)
		return maro_buf_printf(out, "%.*s.%s", n, digits, digits + n);
	if (-6 < n && n <= 0)
		return maro_buf_printf(out, "0.%.*s%s", -n, "000000", digits);
	return maro_buf_printf(out, "%c.%se%c%d", digits[0], k > 1 ? digits + 1 : "0",
	    n - 1 < 0 ? '-' : '+', abs(n - 1));
}

/* A text string as JSON writes it (escapes and all), which diagnostic notation shares. */
static int
diag_text(const uint8_t *p, size_t n, struct maro_buf *out, struct maro_err *err)
{
	json_t *s = json_stringn(n ? (const char *)p : "", n);
	size_t len;
	int rc = -1;

	if (!s)
		return fail(err, 0, "text string is not valid UTF-8");
	len = json_dumpb(s, NULL, 0, JSON_ENCODE_ANY);
	if (len && maro_buf_reserve(out, len) == 0 &&
	    json_dumpb(s, (char *)out->p + out->len, len, JSON_ENCODE_ANY) == len) {
		out->len += len;
		rc = 0;
	}
	json_decref(s);
	return rc < 0 ? nomem(err) : 0;
}

static int
diag_string(const cbor_item_t *it, struct maro_buf *out, struct maro_err *err)
{
	int text = cbor_isa_string(it);
	cbor_item_t **chunks;
	const uint8_t *p;
	size_t i, n;

	if (!(text ? cbor_string_is_definite(it) : cbor_bytestring_is_definite(it))) {
		chunks = text ? cbor_string_chunks_handle(it) : cbor_bytestring_chunks_handle(it);
		n = text ? cbor_string_chunk_count(it) : cbor_bytestring_chunk_count(it);
		if (n == 0)
			return maro_buf_puts(out, text ? "\"\"_" : "''_") < 0 ? nomem(err) : 0;
		if (maro_buf_puts(out, "(_ ") < 0)
			return nomem(err);
		for (i = 0; i < n; i++) {
			if (i && maro_buf_puts(out, ", ") < 0)
				return nomem(err);
			if (diag_string(chunks[i], out, err) < 0)
				return -1;
		}
		return maro_buf_puts(out, ")") < 0 ? nomem(err) : 0;
	}
	string_bytes(it, NULL, &p, &n, err);
	if (text)
		return diag_text(p, n, out, err);
	if (maro_buf_reserve(out, 2 * n + 3) < 0)
		return nomem(err);
	maro_buf_puts(out, "h'");
	for (i = 0; i < n; i++)
		maro_buf_printf(out, "%02x", p[i]);
	maro_buf_puts(out, "'");
	return 0;
}

static int
diag(const cbor_item_t *it, struct maro_buf *out, unsigned depth, struct maro_err *err)
{
	size_t i;
	int rc = 0;

	if (depth > MARO_CBOR_MAX_DEPTH_LIMIT)
		return fail(err, 0, "nesting deeper than the limit");
	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT:
		rc = maro_buf_printf(out, "%llu", (unsigned long long)cbor_get_int(it));
		break;
	case CBOR_TYPE_NEGINT: {
		uint64_t u = cbor_get_int(it);

		/* -1 - u does not fit in 64 bits when u is the largest */
		rc = u == UINT64_MAX ? maro_buf_puts(out, "-18446744073709551616") :
		    maro_buf_printf(out, "-%llu", (unsigned long long)u + 1);
		break;
	}
	case CBOR_TYPE_BYTESTRING:
	case CBOR_TYPE_STRING:
		return diag_string(it, out, err);
	case CBOR_TYPE_ARRAY: {
		cbor_item_t **items = cbor_array_handle(it);

		if (maro_buf_puts(out, cbor_array_is_indefinite(it) ? "[_ " : "[") < 0)
			return nomem(err);
		for (i = 0; i < cbor_array_size(it); i++) {
			if (i && maro_buf_puts(out, ", ") < 0)
				return nomem(err);
			if (diag(items[i], out, depth + 1, err) < 0)
				return -1;
		}
		rc = maro_buf_puts(out, "]");
		break;
	}
	case CBOR_TYPE_MAP: {
		struct cbor_pair *pairs = cbor_map_handle(it);

		if (maro_buf_puts(out, cbor_map_is_indefinite(it) ? "{_ " : "{") < 0)
			return nomem(err);
		for (i = 0; i < cbor_map_size(it); i++) {
			if (i && maro_buf_puts(out, ", ") < 0)
				return nomem(err);
			if (diag(pairs[i].key, out, depth + 1, err) < 0)
				return -1;
			if (maro_buf_puts(out, ": ") < 0)
				return nomem(err);
			if (diag(pairs[i].value, out, depth + 1, err) < 0)
				return -1;
		}
		rc = maro_buf_puts(out, "}");
		break;
	}
	case CBOR_TYPE_TAG: {
		cbor_item_t *t = cbor_tag_item(it);

		if (maro_buf_printf(out, "%llu(", (unsigned long long)cbor_tag_value(it)) < 0)
			rc = nomem(err);
		else if (diag(t, out, depth + 1, err) < 0)
			rc = -1;
		else if (maro_buf_puts(out, ")") < 0)
			rc = nomem(err);
		cbor_decref(&t);
		return rc;
	}
	case CBOR_TYPE_FLOAT_CTRL:
		if (!cbor_float_ctrl_is_ctrl(it)) {
			rc = diag_float(cbor_float_get_float(it), out);
			break;
		}
		switch (cbor_ctrl_value(it)) {
		case CBOR_CTRL_FALSE: rc = maro_buf_puts(out, "false"); break;
		case CBOR_CTRL_TRUE: rc = maro_buf_puts(out, "true"); break;
		case CBOR_CTRL_NULL: rc = maro_buf_puts(out, "null"); break;
		case CBOR_CTRL_UNDEF: rc = maro_buf_puts(out, "undefined"); break;
		default: rc = maro_buf_printf(out, "simple(%u)", cbor_ctrl_value(it)); break;
		}
		break;
	}
	return rc < 0 ? nomem(err) : 0;
}

int
maro_cbor_to_diag(const uint8_t *p, size_t n, struct maro_buf *out, struct maro_err *err)
{
	cbor_item_t *it = load(p, n, err);
	size_t len = out->len;
	int rc;

	if (!it)
		return -1;
	rc = diag(it, out, 0, err);
	cbor_decref(&it);
	if (rc < 0)
		out->len = len;
	return rc;
}
