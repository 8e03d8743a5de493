#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cbor.h>

#include "cborseq.h"

enum {
	K_TOP,			/* the item being scanned: one item due */
	K_ARRAY,
	K_MAP,
	K_TAG,
	K_INDEF_ARRAY,
	K_INDEF_MAP,
	K_INDEF_BYTES,
	K_INDEF_TEXT,
};

enum {
	EV_NONE,
	EV_SCALAR,
	EV_BYTES,
	EV_TEXT,
	EV_INDEF_BYTES,
	EV_INDEF_TEXT,
	EV_ARRAY,
	EV_MAP,
	EV_INDEF_ARRAY,
	EV_INDEF_MAP,
	EV_TAG,
	EV_BREAK,
};

struct event {
	int ev;
	uint64_t n;
};

/* libcbor's stateless decoder reports one head per call through these. */
#define SET(e, v) do { ((struct event *)ctx)->ev = (e); ((struct event *)ctx)->n = (v); } while (0)
static void cb_u8(void *ctx, uint8_t v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_u16(void *ctx, uint16_t v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_u32(void *ctx, uint32_t v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_u64(void *ctx, uint64_t v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_simple(void *ctx) { SET(EV_SCALAR, 0); }
static void cb_float(void *ctx, float v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_double(void *ctx, double v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_bool(void *ctx, bool v) { (void)v; SET(EV_SCALAR, 0); }
static void cb_bytes(void *ctx, cbor_data d, size_t n) { (void)d; SET(EV_BYTES, n); }
static void cb_text(void *ctx, cbor_data d, size_t n) { (void)d; SET(EV_TEXT, n); }
static void cb_indef_bytes(void *ctx) { SET(EV_INDEF_BYTES, 0); }
static void cb_indef_text(void *ctx) { SET(EV_INDEF_TEXT, 0); }
static void cb_array(void *ctx, size_t n) { SET(EV_ARRAY, n); }
static void cb_map(void *ctx, size_t n) { SET(EV_MAP, n); }
static void cb_indef_array(void *ctx) { SET(EV_INDEF_ARRAY, 0); }
static void cb_indef_map(void *ctx) { SET(EV_INDEF_MAP, 0); }
static void cb_tag(void *ctx, uint64_t v) { (void)v; SET(EV_TAG, 0); }
static void cb_break(void *ctx) { SET(EV_BREAK, 0); }
#undef SET

static const struct cbor_callbacks callbacks = {
	.uint8 = cb_u8, .uint16 = cb_u16, .uint32 = cb_u32, .uint64 = cb_u64,
	.negint8 = cb_u8, .negint16 = cb_u16, .negint32 = cb_u32, .negint64 = cb_u64,
	.byte_string = cb_bytes, .byte_string_start = cb_indef_bytes,
	.string = cb_text, .string_start = cb_indef_text,
	.array_start = cb_array, .indef_array_start = cb_indef_array,
	.map_start = cb_map, .indef_map_start = cb_indef_map,
	.tag = cb_tag,
	.float2 = cb_float, .float4 = cb_float, .float8 = cb_double,
	.undefined = cb_simple, .null = cb_simple, .boolean = cb_bool,
	.indef_break = cb_break,
};

static int
fail(struct maro_err *err, size_t off, const char *msg)
{
	err->offset = off;
	snprintf(err->msg, sizeof err->msg, "%s", msg);
	return MARO_SCAN_ERROR;
}

void
maro_cbor_scan_init(struct maro_cbor_scan *s, const struct maro_cbor_limits *lim)
{
	s->lim.max_item = lim && lim->max_item ? lim->max_item : MARO_CBOR_DEFAULT_MAX_ITEM;
	s->lim.max_depth = lim && lim->max_depth ? lim->max_depth : MARO_CBOR_DEFAULT_MAX_DEPTH;
	if (s->lim.max_depth > MARO_CBOR_MAX_DEPTH_LIMIT)
		s->lim.max_depth = MARO_CBOR_MAX_DEPTH_LIMIT;
	s->pos = 0;
	s->depth = 0;
	s->quick = 1;
	s->stack[0].kind = K_TOP;
	s->stack[0].remaining = 1;
	s->stack[0].odd = 0;
}

static int
push(struct maro_cbor_scan *s, uint8_t kind, uint64_t remaining, size_t at,
    struct maro_err *err)
{
	if (s->depth >= s->lim.max_depth)
		return fail(err, at, "nesting deeper than the limit");
	s->depth++;
	s->stack[s->depth].kind = kind;
	s->stack[s->depth].remaining = remaining;
	s->stack[s->depth].odd = 0;
	return 0;
}

/* One item ended inside the current container: close every container it completes. */
static int
item_done(struct maro_cbor_scan *s)
{
	for (;;) {
		struct maro_cbor_frame *f = &s->stack[s->depth];

		switch (f->kind) {
		case K_INDEF_ARRAY:
			return 0;
		case K_INDEF_MAP:
			f->odd ^= 1;
			return 0;
		case K_INDEF_BYTES:
		case K_INDEF_TEXT:
			return 0;	/* a chunk: the string goes on */
		default:
			if (--f->remaining > 0)
				return 0;
			if (s->depth == 0)
				return 1;
			s->depth--;
		}
	}
}

/*
 * Heads that libcbor 0.8 refuses though they are well-formed: the simple
 * values 0-19 and 32-255 (0xf8 with a value under 32 is malformed), and
 * the tags 6-20; we read these and every tag head ourselves.  1: *e and
 * *len (the head's size) set; 0: not one of them, libcbor reads it; -1:
 * the head needs *len bytes; -2: malformed.
 */
static int
own_head(const uint8_t *p, size_t n, struct event *e, size_t *len)
{
	unsigned major = p[0] >> 5, ai = p[0] & 31;

	if (major == 7 && ai < 20) {
		*len = 1;
	} else if (major == 7 && ai == 24) {
		*len = 2;
		if (n < 2)
			return -1;
		if (p[1] < 32)
			return -2;
	} else if (major == 6 && ai < 28) {
		*len = ai < 24 ? 1 : 1 + ((size_t)1 << (ai - 24));
		if (n < *len)
			return -1;
		e->ev = EV_TAG;
		e->n = 0;
		return 1;
	} else {
		return 0;
	}
	e->ev = EV_SCALAR;
	e->n = 0;
	return 1;
}

#define QUICK_DEPTH 16

/*
 * The common forms by their heads alone: integers, definite strings,
 * definite arrays and maps, tags, simple values and floats.  The length of
 * a complete item made of nothing else, within the limits; else 0, and the
 * scan below decides (indefinite lengths, an item that goes on past n,
 * every error).  It was a sixth of a streaming sender, one libcbor call
 * and callback per head.
 */
static size_t
quick_len(const uint8_t *p, size_t n, const struct maro_cbor_limits *lim)
{
	uint64_t due[QUICK_DEPTH + 1];
	unsigned depth = 0;
	size_t pos = 0;

	if (n > lim->max_item)
		n = lim->max_item;	/* an item that ends within it is within the limit */
	due[0] = 1;
	for (;;) {
		unsigned major, ai;
		uint64_t val;
		size_t h;

		if (pos >= n)
			return 0;
		ai = p[pos] & 31;
		if (ai == 31 || !(h = maro_cbor_head(p + pos, n - pos, &major, &val)))
			return 0;
		pos += h;
		switch (major) {
		case 0:
		case 1:
			break;
		case 2:
		case 3:
			if (val > n - pos)
				return 0;
			pos += (size_t)val;
			break;
		case 4:
		case 5:
			if (depth >= lim->max_depth)
				return 0;	/* too deep, even if empty: the scan below says so */
			if (val == 0)
				break;
			/* every element takes a byte at least */
			if (val > n - pos || depth >= QUICK_DEPTH)
				return 0;
			due[++depth] = major == 5 ? 2 * val : val;
			continue;
		case 6:
			/* a tag nests its item a level down, as the scan below counts it */
			if (depth >= lim->max_depth || depth >= QUICK_DEPTH)
				return 0;
			due[++depth] = 1;
			continue;
		default:
			if (ai == 24 && val < 32)
				return 0;	/* malformed: the scan below says so */
			break;
		}
		while (--due[depth] == 0) {
			if (depth == 0)
				return pos;
			depth--;
		}
	}
}

int
maro_cbor_scan(struct maro_cbor_scan *s, const uint8_t *p, size_t n, size_t *len,
    struct maro_err *err)
{
	if (s->quick && s->pos == 0 && s->depth == 0) {
		size_t q = quick_len(p, n, &s->lim);

		if (q) {
			s->pos = *len = q;
			return MARO_SCAN_DONE;
		}
	}
	while (s->pos < n) {
		struct maro_cbor_frame *top = &s->stack[s->depth];
		struct cbor_decoder_result r;
		struct event e = { EV_NONE, 0 };
		size_t at = s->pos;
		unsigned major = p[at] >> 5;
		uint64_t dlen;
		size_t hl;
		int done = 0;

		/*
		 * the length a string head declares, read before libcbor sees
		 * it: libcbor would ask for that many bytes, and a hostile head
		 * declares 2^64 (an indefinite or reserved one is libcbor's call)
		 */
		if (major == 2 || major == 3) {
			if (!maro_cbor_head(p + at, n - at, &major, &dlen)) {
				if ((p[at] & 31) < 28)
					return MARO_SCAN_MORE;
			} else if (dlen != UINT64_MAX && dlen > s->lim.max_item - at) {
				return fail(err, at, "declared length exceeds the item size limit");
			}
		}
		switch (own_head(p + at, n - at, &e, &hl)) {
		case -1:
			if (hl > s->lim.max_item - at)
				return fail(err, at, "item exceeds the size limit");
			return MARO_SCAN_MORE;
		case -2:
			return fail(err, at, "malformed CBOR");
		case 1:
			r.status = CBOR_DECODER_FINISHED;
			r.read = hl;
			break;
		default:
			r = cbor_stream_decode(p + at, n - at, &callbacks, &e);
		}
		if (r.status == CBOR_DECODER_NEDATA) {
			if (r.required > s->lim.max_item - at)
				return fail(err, at, "item exceeds the size limit");
			return MARO_SCAN_MORE;
		}
		if (r.status != CBOR_DECODER_FINISHED || e.ev == EV_NONE)
			return fail(err, at, "malformed CBOR");
		if (top->kind == K_INDEF_BYTES || top->kind == K_INDEF_TEXT) {
			int want = top->kind == K_INDEF_BYTES ? EV_BYTES : EV_TEXT;

			if (e.ev != want && e.ev != EV_BREAK)
				return fail(err, at, "malformed indefinite-length string chunk");
		}
		s->pos = at + r.read;
		if (s->pos > s->lim.max_item)
			return fail(err, at, "item exceeds the size limit");
		switch (e.ev) {
		case EV_SCALAR:
		case EV_BYTES:
		case EV_TEXT:
			done = item_done(s);
			break;
		case EV_ARRAY:
		case EV_MAP:
			/* every element takes at least one byte */
			if (e.n > s->lim.max_item || (e.ev == EV_MAP && e.n > s->lim.max_item / 2))
				return fail(err, at, "declared length exceeds the item size limit");
			if (e.n == 0) {
				/* empty, it still nests a level: [[]] is as deep as [[1]] */
				if (s->depth >= s->lim.max_depth)
					return fail(err, at, "nesting deeper than the limit");
				done = item_done(s);
				break;
			}
			if (push(s, e.ev == EV_ARRAY ? K_ARRAY : K_MAP,
			    e.ev == EV_MAP ? 2 * e.n : e.n, at, err) < 0)
				return MARO_SCAN_ERROR;
			break;
		case EV_INDEF_ARRAY:
		case EV_INDEF_MAP:
		case EV_INDEF_BYTES:
		case EV_INDEF_TEXT:
		case EV_TAG: {
			static const uint8_t kind[] = {
				[EV_INDEF_ARRAY] = K_INDEF_ARRAY, [EV_INDEF_MAP] = K_INDEF_MAP,
				[EV_INDEF_BYTES] = K_INDEF_BYTES, [EV_INDEF_TEXT] = K_INDEF_TEXT,
				[EV_TAG] = K_TAG,
			};
			if (push(s, kind[e.ev], 1, at, err) < 0)
				return MARO_SCAN_ERROR;
			break;
		}
		case EV_BREAK:
			if (top->kind < K_INDEF_ARRAY)
				return fail(err, at, "unexpected break");
			if (top->kind == K_INDEF_MAP && top->odd)
				return fail(err, at, "map key without a value");
			s->depth--;
			done = item_done(s);
			break;
		}
		if (done) {
			*len = s->pos;
			return MARO_SCAN_DONE;
		}
	}
	return MARO_SCAN_MORE;
}

int
maro_cbor_check(const uint8_t *p, size_t n, const struct maro_cbor_limits *lim,
    struct maro_err *err)
{
	struct maro_cbor_scan s;
	size_t len;
	int rc;

	maro_cbor_scan_init(&s, lim);
	rc = maro_cbor_scan(&s, p, n, &len, err);
	if (rc == MARO_SCAN_ERROR)
		return -1;
	if (rc == MARO_SCAN_MORE) {
		fail(err, n, n ? "truncated CBOR item" : "empty CBOR item");
		return -1;
	}
	if (len != n) {
		fail(err, len, "trailing bytes after the CBOR item");
		return -1;
	}
	return 0;
}

void
maro_reader_init(struct maro_reader *r, int fd, const struct maro_cbor_limits *lim)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	if (lim)
		r->lim = *lim;
	maro_cbor_scan_init(&r->scan, &r->lim);
}

void
maro_reader_free(struct maro_reader *r)
{
	maro_buf_free(&r->buf);
}

ssize_t
maro_reader_fill(struct maro_reader *r)
{
	ssize_t n;

	if (r->eof)
		return 0;
	/* Slide the unconsumed bytes down before growing the buffer. */
	if (r->start > 0 && (r->start == r->buf.len || r->start >= r->buf.cap / 2)) {
		memmove(r->buf.p, r->buf.p + r->start, r->buf.len - r->start);
		r->buf.len -= r->start;
		r->base += r->start;
		r->start = 0;
	}
	if (maro_buf_reserve(&r->buf, 65536) < 0)
		return -1;
	do
		n = read(r->fd, r->buf.p + r->buf.len, r->buf.cap - r->buf.len - 1);
	while (n < 0 && maro_io_again());
	if (n < 0)
		return -1;
	if (n == 0)
		r->eof = 1;
	r->buf.len += (size_t)n;
	return n;
}

int
maro_reader_next(struct maro_reader *r, const uint8_t **item, size_t *len,
    uint64_t *off, struct maro_err *err)
{
	size_t avail = r->buf.len - r->start;
	int rc;

	if (avail == 0)
		return 0;
	rc = maro_cbor_scan(&r->scan, r->buf.p + r->start, avail, len, err);
	if (rc == MARO_SCAN_ERROR) {
		err->offset += r->base + r->start;
		return -1;
	}
	if (rc == MARO_SCAN_MORE) {
		if (r->eof) {
			err->offset = r->base + r->start;
			snprintf(err->msg, sizeof err->msg,
			    "truncated CBOR item at end of input (%zu bytes of it read)", avail);
			return -1;
		}
		return 0;
	}
	*item = r->buf.p + r->start;
	if (off)
		*off = r->base + r->start;
	r->start += *len;
	maro_cbor_scan_init(&r->scan, &r->lim);
	return 1;
}

int
maro_reader_read(struct maro_reader *r, const uint8_t **item, size_t *len,
    uint64_t *off, struct maro_err *err)
{
	for (;;) {
		int rc = maro_reader_next(r, item, len, off, err);

		if (rc != 0)
			return rc;
		if (r->eof)
			return 0;
		if (maro_reader_fill(r) < 0) {
			err->offset = r->base + r->buf.len;
			err->msg[0] = '\0';
			return -1;
		}
	}
}

int
maro_reader_pending(const struct maro_reader *r)
{
	return r->buf.len > r->start;
}

const uint8_t *
maro_reader_peek(const struct maro_reader *r, size_t *avail)
{
	*avail = r->buf.len - r->start;
	return r->buf.p + r->start;
}

void
maro_reader_skip(struct maro_reader *r, size_t len, uint64_t *off)
{
	if (off)
		*off = r->base + r->start;
	r->start += len;
	maro_cbor_scan_init(&r->scan, &r->lim);
}

int
maro_cbor_looks_like_text(const uint8_t *p, size_t n)
{
	size_t i, k, more;
	int nl = 0;

	if (n > 4096)
		n = 4096;
	for (i = 0; i < n; i++) {
		if (p[i] == '\n') {
			nl = 1;
		} else if (p[i] == '\t' || p[i] == '\r' || (p[i] >= 0x20 && p[i] < 0x7f)) {
			continue;
		} else if (p[i] >= 0xc2 && p[i] <= 0xf4) {
			more = p[i] >= 0xf0 ? 3 : p[i] >= 0xe0 ? 2 : 1;
			/* a character cut by the 4 KiB look counts as text */
			for (k = 1; k <= more && i + k < n; k++)
				if ((p[i + k] & 0xc0) != 0x80)
					return 0;
			i += more;
		} else {
			return 0;
		}
	}
	return nl;
}
