/*
 * workq: the work queue of maro-scatter.  Tasks (a request each, encoded
 * once) wait in a queue for a peer; each peer holds at most a window of
 * them unanswered; a task whose peer left or that timed out goes back to
 * the queue, or with retries is given up; with ordered output the replies
 * are held until the tasks before them are finished.
 *
 * Bookkeeping only: it neither sends nor receives nor prints.  Its user
 * (lib/scatter) sends what maro_workq_head names and says so with
 * maro_workq_sent, hands in what came back (maro_workq_answered,
 * maro_workq_reply); the tool is told through the callbacks of the
 * replies to write and the tasks given up.
 *
 * Tasks are numbered from 0 in the order they were added, over the whole
 * run.  A task lives until its reply is written (or it is given up and,
 * with ordered output, its turn came); then it is freed, so that a long run
 * holds only the tasks still open.  The task and peer pointers it returns
 * stay valid until the next call that may finish a task or add a peer.
 */
#ifndef MARO_WORKQ_H
#define MARO_WORKQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "message.h"
#include "registry.h"
#include "strset.h"

/* a task's peer when it is on no peer: queued, or sent to its own destination */
#define MARO_WORKQ_NO_PEER ((size_t)-1)
/* the longest session id a task may have */
#define MARO_WORKQ_SESSION_MAX 127

struct maro_workq_task {
	uint8_t *msg;		/* the request as added; NULL once answered */
	size_t n;
	struct maro_dest_at dest;	/* where a peer's name goes into msg */
	char session[MARO_WORKQ_SESSION_MAX + 1];
	size_t session_n;
	uint64_t session_h;	/* maro_hash64 of session: hashed once, looked up by it twice */
	uint64_t out_at;	/* the caller's: its place in its peer's window (maro_outbox_settle_at) */
	size_t peer;		/* where it is in flight, or MARO_WORKQ_NO_PEER; given up: of its last attempt */
	size_t failed_at;	/* back in the queue: the peer of its failed attempt (or MARO_WORKQ_NO_PEER) */
	int sent;		/* known by its session and owed a reply: from its first send */
	int done;		/* answered, or given up */
	int failed;		/* given up */
	unsigned attempts;	/* sends that failed: its peer left, or it timed out */
	unsigned sends;		/* sends, the one answered among them */
	int64_t first_at;	/* when it first went out */
	int64_t sent_at;	/* when it last went to a peer */
	uint64_t seq;		/* the caller's: its place in the input */
	uint64_t hash;		/* the caller's: what it is, for a job log */
	uint8_t *reply;		/* held for ordered output */
	size_t reply_n;
	uint8_t req[];
};

struct maro_workq_peer {
	char name[MARO_NAME_MAX + 1];
	uint64_t name_h;	/* maro_hash64 of name: the outbox finds the peer by it (maro_outbox_begin_h) */
	int live;		/* 1, or 0 once it left; | 2 from maro_workq_peers_begin until seen */
	unsigned inflight;	/* tasks sent to it and not yet answered */
	int64_t answered_at;	/* the caller's: when it last answered (0: never) */
	/* the module's: its place among the peers open for work (or NO_PEER), its turn there */
	size_t at;
	uint64_t turn;
};

/* Writes one reply, in order when the queue is ordered. */
typedef void maro_workq_put_fn(void *arg, const uint8_t *p, size_t n);
/*
 * The reply (p, n) of task i was just written (put): in input order when
 * the queue is ordered, so at once or later.  t is freed after the call.
 */
typedef void maro_workq_written_fn(void *arg, size_t i, const struct maro_workq_task *t,
    const uint8_t *p, size_t n);
/*
 * Task i was given up (why: its last failed attempt).  t->msg is still the
 * request; t is freed after the call (or held until its turn when ordered).
 */
typedef void maro_workq_given_up_fn(void *arg, size_t i, const struct maro_workq_task *t,
    const char *why);

