#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <nss.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "transport.h"

/* Defined by lib/zmq-static.c, linked only with Debian's libzmq.a (LINK=static). */
extern const char maro_zmq_static __attribute__((weak));

/* Frames carry at most this many bytes of batched messages. */
#define HWM_FRAMES 64

/* The host's own address when nothing better is known: what its name resolves to. */
static void
host_address(char *out, size_t n)
{
	char host[256];
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;

	snprintf(out, n, "127.0.0.1");
	if (gethostname(host, sizeof host) < 0)
		return;
	host[sizeof host - 1] = '\0';
	if (getaddrinfo(host, NULL, &hints, &ai) == 0 && ai) {
		getnameinfo(ai->ai_addr, ai->ai_addrlen, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST);
		freeaddrinfo(ai);
	}
}

/* *v, unless set: $NAME (LO..HI), else def.  -1/EINVAL on a bad value. */
static int
env_limit(const char *name, size_t *v, size_t lo, size_t hi, size_t def, char *errbuf, size_t errlen)
{
	const char *s = getenv(name);
	unsigned long long x;
	char *end;

	if (*v)
		return 0;
	if (!s || !*s) {
		*v = def;
		return 0;
	}
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || *s == '-' || x < lo || x > hi) {
		maro_errbuf_set(errbuf, errlen, "invalid %s '%s' (%zu to %zu)", name, s, lo, hi);
		errno = EINVAL;
		return -1;
	}
	*v = (size_t)x;
	return 0;
}

/*
 * A registry path too long for socket names: the sockets go in a fresh
 * directory of ours (mkdtemp: mode 0700, a name no one can make ready
 * beforehand) under TMPDIR, or /tmp.  0, or -1 with errno.
 */
static int
ipc_private_dir(struct maro_ctx *c)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || *tmp != '/' || strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(c->ipc_dir, sizeof c->ipc_dir, "%s/maro-%lu.XXXXXX", tmp, (unsigned long)geteuid());
	if (!mkdtemp(c->ipc_dir)) {
		c->ipc_dir[0] = '\0';
		return -1;
	}
	return 0;
}

/* The socket files this process bound are removed, and its private directory. */
static void
ipc_cleanup(struct maro_ctx *c)
{
	char path[sizeof c->ipc_dir + 64];
	unsigned i;

	if (!c->use_ipc || !c->ipc_dir[0])
		return;
	for (i = 0; i < c->serial; i++) {
		snprintf(path, sizeof path, "%s/s.%ld.%u", c->ipc_dir, (long)getpid(), i);
		unlink(path);
	}
	if (c->ipc_private)
		rmdir(c->ipc_dir);
}

/*
 * A context takes 1023 sockets by default, so a broadcast to a thousand
 * peers failed with EMFILE however high ulimit -n was: as many as the
 * descriptors allow (one each at least), within libzmq's own limit.  A
 * tool that knows it talks to few peers needs three sockets for each (its
 * connection and the two of the handshake's watch) and a few of its own.
 */
static void
raise_socket_limit(void *zmq, size_t peers)
{
	struct rlimit rl;
	int want = 65535, most = zmq_ctx_get(zmq, ZMQ_SOCKET_LIMIT);

	if (peers && peers < 10000)
		want = (int)peers * 3 + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)want)
		want = (int)rl.rlim_cur;
	if (most > 0 && want > most)
		want = most;
	if (want > zmq_ctx_get(zmq, ZMQ_MAX_SOCKETS))
		zmq_ctx_set(zmq, ZMQ_MAX_SOCKETS, want);
}

