#!/usr/bin/env bats
# backends: dir redis sentinel
# check: early (a long one)
# Sessions and collectives: blocking and async send, scatter, bcast,
# receive by session id, with workers that are shell pipelines.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	export MARO_TTL=1s
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

# worker NAME [JQ]: a shell worker that answers every task with JQ applied
# to the request (default: payload doubled).  Sets WORKER to its bg pid.
worker() {
	bg 120 sh -c 'maro-recv -n "$1" -f json |
		jq -c --unbuffered "$2" |
		maro-msg reply -n "$1" -i json | maro-send' _ "$1" "${2:-.payload |= . * 2}"
	WORKER=$BG_PID
}

# A worker that takes tasks and never answers.
mute() {
	bg 120 maro-recv -n "$1" -f cbor > /dev/null
	WORKER=$BG_PID
}

live() { maro-peers -f json | grep -c "\"$1" || :; }

@test "blocking send: a shell pipeline worker answers, the reply comes back" {
	worker worker.1
	run timeout 20 maro-send -p worker.1 -t double --json 21 -f payload -W 15s
	assert_success
	assert_output 42
}

@test "the reply keeps the session, swaps source and destination, completes the stage" {
	worker worker.1
	run timeout 20 sh -c 'maro-msg -t double --json 5 -n boss > req.cbor &&
		maro-send -p worker.1 -W 15s < req.cbor > rep.cbor &&
		maro-msg -f json < req.cbor && maro-msg -f json < rep.cbor'
	assert_success
	req=${lines[0]} rep=${lines[1]}
	[ "$(jq -r .session_id <<< "$rep")" = "$(jq -r .session_id <<< "$req")" ]
	[ "$(jq -r .message_id <<< "$rep")" != "$(jq -r .message_id <<< "$req")" ]
	[ "$(jq -r .source <<< "$rep")" = worker.1 ]
	[ "$(jq -r .destination <<< "$rep")" = boss ]
	[ "$(jq -r .session_stage <<< "$rep")" = complete ]
	[ "$(jq -r .payload <<< "$rep")" = 10 ]
	jq -e '.reply_to | startswith("~boss.")' <<< "$rep"
}

@test "a notification is delivered, no reply awaited" {
	bg 30 maro-recv -n sink -C 1 -f payload > out
	recv=$BG_PID
	run timeout 20 maro-send -p sink -t note -d hi --notification -W 10s
	assert_success
	assert_output ""
	wait_exit "$recv" 10
	[ "$(cat out)" = hi ]
}

@test "isend, then receive_by_id collects exactly those replies" {
	worker worker.1
	run timeout 20 maro-send -n master -p worker.1 -t double --json 4 --notification -W 10s
	assert_success
	run timeout 20 sh -c 'maro-send -n master -p worker.1 -t double -d 1 -d 2 --async -W 10s > sent'
	assert_success
	[ "$(maro-msg -f json < sent | jq -r .reply_to | sort -u)" = master ]
	run timeout 20 maro-recv -n master --sessions-from sent -W 10s -f json
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .session_id | sort)" = \
	  "$(maro-msg -f json < sent | jq -r .session_id | sort)" ]
}

@test "receive_by_id leaves unrelated messages for a later maro-recv" {
	worker worker.1
	run timeout 20 maro-send -p master -t unrelated -d keep-me --notification -W 1s
	assert_failure 124	# nobody holds master yet: it waits, then gives up
	bg 60 maro-send -n other -p master -t unrelated -d keep-me --notification -W 50s
	pending=$BG_PID
	run timeout 20 sh -c 'maro-send -n master -p worker.1 -t double --json 3 --async -W 10s > sent'
	assert_success
	run timeout 20 maro-recv -n master --sessions-from sent -W 10s -f payload
	assert_success
	assert_output 6
	run timeout 20 maro-recv -n master -C 1 -W 10s -f payload
	assert_success
	assert_output keep-me
}

