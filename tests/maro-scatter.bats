#!/usr/bin/env bats
# maro-scatter: command line, usage errors, help and version.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "maro-scatter --help prints the usage to stdout and exits 0" {
	run maro-scatter --help
	assert_success
	assert_line --index 0 --partial "usage: maro-scatter"
	run maro-scatter -h
	assert_success
}

@test "maro-scatter -V names the tool and the library versions" {
	run maro-scatter -V
	assert_success
	assert_output --regexp "^maro-scatter [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
}

@test "maro-scatter: an unknown option is a usage error (2) on stderr" {
	run --separate-stderr maro-scatter --no-such-option
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"try 'maro-scatter --help'"* ]]
}

@test "maro-scatter: a bad duration is a usage error naming the flag" {
	run maro-scatter -W 5x -n a -t x
	assert_failure 2
	assert_output --partial "invalid duration '5x' for -W"
}

@test "maro-scatter: an unreachable Redis registry is exit 69, named" {
	run timeout 10 sh -c 'maro-msg -t x --notification | maro-scatter -n me --registry redis://127.0.0.1:1/0 -W 2s'
	assert_failure 69
	assert_output --partial "127.0.0.1:1"
}

@test "maro-scatter: --json-lines without -t, --async with --ordered, --window 0 are usage errors" {
	run maro-scatter --json-lines
	assert_failure 2
	run maro-scatter -n m --async --ordered
	assert_failure 2
	run maro-scatter --window 0
	assert_failure 2
}

@test "maro-scatter: a message without destination and no -P is malformed input" {
	run timeout 10 sh -c 'maro-msg -t a -d x | maro-scatter -W 5s'
	assert_failure 65
	assert_output --partial "no destination"
}

@test "maro-scatter: invalid JSON line is 65 with its line number, the tasks before it done" {
	bg 30 maro-dist -n w.1 --raw --co '*:a:1' 'cat'
	run timeout 20 sh -c 'printf "1\n{\n" | maro-scatter -P w -t a --json-lines -W 15s -f payload'
	assert_failure 65
	assert_output --partial "malformed input at line 2: invalid JSON"
	assert_line --index 0 1
}

@test "maro-scatter: empty input is done at once" {
	run timeout 10 maro-scatter -P w -t a < /dev/null
	assert_success
	assert_output ""
}

@test "maro-scatter --progress: a task given up is not counted done; stuck on the last task, no time left is told" {
	bg 60 maro-dist -n worker.1 --raw --fail-prefix 'ERR ' --co '*:job:1' \
		'while read -r x; do case $x in bad) echo "ERR bad";; hang) sleep 60;; *) echo "r$x";; esac; done'
	wait_until 10 live_is worker. 1
	run -3 --separate-stderr timeout 30 sh -c 'echo bad | maro-scatter -P worker -t job --progress=100ms -W 20s'
	grep -qE '^maro-scatter: 0/1 done, 1 given up, [0-9]+/s$' <<< "$stderr"
	run ! grep -q '1/1 done' <<< "$stderr"
	# three answered at once, then the last hangs: after 2 s, how long nothing finished
	# (-W 6s: 2 s of nothing however long the first three took on a busy machine)
	run -1 --separate-stderr timeout 30 sh -c 'printf "%s\n" 1 2 3 hang | maro-scatter -P worker -t job --progress=200ms -W 6s'
	grep -qE '^maro-scatter: 3/4 done, [0-9]+/s, none finished for [2-5]s$' <<< "$stderr"
	run ! grep -qE ' 0s left|3/4 done, [0-9]+/s, .*left$' <<< "$(grep 'none finished' -A 100 <<< "$stderr")"
}

@test "maro-scatter on a terminal: the live line is redrawn at most ten times a second" {
	bg 60 maro-dist -n worker.1 --raw --co '*:job:1' cat
	wait_until 10 live_is worker. 1
	local t0 ms n
	seq 3000 > tasks
	t0=$(date +%s%N)
	run -0 timeout 60 script -qec 'maro-scatter -P worker -t job --window 8 -W 40s -f payload < tasks > out' /dev/null
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$(wc -l < out)" -eq 3000 ]
	# each redraw begins with a carriage return; the last one ends the line
	n=$(tr -cd '\r' <<< "$output" | wc -c)
	[[ "$output" == *"3000/3000 done"* ]]
	echo "$n redraws in $ms ms" >&3
	[ "$n" -le $((ms / 100 + 3)) ]
}

