#!/usr/bin/env bats
# backends: dir redis sentinel
# End to end: maro-send -> maro-recv across real processes, on the registry
# backend under test (MARO_TEST_BACKEND), with a real redis-server for redis, a primary,
# its replica and three sentinels for sentinel.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	export MARO_TTL=1s
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

# numbers FROM TO: notification messages whose payloads are FROM..TO, as CBOR
numbers() {
	seq "$1" "$2" | sed 's/.*/{"tag":"n","session_type":"notification","payload":&}/' |
		maro-msg -i json
}

lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

# kill_midstream A B LINES SECONDS: maro-send reads a fifo to "sink".  A
# goes in first; once the first receiver has written LINES lines to "first"
# it is killed -9 and a --takeover receiver writes to "second"; only then
# does B go in (however fast the first receiver took A), and the fifo
# closes.  The second receiver is stopped with SIGTERM after the sender
# ends.  Sets send_status and second_status; the sender's stderr is send.err.
kill_midstream() {
	local limit=$4 first second send

	mkfifo feed
	bg "$limit" maro-recv -n sink -f payload > first
	first=$BG_PID
	wait_until 10 is_live sink
	bg "$limit" sh -c "maro-send -p sink -W $((limit - 10))s < feed 2> send.err"
	send=$BG_PID
	exec 5> feed
	cat "$1" >&5
	wait_until 60 has_lines first "$3"
	kill -9 "$(child_pid "$first" maro-recv)"
	bg "$limit" maro-recv -n sink --takeover -f payload > second
	second=$BG_PID
	cat "$2" >&5
	exec 5>&-
	wait_exit "$send" "$((limit - 10))"
	send_status=$status
	kill -TERM "$(child_pid "$second" maro-recv)"
	wait_exit "$second" 10
	second_status=$status
}

@test "a stream of 10000 messages arrives complete and in order" {
	numbers 1 10000 > in.cbor
	bg 60 maro-recv -n sink -C 10000 -f payload > out
	recv=$BG_PID
	run timeout 60 maro-send -p sink < in.cbor
	assert_success
	wait_exit "$recv" 30
	[ "$status" -eq 0 ]
	seq 1 10000 | cmp - out
}

# With a window of 2 the whole window is often acknowledged while the sender
# stages the next message: it must then send it, not poll for an
# acknowledgement that will never come (it hung there, to its -W).
@test "a stream through a window of 2 keeps moving to the end" {
	numbers 1 30000 > in.cbor
	bg 120 maro-recv -n sink -C 30000 -f payload > out
	recv=$BG_PID
	MARO_WINDOW=2 run timeout 120 maro-send -p sink -W 60s < in.cbor
	assert_success
	wait_exit "$recv" 30
	[ "$status" -eq 0 ]
	seq 1 30000 | cmp - out
}

@test "two senders to one receiver: every message once" {
	numbers 1 3000 > a.cbor
	numbers 3001 6000 > b.cbor
	bg 60 maro-recv -n sink -C 6000 -f payload > out
	recv=$BG_PID
	bg 60 maro-send -p sink < a.cbor
	a=$BG_PID
	bg 60 maro-send -p sink < b.cbor
	b=$BG_PID
	wait_exit "$a" 60; [ "$status" -eq 0 ]
	wait_exit "$b" 60; [ "$status" -eq 0 ]
	wait_exit "$recv" 30; [ "$status" -eq 0 ]
	sort -n out | cmp - <(seq 1 6000)
	# each sender's messages stay in order
	awk '$1 <= 3000' out | cmp - <(seq 1 3000)
	awk '$1 > 3000' out | cmp - <(seq 3001 6000)
}

@test "kill -9 of the receiver mid-stream: a new receiver gets the rest, nothing lost" {
	# the sender reads a fifo: the second half exists only after the kill,
	# however fast the first receiver took the first half
	numbers 1 50000 > a.cbor
	numbers 50001 100000 > b.cbor
	kill_midstream a.cbor b.cbor 20000 120
	[ "$send_status" -eq 0 ] || { cat send.err; false; }
	[ "$second_status" -eq 143 ]
	# at least once across both outputs
	cat first second | sort -n -u | cmp - <(seq 1 100000)
	# duplicates only within the sender's in-flight window (4096)
	dups=$(( $(cat first second | wc -l) - 100000 ))
	echo "# duplicates: $dups" >&3
	[ "$dups" -le 4096 ]
	[ "$(lines second)" -gt 0 ]
}

