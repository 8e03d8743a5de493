#!/usr/bin/env bats
# Several hosts on one machine: network namespaces on a private bridge, a
# redis-server on a host of its own, workers on two hosts (three for the
# bundle), a master on a host of its own.  One worker host loses its link in
# the middle of a scatter.  A job's files, served on the master, reach the
# worker hosts as a bundle.  The hosts are made by tests/netns.bash.

load helpers
load netns

# The hosts and their addresses on the bridge (10.77.0.0/24, ours alone).
NET=10.77.0
declare -gA ADDR=([redis]=$NET.1 [master]=$NET.2 [wa]=$NET.3 [wb]=$NET.4 [wc]=$NET.5)
HOSTS="redis master wa wb wc"

redis_ready() {
	[ "$(on master timeout 2 redis-cli -h "${ADDR[redis]}" -p 6379 ping 2>/dev/null)" = PONG ]
}

# bats runs no skip in setup_file: setup_file says why it could not make
# the hosts in NO_HOSTS, and every test skips with that reason.
setup_file() {
	export NETNS=maro$$ NO_HOSTS=
	if [ "$(id -u)" -ne 0 ]; then
		NO_HOSTS="network namespaces need root"
	elif ! command -v ip > /dev/null; then
		NO_HOSTS="ip(8) (iproute2) is not installed"
	elif ! command -v redis-server > /dev/null; then
		NO_HOSTS="redis-server is not installed"
	elif ! net_up 2> "$BATS_FILE_TMPDIR/net.err"; then
		net_down
		NO_HOSTS="cannot make network namespaces: $(head -n 1 "$BATS_FILE_TMPDIR/net.err")"
	fi
	[ -z "$NO_HOSTS" ] || return 0
	# The registry host: nothing persisted, reachable from the other
	# hosts (hence no protected mode); bounded like every process here.
	timeout -k 2 300 ip netns exec "$NETNS-redis" redis-server --port 6379 \
		--bind "${ADDR[redis]}" --protected-mode no --save '' --appendonly no \
		--dir "$BATS_FILE_TMPDIR" --logfile "$BATS_FILE_TMPDIR/redis.log" \
		< /dev/null > /dev/null 2>&1 3>&- &
	echo "pid $!" >> "$BATS_FILE_TMPDIR/made"
	# readiness from another host: the bridge and the server both work
	wait_until 10 redis_ready || {
		cat "$BATS_FILE_TMPDIR/redis.log" >&2
		return 1
	}
}

teardown_file() { net_down; }

setup() {
	[ -z "$NO_HOSTS" ] || skip "$NO_HOSTS"
	export MARO_GROUP="t$BATS_SUITE_TEST_NUMBER-$$"
	export MARO_REGISTRY="redis://${ADDR[redis]}:6379/0"
	# dead entries go after 2 s, so a host cut off is noticed quickly
	export MARO_TTL=2s
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	[ -z "$NO_HOSTS" ] || return 0
	# a test that cut a link gets it back before its workers are stopped:
	# they leave the registry at once instead of timing out against it
	ip -n "$NETNS-hub" link set v-wa up 2>/dev/null || :
	default_teardown
}

# cut HOST / mend HOST: take HOST's link down / up on the bridge side; HOST
# keeps its address and its sockets, and hears nothing more (a cable pulled).
cut() { ip -n "$NETNS-hub" link set "v-$1" down; }
mend() { ip -n "$NETNS-hub" link set "v-$1" up; }

# The worker's coprocess squares each number; it writes each task it reads
# to recv.NAME first, so the test knows what a host had in hand.  With
# HANG_AFTER=K it answers K tasks, then holds the next one and answers
# nothing more (a host busy or wedged: its tasks stay in hand until it is
# cut off, whatever the machine's speed).
SQUARE='n=0; while read x; do echo "$x" >> "recv.$MARO_NAME"; n=$((n + 1))
	[ "$n" -le "${HANG_AFTER:-1000000}" ] || exec sleep 120
	sleep ${SQ_DELAY:-0}; echo $((x * x)); done'

