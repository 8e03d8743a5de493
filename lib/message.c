#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "message.h"
#include "utf8.h"

static const char *const type_names[] = { NULL, "task", "notification" };
static const char *const stage_names[] = { NULL, "request", "receive", "complete" };
static const unsigned char type_name_lens[] = { 0, 4, 12 }, stage_name_lens[] = { 0, 7, 7, 8 };

enum key {
	KEY_TAG, KEY_SOURCE, KEY_DESTINATION, KEY_SESSION_TYPE, KEY_SESSION_STAGE,
	KEY_SESSION_ID, KEY_MESSAGE_ID, KEY_REPLY_TO, KEY_PAYLOAD, NKEYS
};

/* Also the encoding order. */
static const char *const key_names[NKEYS] = {
	"tag", "source", "destination", "session_type", "session_stage",
	"session_id", "message_id", "reply_to", "payload",
};
static const unsigned char key_lens[NKEYS] = { 3, 6, 11, 12, 13, 10, 10, 8, 7 };

const char *
maro_session_type_name(enum maro_session_type t)
{
	return (unsigned)t < 3 ? type_names[t] : NULL;
}

const char *
maro_stage_name(enum maro_stage s)
{
	return (unsigned)s < 4 ? stage_names[s] : NULL;
}

struct maro_str
maro_str_c(const char *s)
{
	struct maro_str r = { s, s ? strlen(s) : 0 };
	return r;
}

int
maro_str_eq(struct maro_str a, const char *s)
{
	size_t n = strlen(s);

	return a.p && a.n == n && memcmp(a.p, s, n) == 0;
}

