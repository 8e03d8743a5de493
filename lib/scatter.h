/*
 * scatter: tasks over peers, the engine of maro-scatter.  The tasks (made
 * by taskin, queued by workq) go through an outbox to the live peers whose
 * name starts with a prefix, as the registry lists them, each peer holding
 * at most a window of them unanswered; or without a prefix each to its own
 * destination.  The replies come back through a requester; with async the
 * acknowledgements stand for them.
 *
 * Nothing here prints: the -v lines go through trace.h, the rest through
 * the callbacks of the work queue (q.put, q.given_up) and sc->left, each
 * called with q.arg.
 */
#ifndef MARO_SCATTER_H
#define MARO_SCATTER_H

#include <stddef.h>
#include <stdint.h>


#include "joblog.h"
#include "outbox.h"
#include "requester.h"
#include "stats.h"
#include "taskin.h"
#include "transport.h"
#include "workq.h"

/* A peer left with inflight unanswered tasks (more than 0): they go to the others. */
typedef void maro_scatter_left_fn(void *arg, const char *peer, unsigned inflight);

struct maro_scatter {
	/* the caller's, set before maro_scatter_start (the rest zeroed) */
	struct maro_ctx *c;
	const char *prefix;	/* a work queue over these peers; NULL: each task to its destination */
	int async;		/* no replies: an acknowledged task is done, and written (q.put) */
	int64_t task_timeout;	/* us an attempt may take; 0: any time */
	maro_scatter_left_fn *left;	/* may be NULL */
	int hash;		/* each task gets its hash (maro_joblog_hash), for a job log */
	const struct maro_joblog *resume;	/* with hash: the tasks it has done are not run; may be NULL */
	const char *resume_name;	/* its name, for the messages */
	struct maro_workq q;	/* its settings and callbacks */
	struct maro_taskin in;	/* its settings, reply_to set by maro_scatter_start */
	struct maro_requester rq;	/* opened by the caller unless async */
	/* read only for the caller */
	struct maro_outbox *ob;
	uint64_t delivered;	/* tasks acknowledged by their peer */
	/* the input, as maro_scatter_take read it (the caller may end it, with its own error) */
	int want_input;		/* the reader holds no whole item: read more */
	int input_done;		/* the input ended (the total is known), or an error ended it */
	int input_bad;		/* the input is not one to run (malformed, not the log's): input_error says why */
	char input_error[512];
	size_t skipped;		/* tasks not added: sc->resume has them done */
	/* the module's */
	int64_t next_refresh, next_check;
	int64_t refresh_took;		/* how long the last look at the members took, us */
	int64_t dry_since;	/* the input has had nothing more since then (0: it has) */
	int after_pause;	/* the last take found input after a pause */
	int capped;		/* the tasks open are capped (maro_scatter_round) */
	unsigned lifted;	/* the cap doubled this many times (maro_scatter_round) */
	int64_t turn_us;	/* a task's turn at its peer, on average (maro_scatter_round); 0: not known yet */
	int64_t quiet_since;	/* the last reply that counted a turn, or the last doubling */
	size_t nhosts;		/* the hosts the peers run on, at the last look (the cap is per host) */
	int nomem;		/* a peer's new holder was not dealt with for want of memory */
	int64_t started_us;	/* maro_scatter_start: monotonic us, and the wall clock's s */
	int64_t started_s;
};

/*
 * Opens the outbox (sc->ob) and sets the replies' address of the tasks
 * (the requester's inbox, or with async the member's name, given); the
 * requester's inbox, opened by the caller, keeps no message-id filter and
 * holds its acks MARO_REPLY_ACK_DELAY_US.  0, or -1 with ENOMEM.
 */
int maro_scatter_start(struct maro_scatter *sc, const char *name);
/* Closes the outbox and the requester, frees the tasks. */
void maro_scatter_end(struct maro_scatter *sc);
/*
 * Reads ahead: the items r holds (taskin) become queued tasks
 * (maro_scatter_add) while fewer than max are queued (while the tasks come
 * back quickly, and fewer than 16 windows' worth are open: see
 * maro_scatter_round).  1 if it added any,
 * else 0; an item that cannot be a task, or that is not the one sc->resume
 * has at its place, or an input that ends before the last task
 * sc->resume has, ends the input with an error.  -1 with ENOMEM.
 */
int maro_scatter_take(struct maro_scatter *sc, struct maro_reader *r, size_t max);
/*
 * Adds the task of one input item (taskin), numbered sc->in.seq: 0; 1
 * when sc->resume has it done (it is not added); 2 when sc->resume has
 * another task at that place (it is not added; err says so); or -1 with
 * EINVAL and err for an item that cannot be a task, or with ENOMEM.
 */
int maro_scatter_add(struct maro_scatter *sc, const uint8_t *p, size_t n, struct maro_err *err);
/*
 * With a prefix, looks the peers up every 250 ms (or with fresh, new work
 * after a pause in the input of 20 ms or more, when the last look is 20 ms
 * old; not at every read of a steady input): a peer that joined gets work, one that
 * left gives its unanswered tasks back (sc->left).  A peer is a process,
 * not a name: one whose name a new process holds (a worker restarted under
 * its name) left too, whether this look or the outbox's own finds it
 * first, and its tasks are not sent to the new one uncounted.  A registry
 * that does not answer changes nothing.  0, or -1 with ENOMEM.
 */
int maro_scatter_peers(struct maro_scatter *sc, int64_t now, int fresh);
/*
 * With a task timeout, every tenth of it (at most every 100 ms): the tasks
 * a peer has held that long fail an attempt (workq: back to the queue, or
 * given up).  0, or -1 with ENOMEM.
 */
