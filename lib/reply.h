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

#endif
