#!/usr/bin/env bats
# check: early (a long one)
# One job script, two infrastructures (maro-slurm(7)): scripts/slurm-demo on
# one machine, and under a real Slurm 22.05 of three nodes, each a network
# namespace with its own host name and address on a private bridge, with
# slurmctld on a fourth.  The suite starts the cluster and takes it down;
# the cluster's tests skip, saying why, where namespaces cannot be made.
#
# Traps of the recipe: slurmd is started with nsenter --net, never with
# ip netns exec (which remounts /sys, and slurmd dies without its cgroup
# mount); SlurmctldHost must be the controller's own host name; every
# client command needs SLURM_CONF.

load helpers
load netns

NET=10.78.0
declare -gA ADDR=([ctl]=$NET.1 [n1]=$NET.11 [n2]=$NET.12 [n3]=$NET.13)
HOSTS="ctl n1 n2 n3"
NODES="n1 n2 n3"

# on HOST CMD...: CMD in HOST's network namespace and a UTS namespace of
# its own named HOST; nsenter, unshare and sh all exec: its pid is CMD's.
on() {
	local host=$1
	shift
	nsenter --net="/run/netns/$NETNS-$host" unshare --uts sh -c "$HOSTED" "$host" "$@"
}
# ctl CMD...: a client command on the controller's network (sbatch, squeue...)
ctl() { nsenter --net="/run/netns/$NETNS-ctl" "$@"; }

slurm_conf() {
	local d=$BATS_FILE_TMPDIR/slurm n
	mkdir -p "$d/state" "$d/spool"
	cat <<-EOF
	ClusterName=maro
	SlurmctldHost=ctl(${ADDR[ctl]})
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/none
	CredType=cred/none
	SlurmctldPort=6817
	SlurmdPort=6818
	StateSaveLocation=$d/state
	SlurmdSpoolDir=$d/spool/%n
	SlurmctldPidFile=$d/slurmctld.pid
	SlurmdPidFile=$d/slurmd.%n.pid
	SlurmctldLogFile=$d/slurmctld.log
	SlurmdLogFile=$d/slurmd.%n.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	SchedulerType=sched/builtin
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	SlurmdParameters=config_overrides
	MpiDefault=none
	ReturnToService=2
	SlurmdTimeout=10
	MinJobAge=30
	KillWait=5
	EOF
	for n in $NODES; do
		echo "NodeName=$n NodeAddr=${ADDR[$n]} CPUs=8"
	done
	echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
}

# daemon HOST CMD...: a daemon of the cluster, bounded, listed for net_down
daemon() {
	local host=$1
	shift
	# in a subshell: out of the job table, whose notices of a daemon a
	# test killed would land in the suite's output
	(
		timeout -k 2 600 nsenter --net="/run/netns/$NETNS-$host" unshare --uts \
			sh -c "$HOSTED" "$host" "$@" < /dev/null >> "$BATS_FILE_TMPDIR/daemons.log" 2>&1 3>&- &
		echo "pid $!" >> "$BATS_FILE_TMPDIR/made"
	)
}

all_idle() { [ "$(ctl sinfo -h -o '%T %D' 2>/dev/null)" = "idle 3" ]; }
site_redis_ready() {
	[ "$(ctl timeout 2 redis-cli -h "${ADDR[ctl]}" -p 6379 ping 2>/dev/null)" = PONG ]
}

