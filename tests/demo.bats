#!/usr/bin/env bats
# backends: dir redis
# make demo, the front door: the demo script runs a whole job and leaves
# nothing behind, on the embedded registry and on Redis.

load helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "the demo estimates pi with a pool of workers, reports, stops them, and cleans up" {
	if [ "${MARO_TEST_BACKEND:-dir}" = dir ]; then unset MARO_REGISTRY; fi
	export TMPDIR=$BATS_TEST_TMPDIR
	run timeout 120 sh "$MARO_TOP/scripts/demo" 3 60
	assert_success
	assert_line --index 0 "demo: a Monte-Carlo estimate of pi: 60 tasks of 20000 darts for 3 workers"
	assert_line --index 1 "demo: 3 workers live"
	# the cluster while the scatter runs, not before it
	assert_line --index 2 --regexp '^demo: (half way|done before half way was seen)[,;] maro-peers --status says:$'
	assert_line --regexp '^    pool\..* +3 +3 +0 +0$'
	assert_line "demo: progress reported by at least 60% of the workers"
	assert_line --regexp '^demo: pi ~ 3\.[01][0-9]+ from 60 tasks of 20000 darts$'
	assert_line --regexp '^demo: [0-9.]+ s, [0-9]+ tasks/s$'
	assert_line "demo: how it is done: scripts/demo; the tools are in $MARO_BIN"
	# its temporary directory and every process it started are gone
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial maro-demo
	run pgrep -s 0 -f "maro-dist --raw --co master:dart:1"
	assert_failure
}

@test "the demo stopped by SIGTERM mid-scatter exits 143 at once and leaves nothing behind" {
	local demo
	if [ "${MARO_TEST_BACKEND:-dir}" = dir ]; then unset MARO_REGISTRY; fi
	export TMPDIR=$BATS_TEST_TMPDIR
	# tasks enough that the scatter is still running when the signal comes
	bg 120 sh "$MARO_TOP/scripts/demo" 2 100000 > demo.out 2>&1
	demo=$BG_PID
	wait_until 30 grep -q 'workers live' demo.out
	wait_until 30 pgrep -s 0 -f "maro-scatter -n master -P worker -t dart"
	kill -TERM "$(child_pid "$demo" sh)"
	wait_exit "$demo" 10
	[ "$status" -eq 143 ] || fail "exited $status: $(cat demo.out)"
	# it did not go on past the signal
	run grep -c '^demo: progress' demo.out
	assert_output 0
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial maro-demo
	run pgrep -s 0 -f "maro-dist --raw --co master:dart:1"
	assert_failure
	run pgrep -s 0 -f "maro-scatter -n master -P worker -t dart"
	assert_failure
}
