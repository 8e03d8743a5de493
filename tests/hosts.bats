#!/usr/bin/env bats
# Your own machines over SSH (maro-slurm(7), OVER SSH): hosts made of
# network namespaces (tests/netns.bash), each with a real sshd of its own
# (a host key made here, the test's client key authorized), the master on
# a host of its own, running job scripts that source maro-slurm with
# MARO_HOSTS naming a host file.  Hosts wa, wb and wc run the tools; wd refuses the client's key; we, wf and wg
# see the tools' directory through a mount namespace of their own: on we
# it is another user's, with a maro-pool planted in it; on wf a maro-pool
# of another version; on wg one that fails at once.  .9 answers nothing.

load helpers
load netns

NET=10.76.0
declare -gA ADDR=([master]=$NET.2 [wa]=$NET.3 [wb]=$NET.4 [wc]=$NET.5 [wd]=$NET.6 [we]=$NET.7
	[wf]=$NET.8 [wg]=$NET.10)
HOSTS="master wa wb wc wd we wf wg"
SSHD_HOSTS="wa wb wc wd we wf wg"
GONE=$NET.9

# sshd_up HOST: HOST's sshd, answering the test's key (wd: another key);
# its sessions get a TMPDIR and a cache of the host's own.
sshd_up() {
	local h=$1 d=$BATS_FILE_TMPDIR keys=$BATS_FILE_TMPDIR/client.pub over=
	mkdir -p "$d/tmp-$h" "$d/cache-$h"
	[ "$h" != wd ] || keys=$d/other.pub
	cat > "$d/sshd-$h.conf" <<-EOF
	ListenAddress ${ADDR[$h]}
	HostKey $d/hostkey
	AuthorizedKeysFile $keys
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	StrictModes no
	PermitRootLogin prohibit-password
	PidFile none
	SetEnv TMPDIR=$d/tmp-$h XDG_CACHE_HOME=$d/cache-$h
	EOF
	case $h in
	we) over=$d/planted ;;
	wf) over=$d/v9 ;;
	wg) over=$d/failing ;;
	esac
	if [ -n "$over" ]; then
		timeout -k 2 900 ip netns exec "$NETNS-$h" unshare --uts --mount --propagation private \
			sh -c 'hostname "$0" && mount --bind "$1" "$2" && shift 2 && exec "$@"' \
			"$h" "$over" "$MARO_BIN" /usr/sbin/sshd -D -e -f "$d/sshd-$h.conf" \
			< /dev/null > "$d/sshd-$h.log" 2>&1 3>&- &
	else
		timeout -k 2 900 ip netns exec "$NETNS-$h" unshare --uts sh -c "$HOSTED" "$h" \
			/usr/sbin/sshd -D -e -f "$d/sshd-$h.conf" < /dev/null > "$d/sshd-$h.log" 2>&1 3>&- &
	fi
	echo "pid $!" >> "$d/made"
}

# ssh_ready HOST: the master reaches HOST's sshd (wd: it answers, refusing)
ssh_ready() {
	if [ "$1" = wd ]; then
		on master timeout 5 $SSH "${ADDR[wd]}" true 2>&1 | grep -q 'Permission denied'
	else
		on master timeout 5 $SSH "${ADDR[$1]}" true
	fi
}

