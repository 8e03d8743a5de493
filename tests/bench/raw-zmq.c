/*
 * raw-zmq: the raw libzmq baseline that scripts/bench measures maro against,
 * in the same run.  Nothing of maro in it: plain sockets, plain messages.
 * The two ends of a measurement are two processes, like maro's; the end
 * that binds tells the other its endpoint through a pipe once it is bound,
 * so nothing sleeps and a TCP port is never guessed.
 *
 *   raw-zmq stream ENDPOINT COUNT SIZE   PUSH COUNT messages of SIZE bytes to
 *                                        a PULL process; print msgs/s
 *   raw-zmq rr ENDPOINT COUNT SIZE [cat] COUNT REQ/REP round trips; print trips/s.
 *                                        With "cat", the REP process passes
 *                                        each request through a cat(1) child
 *                                        and back, as maro-dist --co does
 *   raw-zmq peers ENDPOINT N FILE [cat]  N echoing ROUTER processes; write their
 *                                        endpoints to FILE, then print "ready"
 *                                        and run until killed.  With "cat",
 *                                        each peer's messages go through a
 *                                        cat(1) child and back, pipelined
 *   raw-zmq round FILE SIZE              one round: a DEALER to each peer in
 *                                        FILE sends SIZE bytes, waits for all
 *                                        the replies, exits
 *   raw-zmq deal FILE COUNT WINDOW       a DEALER to each peer in FILE; COUNT
 *                                        tasks dealt to the peers with room,
 *                                        at most WINDOW unanswered per peer;
 *                                        exits when every reply is in
 *   raw-zmq repeat FILE COUNT            write FILE COUNT times to stdout
 *   raw-zmq ids COUNT crafted|honest     write COUNT notifications to stdout,
 *                                        their 40-byte printable message_ids
 *                                        crafted to share one slot of the
 *                                        unkeyed hash maro's duplicate filter
 *                                        once used, or random ones
 *
 * ENDPOINT is tcp://127.0.0.1:* (a free port) or ipc://PATH (peers append .I).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#define EP_MAX 256

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "raw-zmq: %s: %s\n", what, zmq_strerror(errno));
	exit(1);
}

/* Bind s to ep and write the endpoint it got, one line, to fd. */
static void
bind_tell(void *s, const char *ep, int fd)
{
	char got[EP_MAX];
	size_t n = sizeof got - 1;

	if (zmq_bind(s, ep) < 0)
		die(ep);
	if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, got, &n) < 0)
		die("ZMQ_LAST_ENDPOINT");
	got[sizeof got - 2] = '\0';
	n = strlen(got);
	got[n++] = '\n';
	if (write(fd, got, n) != (ssize_t)n)
		exit(1);
}

/* One endpoint line from fd, read a byte at a time so nothing past it is taken. */
static void
read_line(int fd, char *ep, size_t len)
{
	size_t i = 0;
	char c;

	while (read(fd, &c, 1) == 1 && c != '\n')
		if (i < len - 1)
			ep[i++] = c;
	ep[i] = '\0';
	if (i == 0) {
		fprintf(stderr, "raw-zmq: the other end did not bind\n");
		exit(1);
	}
}

static void
recv_one(void *s)
{
	zmq_msg_t m;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, s, 0) < 0)
		die("recv");
	zmq_msg_close(&m);
}

