#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
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
#include "outbox.h"
#include "reply.h"
#include "session.h"

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

static int
mkdirs(const char *path)
{
	char tmp[4096], *s;

	snprintf(tmp, sizeof tmp, "%s", path);
	for (s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(tmp, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/*
 * Is the directory at path the cache's own: a directory, not a link,
 * owned by this user and writable by no one else?  Another local user who
 * made it first (under /tmp, say) could plant a bundle that the next
 * worker runs.  0, or -1 with why.
 */
static int
cache_owned(const char *path, char *why, size_t len)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		snprintf(why, len, "%s", strerror(errno));
	else if (S_ISLNK(st.st_mode))
		snprintf(why, len, "it is a symbolic link");
	else if (!S_ISDIR(st.st_mode))
		snprintf(why, len, "it is not a directory");
	else if (st.st_uid != geteuid())
		snprintf(why, len, "it is owned by uid %u, not by us (uid %u)", (unsigned)st.st_uid,
		    (unsigned)geteuid());
	else if (st.st_mode & 022)
		snprintf(why, len, "it is writable by group or others (mode %04o)", (unsigned)(st.st_mode & 07777));
	else
		return 0;
	return -1;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	if (flag == FTW_DP)
		chmod(path, 0700);
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int
chmod_dirs(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && !(st->st_mode & S_IWUSR))
		chmod(path, (st->st_mode & 0777) | 0700);
	return 0;
}

/* rm -rf path: directories made writable first, links not followed. */
static void
rm_tree(const char *path)
{
	nftw(path, chmod_dirs, 16, FTW_PHYS);
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t du_total;

static int
du_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path, (void)flag, (void)ftw;
	du_total += (uint64_t)st->st_size;
	return 0;
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

/* Takes a directory of the cache out of use: locked, renamed away, removed.  0 when it went. */
static int
drop(const char *cache, const char *name)
{
	char path[4096], gone[4096];
	int fd;

	snprintf(path, sizeof path, "%s/%s", cache, name);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;	/* in use, or being made */
	}
	snprintf(gone, sizeof gone, "%s/gone.%d.%s", cache, (int)getpid(), name);
	if (rename(path, gone) == 0)
		rm_tree(gone);
	if (strlen(name) == MARO_BUNDLE_HASH_LEN) {
		snprintf(path, sizeof path, "%s/.locks/%s", cache, name);
		unlink(path);
	}
	close(fd);
	return 0;
}

/*
 * Least recently used bundles out, but keep, until the cache is within
 * max; temporary directories whose maker is gone (unlocked, a minute old)
 * too.
 */
static void
evict(const char *cache, uint64_t max, const char *keep)
{
	DIR *d = opendir(cache);
	struct dirent *e;
	struct cached *v = NULL, *nv;
	size_t n = 0, i;
	uint64_t total = 0;
	char path[4096 + 260];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		snprintf(path, sizeof path, "%s/%s", cache, e->d_name);
		if ((!strncmp(e->d_name, "tmp.", 4) || !strncmp(e->d_name, "gone.", 5)) &&
		    lstat(path, &st) == 0 && st.st_mtime + 60 < time(NULL)) {
			drop(cache, e->d_name);
			continue;
		}
		if (strlen(e->d_name) != MARO_BUNDLE_HASH_LEN || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof *v)))
			break;
		v = nv;
		snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
		v[n].used = st.st_mtim;
		du_total = 0;
		nftw(path, du_one, 16, FTW_PHYS);
		total += v[n++].size = du_total;
	}
	closedir(d);
	qsort(v, n, sizeof *v, by_use);
	for (i = 0; i < n && total > max; i++)
		if (strcmp(v[i].name, keep) && drop(cache, v[i].name) == 0)
			total -= v[i].size;
	free(v);
}

