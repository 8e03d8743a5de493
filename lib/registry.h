/*
 * registry: who is live in a group, and where their inboxes are.
 *
 * Two backends behind this one interface, chosen by URL:
 *   redis://[user:password@]host:port[/db]   many hosts (hiredis)
 *   redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]
 *                                            the same, on the primary the
 *                                            sentinels name, through failovers
 *   dir:PATH                                 one host, no server
 * The default URL is dir:$XDG_RUNTIME_DIR/maro, or dir:/tmp/maro-$UID when
 * XDG_RUNTIME_DIR is unset (maro_registry_default_url).
 *
 * An entry names one inbox.  It lives while its owner heartbeats: the owner
 * calls maro_registry_heartbeat() every quarter to third of the TTL
 * (maro_tool_next_beat, tool.h) and an entry whose
 * heartbeat is older than the owner's TTL (default 5 s) is gone for every
 * reader.  dir: also drops an entry the moment its owner's process dies.
 * Each heartbeat publishes the process's counters (stats.h) in the entry's
 * stats; on dir: a heartbeat that changes only them rewrites the entry at
 * most every 5 s (an idle member's do not change: it only touches it).  A
 * master publishes its job in its entry's job (maro_registry_set_job),
 * written at every heartbeat that finds it changed: one entry per job.
 * The stored layouts: registry-dir.c, registry-redis.c, and maro(7).
 * A name is held by one live owner; names starting with '~' are private
 * inboxes (reply inboxes of blocking senders): lookups find them, listings
 * and prefix matches skip them.
 *
 * With a group key (MARO_KEYFILE, curve.h) every entry carries a MAC over
 * its fields under a key derived from the group key (maro(7), REGISTRY):
 * readers skip an entry whose MAC is wrong or missing, and an owner that
 * finds its entry changed by someone else (a wrong MAC, or fields that are
 * not what it wrote) writes it back at its next heartbeat, and says so
 * through maro_registry_notice.  Without a key, entries are taken as
 * they are found.
 *
 * Functions return 0 (or a count) on success and -1 on failure with errno
 * set and a message for maro_registry_error(): ECONNREFUSED, EHOSTUNREACH,
 * ETIMEDOUT, EACCES (authentication: the message never contains the
 * password), EEXIST (name held), EPROTO (an unexpected reply), EINVAL
 * (a bad URL, group, name, endpoint or MARO_TTL).  Garbage found in the
 * backend is never an error: readers skip it, registrants overwrite it.
 */
#ifndef MARO_REGISTRY_H
#define MARO_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "name.h"
#include "stats.h"

#define MARO_ENDPOINT_MAX 256
#define MARO_HOST_MAX 256
#define MARO_INFO_MAX 256
#define MARO_ENTRY_VERSION_MAX 32

struct maro_entry {
	char name[MARO_NAME_MAX + 1];
	char type[MARO_NAME_MAX + 1];		/* name up to the first '.' or '_', unless set */
	char endpoint[MARO_ENDPOINT_MAX + 1];	/* a ZeroMQ endpoint: tcp://... or ipc://... */
	char host[MARO_HOST_MAX + 1];		/* filled by register: gethostname() */
	pid_t pid;				/* filled by register */
	int64_t started_ms;			/* filled by register: wall clock, ms since the epoch */
	int64_t heartbeat_age_ms;		/* filled by lookup/list */
	int ncpu;				/* filled by register/heartbeat */
	double load1;				/* 1-minute load average, likewise */
	uint64_t mem_used_kb;			/* host memory in use, likewise */
	char info[MARO_INFO_MAX + 1];		/* free text set by the owner (e.g. pool counts);
						   control bytes read as spaces, bad UTF-8 as '?' */
	char stats[MARO_STATS_MAX + 1];		/* the owner's counters (stats.h: maro_stats_text),
						   filled by register/heartbeat; optional: one too
						   long or with a NUL reads as empty, and is cleaned
						   as info is */
	char version[MARO_ENTRY_VERSION_MAX + 1]; /* the tools' version, MAJOR.MINOR.PATCH
						   (filled by register); optional: one that is
						   not digits and dots reads as empty */
	char job[MARO_STATS_JOB_MAX + 1];	/* the job its owner runs (stats.h:
						   maro_stats_job_text), "" for none: set by
						   maro_registry_set_job; optional and read as
						   stats is */
};

struct maro_curve_key;

struct maro_registry_opts {
	int64_t ttl_ms;		/* 0: $MARO_TTL (1s..1h, raised to at least 2s), else 5000 */
	/* the group key, loaded already (keyfile is then ignored); NULL: keyfile */
	const struct maro_curve_key *key;
	const char *keyfile;	/* NULL: $MARO_KEYFILE; NULL or "": no key */
};

/*
 * Where the registry says what a tool may tell its user, each at most once
 * per name and handle: level 0 (for -v) an entry skipped for a wrong or
 * missing MAC; level 1 (always) an entry of this handle found changed by
 * someone else and written back.  The message names the entry, quotes
 * nothing else it read, and has no final newline.  NULL (the default):
 * nowhere.
 */
extern void (*maro_registry_notice)(int level, const char *msg);

struct maro_registry;

