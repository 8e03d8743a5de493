#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

void
maro_duration_text(char *out, size_t len, int64_t secs)
{
	long t = secs < 0 ? 0 : secs > 359999 ? 359999 : (long)secs;

	if (t < 60)
		snprintf(out, len, "%lds", t);
	else if (t < 3600)
		snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(out, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

int
maro_duration_parse(const char *s, int64_t *usec)
{
	const char *p = s;
	double v, mult;
	char *end;

	if (!s || !*s || !(*p >= '0' && *p <= '9'))
		goto bad;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			goto bad;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != p)
		goto bad;
	if (!strcmp(p, "") || !strcmp(p, "s"))
		mult = 1e6;
	else if (!strcmp(p, "ms"))
		mult = 1e3;
	else if (!strcmp(p, "m"))
		mult = 60e6;
	else if (!strcmp(p, "h"))
		mult = 3600e6;
	else
		goto bad;
	v *= mult;
	if (!isfinite(v) || v > 9.2e18)
		goto bad;
	/*
	 * llround(v) for v >= 0 without libm, which the tools then need not
	 * load (0.3 MiB resident, and its start): v - trunc(v) is exact here
	 */
	*usec = (int64_t)v;
	if (v - (double)*usec >= 0.5)
		++*usec;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int64_t
maro_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t maro_deadline = INT64_MAX;

long
maro_ms_until(int64_t wake)
{
	int64_t now, ms;

	if (wake == INT64_MAX)
		return -1;
	now = maro_now_us();
	if (wake <= now)
		return 0;
	/* rounded up: a poll that ends a little early would wake again for nothing */
	ms = (wake - now + 999) / 1000;
	return ms > INT_MAX ? INT_MAX : (long)ms;
}

long
maro_wait_ms(int64_t wake)
{
	return maro_ms_until(maro_deadline < wake ? maro_deadline : wake);
}

int64_t
maro_budget_us(int64_t cap, int64_t floor)
{
	int64_t left;

	/* a signal came: the run is over but for its last words */
	if (maro_signal)
		return floor < cap ? floor : cap;
	if (maro_deadline == INT64_MAX)
		return cap;
	left = maro_deadline - maro_now_us();
	if (left < cap)
		cap = left;
	return cap < floor ? floor : cap;
}

volatile sig_atomic_t maro_signal;
volatile sig_atomic_t maro_abort_fd = -1;
