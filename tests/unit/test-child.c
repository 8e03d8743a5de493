/*
 * child: the environment made before the fork, a program that cannot be
 * run said by errno, and a stop that reaches the whole process group.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "unit.h"

static const char *
lookup(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

void
test_child(void)
{
	char *set[] = { "UNIT_CHILD_A=new", "UNIT_CHILD_GONE", "UNIT_CHILD_C=c=d" };
	char *argv_missing[] = { "no-such-program-of-maro", NULL };
	char *argv_group[] = { "sh", "-c", "sleep 30 & sleep 30", NULL };
	char *argv_exit[] = { "sh", "-c", "exit 3", NULL };
	struct maro_child_spec cs = { NULL, argv_missing, NULL, -1, -1, NULL, NULL, -1 };
	char buf[64], **env;
	int wstatus;
	pid_t pid;

	setenv("UNIT_CHILD_A", "old", 1);
	setenv("UNIT_CHILD_GONE", "x", 1);
	setenv("UNIT_CHILD_AB", "kept", 1);	/* a longer name is another variable */
	env = maro_child_env(set, 3);
	CHECK(env != NULL);
	CHECK(lookup(env, "UNIT_CHILD_A") && !strcmp(lookup(env, "UNIT_CHILD_A"), "new"));
	CHECK(lookup(env, "UNIT_CHILD_GONE") == NULL);
	CHECK(lookup(env, "UNIT_CHILD_AB") && !strcmp(lookup(env, "UNIT_CHILD_AB"), "kept"));
	CHECK(lookup(env, "UNIT_CHILD_C") && !strcmp(lookup(env, "UNIT_CHILD_C"), "c=d"));
	CHECK(lookup(env, "PATH") != NULL);
	maro_child_env_free(env);

	/* a program that is not there: -1 ENOENT, and no child left */
	errno = 0;
	CHECK(maro_child_spawn(&cs) == -1 && errno == ENOENT);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);

	/* its status, described */
	cs.argv = argv_exit;
	pid = maro_child_spawn(&cs);
	CHECK(pid > 0);
	CHECK(waitpid(pid, &wstatus, 0) == pid);
	maro_child_describe(wstatus, buf, sizeof buf);
	CHECK(!strcmp(buf, "exited with status 3"));

	/* a stop reaches what the child started, in its group */
	cs.argv = argv_group;
	pid = maro_child_spawn(&cs);
	CHECK(pid > 0);
	CHECK(getpgid(pid) == pid);
	wstatus = maro_child_stop(pid, 2000000);
	CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGTERM);
	maro_child_describe(wstatus, buf, sizeof buf);
	CHECK(!strcmp(buf, "was killed by SIGTERM"));
	/* the background sleep got it too: the group is gone (it may be a zombie of init for a moment) */
	for (int i = 0; i < 200 && maro_child_group_alive(pid); i++)
		usleep(10000);
	CHECK(!maro_child_group_alive(pid));
}
