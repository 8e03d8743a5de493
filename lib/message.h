/*
 * message: the maro message, one CBOR map with text keys (maro(7)).
 *
 *   tag            text, required
 *   source         text
 *   destination    text
 *   payload        any CBOR item
 *   session_id     text (UUID)
 *   message_id     text (UUID), the de-duplication key
 *   session_type   "task" | "notification"
 *   session_stage  "request" | "receive" | "complete"
 *   reply_to       text
 *
 * A decoded message holds views into the bytes it was decoded from: those
 * bytes must outlive it.  Keys the schema does not know are kept, in order,
 * and written again by the encoder.
 */
#ifndef MARO_MESSAGE_H
#define MARO_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cborseq.h"

/* A text view; p == NULL means absent, n == 0 with p != NULL means empty. */
struct maro_str {
	const char *p;
	size_t n;
};

enum maro_session_type {
	MARO_SESSION_NONE = 0,
	MARO_SESSION_TASK,
	MARO_SESSION_NOTIFICATION,
};

enum maro_stage {
	MARO_STAGE_NONE = 0,
	MARO_STAGE_REQUEST,
	MARO_STAGE_RECEIVE,
	MARO_STAGE_COMPLETE,
};

#define MARO_MSG_MAX_EXTRA 32

struct maro_span {
	const uint8_t *p;
	size_t n;
};

struct maro_msg {
	struct maro_str tag;
	struct maro_str source;
	struct maro_str destination;
	struct maro_str session_id;
	struct maro_str message_id;
	struct maro_str reply_to;
	enum maro_session_type type;
	enum maro_stage stage;
	struct maro_span payload;	/* the encoded item; p == NULL if absent */
	size_t nextra;
	struct maro_span extra[MARO_MSG_MAX_EXTRA];	/* unknown key and value, encoded */
};

#define MARO_UUID_LEN 36

/*
 * Decodes one complete, well-formed item (as the scanner delivered it).
 * Returns 0, or -1 with err->offset (relative to p) and err->msg naming the
 * problem: not a map, missing tag, a known key of the wrong type, a repeated
 * key, too many unknown keys.
 */
int maro_msg_decode(struct maro_msg *m, const uint8_t *p, size_t n, struct maro_err *err);
/*
 * The text of one key (shorter than 24 bytes) of the message at p, found
 * without decoding the rest: for a message known good (encoded here), its
 * bytes unchecked.  1 found, 0 no such key, -1 malformed or not text.
 */
int maro_msg_text(const uint8_t *p, size_t n, const char *key, struct maro_str *out);
/*
 * m, decoded from bytes at from, for a copy of those bytes at to: its views
 * moved over, without decoding again.  Copies the extras it has, not all
 * 32 slots.
 */
void maro_msg_rebase(struct maro_msg *dst, const struct maro_msg *m, const uint8_t *from,
    const uint8_t *to);
/*
 * Decodes an item from an untrusted source in one pass: like checking it
 * with maro_cbor_check(lim) (well-formed, exactly n bytes, within the size
 * and nesting limits), then maro_msg_decode().  The messages of the two
 * may differ; what is accepted does not.
 */
int maro_msg_decode_checked(struct maro_msg *m, const uint8_t *p, size_t n,
    const struct maro_cbor_limits *lim, struct maro_err *err);
/*
 * The message that starts at p, within n bytes (more may follow it), in the
 * same pass: as maro_msg_decode_checked on its own bytes, its length in
 * *len.  -1 when it is not a message or does not end within n, saying
 * nothing: the caller scans the bytes to find out why, or to wait for more.
 */
int maro_msg_decode_prefix(struct maro_msg *m, const uint8_t *p, size_t n,
    const struct maro_cbor_limits *lim, size_t *len);
/*
 * Appends the encoded message to out.  Key order: the table above, then
 * unknown keys.  m must not point into out (out may move as it grows).
 */
int maro_msg_encode(const struct maro_msg *m, struct maro_buf *out);
/* At most how many bytes m encodes to; then the encoding into out, which has that room: its length. */
size_t maro_msg_encoded_max(const struct maro_msg *m);
size_t maro_msg_encode_into(const struct maro_msg *m, uint8_t *out);
/*
 * Where the destination is in an encoding of ours: the offset of its pair
 * (or of where that pair would go) and the pair's length, 0 for none; and
 * where the session_id's text is (sid_n 0: none).
 */
struct maro_dest_at {
	size_t at, n;
	size_t sid, sid_n;
};
/* maro_msg_encode, also saying where the destination is (d may be NULL). */
int maro_msg_encode_dest(const struct maro_msg *m, struct maro_buf *out, struct maro_dest_at *d);
/*
 * The message encoded at p (n bytes, by maro_msg_encode_dest, which gave
 * d), with destination dest instead, written to out: its length.  The same
 * bytes as encoding it again with that destination, without a decode.
 * out has maro_msg_redirect_max bytes of room.  What follows the
 * destination (the session_id among it) moves by the difference in length.
 */
size_t maro_msg_redirect_max(size_t n, size_t dest_n);
size_t maro_msg_redirect(uint8_t *out, const uint8_t *p, size_t n, const struct maro_dest_at *d,
    struct maro_str dest);

/*
 * Fills what a sender must: message_id (fresh UUID) if absent, session_id
 * (fresh) if absent, session_type task, stage request, source if absent and
 * src given.  ids is scratch space for the generated UUIDs: it must outlive m.
 */
void maro_msg_fill(struct maro_msg *m, const char *src, char ids[2][MARO_UUID_LEN + 1]);
/*
 * Turns a request into its reply, in place: keeps session_id, type and
 * reply_to; destination becomes the request's source; source becomes src
 * (or the request's destination if src is NULL); stage advances (task:
 * request -> complete, notification: request -> receive); a fresh message_id.
 * The payload is left as is: set m->payload afterwards.
 */
void maro_msg_make_reply(struct maro_msg *m, const char *src, char id[MARO_UUID_LEN + 1]);

const char *maro_session_type_name(enum maro_session_type t);
const char *maro_stage_name(enum maro_stage s);

/* Writes a fresh random (version 4) UUID and its NUL.  Random bytes come from getrandom(2). */
void maro_uuid(char out[MARO_UUID_LEN + 1]);

/* str helpers */
struct maro_str maro_str_c(const char *s);
int maro_str_eq(struct maro_str a, const char *s);
int maro_str_has_prefix(struct maro_str a, const char *prefix);
/* Whether a and b hold the same bytes (two empty ones do, whatever their p). */
int maro_str_same(struct maro_str a, struct maro_str b);
/* A NUL-terminated copy, or NULL (ENOMEM); the caller frees it. */
char *maro_str_dup(struct maro_str a);

#endif
