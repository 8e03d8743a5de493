/*
 * registry-dir: the embedded backend, one directory per group (dir:PATH
 * keeps group G in PATH/G, mode 0700, owned by the user, as PATH is and
 * every directory in between: open_checked).
 *
 *   NAME.entry          one entry: "key=value" lines (registry-impl.h
 *                       fields plus token, hb, ttl, owner), replaced
 *                       atomically (written as .tmp.*, then renamed)
 *   .owner.PID.XXXXXXXX a handle's lock file: it holds an open file
 *                       description lock (F_OFD_SETLK) on it for its whole
 *                       life, so a reader sees with F_OFD_GETLK whether
 *                       the owner still runs; the kernel drops the lock
 *                       the instant a SIGKILLed owner dies
 *   .lock               name locks: a registrant of NAME holds a write
 *                       lock (fcntl(2)) on one byte of it, at
 *                       name_byte(NAME), around register, rewrite and
 *                       unregister, so two registrants of a name cannot
 *                       both win and a heartbeat cannot undo a takeover,
 *                       while registrants of other names go on; the
 *                       sweep locks the whole file
 *   .swept              touched by the last sweep (below)
 *
 * A heartbeat that changes nothing but the time touches its entry (the
 * mtime), without the lock (touch_own); every REWRITE_MS it rewrites it,
 * every STATS_REWRITE_MS when its counters (stats) changed, and at once
 * when its job changed (a master's figures are what a monitor shows).
 * An entry is live when it parses, its owner's lock is held, and its
 * heartbeat (the later of its hb field and its mtime, wall clock ms) is
 * younger than its own ttl.  Readers never
 * delete: a stale entry is ignored and overwritten by the next registrant.
 * Under the whole of .lock (one try: never waited for), a handle's first
 * registration sweeps what dead owners left (their lock files, stale
 * entries, temporary files, the socket files of their inboxes), unless
 * another did within SWEEP_EVERY_S.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "registry-impl.h"

#define ENTRY_MAX 4096
/* a name's lock, without -W: a live holder is given this long (a stopped one is named at once) */
#define LOCK_WAIT_MS 60000
/* a live entry is touched every second or so: older files are worth a look */
#define SWEEP_AGE_S 3
/* how long the last member to leave waits for the group's lock to remove it */
#define LEAVE_WAIT_MS 500
/* a heartbeat rewrites the entry (its load and memory figures) this often; else it touches it */
#define REWRITE_MS 20000
/* changed counters (stats) are written at most this often: they matter less than the lock */
#define STATS_REWRITE_MS 5000
/* a first registration sweeps the group unless one did within this time (.swept) */
#define SWEEP_EVERY_S 10

struct dir {
	char where[PATH_MAX];		/* PATH, the registry's root */
	char path[PATH_MAX];		/* PATH/GROUP, for messages */
	int dfd;			/* the group directory: every file is opened at it */
	int gfd;			/* .lock, once needed */
	int ofd;			/* our owner lock file, from the first registration */
	char owner[64];
	int swept;
	struct maro_registry *r;	/* whose entries' MACs parse_entry checks */
	int member;			/* it made the directory ready (put, prepare): it may remove it */
};

static struct dir *
D(const struct maro_registry *r)
{
	return r->priv;
}

static int lock_fd(struct maro_registry *r);
static int try_range(struct dir *d, off_t start, off_t len);
static void unlock_range(struct dir *d, off_t start, off_t len);
static pid_t range_holder(struct dir *d, off_t start, off_t len);
static int stopped(pid_t pid);

/*
 * Opens path (where/group), with make creating what is missing with mode
 * 0700 (without it, a missing one is -1/ENOENT), and checks each directory
 * on the way.  At and below the registry's root
 * (where) each must be a directory of ours that no one else may write, and
 * is opened without following a symbolic link: else another local user
 * could rename it away and put up their own, and receive what is sent to
 * our names.  Above the root, where symbolic links are followed (a link in
 * a directory others cannot write is its owner's), each must belong to
 * root or us, and be sticky if others may write it (as /tmp).  Returns the
 * open group directory, or -1 (EACCES for a directory that fails).
 */
