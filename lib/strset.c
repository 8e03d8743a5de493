#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <sys/random.h>
#include <sodium.h>

#include "strset.h"

static unsigned char hash_key[crypto_shorthash_KEYBYTES];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static void
hash_init(void)
{
	/* sodium_init fails only without a random source: then the key comes from getrandom(2) all the same */
	if (sodium_init() >= 0)
		randombytes_buf(hash_key, sizeof hash_key);
	else if (getrandom(hash_key, sizeof hash_key, 0) != (ssize_t)sizeof hash_key)
		abort();
}

/*
 * 64 bits of a byte string: SipHash-2-4 (libsodium's crypto_shorthash)
 * under a key drawn at random once per process, so that no peer can
 * choose ids that collide in our tables (an unkeyed hash let 131072
 * crafted message ids slow a receiver 70-fold).
 */
uint64_t
maro_hash64(const void *p, size_t n)
{
	unsigned char out[crypto_shorthash_BYTES];
	uint64_t h;

	pthread_once(&hash_once, hash_init);
	crypto_shorthash(out, p, n, hash_key);
	memcpy(&h, out, sizeof h);
	return h;
}

/* Slot of key, or of the empty slot where it would go.  Removed keys leave tombstones (count 0). */
static size_t
find_h(const struct maro_strset *s, const char *key, size_t len, uint64_t h)
{
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

static size_t
find(const struct maro_strset *s, const char *key, size_t len)
{
	return find_h(s, key, len, maro_hash64(key, len));
}

/* Frees e's key if it has a copy of its own; the slot is empty after. */
static void
drop_key(struct maro_strset_slot *e)
{
	if (e->key != e->inl)
		free(e->key);
	e->key = NULL;
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
			struct maro_strset_slot *to = &s->slots[find_h(s, e->key, e->len, e->hash)];

			*to = *e;
			if (e->key == e->inl)
				to->key = to->inl;
			s->used++;
			s->filled++;
		} else {
			drop_key(e);
		}
	}
	free(old.slots);
	return 0;
}

/* The slot holding key (*fresh: it was absent, now present with count 1).  NULL on ENOMEM. */
static struct maro_strset_slot *
slot_for(struct maro_strset *s, const char *key, size_t len, uint64_t h, int *fresh)
{
	struct maro_strset_slot *e = s->cap ? &s->slots[find_h(s, key, len, h)] : NULL;

	/* only a key not there may need room: one present is found without allocating */
	if ((!e || !e->key || e->len != len || memcmp(e->key, key, len) != 0) &&
	    (s->filled + 1) * 2 > s->cap) {
		if (grow(s) < 0)
			return NULL;
		e = &s->slots[find_h(s, key, len, h)];
	}
	*fresh = 0;
	if (e->key && e->len == len && memcmp(e->key, key, len) == 0) {
		if (e->count == 0) {
			e->count = 1;	/* a tombstone of this very key */
			s->used++;
			*fresh = 1;
		}
		return e;
	}
	if (e->key)
		drop_key(e);	/* a tombstone being reused */
	else
		s->filled++;
	e->key = len < sizeof e->inl ? e->inl : malloc(len + 1);
	if (!e->key) {
		s->filled--;	/* the slot is left empty */
		return NULL;
	}
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->len = len;
	e->hash = h;
	e->count = 1;
	s->used++;
	*fresh = 1;
	return e;
}

int
maro_strset_add(struct maro_strset *s, const char *key, size_t len)
{
	int fresh;
	struct maro_strset_slot *e = slot_for(s, key, len, maro_hash64(key, len), &fresh);

	if (!e)
		return -1;
	if (!fresh)
		e->count++;
	return 0;
}

int
maro_strset_put(struct maro_strset *s, const char *key, size_t len, uint64_t value)
{
	return maro_strset_put_h(s, key, len, maro_hash64(key, len), value);
}

int
maro_strset_put_h(struct maro_strset *s, const char *key, size_t len, uint64_t h, uint64_t value)
{
	int fresh;
	struct maro_strset_slot *e = slot_for(s, key, len, h, &fresh);

	if (!e)
		return -1;
	e->value = value;
	return 0;
}

int
maro_strset_get(const struct maro_strset *s, const char *key, size_t len, uint64_t *value)
{
	return maro_strset_get_h(s, key, len, maro_hash64(key, len), value);
}

int
maro_strset_get_h(const struct maro_strset *s, const char *key, size_t len, uint64_t h, uint64_t *value)
{
	const struct maro_strset_slot *e;

	if (!s->cap)
		return 0;
	e = &s->slots[find_h(s, key, len, h)];
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
	return maro_strset_take_h(s, key, len, maro_hash64(key, len));
}

int
maro_strset_take_h(struct maro_strset *s, const char *key, size_t len, uint64_t h)
{
	struct maro_strset_slot *e;

	if (!s->cap)
		return 0;
	e = &s->slots[find_h(s, key, len, h)];
	if (!e->key || e->len != len || memcmp(e->key, key, len) != 0 || e->count == 0)
		return 0;
	if (--e->count == 0) {
		size_t i = (size_t)(e - s->slots);

		s->used--;
		/*
		 * At the end of its probe chain a tombstone guards nothing: empty
		 * it, and the tombstones just before it.  Removals then seldom
		 * leave any, and the table is seldom rebuilt.  No key moves.
		 */
		while (!s->slots[(i + 1) & (s->cap - 1)].key && s->slots[i].key && !s->slots[i].count) {
			drop_key(&s->slots[i]);
			s->filled--;
			i = (i - 1) & (s->cap - 1);
		}
	}
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

size_t
maro_strset_max_probe(const struct maro_strset *s)
{
	size_t i, d, max = 0;

	for (i = 0; i < s->cap; i++)
		if (s->slots[i].key) {
			d = (i - ((size_t)s->slots[i].hash & (s->cap - 1))) & (s->cap - 1);
			if (d > max)
				max = d;
		}
	return max;
}

void
maro_strset_free(struct maro_strset *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		drop_key(&s->slots[i]);
	free(s->slots);
	memset(s, 0, sizeof *s);
}
