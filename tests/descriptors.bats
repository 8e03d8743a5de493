#!/usr/bin/env bats
# backends: dir
# Out of file descriptors: a tool that opens a connection per peer says so
# once, with the limit and what to do, instead of retrying in silence.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE MARO_TRANSPORT
}
teardown() { default_teardown; }

# peers N: N receivers w1..wN, live; their names as -p options in $PEERS
peers() {
	local i
	PEERS=
	for i in $(seq "$1"); do
		bg 60 maro-recv -n "w$i" > /dev/null
		PEERS="$PEERS -p w$i"
	done
	wait_until 30 live_is w "$1"
}

# said_once: stderr ($stderr) says "out of file descriptors" once, with the limit
said_once() {
	run grep -c "out of file descriptors (the limit is 40): raise it (ulimit -n) or send to fewer peers" <<< "$stderr"
	assert_output 1
}

@test "maro-send to 30 peers with 40 descriptors says EMFILE once and exits 1 at -W" {
	peers 30
	run --separate-stderr sh -c "ulimit -n 40; exec maro-send $PEERS -t a -d b --notification -q -W 5s"
	assert_failure 1
	said_once
}

@test "maro-bcast to 30 peers with 40 descriptors says EMFILE once" {
	peers 30
	run --separate-stderr sh -c "ulimit -n 40; exec maro-bcast -P w -t a --notification -q -W 5s"
	assert_failure 1
	said_once
}

@test "maro-scatter over 30 peers with 40 descriptors says EMFILE once" {
	peers 30
	run --separate-stderr sh -c "ulimit -n 40; seq 60 | maro-scatter -P w -t x --async -n s -q -W 5s"
	assert_failure 1
	said_once
}

# Started with a standard stream closed, a tool's first files and sockets
# would take descriptors 0, 1 and 2: its messages, or its output, would go
# into a job log or a socket.  Each closed one holds /dev/null, opened the
# other way round, so the tool meets EBADF as before.
@test "a tool started with descriptors 0, 1 and 2 closed holds /dev/null there, and still meets EBADF" {
	bg 30 sh -c 'exec maro-recv -n r -W 20s <&- >&- 2>&-'
	wait_until 10 live_is r 1
	local pid fd
	pid=$(child_pid "$BG_PID" maro-recv)
	for fd in 0 1 2; do
		run readlink "/proc/$pid/fd/$fd"
		assert_output /dev/null
	done
	# closed in the tool alone: a shell's own pipes would take them too
	run -70 --separate-stderr timeout 10 sh -c 'exec maro-send -p x <&-'
	[ "$stderr" = "maro-send: error reading standard input: Bad file descriptor" ]
	run -1 --separate-stderr timeout 10 sh -c 'exec maro-msg -t a -d b >&-'
	[ "$stderr" = "maro-msg: error writing standard output: Bad file descriptor" ]
}
