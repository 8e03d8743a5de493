#!/usr/bin/env bats
# backends: dir redis
# maro-wait-event: the register table's conditions, end to end.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	export MARO_TTL=1s
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

# note SOURCE TAG [N]: N notifications from SOURCE to master, delivered in the background
note() {
	local i
	for i in $(seq "${3:-1}"); do
		bg 60 maro-send -n "$1" -p master -t "$2" -d "$1#$i" --notification -W 50s
	done
}

# idle NAME: a live peer that does nothing (for percentages)
idle() { bg 120 maro-recv -n "$1" > /dev/null; }
live() { maro-peers -f json | grep -c "\"$1" || :; }

@test "an invalid event is a usage error pointing at the column" {
	run maro-wait-event -n master 'worker:update'
	assert_failure 2
	assert_output --partial "invalid event at column 14"
	assert_output --partial "^"
	run maro-wait-event -n master 'a:t:1 AND'
	assert_failure 2
	run maro-wait-event -n master
	assert_failure 2
}

@test "the intent's own phrase: without -n or MARO_NAME it joins as master" {
	local waiter
	unset MARO_NAME
	idle worker.1
	wait_until 10 live_is worker. 1
	bg 60 maro-wait-event -W 30s -f payload 'worker:update:60%' > waited
	waiter=$BG_PID
	wait_until 10 is_live master
	# the name is held: a second waiter in the group needs its own
	run -69 timeout 10 maro-wait-event -W 2s 'x:y:1'
	assert_output --partial "name 'master' is held by pid"
	run -0 timeout 10 maro-send -n worker.1 -p master -t update -d 60 --notification -W 5s
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	run cat waited
	assert_output 60
}

@test "seed example: worker:update:10 takes ten, leaves the rest" {
	note worker.1 update 6
	note worker.2 update 6
	run timeout 30 maro-wait-event -n master -W 20s -f payload 'worker:update:10'
	assert_success
	[ "${#lines[@]}" -eq 10 ]
	# the two surplus messages wait for the next receiver of the name
	run timeout 30 maro-recv -n master -C 2 -W 20s -f payload
	assert_success
	[ "${#lines[@]}" -eq 2 ]
}

@test "seed example: the AND tuple consumes both parts" {
	note worker_01 update 2
	note worker_02 update 3
	run timeout 30 maro-wait-event -n master -W 20s -f payload \
		'("worker_01:update:2", "worker_02:update:3", "AND")'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | grep -c worker_01)" -eq 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c worker_02)" -eq 3 ]
}

@test "seed example: the mixed tuple takes the OR branch that holds" {
	note worker_03 update 1
	note worker_01 update 1
	run timeout 30 maro-wait-event -n master -W 20s -f payload \
		'(("worker_01:update:2", "worker_02:update:3", "AND"), "worker_03:update:1", "OR")'
	assert_success
	assert_output 'worker_03#1'
	# worker_01's lone update was not consumed
	run timeout 30 maro-recv -n master -C 1 -W 20s -f payload
	assert_output 'worker_01#1'
}

