#!/usr/bin/env bats
# backends: redis
# check: alone (bounds of a few hundred ms past -W: a busy machine misses them)
# -W bounds every wait, however slow the registry: a Redis behind a proxy
# that holds each reply back (tests/tools/delay-proxy.c), or one that
# accepts connections and never answers.  Each tool leaves with its
# documented code within -W and a small bound.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE MARO_TRANSPORT
	DIRECT=$MARO_REGISTRY
	STOPPED=
}
teardown() {
	# a stopped process cannot act on the TERM of kill_bg
	[ -z "$STOPPED" ] || kill -CONT -- "-$STOPPED" 2>/dev/null || :
	default_teardown
}

# How far past -W 2s a tool may end: its exit (an unregister through the
# slow proxy) and, in CI's sanitized pass, an instrumented start and exit
# (2,819 ms once there).  A wait that -W does not bound ends 2 s late or
# more (Redis' command timeout), so 1 s still tells the two apart.
LATE=1000

rcli() { redis-cli -h 127.0.0.1 -p "$(redis_port)" "$@"; }

# slow_registry DELAY_MS|never: the tools (MARO_REGISTRY) go through a proxy
# that holds every reply of the suite's Redis back that long.
slow_registry() {
	bg 120 "$MARO_BIN/../tests/delay-proxy" proxy.port "$(redis_port)" "$1"
	wait_until 10 test -s proxy.port
	export MARO_REGISTRY="redis://127.0.0.1:$(cat proxy.port)/0"
}

# timed CMD...: run CMD (under run); its wall time in ms in $ms.
timed() {
	local t0
	t0=$(date +%s%N)
	run "$@"
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "took $ms ms" >&3
}

@test "slow registry (150 ms a reply): maro-send -W 2s to a name never registered exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 maro-send -p notyet -t a -d b --notification -W 2s
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
	[[ "$stderr" == *"not delivered to 'notyet'"* ]]
}

@test "slow registry: maro-send waiting for a peer that joins later delivers to it" {
	slow_registry 150
	bg 30 maro-send -p late -t a -d hello --notification -W 15s
	local send=$BG_PID
	# the sender has looked the name up at least once (and found nothing)
	wait_until 10 sh -c "redis-cli -h 127.0.0.1 -p $(redis_port) client list | grep -q 'cmd=eval'"
	MARO_REGISTRY=$DIRECT bg 30 maro-recv -n late -C 1 -f payload > late.out
	local recv=$BG_PID
	wait_exit "$send" 20
	[ "$status" -eq 0 ]
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	run cat late.out
	assert_output hello
}

@test "slow registry: maro-scatter -W 2s with no worker exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 sh -c 'echo one | maro-scatter -P w -t x -W 2s'
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
}

@test "slow registry: maro-bcast -e w=1 -W 2s exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 maro-bcast -e w=1 -t x --notification -W 2s
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
	[[ "$stderr" == *"timed out waiting for peers: w 0 of 1 live"* ]]
}

@test "slow registry: maro-peers -e w=1 -W 2s exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 maro-peers -e w=1 -W 2s
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
}

@test "slow registry: maro-recv -W 2s exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 maro-recv -n r -W 2s
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
}

@test "slow registry: maro-wait-event -W 2s exits 124 in time" {
	slow_registry 150
	timed --separate-stderr timeout 20 maro-wait-event -n ev -W 2s 'w:go:1'
	assert_failure 124
	[ "$ms" -ge 2000 ]
	[ "$ms" -lt $((2000 + LATE)) ]
}

# A Redis that accepts connections and never answers: the tools leave with
# 69 (registry unavailable) within -W, not after the 2 s command timeout.
@test "hung registry: maro-send -W 0.5s exits 69 within 1.5 s" {
	slow_registry never
	timed --separate-stderr timeout 20 maro-send -p w -t a -d b --notification -W 0.5s
	assert_failure 69
	[ "$ms" -lt 1500 ]
	[[ "$stderr" == *"did not answer in time"* ]]
}

@test "hung registry: maro-scatter, maro-bcast, maro-peers, maro-recv, maro-wait-event -W 0.5s exit 69 within 1.5 s" {
	slow_registry never
	timed timeout 20 sh -c 'echo one | maro-scatter -P w -t x -W 0.5s'
	assert_failure 69
	[ "$ms" -lt 1500 ]
	timed timeout 20 maro-bcast -t x --notification -W 0.5s
	assert_failure 69
	[ "$ms" -lt 1500 ]
	timed timeout 20 maro-peers -e w=1 -W 0.5s
	assert_failure 69
	[ "$ms" -lt 1500 ]
	timed timeout 20 maro-recv -n r -W 0.5s
	assert_failure 69
	[ "$ms" -lt 1500 ]
	timed timeout 20 maro-wait-event -n ev -W 0.5s 'w:go:1'
	assert_failure 69
	[ "$ms" -lt 1500 ]
}

