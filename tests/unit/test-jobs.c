/*
 * jobs: the CPU list, the type names, the config file with what is wrong
 * with it, the jobs' names and CPUs, their counts, and their environment.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "jobs.h"
#include "unit.h"

/* Writes text to a file of its own; its path in path. */
static void
config_file(char *path, size_t len, const char *text)
{
	FILE *f;

	snprintf(path, len, "%s/maro-unit-jobs.%ld", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	    (long)getpid());
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* maro_jobs_config_read on text: 0 or -1, the message in msg. */
static int
config(struct maro_jobs *js, const char *text, char *msg, size_t len)
{
	struct maro_buf err = { 0 };
	char path[256];
	const char *p;
	int rc;

	memset(js, 0, sizeof *js);
	config_file(path, sizeof path, text);
	rc = maro_jobs_config_read(js, path, &err);
	maro_buf_cstr(&err);
	/* the message without the path before the line number */
	p = err.p && !strncmp((char *)err.p, path, strlen(path)) ? (char *)err.p + strlen(path) :
	    err.p ? (char *)err.p : "";
	snprintf(msg, len, "%s", p);
	maro_buf_free(&err);
	unlink(path);
	return rc;
}

void
test_jobs(void)
{
	struct maro_jobs js;
	cpu_set_t allowed;
	char err[128], msg[256], host[64], **env;
	int *cpus = NULL, first = -1, second = -1, i;
	size_t n = 0;

	/* the CPU list: only CPUs this process may use */
	CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
	for (i = 0; i < CPU_SETSIZE && second < 0; i++)
		if (CPU_ISSET(i, &allowed)) {
			if (first < 0)
				first = i;
			else
				second = i;
		}
	snprintf(msg, sizeof msg, "%d", first);
	CHECK(maro_jobs_cpus_parse(msg, &cpus, &n, err, sizeof err) == 0 && n == 1 && cpus[0] == first);
	free(cpus);
	if (second == first + 1) {
		snprintf(msg, sizeof msg, "%d-%d,%d", first, second, first);
		CHECK(maro_jobs_cpus_parse(msg, &cpus, &n, err, sizeof err) == 0 && n == 3 &&
		    cpus[0] == first && cpus[1] == second && cpus[2] == first);
		free(cpus);
	}
	CHECK(maro_jobs_cpus_parse("", &cpus, &n, err, sizeof err) < 0 && errno == EINVAL &&
	    !strcmp(err, "invalid CPU list '' (like 0-3,6)"));
	CHECK(maro_jobs_cpus_parse("0,", &cpus, &n, err, sizeof err) < 0 && strstr(err, "invalid CPU"));
	CHECK(maro_jobs_cpus_parse("3-1", &cpus, &n, err, sizeof err) < 0 && strstr(err, "invalid CPU"));
	CHECK(maro_jobs_cpus_parse("-1", &cpus, &n, err, sizeof err) < 0 && strstr(err, "invalid CPU"));
	CHECK(maro_jobs_cpus_parse("0x", &cpus, &n, err, sizeof err) < 0 && strstr(err, "invalid CPU"));
	CHECK(maro_jobs_cpus_parse("99999", &cpus, &n, err, sizeof err) < 0 && errno == EINVAL &&
	    !strcmp(err, "CPU 99999 is not available to this process"));

	/* a type is the first part of a job's name */
	CHECK(maro_jobs_type_valid("worker") && maro_jobs_type_valid("a-2"));
	CHECK(!maro_jobs_type_valid("") && !maro_jobs_type_valid("a.b") && !maro_jobs_type_valid("a_b"));
	CHECK(!maro_jobs_type_valid("~a"));
	memset(msg, 'a', 65);
	msg[65] = '\0';
	CHECK(!maro_jobs_type_valid(msg) && maro_jobs_type_valid(msg + 1));

	/* the config file: comments, blank lines, '-' for no CPUs, the command as the rest */
	CHECK(config(&js, "# types\n\n  web 2 - echo  a b\nbatch\t1\t-\tsleep 1\n", msg, sizeof msg) == 0);
	CHECK(js.ntypes == 2 && !strcmp(js.types[0].name, "web") && js.types[0].count == 2);
	CHECK(!js.types[0].cpus && !strcmp(js.types[0].argv[0], "sh") && !strcmp(js.types[0].argv[1], "-c"));
	CHECK(!strcmp(js.types[0].argv[2], "echo  a b") && !js.types[0].argv[3]);
	CHECK(!strcmp(js.types[1].name, "batch") && !strcmp(js.types[1].argv[2], "sleep 1"));

	/* the jobs: TYPE.HOST.I, numbered within their type; the counts */
	js.max_restarts = 3;
	CHECK(maro_jobs_make(&js, "h") == 0 && js.njobs == 3);
	CHECK(!strcmp(js.jobs[0].name, "web.h.1") && !strcmp(js.jobs[1].name, "web.h.2"));
	CHECK(!strcmp(js.jobs[2].name, "batch.h.1") && js.jobs[2].index == 1 && js.jobs[2].t == &js.types[1]);
	CHECK(!js.jobs[0].cpulist[0] && CPU_COUNT(&js.jobs[0].cpus) == 0);
	CHECK(!maro_jobs_active(&js) && maro_jobs_left(&js) == 0);
	maro_jobs_info(&js, msg, sizeof msg);
	CHECK(!strcmp(msg, "jobs=3 running=0 restarts=0 gaveup=0 web=2 batch=1"));
	js.jobs[1].state = MARO_JOB_WAITING;
	js.jobs[1].restart_at = 500;
	js.jobs[1].restarts = 2;
	js.jobs[2].state = MARO_JOB_GAVE_UP;
	maro_jobs_info(&js, msg, sizeof msg);
	CHECK(!strcmp(msg, "jobs=3 running=0 restarts=2 gaveup=1 web=2 batch=1"));
	CHECK(maro_jobs_active(&js) && maro_jobs_wake(&js, 1000) == 500 && maro_jobs_wake(&js, 100) == 100);
	CHECK(!maro_jobs_due(&js.jobs[1], 499) && maro_jobs_due(&js.jobs[1], 500));
	CHECK(!maro_jobs_due(&js.jobs[0], 1000));

	/* the environment: the pool's names, no key, no pid replaced before a restart */
	js.group = "g";
	js.registry = "dir:/x";
	js.pool = "pool.h";
	js.keyfile = NULL;
	setenv("MARO_KEYFILE", "/inherited", 1);
	env = maro_jobs_env(&js, &js.jobs[1]);
	CHECK(env != NULL);
	if (env) {
		int name = 0, job = 0, key = 0, pool = 0;
		char **e;

		for (e = env; *e; e++) {
			name += !strcmp(*e, "MARO_NAME=web.h.2");
			job += !strcmp(*e, "MARO_JOB=2");
			pool += !strcmp(*e, "MARO_POOL=pool.h");
			key += !strncmp(*e, "MARO_KEYFILE", 12) || !strncmp(*e, "MARO_REPLACES_PID", 17);
		}
		CHECK(name == 1 && job == 1 && pool == 1 && key == 0);
		maro_child_env_free(env);
	}
	js.jobs[1].last_pid = 42;
	env = maro_jobs_env(&js, &js.jobs[1]);
	CHECK(env != NULL);
	if (env) {
		int replaces = 0;
		char **e;

		for (e = env; *e; e++)
			replaces += !strcmp(*e, "MARO_REPLACES_PID=42");
		CHECK(replaces == 1);
		maro_child_env_free(env);
	}
	unsetenv("MARO_KEYFILE");
	maro_jobs_free(&js);
	CHECK(js.njobs == 0 && js.ntypes == 0 && !js.jobs);

	/* CPUs shared out: one each, in turn, when fewer than the jobs */
	snprintf(msg, sizeof msg, "t 3 %d cmd\n", first);
	CHECK(config(&js, msg, msg + 100, 100) == 0 && js.types[0].ncpus == 1);
	CHECK(maro_jobs_make(&js, "h") == 0);
	snprintf(host, sizeof host, "%d", first);
	CHECK(!strcmp(js.jobs[2].cpulist, host) && CPU_ISSET(first, &js.jobs[2].cpus));
	maro_jobs_free(&js);
	js.ntypes = 2;
	js.types[0].count = js.types[1].count = MARO_JOBS_MAX / 2 + 1;
	CHECK(maro_jobs_make(&js, "h") < 0 && errno == E2BIG);
	maro_jobs_free(&js);

	/* what is wrong with a config file, by line */
	CHECK(config(&js, "# none\n", msg, sizeof msg) < 0 && !strcmp(msg, ": no job types"));
	maro_jobs_free(&js);
	CHECK(config(&js, "web 2 -\n", msg, sizeof msg) < 0 &&
	    !strcmp(msg, ":1: expected TYPE COUNT CPUS COMMAND"));
	maro_jobs_free(&js);
	CHECK(config(&js, "# c\nweb 2 - \n", msg, sizeof msg) < 0 && !strcmp(msg, ":2: no command"));
	maro_jobs_free(&js);
	CHECK(config(&js, "a.b 2 - x\n", msg, sizeof msg) < 0 &&
	    !strcmp(msg, ":1: invalid type 'a.b' (letters, digits, '-')"));
	maro_jobs_free(&js);
	CHECK(config(&js, "a 0 - x\n", msg, sizeof msg) < 0 && !strcmp(msg, ":1: invalid count '0' (1 to 1024)"));
	maro_jobs_free(&js);
	CHECK(config(&js, "a 1025 - x\n", msg, sizeof msg) < 0 && strstr(msg, "invalid count '1025'"));
	maro_jobs_free(&js);
	CHECK(config(&js, "a 1 - x\na 1 - y\n", msg, sizeof msg) < 0 &&
	    !strcmp(msg, ":2: type 'a' given twice") && js.ntypes == 1);
	maro_jobs_free(&js);
	CHECK(config(&js, "a 1 1x x\n", msg, sizeof msg) < 0 &&
	    !strcmp(msg, ":1: invalid CPU list '1x' (like 0-3,6)"));
	maro_jobs_free(&js);
	{
		struct maro_buf e = { 0 };

		CHECK(maro_jobs_config_read(&js, "/nonexistent/maro-unit", &e) < 0 && maro_buf_cstr(&e) == 0 &&
		    !strcmp((char *)e.p, "cannot read '/nonexistent/maro-unit': No such file or directory"));
		maro_buf_free(&e);
	}
	maro_jobs_free(&js);
}
