/*
 * clock: the run's time.  The monotonic clock, durations as the tools
 * write them, the run's deadline (-W) and the signal that ends a run.
 *
 * It sits below every module that waits (registry, transport, inbox,
 * outbox) so that each can bound its waits by the same deadline and give
 * up on the same signal; cli sets them (maro_cli_catch_signals, the -W of
 * each tool) and is the only module that prints or exits.
 */
#ifndef MARO_CLOCK_H
#define MARO_CLOCK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic clock in microseconds. */
int64_t maro_now_us(void);

/*
 * Durations: N[.N][ms|s|m|h], seconds when no unit.  Returns 0 with *usec,
 * or -1 (EINVAL) for anything else, negative values included.
 */
int maro_duration_parse(const char *s, int64_t *usec);
/* A duration in whole seconds for people: "12s", "4m05s", "1h02m" (at most 99h59m; none below 0s). */
void maro_duration_text(char *out, size_t len, int64_t secs);

/*
 * The deadline (-W) of the whole run: monotonic us, INT64_MAX for none.  A
 * tool sets it before it opens anything; every wait of the library is
 * bounded by it, the registry's connection and command timeouts included.
 */
extern int64_t maro_deadline;
/*
 * The timeout for maro_poll(3) until wake (monotonic us) and never past
 * maro_deadline: 0 when that time has come (however long ago), -1 (no
 * timeout) only when neither is set.  Never another negative value.
 */
long maro_wait_ms(int64_t wake);
/* As maro_wait_ms, until wake alone (maro_deadline aside): -1 for INT64_MAX. */
long maro_ms_until(int64_t wake);
/*
 * How long a blocking call may take: cap (us), or less when maro_deadline
 * is nearer, but at least floor (us), so that the last words of a run (such
 * as leaving the registry) still get a short chance; floor once SIGINT or
 * SIGTERM came (maro_signal).
 */
int64_t maro_budget_us(int64_t cap, int64_t floor);

/*
 * The signal (SIGINT, SIGTERM, SIGHUP) that ends the run, 0 before one came; set
 * by the handler cli installs (maro_cli_catch_signals).
 */
extern volatile sig_atomic_t maro_signal;
/*
 * A socket the tool is blocked on in a request that retries EINTR by
 * itself (hiredis): SIGINT and SIGTERM shut it down, so the request ends
 * at once.  -1: none.
 */
extern volatile sig_atomic_t maro_abort_fd;

#endif
