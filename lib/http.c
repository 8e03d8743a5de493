/*
 * http: a read-only HTTP server over libmicrohttpd (http.h).  The socket
 * is ours (so a failed bind says why); libmicrohttpd runs on its epoll
 * descriptor, polled here, with no thread of its own.
 *
 * libmicrohttpd is loaded when a server opens, not when the tool starts:
 * with GnuTLS it is ten shared libraries more, which cost maro-peers some
 * 2 ms of every start it makes without --serve (make bench, start-up).
 */
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"

struct maro_http {
	struct MHD_Daemon *d;
	int fd, epfd;
	maro_http_fn fn;
	void *arg;
	struct maro_http_reply rep;
	char addr[300];
};

/* What is used of libmicrohttpd, once loaded (mhd_load). */
static struct {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_get_daemon_info) *get_daemon_info;
	__typeof__(MHD_get_timeout) *get_timeout;
	__typeof__(MHD_run) *run;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
} mhd;

#define CSP "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " \
	"connect-src 'self'; img-src data:"

static enum MHD_Result
queue(struct MHD_Connection *c, unsigned status, const char *type, const void *p, size_t n,
    const char *allow)
{
	struct MHD_Response *res = mhd.create_response_from_buffer(n, (void *)p,
	    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	if (!res)
		return MHD_NO;
	mhd.add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	mhd.add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	mhd.add_response_header(res, "Content-Security-Policy", CSP);
	mhd.add_response_header(res, "X-Content-Type-Options", "nosniff");
	if (allow)
		mhd.add_response_header(res, MHD_HTTP_HEADER_ALLOW, allow);
	rc = mhd.queue_response(c, status, res);
	mhd.destroy_response(res);
	return rc;
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **state)
{
	static const char nope[] = "method not allowed: this server only reads (GET, HEAD)\n";
	struct maro_http *h = cls;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", nope,
		    sizeof nope - 1, "GET, HEAD");
	maro_buf_reset(&h->rep.body);
	h->rep.status = MHD_HTTP_OK;
	h->rep.type = "text/plain; charset=utf-8";
	h->fn(h->arg, url, &h->rep);
	return queue(c, (unsigned)h->rep.status, h->rep.type, h->rep.body.p ? (void *)h->rep.body.p :
	    "", h->rep.body.len, NULL);
}

/* addr into host and port: PORT, HOST:PORT, [V6]:PORT. */
static int
split(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(addr, ':'), *p;
	size_t n;

	if (!colon) {
		snprintf(host, hlen, "127.0.0.1");
		p = addr;
	} else {
		const char *h = addr;

		n = (size_t)(colon - addr);
		if (n >= 2 && addr[0] == '[' && colon[-1] == ']') {
			h++;
			n -= 2;
		} else if (memchr(addr, ':', n)) {
			return -1;	/* an IPv6 address wants its brackets */
		}
		if (n == 0 || n >= hlen)
			return -1;
		memcpy(host, h, n);
		host[n] = 0;
		p = colon + 1;
	}
	n = strlen(p);
	if (n == 0 || n > 5 || n >= plen || strspn(p, "0123456789") != n || atoi(p) > 65535)
		return -1;
	memcpy(port, p, n + 1);
	return 0;
}

static int fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	errno = err;
	return -1;
}

/* The socket, bound and listening, or -1. */
static int
listen_on(const char *addr, char *bound, size_t blen, char *errbuf, size_t errlen)
{
	char host[256], port[8], hbuf[NI_MAXHOST], pbuf[NI_MAXSERV];
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int fd = -1, one = 1, err;

	if (split(addr, host, sizeof host, port, sizeof port) < 0)
		return fail(errbuf, errlen, EINVAL,
		    "bad address '%s' (PORT, HOST:PORT or [IPV6]:PORT)", addr);
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((err = getaddrinfo(host, port, &hints, &ai)) != 0)
		return fail(errbuf, errlen, EINVAL, "bad address '%s': %s", addr, gai_strerror(err));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    getnameinfo((struct sockaddr *)&ss, sl, hbuf, sizeof hbuf, pbuf, sizeof pbuf,
	    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return fail(errbuf, errlen, err, "cannot listen on %s: %s", addr, strerror(err));
	}
	freeaddrinfo(ai);
	snprintf(bound, blen, strchr(hbuf, ':') ? "[%s]:%s" : "%s:%s", hbuf, pbuf);
	return fd;
}

/*
 * Loads libmicrohttpd, by the soname the linker would have recorded (its
 * ABI: another soname is another interface), once.  0, or -1.
 */
static int
mhd_load(char *errbuf, size_t errlen)
{
	void *lib;

	if (mhd.destroy_response)
		return 0;
	if (!(lib = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL)))
		return fail(errbuf, errlen, ENOENT, "cannot load libmicrohttpd: %s", dlerror());
#define MHD_SYM(f) \
	if (!(*(void **)&mhd.f = dlsym(lib, "MHD_" #f))) \
		goto missing
	MHD_SYM(start_daemon);
	MHD_SYM(stop_daemon);
	MHD_SYM(get_daemon_info);
	MHD_SYM(get_timeout);
	MHD_SYM(run);
	MHD_SYM(create_response_from_buffer);
	MHD_SYM(add_response_header);
	MHD_SYM(queue_response);
	MHD_SYM(destroy_response);
#undef MHD_SYM
	return 0;
missing:
	fail(errbuf, errlen, ENOENT, "cannot load libmicrohttpd: %s", dlerror());
	memset(&mhd, 0, sizeof mhd);
	dlclose(lib);
	return -1;
}

struct maro_http *
maro_http_open(const char *addr, maro_http_fn fn, void *arg, char *errbuf, size_t errlen)
{
	struct maro_http *h;
	const union MHD_DaemonInfo *di;

	if (mhd_load(errbuf, errlen) < 0)
		return NULL;
	if (!(h = calloc(1, sizeof *h))) {
		fail(errbuf, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	h->fn = fn;
	h->arg = arg;
	if ((h->fd = listen_on(addr, h->addr, sizeof h->addr, errbuf, errlen)) < 0) {
		free(h);
		return NULL;
	}
	h->d = mhd.start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, answer, h,
	    MHD_OPTION_LISTEN_SOCKET, h->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!h->d || !(di = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD))) {
		fail(errbuf, errlen, EPROTO, "cannot serve on %s: libmicrohttpd would not start", addr);
		maro_http_close(h);
		return NULL;
	}
	h->epfd = di->epoll_fd;
	h->fd = -1;	/* libmicrohttpd's now: it closes it when it stops */
	return h;
}

const char *
maro_http_address(const struct maro_http *h)
{
	return h->addr;
}

int
maro_http_run(struct maro_http *h, long ms)
{
	MHD_UNSIGNED_LONG_LONG t;
	struct pollfd pfd = { h->epfd, POLLIN, 0 };

	if (mhd.get_timeout(h->d, &t) == MHD_YES && t < (MHD_UNSIGNED_LONG_LONG)ms)
		ms = (long)t;
	if (poll(&pfd, 1, (int)ms) < 0 && errno != EINTR)
		return -1;
	return mhd.run(h->d) == MHD_YES ? 0 : -1;
}

void
maro_http_close(struct maro_http *h)
{
	if (!h)
		return;
	if (h->d)
		mhd.stop_daemon(h->d);
	if (h->fd >= 0)
		close(h->fd);
	maro_buf_free(&h->rep.body);
	free(h);
}
