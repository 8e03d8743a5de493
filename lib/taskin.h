/*
 * taskin: the input of maro-scatter made task requests.  An item is a
 * CBOR message, or with a tag one line of payload (UTF-8 text, or a JSON
 * value); each becomes the request of a task session (maro(7), SESSIONS),
 * filled in and encoded once, for maro_workq_add.
 */
#ifndef MARO_TASKIN_H
#define MARO_TASKIN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cborseq.h"
#include "message.h"

struct maro_taskin {
	/* the caller's, set before the first item (the rest zeroed) */
	const char *tag;	/* payload lines with this tag; NULL: CBOR messages */
	int json_lines;		/* with tag: each line is a JSON value */
	int need_dest;		/* a message without a destination is malformed */
	const char *source;	/* filled in when absent; may be NULL */
	const char *reply_to;	/* where the replies (or with --async the acks) go */
	/* read only for the caller */
	uint64_t lineno;	/* with tag: the line of the last item (1 for the first) */
	uint64_t seq;		/* the last item's place: its line with tag, else its number from 1 */
	struct maro_buf req;	/* the last request made */
	struct maro_dest_at dest;	/* where its destination and session_id are */
};

/*
 * The next input item among the bytes r holds: 1 with *p, *n (valid until
 * the next call on r) and its stream offset *off; 0 when none is complete
 * yet or the input ended (r->eof); -1 with err for a malformed CBOR item.
 * With a tag an item is a line, its newline not counted, empty lines
 * passed over; the last line needs no newline.
 */
int maro_taskin_next(struct maro_taskin *in, struct maro_reader *r, const uint8_t **p, size_t *n,
    uint64_t *off, struct maro_err *err);
/*
 * Makes in->req, in->dest the request of one item: the message (or the
 * payload, with the tag) filled in (maro_msg_fill), of session type task,
 * stage request, replies to in->reply_to.  0; -1 with EINVAL and err (its
 * offset within the item) for an item that cannot be a task, or with ENOMEM.
 */
int maro_taskin_make(struct maro_taskin *in, const uint8_t *p, size_t n, struct maro_err *err);
/*
 * A request (n bytes) as a new message, appended to out: without its
 * message_id and reply_to, so that sent again it is not taken for a copy
 * and dropped.  With note (a key "failed" and its value, encoded; or
 * NULL) it has that key instead of the one it had.  0, or -1 with err
 * (not a message, or too many keys) or ENOMEM.
 */
int maro_taskin_unsent(const uint8_t *req, size_t n, const struct maro_buf *note,
    struct maro_buf *out, struct maro_err *err);
/* The session id of in->req. */
struct maro_str maro_taskin_session(const struct maro_taskin *in);
void maro_taskin_free(struct maro_taskin *in);

#endif
