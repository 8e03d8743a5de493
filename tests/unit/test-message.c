#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format.h"
#include "message.h"
#include "unit.h"

static void
test_roundtrip(void)
{
	struct maro_msg m, d;
	struct maro_buf b = { 0 }, b2 = { 0 };
	struct maro_err err;
	char ids[2][MARO_UUID_LEN + 1], rid[MARO_UUID_LEN + 1];

	memset(&m, 0, sizeof m);
	m.tag = maro_str_c("sum");
	m.destination = maro_str_c("worker.1");
	m.payload.p = (const uint8_t *)"\x83\x01\x02\x03";
	m.payload.n = 4;
	maro_msg_fill(&m, "master", ids);
	CHECK(m.type == MARO_SESSION_TASK && m.stage == MARO_STAGE_REQUEST);
	CHECK(m.message_id.n == 36 && m.session_id.n == 36 && strcmp(ids[0], ids[1]) != 0);
	CHECK(ids[0][14] == '4' && strchr("89ab", ids[0][19]));
	CHECK(maro_msg_encode(&m, &b) == 0);
	CHECK(maro_cbor_check(b.p, b.len, NULL, &err) == 0);
	CHECK(maro_msg_decode(&d, b.p, b.len, &err) == 0);
	CHECK(maro_str_eq(d.tag, "sum") && maro_str_eq(d.source, "master") &&
	    maro_str_eq(d.destination, "worker.1") && maro_str_eq(d.message_id, ids[0]) &&
	    d.payload.n == 4 && memcmp(d.payload.p, "\x83\x01\x02\x03", 4) == 0);
	CHECK(maro_msg_encode(&d, &b2) == 0 && b2.len == b.len && memcmp(b.p, b2.p, b.len) == 0);

	maro_msg_make_reply(&d, "worker.1", rid);
	CHECK(maro_str_eq(d.source, "worker.1") && maro_str_eq(d.destination, "master"));
	CHECK(maro_str_eq(d.session_id, ids[1]) && !maro_str_eq(d.message_id, ids[0]));
	CHECK(d.stage == MARO_STAGE_COMPLETE);
	maro_buf_free(&b);
	maro_buf_free(&b2);
}

static int
decode(const char *p, size_t n, struct maro_err *err)
{
	struct maro_msg m;

	return maro_msg_decode(&m, (const uint8_t *)p, n, err);
}

static void
test_bad(void)
{
	struct maro_err err;
	struct maro_msg m;

	CHECK(decode("\x01", 1, &err) < 0 && strstr(err.msg, "not a map"));
	CHECK(decode("\xa0", 1, &err) < 0 && strstr(err.msg, "no 'tag'"));
	CHECK(decode("\xa1\x63tag\x01", 6, &err) < 0 && strstr(err.msg, "'tag' must be") && err.offset == 5);
	CHECK(decode("\xa2\x63tag\x61x\x63tag\x61y", 13, &err) < 0 && strstr(err.msg, "repeated"));
	CHECK(decode("\xa1\x63tag\x62\xc3\x28", 8, &err) < 0);
	/* an unknown key repeated, as bytes or as the same text */
	CHECK(decode("\xa3\x63tag\x61x\x61k\x01\x61k\x02", 13, &err) < 0 && strstr(err.msg, "repeated key 'k'") &&
	    err.offset == 10);
	CHECK(decode("\xa3\x61k\x01\x63tag\x61x\x78\x01k\x02", 14, &err) < 0 && strstr(err.msg, "repeated"));
	CHECK(decode("\xa3\x61k\x01\x63tag\x61x\x61K\x02", 13, &err) == 0);
	CHECK(decode("\xa2\x63tag\x61x\x6csession_type\x63" "foo", 22, &err) < 0);
	/* unknown keys are kept, in order */
	CHECK(maro_msg_decode(&m, (const uint8_t *)"\xa3\x01\x02\x63tag\x61x\x61z\xf6", 12, &err) == 0 &&
	    m.nextra == 2 && m.extra[0].n == 2 && m.extra[1].n == 3);
	/* a key that runs past the end; enum names by length and bytes; longer heads */
#define BYTES(lit) (const uint8_t *)(lit), sizeof (lit) - 1
	CHECK(maro_msg_decode(&m, BYTES("\xa1\x63ta"), &err) < 0);
	CHECK(maro_msg_decode(&m, BYTES("\xa2\x63tag\x61x\x6csession_type\x63tas"), &err) < 0 &&
	    strstr(err.msg, "'session_type'"));
	CHECK(maro_msg_decode(&m, BYTES("\xa2\x63tag\x61x\x6csession_type\x65taskx"), &err) < 0);
	CHECK(maro_msg_decode(&m, BYTES("\xa2\x63tag\x61x\x6csession_type\x64task"), &err) == 0 &&
	    m.type == MARO_SESSION_TASK);
	CHECK(maro_msg_decode(&m, BYTES("\xa1\x63tag\x78\x1e" "abcdefghijklmnopqrstuvwxyz0123"), &err) == 0 &&
	    m.tag.n == 30 && !memcmp(m.tag.p, "abcdefghijklmnopqrstuvwxyz0123", 30));
	CHECK(maro_msg_decode(&m, BYTES("\xa1\x63tag\x7f\x61x\xff"), &err) < 0 && strstr(err.msg, "'tag' must be"));
#undef BYTES
	/* indefinite-length map */
	CHECK(maro_msg_decode(&m, (const uint8_t *)"\xbf\x63tag\x61x\xff", 8, &err) == 0 && maro_str_eq(m.tag, "x"));
}

