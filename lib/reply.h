/*
 * reply: requests turned into their replies, as maro-msg reply makes them.
 *
 * A reply has the envelope maro_msg_make_reply gives it, the tag given (or
 * the request's), and the payload given for every reply (text or JSON),
 * or the next line of a file of payloads, one line per request (text, or
 * JSON with json set), or else the request's own.  Each reply is checked
 * as a receiver would check it, against the limits given.
 */
#ifndef MARO_REPLY_H
#define MARO_REPLY_H

#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "cborseq.h"
#include "message.h"

enum maro_reply_fault {
	MARO_REPLY_NOMEM = 1,	/* out of memory */
	MARO_REPLY_PAYLOAD,	/* the payload given is no payload: msg says why */
	MARO_REPLY_REFUSED,	/* a receiver would refuse the reply: msg says why */
	MARO_REPLY_IO,		/* the file of payloads could not be opened or read: errnum */
	MARO_REPLY_SHORT,	/* the file has no line left: it had line lines */
	MARO_REPLY_LINE,	/* the file's line is no payload: msg says why */
};

/* What went wrong, for the tool to say: the fields its fault names are set. */
struct maro_reply_err {
	enum maro_reply_fault fault;
	int errnum;
	uint64_t line;
	char msg[300];
};

struct maro_reply {
	const char *source;	/* NULL: the request's destination */
	const char *tag;	/* NULL: the request's */
	struct maro_cbor_limits limits;
	/* the rest is the module's */
	struct maro_buf payload;
	int fixed;		/* payload goes in every reply */
	FILE *file;
	int json;
	uint64_t lineno;
	char *line;
	size_t cap;
	struct maro_buf msg;	/* the last reply */
	char id[MARO_UUID_LEN + 1];	/* its message_id */
};

/* source, tag (kept, not copied) and lim (copied, NULL: the defaults) as above. */
void maro_reply_init(struct maro_reply *rp, const char *source, const char *tag,
    const struct maro_cbor_limits *lim);
void maro_reply_free(struct maro_reply *rp);
/*
 * The payload of every reply: text (valid UTF-8), or a JSON text.  0, or -1
 * with e: PAYLOAD (invalid JSON, with its line and column; one nested too
 * deep), REFUSED (a reply holding it would be refused), NOMEM.
 */
int maro_reply_set_text(struct maro_reply *rp, const char *text, struct maro_reply_err *e);
int maro_reply_set_json(struct maro_reply *rp, const char *json, struct maro_reply_err *e);
/* Payloads from the lines of path, JSON if json.  0, or -1 with e: IO. */
int maro_reply_open(struct maro_reply *rp, const char *path, int json, struct maro_reply_err *e);
/*
 * Turns the request m (decoded) into its reply, in place, and encodes it:
 * *p, *n and what m points to now valid until the next call.  0, or -1 with e: IO, SHORT and LINE
 * (the file of payloads; e->line counts its lines), REFUSED, NOMEM.
 */
int maro_reply_make(struct maro_reply *rp, struct maro_msg *m, const uint8_t **p, size_t *n,
    struct maro_reply_err *e);

/*
 * Failure replies (maro(7), SESSIONS): a receiver that cannot answer a
 * task request answers it at once with a reply (stage "complete", the
 * request's tag) that carries the key "error", a short text naming the
 * failure (MARO_REPLY_NO_HANDLER, MARO_REPLY_NOT_JSON), and as payload a
 * text for people.  maro_reply_failure turns the request m into one, in
 * place (m then points into buf too); 0, or -1 with ENOMEM, or EINVAL
 * (more keys than a message may have).
 */
#define MARO_REPLY_ERROR_KEY "error"
#define MARO_REPLY_NO_HANDLER "no handler"
#define MARO_REPLY_NOT_JSON "not JSON"
/* the handler failed the task: it exited non-zero, was killed, or said so (maro-dist(1)) */
#define MARO_REPLY_FAILED "failed"
int maro_reply_failure(struct maro_msg *m, const char *src, char id[MARO_UUID_LEN + 1],
    const char *error, const char *text, struct maro_buf *buf);
/*
 * Is m a failure reply?  1 with its error in *error and its text for
 * people in *text (its payload, or the error; views into m), else 0.
 */
int maro_reply_error(const struct maro_msg *m, struct maro_str *error, struct maro_str *text);
/*
 * What a requester says of a failure reply m, in out: "'w.1' has no
 * handler for tag 'x'" (2), or "'w.1' failed the task in session S: TEXT"
 * (1); 0 when m is no failure reply.
 */
int maro_reply_failure_say(const struct maro_msg *m, char *out, size_t len);
/*
 * Is a failure reply of this error final: would another attempt elsewhere
 * fail the same ("no handler", "not JSON")?  1 when it would; 0 for the
 * others ("failed" and what other implementations send), which count as a
 * failed attempt.
 */
int maro_reply_error_final(struct maro_str error);
/*
 * A peer's text s, safe to print on a terminal or to put in one line of a
 * log, in out (len bytes, NUL-terminated): a line break as "\n", a tab as
 * "\t", every other control character (C0, DEL, C1) as "\xNN"; the rest
 * (UTF-8) as it is.  When it does not fit, its end after "...", cut on a
 * character: the last lines of a standard error say the most.
 */
void maro_reply_escape(struct maro_str s, char *out, size_t len);

#endif
