/*
 * registry-impl: what the common part of the registry (registry.c) and its
 * backends (registry-dir.c, registry-redis.c) share.  Not for tools.
 *
 * The common part owns the handle: URL dispatch, validation, the entries
 * this handle registered (re-sent at every heartbeat), the owner token,
 * the error message, filtering and sorting of listings.  A backend only
 * stores and fetches entries, and decides liveness.
 */
#ifndef MARO_REGISTRY_IMPL_H
#define MARO_REGISTRY_IMPL_H

#include <stdint.h>
#include <sys/types.h>

#include "registry.h"

/* An owner token: 32 hex digits from getrandom(2), one per handle. */
#define MARO_TOKEN_LEN 32
/* The entry MAC (keyed BLAKE2b-256), as stored: 64 hex digits. */
#define MARO_MAC_BYTES 32
#define MARO_MAC_HEX (2 * MARO_MAC_BYTES)
/* names whose notice a handle gave (maro_registry_notice), each kind */
#define MARO_NOTICED_MAX 8
/* MARO_TTL bounds; opts->ttl_ms is taken as given (tests use tiny ones). */
#define MARO_TTL_DEFAULT_MS 5000
#define MARO_TTL_MIN_MS 2000
#define MARO_TTL_MAX_MS 3600000

/*
 * Joining (opening the registry, a name's first write) asks a registry
 * that does not answer in time again, until -W or for this long without it
 */
#define JOIN_WAIT_US 60000000

struct maro_registry_backend;

/* A growing array for list. */
struct maro_registry_list {
	struct maro_entry *v;
	size_t n, cap;
	int jobs;		/* the private entries with a job too (maro_registry_list_jobs) */
};

struct maro_registry {
	const struct maro_registry_backend *be;
	void *priv;				/* the backend's state */
	char group[MARO_NAME_MAX + 1];
	char url[512];				/* as given, without a password: for messages */
	int64_t ttl_ms;
	char token[MARO_TOKEN_LEN + 1];
	char err[512];
	struct maro_entry *own;			/* what this handle registered */
	size_t nown, capown;
	struct maro_entry status;		/* the host's figures (ncpu, load1, mem) */
	int64_t status_us;			/* when they were read (maro_now_us), 0 never */
	int keyed;				/* a group key: entries carry a MAC under mac_key */
	unsigned char mac_key[MARO_MAC_BYTES];	/* wiped at close */
	/*
	 * Set by a backend's put when what it found under the name had been
	 * changed by someone else (a wrong MAC, or fields not as this handle
	 * wrote them); cleared and read by the common part around a refresh.
	 */
	int altered;
	char noticed[2][MARO_NOTICED_MAX][MARO_NAME_MAX + 1];
};

/*
 * Every function returns 0 (or 1/0 for get) or -1 with
 * maro_registry_fail() called.  Entries handed to put are complete (host,
 * pid, ... filled) and valid; entries handed back by get and list have
 * passed maro_registry_entry_check() and carry heartbeat_age_ms.
 */
struct maro_registry_backend {
	const char *kind;
	/* where: the URL without "dir:" for dir, the whole URL for redis */
	int (*open)(struct maro_registry *r, const char *where);
	void (*close)(struct maro_registry *r);
	/*
	 * Writes e when its name is free, dead, expired or already this
	 * handle's (same token); with takeover, whatever holds it.  Otherwise
	 * -1/EEXIST and *holder filled (holder is never NULL).
	 */
	int (*put)(struct maro_registry *r, const struct maro_entry *e, int takeover,
	    struct maro_entry *holder);
	/* Removes name if this handle (token) owns it; 0 when it does not. */
	int (*del)(struct maro_registry *r, const char *name);
	/* 1 live, 0 not live or garbage, -1 error */
	int (*get)(struct maro_registry *r, const char *name, struct maro_entry *e);
	/* Every live entry starting with prefix ("" for all), unsorted, added with maro_registry_collect. */
	int (*list)(struct maro_registry *r, const char *prefix, struct maro_registry_list *out);
	const char *(*local_address)(const struct maro_registry *r);
	/* Makes what a member needs before it binds (dir: the directory); NULL: nothing to make. */
	int (*prepare)(struct maro_registry *r);
	/* Appends the registry's groups to (*names)[0..*n): maro_registry_groups. */
	int (*groups)(struct maro_registry *r, char ***names, size_t *n);
};

