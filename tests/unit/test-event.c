#include <stdio.h>
#include <string.h>

#include "event.h"
#include "unit.h"

static int
parse(struct maro_event *e, const char *s, int *col)
{
	char err[200];

	*col = 0;
	return maro_event_parse(e, s, col, err, sizeof err);
}

static struct maro_event_msg
msg(const char *source, const char *tag)
{
	struct maro_event_msg m = { maro_str_c(source), maro_str_c(tag) };
	return m;
}

static void
test_parse(void)
{
	struct maro_event e;
	int col;

	CHECK(parse(&e, "worker:update:10", &col) == 0 && e.nunits == 1 && e.units[0].amount == 10 &&
	    !e.units[0].percent && !strcmp(e.units[0].source, "worker") && !strcmp(e.units[0].tag, "update"));
	CHECK(parse(&e, "worker:update:60%", &col) == 0 && e.units[0].percent && e.units[0].amount == 60);
	CHECK(parse(&e, "*:*:1", &col) == 0 && e.units[0].source[0] == 0 && e.units[0].tag[0] == 0);
	/* AND binds tighter than OR */
	CHECK(parse(&e, "a:t:1 OR b:t:1 AND c:t:1", &col) == 0 &&
	    e.nodes[e.root].kind == MARO_EVENT_OR && e.nodes[e.root].nchild == 2 &&
	    e.nodes[e.nodes[e.root].child[1]].kind == MARO_EVENT_AND);
	CHECK(parse(&e, "(a:t:1 || b:t:1) && c:t:1", &col) == 0 && e.nodes[e.root].kind == MARO_EVENT_AND);
	CHECK(parse(&e, "(worker_01:update:2 AND worker_02:update:3) OR worker_03:update:1", &col) == 0 &&
	    e.nunits == 3 && e.nodes[e.root].kind == MARO_EVENT_OR);
	/* the seed's tuples */
	CHECK(parse(&e, "(\"worker_01:update:2\", \"worker_02:update:3\", \"AND\")", &col) == 0 &&
	    e.nodes[e.root].kind == MARO_EVENT_AND && e.nunits == 2);
	CHECK(parse(&e, "('worker_03:update:1', 'worker_04:update:5', 'OR')", &col) == 0 &&
	    e.nodes[e.root].kind == MARO_EVENT_OR);
	CHECK(parse(&e, "((\"worker_01:update:2\", \"worker_02:update:3\", \"AND\"), \"worker_03:update:1\", \"OR\")", &col) == 0 &&
	    e.nodes[e.root].kind == MARO_EVENT_OR && e.nunits == 3 &&
	    e.nodes[e.nodes[e.root].child[0]].kind == MARO_EVENT_AND);
	/* faults and their columns */
	CHECK(parse(&e, "worker:update", &col) < 0 && col == 14);
	CHECK(parse(&e, "worker:update:0", &col) < 0 && col == 15);
	CHECK(parse(&e, "worker:update:150%", &col) < 0);
	/* the limits maro-wait-event(1) gives: 1000000 messages, 100% */
	CHECK(parse(&e, "w:t:1000000", &col) == 0 && e.units[0].amount == 1000000);
	CHECK(parse(&e, "w:t:1000001", &col) < 0 && col == 11);
	CHECK(parse(&e, "w:t:100%", &col) == 0 && e.units[0].amount == 100 && e.units[0].percent);
	CHECK(parse(&e, "w:t:101%", &col) < 0 && col == 8);
	CHECK(parse(&e, "w:t:0%", &col) < 0);
	CHECK(parse(&e, "a:t:1 AND", &col) < 0 && col == 10);
	CHECK(parse(&e, "(a:t:1 OR b:t:1", &col) < 0 && col == 1);
	CHECK(parse(&e, "a:t:1 b:t:1", &col) < 0 && col == 7);
	CHECK(parse(&e, ":t:1", &col) < 0 && col == 1);
	/* the source ends at a character no name has: it must be the ':' */
	CHECK(parse(&e, "worker/update:1", &col) < 0 && col == 7);
	CHECK(parse(&e, "worker;t:1", &col) < 0 && col == 7);
	CHECK(parse(&e, "a:t:x", &col) < 0 && col == 5);
	CHECK(parse(&e, "(\"a:t:1\", \"AND\")", &col) < 0);
	CHECK(parse(&e, "(\"a:t:1\", \"b:t:1\")", &col) < 0);
	CHECK(parse(&e, "", &col) < 0 && col == 1);
	/* tabs and newlines are blanks too: an expression over several lines */
	CHECK(parse(&e, "a:t:1\tOR\n\tb:t:1 AND\nc:t:1", &col) == 0 && e.nunits == 3 &&
	    e.nodes[e.root].kind == MARO_EVENT_OR);
	CHECK(parse(&e, "(\"a:t:1\",\n \"b:t:1\",\t\"AND\")", &col) == 0 && e.nunits == 2);
	/* a fault inside a nested tuple is the whole expression's, at its column */
	CHECK(parse(&e, "(((\"a:b:1\", \"AND\")", &col) < 0 && col == 18);
	CHECK(parse(&e, "((\"a:b:1\", \"AND\")", &col) < 0 && col == 17);
	CHECK(parse(&e, "((\"a:b:1\", \"AND\"), \"c:d:1\", \"OR\")", &col) < 0 && col == 17);
	CHECK(parse(&e, "((\"a:b:1\", \"c:d:1\"), \"OR\", \"e:f:1\")", &col) < 0 && col == 19);
	CHECK(parse(&e, "(\"a:t:1\", \"AND\")", &col) < 0 && col == 16);
	CHECK(parse(&e, "a:b:1 OR OR c:d:1", &col) < 0 && col == 12);
}