int
maro_str_same(struct maro_str a, struct maro_str b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

int
maro_str_has_prefix(struct maro_str a, const char *prefix)
{
	size_t n = strlen(prefix);

	return a.p && a.n >= n && memcmp(a.p, prefix, n) == 0;
}

char *
maro_str_dup(struct maro_str a)
{
	char *s = malloc(a.n + 1);

	if (!s)
		return NULL;
	if (a.n)
		memcpy(s, a.p, a.n);
	s[a.n] = '\0';
	return s;
}

static int bad(struct maro_err *err, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
bad(struct maro_err *err, size_t off, const char *fmt, ...)
{
	va_list ap;

	err->offset = off;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Length of the item at p, which the scanner found well-formed: a walk over
 * the heads, bounds-checked all the same (0 for anything amiss).
 */
static size_t
skip(const uint8_t *p, size_t n, unsigned depth)
{
	unsigned major, ai;
	uint64_t v, i;
	size_t h, pos, k;

	if (!n || depth > MARO_CBOR_MAX_DEPTH_LIMIT)
		return 0;
	ai = p[0] & 31;
	if (ai >= 28 && ai != 31)
		return 0;
	h = maro_cbor_head(p, n, &major, &v);
	if (!h)
		return 0;
	switch (major) {
	case 0:
	case 1:
		return ai == 31 ? 0 : h;
	case 7:
		return ai == 31 ? 0 : h;	/* a break out of place */
	case 2:
	case 3:
		if (v != UINT64_MAX)
			return v <= n - h ? h + (size_t)v : 0;
		for (pos = h; pos < n; pos += k) {
			if (p[pos] == 0xff)
				return pos + 1;
			if ((unsigned)(p[pos] >> 5) != major || (p[pos] & 31) == 31)
				return 0;
			if (!(k = skip(p + pos, n - pos, depth + 1)))
				return 0;
		}
		return 0;
	case 4:
	case 5:
		pos = h;
		if (v == UINT64_MAX) {
			while (pos < n && p[pos] != 0xff) {
				if (!(k = skip(p + pos, n - pos, depth + 1)))
					return 0;
				pos += k;
			}
			return pos < n ? pos + 1 : 0;
		}
		if (v > n)
			return 0;	/* more items than bytes */
		for (i = 0; i < (major == 5 ? 2 * v : v); i++) {
			if (!(k = skip(p + pos, n - pos, depth + 1)))
				return 0;
			pos += k;
		}
		return pos;
	default:	/* 6: a tag and its item */
		if (ai == 31 || !(k = skip(p + h, n - h, depth + 1)))
			return 0;
		return h + k;
	}
}

/* The nesting allowed inside a message's values (0: the scanner's maximum). */
static __thread size_t item_depth;

/* Length of the well-formed item at p that is not a small integer or short string. */
static size_t
item_len_scan(const uint8_t *p, size_t n)
{
	static __thread struct maro_cbor_scan s;
	struct maro_cbor_limits lim = { n ? n : 1, item_depth ? item_depth : MARO_CBOR_MAX_DEPTH_LIMIT };
	struct maro_err err;
	size_t len;

	/* integers and definite strings, every field but the payload: their head says */
	if (n && (p[0] & 31) < 28 && (p[0] >> 5) <= 3) {
		unsigned major;
		uint64_t val;
		size_t h = maro_cbor_head(p, n, &major, &val);

		if (!h)
			return 0;
		if (major <= 1)
			return h;
		return val <= n - h ? h + (size_t)val : 0;
	}
	if (!item_depth)
		return skip(p, n, 0);
	maro_cbor_scan_init(&s, &lim);
	if (maro_cbor_scan(&s, p, n, &len, &err) != MARO_SCAN_DONE)
		return 0;
	return len;
}

/*
 * Length of the well-formed item at p.  Our keys and most of our values
 * are small integers and strings under 256 bytes: their first byte or two
 * say, inline (a call per field was a tenth of a message's decode).
 */
static inline size_t
item_len(const uint8_t *p, size_t n)
{
	size_t k;

	if (n && (p[0] >> 5) <= 3 && (p[0] & 31) < 24) {
		k = (p[0] >> 5) <= 1 ? 1 : 1 + (size_t)(p[0] & 31);
		return k <= n ? k : 0;
	}
	if (n >= 2 && (p[0] >> 5) == 3 && (p[0] & 31) == 24)
		return (size_t)p[1] + 2 <= n ? (size_t)p[1] + 2 : 0;
	return item_len_scan(p, n);
}

/*
 * The head's length of the definite string at p, an item of exactly n
 * bytes (item_len said so, or the caller knows): what follows it is the
 * string.  0 if p is not a definite text string.
 */
static size_t
text_head(const uint8_t *p, size_t n)
{
	unsigned ai = p[0] & 31;
	size_t h = ai < 24 ? 1 : ai < 28 ? 1 + ((size_t)1 << (ai - 24)) : 0;

	return n && p[0] >> 5 == 3 && h && h <= n ? h : 0;
}

/*
 * Whether the n bytes at s are ASCII without a NUL, eight at a time: a
 * word has a byte of 0x80 or more, or of 0 (its high bit set once one is
 * taken away, and not set before), when (w | (w - 0x01..01) & ~w) has a
 * high bit.  The common text of a message is a short name or a UUID.
 */
static inline int
ascii_no_nul(const uint8_t *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t w, bad = 0;
	size_t i = 0;

	if (n < 8) {
		/* a byte at a time: a copy of fewer bytes into a word is a call, and a stall */
		for (; i < n; i++)
			if (s[i] - 1u >= 0x7f)
				return 0;
		return 1;
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		bad |= w | ((w - ones) & ~w);
	}
	if (i < n) {
		/* the tail: the last eight bytes, some of them seen already */
		memcpy(&w, s + n - 8, 8);
		bad |= w | ((w - ones) & ~w);
	}
	return !(bad & highs);
}

/*
 * The UTF-8 text of the item of n bytes at p (n from item_len): a
 * definite-length string, and without a NUL (-2), since it names something
 * ("w1\0x" is not "w1").
 */
static int
text_value(const uint8_t *p, size_t n, struct maro_str *out)
{
	size_t h = text_head(p, n);

	if (n && p[0] == 0x7f)
		return -3;
	if (!h)
		return -1;
	/* names and ids are ASCII: one pass for both checks, no call */
	if (!ascii_no_nul(p + h, n - h)) {
		if (!maro_utf8_valid(p + h, n - h))
			return -1;
		if (memchr(p + h, 0, n - h))
			return -2;
	}
	out->p = (const char *)p + h;
	out->n = n - h;
	return 0;
}

/*
 * A definite text string's bytes, unchecked: for comparing with our own
 * ASCII names, which no invalid UTF-8 can equal.  -1 if not such a string.
 */
static int
text_bytes(const uint8_t *p, size_t n, struct maro_str *out)
{
	unsigned major;
	uint64_t len;
	size_t h = maro_cbor_head(p, n, &major, &len);

	if (!h || major != 3 || len == UINT64_MAX || len > n - h)
		return -1;
	out->p = (const char *)p + h;
	out->n = len;
	return 0;
}

/* Which of names (a text item of n bytes at p, n from item_len) it is, or -1. */
static int
enum_value(const uint8_t *p, size_t n, const char *const *names, const unsigned char *lens, int count)
{
	size_t h = text_head(p, n);
	int i;

	if (!h)
		return -1;
	for (i = 1; i < count; i++)
		if (n - h == lens[i] && !memcmp(p + h, names[i], lens[i]))
			return i;
	return -1;
}

/* Which of our keys s is, or NKEYS: by length first, then a comparison of known size. */
static int
key_index(struct maro_str s)
{
#define IS(name, k) (memcmp(s.p, name, sizeof name - 1) ? NKEYS : (k))
	switch (s.n) {
	case 3: return IS("tag", KEY_TAG);
	case 6: return IS("source", KEY_SOURCE);
	case 7: return IS("payload", KEY_PAYLOAD);
	case 8: return IS("reply_to", KEY_REPLY_TO);
	case 10: return !memcmp(s.p, "message_id", 10) ? KEY_MESSAGE_ID : IS("session_id", KEY_SESSION_ID);
	case 11: return IS("destination", KEY_DESTINATION);
	case 12: return IS("session_type", KEY_SESSION_TYPE);
	case 13: return IS("session_stage", KEY_SESSION_STAGE);
	default: return NKEYS;
	}
#undef IS
}

/*
 * A key written in chunks (an indefinite-length text string of klen bytes
 * at p) that spells one of ours: which, else NKEYS.  Taken as an unknown
 * key, it would slip past the check for a repeated key.
 */
static int
chunked_key(const uint8_t *p, size_t klen)
{
	char buf[16];
	size_t pos = 1, len = 0;

	while (pos < klen && p[pos] != 0xff) {
		size_t c = item_len(p + pos, klen - pos), h = text_head(p + pos, c);

		if (!c || !h || len + (c - h) > sizeof buf)
			return NKEYS;
		memcpy(buf + len, p + pos + h, c - h);
		len += c - h;
		pos += c;
	}
	return key_index((struct maro_str){ buf, len });
}

/*
 * Whether keys a and b (na, nb bytes) are the same key: the same bytes, or
 * the same text however its length is written (a reader that keeps one
 * of them, as JSON does, could not tell them apart).
 */
static int
same_key(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	struct maro_str ta, tb;

	if (na == nb && !memcmp(a, b, na))
		return 1;
	return text_bytes(a, na, &ta) == 0 && text_bytes(b, nb, &tb) == 0 && ta.n == tb.n &&
	    !memcmp(ta.p, tb.p, ta.n);
}

/* Whether the unknown key at k (n bytes) is one m already has. */
static int
repeated_extra(const struct maro_msg *m, const uint8_t *k, size_t n)
{
	size_t i;

	for (i = 0; i < m->nextra; i++)
		if (same_key(m->extra[i].p, item_len(m->extra[i].p, m->extra[i].n), k, n))
			return 1;
	return 0;
}

/* The error for the repeated unknown key at k (n bytes): its text if printable, else its bytes. */
static int
repeated(struct maro_err *err, size_t off, const uint8_t *k, size_t n)
{
	struct maro_str t;
	char hex[2 * 16 + 1];
	size_t i;

	if (text_bytes(k, n, &t) == 0 && t.n <= 64) {
		for (i = 0; i < t.n && t.p[i] >= 0x20 && t.p[i] < 0x7f; i++)
			;
		if (i == t.n)
			return bad(err, off, "repeated key '%.*s'", (int)t.n, t.p);
	}
	for (i = 0; i < n && i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", k[i]);
	return bad(err, off, "repeated key (CBOR %s%s)", hex, n > 16 ? "..." : "");
}

/* Decodes the map at p; *end: where it ends (after the break of an indefinite map). */
static int
decode(struct maro_msg *m, const uint8_t *p, size_t n, size_t *end, struct maro_err *err)
{
	unsigned major;
	uint64_t count, i;
	size_t pos, h;
	unsigned seen = 0;

	/* the extras are written as they are found: clearing them was a third of the struct's cost */
	memset(m, 0, offsetof(struct maro_msg, extra));
	h = maro_cbor_head(p, n, &major, &count);
	if (!h || major != 5)
		return bad(err, 0, "item is not a map (a message is a CBOR map)");
	pos = h;
	for (i = 0; count == UINT64_MAX || i < count; i++) {
		size_t kstart = pos, klen, vlen;
		struct maro_str key = { NULL, 0 };
		int k = NKEYS;

		if (pos >= n)
			return bad(err, pos, "truncated map");
		if (count == UINT64_MAX && p[pos] == 0xff) {
			pos++;
			break;
		}
		/* ours are short text strings: their head is their length */
		if (p[pos] >> 5 == 3 && (p[pos] & 31) < 24 && (size_t)(p[pos] & 31) < n - pos) {
			klen = 1 + (size_t)(p[pos] & 31);
			key.p = (const char *)p + pos + 1;
			key.n = klen - 1;
			k = key_index(key);
		} else {
			klen = item_len(p + pos, n - pos);
			if (!klen)
				return bad(err, pos, "malformed map key");
			/* a key that is not one of ours is kept as it is, valid text or not */
			if (text_bytes(p + pos, klen, &key) == 0)
				k = key_index(key);
			else if (p[pos] == 0x7f && (k = chunked_key(p + pos, klen)) < NKEYS)
				return bad(err, pos, "key '%s' written in chunks: the message's own keys must be "
				    "definite-length strings", key_names[k]);
		}
		pos += klen;
		vlen = item_len(p + pos, n - pos);
		if (!vlen)
			return bad(err, pos, "malformed map value");
		if (k < NKEYS) {
			const uint8_t *v = p + pos;
			int e;

			if (seen & (1u << k))
				return bad(err, kstart, "repeated key '%s'", key_names[k]);
			seen |= 1u << k;
			switch (k) {
			case KEY_TAG: e = text_value(v, vlen, &m->tag); break;
			case KEY_SOURCE: e = text_value(v, vlen, &m->source); break;
			case KEY_DESTINATION: e = text_value(v, vlen, &m->destination); break;
			case KEY_SESSION_ID: e = text_value(v, vlen, &m->session_id); break;
			case KEY_MESSAGE_ID: e = text_value(v, vlen, &m->message_id); break;
			case KEY_REPLY_TO: e = text_value(v, vlen, &m->reply_to); break;
			case KEY_SESSION_TYPE:
				e = enum_value(v, vlen, type_names, type_name_lens, 3);
				if (e > 0)
					m->type = (enum maro_session_type)e;
				break;
			case KEY_SESSION_STAGE:
				e = enum_value(v, vlen, stage_names, stage_name_lens, 4);
				if (e > 0)
					m->stage = (enum maro_stage)e;
				break;
			default:
				m->payload.p = v;
				m->payload.n = vlen;
				e = 0;
			}
			if (e < 0) {
				if (k == KEY_SESSION_TYPE)
					return bad(err, pos, "'%s' must be \"task\" or \"notification\"", key_names[k]);
				if (k == KEY_SESSION_STAGE)
					return bad(err, pos, "'%s' must be \"request\", \"receive\" or \"complete\"", key_names[k]);
				if (e == -2)
					return bad(err, pos, "'%s' must not contain a NUL byte", key_names[k]);
				if (e == -3)
					return bad(err, pos, "'%s' must be a definite-length text string", key_names[k]);
				return bad(err, pos, "'%s' must be a UTF-8 text string", key_names[k]);
			}
		} else {
			if (m->nextra == MARO_MSG_MAX_EXTRA)
				return bad(err, kstart, "more than 32 unknown keys");
			if (m->nextra && repeated_extra(m, p + kstart, klen))
				return repeated(err, kstart, p + kstart, klen);
			m->extra[m->nextra].p = p + kstart;
			m->extra[m->nextra].n = klen + vlen;
			m->nextra++;
		}
		pos += vlen;
	}
	*end = pos;
	if (!m->tag.p)
		return bad(err, 0, "message has no 'tag'");
	return 0;
}

int
maro_msg_text(const uint8_t *p, size_t n, const char *key, struct maro_str *out)
{
	unsigned major;
	uint64_t count, i;
	size_t pos, klen = strlen(key), k, v;

	pos = maro_cbor_head(p, n, &major, &count);
	if (!pos || major != 5)
		return -1;
	for (i = 0; count == UINT64_MAX || i < count; i++) {
		if (pos >= n)
			return -1;
		if (count == UINT64_MAX && p[pos] == 0xff)
			break;
		if (!(k = item_len(p + pos, n - pos)) || !(v = item_len(p + pos + k, n - pos - k)))
			return -1;
		/* ours are short text strings: their head is their length */
		if (k == klen + 1 && p[pos] == (0x60 | klen) && !memcmp(p + pos + 1, key, klen))
			return text_bytes(p + pos + k, v, out) < 0 ? -1 : 1;
		pos += k + v;
	}
	return 0;
}

int
maro_msg_decode(struct maro_msg *m, const uint8_t *p, size_t n, struct maro_err *err)
{
	size_t end;

	return decode(m, p, n, &end, err);
}

static const char *
moved(const void *p, const uint8_t *from, const uint8_t *to)
{
	return p ? (const char *)to + ((const uint8_t *)p - from) : NULL;
}

void
maro_msg_rebase(struct maro_msg *dst, const struct maro_msg *m, const uint8_t *from,
    const uint8_t *to)
{
	size_t i;

	memcpy(dst, m, offsetof(struct maro_msg, extra));
	dst->tag.p = moved(m->tag.p, from, to);
	dst->source.p = moved(m->source.p, from, to);
	dst->destination.p = moved(m->destination.p, from, to);
	dst->session_id.p = moved(m->session_id.p, from, to);
	dst->message_id.p = moved(m->message_id.p, from, to);
	dst->reply_to.p = moved(m->reply_to.p, from, to);
	dst->payload.p = (const uint8_t *)moved(m->payload.p, from, to);
	for (i = 0; i < m->nextra; i++) {
		dst->extra[i].p = (const uint8_t *)moved(m->extra[i].p, from, to);
		dst->extra[i].n = m->extra[i].n;
	}
}

int
maro_msg_decode_checked(struct maro_msg *m, const uint8_t *p, size_t n,
    const struct maro_cbor_limits *lim, struct maro_err *err)
{
	size_t depth = lim->max_depth ? lim->max_depth : MARO_CBOR_DEFAULT_MAX_DEPTH, end = 0;
	int rc;

	if (depth < 2 || depth > MARO_CBOR_MAX_DEPTH_LIMIT) {
		/* no room for the shortcut: check, then decode */
		if (maro_cbor_check(p, n, lim, err) < 0)
			return -1;
		return decode(m, p, n, &end, err);
	}
	if (lim->max_item && n > lim->max_item)
		return bad(err, 0, "item of %zu bytes exceeds the limit of %zu", n, lim->max_item);
	/* the map is one level: its keys and values get the rest */
	item_depth = depth - 1;
	rc = decode(m, p, n, &end, err);
	item_depth = 0;
	if (rc == 0 && end != n)
		return bad(err, end, end < n ? "trailing bytes after the CBOR item" : "truncated CBOR item");
	return rc;
}

int
maro_msg_decode_prefix(struct maro_msg *m, const uint8_t *p, size_t n,
    const struct maro_cbor_limits *lim, size_t *len)
{
	size_t depth = lim->max_depth ? lim->max_depth : MARO_CBOR_DEFAULT_MAX_DEPTH;
	size_t max = lim->max_item ? lim->max_item : MARO_CBOR_DEFAULT_MAX_ITEM;
	struct maro_err err;
	int rc;

	if (depth < 2 || depth > MARO_CBOR_MAX_DEPTH_LIMIT)
		return -1;
	/* an item that ends within the limit is within it */
	if (n > max)
		n = max;
	item_depth = depth - 1;
	rc = decode(m, p, n, len, &err);
	item_depth = 0;
	return rc;
}

/* A head of major type major and argument n at q (room for 9 bytes); where it ends. */
static uint8_t *
put_head(uint8_t *q, unsigned major, uint64_t n)
{
	int w, i;

	if (n < 24) {
		*q++ = (uint8_t)(major << 5 | n);
		return q;
	}
	w = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffu ? 4 : 8;
	*q++ = (uint8_t)(major << 5 | (w == 1 ? 24 : w == 2 ? 25 : w == 4 ? 26 : 27));
	for (i = w - 1; i >= 0; i--)
		*q++ = (uint8_t)(n >> (8 * i));
	return q;
}

/* Each key encoded (head and name), padded to 16 bytes: copied whole, one store. */
static const char key_cbor[NKEYS][16] = {
	"\x63tag", "\x66source", "\153destination", "\x6csession_type",
	"\x6dsession_stage", "\x6asession_id", "\x6amessage_id", "\x68reply_to", "\x67payload",
};

/* key k and text v at q (with 16 bytes of room for the key), if v is there */
static uint8_t *
put_text(uint8_t *q, int k, struct maro_str v)
{
	if (!v.p)
		return q;
	memcpy(q, key_cbor[k], 16);
	q = put_head(q + 1 + key_lens[k], 3, v.n);
	memcpy(q, v.p, v.n);
	return q + v.n;
}

static const uint8_t type_len[3] = { 0, 4, 12 }, stage_len[4] = { 0, 7, 7, 8 };

size_t
maro_msg_encoded_max(const struct maro_msg *m)
{
	const struct maro_str *text[6] = { &m->tag, &m->source, &m->destination,
	    &m->session_id, &m->message_id, &m->reply_to };
	size_t room = 9 + 9 * (16 + 9), i;	/* map head; per field key (copied as 16) and head */

	room += (m->type < 3 ? type_len[m->type] : 0) + (m->stage < 4 ? stage_len[m->stage] : 0);
	room += m->payload.n;
	for (i = 0; i < 6; i++)
		room += text[i]->n;
	for (i = 0; i < m->nextra; i++)
		room += m->extra[i].n;
	return room;
}

/*
 * Plain stores into room made once: the encoder was a sixth of a streaming
 * sender when every field reserved room for itself.
 */
static inline size_t
encode_into(const struct maro_msg *m, uint8_t *out, struct maro_dest_at *d)
{
	struct maro_str type = { maro_session_type_name(m->type), 0 };
	struct maro_str stage = { maro_stage_name(m->stage), 0 };
	const struct maro_str *text[6] = { &m->tag, &m->source, &m->destination,
	    &m->session_id, &m->message_id, &m->reply_to };
	size_t pairs = m->nextra, i;
	uint8_t *q;

	if (type.p)
		type.n = type_len[m->type];
	if (stage.p)
		stage.n = stage_len[m->stage];
	pairs += !!type.p + !!stage.p + !!m->payload.p;
	for (i = 0; i < 6; i++)
		pairs += !!text[i]->p;
	q = put_head(out, 5, pairs);
	q = put_text(q, KEY_TAG, m->tag);
	q = put_text(q, KEY_SOURCE, m->source);
	if (d)
		d->at = (size_t)(q - out);
	q = put_text(q, KEY_DESTINATION, m->destination);
	if (d)
		d->n = (size_t)(q - out) - d->at;
	q = put_text(q, KEY_SESSION_TYPE, type);
	q = put_text(q, KEY_SESSION_STAGE, stage);
	q = put_text(q, KEY_SESSION_ID, m->session_id);
	if (d) {
		d->sid_n = m->session_id.p ? m->session_id.n : 0;
		d->sid = (size_t)(q - out) - d->sid_n;
	}
	q = put_text(q, KEY_MESSAGE_ID, m->message_id);
	q = put_text(q, KEY_REPLY_TO, m->reply_to);
	if (m->payload.p) {
		memcpy(q, key_cbor[KEY_PAYLOAD], 16);
		memcpy(q + 8, m->payload.p, m->payload.n);
		q += 8 + m->payload.n;
	}
	for (i = 0; i < m->nextra; i++) {
		memcpy(q, m->extra[i].p, m->extra[i].n);
		q += m->extra[i].n;
	}
	return (size_t)(q - out);
}

size_t
maro_msg_encode_into(const struct maro_msg *m, uint8_t *out)
{
	return encode_into(m, out, NULL);
}

int
maro_msg_encode(const struct maro_msg *m, struct maro_buf *out)
{
	return maro_msg_encode_dest(m, out, NULL);
}

int
maro_msg_encode_dest(const struct maro_msg *m, struct maro_buf *out, struct maro_dest_at *d)
{
	if (maro_buf_reserve(out, maro_msg_encoded_max(m)) < 0)
		return -1;
	out->len += encode_into(m, out->p + out->len, d);
	return 0;
}

size_t
maro_msg_redirect_max(size_t n, size_t dest_n)
{
	/* a map head one byte longer at most; the key copied as 16; a text head */
	return n + 1 + 16 + 9 + dest_n;
}

/*
 * Only the map's count changes (one pair more, unless the destination was
 * there), and one pair is put in; the rest is copied as it is.
 */
size_t
maro_msg_redirect(uint8_t *out, const uint8_t *p, size_t n, const struct maro_dest_at *d,
    struct maro_str dest)
{
	unsigned major;
	uint64_t pairs = 0;
	size_t h = maro_cbor_head(p, n, &major, &pairs);
	uint8_t *q;

	q = put_head(out, 5, pairs - (d->n > 0) + 1);
	memcpy(q, p + h, d->at - h);
	q += d->at - h;
	q = put_text(q, KEY_DESTINATION, dest);
	memcpy(q, p + d->at + d->n, n - d->at - d->n);
	return (size_t)(q - out) + n - d->at - d->n;
}

/*
 * UUIDs must be unique, not secret (only members can deliver: SECURITY in
 * maro(7)), and the kernel's generator cost a streaming sender 13% of its
 * time.  So: xoshiro256** per thread, seeded from getrandom(2), seeded
 * again in a forked child (its copy of the state would repeat the parent's
 * ids) and every 2^20 ids.
 */
static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static unsigned forks;		/* children seen: bumped in each new child */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void
count_fork(void)
{
	forks++;
}

static void
watch_forks(void)
{
	pthread_atfork(NULL, NULL, count_fork);
}

/* Two random words. */
static void
random2(uint64_t out[2])
{
	static __thread uint64_t st[4];
	static __thread unsigned seen = ~0u;	/* the forks count it was seeded at */
	static __thread uint32_t left;
	int i;

	/* the first call seeds (seen matches no count), and watches for forks from then on */
	if (__builtin_expect(seen != forks || left == 0, 0)) {
		size_t got = 0;

		pthread_once(&fork_once, watch_forks);
		while (got < sizeof st) {
			ssize_t r = getrandom((uint8_t *)st + got, sizeof st - got, 0);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				abort();	/* no kernel randomness: nothing sane to do */
			}
			got += (size_t)r;
		}
		if (!(st[0] | st[1] | st[2] | st[3]))
			st[0] = 1;	/* the one state xoshiro cannot leave */
		seen = forks;
		left = 1u << 20;
	}
	left--;
	for (i = 0; i < 2; i++) {
		uint64_t t = st[1] << 17;

		out[i] = rotl(st[1] * 5, 7) * 9;
		st[2] ^= st[0];
		st[3] ^= st[1];
		st[1] ^= st[2];
		st[0] ^= st[3];
		st[2] ^= t;
		st[3] = rotl(st[3], 45);
	}
}

/* Eight hex digits of x, one per byte (nibble order is ours: the bits are random). */
static uint64_t
hex8(uint32_t x)
{
	uint64_t v = x;

	v = (v | v << 16) & 0x0000ffff0000ffffull;
	v = (v | v << 8) & 0x00ff00ff00ff00ffull;
	v = (v | v << 4) & 0x0f0f0f0f0f0f0f0full;
	/* '0' for every nibble, and 39 more ('a' - '0' - 10) for those of 10 and over */
	return v + 0x3030303030303030ull + (((v + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull) * 39;
}

void
maro_uuid(char out[MARO_UUID_LEN + 1])
{
	uint64_t r[2], h[4];

	random2(r);
	h[0] = hex8((uint32_t)r[0]);
	h[1] = hex8((uint32_t)(r[0] >> 32));
	h[2] = hex8((uint32_t)r[1]);
	h[3] = hex8((uint32_t)(r[1] >> 32));
	/* xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V one of 8 9 a b */
	memcpy(out, &h[0], 8);
	out[8] = '-';
	memcpy(out + 9, &h[1], 4);
	out[13] = '-';
	memcpy(out + 14, (char *)&h[1] + 4, 4);
	out[18] = '-';
	memcpy(out + 19, &h[2], 4);
	out[23] = '-';
	memcpy(out + 24, (char *)&h[2] + 4, 4);
	memcpy(out + 28, &h[3], 8);
	out[14] = '4';
	out[19] = "89ab"[r[1] & 3];
	out[MARO_UUID_LEN] = '\0';
}

void
maro_msg_fill(struct maro_msg *m, const char *src, char ids[2][MARO_UUID_LEN + 1])
{
	if (!m->message_id.p) {
		maro_uuid(ids[0]);
		m->message_id.p = ids[0];
		m->message_id.n = MARO_UUID_LEN;
	}
	if (!m->session_id.p) {
		maro_uuid(ids[1]);
		m->session_id.p = ids[1];
		m->session_id.n = MARO_UUID_LEN;
	}
	if (m->type == MARO_SESSION_NONE)
		m->type = MARO_SESSION_TASK;
	if (m->stage == MARO_STAGE_NONE)
		m->stage = MARO_STAGE_REQUEST;
	if (!m->source.p && src)
		m->source = maro_str_c(src);
}

void
maro_msg_make_reply(struct maro_msg *m, const char *src, char id[MARO_UUID_LEN + 1])
{
	struct maro_str requester = m->source;

	m->source = src ? maro_str_c(src) : m->destination;
	m->destination = requester;
	if (m->type == MARO_SESSION_NONE)
		m->type = MARO_SESSION_TASK;
	m->stage = m->type == MARO_SESSION_TASK ? MARO_STAGE_COMPLETE : MARO_STAGE_RECEIVE;
	maro_uuid(id);
	m->message_id.p = id;
	m->message_id.n = MARO_UUID_LEN;
}
