/*
 * handler: the commands maro-dist runs on the messages that trigger an
 * event (maro-dist(1)), and the replies they write.
 *
 * A handler is sh -c CMD (child.h: its own process group, dies with us),
 * with MARO_NAME, MARO_TYPE, MARO_GROUP, MARO_EVENT and, when known,
 * MARO_REGISTRY and MARO_KEYFILE in its environment.  It reads the
 * triggering messages as CBOR, or with raw their payloads as lines (one
 * each, never more or less: the lines it writes back are paired with the
 * requests in order), and writes replies the same way.
 *
 *   run    once per trigger: its input from a file, its output read to
 *          its end; the messages are acknowledged when it exited 0 and
 *          every reply was queued.  One that failed (exited non-zero,
 *          was killed, wrote too much) answers each task request with a
 *          "failed" failure reply (reply.h: how it ended and the tail of
 *          its standard error, which is passed on to ours as it comes)
 *          and acknowledges it; a notification it failed is acknowledged
 *          (there is no one to answer: the tool says it)
 *   co     one long-lived process fed every trigger; each request waits
 *          for its answer, and is acknowledged when that went out
 *
 * Replies are queued on the host's outbox (a full window is waited for,
 * never dropped).  What goes wrong on the way is handed to the host's
 * note(): the tool says it; nothing here prints.
 */
#ifndef MARO_HANDLER_H
#define MARO_HANDLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "bundle.h"
#include "cborseq.h"
#include "hold.h"
#include "inbox.h"
#include "message.h"
#include "outbox.h"
#include "transport.h"

/* a handler's process group, after SIGTERM, before SIGKILL */
#define MARO_HANDLER_GRACE_US 500000
/* a run ended this long with its output still open: what it left in the background holds it */
#define MARO_HANDLER_HELD_US 1000000
/* the end of a failed run's standard error a failure reply carries, at most (bytes) */
#define MARO_HANDLER_TAIL 512
/* a coprocess owing answers and silent this long may be buffering them */
#define MARO_HANDLER_SILENT_US 5000000

/* What note() is told. */
enum maro_handler_what {
	MARO_HANDLER_REFUSED,	/* m, err: its payload cannot be input (acknowledged: no reply) */
	MARO_HANDLER_FEW_LINES,	/* raw: a run gave fewer lines than requests */
	MARO_HANDLER_BAD_CBOR,	/* offset, err: malformed output (a coprocess is then stopped) */
	MARO_HANDLER_SILENT,	/* count: a coprocess owes count answers and wrote nothing (once) */
	MARO_HANDLER_LONG_LINE,	/* offset, count (the limit): a coprocess's line too long: stopped */
	MARO_HANDLER_STRAY_LINE,	/* a coprocess's line no request waits for */
	MARO_HANDLER_NO_DEST,	/* a message with no destination: dropped */
	MARO_HANDLER_UNSENDABLE,	/* dest, errnum: it never can be sent */
	MARO_HANDLER_MALFORMED,	/* err: what it wrote is not a message */
	MARO_HANDLER_NOT_TEXT,	/* m (the request): a raw line not UTF-8: no reply */
	MARO_HANDLER_NOT_JSON,	/* m (the request), err: json_lines: a line not JSON: a failure reply */
	MARO_HANDLER_OUTPUT_HELD,	/* offset (bytes read): a run ended, a process it left holds its output */
};

struct maro_handler;

struct maro_handler_note {
	enum maro_handler_what what;
	const struct maro_handler *h;	/* NULL for a reply's faults */
	const struct maro_msg *m;
	const struct maro_err *err;
	uint64_t offset;
	size_t count;
	const char *dest;
	int errnum;
};

/* What a tool's handlers share. */
struct maro_handler_host {
	struct maro_ctx *c;
	struct maro_inbox *ib;		/* acknowledgements */
	struct maro_outbox *ob;		/* replies */
	struct maro_hold *hold;		/* the messages they are fed */
	const char *name;		/* this member's: replies come from it */
	const char *registry, *keyfile;	/* for their environment, or NULL */
	const char *dir;		/* their working directory (a bundle's), or NULL */
	int raw;
	int json_lines;			/* raw: each reply line is a JSON value, the reply's payload */
	const char *fail_prefix;	/* raw: a reply line starting so fails its request (the rest: why); or NULL */
	void (*note)(void *arg, const struct maro_handler_note *n);
	/* while a run works: now set after a second of silence, else when due */
	void (*beat)(void *arg, int now);
	/*
	 * while a reply waits for room in ob: waits for what ob waits on, at
	 * most until then (monotonic us), heartbeating when due; 0, or the
	 * tool's exit status when it must stop (a signal, its -W)
	 */
	int (*wait)(void *arg, int64_t until);
	void *arg;
	size_t unsent;			/* replies given up on when a signal came, or -W passed */
	size_t failed_requests, failed_notes;	/* of the last run that failed: answered, acknowledged */
	struct maro_buf reply;		/* a raw reply's payload */
};

