#!/usr/bin/env bats
# maro-send: command line, usage errors, help and version.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "maro-send --help prints the usage to stdout and exits 0" {
	run maro-send --help
	assert_success
	assert_line --index 0 --partial "usage: maro-send"
	run maro-send -h
	assert_success
}

@test "maro-send -V names the tool and the library versions" {
	run maro-send -V
	assert_success
	assert_output --regexp "^maro-send [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
}

@test "maro-send: an unknown option is a usage error (2) on stderr" {
	run --separate-stderr maro-send --no-such-option
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"try 'maro-send --help'"* ]]
}

@test "maro-send: a bad duration is a usage error naming the flag" {
	run maro-send -W 5x -n a -t x
	assert_failure 2
	assert_output --partial "invalid duration '5x' for -W"
}

@test "maro-send: an unreachable Redis registry is exit 69, named" {
	run timeout 10 sh -c 'maro-msg -t x --notification | maro-send -n me --registry redis://127.0.0.1:1/0 -W 2s'
	assert_failure 69
	assert_output --partial "127.0.0.1:1"
}

@test "maro-send: -d without -t, -d with --json, -p with -P are usage errors" {
	run maro-send -d x
	assert_failure 2
	assert_output --partial "-d and --json need -t TAG"
	run maro-send -t a -d x --json 1
	assert_failure 2
	run maro-send -t a -p x -P y
	assert_failure 2
	assert_output --partial "-p and -P do not go together"
}

@test "maro-send: an invalid peer name is a usage error" {
	run maro-send -t a -p 'bad name'
	assert_failure 2
	assert_output --partial "invalid peer name 'bad name'"
}

@test "maro-send: invalid JSON payload names line and column" {
	run maro-send -t a -p x --json '{"a":'
	assert_failure 2
	assert_output --partial "invalid JSON payload"
}

@test "maro-send: empty input sends nothing and exits 0" {
	run timeout 10 maro-send -p nobody < /dev/null
	assert_success
	assert_output ""
}

@test "maro-send: starting loads no NSS module for the protocols database, and linked statically reads none, nor nsswitch.conf" {
	command -v strace > /dev/null || skip "strace is not installed"
	# with "protocols: db files", glibc tried libnss_db in ~40 places first:
	# 76 failed calls, 0.2 ms of every start.  OpenPGM looks up its
	# protocol; linked statically, the tools carry no OpenPGM and look up
	# none (lib/zmq-static.c)
	# LeakSanitizer cannot run under ptrace (the instrumented build)
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
	run strace -f -qq -e trace=openat,newfstatat -o start.trace timeout 10 maro-send -p nobody < /dev/null
	assert_success
	if [ "${MARO_LINK:-static}" = shared ]; then
		grep -q /etc/protocols start.trace
	else
		run ! grep -q /etc/protocols start.trace
		# nor is glibc told where to look (lib/transport.c): a read of nsswitch.conf
		run ! grep -q nsswitch.conf start.trace
	fi
	run ! grep -q libnss_db start.trace
}

# Once all is acknowledged maro-send leaves its ZeroMQ context to the exit
# (maro_ctx_abandon, lib/transport.h): no thread of it ends by itself, which
# terminating the context makes each do.  Not in an instrumented build,
# whose leak check wants all freed.
@test "maro-send: delivered, it exits leaving its ZeroMQ threads to the exit; what it bound is removed" {
	command -v strace > /dev/null || skip "strace is not installed"
	if readelf -d "$MARO_BIN/maro-send" | grep -q 'NEEDED.*libasan'; then
		skip "an instrumented build tears its context down (MARO_CAN_ABANDON)"
	fi
	export MARO_REGISTRY="dir:$BATS_TEST_TMPDIR/r" MARO_TRANSPORT=ipc
	bg 30 maro-recv -n master -C 1 -f payload > got
	local recv=$BG_PID
	wait_until 10 is_live master
	run -0 strace -f -qq -e trace=exit,exit_group -o exit.trace timeout 10 maro-send -p master -t x -d hello --notification
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(cat got)" = hello ]
	grep -q 'exit_group(0)' exit.trace
	run ! grep -q ' exit(' exit.trace
	# a task: its reply comes back, and the socket file of its reply inbox
	# goes (its context is terminated: the inbox lingers for its last
	# acknowledgements, which examples.bats's maro-msg(1) replier needs)
	bg 30 maro-dist -n w --raw --co '*:echo:1' cat
	wait_until 10 is_live w
	ls "$BATS_TEST_TMPDIR/r/$MARO_GROUP"/s.* > before
	[ -s before ]
	run -0 timeout 10 sh -c 'echo $$ > send.pid; exec maro-send -p w -t echo --json 21 -f payload'
	assert_output 21
	run -0 ls "$BATS_TEST_TMPDIR/r/$MARO_GROUP"
	refute_output --partial "s.$(cat send.pid)."
	ls "$BATS_TEST_TMPDIR/r/$MARO_GROUP"/s.* > after
	run -0 diff before after
}

@test "maro-send --async without a name for task replies is a usage error" {
	run timeout 10 maro-send -p x -t a --async
	assert_failure 2
	assert_output --partial "need a name"
}

@test "maro-send --no-wait: three pings in a row to a live receiver, each exits 0 at once, all arrive" {
	bg 30 maro-recv -n master -C 3 -f payload > got
	local recv=$BG_PID i
	wait_until 10 is_live master
	for i in 1 2 3; do
		run -0 timeout 5 maro-send -n "w.$i" -p master -t update -d "$i" --notification --no-wait -W 3s
		assert_output ''
	done
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	run sort got
	assert_output $'1\n2\n3'
}