static int
stream(const char *ep, long count, size_t size)
{
	int p[2], hwm = 100000, st;
	char addr[EP_MAX], *buf = calloc(1, size + 1);
	void *ctx, *s;
	double t0;
	long i;
	pid_t pid;

	if (!buf || pipe(p) < 0)
		return 1;
	/* fork before any context: a context does not survive fork */
	if ((pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(p[1]);
		read_line(p[0], addr, sizeof addr);
		ctx = zmq_ctx_new();
		s = zmq_socket(ctx, ZMQ_PUSH);
		zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
		if (zmq_connect(s, addr) < 0)
			die(addr);
		for (i = 0; i < count; i++)
			if (zmq_send(s, buf, size, 0) < 0)
				die("send");
		zmq_close(s);
		zmq_ctx_term(ctx);
		_exit(0);
	}
	close(p[0]);
	ctx = zmq_ctx_new();
	s = zmq_socket(ctx, ZMQ_PULL);
	zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
	bind_tell(s, ep, p[1]);
	/* from the go signal: the pusher's context and connect count, as maro-send's do */
	t0 = now();
	for (i = 0; i < count; i++)
		recv_one(s);
	printf("%.0f\n", (double)count / (now() - t0));
	zmq_close(s);
	zmq_ctx_term(ctx);
	waitpid(pid, &st, 0);
	free(buf);
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* A cat(1) child: its input to *in, its output from *out. */
static pid_t
cat_child(int *in, int *out)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe(a) < 0 || pipe(b) < 0 || (pid = fork()) < 0)
		exit(1);
	if (pid == 0) {
		dup2(a[0], 0);
		dup2(b[1], 1);
		close(a[0]); close(a[1]); close(b[0]); close(b[1]);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	*in = a[1];
	*out = b[0];
	return pid;
}

/* The message m through cat and back: the same bytes, once cat gave them all. */
static void
through_cat(zmq_msg_t *m, int in, int out)
{
	size_t n = zmq_msg_size(m), got = 0;
	char *p = zmq_msg_data(m);

	if (write(in, p, n) != (ssize_t)n)
		die("to cat");
	while (got < n) {
		ssize_t r = read(out, p + got, n - got);

		if (r <= 0)
			die("from cat");
		got += (size_t)r;
	}
}

static int
rr(const char *ep, long count, size_t size, int cat)
{
	int p[2], st;
	char addr[EP_MAX], *buf = calloc(1, size + 1);
	void *ctx, *s;
	double t0;
	long i;
	pid_t pid;

	if (!buf || pipe(p) < 0)
		return 1;
	if ((pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		zmq_msg_t m;
		int in = -1, out = -1;
		pid_t cpid = 0;

		close(p[0]);
		/* fork before any context: a context does not survive fork */
		if (cat)
			cpid = cat_child(&in, &out);
		ctx = zmq_ctx_new();
		s = zmq_socket(ctx, ZMQ_REP);
		bind_tell(s, ep, p[1]);
		for (i = 0; i < count; i++) {
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, s, 0) < 0)
				die("recv");
			if (cat)
				through_cat(&m, in, out);
			if (zmq_msg_send(&m, s, 0) < 0)
				die("echo");
		}
		zmq_close(s);
		zmq_ctx_term(ctx);
		if (cat) {
			close(in);
			waitpid(cpid, &st, 0);
		}
		_exit(0);
	}
	close(p[1]);
	read_line(p[0], addr, sizeof addr);
	ctx = zmq_ctx_new();
	s = zmq_socket(ctx, ZMQ_REQ);
	if (zmq_connect(s, addr) < 0)
		die(addr);
	t0 = now();
	for (i = 0; i < count; i++) {
		if (zmq_send(s, buf, size, 0) < 0)
			die("send");
		recv_one(s);
	}
	printf("%.0f\n", (double)count / (now() - t0));
	zmq_close(s);
	zmq_ctx_term(ctx);
	waitpid(pid, &st, 0);
	free(buf);
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* An echoing ROUTER: what a maro-dist worker does, without maro. */
static void
echo_peer(const char *ep, int fd)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_ROUTER);
	zmq_msg_t id, m;

	bind_tell(s, ep, fd);
	close(fd);
	for (;;) {
		zmq_msg_init(&id);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&id, s, 0) < 0 || zmq_msg_recv(&m, s, 0) < 0 ||
		    zmq_msg_send(&id, s, ZMQ_SNDMORE) < 0 || zmq_msg_send(&m, s, 0) < 0)
			die("echo");
	}
}