@test "maro-scatter interrupted: one summary line, not one per task read ahead; with a job log, how to resume" {
	bg 60 maro-dist -n worker.1 --raw --co '*:job:1' 'while read -r x; do sleep 0.1; echo "r$x"; done'
	wait_until 10 live_is worker. 1
	seq 200 > tasks
	bg 30 maro-scatter -P worker -t job --joblog log -W 25s -f payload < tasks > out 2> err
	local scatter=$BG_PID
	wait_until 10 has_lines out 3
	kill -INT "$(child_pid "$scatter" maro-scatter)"
	wait_exit "$scatter" 10
	[ "$status" -eq 130 ]
	run cat err
	assert_line --index 0 --regexp '^maro-scatter: interrupted: [0-9]+ of 200 tasks done, 0 given up, 1 open, [0-9]+ not sent$'
	assert_line --index 1 "maro-scatter: job log 'log' has the tasks that ended: the same command, on the same input, with --resume does the rest"
	[ "${#lines[@]}" -eq 2 ]
	# the counts add up: done + open + not sent = 200, done as the output has it
	local done open unsent
	read -r done unsent <<< "$(sed -n 's/^maro-scatter: interrupted: \([0-9]*\) of 200 tasks done, 0 given up, 1 open, \([0-9]*\) not sent$/\1 \2/p' err)"
	[ "$done" -eq "$(wc -l < out)" ]
	[ $((done + 1 + unsent)) -eq 200 ]
	# -v names the one open too; without a job log, no hint
	bg 30 maro-scatter -P worker -t job -v -W 25s -f payload < tasks > out2 2> err2
	scatter=$BG_PID
	wait_until 10 has_lines out2 3
	kill -INT "$(child_pid "$scatter" maro-scatter)"
	wait_exit "$scatter" 10
	grep -q '^maro-scatter: no reply in session .* (line [0-9]* of the input): payload' err2
	run ! grep -q 'job log' err2
}

@test "maro-scatter: a task failed at one worker is sent to another with room, not back to the one that failed it" {
	local i
	for i in 1 2; do
		bg 60 maro-dist -n "worker.$i" --raw --on '*:job:1' \
			'read -r x; echo "$MARO_NAME $x" >> runs; if [ "$MARO_NAME" = worker.1 ]; then echo "bad host" >&2; exit 1; fi; echo "r$x"'
	done
	wait_until 10 live_is worker. 2
	run -0 --separate-stderr timeout 40 sh -c 'seq 8 | maro-scatter -P worker -t job --window 8 --retries 2 -W 30s -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -V)" "$(printf 'r%s\n' $(seq 8))"
	# worker.1 failed some, once each; worker.2 answered every one
	[ "$(grep -c '^worker.1 ' runs)" -ge 1 ]
	assert_equal "$(grep '^worker.1 ' runs | sort | uniq -d)" ""
	assert_equal "$(grep '^worker.2 ' runs | cut -d ' ' -f 2 | sort -n | tr '\n' ' ')" "1 2 3 4 5 6 7 8 "
}

@test "maro-scatter: lines on stdin without -t are malformed input (65) with a hint: -t TAG" {
	run --separate-stderr timeout 10 sh -c 'seq 3 | maro-scatter -P w -W 5s'
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-scatter: malformed input at byte offset 0: item is not a map (a message is a CBOR map); it looks like text, not CBOR: give -t TAG to send each line as a task's payload (with --json-lines, as JSON)" ]
}

@test "maro-scatter: tasks for a prefix no live peer matches, or a name nobody holds, are said once after a second" {
	local where="on $MARO_REGISTRY"
	[[ $MARO_REGISTRY == dir:* ]] || where="of the redis registry"
	run --separate-stderr timeout 10 sh -c 'seq 3 | maro-scatter -P nobody -t t -W 2.5s'
	[ "$status" -eq 124 ]
	[ "$(grep -c 'no live peer matches' <<< "$stderr")" -eq 1 ]
	[[ $(head -n 1 <<< "$stderr") =~ ^"maro-scatter: no live peer matches 'nobody' in group '$MARO_GROUP' $where; waiting (-W: "[12]"s left)"$ ]]
	maro-msg -t x --json 1 -p nobody > task.cbor
	run --separate-stderr timeout 10 maro-scatter -W 2.5s < task.cbor
	[ "$status" -eq 124 ]
	[[ $(head -n 1 <<< "$stderr") =~ ^"maro-scatter: no member named 'nobody' in group '$MARO_GROUP' $where; waiting (-W: "[12]"s left)"$ ]]
}

@test "maro-scatter --window N: at most N unanswered tasks at a peer at a time (default 1)" {
	# peers that take tasks and never answer
	bg 30 maro-recv -n a.1 -f payload > a.took
	bg 30 maro-recv -n b.1 -f payload > b.took
	wait_until 10 live_is a. 1
	wait_until 10 live_is b. 1
	bg 30 sh -c 'seq 10 | exec maro-scatter -P a. -t t --window 3 -W 1500ms'
	local a=$BG_PID
	run -124 sh -c 'seq 10 | maro-scatter -P b. -t t -W 1500ms'
	wait_exit "$a" 10
	[ "$status" -eq 124 ]
	[ "$(cat a.took)" = "$(seq 3)" ]
	[ "$(cat b.took)" = 1 ]
}

