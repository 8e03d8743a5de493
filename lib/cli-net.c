/*
 * The cli's words for what only the tools that talk to peers meet: the
 * registry's expectations, rejected peers, dropped frames and failed
 * connections.  Apart from cli.c so that a tool that never opens a
 * context (maro-msg, maro-keygen) links neither the transport nor libzmq.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "expect.h"
#include "inbox.h"
#include "outbox.h"
#include "message.h"
#include "registry.h"
#include "strset.h"
#include "transport.h"

int
maro_cli_no_group(struct maro_registry *r, char *buf, size_t len)
{
	char **g = NULL;
	size_t n = 0, i, off;
	int known = 0, absent = 0;

	if (maro_registry_groups(r, &g, &n) < 0) {
		if (errno != ENOENT)
			return -1;
		absent = 1;
	}
	for (i = 0; i < n; i++)
		known |= !strcmp(g[i], maro_registry_group(r));
	off = (size_t)snprintf(buf, len, "no group '%s' in %s (", maro_registry_group(r),
	    maro_registry_url(r));
	if (absent)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "no such directory");
	else if (!n)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "no groups");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s",
		    i ? ", " : "groups: ", g[i]);
	if (off < len)
		snprintf(buf + off, len - off, ")");
	for (i = 0; i < n; i++)
		free(g[i]);
	free(g);
	return !known;
}

int
maro_cli_expect_wait(struct maro_registry *r, struct maro_expect *e, size_t n, int64_t deadline)
{
	int tty = isatty(STDERR_FILENO), shown = 0, told = 0;
	int64_t tell = maro_now_us() + (maro_verbose ? 0 : 1000000);
	char note[512];
	size_t i;

	for (;;) {
		int64_t t0 = maro_now_us(), pause;
		int rc = maro_expect_check(r, e, n);

		/*
		 * a registry too slow to answer before the deadline (its
		 * timeout is what was left) is the deadline, not a failure
		 */
		if (rc < 0 && !(errno == ETIMEDOUT && maro_now_us() >= deadline)) {
			maro_warn("%s", maro_registry_error(r));
			return MARO_EXIT_UNAVAILABLE;
		}
		if (tty) {
			char line[512];
			size_t off = 0;

			for (i = 0; i < n && off < sizeof line - 64; i++)
				off += (size_t)snprintf(line + off, sizeof line - off, " %s %u/%u",
				    e[i].type, e[i].have, e[i].n);
			fprintf(stderr, "\r%s: waiting for peers:%s\033[K", maro_progname, line);
			shown = 1;
		}
		if (rc == 1)
			break;
		if (maro_signal)
			return maro_signal_status();
		if (!told && (maro_now_us() >= tell || maro_now_us() >= deadline)) {
			told = 1;
			if (maro_cli_no_group(r, note, sizeof note) == 1) {
				if (shown)
					fputc('\n', stderr);
				maro_warn("%s; waiting for it", note);
			}
		}
		if (maro_now_us() >= deadline) {
			if (shown)
				fputc('\n', stderr);
			if (maro_cli_no_group(r, note, sizeof note) == 1)
				maro_warn("%s", note);
			for (i = 0; i < n; i++)
				if (e[i].have < e[i].n)
					maro_warn("timed out waiting for peers: %s %u of %u live",
					    e[i].type, e[i].have, e[i].n);
			return MARO_EXIT_TIMEOUT;
		}
		/*
		 * the registry poll interval (100 ms, or 4 times what the look
		 * took: a thousand members are not read again and again while
		 * they join), or what is left of the run
		 */
		pause = (maro_now_us() - t0) * 4;
		usleep((useconds_t)maro_budget_us(pause > 100000 ? (pause < 2000000 ? pause : 2000000) : 100000, 0));
	}
	if (shown)
		fputc('\n', stderr);
	return 0;
}

void
maro_cli_report_rejected(struct maro_ctx *c)
{
	static unsigned long seen;
	char addr[64];
	unsigned long n = maro_ctx_rejected(c, addr, sizeof addr);

	if (n > seen)
		maro_warn("rejected %lu connection%s without the group key (last: %s); still serving",
		    n - seen, n - seen == 1 ? "" : "s", addr);
	seen = n;
}

int
maro_cli_report_outbox(struct maro_outbox *ob)
{
	static int said[4];
	char name[MARO_NAME_MAX + 1];
	int err = maro_outbox_error(ob, name), i;
	struct rlimit rl;

	if (!err)
		return 0;
	for (i = 0; i < 4 && said[i]; i++)
		if (said[i] == err)
			return err;
	if (i < 4)
		said[i] = err;
	if (err == EKEYREJECTED)
		maro_warn("'%s' refused our connection for want of the group key: %s", name,
		    maro_outbox_refusal(ob));
	else if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		maro_warn("cannot connect to '%s': out of file descriptors (the limit is %llu): "
		    "raise it (ulimit -n) or send to fewer peers; still trying", name,
		    (unsigned long long)rl.rlim_cur);
	else
		maro_warn("cannot connect to '%s': %s; still trying", name, strerror(err));
	return err;
}

void
maro_cli_report_malformed(struct maro_inbox *ib)
{
	static uint64_t seen;
	uint64_t n = maro_inbox_rejected(ib);

	if (n > seen)
		maro_warn("dropped %llu malformed or oversized frame%s or message%s, unacknowledged (see "
		    "LIMITS in maro(7))", (unsigned long long)(n - seen), n - seen == 1 ? "" : "s",
		    n - seen == 1 ? "" : "s");
	seen = n;
}

/* A peer's text for stderr: at most MARO_NAME_MAX bytes, control characters as '?'. */
static void
peer_text(char out[MARO_NAME_MAX + 1], struct maro_str s)
{
	size_t i, n = s.n < MARO_NAME_MAX ? s.n : MARO_NAME_MAX;

	for (i = 0; i < n; i++)
		out[i] = (unsigned char)s.p[i] < 0x20 || s.p[i] == 0x7f ? '?' : s.p[i];
	out[n] = '\0';
}

void
maro_cli_report_unmatched(const struct maro_msg *m, const char *what)
{
	static struct maro_strset said;
	char src[MARO_NAME_MAX + 1], tag[MARO_NAME_MAX + 1], key[2 * MARO_NAME_MAX + 2];
	size_t n;

	if (said.used >= 20)
		return;
	peer_text(src, m->source);
	peer_text(tag, m->tag);
	n = (size_t)snprintf(key, sizeof key, "%s%c%s", src, 0, tag);
	if (maro_strset_count(&said, key, n) || maro_strset_add(&said, key, n) < 0)
		return;
	maro_warn("message %s%s%s tagged '%s' matches %s; it stays unacknowledged%s",
	    src[0] ? "from '" : "with no source", src, src[0] ? "'" : "", tag, what,
	    said.used == 20 ? " (no more such messages are said)" : "");
}

void
maro_cli_leave(struct maro_ctx *c, int status)
{
	maro_ctx_abandon(c);
	maro_cli_exit_now(status);
}
