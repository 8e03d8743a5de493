/*
 * stats: the counters a component publishes with its heartbeat (the
 * registry's "stats" field, maro(7) REGISTRY), and their reading; and the
 * figures of the job a master runs (its "job" field), and theirs.
 *
 * One process-global struct maro_stats: the tools are single-threaded, so
 * the hot paths count with a plain increment (no call, no lock), and the
 * registry reads the figures only at heartbeat time (maro_stats_text).  A
 * process with several names publishes the same figures under each.
 *
 * The text is words "key=value" separated by single spaces:
 *
 *   in=N out=N bin=N bout=N done=N failed=N [flight=N] resent=N
 *   [win=USED/SIZE] [rin=R] [rout=R] [rdone=R]
 *
 * N a decimal integer, R a decimal rate per second.  flight and win are
 * gauges, present only for the tools that keep them; a rate is absent when
 * it is zero (an idle member's text does not change from one beat to the
 * next) and before the second heartbeat.  Readers ignore the keys they do
 * not know and read an absent or unreadable one as absent.
 */
#ifndef MARO_STATS_H
#define MARO_STATS_H

#include <stddef.h>
#include <stdint.h>

/* the longest text maro_stats_text writes, and the registry stores */
#define MARO_STATS_MAX 256

struct maro_stats {
	uint64_t msgs_in, bytes_in;	/* handed on by an inbox (maro_inbox_done), duplicates not */
	uint64_t msgs_out, bytes_out;	/* acknowledged by their receiver (the outbox) */
	uint64_t resent;		/* messages an outbox sent again */
	uint64_t tasks_done, tasks_failed;	/* as the tool counts tasks (maro-dist, maro-scatter) */
	/* gauges, set by the tools that have them before a heartbeat */
	int has_flight;			/* tasks_inflight is meaningful */
	uint64_t tasks_inflight;
	uint64_t window_used, window;	/* published when window > 0 */
};

#ifdef MARO_NO_STATS
/*
 * Built with -DMARO_NO_STATS (only the tools make bench builds to measure
 * what the counters cost): each count goes to a temporary the compiler
 * drops, and the text is empty, so heartbeats carry no stats.
 */
#define maro_stats ((struct maro_stats){ 0 })
#else
extern struct maro_stats maro_stats;
#endif

/*
 * maro_stats as one line of words (above) in out (len bytes, NUL
 * included; a word that does not fit is left out whole).  The rates are
 * per second over the time since the call that last computed them (now_us:
 * monotonic, maro_now_us), that is since the previous heartbeat; a call
 * less than 250 ms after that one (a second registration) gives the same
 * rates again.
 */
void maro_stats_text(char *out, size_t len, int64_t now_us);

/* The keys a reader knows: integers first, then the rates. */
enum maro_stats_key {
	MARO_STATS_IN, MARO_STATS_OUT, MARO_STATS_BIN, MARO_STATS_BOUT, MARO_STATS_DONE,
	MARO_STATS_FAILED, MARO_STATS_FLIGHT, MARO_STATS_RESENT, MARO_STATS_WIN_USED, MARO_STATS_WIN,
	MARO_STATS_RIN, MARO_STATS_ROUT, MARO_STATS_RDONE,
	MARO_STATS_NKEYS,
	MARO_STATS_NINTS = MARO_STATS_RIN
};

/* What a reader made of a stats text. */
struct maro_stats_view {
	unsigned have;			/* bit k: key k was read */
	uint64_t n[MARO_STATS_NINTS];	/* the integers */
	double rate[MARO_STATS_NKEYS - MARO_STATS_NINTS];	/* the rates: rate[k - MARO_STATS_NINTS] */
};

/* Key k's name (win's two halves: "win_used" and "win"), as JSON shows it. */
const char *maro_stats_key_name(enum maro_stats_key k);
/*
 * Reads text into v.  Never fails: unknown keys are ignored, and a word
 * that cannot be read leaves its key absent.  The number of keys read.
 */
int maro_stats_parse(const char *text, struct maro_stats_view *v);
/* Key k's value in v as a double (0 when absent). */
double maro_stats_value(const struct maro_stats_view *v, enum maro_stats_key k);

/*
 * A job: the run of a master (maro-scatter) over its input, as it
 * publishes it in its entry's "job" field at every heartbeat.  The text is
 * words "key=value" separated by single spaces, in this order:
 *
 *   start=S total=N|- read=N done=N failed=N gaveup=N open=N rate=R eta=S|-
 *
 * start  when the job began, s since the epoch (the master's clock)
 * total  the tasks of the whole input: "-" until the input has ended
 * read   the tasks read so far
 * done   tasks answered
 * failed attempts that failed (a failure reply, a timeout, a peer gone
 *        with the task), whether or not the task was tried again
 * gaveup tasks given up
 * open   tasks sent and not finished (at a peer, or waiting to be sent
 *        again); read less done, gaveup and open have not been sent yet
 * rate   tasks finished (done and given up) per second since the start,
 *        on the master's own clock (readers on other hosts need none)
 * eta    seconds left at that rate: "-" until total is known and a task
 *        has finished
 *
 * N a decimal integer, R a decimal number, S whole seconds.  Readers
 * ignore the keys they do not know and read an unreadable value as
 * absent; a text without start or done is no job.
 */
#define MARO_STATS_JOB_MAX 256

struct maro_stats_job {
	int64_t start;			/* s since the epoch */
	int64_t total;			/* -1: not known (yet) */
	uint64_t read, done, failed, gaveup, open;
	double rate;			/* finished per second */
	int64_t eta;			/* s; -1: not known */
};

/* j as its text in out (len bytes, NUL included: MARO_STATS_JOB_MAX + 1 always holds it). */
void maro_stats_job_text(const struct maro_stats_job *j, char *out, size_t len);
/*
 * Reads a job's text into j: 1, or 0 when it is no job (then j is all
 * zero but total and eta, -1, as for every key absent).  Never fails.
 */
int maro_stats_job_parse(const char *text, struct maro_stats_job *j);

#endif
