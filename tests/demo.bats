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
	assert_line "demo: 3 workers live"
	assert_line --regexp '^    pool\..* +3 +3 +0 +0$'
	assert_line "demo: progress reported by at least 60% of the workers"
	assert_line --regexp '^demo: pi ~ 3\.[01][0-9]+ from 60 tasks of 20000 darts$'
	assert_line --regexp '^demo: [0-9.]+ s, [0-9]+ tasks/s$'
	# its temporary directory and every process it started are gone
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial maro-demo
	run pgrep -f "maro-dist --raw --co master:dart:1"
	assert_failure
}