struct maro_workq {
	/* the caller's, set before the first task (the rest zeroed) */
	unsigned window;	/* unanswered tasks per peer, 1 or more */
	unsigned retries;	/* give a task up after this many failed attempts; 0: never */
	int ordered;		/* hold replies for input order */
	maro_workq_put_fn *put;	/* the replies written by maro_workq_reply and _flush */
	maro_workq_given_up_fn *given_up;	/* may be NULL */
	maro_workq_written_fn *written;	/* may be NULL */
	void *arg;
	/* read only for the caller */
	size_t ntasks, ndone, nfailed;	/* added, finished (answered or given up), given up */
	uint64_t nfails;		/* attempts that failed (maro_workq_fail), a given-up
					   task's last included */
	struct maro_workq_peer *peers;	/* peer p is peers[p], p < npeers */
	size_t npeers;
	/* the rest is the module's */
	struct maro_workq_task **tasks;	/* task i is tasks[i - base], or NULL once freed */
	size_t base, cap, first, next_out, rr;
	struct maro_strset by_session;	/* session id -> task, of the tasks sent */
	struct maro_strset by_name;	/* a peer's name -> p */
	size_t *open;		/* the peers open for work, a heap by (inflight, turn), in q->order */
	size_t nopen;
	int order;		/* maro_workq_order */
	uint64_t turns;
	size_t *queue;		/* tasks waiting for a peer: queue[head .. nqueue) */
	size_t head, nqueue, queue_cap;
};

/* Frees every task and peer; q is zeroed (its settings with it). */
void maro_workq_free(struct maro_workq *q);

/*
 * Adds a task, at the back of the queue: its request (n bytes, copied;
 * dest as maro_msg_encode_dest gave it) and its session id.  Its number
 * (q->ntasks before), or -1 with ENOMEM, or EINVAL for a session id longer
 * than MARO_WORKQ_SESSION_MAX.
 */
ssize_t maro_workq_add(struct maro_workq *q, const uint8_t *req, size_t n,
    const struct maro_dest_at *dest, struct maro_str session);
/* Task i, or NULL once it is freed (or for a number never given). */
struct maro_workq_task *maro_workq_task(const struct maro_workq *q, size_t i);
/* Tasks in the queue, finished ones not yet passed over included. */
size_t maro_workq_queued(const struct maro_workq *q);
/* 1 with *i, the first task in the queue that is not finished (passing the others), or 0. */
int maro_workq_head(struct maro_workq *q, size_t *i);
/* Takes the head of the queue out of it: the caller sent it. */
void maro_workq_pop(struct maro_workq *q);

/*
 * The live peer with the fewest tasks in flight, below the window, taking
 * turns on ties (or as maro_workq_order says); with past_window and none
 * below it, the next live peer in turn.  MARO_WORKQ_NO_PEER when there is
 * none.  The peers below their
 * window are kept in a heap: a pick costs the same whatever their number
 * (a scatter over a thousand peers), and a task sent or answered log of it.
 */
size_t maro_workq_pick(struct maro_workq *q, int past_window);
/*
 * As maro_workq_pick, for task i: one whose last attempt failed at a peer
 * (a failure reply, a timeout) goes to another peer below its window when
 * there is one, to the same one only when it alone has room.
 */
size_t maro_workq_pick_for(struct maro_workq *q, size_t i, int past_window);
/* How maro_workq_pick chooses among the peers below their window (maro_workq_order). */
enum {
	MARO_WORKQ_TURNS,	/* fewest tasks in flight, taking turns on ties (the default) */
	MARO_WORKQ_LAST,	/* fewest tasks in flight, the last to move on ties */
	MARO_WORKQ_PACKED	/* most tasks in flight, the last to move on ties */
};
/*
 * Sets the order of the pick.  LAST spreads the tasks as TURNS does, but
 * a peer that just answered gets the next one before a peer that has been
 * idle; PACKED fills a peer's window before the next peer gets any: the
 * work goes to as few peers as keep up with it.
 */
void maro_workq_order(struct maro_workq *q, int order);
/*
 * Task i went to peer p (or MARO_WORKQ_NO_PEER: its own destination) at
 * now.  From its first send its session finds it (maro_workq_answered).
 * 0, or -1 with ENOMEM.
 */