@test "maro-send --no-wait does not wait for an acknowledgement: a stopped receiver holds a blocking send to -W, not it" {
	bg 30 maro-recv -n master -f payload > /dev/null
	local recv
	recv=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live master
	kill -STOP "$recv"
	run -124 timeout 10 maro-send -p master -t x -d y --notification -W 1s
	run -0 timeout 10 maro-send -p master -t x -d y --notification --no-wait -W 5s
	kill -CONT "$recv"
}

@test "maro-send --no-wait to a name nobody holds: 124 at -W, saying it was not sent" {
	run -124 --separate-stderr timeout 10 maro-send -p nobody -t x -d y --notification --no-wait -W 1s
	assert_equal "$stderr" "maro-send: timed out: 1 message not sent"
}

@test "maro-send --no-wait sends task requests whose replies go to -n NAME, as --async" {
	run -2 --separate-stderr maro-send -p w -t x -d y --no-wait
	[[ "$stderr" == *"task requests sent with --async or --no-wait need a name for their replies (-n NAME)"* ]]
}

@test "maro-send: text on stdin is malformed input (65) with a hint: -t/-d or maro-msg -i json; CBOR that is cut, none" {
	run --separate-stderr timeout 10 maro-send -p a -W 5s <<< hello
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-send: malformed input at byte offset 0: truncated CBOR item at end of input (6 bytes of it read); it looks like text, not CBOR: build a message with -t TAG -d DATA, or make messages from JSON lines with maro-msg -i json" ]
	# a number on its line is a CBOR item, but not a message: the same hint
	run --separate-stderr timeout 10 maro-send -p a -W 5s <<< 42
	[ "$status" -eq 65 ]
	[[ $stderr == *"item is not a map (a message is a CBOR map); it looks like text, not CBOR: "* ]]
	# a message cut short is not text
	printf '\xa1\x63tag' > cut.cbor
	run --separate-stderr timeout 10 maro-send -p a -W 5s < cut.cbor
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-send: malformed input at byte offset 0: truncated CBOR item at end of input (5 bytes of it read)" ]
}

# A name nobody holds is waited for until -W, but not in silence.
@test "maro-send to a name nobody holds says once, after a second, what it waits for; -v at once" {
	run --separate-stderr timeout 10 maro-send -p nobody -t a -d b -W 2.5s
	[ "$status" -eq 124 ]
	[ "$(grep -c 'no member named' <<< "$stderr")" -eq 1 ]
	# said after 1 s of the 2.5: 2 s left (1 on a loaded machine)
	[[ $(head -n 1 <<< "$stderr") =~ ^"maro-send: no member named 'nobody' in group '$MARO_GROUP' on $MARO_REGISTRY; waiting (-W: "[12]"s left)"$ ]]
	# within the first second, nothing; with -v, at once
	run --separate-stderr timeout 10 maro-send -p nobody -t a -d b -W 0.6s
	[ "$status" -eq 124 ]
	[[ $stderr != *"no member named"* ]]
	run --separate-stderr timeout 10 maro-send -p nobody -t a -d b -W 0.6s -v
	[ "$status" -eq 124 ]
	[[ $stderr == *"maro-send: no member named 'nobody' in group '$MARO_GROUP' on $MARO_REGISTRY; waiting (-W: 1s left)"* ]]
}

@test "maro-send without -W to a name nobody holds says it waits without end" {
	bg 30 maro-send -p nobody -t a -d b 2> send.err
	wait_until 10 grep -qx "maro-send: no member named 'nobody' in group '$MARO_GROUP' on $MARO_REGISTRY; waiting without end; -W sets a bound" send.err
}

@test "maro-send to a worker that died says no member holds its name" {
	bg 30 maro-recv -n w.1 > /dev/null
	local recv
	recv=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live w.1
	kill -KILL "$recv"
	wait_until 10 not_live w.1
	run --separate-stderr timeout 10 maro-send -p w.1 -t a -d b --notification -W 2.5s
	[ "$status" -eq 124 ]
	[[ $stderr == *"maro-send: no member named 'w.1' in group '$MARO_GROUP' on $MARO_REGISTRY; waiting (-W: "* ]]
}

@test "maro-send --fail-fast: a name nobody holds is 69 at once, its message not delivered; a live one is sent" {
	local t0=$SECONDS
	run --separate-stderr timeout 10 maro-send -p nobody -t a -d b --notification --fail-fast
	[ "$status" -eq 69 ]
	[ $((SECONDS - t0)) -le 2 ]
	assert_equal "$(head -n 1 <<< "$stderr")" \
		"maro-send: no member named 'nobody' in group '$MARO_GROUP' on $MARO_REGISTRY; not waiting for it (--fail-fast)"
	[[ $stderr == *"maro-send: not delivered to 'nobody': "* ]]
	bg 30 maro-recv -n r -C 1 -f payload > got
	wait_until 10 is_live r
	run -0 timeout 10 maro-send -p r -t a -d hello --notification --fail-fast -W 5s
	wait_until 10 has_lines got 1
	assert_equal "$(cat got)" hello
}

@test "maro-send -e TYPE=N waits until N peers of the type are live, then -P finds them all" {
	bg 30 sh -c 'maro-send -e w=2 -P w. -t x -d y --notification -W 20s; echo "exit $?" > sent'
	local i
	for i in 1 2; do
		bg 30 maro-recv -n "w.$i" -C 1 -f payload > "w.$i.out"
	done
	wait_until 20 test -s sent
	[ "$(cat sent)" = "exit 0" ]
	wait_until 10 live_is w. 0
	[ "$(cat w.1.out w.2.out)" = "$(printf 'y\ny')" ]
}
