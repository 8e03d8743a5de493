/*
 * outbox: reliable delivery to named peers (maro(7), DELIVERY).
 *
 * Messages are queued per destination name, sent in batches, kept until
 * the receiver acknowledges them and resent when no acknowledgement comes
 * (the receiver dropped them, died, or was replaced by a new process under
 * the same name: the outbox looks the name up again when a peer stalls;
 * see maro_outbox_on_moved for an owner that must know of a new holder).
 * Names are looked up once and cached, not once per message.  At most
 * ctx->window messages are unacknowledged per destination: a slow receiver
 * slows the sender down.
 *
 * A destination that is not live is waited for.  A private destination
 * ('~' names: reply inboxes) that is not live has gone for good: its
 * messages fail at once, reported through the fail callback.
 */
#ifndef MARO_OUTBOX_H
#define MARO_OUTBOX_H

#include <stddef.h>
#include <stdint.h>


#include "message.h"
#include "transport.h"

struct maro_outbox;

typedef void maro_outbox_fail_fn(void *arg, const char *dest, const uint8_t *msg, size_t n,
    const char *why);

/* Called for each message when its receiver acknowledged it. */
typedef void maro_outbox_ack_fn(void *arg, const char *dest, const uint8_t *msg, size_t n);
/*
 * dest's name is held by a new process (pid, start, host or endpoint
 * differ from the one connected to): the unacknowledged messages to the
 * old holder, n of them (0 or more), were dropped, not resent.  Called
 * with the outbox's arg; it must not call the outbox.
 */
typedef void maro_outbox_moved_fn(void *arg, const char *dest, size_t n);

struct maro_outbox *maro_outbox_new(struct maro_ctx *c, maro_outbox_fail_fn *fail,
    maro_outbox_ack_fn *ack, void *arg);
void maro_outbox_free(struct maro_outbox *ob);
/*
 * By default a destination whose name moved to a new holder (a restarted
 * receiver) gets again what the old one did not acknowledge: delivery is
 * an acknowledgement, and a new receiver may see a message twice.  An
 * owner that counts its sends to each receiver (maro-scatter's attempts)
 * sets fn: those messages are dropped instead, as by maro_outbox_drop, and
 * fn is told; later messages go to the new holder.
 */
void maro_outbox_on_moved(struct maro_outbox *ob, maro_outbox_moved_fn *fn);
/*
 * The owner's own listing says e holds dest: when the outbox is connected
 * to another holder of the name, that one is gone, and the outbox does as
 * when its own look-up finds it (above), at once.  1 when it did, else 0.
 */
int maro_outbox_holder(struct maro_outbox *ob, const char *dest, const struct maro_entry *e);
/*
 * Queues one encoded message for dest (copied).  0, or -1 with EAGAIN when
 * the window to dest is full (run the outbox, then try again), EINVAL for a
 * name that cannot be valid.
 */
int maro_outbox_put(struct maro_outbox *ob, const char *dest, const uint8_t *p, size_t n);
/*
 * The same in two steps, for a message encoded in place: room for up to n
 * bytes to dest (NULL with errno as put fails), then commit the n bytes
 * written there (no more than asked for), before any other outbox call.
 */
uint8_t *maro_outbox_begin(struct maro_outbox *ob, const char *dest, size_t n);
void maro_outbox_commit(struct maro_outbox *ob, size_t n);
/* begin, with dest's maro_hash64 known (dest_h; 0: not known): a caller that sends to the same peers again and again hashes each name once. */
uint8_t *maro_outbox_begin_h(struct maro_outbox *ob, const char *dest, uint64_t dest_h, size_t n);
/*
 * The same for a message with a session_id, saying where its text is
 * (offset, length): maro_outbox_settle looks no more.  Returns the
 * message's number in its destination's window, for maro_outbox_settle_at.
 */
uint64_t maro_outbox_commit_sid(struct maro_outbox *ob, size_t n, size_t sid_off, size_t sid_n);
/*
 * For a caller that takes whatever its input holds and cannot wait for a
 * window: queues m for dest whatever its window, in order with what it
 * staged before.  It goes straight into dest's window when nothing is
 * staged and the window has room; else it is staged (encoded, copied into
 * the outbox) until maro_outbox_flush moves it in.  0, or -1 with errno
 * (ENOMEM, or as put fails but EAGAIN).
 */
int maro_outbox_stage(struct maro_outbox *ob, const char *dest, const struct maro_msg *m);
/*
 * Moves staged messages, oldest first, into their windows until one is
 * full: 1 when none is left staged, 0 when some wait (run the outbox, then
 * flush again), -1 with errno as put fails and the destination in name.
 */
