#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "unit.h"

/* Hex to bytes, for tables that read like RFC 8949 appendix A. */
static size_t
unhex(const char *s, struct maro_buf *b)
{
	b->len = 0;
	for (; s[0] && s[1]; s += 2) {
		char h[3] = { s[0], s[1], 0 };
		uint8_t c = (uint8_t)strtoul(h, NULL, 16);

		maro_buf_append(b, &c, 1);
	}
	return b->len;
}

static char *
tohex(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * n] = '\0';
	return s;
}

/* The CBOR item (hex) in diagnostic notation is want. */
static int
diag_is(const char *hex, const char *want)
{
	struct maro_buf in = { 0 }, out = { 0 };
	struct maro_err err;
	int ok;

	unhex(hex, &in);
	ok = maro_cbor_to_diag(in.p, in.len, &out, &err) == 0 && maro_buf_cstr(&out) == 0 &&
	    strcmp((char *)out.p, want) == 0;
	if (!ok)
		fprintf(stderr, "diag %s: got '%s' (%s), want '%s'\n", hex,
		    out.p ? (char *)out.p : "", err.msg, want);
	maro_buf_free(&in);
	maro_buf_free(&out);
	return ok;
}

/* The CBOR item (hex) as compact JSON is want. */
static int
json_is(const char *hex, const char *want)
{
	struct maro_buf in = { 0 };
	struct maro_err err;
	json_t *j;
	char *s = NULL;
	int ok;

	unhex(hex, &in);
	j = maro_cbor_to_json(in.p, in.len, &err);
	if (j)
		s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	ok = s && strcmp(s, want) == 0;
	if (!ok)
		fprintf(stderr, "json %s: got '%s' (%s), want '%s'\n", hex, s ? s : "",
		    j ? "" : err.msg, want);
	free(s);
	json_decref(j);
	maro_buf_free(&in);
	return ok;
}

/* JSON text (any value) becomes the CBOR item (hex) want. */
static int
cbor_is(const char *json, const char *want)
{
	struct maro_buf out = { 0 };
	json_error_t je;
	json_t *j = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	char *got = NULL;
	int ok;

	ok = j && maro_json_to_cbor(j, &out) == 0 && (got = tohex(out.p, out.len)) &&
	    strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "cbor %s: got %s, want %s\n", json, got ? got : "(error)", want);
	free(got);
	json_decref(j);
	maro_buf_free(&out);
	return ok;
}

/* Both conversions fail on the item (hex), err->msg containing why. */
static int
refused(const char *hex, const char *why)
{
	struct maro_buf in = { 0 }, out = { 0 };
	struct maro_err e1, e2;
	json_t *j;
	int ok;

	unhex(hex, &in);
	j = maro_cbor_to_json(in.p, in.len, &e1);
	ok = !j && strstr(e1.msg, why) && maro_cbor_to_diag(in.p, in.len, &out, &e2) < 0 &&
	    strstr(e2.msg, why) && out.len == 0;
	if (!ok)
		fprintf(stderr, "refused %s: json '%s', diag '%s', want '%s'\n", hex,
		    j ? "(converted)" : e1.msg, e2.msg, why);
	json_decref(j);
	maro_buf_free(&in);
	maro_buf_free(&out);
	return ok;
}

