/*
 * registry-redis: the backend for many hosts (redis://[user:password@]host:port[/db],
 * or redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]).
 *
 *   maro:GROUP:m:NAME   hash: the entry's fields (registry-impl.h) plus
 *                       token (the owner's), hb (server clock, ms), ttl
 *                       (ms) and, with a group key, mac; PEXPIRE ttl at
 *                       every heartbeat
 *   maro:GROUP:members  sorted set of names scored by expiry time (server
 *                       clock, ms); lives as long as its longest member
 *
 * Every write is one Lua script, so check-and-set, expiry and membership
 * change together and only the owner's token refreshes or removes an
 * entry.  A heartbeat that changes nothing but the time renews hb, the
 * expiry and the membership score only (SCRIPT_RENEW), after checking that
 * every field is still what this handle wrote; the whole entry is
 * written every REWRITE_MS, or when it changed.  Times come from the server's clock (TIME), so hosts need not
 * agree on the time.  A lost connection is reopened at the next call; a
 * server that restarted empty gets the entries back at the next heartbeat.
 *
 * Sentinel: the primary's address is asked of the sentinels (SENTINEL
 * get-master-addr-by-name, each in the URL's order), and trusted only when
 * it says so itself (ROLE).  A lost connection, or a -READONLY reply (a
 * primary demoted), asks them again, every 50 to 250 ms until a primary
 * answers, for the TTL at most (or what is left of -W): a call made during
 * a failover waits for it.  The address is never reused without asking:
 * an old primary restarted says it is a primary, empty, until the
 * sentinels demote it.  After any new connection every entry is written
 * whole at its next heartbeat (the replica promoted may lack the last writes).
 * A sentinel, and the server it names until ROLE vouches for it, are not
 * trusted: each answer is read whole by a deadline and up to a size
 * (exchange()), which hiredis 0.14 does not bound.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "registry-impl.h"

/* a heartbeat rewrites the whole entry this often; else it renews it (SCRIPT_RENEW) */
#define REWRITE_MS 20000
/* changed counters (stats) are written at most this often */
#define STATS_REWRITE_MS 5000
/* the names whose last write a handle remembers (a process holds one or two) */
#define WRITTEN_MAX 8

/* What this handle last wrote under a name: what a renewal must find there. */
struct written {
	char name[MARO_NAME_MAX + 1];
	struct maro_entry e;		/* the entry written */
	char mac[MARO_MAC_HEX + 1];	/* its mac field ("" without a key) */
	char sum[17];			/* fields_sum() of the entry written */
	uint64_t stats;			/* a hash of its stats */
	int64_t at_ms;			/* when (this host's wall clock), 0 unused */
	unsigned epoch;			/* on which connection (rds.epoch) */
};

#define SENTINELS_MAX 16
#define SENTINEL_PORT 26379

struct sentinel {
	char host[256];
	int port;
};

struct rds {
	struct written written[WRITTEN_MAX];
	redisContext *c;
	char host[256];
	int port;
	long db;
	char *user, *pass;		/* wiped at close; never in a message */
	char local[INET6_ADDRSTRLEN];
	int64_t cmd_us;			/* the command timeout set on c */
	unsigned epoch;			/* counts connections made */
	/* redis+sentinel: */
	struct sentinel sent[SENTINELS_MAX];
	size_t nsent, first;		/* first: the one that answered last */
	char master[MARO_NAME_MAX + 1];	/* empty: plain redis:// */
	int64_t down_us;		/* since when no primary answers (maro_now_us), 0 */
	int answered;			/* a command had a reply: the tool is past its start */
};

/* The server's clock in ms, as every script starts. */
#define LUA_NOW \
	"local t = redis.call('TIME')\n" \
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/*
 * KEYS: entry, members.  ARGV: token, takeover ("1", "0", or "=" and the
 * token of a holder found to be garbage), ttl ms, name, then field/value pairs.  A
 * name is held when its hash has another token and an expiry; anything
 * else at the key is overwritten.  Returns {1}, or {0, the holder's fields}.
 */
static const char SCRIPT_PUT[] =
	LUA_NOW
	"local kind = redis.call('TYPE', KEYS[1])['ok']\n"
	"if kind == 'hash' and ARGV[2] ~= '1' then\n"
	"  local cur = redis.call('HGET', KEYS[1], 'token')\n"
	"  if cur and cur ~= ARGV[1] and '=' .. cur ~= ARGV[2] and redis.call('PTTL', KEYS[1]) > 0 then\n"
	"    return {0, redis.call('HGETALL', KEYS[1])}\n"
	"  end\n"
	"end\n"
	"if kind ~= 'none' then redis.call('DEL', KEYS[1]) end\n"
	"kind = redis.call('TYPE', KEYS[2])['ok']\n"
	"if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', KEYS[2]) end\n"
	"local ttl = tonumber(ARGV[3])\n"
	"redis.call('HSET', KEYS[1], 'token', ARGV[1], 'hb', string.format('%.0f', now),\n"
	"  'ttl', ARGV[3], unpack(ARGV, 5))\n"
	"redis.call('PEXPIRE', KEYS[1], ttl)\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))\n"
	"redis.call('ZADD', KEYS[2], string.format('%.0f', now + ttl), ARGV[4])\n"
	"if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end\n"
	"return {1}\n";

/*
 * KEYS: entry, members.  ARGV: token, ttl ms, name, then the fields the
 * handle last wrote there (key, value, ...; all but hb).  A heartbeat
 * that would write what is there already: when the hash has not expired
 * and holds exactly those fields (hb aside), its hb, expiry and
 * membership are renewed.  Returns 1; 0 when the entry must be written
 * whole (SCRIPT_PUT): gone, expired or another token's; 2 when it holds
 * the token but a field was changed, added or removed (someone else
 * wrote there: SCRIPT_PUT writes it back).
 */
