#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cborseq.h"
#include "unit.h"

static int
scan_all(const void *p, size_t n, size_t *len, struct maro_err *err)
{
	struct maro_cbor_scan s;

	maro_cbor_scan_init(&s, NULL);
	return maro_cbor_scan(&s, p, n, len, err);
}

static void
test_scan(void)
{
	struct maro_err err;
	size_t len = 0;
	static uint8_t deep[200000];

	/* {"a": [1, 2]} then trailing bytes that belong to the next item */
	CHECK(scan_all("\xa1\x61\x61\x82\x01\x02\x00", 7, &len, &err) == MARO_SCAN_DONE && len == 6);
	/* a prefix asks for more */
	CHECK(scan_all("\xa1\x61\x61\x82\x01", 5, &len, &err) == MARO_SCAN_MORE);
	/* indefinite array, map and string */
	CHECK(scan_all("\x9f\x01\xbf\x61\x61\x02\xff\x7f\x61\x61\xff\xff", 12, &len, &err) == MARO_SCAN_DONE && len == 12);
	/* indefinite map with a key and no value */
	CHECK(scan_all("\xbf\x01\xff", 3, &len, &err) == MARO_SCAN_ERROR && err.offset == 2);
	/* a stray break */
	CHECK(scan_all("\xff", 1, &len, &err) == MARO_SCAN_ERROR && err.offset == 0);
	/* reserved additional information */
	CHECK(scan_all("\x1c", 1, &len, &err) == MARO_SCAN_ERROR);
	/* a byte string chunk inside an indefinite text string */
	CHECK(scan_all("\x7f\x41\x61\xff", 4, &len, &err) == MARO_SCAN_ERROR && err.offset == 1);
	/* a declared length of 2^60 */
	CHECK(scan_all("\x5b\x10\x00\x00\x00\x00\x00\x00\x00", 9, &len, &err) == MARO_SCAN_ERROR &&
	    strstr(err.msg, "limit"));
	CHECK(scan_all("\x9b\x10\x00\x00\x00\x00\x00\x00\x00", 9, &len, &err) == MARO_SCAN_ERROR);
	/* nesting 100000 deep: arrays and tags */
	memset(deep, 0x81, 100000);
	CHECK(scan_all(deep, 100000, &len, &err) == MARO_SCAN_ERROR && strstr(err.msg, "nesting") &&
	    err.offset == MARO_CBOR_DEFAULT_MAX_DEPTH);
	memset(deep, 0xc1, 100000);
	CHECK(scan_all(deep, 100000, &len, &err) == MARO_SCAN_ERROR);
	/* exactly at the depth limit is fine */
	memset(deep, 0x81, MARO_CBOR_DEFAULT_MAX_DEPTH);
	deep[MARO_CBOR_DEFAULT_MAX_DEPTH] = 0x01;
	CHECK(scan_all(deep, MARO_CBOR_DEFAULT_MAX_DEPTH + 1, &len, &err) == MARO_SCAN_DONE);
	/* an empty container nests a level too: [[]] at depth 1 is too deep, as [[1]] is */
	{
		struct maro_cbor_limits one = { 0, 1 }, two = { 0, 2 };

		CHECK(maro_cbor_check((const uint8_t *)"\x81\x80", 2, &one, &err) < 0 &&
		    strstr(err.msg, "nesting") && err.offset == 1);
		CHECK(maro_cbor_check((const uint8_t *)"\x81\xa0", 2, &one, &err) < 0);
		CHECK(maro_cbor_check((const uint8_t *)"\x81\x80", 2, &two, &err) == 0);
		CHECK(maro_cbor_check((const uint8_t *)"\x80", 1, &one, &err) == 0);
	}
	/* check: trailing bytes, truncation */
	CHECK(maro_cbor_check((const uint8_t *)"\x01\x02", 2, NULL, &err) < 0 && err.offset == 1);
	CHECK(maro_cbor_check((const uint8_t *)"\x82\x01", 2, NULL, &err) < 0);
	CHECK(maro_cbor_check((const uint8_t *)"\x82\x01\x02", 3, NULL, &err) == 0);
}

