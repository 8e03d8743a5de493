/*
 * registry: the common part.  URL dispatch, validation of what goes in and
 * comes out, the entries a handle owns (re-sent at every heartbeat), and
 * the stored field format both backends share (registry-impl.h).
 */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "clock.h"
#include "curve.h"
#include "registry-impl.h"
#include "stats.h"

void (*maro_registry_notice)(int level, const char *msg);

/* The keys the MAC covers, in its order (MARO_MAC_NFIELDS): maro_registry_fields's, then these. */
static const char *const mac_keys[MARO_MAC_NFIELDS] = {
	"name", "type", "endpoint", "host", "pid", "started", "ncpu", "load1", "mem", "info", "stats",
	"job", "version", "token", "ttl", "owner",
};
/* job and version: covered only when they are not empty (registry-impl.h) */
#define MAC_JOB 11
#define MAC_VERSION 12

enum {
	F_NAME = 1 << 0, F_TYPE = 1 << 1, F_ENDPOINT = 1 << 2, F_HOST = 1 << 3,
	F_PID = 1 << 4, F_HB = 1 << 5, F_TTL = 1 << 6, F_TOKEN = 1 << 7,
	F_REQUIRED = (1 << 8) - 1,
};

int
maro_registry_fail(struct maro_registry *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}

int64_t
maro_registry_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
maro_registry_default_url(void)
{
	static char url[PATH_MAX + 8];
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg == '/' && strlen(xdg) < PATH_MAX - 16)
		snprintf(url, sizeof url, "dir:%s/maro", xdg);
	else
		snprintf(url, sizeof url, "dir:/tmp/maro-%lu", (unsigned long)getuid());
	return url;
}

static int
type_valid(const char *type)
{
	return maro_name_valid(type) && type[0] != '~';
}

/* Visible ASCII, no space: hosts and endpoints. */
static int
visible(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

int
maro_registry_endpoint_ok(const char *s, size_t n)
{
	size_t i, colon;
	unsigned long port = 0;

	if (n > MARO_ENDPOINT_MAX || !visible(s, n))
		return 0;
	if (n > 6 && !memcmp(s, "ipc://", 6))
		return 1;
	if (n <= 6 || memcmp(s, "tcp://", 6) != 0 || memchr(s, '*', n))
		return 0;
	for (colon = n; colon > 6 && s[colon - 1] != ':'; colon--)
		;
	if (colon <= 7 || colon == n || n - colon > 5)
		return 0;
	for (i = colon; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		port = port * 10 + (unsigned long)(s[i] - '0');
	}
	return port >= 1 && port <= 65535;
}

/*
 * Free text as every reader may print it: control characters become
 * spaces and bytes that are not UTF-8 become '?', so JSON encoders and
 * terminals get nothing they choke on.
 */
static void
clean_text(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		size_t len = 0, i;
		unsigned c = *p;

		if (c < 0x80) {
			if (c < ' ' || c == 0x7f)
				*p = ' ';
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4;
		for (i = 1; i < len; i++)
			if ((p[i] & 0xc0) != 0x80)
				break;
		/* overlong, surrogate and out-of-range forms are not UTF-8 either */
		if (len && i == len && !((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0) ||
		    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))) {
			p += len;
			continue;
		}
		*p++ = '?';
	}
}

static int
text_field(char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap || memchr(v, '\0', n))
		return -1;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

/* A version: numbers separated by single dots, two of them at least (MAJOR.MINOR). */
static int
version_ok(const char *s)
{
	int parts = 0;

	for (;;) {
		size_t d = strspn(s, "0123456789");

		if (!d)
			return 0;
		parts++;
		s += d;
		if (!*s)
			return parts >= 2;
		if (*s++ != '.')
			return 0;
	}
}