struct maro_ctx *
maro_ctx_open(const struct maro_ctx_opts *o, char *errbuf, size_t errlen)
{
	struct maro_ctx *c = calloc(1, sizeof *c);
	const char *url = o->registry_url ? o->registry_url : getenv("MARO_REGISTRY");
	const char *group = o->group ? o->group : getenv("MARO_GROUP");
	const char *adv = o->advertise ? o->advertise : getenv("MARO_ADVERTISE");
	const char *tr = o->transport ? o->transport : getenv("MARO_TRANSPORT");
	const char *kf = o->keyfile ? o->keyfile : getenv("MARO_KEYFILE");
	const char *local;
	size_t depth = 0;

	if (!c)
		return NULL;
	if (!url || !*url)
		url = maro_registry_default_url();
	if (!group || !*group)
		group = "maro";
	if (!maro_name_valid(group) || group[0] == '~') {
		maro_errbuf_set(errbuf, errlen, "invalid group name '%s'", group);
		errno = EINVAL;
		goto fail;
	}
	if (tr && *tr && strcmp(tr, "tcp") && strcmp(tr, "ipc")) {
		maro_errbuf_set(errbuf, errlen, "invalid transport '%s' (tcp or ipc)", tr);
		errno = EINVAL;
		goto fail;
	}
	if (kf && *kf) {
		c->key = malloc(sizeof *c->key);
		if (!c->key)
			goto fail;
		if (maro_curve_load(kf, c->key, errbuf, errlen) < 0) {
			errno = EINVAL;
			goto fail;
		}
	}
	/*
	 * a dir: registry is the user's alone, but inboxes on loopback TCP are
	 * every local user's to deliver to (maro(7), SECURITY): only CURVE
	 * keeps them out, or the user says they know
	 */
	if (!strncmp(url, "dir:", 4) && tr && !strcmp(tr, "tcp") && !c->key &&
	    !(getenv("MARO_INSECURE_TCP") && !strcmp(getenv("MARO_INSECURE_TCP"), "1"))) {
		maro_errbuf_set(errbuf, errlen, "MARO_TRANSPORT=tcp on a dir: registry lets every local "
		    "user deliver to the group: refused without a group key (MARO_KEYFILE), unless "
		    "MARO_INSECURE_TCP=1");
		errno = EINVAL;
		goto fail;
	}
	snprintf(c->group, sizeof c->group, "%s", group);
	c->driver = &maro_driver_zmq;
	c->limits.max_item = o->max_message;
	c->window = o->window;
	/*
	 * 2 MiB of a window's bytes: the 64 KiB stream on loopback as fast as
	 * with 4, and its sender and receiver each 2 MiB smaller at their peak
	 */
	if (env_limit("MARO_MAX_SIZE", &c->limits.max_item, 64, (size_t)1 << 31, MARO_CBOR_DEFAULT_MAX_ITEM, errbuf, errlen) < 0 ||
	    env_limit("MARO_MAX_DEPTH", &depth, 1, MARO_CBOR_MAX_DEPTH_LIMIT, MARO_CBOR_DEFAULT_MAX_DEPTH, errbuf, errlen) < 0 ||
	    env_limit("MARO_WINDOW", &c->window, 1, 65536, 4096, errbuf, errlen) < 0 ||
	    env_limit("MARO_WINDOW_BYTES", &c->window_bytes, 1, (size_t)1 << 32, 2 << 20, errbuf, errlen) < 0 ||
	    env_limit("MARO_MAX_PENDING", &c->max_pending, 1, (size_t)1 << 24, 65536, errbuf, errlen) < 0)
		goto fail;
	c->limits.max_depth = (unsigned)depth;
	c->retry_us = 1000000;
	{
		/* the key loaded above, or none: the registry reads no key file of its own */
		struct maro_registry_opts ro = { .key = c->key, .keyfile = "" };

		c->reg = maro_registry_open(url, group, &ro, errbuf, errlen);
	}
	if (!c->reg)
		goto fail;
	if (!strncmp(url, "dir:", 4) && (!tr || !*tr || !strcmp(tr, "ipc"))) {
		int k = snprintf(c->ipc_dir, sizeof c->ipc_dir, "%s/%s", url + 4, group);

		/*
		 * ipc paths must fit sun_path, with room for "/s.PID.N": a longer
		 * registry path gets its sockets in a fresh private directory (a
		 * name no one can make ready beforehand, mode 0700), never a
		 * silent fall-back to loopback TCP, which any local user reaches
		 */
		if (k < 0 || (size_t)k >= 80) {
			c->ipc_private = 1;	/* made at the first bind (ipc_private_dir) */
			c->ipc_dir[0] = '\0';
		}
		c->use_ipc = 1;
	}
	if (adv && *adv)
		snprintf(c->advertise, sizeof c->advertise, "%s", adv);
	else if ((local = maro_registry_local_address(c->reg)))
		snprintf(c->advertise, sizeof c->advertise, "%s", local);
	else if (!strncmp(url, "dir:", 4))
		snprintf(c->advertise, sizeof c->advertise, "127.0.0.1");
	else
		host_address(c->advertise, sizeof c->advertise);
	/*
	 * A ZeroMQ context with OpenPGM looks up the "pgm" protocol
	 * (getprotobyname) for a transport maro never uses; with Debian's
	 * "protocols: db files" glibc first tries to load libnss_db from some
	 * forty places.  The file answers it: 0.2 ms of every start
	 * (zmq_ctx_new 0.40 -> 0.17 ms).  Linked with lib/zmq-static.c there
	 * is no OpenPGM and no look-up, and saying so would cost a read of
	 * nsswitch.conf.
	 */
	if (!&maro_zmq_static)
		__nss_configure_lookup("protocols", "files");
	c->zmq = zmq_ctx_new();
	if (!c->zmq) {
		maro_errbuf_set(errbuf, errlen, "cannot create a ZeroMQ context: %s", zmq_strerror(errno));
		goto fail;
	}
	raise_socket_limit(c->zmq, o->peers);
	if (c->key && !(c->zap = maro_zap_start(c->zmq, c->key->public_z85))) {
		maro_errbuf_set(errbuf, errlen, "cannot start the authentication handler: %s", zmq_strerror(errno));
		goto fail;
	}
	return c;
fail:
	{
		int e = errno;

		if (c->zmq)
			zmq_ctx_term(c->zmq);
		if (c->reg)
			maro_registry_close(c->reg);
		if (c->key) {
			maro_curve_wipe(c->key);
			free(c->key);
		}
		free(c);
		errno = e;
	}
	return NULL;
}