static int
open_checked(struct maro_registry *r, const char *where, const char *path, int make)
{
	size_t root = strlen(where), at = 0, n;
	struct stat st;
	char comp[NAME_MAX + 1];
	int fd, nfd, tries;

	while (root > 1 && where[root - 1] == '/')
		root--;
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return maro_registry_fail(r, errno, "cannot open '/': %s", strerror(errno));
	for (;;) {
		int mine;

		while (path[at] == '/')
			at++;
		if (!path[at])
			return fd;
		n = strcspn(path + at, "/");
		if (n > NAME_MAX) {
			close(fd);
			return maro_registry_fail(r, ENAMETOOLONG, "registry directory '%s' is too long", path);
		}
		memcpy(comp, path + at, n);
		comp[n] = '\0';
		at += n;
		mine = at >= root;
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			close(fd);
			return maro_registry_fail(r, EINVAL, "registry directory '%s': no . or .. in it, please",
			    path);
		}
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (mine ? O_NOFOLLOW : 0));
		if (nfd < 0 && errno == ENOENT && !make) {
			close(fd);
			return maro_registry_fail(r, ENOENT, "no registry directory '%.*s'", (int)at, path);
		}
		/* made, or found made: unless its last member removed it meanwhile (a few tries) */
		for (tries = 0; nfd < 0 && errno == ENOENT && tries < 4; tries++) {
			if (mkdirat(fd, comp, 0700) < 0 && errno != EEXIST) {
				int e = errno;

				close(fd);
				return maro_registry_fail(r, e, "cannot create registry directory '%.*s': %s",
				    (int)at, path, strerror(e));
			}
			nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (mine ? O_NOFOLLOW : 0));
		}
		if (nfd < 0) {
			int e = errno, link;

			/* O_DIRECTORY with O_NOFOLLOW says ENOTDIR of a link */
			link = (e == ELOOP || e == ENOTDIR) &&
			    fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
			close(fd);
			if (e == ELOOP || e == ENOTDIR)
				return maro_registry_fail(r, EACCES, "registry directory '%.*s' is %s: refused",
				    (int)at, path, link ? "a symbolic link" : "not a directory");
			return maro_registry_fail(r, e, "cannot open registry directory '%.*s': %s",
			    (int)at, path, strerror(e));
		}
		close(fd);
		if (fstat(nfd, &st) < 0) {
			close(nfd);
			return maro_registry_fail(r, errno, "cannot open registry directory '%.*s': %s",
			    (int)at, path, strerror(errno));
		}
		if (mine && st.st_uid != geteuid()) {
			close(nfd);
			return maro_registry_fail(r, EACCES, "registry directory '%.*s' is owned by another "
			    "user (uid %lu): refused", (int)at, path, (unsigned long)st.st_uid);
		}
		if (mine && (st.st_mode & 022)) {
			close(nfd);
			return maro_registry_fail(r, EACCES, "registry directory '%.*s' is writable by %s "
			    "(mode %03o): refused", (int)at, path, st.st_mode & 002 ? "others" : "its group",
			    (unsigned)(st.st_mode & 0777));
		}
		if (!mine && st.st_uid != 0 && st.st_uid != geteuid()) {
			close(nfd);
			return maro_registry_fail(r, EACCES, "directory '%.*s', above the registry, is owned "
			    "by another user (uid %lu): refused", (int)at, path, (unsigned long)st.st_uid);
		}
		if (!mine && (st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
			close(nfd);
			return maro_registry_fail(r, EACCES, "directory '%.*s', above the registry, may be "
			    "written by others and is not sticky: refused", (int)at, path);
		}
		fd = nfd;
	}
}

/*
 * Whether the group's directory is there, opened at d->dfd: 1, or 0 when
 * it is not (readers list nothing and create nothing); with make it is
 * created, as a member needs it.  One removed since it was opened (its
 * last member left: remove_if_empty) is looked up again by its path.  -1
 * on error.
 */
