#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <zmq.h>

#include "buf.h"
#include "curve.h"

/* ---- ZAP handler and handshake watcher */

#define WATCH_MAX 16

struct maro_zap {
	void *sock;
	pthread_t thread;
	pthread_mutex_t lock;
	uint8_t key[32];
	unsigned long rejected;
	char last[64];
	/* monitors of server sockets: handed over under lock, owned by the thread */
	void *pending[WATCH_MAX], *watched[WATCH_MAX];
	unsigned npending, nwatched, serial;
	int wake;		/* an eventfd: a monitor is pending (the thread sleeps until then) */
};

static void
rejected(struct maro_zap *z, const char *who)
{
	pthread_mutex_lock(&z->lock);
	z->rejected++;
	snprintf(z->last, sizeof z->last, "%s", who);
	pthread_mutex_unlock(&z->lock);
}

/* One frame into buf (NUL-terminated, truncated); its size, or -1. */
static int
zap_frame(void *s, char *buf, size_t cap, int *more)
{
	zmq_msg_t m;
	size_t n, more_len = sizeof *more;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, s, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		*more = 0;
		return -1;
	}
	n = zmq_msg_size(&m);
	if (cap) {
		size_t k = n < cap - 1 ? n : cap - 1;

		memcpy(buf, zmq_msg_data(&m), k);
		buf[k] = '\0';
	}
	zmq_getsockopt(s, ZMQ_RCVMORE, more, &more_len);
	zmq_msg_close(&m);
	return (int)n;
}

/* Answers one ZAP request: CURVE with the group's key, or nothing. */
static int
zap_answer(struct maro_zap *z)
{
	char version[16], reqid[256], domain[256], addr[64], ident[256], mech[32], cred[33];
	int more = 0, reqid_n, credn = -1, ok;

	if (zap_frame(z->sock, version, sizeof version, &more) < 0)
		return errno == EAGAIN ? 0 : -1;
	reqid_n = more ? zap_frame(z->sock, reqid, sizeof reqid, &more) : -1;
	addr[0] = mech[0] = '\0';
	if (more)
		zap_frame(z->sock, domain, sizeof domain, &more);
	if (more)
		zap_frame(z->sock, addr, sizeof addr, &more);
	if (more)
		zap_frame(z->sock, ident, sizeof ident, &more);
	if (more)
		zap_frame(z->sock, mech, sizeof mech, &more);
	if (more)
		credn = zap_frame(z->sock, cred, sizeof cred, &more);
	while (more && zap_frame(z->sock, NULL, 0, &more) >= 0)
		;
	if (reqid_n < 0 || reqid_n > (int)sizeof reqid - 1)
		reqid_n = 0;
	ok = !strcmp(version, "1.0") && !strcmp(mech, "CURVE") && credn == 32 &&
	    !memcmp(cred, z->key, 32);
	if (!ok) {
		char who[64];

		snprintf(who, sizeof who, "a key not the group's, from %s", addr[0] ? addr : "an unknown address");
		rejected(z, who);
	}
	if (zmq_send(z->sock, "1.0", 3, ZMQ_SNDMORE) < 0 ||
	    zmq_send(z->sock, reqid, (size_t)reqid_n, ZMQ_SNDMORE) < 0 ||
	    zmq_send(z->sock, ok ? "200" : "400", 3, ZMQ_SNDMORE) < 0 ||
	    zmq_send(z->sock, ok ? "OK" : "not a member of the group", ok ? 2 : 25, ZMQ_SNDMORE) < 0 ||
	    zmq_send(z->sock, "", 0, ZMQ_SNDMORE) < 0 || zmq_send(z->sock, "", 0, 0) < 0)
		return errno == ETERM ? -1 : 0;
	return 0;
}

