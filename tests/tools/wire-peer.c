/*
 * wire-peer: a peer written from maro(7) alone, for tests/conformance.bats.
 * It speaks the wire protocol over libzmq with no part of lib/: the
 * frames are built and checked here, byte by byte, as the page says.
 *
 *   wire-peer send [-f FLAGS] [-s SEQ] [-T MS] ENDPOINT FILE...
 *	connects a DEALER to ENDPOINT and sends one DATA frame (flags FLAGS,
 *	default 0) holding each FILE (a message, CBOR) as an item, sequence
 *	numbers from SEQ (default 1).  Prints each ACK frame it gets as
 *	"ack flags=XX" and one "FIRST COUNT" line per item, until every
 *	sequence number was acknowledged (exit 0) or MS ms (default 3000)
 *	passed (exit 1).
 *
 *   wire-peer send -r [-T MS] ENDPOINT FILE
 *	sends FILE as it is, a whole frame (built by the test, right or
 *	wrong), and prints the ACKs it gets until MS ms passed: exit 0 if
 *	any came, else 1.
 *
 *   wire-peer serve [-a FLAGS] [-n] [-c COUNT] [-T MS] DIR
 *	binds a ROUTER on tcp://127.0.0.1 (a free port) and prints
 *	"endpoint tcp://127.0.0.1:PORT".  For each DATA frame it prints
 *	"frame flags=XX bytes=N items=K" and for each item "item seq=S
 *	bytes=L", writes the message to DIR/S.cbor, and acknowledges it (ACK
 *	flags FLAGS, default 0) unless -n.  A frame that breaks maro(7) is
 *	said as "bad: WHY".  Ends after COUNT items or MS ms (default 10000).
 *
 *   wire-peer hold FILE MS
 *	creates FILE and holds an open file description write lock on all of
 *	it for MS ms: the owner lock of a dir: entry registered by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
die(const char *what)
{
	fprintf(stderr, "wire-peer: %s: %s\n", what, errno ? strerror(errno) : "failed");
	exit(2);
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	size_t cap = 0, len = 0, k;

	if (!f)
		die(path);
	do {
		if (len == cap && !(b = realloc(b, cap = cap ? 2 * cap : 65536)))
			die("realloc");
		k = fread(b + len, 1, cap - len, f);
		len += k;
	} while (k);
	fclose(f);
	*n = len;
	return b;
}

static int
cmd_send(int argc, char **argv)
{
	unsigned flags = 0;
	uint64_t seq = 1, nitems, acked = 0;
	int64_t limit = 3000, end;
	uint8_t *frame, *seen;
	size_t len = 4, i;
	void *ctx, *s;
	int c, linger = 0, raw = 0, acks = 0;

	while ((c = getopt(argc, argv, "f:s:T:r")) != -1) {
		switch (c) {
		case 'r': raw = 1; break;
		case 'f': flags = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': seq = strtoull(optarg, NULL, 0); break;
		case 'T': limit = strtoll(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (argc - optind < 2 || (raw && argc - optind != 2))
		return 2;
	nitems = raw ? 1 : (uint64_t)(argc - optind - 1);
	frame = malloc(4);
	seen = calloc(nitems, 1);
	if (!frame || !seen)
		die("malloc");
	frame[0] = 'm';
	frame[1] = 1;
	frame[2] = 'D';
	frame[3] = (uint8_t)flags;
	if (raw) {
		free(frame);
		frame = slurp(argv[optind + 1], &len);
	}
	for (i = 0; !raw && i < nitems; i++) {
		size_t n;
		uint8_t *m = slurp(argv[optind + 1 + i], &n);

		if (!(frame = realloc(frame, len + 12 + n)))
			die("realloc");
		put_u64(frame + len, seq + i);
		put_u32(frame + len + 8, (uint32_t)n);
		memcpy(frame + len + 12, m, n);
		len += 12 + n;
		free(m);
	}
	ctx = zmq_ctx_new();
	s = zmq_socket(ctx, ZMQ_DEALER);
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	if (zmq_connect(s, argv[optind]) < 0)
		die(argv[optind]);
	if (zmq_send(s, frame, len, 0) < 0)
		die("zmq_send");
	end = now_ms() + limit;
	while ((raw || acked < nitems) && now_ms() < end) {
		zmq_pollitem_t pi = { s, 0, ZMQ_POLLIN, 0 };
		zmq_msg_t msg;
		const uint8_t *p;
		size_t n, off;

		if (zmq_poll(&pi, 1, (long)(end - now_ms())) <= 0)
			continue;
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, s, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&msg);
			continue;
		}
		p = zmq_msg_data(&msg);
		n = zmq_msg_size(&msg);
		if (n < 4 || p[0] != 'm' || p[1] != 1 || p[2] != 'A' || (n - 4) % 12) {
			printf("bad: a frame that is not an ACK (%zu bytes)\n", n);
			zmq_msg_close(&msg);
			continue;
		}
		printf("ack flags=%02x\n", p[3]);
		acks++;
		for (off = 4; off < n; off += 12) {
			uint64_t first = get_u64(p + off), k;
			uint32_t count = get_u32(p + off + 8);

			printf("%llu %u\n", (unsigned long long)first, count);
			for (k = first; k - first < count; k++)
				if (k >= seq && k - seq < nitems && !seen[k - seq]) {
					seen[k - seq] = 1;
					acked++;
				}
		}
		fflush(stdout);
		zmq_msg_close(&msg);
	}
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(frame);
	free(seen);
	if (raw)
		return acks ? 0 : 1;
	return acked == nitems ? 0 : 1;
}

/* Checks one DATA frame as maro(7) says; prints it; writes its messages; acks them. */
static void
serve_frame(void *s, zmq_msg_t *id, const uint8_t *p, size_t n, const char *dir, unsigned ackflags,
    int ack, long *items)
{
	uint8_t *a = malloc(4 + 12 * (n / 12 + 1));
	size_t off = 4, alen = 4, k = 0;
	char path[4096];

	if (!a)
		die("malloc");
	if (n < 4 || p[0] != 'm' || p[1] != 1 || p[2] != 'D') {
		printf("bad: not a DATA frame (%zu bytes)\n", n);
		free(a);
		return;
	}
	if (p[3] & ~1u)
		printf("bad: reserved flags %02x set\n", p[3]);
	for (; off + 12 <= n; k++) {
		uint64_t seq = get_u64(p + off);
		uint32_t len = get_u32(p + off + 8);
		FILE *f;

		off += 12;
		if (len > n - off) {
			printf("bad: item of %u bytes overruns its frame\n", len);
			break;
		}
		printf("item seq=%llu bytes=%u\n", (unsigned long long)seq, len);
		snprintf(path, sizeof path, "%s/%llu.cbor", dir, (unsigned long long)seq);
		if (!(f = fopen(path, "wb")) || fwrite(p + off, 1, len, f) != len || fclose(f))
			die(path);
		put_u64(a + alen, seq);
		put_u32(a + alen + 8, 1);
		alen += 12;
		off += len;
		(*items)++;
	}
	if (off != n)
		printf("bad: %zu bytes after the last item\n", n - off);
	printf("frame flags=%02x bytes=%zu items=%zu\n", p[3], n, k);
	fflush(stdout);
	if (ack && alen > 4) {
		a[0] = 'm';
		a[1] = 1;
		a[2] = 'A';
		a[3] = (uint8_t)ackflags;
		zmq_send(s, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE);
		zmq_send(s, a, alen, 0);
	}
	free(a);
}

