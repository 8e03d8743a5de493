#!/usr/bin/env bats
# backends: dir redis
# maro-pool: job names and environment, respawn with backoff, giving up,
# exit 0 as done, CPU pinning, --config, clean stop (no orphans), the pool's
# own entry and status reply, maro-peers --status.

load helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	HOST=$(hostname | cut -c1-48 | sed 's/[^A-Za-z0-9-]/-/g')
	# every job runs this script, so that teardown finds strays by its path
	JOB=$BATS_TEST_TMPDIR/job
	cat > "$JOB" <<-'EOF'
	#!/bin/sh
	# a job: says who it is, then serves as a receiver (or runs "$@")
	echo "$MARO_NAME $MARO_GROUP $MARO_POOL $MARO_JOB cpus=$MARO_CPUS $$" >> "${JOBLOG:-jobs.log}"
	echo "$MARO_NAME ${MARO_REPLACES_PID-unset} $$" >> replaces.log
	[ $# -gt 0 ] && exec "$@"
	exec maro-recv -f json
	EOF
	chmod +x "$JOB"
}
teardown() {
	kill_bg
	pkill -KILL -f "$BATS_TEST_TMPDIR/job" 2>/dev/null || :
}

# pool_info: the info field of this host's pool entry
pool_info() { maro-peers -P pool -f json | jq -r .info; }
info_has() { pool_info | grep -q -- "$1"; }
pid_of() { maro-peers -f json | jq -r "select(.name == \"$1\") | .pid"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# restarted OLD: worker.HOST.1 is live under a new pid, that of a job told
# it replaces OLD (its line in replaces.log); sets new to it
restarted() {
	new=$(pid_of "worker.$HOST.1")
	[ -n "$new" ] && [ "$new" != "$1" ] && grep -qx "worker.$HOST.1 $1 $new" replaces.log
}

@test "-n N, the old spelling of -j N, still works and says so" {
	run -0 --separate-stderr maro-pool -n 1 --name pool.old -q -W 5s -- true
	assert_equal "$stderr" "maro-pool: -n N is the old spelling of -j N (--jobs); it will mean a name, as in the other tools"
	run -0 maro-pool --list-options
	refute_line -- -n
	assert_line -- -j
}

@test "usage: no command, bad counts, CPU lists, config clashes; a command that cannot run" {
	run maro-pool -j 2
	assert_failure 2
	assert_output --partial "no command"
	run maro-pool -j 0 -- true
	assert_failure 2
	run maro-pool -j x -- true
	assert_failure 2
	run maro-pool --cpus 3-1 -- true
	assert_failure 2
	assert_output --partial "invalid CPU list"
	run maro-pool --cpus 4096 -- true
	assert_failure 2
	assert_output --partial "CPU 4096 is not available"
	run maro-pool -T 'a.b' -- true
	assert_failure 2
	run maro-pool --config /nonexistent
	assert_failure 2
	assert_output --partial "/nonexistent"
	printf 'worker 2 - true\n' > c
	run maro-pool --config c -j 2
	assert_failure 2
	printf '# comment\n\nworker 2 -\n' > c
	run maro-pool --config c
	assert_failure 2
	assert_output --partial "c:3:"
	printf 'worker 0 - true\n' > c
	run maro-pool --config c
	assert_failure 2
	assert_output --partial "c:1: invalid count"
	run maro-pool -j 1 -- /nonexistent/cmd
	assert_failure 2
	assert_output --partial "cannot run '/nonexistent/cmd'"
	run --separate-stderr maro-peers -f json
	assert_output ""
	run maro-pool --help
	assert_success
	assert_output --partial "usage: maro-pool"
	run maro-pool -V
	assert_success
}

@test "N jobs named TYPE.HOST.I with their environment; the pool's entry counts them" {
	bg 30 maro-pool -j 3 -- "$JOB" 2> pool.err
	wait_until 10 live_is worker. 3
	wait_until 10 live_is pool. 1
	run maro-peers -P worker -f json
	assert_success
	[ "$(echo "$output" | jq -r .name | sort | tr '\n' ' ')" = "worker.$HOST.1 worker.$HOST.2 worker.$HOST.3 " ]
	wait_until 10 has_lines jobs.log 3
	run sort jobs.log
	assert_line --index 0 --regexp "^worker\.$HOST\.1 $MARO_GROUP pool\.$HOST 1 cpus= [0-9]+$"
	assert_line --index 2 --regexp "^worker\.$HOST\.3 $MARO_GROUP pool\.$HOST 3 cpus= [0-9]+$"
	run pool_info
	assert_output "jobs=3 running=3 restarts=0 gaveup=0 worker=3"
	run maro-peers -P pool -f json
	assert_output --partial '"type":"pool"'
	# the jobs are this pool's children, each in its own process group
	pool=$(child_pid "$BG_PID" maro-pool)
	for w in 1 2 3; do
		pid=$(pid_of "worker.$HOST.$w")
		[ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = "$pool" ]
		[ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ]
	done
	# and the registry reaches them: a message to one arrives
	run maro-send -p "worker.$HOST.2" -t hi --notification -W 10s
	assert_success
}

@test "a killed job is restarted under its name at once (MARO_REPLACES_PID), and the restart is counted and logged" {
	# entries that live 60 s: a restart that waited for the dead one to
	# expire would not be back for a minute
	MARO_TTL=60s bg 60 maro-pool -j 2 -- "$JOB" 2> pool.err
	wait_until 10 live_is worker. 2
	old=$(pid_of "worker.$HOST.1")
	kill -KILL "$old"
	# back long before the dead entry would expire, on Redis too: the new
	# job is told the pid it replaces, and takes that entry over (20 s: the
	# bound of a busy machine, a third of the TTL)
	wait_until 20 restarted "$old"
	run -0 grep "^worker.$HOST.1 " replaces.log
	assert_output "worker.$HOST.1 unset $old
worker.$HOST.1 $old $new"
	wait_until 5 info_has "restarts=1 "
	run pool_info
	assert_output "jobs=2 running=2 restarts=1 gaveup=0 worker=2"
	run cat pool.err
	assert_output --partial "worker.$HOST.1 was killed by SIGKILL; restart 1 in 0.1s"
	[ "$(grep -c "^worker.$HOST.1 " jobs.log)" -eq 2 ]
	# the new one serves
	run maro-send -p "worker.$HOST.1" -t hi --notification -W 10s
	assert_success
}

@test "a job is its process group: what a killed job started goes with it, and the name is served again" {
	bg 30 maro-pool -j 1 -- "$JOB" sh -c 'maro-recv -f json & wait' 2> pool.err
	wait_until 10 live_is worker. 1
	recv=$(pid_of "worker.$HOST.1")
	leader=$(ps -o pgid= -p "$recv" | tr -d ' ')
	kill -KILL "$leader"
	wait_until 5 gone "$recv"
	wait_until 5 eval '[ -n "$(pid_of worker.$HOST.1)" ] && [ "$(pid_of worker.$HOST.1)" != "$recv" ]'
	run maro-send -p "worker.$HOST.1" -t hi --notification -W 10s
	assert_success
}

@test "a job that exits 0 is done, not restarted; the pool exits 0 when all are done" {
	bg 30 maro-pool -j 3 -- "$JOB" sh -c 'exit 0' 2> pool.err
	pool=$BG_PID
	wait_exit "$pool" 20
	[ "$status" -eq 0 ]
	[ "$(wc -l < jobs.log)" -eq 3 ]
	run cat pool.err
	assert_output --partial "finished (status 0)"
	refute_output --partial "restart"
	run --separate-stderr maro-peers -f json
	assert_output ""
}

@test "a job that keeps failing is given up after --max-restarts in the window: exit 1" {
	bg 30 maro-pool -j 1 --max-restarts 2 --restart-window 1m -- "$JOB" sh -c 'exit 3' 2> pool.err
	wait_exit "$BG_PID" 20
	[ "$status" -eq 1 ]
	[ "$(wc -l < jobs.log)" -eq 3 ]
	run cat pool.err
	assert_line "maro-pool: worker.$HOST.1 exited with status 3; restart 1 in 0.1s"
	assert_line "maro-pool: worker.$HOST.1 exited with status 3; restart 2 in 0.2s"
	assert_line "maro-pool: worker.$HOST.1 exited with status 3; giving up after 2 restarts in 60s"
}

@test "a job that fails less often than the window allows keeps being restarted" {
	# 3 restarts, each more than the 200 ms window after the one before
	bg 30 maro-pool -j 1 --max-restarts 1 --restart-window 200ms -- "$JOB" sh -c 'sleep 0.3; exit 1' 2> pool.err
	wait_until 15 has_lines jobs.log 4
	run cat pool.err
	refute_output --partial "giving up"
}

@test "--cpus: each job is pinned to its share of the list (checked on the running jobs)" {
	ncpu=$(nproc)
	[ "$ncpu" -ge 2 ] || skip "needs 2 CPUs"
	bg 30 maro-pool -j 4 --cpus 0-1 -- "$JOB" 2> pool.err
	wait_until 10 live_is worker. 4
	for w in 1 2 3 4; do
		pid=$(pid_of "worker.$HOST.$w")
		want=$(( (w - 1) % 2 ))
		run grep Cpus_allowed_list "/proc/$pid/status"
		assert_output --regexp "[[:space:]]$want$"
	done
	# two jobs on two CPUs: one each, in order
	bg 30 maro-pool --name pool.two -T two --cpus 0-1 -- "$JOB" 2> two.err
	wait_until 10 live_is two. 2
	pid=$(pid_of "two.$HOST.2")
	run grep Cpus_allowed_list "/proc/$pid/status"
	assert_output --regexp "[[:space:]]1$"
	grep -q "^two.$HOST.2 .* cpus=1 " jobs.log
}

@test "--config: several job types with their counts, CPUs and commands" {
	cat > pool.conf <<-EOF
	# type     count  cpus  command
	learner    1      0     JOBLOG=jobs.log exec $JOB
	actor      2      -     JOBLOG=jobs.log exec $JOB
	EOF
	bg 30 maro-pool --config pool.conf 2> pool.err
	wait_until 10 live_is learner. 1
	wait_until 10 live_is actor. 2
	run pool_info
	assert_output "jobs=3 running=3 restarts=0 gaveup=0 learner=1 actor=2"
	pid=$(pid_of "learner.$HOST.1")
	run grep Cpus_allowed_list "/proc/$pid/status"
	assert_output --regexp "[[:space:]]0$"
	grep -q "^actor.$HOST.2 $MARO_GROUP pool.$HOST 2 cpus= " jobs.log
}

@test "SIGTERM stops every job and what it started, leaves the registry clean, exits 143" {
	# each job is a shell with a child of its own, as pipelines are
	bg 30 maro-pool -j 3 -- "$JOB" sh -c 'maro-recv -f json & wait' 2> pool.err
	wait_until 10 live_is worker. 3
	pool=$(child_pid "$BG_PID" maro-pool)
	# the receivers are grandchildren of the pool, in their job's process group
	recvs=$(for w in 1 2 3; do pid_of "worker.$HOST.$w"; done)
	for p in $recvs; do
		[ "$(ps -o ppid= -p "$p" | tr -d ' ')" != "$pool" ]
		[ "$(ps -o pgid= -p "$p" | tr -d ' ')" != "$p" ]
	done
	kill -TERM "$pool"
	wait_exit "$BG_PID" 15
	[ "$status" -eq 143 ]
	run pgrep -f "$BATS_TEST_TMPDIR/job"
	assert_failure
	for p in $recvs; do gone "$p"; done
	run --separate-stderr maro-peers -f json
	assert_output ""
}

@test "a job that ignores SIGTERM is killed after --grace; SIGINT exits 130" {
	# (maro-recv would catch SIGTERM itself: a loop of sleeps keeps it ignored)
	bg 30 maro-pool -j 1 --grace 500ms -- "$JOB" sh -c 'trap "" TERM; echo up > up; while :; do sleep 0.1; done' 2> pool.err
	wait_until 10 test -s up
	pool=$(child_pid "$BG_PID" maro-pool)
	kill -INT "$pool"
	wait_exit "$BG_PID" 15
	[ "$status" -eq 130 ]
	run cat pool.err
	assert_output --partial "worker.$HOST.1 did not stop in time: killing it"
	run pgrep -f "$BATS_TEST_TMPDIR/job"
	assert_failure
}

@test "-W bounds the pool: its jobs are stopped and it exits 124" {
	bg 30 maro-pool -j 2 -W 1s -- "$JOB" 2> pool.err
	wait_exit "$BG_PID" 15
	[ "$status" -eq 124 ]
	run pgrep -f "$BATS_TEST_TMPDIR/job"
	assert_failure
}

@test "a request to the pool is answered with its counts; a notification is taken and said" {
	bg 30 maro-pool -j 2 -- "$JOB" 2> pool.err
	wait_until 10 live_is worker. 2
	run maro-send -p "pool.$HOST" -t status -f payload -W 10s
	assert_success
	assert_output "jobs=2 running=2 restarts=0 gaveup=0 worker=2"
	run maro-send -p "pool.$HOST" -t hello --notification -W 10s
	assert_success
	wait_until 5 grep -q "took a message tagged 'hello'" pool.err
	# a second pool on this host needs a name of its own
	run maro-pool -j 1 -- "$JOB"
	assert_failure 69
	assert_output --partial "give this one --name"
}

@test "maro-peers --status: hosts, members per type, pools with their counts; text and JSON" {
	bg 30 maro-pool -j 2 -- "$JOB" 2> pool.err
	bg 30 maro-recv -n master -f json
	wait_until 10 live_is worker. 2
	wait_until 10 live_is master 1
	old=$(pid_of "worker.$HOST.2")
	kill -KILL "$old"
	wait_until 5 info_has "running=2 restarts=1 "
	run maro-peers --status
	assert_success
	assert_line --index 0 "hosts 1, members 4, CPUs $(nproc)"
	assert_line --regexp "^$(hostname) +$(nproc) +[0-9]+\.[0-9]{2} +[0-9.]+[MG] +4$"
	assert_line --regexp "^master +1$"
	assert_line --regexp "^pool +1$"
	assert_line --regexp "^worker +2$"
	assert_line --regexp "^pool\.$HOST +$(hostname) +2 +2 +1 +0$"
	run maro-peers --status -f json
	assert_success
	[ "$(echo "$output" | jq -c '[.hosts, .members, .cpus, .types.worker, .types.master]')" = "[1,4,$(nproc),2,1]" ]
	[ "$(echo "$output" | jq -c '.pools[0] | [.name, .jobs, .running, .restarts, .gaveup]')" = "[\"pool.$HOST\",2,2,1,0]" ]
	[ "$(echo "$output" | jq -r '.host_status[0].members')" = 4 ]
	# --watch repeats the summary until -W; without a terminal, one block per second
	run maro-peers --status --watch -W 2.5s -f json
	assert_success
	[ "${#lines[@]}" -ge 2 ]
	[ "$(echo "${lines[1]}" | jq -r .members)" = 4 ]
	run maro-peers --status --watch -W 3s
	assert_success
	[ "$(grep -c '^hosts 1' <<< "$output")" -ge 2 ]
}

@test "a pool killed by SIGKILL takes its jobs with it: a new pool's jobs get the names at once" {
	bg 30 maro-pool -j 2 -- "$JOB" 2> pool.err
	wait_until 10 live_is worker. 2
	local pool jobs p
	pool=$(child_pid "$BG_PID" maro-pool)
	jobs=$(for w in 1 2; do pid_of "worker.$HOST.$w"; done)
	kill -KILL "$pool"
	for p in $jobs; do
		wait_until 5 sh -c "[ -z \"\$(ps -o stat= -p $p | grep -v '^Z')\" ]"
	done
	# (on Redis the killed pool's own entry lasts its TTL: the next pool here takes another name)
	bg 30 maro-pool -j 2 --name pool.again -- "$JOB" 2> pool2.err
	wait_until 10 live_is worker. 2
	run cat pool2.err
	refute_output --partial "held"
}
