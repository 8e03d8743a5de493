#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "writer.h"

volatile sig_atomic_t *maro_io_interrupt;
const int64_t *maro_io_deadline;

int
maro_io_again(void)
{
	return errno == EINTR && !(maro_io_interrupt && *maro_io_interrupt);
}

void
maro_writer_init(struct maro_writer *w, int fd)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
	w->high = 64 * 1024;
}

void
maro_writer_free(struct maro_writer *w)
{
	maro_buf_free(&w->buf);
}

int
maro_writer_open(struct maro_writer *w, const char *path)
{
	maro_writer_init(w, open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
	return w->fd < 0 ? -1 : 0;
}

int
maro_writer_close(struct maro_writer *w)
{
	int rc = maro_writer_flush(w), keep = errno;

	if (close(w->fd) < 0 && rc == 0) {
		rc = -1;
		keep = errno;
	}
	maro_writer_free(w);
	w->fd = -1;
	errno = keep;
	return rc;
}

/*
 * With a deadline (maro_io_deadline), wait for room until then, and write
 * no more than a pipe or socket said it has room for (one page), so that
 * the write cannot block past it.  -1 with ETIMEDOUT when the time is up.
 */
static int
room_until_deadline(struct maro_writer *w, size_t *n)
{
	struct stat st;

	if (!maro_io_deadline || *maro_io_deadline == INT64_MAX)
		return 0;
	if (!w->kind)
		w->kind = fstat(w->fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) ? 2 : 1;
	if (w->kind != 2)
		return 0;	/* files and terminals: a write does not wait on a reader */
	for (;;) {
		struct timespec ts;
		struct pollfd p = { w->fd, POLLOUT, 0 };
		int64_t left;
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		left = *maro_io_deadline - ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		rc = poll(&p, 1, left / 1000 + 1 > INT_MAX ? INT_MAX : (int)(left / 1000 + 1));
		if (rc < 0 && !maro_io_again())
			return -1;
		if (rc > 0)
			break;
	}
	if (*n > 4096)
		*n = 4096;
	return 0;
}

/* One write of what can go now: -1 with EINTR after a signal (maro_io_interrupt). */
static ssize_t
out_write(struct maro_writer *w, const void *p, size_t n)
{
	ssize_t k;

	do {
		if (maro_io_interrupt && *maro_io_interrupt) {
			errno = EINTR;
			return -1;
		}
		if (room_until_deadline(w, &n) < 0)
			return -1;
		k = write(w->fd, p, n);
	} while (k < 0 && maro_io_again());
	return k;
}

int
maro_writer_flush(struct maro_writer *w)
{
	size_t off = 0;

	while (off < w->buf.len) {
		ssize_t n = out_write(w, w->buf.p + off, w->buf.len - off);

		if (n < 0) {
			/* keep what was not written, so a caller may retry */
			memmove(w->buf.p, w->buf.p + off, w->buf.len - off);
			w->buf.len -= off;
			return -1;
		}
		off += (size_t)n;
	}
	w->buf.len = 0;
	return 0;
}

int
maro_writer_put(struct maro_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	int e;

	if (n < w->high) {
		if (maro_buf_append(&w->buf, p, n) < 0)
			return -1;
		return w->buf.len >= w->high ? maro_writer_flush(w) : 0;
	}
	/* a big item is written from where it is, after what is buffered: no copy */
	if (maro_writer_flush(w) < 0)
		goto keep;
	while (n) {
		ssize_t k = out_write(w, b, n);

		if (k < 0)
			goto keep;
		b += k;
		n -= (size_t)k;
	}
	return 0;
keep:
	/* what was not written stays, as flush leaves it, for a caller that retries */
	e = errno;
	maro_buf_append(&w->buf, b, n);
	errno = e;
	return -1;
}
