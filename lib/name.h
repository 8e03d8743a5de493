/*
 * name: the names of a group's members (maro(7), NAMES).  A name is 1 to
 * 128 bytes of letters, digits, '.', '_' and '-', not first '.' or '_'; a
 * private one (a requester's reply inbox) is '~' then such a name.  Its
 * type is what comes before its first '.' or '_' (worker.3: worker).
 */
#ifndef MARO_NAME_H
#define MARO_NAME_H

#define MARO_NAME_MAX 128

/* The type of a name: up to the first '.' or '_' (the whole name if none). */
void maro_name_type(const char *name, char type[MARO_NAME_MAX + 1]);
/* Is it a valid name, or '~' and one? */
int maro_name_valid(const char *name);

#endif
