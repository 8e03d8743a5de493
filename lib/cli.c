#include <errno.h>
#include <fcntl.h>
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
#include "writer.h"

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
	int fd;

	/*
	 * A standard stream closed by whoever started us would be the next
	 * file opened (a job log, a bundle, a socket), and our messages or our
	 * output would go into it.  Each closed one gets /dev/null, opened the
	 * other way round (standard input for writing, the others for
	 * reading): the tool still meets a closed stream's EBADF.
	 */
	for (fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY) != fd)
			_exit(MARO_EXIT_SOFTWARE);
	if (argv0)
		maro_progname = slash ? slash + 1 : argv0;
	signal(SIGPIPE, SIG_IGN);
	maro_trace_hook = say_trace;
}

/* How many bytes of the UTF-8 character at p[0..n) (1..4), or 0: not one, or a C1 control. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2, k;
	unsigned char lo = 0x80, hi = 0xbf;

	if (p[0] < 0x80)
		return 1;
	if (p[0] < 0xc2 || p[0] > 0xf4 || n < len)
		return 0;
	/* the second byte's range rules out overlong forms, surrogates and > U+10FFFF */
	if (p[0] == 0xc2)
		lo = 0xa0;	/* U+0080..U+009F: the C1 controls */
	else if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (k = 2; k < len; k++)
		if ((p[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

size_t
maro_cli_quote(char *out, size_t size, const char *s, size_t n)
{
	static const char named[] = "\aa\bb\tt\nn\vv\ff\rr\033e";
	const unsigned char *p = (const unsigned char *)s;
	size_t at = 0, i = 0, len;
	char esc[5];
	const char *c;

	if (!size)
		return 0;
	while (i < n) {
		len = utf8_len(p + i, n - i);
		if (len == 1 && (p[i] < 0x20 || p[i] == 0x7f)) {
			if (p[i] && (c = strchr(named, p[i])) && (c - named) % 2 == 0)
				snprintf(esc, sizeof esc, "\\%c", c[1]);
			else
				snprintf(esc, sizeof esc, "\\x%02x", p[i]);
		} else if (!len) {
			snprintf(esc, sizeof esc, "\\x%02x", p[i]);
			len = 1;
		} else {
			if (at + len >= size)
				break;
			memcpy(out + at, p + i, len);
			at += len;
			i += len;
			continue;
		}
		if (at + strlen(esc) >= size)
			break;
		memcpy(out + at, esc, strlen(esc));
		at += strlen(esc);
		i += 1;
	}
	out[at] = '\0';
	return at;
}

static void
vsay(const char *fmt, va_list ap)
{
	char text[2048], line[4096];
	size_t n;

	vsnprintf(text, sizeof text, fmt, ap);
	n = (size_t)snprintf(line, sizeof line, "%s: ", maro_progname);
	if (n > sizeof line - 2)
		n = sizeof line - 2;
	n += maro_cli_quote(line + n, sizeof line - n - 1, text, strlen(text));
	line[n++] = '\n';
	/* one write, so lines of concurrent tools do not interleave */
	if (write(STDERR_FILENO, line, n) < 0)
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

/* The self-pipe: its read end is readable once a signal came (-1, -1: none). */
static int signal_pipe[2] = { -1, -1 };
static pid_t signal_pipe_pid;	/* the process that made it: a child before its exec writes nothing */

static void
on_signal(int sig)
{
	int err = errno;

	maro_signal = sig;
	/* a blocked request to the registry ends now, not at its timeout */
	if (maro_abort_fd >= 0)
		shutdown(maro_abort_fd, SHUT_RDWR);
	/* a poll about to start, after its caller looked at maro_signal, ends at once */
	if (signal_pipe[1] >= 0 && getpid() == signal_pipe_pid && write(signal_pipe[1], "", 1) < 0) {
		/* full: a byte is there already */
	}
	errno = err;
}

int
maro_cli_signal_fd(void)
{
	return signal_pipe[0];
}

void
maro_cli_catch_signals(void)
{
	static int hooked;
	struct sigaction sa;

	/* every way out of a tool, return from main and exit() alike */
	if (!hooked++) {
		atexit(die_of_signal);
		/* without one, a signal between a look and a poll waits for the poll's end */
		if (pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
			signal_pipe[0] = signal_pipe[1] = -1;
		signal_pipe_pid = getpid();
	}
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

/* How bad a status is (maro_status_worse): the higher the worse. */
static int
status_rank(int s)
{
	switch (s) {
	case MARO_EXIT_OK:		return 0;
	case MARO_EXIT_TASKS_FAILED:	return 1;
	case MARO_EXIT_SOFTWARE:	return 2;
	case MARO_EXIT_DATAERR:		return 3;
	case MARO_EXIT_INCOMPLETE:	return 4;
	case MARO_EXIT_UNAVAILABLE:	return 5;
	case MARO_EXIT_TIMEOUT:		return 6;
	default:			return 7;	/* a signal's, the usage error */
	}
}

int
maro_status_worse(int a, int b)
{
	return status_rank(b) > status_rank(a) ? b : a;
}

int
maro_signal_status(void)
{
	if (maro_signal == SIGHUP)
		return MARO_EXIT_HANGUP;
	return maro_signal == SIGTERM ? MARO_EXIT_TERMINATED : MARO_EXIT_INTERRUPTED;
}
