/*
 * build: messages from command-line flags (-t, -d, --json, -p, -n,
 * --task/--notification), as maro-msg and maro-send take them.
 */
#ifndef MARO_BUILD_H
#define MARO_BUILD_H

#include <stddef.h>

#include "buf.h"
#include "strv.h"

struct maro_build {
	const char *tag;
	const char *source;	/* NULL: no source key */
	int notification;	/* session_type notification instead of task */
	struct maro_strv data;	/* text payloads: one message each */
	const char *json;	/* one JSON payload (not with data) */
	struct maro_strv dests;	/* one copy per destination; none: no destination key */
};

/*
 * Appends the messages b describes to out, as a CBOR sequence, each with
 * fresh message_id and session_id, stage request.  0, or -1 with a message
 * in err (invalid JSON, with its line and column).
 */
int maro_build_messages(const struct maro_build *b, struct maro_buf *out, char *err, size_t errlen);

#endif