int maro_workq_sent(struct maro_workq *q, size_t i, size_t p, int64_t now);
/*
 * The task of this session still open (sent, not finished): 1 with its
 * number in *i, or 0 (a reply that came twice, or late, or for no task).
 */
int maro_workq_find(const struct maro_workq *q, struct maro_str session, size_t *i);
/*
 * Task i, open, is answered: it is finished, its peer has one task fewer
 * in flight.  Returns it; hand its reply to maro_workq_reply next.
 */
struct maro_workq_task *maro_workq_answer(struct maro_workq *q, size_t i);
/* find, then answer: the task, or NULL when no open task has that session. */
struct maro_workq_task *maro_workq_answered(struct maro_workq *q, struct maro_str session,
    size_t *i);
/*
 * The reply (p, n; or none, NULL) of task i, answered: written through
 * q->put at once, or when ordered once the tasks before it are finished;
 * then the task is freed.  0, or -1 with ENOMEM (the reply is not held).
 */
int maro_workq_reply(struct maro_workq *q, size_t i, const uint8_t *p, size_t n);
/*
 * Task i, sent, failed an attempt (why): its peer has one task fewer in
 * flight, and it goes back to the queue, or once it failed q->retries
 * times it is given up (q->given_up) and finished.  0, or -1 with ENOMEM
 * (it could not go back to the queue).
 */
int maro_workq_fail(struct maro_workq *q, size_t i, const char *why);
/*
 * 1 with *i, the first task from *i on that is in flight at a peer since
 * before now - timeout; else 0.
 */
int maro_workq_overdue(const struct maro_workq *q, int64_t now, int64_t timeout, size_t *i);
/* The oldest task not finished (or q->ntasks): every task before it is. */
size_t maro_workq_first(const struct maro_workq *q);

/*
 * Peers from a listing of the live ones: maro_workq_peers_begin, then
 * maro_workq_peer_seen for each listed, then maro_workq_peer_gone, then
 * maro_workq_peer_lost on each it gives.
 */
void maro_workq_peers_begin(struct maro_workq *q);
/*
 * The peer is live (added if new): 1 when it is new, else 0 (a peer that
 * left and is listed again is live again, and not new); -1 with ENOMEM.
 */
int maro_workq_peer_seen(struct maro_workq *q, const char *name);
/* The peer of that name, or MARO_WORKQ_NO_PEER. */
size_t maro_workq_peer_find(const struct maro_workq *q, const char *name);
/*
 * A peer not in the listing and not yet given to maro_workq_peer_lost
 * since maro_workq_peers_begin (one that had left already among them), or
 * MARO_WORKQ_NO_PEER.
 */
size_t maro_workq_peer_gone(const struct maro_workq *q);
/*
 * Peer p left: it is not live, and each of its unanswered tasks failed an
 * attempt ("its peer left").  0 with *inflight, how many tasks it had in
 * flight; or -1 with ENOMEM.
 */
int maro_workq_peer_lost(struct maro_workq *q, size_t p, unsigned *inflight);
/*
 * Peer p's process is gone and a new one holds its name: as
 * maro_workq_peer_lost (its unanswered tasks failed an attempt, "its peer
 * left"), but it stays live, and the new holder gets work.
 */
int maro_workq_peer_replaced(struct maro_workq *q, size_t p, unsigned *inflight);

/*
 * The progress of a run secs seconds old, for people: "answered/total
 * done, N given up, rate/s" (the rate of the tasks finished, answered or
 * given up), and the time left at that rate once the total is known
 * (total_known; until then the total is the tasks added so far, with a
 * '+'; under a second "<1s left").  When no task finished for idle
 * seconds, 2 or more and twice the time that was left (at the rate of
 * then) when the last one did, no time left is told but "none finished
 * for 12s": a run stuck on its last tasks is not about to end.
 */
void maro_workq_progress(const struct maro_workq *q, double secs, double idle, int total_known,
    char *out, size_t len);

/*
 * Ordered output at the end of a run: writes the replies held behind the
 * tasks still open, in order, leaving out the holes.
 */
void maro_workq_flush(struct maro_workq *q);

#endif
