#!/usr/bin/env bats
# check: alone (a test takes every free port from 20000 to 49999)
# maro-slurm(7) without a Slurm cluster: the job's own registry against
# another local user who holds its ports, the SLURM_* values checked before
# any use, what a killed job leaves, and how the end stops the workers.
# srun, scontrol and scancel are fakes that log what they were asked
# (tests/slurm.bats runs the real ones).

load helpers

setup() {
	unset MARO_REGISTRY MARO_GROUP MARO_NAME MARO_WORKERS MARO_SLURM_ADDRESS
	unset SLURM_JOB_ID SLURM_NTASKS SLURM_NNODES SLURM_JOB_NUM_NODES SLURM_JOB_CPUS_PER_NODE
	cd "$BATS_TEST_TMPDIR"
	mkdir fake tmp
	export TMPDIR=$BATS_TEST_TMPDIR/tmp SLURM_LOG=$BATS_TEST_TMPDIR/slurm.log
	# srun runs its command once (the task), in the background, and
	# says so; scancel --signal=TERM signals the tasks srun started
	cat > fake/srun <<-'EOF'
	#!/bin/sh
	echo "srun $*" >> "$SLURM_LOG"
	while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
	trap 'echo "srun got TERM" >> "$SLURM_LOG"; kill -KILL $task; exit 143' TERM
	"$@" &
	task=$!
	echo "$task" >> "$SLURM_LOG.tasks"
	wait "$task"
	EOF
	cat > fake/scancel <<-'EOF'
	#!/bin/sh
	echo "scancel $*" >> "$SLURM_LOG"
	[ "$1" != --signal=TERM ] || kill -TERM $(cat "$SLURM_LOG.tasks")
	EOF
	printf '#!/bin/sh\necho "scontrol $*" >> "$SLURM_LOG"\n' > fake/scontrol
	chmod +x fake/*
	PATH="$BATS_TEST_TMPDIR/fake:$MARO_TOP/scripts:$PATH"
}

teardown() {
	default_teardown
	[ -z "${shared:-}" ] || rm -rf "$shared"
	[ -z "${orphan:-}" ] || kill "$orphan" 2>/dev/null || :
}

# In a network namespace of the test's own (no other test's ports, and
# nobody else's), another user (nobody) holds ports with
# tests/tools/port-squatter, then the job sources maro-slurm as the batch
# script of a job of three nodes (its registry on 127.0.0.1) and says
# what MARO_REGISTRY is.  squat MODE LOW HIGH STEP DELAY SHELL; the job's
# stdout, stderr and status in job.out, job.err, job.rc, what the squatter
# received in $shared/got.
squat() {
	[ "$(id -u)" -eq 0 ] || skip "needs root, to act as a second user (setpriv)"
	unshare --net true 2>/dev/null || skip "cannot make a network namespace"
	command -v redis-server > /dev/null || skip "redis-server is not installed"
	shared=$(mktemp -d /tmp/maro-squat.XXXXXX)
	chmod 755 "$shared"
	cp "$MARO_TOP/tests/tools/port-squatter" "$shared/"
	mkdir "$shared/out"
	chown 65534:65534 "$shared/out"
	# two squatters, as one process may hold no more than 20000 descriptors
	cat > attack.sh <<-EOF
	ip link set lo up
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/python3 $shared/port-squatter $1 127.0.0.1 $2 34999 $4 $5 $shared/out/got $shared/out/ready.1 &
	squatters=\$!
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/python3 $shared/port-squatter $1 127.0.0.1 35000 $3 $4 $5 $shared/out/got $shared/out/ready.2 &
	squatters="\$squatters \$!"
	i=0
	while [ ! -f $shared/out/ready.1 ] || [ ! -f $shared/out/ready.2 ]; do
		[ \$i -lt 1500 ] || exit 1
		sleep 0.02
		i=\$((i + 1))
	done
	echo "# the squatters hold \$(cat $shared/out/ready.1) + \$(cat $shared/out/ready.2) ports" >&3
	rc=0
	env SLURM_JOB_ID=77 SLURM_NNODES=3 SLURM_NTASKS=6 MARO_SLURM_ADDRESS=127.0.0.1 \
		$6 -c '. maro-slurm; echo "registry \$MARO_REGISTRY"
			echo "pid \$(maro_redis_cli info server | tr -d "\r" | sed -n "s/^process_id://p") \$MARO_SLURM_REDIS"' \
		> job.out 2> job.err || rc=\$?
	echo \$rc > job.rc
	kill \$squatters
	wait \$squatters || :
	EOF
	timeout 120 unshare --net sh attack.sh
}

@test "another user on every port of the range: the job says so and exits 69, and never sends the password nor adopts that server" {
	local sh
	for sh in dash bash; do
		squat listen 20000 49999 1 0 "$sh"
		run -0 cat job.rc
		assert_output 69
		run -0 cat job.err
		assert_output "maro-slurm: the job's registry did not start on 127.0.0.1: no free port between 20000 and 49999"
		assert_equal "$(cat job.out)" ""
		# the squatter was never even connected to
		[ ! -s "$shared/out/got" ] || fail "the squatter received: $(tr -c '[:print:]' . < "$shared/out/got")"
		rm -rf "$shared" job.*
	done
}

@test "another user binds the ports before the job's server and listens later: the job never talks to them, 69" {
	squat bind 20000 49999 1 2 sh
	run -0 cat job.rc
	assert_output 69
	run -0 cat job.err
	assert_output --regexp "^maro-slurm: the job's registry did not start on 127\.0\.0\.1: (127\.0\.0\.1:[0-9]+: bind: Address already in use|no free port between 20000 and 49999)$"
	[ ! -s "$shared/out/got" ] || fail "the squatter received: $(tr -c '[:print:]' . < "$shared/out/got")"
}

@test "another user on every other port: the registry starts on a free one, proven to be the job's own server, and the squatter hears nothing" {
	local port
	squat listen 20000 49999 2 0 sh
	run -0 cat job.rc
	assert_output 0
	run -0 cat job.out
	assert_line --regexp '^registry redis://:[0-9a-f]{48}@127\.0\.0\.1:[0-9]+/0$'
	port=$(sed -n 's|^registry .*:\([0-9]*\)/0$|\1|p' job.out)
	# the squatter holds the even ports
	[ $((port % 2)) -eq 1 ] || fail "the registry is on a squatted port: $output"
	# the server that answers is the job's own redis-server
	assert_line --regexp '^pid ([0-9]+) \1$'
	[ ! -s "$shared/out/got" ] || fail "the squatter received: $(tr -c '[:print:]' . < "$shared/out/got")"
}

@test "SLURM_* values are checked before any use, under bash and dash: a command in one is never run, a malformed one exits 2 naming it" {
	local sh
	export MARO_REGISTRY=dir:$BATS_TEST_TMPDIR/registry
	for sh in bash dash; do
		# bash evaluates an array index inside arithmetic: x[$(cmd)]
		run -2 env SLURM_JOB_ID=9 SLURM_NTASKS='x[$(id -u > pwned)]' "$sh" -c '. maro-slurm; maro_workers true'
		assert_output "maro-slurm: invalid SLURM_NTASKS 'x[\$(id -u > pwned)]' (a number from 1 to 999999)"
		[ ! -e pwned ] || fail "$sh ran the command in SLURM_NTASKS"
		run -2 env SLURM_JOB_ID=9 SLURM_JOB_CPUS_PER_NODE=abc "$sh" -c '. maro-slurm; maro_workers true'
		assert_output "maro-slurm: invalid SLURM_JOB_CPUS_PER_NODE 'abc' (CPUS[(xNODES)][,...], as '4(x2),2')"
		run -2 env SLURM_JOB_ID=9 SLURM_JOB_CPUS_PER_NODE='4(x0)' "$sh" -c '. maro-slurm'
		assert_output --partial "invalid SLURM_JOB_CPUS_PER_NODE '4(x0)'"
		run -2 env SLURM_JOB_ID=9 SLURM_NTASKS=08 "$sh" -c '. maro-slurm'
		assert_output --partial "invalid SLURM_NTASKS '08'"
		run -2 env SLURM_JOB_ID=9 SLURM_NTASKS=0 "$sh" -c '. maro-slurm'
		assert_output --partial "invalid SLURM_NTASKS '0'"
		run -2 env SLURM_JOB_ID='9;id' "$sh" -c '. maro-slurm'
		assert_output "maro-slurm: invalid SLURM_JOB_ID '9;id' (a number)"
		run -2 env SLURM_JOB_ID=9 SLURM_NTASKS=2 SLURM_JOB_NUM_NODES='1+1' "$sh" -c '. maro-slurm'
		assert_output --partial "invalid SLURM_JOB_NUM_NODES '1+1'"
		run -2 env SLURM_JOB_ID=9 SLURM_NTASKS=2 SLURM_NNODES='2 ' "$sh" -c '. maro-slurm'
		assert_output --partial "invalid SLURM_NNODES '2 '"
		run -2 env MARO_WORKERS='x[$(id -u > pwned)]' "$sh" -c '. maro-slurm'
		assert_output --partial "invalid MARO_WORKERS"
		run -2 "$sh" -c '. maro-slurm; maro_workers 0 true'
		assert_output "maro-slurm: invalid maro_workers N '0' (a number from 1 to 999999)"
		[ ! -e pwned ] || fail "$sh ran a command"
		[ ! -e "$SLURM_LOG" ] || fail "srun was started: $(cat "$SLURM_LOG")"
		# well-formed: a worker per allocated CPU, 4 on two nodes and 2 on a third
		run -0 env SLURM_JOB_ID=9 SLURM_JOB_CPUS_PER_NODE='4(x2),2' "$sh" -c '. maro-slurm; maro_workers true; maro_workers_wait; echo "workers $MARO_WORKERS"'
		assert_output "workers 10"
		run -0 grep '^srun' "$SLURM_LOG"
		assert_output "srun --ntasks=10 --kill-on-bad-exit=0 true"
		rm -f "$SLURM_LOG"
	done
}

@test "a job of one node takes the dir: registry in its own directory: no server, no password, no port" {
	run -0 env SLURM_JOB_ID=12 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=2 sh -c '. maro-slurm; echo "$MARO_REGISTRY"; echo "server ${MARO_SLURM_REDIS:-none}"'
	assert_line --regexp "^dir:$TMPDIR/maro-job\.[A-Za-z0-9]{6}/registry$"
	assert_line "server none"
	# and the job is not requeued after a node failure
	run -0 cat "$SLURM_LOG"
	assert_output "scontrol update JobId=12 Requeue=0"
}

@test "a job killed by SIGKILL leaves no file with its registry password, and the user's next job removes its directory" {
	local pass pid ls
	command -v redis-server > /dev/null || skip "redis-server is not installed"
	mkfifo ready
	# the job: its registry, then it waits to be killed
	SLURM_JOB_ID=13 SLURM_NNODES=2 SLURM_NTASKS=2 MARO_SLURM_ADDRESS=127.0.0.1 \
		bg 60 sh -c '. maro-slurm; echo "$MARO_REGISTRY $MARO_SLURM_REDIS $$" > ready; while :; do sleep 1; done' 2> job.err
	read -r url orphan job < ready
	pass=${url#redis://:}
	pass=${pass%%@*}
	[ "${#pass}" -eq 48 ] || fail "no password in '$url'"
	kill -KILL "$job"
	wait_until 10 eval '! kill -0 "$job" 2>/dev/null'
	# its server is still up (nothing killed it) and its directory is left,
	# but no file on disk holds the password
	kill -0 "$orphan"
	run ls "$TMPDIR"
	assert_output --regexp '^maro-job\.'
	run grep -r -l -F "$pass" "$TMPDIR"
	assert_failure 1
	assert_output ''
	# the next job of the user on this host removes what the killed one left
	run -0 sh -c '. maro-slurm; ls "$TMPDIR"; echo "$MARO_JOB_DIR"'
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "${lines[1]##*/}"
	# and leaves alone a directory of a job that still runs, one of another
	# host (a shared TMPDIR), and one without an owner file
	mkdir -m 700 "$TMPDIR/maro-job.live01" "$TMPDIR/maro-job.other1" "$TMPDIR/maro-job.noown1"
	echo "$(uname -n) $(cat /proc/sys/kernel/random/boot_id) $$ $(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20)" > "$TMPDIR/maro-job.live01/owner"
	echo "elsewhere $(cat /proc/sys/kernel/random/boot_id) 1 1" > "$TMPDIR/maro-job.other1/owner"
	run -0 sh -c '. maro-slurm'
	run -0 ls "$TMPDIR"
	assert_output "$(printf 'maro-job.live01\nmaro-job.noown1\nmaro-job.other1')"
}