int maro_scatter_timeouts(struct maro_scatter *sc, int64_t now);
/*
 * Gives work: sends the tasks of the queue, re-queued ones first, while a
 * peer has room.  1 if it sent any, 0 if not, -1 with ENOMEM.
 */
int maro_scatter_dispatch(struct maro_scatter *sc);
/* Takes the replies waiting: 1 if there were any, 0 if not, -1 with ENOMEM. */
int maro_scatter_replies(struct maro_scatter *sc);
/* The peers matching the prefix that are live (as last read). */
size_t maro_scatter_live(const struct maro_scatter *sc);
/* Tasks not answered (with async: not delivered). */
size_t maro_scatter_missing(const struct maro_scatter *sc);
/*
 * The tasks not finished, in *open (sent at least once: owed a reply, or
 * with async an acknowledgement) and *waiting (read ahead, never sent).
 */
void maro_scatter_unfinished(const struct maro_scatter *sc, size_t *open, size_t *waiting);
/*
 * Sets what a heartbeat publishes (stats.h) from the queue: tasks answered
 * and given up, those at a peer, and the window of the live peers; read at
 * heartbeat time, not counted per task.  With a reply inbox (not async),
 * also the job (maro_scatter_job) in its entry (maro_registry_set_job:
 * the first one is written at once).  Call it before each heartbeat.
 */
void maro_scatter_publish(const struct maro_scatter *sc, int64_t now);
/* The job's figures at now (monotonic us), as a heartbeat publishes them. */
void maro_scatter_job(const struct maro_scatter *sc, int64_t now, struct maro_stats_job *j);
/*
 * Appends the job log record (joblog.h) of task t, ended now: done, its
 * reply (n bytes) at reply, or given up (why; reply NULL).  0, or -1 with
 * ENOMEM.
 */
int maro_scatter_record(const struct maro_scatter *sc, const struct maro_workq_task *t,
    const uint8_t *reply, size_t n, const char *why, struct maro_buf *out);
/* The payload of task t in diagnostic notation, cut at 200 bytes with "...", in b: a string ("?" if none). */
const char *maro_scatter_payload(const struct maro_workq_task *t, struct maro_buf *b);
/*
 * Appends task t, given up (why), as a new message to send again
 * (maro_taskin_unsent) that says where it failed: a key "failed" whose
 * value is a map of its place in the input ("line" with payload lines,
 * else "message"), "attempts", "why" and the "worker" of its last attempt.
 * 0, or -1 with err or ENOMEM.
 */
int maro_scatter_unsent(const struct maro_scatter *sc, const struct maro_workq_task *t,
    const char *why, struct maro_buf *out, struct maro_err *err);
/* The earlier of wake and when the engine has something to do next. */
int64_t maro_scatter_wake(const struct maro_scatter *sc, int64_t wake);
/*
 * One turn of the engine: the peers looked up, the tasks timed out, the
 * acknowledgements read, the input read ahead (maro_scatter_take, at most
 * max queued), work given (maro_scatter_dispatch) and sent.  1 if a task
 * moved, 0 if not, -1 with ENOMEM.
 *
 * How the work is spread (with a prefix, not async, over more than 16
 * peers): the tasks open (read ahead and not finished) are capped at 16
 * windows, or what keeps RATE_MIN (10,000) tasks a second going at the
 * turn a task takes (below), whichever is more, times the hosts the peers
 * run on (their entries' host: each host's processes are woken, and its
 * cores kept busy, apart from the others'), so that the work goes to
 * as few peers as keep up with it and the others stay idle (a thousand
 * workers on one host, each woken for one task, cost ten times what a few
 * woken for many do).  A peer that answered gets work again first
 * (MARO_WORKQ_LAST); once a task's turn at its peer (from its send, or the
 * peer's answer before when it waited behind that one; a peer's first
 * answer, which waited for its connections, does not count) is known, the
 * queue is packed (MARO_WORKQ_PACKED): each peer takes a run of tasks, up
 * to its window.  Tasks whose turn takes SLOW_US (20 ms) or more are work,
 * not wake-ups: they are spread over all the peers, taking turns, with no
 * cap.  While a task has been out STUCK_US (1 s) and no reply came for as
 * long, the cap doubles every STUCK_US, back to 16 windows once every task
 * out is younger: a task that hangs holds up no other for long.
 */
int maro_scatter_round(struct maro_scatter *sc, struct maro_reader *r, size_t max, int64_t now);
/* Is standard input to be read now, with at most max tasks queued? 1 when it is. */
int maro_scatter_wants_input(const struct maro_scatter *sc, size_t max);
/*
 * Reads what standard input has into r; a read that fails ends the input,
 * said in sc->input_error.  0, or -1 with errno then.
 */
int maro_scatter_fill(struct maro_scatter *sc, struct maro_reader *r);
/*
 * --joblog: opens the job log at path into log (maro_joblog_open), the
 * tasks hashed for it and, with resume, checked against what it had.  0,
 * or -1 as maro_joblog_open.
 */
int maro_scatter_joblog(struct maro_scatter *sc, struct maro_joblog_file *log, const char *path,
    int resume, struct maro_err *err);
/*
 * At a timeout or a signal, with q.ordered: the replies held behind a task
 * that got none go out after all (q.put), in the order of their tasks, so
 * that nothing answered (and acknowledged) is lost.  Within a last
 * second, past -W or a signal.
 */
void maro_scatter_flush_held(struct maro_scatter *sc);

#endif