static int
present(struct maro_registry *r, int make)
{
	struct dir *d = D(r);
	struct stat st;

	if (d->dfd >= 0 && fstat(d->dfd, &st) == 0 && st.st_nlink > 0)
		return 1;
	if (d->dfd >= 0) {
		if (d->gfd >= 0)
			close(d->gfd);
		if (d->ofd >= 0)
			close(d->ofd);	/* its file went with the directory: made anew at the next put */
		close(d->dfd);
		d->dfd = d->gfd = d->ofd = -1;
		d->swept = 0;
	}
	d->dfd = open_checked(r, d->where, d->path, make);
	if (d->dfd >= 0)
		return 1;
	return !make && errno == ENOENT ? 0 : -1;
}

static int
dir_open(struct maro_registry *r, const char *where)
{
	struct dir *d = calloc(1, sizeof *d);
	int n;

	if (!d)
		return maro_registry_fail(r, ENOMEM, "out of memory");
	d->dfd = d->gfd = d->ofd = -1;
	d->r = r;
	r->priv = d;
	if (*where != '/')
		return maro_registry_fail(r, EINVAL, "invalid registry 'dir:%s' (the path must be absolute)",
		    where);
	n = snprintf(d->path, sizeof d->path, "%s/%s", where, r->group);
	if (n < 0 || (size_t)n >= sizeof d->path)
		return maro_registry_fail(r, ENAMETOOLONG, "registry directory '%s' is too long", where);
	snprintf(d->where, sizeof d->where, "%s", where);
	return present(r, 0) < 0 ? -1 : 0;
}

/* Whether the group directory holds only what a group without members keeps (.lock, .swept). */
static int
group_empty(struct dir *d)
{
	int fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), empty = 1;
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dp) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (empty && (de = readdir(dp)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".lock") || !strcmp(de->d_name, ".swept");
	closedir(dp);
	return empty;
}

/*
 * The last member to leave removes the group's directory, under the whole
 * of .lock, so that a mistyped or finished group leaves nothing.  A handle
 * that held an entry (wait) waits for the lock up to LEAVE_WAIT_MS, unless
 * its holder is stopped: two members that leave at once each find the
 * other's files while it holds the lock, and with one try each both gave
 * up and left the directory.  A registrant that opened it
 * before cannot have written in it meanwhile (it needs a name's lock) and
 * finds out after (put: stale); an inbox's socket bound in it meanwhile
 * makes the rmdir fail and the directory stays, without .lock, which the
 * next registrant makes anew.
 */
