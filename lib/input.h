/*
 * input: the messages a tool reads, one at a time, from a CBOR sequence or
 * from JSON lines on a descriptor (never waiting for more than one message
 * needs), or from a CBOR sequence in memory (messages built from flags).
 *
 * A JSON line is one message object, converted to CBOR without anything
 * added; blank lines are skipped.  Positions, in faults and with each
 * message, are byte offsets in a CBOR stream and line numbers in JSON lines
 * (in->where names which).
 */
#ifndef MARO_INPUT_H
#define MARO_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "cborseq.h"
#include "message.h"

enum maro_input_kind { MARO_INPUT_CBOR, MARO_INPUT_JSON, MARO_INPUT_MEM };

struct maro_input {
	enum maro_input_kind kind;
	int eof;		/* nothing more will be read (in memory: from the start) */
	const char *where;	/* "byte offset" or "line" */
	/* the rest is the module's */
	struct maro_reader r;	/* CBOR */
	struct maro_cbor_limits lim;
	struct maro_buf in, item;	/* JSON: the bytes read, the current line's message */
	size_t start, seen;	/* JSON: the current line's first byte; bytes searched for its end */
	uint64_t lineno;
	const uint8_t *mem;	/* in memory: not owned */
	size_t mem_len, mem_at;
	struct maro_cbor_scan scan;
};

/* Messages from fd (not owned), MARO_INPUT_CBOR or MARO_INPUT_JSON, each within lim. */
void maro_input_init(struct maro_input *in, enum maro_input_kind kind, int fd,
    const struct maro_cbor_limits *lim);
/* Messages from p[0..n), a well-formed CBOR sequence the caller keeps while in is used. */
void maro_input_init_mem(struct maro_input *in, const uint8_t *p, size_t n);
void maro_input_free(struct maro_input *in);
/*
 * The next message among the bytes already read.  1 with *p, *n (valid
 * until the next call) and its position in *at; 0 when no complete message
 * is buffered (at in->eof the input ended, else call maro_input_fill); -1
 * on a fault: errno EBADMSG with err->offset its position and err->msg why
 * (a JSON line longer than 8 times the item limit is one, at the line it
 * starts), or ENOMEM.  After a fault the input is unusable.
 */
int maro_input_next(struct maro_input *in, const uint8_t **p, size_t *n, uint64_t *at,
    struct maro_err *err);
/*
 * The same, and the message decoded in the same pass where that is quick
 * (a whole message buffered in a CBOR stream): then *decoded is 1 and m
 * holds views into *p, as maro_msg_decode_checked within the input's
 * limits gives.  Else *decoded is 0: decode *p yourself (and say why it
 * is no message).
 */
int maro_input_next_msg(struct maro_input *in, const uint8_t **p, size_t *n, uint64_t *at,
    struct maro_msg *m, int *decoded, struct maro_err *err);
/*
 * Reads once from the descriptor (see maro_reader_fill).  Bytes read, 0 at
 * the end of input, or -1 with errno (ENOMEM: no room for them).
 */
ssize_t maro_input_fill(struct maro_input *in);

#endif