@test "at the end the workers themselves get SIGTERM (scancel --signal=TERM), then srun, only if they did not end" {
	export MARO_REGISTRY=dir:$BATS_TEST_TMPDIR/registry
	# a worker that cleans up on SIGTERM, and a job script that exits
	# while it runs
	run -0 env SLURM_JOB_ID=14 SLURM_NTASKS=1 sh -c '. maro-slurm
		maro_workers sh -c "trap \"echo worker cleaned up >> \$SLURM_LOG; exit 0\" TERM; while :; do sleep 0.1; done"
		while [ ! -s "$SLURM_LOG.tasks" ]; do sleep 0.02; done'
	run -0 cat "$SLURM_LOG"
	assert_output "$(printf '%s\n' 'scontrol update JobId=14 Requeue=0' \
		'srun --ntasks=1 --kill-on-bad-exit=0 sh -c trap "echo worker cleaned up >> $SLURM_LOG; exit 0" TERM; while :; do sleep 0.1; done' \
		'scancel --signal=TERM 14' 'worker cleaned up')"
}

@test "README's 'sh scripts/slurm-demo', as printed, from the top of a source tree with a clean PATH: the answers kept, the first answer's time a duration" {
	# a tree: scripts/ and the built tools in build/bin
	mkdir -p tree/build
	ln -s "$MARO_TOP/scripts" tree/scripts
	ln -s "$MARO_BIN" tree/build/bin
	cd tree
	run -0 env -i PATH=/usr/bin:/bin HOME="$HOME" TMPDIR="$TMPDIR" timeout 120 sh scripts/slurm-demo
	assert_line --regexp '^slurm-demo: [0-9]+ workers live$'
	assert_line --regexp '^slurm-demo: first answer [0-9]+\.[0-9]{3} s after the scatter started$'
	assert_line --regexp '^slurm-demo: 1000 answers from [0-9]+ workers in [0-9.]+ s, [0-9]+ tasks/s$'
	assert_line "slurm-demo: answers in slurm-demo.answers"
	assert_line "slurm-demo: stopped"
	refute_output --partial "not every worker reported"
	# kept where it said, each task answered once with its square
	[ "$(cut -d' ' -f1 slurm-demo.answers | sort -n)" = "$(seq 1000)" ] || fail "$(head slurm-demo.answers)"
	run -0 awk '$2 != $1 * $1' slurm-demo.answers
	assert_output ''
	run ls "$TMPDIR"
	assert_output ''
}