static const char SCRIPT_RENEW[] =
	"if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or redis.call('PTTL', KEYS[1]) <= 0 then return 0 end\n"
	"if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end\n"
	"local want, n = {}, 0\n"
	"for i = 4, #ARGV - 1, 2 do want[ARGV[i]] = ARGV[i + 1]; n = n + 1 end\n"
	"local h = redis.call('HGETALL', KEYS[1])\n"
	"for i = 1, #h - 1, 2 do\n"
	"  if h[i] ~= 'hb' then\n"
	"    if want[h[i]] ~= h[i + 1] then return 2 end\n"
	"    n = n - 1\n"
	"  end\n"
	"end\n"
	"if n ~= 0 then return 2 end\n"
	LUA_NOW
	"local ttl = tonumber(ARGV[2])\n"
	"redis.call('HSET', KEYS[1], 'hb', string.format('%.0f', now))\n"
	"redis.call('PEXPIRE', KEYS[1], ttl)\n"
	"redis.call('ZADD', KEYS[2], string.format('%.0f', now + ttl), ARGV[3])\n"
	"if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end\n"
	"return 1\n";

/* KEYS: entry, members.  ARGV: token, name.  Removes the entry if it is the token's. */
static const char SCRIPT_DEL[] =
	"if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and\n"
	"   redis.call('HGET', KEYS[1], 'token') == ARGV[1] then\n"
	"  redis.call('DEL', KEYS[1])\n"
	"  if redis.call('TYPE', KEYS[2])['ok'] == 'zset' then redis.call('ZREM', KEYS[2], ARGV[2]) end\n"
	"  return 1\n"
	"end\n"
	"return 0\n";

/* KEYS: entry.  Returns {now} or {now, fields}: live means a hash with an expiry. */
static const char SCRIPT_GET[] =
	LUA_NOW
	"if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('PTTL', KEYS[1]) > 0 then\n"
	"  return {now, redis.call('HGETALL', KEYS[1])}\n"
	"end\n"
	"return {now}\n";

/*
 * KEYS: members.  ARGV: the entry key prefix "maro:GROUP:m:", the name
 * prefix, "1" for the private entries with a job too.  Returns {now,
 * name, fields, name, fields, ...} of the members not yet expired, public
 * (or private with a job), matching the prefix (a private one after its
 * '~') and still present.
 */
static const char SCRIPT_LIST[] =
	LUA_NOW
	"local out = {now}\n"
	"if redis.call('TYPE', KEYS[1])['ok'] ~= 'zset' then return out end\n"
	"local p = ARGV[2]\n"
	"for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%.0f', now), '+inf')) do\n"
	"  local priv = string.sub(n, 1, 1) == '~'\n"
	"  if (not priv and string.sub(n, 1, #p) == p) or\n"
	"     (priv and ARGV[3] == '1' and string.sub(n, 2, #p + 1) == p) then\n"
	"    local k = ARGV[1] .. n\n"
	"    if redis.call('TYPE', k)['ok'] == 'hash' and redis.call('PTTL', k) > 0 and\n"
	"       (not priv or (redis.call('HGET', k, 'job') or '') ~= '') then\n"
	"      out[#out + 1] = n\n"
	"      out[#out + 1] = redis.call('HGETALL', k)\n"
	"    end\n"
	"  end\n"
	"end\n"
	"return out\n";

static struct rds *
R(const struct maro_registry *r)
{
	return r->priv;
}

static int
unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A URL's user or password, %XX decoded; NULL with errno: EILSEQ for a
 * '%' not followed by two hex digits, or one that decodes to a NUL byte
 * (once taken literally, or cutting the password short), ENOMEM.
 */
static char *
url_part(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= n || unhex(s[i + 1]) < 0 || unhex(s[i + 2]) < 0 ||
		    (s[i + 1] == '0' && s[i + 2] == '0')) {
			explicit_bzero(out, n + 1);
			free(out);
			errno = EILSEQ;
			return NULL;
		}
		*o++ = (char)(unhex(s[i + 1]) * 16 + unhex(s[i + 2]));
		i += 2;
	}
	*o = '\0';
	return out;
}

static int
digits(const char *s, size_t n, long max, long *out)
{
	long v = 0;
	size_t i;

	if (n == 0 || n > 9)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * HOST[:PORT] in [p, end): a name, an IPv4 address or an IPv6 one in
 * brackets; PORT 1 to 65535, defport when absent.
 */
static int
parse_hostport(const char *p, const char *end, char *host, size_t cap, long defport, int *port)
{
	const char *colon;
	size_t hlen;
	long v = defport;

	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return -1;
		hlen = (size_t)(close - p - 1);
		memcpy(host, p + 1, hlen < cap ? hlen : 0);
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		hlen = (size_t)((colon ? colon : end) - p);
		memcpy(host, p, hlen < cap ? hlen : 0);
	}
	if (hlen == 0 || hlen >= cap)
		return -1;
	host[hlen] = '\0';
	if (strcspn(host, " /@?#,") != hlen)
		return -1;
	if (colon && (digits(colon + 1, (size_t)(end - colon - 1), 65535, &v) < 0 || v == 0))
		return -1;
	*port = (int)v;
	return 0;
}

/* After "redis+sentinel://" and the credentials: HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]. */
static int
parse_sentinels(struct rds *d, const char *p)
{
	const char *end = p + strcspn(p, "/"), *comma, *m, *slash;
	size_t mlen, i;

	for (;;) {
		comma = memchr(p, ',', (size_t)(end - p));
		if (d->nsent == SENTINELS_MAX ||
		    parse_hostport(p, comma ? comma : end, d->sent[d->nsent].host,
		    sizeof d->sent[0].host, SENTINEL_PORT, &d->sent[d->nsent].port) < 0)
			return -1;
		d->nsent++;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (*end != '/')
		return -1;
	m = end + 1;
	slash = strchr(m, '/');
	mlen = slash ? (size_t)(slash - m) : strlen(m);
	if (mlen == 0 || mlen > MARO_NAME_MAX)
		return -1;
	for (i = 0; i < mlen; i++)
		if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= 'A' && m[i] <= 'Z') ||
		    (m[i] >= '0' && m[i] <= '9') || m[i] == '.' || m[i] == '_' || m[i] == '-'))
			return -1;
	memcpy(d->master, m, mlen);
	d->master[mlen] = '\0';
	if (slash && digits(slash + 1, strlen(slash + 1), 1L << 30, &d->db) < 0)
		return -1;
	return 0;
}

