/*
 * cli: the command-line front end every tool shares.
 *
 * This is the one module of the library that writes to stderr and exits:
 * it exists so that the tools word their diagnostics, parse their shared
 * flags and pick their exit codes in one way (maro(7), EXIT STATUS).
 */
#ifndef MARO_CLI_H
#define MARO_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#include "clock.h"
#include "format.h"

/* Exit status, for every tool. */
enum {
	MARO_EXIT_OK = 0,
	MARO_EXIT_INCOMPLETE = 1,
	MARO_EXIT_USAGE = 2,
	MARO_EXIT_TASKS_FAILED = 3,	/* maro-scatter: some tasks given up (--retries) */
	MARO_EXIT_DATAERR = 65,
	MARO_EXIT_UNAVAILABLE = 69,
	MARO_EXIT_SOFTWARE = 70,
	MARO_EXIT_TIMEOUT = 124,
	MARO_EXIT_HANGUP = 129,
	MARO_EXIT_INTERRUPTED = 130,
	MARO_EXIT_TERMINATED = 143,
};

extern const char *maro_progname;

/*
 * Sets the program name from argv[0], ignores SIGPIPE (EPIPE ends tools
 * quietly), and holds /dev/null on each of descriptors 0, 1 and 2 that
 * was closed, opened so that it reads and writes as a closed one (EBADF):
 * no file the tool opens takes a standard stream's place.
 */
void maro_cli_init(const char *argv0);
noreturn void maro_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void maro_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * What a diagnostic may show of bytes it did not write itself (a peer's
 * error text, a host name a Sentinel gave, a bundle's path name, a
 * registry entry): s[0..n) into out (size bytes, always terminated) with
 * every byte a terminal would act on written as C writes it (\e, \n,
 * \t, ... \xNN): the C0 controls, DEL, the C1 controls (also as UTF-8)
 * and bytes that are not UTF-8.  Printable UTF-8 and the backslash stay as
 * they are.  An escape is never cut in two.  Returns the length written.
 * maro_die, maro_warn, maro_info and maro_usage_error pass their whole
 * line through it, so that no diagnostic can move the cursor, set a
 * title or fake a line of its own.
 */
size_t maro_cli_quote(char *out, size_t size, const char *s, size_t n);
/* realloc, or die with 70 "out of memory": so that callers read straight. */
void *maro_xrealloc(void *p, size_t n);
/* Only with -v. */
void maro_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int maro_verbose;
/* "maro-x: unknown option ...; try 'maro-x --help'" and exit 2. */
noreturn void maro_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "NAME VERSION" and the library versions to stdout. */
void maro_print_version(void);

/* Like maro_duration_parse, but a bad value is a usage error naming the flag. */
int64_t maro_cli_duration(const char *flag, const char *arg);
/* A non-negative integer for a flag, or a usage error. */
uint64_t maro_cli_count(const char *flag, const char *arg);
enum maro_format maro_cli_format(const char *arg);

/*
 * SIGINT, SIGTERM and SIGHUP set maro_signal (clock.h; handlers installed
 * without SA_RESTART, so a blocking call returns EINTR and the tool can
 * leave the registry cleanly); maro_signal_status() is then 130, 143 or
 * 129.  However the tool then leaves (return from main, exit,
 * maro_cli_exit_now), it flushes its streams and dies of that signal, its
 * default action restored: the shell sees 130/143/129 and stops its script.
 */
void maro_cli_catch_signals(void);
int maro_signal_status(void);
/*
 * The one rule for a tool's exit status when several apply: the worse of
 * a and b, in this order from the worst: a signal's (129, 130, 143) and
 * the usage error (and any status not named here), 124, 69, 1, 65, 70,
 * 3, 0.  A tool starts from its loop's status and makes it worse with
 * each failure it counted (maro(7), EXIT STATUS).
 */
int maro_status_worse(int a, int b);
/*
 * A descriptor that is readable once one of those signals came (a
 * self-pipe, so that a signal between a look at maro_signal and a poll
 * ends the poll), or -1 (none, or the signals not caught).
 */
int maro_cli_signal_fd(void);

/*
 * Waits until every expectation holds (expect.h), polling the registry;
 * progress on stderr when it is a terminal.  Returns 0, or the exit status
 * to leave with: 124 at the deadline (what is missing said on stderr), 69
 * when the registry fails, 130/143 on a signal.  deadline: monotonic us or
 * INT64_MAX.  A group that does not exist yet is waited for (it is never
 * made), and said once after a second (at once with -v) and at the end.
 */
struct maro_expect;
struct maro_registry;
int maro_cli_expect_wait(struct maro_registry *r, struct maro_expect *e, size_t n,
    int64_t deadline);
/*
 * Whether r's group is unknown to its registry (none of its groups has the
 * name): 1 with "no group 'G' in URL (groups: ...)" in buf, 0 when it is
 * known, -1 when the registry cannot say.
 */
int maro_cli_no_group(struct maro_registry *r, char *buf, size_t len);

/*
 * Flushes stdout and checks it, sbase's fshut: a full disk or closed pipe
 * shows in the exit status (EPIPE exits quietly with the given status).
 */
int maro_cli_close_stdout(int status);
/*
 * exit(status) by _exit(2) once stdout is flushed (maro_cli_close_stdout),
 * or death by the signal that came (maro_cli_catch_signals):
 * for a tool whose ZeroMQ context was left to the exit (maro_ctx_abandon),
 * whose threads must not meet exit's destructors.
 */
noreturn void maro_cli_exit_now(int status);
/* maro_ctx_abandon(c), then maro_cli_exit_now(status) (cli-net.c) */
struct maro_ctx;
noreturn void maro_cli_leave(struct maro_ctx *c, int status);
/*
 * Writing standard output failed with err (a stream writer's errno): says
 * so (not for EPIPE, nor after a signal) and returns the status to leave
 * with: 130/143 after a signal, 124 at -W (ETIMEDOUT), else 70.
 */
int maro_cli_output_failed(int err);

/*
 * Warns once about peers rejected for want of the group key since the last
 * call (transport.h, maro_ctx_rejected): how many, and the last address.
 * Inbox tools call it about once a second.
 */
struct maro_ctx;
void maro_cli_report_rejected(struct maro_ctx *c);
/*
 * Warns about the frames and messages an inbox dropped as malformed since
 * the last call (inbox.h, maro_inbox_rejected).  Inbox tools call it about
 * once a second and once before they close the inbox.
 */
struct maro_inbox;
void maro_cli_report_malformed(struct maro_inbox *ib);
/*
 * Warns, once for each source and tag (the first 20 of them), that a
 * message matches no unit of what waits for messages (what: "no
 * handler's event"): it is held, unacknowledged, and stays its sender's.
 * Control characters of the peer's bytes are printed as '?'.
 */
struct maro_msg;
void maro_cli_report_unmatched(const struct maro_msg *m, const char *what);
/*
 * Warns once for each kind of failure (errno) to connect to a destination
 * (maro_outbox_error): out of descriptors says the limit and how to raise
 * it; a peer that refused the connection for want of the group key
 * (EKEYREJECTED) is named with how.  Tools with an outbox call it at every
 * turn of their loop.  Returns the errno seen at this call, or 0.
 */
struct maro_outbox;
int maro_cli_report_outbox(struct maro_outbox *ob);

#endif