setup_file() {
	export NETNS=mh$$ NO_HOSTS=
	if [ "$(id -u)" -ne 0 ]; then
		NO_HOSTS="network namespaces and sshd need root"
	elif [ ! -x /usr/sbin/sshd ] || ! command -v ssh > /dev/null; then
		NO_HOSTS="sshd or ssh is not installed (openssh-server, openssh-client)"
	elif ! command -v redis-server > /dev/null; then
		NO_HOSTS="redis-server is not installed"
	elif ! net_up 2> "$BATS_FILE_TMPDIR/net.err"; then
		net_down
		NO_HOSTS="cannot make network namespaces: $(head -n 1 "$BATS_FILE_TMPDIR/net.err")"
	fi
	[ -z "$NO_HOSTS" ] || return 0
	local d=$BATS_FILE_TMPDIR h
	# sshd wants its privilege separation directory (the package's own)
	mkdir -p /run/sshd
	ssh-keygen -q -t ed25519 -N '' -C maro-test-host -f "$d/hostkey"
	ssh-keygen -q -t ed25519 -N '' -C maro-test-client -f "$d/client"
	ssh-keygen -q -t ed25519 -N '' -C maro-test-other -f "$d/other"
	for h in $SSHD_HOSTS; do
		echo "${ADDR[$h]} $(cut -d' ' -f1,2 "$d/hostkey.pub")"
	done > "$d/known_hosts"
	# the names of maro-slurm(7)'s example: gpu1 to gpu3 are wa to wc
	cat > "$d/ssh_config" <<-EOF
	Host gpu1
	  HostName ${ADDR[wa]}
	Host gpu2
	  HostName ${ADDR[wb]}
	Host gpu3
	  HostName ${ADDR[wc]}
	Host *
	  IdentityFile $d/client
	  IdentitiesOnly yes
	  UserKnownHostsFile $d/known_hosts
	  StrictHostKeyChecking yes
	  BatchMode yes
	EOF
	export SSH="ssh -F $d/ssh_config"
	mkdir "$d/planted" "$d/v9" "$d/failing"
	# another user's directory at the path of the tools, and in it a
	# maro-pool that says the right version and would take what it is told
	printf '#!/bin/sh\necho "%s"\ntouch %s/planted.ran\n' "$(maro-pool --version | head -n 1)" "$d" > "$d/planted/maro-pool"
	chmod 755 "$d/planted/maro-pool"
	chown -R 65534:65534 "$d/planted"
	printf '#!/bin/sh\necho "maro-pool 9.1.0 (a later one)"\n' > "$d/v9/maro-pool"
	printf '#!/bin/sh\n[ "$1" != --version ] || { echo "%s"; exit 0; }\necho "maro-pool: cannot bind an inbox" >&2\nexit 69\n' "$(maro-pool --version | head -n 1)" > "$d/failing/maro-pool"
	chmod 755 "$d/v9/maro-pool" "$d/failing/maro-pool"
	for h in $SSHD_HOSTS; do sshd_up "$h"; done
	for h in $SSHD_HOSTS; do
		wait_until 20 ssh_ready "$h" || { cat "$d/sshd-$h.log" >&2; return 1; }
	done
}

teardown_file() { net_down; }

setup() {
	[ -z "$NO_HOSTS" ] || skip "$NO_HOSTS"
	unset MARO_REGISTRY MARO_GROUP MARO_NAME MARO_WORKERS MARO_KEYFILE MARO_HOSTS_ALL
	cd "$BATS_TEST_TMPDIR"
	export MARO_SSH=$SSH TMPDIR=$BATS_TEST_TMPDIR
	PATH="$MARO_TOP/scripts:$PATH"
}

teardown() {
	[ -z "$NO_HOSTS" ] || return 0
	default_teardown
}

# hostfile LINE...: the host file ./hosts, a comment first
hostfile() {
	{
		echo "# the test's hosts"
		printf '%s\n' "$@"
	} > hosts
}

# The worker: squares each number of the task, with its name; with a file
# ./hold, a worker that has answered 20 holds until it is gone (its path
# in MARO_TEST_HOLD: the hosts are given the master's MARO_* variables).
SQUARE='n=0; while read -r x; do n=$((n + 1))
	[ "$n" -le 20 ] || while [ -e "$MARO_TEST_HOLD" ]; do sleep 0.05; done
	echo "$x $((x * x)) $MARO_NAME"; done'

# job.sh N: the job script of most tests: N tasks scattered over the
# workers of every host, the answers in ./answers; it says "live" once
# every worker is, and "done" at the end.
write_job() {
	cat > job.sh <<-'EOF'
	. maro-slurm
	printf '%s\n' "$MARO_REGISTRY" > registry.url
	maro_workers sh -c 'echo "up on $(hostname)"; exec "$@"' sh \
		maro-dist -n 'worker.%h.%r' --raw --co 'master:sq:1' "$SQUARE" --on 'master:stop:1' --exit
	maro-peers -e worker="$MARO_WORKERS" -W 60s -q
	echo live
	seq "$1" | maro-scatter -n master -P worker -t sq --json-lines -W 2m -f payload > answers &
	wait $!
	maro-bcast -n master -P worker -t stop --notification -W 20s
	maro_workers_wait
	echo done
	EOF
}

# ours HOST: the processes left in HOST's namespace but its sshd
ours() {
	local pid cmd
	for pid in $(ip netns pids "$NETNS-$1"); do
		cmd=$(tr '\0\n' '  ' 2>/dev/null < "/proc/$pid/cmdline") || continue
		case $cmd in
		*'sshd -D -e -f'* | '') ;;
		*) echo "$1: $pid $cmd" ;;
		esac
	done
}