@test "missing replies: exit 1 with the missing session ids" {
	worker worker.1
	mute worker.2
	# both live first: the short -W is for the reply that never comes
	wait_until 10 live_is worker. 2
	run timeout 30 sh -c '{ maro-msg -t double -p worker.1 --json 1; maro-msg -t double -p worker.2 --json 2; } |
		tee req.cbor | maro-scatter -W 3s -f payload'
	assert_failure 1
	assert_line 2
	missing=$(maro-msg -f json < req.cbor | jq -r 'select(.destination == "worker.2") | .session_id')
	assert_output --partial "no reply in session $missing"
}

@test "timeouts: 124 when no reply came" {
	mute worker.9
	wait_until 10 live_is worker.9 1
	run timeout 20 maro-send -p worker.9 -t double --json 1 -W 1s
	assert_failure 124
	assert_output --partial "no reply in session"
}

@test "a reply whose requester has gone is reported, not retried forever" {
	run timeout 20 sh -c 'maro-msg -t double --json 1 -n boss |
		maro-msg -f json | jq -c ".reply_to = \"~boss.deadbeef\" | .destination = \"w.1\"" |
		maro-msg -i json | maro-msg reply -n w.1 | maro-send -W 10s'
	assert_failure 1
	assert_output --partial "not delivered to '~boss.deadbeef'"
	assert_output --partial "gone"
}

@test "a reply whose requester's entry was lost with Redis's data waits for it to register again" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "needs the redis backend"
	port=$(cat "$BATS_FILE_TMPDIR/redis/redis.port")
	# worker.1's handler answers only once the file 'go' exists
	bg 60 sh -c 'maro-recv -n worker.1 -f json |
		while read -r task; do
			echo "$task" > got
			while [ ! -e go ]; do sleep 0.02; done
			echo "$task" | jq -c --unbuffered ".payload |= . * 2"
		done | maro-msg reply -n worker.1 -i json | maro-send -W 30s 2> reply.err'
	wait_until 10 live_is worker. 1
	bg 60 sh -c 'maro-send -p worker.1 -t double --json 21 -f payload -W 30s > out 2> err'
	send=$BG_PID
	wait_until 10 [ -s got ]
	# every entry gone (as after a restart), and the requester cannot
	# register again before the reply looks for it
	kill -STOP "$(child_pid "$send" maro-send)"
	[ "$(redis-cli -p "$port" flushall)" = OK ]
	touch go
	sleep 0.5	# not readiness: time for the reply to look and not find
	kill -CONT "$(child_pid "$send" maro-send)"
	wait_exit "$send" 40
	[ "$status" -eq 0 ] || { cat err reply.err; false; }
	run cat out
	assert_output 42
}

@test "scatter: 1000 tasks over 4 workers, one killed half way: each answered once" {
	for i in 1 2 3 4; do worker "worker.$i"; eval "w$i=\$WORKER"; done
	wait_until 10 live_is worker. 4
	seq 1000 > tasks
	bg 120 sh -c 'maro-scatter -P worker -t double --json-lines -W 100s -f json < tasks > out'
	scatter=$BG_PID
	wait_until 60 has_lines out 300
	kill -9 "$(child_pid "$w2" maro-recv)"
	wait_exit "$scatter" 100
	[ "$status" -eq 0 ]
	[ "$(lines out)" -eq 1000 ]
	# every task answered exactly once, with the right answer
	jq -r .payload out | sort -n | cmp - <(seq 2 2 2000)
	jq -r .session_id out | sort | uniq -d | wc -l | grep -qx 0
	# the survivors did the rest
	[ "$(jq -r .source out | sort -u | grep -c worker)" -ge 3 ]
}

