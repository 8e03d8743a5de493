/*
 * delay-proxy: a TCP proxy on loopback that holds back what the server
 * says, for tests of a slow or hung registry.
 *
 *   delay-proxy PORTFILE TARGET_PORT DELAY_MS
 *
 * Listens on 127.0.0.1 (a free port, written to PORTFILE once it listens),
 * and for each connection connects to 127.0.0.1:TARGET_PORT.  What the
 * client sends goes to the server at once; each chunk the server sends
 * reaches the client DELAY_MS after it came.  DELAY_MS "never": the
 * connection is accepted and read, and nothing is ever answered.
 * Runs until killed; a connection's process ends with the proxy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct chunk {
	struct chunk *next;
	int64_t due;
	size_t n;
	char p[];
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void
serve(int client, int port, long delay)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct chunk *head = NULL, **tail = &head;
	char buf[65536];
	int server = -1;

	if (delay >= 0) {
		server = socket(AF_INET, SOCK_STREAM, 0);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (server < 0 || connect(server, (struct sockaddr *)&sa, sizeof sa) < 0)
			_exit(1);
	}
	for (;;) {
		struct pollfd pfd[2] = { { client, POLLIN, 0 }, { server, POLLIN, 0 } };
		int timeout = -1;
		ssize_t k;

		if (head)
			timeout = head->due > now_ms() ? (int)(head->due - now_ms()) : 0;
		if (poll(pfd, server < 0 ? 1 : 2, timeout) < 0 && errno != EINTR)
			_exit(1);
		if (pfd[0].revents) {
			k = read(client, buf, sizeof buf);
			if (k <= 0)
				_exit(0);
			if (server >= 0 && write_all(server, buf, (size_t)k) < 0)
				_exit(0);
		}
		if (server >= 0 && pfd[1].revents) {
			struct chunk *c;

			k = read(server, buf, sizeof buf);
			if (k <= 0)
				_exit(0);
			c = malloc(sizeof *c + (size_t)k);
			if (!c)
				_exit(1);
			c->next = NULL;
			c->due = now_ms() + delay;
			c->n = (size_t)k;
			memcpy(c->p, buf, (size_t)k);
			*tail = c;
			tail = &c->next;
		}
		while (head && head->due <= now_ms()) {
			struct chunk *c = head;

			if (write_all(client, c->p, c->n) < 0)
				_exit(0);
			head = c->next;
			if (!head)
				tail = &head;
			free(c);
		}
	}
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	long delay;
	int lfd, port, one = 1;
	pid_t parent = getpid();
	FILE *f;
	char tmp[4096];

	if (argc != 4) {
		fprintf(stderr, "usage: delay-proxy PORTFILE TARGET_PORT DELAY_MS|never\n");
		return 2;
	}
	port = atoi(argv[2]);
	delay = strcmp(argv[3], "never") == 0 ? -1 : atol(argv[3]);
	signal(SIGCHLD, SIG_IGN);	/* no zombies */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("delay-proxy: listen");
		return 1;
	}
	/* the port file appears whole: written aside, then renamed */
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(f) != 0 ||
	    rename(tmp, argv[1]) < 0) {
		perror("delay-proxy: port file");
		return 1;
	}
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		pid_t pid;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			perror("delay-proxy: accept");
			return 1;
		}
		pid = fork();
		if (pid == 0) {
			close(lfd);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			serve(c, port, delay);
		}
		close(c);
	}
}