/* The quick path (common forms by their heads) agrees with libcbor's scan. */
static void
test_quick(void)
{
	static const struct { const char *p; size_t n; } cases[] = {
		{ "\xa2\x63tag\x61x\x67payload\x83\xf4\xf5\xf6", 20 },
		{ "\xa1\x61\x61\xa1\x61\x62\x82\xf9\x3c\x00\xfb\0\0\0\0\0\0\0\0", 19 },
		{ "\x9a\x00\x00\x00\x02\x18\x05\x3b\xff\xff\xff\xff\xff\xff\xff\xff", 16 },
		{ "\x59\x00\x02" "ab\x7a\x00\x00\x00\x01z\xf7", 12 },
		{ "\x82\xf8\x20\x01", 4 },		/* simple(32): libcbor's call */
		{ "\x82\xf3\x01", 3 },		/* simple(19) */
		{ "\x82\xc1\x01\x02", 4 },		/* a tag */
		{ "\x83\x01\x02", 3 },		/* truncated */
		{ "\x82\x01\xff", 3 },		/* a break */
		{ "\x82\x1c\x01", 3 },		/* reserved */
		{ "\x81\x81\x81\x81\x81\x01", 6 },	/* deep */
		{ "\xa1\x01", 2 },
		{ "\x5a\xff\xff\xff\xff", 5 },	/* 4 GiB declared */
		{ "\x80", 1 },
		{ "\xa0", 1 },
		{ "\x81\x80", 2 },
		{ "\x82\x81\xa0\x01", 4 },
	};
	struct maro_cbor_limits lims[] = { { 0, 0 }, { 8, 3 }, { 1024, 2 }, { 1024, 1 } };
	size_t i, j;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (j = 0; j < sizeof lims / sizeof lims[0]; j++) {
			struct maro_cbor_scan a, b;
			struct maro_err ea, eb;
			size_t la = 0, lb = 0;
			int ra, rb;

			maro_cbor_scan_init(&a, &lims[j]);
			maro_cbor_scan_init(&b, &lims[j]);
			b.quick = 0;
			ra = maro_cbor_scan(&a, (const uint8_t *)cases[i].p, cases[i].n, &la, &ea);
			rb = maro_cbor_scan(&b, (const uint8_t *)cases[i].p, cases[i].n, &lb, &eb);
			CHECK(ra == rb && la == lb && (ra != MARO_SCAN_ERROR || ea.offset == eb.offset));
		}
}

/* Resuming byte by byte gives the same answer as scanning at once. */
static void
test_resume(void)
{
	const uint8_t item[] = "\xa2\x63tag\x61x\x67payload\x9f\x01\x7f\x61\x61\x61\x62\xff\xff";
	size_t n = sizeof item - 1, i, len = 0;
	struct maro_cbor_scan s;
	struct maro_err err;
	int rc = MARO_SCAN_MORE;

	maro_cbor_scan_init(&s, NULL);
	for (i = 1; i <= n && rc == MARO_SCAN_MORE; i++)
		rc = maro_cbor_scan(&s, item, i, &len, &err);
	CHECK(rc == MARO_SCAN_DONE && len == n && i == n + 1);
}

static void
test_reader(void)
{
	struct maro_reader r;
	struct maro_err err;
	const uint8_t *item;
	size_t len;
	uint64_t off;
	int fds[2];

	CHECK(pipe(fds) == 0);
	maro_reader_init(&r, fds[0], NULL);
	/* one item and half of the next: the first comes out before the rest arrives */
	CHECK(write(fds[1], "\x01\x82\x01", 3) == 3);
	CHECK(maro_reader_read(&r, &item, &len, &off, &err) == 1 && len == 1 && off == 0);
	CHECK(maro_reader_next(&r, &item, &len, &off, &err) == 0);
	CHECK(write(fds[1], "\x02", 1) == 1);
	CHECK(maro_reader_read(&r, &item, &len, &off, &err) == 1 && len == 3 && off == 1);
	/* truncated at end of input: error at the item's offset */
	CHECK(write(fds[1], "\x83\x01", 2) == 2);
	close(fds[1]);
	CHECK(maro_reader_read(&r, &item, &len, &off, &err) == -1 && err.offset == 4);
	maro_reader_free(&r);
	close(fds[0]);

	CHECK(pipe(fds) == 0);
	maro_reader_init(&r, fds[0], NULL);
	close(fds[1]);
	CHECK(maro_reader_read(&r, &item, &len, &off, &err) == 0);
	maro_reader_free(&r);
	close(fds[0]);
}

