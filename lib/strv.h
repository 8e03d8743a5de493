/*
 * strv: a growing vector of strings, as a repeated flag gathers them
 * (-d, -p, --tag, --from; opt.h binds one to a flag).  It holds the
 * pointers only: the strings stay the caller's (argv, most often).
 */
#ifndef MARO_STRV_H
#define MARO_STRV_H

#include <stddef.h>

struct maro_strv {
	char **v;	/* v[i], i < n; NULL while empty */
	size_t n;
};

/* Appends s.  0, or -1 with errno ENOMEM (the vector unchanged). */
int maro_strv_push(struct maro_strv *sv, char *s);
/* Frees the vector, not the strings, and empties it. */
void maro_strv_free(struct maro_strv *sv);

#endif
