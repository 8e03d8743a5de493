#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "joblog.h"
#include "message.h"
#include "unit.h"

/* A file holding text, open at its start: what maro_joblog_load reads (a pipe would hold 64 KiB). */
static int
text_fd(const char *text)
{
	FILE *f = tmpfile();
	int fd = -1;

	if (!f)
		return -1;
	if (fwrite(text, 1, strlen(text), f) == strlen(text) && fflush(f) == 0 &&
	    (fd = dup(fileno(f))) >= 0 && lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		fd = -1;
	}
	fclose(f);
	return fd;
}

static int
load(struct maro_joblog *log, const char *text, off_t *whole, struct maro_err *err)
{
	int fd = text_fd(text), rc;

	memset(log, 0, sizeof *log);
	rc = maro_joblog_load(log, fd, whole, err);
	close(fd);
	return rc;
}

/* The hash of a task of this tag, destination and payload text. */
static uint64_t
hash_of(const char *tag, const char *dest, const char *payload, int with_dest)
{
	struct maro_msg m = { 0 };
	struct maro_buf b = { 0 }, pl = { 0 };
	struct maro_err err;
	char ids[2][MARO_UUID_LEN + 1];
	uint64_t h = 0;

	m.tag = maro_str_c(tag);
	m.destination = maro_str_c(dest);
	maro_buf_cbor_text(&pl, payload, strlen(payload));
	m.payload.p = pl.p;
	m.payload.n = pl.len;
	maro_msg_fill(&m, NULL, ids);	/* fresh ids: not hashed */
	if (maro_msg_encode(&m, &b) < 0 || maro_joblog_hash(b.p, b.len, with_dest, &h, &err) < 0)
		h = 0;
	maro_buf_free(&b);
	maro_buf_free(&pl);
	return h;
}

