/*
 * tool: the lifecycle every tool shares, above cli and opt.
 *
 * A tool parses its options (opt.h), then calls maro_tool_open: signals
 * caught, the -W clock started (it bounds the whole run, the registry's
 * first words included), the context open; then, if it receives,
 * maro_tool_inbox; then, if it was given -e, maro_tool_expect.  Each dies
 * with the documented exit status and one wording for every tool: 2 for a
 * bad group, key file or registry URL, 69 when the registry or the name is
 * not to be had.  What is left to a tool's main is what is particular to it.
 */
#ifndef MARO_TOOL_H
#define MARO_TOOL_H

#include <stdint.h>

#include "bundle.h"
#include "inbox.h"
#include "opt.h"
#include "outbox.h"
#include "transport.h"

/*
 * Catches SIGINT and SIGTERM, sets maro_deadline from cm->timeout (into
 * *deadline too: monotonic us, INT64_MAX without -W) and opens the context.
 */
struct maro_ctx *maro_tool_open(struct maro_common *cm, int64_t *deadline);
/*
 * For a tool that only reads the registry (maro-peers): signals and the -W
 * clock as maro_tool_open, then the group's registry (the group from -g,
 * MARO_GROUP or 'maro'), dying as maro_tool_ctx does.
 */
struct maro_registry *maro_tool_registry(struct maro_common *cm, int64_t *deadline);
/* Only opens the context, for a tool whose -W is not a bound on the whole run (maro-pool). */
struct maro_ctx *maro_tool_ctx(struct maro_common *cm);

/*
 * Binds the inbox under cm->name (type cm->type, cm->takeover).  A name
 * held by another live process dies naming the holder and, after it, hint
 * (NULL: "use --takeover").
 */
struct maro_inbox *maro_tool_inbox(struct maro_ctx *c, const struct maro_common *cm, const char *hint);

/*
 * Waits until cm's -e expectations hold.  0, or the status to leave with
 * (maro_cli_expect_wait, cli.h).
 */
int maro_tool_expect(struct maro_ctx *c, struct maro_common *cm, int64_t deadline);

/*
 * --bundle: gets the bundle member server serves into this host's cache
 * (or finds it there) as member cm->name, within deadline, into *got;
 * says on -v how many bytes moved, and how a transfer that lasts goes
 * (once a second, unless -q).  Dies with 65 for a hostile bundle, 69 when
 * the server refuses, 70 when the cache cannot be written, 124 at the
 * deadline, 2 for a limit variable that is no size.  The bundle's
 * directory (got->dir).
 */
const char *maro_tool_bundle(struct maro_ctx *c, const struct maro_common *cm, const char *server,
    int64_t deadline, struct maro_bundle_got *got);

/*
 * --clear-bundles: clears this user's bundle cache (maro_bundle_clear),
 * says what it did on stderr.  0 when the cache is gone (or was never
 * there), 1 when a bundle in use was kept or an entry could not be
 * removed; dies with 70 when the cache is not the user's own.
 */
int maro_tool_bundle_clear(void);

/*
 * When the heartbeat after one at now is due (maro_registry_heartbeat):
 * between a quarter and a third of the registry's TTL later, at random, so
 * that a thousand members started in the same second neither beat in the
 * same millisecond nor more often than they must.
 */
int64_t maro_tool_next_beat(struct maro_ctx *c, int64_t now);

/*
 * The heartbeat of a tool's loop, when now has reached *next: refreshes
 * the registry's entries (maro_registry_heartbeat), says once what the
 * transport rejected and what ib (NULL: none) refused as malformed since
 * the last beat, and sets *next to the following one.  Returns the
 * heartbeat's -1 (errno EEXIST: a name was taken over), else 0.
 */
int maro_tool_beat(struct maro_ctx *c, struct maro_inbox *ib, int64_t now, int64_t *next);


/*
 * Says once on stderr, for each destination that messages wait for and
 * that has no live member by its name, what is awaited ("no member named
 * 'x' in group 'g' on dir:PATH; waiting (-W: 59s left)"): after it has
 * been missing for 1 s, at once under -v or with fail_fast (then "not
 * waiting for it").  Walks the destinations at most every 200 ms (but
 * with fail_fast); returns how many are missing then, else 0.
 */
size_t maro_tool_report_missing(const struct maro_common *cm, struct maro_ctx *c,
    struct maro_outbox *ob, int64_t deadline, int fail_fast);
/*
 * Says on stderr "WHAT in group 'g' on dir:PATH; waiting (-W: 59s left)"
 * (or without end, or "not waiting for it (--fail-fast)" with fail_fast).
 */
void maro_tool_say_waiting(const struct maro_common *cm, struct maro_ctx *c, const char *what,
    int64_t deadline, int fail_fast);
/*
 * For a work queue over a prefix: once work has waited (waiting) for a
 * second with no live peer matching prefix (at once under -v), says so
 * once (maro_tool_say_waiting).  Called at every turn.
 */
void maro_tool_report_no_peer(const struct maro_common *cm, struct maro_ctx *c, const char *prefix,
    int waiting, int64_t deadline);

/*
 * Whether a tool's loop ends at this turn: 0 to go on, the signal's status
 * (130, 143) after SIGINT or SIGTERM, 124 at the deadline.
 */
int maro_tool_stop(int64_t deadline);

#endif