static int
parse_url(struct rds *d, const char *url)
{
	int sentinel = !strncmp(url, "redis+sentinel://", 17);
	const char *p = url + (sentinel ? 17 : strlen("redis://")), *at = strrchr(p, '@'), *end, *colon;
	const char *env = getenv("MARO_REDIS_PASSWORD");

	if (at) {
		colon = memchr(p, ':', (size_t)(at - p));
		if (colon) {
			if (colon > p && !(d->user = url_part(p, (size_t)(colon - p))))
				return -1;
			d->pass = url_part(colon + 1, (size_t)(at - colon - 1));
		} else {
			d->pass = url_part(p, (size_t)(at - p));
		}
		if (!d->pass)
			return -1;
		if (!*d->pass) {
			free(d->pass);	/* "user:@host": the password comes from the environment */
			d->pass = NULL;
		}
		p = at + 1;
	}
	if (sentinel) {
		if (parse_sentinels(d, p) < 0)
			return -1;
	} else {
		end = p + strcspn(p, "/");
		if (parse_hostport(p, end, d->host, sizeof d->host, 6379, &d->port) < 0)
			return -1;
		if (*end == '/' && end[1] && digits(end + 1, strlen(end + 1), 1L << 30, &d->db) < 0)
			return -1;
	}
	if (!d->pass && env && *env && !(d->pass = strdup(env)))
		return -1;
	return 0;
}

static void
drop(struct rds *d)
{
	if (d->c)
		redisFree(d->c);
	d->c = NULL;
}

static int
is_auth_error(const char *s)
{
	return !strncmp(s, "NOAUTH", 6) || !strncmp(s, "WRONGPASS", 9) || !strncmp(s, "NOPERM", 6) ||
	    strstr(s, "invalid password") || strstr(s, "invalid username-password");
}

/*
 * The timeouts: 1 s to connect, 2 s for a command, or what is left before
 * the run's deadline (maro_deadline), but 100 ms at least.
 */
#define CONNECT_US 1000000
#define COMMAND_US 2000000
#define TIMEOUT_FLOOR_US 100000

static struct timeval
budget(int64_t cap)
{
	int64_t us = maro_budget_us(cap, TIMEOUT_FLOOR_US);

	return (struct timeval){ (time_t)(us / 1000000), (suseconds_t)(us % 1000000) };
}

/* Sets the command timeout when the time left has changed. */
static void
set_timeout(struct rds *d)
{
	struct timeval tv = budget(COMMAND_US);
	int64_t us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;

	if (us != d->cmd_us && redisSetTimeout(d->c, tv) == REDIS_OK)
		d->cmd_us = us;
}

/*
 * One request and its reply; a signal shuts its socket down (maro_abort_fd),
 * for hiredis waits through EINTR.  The timeout is set after the socket is
 * named, so it sees a signal that came before.
 */
static redisReply *
request(struct rds *d, int argc, const char **argv)
{
	redisReply *rep;
	int err;

	maro_abort_fd = d->c->fd;
	set_timeout(d);
	rep = redisCommandArgv(d->c, argc, argv, NULL);
	err = errno;
	maro_abort_fd = -1;
	errno = err;
	return rep;
}

/*
 * What a server not yet trusted may send: a sentinel (AUTH and
 * get-master-addr-by-name: a few dozen bytes), and the server it names
 * before ROLE says it is the primary (AUTH, SELECT, ROLE: 60 bytes a replica).
 */
#define SENTINEL_REPLY_MAX 4096
#define NAMED_REPLY_MAX 65536

/*
 * One command on a connection to a server not yet trusted, who says (as
 * "sentinel at host:port"): its reply whole before end (monotonic us), of
 * cap bytes at most, or NULL with the failure said: ETIMEDOUT, EPROTO (too
 * long, or not the protocol), ECONNRESET, EINTR (a signal).  hiredis 0.14
 * times each read, not the reply, and takes a string of any length it is
 * announced: a server that trickles bytes, or announces a gigabyte, would
 * hold a tool past -W or fill its memory.
 */
static redisReply *
exchange(struct maro_registry *r, redisContext *c, const char *who, int argc, const char **argv,
    int64_t end, size_t cap)
{
	struct pollfd pfd = { .fd = c->fd };
	void *rep = NULL;
	char buf[4096];
	size_t got = 0;
	ssize_t n;
	int done = 0, ms;

	if (redisAppendCommandArgv(c, argc, argv, NULL) != REDIS_OK) {
		maro_registry_fail(r, ENOMEM, "out of memory");
		return NULL;
	}
	for (;;) {
		if (redisReaderGetReply(c->reader, &rep) != REDIS_OK) {
			maro_registry_fail(r, EPROTO, "%s: %s", who, c->reader->errstr);
			return NULL;
		}
		if (rep)
			return rep;
		if (got > cap) {
			maro_registry_fail(r, EPROTO, "%s: reply longer than %zu bytes", who, cap);
			return NULL;
		}
		if (maro_signal) {
			maro_registry_fail(r, EINTR, "%s: interrupted", who);
			return NULL;
		}
		ms = (int)((end - maro_now_us() + 999) / 1000);
		if (ms <= 0) {
			maro_registry_fail(r, ETIMEDOUT, "%s did not answer in time", who);
			return NULL;
		}
		pfd.events = done ? POLLIN : POLLOUT;
		if (poll(&pfd, 1, ms) <= 0)
			continue;
		if (!done) {
			if (redisBufferWrite(c, &done) != REDIS_OK) {
				maro_registry_fail(r, ECONNRESET, "%s: %s", who, c->errstr);
				return NULL;
			}
			continue;
		}
		n = read(c->fd, buf, sizeof buf < cap + 1 - got ? sizeof buf : cap + 1 - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			maro_registry_fail(r, ECONNRESET, "%s: %s", who, n ? strerror(errno) :
			    "closed the connection");
			return NULL;
		}
		got += (size_t)n;
		if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
			maro_registry_fail(r, ENOMEM, "out of memory");
			return NULL;
		}
	}
}

