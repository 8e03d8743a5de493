/*
 * convert: CBOR items to and from JSON (jansson), and RFC 8949 diagnostic
 * notation, for the human formats of the tools.
 *
 * CBOR -> JSON follows RFC 8949 section 6.1 and loses what JSON cannot say:
 * byte strings become base64url text without padding, tags are dropped
 * (the tagged item is kept), undefined and non-finite floats become null,
 * map keys that are not text become their diagnostic notation, and
 * simple values other than false/true/null become null.
 * JSON -> CBOR: integers become CBOR integers, other numbers the shortest
 * float that holds them exactly (half, single, double), objects definite
 * maps in their order, arrays definite arrays.
 * Items holding a simple value 0-19 or 32-255, or a tag 6-20, are
 * well-formed (the scanner takes them) but cannot be converted: libcbor 0.8
 * does not decode them, and the error says which.
 */
#ifndef MARO_CONVERT_H
#define MARO_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "cborseq.h"

/*
 * One complete, well-formed CBOR item (as the scanner delivered it) to a new
 * JSON value.  Returns NULL with err->msg set (e.g. a text string that is not
 * UTF-8).  The caller owns the reference.
 */
json_t *maro_cbor_to_json(const uint8_t *p, size_t n, struct maro_err *err);
/* Appends the CBOR encoding of a JSON value to out.  0, or -1 with errno. */
int maro_json_to_cbor(const json_t *v, struct maro_buf *out);
/*
 * Appends the diagnostic notation (RFC 8949 section 8) of one complete,
 * well-formed item to out, without a newline.  Indefinite lengths show as
 * [_ ...], {_ ...}, (_ ...); floats keep their width's precision (1.5,
 * 1.0e+300, NaN, Infinity); byte strings h'..'; tags N(item).
 * 0, or -1 with err->msg set.
 */
int maro_cbor_to_diag(const uint8_t *p, size_t n, struct maro_buf *out, struct maro_err *err);
/* Appends p[0..n) in base64url (RFC 4648), without padding.  0, or -1 (ENOMEM). */
int maro_base64url(const uint8_t *p, size_t n, struct maro_buf *out);

/*
 * How every JSON input is read (-i json, --json, --payloads-json,
 * --json-lines): any value, a repeated object key refused (as a repeated
 * key of a message is), \u0000 allowed in strings.
 */
#define MARO_JSON_LOAD_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

#endif
