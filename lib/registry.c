/*
 * registry: the common part, and both backends (dir: and redis://).
 *
 * dir:PATH keeps one directory per group.  NAME.entry holds an entry as
 * key=value lines, replaced atomically (write, rename).  Each handle holds
 * an open-file-description lock on a lock file of its own for its whole
 * life; an entry names that file, so a reader knows its owner is alive
 * (F_OFD_GETLK) the moment the kernel releases the lock of a killed
 * process.  A group-wide flock serialises register, heartbeat and
 * unregister, so two registrants cannot both win a name and a heartbeat
 * cannot overwrite a takeover.  Readers never delete.
 *
 * redis:// keeps a hash per entry, maro:GROUP:m:NAME, with a TTL, and a
 * sorted set maro:GROUP:members scored by expiry time in the server's clock.
 * Lua scripts make check-and-set atomic; only the owner's token refreshes
 * or removes an entry.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cli.h"
#include "message.h"
#include "registry.h"

#define MAX_OWN 16

struct maro_registry {
	int redis;
	char group[MARO_NAME_MAX + 1];
	int64_t ttl_ms;
	char err[512];
	char token[MARO_UUID_LEN + 1];
	struct maro_entry own[MAX_OWN];
	int nown;
	/* dir */
	char dir[PATH_MAX];
	int lockfd;
	char lockname[64];
	/* redis */
	redisContext *rc;
	char host[256];
	int port, db;
	char *user, *password;
	char local[64];
};