@test "scatter: a worker that joins mid-run receives tasks" {
	worker worker.1
	mkfifo feed
	bg 120 sh -c 'maro-scatter -v -P worker -t double --json-lines -W 100s -f json < feed > out 2> err'
	scatter=$BG_PID
	exec 5> feed
	seq 1 50 >&5
	wait_until 30 has_lines out 50
	worker worker.2
	wait_until 10 live_is worker. 2
	# the scatter looks at the members while it waits for input (every
	# 250 ms, or 10 times as long as a look took): the new work comes once
	# it has seen worker.2, or a busy machine can answer all 350 before
	wait_until 30 grep -q "peer 'worker.2' joined" err || { cat err; false; }
	seq 51 400 >&5
	exec 5>&-
	wait_exit "$scatter" 100
	[ "$status" -eq 0 ]
	[ "$(lines out)" -eq 400 ]
	[ "$(jq -r 'select(.source == "worker.2") | .payload' out | wc -l)" -gt 0 ] || { cat err; jq -r .source out | sort | uniq -c; false; }
	# -v says each join once, when it is new
	[ "$(grep -c "peer 'worker.1' joined" err)" -eq 1 ]
	[ "$(grep -c "peer 'worker.2' joined" err)" -eq 1 ]
}

@test "scatter: a task answered by a peer it had given up on is not sent again" {
	# worker.1's handler answers only once the file 'go' exists
	bg 60 sh -c 'maro-recv -n worker.1 -f json |
		while read -r task; do
			echo "$task" > got
			while [ ! -e go ]; do sleep 0.02; done
			echo "$task" | jq -c --unbuffered ".payload |= . * 2"
		done | maro-msg reply -n worker.1 -i json | maro-send'
	w1=$BG_PID
	wait_until 10 live_is worker. 1
	bg 60 sh -c 'echo 21 | maro-scatter -P worker -t double --json-lines -W 50s -f payload > out 2> err'
	scatter=$BG_PID
	wait_until 10 [ -s got ]
	# stopped, worker.1's entry expires: the task waits for another peer
	kill -STOP "$(child_pid "$w1" maro-recv)"
	wait_until 20 grep -q "peer 'worker.1' left with 1 unanswered task" err
	# the handler answers anyway; then another peer joins
	touch go
	wait_until 10 has_lines out 1
	worker worker.2
	wait_exit "$scatter" 50
	[ "$status" -eq 0 ] || { cat err; false; }
	run cat out
	assert_output 42
	kill -CONT "$(child_pid "$w1" maro-recv)"
}

@test "scatter reads its input only as fast as the workers take it" {
	# one worker answering about 20 tasks a second
	bg 120 maro-dist -n worker.1 --raw --co '*:n:1' 'while read -r l; do sleep 0.05; echo "$l"; done'
	wait_until 10 live_is worker. 1
	seq -w 200000 > tasks	# 1.4 MB
	bg 60 maro-scatter -P worker -t n -W 50s -f payload < tasks > out 2> err
	scatter=$BG_PID
	pid=$(child_pid "$scatter" maro-scatter)
	wait_until 30 has_lines out 20
	# what it read of the file: the 1024 tasks it queues ahead, in a 64 KiB
	# read or two, not a read per answer (that took the whole file by now)
	pos=$(awk '/^pos:/ { print $2 }' "/proc/$pid/fdinfo/0")
	kill "$pid"
	wait_exit "$scatter" 10
	[ "$pos" -gt 0 ] && [ "$pos" -le 262144 ] || { echo "read $pos bytes of $(wc -c < tasks)"; false; }
}

@test "scatter --ordered writes replies in input order" {
	worker worker.1
	worker worker.2
	wait_until 10 live_is worker. 2
	run timeout 60 sh -c 'seq 200 | maro-scatter -P worker -t double --json-lines --window 3 --ordered -W 50s -f payload'
	assert_success
	[ "$output" = "$(seq 2 2 400)" ]
}