/*
 * A command to the server a sentinel named, before ROLE vouches for it:
 * exchange() within COMMAND_US (or what is left of -W).  A trusted server
 * (redis://, or the primary after ROLE) is asked with request().
 */
static redisReply *
ask_named(struct maro_registry *r, int argc, const char **argv)
{
	struct rds *d = R(r);
	char who[sizeof d->host + 32];
	redisReply *rep;
	int err;

	snprintf(who, sizeof who, "redis at %s:%d", d->host, d->port);
	maro_abort_fd = d->c->fd;
	rep = exchange(r, d->c, who, argc, argv, maro_now_us() + maro_budget_us(COMMAND_US,
	    TIMEOUT_FLOOR_US), NAMED_REPLY_MAX);
	err = errno;
	maro_abort_fd = -1;
	errno = err;
	return rep;
}

/*
 * The connection, AUTH, SELECT: a server that answers is a usable one.
 * With sentinels, the server they named, asked with ask_named().
 */
static int
connect_server(struct maro_registry *r)
{
	struct rds *d = R(r);
	struct timeval conn_tv = budget(CONNECT_US);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	redisReply *rep;
	const char *argv[3];
	char db[16];
	int argc = 0, err;

	if (d->c)
		return 0;
	errno = 0;
	d->c = redisConnectWithTimeout(d->host, d->port, conn_tv);
	if (!d->c)
		return maro_registry_fail(r, ENOMEM, "out of memory");
	if (d->c->err) {
		err = d->c->err == REDIS_ERR_IO && errno ? errno : EHOSTUNREACH;
		if (d->c->err == REDIS_ERR_IO && errno == EINPROGRESS)
			err = ETIMEDOUT;
		maro_registry_fail(r, err, "cannot connect to redis at %s:%d: %s", d->host, d->port,
		    d->c->errstr);
		drop(d);
		errno = err;
		return -1;
	}
	d->cmd_us = 0;
	set_timeout(d);
	redisEnableKeepAlive(d->c);
	argv[argc++] = d->pass ? "AUTH" : "PING";
	if (d->pass && d->user)
		argv[argc++] = d->user;
	if (d->pass)
		argv[argc++] = d->pass;
	rep = d->master[0] ? ask_named(r, argc, argv) : request(d, argc, argv);
	if (!rep && d->master[0])
		goto fail;	/* said */
	if (!rep) {
		/* a server that takes the connection and never answers */
		if (d->c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == ETIMEDOUT))
			maro_registry_fail(r, ETIMEDOUT, "redis at %s:%d did not answer in time", d->host,
			    d->port);
		else
			maro_registry_fail(r, ECONNRESET, "redis at %s:%d: %s", d->host, d->port,
			    d->c->errstr);
		goto fail;
	}
	/* a password the server does not ask for is harmless */
	if (rep->type == REDIS_REPLY_ERROR && !strstr(rep->str, "without any password configured")) {
		if (is_auth_error(rep->str))
			maro_registry_fail(r, EACCES, "redis authentication failed at %s:%d%s", d->host,
			    d->port, d->pass ? "" : " (no password given: MARO_REDIS_PASSWORD)");
		else
			maro_registry_fail(r, EPROTO, "redis at %s:%d: %s", d->host, d->port, rep->str);
		freeReplyObject(rep);
		goto fail;
	}
	freeReplyObject(rep);
	if (d->db) {
		snprintf(db, sizeof db, "%ld", d->db);
		argv[0] = "SELECT";
		argv[1] = db;
		rep = d->master[0] ? ask_named(r, 2, argv) : request(d, 2, argv);
		if (!rep && d->master[0])
			goto fail;	/* said */
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			maro_registry_fail(r, EINVAL, "redis at %s:%d refused database %ld", d->host, d->port,
			    d->db);
			if (rep)
				freeReplyObject(rep);
			goto fail;
		}
		freeReplyObject(rep);
	}
	d->local[0] = '\0';
	if (getsockname(d->c->fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, d->local, sizeof d->local);
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, d->local,
			    sizeof d->local);
	}
	d->epoch++;
	return 0;
fail:
	err = errno;
	drop(d);
	errno = err;
	return -1;
}

/* A sentinel's connection and command timeout (or what is left of -W). */
#define SENTINEL_US 500000
/* Asking the sentinels again while no primary answers: every 50 ms, doubling to 250. */
#define ASK_FIRST_US 50000
#define ASK_MAX_US 250000

/*
 * Asks sentinel i where the primary is: 0 with host and port, or -1:
 * ENOENT it knows no such master, EACCES it refused the credentials,
 * else it did not answer.
 */
static int
sentinel_ask(struct maro_registry *r, size_t i, char *host, size_t cap, int *port)
{
	struct rds *d = R(r);
	const struct sentinel *s = &d->sent[i];
	const char *argv[3];
	char who[sizeof s->host + 32];
	redisContext *c;
	redisReply *rep = NULL;
	int64_t end;
	long v;
	int argc = 0, rc = -1;

	snprintf(who, sizeof who, "sentinel at %s:%d", s->host, s->port);
	errno = 0;
	c = redisConnectWithTimeout(s->host, s->port, budget(SENTINEL_US));
	if (!c)
		return maro_registry_fail(r, ENOMEM, "out of memory");
	if (c->err) {
		int err = c->err == REDIS_ERR_IO && errno && errno != EINPROGRESS ? errno : ETIMEDOUT;

		maro_registry_fail(r, err, "cannot connect to sentinel at %s:%d: %s", s->host, s->port,
		    c->errstr);
		redisFree(c);
		errno = err;
		return -1;
	}
	/* its answers, AUTH's included, as long as its connection at most */
	end = maro_now_us() + maro_budget_us(SENTINEL_US, TIMEOUT_FLOOR_US);
	maro_abort_fd = c->fd;
	if (d->pass) {
		argv[argc++] = "AUTH";
		if (d->user)
			argv[argc++] = d->user;
		argv[argc++] = d->pass;
		rep = exchange(r, c, who, argc, argv, end, SENTINEL_REPLY_MAX);
		if (!rep)
			goto out;
		if (rep->type == REDIS_REPLY_ERROR && !strstr(rep->str, "without any password configured")) {
			if (is_auth_error(rep->str))
				maro_registry_fail(r, EACCES, "sentinel authentication failed at %s:%d", s->host,
				    s->port);
			else
				maro_registry_fail(r, EPROTO, "sentinel at %s:%d: %s", s->host, s->port, rep->str);
			goto out;
		}
		freeReplyObject(rep);
	}
	argv[0] = "SENTINEL";
	argv[1] = "get-master-addr-by-name";
	argv[2] = d->master;
	rep = exchange(r, c, who, 3, argv, end, SENTINEL_REPLY_MAX);
	if (!rep) {
		/* said */
	} else if (rep->type == REDIS_REPLY_NIL) {
		maro_registry_fail(r, ENOENT, "sentinel at %s:%d knows no master '%s'", s->host, s->port,
		    d->master);
	} else if (rep->type == REDIS_REPLY_ERROR) {
		maro_registry_fail(r, is_auth_error(rep->str) ? EACCES : EPROTO, "sentinel at %s:%d: %s",
		    s->host, s->port, rep->str);
	} else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
	    rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING ||
	    rep->element[0]->len == 0 || rep->element[0]->len >= cap ||
	    digits(rep->element[1]->str, rep->element[1]->len, 65535, &v) < 0 || v == 0) {
		maro_registry_fail(r, EPROTO, "sentinel at %s:%d: unexpected reply to get-master-addr-by-name",
		    s->host, s->port);
	} else {
		memcpy(host, rep->element[0]->str, rep->element[0]->len);
		host[rep->element[0]->len] = '\0';
		*port = (int)v;
		rc = 0;
	}