static int seterr(struct maro_registry *r, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
seterr(struct maro_registry *r, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
maro_registry_default_url(void)
{
	static char url[PATH_MAX];
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg)
		snprintf(url, sizeof url, "dir:%s/maro", xdg);
	else
		snprintf(url, sizeof url, "dir:/tmp/maro-%ld", (long)getuid());
	return url;
}

void
maro_name_type(const char *name, char type[MARO_NAME_MAX + 1])
{
	size_t n = strcspn(name, "._");

	if (n > MARO_NAME_MAX)
		n = MARO_NAME_MAX;
	memcpy(type, name, n);
	type[n] = '\0';
}

int
maro_name_valid(const char *name)
{
	size_t i = 0, n = strlen(name);

	if (n && name[0] == '~')
		i = 1;
	if (n == i || n > MARO_NAME_MAX)
		return 0;
	for (; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
			return 0;
	return 1;
}

const char *
maro_registry_error(const struct maro_registry *r)
{
	return r->err;
}

const char *
maro_registry_kind(const struct maro_registry *r)
{
	return r->redis ? "redis" : "dir";
}

const char *
maro_registry_local_address(const struct maro_registry *r)
{
	return r->redis && r->local[0] ? r->local : NULL;
}

/* What the host says about itself, for cluster status. */
static void
fill_status(struct maro_entry *e)
{
	double load[1];
	FILE *f;
	char line[256];
	unsigned long long total = 0, avail = 0;

	e->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	e->load1 = getloadavg(load, 1) == 1 ? load[0] : 0;
	f = fopen("/proc/meminfo", "r");
	if (f) {
		while (fgets(line, sizeof line, f)) {
			sscanf(line, "MemTotal: %llu kB", &total);
			sscanf(line, "MemAvailable: %llu kB", &avail);
		}
		fclose(f);
	}
	e->mem_used_kb = total > avail ? total - avail : 0;
}

static void
fill_own(struct maro_entry *e)
{
	if (gethostname(e->host, sizeof e->host) < 0)
		snprintf(e->host, sizeof e->host, "unknown");
	e->host[sizeof e->host - 1] = '\0';
	e->pid = getpid();
	e->started_ms = wall_ms();
	if (!e->type[0])
		maro_name_type(e->name[0] == '~' ? e->name + 1 : e->name, e->type);
	fill_status(e);
}

static void
clean_info(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ')
			*s = ' ';
}

/* One field of an entry from text; 0 or -1 when the value is unusable. */
static int
set_field(struct maro_entry *e, const char *k, const char *v, int64_t *hb, char *token, char *lock)
{
	char *end;

	if (!strcmp(k, "name"))
		return strlen(v) <= MARO_NAME_MAX && maro_name_valid(v) ?
		    (snprintf(e->name, sizeof e->name, "%s", v), 0) : -1;
	if (!strcmp(k, "type"))
		return strlen(v) <= MARO_NAME_MAX ? (snprintf(e->type, sizeof e->type, "%s", v), 0) : -1;
	if (!strcmp(k, "endpoint"))
		return strlen(v) <= MARO_ENDPOINT_MAX ? (snprintf(e->endpoint, sizeof e->endpoint, "%s", v), 0) : -1;
	if (!strcmp(k, "host"))
		return strlen(v) <= MARO_HOST_MAX ? (snprintf(e->host, sizeof e->host, "%s", v), 0) : -1;
	if (!strcmp(k, "info"))
		return snprintf(e->info, sizeof e->info, "%s", v), clean_info(e->info), 0;
	if (!strcmp(k, "token"))
		return token ? (snprintf(token, MARO_UUID_LEN + 1, "%s", v), 0) : 0;
	if (!strcmp(k, "lock"))
		return lock ? (snprintf(lock, 64, "%s", v), 0) : 0;
	errno = 0;
	if (!strcmp(k, "pid"))
		e->pid = (pid_t)strtol(v, &end, 10);
	else if (!strcmp(k, "started"))
		e->started_ms = strtoll(v, &end, 10);
	else if (!strcmp(k, "hb"))
		*hb = strtoll(v, &end, 10);
	else if (!strcmp(k, "ncpu"))
		e->ncpu = (int)strtol(v, &end, 10);
	else if (!strcmp(k, "load1"))
		e->load1 = strtod(v, &end);
	else if (!strcmp(k, "mem"))
		e->mem_used_kb = strtoull(v, &end, 10);
	else
		return 0;	/* unknown fields are someone else's */
	return errno || end == v || *end ? -1 : 0;
}

/* Is a parsed entry whole enough to use? */
static int
entry_ok(const struct maro_entry *e)
{
	return e->name[0] && e->endpoint[0] && e->type[0];
}

static int
entry_text(const struct maro_entry *e, const char *token, const char *lock, int64_t hb, char *out,
    size_t len)
{
	int n = snprintf(out, len, "name=%s\ntype=%s\nendpoint=%s\nhost=%s\npid=%ld\nstarted=%lld\n"
	    "hb=%lld\nncpu=%d\nload1=%.2f\nmem=%llu\ninfo=%s\ntoken=%s\nlock=%s\n",
	    e->name, e->type, e->endpoint, e->host, (long)e->pid, (long long)e->started_ms,
	    (long long)hb, e->ncpu, e->load1, (unsigned long long)e->mem_used_kb, e->info, token, lock);

	return n > 0 && (size_t)n < len ? n : -1;
}

/* ---- dir: ---- */

static int
dir_read(struct maro_registry *r, const char *file, struct maro_entry *e, char *token, char *lock,
    int64_t *hb)
{
	char path[PATH_MAX + 300], buf[4096], *line, *save;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", r->dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	memset(e, 0, sizeof *e);
	*hb = 0;
	token[0] = lock[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			return -1;
		*eq = '\0';
		if (set_field(e, line, eq + 1, hb, token, lock) < 0)
			return -1;
	}
	return entry_ok(e) && token[0] && lock[0] && !strchr(lock, '/') ? 1 : -1;
}

/* Is the lock file's owner alive: does some process hold its lock? */
static int
dir_owner_alive(struct maro_registry *r, const char *lock)
{
	char path[PATH_MAX + 100];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd, alive;

	if (r->lockfd >= 0 && !strcmp(lock, r->lockname))
		return 1;
	snprintf(path, sizeof path, "%s/%s", r->dir, lock);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	alive = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return alive;
}

/* 1 live entry in *e, 0 none or dead, -1 garbage */
static int
dir_get(struct maro_registry *r, const char *name, struct maro_entry *e, char *token)
{
	char file[MARO_NAME_MAX + 16], lock[64];
	int64_t hb;
	int rc;

	snprintf(file, sizeof file, "%s.entry", name);
	rc = dir_read(r, file, e, token, lock, &hb);
	if (rc <= 0)
		return rc;
	if (strcmp(e->name, name) != 0)
		return -1;
	e->heartbeat_age_ms = wall_ms() - hb;
	if (e->heartbeat_age_ms > r->ttl_ms || !dir_owner_alive(r, lock))
		return 0;
	return 1;
}

static int
dir_write(struct maro_registry *r, const struct maro_entry *e)
{
	char path[PATH_MAX + 300], tmp[PATH_MAX + 300], text[2048];
	int fd, n;

	n = entry_text(e, r->token, r->lockname, wall_ms(), text, sizeof text);
	if (n < 0)
		return seterr(r, EINVAL, "entry for '%s' too long", e->name);
	snprintf(path, sizeof path, "%s/%s.entry", r->dir, e->name);
	snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%s", r->dir, (long)getpid(), e->name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return seterr(r, errno, "cannot write '%s': %s", tmp, strerror(errno));
	if (write(fd, text, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0) {
		int err = errno;

		unlink(tmp);
		return seterr(r, err, "cannot write '%s': %s", path, strerror(err));
	}
	return 0;
}

static int
dir_group_lock(struct maro_registry *r)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof path, "%s/.group.lock", r->dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return seterr(r, errno, "cannot open '%s': %s", path, strerror(errno));
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			close(fd);
			return seterr(r, errno, "cannot lock '%s': %s", path, strerror(errno));
		}
	return fd;
}

static int
dir_open(struct maro_registry *r, const char *path)
{
	char sub[PATH_MAX];
	size_t i;

	if (!*path || strlen(path) + strlen(r->group) + 2 >= sizeof r->dir)
		return seterr(r, EINVAL, "invalid registry directory '%s'", path);
	/* mkdir -p, private */
	snprintf(sub, sizeof sub, "%s", path);
	for (i = 1; sub[i]; i++)
		if (sub[i] == '/') {
			sub[i] = '\0';
			mkdir(sub, 0700);
			sub[i] = '/';
		}
	if (mkdir(sub, 0700) < 0 && errno != EEXIST)
		return seterr(r, errno, "cannot create '%s': %s", sub, strerror(errno));
	snprintf(r->dir, sizeof r->dir, "%s/%s", path, r->group);
	if (mkdir(r->dir, 0700) < 0 && errno != EEXIST)
		return seterr(r, errno, "cannot create '%s': %s", r->dir, strerror(errno));
	if (access(r->dir, R_OK | W_OK | X_OK) < 0)
		return seterr(r, errno, "cannot use registry directory '%s': %s", r->dir, strerror(errno));
	return 0;
}

/* The handle's own lock file, held for its life. */
static int
dir_own_lock(struct maro_registry *r)
{
	char path[PATH_MAX + 100];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (r->lockfd >= 0)
		return 0;
	snprintf(r->lockname, sizeof r->lockname, ".lock.%ld.%.8s", (long)getpid(), r->token);
	snprintf(path, sizeof path, "%s/%s", r->dir, r->lockname);
	r->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->lockfd < 0 || fcntl(r->lockfd, F_OFD_SETLK, &fl) < 0)
		return seterr(r, errno, "cannot lock '%s': %s", path, strerror(errno));
	return 0;
}