static int
cmd_serve(int argc, char **argv)
{
	unsigned ackflags = 0;
	long count = -1, items = 0;
	int64_t limit = 10000, end;
	int c, ack = 1, linger = 0;
	char ep[256];
	size_t eplen = sizeof ep;
	void *ctx, *s;

	while ((c = getopt(argc, argv, "a:nc:T:")) != -1) {
		switch (c) {
		case 'a': ackflags = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': ack = 0; break;
		case 'c': count = strtol(optarg, NULL, 0); break;
		case 'T': limit = strtoll(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (argc - optind != 1)
		return 2;
	ctx = zmq_ctx_new();
	s = zmq_socket(ctx, ZMQ_ROUTER);
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	if (zmq_bind(s, "tcp://127.0.0.1:*") < 0 || zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &eplen) < 0)
		die("bind");
	printf("endpoint %s\n", ep);
	fflush(stdout);
	end = now_ms() + limit;
	while ((count < 0 || items < count) && now_ms() < end) {
		zmq_pollitem_t pi = { s, 0, ZMQ_POLLIN, 0 };
		zmq_msg_t id, msg;
		int more;
		size_t ml = sizeof more;

		if (zmq_poll(&pi, 1, (long)(end - now_ms())) <= 0)
			continue;
		zmq_msg_init(&id);
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&id, s, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&id);
			zmq_msg_close(&msg);
			continue;
		}
		if (zmq_msg_recv(&msg, s, 0) >= 0) {
			zmq_getsockopt(s, ZMQ_RCVMORE, &more, &ml);
			if (more)
				printf("bad: a ZeroMQ message of more than one frame\n");
			serve_frame(s, &id, zmq_msg_data(&msg), zmq_msg_size(&msg), argv[optind], ackflags,
			    ack, &items);
			while (more && zmq_msg_recv(&msg, s, 0) >= 0)
				zmq_getsockopt(s, ZMQ_RCVMORE, &more, &ml);
		}
		zmq_msg_close(&id);
		zmq_msg_close(&msg);
	}
	/* the last acknowledgements go out before the socket closes */
	linger = 1000;
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return 0;
}

static int
cmd_hold(int argc, char **argv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	if (argc != 3)
		return 2;
	fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0)
		die(argv[1]);
	printf("held\n");
	fflush(stdout);
	{
		long ms = strtol(argv[2], NULL, 0);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "send"))
		return cmd_send(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "hold"))
		return cmd_hold(argc - 1, argv + 1);
	fprintf(stderr, "usage: wire-peer send|serve|hold ...\n");
	return 2;
}