void
test_joblog(void)
{
	struct maro_joblog log;
	struct maro_joblog_rec r = { 0 };
	struct maro_buf out = { 0 };
	struct maro_err err;
	off_t whole;
	uint8_t payload[] = { 0x62, 'a', '\t' };	/* "a<tab>" */
	uint64_t h;
	const char *text = MARO_JOBLOG_HEADER
	    "2\t00000000000000ff\tw.1\t1\t1.000\t0.000\tdone\t\"b\"\n"
	    "7\t0000000000000abc\tw.1\t2\t1.000\t2.000\tfailed: timed out\t\"a\"\n"
	    "7\t0000000000000abc\tw.2\t1\t1.000\t0.100\tdone\t\"a\"\n"
	    "9\t0000000000000001\tw.2\t1\t1.000\t0.100\tfailed: its peer left\t\"c\"\n"
	    "10\t00000000";

	/* a task is its tag, payload and (without a prefix) destination, not its ids */
	h = hash_of("job", "w.1", "x", 0);
	CHECK(h != 0 && h == hash_of("job", "w.1", "x", 0));
	CHECK(h == hash_of("job", "w.2", "x", 0));
	CHECK(h != hash_of("job", "w.1", "y", 0));
	CHECK(h != hash_of("jo", "w.1", "bx", 0));
	CHECK(h != hash_of("other", "w.1", "x", 0));	/* the tag counts */
	/*
	 * the hash is part of the log's format: a log written by one version
	 * is resumed by the next.  This one, as maro-scatter -P w -t job
	 * --joblog writes it for the line "x"
	 */
	CHECK(h == 0xf97916bc60a9caf3ull);
	CHECK(hash_of("job", "w.1", "x", 1) != hash_of("job", "w.2", "x", 1));

	/* a record: one line, its fields tab-separated, a control byte of the worker made '?' (diag escapes the payload's) */
	r.seq = 7;
	r.hash = 0xabc;
	r.worker = "w\n1";
	r.worker_n = 3;
	r.attempts = 2;
	r.start_us = 1700000000123456;
	r.duration_us = 2500000;
	r.why = "timed out";
	r.payload = payload;
	r.payload_n = sizeof payload;
	CHECK(maro_joblog_format(&out, &r) == 0);
	CHECK(maro_buf_cstr(&out) == 0);
	CHECK(!strcmp((char *)out.p,
	    "7\t0000000000000abc\tw?1\t2\t1700000000.123\t2.500\tfailed: timed out\t\"a\\t\"\n"));

	/* a cut keeps whole characters: "é" is 2 bytes */
	CHECK(maro_joblog_cut((const uint8_t *)"ab\xc3\xa9", 4, 3) == 2);
	CHECK(maro_joblog_cut((const uint8_t *)"ab\xc3\xa9", 4, 4) == 4);
	CHECK(maro_joblog_cut((const uint8_t *)"abcd", 4, 2) == 2);

	/* read back: a failed task runs, a done one is skipped, another task at its place is not it */
	CHECK(load(&log, text, &whole, &err) == 0);
	CHECK(whole == (off_t)(strlen(text) - strlen("10\t00000000")));	/* a last line cut short */
	CHECK(maro_joblog_last(&log) == 9);
	CHECK(maro_joblog_check(&log, 2, 0xff) == MARO_JOBLOG_DONE);
	CHECK(maro_joblog_check(&log, 2, 0xfe) == MARO_JOBLOG_OTHER);
	CHECK(maro_joblog_check(&log, 7, 0xabc) == MARO_JOBLOG_DONE);
	CHECK(maro_joblog_check(&log, 9, 1) == MARO_JOBLOG_RUN);
	CHECK(maro_joblog_check(&log, 9, 2) == MARO_JOBLOG_OTHER);
	CHECK(maro_joblog_check(&log, 1, 5) == MARO_JOBLOG_RUN);
	CHECK(maro_joblog_check(&log, 100, 5) == MARO_JOBLOG_RUN);
	maro_joblog_free(&log);

	/*
	 * a table the size of the lines read, not of the seqs they claim: a
	 * seq of 2^31 is one entry, and the tasks around it have no record
	 */
	CHECK(load(&log, MARO_JOBLOG_HEADER "2147483648\t0000000000000001\tw\t1\t1\t1\tdone\tx\n"
	    "3\t0000000000000002\tw\t1\t1\t1\tdone\tx\n", &whole, &err) == 0);
	CHECK(log.n == 2 && log.cap <= 1024);
	CHECK(maro_joblog_last(&log) == (uint64_t)1 << 31);
	CHECK(maro_joblog_check(&log, (uint64_t)1 << 31, 1) == MARO_JOBLOG_DONE);
	CHECK(maro_joblog_check(&log, 3, 2) == MARO_JOBLOG_DONE);
	CHECK(maro_joblog_check(&log, 4, 2) == MARO_JOBLOG_RUN);
	CHECK(maro_joblog_check(&log, ((uint64_t)1 << 31) - 1, 1) == MARO_JOBLOG_RUN);
	maro_joblog_free(&log);
	CHECK(load(&log, MARO_JOBLOG_HEADER "2147483649\t0000000000000001\tw\t1\t1\t1\tdone\tx\n",
	    &whole, &err) < 0 && err.offset == 2);
	maro_joblog_free(&log);
	/* many records, in and out of order, each found after the table grew; a second record with another hash is named */
	{
		struct maro_buf many = { 0 };
		uint64_t k;
		int all = 1;

		maro_buf_puts(&many, MARO_JOBLOG_HEADER);
		for (k = 5000; k >= 1; k--)
			maro_buf_printf(&many, "%llu\t%016llx\tw\t1\t1\t1\t%s\tx\n", (unsigned long long)(k * 7),
			    (unsigned long long)k, k % 3 ? "done" : "failed: timed out");
		maro_buf_printf(&many, "14\t%016llx\tw\t1\t1\t1\tdone\tx\n", 3ULL);
		maro_buf_cstr(&many);
		CHECK(load(&log, (const char *)many.p, &whole, &err) < 0 && err.offset == 5002);
		maro_joblog_free(&log);
		many.len -= strlen("14\t0000000000000003\tw\t1\t1\t1\tdone\tx\n");
		maro_buf_cstr(&many);
		CHECK(load(&log, (const char *)many.p, &whole, &err) == 0);
		CHECK(log.n == 5000 && maro_joblog_last(&log) == 35000);
		for (k = 1; k <= 5000; k++)
			all &= maro_joblog_check(&log, k * 7, k) == (k % 3 ? MARO_JOBLOG_DONE : MARO_JOBLOG_RUN) &&
			    maro_joblog_check(&log, k * 7 + 1, k) == MARO_JOBLOG_RUN &&
			    maro_joblog_check(&log, k * 7, k + 1) == MARO_JOBLOG_OTHER;
		CHECK(all);
		maro_joblog_free(&log);
		maro_buf_free(&many);
	}

	/* not a job log: its line named */
	CHECK(load(&log, "seq\tsomething\n", &whole, &err) < 0 && err.offset == 1);
	maro_joblog_free(&log);
	CHECK(load(&log, MARO_JOBLOG_HEADER "1\tzz\tw\t1\t1\t1\tdone\tx\n", &whole, &err) < 0 &&
	    err.offset == 2);
	maro_joblog_free(&log);
	/* a seq with more than digits, or past 64 bits, is no seq */
	CHECK(load(&log, MARO_JOBLOG_HEADER "1x\t0000000000000001\tw\t1\t1\t1\tdone\tx\n", &whole,
	    &err) < 0 && err.offset == 2);
	maro_joblog_free(&log);
	CHECK(load(&log, MARO_JOBLOG_HEADER "99999999999999999999\t0000000000000001\tw\t1\t1\t1\tdone\tx\n",
	    &whole, &err) < 0 && err.offset == 2);
	maro_joblog_free(&log);
	CHECK(load(&log, MARO_JOBLOG_HEADER "1\t0000000000000001\tw\t1\t1\t1\tmaybe\tx\n", &whole,
	    &err) < 0);
	maro_joblog_free(&log);
	CHECK(load(&log, "hello", &whole, &err) < 0);
	maro_joblog_free(&log);
	/* a header cut short is an empty log; so is nothing */
	CHECK(load(&log, "seq\tha", &whole, &err) == 0 && whole == 0 && maro_joblog_last(&log) == 0);
	maro_joblog_free(&log);
	CHECK(load(&log, "", &whole, &err) == 0 && whole == 0);
	maro_joblog_free(&log);
	maro_buf_free(&out);

	/* a file that is not a job log, resumed: refused, and no descriptor kept */
	{
		char path[] = "/tmp/maro-unit-joblog.XXXXXX";
		struct maro_joblog_file f = { 0 };
		int fd = mkstemp(path), before, after;

		CHECK(fd >= 0 && write(fd, "seq\tsomething else\n", 20) == 20);
		close(fd);
		before = unit_open_fds();
		CHECK(maro_joblog_open(&f, path, 1, &err) < 0 && errno == EINVAL);
		after = unit_open_fds();
		CHECK(before > 0 && after == before);
		unlink(path);
	}
}
