#include <stdio.h>
#include <string.h>

#include "strset.h"
#include "unit.h"

void
test_strset(void)
{
	struct maro_strset s = { 0 };
	char key[64];
	uint64_t v;
	int i, ok = 1;

	CHECK(maro_strset_count(&s, "a", 1) == 0 && maro_strset_take(&s, "a", 1) == 0);
	CHECK(maro_strset_add(&s, "a", 1) == 0 && maro_strset_add(&s, "a", 1) == 0);
	CHECK(maro_strset_count(&s, "a", 1) == 2 && s.used == 1);
	CHECK(maro_strset_take(&s, "a", 1) == 1 && maro_strset_count(&s, "a", 1) == 1);
	CHECK(maro_strset_take(&s, "a", 1) == 1 && maro_strset_count(&s, "a", 1) == 0 && s.used == 0);
	CHECK(maro_strset_put(&s, "b", 1, 42) == 0 && maro_strset_get(&s, "b", 1, &v) == 1 && v == 42);
	CHECK(maro_strset_get(&s, "a", 1, &v) == 0);
	/* put on a present key sets its value, count unchanged; on a removed one, back with 1 */
	CHECK(maro_strset_put(&s, "b", 1, 7) == 0 && maro_strset_get(&s, "b", 1, &v) == 1 && v == 7);
	CHECK(maro_strset_count(&s, "b", 1) == 1 && maro_strset_take(&s, "b", 1) == 1);
	CHECK(maro_strset_get(&s, "b", 1, &v) == 0);
	CHECK(maro_strset_put(&s, "b", 1, 9) == 0 && maro_strset_get(&s, "b", 1, &v) == 1 && v == 9);
	CHECK(maro_strset_count(&s, "b", 1) == 1);
	/* with the hash given: the same table as without it */
	CHECK(maro_strset_put_h(&s, "c", 1, maro_hash64("c", 1), 5) == 0 &&
	    maro_strset_get(&s, "c", 1, &v) == 1 && v == 5);
	CHECK(maro_strset_put(&s, "d", 1, 6) == 0 &&
	    maro_strset_get_h(&s, "d", 1, maro_hash64("d", 1), &v) == 1 && v == 6);
	CHECK(maro_strset_take_h(&s, "c", 1, maro_hash64("c", 1)) == 1 && maro_strset_get(&s, "c", 1, &v) == 0);
	CHECK(maro_strset_take_h(&s, "d", 1, maro_hash64("d", 1)) == 1 && maro_strset_count(&s, "d", 1) == 0);
	/* the hash takes the length: trailing NULs count */
	CHECK(maro_hash64("a", 1) != maro_hash64("a\0", 2) && maro_hash64("", 0) != maro_hash64("\0", 1));
	/* keys that differ only after a NUL, and the empty key */
	CHECK(maro_strset_add(&s, "x\0y", 3) == 0 && maro_strset_count(&s, "x\0z", 3) == 0);
	CHECK(maro_strset_add(&s, "", 0) == 0 && maro_strset_count(&s, "", 0) == 1);
	maro_strset_free(&s);

	/* a million sessions, never more than 100 at once: the table stays small */
	memset(&s, 0, sizeof s);
	for (i = 0; i < 1000000; i++) {
		snprintf(key, sizeof key, "session-%d", i);
		if (maro_strset_add(&s, key, strlen(key)) < 0)
			ok = 0;
		if (i >= 100) {
			snprintf(key, sizeof key, "session-%d", i - 100);
			if (maro_strset_take(&s, key, strlen(key)) != 1)
				ok = 0;
		}
	}
	CHECK(ok);
	CHECK(s.used == 100);
	CHECK(s.cap <= 1024);
	for (i = 999900; i < 1000000 && ok; i++) {
		snprintf(key, sizeof key, "session-%d", i);
		ok = maro_strset_count(&s, key, strlen(key)) == 1;
	}
	CHECK(ok);
	/* all taken: no tombstone is left behind, every slot is empty again */
	for (i = 999900; i < 1000000; i++) {
		snprintf(key, sizeof key, "session-%d", i);
		maro_strset_take(&s, key, strlen(key));
	}
	CHECK(s.used == 0 && s.filled == 0);
	maro_strset_free(&s);

	/* keys too long for a slot have copies of their own; they survive rebuilds */
	memset(&s, 0, sizeof s);
	memset(key, 'k', sizeof key);
	for (i = 0; i < 500; i++) {
		snprintf(key + MARO_STRSET_INLINE, 16, "%d", i);
		if (maro_strset_put(&s, key, strlen(key), (uint64_t)i) < 0)
			ok = 0;
		snprintf(key + MARO_STRSET_INLINE, 16, "%d", i / 2);
		if (i % 2 && maro_strset_take(&s, key, strlen(key)) != 1)
			ok = 0;
	}
	CHECK(ok && s.used == 250);
	for (i = 0; i < 500 && ok; i++) {
		snprintf(key + MARO_STRSET_INLINE, 16, "%d", i);
		ok = maro_strset_get(&s, key, strlen(key), &v) == (i >= 250) && (i < 250 || v == (uint64_t)i);
	}
	CHECK(ok);
	maro_strset_free(&s);
}
