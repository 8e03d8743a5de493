#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strset.h"

static uint64_t
hash(const char *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= (uint8_t)*k++;
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 31);
}

/* Slot of key, or of the empty slot where it would go.  Removed keys leave tombstones (count 0). */
static size_t
find(const struct maro_strset *s, const char *key, size_t len)
{
	uint64_t h = hash(key, len);
	size_t i = (size_t)h & (s->cap - 1), tomb = SIZE_MAX;

	for (;; i = (i + 1) & (s->cap - 1)) {
		struct maro_strset_slot *e = &s->slots[i];

		if (!e->key)
			return tomb != SIZE_MAX ? tomb : i;
		if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
			return i;
		if (e->count == 0 && tomb == SIZE_MAX)
			tomb = i;
	}
}

/*
 * Rehashes without the tombstones: into a table twice the size when live
 * keys fill a quarter of it, else into one of the same size (a set that
 * sees many keys come and go stays small).
 */
static int
grow(struct maro_strset *s)
{
	struct maro_strset old = *s;
	size_t i;

	s->cap = !old.cap ? 64 : (old.used + 1) * 4 > old.cap ? old.cap * 2 : old.cap;
	s->slots = calloc(s->cap, sizeof *s->slots);
	s->used = s->filled = 0;
	if (!s->slots) {
		*s = old;
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < old.cap; i++) {
		struct maro_strset_slot *e = &old.slots[i];

		if (e->key && e->count) {
			s->slots[find(s, e->key, e->len)] = *e;
			s->used++;
			s->filled++;
		} else {
			free(e->key);
		}
	}
	free(old.slots);
	return 0;
}

int
maro_strset_add(struct maro_strset *s, const char *key, size_t len)
{
	struct maro_strset_slot *e;

	if ((s->filled + 1) * 2 > s->cap && grow(s) < 0)
		return -1;
	e = &s->slots[find(s, key, len)];
	if (e->key && e->len == len && memcmp(e->key, key, len) == 0) {
		if (e->count++ == 0)
			s->used++;
		return 0;
	}
	if (e->key)
		free(e->key);	/* a tombstone being reused */
	else
		s->filled++;
	e->key = malloc(len + 1);
	if (!e->key)
		return -1;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->len = len;
	e->hash = hash(key, len);
	e->count = 1;
	s->used++;
	return 0;
}

int
maro_strset_put(struct maro_strset *s, const char *key, size_t len, uint64_t value)
{
	struct maro_strset_slot *e;

	if (!maro_strset_count(s, key, len) && maro_strset_add(s, key, len) < 0)
		return -1;
	e = &s->slots[find(s, key, len)];
	e->value = value;
	return 0;
}

int
maro_strset_get(const struct maro_strset *s, const char *key, size_t len, uint64_t *value)
{
	const struct maro_strset_slot *e;

	if (!s->cap)
		return 0;
	e = &s->slots[find(s, key, len)];
	if (!e->key || e->len != len || memcmp(e->key, key, len) != 0 || !e->count)
		return 0;
	*value = e->value;
	return 1;
}

unsigned
maro_strset_count(const struct maro_strset *s, const char *key, size_t len)
{
	const struct maro_strset_slot *e;

	if (!s->cap)
		return 0;
	e = &s->slots[find(s, key, len)];
	return e->key && e->len == len && memcmp(e->key, key, len) == 0 ? e->count : 0;
}

int
maro_strset_take(struct maro_strset *s, const char *key, size_t len)
{
	struct maro_strset_slot *e;

	if (!s->cap)
		return 0;
	e = &s->slots[find(s, key, len)];
	if (!e->key || e->len != len || memcmp(e->key, key, len) != 0 || e->count == 0)
		return 0;
	if (--e->count == 0)
		s->used--;
	return 1;
}

void
maro_strset_foreach(const struct maro_strset *s,
    void (*fn)(void *arg, const char *key, size_t len, unsigned count), void *arg)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		if (s->slots[i].key && s->slots[i].count)
			fn(arg, s->slots[i].key, s->slots[i].len, s->slots[i].count);
}

void
maro_strset_free(struct maro_strset *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		free(s->slots[i].key);
	free(s->slots);
	memset(s, 0, sizeof *s);
}