/* A decimal integer in [min, max], all of v. */
static int
int_field(const char *v, size_t n, int64_t min, int64_t max, int64_t *out)
{
	int64_t x = 0;
	size_t i = 0;
	int neg = n > 0 && v[0] == '-';

	i = (size_t)neg;
	if (n == i || n - i > 18)
		return -1;
	for (; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	if (neg)
		x = -x;
	if (x < min || x > max)
		return -1;
	*out = x;
	return 0;
}

static int
hex_token(const char *v, size_t n)
{
	size_t i;

	if (n != MARO_TOKEN_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return 0;
	return 1;
}

#define KEY_IS(s) (klen == sizeof(s) - 1 && !memcmp(key, s, klen))

int
maro_registry_field(struct maro_entry *e, struct maro_registry_meta *m, const char *key,
    size_t klen, const char *v, size_t n)
{
	char num[32], *end;
	int64_t x;
	size_t i;

	for (i = 0; i < MARO_MAC_NFIELDS; i++)
		if (klen == strlen(mac_keys[i]) && !memcmp(key, mac_keys[i], klen)) {
			m->raw[i] = v;
			m->rawlen[i] = n;
			break;
		}
	if (KEY_IS("mac")) {
		if (n != MARO_MAC_HEX || sodium_hex2bin(m->mac, sizeof m->mac, v, n, NULL, NULL, NULL) != 0)
			return -1;
		for (i = 0; i < n; i++)
			if (v[i] >= 'A' && v[i] <= 'F')
				return -1;	/* lowercase only: one spelling, as the token */
		m->has_mac = 1;
	} else if (KEY_IS("name")) {
		if (text_field(e->name, sizeof e->name, v, n) < 0 || !maro_name_valid(e->name))
			return -1;
		m->seen |= F_NAME;
	} else if (KEY_IS("type")) {
		if (text_field(e->type, sizeof e->type, v, n) < 0 || !type_valid(e->type))
			return -1;
		m->seen |= F_TYPE;
	} else if (KEY_IS("endpoint")) {
		if (!maro_registry_endpoint_ok(v, n) || text_field(e->endpoint, sizeof e->endpoint, v, n) < 0)
			return -1;
		m->seen |= F_ENDPOINT;
	} else if (KEY_IS("host")) {
		if (n == 0 || !visible(v, n) || text_field(e->host, sizeof e->host, v, n) < 0)
			return -1;
		m->seen |= F_HOST;
	} else if (KEY_IS("info")) {
		if (text_field(e->info, sizeof e->info, v, n) < 0)
			return -1;
		clean_text(e->info);
	} else if (KEY_IS("stats")) {
		/* optional and never worth the entry: what cannot be kept is dropped */
		if (text_field(e->stats, sizeof e->stats, v, n) < 0)
			e->stats[0] = '\0';
		clean_text(e->stats);
	} else if (KEY_IS("version")) {
		/* optional and never worth the entry: MAJOR.MINOR[.PATCH...], or nothing */
		if (text_field(e->version, sizeof e->version, v, n) < 0 || !version_ok(e->version))
			e->version[0] = '\0';
	} else if (KEY_IS("job")) {
		if (text_field(e->job, sizeof e->job, v, n) < 0)
			e->job[0] = '\0';
		clean_text(e->job);
	} else if (KEY_IS("token")) {
		if (!hex_token(v, n))
			return -1;
		memcpy(m->token, v, n);
		m->token[n] = '\0';
		m->seen |= F_TOKEN;
	} else if (KEY_IS("owner")) {
		if (n < 8 || memcmp(v, ".owner.", 7) || !visible(v, n) || memchr(v, '/', n) ||
		    text_field(m->owner, sizeof m->owner, v, n) < 0)
			return -1;
	} else if (KEY_IS("pid")) {
		if (int_field(v, n, 1, INT_MAX, &x) < 0)
			return -1;
		e->pid = (pid_t)x;
		m->seen |= F_PID;
	} else if (KEY_IS("started")) {
		if (int_field(v, n, 0, INT64_MAX / 4, &e->started_ms) < 0)
			return -1;
	} else if (KEY_IS("hb")) {
		if (int_field(v, n, 1, INT64_MAX / 4, &m->hb_ms) < 0)
			return -1;
		m->seen |= F_HB;
	} else if (KEY_IS("ttl")) {
		if (int_field(v, n, 1, MARO_TTL_MAX_MS, &m->ttl_ms) < 0)
			return -1;
		m->seen |= F_TTL;
	} else if (KEY_IS("ncpu")) {
		if (int_field(v, n, 0, 1 << 20, &x) < 0)
			return -1;
		e->ncpu = (int)x;
	} else if (KEY_IS("load1")) {
		if (text_field(num, sizeof num, v, n) < 0 || n == 0 || num[0] < '0' || num[0] > '9')
			return -1;
		errno = 0;
		e->load1 = strtod(num, &end);
		if (errno || *end || !isfinite(e->load1) || e->load1 > 1e9)
			return -1;
	} else if (KEY_IS("mem")) {
		if (int_field(v, n, 0, INT64_MAX / 4, &x) < 0)
			return -1;
		e->mem_used_kb = (uint64_t)x;
	}
	return 0;
}

/*
 * Tells maro_registry_notice, once per name and level for this handle
 * (the first MARO_NOTICED_MAX names; the rest go unsaid).
 */
static void
notice(struct maro_registry *r, int level, const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	size_t i;

	if (!maro_registry_notice)
		return;
	for (i = 0; i < MARO_NOTICED_MAX && r->noticed[level][i][0]; i++)
		if (!strcmp(r->noticed[level][i], name))
			return;
	if (i == MARO_NOTICED_MAX)
		return;
	snprintf(r->noticed[level][i], sizeof r->noticed[level][i], "%s", name);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	maro_registry_notice(level, msg);
}

int
maro_registry_mac_raw(const unsigned char key[MARO_MAC_BYTES], const char *group,
    const char *const *val, const size_t *len, unsigned char out[MARO_MAC_BYTES])
{
	crypto_generichash_state st;
	size_t i;
	int rc = 0;

	crypto_generichash_init(&st, key, MARO_MAC_BYTES, MARO_MAC_BYTES);
	crypto_generichash_update(&st, (const unsigned char *)"group=", 6);
	crypto_generichash_update(&st, (const unsigned char *)group, strlen(group));
	for (i = 0; i < MARO_MAC_NFIELDS; i++) {
		/* an entry without a job (a version) keeps the MAC of the entries of before them */
		if ((i == MAC_JOB || i == MAC_VERSION) && (!val[i] || !len[i]))
			continue;
		/* one line each: a newline in a value could pass for the next field */
		if (val[i] && memchr(val[i], '\n', len[i]))
			rc = -1;
		crypto_generichash_update(&st, (const unsigned char *)"\n", 1);
		crypto_generichash_update(&st, (const unsigned char *)mac_keys[i], strlen(mac_keys[i]));
		crypto_generichash_update(&st, (const unsigned char *)"=", 1);
		if (val[i])
			crypto_generichash_update(&st, (const unsigned char *)val[i], len[i]);
	}
	crypto_generichash_update(&st, (const unsigned char *)"\n", 1);
	crypto_generichash_final(&st, out, MARO_MAC_BYTES);
	return rc;
}

void
maro_registry_mac(const struct maro_registry *r, const struct maro_registry_fields *f,
    const char *token, const char *ttl, const char *owner, char out[MARO_MAC_HEX + 1])
{
	const char *val[MARO_MAC_NFIELDS];
	size_t len[MARO_MAC_NFIELDS], i;
	unsigned char mac[MARO_MAC_BYTES];

	out[0] = '\0';
	if (!r->keyed)
		return;
	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++)
		val[i] = f->val[i];
	val[i++] = token;
	val[i++] = ttl;
	val[i++] = owner;
	for (i = 0; i < MARO_MAC_NFIELDS; i++)
		len[i] = strlen(val[i]);
	maro_registry_mac_raw(r->mac_key, r->group, val, len, mac);
	sodium_bin2hex(out, MARO_MAC_HEX + 1, mac, sizeof mac);
}

int
maro_registry_entry_check(struct maro_registry *r, const struct maro_entry *e,
    struct maro_registry_meta *m)
{
	unsigned char mac[MARO_MAC_BYTES];

	if ((m->seen & F_REQUIRED) != F_REQUIRED)
		return -1;
	if (!r->keyed)
		return 0;
	if (m->has_mac && maro_registry_mac_raw(r->mac_key, r->group, m->raw, m->rawlen, mac) == 0 &&
	    sodium_memcmp(mac, m->mac, sizeof mac) == 0)
		return 0;
	m->mac_bad = 1;
	r->altered = 1;
	notice(r, 0, e->name, "skipped the entry of '%s': its MAC is %s (written without the group "
	    "key, or changed since)", e->name, m->has_mac ? "wrong" : "missing");
	return -1;
}

void
maro_registry_fields(const struct maro_entry *e, struct maro_registry_fields *f)
{
	static const char *const keys[MARO_REGISTRY_NFIELDS] = {
		"name", "type", "endpoint", "host", "pid", "started", "ncpu", "load1", "mem", "info",
		"stats", "job", "version",
	};
	size_t i;

	snprintf(f->num[0], sizeof f->num[0], "%ld", (long)e->pid);
	snprintf(f->num[1], sizeof f->num[1], "%lld", (long long)e->started_ms);
	snprintf(f->num[2], sizeof f->num[2], "%d", e->ncpu);
	snprintf(f->num[3], sizeof f->num[3], "%.2f", e->load1);
	snprintf(f->num[4], sizeof f->num[4], "%llu", (unsigned long long)e->mem_used_kb);
	for (i = 0; i < MARO_REGISTRY_NFIELDS; i++)
		f->key[i] = keys[i];
	f->val[0] = e->name;
	f->val[1] = e->type;
	f->val[2] = e->endpoint;
	f->val[3] = e->host;
	for (i = 0; i < 5; i++)
		f->val[4 + i] = f->num[i];
	f->val[9] = e->info;
	f->val[10] = e->stats;
	f->val[11] = e->job;
	f->val[12] = e->version;
}

int
maro_registry_listed(const struct maro_registry_list *l, const char *name, const char *prefix)
{
	if (name[0] == '~') {
		if (!l->jobs)
			return 0;
		name++;
	}
	return !strncmp(name, prefix, strlen(prefix));
}

int
maro_registry_collect(struct maro_registry *r, struct maro_registry_list *l,
    const struct maro_entry *e)
{
	if (e->name[0] == '~' && !(l->jobs && e->job[0]))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct maro_entry *v = realloc(l->v, cap * sizeof *v);

		if (!v)
			return maro_registry_fail(r, ENOMEM, "out of memory");
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *e;
	return 0;
}

/* a heartbeat reads the host's figures again after this long */
#define STATUS_EVERY_US 10000000

/* What the host says about itself, for cluster status. */
static void
fill_status(struct maro_entry *e)
{
	char line[256];
	unsigned long long total = 0, avail = 0, v;
	double load;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f;

	e->ncpu = ncpu > 0 && ncpu < (1 << 20) ? (int)ncpu : 0;
	e->load1 = getloadavg(&load, 1) == 1 && load >= 0 ? load : 0;
	f = fopen("/proc/meminfo", "re");
	if (f) {
		while (fgets(line, sizeof line, f)) {
			if (sscanf(line, "MemTotal: %llu kB", &v) == 1)
				total = v;
			else if (sscanf(line, "MemAvailable: %llu kB", &v) == 1)
				avail = v;
		}
		fclose(f);
	}
	e->mem_used_kb = total > avail ? total - avail : 0;
}

static void
fill_own(struct maro_entry *e)
{
	char *p;

	if (gethostname(e->host, sizeof e->host - 1) < 0)
		e->host[0] = '\0';
	e->host[sizeof e->host - 1] = '\0';
	for (p = e->host; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			*p = '?';
	if (!e->host[0])
		snprintf(e->host, sizeof e->host, "localhost");
	e->pid = getpid();
	e->started_ms = maro_registry_wall_ms();
	/* its numbers alone: a build's suffix (0.2.0-rc1) is no version a reader takes */
	snprintf(e->version, sizeof e->version, "%.*s", (int)strspn(MARO_VERSION, "0123456789."),
	    MARO_VERSION);
	if (!version_ok(e->version))
		e->version[0] = '\0';
	fill_status(e);
	/* already here, so that the first heartbeat of an idle member changes nothing */
	maro_stats_text(e->stats, sizeof e->stats, maro_now_us());
}

static void
make_token(char out[MARO_TOKEN_LEN + 1])
{
	unsigned char b[MARO_TOKEN_LEN / 2];
	size_t i;

	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
		/* no entropy source: still unique per process and moment */
		uint64_t x = (uint64_t)maro_registry_wall_ms() * 1000003u ^ (uint64_t)getpid() << 32 ^
		    (uint64_t)maro_now_us();

		for (i = 0; i < sizeof b; i++, x = x * 6364136223846793005u + 1442695040888963407u)
			b[i] = (unsigned char)(x >> 56);
	}
	for (i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The URL as it may be shown: any user:password@ replaced by "***@". */
/*
 * The URL as it may be shown: whatever comes before its last '@' (after
 * the scheme's ':' when there is one) may be a password, whether or not
 * the URL is well formed ("redis:/:pw@host", "redis//:pw@host"), and
 * becomes "***".
 */
static void
redact(const char *url, char *out, size_t len)
{
	const char *at = strrchr(url, '@'), *colon = strchr(url, ':');

	if (!at)
		snprintf(out, len, "%s", url);
	else if (colon && colon < at)
		snprintf(out, len, "%.*s***%s", (int)(colon + 1 - url), url, at);
	else
		snprintf(out, len, "***%s", at);
}

static int
ttl_from_env(struct maro_registry *r)
{
	const char *s = getenv("MARO_TTL");
	int64_t us;

	r->ttl_ms = MARO_TTL_DEFAULT_MS;
	if (!s || !*s)
		return 0;
	if (maro_duration_parse(s, &us) < 0 || us < 1000 || us / 1000 > MARO_TTL_MAX_MS)
		return maro_registry_fail(r, EINVAL, "invalid MARO_TTL '%s' (a duration from 1s to 1h)", s);
	/* below two heartbeats, a live entry would lapse between them */
	r->ttl_ms = us / 1000 < MARO_TTL_MIN_MS ? MARO_TTL_MIN_MS : us / 1000;
	return 0;
}

/* The MAC key from the group key (opts->key, or the file of opts->keyfile or $MARO_KEYFILE). */
static int
load_key(struct maro_registry *r, const struct maro_registry_opts *opts)
{
	const char *file = opts && opts->keyfile ? opts->keyfile : getenv("MARO_KEYFILE");
	struct maro_curve_key k;
	char msg[sizeof r->err];
	int rc;

	if (opts && opts->key) {
		rc = maro_curve_derive(opts->key, 1, "maro-reg", r->mac_key, sizeof r->mac_key);
	} else {
		if (!file || !*file)
			return 0;
		if (maro_curve_load(file, &k, msg, sizeof msg) < 0)
			return maro_registry_fail(r, EINVAL, "%s", msg);
		rc = maro_curve_derive(&k, 1, "maro-reg", r->mac_key, sizeof r->mac_key);
		maro_curve_wipe(&k);
	}
	if (rc < 0)
		return maro_registry_fail(r, EINVAL, "cannot derive the registry's key from the group key");
	r->keyed = 1;
	return 0;
}

struct maro_registry *
maro_registry_open(const char *url, const char *group, const struct maro_registry_opts *opts,
    char *errbuf, size_t errlen)
{
	struct maro_registry *r = calloc(1, sizeof *r);
	char shown[256];
	int rc, err;

	if (!r) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (!url || !*url)
		url = getenv("MARO_REGISTRY");
	if (!url || !*url)
		url = maro_registry_default_url();
	if (!group || !*group)
		group = getenv("MARO_GROUP");
	if (!group || !*group)
		group = "maro";
	make_token(r->token);
	if (!type_valid(group) || !strcmp(group, ".") || !strcmp(group, "..")) {
		rc = maro_registry_fail(r, EINVAL, "invalid group name '%.*s'", MARO_NAME_MAX, group);
		goto out;
	}
	snprintf(r->group, sizeof r->group, "%s", group);
	if (opts && opts->ttl_ms > 0)
		r->ttl_ms = opts->ttl_ms > MARO_TTL_MAX_MS ? MARO_TTL_MAX_MS : opts->ttl_ms;
	else if ((rc = ttl_from_env(r)) < 0)
		goto out;
	if ((rc = load_key(r, opts)) < 0)
		goto out;
	if (!strncmp(url, "dir:", 4)) {
		r->be = &maro_registry_dir_backend;
		url += 4;
	} else if (!strncmp(url, "redis://", 8) || !strncmp(url, "redis+sentinel://", 17)) {
		r->be = &maro_registry_redis_backend;
	} else {
		redact(url, shown, sizeof shown);
		rc = maro_registry_fail(r, EINVAL,
		    "invalid registry '%s' (redis://HOST:PORT[/DB], redis+sentinel://HOST:PORT[,...]/MASTER[/DB] or dir:PATH)", shown);
		goto out;
	}
	if (r->be == &maro_registry_dir_backend)
		snprintf(r->url, sizeof r->url, "dir:%s", url);
	else
		redact(url, r->url, sizeof r->url);
	rc = r->be->open(r, url);
out:
	if (rc < 0) {
		err = errno;
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", r->err);
		maro_registry_close(r);
		errno = err;
		return NULL;
	}
	return r;
}

void
maro_registry_close(struct maro_registry *r)
{
	if (!r)
		return;
	while (r->nown > 0)
		maro_registry_unregister(r, r->own[r->nown - 1].name);
	if (r->be)
		r->be->close(r);
	free(r->own);
	sodium_memzero(r->mac_key, sizeof r->mac_key);
	free(r);
}

const char *
maro_registry_url(const struct maro_registry *r)
{
	return r->url;
}

const char *
maro_registry_group(const struct maro_registry *r)
{
	return r->group;
}

int
maro_registry_prepare(struct maro_registry *r)
{
	return r->be->prepare ? r->be->prepare(r) : 0;
}

static int
by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

ssize_t
maro_registry_groups(struct maro_registry *r, char ***names, size_t *n)
{
	size_t from = *n;

	if (r->be->groups(r, names, n) < 0)
		return -1;
	if (*n - from > 1)
		qsort(*names + from, *n - from, sizeof **names, by_string);
	return (ssize_t)(*n - from);
}

const char *
maro_registry_error(const struct maro_registry *r)
{
	return r->err;
}

const char *
maro_registry_kind(const struct maro_registry *r)
{
	return r->be->kind;
}

const char *
maro_registry_local_address(const struct maro_registry *r)
{
	return r->be->local_address ? r->be->local_address(r) : NULL;
}

int64_t
maro_registry_ttl_ms(const struct maro_registry *r)
{
	return r->ttl_ms;
}

static ssize_t
own_index(const struct maro_registry *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nown; i++)
		if (!strcmp(r->own[i].name, name))
			return (ssize_t)i;
	return -1;
}

static void
own_remove(struct maro_registry *r, size_t i)
{
	memmove(r->own + i, r->own + i + 1, (r->nown - i - 1) * sizeof r->own[0]);
	r->nown--;
}

static void
say_held(struct maro_registry *r, const char *name, const struct maro_entry *h, const char *how)
{
	if (h->pid > 0)
		maro_registry_fail(r, EEXIST, "name '%s' %s by pid %ld on %s", name, how, (long)h->pid,
		    h->host);
	else
		maro_registry_fail(r, EEXIST, "name '%s' %s by another owner", name, how);
}

/*
 * The holder is the process this one replaces: one that its parent reaped
 * (maro-pool restarting a job says so in MARO_REPLACES_PID), on this host.
 * Evidence from the parent's waitpid(2), not a probe of a pid.
 */
static int
replaces(const struct maro_entry *mine, const struct maro_entry *h)
{
	const char *s = getenv("MARO_REPLACES_PID");
	char *end;
	long pid;

	if (!s || !*s)
		return 0;
	errno = 0;
	pid = strtol(s, &end, 10);
	return !errno && !*end && pid > 0 && h->pid == pid && h->host[0] && !strcmp(h->host, mine->host);
}

/*
 * The first write of a name.  A registry too slow to answer in time
 * (ETIMEDOUT: a Redis under a thousand joins at once, or this process
 * starved of the CPU by them) is asked again until -W, or JOIN_WAIT_US
 * without it: a component started with hundreds of others must not die of
 * their number.  A registry that refuses or is absent fails at once.
 */
static int
put_joining(struct maro_registry *r, const struct maro_entry *e, int takeover, struct maro_entry *h)
{
	int64_t end = maro_now_us() + maro_budget_us(JOIN_WAIT_US, 0);
	int rc;

	while ((rc = r->be->put(r, e, takeover, h)) < 0 && errno == ETIMEDOUT && !maro_signal &&
	    maro_now_us() < end)
		;
	if (rc < 0 && errno == ETIMEDOUT && maro_signal)
		errno = EINTR;
	return rc;
}

int
maro_registry_register(struct maro_registry *r, const struct maro_entry *e, int takeover,
    struct maro_entry *holder)
{
	struct maro_entry mine, h;
	size_t len;
	int rc;

	if (!maro_name_valid(e->name))
		return maro_registry_fail(r, EINVAL, "invalid name '%.*s'", MARO_NAME_MAX, e->name);
	memset(&mine, 0, sizeof mine);
	memcpy(mine.name, e->name, sizeof mine.name);
	memcpy(mine.type, e->type, sizeof mine.type);
	mine.type[MARO_NAME_MAX] = '\0';
	if (!mine.type[0])
		maro_name_type(mine.name + (mine.name[0] == '~'), mine.type);
	if (!type_valid(mine.type))
		return maro_registry_fail(r, EINVAL, "invalid type '%s' for '%s'", mine.type, mine.name);
	len = strnlen(e->endpoint, sizeof e->endpoint);
	if (len == sizeof e->endpoint || !maro_registry_endpoint_ok(e->endpoint, len))
		return maro_registry_fail(r, EINVAL, "invalid endpoint for '%s' (tcp://HOST:PORT or ipc://PATH)",
		    mine.name);
	memcpy(mine.endpoint, e->endpoint, len + 1);
	memcpy(mine.info, e->info, sizeof mine.info);
	mine.info[MARO_INFO_MAX] = '\0';
	clean_text(mine.info);
	memcpy(mine.job, e->job, sizeof mine.job);
	mine.job[MARO_STATS_JOB_MAX] = '\0';
	clean_text(mine.job);
	fill_own(&mine);
	if (own_index(r, mine.name) < 0 && r->nown == r->capown) {
		size_t cap = r->capown ? r->capown * 2 : 4;
		struct maro_entry *v = realloc(r->own, cap * sizeof *v);

		if (!v)
			return maro_registry_fail(r, ENOMEM, "out of memory");
		r->own = v;
		r->capown = cap;
	}
	memset(&h, 0, sizeof h);
	/*
	 * whether a holder lives is the backend's to say (the dir: lock, the
	 * Redis entry's expiry), never a pid probe: pids mean nothing across
	 * PID namespaces, nor across hosts that share a name
	 */
	rc = put_joining(r, &mine, takeover, &h);
	if (rc < 0 && errno == EEXIST) {
		if (replaces(&mine, &h)) {
			memset(&h, 0, sizeof h);
			rc = r->be->put(r, &mine, 1, &h);
		} else {
			errno = EEXIST;
		}
	}
	if (rc < 0) {
		if (errno == EEXIST) {
			say_held(r, mine.name, &h, "is held");
			if (holder)
				*holder = h;
			errno = EEXIST;
		}
		return -1;
	}
	if (own_index(r, mine.name) < 0)
		r->own[r->nown++] = mine;
	else
		r->own[own_index(r, mine.name)] = mine;
	return 0;
}

/* Writes own entry i again; a name taken over is dropped from the handle. */
static int
refresh(struct maro_registry *r, size_t i)
{
	struct maro_entry h;
	char name[MARO_NAME_MAX + 1];

	memset(&h, 0, sizeof h);
	r->altered = 0;
	if (r->be->put(r, &r->own[i], 0, &h) == 0) {
		/*
		 * A holder without the group key (or, without one, any registry
		 * client) may change or forge the entry, token included: with a
		 * key, what fails the MAC is no holder, and is written over.
		 */
		if (r->altered)
			notice(r, 1, r->own[i].name, "the entry of '%s' was changed by someone %s: "
			    "written back", r->own[i].name, r->keyed ? "without the group key" : "else");
		return 0;
	}
	if (errno != EEXIST)
		return -1;
	memcpy(name, r->own[i].name, sizeof name);
	own_remove(r, i);
	say_held(r, name, &h, "was taken over");
	return -1;
}

int
maro_registry_set_info(struct maro_registry *r, const char *name, const char *info)
{
	ssize_t i = own_index(r, name);

	if (i < 0)
		return maro_registry_fail(r, ENOENT, "'%s' is not registered by this process", name);
	snprintf(r->own[i].info, sizeof r->own[i].info, "%s", info);
	clean_text(r->own[i].info);
	return refresh(r, (size_t)i);
}

int
maro_registry_set_job(struct maro_registry *r, const char *name, const char *job)
{
	ssize_t i = own_index(r, name);
	int had;

	if (i < 0)
		return maro_registry_fail(r, ENOENT, "'%s' is not registered by this process", name);
	had = r->own[i].job[0] != '\0';
	snprintf(r->own[i].job, sizeof r->own[i].job, "%s", job ? job : "");
	clean_text(r->own[i].job);
	return had || !r->own[i].job[0] ? 0 : refresh(r, (size_t)i);
}

int
maro_registry_heartbeat(struct maro_registry *r)
{
	struct maro_entry status;
	char lost[sizeof r->err] = "";
	size_t i = 0;
	int err = 0;
	int64_t now = maro_now_us();

	/*
	 * the host's figures are read again every STATUS_EVERY_US: reading
	 * /proc at every heartbeat of a thousand members was most of what an
	 * idle group cost, and both backends write them only every 20 s
	 * unless something else changed
	 */
	if (!r->status_us || now - r->status_us >= STATUS_EVERY_US) {
		fill_status(&r->status);
		r->status_us = now;
	}
	status = r->status;
	maro_stats_text(status.stats, sizeof status.stats, now);
	while (i < r->nown) {
		r->own[i].ncpu = status.ncpu;
		r->own[i].load1 = status.load1;
		r->own[i].mem_used_kb = status.mem_used_kb;
		memcpy(r->own[i].stats, status.stats, sizeof status.stats);
		if (refresh(r, i) == 0) {
			i++;
			continue;
		}
		if (errno != EEXIST) {
			err = errno;
			break;	/* the backend is unreachable: the others would fail alike */
		}
		snprintf(lost, sizeof lost, "%s", r->err);
	}
	if (lost[0])
		return maro_registry_fail(r, EEXIST, "%s", lost);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int
maro_registry_unregister(struct maro_registry *r, const char *name)
{
	ssize_t i = own_index(r, name);
	int rc;

	if (i < 0)
		return 0;
	rc = r->be->del(r, name);
	own_remove(r, (size_t)i);
	return rc;
}

int
maro_registry_lookup(struct maro_registry *r, const char *name, struct maro_entry *e)
{
	int rc;

	if (!maro_name_valid(name))
		return 0;
	r->altered = 0;
	rc = r->be->get(r, name, e);
	if (rc == 0 && r->altered)
		errno = EKEYREJECTED;
	return rc;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct maro_entry *)a)->name, ((const struct maro_entry *)b)->name);
}

