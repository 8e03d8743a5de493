#include <string.h>

#include "name.h"

void
maro_name_type(const char *name, char type[MARO_NAME_MAX + 1])
{
	size_t n = strcspn(name, "._");

	if (n > MARO_NAME_MAX)
		n = MARO_NAME_MAX;
	memcpy(type, name, n);
	type[n] = '\0';
}

static int
name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '.' || c == '_' || c == '-';
}

int
maro_name_valid(const char *name)
{
	size_t i = name[0] == '~', n = strnlen(name, MARO_NAME_MAX + 1);

	/* its type is what comes before the first '.' or '_': never empty ("." and ".." included) */
	if (n == i || n > MARO_NAME_MAX || name[i] == '.' || name[i] == '_')
		return 0;
	for (; i < n; i++)
		if (!name_char((unsigned char)name[i]))
			return 0;
	return 1;
}