/* maro_ctx_close, or with term 0 maro_ctx_abandon (transport.h) */
static void
ctx_release(struct maro_ctx *c, int term)
{
	if (!c)
		return;
	/* the sockets first: the last member to leave then finds its group directory empty */
	ipc_cleanup(c);
	if (c->reg)
		maro_registry_close(c->reg);
	if (term && c->zmq)
		zmq_ctx_term(c->zmq);
	if (term)
		maro_zap_join(c->zap);
	if (c->key) {
		maro_curve_wipe(c->key);
		free(c->key);
	}
	free(c);
}

void
maro_ctx_close(struct maro_ctx *c)
{
	ctx_release(c, 1);
}

void
maro_ctx_abandon(struct maro_ctx *c)
{
	ctx_release(c, 0);
}

unsigned long
maro_ctx_rejected(struct maro_ctx *c, char *addr, size_t addrlen)
{
	return maro_zap_rejected(c->zap, addr, addrlen);
}

int
maro_endpoint_valid(const char *ep)
{
	const char *colon;
	size_t i;

	if (!ep || strlen(ep) > MARO_ENDPOINT_MAX)
		return 0;
	for (i = 0; ep[i]; i++)
		if ((unsigned char)ep[i] <= ' ' || (unsigned char)ep[i] >= 0x7f)
			return 0;
	if (!strncmp(ep, "ipc:///", 7))
		return 1;
	if (strncmp(ep, "tcp://", 6) != 0)
		return 0;
	colon = strrchr(ep + 6, ':');
	if (!colon || colon == ep + 6 || !colon[1] || strchr(ep + 6, '*'))
		return 0;
	for (i = 1; colon[i]; i++)
		if (colon[i] < '0' || colon[i] > '9')
			return 0;
	return atoi(colon + 1) > 0 && atoi(colon + 1) < 65536;
}