out:
	if (rep)
		freeReplyObject(rep);
	maro_abort_fd = -1;
	redisFree(c);
	if (rc < 0 && !errno)
		errno = EPROTO;
	return rc;
}

/* Does the server connected say it is a primary (ROLE)?  0 yes, -1 no (said). */
static int
role_primary(struct maro_registry *r)
{
	struct rds *d = R(r);
	const char *argv[] = { "ROLE" };
	redisReply *rep = ask_named(r, 1, argv);
	int ok;

	if (!rep)
		return -1;	/* said */
	ok = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
	    rep->element[0]->type == REDIS_REPLY_STRING && !strcmp(rep->element[0]->str, "master");
	if (!ok)
		maro_registry_fail(r, EAGAIN, "redis at %s:%d is not the primary of '%s' (%s)", d->host,
		    d->port, d->master, rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
		    rep->element[0]->type == REDIS_REPLY_STRING ? rep->element[0]->str : "no role");
	freeReplyObject(rep);
	return ok ? 0 : -1;
}

/*
 * One round: each sentinel in turn, from the one that answered last, until
 * one names a server that says it is the primary.  0 connected, or -1:
 * EACCES, ENOENT (every sentinel that answered knows no such master),
 * ECONNREFUSED (none answered), EAGAIN (no primary answers yet).
 */
static int
ask_round(struct maro_registry *r)
{
	struct rds *d = R(r);
	size_t k, i, answered = 0, unknown = 0;
	int port = 0, err = 0;
	char host[sizeof d->host];

	for (k = 0; k < d->nsent && !maro_signal; k++) {
		i = (d->first + k) % d->nsent;
		if (sentinel_ask(r, i, host, sizeof host, &port) < 0) {
			if (errno == EACCES)
				return -1;
			if (errno == ENOENT)
				answered++, unknown++;
			err = errno;
			continue;
		}
		answered++;
		memcpy(d->host, host, sizeof host);
		d->port = port;
		if (connect_server(r) < 0) {
			if (errno == EACCES || errno == EINVAL)
				return -1;
			err = EAGAIN;
			continue;
		}
		if (role_primary(r) == 0) {
			d->first = i;
			return 0;
		}
		drop(d);
		err = EAGAIN;
	}
	if (answered == 0)
		err = err == ENOENT || err == EPROTO || !err ? ECONNREFUSED : err;
	else if (unknown == answered)
		err = ENOENT;
	else
		err = EAGAIN;
	if (answered && unknown == answered)
		maro_registry_fail(r, ENOENT, "no sentinel knows a master '%s'", d->master);
	errno = err;
	return -1;
}