/* the writer: small items buffered, big ones written in place, in order; errors keep the rest */
static void
test_writer(void)
{
	static uint8_t big[100000], back[100010];
	struct maro_writer w;
	int fds[2], full;
	size_t got = 0;
	ssize_t k;

	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 7);
	CHECK(pipe(fds) == 0);
	/* room for all of it, so that nothing waits on the reader */
	CHECK(fcntl(fds[1], F_SETPIPE_SZ, 256 * 1024) >= (int)sizeof back);
	maro_writer_init(&w, fds[1]);
	CHECK(maro_writer_put(&w, "ab", 2) == 0 && w.buf.len == 2);
	CHECK(maro_writer_put(&w, big, sizeof big) == 0 && w.buf.len == 0);
	CHECK(maro_writer_put(&w, "cd", 2) == 0 && w.buf.len == 2);
	CHECK(maro_writer_flush(&w) == 0 && w.buf.len == 0);
	close(fds[1]);
	while ((k = read(fds[0], back + got, sizeof back - got)) > 0)
		got += (size_t)k;
	close(fds[0]);
	CHECK(got == sizeof big + 4);
	CHECK(!memcmp(back, "ab", 2) && !memcmp(back + 2, big, sizeof big) && !memcmp(back + 2 + sizeof big, "cd", 2));
	maro_writer_free(&w);

	/* a device that takes nothing: the item stays in the buffer, errno says why */
	full = open("/dev/full", O_WRONLY);
	CHECK(full >= 0);
	maro_writer_init(&w, full);
	CHECK(maro_writer_put(&w, "ab", 2) == 0);
	errno = 0;
	CHECK(maro_writer_put(&w, big, sizeof big) < 0 && errno == ENOSPC);
	CHECK(w.buf.len == 2 + sizeof big && !memcmp(w.buf.p + 2, big, sizeof big));
	maro_writer_free(&w);
	close(full);
}

/* a writer to a file: created or truncated, written out and freed at close, where a write's error shows */
static void
test_writer_file(void)
{
	char dir[] = "/tmp/maro-unit-writer.XXXXXX", path[64], back[8];
	struct maro_writer w;
	int fd;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/f", dir);
	errno = 0;
	CHECK(maro_writer_open(&w, dir) < 0 && errno == EISDIR && w.fd == -1);
	maro_writer_free(&w);
	CHECK(maro_writer_open(&w, path) == 0 && w.fd >= 0);
	CHECK(maro_writer_put(&w, "abc", 3) == 0 && w.buf.len == 3);
	CHECK(maro_writer_close(&w) == 0 && w.fd == -1 && !w.buf.p);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && read(fd, back, sizeof back) == 3 && !memcmp(back, "abc", 3));
	close(fd);
	CHECK(maro_writer_open(&w, path) == 0 && maro_writer_close(&w) == 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && read(fd, back, sizeof back) == 0);
	close(fd);
	CHECK(maro_writer_open(&w, "/dev/full") == 0 && maro_writer_put(&w, "ab", 2) == 0);
	errno = 0;
	CHECK(maro_writer_close(&w) < 0 && errno == ENOSPC && w.fd == -1);
	unlink(path);
	rmdir(dir);
}

/* echo hello | maro-send: text is told from CBOR for a hint */
static void
test_looks_like_text(void)
{
#define T(s) maro_cbor_looks_like_text((const uint8_t *)(s), sizeof(s) - 1)
	CHECK(T("hello\n") && T("1\n2\n") && T("{\"tag\":\"a\"}\r\n") && T("h\xc3\xa9llo\tw\n"));
	/* no newline, a control byte, bad UTF-8, a CBOR message: none */
	CHECK(!T("hello") && !T("he\x01llo\n") && !T("h\xc3llo\n") && !T("\xff\n") && !T(""));
	CHECK(!T("\xa1\x63tag\x61x") && !T("\xa1\x63tag\x61\n"));
#undef T
}

void
test_cborseq(void)
{
	test_looks_like_text();
	test_scan();
	test_quick();
	test_resume();
	test_reader();
	test_writer();
	test_writer_file();
}
