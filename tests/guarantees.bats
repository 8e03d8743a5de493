#!/usr/bin/env bats
# backends: dir redis
# The guarantees the README promises, each tested directly, so that the
# bug that breaks it fails a test (tests/mutants names them).

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

# notes N: N notifications to w1, payloads "I-xxx...x" (106 bytes or so)
# for I = 1..N, as CBOR in in.cbor
notes() {
	seq "$1" | jq -c '{tag:"x",destination:"w1",session_type:"notification",
		payload:(tostring + "-" + ("x" * 100))}' |
		maro-msg -i json > in.cbor
}

# in_wchan PID WORD: PID sleeps in the kernel function WORD (pipe_write: blocked writing)
in_wchan() { grep -q "$2" "/proc/$1/wchan" 2>/dev/null; }

@test "acknowledged only once written: a receiver killed with a message it could not write loses none" {
	export MARO_TTL=2s
	notes 3000
	bg 60 sh -c 'maro-recv -n w1 -f payload | cat > got1'
	local first=$BG_PID recv reader send
	recv=$(child_pid "$first" maro-recv)
	reader=$(child_pid "$first" cat)
	wait_until 10 is_live w1
	# one message in flight: each arrives on its own, and is written (or
	# blocked writing) before the next comes
	bg 60 env MARO_WINDOW=1 maro-send -W 50s < in.cbor
	send=$BG_PID
	wait_until 20 sh -c '[ "$(wc -c < got1)" -ge 100000 ]'
	# the reader stops: the pipe fills, the receiver blocks writing a
	# message it must not have acknowledged
	kill -STOP "$reader"
	wait_until 20 in_wchan "$recv" pipe_write
	kill -KILL "$recv"
	# what it did write reaches got1
	kill -CONT "$reader"
	wait_until 10 not_live w1
	# the rest goes to the next receiver of the name
	bg 60 maro-recv -n w1 -f payload --idle-timeout 3s > got2
	local second=$BG_PID
	wait_exit "$send" 55
	[ "$status" -eq 0 ]
	wait_exit "$second" 20
	# every payload got out once at least
	run -0 sh -c 'cat got1 got2 | cut -d- -f1 | sort -un | wc -l'
	assert_output 3000
}

@test "a live Redis entry never disappears between heartbeats: its TTL is extended, watched without gaps" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "Redis only"
	export MARO_TTL=2s
	bg 30 maro-recv -n w1 > /dev/null
	wait_until 10 is_live w1
	local port key n gone
	port=$(cat "$BATS_FILE_TMPDIR/redis/redis.port")
	key="maro:$MARO_GROUP:m:w1"
	# three TTLs of EXISTS every 10 ms, from one redis-cli (no fork a look)
	timeout 7 redis-cli -p "$port" -r 700 -i 0.01 exists "$key" > seen || :
	n=$(wc -l < seen)
	gone=$(grep -cvx 1 seen || :)
	[ "$n" -ge 300 ] || { echo "only $n looks"; return 1; }
	[ "$gone" -eq 0 ] || { echo "gone in $gone of $n looks"; return 1; }
}

@test "a worker that takes tasks and dies without answering: scatter sends them to another, on one host" {
	# takes its first three tasks (window 3) and leaves without a word
	bg 30 maro-recv -n worker.1 -C 3 -f payload > took
	wait_until 10 is_live worker.1
	bg 60 sh -c 'seq 12 | maro-scatter -P worker -t job --window 3 -W 40s -f payload > answered'
	local scatter=$BG_PID
	wait_until 20 sh -c '[ "$(wc -l < took)" -eq 3 ]'
	# then an honest worker joins: it must get the dead one's three too
	bg 60 maro-dist -n worker.2 --raw --co '*:job:1' 'while IFS= read -r x; do echo "r$x"; done'
	wait_exit "$scatter" 50
	[ "$status" -eq 0 ]
	run sort -V answered
	assert_output "$(seq 12 | sed 's/^/r/')"
}

@test "timeouts are 124 exactly: scatter, bcast and dist with nothing answered" {
	run -124 timeout 10 sh -c 'echo a | maro-scatter -P nobody -t x -W 1s'
	run -124 timeout 10 maro-bcast -P nobody -e nobody=1 -t x -W 1s
	run -124 timeout 10 maro-dist -n w9 --on '*:never:1' true -W 1s
	# a worker that takes the task and never answers: nothing answered is still 124
	bg 30 maro-recv -n mute.1 > /dev/null
	wait_until 10 is_live mute.1
	run -124 timeout 10 sh -c 'echo a | maro-scatter -P mute -t x -W 2s'
	run -124 timeout 10 maro-bcast -P mute -t x -W 2s
}
