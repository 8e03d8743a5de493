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
};

/*
 * A maro_http_fn: arg is a struct maro_monitor.  Each request of /metrics
 * or /status.json lists the registry once (opening it first when r is
 * NULL: the caller closes it), waiting on it at most budget_us
 * (maro_deadline is lowered meanwhile, clock.h); a registry that fails is
 * said in the reply (maro_registry_up 0), not as an HTTP error.
 * Unknown paths are 404.
 */
void maro_monitor_answer(void *arg, const char *path, struct maro_http_reply *rep);

#endif
