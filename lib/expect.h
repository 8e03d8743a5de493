/*
 * expect: "TYPE=N" — wait until N peers of a type are live (the slow-joiner
 * fix: a sender waits for its receivers before it sends).
 */
#ifndef MARO_EXPECT_H
#define MARO_EXPECT_H

#include <stddef.h>

#include "registry.h"

struct maro_expect {
	char type[MARO_NAME_MAX + 1];
	unsigned n;
	unsigned have;		/* filled by maro_expect_check */
};

/* Parses "TYPE=N" (N >= 1).  0, or -1 EINVAL. */
int maro_expect_parse(const char *arg, struct maro_expect *e);
/* Counts live peers of each type into e[i].have.  1 when all are met, 0 if not yet, -1 on a registry error. */
int maro_expect_check(struct maro_registry *r, struct maro_expect *e, size_t n);

#endif
