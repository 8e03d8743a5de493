#!/usr/bin/env bats
# maro-bcast: command line, usage errors, help and version.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "maro-bcast --help prints the usage to stdout and exits 0" {
	run maro-bcast --help
	assert_success
	assert_line --index 0 --partial "usage: maro-bcast"
	run maro-bcast -h
	assert_success
}

@test "maro-bcast -V names the tool and the library versions" {
	run maro-bcast -V
	assert_success
	assert_output --regexp "^maro-bcast [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
}

@test "maro-bcast: an unknown option is a usage error (2) on stderr" {
	run --separate-stderr maro-bcast --no-such-option
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"try 'maro-bcast --help'"* ]]
}

@test "maro-bcast: a bad duration is a usage error naming the flag" {
	run maro-bcast -W 5x -n a -t x
	assert_failure 2
	assert_output --partial "invalid duration '5x' for -W"
}

@test "maro-bcast: an unreachable Redis registry is exit 69, named" {
	run timeout 10 sh -c 'maro-msg -t x --notification | maro-bcast -n me --registry redis://127.0.0.1:1/0 -W 2s'
	assert_failure 69
	assert_output --partial "127.0.0.1:1"
}

@test "maro-bcast: two messages on stdin is malformed input (65)" {
	run timeout 10 sh -c '{ maro-msg -t a; maro-msg -t b; } | maro-bcast -W 1s'
	assert_failure 65
	assert_output --partial "more than one message"
}

@test "maro-bcast: no message on stdin is 65" {
	run timeout 10 maro-bcast -W 1s < /dev/null
	assert_failure 65
}

@test "maro-bcast: one -d at most" {
	run --separate-stderr maro-bcast -t a -d 1 -d 2
	assert_failure 2
	assert_equal "$stderr" "maro-bcast: one -d at most: one message is sent; try 'maro-bcast --help'"
}

@test "maro-bcast: text on stdin is malformed input (65) with a hint: -t/-d or maro-msg -i json" {
	run --separate-stderr timeout 10 maro-bcast -P a -W 5s <<< hello
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-bcast: malformed input at byte offset 0: truncated CBOR item at end of input (6 bytes of it read); it looks like text, not CBOR: build the message with -t TAG -d DATA, or make it from JSON with maro-msg -i json" ]
}
