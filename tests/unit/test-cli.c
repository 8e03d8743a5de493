#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "unit.h"

void
test_cli(void)
{
	int64_t us;
	char eb[8] = "xxxxxxx";

	/* errbuf messages are cut to fit, always terminated; NULL is fine */
	maro_errbuf_set(eb, sizeof eb, "cannot %s", "open it");
	CHECK(strcmp(eb, "cannot ") == 0);
	maro_errbuf_set(NULL, 0, "ignored %d", 1);
	{
		/* what a peer sent, as a diagnostic shows it: nothing a terminal acts on */
		char q[64];
		const char evil[] = "ERR \033[31mRED\033]0;t\a\r\n\x7f\x9b\xc2\x9b \xc3\xa9 \xe2\x82\xac a\\b\xff\xc3";

		CHECK(maro_cli_quote(q, sizeof q, evil, sizeof evil - 1) == strlen(q));
		CHECK(!strcmp(q, "ERR \\e[31mRED\\e]0;t\\a\\r\\n\\x7f\\x9b\\xc2\\x9b \xc3\xa9 \xe2\x82\xac a\\b\\xff\\xc3"));
		/* a NUL is a byte like another; overlong and surrogate forms are not UTF-8 */
		CHECK(maro_cli_quote(q, sizeof q, "a\0b\xc0\x9b\xed\xa0\x80", 8) == 26 &&
		    !strcmp(q, "a\\x00b\\xc0\\x9b\\xed\\xa0\\x80"));
		/* cut to fit, never in the middle of an escape or a character */
		CHECK(maro_cli_quote(q, 5, "ab\033cd", 5) == 4 && !strcmp(q, "ab\\e"));
		CHECK(maro_cli_quote(q, 4, "ab\033cd", 5) == 2 && !strcmp(q, "ab"));
		CHECK(maro_cli_quote(q, 4, "a\xe2\x82\xac", 4) == 1 && !strcmp(q, "a"));
		CHECK(maro_cli_quote(q, 0, "a", 1) == 0);
	}
	{
		/* the one exit rule: the worse of two, in maro(7)'s order, either way round */
		static const int order[] = { MARO_EXIT_OK, MARO_EXIT_TASKS_FAILED, MARO_EXIT_SOFTWARE,
		    MARO_EXIT_DATAERR, MARO_EXIT_INCOMPLETE, MARO_EXIT_UNAVAILABLE, MARO_EXIT_TIMEOUT,
		    MARO_EXIT_INTERRUPTED };
		size_t i, j, n = sizeof order / sizeof order[0], bad = 0;

		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++)
				bad += maro_status_worse(order[i], order[j]) != order[i > j ? i : j];
		CHECK(bad == 0);
		CHECK(maro_status_worse(MARO_EXIT_TERMINATED, MARO_EXIT_TIMEOUT) == MARO_EXIT_TERMINATED);
		CHECK(maro_status_worse(MARO_EXIT_HANGUP, MARO_EXIT_OK) == MARO_EXIT_HANGUP);
	}
	maro_errbuf_set(eb, 0, "untouched");
	CHECK(strcmp(eb, "cannot ") == 0);
	CHECK(maro_duration_parse("5", &us) == 0 && us == 5000000);
	CHECK(maro_duration_parse("1.5s", &us) == 0 && us == 1500000);
	CHECK(maro_duration_parse("250ms", &us) == 0 && us == 250000);
	CHECK(maro_duration_parse("2m", &us) == 0 && us == 120000000);
	CHECK(maro_duration_parse("1h", &us) == 0 && us == 3600000000LL);
	CHECK(maro_duration_parse("0.5ms", &us) == 0 && us == 500);
	CHECK(maro_duration_parse("", &us) < 0);
	CHECK(maro_duration_parse("-1", &us) < 0);
	CHECK(maro_duration_parse("1.", &us) < 0);
	CHECK(maro_duration_parse(".5", &us) < 0);
	CHECK(maro_duration_parse("5x", &us) < 0);
	CHECK(maro_duration_parse("1e3", &us) < 0);
	CHECK(maro_duration_parse("5 s", &us) < 0);
	/* rounded to the nearest microsecond, halves away from zero, as llround (lib/clock.c has no libm) */
	CHECK(maro_duration_parse("0.0000005", &us) == 0 && us == 1);
	CHECK(maro_duration_parse("0.0000004999", &us) == 0 && us == 0);
	CHECK(maro_duration_parse("0.0025ms", &us) == 0 && us == 3);
	CHECK(maro_duration_parse("9000000000000.0000015", &us) == 0 && us == 9000000000000000000LL);
	CHECK(maro_duration_parse("2600000000h", &us) < 0);
	{
		static const char *const unit[] = { "", "s", "ms", "m", "h" };
		static const double mult[] = { 1e6, 1e6, 1e3, 60e6, 3600e6 };
		uint64_t x = 88172645463325252ull;
		char s[64];
		int i, bad = 0;

		for (i = 0; i < 20000; i++) {
			unsigned k;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k = (unsigned)(x % 5);
			snprintf(s, sizeof s, "%u.%0*u%s", (unsigned)(x >> 40) % (i % 2 ? 1000 : 10000000),
			    1 + (int)((x >> 20) % 9), (unsigned)(x >> 8) % 1000000000, unit[k]);
			if (maro_duration_parse(s, &us) < 0 || us != llround(strtod(s, NULL) * mult[k]))
				bad++;
		}
		CHECK(bad == 0);
	}

	/* a poll timeout is never negative but for "none", and never past the deadline */
	maro_deadline = INT64_MAX;
	CHECK(maro_wait_ms(INT64_MAX) == -1);
	CHECK(maro_wait_ms(maro_now_us() - 150000) == 0);
	CHECK(maro_wait_ms(INT64_MIN) == 0);
	CHECK(maro_wait_ms(maro_now_us() + 1500000) >= 1499 && maro_wait_ms(maro_now_us() + 1500000) <= 1500);
	CHECK(maro_wait_ms(INT64_MAX - 1) == INT_MAX);
	maro_deadline = maro_now_us() + 1000000;
	CHECK(maro_wait_ms(INT64_MAX) >= 999 && maro_wait_ms(INT64_MAX) <= 1000);
	CHECK(maro_budget_us(2000000, 100000) <= 1000000);
	maro_deadline = maro_now_us() - 1;
	CHECK(maro_wait_ms(INT64_MAX) == 0);
	CHECK(maro_budget_us(2000000, 100000) == 100000);
	maro_deadline = INT64_MAX;
	CHECK(maro_budget_us(2000000, 100000) == 2000000);
}
