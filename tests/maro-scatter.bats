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
