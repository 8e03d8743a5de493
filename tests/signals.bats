#!/usr/bin/env bats
# backends: dir
# SIGTERM and SIGINT end every tool within the grace maro(7) gives (2.5 s)
# and with 143 or 130, whatever it is waiting on: a full output pipe, an
# input that says nothing, acknowledgements that do not come.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE MARO_TRANSPORT
	STOPPED=
}
teardown() {
	# a stopped process cannot act on the TERM of kill_bg
	[ -z "$STOPPED" ] || kill -CONT "$STOPPED" 2>/dev/null || :
	exec 5>&- 6>&-
	default_teardown
}

# in_wchan PID WORD: PID sleeps in a kernel function named WORD...
in_wchan() { grep -q "$2" "/proc/$1/wchan" 2>/dev/null; }

# stops PID SIG BGPID: send SIG to PID; BGPID (its bg wrapper) must end
# within 2.5 s.  Its status in $status, the time taken in $ms.
stops() {
	local pid=$1 sig=$2 bgpid=$3 t0
	t0=$(date +%s%N)
	kill "-$sig" "$pid"
	wait_exit "$bgpid" 10
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$sig: exit $status after $ms ms" >&3
}

# flood NAME N: N notifications to NAME, in the background
flood() {
	seq "$2" | sed 's/.*/{"tag":"f","session_type":"notification","payload":&}/' |
		maro-msg -i json > flood.cbor
	bg 60 maro-send -p "$1" -W 50s < flood.cbor 2> flood.err
}

# A receiver writing into a fifo nobody reads: fd 5 holds the fifo open
# for reading (so the open for writing goes through) and never reads.
# Options go to maro-recv.
blocked_receiver() {
	mkfifo out.fifo
	exec 5<>out.fifo
	bg 60 maro-recv -n r "$@" > out.fifo 2> recv.err
	RECV_BG=$BG_PID
	wait_until 10 is_live r
	RECV=$(child_pid "$RECV_BG" maro-recv)
	flood r 20000
}

@test "maro-recv blocked writing to a full pipe: SIGTERM ends it with 143 within 2.5 s" {
	blocked_receiver
	wait_until 20 in_wchan "$RECV" pipe_write
	stops "$RECV" TERM "$RECV_BG"
	[ "$status" -eq 143 ]
	[ "$ms" -lt 2500 ]
	run cat recv.err
	refute_output --partial "error writing"
}

@test "maro-recv blocked writing to a full pipe: SIGINT ends it with 130 within 2.5 s" {
	blocked_receiver
	wait_until 20 in_wchan "$RECV" pipe_write
	stops "$RECV" INT "$RECV_BG"
	[ "$status" -eq 130 ]
	[ "$ms" -lt 2500 ]
}

@test "maro-send reading an input that says nothing: SIGTERM ends it with 143 within 2.5 s" {
	bg 30 maro-recv -n r
	wait_until 10 is_live r
	mkfifo in.fifo
	exec 6<>in.fifo
	bg 60 maro-send -p r < in.fifo
	local send
	send=$(child_pid "$BG_PID" maro-send)
	wait_until 10 in_wchan "$send" poll
	stops "$send" TERM "$BG_PID"
	[ "$status" -eq 143 ]
	[ "$ms" -lt 2500 ]
}

@test "maro-send waiting for acknowledgements of a stopped peer: SIGINT ends it with 130 within 2.5 s" {
	bg 30 maro-recv -n r
	local recv
	recv=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live r
	kill -STOP "$recv"
	STOPPED=$recv
	bg 60 maro-send -p r -t a -d b --notification
	local send
	send=$(child_pid "$BG_PID" maro-send)
	wait_until 10 in_wchan "$send" poll
	stops "$send" INT "$BG_PID"
	[ "$status" -eq 130 ]
	[ "$ms" -lt 2500 ]
}

# -W bounds a wait on standard output too (maro(7), EXIT STATUS)
@test "maro-recv -W 3s blocked writing to a full pipe exits 124 at -W" {
	local t0=$(date +%s%N)
	blocked_receiver -W 3s
	wait_exit "$RECV_BG" 10
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "exit $status after $ms ms" >&3
	[ "$status" -eq 124 ]
	[ "$ms" -lt 4000 ]
	run cat recv.err
	assert_output --regexp "^maro-recv: timed out writing standard output after [0-9]+ messages$"
}