@test "scatter --progress: a line every so often for a log, with the rate and the time left; none without it" {
	bg 60 maro-dist -n worker.1 --raw --co '*:job:1' 'while read x; do sleep 0.1; echo "r$x"; done'
	wait_until 10 live_is worker. 1
	run -0 --separate-stderr timeout 30 sh -c 'seq 20 | maro-scatter -P worker -t job --progress=500ms -W 20s -f payload'
	[ "${#lines[@]}" -eq 20 ]
	local n
	n=$(grep -cE '^maro-scatter: [0-9]+/20 done, [0-9]+/s, (<1|[0-9]+)s left$' <<< "$stderr")
	[ "$n" -ge 2 ]
	# the last line is the total, without a time left
	[[ "$(tail -n 1 <<< "$stderr")" =~ ^maro-scatter:\ 20/20\ done,\ [0-9]+/s$ ]]
	run -0 --separate-stderr timeout 30 sh -c 'seq 3 | maro-scatter -P worker -t job -W 20s -f payload'
	assert_equal "$stderr" ""
	run -2 maro-scatter -P worker -t job --progress=10ms
	assert_output --partial -- "--progress must be 100ms or more"
}

@test "scatter --retries 2: a task that kills its worker is given up after two, named by line and payload, the rest answered" {
	local i pids=()
	for i in 1 2 3; do
		bg 60 maro-dist -n "worker.$i" --raw --co '*:job:1' \
			'while read x; do [ "$x" = poison ] && exit 1; echo "r$x"; done'
		pids+=("$BG_PID")
	done
	wait_until 10 live_is worker. 3
	run -3 --separate-stderr timeout 30 sh -c \
		'printf "%s\n" 1 2 3 4 poison 6 7 8 9 10 | maro-scatter -P worker -t job --retries 2 --failed failed.cbor -W 20s -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -V)" "$(printf 'r%s\n' 1 2 3 4 6 7 8 9 10)"
	[[ "$stderr" == *'line 5 of the input given up after 2 failed attempts (its peer left): payload "poison"'* ]]
	[[ "$stderr" == *"1 of 10 tasks given up after 2 failed attempts"* ]]
	run -0 maro-msg -f payload < failed.cbor
	assert_output poison
	# two workers died of it; the third is alive
	run -0 live_is worker. 1
	# the failed requests go to a scatter again, as new messages
	bg 60 maro-dist -n worker.9 --raw --co '*:job:1' 'while read x; do echo "fixed-$x"; done'
	wait_until 10 live_is worker. 2
	run -0 timeout 30 sh -c 'maro-scatter -P worker.9 -W 20s -f payload < failed.cbor'
	assert_output fixed-poison
}

@test "scatter --retries 2 over workers maro-pool restarts under the same name: the poison task kills two, not more" {
	# the worker program writes a line to deaths, then kills itself, and
	# its maro-dist with it (status 1): the pool starts a new one at once
	export DEATHS=$PWD/deaths
	bg 90 maro-pool -j 2 -- maro-dist --raw --co '*:job:1' \
		'while read x; do if [ "$x" = poison ]; then echo "$MARO_NAME" >> "$DEATHS"; kill -9 $$; fi; echo "r$x"; done'
	wait_until 10 live_is worker. 2
	run -3 --separate-stderr timeout 60 sh -c \
		'printf "%s\n" 1 2 3 4 poison 6 7 8 9 10 | maro-scatter -P worker -t job --retries 2 -W 40s -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -V)" "$(printf 'r%s\n' 1 2 3 4 6 7 8 9 10)"
	[[ "$stderr" == *'line 5 of the input given up after 2 failed attempts'* ]]
	# a new holder of a dead worker's name was never sent the task uncounted
	[ "$(lines deaths)" -ge 1 ] && [ "$(lines deaths)" -le 2 ] || { cat deaths; false; }
}

