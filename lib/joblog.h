/*
 * joblog: the job log of maro-scatter (--joblog), and what a resumed run
 * (--resume) reads of it.  One line per task that ended, tab-separated,
 * under a header line (maro-scatter(1), JOB LOG):
 *
 *   seq  hash  worker  attempts  start  duration  outcome  payload
 *
 * seq is the task's place in the input (its line with -t, else its
 * message number, from 1); hash, 16 hex digits, is of what the task is
 * (tag, destination when it has its own, payload), so that a run can tell
 * whether its input is the one the log was written for; outcome is "done"
 * or "failed: WHY".
 */
#ifndef MARO_JOBLOG_H
#define MARO_JOBLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"
#include "writer.h"

#define MARO_JOBLOG_HEADER "seq\thash\tworker\tattempts\tstart\tduration\toutcome\tpayload\n"

struct maro_joblog_rec {
	uint64_t seq, hash;
	const char *worker;	/* who answered, or had the last attempt; NULL: none */
	size_t worker_n;
	unsigned attempts;	/* sends */
	int64_t start_us;	/* the first send, wall clock (us since the epoch) */
	int64_t duration_us;	/* from the first send to its end */
	const char *why;	/* NULL: done; else why it was given up */
	const uint8_t *payload;	/* its payload, CBOR, or NULL */
	size_t payload_n;
};

/*
 * Appends the record's line (and its newline) to out.  Tabs, newlines and
 * other control characters of the worker and payload are written as '?';
 * a payload longer than 200 bytes (in diagnostic notation) is cut, with
 * "...".  0, or -1 with ENOMEM.
 */
int maro_joblog_format(struct maro_buf *out, const struct maro_joblog_rec *r);

/* How many of the n bytes of UTF-8 at p to keep for at most max, no character cut. */
size_t maro_joblog_cut(const uint8_t *p, size_t n, size_t max);

/*
 * The hash of the task whose request (a message encoded here, n bytes) is
 * at req: of its tag, its payload and, with with_dest, its destination;
 * not of its ids, which are new in every run.  0 with *hash, or -1 with
 * err (not a message).
 */
int maro_joblog_hash(const uint8_t *req, size_t n, int with_dest, uint64_t *hash,
    struct maro_err *err);

/*
 * What a job log says of the tasks it has a record of, for a resumed run:
 * a table of the seqs it names, so that its size follows the lines read,
 * not the largest seq a line claims (a log of one line "100000000 ..."
 * is one entry, not a hundred million).
 */
struct maro_joblog {
	struct maro_joblog_task {
		uint64_t seq;	/* 0: a free slot */
		uint64_t hash;
		int state;	/* 1 ended without success, 2 done */
	} *v;			/* open addressing, cap a power of 2, n <= cap / 2 */
	size_t n, cap;
	uint64_t last;		/* the highest seq */
};

/*
 * Reads a job log from fd (from where it is to its end).  A file that is
 * empty is an empty log.  0 with *whole, the length of its whole lines (a
 * last line cut short, by a kill in the middle of a write, is not one: the
 * caller cuts it off before it appends); or -1 with errno EINVAL and err
 * (err->offset: the line, from 1) for what is not a job log, or with the
 * errno of a read, or ENOMEM.
 */
int maro_joblog_load(struct maro_joblog *log, int fd, off_t *whole, struct maro_err *err);

enum {
	MARO_JOBLOG_RUN = 0,	/* no record, or none that says done: run it */
	MARO_JOBLOG_DONE,	/* done in an earlier run: skip it */
	MARO_JOBLOG_OTHER,	/* the log has another task at that place */
};
/* What to do with task seq (from 1) of this hash. */
int maro_joblog_check(const struct maro_joblog *log, uint64_t seq, uint64_t hash);
/* The highest seq the log has a record of (0: none). */
uint64_t maro_joblog_last(const struct maro_joblog *log);
void maro_joblog_free(struct maro_joblog *log);

/* A job log open for records: buffered, written out by maro_writer_flush(&f->w). */
struct maro_joblog_file {
	int fd;			/* -1: none */
	struct maro_writer w;
	struct maro_joblog had;	/* with resume: what it had */
	struct maro_buf rec;	/* the caller's, to format a record in */
};
/*
 * Opens a job log at path and locks it (an exclusive record lock on the
 * whole file, fcntl F_SETLK, held until maro_joblog_close or the end of
 * the process), then: created or truncated, its header buffered; with
 * resume created if need be, read (maro_joblog_load, into f->had), a last
 * line cut short cut off, and added to.  0; or -1 with err->msg saying
 * what failed and errno EINVAL for a file that is not a job log (it is
 * left as it is; err->offset its line), EWOULDBLOCK when another process
 * holds its lock (the file is left as it is; err->msg names it, and that
 * process when the system says which), or the errno of the system call.
 */
int maro_joblog_open(struct maro_joblog_file *f, const char *path, int resume,
    struct maro_err *err);
/* Writes out what is buffered and closes f (if open), frees it: 0, or -1 with errno. */
int maro_joblog_close(struct maro_joblog_file *f);

#endif