/* The default URL (a static string). */
const char *maro_registry_default_url(void);
/*
 * Connects (redis) or opens the group's directory (dir) if it is there:
 * opening, looking up and listing create nothing (a mistyped group or
 * path leaves no trace); the directory (mode 0700, and those above it) is
 * made by the first registration or maro_registry_prepare, and removed
 * when its last member leaves.  url NULL means $MARO_REGISTRY or the default; group NULL means
 * $MARO_GROUP or "maro"; the password may also come from
 * $MARO_REDIS_PASSWORD (when the URL has none).  opts NULL, or without a
 * key, reads the key file opts->keyfile or $MARO_KEYFILE, if any (a bad
 * one, or one others may read: EINVAL).  A URL with a %XX
 * escape that is not two hex digits, or that decodes to a NUL byte, is
 * EINVAL.  On failure returns NULL
 * with errno and, if errbuf is not NULL, a message (without the password)
 * in errbuf.  opts may be NULL.
 */
struct maro_registry *maro_registry_open(const char *url, const char *group,
    const struct maro_registry_opts *opts, char *errbuf, size_t errlen);
/* Removes every entry this handle registered, then disconnects. */
void maro_registry_close(struct maro_registry *r);
const char *maro_registry_error(const struct maro_registry *r);
/* The URL, as given or defaulted, without a password (for messages). */
const char *maro_registry_url(const struct maro_registry *r);
const char *maro_registry_group(const struct maro_registry *r);
/*
 * Makes ready what a member needs before it binds an inbox in the group's
 * place (dir: creates the directory).  Registering does it too.  0, or -1.
 */
int maro_registry_prepare(struct maro_registry *r);
/*
 * The registry's groups that have members (dir: the group directories;
 * redis: the members keys), sorted, appended to (*names)[0..*n) as new
 * strings the caller frees.  The count appended, or -1 (ENOENT for a dir:
 * registry whose directory does not exist).
 */
ssize_t maro_registry_groups(struct maro_registry *r, char ***names, size_t *n);
/* "redis" or "dir" */
const char *maro_registry_kind(const struct maro_registry *r);
/*
 * For redis: the local address of the connection to the server, a good
 * address to advertise (the one peers route to).  NULL for dir.
 */
const char *maro_registry_local_address(const struct maro_registry *r);
/* How long this process's entries outlive their last heartbeat (ms). */
int64_t maro_registry_ttl_ms(const struct maro_registry *r);

/*
 * Registers e->name (e->type, e->endpoint, e->info, e->job are the caller's; host,
 * pid, start time and load are filled in; an empty type is derived from
 * the name, without its '~').  If the name is held by another live owner
 * (another handle, even in this process): with takeover the entry is
 * replaced (the old owner learns it at its next heartbeat), without it
 * -1/EEXIST and *holder (if not NULL) describes the holder.  A handle may
 * register several names; registering one of its own again updates it.
 * The endpoint must be tcp://HOST:PORT or ipc://PATH (else EINVAL).
 */
int maro_registry_register(struct maro_registry *r, const struct maro_entry *e,
    int takeover, struct maro_entry *holder);
/* Updates the free-text info of a registered name (shown by maro-peers). */
int maro_registry_set_info(struct maro_registry *r, const char *name, const char *info);
/*
 * Sets the job (stats.h: maro_stats_job_text) the entry of a registered
 * name publishes; NULL or "" for none.  The next heartbeat writes it, but
 * a job the entry had not is written at once, so that a job is listed
 * from its start.  A private name's entry with a job is listed by
 * maro_registry_list_jobs.  0, or -1 (ENOENT: not this handle's name; or
 * the write's error).
 */
int maro_registry_set_job(struct maro_registry *r, const char *name, const char *job);
/*
 * Refreshes every entry of this handle.  Reconnects after a lost connection
 * and registers again entries the backend lost (a restarted Redis) or let
 * expire, unless another owner has the name meanwhile.  Returns 0; -1 when
 * the backend is unreachable (try again later); or -1/EEXIST when a name
 * was taken over by another owner (maro_registry_error names it): that
 * name is no longer this handle's, the others were refreshed.
 */
int maro_registry_heartbeat(struct maro_registry *r);
/* Removes one entry of this handle at once (0 if the name is not this handle's). */
int maro_registry_unregister(struct maro_registry *r, const char *name);
/*
 * 1 with *e when name is live, 0 when it is not (or invalid, or garbage),
 * -1 on error.  0 with errno EKEYREJECTED: with a group key, an entry is
 * there but fails its MAC (its holder has no group key, or another
 * group's; or someone without the key changed it).
 */
int maro_registry_lookup(struct maro_registry *r, const char *name, struct maro_entry *e);
/*
 * The live, non-private entries whose name starts with prefix (NULL or ""
 * for all), sorted by name, in a new array the caller frees.  Returns the
 * count, or -1.
 */
ssize_t maro_registry_list(struct maro_registry *r, const char *prefix,
    struct maro_entry **out);
/*
 * As maro_registry_list, and also the private entries that publish a job
 * (the reply inbox of a blocking maro-scatter: a job's master), matched
 * by their name after the '~'.  Sorted by name, so the private ones come
 * last ('~' sorts after every other character of a name).
 */
ssize_t maro_registry_list_jobs(struct maro_registry *r, const char *prefix,
    struct maro_entry **out);
/*
 * The names of the entries maro_registry_list gives, appended to
 * (*names)[0..*n) as new strings; the caller frees them and the array.
 * The count appended, or -1 (ENOMEM, or the list's error).
 */
ssize_t maro_registry_names(struct maro_registry *r, const char *prefix, char ***names, size_t *n);

#endif