@test "slurm-demo takes every progress report the barrier left, even one redelivered seconds later: no sender is left waiting" {
	local i
	for i in 1 2; do
		# five workers: the barrier takes three, two reports are left
		run -0 env MARO_WORKERS=5 timeout 120 sh "$MARO_TOP/scripts/slurm-demo" 100 answers
		assert_line --regexp '^slurm-demo: 60% barrier passed with (worker\.[^ ]+ ){3,5}$'
		assert_line "slurm-demo: stopped"
		refute_output --partial "not every worker reported"
		# each report was received: no maro-send still trying to deliver one
		run pgrep -f "maro-send -n worker\..* -p master -t progress"
		assert_failure
	done
}

# job_hosts FILE: a job over the host file FILE that says its registry and
# starts 1 worker on each host, under dash; its status, stdout and stderr
# as run's.  No ssh is ever run: MARO_SSH is a command that logs and fails.
job_hosts() {
	printf '#!/bin/sh\necho "ssh $*" >> "%s/ssh.log"\nexit 255\n' "$BATS_TEST_TMPDIR" > fake/ssh
	chmod +x fake/ssh
	run env MARO_HOSTS="$1" MARO_SSH="$BATS_TEST_TMPDIR/fake/ssh" dash -c '. maro-slurm
		echo "registry $MARO_REGISTRY"
		echo "group $MARO_GROUP"
		maro_workers 1 maro-dist -n "w.%h.%r" --on "*:x:1" true
		echo "workers $MARO_WORKERS"
		maro-peers -e w="$MARO_WORKERS" -W 20s -q && echo live'
}

