/*
 * monitor: what maro-peers --serve answers (maro-peers(1), ENDPOINT) --
 * the live status page at /, the cluster summary as JSON at /status.json
 * (maro_view_status's object with "group", "registry_up" and, when the
 * registry did not answer, "error" instead of the figures), and the
 * Prometheus exposition at /metrics (maro_view_prometheus).  The page is
 * in the binary: it loads nothing else than /status.json.
 */
#ifndef MARO_MONITOR_H
#define MARO_MONITOR_H

#include <stdint.h>

#include "http.h"
#include "registry.h"

struct maro_monitor {
	struct maro_registry *r;	/* NULL: not open yet (unavailable at first) */
	const char *url;		/* to open it with then (NULL: the default) */
	const char *group;
	const char *prefix;	/* only the members whose name starts with it (NULL: all) */
	int64_t budget_us;	/* the longest one listing may wait on the registry */
	char err[512];		/* why it could not be opened */
	/* the last listing, answered to every request within MARO_MONITOR_FRESH_US of it */
	struct maro_entry *seen;
	ssize_t nseen;		/* its length, or -1: the registry failed (seen_err says why) */
	int64_t seen_at;	/* when it was taken, monotonic us; 0: not yet */
	char seen_err[512];
	uint64_t listings;	/* how many listings were taken */
};

/* How long one listing answers for: the page polls once a second. */
#define MARO_MONITOR_FRESH_US 1000000

/*
 * A maro_http_fn: arg is a struct maro_monitor (zeroed, then r, url,
 * group, prefix and budget_us set).  /metrics and /status.json answer
 * from one listing of the registry, taken again when the last is
 * MARO_MONITOR_FRESH_US old (opening the registry first when r is NULL:
 * the caller closes it), waiting on it at most budget_us (maro_deadline
 * is lowered meanwhile, clock.h); so however many clients ask, the
 * registry is listed at most once a second, and never twice at a time
 * (requests are answered one at a time, http.h).  A registry that fails
 * is said in the reply (maro_registry_up 0), not as an HTTP error, and
 * asked again a second later.  Unknown paths are 404.
 */
void maro_monitor_answer(void *arg, const char *path, struct maro_http_reply *rep);
/* Frees what m keeps between requests (not m->r). */
void maro_monitor_free(struct maro_monitor *m);

#endif