/* ---- redis:// ---- */

static const char *const SCRIPT_SET =
	"local cur = redis.call('HGET', KEYS[1], 'token')\n"
	"if cur and cur ~= ARGV[1] and ARGV[2] ~= '1' then\n"
	"  return {0, redis.call('HGETALL', KEYS[1])}\n"
	"end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"redis.call('DEL', KEYS[1])\n"
	"redis.call('HSET', KEYS[1], 'token', ARGV[1], 'hb', now, unpack(ARGV, 5))\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
	"redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[4])\n"
	"return {1}\n";

static const char *const SCRIPT_DEL =
	"if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then\n"
	"  redis.call('DEL', KEYS[1])\n"
	"  redis.call('ZREM', KEYS[2], ARGV[2])\n"
	"end\n"
	"return 1\n";

static const char *const SCRIPT_GET =
	"local t = redis.call('TIME')\n"
	"return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('HGETALL', KEYS[1])}\n";

static const char *const SCRIPT_LIST =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
	"local out = {now}\n"
	"for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')) do\n"
	"  local h = redis.call('HGETALL', ARGV[1] .. n)\n"
	"  if #h > 0 then table.insert(out, h) end\n"
	"end\n"
	"return out\n";

static void
redis_drop(struct maro_registry *r)
{
	if (r->rc)
		redisFree(r->rc);
	r->rc = NULL;
}

