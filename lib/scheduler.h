/*
 * scheduler: what a batch scheduler's environment says of this process.
 *
 * Under Slurm's srun every task finds its rank, its node and its job in
 * the environment (SLURM_PROCID, SLURMD_NODENAME, SLURM_JOB_ID ...).  opt.c
 * resolves the shared flags with one precedence,
 *
 *	flag > MARO_* variable > this module > default
 *
 * and asks here only for what the first two left unset.  Reads the
 * environment, never prints; outside a scheduler every function says so
 * (NULL, ENOENT) and the defaults apply.
 */
#ifndef MARO_SCHEDULER_H
#define MARO_SCHEDULER_H

#include <stddef.h>

/*
 * Expands a name template into out (n bytes): "%r" the task's rank
 * (SLURM_PROCID under srun, else MARO_JOB, the job's index under
 * maro-pool), "%h" the short host name (SLURMD_NODENAME under Slurm, else
 * gethostname(2) up to its first '.'), "%%" a '%'.  A template without '%'
 * is copied.  0, or -1 with errno: EINVAL an unknown or unfinished '%',
 * ENOENT "%r" with neither rank, ENAMETOOLONG out too small.
 */
int maro_scheduler_name(const char *tmpl, char *out, size_t n);

/*
 * The group of the Slurm job this process runs in, "slurm-JOBID"
 * (SLURM_JOB_ID), written to buf; NULL outside a job.
 */
const char *maro_scheduler_group(char *buf, size_t n);

/*
 * In a Slurm job over more than one node (SLURM_JOB_NUM_NODES, or
 * SLURM_NNODES, above 1): the address of this node's interface that
 * routes to the node srun was started on (SLURM_LAUNCH_NODE_IPADDR), the
 * one the other nodes reach, written to buf.  NULL elsewhere, and when
 * the route goes to a loopback address.
 */
const char *maro_scheduler_advertise(char *buf, size_t n);

/*
 * The CPUs the scheduler gave this job on this node (SLURM_CPUS_ON_NODE),
 * 1 or more; 0 outside a job, or when it says nothing usable.
 */
unsigned long maro_scheduler_cpus(void);

#endif
