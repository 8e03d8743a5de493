/*
 * route: where a message goes when its sender names no peer: a request to
 * its destination; anything else (a reply, a notification's answer) back
 * to its reply_to if it has one, else to its destination.
 */
#ifndef MARO_ROUTE_H
#define MARO_ROUTE_H

#include "cborseq.h"
#include "message.h"
#include "registry.h"

/*
 * The name m goes to, in name.  0, or -1 with err->msg (no destination, one
 * too long, one that is no valid name) and err->offset 0.
 */
int maro_route_of(const struct maro_msg *m, char name[MARO_NAME_MAX + 1], struct maro_err *err);

#endif
