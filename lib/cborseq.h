/*
 * cborseq: CBOR sequences (RFC 8742) on file descriptors.
 *
 * The scanner finds where one CBOR data item ends, checking that it is
 * well-formed and within limits, without building it.  It is resumable: fed
 * a prefix of an item it reports MARO_SCAN_MORE and continues from where it
 * stopped when called again with more bytes.
 *
 * The reader yields each item of a sequence as soon as its last byte has been
 * read: it never waits for a buffer to fill.  Items are written with a
 * maro_writer (writer.h), whose rule for signals the reader follows too.
 */
#ifndef MARO_CBORSEQ_H
#define MARO_CBORSEQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"
#include "writer.h"

#define MARO_CBOR_MAX_DEPTH_LIMIT 1024

/* Limits a hostile producer cannot exceed.  Zero fields take the defaults. */
struct maro_cbor_limits {
	size_t max_item;	/* bytes in one item; default 16 MiB */
	unsigned max_depth;	/* nesting of arrays, maps and tags; default 64 */
};
#define MARO_CBOR_DEFAULT_MAX_ITEM (16u << 20)
#define MARO_CBOR_DEFAULT_MAX_DEPTH 64

/*
 * The head at p, n bytes available: its major type and its argument
 * (UINT64_MAX for an indefinite length).  Returns the head's size, or 0 when
 * it needs more than n bytes or its additional information is reserved
 * (28-30).  Inline: every walk over items reads heads, on hot paths too.
 */
static inline size_t
maro_cbor_head(const uint8_t *p, size_t n, unsigned *major, uint64_t *val)
{
	unsigned ai, w, i;

	if (!n)
		return 0;
	ai = p[0] & 31;
	*major = p[0] >> 5;
	if (ai < 24) {
		*val = ai;
		return 1;
	}
	if (ai == 31) {
		*val = UINT64_MAX;
		return 1;
	}
	if (ai > 27)
		return 0;
	w = 1u << (ai - 24);
	if (1 + w > n)
		return 0;
	*val = 0;
	for (i = 1; i <= w; i++)
		*val = *val << 8 | p[i];
	return 1 + w;
}

struct maro_cbor_frame {
	uint64_t remaining;	/* items still due in a definite container */
	uint8_t kind;
	uint8_t odd;		/* indefinite map: a key is waiting for its value */
};

struct maro_cbor_scan {
	size_t pos;		/* bytes of the item consumed so far */
	unsigned depth;
	int quick;		/* try the common forms by their heads first (init sets it) */
	struct maro_cbor_limits lim;
	struct maro_cbor_frame stack[MARO_CBOR_MAX_DEPTH_LIMIT + 1];
};

enum { MARO_SCAN_ERROR = -1, MARO_SCAN_MORE = 0, MARO_SCAN_DONE = 1 };

void maro_cbor_scan_init(struct maro_cbor_scan *s, const struct maro_cbor_limits *lim);
/*
 * Scans p[0..n), the bytes of one item from its start (n grows between calls,
 * the bytes already seen must not change).  Returns MARO_SCAN_DONE with the
 * item's length in *len, MARO_SCAN_MORE when the item goes on past n, or
 * MARO_SCAN_ERROR with err->offset relative to p and err->msg set.
 */
int maro_cbor_scan(struct maro_cbor_scan *s, const uint8_t *p, size_t n,
    size_t *len, struct maro_err *err);
/* One complete item in memory: its length must be exactly n.  0 or -1. */
int maro_cbor_check(const uint8_t *p, size_t n, const struct maro_cbor_limits *lim,
    struct maro_err *err);

struct maro_reader {
	int fd;
	int eof;
	struct maro_buf buf;
	size_t start;		/* first byte of the current item in buf */
	uint64_t base;		/* stream offset of buf.p[0] */
	struct maro_cbor_scan scan;
	struct maro_cbor_limits lim;
};

/* The reader does not own fd. */
void maro_reader_init(struct maro_reader *r, int fd, const struct maro_cbor_limits *lim);
void maro_reader_free(struct maro_reader *r);
/*
 * Reads once from fd (whatever is available, blocking only if nothing is
 * and fd is blocking).  Returns bytes read, 0 at end of input, or -1 with
 * errno (EAGAIN on a non-blocking fd with nothing to read).
 */
ssize_t maro_reader_fill(struct maro_reader *r);
/*
 * The next complete item among the bytes already read.  Returns 1 with
 * *item, *len (valid until the next call) and, if off is not NULL, the item's
 * stream offset; 0 when no complete item is buffered (call fill; at end of
 * input with bytes pending that is an error instead); -1 on a malformed or
 * oversized item, with err set.  After an error the reader is unusable.
 */
int maro_reader_next(struct maro_reader *r, const uint8_t **item, size_t *len,
    uint64_t *off, struct maro_err *err);
/*
 * Blocking convenience: fills until an item is complete.  1 item, 0 clean end
 * of input, -1 error (err set; err->msg empty means an I/O error in errno).
 */
int maro_reader_read(struct maro_reader *r, const uint8_t **item, size_t *len,
    uint64_t *off, struct maro_err *err);
/* True if complete or partial bytes are buffered. */
int maro_reader_pending(const struct maro_reader *r);
/*
 * For a caller that finds an item's end itself (maro_msg_decode_prefix):
 * the bytes read and not yet taken (*avail of them), and then the first
 * len of them taken as the next item, as maro_reader_next would have
 * (*off, if not NULL, its stream offset).
 */
const uint8_t *maro_reader_peek(const struct maro_reader *r, size_t *avail);
void maro_reader_skip(struct maro_reader *r, size_t len, uint64_t *off);

/*
 * Whether p[0..n) looks like lines of text rather than CBOR: UTF-8 of
 * printable characters, tabs and line ends (its first 4 KiB looked at),
 * with a newline among them.  A CBOR message never does (it starts with a
 * map's head, 0xa0 to 0xbf); tools add a hint to "malformed input" then.
 */
int maro_cbor_looks_like_text(const uint8_t *p, size_t n);

#endif
