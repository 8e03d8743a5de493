#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * libcrypto's own SHA-256, not its EVP layer: the same code (with the
 * CPU's SHA extensions where it has them), but 25 kB a tool carries
 * rather than the 3.4 MB of providers EVP brings into every tool linked
 * statically (lib/handler.c brings this module into all of them); the
 * calls are deprecated in OpenSSL 3 in favour of EVP, not gone.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "bundle.h"
#include "clock.h"
#include "manifest.h"
#include "outbox.h"
#include "reply.h"
#include "requester.h"

#define LINE_MAX_ 4200		/* a record's header: a path of up to 4095 bytes and its fields */
#define WINDOW 8		/* chunk requests in flight */

static int
fail(struct maro_err *err, int fault, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(struct maro_err *err, int fault, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return fault;
}

/* SHA-256 by libcrypto: some five times libsodium's speed here (make bench, the bundle row) */
static void
sha_hex(SHA256_CTX *h, char hex[MARO_BUNDLE_HASH_LEN + 1])
{
	unsigned char sum[SHA256_DIGEST_LENGTH];
	int i;

	SHA256_Final(sum, h);
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
}

/*
 * A chunk goes through buffers of its size (libzmq's messages, the reply,
 * the queue) that glibc would map and unmap one by one, above its first
 * threshold of 128 KiB: the pages faulted in again each time cost the
 * fetch and its server a third of their speed (make bench, the bundle
 * row).  From the heap they are used again.  Process-wide, and
 * harmless to the rest of the process: buffers up to 1 MiB come from
 * the heap, as they would after glibc's own threshold has moved.
 */
static void
chunks_from_heap(void)
{
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

/* The SHA-256 of what fd holds from its start, in hex. */
static int
hash_fd(int fd, char hex[MARO_BUNDLE_HASH_LEN + 1], uint8_t *buf, size_t cap)
{
	SHA256_CTX h;
	off_t at = 0;
	ssize_t r;

	SHA256_Init(&h);
	while ((r = pread(fd, buf, cap, at)) > 0) {
		SHA256_Update(&h, buf, (size_t)r);
		at += r;
	}
	if (r < 0)
		return -1;
	sha_hex(&h, hex);
	return 0;
}

/* --- packing --- */

static int path_ok(const char *p);

static int
copy_in(FILE *out, const char *path, uint64_t size, struct maro_err *err)
{
	char buf[65536];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t left = size;
	ssize_t r;

	if (fd < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot read '%s': %s", path, strerror(errno));
	while (left && (r = read(fd, buf, left < sizeof buf ? left : sizeof buf)) > 0) {
		fwrite(buf, 1, (size_t)r, out);
		left -= (uint64_t)r;
	}
	close(fd);
	if (left)
		return fail(err, MARO_BUNDLE_IO, "'%s' changed while it was packed", path);
	return 0;
}

/* Packs what directory root/rel holds ("" for root itself), depth first, names sorted. */
static int
pack_dir(FILE *out, const char *root, const char *rel, struct maro_err *err)
{
	char dir[8192], path[8192 + 260], sub[4096], target[4096];
	struct dirent **ents;
	struct stat st;
	int n, i, rc = 0;

	snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
	if ((n = scandir(dir, &ents, NULL, alphasort)) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot read '%s': %s", dir, strerror(errno));
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		ssize_t k;

		if (rc || !strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name) >= sizeof sub ||
		    strchr(name, '\n')) {
			rc = fail(err, MARO_BUNDLE_BAD_DIR, "'%s/%s': a path too long, or with a line break",
			    dir, name);
			continue;
		}
		snprintf(path, sizeof path, "%s/%s", dir, name);
		if (lstat(path, &st) < 0) {
			rc = fail(err, MARO_BUNDLE_IO, "cannot read '%s': %s", path, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			fprintf(out, "d %04o %s\n", (unsigned)(st.st_mode & 0777), sub);
			rc = pack_dir(out, root, sub, err);
		} else if (S_ISREG(st.st_mode)) {
			fprintf(out, "f %04o %" PRIu64 " %s\n", (unsigned)(st.st_mode & 0777),
			    (uint64_t)st.st_size, sub);
			rc = copy_in(out, path, (uint64_t)st.st_size, err);
		} else if (S_ISLNK(st.st_mode)) {
			if ((k = readlink(path, target, sizeof target)) < 0 || (size_t)k == sizeof target)
				rc = fail(err, MARO_BUNDLE_IO, "cannot read the link '%s'", path);
			else if (target[k] = '\0', !path_ok(target))
				/* a worker cannot tell 'd/..' from a chain of links that leads out */
				rc = fail(err, MARO_BUNDLE_BAD_DIR, "the link '%s' -> '%s': a bundle's links must "
				    "lead down, to a relative path without '.' or '..' (workers refuse the "
				    "others); copy its target in, or link within its directory", path, target);
			else
				fprintf(out, "l %zd %s\n%.*s", k, sub, (int)k, target);
		} else {
			rc = fail(err, MARO_BUNDLE_BAD_DIR, "'%s' is a device, fifo or socket: "
			    "a bundle holds directories, files and links only", path);
		}
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return rc;
}

static const char *
tmp_dir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* An unlinked temporary file in TMPDIR (tmpfile(3) takes /tmp whatever TMPDIR says), or NULL. */
static FILE *
temp_file(void)
{
	char path[4096];
	FILE *f;
	int fd;

	if ((size_t)snprintf(path, sizeof path, "%s/maro-bundle.XXXXXX", tmp_dir()) >= sizeof path) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((fd = mkostemp(path, O_CLOEXEC)) < 0)
		return NULL;
	unlink(path);
	if (!(f = fdopen(fd, "w+")))
		close(fd);
	return f;
}

int
maro_bundle_srv_open(struct maro_bundle_srv *s, const char *path, struct maro_err *err)
{
	struct stat st;
	FILE *f;
	int rc;

	memset(s, 0, sizeof *s);
	s->fd = -1;
	chunks_from_heap();
	if (!(s->chunk = malloc(MARO_BUNDLE_CHUNK)))
		return fail(err, MARO_BUNDLE_NOMEM, "out of memory");
	if (stat(path, &st) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISREG(st.st_mode)) {
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
	} else {
		if (!(f = temp_file()))
			return fail(err, MARO_BUNDLE_IO, "cannot make a temporary file in '%s': %s",
			    tmp_dir(), strerror(errno));
		fputs("maro-bundle 1\n", f);
		if ((rc = pack_dir(f, path, "", err)) != 0) {
			fclose(f);
			return rc;
		}
		fputs("e\n", f);
		if (fflush(f) != 0 || ferror(f)) {
			fclose(f);
			return fail(err, MARO_BUNDLE_IO, "cannot write a temporary file: %s", strerror(errno));
		}
		s->fd = dup(fileno(f));
		fclose(f);
	}
	if (s->fd < 0 || fstat(s->fd, &st) < 0 || hash_fd(s->fd, s->hash, s->chunk, MARO_BUNDLE_CHUNK) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot read '%s': %s", path, strerror(errno));
	s->size = (uint64_t)st.st_size;
	return 0;
}

void
maro_bundle_srv_close(struct maro_bundle_srv *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->chunk);
	s->fd = -1;
	s->chunk = NULL;
}

/* The text of the CBOR text item at p (n bytes), copied into out (len bytes).  0, or -1. */
static int
cbor_text(const uint8_t *p, size_t n, char *out, size_t len)
{
	unsigned major;
	uint64_t val;
	size_t h = p ? maro_cbor_head(p, n, &major, &val) : 0;

	if (!h || major != 3 || val >= len || h + val != n)
		return -1;
	memcpy(out, p + h, (size_t)val);
	out[val] = '\0';
	return 0;
}

int
maro_bundle_srv_answer(struct maro_bundle_srv *s, const uint8_t *req, size_t n,
    struct maro_buf *out, char *why, size_t len)
{
	char text[128], hash[MARO_BUNDLE_HASH_LEN + 1], *end;
	unsigned long long off;
	size_t k;
	ssize_t r;

	out->len = 0;
	if (cbor_text(req, n, text, sizeof text) < 0) {
		snprintf(why, len, "a bundle request is a text: empty, or 'HASH OFFSET'");
		return -1;
	}
	if (!*text) {
		k = (size_t)snprintf(text, sizeof text, "%s %" PRIu64, s->hash, s->size);
		if (maro_buf_cbor_text(out, text, k) == 0)
			return 0;
		snprintf(why, len, "out of memory");
		return -1;
	}
	if (sscanf(text, "%64s", hash) != 1 || strcmp(hash, s->hash) || text[64] != ' ' ||
	    (errno = 0, off = strtoull(text + 65, &end, 10), errno) || *end || off > s->size) {
		snprintf(why, len, "no bundle '%.64s' here, or no such offset", text);
		return -1;
	}
	k = s->size - off < MARO_BUNDLE_CHUNK ? (size_t)(s->size - off) : MARO_BUNDLE_CHUNK;
	/* read into the reply itself, after its head: one copy of the chunk the less */
	if (maro_buf_cbor_head(out, 2, k) < 0 || maro_buf_reserve(out, k) < 0) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if ((r = pread(s->fd, out->p + out->len, k, (off_t)off)) < 0 || (size_t)r != k) {
		snprintf(why, len, "cannot read the bundle: %s", r < 0 ? strerror(errno) : "it shrank");
		out->len = 0;
		return -1;
	}
	out->len += k;
	return 0;
}

/* --- limits and the cache --- */

static int
env_size(const char *name, uint64_t def, uint64_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;
	int shift = 0;

	*out = def;
	if (!v || !*v)
		return 0;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || strchr(v, '-'))
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M')
		shift = 20, end++;
	else if (*end == 'G')
		shift = 30, end++;
	/* 17179869184G would wrap to 0: no limit at all, said nowhere */
	if (*end || x > (~0ull >> shift))
		return -1;
	x <<= shift;
	*out = x;
	return 0;
}

int
maro_bundle_limits_env(struct maro_bundle_limits *l, const char **bad)
{
	if (env_size(*bad = "MARO_BUNDLE_MAX", MARO_BUNDLE_MAX_DEFAULT, &l->bundle_max) < 0 ||
	    env_size(*bad = "MARO_BUNDLE_FILE_MAX", MARO_BUNDLE_FILE_MAX_DEFAULT, &l->file_max) < 0 ||
	    env_size(*bad = "MARO_BUNDLE_CACHE_MAX", MARO_BUNDLE_CACHE_MAX_DEFAULT, &l->cache_max) < 0 ||
	    env_size(*bad = "MARO_BUNDLE_RATE", 0, &l->rate) < 0)
		return -1;
	*bad = NULL;
	return 0;
}

int
maro_bundle_cache_dir(char *out, size_t len)
{
	const char *v;
	size_t k;

	if ((v = getenv("MARO_BUNDLE_CACHE")) && *v)
		k = (size_t)snprintf(out, len, "%s", v);
	else if ((v = getenv("XDG_CACHE_HOME")) && *v == '/')
		k = (size_t)snprintf(out, len, "%s/maro/bundles", v);
	else if ((v = getenv("HOME")) && *v)
		k = (size_t)snprintf(out, len, "%s/.cache/maro/bundles", v);
	else
		return errno = ENOENT, -1;
	return k < len ? 0 : (errno = ENAMETOOLONG, -1);
}

/*
 * The open cache.  Every look-up after cache_open is relative to these
 * handles (and to handles of the bundles below): a directory renamed, or
 * swapped for a link, after the check redirects nothing.
 */
struct cache {
	int parent;			/* the directory above the cache */
	int fd;				/* the cache */
	int locks;			/* its .locks */
	char name[256];			/* the cache's name in parent */
	char path[4096];		/* for messages */
};

static void
cache_close(struct cache *c)
{
	if (c->locks >= 0)
		close(c->locks);
	if (c->fd >= 0)
		close(c->fd);
	if (c->parent >= 0)
		close(c->parent);
	c->parent = c->fd = c->locks = -1;
}

/*
 * Is the directory st, the cache or its .locks, ours: owned by this user
 * and writable by no one else?  Another local user who made it first
 * (under /tmp, say) could plant a bundle that the next worker runs.  0,
 * or -1 with why.
 */
static int
owned(const struct stat *st, char *why, size_t len)
{
	if (st->st_uid != geteuid())
		snprintf(why, len, "it is owned by uid %u, not by us (uid %u)", (unsigned)st->st_uid,
		    (unsigned)geteuid());
	else if (st->st_mode & 022)
		snprintf(why, len, "it is writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
	else
		return 0;
	return -1;
}

/*
 * Opens the cache at path (relative to the working directory if not
 * absolute), making what is missing with mode 0700 when make, and checks
 * each directory from the root down, as the dir: registry does: the
 * cache itself is opened without following a link and must be ours
 * (owned); each directory above it must belong to root or us, and be
 * sticky if others may write it (as /tmp), since whoever may rename an
 * entry of a directory can put up a tree of their own in its place.  0;
 * -1 with err (refused, or cannot be made); 1 when !make and it is not
 * there.
 */
static int
cache_open(struct cache *c, const char *path, int make, struct maro_err *err)
{
	char comp[256], why[200], cwd[4096], given[4096];
	size_t at = 0, n;
	struct stat st;
	int fd, nfd, last, bad, e;

	c->parent = c->fd = c->locks = -1;
	snprintf(given, sizeof given, "%s", path);
	if (*given != '/' && !getcwd(cwd, sizeof cwd))
		return fail(err, -1, "cannot make the bundle cache '%s': %s", given, strerror(errno));
	if ((size_t)snprintf(c->path, sizeof c->path, "%s%s%s", *given == '/' ? "" : cwd,
	    *given == '/' ? "" : "/", given) >= sizeof c->path)
		return fail(err, -1, "cannot make the bundle cache '%s': %s", given, strerror(ENAMETOOLONG));
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail(err, -1, "cannot open '/': %s", strerror(errno));
	for (;;) {
		at += strspn(c->path + at, "/");
		n = strcspn(c->path + at, "/");
		if (n == 0 || n >= sizeof comp || (n == 1 && c->path[at] == '.') ||
		    (n == 2 && !strncmp(c->path + at, "..", 2))) {
			close(fd);
			return fail(err, -1, "will not use the bundle cache '%s': %s", c->path, n ?
			    "a name in it is '.', '..' or too long" : "it is the root directory");
		}
		memcpy(comp, c->path + at, n);
		comp[n] = '\0';
		at += n;
		last = c->path[at + strspn(c->path + at, "/")] == '\0';
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (last ? O_NOFOLLOW : 0));
		if (nfd < 0 && errno == ENOENT && make) {
			if (mkdirat(fd, comp, 0700) < 0 && errno != EEXIST) {
				e = errno;
				close(fd);
				return fail(err, -1, "cannot make the bundle cache '%s': %s", c->path, strerror(e));
			}
			nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (last ? O_NOFOLLOW : 0));
		}
		if (nfd < 0) {
			e = errno;
			/* O_DIRECTORY with O_NOFOLLOW says ENOTDIR of a link */
			if (last && (e == ELOOP || e == ENOTDIR))
				snprintf(why, sizeof why, "%s", fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode) ? "it is a symbolic link" : "it is not a directory");
			close(fd);
			if (e == ENOENT && !make)
				return 1;
			if (last && (e == ELOOP || e == ENOTDIR))
				return fail(err, -1, "will not use the bundle cache '%s': %s", c->path, why);
			return fail(err, -1, "cannot open the bundle cache '%s': '%.*s': %s", c->path, (int)at,
			    c->path, strerror(e));
		}
		if (fstat(nfd, &st) < 0) {
			e = errno;
			close(nfd);
			close(fd);
			return fail(err, -1, "cannot open the bundle cache '%s': %s", c->path, strerror(e));
		}
		if (last)
			bad = owned(&st, why, sizeof why) < 0;
		else if ((bad = st.st_uid != 0 && st.st_uid != geteuid()))
			snprintf(why, sizeof why, "'%.*s' above it is owned by uid %u, neither root nor us",
			    (int)at, c->path, (unsigned)st.st_uid);
		else if ((bad = (st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			snprintf(why, sizeof why, "'%.*s' above it may be written by others and is not sticky "
			    "(mode %04o)", (int)at, c->path, (unsigned)(st.st_mode & 07777));
		if (bad) {
			close(nfd);
			close(fd);
			return fail(err, -1, "will not use the bundle cache '%s': %s", c->path, why);
		}
		if (last)
			break;
		close(fd);
		fd = nfd;
	}
	c->parent = fd;
	c->fd = nfd;
	snprintf(c->name, sizeof c->name, "%s", comp);
	if (mkdirat(c->fd, ".locks", 0700) < 0 && errno != EEXIST)
		e = errno;
	else if ((c->locks = openat(c->fd, ".locks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		e = errno;
	else if (fstat(c->locks, &st) < 0)
		e = errno;
	else if (owned(&st, why, sizeof why) < 0) {
		cache_close(c);
		return fail(err, -1, "will not use the bundle cache '%s': its .locks: %s", c->path, why);
	} else
		return 0;
	cache_close(c);
	return fail(err, -1, "cannot write to the bundle cache '%s': .locks: %s", c->path, strerror(e));
}

/*
 * Takes the lock of the bundle hash (its file in .locks), exclusive: one
 * fetcher, or evictor, of a bundle per host at a time.  Waits until
 * deadline (monotonic us; 0: not at all).  A lock file is removed only
 * by its holder: one that is no longer the file named when it is taken
 * is left, and the named one taken.  The handle, or -1 (EWOULDBLOCK, or
 * ETIMEDOUT, or EINTR for a signal, or another errno).
 */
static int
hash_lock(const struct cache *c, const char *hash, int64_t deadline)
{
	struct stat a, b;
	int fd;

	for (;;) {
		if ((fd = openat(c->locks, hash, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
			return -1;
		while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			if (!deadline)
				return errno = EWOULDBLOCK, -1;
			if (maro_signal)
				return errno = EINTR, -1;
			if (maro_now_us() >= deadline)
				return errno = ETIMEDOUT, -1;
			/* every 2 ms: at 20, the waiters of a 0.15 s fetch found it up to 13 % late */
			usleep(2000);
			if ((fd = openat(c->locks, hash, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
				return -1;
		}
		if (fstat(fd, &a) == 0 && fstatat(c->locks, hash, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

/* Gives up the lock fd of hash, and removes its file (fd is its holder). */
static void
hash_unlock_remove(const struct cache *c, const char *hash, int fd)
{
	unlinkat(c->locks, hash, 0);
	close(fd);
}

/*
 * Calls fn for each entry of the directory top/rel ("" for top itself;
 * rel a buffer of PATH_BUF bytes, extended as it goes down), depth first:
 * a directory before (after 0) and after (after 1) what it holds, named
 * relative to a handle fn is given.  No link is followed.  A handle is
 * held only every WALK_HOLD levels down, and entries are looked up from
 * the nearest: 1000 nested directories take neither 1000 descriptors nor
 * a look-up of all their parents for each.  0, the first non-zero fn
 * returned, or -1.
 */
#define PATH_BUF 8192
#define WALK_HOLD 32
typedef int walk_fn(int top, const char *rel, const struct stat *st, int after, void *arg);

static int
walk(int top, char *rel, walk_fn *fn, void *arg)
{
	size_t base = strlen(rel), cap = 0, used = 0, i, k;
	char *names = NULL, *more, *held = NULL;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd, rc = 0, t = top;

	fd = openat(top, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		k = strlen(e->d_name) + 1;
		if (used + k > cap) {
			if (!(more = realloc(names, cap = 2 * (cap + k)))) {
				rc = -1;
				break;
			}
			names = more;
		}
		memcpy(names + used, e->d_name, k);
		used += k;
	}
	/* deep enough below top: this directory becomes the top of what it holds */
	if (!rc && base) {
		size_t levels = 1;
		int h;

		for (i = 0; i < base; i++)
			levels += rel[i] == '/';
		if (levels >= WALK_HOLD) {
			if ((h = dup(dirfd(d))) < 0 || !(held = calloc(1, PATH_BUF))) {
				if (h >= 0)
					close(h);
				rc = -1;
			} else {
				t = h;
				rel = held;
				base = 0;
			}
		}
	}
	closedir(d);
	for (i = 0; i < used && !rc; i += k + 1) {
		k = strlen(names + i);
		if (base + 1 + k >= PATH_BUF) {
			rc = -1;
			break;
		}
		snprintf(rel + base, PATH_BUF - base, "%s%s", base ? "/" : "", names + i);
		if (fstatat(t, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rc = -1;
		else if (!(rc = fn(t, rel, &st, 0, arg)) && S_ISDIR(st.st_mode) &&
		    !(rc = walk(t, rel, fn, arg)))
			rc = fn(t, rel, &st, 1, arg);
	}
	rel[base] = '\0';
	if (held) {
		free(held);
		close(t);
	}
	free(names);
	return rc;
}

/* rm -rf, for walk: each directory made writable before what it holds goes. */
static int
rm_one(int top, const char *rel, const struct stat *st, int after, void *arg)
{
	(void)arg;
	if (!S_ISDIR(st->st_mode))
		return unlinkat(top, rel, 0) < 0 && errno != ENOENT ? -1 : 0;
	if (!after)
		return fchmodat(top, rel, 0700, 0) < 0 && errno != ENOENT ? -1 : 0;
	return unlinkat(top, rel, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf parent/name, links not followed, write bits restored as needed.  0, or -1. */
static int
rm_at(int parent, const char *name)
{
	char rel[PATH_BUF] = "";
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : errno == ENOTDIR || errno == ELOOP ? unlinkat(parent, name, 0) : -1;
	rc = fchmod(fd, 0700) < 0 || walk(fd, rel, rm_one, NULL) != 0;
	close(fd);
	return (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) || rc ? -1 : 0;
}

/*
 * What a directory costs the cache, for walk: each entry at least 512
 * bytes, as unpacking counts it toward MARO_BUNDLE_MAX (100,000 empty
 * files are 100,000 inodes, not 0 bytes).
 */
static int
du_one(int top, const char *rel, const struct stat *st, int after, void *arg)
{
	(void)top, (void)rel;
	if (!after)
		*(uint64_t *)arg += 512 + (S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size);
	return 0;
}

static uint64_t
du_at(int parent, const char *name)
{
	char rel[PATH_BUF] = "";
	uint64_t n = 512;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		walk(fd, rel, du_one, &n);
		close(fd);
	}
	return n;
}

/* A name for what is set aside for removal: gone.XXXXXXXX, free in the cache.  0, or -1. */
static int
gone_name(const struct cache *c, char name[32])
{
	struct stat st;
	uint32_t r;
	int i;

	for (i = 0; i < 100; i++) {
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		snprintf(name, 32, "gone.%08" PRIx32, r);
		if (fstatat(c->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			return 0;
	}
	return errno = EEXIST, -1;
}

/*
 * Takes the directory name of the cache out of use when no one uses it
 * (locked shared by a worker, or exclusive by its maker): locked, renamed
 * away, removed; a bundle's manifest and lock file with it, under its
 * lock, so that no fetcher of it is in the midst.  1 when it went, 0 when
 * it is in use, -1 when it could not be removed.
 */
static int
drop(const struct cache *c, const char *name, uint64_t *bytes)
{
	char gone[32], mname[80];
	int fd, lk = -1, bundle = strlen(name) == MARO_BUNDLE_HASH_LEN, rc = 0;

	if (bundle && (lk = hash_lock(c, name, 0)) < 0)
		return errno == EWOULDBLOCK ? 0 : -1;
	if ((fd = openat(c->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		/* not a directory (a stray file), or gone */
		rc = errno == ENOENT ? 1 : unlinkat(c->fd, name, 0) == 0 ? 1 : -1;
	} else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = 0;		/* in use, or being made */
	} else {
		if (bytes)
			*bytes += du_at(c->fd, name);
		if (gone_name(c, gone) < 0 || renameat(c->fd, name, c->fd, gone) < 0)
			rc = -1;
		else
			rc = rm_at(c->fd, gone) == 0 ? 1 : -1;
	}
	if (fd >= 0)
		close(fd);
	if (bundle) {
		if (rc == 1) {
			snprintf(mname, sizeof mname, "%s.manifest", name);
			unlinkat(c->fd, mname, 0);
			hash_unlock_remove(c, name, lk);
		} else {
			close(lk);
		}
	}
	return rc;
}

struct cached {
	char name[MARO_BUNDLE_HASH_LEN + 1];
	struct timespec used;
	uint64_t size;
};

static int
by_use(const void *a, const void *b)
{
	const struct cached *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

static int
is_hash(const char *s)
{
	return strlen(s) == MARO_BUNDLE_HASH_LEN && strspn(s, "0123456789abcdef") == MARO_BUNDLE_HASH_LEN;
}

/*
 * Least recently used bundles out, but keep and those in use, until the
 * cache is within max; directories set aside or left by a maker that is
 * gone (unlocked, a minute old) too.
 */
static void
evict(const struct cache *c, uint64_t max, const char *keep)
{
	int fd = openat(c->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct cached *v = NULL, *nv;
	size_t n = 0, i;
	uint64_t total = 0;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if ((!strncmp(e->d_name, "tmp.", 4) || !strncmp(e->d_name, "gone.", 5)) &&
		    fstatat(c->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime + 60 < time(NULL)) {
			drop(c, e->d_name, NULL);
			continue;
		}
		if (!is_hash(e->d_name) || fstatat(c->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof *v)))
			break;
		v = nv;
		snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
		v[n].used = st.st_mtim;
		total += v[n++].size = du_at(c->fd, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, by_use);
	for (i = 0; i < n && total > max; i++)
		if (strcmp(v[i].name, keep) && drop(c, v[i].name, NULL) == 1)
			total -= v[i].size;
	free(v);
}

/* Nanoseconds since the epoch. */
static int64_t
ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static int
count_one(int top, const char *rel, const struct stat *st, int after, void *arg)
{
	(void)top, (void)rel, (void)st;
	if (!after)
		++*(uint64_t *)arg;
	return 0;
}

/*
 * Is the copy root (a handle) of bundle hash still what its manifest man
 * says was unpacked?  Each entry is stat'ed: one whose type, mode, size,
 * inode or times moved fails (no hashing: a write or a chmod moves the
 * change time, which no user can set back, and the bytes were hashed as
 * they came); then the tree must hold no entry more.  0, or -1 with why.
 */
static int
verify(int root, FILE *man, const char *hash, char *why, size_t len)
{
	char *line = NULL, head[MARO_BUNDLE_HASH_LEN + 1], rel[PATH_BUF] = "";
	struct maro_manifest_entry e = { 0 };
	uint64_t n = 0, have = 0;
	size_t cap = 0;
	ssize_t k;
	struct stat st;
	int rc = -1;

	if (fstat(root, &st) < 0 || (st.st_mode & 07777) != 0555) {
		snprintf(why, len, "its directory was made writable");
		goto out;
	}
	if ((k = getline(&line, &cap, man)) <= 0 || line[k - 1] != '\n' || (line[k - 1] = '\0',
	    maro_manifest_head(line, head) < 0) || strcmp(head, hash)) {
		snprintf(why, len, "its manifest is not its own");
		goto out;
	}
	while ((k = getline(&line, &cap, man)) > 0) {
		if (line[k - 1] != '\n' || (line[k - 1] = '\0', maro_manifest_parse(line, &e) < 0) ||
		    (e.type != 'e' && !path_ok(e.path))) {
			snprintf(why, len, "its manifest is malformed (entry %" PRIu64 ")", n + 1);
			goto out;
		}
		if (e.type == 'e')
			break;
		n++;
		if (fstatat(root, e.path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			snprintf(why, len, "'%.100s' is gone", e.path);
			goto out;
		}
		/* a write or a chmod moves the change time, which no user can set back */
		if ((e.type == 'd') != !!S_ISDIR(st.st_mode) || (e.type == 'f') != !!S_ISREG(st.st_mode) ||
		    (e.type == 'l') != !!S_ISLNK(st.st_mode) ||
		    (e.type != 'l' && (unsigned)(st.st_mode & 07777) != e.mode) ||
		    (e.type != 'd' && ((uint64_t)st.st_size != e.size || (uint64_t)st.st_ino != e.ino ||
		    ns(&st.st_mtim) != e.mtime || ns(&st.st_ctim) != e.ctime))) {
			snprintf(why, len, "'%.100s' changed", e.path);
			goto out;
		}
	}
	if (e.type != 'e' || e.size != n || getc(man) != EOF) {
		snprintf(why, len, "its manifest is cut short or malformed");
		goto out;
	}
	if (walk(root, rel, count_one, &have) != 0 || have != n) {
		snprintf(why, len, "it holds entries its manifest does not name");
		goto out;
	}
	rc = 0;
out:
	free(line);
	return rc;
}

/*
 * The bundle hash in the cache, in use from now on: locked shared (an
 * evictor passes it by), checked against its manifest, its time of use
 * now.  0; -1 when it is not there; 1 when it fails the check (why says
 * how), still locked, its handle in got->lock_fd.
 */
static int
use_cached(const struct cache *c, const char *hash, struct maro_bundle_got *got, char *why, size_t len)
{
	char mname[80];
	struct stat a, b;
	FILE *man;
	int fd, mfd, rc;

	if ((fd = openat(c->fd, hash, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	/* an evictor renames it away under its exclusive lock: this one must still be the one named */
	if (flock(fd, LOCK_SH) < 0 || fstat(fd, &a) < 0 || fstatat(c->fd, hash, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
		close(fd);
		return -1;
	}
	snprintf(mname, sizeof mname, "%s.manifest", hash);
	if ((mfd = openat(c->fd, mname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 || !(man = fdopen(mfd, "r"))) {
		if (mfd >= 0)
			close(mfd);
		snprintf(why, len, "it has no manifest");
		rc = 1;
	} else {
		rc = verify(fd, man, hash, why, len) < 0;
		fclose(man);
	}
	got->lock_fd = fd;
	snprintf(got->path, sizeof got->path, "%s/%s", c->path, hash);
	/* the handler enters it by its handle, not by a path looked up again */
	snprintf(got->dir, sizeof got->dir, "/proc/self/fd/%d", fd);
	if (rc == 0)
		futimens(fd, NULL);
	return rc;
}

/*
 * Sets aside the bundle hash that failed its check (got->lock_fd, locked
 * shared), with its lock held: renamed away and its manifest removed, so
 * that a fresh copy takes the name; workers still in the old one keep
 * it until they end, and a later eviction removes it.  0, or -1.
 */
static int
set_aside(const struct cache *c, const char *hash, struct maro_bundle_got *got)
{
	char gone[32], mname[80];
	int rc;

	snprintf(mname, sizeof mname, "%s.manifest", hash);
	rc = gone_name(c, gone) < 0 || renameat(c->fd, hash, c->fd, gone) < 0 ? -1 : 0;
	if (rc == 0)
		unlinkat(c->fd, mname, 0);
	close(got->lock_fd);
	got->lock_fd = -1;
	return rc;
}

/* A directory tmp.XXXXXXXX in the cache, locked: its handle, its name in name; or -1. */
static int
make_tmp(const struct cache *c, char name[32])
{
	uint32_t r;
	int i, fd;

	for (i = 0; i < 100; i++) {
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		snprintf(name, 32, "tmp.%08" PRIx32, r);
		if (mkdirat(c->fd, name, 0700) == 0)
			break;
		if (errno != EEXIST)
			return -1;
	}
	if ((fd = openat(c->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	if (flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* --- unpacking --- */

static int
path_ok(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/' || strlen(p) >= 4096)
		return 0;
	for (;;) {
		size_t k = strcspn(s, "/");

		if (!k || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		if (!s[k])
			return 1;
		s += k + 1;
	}
}

/*
 * Is the parent of rel a directory this unpack made?  Only those can be
 * parents (the directory starts empty, and a directory made stays one:
 * nothing is removed and no path is made twice), and a stream packed
 * depth first names each entry after its directory, with no directory
 * outside that one between them: the parent of rel is the last directory
 * made, last, or one of its ancestors (each checked so when it was made).
 * The cost is the length of the path, not a lstat(2) of every parent.
 */
static int
parent_ok(const char *last, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	size_t k = slash ? (size_t)(slash - rel) : 0;

	return !k || (!strncmp(last, rel, k) && (last[k] == '\0' || last[k] == '/'));
}

/* The fault of a write into the cache that failed with e: a full or read-only disk is no hostile bundle. */
static int
write_fault(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EROFS || e == EIO ? MARO_BUNDLE_IO : MARO_BUNDLE_HOSTILE;
}

/* A directory made read-only, as its files are (walk, after what it holds). */
static int
seal_one(int top, const char *rel, const struct stat *st, int after, void *arg)
{
	(void)arg;
	if (after && S_ISDIR(st->st_mode))
		fchmodat(top, rel, (st->st_mode & 0555) | 0500, 0);
	return 0;
}

/* One entry of the manifest: 0, or -1 when it cannot be written. */
static int
note(FILE *man, char type, const struct stat *st, unsigned mode, const char *rel)
{
	struct maro_manifest_entry e = { type, mode, 0, 0, 0, 0, rel };
	char line[LINE_MAX_ + 200];
	int k;

	if (!man)
		return 0;
	if (st) {
		e.size = (uint64_t)st->st_size;
		e.ino = (uint64_t)st->st_ino;
		e.mtime = ns(&st->st_mtim);
		e.ctime = ns(&st->st_ctim);
	}
	return (k = maro_manifest_format(&e, line, sizeof line)) < 0 || fwrite(line, 1, (size_t)k, man) != (size_t)k ?
	    -1 : 0;
}

/*
 * The handle of the directory rel goes in, and rel's last name in *base:
 * root, the last directory made (lastfd; depth first, it is most often
 * that one), or one looked up from root into *own, which the caller
 * closes.  -1 when it cannot be opened.
 */
static int
parent_of(int root, int lastfd, const char *last, const char *rel, const char **base, int *own)
{
	const char *slash = strrchr(rel, '/');
	char up[4096];
	size_t k;

	*base = slash ? slash + 1 : rel;
	if (!slash)
		return root;
	k = (size_t)(slash - rel);
	if (lastfd >= 0 && strlen(last) == k && !strncmp(last, rel, k))
		return lastfd;
	snprintf(up, sizeof up, "%.*s", (int)k, rel);
	return *own = openat(root, up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * Unpacks the stream f into parent/name (new), writing files from buf
 * (cap bytes), every entry made relative to the new directory's handle;
 * as maro_bundle_unpack.  With man, writes its manifest there (after the
 * line naming the bundle, which the caller wrote).
 */
static int
unpack(FILE *f, int parent, const char *name, const struct maro_bundle_limits *lim, char *buf, size_t cap,
    int *stop, FILE *man, struct maro_err *err)
{
	char line[LINE_MAX_], target[4096], last[4096] = "", *rel, *end;
	char walked[PATH_BUF] = "";
	uint64_t total = 0, size, left, entries = 0;
	unsigned long mode = 0;
	int out, root, rc = MARO_BUNDLE_HOSTILE, lastfd = -1, own = -1, pfd, nfd;
	const char *base;
	struct stat st;
	size_t k;

	if (mkdirat(parent, name, 0700) < 0 ||
	    (root = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot make '%s': %s", name, strerror(errno));
	if (!fgets(line, sizeof line, f) || strcmp(line, "maro-bundle 1\n")) {
		fail(err, rc, "not a bundle (no 'maro-bundle 1' line first)");
		goto out;
	}
	for (;;) {
		if (own >= 0)
			close(own);
		own = -1;
		if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
			fail(err, MARO_BUNDLE_IO, "stopped");
			goto out;
		}
		if (!fgets(line, sizeof line, f) || !(end = strchr(line, '\n'))) {
			fail(err, rc, "a record's line too long, or the stream cut short");
			goto out;
		}
		*end = '\0';
		if (!strcmp(line, "e")) {
			if (fgetc(f) != EOF)
				fail(err, rc, "bytes after the end record");
			else if (walk(root, walked, seal_one, NULL) != 0)
				rc = fail(err, MARO_BUNDLE_IO, "cannot make '%s' read-only: %s", name, strerror(errno));
			else if (man && (fprintf(man, "e %" PRIu64 "\n", entries) < 0 || fflush(man) != 0))
				rc = fail(err, MARO_BUNDLE_IO, "cannot write the manifest: %s", strerror(errno));
			else
				rc = 0;
			goto out;
		}
		size = 0;
		errno = 0;
		if ((line[0] == 'd' || line[0] == 'f') && line[1] == ' ')
			mode = strtoul(line + 2, &rel, 8);
		else if (line[0] == 'l' && line[1] == ' ')
			rel = line + 1;
		else {
			fail(err, rc, "a record of type '%.1s': only d, f and l (no devices, fifos or sockets)",
			    line);
			goto out;
		}
		if (line[0] != 'd' && *rel == ' ')
			size = strtoull(rel + 1, &rel, 10);
		if (errno || *rel != ' ' || mode > 07777) {
			fail(err, rc, "a malformed record: '%.60s'", line);
			goto out;
		}
		rel++;
		/* each entry costs the worker a file or directory however small: 512 bytes of the bundle's cap */
		if ((total += 512) > lim->bundle_max) {
			fail(err, rc, "more entries than the limit of %" PRIu64 " bytes a bundle allows (each "
			    "counts 512 bytes toward MARO_BUNDLE_MAX)", lim->bundle_max);
			goto out;
		}
		if (!path_ok(rel) || !parent_ok(last, rel)) {
			fail(err, rc, "a path out of the bundle: '%.100s'", rel);
			goto out;
		}
		entries++;
		if ((pfd = parent_of(root, lastfd, last, rel, &base, &own)) < 0) {
			rc = fail(err, MARO_BUNDLE_IO, "cannot open the directory of '%.100s': %s", rel, strerror(errno));
			goto out;
		}
		if (line[0] == 'd') {
			/* its mode as given, not as the umask would cut it: the manifest says what seal_one makes of it */
			if (mkdirat(pfd, base, 0700) < 0 ||
			    (nfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
				rc = fail(err, write_fault(errno), "'%.100s' twice, or cannot be made: %s", rel,
				    strerror(errno));
				goto out;
			}
			if (lastfd >= 0)
				close(lastfd);
			lastfd = nfd;
			if (fchmod(nfd, (mode_t)((mode & 0777) | 0700)) < 0) {
				rc = fail(err, MARO_BUNDLE_IO, "'%.100s' cannot be made: %s", rel, strerror(errno));
				goto out;
			}
			snprintf(last, sizeof last, "%s", rel);
			if (note(man, 'd', NULL, (unsigned)((mode & 0555) | 0500), rel) < 0) {
				rc = fail(err, MARO_BUNDLE_IO, "cannot write the manifest: %s", strerror(errno));
				goto out;
			}
			continue;
		}
		if (line[0] == 'l') {
			if (size == 0 || size >= sizeof target || fread(target, 1, size, f) != size) {
				fail(err, rc, "the link '%.100s' has no target, too long a one, or is cut short", rel);
				goto out;
			}
			target[size] = '\0';
			if (strlen(target) != size || !path_ok(target)) {
				fail(err, rc, "the link '%.100s' leads out of the bundle", rel);
				goto out;
			}
			if (symlinkat(target, pfd, base) < 0) {
				rc = fail(err, write_fault(errno), "the link '%.100s' is there twice, or cannot be "
				    "made: %s", rel, strerror(errno));
				goto out;
			}
			if (man) {
				if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
				    note(man, 'l', &st, (unsigned)(st.st_mode & 07777), rel) < 0) {
					rc = fail(err, MARO_BUNDLE_IO, "cannot write the manifest: %s", strerror(errno));
					goto out;
				}
			}
			continue;
		}
		if (size > lim->file_max || (total += size) > lim->bundle_max) {
			fail(err, rc, "'%.100s' (%" PRIu64 " bytes) is over the limit of %" PRIu64 " bytes "
			    "a file, %" PRIu64 " a bundle (MARO_BUNDLE_FILE_MAX, MARO_BUNDLE_MAX)", rel, size,
			    lim->file_max, lim->bundle_max);
			goto out;
		}
		if ((out = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
			rc = fail(err, write_fault(errno), "'%.100s' twice, or cannot be made: %s", rel,
			    strerror(errno));
			goto out;
		}
		for (left = size; left; left -= k) {
			if (!(k = fread(buf, 1, left < cap ? (size_t)left : cap, f))) {
				close(out);
				fail(err, rc, "'%.100s' cut short", rel);
				goto out;
			}
			errno = 0;
			if (write(out, buf, k) != (ssize_t)k) {
				close(out);
				rc = fail(err, MARO_BUNDLE_IO, "'%.100s' cannot be written: %s", rel,
				    strerror(errno ? errno : ENOSPC));
				goto out;
			}
		}
		if (fchmod(out, (mode_t)(mode & 0555)) < 0 || fstat(out, &st) < 0) {
			close(out);
			rc = fail(err, MARO_BUNDLE_IO, "'%.100s' cannot be written: %s", rel, strerror(errno));
			goto out;
		}
		close(out);
		if (man) {
			if (note(man, 'f', &st, (unsigned)(st.st_mode & 07777), rel) < 0) {
				rc = fail(err, MARO_BUNDLE_IO, "cannot write the manifest: %s", strerror(errno));
				goto out;
			}
		}
	}
out:
	if (own >= 0)
		close(own);
	if (lastfd >= 0)
		close(lastfd);
	close(root);
	return rc;
}

int
maro_bundle_unpack(int fd, const char *dir, const struct maro_bundle_limits *lim,
    struct maro_err *err)
{
	int in = dup(fd), rc, parent;
	FILE *f = in >= 0 ? fdopen(in, "r") : NULL;
	char *buf = malloc(MARO_BUNDLE_CHUNK), up[4096];
	const char *slash = strrchr(dir, '/');

	if (!f || !buf) {
		if (f)
			fclose(f);
		else if (in >= 0)
			close(in);
		free(buf);
		return fail(err, MARO_BUNDLE_NOMEM, "out of memory");
	}
	snprintf(up, sizeof up, "%.*s", slash ? (int)(slash - dir) + (slash == dir) : 1, slash ? dir : ".");
	if ((parent = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = fail(err, MARO_BUNDLE_IO, "cannot make '%s': %s", dir, strerror(errno));
	else
		rc = unpack(f, parent, slash ? slash + 1 : dir, lim, buf, MARO_BUNDLE_CHUNK, NULL, NULL, err);
	if (parent >= 0)
		close(parent);
	fclose(f);
	free(buf);
	return rc;
}

/* --- fetching --- */

struct fetch {
	struct maro_ctx *c;
	maro_bundle_progress_fn *progress;
	void *arg;
	const char *owner, *server;
	struct maro_outbox *ob;
	struct maro_requester rq;
	struct maro_buf pl, enc;
	struct {
		char sid[MARO_UUID_LEN + 1];	/* of the request in flight, or "" */
		uint64_t off;
		uint8_t *buf;			/* a chunk come before its turn: have bytes */
		size_t have;
	} win[WINDOW];
	int failed;
	char why[160];
};

static void
undeliverable(void *arg, const char *dest, const uint8_t *msg, size_t n, const char *why)
{
	struct fetch *f = arg;

	(void)msg, (void)n;
	f->failed = 1;
	snprintf(f->why, sizeof f->why, "cannot reach '%s': %s", dest, why);
}

/* Sends the request text to the server; its session_id into sid.  0, or a fault. */
static int
ask(struct fetch *f, const char *text, char sid[MARO_UUID_LEN + 1], struct maro_err *err)
{
	struct maro_msg m;
	char ids[2][MARO_UUID_LEN + 1], why[200];

	memset(&m, 0, sizeof m);
	f->pl.len = f->enc.len = 0;
	if (maro_buf_cbor_text(&f->pl, text, strlen(text)) < 0)
		return fail(err, MARO_BUNDLE_NOMEM, "out of memory");
	m.tag = maro_str_c(MARO_BUNDLE_TAG);
	m.destination = maro_str_c(f->server);
	m.payload.p = f->pl.p;
	m.payload.n = f->pl.len;
	maro_msg_fill(&m, f->owner, ids);
	if (maro_requester_reply_to(&f->rq, f->c, &m, f->owner, why, sizeof why) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot open a reply inbox: %s", why);
	if (maro_msg_encode(&m, &f->enc) < 0 || maro_requester_expect(&f->rq, m.session_id, 1) < 0)
		return fail(err, MARO_BUNDLE_NOMEM, "out of memory");
	if (maro_outbox_put(f->ob, f->server, f->enc.p, f->enc.len) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot send to '%s': %s", f->server, strerror(errno));
	memcpy(sid, m.session_id.p, MARO_UUID_LEN);
	sid[MARO_UUID_LEN] = '\0';
	return 0;
}

/* Waits for the next reply: 0 with *d (to be done with), or a fault. */
static int
await(struct fetch *f, int64_t deadline, struct maro_delivery *d, struct maro_err *err)
{
	struct maro_pollitem items[64];
	struct maro_str e, text;
	int64_t wake;
	int n;

	for (;;) {
		maro_outbox_run(f->ob);
		if (maro_requester_next(&f->rq, d) == 1) {
			maro_outbox_settle_reply(f->ob, &d->msg);
			if (maro_reply_error(&d->msg, &e, &text))
				return fail(err, MARO_BUNDLE_REFUSED, "'%s' refused: %.*s", f->server,
				    (int)text.n, text.p);
			return 0;
		}
		maro_inbox_flush(f->rq.inbox);
		if (f->failed)
			return fail(err, MARO_BUNDLE_REFUSED, "%s", f->why);
		if (maro_signal)
			return fail(err, MARO_BUNDLE_SIGNAL, "stopped by a signal");
		if (maro_now_us() >= deadline)
			return fail(err, MARO_BUNDLE_TIMEOUT, "no bundle from '%s' in time", f->server);
		items[0] = (struct maro_pollitem){ maro_inbox_pollable(f->rq.inbox), 0, MARO_POLLIN, 0 };
		n = 1 + maro_outbox_pollitems(f->ob, items + 1, 63);
		wake = maro_outbox_deadline(f->ob);
		maro_poll(f->c, items, n, maro_wait_ms(wake < deadline ? wake : deadline));
	}
}

/* The slot of the chunk request reply m answers, or -1. */
static int
slot_of(struct fetch *f, const struct maro_msg *m)
{
	int i;

	for (i = 0; i < WINDOW; i++)
		if (f->win[i].sid[0] && m->session_id.n == MARO_UUID_LEN &&
		    !memcmp(f->win[i].sid, m->session_id.p, MARO_UUID_LEN))
			return i;
	return -1;
}

/* Asks the server for the name and size of its bundle. */
static int
ask_name(struct fetch *f, int64_t deadline, char hash[MARO_BUNDLE_HASH_LEN + 1], uint64_t *size,
    struct maro_err *err)
{
	struct maro_delivery d;
	char text[128], sid[MARO_UUID_LEN + 1];
	unsigned long long sz;
	int rc, k = 0;

	if ((rc = ask(f, "", sid, err)) != 0 || (rc = await(f, deadline, &d, err)) != 0)
		return rc;
	rc = cbor_text(d.msg.payload.p, d.msg.payload.n, text, sizeof text) < 0 ||
	    sscanf(text, "%64[0-9a-f] %llu%n", hash, &sz, &k) != 2 || strlen(hash) != MARO_BUNDLE_HASH_LEN ||
	    text[k];
	maro_inbox_done(f->rq.inbox, &d);
	if (rc)
		return fail(err, MARO_BUNDLE_HOSTILE, "'%s' answered no bundle name and size", f->server);
	*size = sz;
	return 0;
}

/* With a rate: waits until the fetch may ask for the bytes from next on.  0, or a fault. */
static int
pace(uint64_t rate, int64_t start, uint64_t next, int64_t deadline, struct maro_err *err)
{
	int64_t due = start + (int64_t)(next * 1000000.0 / (double)rate), now;

	while ((now = maro_now_us()) < due) {
		if (maro_signal)
			return fail(err, MARO_BUNDLE_SIGNAL, "stopped by a signal");
		if (now >= deadline)
			return fail(err, MARO_BUNDLE_TIMEOUT, "the bundle did not come in time");
		usleep((useconds_t)(due - now < 20000 ? due - now : 20000));
	}
	return 0;
}

/*
 * The unpacker and the hasher: two threads that unpack and hash the
 * stream as the fetch hands it on, through a queue of QUEUE chunks
 * (memory of a few chunks, not of the bundle; no stream file written
 * and read back).  put, took and hashed count chunks: the fetch puts
 * q[put % QUEUE] when both threads are done with what was there.
 */
#define QUEUE 8
struct unpacker {
	pthread_t thread, hasher;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct {
		uint8_t *p;
		size_t n;
	} q[QUEUE];
	uint64_t put, took, hashed;
	size_t pos;		/* the unpacker reads q[took % QUEUE] from pos on */
	int closed;		/* the fetch hands on no more */
	int stopped;		/* the unpacker reads no more */
	int abort;		/* the fetch gave up: the unpacker stops at its next record (atomic) */
	SHA256_CTX sha;
	int parent;		/* unpacks into parent/root */
	FILE *man;		/* and writes its manifest there */
	const struct maro_bundle_limits *lim;
	struct maro_err err;
	int rc;
};

/*
 * One wait of the fetch for the unpacker and the hasher, with u->mu held:
 * a fault once the deadline passed or a signal came, else 0 after their
 * next step or 20 ms (a signal wakes no condition variable).
 */
static int
wait_a_while(struct unpacker *u, int64_t deadline, struct maro_err *err)
{
	struct timespec ts;

	if (maro_signal || maro_now_us() >= deadline)
		return maro_signal ? fail(err, MARO_BUNDLE_SIGNAL, "stopped by a signal") :
		    fail(err, MARO_BUNDLE_TIMEOUT, "the bundle was not unpacked in time");
	clock_gettime(CLOCK_REALTIME, &ts);
	if ((ts.tv_nsec += 20000000) >= 1000000000)
		ts.tv_sec++, ts.tv_nsec -= 1000000000;
	pthread_cond_timedwait(&u->cv, &u->mu, &ts);
	return 0;
}

/*
 * Hands n bytes at p (at most a chunk) on.  0, -1 when the unpacker
 * stopped, or a fault when the deadline or a signal came first: a slow
 * unpacker does not hold the fetch past -W.
 */
static int
put(struct unpacker *u, const uint8_t *p, size_t n, int64_t deadline, struct maro_err *err)
{
	unsigned slot;
	int stopped, rc = 0;

	pthread_mutex_lock(&u->mu);
	while (u->put - (u->took < u->hashed ? u->took : u->hashed) == QUEUE && !u->stopped)
		if ((rc = wait_a_while(u, deadline, err)))
			break;
	slot = (unsigned)(u->put % QUEUE);
	stopped = u->stopped;
	pthread_mutex_unlock(&u->mu);
	if (rc || stopped)
		return rc ? rc : -1;
	/* the threads touch only what is counted: this slot is the fetch's */
	memcpy(u->q[slot].p, p, n);
	u->q[slot].n = n;
	pthread_mutex_lock(&u->mu);
	u->put++;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	return 0;
}

/*
 * The fetch hands on no more: waits for the unpacker to end, but not
 * past the deadline or a signal.  0, or a fault.
 */
static int
unpacked(struct unpacker *u, int64_t deadline, struct maro_err *err)
{
	int rc = 0;

	pthread_mutex_lock(&u->mu);
	u->closed = 1;
	pthread_cond_broadcast(&u->cv);
	while (!u->stopped)
		if ((rc = wait_a_while(u, deadline, err)))
			break;
	pthread_mutex_unlock(&u->mu);
	return rc;
}

/* Waits for a chunk past *done: 1, or 0 at the end. */
static int
next_chunk(struct unpacker *u, const uint64_t *done)
{
	int more;

	pthread_mutex_lock(&u->mu);
	while (*done == u->put && !u->closed)
		pthread_cond_wait(&u->cv, &u->mu);
	more = *done < u->put;
	pthread_mutex_unlock(&u->mu);
	return more;
}

/* One chunk more is done with (took or hashed). */
static void
chunk_done(struct unpacker *u, uint64_t *done)
{
	pthread_mutex_lock(&u->mu);
	++*done;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

/* The unpacker's stream (fopencookie): what the fetch put, in order; 0 at the end. */
static ssize_t
take(void *arg, char *buf, size_t len)
{
	struct unpacker *u = arg;
	unsigned slot;
	size_t k;

	if (!next_chunk(u, &u->took))
		return 0;
	slot = (unsigned)(u->took % QUEUE);
	k = u->q[slot].n - u->pos < len ? u->q[slot].n - u->pos : len;
	memcpy(buf, u->q[slot].p + u->pos, k);
	if ((u->pos += k) == u->q[slot].n) {
		u->pos = 0;
		chunk_done(u, &u->took);
	}
	return (ssize_t)k;
}

/* The hasher: the stream's SHA-256, chunk by chunk, beside the unpacker. */
static void *
hasher_main(void *arg)
{
	struct unpacker *u = arg;
	unsigned slot;

	while (next_chunk(u, &u->hashed)) {
		slot = (unsigned)(u->hashed % QUEUE);
		SHA256_Update(&u->sha, u->q[slot].p, u->q[slot].n);
		chunk_done(u, &u->hashed);
	}
	return NULL;
}

/* The fetch hands on no more (closed) or the unpacker reads no more (stopped). */
static void
unpacker_end(struct unpacker *u, int *flag)
{
	pthread_mutex_lock(&u->mu);
	*flag = 1;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

static void *
unpacker_main(void *arg)
{
	struct unpacker *u = arg;
	FILE *f = fopencookie(u, "r", (cookie_io_functions_t){ .read = take });
	char *buf = malloc(MARO_BUNDLE_CHUNK);

	if (!f || !buf)
		u->rc = fail(&u->err, MARO_BUNDLE_NOMEM, "out of memory");
	else
		u->rc = unpack(f, u->parent, "root", u->lim, buf, MARO_BUNDLE_CHUNK, &u->abort, u->man, &u->err);
	/* a fetch still handing on learns that it may stop */
	unpacker_end(u, &u->stopped);
	if (f)
		fclose(f);
	free(buf);
	return NULL;
}

/*
 * Fetches the stream (size bytes), WINDOW chunks in flight, at most rate
 * bytes a second, while the server reads the next chunks, and hands it
 * on in order to the hasher and the unpacker u.  A chunk that comes
 * before its turn waits in its slot's buffer.  0, a fault, or -1 when
 * the unpacker stopped (its own fault says why).
 */
static int
transfer(struct fetch *f, const char *hash, uint64_t size, uint64_t rate, struct unpacker *u, int64_t deadline,
    uint64_t *moved, struct maro_err *err)
{
	struct maro_delivery d;
	char text[128];
	uint64_t next = 0, want, val, handed = 0;
	unsigned major;
	size_t h;
	int inflight = 0, i, rc = 0, fed;
	int64_t start = maro_now_us(), told = start;

	while (!rc && (next < size || inflight)) {
		if (rate && !inflight && (rc = pace(rate, start, next, deadline, err)) != 0)
			break;
		for (i = 0; i < WINDOW && next < size && !rc; i++) {
			if (rate && maro_now_us() < start + (int64_t)(next * 1000000.0 / (double)rate))
				break;
			if (f->win[i].sid[0] || f->win[i].have)
				continue;
			snprintf(text, sizeof text, "%s %" PRIu64, hash, next);
			if ((rc = ask(f, text, f->win[i].sid, err)) != 0)
				break;
			f->win[i].off = next;
			next += size - next < MARO_BUNDLE_CHUNK ? size - next : MARO_BUNDLE_CHUNK;
			inflight++;
		}
		if (rc || (rc = await(f, deadline, &d, err)) != 0)
			break;
		if ((i = slot_of(f, &d.msg)) < 0) {
			maro_inbox_done(f->rq.inbox, &d);
			continue;
		}
		want = size - f->win[i].off < MARO_BUNDLE_CHUNK ? size - f->win[i].off : MARO_BUNDLE_CHUNK;
		h = d.msg.payload.p ? maro_cbor_head(d.msg.payload.p, d.msg.payload.n, &major, &val) : 0;
		if (!h || major != 2 || val != want || h + val != d.msg.payload.n) {
			maro_inbox_done(f->rq.inbox, &d);
			rc = fail(err, MARO_BUNDLE_HOSTILE, "'%s' sent a chunk at offset %" PRIu64
			    " that is not %" PRIu64 " bytes", f->server, f->win[i].off, want);
			break;
		}
		f->win[i].sid[0] = '\0';
		inflight--;
		*moved += val;
		if (f->win[i].off == handed) {
			rc = put(u, d.msg.payload.p + h, (size_t)val, deadline, err);
			handed += val;
		} else if (!f->win[i].buf && !(f->win[i].buf = malloc(MARO_BUNDLE_CHUNK))) {
			rc = fail(err, MARO_BUNDLE_NOMEM, "out of memory");
		} else {
			memcpy(f->win[i].buf, d.msg.payload.p + h, (size_t)val);
			f->win[i].have = (size_t)val;
		}
		maro_inbox_done(f->rq.inbox, &d);
		/* and those that waited for it */
		do {
			fed = 0;
			for (i = 0; i < WINDOW && !rc; i++)
				if (f->win[i].have && f->win[i].off == handed) {
					rc = put(u, f->win[i].buf, f->win[i].have, deadline, err);
					handed += f->win[i].have;
					f->win[i].have = 0;
					fed = 1;
				}
		} while (fed && !rc);
		if (f->progress && maro_now_us() - told >= 1000000) {
			told = maro_now_us();
			f->progress(f->arg, *moved, size);
		}
	}
	return rc;
}

int
maro_bundle_fetch(struct maro_ctx *c, const char *owner, const char *server,
    const struct maro_bundle_limits *lim, int64_t deadline, maro_bundle_progress_fn *progress,
    void *arg, struct maro_bundle_got *got, struct maro_err *err)
{
	struct fetch f;
	struct cache cache;
	char tmp[32], hex[MARO_BUNDLE_HASH_LEN + 1], mname[80], why[200];
	struct unpacker u;
	int rc, tfd = -1, one = -1, root = -1, mfd = -1, i;

	memset(&f, 0, sizeof f);
	memset(&u, 0, sizeof u);
	u.parent = -1;
	pthread_mutex_init(&u.mu, NULL);
	pthread_cond_init(&u.cv, NULL);
	memset(got, 0, sizeof *got);
	got->lock_fd = -1;
	f.c = c;
	f.owner = owner;
	f.server = server;
	f.progress = progress;
	f.arg = arg;
	/* the cache is opened, and checked, once, before the wait for the server: used by its handle after */
	if (maro_bundle_cache_dir(cache.path, sizeof cache.path) < 0) {
		cache.parent = cache.fd = cache.locks = -1;
		rc = fail(err, MARO_BUNDLE_IO, "no bundle cache: set MARO_BUNDLE_CACHE, XDG_CACHE_HOME or HOME");
		goto out;
	}
	if (cache_open(&cache, cache.path, 1, err) != 0) {
		rc = MARO_BUNDLE_IO;
		goto out;
	}
	if (!(f.ob = maro_outbox_new(c, undeliverable, NULL, &f))) {
		rc = fail(err, MARO_BUNDLE_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = ask_name(&f, deadline, got->hash, &got->size, err)) != 0)
		goto out;
	/* headers and links are small beside the files they carry */
	if (got->size > lim->bundle_max + lim->bundle_max / 8 + (1u << 20)) {
		rc = fail(err, MARO_BUNDLE_HOSTILE, "the bundle of '%s' is %" PRIu64 " bytes, over the limit of %"
		    PRIu64 " (MARO_BUNDLE_MAX)", server, got->size, lim->bundle_max);
		goto out;
	}
	if ((rc = use_cached(&cache, got->hash, got, why, sizeof why)) == 0)
		goto out;	/* rc 0: nothing moved */
	if (rc == 1) {
		snprintf(got->altered, sizeof got->altered, "%s", why);
		close(got->lock_fd);
		got->lock_fd = -1;
	}
	/* one fetcher of a bundle per host at a time: the others then find it in the cache */
	if ((one = hash_lock(&cache, got->hash, deadline)) < 0) {
		rc = errno == EINTR ? fail(err, MARO_BUNDLE_SIGNAL, "stopped by a signal") :
		    errno == ETIMEDOUT ? fail(err, MARO_BUNDLE_TIMEOUT, "another fetch of the bundle did not end in "
		    "time") : fail(err, MARO_BUNDLE_IO, "cannot write to the bundle cache '%s': %s", cache.path,
		    strerror(errno));
		goto out;
	}
	if ((rc = use_cached(&cache, got->hash, got, why, sizeof why)) == 0) {
		got->altered[0] = '\0';		/* another fetcher put it right */
		goto out;
	}
	if (rc == 1) {
		snprintf(got->altered, sizeof got->altered, "%s", why);
		if (set_aside(&cache, got->hash, got) < 0) {
			rc = fail(err, MARO_BUNDLE_IO, "cannot set aside the bundle '%s', which failed its check (%s): "
			    "%s", got->path, why, strerror(errno));
			goto out;
		}
	}
	if ((tfd = make_tmp(&cache, tmp)) < 0 ||
	    (mfd = openat(tfd, "manifest", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400)) < 0 ||
	    !(u.man = fdopen(mfd, "w")) || fprintf(u.man, "maro-manifest 2 %s\n", got->hash) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot write to the bundle cache '%s': %s", cache.path,
		    strerror(errno));
		goto out;
	}
	mfd = -1;
	for (i = 0; i < QUEUE; i++)
		if (!(u.q[i].p = malloc(MARO_BUNDLE_CHUNK))) {
			rc = fail(err, MARO_BUNDLE_NOMEM, "out of memory");
			goto out;
		}
	u.parent = tfd;
	u.lim = lim;
	chunks_from_heap();
	SHA256_Init(&u.sha);
	if ((errno = pthread_create(&u.hasher, NULL, hasher_main, &u)) != 0) {
		rc = fail(err, MARO_BUNDLE_NOMEM, "cannot start the hasher: %s", strerror(errno));
		goto out;
	}
	if ((errno = pthread_create(&u.thread, NULL, unpacker_main, &u)) != 0) {
		rc = fail(err, MARO_BUNDLE_NOMEM, "cannot start the unpacker: %s", strerror(errno));
		unpacker_end(&u, &u.closed);
		pthread_join(u.hasher, NULL);
		goto out;
	}
	rc = transfer(&f, got->hash, got->size, lim->rate, &u, deadline, &got->fetched, err);
	if (rc == 0)	/* all handed on, maybe all queued still: the unpacker too ends within -W */
		rc = unpacked(&u, deadline, err);
	if (rc > 0)	/* given up: what is queued is not worth unpacking */
		__atomic_store_n(&u.abort, 1, __ATOMIC_RELAXED);
	unpacker_end(&u, &u.closed);
	pthread_join(u.thread, NULL);
	pthread_join(u.hasher, NULL);
	sha_hex(&u.sha, hex);
	if (rc > 0)
		goto out;
	if (rc == 0 && strcmp(hex, got->hash)) {
		rc = fail(err, MARO_BUNDLE_HOSTILE, "the bundle of '%s' does not hash to its name %.12s... "
		    "(its bytes hash to %.12s...)", server, got->hash, hex);
		goto out;
	}
	if (u.rc != 0) {
		rc = u.rc;
		*err = u.err;
		goto out;
	}
	if (rc < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "the unpacker stopped");
		goto out;
	}
	snprintf(got->path, sizeof got->path, "%s/%s", cache.path, got->hash);
	snprintf(mname, sizeof mname, "%s.manifest", got->hash);
	/* the copy, then its manifest (a reader between the two finds no manifest and waits for the lock) */
	if ((root = openat(tfd, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    renameat(tfd, "root", cache.fd, got->hash) < 0 || renameat(tfd, "manifest", cache.fd, mname) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot put the bundle in '%s': %s", got->path, strerror(errno));
		goto out;
	}
	if (fchmod(root, 0555) < 0 || use_cached(&cache, got->hash, got, why, sizeof why) != 0) {
		rc = fail(err, MARO_BUNDLE_IO, "the bundle '%s' went from the cache at once", got->path);
		goto out;
	}
	evict(&cache, lim->cache_max, got->hash);
out:
	for (i = 0; i < WINDOW; i++)
		free(f.win[i].buf);
	for (i = 0; i < QUEUE; i++)
		free(u.q[i].p);
	pthread_mutex_destroy(&u.mu);
	pthread_cond_destroy(&u.cv);
	if (u.man)
		fclose(u.man);
	if (mfd >= 0)
		close(mfd);
	if (root >= 0)
		close(root);
	if (tfd >= 0) {
		rm_at(cache.fd, tmp);
		close(tfd);
	}
	if (one >= 0)
		close(one);
	if (rc != 0 && got->lock_fd >= 0) {
		close(got->lock_fd);
		got->lock_fd = -1;
	}
	cache_close(&cache);
	if (f.rq.inbox)
		maro_inbox_flush(f.rq.inbox);
	maro_requester_close(&f.rq);
	maro_outbox_free(f.ob);
	maro_buf_free(&f.pl);
	maro_buf_free(&f.enc);
	return rc;
}

int
maro_bundle_clear(struct maro_bundle_cleared *out, struct maro_err *err)
{
	struct cache c;
	struct dirent *e;
	struct stat a, b;
	DIR *d;
	char name[300];
	int fd, rc, pass, left = 0;

	memset(out, 0, sizeof *out);
	if (maro_bundle_cache_dir(c.path, sizeof c.path) < 0)
		return fail(err, MARO_BUNDLE_IO, "no bundle cache: set MARO_BUNDLE_CACHE, XDG_CACHE_HOME or HOME");
	if ((rc = cache_open(&c, c.path, 0, err)) != 0) {
		snprintf(out->path, sizeof out->path, "%s", c.path);
		out->gone = 1;
		return rc < 0 ? MARO_BUNDLE_IO : 0;
	}
	snprintf(out->path, sizeof out->path, "%s", c.path);
	/* bundles first, then what is left: their manifests, lock files, strays */
	for (pass = 0; pass < 2; pass++) {
		if ((fd = openat(c.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(d = fdopendir(fd))) {
			if (fd >= 0)
				close(fd);
			cache_close(&c);
			return fail(err, MARO_BUNDLE_IO, "cannot read the bundle cache '%s': %s", out->path,
			    strerror(errno));
		}
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".locks"))
				continue;
			if (pass == 0 && !is_hash(e->d_name))
				continue;
			snprintf(name, sizeof name, "%s", e->d_name);
			if (pass == 1 && strlen(name) == MARO_BUNDLE_HASH_LEN + 9 &&
			    !strcmp(name + MARO_BUNDLE_HASH_LEN, ".manifest")) {
				/* the manifest of a bundle kept in use stays with it */
				name[MARO_BUNDLE_HASH_LEN] = '\0';
				if (fstatat(c.fd, name, &a, AT_SYMLINK_NOFOLLOW) == 0) {
					left++;
					continue;
				}
				name[MARO_BUNDLE_HASH_LEN] = '.';
			}
			if ((rc = drop(&c, name, &out->bytes)) == 1)
				out->removed += pass == 0;
			else if (rc == 0)
				left++, out->kept += pass == 0;
			else
				left++, out->failed++;
		}
		closedir(d);
		if (pass == 0)
			left = 0;
	}
	/* lock files: each removed by its holder, under it; one held is a fetch in the midst */
	if ((fd = openat(c.locks, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 && (d = fdopendir(fd))) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (!is_hash(e->d_name)) {
				unlinkat(c.locks, e->d_name, 0);
			} else if ((fd = hash_lock(&c, e->d_name, 0)) >= 0) {
				hash_unlock_remove(&c, e->d_name, fd);
			} else {
				left++;
			}
		}
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	/* all of it went: the cache too, if it is still the one opened */
	if (!left && unlinkat(c.fd, ".locks", AT_REMOVEDIR) == 0 && fstat(c.fd, &a) == 0 &&
	    fstatat(c.parent, c.name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev && unlinkat(c.parent, c.name, AT_REMOVEDIR) == 0)
		out->gone = 1;
	cache_close(&c);
	return 0;
}