static void
remove_if_empty(struct maro_registry *r, int wait)
{
	struct dir *d = D(r);
	struct stat a, b;
	int64_t end = maro_now_us() + (int64_t)LEAVE_WAIT_MS * 1000;
	pid_t holder;

	if (lock_fd(r) < 0)
		return;
	while (try_range(d, 0, 0) < 0) {
		/* held for a put, a sweep or another leaver's look: each takes a moment */
		struct timespec ts = { 0, 5000000 };

		if (!wait || (errno != EAGAIN && errno != EACCES && errno != EINTR) || maro_now_us() >= end ||
		    ((holder = range_holder(d, 0, 0)) > 0 && stopped(holder)))
			return;
		nanosleep(&ts, NULL);
	}
	/* the directory at its path is still the one this handle opened (rmdir goes by path) */
	if (fstat(d->dfd, &a) == 0 && a.st_nlink > 0 && stat(d->path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino && group_empty(d)) {
		unlinkat(d->dfd, ".swept", 0);
		unlinkat(d->dfd, ".lock", 0);
		rmdir(d->path);
	}
	unlock_range(d, 0, 0);
}

static void
dir_close(struct maro_registry *r)
{
	struct dir *d = D(r);
	int held;

	if (!d)
		return;
	held = d->ofd >= 0;
	if (held) {
		unlinkat(d->dfd, d->owner, 0);
		close(d->ofd);
	}
	/* a handle that never held an entry (its join refused) tries once */
	if (d->member && d->dfd >= 0)
		remove_if_empty(r, held);
	if (d->gfd >= 0)
		close(d->gfd);
	if (d->dfd >= 0)
		close(d->dfd);
	free(d);
	r->priv = NULL;
}

/* Whether process pid is stopped (SIGSTOP, ^Z, a debugger): it will not let go by itself. */
static int
stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* The byte of .lock that stands for name (FNV-1a): distinct names rarely share one. */
static off_t
name_byte(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return 1 + (off_t)(h & 0x3fffffff);
}

static int
lock_fd(struct maro_registry *r)
{
	struct dir *d = D(r);

	if (d->gfd < 0) {
		d->gfd = openat(d->dfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (d->gfd < 0)
			return maro_registry_fail(r, errno, "cannot open '%s/.lock': %s", d->path,
			    strerror(errno));
	}
	return 0;
}

/* One try of a write lock on [start, start + len) of .lock (len 0: all of it): 0, or -1 and errno. */
static int
try_range(struct dir *d, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	return fcntl(d->gfd, F_SETLK, &fl);
}

static void
unlock_range(struct dir *d, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	fcntl(d->gfd, F_SETLK, &fl);
}

/* The pid of a process holding a lock on [start, start + len) of .lock; 0 when none is seen. */
static pid_t
range_holder(struct dir *d, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	if (fcntl(d->gfd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid;
}

/*
 * The lock of one name: a write lock (fcntl(2), a process's own) on the
 * name's byte of .lock, so registrants of different names never wait for
 * each other, and the sweep (which locks the whole file) excludes them
 * all.  Tried again after a growing, randomized pause (only registrants of
 * one name, or a sweep, contend); given up at -W (LOCK_WAIT_MS without
 * it), or at once when the process holding it is stopped.  A member that
 * leaves (leaving) waits LEAVE_WAIT_MS at most, and a signal does not
 * end that wait: a member stopped by SIGTERM while another held the lock
 * for a moment left its entry, and the group's directory, behind.
 */
static int
name_lock(struct maro_registry *r, const char *name, int leaving)
{
	struct dir *d = D(r);
	int64_t start = maro_now_us(), next_look = start + 200000, end;
	unsigned pause_us = 500, seed = (unsigned)getpid() ^ (unsigned)start;
	off_t at = name_byte(name);
	pid_t holder;

	end = start + (leaving ? (int64_t)LEAVE_WAIT_MS * 1000 :
	    maro_budget_us((int64_t)LOCK_WAIT_MS * 1000, 100000));
	if (lock_fd(r) < 0)
		return -1;
	while (try_range(d, at, 1) < 0) {
		int64_t now = maro_now_us();
		struct timespec ts;
		unsigned us;

		if (errno != EACCES && errno != EAGAIN && errno != EINTR)
			return maro_registry_fail(r, errno, "cannot lock '%s/.lock': %s", d->path,
			    strerror(errno));
		if (maro_signal && !leaving)
			return maro_registry_fail(r, EINTR, "interrupted waiting for '%s/.lock'", d->path);
		if (now >= next_look || now >= end) {
			holder = range_holder(d, at, 1);
			if (holder > 0 && stopped(holder))
				return maro_registry_fail(r, EDEADLK, "registry directory '%s' is locked "
				    "by pid %ld, which is stopped", d->path, (long)holder);
			if (now >= end)
				return maro_registry_fail(r, ETIMEDOUT, "registry directory '%s' stays "
				    "locked by another process (pid %ld)", d->path, (long)holder);
			next_look = now + 200000;
		}
		us = pause_us / 2 + (unsigned)rand_r(&seed) % (pause_us / 2 + 1);
		if (pause_us < 16000)
			pause_us *= 2;
		if (now + us > end)
			us = (unsigned)(end - now);
		ts.tv_sec = us / 1000000;
		ts.tv_nsec = (long)(us % 1000000) * 1000;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void
name_unlock(struct maro_registry *r, const char *name)
{
	unlock_range(D(r), name_byte(name), 1);
}

/* Opens a file of the group directory for reading, if it is a regular file. */
static int
open_plain(struct dir *d, const char *file, struct stat *st)
{
	int fd = openat(d->dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static int
owner_alive(struct dir *d, const char *owner)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	int fd, alive;

	if (d->ofd >= 0 && !strcmp(owner, d->owner))
		return 1;
	fd = open_plain(d, owner, &st);
	if (fd < 0)
		return 0;
	alive = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return alive;
}

/*
 * The entry in open file fd (st: its fstat): 1 parsed, -1 garbage.  A
 * heartbeat that changes nothing but the time only touches the file
 * (touch_own), so the heartbeat is the later of its hb field and its mtime.
 */
static int
parse_entry(struct maro_registry *r, int fd, const struct stat *st, struct maro_entry *e,
    struct maro_registry_meta *m, int64_t *written)
{
	char buf[ENTRY_MAX + 1], *p, *end;
	ssize_t n;
	size_t len = 0;
	int64_t touched;

	if (st->st_size > ENTRY_MAX)
		return -1;
	while (len < sizeof buf - 1 && (n = pread(fd, buf + len, sizeof buf - 1 - len, (off_t)len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		len += (size_t)n;
	}
	if (len == 0 || len > ENTRY_MAX || buf[len - 1] != '\n')
		return -1;
	memset(e, 0, sizeof *e);
	memset(m, 0, sizeof *m);
	for (p = buf; p < buf + len; p = end + 1) {
		char *eq;

		end = memchr(p, '\n', (size_t)(buf + len - p));
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || eq == p ||
		    maro_registry_field(e, m, p, (size_t)(eq - p), eq + 1, (size_t)(end - eq - 1)) < 0)
			return -1;
	}
	if (maro_registry_entry_check(r, e, m) != 0 || !m->owner[0])
		return -1;
	if (written)
		*written = m->hb_ms;	/* the last heartbeat that wrote the file */
	touched = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
	if (touched > m->hb_ms)
		m->hb_ms = touched;
	return 1;
}

/* 1 with the file parsed, 0 no such file, -1 garbage. */
static int
read_entry(struct dir *d, const char *file, struct maro_entry *e, struct maro_registry_meta *m)
{
	struct stat st;
	int fd = open_plain(d, file, &st), rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = parse_entry(d->r, fd, &st, e, m, NULL);
	close(fd);
	return rc;
}

static void
entry_file(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s.entry", name);
}

/* 1 live (e, m filled, age set), 0 none, dead or expired, -1 garbage. */
static int
get_entry(struct dir *d, const char *name, struct maro_entry *e, struct maro_registry_meta *m)
{
	char file[MARO_NAME_MAX + 8];
	int64_t age;
	int rc;

	entry_file(file, sizeof file, name);
	rc = read_entry(d, file, e, m);
	if (rc <= 0)
		return rc;
	if (strcmp(e->name, name) != 0)
		return -1;
	age = maro_registry_wall_ms() - m->hb_ms;
	e->heartbeat_age_ms = age < 0 ? 0 : age;
	return age <= m->ttl_ms && owner_alive(d, m->owner);
}

/* Under the name's lock (the owner file is locked before any entry names it). */
static int
own_lock(struct maro_registry *r)
{
	struct dir *d = D(r);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (d->ofd >= 0)
		return 0;
	snprintf(d->owner, sizeof d->owner, ".owner.%ld.%.8s", (long)getpid(), r->token);
	unlinkat(d->dfd, d->owner, 0);
	d->ofd = openat(d->dfd, d->owner, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d->ofd < 0)
		return maro_registry_fail(r, errno, "cannot create '%s/%s': %s", d->path, d->owner,
		    strerror(errno));
	if (fcntl(d->ofd, F_OFD_SETLK, &fl) < 0) {
		int err = errno;

		close(d->ofd);
		d->ofd = -1;
		unlinkat(d->dfd, d->owner, 0);
		return maro_registry_fail(r, err, "cannot lock '%s/%s': %s", d->path, d->owner,
		    strerror(err));
	}
	return 0;
}

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

/*
 * Under the whole of .lock, so nothing it removes can be in use: owner
 * files are locked before any entry names them, temporary files live only
 * under a name's lock, and the owner of an entry that is not live
 * recreates it at its next heartbeat if it still runs.
 */
static void
sweep(struct maro_registry *r)
{
	struct dir *d = D(r);
	struct dirent *de;
	time_t now = time(NULL);
	int fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;

	d->swept = 1;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dp))) {
		const char *f = de->d_name;
		struct stat st;

		if (!strncmp(f, ".tmp.", 5)) {
			unlinkat(d->dfd, f, 0);
		} else if (!strncmp(f, "s.", 2) && fstatat(d->dfd, f, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISSOCK(st.st_mode)) {
			/* an inbox's socket file (transport.c: s.PID.N) whose process is gone */
			long pid = strtol(f + 2, NULL, 10);

			if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
				unlinkat(d->dfd, f, 0);
		} else if (!strncmp(f, ".owner.", 7) && strcmp(f, d->owner) != 0) {
			long pid = strtol(f + 7, NULL, 10);

			/* the pid is only a cheap hint; the lock decides */
			if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH && !owner_alive(d, f))
				unlinkat(d->dfd, f, 0);
		} else if (ends_with(f, ".entry") &&
		    fstatat(d->dfd, f, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!S_ISREG(st.st_mode) || now - st.st_mtime >= SWEEP_AGE_S)) {
			struct maro_entry e;
			struct maro_registry_meta m;
			char name[MARO_NAME_MAX + 1];
			size_t n = strlen(f) - 6;

			if (n > MARO_NAME_MAX)
				continue;
			memcpy(name, f, n);
			name[n] = '\0';
			if (get_entry(d, name, &e, &m) != 1)
				unlinkat(d->dfd, f, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		}
	}
	closedir(dp);
}

/*
 * Under the whole of .lock: whether the group was last swept more than
 * SWEEP_EVERY_S ago (the mtime of .swept), so that a thousand members
 * joining at once do not each read the whole directory; if so, .swept is
 * touched for the sweep that follows.
 */
static int
sweep_due(struct dir *d)
{
	struct stat st;
	int fd;

	if (fstatat(d->dfd, ".swept", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    time(NULL) - st.st_mtime < SWEEP_EVERY_S)
		return 0;
	fd = openat(d->dfd, ".swept", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
	return 1;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Under the name's lock. */
static int
write_entry(struct maro_registry *r, const struct maro_entry *e)
{
	struct dir *d = D(r);
	struct maro_registry_fields f;
	char text[ENTRY_MAX + 1], tmp[64], file[MARO_NAME_MAX + 8], ttl[24], mac[MARO_MAC_HEX + 1];
	size_t len = 0, i;
	int fd, n, err;

	maro_registry_fields(e, &f);
	snprintf(ttl, sizeof ttl, "%lld", (long long)r->ttl_ms);
	maro_registry_mac(r, &f, r->token, ttl, d->owner, mac);
	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++) {
		n = snprintf(text + len, sizeof text - len, "%s=%s\n", f.key[i], f.val[i]);
		if (n < 0 || (size_t)n >= sizeof text - len)
			return maro_registry_fail(r, EINVAL, "entry of '%s' too long", e->name);
		len += (size_t)n;
	}
	n = snprintf(text + len, sizeof text - len, "token=%s\nhb=%lld\nttl=%s\nowner=%s\n%s%s%s",
	    r->token, (long long)maro_registry_wall_ms(), ttl, d->owner, mac[0] ? "mac=" : "", mac,
	    mac[0] ? "\n" : "");
	if (n < 0 || (size_t)n >= sizeof text - len)
		return maro_registry_fail(r, EINVAL, "entry of '%s' too long", e->name);
	len += (size_t)n;
	snprintf(tmp, sizeof tmp, ".tmp.%ld.%.8s", (long)getpid(), r->token);
	entry_file(file, sizeof file, e->name);
	unlinkat(d->dfd, tmp, 0);
	fd = openat(d->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return maro_registry_fail(r, errno, "cannot write in '%s': %s", d->path, strerror(errno));
	if (write_all(fd, text, len) < 0 || close(fd) < 0) {
		err = errno;
		unlinkat(d->dfd, tmp, 0);
		return maro_registry_fail(r, err, "cannot write in '%s': %s", d->path, strerror(err));
	}
	if (renameat(d->dfd, tmp, d->dfd, file) < 0) {
		err = errno;
		unlinkat(d->dfd, tmp, 0);
		return maro_registry_fail(r, err, "cannot write '%s/%s': %s", d->path, file, strerror(err));
	}
	return 0;
}

/*
 * A heartbeat of an entry this handle holds, when nothing in it but the
 * time changed (or only its stats, written less than STATS_REWRITE_MS
 * ago) and it was written less than REWRITE_MS ago: its mtime is set,
 * without the name's lock (a thousand members beat every second or two; a
 * busy one's counters change at every beat).  It
 * cannot undo a takeover: the file it checked and touches is one inode,
 * and a taker's rename only puts another in its place.  1 done, 0 when the
 * entry must be written (under the lock).
 */
static int
touch_own(struct maro_registry *r, const struct maro_entry *e)
{
	struct dir *d = D(r);
	struct maro_entry cur;
	struct maro_registry_meta m;
	struct stat st;
	char file[MARO_NAME_MAX + 8];
	int64_t written, age;
	int fd, ok;

	if (d->ofd < 0)
		return 0;	/* nothing registered by this handle yet */
	entry_file(file, sizeof file, e->name);
	fd = open_plain(d, file, &st);
	if (fd < 0)
		return 0;
	ok = parse_entry(r, fd, &st, &cur, &m, &written) == 1 && !strcmp(m.token, r->token) &&
	    !strcmp(m.owner, d->owner) && m.ttl_ms == r->ttl_ms &&
	    (age = maro_registry_wall_ms() - written) < REWRITE_MS && !strcmp(cur.name, e->name) &&
	    !strcmp(cur.type, e->type) && !strcmp(cur.endpoint, e->endpoint) &&
	    !strcmp(cur.info, e->info) && !strcmp(cur.job, e->job) && cur.pid == e->pid &&
	    !strcmp(cur.host, e->host) &&
	    (age < STATS_REWRITE_MS || !strcmp(cur.stats, e->stats)) && futimens(fd, NULL) == 0;
	close(fd);
	return ok;
}

/*
 * Whether the .lock this handle locks is no longer its group's: the last
 * member removed the directory (remove_if_empty) after this handle opened
 * it, and the lock guards nothing; put then opens them again.
 */
static int
stale(struct dir *d)
{
	struct stat a, b;

	return fstat(d->dfd, &a) < 0 || a.st_nlink == 0 || fstat(d->gfd, &a) < 0 ||
	    fstatat(d->dfd, ".lock", &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev;
}

static int
dir_put(struct maro_registry *r, const struct maro_entry *e, int takeover, struct maro_entry *holder)
{
	struct dir *d = D(r);
	struct maro_entry cur;
	struct maro_registry_meta m;
	int rc, tries;

	if (!takeover && touch_own(r, e))
		return 0;
	d->member = 1;
	for (tries = 0;; tries++) {
		if (present(r, 1) < 0)
			return -1;
		if (lock_fd(r) < 0) {
			if (errno == ENOENT && tries < 3)
				continue;	/* removed since present() saw it: made again */
			return -1;
		}
		if (!d->swept) {
			/* one try: under a crowd of registrants the next first registration sweeps */
			d->swept = 1;
			if (try_range(d, 0, 0) == 0) {
				if (!stale(d) && sweep_due(d))
					sweep(r);
				unlock_range(d, 0, 0);
			}
		}
		if (name_lock(r, e->name, 0) < 0)
			return -1;
		if (!stale(d) || tries == 3)
			break;
		name_unlock(r, e->name);
		close(d->gfd);
		d->gfd = -1;
	}
	rc = own_lock(r);
	if (rc < 0)
		goto out;
	if (get_entry(d, e->name, &cur, &m) == 1 && strcmp(m.token, r->token) != 0 && !takeover) {
		*holder = cur;
		rc = maro_registry_fail(r, EEXIST, "name '%s' is held", e->name);
		goto out;
	}
	rc = write_entry(r, e);
out:
	name_unlock(r, e->name);
	return rc;
}

static int
dir_del(struct maro_registry *r, const char *name)
{
	struct dir *d = D(r);
	struct maro_entry cur;
	struct maro_registry_meta m;
	char file[MARO_NAME_MAX + 8];

	if (d->dfd < 0)
		return 0;	/* nothing was ever registered here */
	if (name_lock(r, name, 1) < 0)
		return -1;
	entry_file(file, sizeof file, name);
	if (read_entry(d, file, &cur, &m) == 1 && !strcmp(m.token, r->token))
		unlinkat(d->dfd, file, 0);
	name_unlock(r, name);
	return 0;
}

static int
dir_get(struct maro_registry *r, const char *name, struct maro_entry *e)
{
	struct maro_entry cur;
	struct maro_registry_meta m;
	int rc = present(r, 0);

	if (rc <= 0)
		return rc;	/* no group, no entry: a reader creates nothing */
	if (get_entry(D(r), name, &cur, &m) != 1)
		return 0;
	*e = cur;
	return 1;
}

static int
dir_list(struct maro_registry *r, const char *prefix, struct maro_registry_list *out)
{
	struct dir *d = D(r);
	struct dirent *de;
	int fd, rc = present(r, 0);
	DIR *dp;

	if (rc <= 0)
		return rc;	/* no group: no members, and nothing created */
	rc = 0;
	fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return maro_registry_fail(r, err, "cannot read registry directory '%s': %s", d->path,
		    strerror(err));
	}
	while (rc == 0 && (de = readdir(dp))) {
		struct maro_entry e;
		struct maro_registry_meta m;
		char name[MARO_NAME_MAX + 1];
		size_t n = strlen(de->d_name);

		if (!ends_with(de->d_name, ".entry") || n - 6 > MARO_NAME_MAX)
			continue;
		memcpy(name, de->d_name, n - 6);
		name[n - 6] = '\0';
		if (maro_registry_listed(out, name, prefix) && maro_name_valid(name) &&
		    get_entry(d, name, &e, &m) == 1)
			rc = maro_registry_collect(r, out, &e);
	}
	closedir(dp);
	return rc;
}

static int
dir_prepare(struct maro_registry *r)
{
	D(r)->member = 1;
	return present(r, 1) < 0 ? -1 : 0;
}

/* The directories in the registry's root whose name is a group's. */
static int
dir_groups(struct maro_registry *r, char ***names, size_t *n)
{
	struct dir *d = D(r);
	struct dirent *de;
	DIR *dp = opendir(d->where);
	int rc = 0;

	if (!dp)
		return maro_registry_fail(r, errno, "cannot read registry directory '%s': %s", d->where,
		    strerror(errno));
	while (rc == 0 && (de = readdir(dp))) {
		struct stat st;
		char **grown;

		if (de->d_name[0] == '.' || de->d_name[0] == '~' || !maro_name_valid(de->d_name) ||
		    fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		grown = realloc(*names, (*n + 1) * sizeof *grown);
		if (!grown || !(grown[*n] = strdup(de->d_name))) {
			if (grown)
				*names = grown;
			rc = maro_registry_fail(r, ENOMEM, "out of memory");
			break;
		}
		*names = grown;
		++*n;
	}
	closedir(dp);
	return rc;
}

const struct maro_registry_backend maro_registry_dir_backend = {
	.kind = "dir",
	.open = dir_open,
	.close = dir_close,
	.put = dir_put,
	.del = dir_del,
	.get = dir_get,
	.list = dir_list,
	.local_address = NULL,
	.prepare = dir_prepare,
	.groups = dir_groups,
};
