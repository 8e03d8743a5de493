/*
 * stats: the published counters and their text (stats.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* rates over less time than this would be noise: the last ones are kept */
#define RATE_MIN_US 250000
/* a rate larger than this is not a rate */
#define RATE_MAX 1e12

#ifdef MARO_NO_STATS
#undef maro_stats	/* here the struct's tag: the counts go nowhere (stats.h) */
static struct maro_stats maro_stats;
#else
struct maro_stats maro_stats;
#endif

static const char *const names[MARO_STATS_NKEYS] = {
	"in", "out", "bin", "bout", "done", "failed", "flight", "resent", "win_used", "win",
	"rin", "rout", "rdone",
};

/* The counters the rates are of, and the rates, from the last computation. */
static struct {
	int64_t at_us;			/* 0: never */
	uint64_t in, out, done;
	double rin, rout, rdone;
} last;

const char *
maro_stats_key_name(enum maro_stats_key k)
{
	return k < MARO_STATS_NKEYS ? names[k] : "";
}

static double
per_second(uint64_t now, uint64_t then, int64_t us)
{
	return now > then ? (double)(now - then) * 1e6 / (double)us : 0.0;
}

/* Appends one word (with its leading space) if it fits whole. */
static void __attribute__((format(printf, 4, 5)))
word(char *out, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *at)
		out[*at] = '\0';	/* not whole: left out */
	else
		*at += (size_t)n;
}

/* A rate word, when it is not zero as written (two decimals). */
static void
rate_word(char *out, size_t len, size_t *at, const char *key, double r)
{
	if (r >= 0.005)
		word(out, len, at, " %s=%.2f", key, r);
}

void
maro_stats_text(char *out, size_t len, int64_t now_us)
{
	const struct maro_stats *s = &maro_stats;
	size_t at = 0;

	if (len == 0)
		return;
	out[0] = '\0';
#ifdef MARO_NO_STATS
	return;
#endif
	if (last.at_us && now_us - last.at_us >= RATE_MIN_US) {
		int64_t us = now_us - last.at_us;

		last.rin = per_second(s->msgs_in, last.in, us);
		last.rout = per_second(s->msgs_out, last.out, us);
		last.rdone = per_second(s->tasks_done, last.done, us);
	}
	if (!last.at_us || now_us - last.at_us >= RATE_MIN_US) {
		last.at_us = now_us;
		last.in = s->msgs_in;
		last.out = s->msgs_out;
		last.done = s->tasks_done;
	}
	word(out, len, &at, "in=%llu", (unsigned long long)s->msgs_in);
	word(out, len, &at, " out=%llu", (unsigned long long)s->msgs_out);
	word(out, len, &at, " bin=%llu", (unsigned long long)s->bytes_in);
	word(out, len, &at, " bout=%llu", (unsigned long long)s->bytes_out);
	word(out, len, &at, " done=%llu", (unsigned long long)s->tasks_done);
	word(out, len, &at, " failed=%llu", (unsigned long long)s->tasks_failed);
	if (s->has_flight)
		word(out, len, &at, " flight=%llu", (unsigned long long)s->tasks_inflight);
	word(out, len, &at, " resent=%llu", (unsigned long long)s->resent);
	if (s->window)
		word(out, len, &at, " win=%llu/%llu", (unsigned long long)s->window_used,
		    (unsigned long long)s->window);
	rate_word(out, len, &at, "rin", last.rin);
	rate_word(out, len, &at, "rout", last.rout);
	rate_word(out, len, &at, "rdone", last.rdone);
}

/* A decimal integer, all of s[0..n): 0, or -1. */
static int
integer(const char *s, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0 || n > 20)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*out = x;
	return 0;
}

/* A rate: digits, then maybe '.' and digits; 0, or -1. */
static int
rate(const char *s, size_t n, double *out)
{
	char buf[32], *end;
	size_t i, dots = 0;
	double r;

	if (n == 0 || n >= sizeof buf || s[0] < '0' || s[0] > '9')
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] < '0' || s[i] > '9')
			return -1;
	}
	if (dots > 1 || s[n - 1] == '.')
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	r = strtod(buf, &end);
	if (errno || *end || !isfinite(r) || r > RATE_MAX)
		return -1;
	*out = r;
	return 0;
}

static int
key_index(const char *k, size_t n)
{
	int i;

	/* "win" is the word win=USED/SIZE; "win_used" is no word of the text */
	for (i = 0; i < MARO_STATS_NKEYS; i++)
		if (i != MARO_STATS_WIN_USED && strlen(names[i]) == n && !memcmp(names[i], k, n))
			return i;
	return -1;
}

