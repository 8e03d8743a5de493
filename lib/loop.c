/* loop: the one event loop of the tools (loop.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "loop.h"
#include "tool.h"

void
maro_loop_init(struct maro_loop *l, struct maro_ctx *c, int64_t deadline, int beats)
{
	*l = (struct maro_loop){ .c = c, .deadline = deadline, .next_beat = INT64_MAX };
	l->now = maro_now_us();
	l->wake = deadline;
	if (beats)
		l->next_beat = maro_tool_next_beat(c, l->now);
}

void
maro_loop_free(struct maro_loop *l)
{
	free(l->items);
	l->items = NULL;
	l->n = l->cap = 0;
}

void
maro_loop_begin(struct maro_loop *l)
{
	l->n = 0;
	l->soon = 0;
	l->wake = l->deadline;
	l->now = maro_now_us();
}

/* Room for twice as many items. */
static void
grow(struct maro_loop *l)
{
	int cap = l->cap ? 2 * l->cap : 16;
	void *p = realloc(l->items, (size_t)cap * sizeof(struct maro_pollitem));

	if (!p)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	l->items = p;
	l->cap = cap;
}

/* A new item of the poll array, grown as it must be; its slot. */
static int
item(struct maro_loop *l, void *socket, int fd, int events)
{
	struct maro_pollitem *it;

	if (l->n == l->cap)
		grow(l);
	it = l->items + l->n;
	*it = (struct maro_pollitem){ socket, fd,
	    (short)((events & MARO_LOOP_IN ? MARO_POLLIN : 0) | (events & MARO_LOOP_OUT ? MARO_POLLOUT : 0)), 0 };
	return l->n++;
}

int
maro_loop_inbox(struct maro_loop *l, struct maro_inbox *ib)
{
	return item(l, maro_inbox_pollable(ib), 0, MARO_LOOP_IN);
}

int
maro_loop_fd(struct maro_loop *l, int fd, int events)
{
	return item(l, NULL, fd, events);
}

int
maro_loop_socket(struct maro_loop *l, void *handle, int events)
{
	return item(l, handle, 0, events);
}

void
maro_loop_outbox(struct maro_loop *l, struct maro_outbox *ob)
{
	int k;

	/* as many as it has: an outbox that filled the room may have more */
	for (;;) {
		if (l->n == l->cap)
			grow(l);
		k = maro_outbox_pollitems(ob, l->items + l->n, l->cap - l->n);
		if (k < l->cap - l->n)
			break;
		grow(l);
	}
	l->n += k;
	maro_loop_at(l, maro_outbox_deadline(ob));
}

void
maro_loop_at(struct maro_loop *l, int64_t when)
{
	if (when < l->wake)
		l->wake = when;
}

void
maro_loop_soon(struct maro_loop *l)
{
	l->soon = 1;
}

void
maro_loop_wait(struct maro_loop *l)
{
	int64_t wake = l->next_beat < l->wake ? l->next_beat : l->wake;
	long ms;
	int n = l->n, sfd = maro_cli_signal_fd();

	/* the signal's pipe last: the tool's slots stay as they were given */
	if (!l->last_words && sfd >= 0) {
		if (n == l->cap)
			grow(l);
		l->items[n++] = (struct maro_pollitem){ NULL, sfd, MARO_POLLIN, 0 };
	}
	/* the loop's own deadline, not maro_deadline: a run's last words may outlast -W */
	ms = l->soon || (maro_signal && !l->last_words) ? 0 : maro_ms_until(wake);
	if (maro_poll(l->c, l->items, n, ms) < 0 && errno != EINTR)
		maro_die(MARO_EXIT_SOFTWARE, "poll: %s", maro_transport_strerror(errno));
	/* a byte without a signal (never expected): read, or every wait would end at once */
	if (n > l->n && l->items[l->n].revents && !maro_signal) {
		char b[16];

		while (read(sfd, b, sizeof b) > 0)
			;
	}
	l->now = maro_now_us();
}

int
maro_loop_ready(const struct maro_loop *l, int slot)
{
	short r;

	if (slot < 0 || slot >= l->n)
		return 0;
	r = l->items[slot].revents;
	return (r & MARO_POLLIN ? MARO_LOOP_IN : 0) | (r & MARO_POLLOUT ? MARO_LOOP_OUT : 0) |
	    (r & MARO_POLLERR ? MARO_LOOP_ERR : 0);
}

int
maro_loop_signalled(const struct maro_loop *l)
{
	(void)l;
	return maro_signal ? maro_signal_status() : 0;
}

int64_t
maro_loop_tick(struct maro_loop *l)
{
	return l->now = maro_now_us();
}

int
maro_loop_expired(struct maro_loop *l)
{
	return maro_loop_tick(l) >= l->deadline;
}

int
maro_loop_stop(struct maro_loop *l)
{
	/* the rule of every tool's (maro_tool_stop), at the loop's deadline */
	maro_loop_tick(l);
	return maro_tool_stop(l->deadline);
}

void
maro_loop_until(struct maro_loop *l, int64_t until)
{
	l->deadline = until;
	l->next_beat = INT64_MAX;
	l->last_words = 1;
}

int
maro_loop_beat(struct maro_loop *l, struct maro_inbox *ib)
{
	if (l->next_beat == INT64_MAX)
		return 0;
	return maro_tool_beat(l->c, ib, l->now, &l->next_beat);
}
