#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "buf.h"

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
maro_utf8_valid(const void *p, size_t n)
{
	const uint8_t *s = p;
	size_t i = 0;

	while (i < n) {
		uint8_t c;
		size_t k;
		uint32_t cp;
		uint64_t w;

		/* ASCII eight bytes at a time, and the tail in one word */
		if (n - i >= 8) {
			memcpy(&w, s + i, 8);
			if (!(w & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		} else {
			/* the tail: the last eight bytes when there are so many (no call) */
			if (n >= 8) {
				memcpy(&w, s + n - 8, 8);
			} else {
				w = 0;
				memcpy(&w, s + i, n - i);
			}
			if (!(w & 0x8080808080808080ull))
				return 1;
		}
		c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			k = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
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
