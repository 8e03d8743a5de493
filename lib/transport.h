/*
 * transport: how messages move between processes (maro(7), WIRE PROTOCOL).
 *
 * A context holds what every socket of a process shares: the ZeroMQ
 * context, the registry handle, the group and the address to advertise.
 * Inboxes bind and register a name; outboxes look names up and connect.
 * The protocol driver below is the one place that knows ZeroMQ: another
 * stack would add a driver without touching inbox, outbox or the tools.
 *
 * Frames (one ZeroMQ message part each):
 *   header  4 bytes: 'm' 0x01 TYPE 0x00
 *   DATA    TYPE 'D', then repeated: seq (u64 BE), length (u32 BE), one message (CBOR)
 *   ACK     TYPE 'A', then repeated: first seq (u64 BE), count (u32 BE)
 * A receiver acknowledges a message only after it handed it on.
 */
#ifndef MARO_TRANSPORT_H
#define MARO_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>


#include "cborseq.h"
#include "curve.h"
#include "registry.h"

#define MARO_FRAME_HEADER 4
#define MARO_FRAME_DATA 'D'
#define MARO_FRAME_ACK 'A'
/*
 * The header's last byte: flags.  On DATA, "acknowledge at once": the
 * sender waits on these acknowledgements (its window is half used, it
 * resends, or it is finishing).  Without it a receiver may hold its
 * acknowledgements for up to MARO_ACK_DELAY_US, so that one frame
 * acknowledges many messages.
 */
#define MARO_FRAME_PROMPT 0x01
#define MARO_ACK_DELAY_US 2000
/*
 * ...for this long in a requester's reply inbox (maro-scatter's): its
 * senders are workers, which want the acknowledgements of their replies
 * only to free them, and with many workers each would otherwise get one
 * ACK frame for each frame of replies
 */
#define MARO_REPLY_ACK_DELAY_US 20000
/* ...or until this many messages of one sender wait for their acknowledgement */
#define MARO_ACK_BATCH 256
#define MARO_DATA_ITEM_HEADER 12
#define MARO_ACK_ITEM 12

struct maro_driver;

struct maro_ctx {
	void *zmq;
	const struct maro_driver *driver;
	struct maro_registry *reg;
	char group[MARO_NAME_MAX + 1];
	char advertise[MARO_HOST_MAX + 1];	/* tcp address to bind and advertise */
	int use_ipc;				/* dir: registry and ipc transport */
	char ipc_dir[512];			/* where its sockets are */
	int ipc_private;			/* ipc_dir is ours alone (mkdtemp): removed at close */
	struct maro_cbor_limits limits;
	size_t window;				/* unacknowledged messages per peer */
	size_t window_bytes;			/* and their bytes (one message may exceed it) */
	int64_t retry_us;			/* resend an unacknowledged message after this */
	unsigned serial;			/* for unique ipc paths */
	size_t max_pending;			/* sessions awaiting replies, per requester */
	struct maro_curve_key *key;		/* the group key (CURVE), or NULL */
	struct maro_zap *zap;			/* admits holders of key */
};

struct maro_ctx_opts {
	const char *registry_url;	/* NULL: $MARO_REGISTRY or the default */
	const char *group;		/* NULL: $MARO_GROUP or "maro" */
	const char *advertise;		/* NULL: $MARO_ADVERTISE or derived */
	const char *transport;		/* NULL: $MARO_TRANSPORT: "tcp" or "ipc" */
	size_t max_message;		/* 0: $MARO_MAX_SIZE, else 16 MiB */
	size_t window;			/* 0: $MARO_WINDOW, else 4096 */
	/* from the environment only: MARO_MAX_DEPTH (64), MARO_MAX_PENDING (65536),
	 * MARO_WINDOW_BYTES (2 MiB) */
	const char *keyfile;		/* NULL: $MARO_KEYFILE; NULL or "": no CURVE */
	/*
	 * The most peers the tool connects to, when it knows (a receiver: 1);
	 * 0: as many as its descriptors allow.  Sizes libzmq's table of
	 * sockets, which costs 12 bytes a socket, made and touched at the
	 * first socket: 240 KiB and a tenth of a millisecond at 20,000.
	 */
	size_t peers;
};

/*
 * Opens the registry and the ZeroMQ context.  NULL on failure with errno and
 * a message in errbuf (registry unreachable: ECONNREFUSED and friends; a
 * bad group, transport or key file: EINVAL).  With a key file every socket
 * uses CURVE (curve.h).
 */
struct maro_ctx *maro_ctx_open(const struct maro_ctx_opts *o, char *errbuf, size_t errlen);
void maro_ctx_close(struct maro_ctx *c);

/*
 * maro_ctx_close for a process that exits at once by _exit(2) and whose
 * sockets have nothing left to send (none lingers): what others see of it
 * goes as with maro_ctx_close (the registry connection, the socket files
 * it bound), but the ZeroMQ context is left to the exit.  Terminating it
 * wakes its two threads to close each socket and joins them, 0.13 ms of a
 * one-message maro-send for nothing the kernel does not do at the exit:
 * a socket closed with no linger sends nothing more either way.  Not in
 * an instrumented build (MARO_CAN_ABANDON 0), whose leak check wants all
 * freed.
 */
