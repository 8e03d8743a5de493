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
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "clock.h"
#include "http.h"

/*
 * Against slow clients (slowloris): each connection has REQUEST_US to
 * send its request and take the answer, headers included (libmicrohttpd's
 * own timeout is only idle time, which a header line every few seconds
 * renews); and when the connections fill up to CONN_EVICT, a new one has
 * the oldest cut to make room.  A per-address limit would not do: on the
 * loopback an attacker and the user share 127.0.0.1.  A client that sends
 * its request at once (a browser, curl, Prometheus) is answered however
 * many slow ones there are.
 */
#define CONN_MAX 256		/* libmicrohttpd's limit: beyond it, refused */
#define CONN_EVICT 192		/* at this many, a new one cuts the oldest */
#define IDLE_S 5		/* libmicrohttpd's: nothing received for this long */
#define REQUEST_US 10000000	/* from the connection or its last answer */

struct maro_http {
	struct MHD_Daemon *d;
	int fd, epfd;
	maro_http_fn fn;
	void *arg;
	struct maro_http_reply rep;
	char addr[300];
	char host[NI_MAXHOST + 2];	/* of addr, [V6] in brackets: a Host header may name it */
	int loopback;			/* listening on the loopback: Host is checked */
	struct conn {
		struct MHD_Connection *c;
		int fd;
		int cut;		/* shut down: its end is libmicrohttpd's */
		int64_t since;		/* it opened, or its last request ended (monotonic us) */
	} conns[CONN_MAX];
	size_t nconns;
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
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
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

/*
 * Is host (a Host header) a name of the loopback: localhost, 127.0.0.1,
 * [::1] or the address listened on, with or without a port?  Any port: a
 * tunnel (ssh -L 9000:localhost:PORT) gives its own.  A page that a DNS
 * rebinding pointed here names its own host, and is refused.
 */
static int
loopback_host(const struct maro_http *h, const char *host)
{
	static const char *const names[] = { "localhost", "localhost.", "127.0.0.1", "[::1]" };
	const char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
	size_t n = colon ? (size_t)(colon - host) + (host[0] == '[') : strlen(host), k;

	if (colon) {
		const char *port = colon + 1 + (host[0] == '[');

		if (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port))
			return 0;
	}
	for (k = 0; k < sizeof names / sizeof names[0]; k++)
		if (strlen(names[k]) == n && !strncasecmp(host, names[k], n))
			return 1;
	return strlen(h->host) == n && !strncmp(host, h->host, n);
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **state)
{
	static const char nope[] = "method not allowed: this server only reads (GET, HEAD)\n";
	static const char alien[] = "forbidden: this server on the loopback answers only to "
	    "Host localhost, 127.0.0.1 or [::1]\n";
	struct maro_http *h = cls;
	const char *host = mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);

	/* no Host at all is HTTP/1.0 (1.1 without one is refused before): no browser */
	if (h->loopback && host && !loopback_host(h, host))
		return queue(c, MHD_HTTP_FORBIDDEN, "text/plain; charset=utf-8", alien,
		    sizeof alien - 1, NULL);
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

/* Cuts connection k: shut down, so that libmicrohttpd sees its end and closes it. */
static void
cut(struct maro_http *h, size_t k)
{
	if (!h->conns[k].cut && h->conns[k].fd >= 0)
		shutdown(h->conns[k].fd, SHUT_RDWR);
	h->conns[k].cut = 1;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode what)
{
	struct maro_http *h = cls;
	const union MHD_ConnectionInfo *ci;
	size_t k, oldest = SIZE_MAX;

	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		for (k = 0; k < h->nconns; k++)
			if (h->conns[k].c == c) {
				h->conns[k] = h->conns[--h->nconns];
				break;
			}
		return;
	}
	if (h->nconns >= CONN_MAX)
		return;		/* not reached: libmicrohttpd refuses it first */
	for (k = 0; k < h->nconns && h->nconns >= CONN_EVICT; k++)
		if (!h->conns[k].cut && (oldest == SIZE_MAX ||
		    h->conns[k].since < h->conns[oldest].since))
			oldest = k;
	if (oldest != SIZE_MAX)
		cut(h, oldest);
	ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	h->conns[h->nconns++] = (struct conn){ c, ci ? ci->connect_fd : -1, 0, maro_now_us() };
}

/* A request answered: the connection has REQUEST_US again for its next. */
static void
on_completed(void *cls, struct MHD_Connection *c, void **state,
    enum MHD_RequestTerminationCode why)
{
	struct maro_http *h = cls;
	size_t k;

	for (k = 0; k < h->nconns; k++)
		if (h->conns[k].c == c)
			h->conns[k].since = maro_now_us();
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
listen_on(struct maro_http *h, const char *addr, char *errbuf, size_t errlen)
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
	snprintf(h->addr, sizeof h->addr, strchr(hbuf, ':') ? "[%s]:%s" : "%s:%s", hbuf, pbuf);
	snprintf(h->host, sizeof h->host, strchr(hbuf, ':') ? "[%s]" : "%s", hbuf);
	h->loopback = ss.ss_family == AF_INET ?
	    (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127 :
	    ss.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
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
	MHD_SYM(get_connection_info);
	MHD_SYM(lookup_connection_value);
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
	if ((h->fd = listen_on(h, addr, errbuf, errlen)) < 0) {
		free(h);
		return NULL;
	}
	h->d = mhd.start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, answer, h,
	    MHD_OPTION_LISTEN_SOCKET, h->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_S,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
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
	int64_t now;
	size_t k;

	if (mhd.get_timeout(h->d, &t) == MHD_YES && t < (MHD_UNSIGNED_LONG_LONG)ms)
		ms = (long)t;
	if (poll(&pfd, 1, (int)ms) < 0 && errno != EINTR)
		return -1;
	if (mhd.run(h->d) != MHD_YES)
		return -1;
	now = maro_now_us();
	for (k = 0; k < h->nconns; k++)
		if (now - h->conns[k].since > REQUEST_US)
			cut(h, k);
	return 0;
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