@test "large messages (sent from their own buffers) arrive intact across a kill -9 of the receiver" {
	# 40 distinct payloads of 100,000 characters; each message goes in a
	# frame of its own, sent and resent in place from the sender's buffer
	for i in $(seq 40); do head -c 75000 /dev/urandom | base64 -w0; echo; done > payloads
	head -n 20 payloads | jq -R -c '{tag: "n", session_type: "notification", payload: .}' |
		maro-msg -i json > a.cbor
	tail -n 20 payloads | jq -R -c '{tag: "n", session_type: "notification", payload: .}' |
		maro-msg -i json > b.cbor
	kill_midstream a.cbor b.cbor 5 60
	[ "$send_status" -eq 0 ] || { cat send.err; false; }
	# whole lines only (the kill may tear the first receiver's last write,
	# which it never acknowledged): every payload, each byte for byte
	cat first second | awk 'length($0) == 100000' | sort -u | cmp - <(sort -u payloads)
	[ "$(lines second)" -gt 0 ]
}

# stalled_receiver WINDOW LEAST SECONDS MOST: 100 messages of 64 KiB to a
# receiver stopped once it is live, from a maro-send with MARO_WINDOW_BYTES
# set to WINDOW (unset if empty).  Once the sender has taken LEAST from its
# pipe, SECONDS more in which it must take at most MOST (its window, the
# pipe's 64 KiB and one read buffer); then the receiver goes on and gets all
# 100, and both exit 0.  The stalled receiver's entry must outlive the wait.
stalled_receiver() {
	local window=$1 least=$2 seconds=$3 most=$4 recv send
	export MARO_TTL=10s
	printf '{"tag":"n","session_type":"notification","payload":"%s"}\n' "$(head -c 65536 /dev/zero | tr '\0' x)" |
		maro-msg -i json > one.cbor
	bg 60 maro-recv -n sink -C 100 -f cbor > out
	recv=$BG_PID
	wait_until 10 is_live sink
	kill -STOP "$(child_pid "$recv" maro-recv)"
	mkfifo feed
	# the feeder counts the messages the sender has taken from its pipe
	bg 60 sh -c 'i=0; while [ $i -lt 100 ]; do cat one.cbor || exit 1; i=$((i + 1)); echo $i > fed; done > feed'
	if [ -n "$window" ]; then
		MARO_WINDOW_BYTES=$window bg 60 sh -c 'maro-send -p sink -q -W 50s < feed 2> send.err'
	else
		bg 60 sh -c 'unset MARO_WINDOW_BYTES; maro-send -p sink -q -W 50s < feed 2> send.err'
	fi
	send=$BG_PID
	wait_until 10 has_lines fed 1
	# sh -c: the count is read again at each poll
	wait_until 30 sh -c "[ \"\$(cat fed)\" -ge $least ] 2> /dev/null"
	# not readiness: the time in which the sender must not take more
	sleep "$seconds"
	echo "# taken while the receiver stalls: $(cat fed) of 100" >&3
	[ "$(cat fed)" -le "$most" ]
	kill -CONT "$(child_pid "$recv" maro-recv)"
	wait_exit "$send" 50
	[ "$status" -eq 0 ] || { cat send.err; false; }
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(maro-msg -f json < out | wc -l)" -eq 100 ]
}

@test "a stalled receiver holds a sender of large messages to MARO_WINDOW_BYTES, and then gets them all" {
	# 4 of them fill a 256 KiB byte window
	stalled_receiver 262144 4 1 12
}

@test "by default a stalled receiver holds a sender of large messages to 2 MiB of them" {
	# 31 of them fill the default byte window (4 MiB would let 65 through)
	stalled_receiver '' 10 2 40
}

@test "a receiver that exits right after its last message: the sender has its acknowledgement" {
	# 30 rounds: the receiver takes one message and exits at once; a lost
	# acknowledgement would keep the sender retrying to -W (124)
	for i in $(seq 30); do
		bg 20 maro-recv -n "sink$i" -C 1 -f payload > "out$i"
		recv=$BG_PID
		wait_until 10 is_live "sink$i"
		run timeout 20 maro-send -p "sink$i" -t x -d "m$i" --notification -W 5s
		[ "$status" -eq 0 ] || { echo "round $i: $output"; false; }
		wait_exit "$recv" 10
		[ "$status" -eq 0 ]
		[ "$(cat "out$i")" = "m$i" ]
	done
}

@test "a sender connected to an endpoint that never answers finds the name's new inbox" {
	# a live entry whose inbox is gone (a holder that advertises a dead endpoint)
	bg 30 "$MARO_BIN/../tests/unit-tests" hold sink tcp://127.0.0.1:1 > hold.out 2>&1
	holder=$BG_PID
	wait_until 10 grep -qx "held sink" hold.out
	bg 60 maro-send -v -p sink -t x -d hello --notification -W 30s 2> send.err
	send=$BG_PID
	wait_until 10 grep -q "connecting to 'sink' at tcp://127.0.0.1:1" send.err
	# the holder leaves; a real receiver takes the name
	kill -TERM "$(child_pid "$holder" unit-tests)"
	wait_until 10 not_live sink
	bg 30 maro-recv -n sink -C 1 -f payload > out
	recv=$BG_PID
	wait_exit "$send" 25
	[ "$status" -eq 0 ]
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(cat out)" = hello ]
	[ "$(grep -c "connecting to 'sink'" send.err)" -eq 2 ]
}