# nothing_left HOST...: no process but sshd in any of them, and no host
# directory in their TMPDIR
nothing_left() {
	local h
	for h; do
		[ -z "$(ours "$h")" ] || return 1
		[ -z "$(ls "$BATS_FILE_TMPDIR/tmp-$h" 2>/dev/null | grep maro-host)" ] || return 1
	done
}

# no_workers HOST: no maro-dist left running in HOST's namespace
no_workers() {
	local p
	for p in $(ip netns pids "$NETNS-$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != maro-dist ] || return 1
	done
}

# answered_once N FILE: FILE holds the answers to 1..N, each once and right
answered_once() {
	[ "$(wc -l < "$2")" -eq "$1" ] || return 1
	[ "$(awk '{ print $1 }' "$2" | sort -n | uniq | wc -l)" -eq "$1" ] || return 1
	awk '$2 != $1 * $1 { bad = 1 } END { exit bad }' "$2"
}

@test "scripts/slurm-demo runs unchanged over three hosts: every task answered once, by all three" {
	hostfile "2/${ADDR[wa]}" "2/root@${ADDR[wb]}" "2/${ADDR[wc]}:22"
	run on master env MARO_HOSTS=hosts timeout 120 sh "$MARO_TOP/scripts/slurm-demo" 2000 answers
	assert_success
	assert_line "maro-slurm: host ${ADDR[wa]}: 2 workers (maro $(maro-pool --version | cut -d' ' -f2))"
	assert_line "maro-slurm: host root@${ADDR[wb]}: 2 workers (maro $(maro-pool --version | cut -d' ' -f2))"
	assert_line "slurm-demo: 6 workers live"
	assert_line --partial "slurm-demo: 2000 answers from 6 workers"
	assert_line "slurm-demo: stopped"
	answered_once 2000 answers
	# the workers were on the three hosts, named by them
	[ "$(awk '{ print $3 }' answers | sed 's/^worker\.\([a-z]*\)\..*/\1/' | sort -u | tr '\n' ' ')" = "wa wb wc " ]
	wait_until 10 nothing_left wa wb wc
}

@test "maro-slurm(7)'s example over the hosts of a file, as printed: gpu1 to gpu3 of the user's ssh configuration" {
	ln -s "$MARO_TOP/scripts" scripts
	page_example maro-slurm.7 4 > example.sh
	grep -q '^MARO_HOSTS=hosts sh scripts/slurm-demo 1000 answers$' example.sh
	run -0 on master timeout 120 sh example.sh
	assert_line --regexp '^maro-slurm: host gpu1: 2 workers \(maro [0-9.]+\)$'
	assert_line --regexp '^maro-slurm: host gpu3: 2 workers \(maro [0-9.]+\)$'
	assert_line "slurm-demo: 6 workers live"
	answered_once 1000 answers
	[ "$(awk '{ print $3 }' answers | sed 's/^worker\.\([a-z]*\)\..*/\1/' | sort -u | tr '\n' ' ')" = "wa wb wc " ]
}

@test "hosts that cannot start are named with why, and the job goes on with the rest" {
	write_job
	hostfile "1/$GONE" "1/${ADDR[wa]}" "1/${ADDR[wd]}" "1/${ADDR[we]}" "1/${ADDR[wf]}" "1/${ADDR[wg]}"
	run on master env MARO_HOSTS=hosts SQUARE="$SQUARE" timeout 120 sh job.sh 50
	assert_success
	assert_line "maro-slurm: host ${ADDR[wa]}: 1 worker (maro $(maro-pool --version | cut -d' ' -f2))"
	assert_line "maro-slurm: host ${ADDR[wd]}: not started: auth refused"
	assert_line "maro-slurm: host ${ADDR[we]}: not started: tools missing: no maro-pool in $MARO_BIN (there, it is not to be trusted: another user owns or can write that path) nor on PATH"
	[ ! -e "$BATS_FILE_TMPDIR/planted.ran" ]
	assert_line "maro-slurm: host ${ADDR[wf]}: not started: wrong version: it runs maro 9.1.0 and the master $(maro-pool --version | cut -d' ' -f2 | cut -d. -f1,2).x, which cannot talk to each other"
	assert_line "maro-slurm: host ${ADDR[wg]}: not started: failed: its maro-pool ended at once (status 69; its message above)"
	assert_line "${ADDR[wg]}: maro-pool: cannot bind an inbox"
	assert_line "maro-slurm: host $GONE: not started: unreachable"
	# what a worker writes on stdout is the job's output
	assert_line "up on wa"
	assert_line done
	answered_once 50 answers
}

@test "MARO_HOSTS_ALL=1: a host that cannot start ends the job (69), naming it, and nothing is left" {
	write_job
	hostfile "1/${ADDR[wa]}" "1/${ADDR[wd]}"
	run -69 on master env MARO_HOSTS=hosts MARO_HOSTS_ALL=1 SQUARE="$SQUARE" timeout 60 sh job.sh 50
	assert_line "maro-slurm: host ${ADDR[wd]}: not started: auth refused"
	assert_line "maro-slurm: not every host started (MARO_HOSTS_ALL=1): ${ADDR[wd]}"
	refute_line live
	wait_until 15 nothing_left wa
	[ -z "$(ls | grep maro-job)" ]
}

@test "kill -9 of one host's pool mid-run: every task is still answered once" {
	write_job
	touch hold
	hostfile "2/${ADDR[wa]}" "2/${ADDR[wb]}" "2/${ADDR[wc]}"
	on_bg 120 master env MARO_HOSTS=hosts MARO_TTL=2s SQUARE="$SQUARE" MARO_TEST_HOLD="$PWD/hold" \
		sh job.sh 2000 > job.out 2> job.err
	job=$BG_PID
	wait_until 60 grep -qx live job.out
	# each worker answered 20 and holds the next: wb's have tasks in hand
	wait_until 30 has_lines answers 120
	pool=$(for p in $(ip netns pids "$NETNS-wb"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != maro-pool ] || echo "$p"; done)
	[ -n "$pool" ]
	kill -KILL $pool
	# its workers go with it (they held tasks): those go to the others
	wait_until 10 no_workers wb
	rm hold
	wait_exit "$job" 90
	[ "$status" -eq 0 ] || { cat job.err; false; }
	answered_once 2000 answers
	grep -q 'worker\.wb\.' answers
	wait_until 15 nothing_left wa wb wc
}

# interrupted SIGNAL STATUS WHOM: a job on three hosts and this one,
# mid-run (its workers hold tasks), sent SIGNAL: to its process group
# (WHOM group: a terminal's ^C, a service manager's stop) or to the job's
# shell alone (kill PID); it exits with STATUS within 8 s, and within 15 s
# nothing of the job is left on any host, nor on the master (but, when
# the shell alone was signalled, the scatter the script started itself:
# a script stops its own, maro-slurm(7)).  SIGKILL goes to a shell whose
# parent never reaps it: a zombie is gone too.
interrupted() {
	local parent=()
	write_job
	touch hold
	hostfile "1/${ADDR[wa]}" "1/${ADDR[wb]}" "1/${ADDR[wc]}" "1/:"
	[ "$1" != KILL ] ||
		parent=(perl -e 'my $p = fork // die "fork: $!"; if (!$p) { exec @ARGV or die "exec: $!" } sleep 100')
	on_bg 120 master "${parent[@]}" env MARO_HOSTS=hosts SQUARE="$SQUARE" MARO_TEST_HOLD="$PWD/hold" \
		sh job.sh 2000 > job.out 2> job.err
	job=$BG_PID
	wait_until 60 grep -qx live job.out
	wait_until 30 has_lines answers 60
	shell=$(pgrep -P "$job" -x sh || pgrep -P "$(pgrep -P "$job")" -x sh)
	redis=$(pgrep -P "$shell" -x redis-server)
	[ -n "$redis" ]
	if [ "$3" = group ]; then
		kill "-$1" -- "-$job"
	else
		kill "-$1" "$shell"
	fi
	if [ "$1" = KILL ]; then
		# the shell stays a zombie: its parent sleeps on
		wait_until 5 gone "$shell"
		[ "$(ps -o stat= -p "$shell" | cut -c1)" = Z ]
	else
		wait_exit "$job" 8
		[ "$status" -eq "$2" ] || { cat job.err; false; }
	fi
	wait_until 15 nothing_left wa wb wc || {
		for h in wa wb wc; do ours "$h"; ls "$BATS_FILE_TMPDIR/tmp-$h"; done
		false
	}
	wait_until 15 master_clean || { ours master; false; }
	wait_until 5 gone "$redis"
	[ -z "$(ls | grep maro-job)" ]
}

# gone PID: no such process, or one that ended (a zombie until init reaps it)
gone() {
	local s
	s=$(ps -o stat= -p "$1") || return 0
	[ "${s:0:1}" = Z ]
}

# master_clean: nothing of the job on the master (but the script's scatter,
# and the parent that never reaps the killed shell)
master_clean() {
	[ -z "$(ours master | grep -v -e ' maro-scatter -n master ' -e ' perl -e my \$p = fork ')" ]
}

@test "the master interrupted (SIGINT to its group): nothing is left on any host; it dies of the signal" {
	interrupted INT 130 group
}

@test "the master stopped (SIGTERM to its group): nothing is left on any host; it dies of the signal" {
	interrupted TERM 143 group
}

@test "the master stopped alone (kill PID): it stops the hosts' pools, then dies of SIGTERM" {
	interrupted TERM 143 alone
}

@test "the master killed alone (SIGKILL): the hosts' pools see their session end; nothing is left" {
	interrupted KILL 137 alone
}

@test "the group key and the registry's password are in no argv on any host, the key in no environment" {
	write_job
	touch hold
	maro-keygen group.key
	secret=$(sed -n 's/^secret = //p' group.key)
	[ "${#secret}" -eq 40 ]
	hostfile "1/${ADDR[wa]}" "1/${ADDR[wb]}"
	on_bg 120 master env MARO_HOSTS=hosts MARO_KEYFILE="$PWD/group.key" SQUARE="$SQUARE" \
		MARO_TEST_HOLD="$PWD/hold" sh job.sh 500 > job.out 2> job.err
	job=$BG_PID
	wait_until 60 grep -qx live job.out
	wait_until 30 has_lines answers 40
	# the key file as it travels, base64 on the session's input
	b64=$(base64 -w0 < group.key)
	pass=$(sed -n 's|^redis://:\([0-9a-f]*\)@.*|\1|p' registry.url)
	[ "${#pass}" -eq 48 ]
	# every process of every namespace, the hosts' workers among them
	n=0
	for h in master wa wb; do
		for p in $(ip netns pids "$NETNS-$h"); do
			n=$((n + 1))
			[ -e "/proc/$p/cmdline" ] || continue
			run ! grep -q -a -F -e "$secret" -e "$b64" -e "$pass" "/proc/$p/cmdline"
			run ! grep -q -a -F -e "$secret" -e "$b64" "/proc/$p/environ"
		done
	done
	[ "$n" -gt 6 ]
	# the workers were given the key: the job ends, answered
	rm hold
	wait_exit "$job" 60
	[ "$status" -eq 0 ] || { cat job.err; false; }
	answered_once 500 answers
}

@test "the job's files cross once per host as a bundle, and run there" {
	mkdir files
	printf '#!/bin/sh\nwhile read -r x; do echo "$x $((x * x)) $MARO_NAME"; done\n' > files/sq.sh
	chmod +x files/sq.sh
	cat > job.sh <<-'EOF'
	. maro-slurm
	maro_bundle job.files files
	maro_workers maro-dist -n 'worker.%h.%r' -v --bundle job.files --raw --co 'master:sq:1' ./sq.sh \
		--on 'master:stop:1' --exit
	maro-peers -e worker="$MARO_WORKERS" -W 60s -q
	seq 300 | maro-scatter -n master -P worker -t sq --json-lines -W 1m -f payload > answers &
	wait $!
	maro-bcast -n master -P worker -t stop --notification -W 20s
	maro_workers_wait
	EOF
	hostfile "2/${ADDR[wa]}" "2/${ADDR[wb]}" "2/${ADDR[wc]}"
	run on master env MARO_HOSTS=hosts timeout 120 sh job.sh
	assert_success
	answered_once 300 answers
	# on each host, one of its two workers fetched the bundle's bytes
	for h in wa wb wc; do
		got=$(echo "$output" | sed -n "s/^${ADDR[$h]}: maro-dist: bundle [0-9a-f]* from 'job.files': [0-9]* bytes, \([0-9]*\) fetched$/\1/p" | sort -n | tr '\n' ' ')
		[[ "$got" =~ ^0\ [1-9][0-9]*\ $ ]] || { echo "$h: $got"; false; }
	done
}