static int
redis_connect(struct maro_registry *r)
{
	struct timeval ctv = { 1, 0 }, tv = { 2, 0 };
	redisReply *rep;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	if (r->rc)
		return 0;
	r->rc = redisConnectWithTimeout(r->host, r->port, ctv);
	if (!r->rc || r->rc->err) {
		int e = r->rc && r->rc->err == REDIS_ERR_IO ? errno : ECONNREFUSED;
		char why[128];

		snprintf(why, sizeof why, "%s", r->rc ? r->rc->errstr : "out of memory");
		redis_drop(r);
		return seterr(r, e ? e : ECONNREFUSED, "cannot connect to redis at %s:%d: %s", r->host,
		    r->port, why);
	}
	redisSetTimeout(r->rc, tv);
	if (r->password) {
		rep = r->user ? redisCommand(r->rc, "AUTH %s %s", r->user, r->password) :
		    redisCommand(r->rc, "AUTH %s", r->password);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			if (rep)
				freeReplyObject(rep);
			redis_drop(r);
			return seterr(r, EACCES, "redis authentication failed at %s:%d", r->host, r->port);
		}
		freeReplyObject(rep);
	}
	if (r->db) {
		rep = redisCommand(r->rc, "SELECT %d", r->db);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			if (rep)
				freeReplyObject(rep);
			redis_drop(r);
			return seterr(r, EINVAL, "redis at %s:%d refused database %d", r->host, r->port, r->db);
		}
		freeReplyObject(rep);
	}
	if (getsockname(r->rc->fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, r->local, sizeof r->local);
	return 0;
}

/* Runs a command; reconnects once when the connection had been lost. */
static redisReply *
redis_run(struct maro_registry *r, int argc, const char **argv, const size_t *lens)
{
	redisReply *rep;
	int attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (redis_connect(r) < 0)
			return NULL;
		rep = redisCommandArgv(r->rc, argc, argv, lens);
		if (rep && rep->type == REDIS_REPLY_ERROR) {
			seterr(r, EPROTO, "redis at %s:%d: %s", r->host, r->port, rep->str);
			freeReplyObject(rep);
			return NULL;
		}
		if (rep)
			return rep;
		seterr(r, ECONNRESET, "lost the connection to redis at %s:%d: %s", r->host, r->port,
		    r->rc->errstr);
		redis_drop(r);
	}
	return NULL;
}

static void
key_of(struct maro_registry *r, const char *name, char *out, size_t len)
{
	snprintf(out, len, "maro:%s:m:%s", r->group, name);
}

/* An entry from an HGETALL array; 0 ok, -1 garbage. */
static int
redis_entry(redisReply *h, struct maro_entry *e, char *token, int64_t *hb)
{
	size_t i;

	memset(e, 0, sizeof *e);
	*hb = 0;
	if (h->type != REDIS_REPLY_ARRAY || h->elements % 2)
		return -1;
	for (i = 0; i + 1 < h->elements; i += 2) {
		redisReply *k = h->element[i], *v = h->element[i + 1];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    memchr(v->str, 0, v->len) || memchr(k->str, 0, k->len))
			return -1;
		if (set_field(e, k->str, v->str, hb, token, NULL) < 0)
			return -1;
	}
	return entry_ok(e) ? 0 : -1;
}

static int
redis_set(struct maro_registry *r, const struct maro_entry *e, int takeover, struct maro_entry *holder)
{
	char key[512], members[300], ttl[32], pid[32], started[32], ncpu[16], load[32], mem[32];
	const char *argv[40];
	redisReply *rep;
	int argc = 0, rc = -1;

	key_of(r, e->name, key, sizeof key);
	snprintf(members, sizeof members, "maro:%s:members", r->group);
	snprintf(ttl, sizeof ttl, "%lld", (long long)r->ttl_ms);
	snprintf(pid, sizeof pid, "%ld", (long)e->pid);
	snprintf(started, sizeof started, "%lld", (long long)e->started_ms);
	snprintf(ncpu, sizeof ncpu, "%d", e->ncpu);
	snprintf(load, sizeof load, "%.2f", e->load1);
	snprintf(mem, sizeof mem, "%llu", (unsigned long long)e->mem_used_kb);
	argv[argc++] = "EVAL";
	argv[argc++] = SCRIPT_SET;
	argv[argc++] = "2";
	argv[argc++] = key;
	argv[argc++] = members;
	argv[argc++] = r->token;
	argv[argc++] = takeover ? "1" : "0";
	argv[argc++] = ttl;
	argv[argc++] = e->name;
	argv[argc++] = "name"; argv[argc++] = e->name;
	argv[argc++] = "type"; argv[argc++] = e->type;
	argv[argc++] = "endpoint"; argv[argc++] = e->endpoint;
	argv[argc++] = "host"; argv[argc++] = e->host;
	argv[argc++] = "pid"; argv[argc++] = pid;
	argv[argc++] = "started"; argv[argc++] = started;
	argv[argc++] = "ncpu"; argv[argc++] = ncpu;
	argv[argc++] = "load1"; argv[argc++] = load;
	argv[argc++] = "mem"; argv[argc++] = mem;
	argv[argc++] = "info"; argv[argc++] = e->info;
	rep = redis_run(r, argc, argv, NULL);
	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
	    rep->element[0]->type == REDIS_REPLY_INTEGER) {
		if (rep->element[0]->integer == 1) {
			rc = 0;
		} else {
			struct maro_entry h;
			int64_t hb;

			if (rep->elements < 2 || redis_entry(rep->element[1], &h, NULL, &hb) < 0)
				memset(&h, 0, sizeof h);
			if (holder)
				*holder = h;
			seterr(r, EEXIST, "name '%s' is held by pid %ld on %s", e->name, (long)h.pid, h.host);
		}
	} else {
		seterr(r, EPROTO, "unexpected answer from redis");
	}
	freeReplyObject(rep);
	return rc;
}

