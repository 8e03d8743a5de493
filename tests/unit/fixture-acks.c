/*
 * unit-tests acks ENDPOINT COUNT FLAGS: a sender speaking the wire protocol
 * by hand, to time an inbox's acknowledgements.  It sends COUNT notification
 * messages (tag "echo"), one DATA frame each with header flags FLAGS, and
 * waits for each one's ACK before it sends the next.  Prints the whole time
 * in microseconds; exits 1 when an acknowledgement does not come within 5 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "cli.h"
#include "message.h"
#include "transport.h"
#include "unit.h"

static void
put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t
get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* Waits for an ACK that covers seq.  0, or -1 when none came in time. */
static int
await_ack(void *s, uint64_t seq)
{
	int64_t until = maro_now_us() + 5000000;

	while (maro_now_us() < until) {
		zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
		uint8_t buf[4096];
		int n;

		if (zmq_poll(&it, 1, 100) <= 0)
			continue;
		n = zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT);
		if (n < MARO_FRAME_HEADER || buf[2] != MARO_FRAME_ACK)
			continue;
		for (int off = MARO_FRAME_HEADER; off + MARO_ACK_ITEM <= n; off += MARO_ACK_ITEM) {
			uint64_t first = get_be(buf + off, 8), count = get_be(buf + off + 8, 4);

			if (seq >= first && seq - first < count)
				return 0;
		}
	}
	return -1;
}

int
fixture_acks(const char *endpoint, const char *count_arg, const char *flags_arg)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
	long count = atol(count_arg), flags = strtol(flags_arg, NULL, 0);
	int linger = 0, rc = 0;
	int64_t start;

	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	if (count < 1 || zmq_connect(s, endpoint) < 0) {
		fprintf(stderr, "unit-tests acks: cannot use %s\n", endpoint);
		return 2;
	}
	start = maro_now_us();
	for (long i = 1; i <= count && rc == 0; i++) {
		struct maro_msg m;
		struct maro_buf enc = { 0 };
		char ids[2][MARO_UUID_LEN + 1];
		uint8_t *frame;
		size_t n;

		memset(&m, 0, sizeof m);
		m.tag = maro_str_c("echo");
		m.type = MARO_SESSION_NOTIFICATION;
		m.payload.p = (const uint8_t *)"\x61x";
		m.payload.n = 2;
		maro_msg_fill(&m, "acks", ids);
		if (maro_msg_encode(&m, &enc) < 0)
			return 2;
		n = MARO_FRAME_HEADER + MARO_DATA_ITEM_HEADER + enc.len;
		frame = malloc(n);
		if (!frame)
			return 2;
		frame[0] = 'm';
		frame[1] = 1;
		frame[2] = MARO_FRAME_DATA;
		frame[3] = (uint8_t)flags;
		put_be(frame + MARO_FRAME_HEADER, (uint64_t)i, 8);
		put_be(frame + MARO_FRAME_HEADER + 8, enc.len, 4);
		memcpy(frame + MARO_FRAME_HEADER + MARO_DATA_ITEM_HEADER, enc.p, enc.len);
		if (zmq_send(s, frame, n, 0) != (int)n || await_ack(s, (uint64_t)i) < 0) {
			fprintf(stderr, "unit-tests acks: no acknowledgement of message %ld\n", i);
			rc = 1;
		}
		free(frame);
		maro_buf_free(&enc);
	}
	if (rc == 0)
		printf("%lld\n", (long long)(maro_now_us() - start));
	zmq_close(s);
	zmq_ctx_term(ctx);
	return rc;
}