/* RFC 8949 appendix A, plus the layout of floats at the edges. */
static void
test_diag(void)
{
	CHECK(diag_is("00", "0"));
	CHECK(diag_is("17", "23"));
	CHECK(diag_is("1818", "24"));
	CHECK(diag_is("1903e8", "1000"));
	CHECK(diag_is("1b000000e8d4a51000", "1000000000000"));
	CHECK(diag_is("1bffffffffffffffff", "18446744073709551615"));
	CHECK(diag_is("20", "-1"));
	CHECK(diag_is("3863", "-100"));
	CHECK(diag_is("3bffffffffffffffff", "-18446744073709551616"));
	CHECK(diag_is("c249010000000000000000", "2(h'010000000000000000')"));
	CHECK(diag_is("f90000", "0.0"));
	CHECK(diag_is("f98000", "-0.0"));
	CHECK(diag_is("f93c00", "1.0"));
	CHECK(diag_is("fb3ff199999999999a", "1.1"));
	CHECK(diag_is("f93e00", "1.5"));
	CHECK(diag_is("f97bff", "65504.0"));
	CHECK(diag_is("fa47c35000", "100000.0"));
	CHECK(diag_is("fa7f7fffff", "3.4028234663852886e+38"));
	CHECK(diag_is("fb7e37e43c8800759c", "1.0e+300"));
	CHECK(diag_is("f90001", "5.960464477539063e-8"));
	CHECK(diag_is("f90400", "0.00006103515625"));
	CHECK(diag_is("f9c400", "-4.0"));
	CHECK(diag_is("fbc010666666666666", "-4.1"));
	CHECK(diag_is("f97c00", "Infinity"));
	CHECK(diag_is("f97e00", "NaN"));
	CHECK(diag_is("f9fc00", "-Infinity"));
	CHECK(diag_is("fa7f800000", "Infinity"));
	CHECK(diag_is("fb7ff8000000000000", "NaN"));
	CHECK(diag_is("fbfff0000000000000", "-Infinity"));
	/* a single keeps the value it holds, not the decimal it was made from */
	CHECK(diag_is("fa3dcccccd", "0.10000000149011612"));
	CHECK(diag_is("fb3fb999999999999a", "0.1"));
	CHECK(diag_is("fb4415af1d78b58c40", "100000000000000000000.0"));
	CHECK(diag_is("fb444b1ae4d6e2ef50", "1.0e+21"));
	CHECK(diag_is("fb3eb0c6f7a0b5ed8d", "0.000001"));
	CHECK(diag_is("fb3e7ad7f29abcaf48", "1.0e-7"));
	CHECK(diag_is("fbc07e240000000000", "-482.25"));
	CHECK(diag_is("fb3ff3c0ca428c59fb", "1.2345678901234567"));
	CHECK(diag_is("f4", "false"));
	CHECK(diag_is("f5", "true"));
	CHECK(diag_is("f6", "null"));
	CHECK(diag_is("f7", "undefined"));
	CHECK(diag_is("c074323031332d30332d32315432303a30343a30305a", "0(\"2013-03-21T20:04:00Z\")"));
	CHECK(diag_is("c11a514b67b0", "1(1363896240)"));
	CHECK(diag_is("d74401020304", "23(h'01020304')"));
	CHECK(diag_is("d818456449455446", "24(h'6449455446')"));
	CHECK(diag_is("40", "h''"));
	CHECK(diag_is("4401020304", "h'01020304'"));
	CHECK(diag_is("60", "\"\""));
	CHECK(diag_is("6449455446", "\"IETF\""));
	CHECK(diag_is("62225c", "\"\\\"\\\\\""));
	CHECK(diag_is("62c3bc", "\"\xc3\xbc\""));
	CHECK(diag_is("63e6b0b4", "\"\xe6\xb0\xb4\""));
	CHECK(diag_is("64f0908591", "\"\xf0\x90\x85\x91\""));
	CHECK(diag_is("630a0100", "\"\\n\\u0001\\u0000\""));
	CHECK(diag_is("80", "[]"));
	CHECK(diag_is("83010203", "[1, 2, 3]"));
	CHECK(diag_is("8301820203820405", "[1, [2, 3], [4, 5]]"));
	CHECK(diag_is("a0", "{}"));
	CHECK(diag_is("a201020304", "{1: 2, 3: 4}"));
	CHECK(diag_is("a26161016162820203", "{\"a\": 1, \"b\": [2, 3]}"));
	CHECK(diag_is("5f42010243030405ff", "(_ h'0102', h'030405')"));
	CHECK(diag_is("7f657374726561646d696e67ff", "(_ \"strea\", \"ming\")"));
	CHECK(diag_is("5fff", "''_"));
	CHECK(diag_is("7fff", "\"\"_"));
	CHECK(diag_is("9fff", "[_ ]"));
	CHECK(diag_is("9f018202039f0405ffff", "[_ 1, [2, 3], [_ 4, 5]]"));
	CHECK(diag_is("bf61610161629f0203ffff", "{_ \"a\": 1, \"b\": [_ 2, 3]}"));
	CHECK(diag_is("bfff", "{_ }"));
}