@test "registry hangs mid-run: maro-send -W 3s to 20 absent names exits 124 in time, not a timeout per name" {
	slow_registry 0
	local proxy=$BG_PID names=() i
	for i in $(seq 20); do names+=(-p "n$i"); done
	bg 60 maro-send "${names[@]}" -t a -d b --notification -W 3s 2> send.err
	local send=$BG_PID
	# the sender has looked the names up once; then the registry hangs
	wait_until 10 sh -c "redis-cli -h 127.0.0.1 -p $(redis_port) client list | grep -q 'cmd=eval'"
	kill -STOP -- "-$proxy"
	STOPPED=$proxy
	local t0=$(date +%s%N)
	wait_exit "$send" 30
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "took $ms ms after the hang" >&3
	[ "$status" -eq 124 ]
	[ "$ms" -lt 3500 ]
	run grep -c "not delivered to" send.err
	assert_output 20
}

@test "dir: a group lock held by another process: maro-recv -W 0.5s exits 69 within 1.5 s" {
	export MARO_REGISTRY="dir:$BATS_TEST_TMPDIR/registry"
	# the group's directory, as its first member makes it (a reader never does)
	mkdir -p -m 0700 "$BATS_TEST_TMPDIR/registry" "$BATS_TEST_TMPDIR/registry/$MARO_GROUP"
	bg 30 "$MARO_BIN/../tests/unit-tests" lock "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/.lock" > lock.out
	wait_until 10 grep -qx locked lock.out
	timed --separate-stderr timeout 20 maro-recv -n r -W 0.5s
	assert_failure 69
	[ "$ms" -lt 1500 ]
	[[ "$stderr" == *"stays locked by another process"* ]]
}

@test "registry hangs mid-run: SIGTERM ends maro-send (no -W) with 143 within 2.5 s" {
	slow_registry 0
	local proxy=$BG_PID names=() i
	for i in $(seq 5); do names+=(-p "n$i"); done
	bg 60 maro-send "${names[@]}" -t a -d b --notification 2> send.err
	local bgsend=$BG_PID send
	send=$(child_pid "$BG_PID" maro-send)
	wait_until 10 sh -c "redis-cli -h 127.0.0.1 -p $(redis_port) client list | grep -q 'cmd=eval'"
	kill -STOP -- "-$proxy"
	STOPPED=$proxy
	# it waits on the registry: a look-up 100 ms after the last
	wait_until 10 sh -c "grep -qv poll /proc/$send/wchan"
	local t0=$(date +%s%N)
	kill -TERM "$send"
	wait_exit "$bgsend" 30
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "took $ms ms after SIGTERM" >&3
	[ "$status" -eq 143 ]
	# the request in flight ends at the signal, not at its 2 s timeout
	[ "$ms" -lt 1000 ]
}

# maro-scatter lists the members every 250 ms, or ten times as long as a
# listing takes; new input after a pause may bring that forward, but not
# past the same floor (lib/scatter.c): a slow registry is not asked for
# the whole membership at every line of a trickling input.
@test "slow registry: a trickling input does not list the members at every line" {
	slow_registry 150
	bg 30 redis-cli -h 127.0.0.1 -p "$(redis_port)" monitor > monitor.log
	wait_until 10 grep -qx OK monitor.log
	# 20 lines, 150 ms apart: each one new input after a pause
	timed --separate-stderr timeout 20 sh -c \
	    'for i in $(seq 20); do echo "$i"; sleep 0.15; done | maro-scatter -P w -t x -W 4s'
	assert_failure 124
	local lists
	lists=$(grep -c '"ZRANGEBYSCORE" "maro:[^"]*:members"' monitor.log || :)
	echo "$lists listings in $ms ms" >&3
	# ten listings' time apart (1.5 s and more), from the start: at most
	# five in 4 s; one a line would be twenty
	[ "$lists" -ge 1 ]
	[ "$lists" -le 6 ]
}

# The other side of the same rule: only new input after a pause (20 ms
# without a line) brings a listing forward; a steady input does not, and
# the members are listed every 250 ms however fast the tasks go.
@test "a steady input lists the members every 250 ms, not at every round" {
	bg 60 maro-dist -n w.1 --raw --co '*:x:1' cat
	bg 60 maro-dist -n w.2 --raw --co '*:x:1' cat
	wait_until 10 live_is w. 2
	bg 30 redis-cli -h 127.0.0.1 -p "$(redis_port)" monitor > monitor.log
	wait_until 10 grep -qx OK monitor.log
	# a million lines: more than 2 s of work, read without a pause
	timed --separate-stderr timeout 20 sh -c 'seq 1000000 | maro-scatter -P w -t x -q -W 2s > /dev/null'
	# at -W with tasks answered and others not: 1
	assert_failure 1
	local lists
	lists=$(grep -c '"ZRANGEBYSCORE" "maro:[^"]*:members"' monitor.log || :)
	echo "$lists listings in $ms ms" >&3
	# one at the start and one each 250 ms (and -e's, none here); a
	# listing brought forward at every round would be one each 20 ms
	[ "$lists" -ge 2 ]
	[ "$lists" -le $((ms / 250 + 3)) ]
}
