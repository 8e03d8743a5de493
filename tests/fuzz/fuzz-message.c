/*
 * fuzz-message: the CBOR message decoder (maro_msg_decode, lib/message.h).
 *
 * Bytes the scanner accepts as one item are what a tool hands the decoder,
 * so both run, as they do in the tools.  A decoded message must point into
 * the input only, encode again into a well-formed item, and that item must
 * decode to the same fields and encode to the same bytes.  The one-pass
 * decoder for untrusted bytes must agree with the two passes.  The look-up
 * of one key (maro_msg_text) stays inside any bytes, and in a message
 * encoded here finds what the decoder finds; a destination spliced into
 * it (maro_msg_redirect) gives the bytes of a fresh encoding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cborseq.h"
#include "message.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static void
inside(const void *v, size_t n, const uint8_t *p, size_t size)
{
	const uint8_t *b = v;

	if (!b)
		return;
	REQUIRE(b >= p && n <= size && b - p <= (ptrdiff_t)(size - n));
}

static int
same_str(struct maro_str a, struct maro_str b)
{
	if (!a.p || !b.p)
		return !a.p && !b.p;
	return a.n == b.n && !memcmp(a.p, b.p, a.n);
}

static int
same_span(struct maro_span a, struct maro_span b)
{
	if (!a.p || !b.p)
		return !a.p && !b.p;
	return a.n == b.n && !memcmp(a.p, b.p, a.n);
}

static void
same_msg(const struct maro_msg *a, const struct maro_msg *b)
{
	size_t i;

	REQUIRE(same_str(a->tag, b->tag));
	REQUIRE(same_str(a->source, b->source));
	REQUIRE(same_str(a->destination, b->destination));
	REQUIRE(same_str(a->session_id, b->session_id));
	REQUIRE(same_str(a->message_id, b->message_id));
	REQUIRE(same_str(a->reply_to, b->reply_to));
	REQUIRE(a->type == b->type && a->stage == b->stage);
	REQUIRE(same_span(a->payload, b->payload));
	REQUIRE(a->nextra == b->nextra);
	for (i = 0; i < a->nextra; i++)
		REQUIRE(same_span(a->extra[i], b->extra[i]));
}

/*
 * maro_msg_decode_checked() in one pass accepts exactly what
 * maro_cbor_check() then maro_msg_decode() accept, to the same message.
 */