@test "a host file is checked whole before anything starts: a line that is not a host exits 2, naming its file and line" {
	printf '# lab\n\n2/gpu1   # the big one\nuser@gpu2:2222\nbad host\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: hosts:5: 'bad host' is not a host ([N/][USER@]HOST[:PORT], or : for this machine)"
	[ ! -e ssh.log ]
	printf 'gpu1:70000\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: hosts:1: port 70000 (1 to 65535)"
	printf '0/gpu1\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output --partial "maro-slurm: hosts:1: '0/gpu1' is not a host"
	printf '# nobody\n\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: the host file 'hosts' names no host"
	job_hosts missing
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: cannot read the host file 'missing' (MARO_HOSTS)"
	printf 'gpu1\n' > hosts
	MARO_REGISTRY=dir:reg job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: MARO_REGISTRY is a dir: registry, which other hosts cannot reach"
	printf 'gpu1\n:\nroot@gpu1\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: hosts:3: 'root@gpu1' is listed twice (a line a host; N/ says how many workers)"
	printf ':\n2/:\n' > hosts
	job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: hosts:2: ':' is listed twice (a line a host; N/ says how many workers)"
	printf 'gpu1\n' > hosts
	SLURM_JOB_ID=5 job_hosts hosts
	[ "$status" -eq 2 ]
	assert_output "maro-slurm: MARO_HOSTS is set in a Slurm job: the job's nodes are its hosts (unset MARO_HOSTS)"
	# nothing was left of the jobs refused
	[ -z "$(ls tmp)" ]
	[ ! -e ssh.log ]
}

