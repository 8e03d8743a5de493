#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "manifest.h"

/* An unsigned decimal (or octal) number at *p up to a space: 0 with *out, *p past it; or -1. */
static int
number(const char **p, unsigned base, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t x = 0;
	unsigned d;

	if (*s < '0' || *s > '0' + (int)base - 1)
		return -1;
	for (; *s >= '0' && *s <= '0' + (int)base - 1; s++) {
		d = (unsigned)(*s - '0');
		if (x > (max - d) / base)
			return -1;
		x = x * base + d;
	}
	if (*s != ' ' && *s != '\0')
		return -1;
	*out = x;
	*p = s;
	return 0;
}

/* A signed decimal: as number. */
static int
signed_number(const char **p, int64_t *out)
{
	uint64_t x;
	int neg = **p == '-';

	*p += neg;
	if (number(p, 10, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &x) < 0)
		return -1;
	*out = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}

/* One space, then more: 0 with *p past it, or -1. */
static int
space(const char **p)
{
	if (**p != ' ' || (*p)[1] == '\0')
		return -1;
	++*p;
	return 0;
}

static int
hex64(const char **p, char out[MARO_MANIFEST_HASH_LEN + 1])
{
	size_t k = strspn(*p, "0123456789abcdef");

	if (k != MARO_MANIFEST_HASH_LEN || ((*p)[k] != ' ' && (*p)[k] != '\0'))
		return -1;
	memcpy(out, *p, k);
	out[k] = '\0';
	*p += k;
	return 0;
}

int
maro_manifest_head(const char *line, char hash[MARO_MANIFEST_HASH_LEN + 1])
{
	static const char magic[] = "maro-manifest 2 ";

	if (strncmp(line, magic, sizeof magic - 1))
		return -1;
	line += sizeof magic - 1;
	return hex64(&line, hash) == 0 && *line == '\0' ? 0 : -1;
}

int
maro_manifest_parse(const char *line, struct maro_manifest_entry *e)
{
	const char *p = line + 2;
	uint64_t x;

	memset(e, 0, sizeof *e);
	if (line[0] == 'e' && line[1] == ' ') {
		e->type = 'e';
		return number(&p, 10, UINT64_MAX, &e->size) == 0 && *p == '\0' ? 0 : -1;
	}
	if ((line[0] != 'd' && line[0] != 'f' && line[0] != 'l') || line[1] != ' ')
		return -1;
	e->type = line[0];
	if (number(&p, 8, 07777, &x) < 0 || space(&p) < 0)
		return -1;
	e->mode = (unsigned)x;
	if (number(&p, 10, UINT64_MAX, &e->size) < 0 || space(&p) < 0 ||
	    number(&p, 10, UINT64_MAX, &e->ino) < 0 || space(&p) < 0 ||
	    signed_number(&p, &e->mtime) < 0 || space(&p) < 0 ||
	    signed_number(&p, &e->ctime) < 0 || space(&p) < 0)
		return -1;
	e->path = p;
	return 0;
}

int
maro_manifest_format(const struct maro_manifest_entry *e, char *out, size_t len)
{
	int k;

	if (e->type == 'e')
		k = snprintf(out, len, "e %" PRIu64 "\n", e->size);
	else if ((e->type != 'd' && e->type != 'f' && e->type != 'l') || e->mode > 07777 || !e->path ||
	    !*e->path || strchr(e->path, '\n'))
		return -1;
	else
		k = snprintf(out, len, "%c %o %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %s\n",
		    e->type, e->mode, e->size, e->ino, e->mtime, e->ctime, e->path);
	return k < 0 || (size_t)k >= len ? -1 : k;
}