/* decode_checked accepts exactly what check + decode accept */
static int
same_verdict(const char *p, size_t n, size_t max_item, size_t depth)
{
	struct maro_cbor_limits lim = { max_item, depth };
	struct maro_err err;
	struct maro_msg a, b;
	int two = maro_cbor_check((const uint8_t *)p, n, &lim, &err) == 0 &&
	    maro_msg_decode(&a, (const uint8_t *)p, n, &err) == 0;
	int one = maro_msg_decode_checked(&b, (const uint8_t *)p, n, &lim, &err) == 0;

	if (one != two)
		fprintf(stderr, "decode_checked %s what check + decode %s (%zu bytes, depth %zu)\n",
		    one ? "accepts" : "rejects", two ? "accept" : "reject", n, depth);
	return one == two && (!one || (a.payload.n == b.payload.n && a.nextra == b.nextra));
}

/*
 * decode_prefix, with bytes after the item: the message that check +
 * decode accept at the start, with its length; nothing when they accept
 * no start of the bytes (with a nesting limit under 2 it leaves every
 * item to them)
 */
static int
same_prefix(const char *p, size_t n, size_t max_item, size_t depth)
{
	struct maro_cbor_limits lim = { max_item, depth };
	struct maro_err err;
	struct maro_msg a, b;
	uint8_t buf[64];
	size_t len, k;

	if (n + 3 > sizeof buf)
		return 0;
	memcpy(buf, p, n);
	memcpy(buf + n, "\xa0\x00\xff", 3);
	if (maro_msg_decode_prefix(&b, buf, n + 3, &lim, &len) == 0)
		return len <= n + 3 && maro_cbor_check(buf, len, &lim, &err) == 0 &&
		    maro_msg_decode(&a, buf, len, &err) == 0 && a.payload.n == b.payload.n &&
		    a.nextra == b.nextra && a.tag.p == b.tag.p;
	for (k = 1; k <= n + 3 && depth >= 2; k++)
		if (maro_cbor_check(buf, k, &lim, &err) == 0 && maro_msg_decode(&a, buf, k, &err) == 0) {
			fprintf(stderr, "decode_prefix rejects what check + decode accept (%zu bytes, depth %zu)\n",
			    k, depth);
			return 0;
		}
	return 1;
}