static void
test_match(void)
{
	struct maro_event e;
	unsigned char take[8];
	unsigned have[4], need[4], live[4] = { 0 };
	struct maro_event_msg m[8];
	int col;

	/* seed example 1: 60% of 5 live workers is 3 */
	parse(&e, "worker:update:60%", &col);
	m[0] = msg("worker.1", "update");
	m[1] = msg("worker.2", "update");
	m[2] = msg("master", "update");
	m[3] = msg("worker.3", "other");
	m[4] = msg("worker.4", "update");
	live[0] = 5;
	CHECK(maro_event_match(&e, m, 2, live, take, have, need) == 0 && have[0] == 2 && need[0] == 3);
	CHECK(maro_event_match(&e, m, 5, live, take, have, need) == 1 &&
	    take[0] && take[1] && !take[2] && !take[3] && take[4]);
	/* a dead worker lowers the bar: 60% of 3 is 2 */
	live[0] = 3;
	CHECK(maro_event_match(&e, m, 2, live, take, NULL, NULL) == 1);
	/* no live peers yet: keep waiting */
	live[0] = 0;
	CHECK(maro_event_match(&e, m, 5, live, take, NULL, NULL) == 0);
	/* a percentage counts workers: worker.1's second update is not a second worker */
	live[0] = 2;
	m[0] = msg("worker.1", "update");
	m[1] = msg("worker.1", "update");
	m[2] = msg("worker.2", "update");
	m[3] = msg("worker.1", "update");
	CHECK(maro_event_match(&e, m, 2, live, take, have, need) == 0 && have[0] == 1 && need[0] == 2);
	/* the oldest of each worker is taken; the rest stay for the next trigger */
	CHECK(maro_event_match(&e, m, 4, live, take, have, need) == 1 && have[0] == 2 &&
	    take[0] && !take[1] && take[2] && !take[3]);
	/* beside another unit that took worker.1's oldest, its next one counts */
	parse(&e, "worker.1:update:1 AND worker:update:100%", &col);
	live[1] = 2;
	CHECK(maro_event_match(&e, m, 3, live, take, NULL, NULL) == 1 && take[0] && take[1] && take[2]);
	CHECK(maro_event_match(&e, m, 2, live, take, NULL, NULL) == 0);
	/* one-letter sources are two workers too: each byte compared */
	parse(&e, "*:update:100%", &col);
	m[0] = msg("a", "update");
	m[1] = msg("b", "update");
	live[0] = 2;
	CHECK(maro_event_match(&e, m, 2, live, take, have, need) == 1 && have[0] == 2 && take[0] && take[1]);
	m[1] = msg("a", "update");
	CHECK(maro_event_match(&e, m, 2, live, take, have, need) == 0 && have[0] == 1);
	m[0] = msg("worker.1", "update");
	m[1] = msg("worker.1", "update");
	/* a count is of messages, whoever sent them */
	parse(&e, "worker:update:2", &col);
	CHECK(maro_event_match(&e, m, 2, live, take, NULL, NULL) == 1 && take[0] && take[1]);
	/* rounded up, at least 1 */
	parse(&e, "worker:update:10%", &col);
	live[0] = 3;
	CHECK(maro_event_need(&e.units[0], 3) == 1 && maro_event_need(&e.units[0], 11) == 2);

	/* seed example 2: AND consumes for both parts */
	parse(&e, "(\"worker_01:update:2\", \"worker_02:update:3\", \"AND\")", &col);
	m[0] = msg("worker_01", "update");
	m[1] = msg("worker_02", "update");
	m[2] = msg("worker_01", "update");
	m[3] = msg("worker_02", "update");
	m[4] = msg("worker_02", "update");
	m[5] = msg("worker_01", "update");
	CHECK(maro_event_match(&e, m, 4, live, take, NULL, NULL) == 0);
	CHECK(maro_event_match(&e, m, 6, live, take, NULL, NULL) == 1 &&
	    take[0] && take[1] && take[2] && take[3] && take[4] && !take[5]);

	/* seed example 3: OR takes the first branch that holds, in order */
	parse(&e, "((\"worker_01:update:2\", \"worker_02:update:3\", \"AND\"), \"worker_03:update:1\", \"OR\")", &col);
	m[0] = msg("worker_03", "update");
	m[1] = msg("worker_01", "update");
	CHECK(maro_event_match(&e, m, 2, live, take, NULL, NULL) == 1 && take[0] && !take[1]);

	/* each message once, even when it matches several units */
	parse(&e, "worker:update:1 AND worker_01:update:1", &col);
	m[0] = msg("worker_01", "update");
	CHECK(maro_event_match(&e, m, 1, live, take, NULL, NULL) == 0);
	m[1] = msg("worker_01", "update");
	CHECK(maro_event_match(&e, m, 2, live, take, NULL, NULL) == 1 && take[0] && take[1]);

	/* prefix, not substring, matching */
	parse(&e, "worker:*:1", &col);
	m[0] = msg("coworker", "x");
	CHECK(maro_event_match(&e, m, 1, live, take, NULL, NULL) == 0);
}

/* nesting is bounded: deep input is an error at its column, not a stack overflow */
static void
test_nesting(void)
{
	static char s[300 * 2 + 16];
	struct maro_event e;
	int col, i, n = 0;

	for (i = 0; i < 256; i++)
		s[n++] = '(';
	n += sprintf(s + n, "a:t:1");
	for (i = 0; i < 256; i++)
		s[n++] = ')';
	s[n] = '\0';
	CHECK(parse(&e, s, &col) == 0 && e.nunits == 1);
	n = 0;
	for (i = 0; i < 257; i++)
		s[n++] = '(';
	n += sprintf(s + n, "a:t:1");
	for (i = 0; i < 257; i++)
		s[n++] = ')';
	s[n] = '\0';
	CHECK(parse(&e, s, &col) < 0 && col == 257);
}

void
test_event(void)
{
	test_nesting();
	test_parse();
	test_match();
}