/* Drains one monitor: handshakes that failed are peers without the key. */
static int
watch_events(struct maro_zap *z, void *mon)
{
	for (;;) {
		char ev[8], ep[64];
		int more = 0, n = zap_frame(mon, ev, sizeof ev, &more);
		uint16_t id;

		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		ep[0] = '\0';
		if (more)
			zap_frame(mon, ep, sizeof ep, &more);
		while (more && zap_frame(mon, NULL, 0, &more) >= 0)
			;
		if (n < 6)
			continue;
		memcpy(&id, ev, 2);
		if (id & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
			rejected(z, "handshake failed: no key, or another group's");
	}
}

static void *
zap_run(void *arg)
{
	struct maro_zap *z = arg;
	int zero = 0;
	unsigned i;

	for (;;) {
		zmq_pollitem_t items[2 + WATCH_MAX];
		uint64_t n;

		pthread_mutex_lock(&z->lock);
		while (z->npending && z->nwatched < WATCH_MAX)
			z->watched[z->nwatched++] = z->pending[--z->npending];
		pthread_mutex_unlock(&z->lock);
		items[0] = (zmq_pollitem_t){ z->sock, 0, ZMQ_POLLIN, 0 };
		items[1] = (zmq_pollitem_t){ NULL, z->wake, ZMQ_POLLIN, 0 };
		for (i = 0; i < z->nwatched; i++)
			items[2 + i] = (zmq_pollitem_t){ z->watched[i], 0, ZMQ_POLLIN, 0 };
		/* no timeout: a new monitor wakes it (maro_zap_watch), the context's end too (ETERM) */
		if (zmq_poll(items, (int)(2 + z->nwatched), -1) < 0) {
			if (errno == EINTR)
				continue;
			break;	/* ETERM: the context ends */
		}
		if (items[1].revents & ZMQ_POLLIN)
			(void)!read(z->wake, &n, sizeof n);
		if ((items[0].revents & ZMQ_POLLIN) && zap_answer(z) < 0)
			break;
		for (i = 0; i < z->nwatched; i++)
			if ((items[2 + i].revents & ZMQ_POLLIN) && watch_events(z, z->watched[i]) < 0)
				goto out;
	}
out:
	zmq_setsockopt(z->sock, ZMQ_LINGER, &zero, sizeof zero);
	zmq_close(z->sock);
	for (i = 0; i < z->nwatched; i++) {
		zmq_setsockopt(z->watched[i], ZMQ_LINGER, &zero, sizeof zero);
		zmq_close(z->watched[i]);
	}
	pthread_mutex_lock(&z->lock);
	for (i = 0; i < z->npending; i++) {
		zmq_setsockopt(z->pending[i], ZMQ_LINGER, &zero, sizeof zero);
		zmq_close(z->pending[i]);
	}
	z->npending = 0;
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

struct maro_zap *
maro_zap_start(void *zmq_ctx, const char *public_z85)
{
	struct maro_zap *z = calloc(1, sizeof *z);
	int e;

	if (!z)
		return NULL;
	if (!zmq_z85_decode(z->key, public_z85)) {
		free(z);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_init(&z->lock, NULL);
	if ((z->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		goto fail;
	/* bound before any server socket exists: no handshake goes unchecked */
	z->sock = zmq_socket(zmq_ctx, ZMQ_REP);
	if (!z->sock || zmq_bind(z->sock, "inproc://zeromq.zap.01") < 0)
		goto fail;
	if ((e = pthread_create(&z->thread, NULL, zap_run, z)) != 0) {
		errno = e;
		goto fail;
	}
	return z;
fail:
	e = errno;
	if (z->sock)
		zmq_close(z->sock);
	if (z->wake >= 0)
		close(z->wake);
	pthread_mutex_destroy(&z->lock);
	free(z);
	errno = e;
	return NULL;
}

int
maro_zap_watch(struct maro_zap *z, void *zmq_ctx, void *server)
{
	char ep[64];
	void *mon;
	int e;

	if (!z)
		return 0;
	pthread_mutex_lock(&z->lock);
	snprintf(ep, sizeof ep, "inproc://maro-watch.%p.%u", (void *)z, z->serial++);
	pthread_mutex_unlock(&z->lock);
	if (zmq_socket_monitor(server, ep, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
	    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) < 0)
		return -1;
	mon = zmq_socket(zmq_ctx, ZMQ_PAIR);
	if (!mon)
		return -1;
	if (zmq_connect(mon, ep) < 0) {
		e = errno;
		zmq_close(mon);
		errno = e;
		return -1;
	}
	pthread_mutex_lock(&z->lock);
	if (z->npending + z->nwatched >= WATCH_MAX) {
		pthread_mutex_unlock(&z->lock);
		zmq_close(mon);
		errno = ENOSPC;
		return -1;
	}
	z->pending[z->npending++] = mon;
	pthread_mutex_unlock(&z->lock);
	/* the thread takes it up now (an eventfd's counter cannot be full here) */
	if (eventfd_write(z->wake, 1) < 0)
		return -1;
	return 0;
}

void
maro_zap_join(struct maro_zap *z)
{
	if (!z)
		return;
	pthread_join(z->thread, NULL);
	close(z->wake);
	pthread_mutex_destroy(&z->lock);
	free(z);
}

unsigned long
maro_zap_rejected(struct maro_zap *z, char *addr, size_t addrlen)
{
	unsigned long n;

	if (!z)
		return 0;
	pthread_mutex_lock(&z->lock);
	n = z->rejected;
	if (addr && addrlen)
		snprintf(addr, addrlen, "%s", z->last);
	pthread_mutex_unlock(&z->lock);
	return n;
}