static void
test_checked(void)
{
	static const struct { const char *p; size_t n; } cases[] = {
		{ "\xa1\x63tag\x61x", 7 },
		{ "\xa1\x63tag\x61x\x00", 8 },			/* trailing byte */
		{ "\xa1\x63tag\x61", 6 },				/* truncated */
		{ "\xa2\x63tag\x61x", 7 },				/* a pair short */
		{ "\xbf\x63tag\x61x\xff", 8 },			/* indefinite */
		{ "\xbf\x63tag\x61x", 7 },				/* no break */
		{ "\xbf\x63tag\x61x\xff\xff", 9 },
		{ "\xa2\x63tag\x61x\x67payload\x81\x81\x81\x01", 19 },	/* depth 4 */
		{ "\xa2\x63tag\x61x\x67payload\x81\x81\x80", 18 },	/* empty one at depth 4 */
		{ "\xa2\x63tag\x61x\x67payload\x5f\x41\x00\xff", 19 },	/* indefinite bytes */
		{ "\xa2\x63tag\x61x\x67payload\x5f\x61\x00\xff", 19 },	/* wrong chunk */
		{ "\xa2\x63tag\x61x\x67payload\x1c", 16 },		/* reserved ai */
		{ "\xa2\x63tag\x61x\x67payload\x7c", 16 },
		{ "\xbc\x63tag\x61x", 7 },				/* reserved map head */
		{ "\xa2\x63tag\x61x\x81\x01\x02", 10 },		/* array key */
		{ "\xa2\x63tag\x61x\x19\x01", 9 },			/* short int key */
		{ "\xa2\x63tag\x61x\x67payload\xf9\x3c\x00", 18 },
		{ "\xa2\x63tag\x61x\x67payload\xf8\x10", 17 },
		{ "\xa2\x63tag\x61x\x67payload\xc1\x1a\x00\x00\x00\x01", 21 },
	};
	size_t i, depth;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (depth = 1; depth <= 5; depth++)
			CHECK(same_verdict(cases[i].p, cases[i].n, 1024, depth) &&
			    same_prefix(cases[i].p, cases[i].n, 1024, depth));
	/* the size limit */
	CHECK(same_verdict("\xa1\x63tag\x61x", 7, 7, 64) && same_prefix("\xa1\x63tag\x61x", 7, 7, 64));
	CHECK(same_verdict("\xa1\x63tag\x61x", 7, 6, 64) && same_prefix("\xa1\x63tag\x61x", 7, 6, 64));
}

/* UUIDs: version 4 form, all distinct, and a forked child does not repeat its parent's. */
static void
test_uuid(void)
{
	char a[MARO_UUID_LEN + 1], b[MARO_UUID_LEN + 1], child[MARO_UUID_LEN + 1] = "";
	int fd[2], i, j, distinct = 1, form = 1, every = 1;
	unsigned digits[MARO_UUID_LEN] = { 0 };	/* bit d: hex digit d seen there */
	pid_t pid;

	maro_uuid(a);
	for (i = 0; i < 10000; i++) {
		maro_uuid(b);
		distinct &= strcmp(a, b) != 0;
		form &= strlen(b) == MARO_UUID_LEN && b[8] == '-' && b[13] == '-' && b[14] == '4' &&
		    b[18] == '-' && strchr("89ab", b[19]) && b[23] == '-';
		for (j = 0; j < MARO_UUID_LEN; j++) {
			const char *d = strchr("0123456789abcdef", b[j]);

			if (d && *d)
				digits[j] |= 1u << (d - "0123456789abcdef");
		}
	}
	CHECK(distinct);
	CHECK(form);
	/* every other place is random: each of the 16 lowercase digits turns up */
	for (j = 0; j < MARO_UUID_LEN; j++)
		if (j != 8 && j != 13 && j != 14 && j != 18 && j != 19 && j != 23)
			every &= digits[j] == 0xffff;
	CHECK(every);
	CHECK(digits[19] == 0xf00);
	if (pipe(fd) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		maro_uuid(child);
		_exit(write(fd[1], child, MARO_UUID_LEN) == MARO_UUID_LEN ? 0 : 1);
	}
	maro_uuid(b);
	CHECK(read(fd[0], child, MARO_UUID_LEN) == MARO_UUID_LEN);
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
	CHECK(strcmp(child, b) != 0);
}

/* a decoded message's views, moved to a copy of its bytes, equal a fresh decode of the copy */
static void
test_rebase(void)
{
	static const uint8_t msg[] = "\xa8\x63tag\x61x\x66source\x62s1\x6b" "destination\x62" "d1"
	    "\x6asession_id\x62i1\x68reply_to\x62~r\x67payload\x82\x01\x02\x01\x02\x61k\xf6";
	uint8_t copy[sizeof msg];
	struct maro_msg m, r, fresh;
	struct maro_err err;
	size_t n = sizeof msg - 1;

	CHECK(maro_msg_decode(&m, msg, n, &err) == 0);
	memcpy(copy, msg, n);
	memset(&r, 0xa5, sizeof r);
	maro_msg_rebase(&r, &m, msg, copy);
	CHECK(maro_msg_decode(&fresh, copy, n, &err) == 0);
	CHECK(r.tag.p == fresh.tag.p && r.tag.n == 1);
	CHECK(r.source.p == fresh.source.p && r.destination.p == fresh.destination.p);
	CHECK(r.session_id.p == fresh.session_id.p && r.reply_to.p == fresh.reply_to.p);
	CHECK(r.message_id.p == NULL && fresh.message_id.p == NULL);
	CHECK(r.payload.p == fresh.payload.p && r.payload.n == 3);
	CHECK(r.nextra == 2 && fresh.nextra == 2);
	CHECK(r.extra[0].p == fresh.extra[0].p && r.extra[0].n == 2);
	CHECK(r.extra[1].p == fresh.extra[1].p && r.extra[1].n == 3);
	CHECK(r.type == fresh.type && r.stage == fresh.stage);
}

