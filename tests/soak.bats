#!/usr/bin/env bats
# check: early (a long one)
# scripts/soak, shortened: tasks and a stream under chaos (workers killed,
# the Redis server restarted, the receiver killed), and nothing lost.  The
# script starts and stops its own redis-server.

load helpers
bats_require_minimum_version 1.5.0

setup() { cd "$BATS_TEST_TMPDIR"; }
teardown() { default_teardown; }

@test "soak: every task answered and every streamed message received under chaos" {
	export TMPDIR=$BATS_TEST_TMPDIR
	secs=${SOAK_SECONDS:-30}
	# no fd 3: bats waits for whoever holds it
	run timeout -k 10 $((secs * 4 + 120)) env SOAK_SECONDS="$secs" sh "$MARO_TOP/scripts/soak" 3>&-
	echo "$output" | sed 's/^/# /' >&3
	assert_success
	assert_line --regexp '^soak: tasks sent [0-9]+, answered [0-9]+, .* lost 0$'
	assert_line --regexp '^soak: stream sent [0-9]+, delivered [0-9]+, .* lost 0$'
	assert_line 'soak: maro-scatter exit 0, maro-send exit 0'
	assert_line 'soak: OK: nothing lost'
	# its temporary directory is gone
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial maro-soak
}
