/*
 * tool-replies: the replies a requester took (maro-send, maro-bcast): the
 * answers, and the failure replies (maro(7), SESSIONS) by kind, each said
 * on standard error.  Part of the front end: it prints.
 */
#ifndef MARO_TOOL_REPLIES_H
#define MARO_TOOL_REPLIES_H

#include <stdint.h>

#include "message.h"

struct maro_tool_replies {
	uint64_t got;		/* every reply taken, failures included */
	uint64_t failed;	/* "'w.1' failed the task in session S: ..." */
	uint64_t no_handler;	/* "'w.1' has no handler for tag 'x'" */
};
/*
 * Counts reply m in r: 1 when it is an answer, to be written out; 0 when
 * it is a failure reply, said on standard error (escaped) and not written.
 */
int maro_tool_reply(struct maro_tool_replies *r, const struct maro_msg *m);
/* status made worse by r's failure replies: 69 for a peer without a handler, 3 for a failed task. */
int maro_tool_replies_status(const struct maro_tool_replies *r, int status);

#endif