/* Every double's diagnostic notation reads back as that double, in at most 17 digits. */
static void
test_diag_floats_read_back(void)
{
	struct maro_buf out = { 0 };
	struct maro_err err;
	uint64_t x = 88172645463325252u, bits;
	uint8_t item[9] = { 0xfb };
	int i, k, bad = 0;
	double d;

	for (i = 0; i < 20000; i++) {
		/* xorshift64: any bit pattern, so every exponent and subnormals too */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bits = i < 10000 ? x : x >> (i % 64);
		for (k = 0; k < 8; k++)
			item[1 + k] = (uint8_t)(bits >> (56 - 8 * k));
		memcpy(&d, &bits, sizeof d);
		if (isnan(d))
			continue;
		out.len = 0;
		if (maro_cbor_to_diag(item, 9, &out, &err) < 0 || maro_buf_cstr(&out) < 0 ||
		    (!isinf(d) && strtod((char *)out.p, NULL) != d) || strspn((char *)out.p, "-0123456789") > 22) {
			if (bad++ < 5)
				fprintf(stderr, "diag float %016llx: '%s'\n", (unsigned long long)bits,
				    out.p ? (char *)out.p : "");
		}
	}
	CHECK(bad == 0);
	maro_buf_free(&out);
}

/* RFC 8949 section 6.1, and what it loses. */
static void
test_to_json(void)
{
	CHECK(json_is("00", "0"));
	CHECK(json_is("3863", "-100"));
	CHECK(json_is("1b7fffffffffffffff", "9223372036854775807"));
	CHECK(json_is("3b7fffffffffffffff", "-9223372036854775808"));
	/* past json_int_t: the nearest double */
	CHECK(json_is("1bffffffffffffffff", "1.8446744073709552e19"));
	CHECK(json_is("3bffffffffffffffff", "-1.8446744073709552e19"));
	CHECK(json_is("f93e00", "1.5"));
	CHECK(json_is("f98000", "-0.0"));
	CHECK(json_is("fa47c35000", "100000.0"));
	CHECK(json_is("f97c00", "null"));
	CHECK(json_is("f9fc00", "null"));
	CHECK(json_is("f97e00", "null"));
	CHECK(json_is("f7", "null"));
	CHECK(json_is("f4", "false"));
	CHECK(json_is("f5", "true"));
	CHECK(json_is("f6", "null"));
	CHECK(json_is("6449455446", "\"IETF\""));
	CHECK(json_is("7f657374726561646d696e67ff", "\"streaming\""));
	/* byte strings: base64url without padding, unless tags 22/23 say otherwise */
	CHECK(json_is("40", "\"\""));
	CHECK(json_is("4101", "\"AQ\""));
	CHECK(json_is("420102", "\"AQI\""));
	CHECK(json_is("43010203", "\"AQID\""));
	CHECK(json_is("4401020304", "\"AQIDBA\""));
	CHECK(json_is("43fbff3e", "\"-_8-\""));
	CHECK(json_is("5f42010243030405ff", "\"AQIDBAU\""));
	CHECK(json_is("d64401020304", "\"AQIDBA==\""));
	CHECK(json_is("d643fbff3e", "\"+/8+\""));
	CHECK(json_is("d74401020304", "\"01020304\""));
	CHECK(json_is("d6824101d5420102", "[\"AQ==\",\"AQI\"]"));
	CHECK(json_is("d7a1616141ff", "{\"a\":\"ff\"}"));
	/* other tags: dropped, the item kept */
	CHECK(json_is("c11a514b67b0", "1363896240"));
	CHECK(json_is("c249010000000000000000", "\"AQAAAAAAAAAA\""));
	CHECK(json_is("d9d9f783010203", "[1,2,3]"));
	CHECK(json_is("9f018202039f0405ffff", "[1,[2,3],[4,5]]"));
	CHECK(json_is("bf61610161629f0203ffff", "{\"a\":1,\"b\":[2,3]}"));
	/* keys: text as it is, anything else as its diagnostic notation */
	CHECK(json_is("a201020304", "{\"1\":2,\"3\":4}"));
	CHECK(json_is("a3410102f50380f6", "{\"h'01'\":2,\"true\":3,\"[]\":null}"));
	CHECK(json_is("a1a1616101f4", "{\"{\\\"a\\\": 1}\":false}"));
	CHECK(json_is("a17f61616162ff01", "{\"ab\":1}"));
	/* a repeated key: the later value */
	CHECK(json_is("a2616101616102", "{\"a\":2}"));
	/* a key with a NUL in it: refused, as no JSON input (jansson) could read it back */
	{
		struct maro_err e;
		const uint8_t k[] = { 0xa1, 0x62, 'a', 0, 0x01 };

		CHECK(maro_cbor_to_json(k, sizeof k, &e) == NULL && strstr(e.msg, "map key holds a NUL"));
	}
}

