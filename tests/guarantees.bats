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

@test "acknowledged only once written: a receiver killed with messages it could not write loses none" {
	export MARO_TTL=2s
	notes 20000
	# the first receiver's reader takes 100 kB, then reads no more: the
	# receiver blocks on the pipe with messages read and not yet written
	bg 60 sh -c 'maro-recv -n w1 -f payload | { head -c 100000 > got1; exec sleep 60; }'
	local first=$BG_PID
	wait_until 10 is_live w1
	bg 60 maro-send -W 50s < in.cbor
	local send=$BG_PID
	wait_until 20 sh -c '[ "$(wc -c < got1)" -ge 100000 ]'
	local recv
	recv=$(pgrep -x maro-recv -P "$(pgrep -P "$first" -x sh)")
	kill -KILL "$recv"
	# (on Redis its entry lives out its TTL)
	wait_until 10 not_live w1
	# the rest goes to the next receiver of the name: nothing acknowledged was dropped
	bg 60 maro-recv -n w1 -f payload --idle-timeout 3s > got2
	wait_exit "$send" 55
	[ "$status" -eq 0 ]
	wait_until 20 test -s got2
	local second=$BG_PID
	wait_exit "$second" 20
	# every payload got out once at least (a whole line: the last of got1 may be cut)
	run -0 sh -c 'head -c 100000 got1 | sed "\$d" | cat - got2 | cut -d- -f1 | sort -un | wc -l'
	assert_output 20000
}

@test "a live Redis entry never disappears between heartbeats: its TTL is extended, watched without gaps" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "Redis only"
	export MARO_TTL=2s
	bg 30 maro-recv -n w1 > /dev/null
	wait_until 10 is_live w1
	local port key n=0 gone=0 t0=$SECONDS
	port=$(cat "$BATS_FILE_TMPDIR/redis/redis.port")
	key="maro:$MARO_GROUP:m:w1"
	# three TTLs of EXISTS, as fast as redis-cli runs
	while [ $((SECONDS - t0)) -lt 7 ]; do
		[ "$(redis-cli -p "$port" exists "$key")" = 1 ] || gone=$((gone + 1))
		n=$((n + 1))
	done
	[ "$n" -ge 100 ]
	[ "$gone" -eq 0 ]
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
