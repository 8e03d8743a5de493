/*
 * view: the registry's entries as people and programs read them -- the
 * member table, one JSON object per member, the cluster summary (hosts,
 * types, pools), and the joins and leaves between two listings.
 *
 * Every function appends to a caller's buffer and prints nothing.  Those
 * that return int give 0, or -1 with errno ENOMEM (what was appended so
 * far stays in the buffer).
 */
#ifndef MARO_VIEW_H
#define MARO_VIEW_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "registry.h"

/*
 * The member table: a header line (unless header is 0) and one aligned row
 * per entry (NAME TYPE HOST ENDPOINT PID AGE); verbose adds the host's
 * NCPU, LOAD1, MEM and the entry's INFO.
 */
int maro_view_table(struct maro_buf *out, const struct maro_entry *v, size_t n, int header,
    int verbose);

/*
 * One entry as a JSON line.  event NULL: the entry's fields; "join": the
 * same after "event":"join"; "leave": only the event and the name.
 */
int maro_view_entry_json(struct maro_buf *out, const struct maro_entry *e, const char *event);

/*
 * A change of membership as one line: "join NAME TYPE HOST ENDPOINT" or
 * "leave NAME" (event "join" or "leave"), or its JSON line when json.
 */
int maro_view_event(struct maro_buf *out, const struct maro_entry *e, const char *event, int json);

/*
 * The cluster in one view (PARL's xparl status): first the jobs the
 * masters run (the entries with a job: stats.h), then hosts with their
 * CPUs, load and memory (as the freshest heartbeat from each host says),
 * members per type, and pools with their job counts -- as text, or as one
 * JSON line.  v is a listing of maro_registry_list_jobs: its private
 * entries (last) count as jobs only, not as members.
 */
int maro_view_status(struct maro_buf *out, const struct maro_entry *v, size_t n, int json);

/*
 * The cluster as Prometheus's text exposition format: the registry's
 * state (maro_registry_up), the jobs (maro_job_*), each member
 * (maro_component_*) and its stats (maro_messages_in_total,
 * maro_tasks_done_total, ...), hosts (maro_host_*), types (maro_members)
 * and pools (maro_pool_*), every sample labelled with the group, as
 * maro-peers(1) lists them; v as for maro_view_status.  n < 0 (v unread):
 * the registry did not answer, and the text says only that
 * (maro_registry_up 0).
 */
int maro_view_prometheus(struct maro_buf *out, const struct maro_entry *v, ssize_t n,
    const char *group);

/*
 * Whether b is the same member as a, not a new holder of the name (a
 * takeover is a leave and a join): same pid, start, host and endpoint.
 */
int maro_view_same(const struct maro_entry *a, const struct maro_entry *b);

/*
 * The changes from the listing old[0..nold) to cur[0..ncur): calls fn with
 * "leave" for each member gone or replaced, then with "join" for each one
 * new or replaced, in listing order.  Stops at the first fn that returns
 * nonzero and returns that value; 0 when all were told.
 */
int maro_view_diff(const struct maro_entry *old, size_t nold, const struct maro_entry *cur,
    size_t ncur, int (*fn)(void *arg, const struct maro_entry *e, const char *event), void *arg);

/*
 * A count the owner keeps in its info as KEY=N among words separated by
 * spaces (a pool's "jobs=4 running=4 restarts=1 gaveup=0"); -1 when absent.
 */
long maro_view_info_count(const char *info, const char *key);

#endif