static void
one_pass(const uint8_t *data, size_t size)
{
	static const struct maro_cbor_limits lims[] = {
		{ 0, 0 }, { 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 8 }, { 0, MARO_CBOR_MAX_DEPTH_LIMIT }, { 64, 0 },
	};
	struct maro_msg a, b;
	struct maro_err err;
	size_t i, len;

	for (i = 0; i < sizeof lims / sizeof lims[0]; i++) {
		int two = maro_cbor_check(data, size, &lims[i], &err) == 0 &&
		    maro_msg_decode(&a, data, size, &err) == 0;
		int one;

		memset(&err, 0, sizeof err);
		one = maro_msg_decode_checked(&b, data, size, &lims[i], &err) == 0;
		if (!one)
			REQUIRE(err.msg[0] && err.offset <= size);
		REQUIRE(one == two);
		if (one)
			same_msg(&a, &b);
		/* in one pass from the start of a stream: the message check + decode take there, or none */
		if (maro_msg_decode_prefix(&b, data, size, &lims[i], &len) == 0) {
			REQUIRE(len <= size && maro_cbor_check(data, len, &lims[i], &err) == 0 &&
			    maro_msg_decode(&a, data, len, &err) == 0);
			same_msg(&a, &b);
		} else if (lims[i].max_depth != 1) {
			REQUIRE(!two);	/* under 2 levels it leaves every item to the scan */
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maro_msg m, m2;
	struct maro_err err;
	struct maro_buf out = { 0 }, out2 = { 0 };
	size_t i;

	one_pass(data, size);
	/* the outbox's look-up of one key: safe on any bytes, and inside them */
	{
		struct maro_str t;

		if (maro_msg_text(data, size, "session_id", &t) == 1)
			inside(t.p, t.n, data, size);
	}
	if (maro_cbor_check(data, size, NULL, &err) < 0) {
		REQUIRE(err.msg[0] && err.offset <= size);
		return 0;
	}
	memset(&err, 0, sizeof err);
	if (maro_msg_decode(&m, data, size, &err) < 0) {
		REQUIRE(err.msg[0] && err.offset <= size);
		return 0;
	}
	REQUIRE(m.tag.p && m.nextra <= MARO_MSG_MAX_EXTRA);
	inside(m.tag.p, m.tag.n, data, size);
	inside(m.source.p, m.source.n, data, size);
	inside(m.destination.p, m.destination.n, data, size);
	inside(m.session_id.p, m.session_id.n, data, size);
	inside(m.message_id.p, m.message_id.n, data, size);
	inside(m.reply_to.p, m.reply_to.n, data, size);
	inside(m.payload.p, m.payload.n, data, size);
	for (i = 0; i < m.nextra; i++)
		inside(m.extra[i].p, m.extra[i].n, data, size);

	REQUIRE(maro_msg_encode(&m, &out) == 0);
	REQUIRE(maro_cbor_check(out.p, out.len, NULL, &err) == 0);
	REQUIRE(maro_msg_decode(&m2, out.p, out.len, &err) == 0);
	same_msg(&m, &m2);
	REQUIRE(maro_msg_encode(&m2, &out2) == 0);
	REQUIRE(out.len == out2.len && !memcmp(out.p, out2.p, out.len));
	/* in a message encoded here, the look-up finds what the decoder does */
	{
		static const char *const keys[] = { "tag", "source", "destination", "session_id",
		    "message_id", "reply_to" };
		const struct maro_str *f[] = { &m2.tag, &m2.source, &m2.destination, &m2.session_id,
		    &m2.message_id, &m2.reply_to };
		struct maro_str t;

		for (i = 0; i < 6; i++) {
			int rc = maro_msg_text(out.p, out.len, keys[i], &t);

			REQUIRE(rc == (f[i]->p ? 1 : 0));
			if (rc == 1) {
				inside(t.p, t.n, out.p, out.len);
				REQUIRE(same_str(t, *f[i]));
			}
		}
	}

	/* a peer's name spliced in gives the bytes of encoding it with that destination */
	{
		struct maro_buf enc = { 0 }, want = { 0 };
		struct maro_dest_at at;
		struct maro_msg m3 = m2;
		uint8_t *red;
		size_t len;

		REQUIRE(maro_msg_encode_dest(&m2, &enc, &at) == 0);
		REQUIRE(enc.len == out.len && !memcmp(enc.p, out.p, out.len));
		m3.destination = maro_str_c("fuzz.peer");
		REQUIRE(maro_msg_encode(&m3, &want) == 0);
		red = malloc(maro_msg_redirect_max(enc.len, 9));
		REQUIRE(red);
		len = maro_msg_redirect(red, enc.p, enc.len, &at, m3.destination);
		REQUIRE(len == want.len && len <= maro_msg_redirect_max(enc.len, 9) && !memcmp(red, want.p, len));
		/* where the session_id is said to be, moved by the change in length */
		REQUIRE(at.sid_n == (m2.session_id.p ? m2.session_id.n : 0));
		if (m2.session_id.p)
			REQUIRE(!memcmp(red + at.sid + len - enc.len, m2.session_id.p, at.sid_n));
		free(red);
		maro_buf_free(&enc);
		maro_buf_free(&want);
	}

	/* a reply made from it is a message too */
	{
		char id[MARO_UUID_LEN + 1];
		struct maro_buf rep = { 0 };

		maro_msg_make_reply(&m2, "fuzz", id);
		REQUIRE(maro_msg_encode(&m2, &rep) == 0);
		REQUIRE(maro_cbor_check(rep.p, rep.len, NULL, &err) == 0);
		REQUIRE(maro_msg_decode(&m, rep.p, rep.len, &err) == 0);
		maro_buf_free(&rep);
	}
	maro_buf_free(&out);
	maro_buf_free(&out2);
	return 0;
}