static int
redis_get(struct maro_registry *r, const char *name, struct maro_entry *e)
{
	char key[512];
	const char *argv[] = { "EVAL", SCRIPT_GET, "1", key };
	redisReply *rep;
	int64_t hb;
	int rc = 0;

	key_of(r, name, key, sizeof key);
	rep = redis_run(r, 4, argv, NULL);
	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[0]->type == REDIS_REPLY_INTEGER && rep->element[1]->elements > 0 &&
	    redis_entry(rep->element[1], e, NULL, &hb) == 0 && !strcmp(e->name, name)) {
		e->heartbeat_age_ms = rep->element[0]->integer - hb;
		rc = 1;
	}
	freeReplyObject(rep);
	return rc;
}

static int
parse_url(struct maro_registry *r, const char *url)
{
	const char *p = url + 8, *at, *slash, *colon;
	char hostport[250];

	at = strrchr(p, '@');
	if (at) {
		const char *c = memchr(p, ':', (size_t)(at - p));

		if (c) {
			if (c > p)
				r->user = strndup(p, (size_t)(c - p));
			r->password = strndup(c + 1, (size_t)(at - c - 1));
		} else {
			r->password = strndup(p, (size_t)(at - p));
		}
		p = at + 1;
	}
	slash = strchr(p, '/');
	snprintf(hostport, sizeof hostport, "%.*s", slash ? (int)(slash - p) : (int)strlen(p), p);
	colon = strrchr(hostport, ':');
	if (colon) {
		char *end;
		long port = strtol(colon + 1, &end, 10);

		if (*end || port <= 0 || port > 65535)
			return -1;
		r->port = (int)port;
		snprintf(r->host, sizeof r->host, "%.*s", (int)(colon - hostport), hostport);
	} else {
		r->port = 6379;
		snprintf(r->host, sizeof r->host, "%s", hostport);
	}
	if (!r->host[0])
		return -1;
	if (slash && slash[1]) {
		char *end;
		long db = strtol(slash + 1, &end, 10);

		if (*end || db < 0 || db > 65535)
			return -1;
		r->db = (int)db;
	}
	if (!r->password && getenv("MARO_REDIS_PASSWORD") && *getenv("MARO_REDIS_PASSWORD"))
		r->password = strdup(getenv("MARO_REDIS_PASSWORD"));
	return 0;
}

/* ---- the interface ---- */