int maro_outbox_flush(struct maro_outbox *ob, char name[MARO_NAME_MAX + 1]);
/* Messages staged and not yet in a window (not counted by maro_outbox_pending). */
size_t maro_outbox_staged(const struct maro_outbox *ob);
/*
 * Gives up on every message queued for dest (its peer died and its work
 * goes elsewhere): they are freed without callbacks.  Returns how many.
 */
size_t maro_outbox_drop(struct maro_outbox *ob, const char *dest);
/*
 * A reply in session_id came back from dest: the requests to dest in that
 * session were delivered, whether or not their acknowledgement arrives.
 * Returns how many were settled.
 */
size_t maro_outbox_settle(struct maro_outbox *ob, const char *dest, struct maro_str session_id);
/*
 * The same, when the request went out as message at (what
 * maro_outbox_commit_sid returned): that one is settled without looking
 * at the others in flight to dest, which are looked at only when it is not
 * there (settled already, or sent again since).  dest_h as for begin_h.
 */
size_t maro_outbox_settle_at(struct maro_outbox *ob, const char *dest, uint64_t dest_h,
    struct maro_str session_id, uint64_t at);
/* The same for a reply: to its source, in its session. */
size_t maro_outbox_settle_reply(struct maro_outbox *ob, const struct maro_msg *reply);
/*
 * From here on the caller waits on acknowledgements (its input ended, or
 * acks are what frees its work): frames ask their receivers to acknowledge
 * at once, not after up to MARO_ACK_DELAY_US (maro(7), WIRE PROTOCOL).
 */
void maro_outbox_prompt(struct maro_outbox *ob);
/* Fills up to max poll items for the sockets that have work; returns how many. */
int maro_outbox_pollitems(struct maro_outbox *ob, struct maro_pollitem *items, int max);
/* Reads acknowledgements, sends, resends, looks stalled peers up again.  0 or -1 (errno). */
int maro_outbox_run(struct maro_outbox *ob);
/* When the outbox next wants to run even if no socket is ready (monotonic us), or INT64_MAX. */
int64_t maro_outbox_deadline(const struct maro_outbox *ob);
/*
 * The errno of the last connection to a destination that could not be made
 * since the last call (EMFILE: out of descriptors), its name in name; 0
 * when none failed.  The outbox tries again at the destination's next
 * look-up.  EKEYREJECTED: the peer refused the connection for want of the
 * group key (it has one and we none, or the other way, or another group's;
 * maro_outbox_refusal says which), and the messages queued for it failed
 * (the fail callback, with why); later ones fail so too at the next
 * handshake, which libzmq retries.  A refusal is seen within a second of
 * connecting.
 */
int maro_outbox_error(struct maro_outbox *ob, char name[MARO_NAME_MAX + 1]);
/* How the last refusal (EKEYREJECTED) came about, for people. */
const char *maro_outbox_refusal(const struct maro_outbox *ob);
/* Messages queued and not yet acknowledged. */
size_t maro_outbox_pending(const struct maro_outbox *ob);
/*
 * Bytes the windows hold: their slots and the buffers kept in them.  A
 * destination with nothing queued for 100 ms gives them back, down to a
 * few slots without buffers (maro_outbox_run; maro_outbox_deadline says
 * when).
 */
size_t maro_outbox_held(const struct maro_outbox *ob);
/* Messages queued and not yet sent once (a best-effort sender waits for these only). */
size_t maro_outbox_unsent(const struct maro_outbox *ob);
/*
 * How long, at maro_outbox_free, each connection may take to pass on what
 * it holds (ms; default 0: it is dropped, and resent by nobody).
 */
void maro_outbox_linger(struct maro_outbox *ob, int ms);
/* Can dest take another message now? */
int maro_outbox_ready(struct maro_outbox *ob, const char *dest);
uint64_t maro_outbox_acked(const struct maro_outbox *ob);
uint64_t maro_outbox_resent(const struct maro_outbox *ob);
/*
 * Calls fn for every destination with messages queued whose name had no
 * live entry at its last look-up (nobody holds it, or its holder died),
 * with since when (monotonic us); returns how many.  fn may be NULL.
 */
size_t maro_outbox_foreach_missing(struct maro_outbox *ob,
    void (*fn)(void *arg, const char *dest, int64_t since), void *arg);
/* Calls fn for every message not yet acknowledged (for reports at a deadline). */
void maro_outbox_foreach_pending(struct maro_outbox *ob,
    void (*fn)(void *arg, const char *dest, const uint8_t *msg, size_t n), void *arg);

#endif
