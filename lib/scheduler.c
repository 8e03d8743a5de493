#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include "scheduler.h"

static const char *
env(const char *name)
{
	const char *s = getenv(name);

	return s && *s ? s : NULL;
}

/* The short host name: the node's name under Slurm, else ours up to the first '.' */
static int
short_host(char *h, size_t n)
{
	const char *node = env("SLURMD_NODENAME");

	if (node) {
		snprintf(h, n, "%s", node);
	} else {
		if (gethostname(h, n) < 0)
			return -1;
		h[n - 1] = '\0';
	}
	h[strcspn(h, ".")] = '\0';
	return 0;
}

int
maro_scheduler_name(const char *tmpl, char *out, size_t n)
{
	char host[256];
	const char *p, *add;
	size_t len = 0, k;

	for (p = tmpl; *p; p++) {
		char one[2] = { *p, '\0' };

		add = one;
		if (*p == '%') {
			switch (*++p) {
			case '%':
				break;
			case 'r':
				add = env("SLURM_PROCID");
				if (!add)
					add = env("MARO_JOB");
				if (!add) {
					errno = ENOENT;
					return -1;
				}
				break;
			case 'h':
				if (short_host(host, sizeof host) < 0)
					return -1;
				add = host;
				break;
			default:
				errno = EINVAL;
				return -1;
			}
		}
		k = strlen(add);
		if (len + k >= n) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(out + len, add, k);
		len += k;
	}
	if (n == 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	out[len] = '\0';
	return 0;
}

const char *
maro_scheduler_group(char *buf, size_t n)
{
	const char *id = env("SLURM_JOB_ID");
	int k;

	if (!id)
		return NULL;
	k = snprintf(buf, n, "slurm-%s", id);
	return k > 0 && (size_t)k < n ? buf : NULL;
}

static int
loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 1;
}

const char *
maro_scheduler_advertise(char *buf, size_t n)
{
	const char *nodes = env("SLURM_JOB_NUM_NODES"), *launch = env("SLURM_LAUNCH_NODE_IPADDR");
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	const char *res = NULL;
	int fd = -1;

	if (!nodes)
		nodes = env("SLURM_NNODES");
	if (!nodes || atol(nodes) < 2 || !launch)
		return NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(launch, "9", &hints, &ai) != 0 || !ai)
		return NULL;
	/* a datagram socket's connect only picks the route: nothing is sent */
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || loopback((struct sockaddr *)&ss))
		goto out;
	if (getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)n, NULL, 0, NI_NUMERICHOST) == 0)
		res = buf;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return res;
}

unsigned long
maro_scheduler_cpus(void)
{
	const char *s = env("SLURM_CPUS_ON_NODE");
	unsigned long n;
	char *end;

	if (!s || !env("SLURM_JOB_ID") || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	n = strtoul(s, &end, 10);
	return errno || *end ? 0 : n;
}