struct maro_registry *
maro_registry_open(const char *url, const char *group, const struct maro_registry_opts *opts,
    char *errbuf, size_t errlen)
{
	struct maro_registry *r = calloc(1, sizeof *r);
	const char *ttl = getenv("MARO_TTL");
	int64_t us;

	if (!r)
		return NULL;
	r->lockfd = -1;
	if (!url || !*url)
		url = getenv("MARO_REGISTRY");
	if (!url || !*url)
		url = maro_registry_default_url();
	if (!group || !*group)
		group = "maro";
	snprintf(r->group, sizeof r->group, "%s", group);
	r->ttl_ms = opts && opts->ttl_ms ? opts->ttl_ms : 5000;
	if ((!opts || !opts->ttl_ms) && ttl && *ttl && maro_duration_parse(ttl, &us) == 0 && us >= 100000)
		r->ttl_ms = us / 1000;
	maro_uuid(r->token);
	if (!maro_name_valid(group) || group[0] == '~') {
		seterr(r, EINVAL, "invalid group name '%s'", group);
		goto fail;
	}
	if (!strncmp(url, "dir:", 4)) {
		if (dir_open(r, url + 4) < 0)
			goto fail;
	} else if (!strncmp(url, "redis://", 8)) {
		r->redis = 1;
		if (parse_url(r, url) < 0) {
			seterr(r, EINVAL, "invalid redis URL (redis://[user:password@]host:port[/db])");
			goto fail;
		}
		if (redis_connect(r) < 0)
			goto fail;
	} else {
		seterr(r, EINVAL, "unknown registry '%.*s' (redis://host:port or dir:PATH)",
		    (int)strcspn(url, "@"), url);
		goto fail;
	}
	return r;
fail:
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", r->err);
	{
		int e = errno;

		maro_registry_close(r);
		errno = e;
	}
	return NULL;
}

void
maro_registry_close(struct maro_registry *r)
{
	if (!r)
		return;
	while (r->nown > 0)
		maro_registry_unregister(r, r->own[r->nown - 1].name);
	if (r->lockfd >= 0) {
		char path[PATH_MAX + 100];

		snprintf(path, sizeof path, "%s/%s", r->dir, r->lockname);
		unlink(path);
		close(r->lockfd);
	}
	redis_drop(r);
	if (r->password)
		memset(r->password, 0, strlen(r->password));
	free(r->password);
	free(r->user);
	free(r);
}

static int
own_index(struct maro_registry *r, const char *name)
{
	int i;

	for (i = 0; i < r->nown; i++)
		if (!strcmp(r->own[i].name, name))
			return i;
	return -1;
}

/* Writes the entry if the name is free (or ours, or takeover). */
static int
put(struct maro_registry *r, const struct maro_entry *e, int takeover, struct maro_entry *holder)
{
	struct maro_entry cur;
	char token[MARO_UUID_LEN + 1];
	int gl, rc;

	if (r->redis)
		return redis_set(r, e, takeover, holder);
	if (dir_own_lock(r) < 0)
		return -1;
	gl = dir_group_lock(r);
	if (gl < 0)
		return -1;
	rc = dir_get(r, e->name, &cur, token);
	if (rc == 1 && strcmp(token, r->token) != 0 && !takeover) {
		if (holder)
			*holder = cur;
		close(gl);
		return seterr(r, EEXIST, "name '%s' is held by pid %ld on %s", e->name, (long)cur.pid, cur.host);
	}
	rc = dir_write(r, e);
	close(gl);
	return rc;
}

int
maro_registry_register(struct maro_registry *r, const struct maro_entry *e, int takeover,
    struct maro_entry *holder)
{
	struct maro_entry mine = *e;

	if (!maro_name_valid(e->name))
		return seterr(r, EINVAL, "invalid name '%s'", e->name);
	if (r->nown == MAX_OWN && own_index(r, e->name) < 0)
		return seterr(r, ENOSPC, "too many names in one process");
	fill_own(&mine);
	clean_info(mine.info);
	if (put(r, &mine, takeover, holder) < 0)
		return -1;
	if (own_index(r, e->name) < 0)
		r->own[r->nown++] = mine;
	return 0;
}

int
maro_registry_set_info(struct maro_registry *r, const char *name, const char *info)
{
	int i = own_index(r, name);

	if (i < 0)
		return seterr(r, ENOENT, "'%s' is not registered here", name);
	snprintf(r->own[i].info, sizeof r->own[i].info, "%s", info);
	clean_info(r->own[i].info);
	return put(r, &r->own[i], 0, NULL);
}

int
maro_registry_heartbeat(struct maro_registry *r)
{
	int i, rc = 0;

	for (i = 0; i < r->nown; i++) {
		fill_status(&r->own[i]);
		if (put(r, &r->own[i], 0, NULL) < 0) {
			if (errno == EEXIST) {
				seterr(r, EEXIST, "name '%s' was taken over by another process", r->own[i].name);
				/* it is theirs now: do not remove it at close */
				r->own[i] = r->own[--r->nown];
				return -1;
			}
			rc = -1;
		}
	}
	return rc;
}

