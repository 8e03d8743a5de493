/* maro: the internal library every tool links.  One header per module. */
#ifndef MARO_H
#define MARO_H

#include "buf.h"
#include "build.h"
#include "cborseq.h"
#include "cli.h"
#include "clock.h"
#include "convert.h"
#include "curve.h"
#include "expect.h"
#include "format.h"
#include "inbox.h"
#include "input.h"
#include "loop.h"
#include "message.h"
#include "name.h"
#include "opt.h"
#include "outbox.h"
#include "registry.h"
#include "reply.h"
#include "route.h"
#include "requester.h"
#include "stats.h"
#include "strset.h"
#include "strv.h"
#include "tool.h"
#include "trace.h"
#include "transport.h"
#include "utf8.h"
#include "view.h"

#endif
