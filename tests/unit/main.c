#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "transport.h"
#include "unit.h"

int unit_passed, unit_failed;

/*
 * "unit-tests hold NAME [ENDPOINT]": a stand-in receiver for the suites.
 * Registers NAME ($MARO_REGISTRY, $MARO_GROUP), says "held NAME" on stdout,
 * heartbeats every second and leaves on SIGTERM or SIGINT (exit 0).  Exit
 * 69 when the registry is unavailable, 1 when the name is held.
 */
static int
hold(const char *name, const char *endpoint)
{
	struct maro_registry *r;
	struct maro_entry e, holder;
	struct timespec beat = { 1, 0 };
	sigset_t sigs;
	char err[512];
	int sig, quiet = 0;

	/* blocked, then awaited with the heartbeat as timeout: no signal is missed */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	r = maro_registry_open(NULL, NULL, NULL, err, sizeof err);
	if (!r) {
		fprintf(stderr, "unit-tests hold: %s\n", err);
		return 69;
	}
	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "%s", name);
	snprintf(e.endpoint, sizeof e.endpoint, "%s", endpoint ? endpoint : "tcp://127.0.0.1:9");
	if (maro_registry_register(r, &e, 0, &holder) < 0) {
		int held = errno == EEXIST;

		fprintf(stderr, "unit-tests hold: %s\n", maro_registry_error(r));
		maro_registry_close(r);
		return held ? 1 : 69;
	}
	printf("held %s\n", name);
	fflush(stdout);
	for (;;) {
		sig = sigtimedwait(&sigs, NULL, &beat);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (maro_registry_heartbeat(r) == 0) {
			quiet = 0;
		} else if (errno == EEXIST) {
			fprintf(stderr, "unit-tests hold: %s\n", maro_registry_error(r));
			maro_registry_close(r);
			return 1;
		} else if (!quiet) {
			/* the registry may come back (a restarted Redis): keep beating */
			fprintf(stderr, "unit-tests hold: %s\n", maro_registry_error(r));
			quiet = 1;
		}
	}
	maro_registry_close(r);
	return 0;
}

/*
 * "unit-tests lock FILE [NAME]": what a registrant of the dir: registry
 * that stalls looks like to the others: a write lock (fcntl(2)) on FILE (a
 * group's .lock), on the byte of NAME as maro(7) defines it (1 + its
 * 32-bit FNV-1a hash's low 30 bits: written here from the page, not taken
 * from lib/), or on the whole file, which every name's lock and the sweep
 * conflict with.  Says "locked" on stdout once it holds it; lets go and
 * exits 0 on SIGTERM or SIGINT.
 */
static int
lock_file(const char *file, const char *name)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	sigset_t sigs;
	int fd, sig;

	if (name) {
		uint32_t h = 2166136261u;
		const unsigned char *p;

		for (p = (const unsigned char *)name; *p; p++)
			h = (h ^ *p) * 16777619u;
		fl.l_start = 1 + (off_t)(h & 0x3fffffff);
		fl.l_len = 1;
	}

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fcntl(fd, F_SETLKW, &fl) < 0) {
		fprintf(stderr, "unit-tests lock: %s: %s\n", file, strerror(errno));
		return 1;
	}
	printf("locked\n");
	fflush(stdout);
	while ((sig = sigwaitinfo(&sigs, NULL)) < 0 && errno == EINTR)
		;
	close(fd);
	return 0;
}

struct maro_ctx *
unit_ctx_open(const char *who, char *dir, size_t len, const char *transport)
{
	char url[600], err[512];
	struct maro_ctx_opts o = { 0 };
	struct maro_ctx *c;

	snprintf(dir, len, "/tmp/maro-unit.XXXXXX");
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return NULL;
	}
	snprintf(url, sizeof url, "dir:%s", dir);
	o.registry_url = url;
	o.group = "unit";
	o.transport = transport;
	o.keyfile = "";
	if (transport)
		setenv("MARO_INSECURE_TCP", "1", 1);	/* loopback TCP on dir: without a key */
	c = maro_ctx_open(&o, err, sizeof err);
	CHECK(c != NULL);
	if (!c) {
		fprintf(stderr, "%s: %s\n", who, err);
		unit_rm_rf(dir);
	}
	return c;
}

int
unit_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

void
unit_ctx_close(struct maro_ctx *c, const char *dir)
{
	if (c)
		maro_ctx_close(c);
	unit_rm_rf(dir);
}

int
main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "hostile"))
		return fixture_hostile(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "zmtp1"))
		return fixture_zmtp1(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "acks"))
		return fixture_acks(argv[2], argv[3], argv[4]);
	if ((argc == 4 || argc == 6) && !strcmp(argv[1], "outsider"))
		return fixture_outsider(argv[2], argv[3], argc == 6 ? argv[4] : NULL,
		    argc == 6 ? argv[5] : NULL);
	if (argc == 2 && !strcmp(argv[1], "--hash-child"))
		return hash_child();
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "hold"))
		return hold(argv[2], argc == 4 ? argv[3] : NULL);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "lock"))
		return lock_file(argv[2], argc == 4 ? argv[3] : NULL);
	if (argc > 1) {
		fprintf(stderr, "usage: unit-tests [hostile ENDPOINT | zmtp1 ENDPOINT | acks ENDPOINT COUNT FLAGS | outsider ENDPOINT PUBLIC [CLIENT_PUBLIC CLIENT_SECRET] | hold NAME [ENDPOINT] | lock FILE [NAME]]\n");
		return 2;
	}
	test_cborseq();
	test_message();
	test_reply();
	test_cli();
	test_opt();
	test_convert();
	test_registry();
	test_event();
	test_hold();
	test_curve();
	test_strset();
	test_hash();
	test_transport();
	test_inbox();
	test_child();
	test_view();
	test_jobs();
	test_input();
	test_workq();
	test_joblog();
	test_stats();
	test_scheduler();
	test_bundle();
	test_loop();
	printf("unit: %d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}
