#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "strv.h"

int
maro_strv_push(struct maro_strv *sv, char *s)
{
	char **t;

	if (sv->n >= SIZE_MAX / sizeof *t - 1 || !(t = realloc(sv->v, (sv->n + 1) * sizeof *t))) {
		errno = ENOMEM;
		return -1;
	}
	t[sv->n++] = s;
	sv->v = t;
	return 0;
}

void
maro_strv_free(struct maro_strv *sv)
{
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}
