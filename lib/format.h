/*
 * format: one message as a tool prints it: CBOR (the bytes as they are),
 * a JSON line, a diagnostic-notation line, or its payload alone.
 */
#ifndef MARO_FORMAT_H
#define MARO_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cborseq.h"
#include "message.h"

enum maro_format {
	MARO_FORMAT_CBOR,
	MARO_FORMAT_JSON,
	MARO_FORMAT_DIAG,
	MARO_FORMAT_PAYLOAD,
	/*
	 * Or'ed in: what the format cannot say is an error (-1), not the
	 * lossless {"cbor":"BASE64URL"} line every receiver writes instead
	 * (maro(7)); for a converter asked for that very format (maro-msg).
	 */
	MARO_FORMAT_STRICT = 0x100,
};

/*
 * Appends the item p[0..n) (a complete, checked message) to out in format f.
 * payload: a text payload as its text and a newline, no payload as an empty
 * line, anything else as a JSON line.  0, or -1 with err->msg set.
 */
int maro_format_item(struct maro_buf *out, enum maro_format f, const uint8_t *p, size_t n,
    struct maro_err *err);
/* The same for a message decoded already: m holds views into p[0..n). */
int maro_format_msg(struct maro_buf *out, enum maro_format f, const struct maro_msg *m,
    const uint8_t *p, size_t n, struct maro_err *err);

#endif