/*
 * The same through a cat(1) child, as maro-dist --co hands work to a
 * coprocess: tasks are TASK bytes each, written to cat as they come; each
 * TASK bytes back go to the oldest waiting sender.  Pipelined both ways.
 */
#define TASK 16
static void
echo_cat_peer(const char *ep, int fd)
{
	void *ctx, *s;
	int in[2], out[2];
	size_t cap = 1024, head = 0, tail = 0, have = 0;
	zmq_msg_t *ids = calloc(cap, sizeof *ids), m;
	char buf[TASK * 256];
	pid_t pid;

	if (!ids || pipe(in) < 0 || pipe(out) < 0 || (pid = fork()) < 0)
		exit(1);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ctx = zmq_ctx_new();
	s = zmq_socket(ctx, ZMQ_ROUTER);
	bind_tell(s, ep, fd);
	close(fd);
	for (;;) {
		zmq_pollitem_t it[2] = {
			{ .socket = s, .events = ZMQ_POLLIN },
			{ .fd = out[0], .events = ZMQ_POLLIN },
		};

		if (zmq_poll(it, 2, -1) < 0)
			die("poll");
		/* every task waiting in the socket, to cat */
		while (it[0].revents & ZMQ_POLLIN) {
			if (tail - head == cap)
				die("too many tasks");
			zmq_msg_init(&ids[tail % cap]);
			if (zmq_msg_recv(&ids[tail % cap], s, ZMQ_DONTWAIT) < 0) {
				zmq_msg_close(&ids[tail % cap]);
				if (errno == EAGAIN)
					break;
				die("recv");
			}
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, s, 0) < 0 || zmq_msg_size(&m) != TASK ||
			    write(in[1], zmq_msg_data(&m), TASK) != TASK)
				die("to cat");
			zmq_msg_close(&m);
			tail++;
		}
		/* what cat gave back, each whole task to its sender */
		if (it[1].revents & ZMQ_POLLIN) {
			ssize_t r = read(out[0], buf + have, sizeof buf - have);
			size_t k;

			if (r <= 0)
				exit(1);
			have += (size_t)r;
			for (k = 0; k + TASK <= have; k += TASK) {
				if (head == tail)
					die("a reply nobody waits for");
				if (zmq_msg_send(&ids[head % cap], s, ZMQ_SNDMORE) < 0 ||
				    zmq_send(s, buf + k, TASK, 0) < 0)
					die("echo");
				head++;
			}
			memmove(buf, buf + k, have - k);
			have -= k;
		}
	}
}