/* Every finite half float, as a JSON number, comes back as that very half. */
static void
test_every_half(void)
{
	struct maro_buf out = { 0 };
	unsigned h, e, m, bad = 0;

	for (h = 0; h < 0x10000; h++) {
		double v;
		json_t *j;

		e = h >> 10 & 31;
		m = h & 1023;
		if (e == 31)
			continue;	/* Infinity, NaN: not JSON numbers */
		v = e ? ldexp(m + 1024, (int)e - 25) : ldexp(m, -24);
		if (h & 0x8000)
			v = -v;
		j = json_real(v);
		out.len = 0;
		if (!j || maro_json_to_cbor(j, &out) < 0 || out.len != 3 || out.p[0] != 0xf9 ||
		    out.p[1] != h >> 8 || out.p[2] != (h & 0xff)) {
			if (bad++ < 5)
				fprintf(stderr, "half %04x: %zu bytes\n", h, out.len);
		}
		json_decref(j);
	}
	CHECK(bad == 0);
	maro_buf_free(&out);
}

/* Any single float comes back as itself in at most 5 bytes; a double that is no single in 9. */
static void
test_float_widths(void)
{
	struct maro_buf out = { 0 };
	struct maro_err err;
	uint32_t x = 2463534242u, bits;
	unsigned i, bad = 0;

	for (i = 0; i < 40000; i++) {
		float f;
		double v;
		json_t *j, *back = NULL;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		bits = i % 2 ? x : x >> (i % 32);
		memcpy(&f, &bits, sizeof f);
		if (!isfinite(f))
			continue;
		/* every fourth: a double just past the single, which no single holds */
		v = i % 4 == 3 && f != 0 ? nextafter((double)f, INFINITY) : (double)f;
		j = json_real(v);
		out.len = 0;
		if (maro_json_to_cbor(j, &out) == 0)
			back = maro_cbor_to_json(out.p, out.len, &err);
		if (!back || json_real_value(back) != v || !signbit(json_real_value(back)) != !signbit(v) ||
		    out.len > (v == (double)f ? 5u : 9u) || (out.len == 5 && memcmp(out.p + 1,
		    (uint8_t[]){ bits >> 24, bits >> 16 & 255, bits >> 8 & 255, bits & 255 }, 4))) {
			if (bad++ < 5)
				fprintf(stderr, "float %08x (%g): %zu bytes\n", (unsigned)bits, v, out.len);
		}
		json_decref(back);
		json_decref(j);
	}
	CHECK(bad == 0);
	maro_buf_free(&out);
}