# workers HOST N: a maro-pool of N square workers on HOST, named
# worker.HOST.1..N by the pool.
workers() {
	on_bg 60 "$1" maro-pool -j "$2" -T worker -- \
		maro-dist --raw --co 'master:sq:1' "$SQUARE" 2>> "pool.$1.err"
}

# peers_on PREFIX N: exactly N live peers named PREFIX*, seen from master.
peers_on() { [ "$(on master timeout 10 maro-peers -P "$1" -f json | wc -l)" -eq "$2" ]; }

# wa_holds N: each of wa's 3 workers has read N tasks (answered 5, holds the 6th).
wa_holds() {
	local f n=0
	for f in recv.worker.wa.*; do
		[ -f "$f" ] && [ "$(wc -l < "$f")" -ge "$1" ] && n=$((n + 1))
	done
	[ "$n" -eq 3 ]
}

# squares N: 1, 4, ... N*N, sorted as text (the way sort sorts them).
squares() { seq "$1" | while read -r x; do echo $((x * x)); done | sort; }

@test "a worker host cut off mid-scatter: its tasks go to the other host, each answered once" {
	export SQ_DELAY=0.01
	# wa's workers answer 5 tasks each, then hold the next: the scatter
	# cannot end before the cut, and wa has tasks in hand when it comes
	HANG_AFTER=5 workers wa 3
	workers wb 3
	run on master timeout 25 maro-peers -e worker=6 -W 20s -q
	assert_success
	on_bg 60 master sh -c 'seq 300 | maro-scatter -n master -P worker -t sq --window 2 -W 60s -f json > out 2> err'
	scatter=$BG_PID
	wait_until 30 wa_holds 6
	# nothing can finish the job but the cut: not every task is answered
	[ "$(wc -l < out)" -lt 300 ]
	cut wa
	# wa's entries expire (TTL 2 s) once its heartbeats stop reaching Redis
	wait_until 6 peers_on worker.wa 0
	peers_on worker.wb 3
	wait_exit "$scatter" 60
	[ "$status" -eq 0 ] || { cat err; false; }
	[ "$(wc -l < out)" -eq 300 ]
	# every square once: nothing lost, nothing answered twice
	jq -r .payload out | sort | uniq -d > dup
	[ ! -s dup ] || { echo "answered twice: $(cat dup)"; false; }
	jq -r .payload out | sort | cmp - <(squares 300)
	# both hosts did work before the cut
	[ "$(jq -r 'select(.source | startswith("worker.wa.")) | .payload' out | wc -l)" -gt 0 ]
	# the tasks wa had in hand when it was cut, never answered from wa,
	# were answered by wb
	cat recv.worker.wa.* | sort -u > wa.took
	jq -r 'select(.source | startswith("worker.wa.")) | .payload | tonumber | sqrt | floor' out | sort -u > wa.answered
	comm -23 wa.took wa.answered > moved
	[ -s moved ] || { echo "wa had nothing in flight at the cut"; false; }
	jq -r 'select(.source | startswith("worker.wb.")) | .payload | tonumber | sqrt | floor' out | sort -u > wb.answered
	missing=$(comm -23 moved wb.answered)
	[ -z "$missing" ] || { echo "moved but not answered by wb: $missing"; false; }
}

@test "each host's workers advertise their own host's address" {
	workers wa 1
	workers wb 1
	run on master timeout 25 maro-peers -e worker=2 -W 20s -q
	assert_success
	run on master timeout 10 maro-peers -P worker -f json
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	endpoint() { printf '%s\n' "${lines[@]}" | jq -r "select(.name == \"$1\") | .endpoint"; }
	[[ "$(endpoint worker.wa.1)" == "tcp://${ADDR[wa]}:"* ]]
	[[ "$(endpoint worker.wb.1)" == "tcp://${ADDR[wb]}:"* ]]
	# the cluster summary sees two hosts, each with its pool and worker
	run on master timeout 10 maro-peers --status -f json
	assert_success
	[ "$(echo "$output" | jq -r '.host_status[].host' | sort | tr '\n' ' ')" = "wa wb " ] || { echo "$output"; false; }
	[ "$(echo "$output" | jq -r '.pools[] | "\(.name)@\(.host):\(.running)"' | sort | tr '\n' ' ')" = "pool.wa@wa:1 pool.wb@wb:1 " ] || { echo "$output"; false; }
	# and they answer across the bridge from there
	run on master timeout 30 sh -c 'seq 20 | maro-scatter -n master -P worker -t sq -W 20s -f json'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .payload | sort)" = "$(squares 20)" ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .source | sort -u | tr '\n' ' ')" = "worker.wa.1 worker.wb.1 " ]
}

