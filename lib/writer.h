/*
 * writer: buffered output to a descriptor (a tool's standard output, a job
 * log, a file of failed tasks), and the rule every read and write of a
 * tool's streams follows when a signal comes or -W runs out.
 *
 * The writer batches what it is given and writes it when told to flush
 * (or when its buffer is full); a big item goes out from where it is.
 */
#ifndef MARO_WRITER_H
#define MARO_WRITER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/*
 * When set (maro_cli_catch_signals points it at maro_signal) and nonzero,
 * a read or write that a signal interrupts (EINTR) is not tried again:
 * the call fails with EINTR, so that a tool blocked on a full pipe or an
 * idle input still leaves on SIGINT or SIGTERM.
 */
extern volatile sig_atomic_t *maro_io_interrupt;
/*
 * When set (maro_cli_catch_signals points it at maro_deadline) and not
 * INT64_MAX: a monotonic time in us after which a writer gives up waiting
 * for a pipe or socket to take more (-1, ETIMEDOUT), so that -W bounds a
 * tool whose output nobody reads.
 */
extern const int64_t *maro_io_deadline;

struct maro_writer {
	int fd;
	struct maro_buf buf;
	size_t high;		/* flush when buffered bytes reach this */
	int kind;		/* 0 not known yet, 1 a file or terminal, 2 a pipe or socket */
};

void maro_writer_init(struct maro_writer *w, int fd);
void maro_writer_free(struct maro_writer *w);
/* Buffers p; writes out when the buffer passes its mark.  0 or -1 with errno (EPIPE...). */
int maro_writer_put(struct maro_writer *w, const void *p, size_t n);
/* Writes out everything buffered.  0 or -1 with errno. */
int maro_writer_flush(struct maro_writer *w);
/*
 * A writer to the file at path, created or truncated (0666, less the
 * umask).  0, or -1 with errno, w->fd then -1.
 */
int maro_writer_open(struct maro_writer *w, const char *path);
/*
 * Writes out what w holds, closes its file and frees w (w->fd then -1).
 * 0, or -1 with the errno of what failed first.
 */
int maro_writer_close(struct maro_writer *w);

/* EINTR, and no signal to leave on (maro_io_interrupt): try the call again. */
int maro_io_again(void);

#endif