# bats runs no skip in setup_file: it says why in NO_CLUSTER, and each
# cluster test skips with that reason.
setup_file() {
	local t
	export NETNS=mslurm$$ NO_CLUSTER=
	export SLURM_CONF=$BATS_FILE_TMPDIR/slurm.conf
	if [ "$(id -u)" -ne 0 ]; then
		NO_CLUSTER="a Slurm cluster of network namespaces needs root"
	elif ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null ||
		! command -v sbatch > /dev/null; then
		NO_CLUSTER="Slurm is not installed (slurmctld, slurmd, slurm-client: make deps)"
	elif ! command -v redis-server > /dev/null || ! command -v nsenter > /dev/null; then
		NO_CLUSTER="redis-server or nsenter is not installed"
	elif ! net_up 2> "$BATS_FILE_TMPDIR/net.err"; then
		net_down
		NO_CLUSTER="cannot make network namespaces: $(head -n 1 "$BATS_FILE_TMPDIR/net.err")"
	fi
	[ -z "$NO_CLUSTER" ] || return 0
	slurm_conf > "$SLURM_CONF"
	daemon ctl slurmctld -D -i
	for t in $NODES; do
		daemon "$t" slurmd -D -N "$t"
	done
	# a Redis the site runs, on the controller's host, for the tests that
	# read the registry after the job
	daemon ctl redis-server --port 6379 --bind "${ADDR[ctl]}" --protected-mode no \
		--save '' --appendonly no --dir "$BATS_FILE_TMPDIR"
	wait_until 20 all_idle && wait_until 10 site_redis_ready || {
		tail -n 20 "$BATS_FILE_TMPDIR/daemons.log" "$BATS_FILE_TMPDIR"/slurm/*.log >&2
		return 1
	}
	# where a job script finds maro-slurm, as make install puts it on PATH
	mkdir -p "$BATS_FILE_TMPDIR/path"
	ln -s "$MARO_TOP/scripts/maro-slurm" "$BATS_FILE_TMPDIR/path/maro-slurm"
}

teardown_file() { net_down; }

cluster() { [ -z "$NO_CLUSTER" ] || skip "$NO_CLUSTER"; }

setup() {
	unset MARO_REGISTRY MARO_GROUP MARO_NAME MARO_WORKERS
	PATH="$BATS_FILE_TMPDIR/path:$MARO_TOP/scripts:$PATH"
	# the job's directory lands here, where the test can see it go
	export TMPDIR=$BATS_TEST_TMPDIR
	cd "$BATS_TEST_TMPDIR"
	# the page's examples run from the top of the source tree
	ln -s "$MARO_TOP/scripts" scripts
}

teardown() {
	local j
	# a job a test left running is cancelled (its tasks end by slurmd's hand)
	for j in $(cat jobs 2>/dev/null); do
		ctl scancel "$j" 2>/dev/null || :
	done
	default_teardown
}

# submit ARGS...: sbatch, the job id in $job (and in ./jobs for teardown)
submit() {
	job=$(ctl sbatch --parsable -o "$PWD/job.out" "$@") || return 1
	echo "$job" >> jobs
}
ended() {
	ctl scontrol show job -o "$1" 2>/dev/null |
		grep -Eq 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)'
}
# nothing of a job is left on a node: no process in its namespace but slurmd
node_clean() {
	local pid
	for pid in $(ip netns pids "$NETNS-$1"); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmd ] || return 1
	done
}
all_clean() { node_clean n1 && node_clean n2 && node_clean n3; }
# what stays of a node that is not clean, for a failure's message
leftovers() {
	local n pid
	for n in $NODES; do
		for pid in $(ip netns pids "$NETNS-$n"); do
			echo "$n: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
		done
	done
}

# example N: the Nth example of maro-slurm(7), as a shell reads it
example() { page_example maro-slurm.7 "$1"; }

# job_output: job.out (stdout and stderr) without the notices of what a
# tool awaited, which a busy node may or may not print
job_output() {
	grep -Ev "^maro-[a-z-]+: .*; waiting for it$" job.out || :
}

# in_group GROUP NAME: NAME is live in GROUP
in_group() { maro-peers -g "$1" -f json | grep -q "\"name\":\"$2\""; }

# every task of seq N answered once, with its square, in FILE
answered_once() {
	[ "$(cut -d' ' -f1 "$2" | sort -n)" = "$(seq "$1")" ] || return 1
	awk '$2 != $1 * $1 { bad++ } END { exit bad > 0 }' "$2"
}

# watch_ps: every process's argv on this machine (all namespaces share the
# process table), and the job registry's password once srun or a worker
# has it (MARO_REGISTRY in its environment: no file holds it)
watch_ps() {
	local p
	while :; do
		[ -s pass ] || for p in $(pgrep -f '^(srun --ntasks=|maro-dist -n worker)'); do
			tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null |
				sed -n 's|^MARO_REGISTRY=redis://:\([0-9a-f]*\)@.*|\1|p' > pass.new
			[ ! -s pass.new ] || { mv pass.new pass; break; }
		done 2> /dev/null
		ps -e -ww -o args= >> ps.log
		sleep 0.05
	done
}

@test "slurm-demo on one machine (maro-slurm(7)'s example): a maro-pool of workers on the embedded registry, the same job" {
	run -0 timeout 60 sh -c "$(example 1)"
	assert_line "slurm-demo: 3 workers live"
	assert_line --regexp '^    hosts 1, members 4, '
	assert_line --regexp '^slurm-demo: 1000 answers from 3 workers in [0-9.]+ s, [0-9]+ tasks/s$'
	assert_line --regexp '^slurm-demo: broadcast answered by worker\.[^ ]+\.1 worker\.[^ ]+\.2 worker\.[^ ]+\.3 $'
	# 60% of 3 is 2, rounded up
	assert_line --regexp '^slurm-demo: 60% barrier passed with (worker\.[^ ]+\.[123] ){2,3}$'
	assert_line "slurm-demo: stopped"
	assert_line --regexp '^slurm-demo: first answer [0-9]+\.[0-9]{3} s after the scatter started$'
	refute_output --partial "not every worker reported"
	answered_once 1000 answers
	# the job's directory and every process it started are gone
	run ls
	refute_output --partial maro-job
	run pgrep -s 0 -f "maro-dist -n worker.%h.%r"
	assert_failure
}

@test "identity from Slurm's environment: a name from the rank and node, the group from the job id, below -n, -g and MARO_GROUP" {
	export MARO_REGISTRY=dir:$BATS_TEST_TMPDIR/registry
	SLURM_JOB_ID=55 SLURM_PROCID=3 SLURMD_NODENAME=n9 bg 20 maro-recv -n 'worker.%h.%r' -W 15s > /dev/null
	wait_until 10 in_group slurm-55 worker.n9.3
	# the same job's tasks see it without naming the group; no other job's
	run -0 env SLURM_JOB_ID=55 maro-peers -f json
	assert_output --partial '"name":"worker.n9.3"'
	run -0 --separate-stderr env SLURM_JOB_ID=56 maro-peers -f json
	assert_output ''
	[[ $stderr == "maro-peers: no group 'slurm-56' in dir:"*"(groups: slurm-55)" ]]
	# MARO_GROUP and -g come first
	run -0 env SLURM_JOB_ID=56 MARO_GROUP=slurm-55 maro-peers -f json
	assert_output --partial '"name":"worker.n9.3"'
	run -0 env SLURM_JOB_ID=56 MARO_GROUP=other maro-peers -g slurm-55 -f json
	assert_output --partial '"name":"worker.n9.3"'
	# -n is a template in MARO_NAME too; %% is a per cent sign, and
	# under maro-pool %r is the job's index
	SLURM_JOB_ID=55 MARO_JOB=7 MARO_NAME='w.%h.%r' bg 20 maro-recv -W 15s > /dev/null
	wait_until 10 in_group slurm-55 "w.$(hostname -s).7"
}

@test "a name template with no rank, or an unknown %, is a usage error naming it" {
	export MARO_REGISTRY=dir:$BATS_TEST_TMPDIR/registry
	run -2 maro-recv -n 'worker.%r' -W 1s
	assert_output "maro-recv: name 'worker.%r': %r is the task's rank, and there is none (SLURM_PROCID under srun, MARO_JOB under maro-pool); try 'maro-recv --help'"
	run -2 env SLURM_PROCID=1 maro-send -n 'w.%x' -p x -d y -W 1s
	assert_output "maro-send: name 'w.%x': '%' is followed by r, h or % only; try 'maro-send --help'"
	run -2 env SLURM_PROCID=1 maro-recv -n 'w.%' -W 1s
	assert_output --partial "name 'w.%': '%' is followed by r, h or % only"
	run -2 env SLURM_PROCID=1 MARO_NAME="$(printf 'w%.0s' $(seq 130)).%r" maro-recv -W 1s
	assert_output --partial "is too long once expanded"
	run -2 maro-recv -n 'a%%b' -W 1s
	assert_output --partial "invalid name 'a%b'"
}

@test "maro-slurm(7)'s own job script on one machine: the squares of 1 to 100" {
	example 3 > job.sh
	run -0 --separate-stderr env MARO_WORKERS=2 timeout 60 sh job.sh
	[ "$(sort -n <<< "$output")" = "$(seq 100 | awk '{ print $1 * $1 }')" ] || fail "$output"
	run ls
	refute_output --partial maro-job
}

@test "sbatch slurm-demo over three nodes: 1000 tasks answered once, every node in the broadcast and the status, the job's registry gone at the end, its password in no argv" {
	local t0 pass
	cluster
	bg 60 bash -c "$(declare -f watch_ps); watch_ps"
	t0=$(date +%s.%N)
	# maro-slurm(7)'s example, as pasted
	run -0 ctl sh -c "$(example 2)"
	assert_output --regexp '^Submitted batch job [0-9]+$'
	job=${output##* }
	echo "$job" >> jobs
	wait_until 40 ended "$job" || fail "job $job: $(cat "slurm-$job.out")"
	kill_bg
	run -0 cat "slurm-$job.out"
	assert_line "slurm-demo: 6 workers live"
	# maro-peers --status: three hosts, each with its two workers
	assert_line --regexp '^    hosts 3, members 6, '
	assert_line --regexp '^    n1 +[0-9]+ .* 2$'
	assert_line --regexp '^    n2 +[0-9]+ .* 2$'
	assert_line --regexp '^    n3 +[0-9]+ .* 2$'
	assert_line --regexp '^slurm-demo: 1000 answers from [0-9]+ workers in [0-9.]+ s, [0-9]+ tasks/s$'
	answered_once 1000 answers
	# the broadcast: every worker, on every node, named by its rank
	assert_line "slurm-demo: broadcast answered by worker.n1.0 worker.n1.1 worker.n2.2 worker.n2.3 worker.n3.4 worker.n3.5 "
	# the barrier: at least 60% of the six (4), each a worker of the job
	assert_line --regexp '^slurm-demo: 60% barrier passed with (worker\.n[123]\.[0-5] ){4,6}$'
	assert_line "slurm-demo: stopped"
	assert_line --regexp '^slurm-demo: first answer [0-9]+\.[0-9]{3} s after the scatter started$'
	assert_line "slurm-demo: answers in $PWD/answers"
	echo "# sbatch to the end of the job: $(echo "$(date +%s.%N) - $t0" | bc) s; $(grep '^slurm-demo: first' "slurm-$job.out")" >&3
	# Slurm would requeue the job after a node failure: maro-slurm said not to
	run -0 ctl scontrol show job -o "$job"
	assert_output --partial " Requeue=0 "
	# the registry was the job's own, on n1: its password was in no
	# process's argv while it ran, and the server is gone with its files
	[ -s pass ] || fail "the job's registry password was never seen"
	pass=$(cat pass)
	grep -q "^redis-server ${ADDR[n1]}:" ps.log || fail "no redis-server on n1 was seen"
	grep -q "maro-dist -n worker.%h.%r" ps.log || fail "no worker was seen"
	run grep -c -F "$pass" ps.log
	assert_output 0
	run pgrep -f "redis-server ${ADDR[n1]}:"
	assert_failure
	run ls
	refute_output --partial maro-job
	wait_until 15 all_clean || fail "left on the nodes: $(leftovers)"
}

@test "scancel mid-scatter: every task of the job ends, on every node, and no entry is left in the site's Redis" {
	cluster
	export MARO_REGISTRY=redis://${ADDR[ctl]}:6379/0
	submit --nodes=3 --ntasks-per-node=2 "$MARO_TOP/scripts/slurm-demo" 2000000 "$PWD/answers"
	wait_until 30 has_lines answers 1000 || fail "job $job: $(cat job.out)"
	# six workers in the job's group, each advertising its node's address
	run -0 ctl maro-peers -g "slurm-$job" -P worker -f json
	[ "${#lines[@]}" -eq 6 ] || fail "$output"
	run -0 ctl maro-peers -g "slurm-$job" -P worker -f json
	[ "$(grep -c "tcp://${ADDR[n1]}:" <<< "$output")" -eq 2 ] || fail "$output"
	[ "$(grep -c "tcp://${ADDR[n2]}:" <<< "$output")" -eq 2 ] || fail "$output"
	[ "$(grep -c "tcp://${ADDR[n3]}:" <<< "$output")" -eq 2 ] || fail "$output"
	run -0 ctl redis-cli -h "${ADDR[ctl]}" -p 6379 --scan --pattern "maro:slurm-$job:*"
	assert_line "maro:slurm-$job:members"
	run ctl scancel "$job"
	assert_success
	wait_until 20 ended "$job"
	wait_until 20 all_clean || fail "left on the nodes: $(leftovers)"
	run -0 --separate-stderr ctl maro-peers -g "slurm-$job" -f json
	assert_output ''
	[[ $stderr == "maro-peers: no group 'slurm-$job' in redis://"* ]]
	run -0 ctl redis-cli -h "${ADDR[ctl]}" -p 6379 --scan --pattern "maro:slurm-$job:*"
	assert_output ''
	run ls
	refute_output --partial maro-job
}

@test "scancel mid-scatter with the job's own registry: the registry stops with the job" {
	cluster
	submit --nodes=3 --ntasks-per-node=2 "$MARO_TOP/scripts/slurm-demo" 2000000 "$PWD/answers"
	wait_until 30 has_lines answers 1000 || fail "job $job: $(cat job.out)"
	pgrep -f "redis-server ${ADDR[n1]}:" > /dev/null || fail "no job registry on n1"
	run ctl scancel "$job"
	assert_success
	wait_until 20 ended "$job"
	wait_until 20 all_clean || fail "left on the nodes: $(leftovers)"
	run pgrep -f "redis-server ${ADDR[n1]}:"
	assert_failure
	run ls
	refute_output --partial maro-job
}

@test "maro-slurm(7)'s own job script under sbatch: eight workers on two nodes, the squares of 1 to 100" {
	cluster
	example 3 > job.sh
	submit job.sh
	wait_until 40 ended "$job" || fail "job $job: $(cat job.out)"
	# the squares (stdout), and maybe a notice of what was awaited (stderr, the same file)
	run -0 job_output
	[ "$(sort -n <<< "$output")" = "$(seq 100 | awk '{ print $1 * $1 }')" ] || fail "$output"
	run -0 ctl scontrol show job -o "$job"
	assert_output --partial "JobState=COMPLETED"
	assert_output --partial "NumNodes=2 NumCPUs=8 NumTasks=8"
	wait_until 15 all_clean || fail "left on the nodes: $(leftovers)"
}

@test "a job that asks for no tasks gets a worker per allocated CPU: --exclusive on two nodes of 8 CPUs is 16" {
	cluster
	# the page's job script without its --ntasks-per-node, saying how many
	example 3 | sed '/ntasks-per-node/d' > job.sh
	echo 'echo "workers $MARO_WORKERS"' >> job.sh
	submit --exclusive job.sh
	wait_until 40 ended "$job" || fail "job $job: $(cat job.out)"
	run -0 cat job.out
	assert_line "workers 16"
	run -0 job_output
	[ "$(grep -v '^workers' <<< "$output" | sort -n)" = "$(seq 100 | awk '{ print $1 * $1 }')" ] || fail "$output"
	wait_until 15 all_clean || fail "left on the nodes: $(leftovers)"
}

@test "maro-pool under srun, one per node: a job per CPU the node gave the job (SLURM_CPUS_ON_NODE), named by its host" {
	cluster
	cat > pools.sh <<-'EOF'
	#!/bin/sh
	set -eu
	. maro-slurm
	srun --ntasks-per-node=1 maro-pool -q -- maro-dist --raw \
		--co 'master:sq:1' 'while read -r x; do echo $((x * x)); done' --on 'master:stop:1' --exit &
	pools=$!
	maro-peers -e worker=6 -W 30s -q
	maro-peers -P worker -f json | sed 's/.*"name":"\([^"]*\)".*/member \1/' | sort
	seq 100 | maro-scatter -n master -P worker -t sq --json-lines -W 30s -f payload | sort -n | tail -n 1
	maro-bcast -n master -P worker -t stop --notification -W 30s
	wait $pools
	EOF
	submit --nodes=2 --ntasks-per-node=1 --cpus-per-task=3 pools.sh
	wait_until 40 ended "$job" || fail "job $job: $(cat job.out)"
	run -0 job_output
	assert_output "$(printf 'member worker.%s\n' n1.1 n1.2 n1.3 n2.1 n2.2 n2.3; echo 10000)"
	run -0 ctl scontrol show job -o "$job"
	assert_output --partial "JobState=COMPLETED"
}

@test "a job script that ends while its workers run: they get SIGTERM themselves and leave the site's Redis at once, not at their TTL" {
	cluster
	# a TTL longer than the test: only leaving removes an entry
	export MARO_REGISTRY=redis://${ADDR[ctl]}:6379/0 MARO_TTL=60s
	cat > ends.sh <<-'EOF'
	#!/bin/sh
	set -eu
	. maro-slurm
	maro_workers maro-dist -n 'worker.%h.%r' --raw \
		--co 'master:sq:1' 'while read -r x; do echo $((x * x)); done'
	maro-peers -e worker="$MARO_WORKERS" -W 30s -q
	echo "workers live: $(maro-peers -P worker -f json | wc -l)"
	EOF
	submit --nodes=2 --ntasks-per-node=2 ends.sh
	wait_until 40 ended "$job" || fail "job $job: $(cat job.out)"
	run -0 ctl redis-cli -h "${ADDR[ctl]}" -p 6379 --scan --pattern "maro:slurm-$job:*"
	assert_output ''
	# each task got SIGTERM, its handlers too (a worker whose coprocess
	# ended first says so and exits 1)
	run -0 cat job.out
	assert_line "workers live: 4"
	refute_output --partial "exit code 137"
	refute_output --regexp "signal|Killed"
	run -0 ctl scontrol show job -o "$job"
	assert_output --partial "JobState=COMPLETED"
	wait_until 15 all_clean || fail "left on the nodes: $(leftovers)"
}

@test "a job of one node: the registry is dir: in the job's directory, no redis-server, and the page's job script runs" {
	cluster
	example 3 > job.sh
	echo 'echo "registry $MARO_REGISTRY"' >> job.sh
	submit --nodes=1 --ntasks-per-node=4 job.sh
	wait_until 40 ended "$job" || fail "job $job: $(cat job.out)"
	run -0 job_output
	assert_line --regexp "^registry dir:$BATS_TEST_TMPDIR/maro-job\.[A-Za-z0-9]{6}/registry\$"
	[ "$(grep -v '^registry' <<< "$output" | sort -n)" = "$(seq 100 | awk '{ print $1 * $1 }')" ] || fail "$output"
	run -0 ctl scontrol show job -o "$job"
	assert_output --partial "JobState=COMPLETED"
	assert_output --partial "NumNodes=1 NumCPUs=4 NumTasks=4"
	run ls
	refute_output --partial maro-job
}

# stop_coprocesses NODE N: SIGSTOP the N coprocesses of slurm-demo's
# workers on NODE in job $job (the "while read" shells, not the workers,
# whose arguments say the same); true once N are stopped.  One process
# started a look: on a machine busy elsewhere a look of a fork per
# process took seconds, and came after the scatter had ended.
stop_coprocesses() {
	local pid comm args env n=0
	for pid in $(ip netns pids "$NETNS-$1"); do
		read -r comm 2> /dev/null < "/proc/$pid/comm" || continue
		[ "$comm" = sh ] || continue
		mapfile -d '' args 2> /dev/null < "/proc/$pid/cmdline" || continue
		[[ ${args[2]:-} == 'while read -r x'* ]] || continue
		mapfile -d '' env 2> /dev/null < "/proc/$pid/environ" || continue
		[[ " ${env[*]} " == *" SLURM_JOB_ID=$job "* ]] || continue
		kill -STOP "$pid" 2> /dev/null && n=$((n + 1))
	done
	[ "$n" -ge "$2" ]
}

# Last: the node it kills is down for the rest of the suite.
@test "a node killed mid-scatter (slurmd, its steps and tasks): its tasks go to the other nodes, each answered once" {
	local pid
	cluster
	export MARO_TTL=2s
	submit --nodes=3 --ntasks-per-node=2 "$MARO_TOP/scripts/slurm-demo" 40000 "$PWD/answers"
	# n3's two coprocesses stop answering: its workers, live, keep the
	# tasks they are given, and the scatter cannot end before the node is
	# killed, however late this test comes to it (a machine busy elsewhere)
	wait_until 30 stop_coprocesses n3 2 || fail "job $job: $(cat job.out)"
	wait_until 30 has_lines answers 2000 || fail "job $job: $(cat job.out)"
	# (stopped too late, after the scatter had ended, nothing would move)
	run -1 grep -q '^slurm-demo: 40000 answers' job.out
	for pid in $(ip netns pids "$NETNS-n3"); do
		kill -KILL "$pid" 2>/dev/null || :
	done
	# the scatter ends without n3's workers (the job itself, waiting for
	# n3 to be declared down, is cancelled by teardown)
	wait_until 40 grep -q '^slurm-demo: 40000 answers' job.out || fail "job $job: $(cat job.out)"
	answered_once 40000 answers
	run -0 cat job.out
	assert_line --regexp "^maro-scatter: peer 'worker\.n3\.4' left with [0-9]+ unanswered tasks?: sending them elsewhere$"
	assert_line --regexp "^maro-scatter: peer 'worker\.n3\.5' left with [0-9]+ unanswered tasks?: sending them elsewhere$"
}
