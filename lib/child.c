#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"

extern char **environ;

/* In the child, after the fork: never returns. */
static void
child(const struct maro_child_spec *s, pid_t parent, int report)
{
	sigset_t none;
	int err, fd;

	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	/* a parent that died before this was set: nothing is started */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(127);
	fd = s->in_fd >= 0 ? s->in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 ||
	    (s->out_fd >= 0 && dup2(s->out_fd, STDOUT_FILENO) < 0) ||
	    (s->err_fd >= 0 && dup2(s->err_fd, STDERR_FILENO) < 0))
		_exit(126);
	if ((s->cpus && sched_setaffinity(0, sizeof *s->cpus, s->cpus) < 0) || (s->dir && chdir(s->dir) < 0)) {
		err = errno;
	} else {
		execvpe(s->path ? s->path : s->argv[0], s->argv, s->env ? s->env : environ);
		err = errno;
	}
	/* the parent learns why, through the pipe the exec would have closed */
	if (write(report, &err, sizeof err) < 0)
		_exit(127);
	_exit(127);
}

/* Whether "NAME=..." var is named by one of set's "NAME=VALUE" or "NAME". */
static int
named(const char *var, char *const *set, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		len = strcspn(set[i], "=");
		if (!strncmp(var, set[i], len) && var[len] == '=')
			return 1;
	}
	return 0;
}

char **
maro_child_env(char *const *set, size_t n)
{
	size_t have = 0, k = 0, i;
	char **env;

	while (environ[have])
		have++;
	env = calloc(have + n + 1, sizeof *env);
	if (!env)
		return NULL;
	for (i = 0; i < have; i++)
		if (!named(environ[i], set, n) && !(env[k++] = strdup(environ[i])))
			goto fail;
	for (i = 0; i < n; i++)
		if (strchr(set[i], '=') && !(env[k++] = strdup(set[i])))
			goto fail;
	return env;
fail:
	maro_child_env_free(env);
	errno = ENOMEM;
	return NULL;
}

void
maro_child_env_free(char **env)
{
	size_t i;

	for (i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

pid_t
maro_child_spawn(const struct maro_child_spec *s)
{
	pid_t parent = getpid(), pid;
	int ep[2], err = 0;
	ssize_t r;

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(ep[0]);
		close(ep[1]);
		errno = err;
		return -1;
	}
	if (pid == 0)
		child(s, parent, ep[1]);
	setpgid(pid, pid);	/* also here: no race with a stop right after */
	close(ep[1]);
	while ((r = read(ep[0], &err, sizeof err)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof err) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = err;
		return -1;
	}
	return pid;
}

int
maro_child_stop(pid_t pid, int64_t grace_us)
{
	int64_t until = maro_now_us() + grace_us;
	int wstatus = 0;
	pid_t r;

	kill(-pid, SIGTERM);
	for (;;) {
		r = waitpid(pid, &wstatus, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		if (maro_now_us() >= until) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
				;
			break;
		}
		usleep(10000);
	}
	kill(-pid, SIGKILL);
	return wstatus;
}

int
maro_child_group_alive(pid_t pgid)
{
	return pgid > 0 && (kill(-pgid, 0) == 0 || errno == EPERM);
}

void
maro_child_describe(int wstatus, char *buf, size_t len)
{
	if (WIFEXITED(wstatus)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	} else if (WIFSIGNALED(wstatus)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(wstatus));

		snprintf(buf, len, "was killed by SIG%s", abbrev ? abbrev : "?");
	} else {
		snprintf(buf, len, "ended (status 0x%x)", wstatus);
	}
}