/* ---- the ZeroMQ driver ---- */

struct zsock {
	void *s;
	zmq_msg_t id, body;
	int have;
	int type;	/* ZMQ_ROUTER (inbox) or ZMQ_DEALER (outbox) */
	int fd;		/* ZMQ_FD: readable when commands wait for the socket */
	/*
	 * What the socket could do (ZMQ_POLLIN, ZMQ_POLLOUT) at the last
	 * ZMQ_EVENTS, and which of that may have changed since without fd
	 * saying so: a send or receive processes commands (zmq_getsockopt(3),
	 * ZMQ_FD).  A receive that found nothing left none waiting: then only
	 * fd can tell that a message came, and asking again is two system
	 * calls spent for nothing.
	 */
	int events, stale;
	void *mon;	/* outbox: the handshake watch (a monitor's PAIR), until one succeeded */
};

static void
zsock_setopts(struct maro_ctx *c, void *s)
{
	int hwm = HWM_FRAMES, one = 1, ivl = 1000, ttl = 3000;
	int64_t max = (int64_t)c->limits.max_item + 65536;

	zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
	zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof max);
	zmq_setsockopt(s, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
	zmq_setsockopt(s, ZMQ_HEARTBEAT_TIMEOUT, &ttl, sizeof ttl);
	zmq_setsockopt(s, ZMQ_TCP_KEEPALIVE, &one, sizeof one);
}

static void zmq_close_sock(void *sock, int linger_ms);

static void
watch_end(struct zsock *z)
{
	int zero = 0;

	if (!z->mon)
		return;
	zmq_socket_monitor(z->s, NULL, 0);
	zmq_setsockopt(z->mon, ZMQ_LINGER, &zero, sizeof zero);
	zmq_close(z->mon);
	z->mon = NULL;
}

/*
 * Watches a sender's connection for handshakes that fail: a group key on
 * one side only, or another group's, would else show as a peer that never
 * acknowledges.  Costs two descriptors (the monitor's sockets), until a
 * handshake succeeds; none are spent on it when they are short.
 */
static void
watch_start(struct maro_ctx *c, struct zsock *z)
{
	static unsigned serial;
	char ep[64];

	if (!maro_fds_free(6))
		return;
	snprintf(ep, sizeof ep, "inproc://maro-hs.%ld.%u", (long)getpid(), serial++);
	if (zmq_socket_monitor(z->s, ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
	    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) < 0)
		return;
	z->mon = zmq_socket(c->zmq, ZMQ_PAIR);
	if (z->mon && zmq_connect(z->mon, ep) == 0)
		return;
	if (z->mon)
		zmq_close(z->mon);
	z->mon = NULL;
	zmq_socket_monitor(z->s, NULL, 0);
}

