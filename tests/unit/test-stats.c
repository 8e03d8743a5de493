#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "stats.h"
#include "unit.h"

/* later than any call before (the registry's tests heartbeat too), in s */
static int64_t base_us;

/* The text of maro_stats as it is at base + now (s). */
static const char *
text(double now)
{
	static char buf[MARO_STATS_MAX + 1];

	maro_stats_text(buf, sizeof buf, base_us + (int64_t)(now * 1e6));
	return buf;
}

static void
test_text(void)
{
	char small[40];

	base_us = maro_now_us() + 1000000;
	memset(&maro_stats, 0, sizeof maro_stats);
	/* a beat: nothing came, no rates */
	CHECK(!strcmp(text(100), "in=0 out=0 bin=0 bout=0 done=0 failed=0 resent=0"));
	/* the next, 2 s later: the rates of what came in between */
	maro_stats.bytes_in = 1000;
	maro_stats.msgs_in = 30;
	maro_stats.msgs_out = 5;
	maro_stats.tasks_done = 3;
	maro_stats.tasks_failed = 1;
	maro_stats.resent = 2;
	CHECK(!strcmp(text(102), "in=30 out=5 bin=1000 bout=0 done=3 failed=1 resent=2 "
	    "rin=15.00 rout=2.50 rdone=1.50"));
	/* a call 100 ms later (a second name registered) keeps those rates */
	maro_stats.msgs_in = 31;
	CHECK(strstr(text(102.1), " rin=15.00 ") != NULL);
	/* idle: the rates vanish, and the text stays the same from beat to beat */
	CHECK(!strcmp(text(104), "in=31 out=5 bin=1000 bout=0 done=3 failed=1 resent=2 rin=0.50"));
	CHECK(!strcmp(text(106), "in=31 out=5 bin=1000 bout=0 done=3 failed=1 resent=2"));
	CHECK(!strcmp(text(108.7), "in=31 out=5 bin=1000 bout=0 done=3 failed=1 resent=2"));
	/* the gauges of the tools that keep them */
	maro_stats.has_flight = 1;
	maro_stats.tasks_inflight = 4;
	maro_stats.window_used = 4;
	maro_stats.window = 64;
	CHECK(!strcmp(text(110), "in=31 out=5 bin=1000 bout=0 done=3 failed=1 flight=4 resent=2 win=4/64"));
	/* a word that does not fit is left out whole */
	maro_stats_text(small, sizeof small, base_us + 111000000);
	CHECK(!strcmp(small, "in=31 out=5 bin=1000 bout=0 done=3"));
	maro_stats_text(small, 1, base_us + 111000000);
	CHECK(small[0] == '\0');
	/* the longest text fits in the registry's field */
	memset(&maro_stats, 0xff, sizeof maro_stats);
	maro_stats.has_flight = 1;
	CHECK(strlen(text(200)) <= MARO_STATS_MAX);
	memset(&maro_stats, 0, sizeof maro_stats);
}

static void
test_parse(void)
{
	struct maro_stats_view v;

	CHECK(maro_stats_parse("in=120 out=118 bin=10240 bout=9876 done=100 failed=2 flight=4 "
	    "resent=3 win=4/64 rin=12.0 rout=11.9 rdone=10", &v) == 13);
	CHECK(v.n[MARO_STATS_IN] == 120 && v.n[MARO_STATS_OUT] == 118);
	CHECK(v.n[MARO_STATS_BIN] == 10240 && v.n[MARO_STATS_BOUT] == 9876);
	CHECK(v.n[MARO_STATS_DONE] == 100 && v.n[MARO_STATS_FAILED] == 2);
	CHECK(v.n[MARO_STATS_FLIGHT] == 4 && v.n[MARO_STATS_RESENT] == 3);
	CHECK(v.n[MARO_STATS_WIN_USED] == 4 && v.n[MARO_STATS_WIN] == 64);
	CHECK(maro_stats_value(&v, MARO_STATS_RIN) == 12.0);
	CHECK(maro_stats_value(&v, MARO_STATS_ROUT) == 11.9);
	CHECK(maro_stats_value(&v, MARO_STATS_RDONE) == 10.0);
	CHECK(maro_stats_value(&v, MARO_STATS_DONE) == 100.0);
	/* unknown keys are ignored; what cannot be read is absent; the rest is read */
	CHECK(maro_stats_parse("up=12.5 in=7 zz=9 out=-1 done=1e3 failed=x flight= win=4 "
	    "resent=18446744073709551616 rin=nan rout=1.2.3 rdone=inf", &v) == 1);
	CHECK(v.have == 1u << MARO_STATS_IN && v.n[MARO_STATS_IN] == 7);
	CHECK(maro_stats_value(&v, MARO_STATS_OUT) == 0.0);
	CHECK(maro_stats_parse("win=/3 rin=.5 rout=5. in=18446744073709551615", &v) == 1);
	CHECK(v.n[MARO_STATS_IN] == UINT64_MAX);
	/* garbage: no key at all, never a failure */
	CHECK(maro_stats_parse("", &v) == 0 && v.have == 0);
	CHECK(maro_stats_parse("   ===  =in in= ?\xff\x01 in==3", &v) == 0 && v.have == 0);
	CHECK(maro_stats_parse("win_used=3", &v) == 0);
	/* spaces anywhere */
	CHECK(maro_stats_parse("  in=1   out=2 ", &v) == 2);
	CHECK(!strcmp(maro_stats_key_name(MARO_STATS_WIN_USED), "win_used"));
	CHECK(!strcmp(maro_stats_key_name(MARO_STATS_RDONE), "rdone"));
	/* what the text says, the reader reads */
	memset(&maro_stats, 0, sizeof maro_stats);
	maro_stats.msgs_in = 5;
	maro_stats.window = 8;
	maro_stats.window_used = 2;
	CHECK(maro_stats_parse(text(300), &v) == 9);
	CHECK(v.n[MARO_STATS_IN] == 5 && v.n[MARO_STATS_WIN] == 8 && v.n[MARO_STATS_WIN_USED] == 2);
	memset(&maro_stats, 0, sizeof maro_stats);
}

