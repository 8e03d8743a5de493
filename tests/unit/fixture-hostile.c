/*
 * unit-tests hostile ENDPOINT: a broken or hostile peer for the bats suites.
 * It throws at an inbox what an honest sender never sends: raw bytes on the
 * socket, then ZeroMQ frames that are garbage, truncated, overrunning,
 * multi-part, or carry CBOR that is not a message.  Exits 0 when all went.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <zmq.h>

#include "cli.h"
#include "unit.h"

/* A plain stream socket connected to a tcp:// or ipc:// endpoint, or -1. */
static int
raw_connect(const char *ep)
{
	int fd;

	if (!strncmp(ep, "tcp://", 6)) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		char host[256];
		const char *colon = strrchr(ep + 6, ':');

		snprintf(host, sizeof host, "%.*s", (int)(colon - ep - 6), ep + 6);
		sa.sin_port = htons((uint16_t)atoi(colon + 1));
		inet_pton(AF_INET, host, &sa.sin_addr);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
			close(fd);
			return -1;
		}
	} else {
		struct sockaddr_un su = { .sun_family = AF_UNIX };

		snprintf(su.sun_path, sizeof su.sun_path, "%s", ep + 6);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&su, sizeof su) < 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static int
raw_bytes(const char *ep)
{
	unsigned char junk[65536];
	int fd;
	size_t i;

	for (i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(rand() & 0xff);
	if ((fd = raw_connect(ep)) < 0)
		return -1;
	if (write(fd, junk, sizeof junk) < 0) {
		/* the inbox may hang up on us: that is its right */
	}
	close(fd);
	return 0;
}

static int
bad_frames(const char *ep)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
	static const unsigned char overrun[] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xa0 };
	static const unsigned char notmsg[] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0x01 };
	static const unsigned char badcbor[] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0x1c, 0x00 };
	static const unsigned char notag[] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0xa0 };
	static const unsigned char deep[] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3, 0x81, 0x81, 0x81 };
	unsigned char junk[1000];
	int linger = 2000, i;

	for (i = 0; i < (int)sizeof junk; i++)
		junk[i] = (unsigned char)(rand() & 0xff);
	if (zmq_connect(s, ep) < 0)
		return -1;
	zmq_send(s, junk, sizeof junk, 0);
	zmq_send(s, "m\1D", 3, 0);
	zmq_send(s, "", 0, 0);
	zmq_send(s, overrun, sizeof overrun, 0);
	zmq_send(s, notmsg, sizeof notmsg, 0);
	zmq_send(s, badcbor, sizeof badcbor, 0);
	zmq_send(s, notag, sizeof notag, 0);
	zmq_send(s, deep, sizeof deep, 0);
	zmq_send(s, "m\1A\0", 4, 0);
	zmq_send(s, "part", 4, ZMQ_SNDMORE);
	zmq_send(s, "two", 3, 0);
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return 0;
}

int
fixture_hostile(const char *endpoint)
{
	srand((unsigned)getpid());
	if (raw_bytes(endpoint) < 0) {
		perror("hostile: raw connect");
		return 1;
	}
	if (bad_frames(endpoint) < 0) {
		fprintf(stderr, "hostile: zmq connect: %s\n", zmq_strerror(zmq_errno()));
		return 1;
	}
	printf("hostile: sent\n");
	return 0;
}

/*
 * unit-tests zmtp1 ENDPOINT: greets an inbox the way a ZMTP 1.0 peer does
 * (a first frame, the routing id, not the 3.x signature) and says whether
 * the inbox hung up within 2 s ("closed") or kept talking ("open").  Random
 * bytes are such a greeting 255 times in 256, and in libzmq 4.3 one can
 * abort the process on an assertion: an inbox must refuse it.
 */
int
fixture_zmtp1(const char *endpoint)
{
	/* one frame: length 2 (flags byte and one byte of id), no more, 'h' */
	static const unsigned char greeting[] = { 0x02, 0x00, 'h' };
	unsigned char buf[256];
	struct pollfd p;
	int fd = raw_connect(endpoint), closed = 0;
	int64_t until;

	if (fd < 0) {
		perror("zmtp1: connect");
		return 1;
	}
	if (write(fd, greeting, sizeof greeting) != (ssize_t)sizeof greeting) {
		perror("zmtp1: write");
		return 1;
	}
	until = maro_now_us() + 2000000;
	while (!closed && maro_now_us() < until) {
		p = (struct pollfd){ fd, POLLIN, 0 };
		if (poll(&p, 1, 100) == 1) {
			ssize_t k = read(fd, buf, sizeof buf);

			closed = k <= 0;
		}
	}
	close(fd);
	printf("%s\n", closed ? "closed" : "open");
	return 0;
}

/*
 * unit-tests outsider ENDPOINT SERVER_PUBLIC_Z85: a CURVE client that knows
 * the group's public key but not its secret: it presents a key pair of its
 * own.  The handshake's cryptography succeeds; the receiver's ZAP handler
 * must refuse it.  Sends one message and prints "acked" if an ACK came
 * back within 3 s, else "refused".  Exit 0 either way.  With client_public
 * and client_secret it presents those instead (the group's pair: a member,
 * which shows that the refusal is the key's doing).
 */
int
fixture_outsider(const char *ep, const char *server_public, const char *client_public,
    const char *client_secret)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
	char pub[41], sec[41];
	/* header, seq 1, length, then a notification: {"tag": "x", "payload": "intruder"} */
	static const unsigned char msg[] = { 0xa2, 0x63, 't', 'a', 'g', 0x61, 'x', 0x67, 'p', 'a', 'y',
		'l', 'o', 'a', 'd', 0x68, 'i', 'n', 't', 'r', 'u', 'd', 'e', 'r' };
	unsigned char frame[4 + 12 + sizeof msg] = { 'm', 1, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
		sizeof msg };
	zmq_pollitem_t it;
	int linger = 0, acked = 0;

	if (zmq_curve_keypair(pub, sec) != 0)
		return 1;
	if (client_public && client_secret) {
		snprintf(pub, sizeof pub, "%s", client_public);
		snprintf(sec, sizeof sec, "%s", client_secret);
	}
	zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_public, 40);
	zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 40);
	zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 40);
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	memcpy(frame + 16, msg, sizeof msg);
	if (zmq_connect(s, ep) != 0)
		return 1;
	zmq_send(s, frame, sizeof frame, ZMQ_DONTWAIT);
	it = (zmq_pollitem_t){ s, 0, ZMQ_POLLIN, 0 };
	if (zmq_poll(&it, 1, 3000) == 1) {
		char buf[64];

		acked = zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT) >= 3 && !memcmp(buf, "m\1A", 3);
	}
	puts(acked ? "acked" : "refused");
	zmq_close(s);
	zmq_ctx_term(ctx);
	return 0;
}
