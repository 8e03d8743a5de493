#include <stdint.h>
#include <string.h>

#include "utf8.h"

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