static void
test_text(void)
{
	/* an unknown key with a nested value and a 1-byte-length text before session_id */
	static const uint8_t msg[] = "\xa4\x63tag\x61x\x61k\x82\x01\x81\x02\x68reply_to\x78\x1a"
	    "~abcdefghijklmnopqrstuvwxy\x6asession_id\x62i1";
	static const uint8_t indef[] = "\xbf\x63tag\x61x\x6asession_id\x62i2\xff";
	struct maro_str s;
	size_t n = sizeof msg - 1;

	CHECK(maro_msg_text(msg, n, "session_id", &s) == 1 && s.n == 2 && (const uint8_t *)s.p == msg + n - 2);
	CHECK(maro_msg_text(msg, n, "reply_to", &s) == 1 && s.n == 26 && s.p[0] == '~');
	CHECK(maro_msg_text(msg, n, "tag", &s) == 1 && s.n == 1 && s.p[0] == 'x');
	CHECK(maro_msg_text(msg, n, "source", &s) == 0);
	CHECK(maro_msg_text(msg, n, "k", &s) == -1);	/* not text */
	CHECK(maro_msg_text(msg, n - 1, "session_id", &s) == -1);	/* truncated */
	CHECK(maro_msg_text(indef, sizeof indef - 1, "session_id", &s) == 1 && s.n == 2 && s.p[1] == '2');
	CHECK(maro_msg_text(indef, sizeof indef - 1, "source", &s) == 0);
	CHECK(maro_msg_text((const uint8_t *)"\x82\x01\x02", 3, "tag", &s) == -1);
}

/* maro_format_msg, given the decoded message, writes what maro_format_item does. */
static void
test_format(void)
{
	static const struct { const char *p; size_t n; const char *payload; } cases[] = {
		{ "\xa2\x63tag\x61x\x67payload\x62hi", 18, "hi\n" },
		{ "\xa1\x63tag\x61x", 7, "\n" },
		{ "\xa2\x63tag\x61x\x67payload\x82\x01\x02", 18, "[1,2]\n" },
		{ "\xa2\x63tag\x61x\x67payload\x7f\x61h\x61i\xff", 21, "hi\n" },
	};
	enum maro_format f[] = { MARO_FORMAT_CBOR, MARO_FORMAT_JSON, MARO_FORMAT_DIAG, MARO_FORMAT_PAYLOAD };
	size_t i, j;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const uint8_t *p = (const uint8_t *)cases[i].p;
		struct maro_buf a = { 0 }, b = { 0 };
		struct maro_err err;
		struct maro_msg m;

		CHECK(maro_msg_decode(&m, p, cases[i].n, &err) == 0);
		for (j = 0; j < sizeof f / sizeof f[0]; j++) {
			a.len = b.len = 0;
			CHECK(maro_format_item(&a, f[j], p, cases[i].n, &err) == 0);
			CHECK(maro_format_msg(&b, f[j], &m, p, cases[i].n, &err) == 0);
			CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
		}
		CHECK(b.len == strlen(cases[i].payload) && memcmp(b.p, cases[i].payload, b.len) == 0);
		maro_buf_free(&a);
		maro_buf_free(&b);
	}
}

/* One redirect of the message at p (n bytes) to dest: the bytes an encoding with that destination gives. */
static int
redirect_same(const uint8_t *p, size_t n, const char *dest)
{
	struct maro_buf enc = { 0 }, want = { 0 };
	struct maro_dest_at at;
	struct maro_err err;
	struct maro_msg m;
	uint8_t *out;
	size_t len;
	int same;

	if (maro_msg_decode(&m, p, n, &err) < 0 || maro_msg_encode_dest(&m, &enc, &at) < 0)
		return 0;
	m.destination = maro_str_c(dest);
	if (maro_msg_encode(&m, &want) < 0 ||
	    !(out = malloc(maro_msg_redirect_max(enc.len, strlen(dest)))))
		return 0;
	len = maro_msg_redirect(out, enc.p, enc.len, &at, maro_str_c(dest));
	same = len == want.len && len <= maro_msg_redirect_max(enc.len, strlen(dest)) &&
	    memcmp(out, want.p, len) == 0 && maro_msg_decode(&m, out, len, &err) == 0 &&
	    maro_str_eq(m.destination, dest);
	/* the session_id where at says, moved by the change in length */
	if (same && m.session_id.p)
		same = at.sid_n == m.session_id.n &&
		    (const uint8_t *)m.session_id.p == out + at.sid + len - enc.len;
	else if (same)
		same = at.sid_n == 0;
	free(out);
	maro_buf_free(&enc);
	maro_buf_free(&want);
	return same;
}