static ssize_t
list(struct maro_registry *r, const char *prefix, int jobs, struct maro_entry **out)
{
	struct maro_registry_list l = { 0 };

	l.jobs = jobs;
	*out = NULL;
	if (r->be->list(r, prefix ? prefix : "", &l) < 0) {
		int err = errno;

		free(l.v);
		errno = err;
		return -1;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof l.v[0], by_name);
	*out = l.v;
	return (ssize_t)l.n;
}

ssize_t
maro_registry_list(struct maro_registry *r, const char *prefix, struct maro_entry **out)
{
	return list(r, prefix, 0, out);
}

ssize_t
maro_registry_list_jobs(struct maro_registry *r, const char *prefix, struct maro_entry **out)
{
	return list(r, prefix, 1, out);
}

ssize_t
maro_registry_names(struct maro_registry *r, const char *prefix, char ***names, size_t *n)
{
	struct maro_entry *v;
	ssize_t k = maro_registry_list(r, prefix, &v), i;
	char **grown;

	if (k <= 0)
		return k;
	grown = realloc(*names, (*n + (size_t)k) * sizeof *grown);
	if (!grown)
		goto fail;
	*names = grown;
	for (i = 0; i < k; i++) {
		if (!(grown[*n] = strdup(v[i].name)))
			goto fail;
		++*n;
	}
	free(v);
	return k;
fail:
	free(v);
	errno = ENOMEM;
	return -1;
}
