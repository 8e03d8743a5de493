#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cbor.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <zmq.h>

#include "cli.h"
#include "trace.h"

const char *maro_progname = "maro";
int maro_verbose;

/* What the library says it does (trace.h): on stderr under -v. */
static void
say_trace(const char *line)
{
	maro_info("%s", line);
}

void
maro_cli_init(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	if (argv0)
		maro_progname = slash ? slash + 1 : argv0;
	signal(SIGPIPE, SIG_IGN);
	maro_trace_hook = say_trace;
}

static void
vsay(const char *fmt, va_list ap)
{
	char line[2048];
	int n;

	n = snprintf(line, sizeof line, "%s: ", maro_progname);
	vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	strcat(line, "\n");
	/* one write, so lines of concurrent tools do not interleave */
	if (write(STDERR_FILENO, line, strlen(line)) < 0)
		return;
}

void
maro_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(status);
}

void *
maro_xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p && n)
		maro_die(MARO_EXIT_SOFTWARE, "out of memory");
	return p;
}

void
maro_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void
maro_info(const char *fmt, ...)
{
	va_list ap;

	if (!maro_verbose)
		return;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void
maro_usage_error(const char *fmt, ...)
{
	va_list ap;
	char line[1024];

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	maro_die(MARO_EXIT_USAGE, "%s; try '%s --help'", line, maro_progname);
}

/*
 * The versions of the headers built against, libzmq's as hiredis's and
 * libcbor's: a call to zmq_version would link libzmq into the tools that
 * never use it (maro-msg, maro-keygen), and the tools that do carry the
 * library itself (GNUmakefile, LINK).
 */
void
maro_print_version(void)
{
	printf("%s %s (libzmq %d.%d.%d, hiredis %d.%d.%d, libcbor %d.%d.%d, jansson %s)\n",
	    maro_progname, MARO_VERSION, ZMQ_VERSION_MAJOR, ZMQ_VERSION_MINOR, ZMQ_VERSION_PATCH,
	    HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
	    CBOR_MAJOR_VERSION, CBOR_MINOR_VERSION, CBOR_PATCH_VERSION,
	    jansson_version_str());
}

int64_t
maro_cli_duration(const char *flag, const char *arg)
{
	int64_t us;

	if (maro_duration_parse(arg, &us) < 0)
		maro_usage_error("invalid duration '%s' for %s (use N[.N][ms|s|m|h])", arg, flag);
	return us;
}

uint64_t
maro_cli_count(const char *flag, const char *arg)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!arg || !(*arg >= '0' && *arg <= '9'))
		maro_usage_error("invalid number '%s' for %s", arg ? arg : "", flag);
	v = strtoull(arg, &end, 10);
	if (errno || *end)
		maro_usage_error("invalid number '%s' for %s", arg, flag);
	return v;
}

enum maro_format
maro_cli_format(const char *arg)
{
	if (!strcmp(arg, "cbor"))
		return MARO_FORMAT_CBOR;
	if (!strcmp(arg, "json"))
		return MARO_FORMAT_JSON;
	if (!strcmp(arg, "diag"))
		return MARO_FORMAT_DIAG;
	if (!strcmp(arg, "payload"))
		return MARO_FORMAT_PAYLOAD;
	maro_usage_error("unknown format '%s' (cbor, json, diag or payload)", arg);
}

int
maro_cli_output_failed(int err)
{
	int status = MARO_EXIT_SOFTWARE;

	/* a signal ends a blocked write: leave as for the signal */
	if (err == EINTR && maro_signal)
		status = maro_signal_status();
	else if (err == ETIMEDOUT)
		status = MARO_EXIT_TIMEOUT;	/* -W came while standard output took nothing */
	if (err == ETIMEDOUT)
		maro_warn("timed out writing standard output");
	else if (err != EPIPE && status == MARO_EXIT_SOFTWARE)
		maro_warn("error writing standard output: %s", strerror(err));
	return status;
}

int
maro_cli_close_stdout(int status)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		if (errno == EPIPE)
			return status;
		maro_warn("error writing standard output: %s", strerror(errno));
		return status ? status : MARO_EXIT_SOFTWARE;
	}
	return status;
}

/*
 * A tool that caught SIGINT, SIGTERM or SIGHUP and cleaned up dies of it,
 * so that the shell that runs it sees a child killed by the signal and
 * stops its script too (sh and bash go on after a child that exited 130:
 * they take it that the child handled the signal).  Every output stream is
 * flushed first: nothing runs after the signal.
 */
static void
die_of_signal(void)
{
	int sig = maro_signal;
	sigset_t set;

	if (!sig)
		return;
	fflush(NULL);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

void
maro_cli_exit_now(int status)
{
	status = maro_cli_close_stdout(status);
	die_of_signal();
	_exit(status);
}

static void
on_signal(int sig)
{
	int err = errno;

	maro_signal = sig;
	/* a blocked request to the registry ends now, not at its timeout */
	if (maro_abort_fd >= 0)
		shutdown(maro_abort_fd, SHUT_RDWR);
	errno = err;
}

void
maro_cli_catch_signals(void)
{
	static int hooked;
	struct sigaction sa;

	/* every way out of a tool, return from main and exit() alike */
	if (!hooked++)
		atexit(die_of_signal);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a blocked read or write of a stream gives up on them */
	maro_io_interrupt = &maro_signal;
	maro_io_deadline = &maro_deadline;
}

int
maro_signal_status(void)
{
	if (maro_signal == SIGHUP)
		return MARO_EXIT_HANGUP;
	return maro_signal == SIGTERM ? MARO_EXIT_TERMINATED : MARO_EXIT_INTERRUPTED;
}