/* maro_msg_redirect: a destination put in, or put in place of another. */
static void
test_redirect(void)
{
	static const struct { const char *p; size_t n; } cases[] = {
		{ "\xa1\x63tag\x61x", 7 },
		{ "\xa4\x63tag\x61x\x6b" "destination\x62w1\x66source\x61m\x67payload\x01", 40 },
		{ "\xa3\x63tag\x61x\x61k\x82\x01\x02\x6asession_id\x62s1", 26 },
	};
	char longname[300];
	uint8_t many[256];
	size_t i, n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK(redirect_same((const uint8_t *)cases[i].p, cases[i].n, "worker.7"));
		CHECK(redirect_same((const uint8_t *)cases[i].p, cases[i].n, ""));
	}
	/* 23 pairs, none a destination: the map's head grows a byte */
	n = 0;
	many[n++] = 0xb7;
	memcpy(many + n, "\x63tag\x61x", 6);
	n += 6;
	for (i = 0; i < 22; i++) {
		many[n++] = 0x61;
		many[n++] = (uint8_t)('a' + i);
		many[n++] = (uint8_t)i;
	}
	CHECK(redirect_same(many, n, "worker.7"));
	memset(longname, 'w', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	CHECK(redirect_same(many, n, longname));
	CHECK(redirect_same((const uint8_t *)cases[1].p, cases[1].n, longname));
}

/*
 * Text fields of every length around the eight-byte words the ASCII check
 * reads: a NUL or a byte that is not UTF-8 anywhere is refused; UTF-8
 * beyond ASCII is taken.
 */
static void
test_text_check(void)
{
	static const char *const bad_at[] = { "\0", "\x80", "\xc3(", "\xff" };
	struct maro_err err;
	struct maro_msg m;
	uint8_t b[64];
	size_t len, at, k;

	for (len = 1; len <= 40; len++) {
		/* {"tag": len x's} */
		b[0] = 0xa1;
		memcpy(b + 1, "\x63tag", 4);
		b[5] = (uint8_t)(0x78);
		b[6] = (uint8_t)len;
		memset(b + 7, 'x', len);
		CHECK(maro_msg_decode(&m, b, 7 + len, &err) == 0 && m.tag.n == len);
		for (at = 0; at < len; at++)
			for (k = 0; k < 4; k++) {
				size_t n = strlen(bad_at[k]) ? strlen(bad_at[k]) : 1;

				if (at + n > len)
					continue;
				memset(b + 7, 'x', len);
				memcpy(b + 7 + at, bad_at[k], n);
				CHECK(maro_msg_decode(&m, b, 7 + len, &err) < 0 &&
				    strstr(err.msg, k ? "UTF-8" : "NUL"));
			}
		if (len >= 2) {
			/* an e with an acute accent at the end */
			memset(b + 7, 'x', len);
			memcpy(b + 7 + len - 2, "\xc3\xa9", 2);
			CHECK(maro_msg_decode(&m, b, 7 + len, &err) == 0 && m.tag.n == len);
		}
	}
}

/* maro_str_same: the bytes, every one of them, at any length (one byte too) */
static void
test_same(void)
{
	struct maro_str none = { NULL, 0 }, empty = maro_str_c("");

	CHECK(maro_str_same(maro_str_c("a"), maro_str_c("a")));
	CHECK(!maro_str_same(maro_str_c("a"), maro_str_c("b")));
	CHECK(!maro_str_same(maro_str_c("ab"), maro_str_c("ac")));
	CHECK(!maro_str_same(maro_str_c("a"), maro_str_c("ab")));
	CHECK(!maro_str_same(maro_str_c("worker.1"), maro_str_c("worker.2")));
	CHECK(maro_str_same(none, empty) && maro_str_same(empty, none));
	CHECK(!maro_str_same(none, maro_str_c("a")));
}

void
test_message(void)
{
	test_same();
	test_uuid();
	test_roundtrip();
	test_bad();
	test_checked();
	test_rebase();
	test_text();
	test_text_check();
	test_format();
	test_redirect();
}