@test "a second receiver of a held name fails and names the holder" {
	bg 30 maro-recv -n worker.1 -f payload > /dev/null
	wait_until 10 is_live worker.1
	run timeout 10 maro-recv -n worker.1 -W 1s
	assert_failure 69
	assert_output --partial "name 'worker.1' is held by pid $(child_pid "$BG_PID" maro-recv)"
	assert_output --partial "$(hostname)"
}

@test "a killed receiver's entry disappears within the expiry" {
	bg 30 maro-recv -n worker.7 > /dev/null
	wait_until 10 is_live worker.7
	kill -9 "$(child_pid "$BG_PID" maro-recv)"
	wait_until 5 not_live worker.7
}

@test "a peer that never appears: 124 at the timeout, the message listed" {
	run timeout 20 maro-send -p nobody -t hello -d x --notification -W 1s
	assert_failure 124
	assert_output --partial "not delivered to 'nobody'"
	assert_output --partial "timed out: 1 not delivered"
}

@test "malformed stdin: 65 with the offset, the messages before it delivered" {
	numbers 1 3 > in.cbor
	good=$(wc -c < in.cbor)
	printf '\xa1\x63tag' >> in.cbor
	bg 30 maro-recv -n sink -C 3 -f payload > out
	recv=$BG_PID
	run timeout 20 maro-send -p sink < in.cbor
	assert_failure 65
	assert_output --partial "malformed input at byte offset $good"
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	printf '1\n2\n3\n' | cmp - out
}

@test "a message without a destination is malformed input" {
	run timeout 20 sh -c 'maro-msg -t x -d y | maro-send'
	assert_failure 65
	assert_output --partial "no destination"
}

@test "Redis stopped and restarted mid-run: nothing lost, the receiver registers again" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "needs the redis backend"
	port=$(cat "$BATS_FILE_TMPDIR/redis/redis.port")
	mkfifo feed
	bg 120 maro-recv -n sink -C 3000 -f payload > out
	recv=$BG_PID
	exec 5<> feed	# read-write: opening it does not wait for the other end
	bg 120 maro-send -p sink < feed
	send=$BG_PID
	numbers 1 1000 >&5
	wait_until 30 has_lines out 1000
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_FILE_TMPDIR/redis"
	numbers 1001 2000 >&5
	wait_until 30 has_lines out 2000
	sh "$MARO_TOP/scripts/test-redis" start "$BATS_FILE_TMPDIR/redis" "$port" 5>&-	# the server must not hold the fifo
	wait_until 15 is_live sink
	numbers 2001 3000 >&5
	exec 5>&-
	wait_exit "$send" 60; [ "$status" -eq 0 ]
	wait_exit "$recv" 30; [ "$status" -eq 0 ]
	seq 1 3000 | cmp - out
}

@test "Redis down at start: exit 69 with a clear message" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "needs the redis backend"
	run timeout 10 maro-recv -n x --registry redis://127.0.0.1:1/0
	assert_failure 69
	assert_output --partial "127.0.0.1:1"
	run timeout 10 maro-send -p x -t a --registry redis://127.0.0.1:1/0
	assert_failure 69
}

@test "a receiver with a filter leaves other messages to their sender" {
	bg 30 maro-recv -n sink --tag keep -C 1 -f payload > out
	recv=$BG_PID
	run timeout 20 maro-send -p sink -t drop -d no --notification -W 2s
	assert_failure 124
	run timeout 20 maro-send -p sink -t keep -d yes --notification -W 10s
	assert_success
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(cat out)" = yes ]
}

@test "garbage and broken frames sent to an inbox neither crash nor wedge it" {
	for transport in tcp ipc; do
		if [ "$transport" = ipc ] && [ "$MARO_TEST_BACKEND" = redis ]; then
			continue
		fi
		export MARO_TRANSPORT=$transport MARO_INSECURE_TCP=1
		bg 30 maro-recv -n sink -C 1 -f payload > out
		recv=$BG_PID
		wait_until 10 is_live sink
		ep=$(maro-peers -f json | jq -r 'select(.name == "sink") | .endpoint')
		run timeout 20 "$MARO_BIN/../tests/unit-tests" hostile "$ep"
		assert_success
		run timeout 20 maro-send -p sink -t ok -d honest --notification -W 10s
		assert_success
		wait_exit "$recv" 10
		[ "$status" -eq 0 ]
		[ "$(cat out)" = honest ]
	done
}