/* A pause; a signal cuts it short (the loop then sees maro_signal). */
static void
nap(int64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/*
 * Connects to the primary the sentinels name.  While none answers, asks
 * them again with a growing pause, until the TTL has passed since the
 * primary was first missed (or -W): later calls try one round each.  With
 * joining (a tool starting), sentinels that all refuse fail it at once,
 * and a named primary that does not answer is waited for as a join waits
 * for a busy server: until -W, or JOIN_WAIT_US.
 */
static int
connect_primary(struct maro_registry *r, int joining)
{
	struct rds *d = R(r);
	int64_t now = maro_now_us(), end, pause = ASK_FIRST_US;
	int err;

	if (d->c)
		return 0;
	if (!d->down_us)
		d->down_us = now;
	end = d->down_us + r->ttl_ms * 1000;
	end = end > now ? now + maro_budget_us(end - now, 0) : now;
	/* a tool starting has no entry to lose: it waits as a join does (-W, JOIN_WAIT_US) */
	if (joining)
		end = now + maro_budget_us(JOIN_WAIT_US, 0);
	for (;;) {
		if (ask_round(r) == 0) {
			d->down_us = 0;
			return 0;
		}
		err = errno;
		if (err == EACCES || err == ENOENT || err == EINVAL || (joining && err == ECONNREFUSED) ||
		    maro_signal || maro_now_us() + pause >= end)
			break;
		nap(pause);
		pause = pause * 2 > ASK_MAX_US ? ASK_MAX_US : pause * 2;
	}
	if (err == EAGAIN || err == ECONNREFUSED) {
		char last[sizeof r->err];

		memcpy(last, r->err, sizeof last);
		maro_registry_fail(r, 0, "no %s of '%s' answers (%s)", err == EAGAIN ? "primary" :
		    "sentinel", d->master, last);
		err = err == EAGAIN ? EHOSTUNREACH : err;
	}
	errno = err;
	return -1;
}

/*
 * The connection, to the server of the URL or to the primary the sentinels
 * name.  Until a command has had a reply the tool is still starting, and
 * has no entry to lose: a primary lost between the open and the first
 * reply (killed as the tool connected) is waited for as at the open.
 */
static int
connect_any(struct maro_registry *r)
{
	struct rds *d = R(r);

	return d->master[0] ? connect_primary(r, !d->answered) : connect_server(r);
}

/*
 * One command; its reply, or NULL with the failure said.  A connection
 * found closed (a restarted server) is reopened and the command tried
 * once more; a timeout is not retried, so a hung server costs one wait.
 * With sentinels, a connection found closed or a primary demoted
 * (-READONLY) asks them again (connect_primary) and tries again.
 */
static redisReply *
command(struct maro_registry *r, int argc, const char **argv)
{
	struct rds *d = R(r);
	redisReply *rep;
	int attempt, retry, err, attempts = d->master[0] ? 4 : 2;

	for (attempt = 0; attempt < attempts; attempt++) {
		if (connect_any(r) < 0)
			return NULL;
		errno = 0;
		rep = request(d, argc, argv);
		if (rep && rep->type == REDIS_REPLY_ERROR && d->master[0] &&
		    (!strncmp(rep->str, "READONLY", 8) || !strncmp(rep->str, "MASTERDOWN", 10))) {
			maro_registry_fail(r, ECONNRESET, "redis at %s:%d is no longer the primary: %s",
			    d->host, d->port, rep->str);
			freeReplyObject(rep);
			drop(d);
			continue;
		}
		/* past its start once a primary answered (a demoted one's refusal is no answer) */
		d->answered |= rep != NULL;
		if (rep && rep->type == REDIS_REPLY_ERROR) {
			if (is_auth_error(rep->str)) {
				maro_registry_fail(r, EACCES, "redis authentication failed at %s:%d", d->host,
				    d->port);
				drop(d);
			} else {
				maro_registry_fail(r, EPROTO, "redis at %s:%d: %s", d->host, d->port, rep->str);
			}
			freeReplyObject(rep);
			return NULL;
		}
		if (rep)
			return rep;
		err = errno;
		retry = d->c->err == REDIS_ERR_EOF ||
		    (d->c->err == REDIS_ERR_IO && (err == ECONNRESET || err == EPIPE));
		if (d->c->err == REDIS_ERR_IO && (err == EAGAIN || err == ETIMEDOUT))
			maro_registry_fail(r, ETIMEDOUT, "redis at %s:%d did not answer in time", d->host,
			    d->port);
		else
			maro_registry_fail(r, ECONNRESET, "lost the connection to redis at %s:%d: %s", d->host,
			    d->port, d->c->errstr);
		err = errno;
		drop(d);
		errno = err;
		if (!retry)
			break;
	}
	return NULL;
}

static int
redis_open(struct maro_registry *r, const char *url)
{
	struct rds *d = calloc(1, sizeof *d);
	int64_t end;
	int rc;

	if (!d)
		return maro_registry_fail(r, ENOMEM, "out of memory");
	r->priv = d;
	errno = 0;
	rc = parse_url(d, url);
	if (rc < 0 && errno == EILSEQ)
		return maro_registry_fail(r, EINVAL, "invalid %s URL: a %%-escape in its user or password "
		    "is not %%XX with two hex digits, or is %%00", !strncmp(url, "redis+sentinel:", 15) ?
		    "sentinel" : "redis");
	if (rc < 0)
		return maro_registry_fail(r, EINVAL, !strncmp(url, "redis+sentinel:", 15) ?
		    "invalid sentinel URL (redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db])" :
		    "invalid redis URL (redis://[user:password@]host:port[/db])");
	if (d->master[0])
		return connect_primary(r, 1);
	/* a server too busy to answer (hundreds joining at once) is asked again: JOIN_WAIT_US */
	end = maro_now_us() + maro_budget_us(JOIN_WAIT_US, 0);
	while ((rc = connect_server(r)) < 0 && errno == ETIMEDOUT && !maro_signal && maro_now_us() < end)
		;
	return rc;
}

static void
wipe(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void
redis_close(struct maro_registry *r)
{
	struct rds *d = R(r);

	if (!d)
		return;
	drop(d);
	wipe(d->pass);
	wipe(d->user);
	free(d);
	r->priv = NULL;
}

/* An HGETALL reply into e and m; 0, or -1 when it is garbage (or fails its MAC). */
static int
parse_hash(struct maro_registry *r, const redisReply *h, struct maro_entry *e,
    struct maro_registry_meta *m)
{
	size_t i;

	memset(e, 0, sizeof *e);
	memset(m, 0, sizeof *m);
	if (h->type != REDIS_REPLY_ARRAY || h->elements % 2)
		return -1;
	for (i = 0; i < h->elements; i += 2) {
		const redisReply *k = h->element[i], *v = h->element[i + 1];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    maro_registry_field(e, m, k->str, k->len, v->str, v->len) < 0)
			return -1;
	}
	return maro_registry_entry_check(r, e, m);
}

static void
keys(const struct maro_registry *r, const char *name, char *entry, size_t elen, char *members,
    size_t mlen)
{
	snprintf(entry, elen, "maro:%s:m:%s", r->group, name);
	snprintf(members, mlen, "maro:%s:members", r->group);
}

static int
unexpected(struct maro_registry *r, redisReply *rep)
{
	freeReplyObject(rep);
	return maro_registry_fail(r, EPROTO, "redis at %s:%d: unexpected reply to a registry script",
	    R(r)->host, R(r)->port);
}

/*
 * A holder whose hash does not parse is garbage, not an owner: its token
 * for the script to overwrite (that hash only, should a real owner win the
 * name meanwhile), or NULL.
 */
static const char *
garbage_token(struct maro_registry *r, const redisReply *h, char *out, size_t len)
{
	struct maro_entry e;
	struct maro_registry_meta m;
	size_t i;

	if (parse_hash(r, h, &e, &m) == 0 || h->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (i = 0; i + 1 < h->elements; i += 2) {
		const redisReply *k = h->element[i], *v = h->element[i + 1];

		if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING && k->len == 5 &&
		    !memcmp(k->str, "token", 5) && v->len + 1 < len) {
			out[0] = '=';
			memcpy(out + 1, v->str, v->len);
			out[v->len + 1] = '\0';
			return memchr(v->str, 0, v->len) ? NULL : out;
		}
	}
	return NULL;
}

/* FNV-1a, 64 bits, over n strings, each with its terminating NUL. */
static uint64_t
hash_strings(const char *const *v, size_t n)
{
	uint64_t h = 14695981039346656037u;
	size_t i;

	for (i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)v[i];

		do
			h = (h ^ *p) * 1099511628211u;
		while (*p++);
	}
	return h;
}

