#!/usr/bin/env bats
# maro-recv: command line, usage errors, help and version.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "maro-recv --help prints the usage to stdout and exits 0" {
	run maro-recv --help
	assert_success
	assert_line --index 0 --partial "usage: maro-recv"
	run maro-recv -h
	assert_success
}

@test "maro-recv -V names the tool and the library versions" {
	run maro-recv -V
	assert_success
	assert_output --regexp "^maro-recv [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
}

@test "maro-recv: an unknown option is a usage error (2) on stderr" {
	run --separate-stderr maro-recv --no-such-option
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"try 'maro-recv --help'"* ]]
}

@test "maro-recv: a bad duration is a usage error naming the flag" {
	run maro-recv -W 5x -n a -t x
	assert_failure 2
	assert_output --partial "invalid duration '5x' for -W"
}

@test "maro-recv: an unreachable Redis registry is exit 69, named" {
	run timeout 10 sh -c 'maro-msg -t x --notification | maro-recv -n me --registry redis://127.0.0.1:1/0 -W 2s'
	assert_failure 69
	assert_output --partial "127.0.0.1:1"
}

@test "maro-recv: a name is required and must be valid" {
	run env -u MARO_NAME maro-recv
	assert_failure 2
	assert_output --partial "a name is required"
	run maro-recv -n 'no:colons'
	assert_failure 2
	assert_output --partial "invalid name"
}

@test "maro-recv -C with --session is a usage error" {
	run maro-recv -n a -C 1 --session x
	assert_failure 2
}

@test "maro-recv -C 0 takes nothing and exits 0 at once, without joining" {
	run -0 timeout 5 maro-recv -n r0 -C 0 -W 30s
	assert_output ''
	run -1 is_live r0
	# with --session, any -C is a usage error
	run -2 maro-recv -n r0 -C 0 --session x
}

@test "maro-recv --idle-timeout ends quietly with 0, -W with 124" {
	run timeout 10 maro-recv -n idle --idle-timeout 300ms
	assert_success
	run timeout 10 maro-recv -n idle -W 300ms
	assert_failure 124
	assert_output --partial "timed out after 0 messages"
	run timeout 10 maro-recv -n idle -W 300ms -q
	assert_failure 124
	assert_output ""
}

@test "maro-recv: SIGTERM leaves the registry at once and exits 143" {
	bg 30 maro-recv -n leaving
	pid=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live leaving
	kill -TERM "$pid"
	wait_exit "$BG_PID" 10
	[ "$status" -eq 143 ]
	run maro-peers -f json
	refute_output --partial '"leaving"'
}

@test "maro-recv --sessions-from a malformed file is 65" {
	printf '\x01' > bad
	run maro-recv -n a --sessions-from bad
	assert_failure 65
	assert_output --partial "'bad'"
}

@test "maro-recv -f json, diag and payload" {
	bg 30 maro-recv -n fmt -C 1 -f json > j
	run timeout 10 maro-send -p fmt -t t --json '{"k":[1,2]}' --notification
	assert_success
	wait_exit "$BG_PID" 10
	jq -e '.tag == "t" and .payload.k == [1,2] and .session_type == "notification"' j
	bg 30 maro-recv -n fmt -C 1 -f diag > d
	run timeout 10 maro-send -p fmt -t t --json '[1,2]' --notification
	wait_exit "$BG_PID" 10
	grep -q '"payload": \[1, 2\]' d
	bg 30 maro-recv -n fmt -C 1 -f payload > p
	run timeout 10 maro-send -p fmt -t t -d 'plain text' --notification
	wait_exit "$BG_PID" 10
	[ "$(cat p)" = "plain text" ]
}

@test "maro-recv --from: only messages whose source starts with a prefix (repeatable) are written; the others stay with their senders" {
	bg 30 maro-recv -n sink --from a. --from b -C 2 -f json > out
	recv=$BG_PID
	wait_until 10 is_live sink
	# a prefix, not a substring: xa.1 is not from a.
	run -124 maro-send -n xa.1 -p sink -t x -d no --notification -W 500ms
	assert_output --partial "not delivered to 'sink'"
	run -0 maro-send -n a.1 -p sink -t x -d one --notification -W 10s
	run -0 maro-send -n bee -p sink -t x -d two --notification -W 10s
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(jq -c '[.source, .payload]' out | tr '\n' ' ')" = '["a.1","one"] ["bee","two"] ' ]
}

@test "maro-recv --session: the reply of each session named, once each, then exit 0; other messages stay with their senders" {
	bg 30 maro-dist -n w.1 --raw --co '*:double:1' 'while read -r x; do echo $((x * 2)); done'
	wait_until 10 is_live w.1
	run -0 sh -c 'maro-send -n master -p w.1 -t double -d 1 -d 2 -d 3 --async -W 10s > sent'
	local s1 s3
	s1=$(maro-msg -f json < sent | jq -r 'select(.payload == "1") | .session_id')
	s3=$(maro-msg -f json < sent | jq -r 'select(.payload == "3") | .session_id')
	bg 30 maro-send -n other -p master -t note -d keep --notification -W 25s
	run -0 maro-recv -n master --session "$s1" --session "$s3" -f json -W 10s
	[ "$(jq -c '[.session_id, .payload]' <<< "$output" | LC_ALL=C sort | tr '\n' ' ')" = \
		"$(printf '["%s","2"]\n["%s","6"]\n' "$s1" "$s3" | LC_ALL=C sort | tr '\n' ' ')" ]
	# the reply of session 2 and the note were left: the next holder of the name gets them
	run -0 maro-recv -n master -C 2 -f payload -W 10s
	[ "$(LC_ALL=C sort <<< "$output" | tr '\n' ' ')" = "4 keep " ]
}