@test "scatter --task-timeout: a task no worker answers fails each attempt in time, and --retries gives it up" {
	# both workers take the task 'hang' and never answer it
	worker worker.1 'select(.payload != "hang") | .payload |= "r\(.)"'
	worker worker.2 'select(.payload != "hang") | .payload |= "r\(.)"'
	wait_until 10 live_is worker. 2
	run -3 --separate-stderr timeout 30 sh -c \
		'printf "%s\n" a b hang c d | maro-scatter -P worker -t job --task-timeout 1s --retries 2 -W 20s -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" $'ra\nrb\nrc\nrd'
	[[ "$stderr" == *'line 3 of the input given up after 2 failed attempts (timed out): payload "hang"'* ]]
	# without --retries it is tried until -W
	run -1 --separate-stderr timeout 30 sh -c \
		'printf "%s\n" a hang | maro-scatter -P worker -t job --task-timeout 500ms -W 3s -f payload'
	assert_output ra
	[[ "$stderr" == *"(line 2 of the input): payload \"hang\""* ]]
	run -2 maro-scatter -t job --retries 2
	assert_output --partial -- "--retries, --task-timeout and --failed need -P PREFIX"
}

@test "scatter --ordered at -W writes every finished reply: in order to the hole, then the rest, naming the hole" {
	# task 3 is never answered; everything after it is
	worker worker.1 'select(.payload != 3) | .payload |= . * 2'
	worker worker.2 'select(.payload != 3) | .payload |= . * 2'
	wait_until 10 live_is worker. 2
	run -1 --separate-stderr timeout 30 sh -c 'seq 10 | maro-scatter -P worker -t double --json-lines --window 3 --ordered -W 3s -f payload'
	assert_output "$(printf '%s\n' 2 4 8 10 12 14 16 18 20)"
	[[ "$stderr" == *"(line 3 of the input): payload 3"* ]]
	[[ "$stderr" == *"timed out: 1 of 10 tasks unanswered"* ]]
}

@test "iscatter: delivered messages out, replies collected by id" {
	worker worker.1
	worker worker.2
	wait_until 10 live_is worker. 2
	run timeout 30 sh -c 'seq 10 | maro-scatter -n master -P worker -t double --json-lines --async -W 20s > sent'
	assert_success
	[ "$(maro-msg -f json < sent | wc -l)" -eq 10 ]
	run timeout 30 maro-recv -n master --sessions-from sent -W 20s -f payload
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | sort -n)" = "$(seq 2 2 20)" ]
}

@test "iscatter: tasks delivered to a peer that leaves later are not sent again" {
	bg 60 maro-recv -n worker.1 -f payload > w1
	w1=$BG_PID
	wait_until 10 live_is worker. 1
	mkfifo feed
	bg 60 sh -c 'maro-scatter -n master -P worker -t n --async -W 50s < feed > sent 2> err'
	scatter=$BG_PID
	exec 5> feed
	seq 1 5 >&5
	wait_until 10 has_lines w1 5
	kill -TERM "$(child_pid "$w1" maro-recv)"
	bg 60 maro-recv -n worker.2 -f payload > w2
	wait_until 10 is_live worker.2
	wait_until 10 not_live worker.1
	seq 6 10 >&5
	exec 5>&-
	wait_exit "$scatter" 50
	[ "$status" -eq 0 ] || { cat err; false; }
	[ "$(maro-msg -f json < sent | wc -l)" -eq 10 ]
	wait_until 10 has_lines w2 5
	run cat w2
	assert_output "$(seq 6 10)"
}

@test "bcast to 16 peers collects 16 replies with 16 distinct sources" {
	for i in $(seq 16); do
		bg 60 sh -c 'maro-recv -n "$1" -C 1 | maro-msg reply -n "$1" -d "pong from $1" | maro-send' _ "peer.$i"
	done
	run timeout 60 maro-bcast -e peer=16 -P peer -t ping -W 40s -f json
	assert_success
	[ "${#lines[@]}" -eq 16 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .source | sort -u | wc -l)" -eq 16 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .session_id | sort -u | wc -l)" -eq 1 ]
	printf '%s\n' "${lines[@]}" | jq -e -s 'all(.payload == "pong from " + .source)'
}

