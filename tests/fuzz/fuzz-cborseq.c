/*
 * fuzz-cborseq: the CBOR-sequence scanner and reader (lib/cborseq.h).
 *
 * Input: two bytes of settings, then the stream.  The settings pick the
 * limits (the defaults, or tiny ones that the fuzzer can hit) and a seed
 * for the chunk sizes: the stream goes through a pipe in those chunks, and
 * the reader must yield the same items, at the same offsets, and fail at the
 * same offset, as one scan over the whole stream at once.  Items are
 * contiguous, reassemble to the bytes consumed and each passes
 * maro_cbor_check on its own.  The reference scan goes through libcbor for
 * every head; the reader takes the quick path for common forms, so the two
 * must agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cborseq.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

struct ref {
	size_t nitems;
	size_t len[4096];
	int error;		/* 1 malformed, 2 truncated at the end */
	uint64_t err_off;
};

/* The whole stream at once, item by item, with a fresh scanner for each. */
static void
reference(const uint8_t *p, size_t n, const struct maro_cbor_limits *lim, struct ref *r)
{
	size_t pos = 0;

	r->nitems = 0;
	r->error = 0;
	while (pos < n) {
		struct maro_cbor_scan s;
		struct maro_err err;
		size_t len = 0;
		int rc;

		maro_cbor_scan_init(&s, lim);
		s.quick = 0;	/* libcbor's verdict on every head: the reader's quick path must agree */
		rc = maro_cbor_scan(&s, p + pos, n - pos, &len, &err);
		if (rc == MARO_SCAN_ERROR) {
			REQUIRE(err.msg[0] && err.offset < n - pos);
			r->error = 1;
			r->err_off = pos + err.offset;
			return;
		}
		if (rc == MARO_SCAN_MORE) {
			r->error = 2;
			r->err_off = pos;
			return;
		}
		REQUIRE(len > 0 && len <= n - pos);
		REQUIRE(r->nitems < sizeof r->len / sizeof r->len[0]);
		r->len[r->nitems++] = len;
		pos += len;
	}
}

/* Resuming one byte at a time ends where the whole-buffer scan ends. */
static void
resume(const uint8_t *p, size_t n, const struct maro_cbor_limits *lim, const struct ref *r)
{
	struct maro_cbor_scan s;
	struct maro_err err;
	size_t k, len = 0;
	int rc = MARO_SCAN_MORE;

	if (n == 0)
		return;
	maro_cbor_scan_init(&s, lim);
	for (k = 1; k <= n && rc == MARO_SCAN_MORE; k++)
		rc = maro_cbor_scan(&s, p, k, &len, &err);
	if (r->nitems > 0)
		REQUIRE(rc == MARO_SCAN_DONE && len == r->len[0] && k - 1 == len);
	else if (r->error == 1)
		REQUIRE(rc == MARO_SCAN_ERROR && err.offset == r->err_off);
	else
		REQUIRE(rc == MARO_SCAN_MORE);
}

static uint32_t
next_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ref ref;
	struct maro_cbor_limits lim = { 0, 0 };
	struct maro_reader rd;
	struct maro_err err;
	const uint8_t *p;
	size_t n, sent = 0, consumed = 0, nitems = 0;
	uint32_t seed;
	int fds[2], rc = 0, closed = 0;

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		lim.max_item = 1 + (data[0] >> 1);	/* 1..128 bytes */
		lim.max_depth = 1 + (data[1] & 7);
	}
	seed = 0x9e3779b9u ^ data[1] ^ (uint32_t)size << 8;
	p = data + 2;
	n = size - 2;

	reference(p, n, &lim, &ref);
	resume(p, n, &lim, &ref);
	if (ref.nitems == 1 && !ref.error)
		REQUIRE(maro_cbor_check(p, n, &lim, &err) == 0);

	if (pipe2(fds, O_CLOEXEC) < 0)
		abort();
	maro_reader_init(&rd, fds[0], &lim);
	for (;;) {
		const uint8_t *item;
		size_t len;
		uint64_t off;

		if (sent < n) {
			size_t chunk = 1 + next_rand(&seed) % (data[1] & 0x80 ? 3 : 64);
			ssize_t w;

			if (chunk > n - sent)
				chunk = n - sent;
			w = write(fds[1], p + sent, chunk);
			REQUIRE(w == (ssize_t)chunk);
			sent += chunk;
		} else if (!closed) {
			close(fds[1]);
			closed = 1;
		}
		REQUIRE(maro_reader_fill(&rd) >= 0);
		while ((rc = maro_reader_next(&rd, &item, &len, &off, &err)) == 1) {
			struct maro_err e2;

			REQUIRE(off == consumed && len > 0 && consumed + len <= sent);
			REQUIRE(!memcmp(item, p + consumed, len));
			REQUIRE(nitems < ref.nitems && ref.len[nitems] == len);
			REQUIRE(maro_cbor_check(item, len, &lim, &e2) == 0);
			consumed += len;
			nitems++;
		}
		if (rc < 0 || (closed && rc == 0))
			break;
	}
	if (rc < 0) {
		REQUIRE(err.msg[0]);
		REQUIRE(ref.error && nitems == ref.nitems && err.offset == ref.err_off);
	} else {
		REQUIRE(!ref.error && nitems == ref.nitems && consumed == n);
		REQUIRE(!maro_reader_pending(&rd));
	}
	if (!closed)
		close(fds[1]);
	close(fds[0]);
	maro_reader_free(&rd);
	return 0;
}
