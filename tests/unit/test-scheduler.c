#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opt.h"
#include "scheduler.h"
#include "unit.h"

static const char *const vars[] = { "SLURM_PROCID", "SLURMD_NODENAME", "SLURM_JOB_ID",
	"SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_LAUNCH_NODE_IPADDR", "MARO_JOB", "MARO_NAME",
	"MARO_GROUP", "MARO_ADVERTISE", "SLURM_CPUS_ON_NODE", NULL };

static void
clear(void)
{
	size_t i;

	for (i = 0; vars[i]; i++)
		unsetenv(vars[i]);
}

/* An IPv4 address of this host's other than loopback, or "" */
static void
own_address(char *a, size_t n)
{
	struct ifaddrs *ifs, *i;

	a[0] = '\0';
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i && !a[0]; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    getnameinfo(i->ifa_addr, sizeof(struct sockaddr_in), a, (socklen_t)n, NULL, 0,
		    NI_NUMERICHOST) == 0 && !strncmp(a, "127.", 4))
			a[0] = '\0';
	freeifaddrs(ifs);
}

static const struct maro_tool tool = { "unit", (const char *const[]){ "", NULL }, NULL,
	MARO_SH_MEMBER | MARO_SH(ADVERTISE), 0 };

/* maro_opt_parse over "unit ARGS..." (at most 4), into cm */
static void
parse(struct maro_common *cm, const char *a1, const char *a2)
{
	char *argv[4] = { (char *)"unit", (char *)a1, (char *)a2, NULL };
	int argc = a1 ? (a2 ? 3 : 2) : 1;

	maro_common_init(cm);
	optind = 0;
	maro_opt_parse(&tool, cm, argc, argv, NULL, NULL);
}

void
test_scheduler(void)
{
	struct maro_common cm;
	char out[64], host[256], g[64], a[64];

	clear();
	/* templates: %r the rank (srun's, else maro-pool's), %h the node, %% */
	CHECK(maro_scheduler_name("master", out, sizeof out) == 0 && !strcmp(out, "master"));
	CHECK(maro_scheduler_name("w.%r", out, sizeof out) < 0 && errno == ENOENT);
	setenv("MARO_JOB", "2", 1);
	CHECK(maro_scheduler_name("w.%r", out, sizeof out) == 0 && !strcmp(out, "w.2"));
	setenv("SLURM_PROCID", "17", 1);
	CHECK(maro_scheduler_name("w.%r", out, sizeof out) == 0 && !strcmp(out, "w.17"));
	setenv("SLURMD_NODENAME", "n3.cluster.example", 1);
	CHECK(maro_scheduler_name("worker.%h.%r", out, sizeof out) == 0 &&
	    !strcmp(out, "worker.n3.17"));
	unsetenv("SLURMD_NODENAME");
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	CHECK(maro_scheduler_name("%h", out, sizeof out) == 0 && !strcmp(out, host));
	CHECK(maro_scheduler_name("a%%b", out, sizeof out) == 0 && !strcmp(out, "a%b"));
	CHECK(maro_scheduler_name("a%x", out, sizeof out) < 0 && errno == EINVAL);
	CHECK(maro_scheduler_name("a%", out, sizeof out) < 0 && errno == EINVAL);
	CHECK(maro_scheduler_name("worker.%r", out, 9) < 0 && errno == ENAMETOOLONG);
	CHECK(maro_scheduler_name("worker.%r", out, 10) == 0 && !strcmp(out, "worker.17"));

	/* the job's group, only in a job */
	CHECK(maro_scheduler_group(g, sizeof g) == NULL);
	setenv("SLURM_JOB_ID", "4242", 1);
	CHECK(maro_scheduler_group(g, sizeof g) && !strcmp(g, "slurm-4242"));

	/* an address only on several nodes, and never a loopback one */
	setenv("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1", 1);
	setenv("SLURM_JOB_NUM_NODES", "3", 1);
	CHECK(maro_scheduler_advertise(a, sizeof a) == NULL);
	setenv("SLURM_LAUNCH_NODE_IPADDR", "not-an-address", 1);
	CHECK(maro_scheduler_advertise(a, sizeof a) == NULL);
	/* the interface that routes to the launch node: here, ours */
	own_address(g, sizeof g);
	if (g[0]) {
		setenv("SLURM_LAUNCH_NODE_IPADDR", g, 1);
		CHECK(maro_scheduler_advertise(a, sizeof a) && !strcmp(a, g));
		setenv("SLURM_JOB_NUM_NODES", "1", 1);
		CHECK(maro_scheduler_advertise(a, sizeof a) == NULL);
		unsetenv("SLURM_JOB_NUM_NODES");
		setenv("SLURM_NNODES", "2", 1);
		CHECK(maro_scheduler_advertise(a, sizeof a) && !strcmp(a, g));
		/* and through maro_opt_parse, below a flag and MARO_ADVERTISE */
		parse(&cm, NULL, NULL);
		CHECK(cm.co.advertise && !strcmp(cm.co.advertise, g));
		setenv("MARO_ADVERTISE", "10.1.2.3", 1);
		parse(&cm, NULL, NULL);
		CHECK(cm.co.advertise == NULL);
		unsetenv("MARO_ADVERTISE");
	}

	/* the CPUs of this node's share of the job: only in a job, only a number */
	clear();
	setenv("SLURM_CPUS_ON_NODE", "6", 1);
	CHECK(maro_scheduler_cpus() == 0);
	setenv("SLURM_JOB_ID", "9", 1);
	CHECK(maro_scheduler_cpus() == 6);
	setenv("SLURM_CPUS_ON_NODE", "6x", 1);
	CHECK(maro_scheduler_cpus() == 0);
	setenv("SLURM_CPUS_ON_NODE", "-6", 1);
	CHECK(maro_scheduler_cpus() == 0);

	/* the precedence: flag > MARO_* > the scheduler's > default */
	clear();
	parse(&cm, NULL, NULL);
	CHECK(cm.name == NULL && cm.co.group == NULL && cm.co.advertise == NULL);
	setenv("SLURM_JOB_ID", "77", 1);
	setenv("SLURM_PROCID", "5", 1);
	setenv("SLURMD_NODENAME", "n2", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.co.group && !strcmp(cm.co.group, "slurm-77"));
	setenv("MARO_GROUP", "mine", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.co.group == NULL);	/* MARO_GROUP's, read where the registry opens */
	parse(&cm, "-g", "flagged");
	CHECK(cm.co.group && !strcmp(cm.co.group, "flagged"));
	setenv("MARO_GROUP", "", 1);	/* empty is unset */
	parse(&cm, NULL, NULL);
	CHECK(cm.co.group && !strcmp(cm.co.group, "slurm-77"));
	setenv("MARO_NAME", "worker.%h.%r", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.name && !strcmp(cm.name, "worker.n2.5"));
	parse(&cm, "-n", "m.%r");
	CHECK(cm.name && !strcmp(cm.name, "m.5"));
	setenv("MARO_NAME", "plain", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.name && !strcmp(cm.name, "plain"));
	/* a single node: no address from the scheduler, the default finds one */
	setenv("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1", 1);
	setenv("SLURM_JOB_NUM_NODES", "1", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.co.advertise == NULL);
	setenv("MARO_ADVERTISE", "10.1.2.3", 1);
	parse(&cm, NULL, NULL);
	CHECK(cm.co.advertise == NULL);
	parse(&cm, "--advertise", "10.9.9.9");
	CHECK(cm.co.advertise && !strcmp(cm.co.advertise, "10.9.9.9"));
	clear();
}
