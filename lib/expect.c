#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

int
maro_expect_parse(const char *arg, struct maro_expect *e)
{
	const char *eq = strchr(arg, '=');
	char *end;
	unsigned long n;

	memset(e, 0, sizeof e[0]);
	if (!eq || eq == arg || (size_t)(eq - arg) > MARO_NAME_MAX || !eq[1])
		goto bad;
	errno = 0;
	n = strtoul(eq + 1, &end, 10);
	if (errno || *end || n < 1 || n > 1000000 || eq[1] < '0' || eq[1] > '9')
		goto bad;
	memcpy(e->type, arg, (size_t)(eq - arg));
	if (!maro_name_valid(e->type))
		goto bad;
	e->n = (unsigned)n;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int
maro_expect_check(struct maro_registry *r, struct maro_expect *e, size_t n)
{
	struct maro_entry *v;
	ssize_t k, i;
	size_t j;
	int ok = 1;

	k = maro_registry_list(r, NULL, &v);
	if (k < 0)
		return -1;
	for (j = 0; j < n; j++) {
		e[j].have = 0;
		for (i = 0; i < k; i++)
			if (!strcmp(v[i].type, e[j].type))
				e[j].have++;
		if (e[j].have < e[j].n)
			ok = 0;
	}
	free(v);
	return ok;
}