@test "bcast: the README's worker, which replies without a name of its own, is heard: each copy names its peer" {
	local i
	for i in 1 2 3; do
		bg 60 sh -c 'maro-recv -n "$1" -f json | jq -c --unbuffered ".payload |= . * 2" |
			maro-msg reply -i json | maro-send' _ "worker.sh$i"
	done
	wait_until 10 live_is worker.sh 3
	run -0 timeout 30 maro-bcast -P worker.sh -t double --json 21 -W 20s -f json
	[ "$(jq -r '"\(.source) \(.payload)"' <<< "$output" | sort | tr '\n' ' ')" = "worker.sh1 42 worker.sh2 42 worker.sh3 42 " ]
	# what --async writes: one copy per peer, its destination that peer
	run -0 timeout 30 sh -c 'maro-bcast -n master -P worker.sh -t double --json 1 --async -W 20s | maro-msg -f json'
	[ "$(jq -r .destination <<< "$output" | sort | tr '\n' ' ')" = "worker.sh1 worker.sh2 worker.sh3 " ]
	[ "$(jq -r .session_id <<< "$output" | sort -u | wc -l)" -eq 1 ]
}

@test "bcast: a peer that never replies is named, exit 1" {
	worker worker.1
	mute worker.2
	wait_until 10 live_is worker. 2
	run timeout 30 maro-bcast -P worker -t double --json 1 -W 3s -f payload
	assert_failure 1
	assert_line 2
	assert_output --partial "no reply from 'worker.2'"
}

@test "bcast: a peer that leaves without replying is named and not waited for, after its grace" {
	worker worker.1
	bg 60 maro-recv -n worker.2 -C 1 -f payload > w2
	wait_until 10 live_is worker. 2
	local t0=$SECONDS
	run timeout 50 maro-bcast -P worker -t double --json 1 -W 40s -f payload
	assert_failure 1
	assert_output --partial "'worker.2' left before replying"
	assert_line 2
	# three seconds of grace (maro-bcast(1)), well before -W
	[ $((SECONDS - t0)) -ge 3 ]
	[ $((SECONDS - t0)) -lt 30 ]
}

@test "ibroadcast: one line per peer, receive_by_id waits for all" {
	worker worker.1
	worker worker.2
	wait_until 10 live_is worker. 2
	run timeout 30 sh -c 'maro-bcast -n master -P worker -t double --json 7 --async -W 20s > sent'
	assert_success
	[ "$(maro-msg -f json < sent | wc -l)" -eq 2 ]
	run timeout 30 maro-recv -n master --sessions-from sent -W 20s -f json
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .source | sort | tr '\n' ' ')" = "worker.1 worker.2 " ]
}

@test "bcast with no matching peer: 69" {
	run timeout 10 maro-bcast -P nobody -t x -W 1s
	assert_failure 69
	assert_output --partial "no live peer matches 'nobody'"
}

@test "MARO_MAX_PENDING: a requester reads no more input while that many replies are owed" {
	mute mute.1
	wait_until 10 is_live mute.1
	# three task requests go out and wait for replies; the other seven stay unread
	MARO_MAX_PENDING=3 run timeout 30 sh -c 'for i in $(seq 10); do maro-msg -t q -d "$i" -p mute.1; done |
		maro-send -W 2s'
	# delivered, and not one reply: a timeout
	[ "$status" -eq 124 ]
	[ "$(grep -c 'no reply in session' <<< "$output")" -eq 3 ]
	assert_line 'maro-send: timed out: 0 not delivered, 3 replies missing'
	# one is one reply
	run -124 timeout 30 sh -c 'maro-msg -t q -d 1 -p mute.1 | maro-send -W 1s'
	assert_line 'maro-send: timed out: 0 not delivered, 1 reply missing'
	run -2 env MARO_MAX_PENDING=0 maro-send -t q -d x -p mute.1
	assert_output --partial "invalid MARO_MAX_PENDING '0'"
	run -2 env MARO_WINDOW=big maro-recv -n w
	assert_output --partial "invalid MARO_WINDOW 'big'"
}