void maro_ctx_abandon(struct maro_ctx *c);
#ifdef __SANITIZE_ADDRESS__
#define MARO_CAN_ABANDON 0
#else
#define MARO_CAN_ABANDON 1
#endif
/*
 * Clients rejected for want of the group key so far (0 without CURVE), and
 * the address of the last one.
 */
unsigned long maro_ctx_rejected(struct maro_ctx *c, char *addr, size_t addrlen);

/*
 * An item of maro_poll: a driver's socket (handle()) or, with socket NULL,
 * a descriptor; events and revents are MARO_POLL* bits.
 */
struct maro_pollitem {
	void *socket;
	int fd;
	short events;
	short revents;
};
enum {
	MARO_POLLIN = 1,	/* a frame to receive; a descriptor readable */
	MARO_POLLOUT = 2,	/* room to send; a descriptor writable */
	MARO_POLLERR = 4,	/* a descriptor's error or hang-up */
	MARO_POLLPRI = 8,
};

/*
 * The protocol driver: bind, connect, send and receive frames, and poll
 * its sockets beside plain descriptors.  Sockets are opaque; handle() is
 * what a maro_pollitem's socket holds.  Nothing above lib/transport names
 * the driver's own types: a second driver fills this table (maro(7),
 * WIRE PROTOCOL).
 */
struct maro_driver {
	const char *name;
	/* Binds an inbox at a fresh endpoint (written to endpoint). */
	void *(*bind)(struct maro_ctx *c, char endpoint[MARO_ENDPOINT_MAX + 1]);
	void *(*connect)(struct maro_ctx *c, const char *endpoint);
	void (*close)(void *sock, int linger_ms);
	/* 0 sent, -1 with errno (EAGAIN: would block). to/tolen: the peer (inbox side) */
	int (*send)(void *sock, const void *to, size_t tolen, const void *p, size_t n);
	/*
	 * Sends one frame of n bytes that fill(arg, dst) writes straight into
	 * the driver's message (sender side): no copy through a buffer of ours.
	 */
	int (*send_fill)(void *sock, size_t n, void (*fill)(void *arg, uint8_t *dst), void *arg);
	/*
	 * Sends the n bytes at p as one frame without copying them: release(p,
	 * hint) is called (from any thread) once the driver is done with them,
	 * also when sending fails.
	 */
	int (*send_ref)(void *sock, void *p, size_t n, void (*release)(void *p, void *hint), void *hint);
	/*
	 * Receives one frame without blocking: 1 with *p, *n (valid until the
	 * next recv on sock) and the sender's identity in from/fromlen (inbox
	 * side), 0 when none is waiting, -1 on error.
	 */
	int (*recv)(void *sock, const void **from, size_t *fromlen, const void **p, size_t *n);
	void *(*handle)(void *sock);	/* what maro_poll takes as an item's socket */
	/*
	 * Sender side: what became of the connection's handshakes since the
	 * last call (enum maro_handshake).  A connection is watched until one
	 * handshake succeeds, when descriptors allow (two more); NULL: never.
	 */
	int (*handshake)(void *sock);
	int (*poll)(struct maro_pollitem *items, int n, long timeout_ms);
};

/* What a handshake watch tells (driver->handshake), the latest news first. */
enum maro_handshake {
	MARO_HS_NONE,		/* nothing new */
	MARO_HS_OK,		/* a handshake succeeded: the watch ends */
	MARO_HS_MECHANISM,	/* the peer has a group key and we none, or the other way */
	MARO_HS_REFUSED,	/* the peer refused our key (its ZAP handler) */
	MARO_HS_CLOSED,		/* the peer closed the connection during the handshake */
};

extern const struct maro_driver maro_driver_zmq;

/*
 * poll(2) for the driver's sockets (items[i].socket from handle(), such
 * as maro_inbox_pollable() and maro_outbox_pollitems() give) and plain
 * descriptors (socket NULL, fd).  A socket's MARO_POLLIN may be reported
 * before its receive finds the message already taken: receive until it says
 * none, as with zmq_poll.  timeout_ms: -1 for none; any other negative is 0
 * (a deadline already past; maro_wait_ms() gives the right one).  Returns
 * how many items are ready, or -1 (errno).
 */
int maro_poll(struct maro_ctx *c, struct maro_pollitem *items, int n, long timeout_ms);
/* The text of err, the transport's own errors (ZeroMQ's) among them. */
const char *maro_transport_strerror(int err);
/*
 * Are n more descriptors (at most 8) to be had now?  0 when the process
 * is out of them (EMFILE, ENFILE).  A connection costs two: its socket's
 * mailbox, then the connection its I/O thread opens, which libzmq retries
 * for ever, and silently, when it fails for want of one.
 */
int maro_fds_free(int n);

/* Is this endpoint one a group member may advertise? (tcp://host:port, ipc://path) */
int maro_endpoint_valid(const char *ep);

#endif
