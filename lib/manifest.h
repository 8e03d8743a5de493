/*
 * manifest: what a bundle's copy in the cache held when it was unpacked
 * (maro-dist(1), BUNDLES).  lib/bundle.c writes it beside the copy and
 * checks the copy against it before each use: an entry whose inode,
 * size, mode and times are those recorded is taken as unchanged (a write
 * or a chmod moves the change time, which no user can set back); one
 * that differs fails the check.  Nothing is hashed: the bundle's bytes
 * were, as they came.  Text, one record a line:
 *
 *   maro-manifest 2 HASH                          the first: the bundle described
 *   T MODE SIZE INO MTIME CTIME PATH              an entry: T is d, f or l
 *   e COUNT                                       the last: COUNT entries above
 *
 * MODE is octal (as installed), SIZE and INO decimal, MTIME and CTIME
 * nanoseconds since the epoch (decimal, maybe negative), PATH relative to
 * the bundle's root: the rest of the line.  (Version 1 had a SHA-256 of
 * each entry before PATH; a copy with such a manifest fails the check.)
 * Fields are separated by one space; no leading zeros are required or
 * refused.  Nothing here touches a file.
 */
#ifndef MARO_MANIFEST_H
#define MARO_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define MARO_MANIFEST_HASH_LEN 64

struct maro_manifest_entry {
	char type;			/* 'd', 'f' or 'l'; 'e' for the last line (size: the count) */
	unsigned mode;			/* at most 07777 */
	uint64_t size, ino;
	int64_t mtime, ctime;
	const char *path;		/* into the line parsed: non-empty, to its end */
};

/* The first line (a string, no line break): 0 with the bundle's name in hash, or -1. */
int maro_manifest_head(const char *line, char hash[MARO_MANIFEST_HASH_LEN + 1]);

/* A record line (a string, no line break): 0 with *e, or -1 for anything else. */
int maro_manifest_parse(const char *line, struct maro_manifest_entry *e);

/*
 * Writes e as a record line with its line break into out (len bytes):
 * its length, or -1 when it does not fit or e cannot be written (a path
 * empty or with a line break, a mode over 07777, a type unknown).
 */
int maro_manifest_format(const struct maro_manifest_entry *e, char *out, size_t len);

#endif