static void
test_to_cbor(void)
{
	struct maro_buf out = { 0 };
	json_t *deep, *inner, *obj;
	int i;

	CHECK(cbor_is("0", "00"));
	CHECK(cbor_is("23", "17"));
	CHECK(cbor_is("24", "1818"));
	CHECK(cbor_is("1000000", "1a000f4240"));
	CHECK(cbor_is("-1", "20"));
	CHECK(cbor_is("-25", "3818"));
	CHECK(cbor_is("9223372036854775807", "1b7fffffffffffffff"));
	CHECK(cbor_is("-9223372036854775808", "3b7fffffffffffffff"));
	/* floats: the shortest width that holds the value exactly */
	CHECK(cbor_is("0.0", "f90000"));
	CHECK(cbor_is("-0.0", "f98000"));
	CHECK(cbor_is("1.0", "f93c00"));
	CHECK(cbor_is("1.5", "f93e00"));
	CHECK(cbor_is("-4.0", "f9c400"));
	CHECK(cbor_is("65504.0", "f97bff"));
	CHECK(cbor_is("65505.0", "fa477fe100"));
	CHECK(cbor_is("70000.0", "fa4788b800"));
	CHECK(cbor_is("65536.0", "fa47800000"));
	CHECK(cbor_is("100000.0", "fa47c35000"));
	CHECK(cbor_is("0.00006103515625", "f90400"));
	CHECK(cbor_is("5.960464477539063e-8", "f90001"));
	CHECK(cbor_is("2.9802322387695312e-8", "fa33000000"));
	CHECK(cbor_is("8.940696716308594e-8", "fa33c00000"));
	CHECK(cbor_is("1.401298464324817e-45", "fa00000001"));
	CHECK(cbor_is("3.4028234663852886e+38", "fa7f7fffff"));
	CHECK(cbor_is("3.4028234663852889e+38", "fb47efffffe0000001"));
	CHECK(cbor_is("1e39", "fb48078287f49c4a1d"));
	CHECK(cbor_is("0.1", "fb3fb999999999999a"));
	CHECK(cbor_is("1.1", "fb3ff199999999999a"));
	CHECK(cbor_is("1e300", "fb7e37e43c8800759c"));
	CHECK(cbor_is("-1e-300", "fb81a56e1fc2f8f359"));
	CHECK(cbor_is("\"\"", "60"));
	CHECK(cbor_is("\"\xc3\xbc\"", "62c3bc"));
	CHECK(cbor_is("\"a\\u0000b\"", "63610062"));
	CHECK(cbor_is("true", "f5"));
	CHECK(cbor_is("false", "f4"));
	CHECK(cbor_is("null", "f6"));
	CHECK(cbor_is("[]", "80"));
	CHECK(cbor_is("{}", "a0"));
	CHECK(cbor_is("[1, [2, 3], {\"a\": null}]", "8301820203a16161f6"));
	/* objects keep their order */
	CHECK(cbor_is("{\"b\": 1, \"a\": 2}", "a2616201616102"));

	/* jansson parses no NUL in a key, but holds one */
	obj = json_object();
	json_object_setn_new(obj, "a\0", 2, json_integer(1));
	CHECK(maro_json_to_cbor(obj, &out) == 0 && out.len == 5 && memcmp(out.p, "\xa1\x62\x61\x00\x01", 5) == 0);
	json_decref(obj);
	out.len = 0;

	/* appends, and leaves out as it was on failure */
	maro_buf_append(&out, "\x01", 1);
	CHECK(maro_json_to_cbor(json_true(), &out) == 0 && out.len == 2 && out.p[1] == 0xf5);
	errno = 0;
	CHECK(maro_json_to_cbor(NULL, &out) < 0 && errno == EINVAL && out.len == 2);
	/* deeper than any parser makes: refused, with bounded recursion */
	deep = json_array();
	for (i = 0; i < 5000; i++) {
		inner = json_array();
		json_array_append_new(inner, deep);
		deep = inner;
	}
	errno = 0;
	CHECK(maro_json_to_cbor(deep, &out) < 0 && errno == ELOOP && out.len == 2);
	json_decref(deep);
	maro_buf_free(&out);
}

/* CBOR -> JSON -> CBOR: the same bytes for what JSON can say, in preferred encoding. */
static int
round_trip(const char *hex, const char *back)
{
	struct maro_buf in = { 0 }, out = { 0 };
	struct maro_err err;
	json_t *j;
	char *got = NULL;
	int ok;

	unhex(hex, &in);
	j = maro_cbor_to_json(in.p, in.len, &err);
	ok = j && maro_json_to_cbor(j, &out) == 0 && (got = tohex(out.p, out.len)) &&
	    strcmp(got, back ? back : hex) == 0;
	if (!ok)
		fprintf(stderr, "round trip %s: got %s, want %s\n", hex, got ? got : "(error)",
		    back ? back : hex);
	free(got);
	json_decref(j);
	maro_buf_free(&in);
	maro_buf_free(&out);
	return ok;
}