/*
 * What decides between a renewal and a whole write (renew()): a hash of the
 * entry's fields but the host's figures (ncpu, load1, mem) and stats.
 */
static void
fields_sum(const struct maro_registry *r, const struct maro_registry_fields *f, char out[17])
{
	const char *v[2 * MARO_REGISTRY_NFIELDS + 1];
	size_t i, n = 0;

	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++) {
		if (!strcmp(f->key[i], "ncpu") || !strcmp(f->key[i], "load1") || !strcmp(f->key[i], "mem") ||
		    !strcmp(f->key[i], "stats"))
			continue;
		v[n++] = f->key[i];
		v[n++] = f->val[i];
	}
	v[n++] = r->token;
	snprintf(out, 17, "%016llx", (unsigned long long)hash_strings(v, n));
}

static struct written *
written_slot(struct rds *d, const char *name, int make)
{
	struct written *w, *oldest = &d->written[0];

	for (w = d->written; w < d->written + WRITTEN_MAX; w++) {
		if (w->at_ms && !strcmp(w->name, name))
			return w;
		if (w->at_ms < oldest->at_ms)
			oldest = w;
	}
	if (!make)
		return NULL;
	memset(oldest, 0, sizeof *oldest);
	snprintf(oldest->name, sizeof oldest->name, "%s", name);
	return oldest;
}

/*
 * A heartbeat that changes nothing but the time (nor the stats, or they
 * were written less than STATS_REWRITE_MS ago) and comes less than
 * REWRITE_MS after the last write: SCRIPT_RENEW, a few small commands
 * where SCRIPT_PUT writes every field.  It checks every field against what
 * was written (w), not only the token: a registry client that changed one
 * (an endpoint of its own) is undone at once.  1 renewed, 0 when the
 * entry must be written (r->altered set when someone else changed it),
 * -1 the server is unreachable.
 */
static int
renew(struct maro_registry *r, const struct maro_entry *e, const char *sum, uint64_t stats,
    const char *key, const char *members, const char *ttl)
{
	struct written *w = written_slot(R(r), e->name, 0);
	struct maro_registry_fields f;
	const char *argv[8 + 2 * (MARO_REGISTRY_NFIELDS + 3)];
	int64_t age;
	redisReply *rep;
	int rc, argc = 0, i;

	/* after a new connection (a new primary may lack the last writes): whole */
	if (!w || strcmp(w->sum, sum) != 0 || w->epoch != R(r)->epoch)
		return 0;
	age = maro_registry_wall_ms() - w->at_ms;
	if (age < 0 || age >= REWRITE_MS || (w->stats != stats && age >= STATS_REWRITE_MS))
		return 0;
	maro_registry_fields(&w->e, &f);
	argv[argc++] = "EVAL";
	argv[argc++] = SCRIPT_RENEW;
	argv[argc++] = "2";
	argv[argc++] = key;
	argv[argc++] = members;
	argv[argc++] = r->token;
	argv[argc++] = ttl;
	argv[argc++] = e->name;
	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++) {
		argv[argc++] = f.key[i];
		argv[argc++] = f.val[i];
	}
	argv[argc++] = "token";
	argv[argc++] = r->token;
	argv[argc++] = "ttl";
	argv[argc++] = ttl;
	if (w->mac[0]) {
		argv[argc++] = "mac";
		argv[argc++] = w->mac;
	}
	rep = command(r, argc, argv);
	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 2)
		r->altered = 1;
	rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 && w->epoch == R(r)->epoch;
	freeReplyObject(rep);
	return rc;
}

static int
redis_put(struct maro_registry *r, const struct maro_entry *e, int takeover, struct maro_entry *holder)
{
	struct maro_registry_fields f;
	struct maro_registry_meta m;
	struct written *w;
	char key[MARO_NAME_MAX * 2 + 16], members[MARO_NAME_MAX + 16], ttl[24], junk[128], sum[17];
	char mac[MARO_MAC_HEX + 1];
	const char *argv[11 + 2 * MARO_REGISTRY_NFIELDS], *stats = e->stats;
	uint64_t stats_hash = hash_strings(&stats, 1);
	redisReply *rep;
	int argc = 0, i, rc, attempt;

	keys(r, e->name, key, sizeof key, members, sizeof members);
	snprintf(ttl, sizeof ttl, "%lld", (long long)r->ttl_ms);
	maro_registry_fields(e, &f);
	fields_sum(r, &f, sum);
	if (!takeover) {
		rc = renew(r, e, sum, stats_hash, key, members, ttl);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
	}
	maro_registry_mac(r, &f, r->token, ttl, "", mac);
	argv[argc++] = "EVAL";
	argv[argc++] = SCRIPT_PUT;
	argv[argc++] = "2";
	argv[argc++] = key;
	argv[argc++] = members;
	argv[argc++] = r->token;
	argv[argc++] = takeover ? "1" : "0";
	argv[argc++] = ttl;
	argv[argc++] = e->name;
	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++) {
		argv[argc++] = f.key[i];
		argv[argc++] = f.val[i];
	}
	if (mac[0]) {
		argv[argc++] = "mac";
		argv[argc++] = mac;
	}
	for (attempt = 0;; attempt++) {
		rep = command(r, argc, argv);
		if (!rep)
			return -1;
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
		    rep->element[0]->type != REDIS_REPLY_INTEGER)
			return unexpected(r, rep);
		/* a holder that is garbage, or fails its MAC, is written over (that hash only) */
		if (attempt || rep->element[0]->integer == 1 || rep->elements < 2 || takeover ||
		    !garbage_token(r, rep->element[1], junk, sizeof junk))
			break;
		argv[6] = junk;
		freeReplyObject(rep);
	}
	if (rep->element[0]->integer == 1) {
		rc = 0;
		w = written_slot(R(r), e->name, 1);
		w->e = *e;
		memcpy(w->mac, mac, sizeof w->mac);
		memcpy(w->sum, sum, sizeof w->sum);
		w->stats = stats_hash;
		w->at_ms = maro_registry_wall_ms();
		w->epoch = R(r)->epoch;
	} else {
		if (rep->elements < 2 || parse_hash(r, rep->element[1], holder, &m) < 0)
			memset(holder, 0, sizeof *holder);
		rc = maro_registry_fail(r, EEXIST, "name '%s' is held", e->name);
	}
	freeReplyObject(rep);
	return rc;
}

