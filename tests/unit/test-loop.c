/* lib/loop: the poll array grows, readiness per slot, wake-ups, -W, signals. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "loop.h"
#include "tool.h"
#include "tool-out.h"
#include "unit.h"

/* Waits one turn on what begin..add set up: how long it took, in ms. */
static int64_t
timed_wait(struct maro_loop *l)
{
	int64_t t0 = maro_now_us();

	maro_loop_wait(l);
	return (maro_now_us() - t0) / 1000;
}

static void
test_items(struct maro_loop *l)
{
	int p[40][2], slot[40], i, n = 0;

	for (i = 0; i < 40; i++)
		if (pipe(p[i]) == 0)
			n++;
	CHECK(n == 40);
	if (n != 40)
		return;
	/* 40 read ends, more than the first array holds: slots in order */
	maro_loop_begin(l);
	for (i = 0; i < 40; i++)
		slot[i] = maro_loop_fd(l, p[i][0], MARO_LOOP_IN);
	CHECK(slot[0] == 0 && slot[39] == 39 && l->n == 40 && l->cap >= 40);
	CHECK(write(p[37][1], "x", 1) == 1);
	maro_loop_at(l, maro_now_us() + 5000000);
	CHECK(timed_wait(l) < 1000);
	CHECK(maro_loop_ready(l, slot[37]) == MARO_LOOP_IN);
	CHECK(maro_loop_ready(l, slot[36]) == 0 && maro_loop_ready(l, slot[0]) == 0);
	CHECK(maro_loop_ready(l, 40) == 0 && maro_loop_ready(l, -1) == 0);
	/* the next turn starts empty: slot 0 again, and room to write */
	maro_loop_begin(l);
	CHECK(l->n == 0);
	CHECK(maro_loop_fd(l, p[3][1], MARO_LOOP_OUT) == 0);
	CHECK(timed_wait(l) < 1000);
	CHECK(maro_loop_ready(l, 0) == MARO_LOOP_OUT);
	/* a writer gone: the reader is told (end of file, or the hang-up) */
	close(p[5][1]);
	p[5][1] = -1;
	maro_loop_begin(l);
	maro_loop_fd(l, p[5][0], MARO_LOOP_IN);
	CHECK(timed_wait(l) < 1000);
	CHECK(maro_loop_ready(l, 0) != 0);
	for (i = 0; i < 40; i++) {
		close(p[i][0]);
		if (p[i][1] >= 0)
			close(p[i][1]);
	}
}

/*
 * A signal that comes after the tool's last look at maro_signal, before
 * its poll: a wait without end ends at once (it waited for ever).  After
 * maro_loop_until, the signal no longer ends the last words' waits.
 */
static void
test_late_signal(struct maro_ctx *c, int fd)
{
	struct maro_loop l;
	struct pollfd pfd;
	char b[16];
	int64_t ms;

	maro_cli_catch_signals();
	CHECK(maro_cli_signal_fd() >= 0);
	maro_loop_init(&l, c, INT64_MAX, 0);
	maro_loop_begin(&l);
	CHECK(maro_loop_fd(&l, fd, MARO_LOOP_IN) == 0);
	alarm(5);	/* were the wait without end, the unit tests die of SIGALRM */
	raise(SIGTERM);
	pfd = (struct pollfd){ maro_cli_signal_fd(), POLLIN, 0 };
	CHECK(poll(&pfd, 1, 0) == 1);	/* the self-pipe says it, whatever the poll's timeout */
	ms = timed_wait(&l);
	CHECK(ms < 1000 && maro_loop_stop(&l) == 143);
	CHECK(maro_loop_ready(&l, 0) == 0 && l.n == 1);	/* the tool's slots as they were */
	maro_loop_until(&l, maro_now_us() + 60000);
	maro_loop_begin(&l);
	ms = timed_wait(&l);
	CHECK(ms >= 55 && ms < 1000);
	alarm(0);
	maro_signal = 0;
	signal(SIGTERM, SIG_DFL);
	while (read(maro_cli_signal_fd(), b, sizeof b) > 0)
		;
	maro_loop_free(&l);
}

