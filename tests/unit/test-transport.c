#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cli.h"
#include "transport.h"
#include "unit.h"

/*
 * maro_poll over real sockets: an inbox (ROUTER) bound on loopback TCP and
 * two outboxes (DEALER) connected to it, as the tools have them.
 */

static const void *
frame(const char *s, size_t *n)
{
	*n = strlen(s);
	return s;
}

/* Polls (no wait) until item k reports POLLIN or 3 s pass; the polls it took, or -1. */
static int
poll_until(struct maro_ctx *c, struct maro_pollitem *items, int n, int k)
{
	int64_t until = maro_now_us() + 3000000;
	int polls = 0;

	while (maro_now_us() < until) {
		polls++;
		if (maro_poll(c, items, n, 0) < 0)
			return -1;
		if (items[k].revents & MARO_POLLIN)
			return polls;
	}
	return -1;
}

static void
test_poll(struct maro_ctx *c)
{
	const struct maro_driver *dr = c->driver;
	char ep[MARO_ENDPOINT_MAX + 1];
	void *in = dr->bind(c, ep), *a, *b;
	const void *from, *p;
	size_t fromlen, n;
	char who[256];
	size_t wholen;
	int fds[2];
	struct maro_pollitem it[3];
	int64_t t0;

	CHECK(in != NULL);
	if (!in)
		return;
	a = dr->connect(c, ep);
	b = dr->connect(c, ep);
	CHECK(a && b);

	/* nothing yet: no item ready, and a wait runs out its time */
	it[0] = (struct maro_pollitem){ dr->handle(in), 0, MARO_POLLIN, 0 };
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 0);
	CHECK(maro_poll(c, it, 1, 0) == 0 && it[0].revents == 0);
	t0 = maro_now_us();
	CHECK(maro_poll(c, it, 1, 60) == 0);
	CHECK(maro_now_us() - t0 >= 55000);

	/* a frame sent to an inbox whose last receive found none: its fd says so */
	CHECK(dr->send(a, NULL, 0, "one", 3) == 0);
	t0 = maro_now_us();
	CHECK(maro_poll(c, it, 1, 3000) == 1 && (it[0].revents & MARO_POLLIN));
	CHECK(maro_now_us() - t0 < 2000000);
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 1 && n == 3 && !memcmp(p, "one", 3));
	CHECK(fromlen > 0 && fromlen <= sizeof who);
	wholen = fromlen < sizeof who ? fromlen : sizeof who;
	memcpy(who, from, wholen);
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 0);

	/* the reply way: the outbox socket hears from the inbox */
	it[1] = (struct maro_pollitem){ dr->handle(a), 0, MARO_POLLIN, 0 };
	CHECK(dr->recv(a, NULL, NULL, &p, &n) == 0);
	p = frame("back", &n);
	CHECK(dr->send(in, who, wholen, p, n) == 0);
	CHECK(poll_until(c, it, 2, 1) > 0);
	CHECK(dr->recv(a, NULL, NULL, &p, &n) == 1 && n == 4 && !memcmp(p, "back", 4));
	CHECK(dr->recv(a, NULL, NULL, &p, &n) == 0);

	/*
	 * One socket stays ready (its frames are not read); a frame for a
	 * second, idle one must still be reported, in the same calls: a poll
	 * that returned as soon as one socket was ready would never look at
	 * the other's fd.
	 */
	CHECK(dr->send(b, NULL, 0, "x", 1) == 0);
	CHECK(dr->send(b, NULL, 0, "y", 1) == 0);
	CHECK(poll_until(c, it, 1, 0) > 0);	/* the inbox: ready, and left so */
	p = frame("to-a", &n);
	CHECK(dr->send(in, who, wholen, p, n) == 0);
	CHECK(poll_until(c, it, 2, 1) > 0);
	CHECK(it[0].revents & MARO_POLLIN);
	CHECK(dr->recv(a, NULL, NULL, &p, &n) == 1 && n == 4 && !memcmp(p, "to-a", 4));
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 1 && n == 1 && p && !memcmp(p, "x", 1));
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 1 && n == 1 && p && !memcmp(p, "y", 1));
	CHECK(dr->recv(in, &from, &fromlen, &p, &n) == 0);

	/* plain descriptors, with and without sockets */
	CHECK(pipe(fds) == 0);
	it[2] = (struct maro_pollitem){ NULL, fds[0], MARO_POLLIN, 0 };
	CHECK(maro_poll(c, it + 2, 1, 0) == 0);
	CHECK(write(fds[1], "z", 1) == 1);
	CHECK(maro_poll(c, it, 3, 1000) == 1 && it[2].revents == MARO_POLLIN && !it[0].revents && !it[1].revents);
	close(fds[1]);
	CHECK(read(fds[0], who, 1) == 1);
	/* the writer gone: the reader hears of it */
	CHECK(maro_poll(c, it + 2, 1, 1000) == 1 && it[2].revents != 0);
	close(fds[0]);

	/* a socket asked only for POLLOUT: a connected outbox can send */
	it[0] = (struct maro_pollitem){ dr->handle(b), 0, MARO_POLLOUT, 0 };
	CHECK(maro_poll(c, it, 1, 1000) == 1 && it[0].revents == MARO_POLLOUT);

	dr->close(a, 0);
	dr->close(b, 0);
	dr->close(in, 0);
}