static int
peers(const char *ep, long n, const char *file, int through_cat)
{
	int p[2], sig;
	char addr[EP_MAX];
	FILE *f;
	long i;
	pid_t *kids = calloc((size_t)n + 1, sizeof *kids);
	sigset_t stop;

	/* the parent waits for SIGTERM/SIGINT, then ends and reaps its peers */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (!kids || pipe(p) < 0 || sigprocmask(SIG_BLOCK, &stop, NULL) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			sigprocmask(SIG_UNBLOCK, &stop, NULL);
			/* should the parent die some other way, its peers go too */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() == 1)
				_exit(0);
			close(p[0]);
			if (!strncmp(ep, "ipc://", 6))
				snprintf(addr, sizeof addr, "%s.%ld", ep, i);
			else
				snprintf(addr, sizeof addr, "%s", ep);
			if (through_cat)
				echo_cat_peer(addr, p[1]);
			else
				echo_peer(addr, p[1]);
			_exit(0);
		}
		kids[i] = pid;
	}
	close(p[1]);
	if (!(f = fopen(file, "w")))
		return 1;
	for (i = 0; i < n; i++) {
		read_line(p[0], addr, sizeof addr);
		fprintf(f, "%s\n", addr);
	}
	if (fclose(f) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	sigwait(&stop, &sig);
	for (i = 0; i < n; i++)
		kill(kids[i], SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	free(kids);
	return 0;
}

/*
 * A DEALER connected to each endpoint in file, in *s, with a poll item
 * each (POLLIN) in *items: how many, or -1.
 */
static long
dealers(void *ctx, const char *file, void ***s, zmq_pollitem_t **items)
{
	char addr[EP_MAX];
	long n = 0, i;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	*s = NULL;
	while (fgets(addr, sizeof addr, f)) {
		addr[strcspn(addr, "\n")] = '\0';
		if (!(*s = realloc(*s, (size_t)(n + 1) * sizeof **s)))
			return -1;
		(*s)[n] = zmq_socket(ctx, ZMQ_DEALER);
		if (zmq_connect((*s)[n], addr) < 0)
			die(addr);
		n++;
	}
	fclose(f);
	if (!(*items = calloc((size_t)n + 1, sizeof **items)))
		return -1;
	for (i = 0; i < n; i++)
		(*items)[i] = (zmq_pollitem_t){ .socket = (*s)[i], .events = ZMQ_POLLIN };
	return n;
}

static int
round_trip(const char *file, size_t size)
{
	char *buf = calloc(1, size + 1);
	void *ctx = zmq_ctx_new(), **s;
	zmq_pollitem_t *items;
	long n = dealers(ctx, file, &s, &items), got = 0, i;

	if (n < 0 || !buf)
		return 1;
	for (i = 0; i < n; i++)
		if (zmq_send(s[i], buf, size, 0) < 0)
			die("send");
	while (got < n) {
		if (zmq_poll(items, (int)n, 10000) <= 0) {
			fprintf(stderr, "raw-zmq: %ld of %ld replies\n", got, n);
			return 1;
		}
		for (i = 0; i < n; i++)
			if (items[i].revents & ZMQ_POLLIN) {
				recv_one(s[i]);
				got++;
			}
	}
	for (i = 0; i < n; i++)
		zmq_close(s[i]);
	zmq_ctx_term(ctx);
	free(items);
	free(s);
	free(buf);
	return 0;
}

static int
deal(const char *file, long count, long window)
{
	char task[32];
	void *ctx = zmq_ctx_new(), **s;
	zmq_pollitem_t *items;
	long n = dealers(ctx, file, &s, &items), sent = 0, got = 0, *out, i;

	if (n <= 0 || !(out = calloc((size_t)n, sizeof *out)))
		return 1;
	while (got < count) {
		for (i = 0; i < n && sent < count; i++)
			while (out[i] < window && sent < count) {
				snprintf(task, sizeof task, "%015ld\n", sent);
				if (zmq_send(s[i], task, TASK, 0) < 0)
					die("send");
				out[i]++;
				sent++;
			}
		if (zmq_poll(items, (int)n, 10000) <= 0) {
			fprintf(stderr, "raw-zmq: %ld of %ld replies\n", got, count);
			return 1;
		}
		for (i = 0; i < n; i++)
			if (items[i].revents & ZMQ_POLLIN) {
				zmq_msg_t m;

				zmq_msg_init(&m);
				while (zmq_msg_recv(&m, s[i], ZMQ_DONTWAIT) >= 0) {
					out[i]--;
					got++;
				}
				zmq_msg_close(&m);
			}
	}
	for (i = 0; i < n; i++)
		zmq_close(s[i]);
	zmq_ctx_term(ctx);
	free(items);
	free(out);
	free(s);
	return 0;
}

static int
repeat(const char *file, long count)
{
	FILE *f = fopen(file, "rb");
	char *buf;
	long len, i;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) < 0)
		return 1;
	if (!(buf = malloc((size_t)len)) || fread(buf, 1, (size_t)len, f) != (size_t)len)
		return 1;
	fclose(f);
	for (i = 0; i < count; i++)
		if (fwrite(buf, 1, (size_t)len, stdout) != (size_t)len)
			return 1;
	free(buf);
	return fflush(stdout) != 0;
}

/* The unkeyed hash maro's tables used before SipHash (8-byte multiples). */
#define M1 0xbf58476d1ce4e5b9ull
#define F1 0xff51afd7ed558ccdull
#define F2 0xc4ceb9fe1a85ec53ull

