/*
 * utf8: whether bytes are UTF-8 text, as CBOR's text strings must be
 * (RFC 8949) and JSON's (RFC 8259): RFC 3629's shortest forms, no
 * surrogates, nothing past U+10FFFF.
 */
#ifndef MARO_UTF8_H
#define MARO_UTF8_H

#include <stddef.h>

/* Is it UTF-8?  1 or 0. */
int maro_utf8_valid(const void *s, size_t n);

#endif