@test "60% of 5 live workers is 3 workers, not 3 messages; N counts messages" {
	local first second
	for i in 1 2 3 4 5; do idle "worker.$i"; done
	wait_until 10 live_is worker. 5
	note w-x update 1   # not a worker: does not count
	note worker.1 update 2
	# at -W, what was counted (and acknowledged) is written, not lost: one
	# of worker.1's two updates (they race); the other is not a second worker
	# (-W 4s: the notes, sent before master joined, find it however busy the machine)
	run -124 --separate-stderr timeout 10 maro-wait-event -n master -W 4s -f payload 'worker:update:60%'
	[[ "$output" =~ ^worker\.1#[12]$ ]] || fail "wrote '$output'"
	first=$output
	[[ "$stderr" == *"still missing: worker:update 1/3"* ]]
	note worker.2 update 2
	# the other of worker.1's (resent all along) and one of worker.2's (8 s:
	# the resend's pause doubles from 1 s to at most 5 s, so one resend
	# comes within any 8 s, however busy the machine)
	run -124 --separate-stderr timeout 15 maro-wait-event -n master -W 8s -f payload 'worker:update:60%'
	[ "${#lines[@]}" -eq 2 ]
	assert_line "worker.1#$((3 - ${first#worker.1#}))"
	assert_line --regexp '^worker\.2#[12]$'
	second=$(grep worker.2 <<< "$output")
	[[ "$stderr" == *"still missing: worker:update 2/3"* ]]
	# a new barrier: worker.2's other update and two more workers hold it
	note worker.3 update 2
	note worker.4 update 1
	run -0 --separate-stderr timeout 30 maro-wait-event -n master -W 20s -f payload 'worker:update:60%'
	[ "${#lines[@]}" -eq 3 ]
	# w-x's, resent all along, is said if it came before the event held: it can never count
	[[ -z $stderr || $stderr == "maro-wait-event: message from 'w-x' tagged 'update' matches no unit of the event; it stays unacknowledged" ]]
	assert_line "worker.2#$((3 - ${second#worker.2#}))"
	assert_line --regexp '^worker\.3#[12]$'
	assert_line 'worker.4#1'
	# a count is of messages, whoever sent them: worker.1's two
	note worker.1 again 2
	run -0 --separate-stderr timeout 30 maro-wait-event -n master -W 20s -f payload 'worker:again:2'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" $'worker.1#1\nworker.1#2'
	# the updates still resent (worker.3's other one) are said, never counted
	[[ -z $stderr ]] || run ! grep -v "^maro-wait-event: message from '[a-z.0-9-]*' tagged 'update' matches no unit of the event; it stays unacknowledged$" <<< "$stderr"
}

@test "a progress report never waits for the others: three updates in a row to a 60% barrier of five" {
	local i
	for i in 1 2 3 4 5; do idle "worker.$i"; done
	wait_until 10 live_is worker. 5
	bg 60 maro-wait-event -n master -W 50s -f payload 'worker:update:60%' > waited
	local waiter=$BG_PID
	wait_until 10 live_is master 1
	# each is acknowledged when it is counted, not when the event holds
	for i in 1 2 3; do
		run -0 timeout 10 maro-send -n "worker.$i" -p master -t update -d "$i" --notification -W 5s
	done
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	run sort waited
	assert_output $'1\n2\n3'
}

@test "acknowledged up to the number a unit needs, not one more: the third of w:t:2 waits for the event to hold" {
	bg 60 maro-wait-event -n master -W 50s -f payload 'w:t:2 AND x:go:1' > waited
	local waiter=$BG_PID
	wait_until 10 live_is master 1
	# the two the unit needs are acknowledged at once
	run -0 timeout 10 maro-send -n w.1 -p master -t t -d 1 --notification -W 5s
	run -0 timeout 10 maro-send -n w.2 -p master -t t -d 2 --notification -W 5s
	# a third is not: its sender times out, and keeps it
	run -124 --separate-stderr timeout 10 maro-send -n w.3 -p master -t t -d 3 --notification -W 1s
	[[ $stderr == *"not delivered to 'master'"* ]] || fail "$stderr"
	run -0 timeout 10 maro-send -n x.1 -p master -t go -d go --notification -W 5s
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	run sort waited
	assert_output $'1\n2\ngo'
}

@test "SIGTERM before the event holds: what was counted is written, then 143" {
	local s1 s2 waiter
	bg 60 maro-send -n worker.1 -p master -t update -d a --notification -W 50s
	s1=$BG_PID
	bg 60 maro-send -n worker.2 -p master -t update -d b --notification -W 50s
	s2=$BG_PID
	bg 60 maro-wait-event -n master -W 50s -f payload 'worker:update:5' > waited
	waiter=$BG_PID
	# both counted and acknowledged: their senders are done
	wait_exit "$s1" 20
	[ "$status" -eq 0 ]
	wait_exit "$s2" 20
	[ "$status" -eq 0 ]
	kill -TERM "$(child_pid "$waiter" maro-wait-event)"
	wait_exit "$waiter" 10
	[ "$status" -eq 143 ]
	run sort waited
	assert_output $'a\nb'
}

@test "a worker killed mid-wait lowers the 60% bar" {
	for i in 1 2 3 4 5; do idle "worker.$i"; eval "p$i=\$BG_PID"; done
	wait_until 10 live_is worker. 5
	note worker.1 update 1
	note worker.2 update 1
	bg 60 maro-wait-event -n master -W 50s -f payload 'worker:update:60%'
	waiter=$BG_PID
	kill -9 "$(child_pid "$p5" maro-recv)"
	kill -9 "$(child_pid "$p4" maro-recv)"
	# 60% of 3 is 2: the two workers' updates suffice
	wait_exit "$waiter" 30
	[ "$status" -eq 0 ]
}

@test "timeout: 124 with what is still missing" {
	note worker.1 update 1
	run timeout 10 maro-wait-event -n master -W 4s 'worker:update:3'
	assert_failure 124
	assert_output --partial "still missing: worker:update 1/3"
}

@test "-q prints nothing; && chains on success" {
	note worker.1 done 1
	run timeout 30 sh -c 'maro-wait-event -n master -q -W 20s "worker:done:1" && echo next-step'
	assert_success
	assert_output next-step
}

@test "maro-wait-event: a message that matches no unit is said once per source and tag, and stays unacknowledged" {
	bg 30 maro-wait-event -n m 'worker:update:1' -f payload > got 2> wait.err
	wait_until 10 is_live m
	run -124 timeout 10 maro-send -n worker.1 -p m -t done -d x --notification -W 1s
	run -124 timeout 10 maro-send -n worker.1 -p m -t done -d y --notification -W 1s
	wait_until 10 grep -q "matches no unit" wait.err
	run -0 timeout 10 maro-send -n worker.1 -p m -t update -d z --notification -W 5s
	wait_exit "$BG_PID" 10
	[ "$status" -eq 0 ]
	assert_equal "$(cat got)" z
	run cat wait.err
	assert_output "maro-wait-event: message from 'worker.1' tagged 'done' matches no unit of the event; it stays unacknowledged"
}