static void
test_round_trips(void)
{
	/* {"tag": "t", "payload": [1, -2, 1.5, 0.1, "\u00fc", true, null, {"k": []}]} */
	CHECK(round_trip("a2637461676174677061796c6f61648801" "21f93e00fb3fb999999999999a62c3bcf5f6a1616b80", NULL));
	CHECK(round_trip("a0", NULL));
	CHECK(round_trip("1bffffffffffffffff", "fa5f800000"));		/* 2^64 - 1: 2^64, a single */
	/* lossy: the form changes, or the value */
	CHECK(round_trip("4101", "624151"));				/* bytes: base64url text */
	CHECK(round_trip("c11a514b67b0", "1a514b67b0"));		/* tag dropped */
	CHECK(round_trip("f7", "f6"));					/* undefined: null */
	CHECK(round_trip("f97e00", "f6"));				/* NaN: null */
	CHECK(round_trip("a10102", "a1613102"));			/* key 1: "1" */
	CHECK(round_trip("fa3fc00000", "f93e00"));			/* 1.5 single: half */
	CHECK(round_trip("9f01ff", "8101"));				/* indefinite: definite */
	CHECK(round_trip("1818", NULL));
	CHECK(round_trip("1900ff", "18ff"));				/* not preferred: preferred */
}

static void
test_refused(void)
{
	struct maro_buf in = { 0 }, out = { 0 };
	struct maro_err err;
	json_t *root, *j;
	size_t i;

	CHECK(refused("62c328", "UTF-8"));			/* text, not UTF-8 */
	CHECK(refused("a162c32801", "UTF-8"));			/* a key, not UTF-8 */
	CHECK(refused("a1a162c3280101", "UTF-8"));		/* a key inside a key */
	CHECK(refused("7f61c361bcff", "UTF-8"));		/* a code point split over chunks */
	CHECK(refused("63eda080", "UTF-8"));			/* a surrogate */
	CHECK(refused("83010203" "04", "trailing"));		/* not exactly one item */
	CHECK(refused("830102", "truncated"));
	CHECK(refused("", "empty"));
	CHECK(refused("ff", "break"));
	/* well-formed, but libcbor 0.8 decodes no simple(16), simple(32) or tag 6 */
	CHECK(refused("f0", "simple value 16 cannot be converted"));
	CHECK(refused("81f820", "simple value 32 cannot be converted"));
	CHECK(refused("a161c6c601", "tag 6 cannot be converted"));
	CHECK(refused("f810", "malformed"));			/* simple(16) in two bytes */
	CHECK(refused("9f01", "truncated"));
	CHECK(refused("5b1000000000000000", "limit"));		/* 2^60 bytes declared */
	CHECK(refused("9b1000000000000000", "limit"));		/* 2^60 items declared */
	CHECK(refused("7f4100ff", "malformed"));		/* a bytes chunk in text */

	/* 1024 deep is the most any item nests: converted; 1025 is refused */
	for (i = 0; i < 1024; i++)
		maro_buf_append(&in, "\x81", 1);
	maro_buf_append(&in, "\xc1\x00", 2);
	CHECK(maro_cbor_to_diag(in.p, in.len, &out, &err) < 0 && strstr(err.msg, "nesting"));
	CHECK(maro_cbor_to_json(in.p, in.len, &err) == NULL && strstr(err.msg, "nesting"));
	in.len = 1024;
	maro_buf_append(&in, "\x00", 1);
	CHECK(maro_cbor_to_diag(in.p, in.len, &out, &err) == 0 && out.len == 2049 &&
	    out.p[1023] == '[' && out.p[1024] == '0' && out.p[1025] == ']');
	root = maro_cbor_to_json(in.p, in.len, &err);
	for (j = root, i = 0; j && i < 1024; i++)
		j = json_array_get(j, 0);
	CHECK(j && json_is_integer(j) && json_integer_value(j) == 0);
	json_decref(root);
	in.p[1023] = 0x9f;	/* the innermost array indefinite, without its break */
	CHECK(maro_cbor_to_json(in.p, in.len, &err) == NULL && strstr(err.msg, "truncated"));
	maro_buf_free(&in);
	maro_buf_free(&out);
}

void
test_convert(void)
{
	test_diag();
	test_diag_floats_read_back();
	test_to_json();
	test_to_cbor();
	test_every_half();
	test_float_widths();
	test_round_trips();
	test_refused();
}
