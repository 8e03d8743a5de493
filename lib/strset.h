/*
 * strset: a set of byte strings with a count each (session ids waiting for
 * replies, message ids).  Owns copies of its keys.
 */
#ifndef MARO_STRSET_H
#define MARO_STRSET_H

#include <stddef.h>
#include <stdint.h>

/* keys shorter than this (a UUID is 36 bytes) live in their slot: no allocation */
#define MARO_STRSET_INLINE 40

struct maro_strset_slot {
	char *key;		/* inl, or a copy of its own; NULL: an empty slot */
	size_t len;
	uint64_t hash;
	unsigned count;		/* 0: removed, a tombstone that keeps probe chains whole */
	uint64_t value;		/* the caller's, set by maro_strset_put */
	char inl[MARO_STRSET_INLINE];
};

struct maro_strset {
	struct maro_strset_slot *slots;
	size_t cap;	/* power of two, or 0 */
	size_t used;	/* keys present */
	size_t filled;	/* slots holding a key, removed ones included */
};

/* Adds one to key's count (inserting it with 1).  0, or -1 ENOMEM. */
int maro_strset_add(struct maro_strset *s, const char *key, size_t len);
/* Adds key (count 1) with a value, or sets the value of a present key (which never fails).  0 or -1. */
int maro_strset_put(struct maro_strset *s, const char *key, size_t len, uint64_t value);
/* 1 with *value when key is present, else 0. */
int maro_strset_get(const struct maro_strset *s, const char *key, size_t len, uint64_t *value);
/* key's count, 0 when absent. */
unsigned maro_strset_count(const struct maro_strset *s, const char *key, size_t len);
/* Takes one from key's count, removing it at 0.  1 if it was present, else 0. */
int maro_strset_take(struct maro_strset *s, const char *key, size_t len);
/*
 * put, get and take with the key's hash already known (h): a key looked up
 * many times is hashed once.  h must be what maro_hash64 gives for it, or
 * the same other value in every call for that key.
 */
int maro_strset_put_h(struct maro_strset *s, const char *key, size_t len, uint64_t h, uint64_t value);
int maro_strset_get_h(const struct maro_strset *s, const char *key, size_t len, uint64_t h, uint64_t *value);
int maro_strset_take_h(struct maro_strset *s, const char *key, size_t len, uint64_t h);
/* Calls fn for each key present (count > 0). */
void maro_strset_foreach(const struct maro_strset *s,
    void (*fn)(void *arg, const char *key, size_t len, unsigned count), void *arg);
void maro_strset_free(struct maro_strset *s);
/* The longest way from a key's home slot to where it is: how bad the table's collisions are. */
size_t maro_strset_max_probe(const struct maro_strset *s);
/*
 * A 64-bit hash of n bytes for tables: SipHash-2-4 under a random key of
 * this process (the same bytes hash differently in another process).
 */
uint64_t maro_hash64(const void *p, size_t n);

#endif