/* The bundle hash in the cache, in use from now on (locked shared, its time of use now).  0, or -1. */
static int
use_cached(const char *cache, const char *hash, struct maro_bundle_got *got)
{
	struct stat a, b;
	int fd;

	snprintf(got->dir, sizeof got->dir, "%s/%s", cache, hash);
	if ((fd = open(got->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	/* an evictor renames it away under its exclusive lock: this one must still be the one named */
	if (flock(fd, LOCK_SH) < 0 || fstat(fd, &a) < 0 || stat(got->dir, &b) < 0 ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
		close(fd);
		return -1;
	}
	futimens(fd, NULL);
	got->lock_fd = fd;
	return 0;
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

/* A directory below the top made read-only, as its files are (nftw). */
static int
seal_dir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_D && ftw->level > 0)
		chmod(path, (st->st_mode & 0555) | 0500);
	return 0;
}

/* Unpacks the stream f into dir (new), writing files from buf (cap bytes); as maro_bundle_unpack. */
static int
unpack(FILE *f, const char *dir, const struct maro_bundle_limits *lim, char *buf, size_t cap,
    int *stop, struct maro_err *err)
{
	char line[LINE_MAX_], path[8192], target[4096], last[4096] = "", *rel, *end;
	uint64_t total = 0, size, left;
	unsigned long mode = 0;
	int out, rc = MARO_BUNDLE_HOSTILE;
	size_t k;

	if (mkdir(dir, 0700) < 0)
		return fail(err, MARO_BUNDLE_IO, "cannot make '%s': %s", dir, strerror(errno));
	if (!fgets(line, sizeof line, f) || strcmp(line, "maro-bundle 1\n")) {
		fail(err, rc, "not a bundle (no 'maro-bundle 1' line first)");
		goto out;
	}
	for (;;) {
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
			else if (nftw(dir, seal_dir, 16, FTW_PHYS) != 0)
				rc = fail(err, MARO_BUNDLE_IO, "cannot make '%s' read-only: %s", dir, strerror(errno));
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
		snprintf(path, sizeof path, "%s/%s", dir, rel);
		if (line[0] == 'd') {
			if (mkdir(path, (mode & 0777) | 0700) < 0) {
				rc = fail(err, write_fault(errno), "'%.100s' twice, or cannot be made: %s", rel,
				    strerror(errno));
				goto out;
			}
			snprintf(last, sizeof last, "%s", rel);
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
			if (symlink(target, path) < 0) {
				rc = fail(err, write_fault(errno), "the link '%.100s' is there twice, or cannot be "
				    "made: %s", rel, strerror(errno));
				goto out;
			}
			continue;
		}
		if (size > lim->file_max || (total += size) > lim->bundle_max) {
			fail(err, rc, "'%.100s' (%" PRIu64 " bytes) is over the limit of %" PRIu64 " bytes "
			    "a file, %" PRIu64 " a bundle (MARO_BUNDLE_FILE_MAX, MARO_BUNDLE_MAX)", rel, size,
			    lim->file_max, lim->bundle_max);
			goto out;
		}
		if ((out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
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
		if (fchmod(out, (mode_t)(mode & 0555)) < 0) {
			close(out);
			rc = fail(err, MARO_BUNDLE_IO, "'%.100s' cannot be written: %s", rel, strerror(errno));
			goto out;
		}
		close(out);
	}
out:
	return rc;
}

int
maro_bundle_unpack(int fd, const char *dir, const struct maro_bundle_limits *lim,
    struct maro_err *err)
{
	int in = dup(fd), rc;
	FILE *f = in >= 0 ? fdopen(in, "r") : NULL;
	char *buf = malloc(MARO_BUNDLE_CHUNK);

	if (!f || !buf) {
		if (f)
			fclose(f);
		else if (in >= 0)
			close(in);
		free(buf);
		return fail(err, MARO_BUNDLE_NOMEM, "out of memory");
	}
	rc = unpack(f, dir, lim, buf, MARO_BUNDLE_CHUNK, NULL, err);
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
	zmq_pollitem_t items[64];
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
		items[0] = (zmq_pollitem_t){ maro_inbox_pollable(f->rq.inbox), 0, ZMQ_POLLIN, 0 };
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
manifest(struct fetch *f, int64_t deadline, char hash[MARO_BUNDLE_HASH_LEN + 1], uint64_t *size,
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
	const char *dir;
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
		u->rc = unpack(f, u->dir, u->lim, buf, MARO_BUNDLE_CHUNK, &u->abort, &u->err);
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
	char cache[4000], tmp[4096], path[4200], final[4096], hex[MARO_BUNDLE_HASH_LEN + 1], why[120];
	struct unpacker u;
	int rc, lock = -1, one = -1, made = 0, i;

	memset(&f, 0, sizeof f);
	memset(&u, 0, sizeof u);
	pthread_mutex_init(&u.mu, NULL);
	pthread_cond_init(&u.cv, NULL);
	memset(got, 0, sizeof *got);
	got->lock_fd = -1;
	f.c = c;
	f.owner = owner;
	f.server = server;
	f.progress = progress;
	f.arg = arg;
	if (!(f.ob = maro_outbox_new(c, undeliverable, NULL, &f))) {
		rc = fail(err, MARO_BUNDLE_NOMEM, "out of memory");
		goto out;
	}
	if (maro_bundle_cache_dir(cache, sizeof cache) < 0 || mkdirs(cache) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot make the bundle cache '%s': %s", cache, strerror(errno));
		goto out;
	}
	snprintf(path, sizeof path, "%s/.locks", cache);
	if (cache_owned(cache, why, sizeof why) < 0 ||
	    ((mkdir(path, 0700) == 0 || errno == EEXIST) && cache_owned(path, why, sizeof why) < 0)) {
		rc = fail(err, MARO_BUNDLE_IO, "will not use the bundle cache '%s': %s", cache, why);
		goto out;
	}
	if ((rc = manifest(&f, deadline, got->hash, &got->size, err)) != 0)
		goto out;
	/* headers and links are small beside the files they carry */
	if (got->size > lim->bundle_max + lim->bundle_max / 8 + (1u << 20)) {
		rc = fail(err, MARO_BUNDLE_HOSTILE, "the bundle of '%s' is %" PRIu64 " bytes, over the limit of %"
		    PRIu64 " (MARO_BUNDLE_MAX)", server, got->size, lim->bundle_max);
		goto out;
	}
	if (use_cached(cache, got->hash, got) == 0)
		goto out;	/* rc 0: nothing moved */
	/* one fetcher of a bundle per host at a time: the others then find it in the cache */
	snprintf(path, sizeof path, "%s/.locks/%s", cache, got->hash);
	if ((one = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot write to the bundle cache '%s': %s", cache,
		    strerror(errno));
		goto out;
	}
	while (flock(one, LOCK_EX | LOCK_NB) < 0) {
		if (maro_signal || maro_now_us() >= deadline) {
			rc = maro_signal ? fail(err, MARO_BUNDLE_SIGNAL, "stopped by a signal") :
			    fail(err, MARO_BUNDLE_TIMEOUT, "another fetch of the bundle did not end in time");
			goto out;
		}
		/* every 2 ms: at 20, the waiters of a 0.15 s fetch found it up to 13 % late */
		usleep(2000);
	}
	if (use_cached(cache, got->hash, got) == 0)
		goto out;
	snprintf(tmp, sizeof tmp, "%s/tmp.XXXXXX", cache);
	if (!mkdtemp(tmp) || (made = 1, lock = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    flock(lock, LOCK_EX) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot write to the bundle cache '%s': %s", cache,
		    strerror(errno));
		goto out;
	}
	for (i = 0; i < QUEUE; i++)
		if (!(u.q[i].p = malloc(MARO_BUNDLE_CHUNK))) {
			rc = fail(err, MARO_BUNDLE_NOMEM, "out of memory");
			goto out;
		}
	snprintf(path, sizeof path, "%s/root", tmp);
	u.dir = path;
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
	snprintf(final, sizeof final, "%s/%s", cache, got->hash);
	/* another fetcher may have put it there first: then its copy is the one */
	if (rename(path, final) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
		rc = fail(err, MARO_BUNDLE_IO, "cannot put the bundle in '%s': %s", final, strerror(errno));
		goto out;
	}
	if (chmod(final, 0555) < 0 || use_cached(cache, got->hash, got) < 0) {
		rc = fail(err, MARO_BUNDLE_IO, "the bundle '%s' went from the cache at once", final);
		goto out;
	}
	evict(cache, lim->cache_max, got->hash);
out:
	for (i = 0; i < WINDOW; i++)
		free(f.win[i].buf);
	for (i = 0; i < QUEUE; i++)
		free(u.q[i].p);
	pthread_mutex_destroy(&u.mu);
	pthread_cond_destroy(&u.cv);
	if (made)
		rm_tree(tmp);
	if (lock >= 0)
		close(lock);
	if (one >= 0)
		close(one);
	if (f.rq.inbox)
		maro_inbox_flush(f.rq.inbox);
	maro_requester_close(&f.rq);
	maro_outbox_free(f.ob);
	maro_buf_free(&f.pl);
	maro_buf_free(&f.enc);
	return rc;
}
