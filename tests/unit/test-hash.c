/*
 * The hash of the tables that hold what peers send (message ids in the
 * duplicate filter, session ids in strsets) is keyed per process: ids made
 * to collide under a hash anyone can compute spread out all the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inbox.h"
#include "strset.h"
#include "unit.h"

#define M1 0xbf58476d1ce4e5b9ull
#define F1 0xff51afd7ed558ccdull
#define F2 0xc4ceb9fe1a85ec53ull

/* The unkeyed hash the tables used before (for 8-byte multiples only). */
static uint64_t
old_hash64(const uint8_t *b, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * M1;
		h ^= h >> 31;
	}
	h ^= h >> 33;
	h *= F1;
	h ^= h >> 33;
	h *= F2;
	h ^= h >> 33;
	return h;
}

static uint64_t
inverse(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/* the x with x ^ (x >> s) == y */
static uint64_t
unshift(uint64_t y, unsigned s)
{
	uint64_t x = y;

	for (unsigned k = s; k < 64; k += s)
		x = y ^ (x >> s);
	return x;
}

/*
 * 40-byte ids whose old hash is target: 32 bytes of prefix, then the last
 * word solved for (the old hash inverts word by word).
 */
static void
colliding_id(uint8_t id[40], uint64_t serial, uint64_t target)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ 40, w;

	memset(id, 'a', 32);
	memcpy(id, &serial, 8);
	for (int i = 0; i < 32; i += 8) {
		memcpy(&w, id + i, 8);
		h = (h ^ w) * M1;
		h ^= h >> 31;
	}
	/* undo the finalizer, the last xorshift and multiply: the word that gives target */
	w = unshift(target, 33) * inverse(F2);
	w = unshift(w, 33) * inverse(F1);
	w = unshift(w, 33);
	w = unshift(w, 31) * inverse(M1);
	w ^= h;
	memcpy(id + 32, &w, 8);
}

#define N (1u << 17)		/* the duplicate filter's size */
#define HOME_BITS 18		/* its table's index bits */

void
test_hash(void)
{
	uint8_t (*ids)[40] = malloc(N * sizeof *ids);
	uint8_t *seen = calloc(1u << HOME_BITS, 1);
	struct maro_strset s = { 0 };
	size_t i, distinct = 0, ok = 1;
	uint64_t mine, theirs = 0;
	int fd[2], st;
	pid_t pid;

	if (!ids || !seen)
		abort();
	/* ids that all fall into one slot of the old tables (home 12345), each a distinct id */
	for (i = 0; i < N; i++) {
		colliding_id(ids[i], i, (uint64_t)i << 32 | 12345);
		if ((old_hash64(ids[i], 40) & ((1u << 20) - 1)) != 12345)
			ok = 0;
	}
	CHECK(ok);
	/* the duplicate filter's hash spreads them over its 2^18 slots (about 103000 distinct homes) */
	for (i = 0; i < N; i++) {
		struct maro_str id = { (const char *)ids[i], 40 };
		size_t home = maro_inbox_id_hash(id) & ((1u << HOME_BITS) - 1);

		distinct += !seen[home];
		seen[home] = 1;
	}
	CHECK(distinct > 90000);
	/* a strset of 20000 of them: every key close to its home */
	for (i = 0; i < 20000; i++)
		if (maro_strset_add(&s, (const char *)ids[i], 40) < 0)
			ok = 0;
	CHECK(ok && s.used == 20000);
	CHECK(maro_strset_max_probe(&s) < 64);
	maro_strset_free(&s);

	/* another process hashes the same id differently: the key is its own */
	mine = maro_hash64("message-id", 10);
	if (pipe(fd) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		uint64_t h;
		char *const argv[] = { "/proc/self/exe", "--hash-child", NULL };

		/* a fresh process, not a fork that inherits the key */
		dup2(fd[1], 1);
		execv(argv[0], argv);
		h = 0;
		_exit(write(1, &h, sizeof h) == sizeof h ? 1 : 2);
	}
	close(fd[1]);
	CHECK(read(fd[0], &theirs, sizeof theirs) == sizeof theirs);
	close(fd[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(theirs != 0 && theirs != mine);
	free(ids);
	free(seen);
}

/* The child of test_hash: its hash of the same id on standard output. */
int
hash_child(void)
{
	uint64_t h = maro_hash64("message-id", 10);

	return write(1, &h, sizeof h) == sizeof h ? 0 : 1;
}
