/* A minimal harness for the C unit tests: CHECK records, never aborts. */
#ifndef MARO_UNIT_H
#define MARO_UNIT_H

#include <stdio.h>

extern int unit_passed, unit_failed;

#define CHECK(cond) do { \
	if (cond) unit_passed++; \
	else { unit_failed++; fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

/* How many descriptors this process holds (/proc/self/fd): what a leak changes. */
int unit_open_fds(void);

/* rm -rf DIR, for what a test made under /tmp (test-registry.c) */
void unit_rm_rf(const char *dir);

struct maro_ctx;
/*
 * A context for a module's tests: a fresh dir: registry under /tmp (its
 * path written to dir, len bytes), group "unit", no group key; transport
 * "tcp" (loopback TCP, allowed without a key) or NULL (ipc).  NULL,
 * checked and said with who asked, when it cannot be opened.
 */
struct maro_ctx *unit_ctx_open(const char *who, char *dir, size_t len, const char *transport);
/* Closes c (NULL: nothing) and removes its registry dir. */
void unit_ctx_close(struct maro_ctx *c, const char *dir);

/* One function per module; main.c calls each. */
void test_cborseq(void);
void test_message(void);
void test_reply(void);
void test_cli(void);
void test_opt(void);
void test_convert(void);
void test_registry(void);
void test_event(void);
void test_hold(void);
void test_curve(void);
void test_strset(void);
void test_hash(void);
int hash_child(void);
void test_transport(void);
void test_inbox(void);
void test_child(void);
void test_view(void);
void test_jobs(void);
void test_input(void);
void test_workq(void);
void test_joblog(void);
void test_stats(void);
void test_scheduler(void);
void test_bundle(void);
void test_loop(void);

/* Fixtures the bats suites run as "unit-tests NAME ARGS". */
int fixture_hostile(const char *endpoint);
int fixture_zmtp1(const char *endpoint);
int fixture_acks(const char *endpoint, const char *count, const char *flags);
int fixture_outsider(const char *endpoint, const char *server_public, const char *client_public,
    const char *client_secret);

#endif
