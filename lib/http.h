/*
 * http: a small read-only HTTP server (libmicrohttpd), driven from the
 * caller's own loop, one request at a time, in the caller's thread.
 *
 * GET and HEAD of any path go to the caller's function, which fills a
 * reply; any other method is answered 405 (Allow: GET, HEAD) without it.
 * Every reply says Cache-Control: no-store and a Content-Security-Policy
 * that lets a page load nothing but what this server gives.  Listening on
 * the loopback, a request whose Host names anything else than localhost,
 * 127.0.0.1, [::1] or the address listened on (any port) is answered 403
 * without it (DNS rebinding).  Each connection has 10 s for a request and
 * its answer, headers included, 5 s of silence at most; at 192 of its 256
 * connections a new one has the oldest cut (slow clients).  libmicrohttpd
 * is loaded when a server opens (dlopen).
 *
 * The functions return 0 (or a pointer), or -1 (NULL) with errno and, when
 * errbuf is given, a message.
 */
#ifndef MARO_HTTP_H
#define MARO_HTTP_H

#include <stddef.h>

#include "buf.h"

struct maro_http_reply {
	int status;		/* 200 unless the function says otherwise */
	const char *type;	/* Content-Type: a static string */
	struct maro_buf body;	/* the server's: reset before each call, freed by close */
};

/* What the caller answers for path (without the query string). */
typedef void (*maro_http_fn)(void *arg, const char *path, struct maro_http_reply *rep);

struct maro_http;

/*
 * Listens on addr: PORT (on 127.0.0.1, the loopback), HOST:PORT or
 * [IPV6]:PORT, HOST a name or a numeric address; PORT 0 takes a free one.
 * errno EINVAL for an address that cannot be read or resolved, else the
 * error of socket, bind or listen (EADDRINUSE, EADDRNOTAVAIL, EACCES...).
 */
struct maro_http *maro_http_open(const char *addr, maro_http_fn fn, void *arg, char *errbuf,
    size_t errlen);
/* The address listened on, as HOST:PORT ([V6]:PORT), the port the one bound. */
const char *maro_http_address(const struct maro_http *h);
/*
 * Waits at most ms for requests and answers those that came; returns at
 * once on a signal (EINTR).  -1 only when the server cannot go on.
 */
int maro_http_run(struct maro_http *h, long ms);
void maro_http_close(struct maro_http *h);

#endif