@test "a worker host that comes back after a cut rejoins and takes work again" {
	workers wa 1
	workers wb 1
	run on master timeout 25 maro-peers -e worker=2 -W 20s -q
	assert_success
	cut wa
	wait_until 6 peers_on worker.wa 0
	mend wa
	# its worker kept running through the cut; its next heartbeat writes
	# the expired entry again
	wait_until 10 peers_on worker.wa 1
	run on master timeout 30 sh -c 'seq 20 | maro-scatter -n master -P worker -t sq -W 20s -f json'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .payload | sort)" = "$(squares 20)" ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .source | sort -u | tr '\n' ' ')" = "worker.wa.1 worker.wb.1 " ]
}

# fetched_on HOST: the bundle bytes HOST's workers fetched, summed over their -v lines
fetched_on() { sed -n 's/.* bytes, \([0-9]*\) fetched$/\1/p' "$1/pool.err" | awk '{ s += $1 } END { print s + 0 }'; }

@test "a job whose script is only on the master runs on three worker hosts, fetched once per host; the next job moves nothing" {
	# each host starts in a directory tree of its own, with its own cache
	mkdir -p master/job wa wb wc
	printf '#!/bin/sh\nwhile read -r x; do echo $((x * x)); done\n' > master/job/sq.sh
	chmod 755 master/job/sq.sh
	head -c 1M /dev/urandom > master/job/data
	on_bg 60 master maro-dist -n files --serve-bundle master/job 2> srv.err
	local h
	for h in wa wb wc; do
		on_bg 60 "$h" env -C "$h" XDG_CACHE_HOME="$PWD/$h/cache" maro-pool -j 2 -T worker -- \
			maro-dist -v --bundle files --raw --co 'master:sq:1' ./sq.sh 2>> "$h/pool.err"
	done
	run on master timeout 30 sh -c 'seq 20 | maro-scatter -n master -e worker=6 -P worker -t sq -W 25s -f payload'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | sort)" = "$(squares 20)" ]
	# the bundle crossed the bridge once per host, not once per worker
	local size
	size=$(sed -n 's/.* from .files.: \([0-9]*\) bytes, [0-9]* fetched$/\1/p' wa/pool.err | head -n 1)
	[ "$size" -gt $((1 << 20)) ]
	[ "$(fetched_on wa)" -eq "$size" ]
	[ "$(fetched_on wb)" -eq "$size" ]
	[ "$(fetched_on wc)" -eq "$size" ]
	[ ! -e wa/sq.sh ]
	[ ! -e wb/sq.sh ]
	[ ! -e wc/sq.sh ]
	# a second job with the same files: nothing moves
	for h in wa wb wc; do
		: > "$h/pool.err"
		on_bg 60 "$h" env -C "$h" XDG_CACHE_HOME="$PWD/$h/cache" maro-pool -j 1 -T again --name "pool2.$h" -- \
			maro-dist -v --bundle files --raw --co 'master:sq:1' ./sq.sh 2>> "$h/pool.err"
	done
	run on master timeout 30 sh -c 'seq 6 | maro-scatter -n master -e again=3 -P again -t sq -W 25s -f payload'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | sort)" = "$(squares 6)" ]
	[ "$(grep -c ' 0 fetched$' wa/pool.err)" -eq 1 ]
	[ "$(grep -c ' 0 fetched$' wb/pool.err)" -eq 1 ]
	[ "$(grep -c ' 0 fetched$' wc/pool.err)" -eq 1 ]
	[ "$(fetched_on wa)" -eq 0 ]
	[ "$(fetched_on wb)" -eq 0 ]
	[ "$(fetched_on wc)" -eq 0 ]
}
