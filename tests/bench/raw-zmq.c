/*
 * raw-zmq: the raw libzmq baseline that scripts/bench measures maro against,
 * in the same run.  Nothing of maro in it: plain sockets, plain messages.
 *
 *   raw-zmq pull ENDPOINT COUNT          receive COUNT messages, print msgs/s
 *   raw-zmq push ENDPOINT COUNT SIZE     send COUNT messages of SIZE bytes
 *   raw-zmq rep ENDPOINT COUNT           answer COUNT requests
 *   raw-zmq req ENDPOINT COUNT SIZE      COUNT round trips, print trips/s
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	void *ctx, *s;
	long count, i;
	size_t size = argc > 4 ? (size_t)atol(argv[4]) : 64;
	char *buf;
	double t0 = 0;
	int hwm = 100000;

	if (argc < 4) {
		fprintf(stderr, "usage: raw-zmq pull|push|rep|req ENDPOINT COUNT [SIZE]\n");
		return 2;
	}
	count = atol(argv[3]);
	buf = calloc(1, size > 65536 ? size : 65536);
	ctx = zmq_ctx_new();
	if (!strcmp(argv[1], "pull") || !strcmp(argv[1], "push")) {
		s = zmq_socket(ctx, !strcmp(argv[1], "pull") ? ZMQ_PULL : ZMQ_PUSH);
		zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
		zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
	} else {
		s = zmq_socket(ctx, !strcmp(argv[1], "rep") ? ZMQ_REP : ZMQ_REQ);
	}
	if (!strcmp(argv[1], "pull") || !strcmp(argv[1], "rep")) {
		if (zmq_bind(s, argv[2]) < 0)
			return 1;
	} else if (zmq_connect(s, argv[2]) < 0) {
		return 1;
	}
	for (i = 0; i < count; i++) {
		if (!strcmp(argv[1], "pull")) {
			if (zmq_recv(s, buf, 65536, 0) < 0)
				return 1;
			if (i == 0)
				t0 = now();
		} else if (!strcmp(argv[1], "push")) {
			zmq_send(s, buf, size, 0);
		} else if (!strcmp(argv[1], "rep")) {
			int n = zmq_recv(s, buf, 65536, 0);

			zmq_send(s, buf, n > 0 ? (size_t)n : 0, 0);
		} else {
			if (i == 0)
				t0 = now();
			zmq_send(s, buf, size, 0);
			zmq_recv(s, buf, 65536, 0);
		}
	}
	if (!strcmp(argv[1], "pull") || !strcmp(argv[1], "req"))
		printf("%.0f\n", (double)(count - (argv[1][1] == 'u')) / (now() - t0));
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(buf);
	return 0;
}
