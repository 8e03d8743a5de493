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

# A tool that caught SIGINT, SIGTERM or SIGHUP leaves and then dies of it
# (maro(7), EXIT STATUS): a shell that runs it as a foreground command
# takes a child that exited 130 as one that handled the signal, and goes
# on with its script (bash does; dash stops on the signal itself).  Each
# tool that waits runs here in a session of its own, as a terminal's
# foreground job is a process group: the signal goes to the whole group.

# in_group CMD...: CMD in a session (and process group) of its own, in the
# background under perl, which writes how it ended to group.end: "exit N"
# or "signal N".  The group's id in $GROUP, its output in group.out.
in_group() {
	rm -f group.pid group.end
	bg 60 perl -MPOSIX -e '
		my $pid = fork() // die "fork: $!";
		if (!$pid) { POSIX::setsid(); exec @ARGV or die "exec: $!" }
		open(my $f, ">", "group.pid.new") or die; print $f "$pid\n"; close $f;
		rename("group.pid.new", "group.pid") or die;
		waitpid($pid, 0);
		open($f, ">", "group.end.new") or die;
		print $f ($? & 127 ? "signal " . ($? & 127) : "exit " . ($? >> 8)), "\n";
		close $f;
		rename("group.end.new", "group.end") or die;
	' "$@" > group.out 2> group.err
	GROUP_BG=$BG_PID
	wait_until 10 test -s group.pid
	GROUP=$(cat group.pid)
}

# catching TOOL: TOOL runs in the group and has its SIGINT and SIGTERM
# handlers in (SigCgt: bits 2 and 15)
catching() {
	local pid mask
	pid=$(pgrep -s "$GROUP" -x "$1" | head -n 1)
	[ -n "$pid" ] || return 1
	mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$pid/status" 2> /dev/null)
	[ -n "$mask" ] && (((16#$mask & 16#4002) == 16#4002))
}

# group_gone: nothing left running in the group's session (a process
# killed at the end may stay a zombie until init reaps it)
group_gone() { ! ps -s "$GROUP" -o stat= | grep -qv '^Z'; }

# signal_group SIG: SIG to the whole group; the group's end in $END
signal_group() {
	kill -s "$1" -- "-$GROUP"
	wait_exit "$GROUP_BG" 10
	END=$(cat group.end)
	echo "$1 to the group: $END" >&3
}

# script_stops SHELL SIG TOOL 'CMD' [READY...]: SHELL runs CMD (which starts
# TOOL) and then 'echo went on'; once TOOL caught the signals (and READY
# holds), SIG to the group.  The script must die of SIG, never go on.
script_stops() {
	local shell=$1 sig=$2 tool=$3 cmd=$4
	shift 4
	in_group "$shell" -c "$cmd; echo \"went on rc=\$?\""
	wait_until 20 catching "$tool"
	[ $# -eq 0 ] || wait_until 20 "$@"
	signal_group "$sig"
	run cat group.out
	refute_output --partial "went on"
	[ "$END" = "signal $(kill -l "$sig")" ]
}

# tool_dies SIG TOOL 'CMD' [READY...]: the same with TOOL run directly:
# the tool itself must die of SIG (a parent's wait sees the signal)
tool_dies() {
	local sig=$1 tool=$2 cmd=$3
	shift 3
	in_group sh -c "exec $cmd"
	wait_until 20 catching "$tool"
	[ $# -eq 0 ] || wait_until 20 "$@"
	signal_group "$sig"
	[ "$END" = "signal $(kill -l "$sig")" ]
}

# each_way TOOL 'CMD' [READY...]: bash and dash with SIGINT, the tool
# alone with SIGTERM, SIGHUP and SIGINT
each_way() {
	script_stops bash INT "$@"
	script_stops dash INT "$@"
	tool_dies TERM "$@"
	tool_dies HUP "$@"
	tool_dies INT "$@"
}

@test "maro-recv in a script: SIGINT to the group stops the script (bash, dash); the tool dies of INT, TERM, HUP and leaves" {
	each_way maro-recv 'maro-recv -n x' is_live x
	run -0 not_live x
}

@test "maro-send waiting for a peer in a script: SIGINT stops the script; it dies of INT, TERM, HUP" {
	each_way maro-send 'maro-send -p nobody -t a -d b'
}

@test "maro-scatter waiting for replies in a script: SIGINT stops the script; it dies of INT, TERM, HUP" {
	bg 60 maro-recv -n worker.1 > /dev/null
	wait_until 10 is_live worker.1
	seq 3 > tasks
	each_way maro-scatter "maro-scatter -P worker -t t < $PWD/tasks"
}

@test "maro-bcast waiting for replies in a script: SIGINT stops the script; it dies of INT, TERM, HUP" {
	bg 60 maro-recv -n worker.1 > /dev/null
	wait_until 10 is_live worker.1
	each_way maro-bcast 'maro-bcast -P worker -t t -d x'
}

@test "maro-wait-event in a script: SIGINT stops the script; it dies of INT, TERM, HUP and leaves" {
	each_way maro-wait-event "maro-wait-event -n master 'worker:update:1'" is_live master
	run -0 not_live master
}

@test "maro-dist in a script: SIGINT stops the script, also while a handler runs; it dies of INT, TERM, HUP and leaves" {
	each_way maro-dist "maro-dist -n w.1 --on 'master:go:1' 'sleep 30'" is_live w.1
	run -0 not_live w.1
	# a handler running (in a process group of its own): stopped too
	in_group bash -c "maro-dist -n w.1 --on 'master:go:1' 'sleep 30'; echo went on"
	wait_until 20 catching maro-dist
	wait_until 10 is_live w.1
	bg 60 maro-send -p w.1 -t go -d x --notification -n master -W 50s
	wait_until 20 pgrep -s "$GROUP" -x sleep
	signal_group INT
	[ "$END" = "signal 2" ]
	run cat group.out
	refute_output --partial "went on"
	wait_until 5 group_gone
	run -0 not_live w.1
}

@test "maro-pool in a script: SIGINT stops its jobs, then the script; it dies of INT, TERM, HUP" {
	each_way maro-pool 'maro-pool -j 2 -T w -- maro-recv' live_is w. 2
	run -0 live_is w. 0
	run -0 live_is pool 0
	wait_until 5 group_gone
}

@test "maro-peers -e and --serve in a script: SIGINT stops the script; they die of INT, TERM, HUP" {
	each_way maro-peers 'maro-peers -e nobody=1'
	each_way maro-peers 'maro-peers --serve 0 > /dev/null'
}

@test "tutorial-resume interrupted in its step 4 stops there, cleans up and dies of SIGINT" {
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir "$TMPDIR"
	in_group sh "$MARO_TOP/scripts/tutorial-resume"
	wait_until 60 grep -q "^resume: master killed" group.out
	# step 4: the master again, with --resume
	wait_until 20 eval 'pgrep -s "$GROUP" -f "maro-scatter .*--resume" > /dev/null'
	signal_group INT
	[ "$END" = "signal 2" ]
	run cat group.out
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 1 --partial "resume: master killed"
	wait_until 5 group_gone
	run ls "$TMPDIR"
	assert_output ''
}
