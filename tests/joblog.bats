#!/usr/bin/env bats
# backends: dir redis
# maro-scatter --joblog and --resume: a batch job that fails well.  Each
# task that ends has its record; a master killed with SIGKILL is resumed
# from the log without running again what succeeded; a failure names the
# task's line and payload.

load helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	export RUNS=$BATS_TEST_TMPDIR/runs HOLD=$BATS_TEST_TMPDIR/hold
}
teardown() { default_teardown; }

# coworker NAME [DELAY]: a maro-dist worker whose program writes each task
# it is given to $RUNS, then answers "r<task>" after DELAY seconds; the
# task 'poison' kills it (and its worker), 'hang' hangs it.  While the file
# $HOLD is there, a numbered task past 20 waits for it to go: a run that
# cannot end before the test has done what it does mid-run.
coworker() {
	bg 60 maro-dist -n "$1" --raw --co '*:job:1' "while read x; do echo \"\$x\" >> \"\$RUNS\";
		[ \"\$x\" = poison ] && exit 1; [ \"\$x\" = hang ] && sleep 60
		case \$x in [2-9][0-9] | [1-9][0-9][0-9]) [ \"\$x\" -le 20 ] ||
			while [ -e \"\$HOLD\" ]; do sleep 0.05; done ;; esac
		sleep ${2:-0}; echo \"r\$x\"; done"
}

# lines FILE: its lines, 0 when it is not there
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }

# field LOG SEQ COLUMN: the value of COLUMN (a name of the header) in the record of SEQ
field() {
	awk -F '\t' -v seq="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == seq { print $c[col] }' "$1"
}

# records LOG: the lines of the log after its header
records() { tail -n +2 "$1"; }

@test "joblog: a poison task given up after --retries 2, named by its line and payload; the rest answered, one worker left alive" {
	local i
	local t0 t1
	for i in 1 2 3; do coworker "worker.$i"; done
	wait_until 10 live_is worker. 3
	t0=$(date +%s.%3N)
	# an empty line: line numbers are not task numbers
	run -3 --separate-stderr timeout 30 sh -c 'printf "%s\n" 1 2 "" 3 poison 5 6 7 |
		maro-scatter -P worker -t job --retries 2 --joblog log --failed failed.cbor -W 20s -f payload'
	t1=$(date +%s.%3N)
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" "$(printf 'r%s\n' 1 2 3 5 6 7)"
	[[ "$stderr" == *'line 5 of the input given up after 2 failed attempts (its peer left): payload "poison"'* ]]
	# the log: the header, one record per task; the poison failed at line 5, twice
	assert_equal "$(head -n 1 log)" "$(printf 'seq\thash\tworker\tattempts\tstart\tduration\toutcome\tpayload')"
	assert_equal "$(records log | cut -f 1 | sort -n | tr '\n' ' ')" "1 2 4 5 6 7 8 "
	assert_equal "$(field log 5 outcome)" "failed: its peer left"
	assert_equal "$(field log 5 attempts)" 2
	assert_equal "$(field log 5 payload)" '"poison"'
	assert_equal "$(records log | awk -F '\t' '$7 == "done"' | wc -l)" 6
	assert_equal "$(field log 4 payload)" '"3"'
	[[ "$(field log 4 worker)" == worker.[123] ]]
	[[ "$(field log 4 start)" =~ ^[0-9]{10}\.[0-9]{3}$ ]]
	[[ "$(field log 4 duration)" =~ ^[0-9]+\.[0-9]{3}$ ]]
	# each task was first sent, and ended, within the run (to the millisecond)
	records log | awk -F '\t' -v t0="$t0" -v t1="$t1" '
		$5 < t0 - 0.001 || $5 + $6 > t1 + 0.002 { bad = 1; print "not within the run: " $0 }
		END { exit bad }'
	# the failure stream says where in the input, and why
	run -0 maro-msg -f json < failed.cbor
	assert_output --regexp '"payload":"poison","failed":\{"line":5,"attempts":2,"why":"its peer left","worker":"worker\.[123]"\}\}$'
	# two workers died of it, the third is alive
	run -0 live_is worker. 1
}

@test "joblog: a handler that exits 1 on one point, under maro-pool: given up after --retries with its exit and stderr, no -W needed" {
	cat > task.sh <<-'EOF'
		#!/bin/sh
		read -r x
		echo "$x" >> "$RUNS"
		if [ "$x" = 5 ]; then echo "point $x: no convergence" >&2; exit 1; fi
		echo "r$x"
	EOF
	chmod +x task.sh
	bg 90 maro-pool -j 2 -- maro-dist --raw --on 'master:sweep:1' ./task.sh --on 'master:stop:1' --exit
	wait_until 10 live_is worker. 2
	# no -W: the failed point is not sent again forever, the scatter ends
	run -3 --separate-stderr timeout 40 sh -c 'seq 8 |
		maro-scatter -n master -P worker -t sweep --retries 2 --failed failed.cbor --joblog log -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -V)" "$(printf 'r%s\n' 1 2 3 4 6 7 8)"
	[[ "$stderr" == *"line 5 of the input given up after 2 failed attempts ('worker."*"': exited 1: point 5: no convergence): payload \"5\""* ]]
	[[ "$(field log 5 outcome)" =~ ^failed:\ \'worker\.[^\']+\':\ exited\ 1:\ point\ 5:\ no\ convergence$ ]]
	assert_equal "$(field log 5 attempts)" 2
	assert_equal "$(grep -c '^5$' "$RUNS")" 2
	run -0 maro-msg -f json < failed.cbor
	assert_output --regexp '"failed":\{"line":5,"attempts":2,"why":"'"'"'worker\.[^"]+'"'"': exited 1: point 5: no convergence","worker":"worker\.[^"]+"\}\}$'
	# without --retries: given up at its first failure
	run -3 --separate-stderr timeout 40 sh -c 'echo 5 | maro-scatter -n master -P worker -t sweep --joblog log2 -f payload'
	assert_equal "$(field log2 1 attempts)" 1
	[[ "$(field log2 1 outcome)" == *": exited 1: point 5: no convergence" ]]
	# a failing handler is not a dying worker: both serve on
	run -0 live_is worker. 2
}

@test "joblog: a hung task fails at --task-timeout, its record says so, the others are done" {
	coworker worker.1
	coworker worker.2
	wait_until 10 live_is worker. 2
	run -3 --separate-stderr timeout 30 sh -c 'printf "%s\n" a hang b c |
		maro-scatter -P worker -t job --task-timeout 500ms --retries 2 --joblog log -W 20s -f payload'
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" $'ra\nrb\nrc'
	[[ "$stderr" == *'line 2 of the input given up after 2 failed attempts (timed out): payload "hang"'* ]]
	assert_equal "$(field log 2 outcome)" "failed: timed out"
	assert_equal "$(field log 2 attempts)" 2
	assert_equal "$(records log | cut -f 7 | sort | uniq -c | awk '{ print $1, $2 }')" $'3 done\n1 failed:'
	# without --retries it is tried until -W: no record, named on stderr with its line and payload.
	# Fresh workers: the two attempts above may have hung both of the first two
	coworker other.1
	coworker other.2
	wait_until 10 live_is other. 2
	run -1 --separate-stderr timeout 30 sh -c 'printf "%s\n" a hang |
		maro-scatter -P other -t job --task-timeout 500ms --joblog log2 -W 2s -f payload'
	[[ "$stderr" == *'no reply in session '*' (line 2 of the input): payload "hang"'* ]]
	assert_equal "$(records log2 | cut -f 1)" 1
}

@test "joblog: the master killed with SIGKILL mid-run, --resume runs the rest and nothing that succeeded twice" {
	coworker worker.1 0.05
	coworker worker.2 0.05
	wait_until 10 live_is worker. 2
	seq 60 > tasks
	# tasks past 20 wait: the kill comes mid-run however slow the machine
	touch "$HOLD"
	bg 30 maro-scatter -P worker -t job --joblog log -W 25s -f payload < tasks > out1
	wait_until 10 has_lines log 16
	kill -KILL "$(child_pid "$BG_PID" maro-scatter)"
	wait_exit "$BG_PID" 5
	rm "$HOLD"
	# the records written are the tasks done before the kill
	records log | awk -F '\t' '$7 == "done" { print $1 }' | sort > done1
	[ "$(lines done1)" -ge 15 ]
	[ "$(lines done1)" -lt 60 ]
	run -0 --separate-stderr timeout 30 maro-scatter -P worker -t job --joblog log --resume -v -W 20s -f payload < tasks
	printf '%s\n' "${lines[@]}" > out2
	[[ "$stderr" == *"$(lines done1) tasks done before, in job log 'log', not run again"* ]]
	# every task answered in one run or the other; the resumed run did none of those done before
	assert_equal "$(cat out1 out2 | sort -u | wc -l)" 60
	assert_equal "$(sed 's/^r//' out2 | sort | comm -12 - done1)" ""
	# nothing done before the kill ran again; each task has one record of success
	assert_equal "$(sort "$RUNS" | uniq -d | comm -12 - done1)" ""
	assert_equal "$(records log | awk -F '\t' '$7 == "done" { print $1 }' | sort -n)" "$(seq 60)"
	# resumed once more, nothing is left to run
	: > "$RUNS"
	run -0 --separate-stderr timeout 30 maro-scatter -P worker -t job --joblog log --resume -W 20s -f payload < tasks
	assert_output ""
	assert_equal "$(lines "$RUNS")" 0
}

@test "joblog: --resume against another input is refused (65) and runs nothing; a file that is not a log too" {
	coworker worker.1
	coworker worker.2
	wait_until 10 live_is worker. 2
	run -3 --separate-stderr timeout 30 sh -c 'printf "%s\n" a poison c | maro-scatter -P worker -t job --retries 1 --joblog log -W 20s -f payload'
	: > "$RUNS"
	cp log log.before
	run -65 --separate-stderr timeout 30 sh -c 'printf "%s\n" a b c | maro-scatter -P worker -t job --joblog log --resume -W 20s'
	[[ "$stderr" == *"line 2 of the input is not the task job log 'log' has there: not the input it was written for"* ]]
	assert_equal "$(lines "$RUNS")" 0
	# a shorter input: the log has a record past its end
	run -65 --separate-stderr timeout 30 sh -c 'printf "%s\n" a | maro-scatter -P worker -t job --joblog log --resume -W 20s'
	[[ "$stderr" == *"the input ended at line 1, but job log 'log' has a record of line 3: not the input it was written for"* ]]
	cmp log log.before
	# the same input resumed: only the task that failed runs again
	run -3 --separate-stderr timeout 30 sh -c 'printf "%s\n" a poison c | maro-scatter -P worker -t job --retries 1 --joblog log --resume -W 20s -f payload'
	assert_equal "$(cat "$RUNS")" poison
	assert_equal "$(records log | cut -f 1,7)" "$(records log.before | cut -f 1,7; printf '2\tfailed: its peer left')"
	# not a job log: refused, and left as it was
	printf 'seq\tsomething else\n1\t2\n' > other
	run -65 --separate-stderr timeout 30 sh -c 'echo a | maro-scatter -P worker -t job --joblog other --resume -W 20s'
	[[ "$stderr" == *"'other' line 1: not the header of a job log of maro-scatter"* ]]
	assert_equal "$(cat other)" "$(printf 'seq\tsomething else\n1\t2')"
	run -2 maro-scatter -P worker -t job --resume
	assert_output --partial -- "--resume needs --joblog FILE"
	run -2 maro-scatter -n m -P worker -t job --async --joblog x
	assert_output --partial -- "--joblog needs replies: not with --async"
}

@test "joblog: a second run with the job log in use is refused (69), naming it and its holder, and changes nothing" {
	coworker worker.1 0.05
	coworker worker.2 0.05
	wait_until 10 live_is worker. 2
	seq 60 > tasks
	# tasks past 20 wait: the first run holds its log until the test is done
	touch "$HOLD"
	bg 30 maro-scatter -P worker -t job --joblog log -W 25s -f payload < tasks > out1
	wait_until 10 has_lines log 6
	local holder
	holder=$(child_pid "$BG_PID" maro-scatter)
	# neither a new log nor a resumed one: the file is not truncated, no task of theirs runs
	run -69 --separate-stderr timeout 10 sh -c 'printf "%s\n" x1 x2 | maro-scatter -P worker -t job --joblog log -W 5s'
	assert_equal "$stderr" "maro-scatter: job log 'log' is in use by another run (pid $holder)"
	run -69 --separate-stderr timeout 10 sh -c 'printf "%s\n" x1 x2 | maro-scatter -P worker -t job --joblog log --resume -W 5s'
	assert_equal "$stderr" "maro-scatter: job log 'log' is in use by another run (pid $holder)"
	rm "$HOLD"
	wait_exit "$BG_PID" 25
	assert_equal "$(grep -c '^x' "$RUNS")" 0
	# the first run's log is whole: one record per task, and a resume has nothing left to do
	assert_equal "$(records log | awk -F '\t' '$7 == "done" { print $1 }' | sort -n)" "$(seq 60)"
	run -0 --separate-stderr timeout 30 maro-scatter -P worker -t job --joblog log --resume -W 20s -f payload < tasks
	assert_output ""
	# a job log that is not a file (a pipe, the terminal) is not locked: two runs may share stderr
	run -0 --separate-stderr timeout 30 sh -c 'echo a | maro-scatter -P worker -t job --joblog /dev/stderr -W 20s -f payload'
	[[ "$stderr" == "$(printf 'seq\thash')"*'done'* ]]
}

@test "joblog: --resume of a crafted log whose seq is huge reads it in memory of its lines, not of its seq" {
	coworker worker.1
	wait_until 10 live_is worker. 1
	printf 'seq\thash\tworker\tattempts\tstart\tduration\toutcome\tpayload\n2000000000\t0000000000000001\tw\t1\t1\t1\tdone\tx\n' > log
	# 2e9 records of 16 bytes would be 30 GB; 200 MB of address space is plenty for a log of one line
	# (not under ASan, whose shadow memory reserves terabytes of address
	# space: there the 20 s bound stands alone, and make check's plain build
	# carries the memory bound)
	local bound='ulimit -v 200000'
	if readelf -d "$MARO_BIN/maro-scatter" | grep -q 'NEEDED.*libasan'; then
		bound=:
	fi
	run -65 --separate-stderr timeout 20 sh -c "$bound; echo a | maro-scatter -P worker -t job --joblog log --resume -W 5s"
	[[ "$stderr" == *"the input ended at line 1, but job log 'log' has a record of line 2000000000: not the input it was written for"* ]]
}
