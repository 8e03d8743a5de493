/*
 * loop: the one event loop of the tools, in the manner of skalibs' iopause.
 *
 * At each turn a tool says what it waits on (an inbox, a descriptor, the
 * sockets of an outbox) and by when it must wake; the loop owns the poll
 * array (it grows: no size fixed in a tool), the next wake-up (never past
 * -W), the heartbeat, and one rule for a signal and the deadline.  The
 * tool keeps its own order of work between two waits, which is deliberate
 * (maro-recv acknowledges only what it has written):
 *
 *	maro_loop_begin(&l);			nothing waited on yet
 *	slot = maro_loop_inbox(&l, ib);		what this turn waits on
 *	maro_loop_at(&l, t);			a timer of the tool's
 *	maro_loop_wait(&l);			until one is ready, a timer, -W or a signal
 *	if (maro_loop_ready(&l, slot)) ...
 *	if ((status = maro_loop_stop(&l)) != 0) break;
 *
 * Like tool, it is part of the front end: a poll that fails for another
 * reason than a signal dies (70).
 */
#ifndef MARO_LOOP_H
#define MARO_LOOP_H

#include <stdint.h>

#include "inbox.h"
#include "outbox.h"
#include "transport.h"

/* What an item waits for, and what maro_loop_ready says came. */
enum {
	MARO_LOOP_IN = 1,	/* a message, or bytes to read */
	MARO_LOOP_OUT = 2,	/* room to write */
	MARO_LOOP_ERR = 4,	/* a descriptor's error or hang-up (only in what came) */
};

struct maro_loop {
	struct maro_ctx *c;
	int64_t deadline;	/* -W, monotonic us; INT64_MAX: none */
	int64_t now;		/* the clock when the last wait (or begin) ended */
	int64_t wake;		/* this turn's wake-up: the first timer, else the deadline */
	int64_t next_beat;	/* the heartbeat's; INT64_MAX: the loop does not beat */
	int soon;		/* this turn polls without waiting */
	int last_words;		/* after maro_loop_until: a signal no longer ends a wait */
	struct maro_pollitem *items;	/* the poll array */
	int n, cap;
};

/*
 * A loop for the tool's context c, bounded by deadline (maro_tool_open's);
 * with beats, it keeps the heartbeat of c's entries (maro_loop_beat), the
 * first one due from now (maro_tool_next_beat).
 */
void maro_loop_init(struct maro_loop *l, struct maro_ctx *c, int64_t deadline, int beats);
void maro_loop_free(struct maro_loop *l);

/* Starts a turn: nothing waited on, the wake-up at the deadline; l->now is read. */
void maro_loop_begin(struct maro_loop *l);
/* Waits on ib's messages this turn.  Returns its slot (maro_loop_ready). */
int maro_loop_inbox(struct maro_loop *l, struct maro_inbox *ib);
/* Waits on descriptor fd for events (MARO_LOOP_IN, MARO_LOOP_OUT).  Its slot. */
int maro_loop_fd(struct maro_loop *l, int fd, int events);
/* Waits on a driver's socket (transport.h handle()) for events.  Its slot. */
int maro_loop_socket(struct maro_loop *l, void *handle, int events);
/*
 * Waits on ob's connections (a reply or an acknowledgement to read, room
 * for what waits to go) and wakes for its next resend or look-up.
 */
void maro_loop_outbox(struct maro_loop *l, struct maro_outbox *ob);
/* Wakes this turn at when (monotonic us) at the latest. */
void maro_loop_at(struct maro_loop *l, int64_t when);
/* This turn only looks at what is ready, without waiting (work is left). */
void maro_loop_soon(struct maro_loop *l);

/*
 * Waits until an item is ready, the wake-up or the deadline comes, or a
 * signal; then sets l->now.  A signal that came before the wait, even
 * between the caller's last look and the poll, ends it at once (a
 * self-pipe, maro_cli_signal_fd), but not after maro_loop_until.  A poll
 * that fails otherwise dies (70).
 */
void maro_loop_wait(struct maro_loop *l);
/* What came for slot at the last wait (MARO_LOOP_IN, OUT, ERR), 0 when nothing. */
int maro_loop_ready(const struct maro_loop *l, int slot);

/* The status to leave with after SIGINT, SIGTERM or SIGHUP (130, 143, 129), else 0. */
int maro_loop_signalled(const struct maro_loop *l);
/* Reads the clock again into l->now (after work that took time); returns it. */
int64_t maro_loop_tick(struct maro_loop *l);
/* Whether the deadline has come (l->now is read again). */
int maro_loop_expired(struct maro_loop *l);
/* Whether the loop ends: the signal's status, else 124 at the deadline, else 0. */
int maro_loop_stop(struct maro_loop *l);

/*
 * The run is ending (a signal came) and has until then for its last words:
 * the deadline is until from now on, whatever -W said, no heartbeat is
 * due any more, and the signal that came no longer ends a wait.
 */
void maro_loop_until(struct maro_loop *l, int64_t until);

/*
 * For a loop that beats: the heartbeat (maro_tool_beat, with what ib
 * refused since the last) when it is due at l->now.  Every wait wakes for
 * the next one.  -1 (errno EEXIST) when the name was taken over, else 0.
 */
int maro_loop_beat(struct maro_loop *l, struct maro_inbox *ib);

#endif
