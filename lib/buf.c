#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "buf.h"
#include "utf8.h"

int
maro_buf_reserve(struct maro_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - b->len - 1) {
		errno = ENOMEM;
		return -1;
	}
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int
maro_buf_append(struct maro_buf *b, const void *p, size_t n)
{
	if (maro_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int
maro_buf_puts(struct maro_buf *b, const char *s)
{
	return maro_buf_append(b, s, strlen(s));
}

int
maro_buf_printf(struct maro_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || maro_buf_reserve(b, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int
maro_buf_cstr(struct maro_buf *b)
{
	if (maro_buf_reserve(b, 0) < 0)
		return -1;
	b->p[b->len] = '\0';
	return 0;
}

void
maro_buf_reset(struct maro_buf *b)
{
	b->len = 0;
}

void
maro_buf_free(struct maro_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int
maro_buf_cbor_head(struct maro_buf *b, unsigned major, uint64_t val)
{
	size_t (*enc)(size_t, unsigned char *, size_t);
	size_t n;

	if (maro_buf_reserve(b, 9) < 0)
		return -1;
	switch (major) {
	case 0:
		n = cbor_encode_uint(val, b->p + b->len, 9);
		b->len += n;
		return 0;
	case 1:
		n = cbor_encode_negint(val, b->p + b->len, 9);
		b->len += n;
		return 0;
	case 6:
		n = cbor_encode_tag(val, b->p + b->len, 9);
		b->len += n;
		return 0;
	case 2: enc = cbor_encode_bytestring_start; break;
	case 3: enc = cbor_encode_string_start; break;
	case 4: enc = cbor_encode_array_start; break;
	case 5: enc = cbor_encode_map_start; break;
	default:
		errno = EINVAL;
		return -1;
	}
	b->len += enc((size_t)val, b->p + b->len, 9);
	return 0;
}

int
maro_buf_cbor_text(struct maro_buf *b, const char *s, size_t n)
{
	if (!maro_utf8_valid(s, n)) {
		errno = EILSEQ;
		return -1;
	}
	if (maro_buf_reserve(b, n + 9) < 0)
		return -1;
	/* room is made: the head and the bytes go straight in */
	if (n < 24)
		b->p[b->len++] = (uint8_t)(0x60 | n);
	else
		b->len += cbor_encode_string_start(n, b->p + b->len, 9);
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

void
maro_errbuf_set(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}
