/*
 * event: conditional events, MARO's register table (maro(7), EVENTS).
 *
 *   unit    source:tag:amount
 *           source  a name prefix, or * for any
 *           tag     exact, or * for any
 *           amount  N (>= 1), or P% of the live peers matching source,
 *                   rounded up, at least 1
 *   infix   units combined with AND / OR (also && / ||) and parentheses;
 *           AND binds tighter
 *   tuples  MARO's notation, where it is unambiguous:
 *           (("w_01:update:2", "w_02:update:3", "AND"), "w_03:update:1", "OR")
 *
 * Matching takes the oldest messages first and each message once: an AND
 * consumes messages for all its parts, an OR the first part (in order)
 * that holds.  Assignment is greedy in the order the parts are written.
 */
#ifndef MARO_EVENT_H
#define MARO_EVENT_H

#include <stddef.h>

#include "message.h"
#include "registry.h"

#define MARO_EVENT_MAX_UNITS 64

struct maro_event_unit {
	char source[MARO_NAME_MAX + 1];	/* "" for * */
	char tag[MARO_NAME_MAX + 1];	/* "" for * */
	unsigned amount;		/* count, or percent when percent is set */
	int percent;
};

struct maro_event_node {
	int kind;			/* MARO_EVENT_UNIT, _AND, _OR */
	int unit;			/* index into units, for a unit */
	int child[MARO_EVENT_MAX_UNITS];
	int nchild;
};

enum { MARO_EVENT_UNIT, MARO_EVENT_AND, MARO_EVENT_OR };

struct maro_event {
	struct maro_event_unit units[MARO_EVENT_MAX_UNITS];
	int nunits;
	struct maro_event_node nodes[2 * MARO_EVENT_MAX_UNITS];
	int nnodes;
	int root;
};

/* A message as matching sees it. */
struct maro_event_msg {
	struct maro_str source;
	struct maro_str tag;
};

/*
 * Parses text into e.  0, or -1 with *col (1-based column of the fault) and
 * a message in err.
 */
int maro_event_parse(struct maro_event *e, const char *text, int *col, char *err, size_t errlen);
/* The number of messages unit i needs, given live peers matching its source (0: not yet satisfiable). */
unsigned maro_event_need(const struct maro_event_unit *u, unsigned live);
/*
 * Tries e over msgs[0..n), oldest first; live[i] counts the live peers
 * matching unit i's source.  Returns 1 when it holds, with take[j] set for
 * every message it consumes (take has n entries, cleared first); else 0.
 * have[i] and need[i] (if not NULL) report each unit's progress: matching
 * messages seen (up to need) and messages needed.
 */
int maro_event_match(const struct maro_event *e, const struct maro_event_msg *msgs, size_t n,
    const unsigned *live, unsigned char *take, unsigned *have, unsigned *need);
/* "source:tag:amount" of unit i, for messages. */
void maro_event_unit_text(const struct maro_event_unit *u, char *out, size_t len);
/* Does a message match the unit's source and tag? */
int maro_event_unit_matches(const struct maro_event_unit *u, const struct maro_event_msg *m);
/* Does a message match the source and tag of any unit of e (could it ever count)? */
int maro_event_matches_any(const struct maro_event *e, const struct maro_event_msg *m);

#endif