@test "a host file of this machine alone (:) needs no ssh: a pool here, on the dir: registry of the job" {
	printf '3/:   # three workers\n' > hosts
	job_hosts hosts
	assert_success
	assert_line --regexp '^registry dir:.*/maro-job\.[A-Za-z0-9]{6}/registry$'
	assert_line --regexp "^group job\.$(uname -n)\.[0-9]+\$"
	assert_line "maro-slurm: this machine: 3 workers"
	assert_line "workers 3"
	assert_line live
	[ ! -e ssh.log ]
	[ -z "$(ls tmp)" ]
}

@test "a host that ssh cannot reach is named with ssh's reason, and a job with no host started exits 69, leaving nothing" {
	printf 'gpu1.invalid\n' > hosts
	job_hosts hosts
	[ "$status" -eq 69 ]
	assert_output "maro-slurm: cannot find the address the hosts reach this host at (set MARO_SLURM_ADDRESS)"
	printf 'gpu1\n' > hosts
	MARO_SLURM_ADDRESS=127.0.0.1 job_hosts hosts
	[ "$status" -eq 69 ]
	assert_line "maro-slurm: host gpu1: not started: ssh failed"
	assert_line "maro-slurm: no host of hosts started a worker"
	refute_line live
	# ssh was asked in batch mode, never with the settings in its argv
	run -0 cat ssh.log
	assert_output --partial "-o BatchMode=yes"
	refute_output --partial "redis://"
	[ -z "$(ls tmp)" ]
}

@test "a host that never answers is given up after MARO_HOSTS_WAIT seconds, named, its session ended; a bad MARO_HOSTS_WAIT exits 2" {
	# an ssh that connects and then says nothing, ever
	printf '#!/bin/sh\nexec sleep 60\n' > fake/ssh-mute
	chmod +x fake/ssh-mute
	printf 'gpu1\n' > hosts
	SECONDS=0
	run -69 env MARO_HOSTS=hosts MARO_HOSTS_WAIT=2 MARO_SSH="$BATS_TEST_TMPDIR/fake/ssh-mute" \
		MARO_SLURM_ADDRESS=127.0.0.1 timeout 20 dash -c '. maro-slurm; maro_workers 1 true; echo went on'
	[ "$SECONDS" -lt 10 ]
	assert_line "maro-slurm: host gpu1: not started: no answer within 2 s"
	refute_line "went on"
	run ! pgrep -s 0 -f "^sleep 60$"
	for w in 0 x 3601 012; do
		run -2 env MARO_HOSTS=hosts MARO_HOSTS_WAIT=$w dash -c '. maro-slurm'
		assert_output "maro-slurm: invalid MARO_HOSTS_WAIT '$w' (seconds, 1 to 3600)"
	done
}

@test "a job stopped while a host is still connecting waits for that session too, and ends it: no ssh is left behind" {
	printf '#!/bin/sh\nexec sleep 60\n' > fake/ssh-mute
	chmod +x fake/ssh-mute
	printf 'gpu1\n' > hosts
	bg 60 env MARO_HOSTS=hosts MARO_SSH="$BATS_TEST_TMPDIR/fake/ssh-mute" MARO_SLURM_ADDRESS=127.0.0.1 \
		dash -c '. maro-slurm; maro_workers 1 true; echo went on' > job.out 2>&1
	job=$BG_PID
	wait_until 10 pgrep -s 0 -f "^sleep 60$"
	kill -TERM "$(pgrep -P "$job" -x dash)"
	wait_exit "$job" 20
	[ "$status" -eq 143 ]
	run ! pgrep -s 0 -f "^sleep 60$"
	run -1 grep -c "went on" job.out
}
