#include <string.h>

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
	CHECK(decode("\xa2\x63tag\x61x\x6csession_type\x63" "foo", 22, &err) < 0);
	/* unknown keys are kept, in order */
	CHECK(maro_msg_decode(&m, (const uint8_t *)"\xa3\x01\x02\x63tag\x61x\x61z\xf6", 12, &err) == 0 &&
	    m.nextra == 2 && m.extra[0].n == 2 && m.extra[1].n == 3);
	/* indefinite-length map */
	CHECK(maro_msg_decode(&m, (const uint8_t *)"\xbf\x63tag\x61x\xff", 8, &err) == 0 && maro_str_eq(m.tag, "x"));
}

void
test_message(void)
{
	test_roundtrip();
	test_bad();
}
