/*
 * nats-bench: what a user would pick instead of maro for messaging, NATS,
 * measured by scripts/bench in the same run as maro's rows: a C client
 * against libnats and a nats-server the bench starts on loopback.  Nothing
 * of maro in it.  As in raw-zmq, the two ends of a measurement are two
 * processes; the receiving end tells the other it is subscribed through a
 * pipe, so nothing sleeps.
 *
 *   nats-bench stream URL COUNT SIZE        COUNT messages of SIZE bytes
 *                                           published to a subscriber
 *                                           process through core NATS;
 *                                           print msgs/s
 *   nats-bench jstream URL COUNT SIZE WINDOW  the same through a JetStream
 *                                           stream (file storage): published
 *                                           asynchronously, at most WINDOW
 *                                           unacknowledged, until every
 *                                           publish acknowledgement is in;
 *                                           received by an ephemeral push
 *                                           consumer; print msgs/s
 *   nats-bench rr URL COUNT SIZE            COUNT request/reply round trips
 *                                           to a responder process; print
 *                                           trips/s
 *   nats-bench workers URL SUBJECT N        N processes in one queue group on
 *                                           SUBJECT, each answering a request
 *                                           by passing it through a cat(1)
 *                                           child and back (as maro-dist --co
 *                                           does), pipelined; print "ready"
 *                                           once all are subscribed and run
 *                                           until killed
 *   nats-bench request URL SUBJECT COUNT WINDOW  COUNT 16-byte requests to
 *                                           SUBJECT, at most WINDOW
 *                                           unanswered; exits when every
 *                                           reply is in
 *
 * The clock of stream and jstream runs from before the publisher connects
 * to when both the last message is received and the publisher is done
 * (core: a flush, the server has them all; JetStream: every acknowledgement
 * in); rr's from after the requester connects.  Publishers keep libnats's
 * buffered sends; the ends that answer, and the requester, send at once
 * (natsOptions_SetSendAsap), the faster for round trips.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#define TASK 16
/* how long a receiving end waits for the next message before it gives up (ms) */
#define PATIENCE 30000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
check(natsStatus s, const char *what)
{
	if (s == NATS_OK)
		return;
	fprintf(stderr, "nats-bench: %s: %s (%s)\n", what, natsStatus_GetText(s), nats_GetLastError(NULL));
	exit(1);
}

static natsConnection *
connect_to(const char *url, int asap)
{
	natsOptions *o;
	natsConnection *nc;

	check(natsOptions_Create(&o), "options");
	check(natsOptions_SetURL(o, url), url);
	check(natsOptions_SetSendAsap(o, asap), "send asap");
	check(natsConnection_Connect(&nc, o), url);
	natsOptions_Destroy(o);
	return nc;
}

static void
say(int fd, const char *line)
{
	size_t n = strlen(line);

	if (write(fd, line, n) != (ssize_t)n)
		exit(1);
}

/* One line from fd, a byte at a time; 0, or -1 at its end without one. */
static int
read_line(int fd, char *buf, size_t len)
{
	size_t i = 0;
	char c;

	while (read(fd, &c, 1) == 1 && c != '\n')
		if (i < len - 1)
			buf[i++] = c;
	buf[i] = '\0';
	return i ? 0 : -1;
}

/* The child of stream and jstream: subscribe, say "ready", take count, say when. */
static void
subscriber(const char *url, const char *subj, long count, int js_stream, int fd)
{
	natsConnection *nc = connect_to(url, 0);
	natsSubscription *sub;
	jsCtx *js = NULL;
	natsMsg *m;
	char line[64];
	long i;

	if (js_stream) {
		jsStreamConfig sc;
		jsSubOptions so;
		jsErrCode jerr = 0;
		const char *subjects[] = { subj };

		check(natsConnection_JetStream(&js, nc, NULL), "jetstream");
		jsStreamConfig_Init(&sc);
		sc.Name = subj + 3;	/* "nb.NNN": a stream "NNN" */
		sc.Subjects = subjects;
		sc.SubjectsLen = 1;
		sc.Storage = js_FileStorage;
		/* kept until the consumer has had them, so the store stays small */
		sc.Retention = js_InterestPolicy;
		check(js_AddStream(NULL, js, &sc, NULL, &jerr), "add stream");
		jsSubOptions_Init(&so);
		so.Config.AckPolicy = js_AckNone;
		check(js_SubscribeSync(&sub, js, subj, NULL, &so, &jerr), "js subscribe");
	} else {
		check(natsConnection_SubscribeSync(&sub, nc, subj), "subscribe");
	}
	/* core NATS has no flow control: never drop what the publisher outruns */
	check(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
	check(natsConnection_Flush(nc), "flush");
	say(fd, "ready\n");
	for (i = 0; i < count; i++) {
		check(natsSubscription_NextMsg(&m, sub, PATIENCE), "next message");
		natsMsg_Destroy(m);
	}
	snprintf(line, sizeof line, "%.9f\n", now());
	say(fd, line);
	natsSubscription_Destroy(sub);
	if (js) {
		check(js_DeleteStream(js, subj + 3, NULL, NULL), "delete stream");
		jsCtx_Destroy(js);
	}
	natsConnection_Destroy(nc);
	nats_Close();
}

static void
pub_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
	(void)js;
	(void)pae;
	++*(long *)closure;
}