static int
redis_del(struct maro_registry *r, const char *name)
{
	char key[MARO_NAME_MAX * 2 + 16], members[MARO_NAME_MAX + 16];
	const char *argv[] = { "EVAL", SCRIPT_DEL, "2", key, members, r->token, name };
	struct written *w = written_slot(R(r), name, 0);
	redisReply *rep;

	if (w)
		w->at_ms = 0;
	keys(r, name, key, sizeof key, members, sizeof members);
	rep = command(r, 7, argv);
	if (!rep)
		return -1;
	freeReplyObject(rep);
	return 0;
}

static int
redis_get(struct maro_registry *r, const char *name, struct maro_entry *e)
{
	struct maro_entry cur;
	struct maro_registry_meta m;
	char key[MARO_NAME_MAX * 2 + 16], members[MARO_NAME_MAX + 16];
	const char *argv[] = { "EVAL", SCRIPT_GET, "1", key };
	redisReply *rep;
	int rc = 0;

	keys(r, name, key, sizeof key, members, sizeof members);
	rep = command(r, 4, argv);
	if (!rep)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER)
		return unexpected(r, rep);
	if (rep->elements == 2 && parse_hash(r, rep->element[1], &cur, &m) == 0 &&
	    !strcmp(cur.name, name)) {
		int64_t age = rep->element[0]->integer - m.hb_ms;

		cur.heartbeat_age_ms = age < 0 ? 0 : age;
		*e = cur;
		rc = 1;
	}
	freeReplyObject(rep);
	return rc;
}

static int
redis_list(struct maro_registry *r, const char *prefix, struct maro_registry_list *out)
{
	char base[MARO_NAME_MAX + 16], members[MARO_NAME_MAX + 16];
	const char *argv[] = { "EVAL", SCRIPT_LIST, "1", members, base, prefix, out->jobs ? "1" : "0" };
	redisReply *rep;
	size_t i;
	int rc = 0;

	snprintf(base, sizeof base, "maro:%s:m:", r->group);
	snprintf(members, sizeof members, "maro:%s:members", r->group);
	rep = command(r, 7, argv);
	if (!rep)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER)
		return unexpected(r, rep);
	for (i = 1; i + 1 < rep->elements && rc == 0; i += 2) {
		const redisReply *n = rep->element[i];
		struct maro_entry e;
		struct maro_registry_meta m;
		int64_t age;

		/* garbage is skipped, never trusted: a hash must name its own key */
		if (n->type != REDIS_REPLY_STRING || parse_hash(r, rep->element[i + 1], &e, &m) < 0 ||
		    strlen(e.name) != n->len || memcmp(e.name, n->str, n->len) != 0 ||
		    !maro_registry_listed(out, e.name, prefix))
			continue;
		age = rep->element[0]->integer - m.hb_ms;
		e.heartbeat_age_ms = age < 0 ? 0 : age;
		rc = maro_registry_collect(r, out, &e);
	}
	freeReplyObject(rep);
	return rc;
}

/* The groups with a members key (SCAN: never blocks the server as KEYS would). */
static int
redis_groups(struct maro_registry *r, char ***names, size_t *n)
{
	char cursor[32] = "0";
	const char *argv[] = { "SCAN", cursor, "MATCH", "maro:*:members", "COUNT", "1000" };
	unsigned rounds = 0;

	do {
		redisReply *rep = command(r, 6, argv);
		size_t i, k;

		if (!rep)
			return -1;
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
		    rep->element[0]->type != REDIS_REPLY_STRING || rep->element[0]->len >= sizeof cursor ||
		    rep->element[1]->type != REDIS_REPLY_ARRAY)
			return unexpected(r, rep);
		memcpy(cursor, rep->element[0]->str, rep->element[0]->len);
		cursor[rep->element[0]->len] = '\0';
		for (i = 0; i < rep->element[1]->elements; i++) {
			const redisReply *key = rep->element[1]->element[i];
			char group[MARO_NAME_MAX + 1], **grown;
			size_t len;

			if (key->type != REDIS_REPLY_STRING || key->len <= 13 || key->len - 13 > MARO_NAME_MAX)
				continue;
			len = key->len - 13;	/* "maro:" GROUP ":members" */
			memcpy(group, key->str + 5, len);
			group[len] = '\0';
			if (!maro_name_valid(group) || group[0] == '~')
				continue;
			for (k = 0; k < *n && strcmp((*names)[k], group); k++)
				;
			if (k < *n)
				continue;	/* SCAN may name a key twice */
			grown = realloc(*names, (*n + 1) * sizeof *grown);
			if (grown)
				*names = grown;
			if (!grown || !(grown[*n] = strdup(group))) {
				freeReplyObject(rep);
				return maro_registry_fail(r, ENOMEM, "out of memory");
			}
			++*n;
		}
		freeReplyObject(rep);
	} while (strcmp(cursor, "0") && ++rounds < 100000);
	return 0;
}

static const char *
redis_local_address(const struct maro_registry *r)
{
	return R(r)->local[0] ? R(r)->local : NULL;
}

const struct maro_registry_backend maro_registry_redis_backend = {
	.kind = "redis",
	.open = redis_open,
	.close = redis_close,
	.put = redis_put,
	.del = redis_del,
	.get = redis_get,
	.list = redis_list,
	.local_address = redis_local_address,
	.groups = redis_groups,
};