/* A job's text, and its reading (maro(7) REGISTRY, the job field). */
static void
test_job(void)
{
	struct maro_stats_job j = { 1795000000, -1, 1024, 500, 3, 1, 16, 98.456, -1 }, r;
	char buf[MARO_STATS_JOB_MAX + 1], small[40];

	/* the input not ended: no total, no time left */
	maro_stats_job_text(&j, buf, sizeof buf);
	CHECK(!strcmp(buf, "start=1795000000 total=- read=1024 done=500 failed=3 gaveup=1 open=16 "
	    "rate=98.46 eta=-"));
	CHECK(maro_stats_job_parse(buf, &r) == 1);
	CHECK(r.start == 1795000000 && r.total == -1 && r.read == 1024 && r.done == 500 &&
	    r.failed == 3 && r.gaveup == 1 && r.open == 16 && r.rate == 98.46 && r.eta == -1);
	j.total = 1024;
	j.eta = 6;
	maro_stats_job_text(&j, buf, sizeof buf);
	CHECK(strstr(buf, " total=1024 ") && !strcmp(strstr(buf, " eta="), " eta=6"));
	CHECK(maro_stats_job_parse(buf, &r) == 1 && r.total == 1024 && r.eta == 6);
	/* the largest figures fit the registry's field */
	memset(&j, 0xff, sizeof j);
	j.start = j.total = j.eta = INT64_MAX;
	j.rate = 1e300;
	maro_stats_job_text(&j, buf, sizeof buf);
	CHECK(strlen(buf) <= MARO_STATS_JOB_MAX && strstr(buf, " eta=9223372036854775807") != NULL);
	CHECK(maro_stats_job_parse(buf, &r) == 1 && r.open == UINT64_MAX && r.rate == 1e12);
	/* a word that does not fit is left out whole */
	j = (struct maro_stats_job){ 7, 3, 3, 1, 0, 0, 2, 0.5, 4 };
	maro_stats_job_text(&j, small, sizeof small);
	CHECK(!strcmp(small, "start=7 total=3 read=3 done=1 failed=0"));
	/* unknown keys ignored, what cannot be read absent; start and done make a job */
	CHECK(maro_stats_job_parse("up=1 start=5 done=2 total=x eta=-3 rate=-1 open=1.5 read=9 new=?",
	    &r) == 1);
	CHECK(r.start == 5 && r.done == 2 && r.total == -1 && r.eta == -1 && r.rate == 0 &&
	    r.open == 0 && r.read == 9);
	CHECK(maro_stats_job_parse("start=5 total=3", &r) == 0 && r.start == 0 && r.total == -1);
	CHECK(maro_stats_job_parse("done=5", &r) == 0 && r.done == 0);
	CHECK(maro_stats_job_parse("start=-1 done=1", &r) == 0);
	CHECK(maro_stats_job_parse("start=9223372036854775808 done=1", &r) == 0);
	CHECK(maro_stats_job_parse("", &r) == 0 && maro_stats_job_parse("  = == start= done=", &r) == 0);
	CHECK(maro_stats_job_parse("  start=1   done=0 ", &r) == 1);
}

void
test_stats(void)
{
	test_text();
	test_parse();
	test_job();
}
