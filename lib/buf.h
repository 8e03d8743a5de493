/*
 * buf: a growable byte buffer.
 *
 * A zeroed struct maro_buf is an empty buffer.  Appending functions grow the
 * buffer as needed and return 0, or -1 with errno ENOMEM (the buffer is then
 * left as it was).  The buffer owns its memory; maro_buf_free() releases it.
 */
#ifndef MARO_BUF_H
#define MARO_BUF_H

#include <stddef.h>
#include <stdint.h>

struct maro_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

int maro_buf_reserve(struct maro_buf *b, size_t extra);
int maro_buf_append(struct maro_buf *b, const void *p, size_t n);
/* Appends a NUL-terminated string, without its NUL. */
int maro_buf_puts(struct maro_buf *b, const char *s);
int maro_buf_printf(struct maro_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Guarantees p[len] == '\0' (not counted in len) so the bytes read as a C string. */
int maro_buf_cstr(struct maro_buf *b);
void maro_buf_reset(struct maro_buf *b);
void maro_buf_free(struct maro_buf *b);

/* CBOR heads (RFC 8949 section 3), shortest form. */
int maro_buf_cbor_head(struct maro_buf *b, unsigned major, uint64_t val);
/* A text string: -1 with EILSEQ when s is not valid UTF-8, ENOMEM when out of memory. */
int maro_buf_cbor_text(struct maro_buf *b, const char *s, size_t n);

/*
 * Formats an error message into a caller's (errbuf, errlen), the way the
 * library's open functions report; does nothing when errbuf is NULL.
 */
void maro_errbuf_set(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