struct maro_handler {
	const char *text, *cmd;		/* its event, as given, and its command */
	int co;
	char **env;
	const char *dir;		/* its working directory, or NULL */
	/* a coprocess */
	pid_t pid;			/* > 0 running, < 0 ended (not yet stopped) */
	int in, out;			/* its stdin (we write), its stdout (we read) */
	struct maro_buf wbuf;		/* bytes waiting for its stdin */
	int64_t silent_since;		/* requests handed over and nothing read since: when that began */
	int said_silent;
	struct maro_reader rd;
	struct maro_handler_wait {	/* a request waiting for its reply */
		uint8_t *p;
		size_t n;
		uint32_t peer;
		uint64_t seq;
		uint64_t idh;		/* its message_id's hash */
		struct maro_msg msg;	/* decoded from p once */
	} *wait;			/* wait[wfirst..nwait): answered from the front */
	size_t wfirst, nwait, waitcap;
};

/* How a run ended, besides its messages. */
enum maro_handler_end {
	MARO_HANDLER_DONE,	/* exited 0: its messages acknowledged, unless a reply was not sent */
	MARO_HANDLER_STOPPED,	/* by a signal (maro_signal) */
	MARO_HANDLER_OVER,	/* wrote more than max_item: stopped; its messages answered as failed */
	MARO_HANDLER_FAILED,	/* exited non-zero or was killed: wstatus; its messages answered as failed */
};

/*
 * A handler for event text running cmd (co: as a coprocess), its
 * environment made from x.  0, or -1 (ENOMEM).
 */
int maro_handler_init(struct maro_handler *h, const struct maro_handler_host *x, const char *text,
    const char *cmd, int co);

/*
 * Runs h once over the messages held that take marks.  0 with *end and
 * *wstatus, or -1 when it could not be started (why in err).
 */
int maro_handler_run(struct maro_handler_host *x, struct maro_handler *h, const unsigned char *take,
    enum maro_handler_end *end, int *wstatus, struct maro_err *err);

/*
 * Answers the task request of dl, which no handler will ever take, with
 * the "no handler" failure reply (reply.h), and acknowledges it.  0, or
 * -1 when it could not be queued (a signal, -W while it waited for room,
 * ENOMEM): then it stays unacknowledged.
 */
int maro_handler_no_handler(struct maro_handler_host *x, const struct maro_delivery *dl);
/*
 * Answers the task request of dl with a reply whose payload is the
 * encoded item at p (n bytes), or, with error, with a failure reply of
 * that error and text p; and acknowledges it.  As maro_handler_no_handler.
 */
int maro_handler_answer(struct maro_handler_host *x, const struct maro_delivery *dl,
    const char *error, const void *p, size_t n);
/* Answers the bundle request of dl (MARO_BUNDLE_TAG) from s: a chunk, or the "no bundle" failure reply.  As above. */
int maro_handler_bundle(struct maro_handler_host *x, struct maro_bundle_srv *s, const struct maro_delivery *dl);

/* Starts coprocess h.  0, or -1 (why in err). */
int maro_handler_co_start(struct maro_handler_host *x, struct maro_handler *h, struct maro_err *err);
/*
 * Hands the messages held that take marks to coprocess h; its requests
 * wait for their answers, with their bytes (their p in the hold set to
 * NULL: maro_hold_release keeps their ids as away).  0, or -1 ENOMEM.
 */
int maro_handler_co_feed(struct maro_handler_host *x, struct maro_handler *h, const unsigned char *take);
/*
 * Moves bytes between us and coprocess h, and sends the answers it wrote.
 * 0; -1 when it is gone; -2 when it wrote what cannot be paired (noted).
 */
int maro_handler_co_pump(struct maro_handler_host *x, struct maro_handler *h);
/* A resent copy of a request h has: where it came from last is kept.  1 when h has it. */
int maro_handler_co_resent(struct maro_handler *h, const struct maro_delivery *dl);
/*
 * Closes coprocess h's input, stops it and what it left in its group,
 * and frees h.  Requests it never answered stay unacknowledged.
 */
void maro_handler_free(struct maro_handler *h);

/*
 * maro-dist's handlers, in the order given: each an event and what is
 * done when it holds.  run is set up (maro_handler_set_start) for RUN and
 * CO, not for EXIT.
 */
#define MARO_HANDLER_MAX 32
enum maro_handler_mode { MARO_HANDLER_RUN, MARO_HANDLER_CO, MARO_HANDLER_EXIT };
struct maro_handler_set {
	struct maro_handler_entry {
		struct maro_event ev;
		enum maro_handler_mode mode;
		struct maro_handler run;	/* its command, and its process when a coprocess */
	} h[MARO_HANDLER_MAX];
	int n;
};

/*
 * Sets up the command of each handler of s and starts the coprocesses, in
 * order.  0, or -1 at the first that fails (why in err: "out of memory"
 * for ENOMEM).
 */
int maro_handler_set_start(struct maro_handler_set *s, struct maro_handler_host *x, struct maro_err *err);
/* A resent copy of a request a coprocess of set s has (a maro_hold_put callback).  1 when found. */
int maro_handler_set_resent(void *s, const struct maro_delivery *dl);
/*
 * Is m a task request that no unit of any handler's event of s matches
 * (source and tag), that none will ever take?  1 when it is.
 */
int maro_handler_set_untaken(const struct maro_handler_set *s, const struct maro_msg *m);
/* Frees the handlers of s (maro_handler_free): coprocesses closed, stopped and reaped. */
void maro_handler_set_free(struct maro_handler_set *s);

#endif