static int
stream(const char *url, long count, size_t size, long window)
{
	int p[2], st;
	char subj[32], line[64], *buf = calloc(1, size + 1);
	natsConnection *nc;
	jsCtx *js = NULL;
	double t0, pub_done, recv_done;
	long i, failed = 0;
	pid_t pid;

	snprintf(subj, sizeof subj, "nb.S%ld", (long)getpid());
	if (!buf || pipe(p) < 0)
		return 1;
	/* fork before libnats starts its threads */
	if ((pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		subscriber(url, subj, count, window > 0, p[1]);
		_exit(0);
	}
	close(p[1]);
	if (read_line(p[0], line, sizeof line) < 0) {
		fprintf(stderr, "nats-bench: the subscriber did not start\n");
		return 1;
	}
	t0 = now();
	if (window > 0) {
		jsOptions jo;

		nc = connect_to(url, 0);
		jsOptions_Init(&jo);
		jo.PublishAsync.MaxPending = window;
		/* a full window blocks the publisher until acknowledgements free it */
		jo.PublishAsync.StallWait = PATIENCE;
		jo.PublishAsync.ErrHandler = pub_error;
		jo.PublishAsync.ErrHandlerClosure = &failed;
		check(natsConnection_JetStream(&js, nc, &jo), "jetstream");
		for (i = 0; i < count; i++)
			check(js_PublishAsync(js, subj, buf, (int)size, NULL), "publish");
		check(js_PublishAsyncComplete(js, NULL), "acknowledgements");
	} else {
		nc = connect_to(url, 0);
		for (i = 0; i < count; i++)
			check(natsConnection_Publish(nc, subj, buf, (int)size), "publish");
		check(natsConnection_Flush(nc), "flush");
	}
	pub_done = now();
	if (read_line(p[0], line, sizeof line) < 0) {
		fprintf(stderr, "nats-bench: the subscriber did not get them all\n");
		return 1;
	}
	recv_done = atof(line);
	if (failed) {
		fprintf(stderr, "nats-bench: %ld publishes not acknowledged\n", failed);
		return 1;
	}
	printf("%.0f\n", (double)count / ((pub_done > recv_done ? pub_done : recv_done) - t0));
	waitpid(pid, &st, 0);
	if (js)
		jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	nats_Close();
	free(buf);
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

static int
rr(const char *url, long count, size_t size)
{
	int p[2], st;
	char subj[32], line[16], *buf = calloc(1, size + 1);
	natsConnection *nc;
	natsMsg *m;
	double t0;
	long i;
	pid_t pid;

	snprintf(subj, sizeof subj, "nb.R%ld", (long)getpid());
	if (!buf || pipe(p) < 0)
		return 1;
	if ((pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		natsSubscription *sub;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		nc = connect_to(url, 1);
		check(natsConnection_SubscribeSync(&sub, nc, subj), "subscribe");
		check(natsConnection_Flush(nc), "flush");
		say(p[1], "ready\n");
		for (i = 0; i < count; i++) {
			check(natsSubscription_NextMsg(&m, sub, PATIENCE), "next request");
			check(natsConnection_Publish(nc, natsMsg_GetReply(m), natsMsg_GetData(m),
			    natsMsg_GetDataLength(m)), "reply");
			natsMsg_Destroy(m);
		}
		check(natsConnection_Flush(nc), "flush");
		natsSubscription_Destroy(sub);
		natsConnection_Destroy(nc);
		nats_Close();
		_exit(0);
	}
	close(p[1]);
	if (read_line(p[0], line, sizeof line) < 0) {
		fprintf(stderr, "nats-bench: the responder did not start\n");
		return 1;
	}
	nc = connect_to(url, 1);
	t0 = now();
	for (i = 0; i < count; i++) {
		check(natsConnection_Request(&m, nc, subj, buf, (int)size, PATIENCE), "request");
		natsMsg_Destroy(m);
	}
	printf("%.0f\n", (double)count / (now() - t0));
	natsConnection_Destroy(nc);
	nats_Close();
	waitpid(pid, &st, 0);
	free(buf);
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/*
 * A worker of the queue group: libnats's thread hands each request to
 * cat(1) and keeps it; the main thread reads what cat gives back and
 * answers the oldest kept request with each TASK bytes.
 */
static struct {
	pthread_mutex_t mu;
	natsMsg **held;
	size_t cap, head, tail;
	int to_cat;
} w = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	(void)nc;
	(void)sub;
	(void)closure;
	if (natsMsg_GetDataLength(m) != TASK) {
		fprintf(stderr, "nats-bench: a request of %d bytes\n", natsMsg_GetDataLength(m));
		exit(1);
	}
	pthread_mutex_lock(&w.mu);
	if (w.tail - w.head == w.cap) {
		natsMsg **more = calloc(w.cap * 2, sizeof *more);
		size_t k;

		if (!more)
			exit(1);
		for (k = w.head; k < w.tail; k++)
			more[k - w.head] = w.held[k % w.cap];
		free(w.held);
		w.held = more;
		w.tail -= w.head;
		w.head = 0;
		w.cap *= 2;
	}
	w.held[w.tail++ % w.cap] = m;
	pthread_mutex_unlock(&w.mu);
	if (write(w.to_cat, natsMsg_GetData(m), TASK) != TASK)
		exit(1);
}

static void
worker(const char *url, const char *subj, int fd)
{
	int in[2], out[2];
	char buf[TASK * 256];
	size_t have = 0, k;
	natsConnection *nc;
	natsSubscription *sub;
	pid_t pid;

	w.cap = 1024;
	if (!(w.held = calloc(w.cap, sizeof *w.held)) || pipe(in) < 0 || pipe(out) < 0 ||
	    (pid = fork()) < 0)
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
	w.to_cat = in[1];
	nc = connect_to(url, 1);
	check(natsConnection_QueueSubscribe(&sub, nc, subj, "workers", on_request, NULL), "queue subscribe");
	check(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
	check(natsConnection_Flush(nc), "flush");
	say(fd, "ready\n");
	close(fd);
	for (;;) {
		ssize_t r = read(out[0], buf + have, sizeof buf - have);

		if (r <= 0)
			exit(1);
		have += (size_t)r;
		for (k = 0; k + TASK <= have; k += TASK) {
			natsMsg *m;

			pthread_mutex_lock(&w.mu);
			if (w.head == w.tail) {
				fprintf(stderr, "nats-bench: a reply nobody waits for\n");
				exit(1);
			}
			m = w.held[w.head++ % w.cap];
			pthread_mutex_unlock(&w.mu);
			check(natsConnection_Publish(nc, natsMsg_GetReply(m), buf + k, TASK), "reply");
			natsMsg_Destroy(m);
		}
		memmove(buf, buf + k, have - k);
		have -= k;
	}
}

static int
workers(const char *url, const char *subj, long n)
{
	int p[2], sig;
	char line[16];
	long i;
	pid_t *kids = calloc((size_t)n + 1, sizeof *kids);
	sigset_t stop;

	/* the parent waits for SIGTERM/SIGINT, then ends and reaps its workers */
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
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() == 1)
				_exit(0);
			close(p[0]);
			worker(url, subj, p[1]);
			_exit(0);
		}
		kids[i] = pid;
	}
	close(p[1]);
	for (i = 0; i < n; i++)
		if (read_line(p[0], line, sizeof line) < 0) {
			fprintf(stderr, "nats-bench: %ld of %ld workers started\n", i, n);
			break;
		}
	if (i == n) {
		printf("ready\n");
		fflush(stdout);
		sigwait(&stop, &sig);
	}
	for (i = 0; i < n; i++)
		kill(kids[i], SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	free(kids);
	return 0;
}

static int
request(const char *url, const char *subj, long count, long window)
{
	natsConnection *nc = connect_to(url, 1);
	natsSubscription *sub;
	natsMsg *m;
	char inbox[64], reply[96], task[32];
	long sent = 0, got = 0;

	/* one subscription takes every reply: the request's number ends its reply subject */
	snprintf(inbox, sizeof inbox, "nb.I%ld", (long)getpid());
	snprintf(reply, sizeof reply, "%s.*", inbox);
	check(natsConnection_SubscribeSync(&sub, nc, reply), "subscribe");
	check(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
	while (got < count) {
		while (sent - got < window && sent < count) {
			snprintf(reply, sizeof reply, "%s.%ld", inbox, sent);
			snprintf(task, sizeof task, "%015ld\n", sent);
			check(natsConnection_PublishRequest(nc, subj, reply, task, TASK), "request");
			sent++;
		}
		check(natsSubscription_NextMsg(&m, sub, PATIENCE), "next reply");
		natsMsg_Destroy(m);
		got++;
	}
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	nats_Close();
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "stream") && argc == 5)
		return stream(argv[2], atol(argv[3]), (size_t)atol(argv[4]), 0);
	if (!strcmp(mode, "jstream") && argc == 6 && atol(argv[5]) > 0)
		return stream(argv[2], atol(argv[3]), (size_t)atol(argv[4]), atol(argv[5]));
	if (!strcmp(mode, "rr") && argc == 5)
		return rr(argv[2], atol(argv[3]), (size_t)atol(argv[4]));
	if (!strcmp(mode, "workers") && argc == 5)
		return workers(argv[2], argv[3], atol(argv[4]));
	if (!strcmp(mode, "request") && argc == 6)
		return request(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
	fprintf(stderr, "usage: nats-bench stream|rr URL COUNT SIZE | jstream URL COUNT SIZE WINDOW |\n"
	    "       workers URL SUBJECT N | request URL SUBJECT COUNT WINDOW\n");
	return 2;
}
