#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "convert.h"
#include "joblog.h"
#include "message.h"

#define PAYLOAD_MAX 200

size_t
maro_joblog_cut(const uint8_t *p, size_t n, size_t max)
{
	if (n <= max)
		return n;
	/* not in the middle of a character: back to the start of the one at max */
	while (max > 0 && (p[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* s (n bytes) with each control character (a tab, a newline) as '?': one field stays one. */
static int
put_field(struct maro_buf *out, const char *s, size_t n)
{
	size_t k, at = out->len;

	if (maro_buf_append(out, s, n) < 0)
		return -1;
	for (k = at; k < out->len; k++)
		if (out->p[k] < 0x20 || out->p[k] == 0x7f)
			out->p[k] = '?';
	return 0;
}

int
maro_joblog_format(struct maro_buf *out, const struct maro_joblog_rec *r)
{
	struct maro_buf diag = { 0 };
	struct maro_err err;
	int64_t s = r->start_us, d = r->duration_us < 0 ? 0 : r->duration_us;
	size_t len = out->len;
	int rc = -1;

	if (maro_buf_printf(out, "%" PRIu64 "\t%016" PRIx64 "\t", r->seq, r->hash) < 0 ||
	    (r->worker ? put_field(out, r->worker, r->worker_n) : maro_buf_puts(out, "-")) < 0 ||
	    maro_buf_printf(out, "\t%u\t%lld.%03lld\t%lld.%03lld\t%s%s\t", r->attempts,
	    (long long)(s / 1000000), (long long)(s % 1000000 / 1000), (long long)(d / 1000000),
	    (long long)(d % 1000000 / 1000), r->why ? "failed: " : "done", r->why ? r->why : "") < 0)
		goto out;
	if (!r->payload || maro_cbor_to_diag(r->payload, r->payload_n, &diag, &err) < 0)
		rc = maro_buf_puts(out, "-");
	else if ((rc = put_field(out, (const char *)diag.p, maro_joblog_cut(diag.p, diag.len,
	    PAYLOAD_MAX))) == 0 && diag.len > PAYLOAD_MAX)
		rc = maro_buf_puts(out, "...");
	if (rc == 0)
		rc = maro_buf_puts(out, "\n");
out:
	if (rc < 0)
		out->len = len;
	maro_buf_free(&diag);
	return rc;
}

/* A part of the task, with its length first: "ab" + "c" is not "a" + "bc". */
static void
hash_part(crypto_generichash_state *st, const void *p, size_t n, int present)
{
	uint8_t len[9];
	uint64_t v = n;
	int k;

	len[0] = (uint8_t)present;
	for (k = 0; k < 8; k++)
		len[1 + k] = (uint8_t)(v >> (56 - 8 * k));
	crypto_generichash_update(st, len, sizeof len);
	if (n)
		crypto_generichash_update(st, p, n);
}

int
maro_joblog_hash(const uint8_t *req, size_t n, int with_dest, uint64_t *hash,
    struct maro_err *err)
{
	crypto_generichash_state st;
	struct maro_msg m;
	uint8_t h[16];
	int k;

	if (maro_msg_decode(&m, req, n, err) < 0)
		return -1;
	crypto_generichash_init(&st, NULL, 0, sizeof h);
	hash_part(&st, m.tag.p, m.tag.n, 1);
	hash_part(&st, m.destination.p, with_dest ? m.destination.n : 0, with_dest && m.destination.p);
	hash_part(&st, m.payload.p, m.payload.n, m.payload.p != NULL);
	crypto_generichash_final(&st, h, sizeof h);
	*hash = 0;
	for (k = 0; k < 8; k++)
		*hash = *hash << 8 | h[k];
	return 0;
}

static int
bad(struct maro_err *err, uint64_t line, const char *what)
{
	err->offset = line;
	snprintf(err->msg, sizeof err->msg, "%s", what);
	errno = EINVAL;
	return -1;
}

/* One record: its seq, hash and whether it says done.  0, or -1 (not a record). */
static int
parse(const char *s, uint64_t *seq, uint64_t *hash, int *done)
{
	const char *f[7];
	char *end;
	int k;

	f[0] = s;
	for (k = 1; k < 7; k++) {
		const char *tab = strchr(f[k - 1], '\t');

		if (!tab)
			return -1;
		f[k] = tab + 1;
	}
	if (*s < '1' || *s > '9')
		return -1;
	errno = 0;
	*seq = strtoull(s, &end, 10);
	if (errno || *end != '\t')
		return -1;
	if (strspn(f[1], "0123456789abcdef") != 16 || f[1][16] != '\t')
		return -1;
	*hash = strtoull(f[1], NULL, 16);
	if (!strncmp(f[6], "done\t", 5))
		*done = 1;
	else if (!strncmp(f[6], "failed: ", 8))
		*done = 0;
	else
		return -1;
	return 0;
}

/* The slot of seq in log->v: its own, or the free one where it goes. */
static struct maro_joblog_task *
slot(const struct maro_joblog *log, uint64_t seq)
{
	size_t mask = log->cap - 1, k = (size_t)(seq * 0x9e3779b97f4a7c15u >> 17) & mask;

	while (log->v[k].seq && log->v[k].seq != seq)
		k = (k + 1) & mask;
	return &log->v[k];
}

/* Doubles the table (or makes its first): 0, or -1 with ENOMEM. */
static int
grow(struct maro_joblog *log)
{
	struct maro_joblog old = *log;
	size_t k;

	log->cap = old.cap ? old.cap * 2 : 1024;
	if (!(log->v = calloc(log->cap, sizeof *log->v))) {
		*log = old;
		return -1;
	}
	for (k = 0; k < old.cap; k++)
		if (old.v[k].seq)
			*slot(log, old.v[k].seq) = old.v[k];
	free(old.v);
	return 0;
}

static int
note(struct maro_joblog *log, uint64_t seq, uint64_t hash, int done, uint64_t line,
    struct maro_err *err)
{
	struct maro_joblog_task *t;

	if (seq > (uint64_t)1 << 31)
		return bad(err, line, "sequence number out of range");
	if ((log->n + 1) * 2 > log->cap && grow(log) < 0)
		return -1;
	t = slot(log, seq);
	if (t->seq && t->hash != hash)
		return bad(err, line, "two records of one task with different hashes");
	if (!t->seq)
		log->n++;
	t->seq = seq;
	t->hash = hash;
	if (t->state < 2)
		t->state = done ? 2 : 1;
	if (seq > log->last)
		log->last = seq;
	return 0;
}

int
maro_joblog_load(struct maro_joblog *log, int fd, off_t *whole, struct maro_err *err)
{
	struct maro_buf line = { 0 };
	uint8_t chunk[65536];
	uint64_t lineno = 0;
	off_t at = 0;
	ssize_t k;
	int rc = -1;

	*whole = 0;
	for (;;) {
		k = read(fd, chunk, sizeof chunk);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			goto out;
		if (k == 0)
			break;
		for (ssize_t j = 0; j < k; j++) {
			uint64_t seq, hash;
			int done;

			at++;
			if (chunk[j] != '\n') {
				if (line.len >= 65536) {
					bad(err, lineno + 1, "line too long");
					goto out;
				}
				if (maro_buf_append(&line, &chunk[j], 1) < 0)
					goto out;
				continue;
			}
			lineno++;
			if (maro_buf_cstr(&line) < 0)
				goto out;
			if (lineno == 1) {
				if (line.len + 1 != strlen(MARO_JOBLOG_HEADER) ||
				    memcmp(line.p, MARO_JOBLOG_HEADER, line.len)) {
					bad(err, 1, "not the header of a job log of maro-scatter");
					goto out;
				}
			} else if (parse((const char *)line.p, &seq, &hash, &done) < 0) {
				bad(err, lineno, "not a record of a job log");
				goto out;
			} else if (note(log, seq, hash, done, lineno, err) < 0) {
				goto out;
			}
			line.len = 0;
			*whole = at;
		}
	}
	/* a file of one line cut short is a log only if that is the start of the header */
	if (!lineno && line.len && (line.len >= strlen(MARO_JOBLOG_HEADER) ||
	    memcmp(line.p, MARO_JOBLOG_HEADER, line.len))) {
		bad(err, 1, "not the header of a job log of maro-scatter");
		goto out;
	}
	rc = 0;
out:
	maro_buf_free(&line);
	return rc;
}

int
maro_joblog_check(const struct maro_joblog *log, uint64_t seq, uint64_t hash)
{
	const struct maro_joblog_task *t;

	if (seq < 1 || !log->n || !(t = slot(log, seq))->seq)
		return MARO_JOBLOG_RUN;
	if (t->hash != hash)
		return MARO_JOBLOG_OTHER;
	return t->state == 2 ? MARO_JOBLOG_DONE : MARO_JOBLOG_RUN;
}

uint64_t
maro_joblog_last(const struct maro_joblog *log)
{
	return log->last;
}

void
maro_joblog_free(struct maro_joblog *log)
{
	free(log->v);
	memset(log, 0, sizeof *log);
}

/*
 * An exclusive lock on the whole of fd's file, or -1 with EWOULDBLOCK and
 * err->msg naming the process that holds it.  A record lock (fcntl), not
 * flock: the system can say who holds it, and it holds on NFS too.
 */
static int
lock(int fd, const char *path, struct maro_err *err)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	while (fcntl(fd, F_SETLK, &l) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EACCES && errno != EAGAIN)
			return -1;
		l.l_type = F_WRLCK;
		if (fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK && l.l_pid > 0)
			snprintf(err->msg, sizeof err->msg,
			    "job log '%s' is in use by another run (pid %ld)", path, (long)l.l_pid);
		else
			snprintf(err->msg, sizeof err->msg, "job log '%s' is in use by another run",
			    path);
		errno = EWOULDBLOCK;
		return -1;
	}
	return 0;
}

int
maro_joblog_open(struct maro_joblog_file *f, const char *path, int resume,
    struct maro_err *err)
{
	off_t whole = 0;
	const char *what = "cannot open";
	struct stat st;
	int keep;

	memset(f, 0, sizeof *f);
	/* not O_TRUNC: a log in use by another run is left as it is */
	f->fd = open(path, (resume ? O_RDWR : O_WRONLY) | O_CREAT | O_CLOEXEC, 0666);
	if (f->fd < 0)
		goto fail;
	what = "cannot lock";
	/* a pipe or a terminal (--joblog /dev/stderr) is neither shared by runs nor truncated */
	if (fstat(f->fd, &st) < 0)
		goto fail;
	if (S_ISREG(st.st_mode) && lock(f->fd, path, err) < 0) {
		if (errno != EWOULDBLOCK)
			goto fail;
		goto out;
	}
	maro_writer_init(&f->w, f->fd);
	what = "cannot read";
	if (resume && maro_joblog_load(&f->had, f->fd, &whole, err) < 0) {
		if (errno != EINVAL)
			goto fail;
		goto out;
	}
	what = "cannot write";
	if (S_ISREG(st.st_mode) && (ftruncate(f->fd, whole) < 0 || lseek(f->fd, whole, SEEK_SET) < 0))
		goto fail;
	if (!whole && maro_writer_put(&f->w, MARO_JOBLOG_HEADER, strlen(MARO_JOBLOG_HEADER)) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err->msg, sizeof err->msg, "%s '%s': %s", what, path, strerror(errno));
out:
	keep = errno;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	maro_writer_free(&f->w);
	maro_joblog_free(&f->had);
	errno = keep;
	return -1;
}

int
maro_joblog_close(struct maro_joblog_file *f)
{
	int rc = 0, keep;

	if (f->fd >= 0 && maro_writer_flush(&f->w) < 0)
		rc = -1;
	keep = errno;
	if (f->fd >= 0 && close(f->fd) < 0 && rc == 0)
		rc = -1;
	else
		errno = keep;
	keep = errno;
	if (f->fd >= 0)
		maro_writer_free(&f->w);
	maro_joblog_free(&f->had);
	maro_buf_free(&f->rec);
	f->fd = -1;
	errno = keep;
	return rc;
}