static uint64_t
inverse(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

static uint64_t
unshift(uint64_t y, unsigned s)
{
	uint64_t x = y;

	for (unsigned k = s; k < 64; k += s)
		x = y ^ (x >> s);
	return x;
}

static int
printable(uint64_t w)
{
	for (int k = 0; k < 8; k++, w >>= 8)
		if ((w & 0xff) < 0x21 || (w & 0xff) > 0x7e)
			return 0;
	return 1;
}

static int
ids(long count, int crafted)
{
	static const uint8_t head[] = "\xa4\x63tag\x61n\x6csession_type\x6cnotification\x6amessage_id\x78\x28";
	static const uint8_t tail[] = "\x67payload\x61x";
	uint64_t rnd = 0x243f6a8885a308d3ull;
	long i;

	for (i = 0; i < count; i++) {
		uint8_t id[40];
		uint64_t h, w, want = (uint64_t)i << 18 | 12345, base;

		snprintf((char *)id, 17, "%016lx", (unsigned long)i);
		memset(id + 16, 'a', 8);
		for (;;) {
			/* the fourth word drawn at random until the fifth, solved for, is printable */
			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			for (int k = 0; k < 8; k++)
				id[24 + k] = (uint8_t)(0x21 + (rnd >> (8 * k)) % 94);
			if (!crafted) {
				for (int k = 0; k < 8; k++)
					id[32 + k] = (uint8_t)(0x21 + (rnd >> (8 * k + 3)) % 94);
				break;
			}
			base = 0x9e3779b97f4a7c15ull ^ 40;
			for (int k = 0; k < 32; k += 8) {
				memcpy(&w, id + k, 8);
				base = (base ^ w) * M1;
				base ^= base >> 31;
			}
			h = unshift(want, 33) * inverse(F2);
			h = unshift(h, 33) * inverse(F1);
			h = unshift(h, 33);
			w = (unshift(h, 31) * inverse(M1)) ^ base;
			if (printable(w)) {
				memcpy(id + 32, &w, 8);
				break;
			}
		}
		if (fwrite(head, 1, sizeof head - 1, stdout) != sizeof head - 1 ||
		    fwrite(id, 1, 40, stdout) != 40 || fwrite(tail, 1, sizeof tail - 1, stdout) != sizeof tail - 1)
			return 1;
	}
	return fflush(stdout) ? 1 : 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "stream") && argc == 5)
		return stream(argv[2], atol(argv[3]), (size_t)atol(argv[4]));
	if (!strcmp(mode, "rr") && (argc == 5 || (argc == 6 && !strcmp(argv[5], "cat"))))
		return rr(argv[2], atol(argv[3]), (size_t)atol(argv[4]), argc == 6);
	if (!strcmp(mode, "peers") && (argc == 5 || (argc == 6 && !strcmp(argv[5], "cat"))))
		return peers(argv[2], atol(argv[3]), argv[4], argc == 6);
	if (!strcmp(mode, "deal") && argc == 5)
		return deal(argv[2], atol(argv[3]), atol(argv[4]));
	if (!strcmp(mode, "round") && argc == 4)
		return round_trip(argv[2], (size_t)atol(argv[3]));
	if (!strcmp(mode, "repeat") && argc == 4)
		return repeat(argv[2], atol(argv[3]));
	if (!strcmp(mode, "ids") && argc == 4 && (!strcmp(argv[3], "crafted") || !strcmp(argv[3], "honest")))
		return ids(atol(argv[2]), !strcmp(argv[3], "crafted"));
	fprintf(stderr, "usage: raw-zmq stream ENDPOINT COUNT SIZE | rr ENDPOINT COUNT SIZE [cat] | peers ENDPOINT N FILE [cat] |\n"
	    "       round FILE SIZE | deal FILE COUNT WINDOW | repeat FILE COUNT | ids COUNT crafted|honest\n");
	return 2;
}