int
maro_registry_unregister(struct maro_registry *r, const char *name)
{
	int i = own_index(r, name), rc = 0;

	if (i < 0)
		return 0;
	if (r->redis) {
		char key[512], members[300];
		const char *argv[] = { "EVAL", SCRIPT_DEL, "2", key, members, r->token, name };
		redisReply *rep;

		key_of(r, name, key, sizeof key);
		snprintf(members, sizeof members, "maro:%s:members", r->group);
		rep = redis_run(r, 7, argv, NULL);
		if (rep)
			freeReplyObject(rep);
		else
			rc = -1;
	} else {
		struct maro_entry cur;
		char token[MARO_UUID_LEN + 1], path[PATH_MAX + 300];
		int gl = dir_group_lock(r);

		if (gl < 0)
			rc = -1;
		else {
			if (dir_get(r, name, &cur, token) >= 0 && !strcmp(token, r->token)) {
				snprintf(path, sizeof path, "%s/%s.entry", r->dir, name);
				unlink(path);
			}
			close(gl);
		}
	}
	r->own[i] = r->own[--r->nown];
	return rc;
}

int
maro_registry_lookup(struct maro_registry *r, const char *name, struct maro_entry *e)
{
	char token[MARO_UUID_LEN + 1];
	int rc;

	if (!maro_name_valid(name))
		return 0;
	if (r->redis)
		return redis_get(r, name, e);
	rc = dir_get(r, name, e, token);
	return rc < 0 ? 0 : rc;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct maro_entry *)a)->name, ((const struct maro_entry *)b)->name);
}

static int
keep(struct maro_entry **v, size_t *n, size_t *cap, const struct maro_entry *e, const char *prefix)
{
	if (e->name[0] == '~' || (prefix && strncmp(e->name, prefix, strlen(prefix)) != 0))
		return 0;
	if (*n == *cap) {
		struct maro_entry *t = realloc(*v, (*cap ? *cap * 2 : 16) * sizeof *t);

		if (!t)
			return -1;
		*v = t;
		*cap = *cap ? *cap * 2 : 16;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

ssize_t
maro_registry_list(struct maro_registry *r, const char *prefix, struct maro_entry **out)
{
	struct maro_entry *v = NULL, e;
	size_t n = 0, cap = 0, i;

	if (prefix && !*prefix)
		prefix = NULL;
	if (r->redis) {
		char members[300], base[300];
		const char *argv[] = { "EVAL", SCRIPT_LIST, "1", members, base };
		redisReply *rep;

		snprintf(members, sizeof members, "maro:%s:members", r->group);
		snprintf(base, sizeof base, "maro:%s:m:", r->group);
		rep = redis_run(r, 5, argv, NULL);
		if (!rep)
			return -1;
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
		    rep->element[0]->type != REDIS_REPLY_INTEGER) {
			freeReplyObject(rep);
			return seterr(r, EPROTO, "unexpected answer from redis");
		}
		for (i = 1; i < rep->elements; i++) {
			int64_t hb;

			if (redis_entry(rep->element[i], &e, NULL, &hb) < 0)
				continue;	/* garbage: skipped, never trusted */
			e.heartbeat_age_ms = rep->element[0]->integer - hb;
			if (keep(&v, &n, &cap, &e, prefix) < 0)
				goto nomem;
		}
		freeReplyObject(rep);
	} else {
		DIR *d = opendir(r->dir);
		struct dirent *de;

		if (!d)
			return seterr(r, errno, "cannot read '%s': %s", r->dir, strerror(errno));
		while ((de = readdir(d))) {
			size_t len = strlen(de->d_name);
			char name[MARO_NAME_MAX + 1], token[MARO_UUID_LEN + 1];

			if (len <= 6 || strcmp(de->d_name + len - 6, ".entry") || len - 6 > MARO_NAME_MAX)
				continue;
			snprintf(name, sizeof name, "%.*s", (int)(len - 6), de->d_name);
			if (!maro_name_valid(name) || dir_get(r, name, &e, token) != 1)
				continue;
			if (keep(&v, &n, &cap, &e, prefix) < 0) {
				closedir(d);
				goto nomem;
			}
		}
		closedir(d);
	}
	if (n)
		qsort(v, n, sizeof *v, by_name);
	*out = v;
	return (ssize_t)n;
nomem:
	free(v);
	return seterr(r, ENOMEM, "out of memory");
}