# The job a scatter runs is in the registry from its start, under the
# scatter's name and an id (maro-peers --status), and leaves with it.
@test "maro-scatter: its job is listed by maro-peers --status from its start, and leaves with it" {
	bg 30 sh -c '{ echo a; sleep 25; } | exec maro-scatter -n sweep -P w -t x -W 20s -q'
	wait_until 10 sh -c 'maro-peers --status -f json | jq -e ".jobs | length == 1 and (.[0].name | test(\"^sweep\\\\.[0-9a-f]{8}$\"))" > /dev/null'
	kill -TERM "$(child_pid "$BG_PID" maro-scatter)"
	wait_until 10 sh -c 'maro-peers --status -f json | jq -e ".jobs == []" > /dev/null'
}

# -W ends a job before its input ended: what the input still held never
# ran, so it is not a success (it was exit 0, "0 of 0 tasks unanswered").
@test "maro-scatter -W before the input ended: 124 with nothing answered, 1 with some, said" {
	run --separate-stderr timeout 20 sh -c 'sleep 4 | maro-scatter -P w -t x -W 1s'
	[ "$status" -eq 124 ]
	[[ "$stderr" == *"timed out: 0 of 0 tasks unanswered, before the input ended"* ]]
	bg 60 maro-dist -n w.1 --raw --co '*:x:1' cat
	wait_until 10 live_is w. 1
	run --separate-stderr timeout 20 sh -c '{ echo a; sleep 6; } | maro-scatter -P w -t x -W 3s -f payload'
	[ "$status" -eq 1 ]
	assert_output a
	[[ "$stderr" == *"timed out: 0 of 1 tasks unanswered, before the input ended"* ]]
	# the input ended and every task was answered: 0, as ever
	run -0 --separate-stderr timeout 20 sh -c 'echo b | maro-scatter -P w -t x -W 3s -f payload'
	assert_output b
}

# --async: a task is done when its peer acknowledged it.  One that never
# went (no worker) was not counted missing: exit 0, "0 of 1 not delivered".
@test "maro-scatter --async: a task never delivered is missing at -W (124), and one delivered is done (0)" {
	run --separate-stderr timeout 20 sh -c 'echo a | maro-scatter --async -n m -P w -t x -W 1s'
	[ "$status" -eq 124 ]
	[[ "$stderr" == *"timed out: 1 of 1 tasks not delivered"* ]]
	bg 60 maro-recv -n w.1 -C 2 -f payload -W 30s > got
	wait_until 10 live_is w. 1
	run -0 --separate-stderr timeout 20 sh -c 'printf "a\nb\n" | maro-scatter --async -n m -P w -t x -W 10s'
	wait_exit "$BG_PID" 10
	run cat got
	assert_output "$(printf 'a\nb')"
}

# Found moving the tools onto lib/loop: an --async scatter (no reply
# inbox, so no heartbeat of its own) still woke for a heartbeat that was
# never renewed, and from a third of the TTL on polled without waiting.
# Found by a review of the loop: under -q, progress() returned before it
# set the next line's time, and the loop woke for it at once, again and again.
@test "maro-scatter -q --progress waiting for a worker sleeps: under 1 s of CPU in 4 s" {
	local cpu
	TIMEFORMAT='%3U %3S'
	echo 0 > rc
	{ time (seq 3 | maro-scatter -n m -P w -t x -W 4s -q --progress=100ms 2> err || echo "$?" > rc); } 2> cpu
	run cat rc
	assert_output 124
	cpu=$(awk '{ print $1 + $2 }' cpu)
	echo "$cpu s of CPU" >&3
	awk -v c="$cpu" 'BEGIN { exit !(c < 1.0) }'
	# quiet: not a progress line
	run grep -c "done" err
	assert_output 0
}

@test "maro-scatter --async waiting for a worker sleeps: under 1 s of CPU in 5 s" {
	local cpu
	# the input stays open; -W 5s ends the wait (124)
	TIMEFORMAT='%3U %3S'
	echo 0 > rc
	{ time (sleep 6 | maro-scatter --async -n m -P w -t x -W 5s -q 2> err || echo "$?" > rc); } 2> cpu
	run cat rc
	assert_output 124
	cpu=$(awk '{ print $1 + $2 }' cpu)
	echo "$cpu s of CPU" >&3
	awk -v c="$cpu" 'BEGIN { exit !(c < 1.0) }'
}