extern const struct maro_registry_backend maro_registry_dir_backend;
extern const struct maro_registry_backend maro_registry_redis_backend;

/* Sets the handle's message and errno; returns -1. */
int maro_registry_fail(struct maro_registry *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Wall clock, ms since the epoch. */
int64_t maro_registry_wall_ms(void);

/*
 * The stored form of an entry: the same field names in both backends.
 * maro_registry_fields() lists an entry's own fields (name, type, endpoint,
 * host, pid, started, ncpu, load1, mem, info, stats, job, version) as key/value
 * strings; the backend adds its bookkeeping fields (token, hb, ttl, and
 * owner for dir).
 */
#define MARO_REGISTRY_NFIELDS 13
struct maro_registry_fields {
	const char *key[MARO_REGISTRY_NFIELDS];
	const char *val[MARO_REGISTRY_NFIELDS];
	char num[5][32];
};
void maro_registry_fields(const struct maro_entry *e, struct maro_registry_fields *f);

/*
 * The fields the MAC covers, in its order: the entry's own (as
 * maro_registry_fields lists them), then token, ttl and owner; job and
 * version only when they are not empty (maro(7): an entry without them has
 * the MAC it had before there were jobs and versions).
 */
#define MARO_MAC_NFIELDS (MARO_REGISTRY_NFIELDS + 3)

/* What a stored entry says besides the entry: filled by maro_registry_field. */
struct maro_registry_meta {
	int64_t hb_ms;				/* last heartbeat, the backend's clock */
	int64_t ttl_ms;
	char token[MARO_TOKEN_LEN + 1];
	char owner[64];				/* dir: the owner's lock file */
	unsigned seen;				/* required fields met, one bit each */
	/* the covered fields as stored (absent: NULL), valid while the stored bytes are */
	const char *raw[MARO_MAC_NFIELDS];
	size_t rawlen[MARO_MAC_NFIELDS];
	unsigned char mac[MARO_MAC_BYTES];
	int has_mac;
	int mac_bad;				/* set by maro_registry_entry_check */
};

/*
 * One stored field into e or m.  Values are bytes (not NUL-terminated).
 * Returns -1 when the value is unusable: the whole entry is then garbage
 * and must be skipped.  Unknown keys are ignored (0).
 */
int maro_registry_field(struct maro_entry *e, struct maro_registry_meta *m, const char *key,
    size_t klen, const char *val, size_t vlen);
/*
 * 0 when every required field was seen and valid and, with a group key,
 * the MAC is right; -1 otherwise (with m->mac_bad, r->altered set and a
 * notice given when only the MAC fails).  Call it while the stored bytes
 * the fields came from are still there (m->raw points into them).
 */
int maro_registry_entry_check(struct maro_registry *r, const struct maro_entry *e,
    struct maro_registry_meta *m);
/*
 * The MAC of an entry as a writer stores it: its fields f, its token, ttl
 * (as stored, decimal) and owner ("" on Redis), as MARO_MAC_HEX hex digits
 * in out; "" without a group key.
 */
void maro_registry_mac(const struct maro_registry *r, const struct maro_registry_fields *f,
    const char *token, const char *ttl, const char *owner, char out[MARO_MAC_HEX + 1]);
/*
 * The MAC of the covered fields as stored (val[i], len[i] in the order of
 * MARO_MAC_NFIELDS; NULL: absent, read as empty) of an entry of group, in
 * out.  -1 when a value holds a newline (no writer stores one), else 0.
 */
int maro_registry_mac_raw(const unsigned char key[MARO_MAC_BYTES], const char *group,
    const char *const *val, const size_t *len, unsigned char out[MARO_MAC_BYTES]);

/*
 * Whether an entry named name belongs in the listing l of prefix, by its
 * name: public and starting with prefix, or with l->jobs private and
 * starting with it after its '~' (maro_registry_collect then wants a job).
 */
int maro_registry_listed(const struct maro_registry_list *l, const char *name, const char *prefix);
/* Appends e unless it is private (and, with l->jobs, has no job); -1 ENOMEM. */
int maro_registry_collect(struct maro_registry *r, struct maro_registry_list *l,
    const struct maro_entry *e);

/* Does s (n bytes) look like tcp://HOST:PORT or ipc://PATH? */
int maro_registry_endpoint_ok(const char *s, size_t n);

#endif