/*
 * Only tcp:// and ipc:// are connected to, whatever an entry says: the
 * tools carry none of libzmq's other transports (lib/zmq-static.c).
 */
static void
test_connect_refused(struct maro_ctx *c)
{
	static const char *const bad[] = {
		"pgm://127.0.0.1;239.192.1.1:5555", "epgm://127.0.0.1;239.192.1.1:5555",
		"norm://127.0.0.1:5555", "udp://127.0.0.1:5555", "inproc://x", "tcp://*:5555",
	};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++) {
		void *s;

		errno = 0;
		s = c->driver->connect(c, bad[i]);
		CHECK(s == NULL && errno == EPROTONOSUPPORT);
		if (s)
			c->driver->close(s, 0);
	}
}

/*
 * libzmq's table of sockets: as many as the descriptors allow when the
 * peers are not known, libzmq's 1023 for a receiver, three a peer and
 * some to spare for a sender to many.
 */
static void
test_socket_limit(const struct maro_ctx_opts *base)
{
	struct maro_ctx_opts o = *base;
	struct maro_ctx *c;
	struct rlimit rl;
	char err[512];
	int fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (int)rl.rlim_cur : 65535;
	static const size_t peers[] = { 0, 1, 300, 400 };
	int want[4];
	size_t i;

	want[0] = fds < 1023 ? 1023 : fds > 65535 ? 65535 : fds;
	want[1] = want[2] = 1023;
	want[3] = fds < 1023 ? 1023 : fds < 400 * 3 + 64 ? fds : 400 * 3 + 64;
	for (i = 0; i < 4; i++) {
		o.peers = peers[i];
		c = maro_ctx_open(&o, err, sizeof err);
		CHECK(c != NULL);
		if (!c)
			continue;
		CHECK(zmq_ctx_get(c->zmq, ZMQ_MAX_SOCKETS) == want[i]);
		maro_ctx_close(c);
	}
}

void
test_transport(void)
{
	char dir[] = "/tmp/maro-unit.XXXXXX", url[600], cmd[700];
	struct maro_ctx_opts o = { 0 };
	struct maro_ctx *c;
	char err[512];

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(url, sizeof url, "dir:%s", dir);
	o.registry_url = url;
	o.group = "unit";
	o.transport = "tcp";
	o.keyfile = "";
	/* loopback TCP on a dir: registry, every local user's: refused without a key, unless asked for */
	unsetenv("MARO_INSECURE_TCP");
	errno = 0;
	c = maro_ctx_open(&o, err, sizeof err);
	CHECK(!c && errno == EINVAL && strstr(err, "refused without a group key"));
	setenv("MARO_INSECURE_TCP", "1", 1);
	c = maro_ctx_open(&o, err, sizeof err);
	CHECK(c != NULL);
	if (c) {
		test_poll(c);
		test_connect_refused(c);
		maro_ctx_close(c);
		test_socket_limit(&o);
	} else {
		fprintf(stderr, "transport: %s\n", err);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove '%s'\n", dir);
}
