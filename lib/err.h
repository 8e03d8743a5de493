/*
 * err: what went wrong, for the caller to say.  A function that can fail
 * for a reason a person should read fills one: a sentence (no name of the
 * tool, no newline), and for a stream the byte where it went wrong.
 */
#ifndef MARO_ERR_H
#define MARO_ERR_H

#include <stdint.h>

/* What went wrong, and where: offset counts bytes from the start of the stream. */
struct maro_err {
	uint64_t offset;
	char msg[200];
};

#endif
