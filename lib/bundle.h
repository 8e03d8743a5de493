/*
 * bundle: a job's directory shipped through the group (maro-dist(1),
 * BUNDLES), named by the SHA-256 of its packed form and kept in a cache
 * on each host.
 *
 * The packed form is a stream of records, each a header line and the
 * bytes it announces, sorted by path, a directory before what it holds:
 *
 *   maro-bundle 1\n                     the first line
 *   d MODE PATH\n                       a directory
 *   f MODE SIZE PATH\n  SIZE bytes      a regular file
 *   l SIZE PATH\n  SIZE bytes           a symbolic link and its target
 *   e\n                                 the end: nothing may follow
 *
 * MODE is octal, SIZE decimal, PATH relative to the bundle's root.  The
 * bundle's name is the SHA-256 of the whole stream, in lower-case hex.
 *
 * A server (maro-dist --serve-bundle) packs a directory once into an
 * unlinked temporary file and answers requests for chunks of it; a
 * fetcher (maro-dist --bundle) asks for the name and size, and when its
 * cache lacks that name, fetches the stream in chunks into a temporary
 * directory inside the cache, checks its hash, unpacks it there under the
 * rules below, and renames it into place, with a manifest (lib/manifest.h)
 * beside it, HASH.manifest, that the copy is checked against at each later
 * use.  The cache is opened once, each directory from the root down
 * checked, and used by its handle after.  Nothing here prints or exits.
 *
 * Rules of unpacking (a stream that breaks one is hostile): a path is
 * relative, without empty, "." or ".." components, and is new; its
 * parents are directories of the bundle (not links); a link's target is
 * relative and without ".."; only d, f and l records (no devices, fifos,
 * sockets); modes keep their 0777 bits (set-uid, set-gid and sticky bits
 * dropped); a file at most file_max bytes, all files at most bundle_max.
 */
#ifndef MARO_BUNDLE_H
#define MARO_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cborseq.h"
#include "message.h"
#include "transport.h"

#define MARO_BUNDLE_TAG "maro.bundle"
#define MARO_BUNDLE_CHUNK (256u << 10)
#define MARO_BUNDLE_HASH_LEN 64
#define MARO_BUNDLE_MAX_DEFAULT (1ull << 30)		/* MARO_BUNDLE_MAX */
#define MARO_BUNDLE_FILE_MAX_DEFAULT (1ull << 30)	/* MARO_BUNDLE_FILE_MAX */
#define MARO_BUNDLE_CACHE_MAX_DEFAULT (4ull << 30)	/* MARO_BUNDLE_CACHE_MAX */

/* What a bundle operation could not do (errors in err->msg). */
enum maro_bundle_fault {
	MARO_BUNDLE_OK = 0,
	MARO_BUNDLE_HOSTILE,	/* the stream breaks the rules, or its hash is not its name */
	MARO_BUNDLE_BAD_DIR,	/* the directory to serve holds what cannot be shipped */
	MARO_BUNDLE_IO,		/* a file or the cache could not be read or written: errno text in err */
	MARO_BUNDLE_REFUSED,	/* the server has no such bundle, failed the request, or refused us (CURVE) */
	MARO_BUNDLE_TIMEOUT,	/* the deadline came */
	MARO_BUNDLE_SIGNAL,	/* SIGINT or SIGTERM came (maro_signal) */
	MARO_BUNDLE_NOMEM,
};

/* A packed bundle a server answers from. */
struct maro_bundle_srv {
	int fd;
	uint64_t size;
	char hash[MARO_BUNDLE_HASH_LEN + 1];
	uint8_t *chunk;
};

/*
 * Packs directory path (or takes path, a regular file, as a packed stream
 * already) and names it.  0, or a fault.
 */
int maro_bundle_srv_open(struct maro_bundle_srv *s, const char *path, struct maro_err *err);
void maro_bundle_srv_close(struct maro_bundle_srv *s);
/*
 * The payload of the reply to a maro.bundle request whose payload is req
 * (an encoded CBOR item): the text "HASH SIZE" to an empty text, the
 * bytes of a chunk to "HASH OFFSET".  0 with the encoded payload in out,
 * or -1 with a text for a failure reply in why.
 */
int maro_bundle_srv_answer(struct maro_bundle_srv *s, const uint8_t *req, size_t n,
    struct maro_buf *out, char *why, size_t len);

/* The limits of a fetcher, from the environment (MARO_BUNDLE_MAX, ...) or their defaults. */
struct maro_bundle_limits {
	uint64_t bundle_max, file_max, cache_max;
	uint64_t rate;		/* MARO_BUNDLE_RATE: bytes a second a fetch may take, 0 no cap */
};
/* -1 with the offending variable's name in *bad when one is not a size. */
int maro_bundle_limits_env(struct maro_bundle_limits *l, const char **bad);

/* The cache directory: MARO_BUNDLE_CACHE, else $XDG_CACHE_HOME/maro/bundles, else ~/.cache/maro/bundles. */
int maro_bundle_cache_dir(char *out, size_t len);

/* What a fetch got. */
struct maro_bundle_got {
	char hash[MARO_BUNDLE_HASH_LEN + 1];
	char path[4096 + 80];		/* the bundle's root in the cache, for messages */
	char dir[64];			/* the same through its handle (/proc/self/fd/N): a path no rename redirects */
	char altered[200];		/* the copy in the cache failed its check, why (it was fetched again); or "" */
	uint64_t size;			/* of the stream */
	uint64_t fetched;		/* bytes of it that came over the transport: 0 from the cache */
	int lock_fd;			/* the root's handle, held (shared) while it is in use: eviction passes it by */
};

/* A transfer that lasts: called once a second from its second on, with the bytes fetched and all. */
typedef void maro_bundle_progress_fn(void *arg, uint64_t done, uint64_t size);

/*
 * Gets the bundle server serves into the cache, unless it is there: as
 * member owner (its reply inbox), within deadline (monotonic us), telling
 * progress (NULL: no one) how a long transfer goes.  0 with *got, or a
 * fault with err.
 */
int maro_bundle_fetch(struct maro_ctx *c, const char *owner, const char *server,
    const struct maro_bundle_limits *lim, int64_t deadline, maro_bundle_progress_fn *progress,
    void *arg, struct maro_bundle_got *got, struct maro_err *err);

/* What maro_bundle_clear did. */
struct maro_bundle_cleared {
	char path[4096];		/* the cache */
	uint64_t removed;		/* bundles removed */
	uint64_t kept;			/* bundles kept: in use by a running worker, or being fetched */
	uint64_t failed;		/* entries that could not be removed */
	uint64_t bytes;			/* what the bundles removed held (each entry 512 bytes at least) */
	int gone;			/* the cache itself is gone (or was never there) */
};

/*
 * Clears the cache (opened and checked as a fetch does, made nowhere):
 * every bundle no running worker uses and no fetch is making, with its
 * manifest and lock file, directories left by fetchers that died, and,
 * when nothing is left, the cache itself.  Write bits are restored as
 * needed.  0 with *out (kept or failed may be non-zero), or
 * MARO_BUNDLE_IO when the cache is not this user's own or cannot be read.
 */
int maro_bundle_clear(struct maro_bundle_cleared *out, struct maro_err *err);

/* Unpacks a stream (fd, at its start) into dir (new) under the rules above.  0, or a fault. */
int maro_bundle_unpack(int fd, const char *dir, const struct maro_bundle_limits *lim,
    struct maro_err *err);

#endif