static void
test_wakes(struct maro_ctx *c)
{
	struct maro_loop l;
	int64_t ms;
	int p[2];

	if (pipe(p) < 0) {
		CHECK(!"pipe");
		return;
	}
	/* a timer of the tool's: it wakes then, with nothing ready */
	maro_loop_init(&l, c, INT64_MAX, 0);
	maro_loop_begin(&l);
	maro_loop_fd(&l, p[0], MARO_LOOP_IN);
	maro_loop_at(&l, l.now + 60000);
	maro_loop_at(&l, l.now + 9000000);	/* a later one changes nothing */
	ms = timed_wait(&l);
	CHECK(ms >= 55 && ms < 1000);
	CHECK(maro_loop_ready(&l, 0) == 0 && maro_loop_stop(&l) == 0);
	/* soon: work is left, no waiting */
	maro_loop_begin(&l);
	maro_loop_fd(&l, p[0], MARO_LOOP_IN);
	maro_loop_at(&l, l.now + 9000000);
	maro_loop_soon(&l);
	CHECK(timed_wait(&l) < 50);
	maro_loop_begin(&l);
	CHECK(l.soon == 0);	/* one turn only */
	maro_loop_free(&l);

	/* -W bounds every wait, a later timer's too: 124 then */
	maro_loop_init(&l, c, maro_now_us() + 60000, 0);
	maro_loop_begin(&l);
	maro_loop_fd(&l, p[0], MARO_LOOP_IN);
	maro_loop_at(&l, l.now + 9000000);
	CHECK(maro_loop_stop(&l) == 0 && !maro_loop_expired(&l));
	ms = timed_wait(&l);
	CHECK(ms >= 55 && ms < 1000);
	CHECK(maro_loop_expired(&l) && maro_loop_stop(&l) == MARO_EXIT_TIMEOUT);
	maro_loop_free(&l);

	/* a loop that beats wakes for its heartbeat; after until, only for until */
	maro_loop_init(&l, c, INT64_MAX, 1);
	CHECK(l.next_beat > l.now && l.next_beat < INT64_MAX);
	maro_loop_until(&l, maro_now_us() + 60000);
	CHECK(l.next_beat == INT64_MAX);
	maro_loop_begin(&l);
	ms = timed_wait(&l);
	CHECK(ms >= 55 && ms < 1000);
	CHECK(maro_loop_stop(&l) == MARO_EXIT_TIMEOUT);
	/* a signal comes first, whatever the deadline says */
	maro_signal = SIGTERM;
	CHECK(maro_loop_signalled(&l) == 143 && maro_loop_stop(&l) == 143);
	maro_signal = SIGINT;
	CHECK(maro_loop_signalled(&l) == 130);
	maro_signal = 0;
	CHECK(maro_loop_signalled(&l) == 0);
	maro_loop_free(&l);
	test_late_signal(c, p[0]);
	close(p[0]);
	close(p[1]);
}

/*
 * After a signal, output is not written (maro_io_interrupt), and that is
 * not an output error: flush says 0, so that the tool leaves by its loop's
 * stop and says what the run did, not by the failed write.  Without the
 * signal the same bytes go out.
 */
static void
test_out_after_signal(void)
{
	struct maro_tool_out o;
	volatile sig_atomic_t *was = maro_io_interrupt;
	char got[8] = "";
	int p[2];

	if (pipe2(p, O_NONBLOCK) < 0) {
		CHECK(!"pipe");
		return;
	}
	maro_tool_out_init(&o, MARO_FORMAT_CBOR);
	o.w.fd = p[1];
	maro_io_interrupt = &maro_signal;
	maro_signal = SIGINT;
	maro_tool_out_put(&o, (const uint8_t *)"\x01\x02", 2);
	CHECK(maro_tool_out_flush(&o) == 0 && o.error == 0 && o.w.buf.len == 2);
	maro_signal = 0;
	CHECK(maro_tool_out_flush(&o) == 0 && read(p[0], got, sizeof got) == 2 && got[1] == 2);
	maro_io_interrupt = was;
	maro_tool_out_free(&o);
	close(p[0]);
	close(p[1]);
}

void
test_loop(void)
{
	test_out_after_signal();
	char dir[64];
	struct maro_ctx *c = unit_ctx_open("loop", dir, sizeof dir, NULL);
	struct maro_loop l;

	if (!c)
		return;
	maro_loop_init(&l, c, INT64_MAX, 0);
	test_items(&l);
	maro_loop_free(&l);
	CHECK(l.items == NULL && l.cap == 0);
	test_wakes(c);
	unit_ctx_close(c, dir);
}