/* One word "key=value" (n bytes) into v, unless it cannot be read. */
static void
parse_word(const char *w, size_t n, struct maro_stats_view *v)
{
	const char *eq = memchr(w, '=', n), *val, *slash;
	size_t vn;
	uint64_t a, b;
	double r;
	int k;

	if (!eq || (k = key_index(w, (size_t)(eq - w))) < 0)
		return;
	val = eq + 1;
	vn = n - (size_t)(val - w);
	if (k == MARO_STATS_WIN) {
		slash = memchr(val, '/', vn);
		if (!slash || integer(val, (size_t)(slash - val), &a) < 0 ||
		    integer(slash + 1, vn - (size_t)(slash + 1 - val), &b) < 0)
			return;
		v->n[MARO_STATS_WIN_USED] = a;
		v->n[MARO_STATS_WIN] = b;
		v->have |= 1u << MARO_STATS_WIN_USED | 1u << MARO_STATS_WIN;
		return;
	}
	if (k < MARO_STATS_NINTS) {
		if (integer(val, vn, &a) < 0)
			return;
		v->n[k] = a;
	} else {
		if (rate(val, vn, &r) < 0)
			return;
		v->rate[k - MARO_STATS_NINTS] = r;
	}
	v->have |= 1u << k;
}

int
maro_stats_parse(const char *text, struct maro_stats_view *v)
{
	const char *p = text;
	int i, n = 0;

	memset(v, 0, sizeof *v);
	while (*p) {
		size_t len = strcspn(p, " ");

		if (len)
			parse_word(p, len, v);
		p += len;
		p += *p == ' ';
	}
	for (i = 0; i < MARO_STATS_NKEYS; i++)
		n += (v->have >> i) & 1;
	return n;
}

double
maro_stats_value(const struct maro_stats_view *v, enum maro_stats_key k)
{
	if (k >= MARO_STATS_NKEYS || !(v->have & 1u << k))
		return 0.0;
	return k < MARO_STATS_NINTS ? (double)v->n[k] : v->rate[k - MARO_STATS_NINTS];
}

void
maro_stats_job_text(const struct maro_stats_job *j, char *out, size_t len)
{
	char total[24] = "-", eta[24] = "-";
	double r = isfinite(j->rate) && j->rate > 0 ? j->rate : 0.0;
	size_t at = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	if (j->total >= 0)
		snprintf(total, sizeof total, "%lld", (long long)j->total);
	if (j->eta >= 0)
		snprintf(eta, sizeof eta, "%lld", (long long)j->eta);
	word(out, len, &at, "start=%lld", (long long)(j->start > 0 ? j->start : 0));
	word(out, len, &at, " total=%s", total);
	word(out, len, &at, " read=%llu", (unsigned long long)j->read);
	word(out, len, &at, " done=%llu", (unsigned long long)j->done);
	word(out, len, &at, " failed=%llu", (unsigned long long)j->failed);
	word(out, len, &at, " gaveup=%llu", (unsigned long long)j->gaveup);
	word(out, len, &at, " open=%llu", (unsigned long long)j->open);
	word(out, len, &at, " rate=%.2f", r < RATE_MAX ? r : RATE_MAX);
	word(out, len, &at, " eta=%s", eta);
}

/* "-" (-1) or a decimal integer up to INT64_MAX: 0, or -1. */
static int
maybe_integer(const char *s, size_t n, int64_t *out)
{
	uint64_t x;

	if (n == 1 && s[0] == '-') {
		*out = -1;
		return 0;
	}
	if (integer(s, n, &x) < 0 || x > INT64_MAX)
		return -1;
	*out = (int64_t)x;
	return 0;
}

/* One word of a job's text into j, unless it cannot be read; which key it was (bit), or 0. */
static unsigned
job_word(const char *w, size_t n, struct maro_stats_job *j)
{
	static const char *const keys[] = {
		"start", "total", "read", "done", "failed", "gaveup", "open", "rate", "eta",
	};
	uint64_t *const counts[] = { &j->read, &j->done, &j->failed, &j->gaveup, &j->open };
	const char *eq = memchr(w, '=', n), *v;
	size_t k, kn, vn;
	int64_t x;

	if (!eq)
		return 0;
	kn = (size_t)(eq - w);
	v = eq + 1;
	vn = n - kn - 1;
	for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (strlen(keys[k]) == kn && !memcmp(keys[k], w, kn))
			break;
	switch (k) {
	case 0:
		if (maybe_integer(v, vn, &x) < 0 || x < 0)
			return 0;
		j->start = x;
		break;
	case 1:
		if (maybe_integer(v, vn, &j->total) < 0)
			return 0;
		break;
	case 2: case 3: case 4: case 5: case 6:
		if (integer(v, vn, counts[k - 2]) < 0)
			return 0;
		break;
	case 7:
		if (rate(v, vn, &j->rate) < 0)
			return 0;
		break;
	case 8:
		if (maybe_integer(v, vn, &j->eta) < 0)
			return 0;
		break;
	default:
		return 0;
	}
	return 1u << k;
}

int
maro_stats_job_parse(const char *text, struct maro_stats_job *j)
{
	const char *p = text;
	unsigned have = 0;

	memset(j, 0, sizeof *j);
	j->total = j->eta = -1;
	while (*p) {
		size_t len = strcspn(p, " ");

		if (len)
			have |= job_word(p, len, j);
		p += len;
		p += *p == ' ';
	}
	/* start and done make a job */
	if ((have & 0x9) != 0x9) {
		memset(j, 0, sizeof *j);
		j->total = j->eta = -1;
		return 0;
	}
	return 1;
}