static int
zmq_handshake(void *sock)
{
	struct zsock *z = sock;
	int news = MARO_HS_NONE;

	while (z->mon) {
		zmq_msg_t m;
		uint16_t ev = 0;
		uint32_t val = 0;
		int more;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, z->mon, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			break;
		}
		if (zmq_msg_size(&m) >= 6) {
			memcpy(&ev, zmq_msg_data(&m), 2);
			memcpy(&val, (uint8_t *)zmq_msg_data(&m) + 2, 4);
		}
		more = zmq_msg_more(&m);
		/* the endpoint: not needed */
		while (more && zmq_msg_recv(&m, z->mon, ZMQ_DONTWAIT) >= 0)
			more = zmq_msg_more(&m);
		zmq_msg_close(&m);
		if (ev & ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
			watch_end(z);
			return MARO_HS_OK;
		}
		if (ev & ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
			news = MARO_HS_REFUSED;
		else if ((ev & ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) && val == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
			news = MARO_HS_MECHANISM;
		else if (ev & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
			news = MARO_HS_CLOSED;
	}
	return news;
}

static struct zsock *
zsock_new(struct maro_ctx *c, int type)
{
	struct zsock *z = calloc(1, sizeof *z);
	size_t len = sizeof z->fd;

	if (!z)
		return NULL;
	z->s = zmq_socket(c->zmq, type);
	if (!z->s) {
		free(z);
		return NULL;
	}
	zmq_msg_init(&z->id);
	zmq_msg_init(&z->body);
	zsock_setopts(c, z->s);
	z->type = type;
	z->stale = ZMQ_POLLIN | ZMQ_POLLOUT;
	if (zmq_getsockopt(z->s, ZMQ_FD, &z->fd, &len) < 0) {
		zmq_close_sock(z, 0);
		return NULL;
	}
	return z;
}

static void
zmq_close_sock(void *sock, int linger_ms)
{
	struct zsock *z = sock;

	if (!z)
		return;
	watch_end(z);
	zmq_setsockopt(z->s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
	zmq_close(z->s);
	zmq_msg_close(&z->id);
	zmq_msg_close(&z->body);
	free(z);
}

/*
 * zmq_bind, which an ipc endpoint in the group directory tries again when
 * the directory was removed by its last member since maro_registry_prepare
 * made it ready (ENOENT): prepared again, three times at most.
 */
static int
bind_ipc_again(struct maro_ctx *c, void *s, const char *endpoint)
{
	int tries = 0, rc;

	while ((rc = zmq_bind(s, endpoint)) < 0 && errno == ENOENT && c->use_ipc && !c->ipc_private &&
	    tries++ < 3 && maro_registry_prepare(c->reg) == 0)
		;
	return rc;
}

static void *
zmq_bind_inbox(struct maro_ctx *c, char endpoint[MARO_ENDPOINT_MAX + 1])
{
	struct zsock *z = zsock_new(c, ZMQ_ROUTER);
	char want[1024];
	size_t len = MARO_ENDPOINT_MAX + 1;
	int one = 1, backlog = 4096;

	if (!z)
		return NULL;
	zmq_setsockopt(z->s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
	zmq_setsockopt(z->s, ZMQ_BACKLOG, &backlog, sizeof backlog);
	/*
	 * A ZAP domain, with a key or without: libzmq then refuses peers that
	 * greet with ZMTP 1.0 or 2.0, which no maro tool speaks.  Without it,
	 * bytes that pass for a 1.0 greeting (from any hostile peer) could hit
	 * an assertion in libzmq 4.3 and abort the inbox's process ("Resource
	 * temporarily unavailable (src/zmtp_engine.cpp:446)").  With no key
	 * there is no handler to ask, and 3.x peers are let in as before.
	 */
	zmq_setsockopt(z->s, ZMQ_ZAP_DOMAIN, c->group, strlen(c->group));
	if (c->key) {
		if (zmq_setsockopt(z->s, ZMQ_CURVE_SERVER, &one, sizeof one) < 0 ||
		    zmq_setsockopt(z->s, ZMQ_CURVE_SECRETKEY, c->key->secret_z85, MARO_Z85_KEY + 1) < 0) {
			zmq_close_sock(z, 0);
			return NULL;
		}
	}
	if (c->use_ipc) {
		/*
		 * the registry's group directory (checked, and made now: a
		 * reader never makes it), or ours
		 */
		if ((c->ipc_private && !c->ipc_dir[0] && ipc_private_dir(c) < 0) ||
		    (!c->ipc_private && maro_registry_prepare(c->reg) < 0)) {
			int e = errno;

			zmq_close_sock(z, 0);
			errno = e;
			return NULL;
		}
		snprintf(want, sizeof want, "ipc://%s/s.%ld.%u", c->ipc_dir, (long)getpid(), c->serial++);
		unlink(want + 6);
	} else if (strchr(c->advertise, ':')) {
		snprintf(want, sizeof want, "tcp://[%s]:*", c->advertise);
		zmq_setsockopt(z->s, ZMQ_IPV6, &one, sizeof one);
	} else {
		snprintf(want, sizeof want, "tcp://%s:*", c->advertise);
	}
	if (bind_ipc_again(c, z->s, want) < 0 ||
	    zmq_getsockopt(z->s, ZMQ_LAST_ENDPOINT, endpoint, &len) < 0 ||
	    (c->zap && maro_zap_watch(c->zap, c->zmq, z->s) < 0)) {
		int e = errno;

		zmq_close_sock(z, 0);
		errno = e;
		return NULL;
	}
	return z;
}

/*
 * Are n more descriptors to be had?  A connection costs two (the socket's
 * mailbox, then the connection its I/O thread opens); libzmq retries an
 * I/O thread's connect that fails for want of one for ever, and silently.
 */
int
maro_fds_free(int n)
{
	int fd[8], k, ok = 1;

	for (k = 0; k < n && k < 8; k++) {
		fd[k] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
		if (fd[k] < 0) {
			ok = errno != EMFILE && errno != ENFILE;
			break;
		}
	}
	while (k-- > 0)
		close(fd[k]);
	return ok;
}

static void *
zmq_connect_outbox(struct maro_ctx *c, const char *endpoint)
{
	struct zsock *z;
	int ivl = 100, max = 1000;

	/*
	 * tcp:// and ipc:// only, whatever the registry says: the tools carry
	 * no other transport of libzmq's (lib/zmq-static.c)
	 */
	if (!maro_endpoint_valid(endpoint)) {
		errno = EPROTONOSUPPORT;
		return NULL;
	}
	/* the connection's two, and two to spare for the registry's look-ups */
	if (!maro_fds_free(4)) {
		errno = EMFILE;
		return NULL;
	}
	z = zsock_new(c, ZMQ_DEALER);
	if (!z)
		return NULL;
	/*
	 * No ZMQ_IMMEDIATE: with it, a connection that goes takes with it
	 * what its peer sent and we had not read yet, such as the last
	 * acknowledgements of a receiver that exits.  Without it, frames for
	 * a peer not connected wait in the socket (at most its high-water
	 * mark); the outbox's stall timer looks the name up again either way.
	 */
	zmq_setsockopt(z->s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
	zmq_setsockopt(z->s, ZMQ_RECONNECT_IVL_MAX, &max, sizeof max);
	if (c->key &&
	    (zmq_setsockopt(z->s, ZMQ_CURVE_SERVERKEY, c->key->public_z85, MARO_Z85_KEY + 1) < 0 ||
	     zmq_setsockopt(z->s, ZMQ_CURVE_PUBLICKEY, c->key->public_z85, MARO_Z85_KEY + 1) < 0 ||
	     zmq_setsockopt(z->s, ZMQ_CURVE_SECRETKEY, c->key->secret_z85, MARO_Z85_KEY + 1) < 0)) {
		zmq_close_sock(z, 0);
		return NULL;
	}
	watch_start(c, z);
	if (zmq_connect(z->s, endpoint) < 0) {
		int e = errno;

		zmq_close_sock(z, 0);
		errno = e;
		return NULL;
	}
	return z;
}

static int
zmq_send_frame(void *sock, const void *to, size_t tolen, const void *p, size_t n)
{
	struct zsock *z = sock;

	z->stale = ZMQ_POLLIN | ZMQ_POLLOUT;
	if (to && zmq_send(z->s, to, tolen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		return -1;
	return zmq_send(z->s, p, n, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

static int
zmq_send_fill(void *sock, size_t n, void (*fill)(void *arg, uint8_t *dst), void *arg)
{
	struct zsock *z = sock;
	zmq_msg_t msg;

	if (zmq_msg_init_size(&msg, n) < 0)
		return -1;
	z->stale = ZMQ_POLLIN | ZMQ_POLLOUT;
	fill(arg, zmq_msg_data(&msg));
	if (zmq_msg_send(&msg, z->s, ZMQ_DONTWAIT) < 0) {
		int e = errno;

		zmq_msg_close(&msg);
		errno = e;
		return -1;
	}
	return 0;
}

static int
zmq_send_ref(void *sock, void *p, size_t n, void (*release)(void *p, void *hint), void *hint)
{
	struct zsock *z = sock;
	zmq_msg_t msg;

	if (zmq_msg_init_data(&msg, p, n, release, hint) < 0) {
		int e = errno;

		release(p, hint);
		errno = e;
		return -1;
	}
	z->stale = ZMQ_POLLIN | ZMQ_POLLOUT;
	if (zmq_msg_send(&msg, z->s, ZMQ_DONTWAIT) < 0) {
		int e = errno;

		zmq_msg_close(&msg);	/* calls release */
		errno = e;
		return -1;
	}
	return 0;
}

/* Nothing to receive: commands were all processed, so fd will say when a message comes. */
static int
zmq_recv_none(struct zsock *z)
{
	if (errno != EAGAIN)
		return -1;
	z->events &= ~ZMQ_POLLIN;
	z->stale = (z->stale & ~ZMQ_POLLIN) | ZMQ_POLLOUT;
	return 0;
}

static int
zmq_recv_frame(void *sock, const void **from, size_t *fromlen, const void **p, size_t *n)
{
	struct zsock *z = sock;
	int more;

	/* nothing came since a receive found none (maro_poll refreshes it when fd says so) */
	if (!((z->stale | z->events) & ZMQ_POLLIN))
		return 0;
	z->stale = ZMQ_POLLIN | ZMQ_POLLOUT;
	for (;;) {
		if (z->type == ZMQ_ROUTER) {
			if (zmq_msg_recv(&z->id, z->s, ZMQ_DONTWAIT) < 0)
				return zmq_recv_none(z);
			if (!zmq_msg_more(&z->id))
				continue;	/* an identity with no body: ignore */
		}
		if (zmq_msg_recv(&z->body, z->s, ZMQ_DONTWAIT) < 0)
			return zmq_recv_none(z);
		more = zmq_msg_more(&z->body);
		if (more) {
			/* a multi-part message is not ours: drain and drop it */
			while (zmq_msg_more(&z->body) && zmq_msg_recv(&z->body, z->s, ZMQ_DONTWAIT) >= 0)
				;
			*p = NULL;
			*n = 0;
		} else {
			*p = zmq_msg_data(&z->body);
			*n = zmq_msg_size(&z->body);
		}
		if (from) {
			*from = z->type == ZMQ_ROUTER ? zmq_msg_data(&z->id) : NULL;
			*fromlen = z->type == ZMQ_ROUTER ? zmq_msg_size(&z->id) : 0;
		}
		return 1;
	}
}

static void *
zmq_handle(void *sock)
{
	return sock;
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Asks the socket what it can do now (processing its commands). */
static int
zsock_refresh(struct zsock *z)
{
	size_t len = sizeof z->events;

	if (zmq_getsockopt(z->s, ZMQ_EVENTS, &z->events, &len) < 0)
		return -1;
	z->stale = 0;
	return 0;
}

/*
 * zmq_poll(3) over our sockets (items[i].socket from handle()) and plain
 * descriptors, with fewer system calls: zmq_poll asks every socket for
 * ZMQ_EVENTS (two system calls each) before it waits and again after, and
 * polls once more with no timeout first.  Here a socket is asked only when
 * something done to it since may have changed what it can do, or when its
 * fd says commands came.
 */
/* the driver's events are ZeroMQ's, bit for bit */
_Static_assert(MARO_POLLIN == ZMQ_POLLIN && MARO_POLLOUT == ZMQ_POLLOUT && MARO_POLLERR == ZMQ_POLLERR &&
    MARO_POLLPRI == ZMQ_POLLPRI, "MARO_POLL* are ZMQ_POLL*");

static int
zmq_poll_items(struct maro_pollitem *items, int n, long timeout_ms)
{
	/* kept from call to call: a tool polls from its main thread only */
	static struct pollfd *pfd;
	static int cap;
	int i, ready = 0;
	int64_t end;

	/* only -1 means no timeout: another negative one is a deadline past */
	if (timeout_ms < -1)
		timeout_ms = 0;
	if (timeout_ms > INT_MAX)
		timeout_ms = INT_MAX;
	end = timeout_ms > 0 ? now_us() + (int64_t)timeout_ms * 1000 : 0;

	if (n > cap) {
		struct pollfd *q = realloc(pfd, (size_t)n * sizeof *pfd);

		if (!q) {
			errno = ENOMEM;
			return -1;
		}
		pfd = q;
		cap = n;
	}
	for (i = 0; i < n; i++) {
		struct zsock *z = items[i].socket;

		items[i].revents = 0;
		if (z) {
			if ((z->stale & items[i].events) && zsock_refresh(z) < 0)
				return -1;
			items[i].revents = (short)(z->events & items[i].events);
			pfd[i] = (struct pollfd){ z->fd, POLLIN, 0 };
		} else {
			pfd[i] = (struct pollfd){ items[i].fd,
			    (short)((items[i].events & ZMQ_POLLIN ? POLLIN : 0) |
			    (items[i].events & ZMQ_POLLOUT ? POLLOUT : 0) |
			    (items[i].events & ZMQ_POLLPRI ? POLLPRI : 0)), 0 };
		}
		ready += items[i].revents != 0;
	}
	/*
	 * a socket is ready: still look at every descriptor, without waiting,
	 * or a socket whose fd alone knows of a message would go unread while
	 * another keeps the caller busy
	 */
	if (ready)
		timeout_ms = 0;
	for (;;) {
		if (poll(pfd, (nfds_t)n, timeout_ms < 0 ? -1 : (int)timeout_ms) < 0)
			return -1;
		ready = 0;
		for (i = 0; i < n; i++) {
			struct zsock *z = items[i].socket;

			if (!pfd[i].revents) {
				ready += items[i].revents != 0;
				continue;
			}
			if (z) {
				if (zsock_refresh(z) < 0)
					return -1;
				items[i].revents = (short)(z->events & items[i].events);
			} else {
				items[i].revents = (short)((pfd[i].revents & POLLIN ? ZMQ_POLLIN : 0) |
				    (pfd[i].revents & POLLOUT ? ZMQ_POLLOUT : 0) |
				    (pfd[i].revents & POLLPRI ? ZMQ_POLLPRI : 0) |
				    (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL) ? ZMQ_POLLERR : 0));
			}
			ready += items[i].revents != 0;
		}
		if (ready || timeout_ms == 0)
			return ready;
		/* commands that changed nothing asked for: wait out the rest */
		if (timeout_ms > 0) {
			int64_t left = end - now_us();

			if (left <= 0)
				return 0;
			timeout_ms = (long)((left + 999) / 1000);
		}
	}
}

const struct maro_driver maro_driver_zmq = {
	.name = "zmq",
	.bind = zmq_bind_inbox,
	.connect = zmq_connect_outbox,
	.close = zmq_close_sock,
	.send = zmq_send_frame,
	.send_fill = zmq_send_fill,
	.send_ref = zmq_send_ref,
	.recv = zmq_recv_frame,
	.handle = zmq_handle,
	.poll = zmq_poll_items,
	.handshake = zmq_handshake,
};

int
maro_poll(struct maro_ctx *c, struct maro_pollitem *items, int n, long timeout_ms)
{
	return c->driver->poll(items, n, timeout_ms);
}

const char *
maro_transport_strerror(int err)
{
	return zmq_strerror(err);
}
