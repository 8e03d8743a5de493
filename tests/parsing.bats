#!/usr/bin/env bats
# backends: dir
# Parsing is one rule everywhere: names never hide a NUL, the message's own
# keys are definite-length strings, names have a type, and every line that
# becomes text is UTF-8.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

@test "a NUL in a destination, a source or a tag makes the message malformed (not 'w1\\0x' delivered to w1)" {
	run -65 --separate-stderr bash -c "printf '\xa2\x63tag\x61t\x6bdestination\x64w1\x00x' | maro-msg -f json"
	assert_equal "$stderr" "maro-msg: malformed input at byte offset 19: 'destination' must not contain a NUL byte"
	run -65 --separate-stderr bash -c "printf '\xa2\x63tag\x61t\x66source\x63a\x00b' | maro-msg -f json"
	[[ "$stderr" == *"'source' must not contain a NUL byte"* ]]
	run -65 --separate-stderr bash -c "printf '\xa1\x63tag\x63t\x00t' | maro-msg -f json"
	[[ "$stderr" == *"'tag' must not contain a NUL byte"* ]]
	# and on the way to a peer: nothing reaches w1
	bg 30 maro-recv -n w1 -f payload -W 5s > got
	wait_until 10 is_live w1
	run -65 --separate-stderr bash -c "printf '\xa2\x63tag\x61t\x6bdestination\x64w1\x00x' | maro-send -W 2s"
	[[ "$stderr" == *"'destination' must not contain a NUL byte"* ]]
	run -65 --separate-stderr bash -c 'maro-msg -i json <<< "{\"tag\":\"t\",\"destination\":\"w1\\u0000x\"}"'
	[[ "$stderr" == *"'destination' must not contain a NUL byte"* ]]
	run -0 cat got
	assert_output ''
}

@test "the message's own keys are definite-length strings: 'source' in chunks is refused, not a second source" {
	run -65 --separate-stderr bash -c "printf '\xa3\x63tag\x61t\x66source\x61a\x7f\x63sou\x63rce\xff\x64evil' | maro-msg -f json"
	assert_equal "$stderr" "maro-msg: malformed input at byte offset 16: key 'source' written in chunks: the message's own keys must be definite-length strings"
	run -65 --separate-stderr bash -c "printf '\xa1\x63tag\x7f\x61a\x61b\xff' | maro-msg -f json"
	[[ "$stderr" == *"'tag' must be a definite-length text string"* ]]
	# an unknown key in chunks is kept, and a payload in chunks is read
	run -0 bash -c "printf '\xa3\x63tag\x61t\x7f\x62my\x63key\xff\x61v\x67payload\x7f\x61a\x61b\xff' | maro-msg -f payload"
	assert_output ab
}

@test "-n . and -n .. are usage errors (2) naming them, in every tool that takes a name" {
	run -2 --separate-stderr maro-send -n . -p w -t t
	[[ "$stderr" == "maro-send: invalid name '.'"* ]]
	run -2 --separate-stderr maro-recv -n ..
	[[ "$stderr" == "maro-recv: invalid name '..'"* ]]
	run -2 --separate-stderr maro-scatter -n . -P w -t t
	[[ "$stderr" == "maro-scatter: invalid name '.'"* ]]
	run -2 --separate-stderr maro-bcast -n .. -P w -t t
	[[ "$stderr" == "maro-bcast: invalid name '..'"* ]]
	run -2 --separate-stderr maro-wait-event -n . 'a:b:1'
	[[ "$stderr" == "maro-wait-event: invalid name '.'"* ]]
	run -2 --separate-stderr maro-dist -n _x --on 'a:b:1' true
	[[ "$stderr" == "maro-dist: invalid name '_x'"* ]]
	run -2 --separate-stderr maro-send -p .. -t t
	[[ "$stderr" == "maro-send: invalid peer name '..'"* ]]
}

@test "maro-scatter -t: a line that is not UTF-8 is refused (65, its line number) after the lines before it are done" {
	bg 30 maro-dist -n worker.1 --raw --co '*:x:1' 'while IFS= read -r l; do echo "r:$l"; done'
	wait_until 10 is_live worker.1
	run -65 --separate-stderr timeout 20 bash -c "printf 'ok\n\n\xff\xfe\nnever\n' | maro-scatter -P worker -t x -W 10s -f payload"
	assert_output 'r:ok'
	[[ "$stderr" == *"malformed input at line 3: not valid UTF-8 text"* ]]
}

@test "maro-send -d that is not UTF-8 is a usage error; a handler's line that is not UTF-8 gets no reply, said" {
	run -2 --separate-stderr timeout 10 maro-send -p w -t t -d $'\xff' -W 2s
	[[ "$stderr" == *"-d '"*"' is not valid UTF-8 text"* ]]
	bg 30 maro-dist -n worker.1 --raw --co '*:x:1' 'while IFS= read -r l; do printf "\377\n"; done' 2> dist.err
	wait_until 10 is_live worker.1
	run -124 timeout 10 maro-send -p worker.1 -t x -d hi -W 2s
	grep -q "is not valid UTF-8 text: no reply" dist.err
}

@test "a message JSON cannot print is written losslessly as {\"cbor\":...} and acknowledged, not resent for ever" {
	bg 30 maro-recv -n w1 -C 1 -f json > got
	local recv=$BG_PID
	wait_until 10 is_live w1
	# simple(16): well-formed, and nothing JSON (nor libcbor 0.8) can say
	run -0 --separate-stderr timeout 10 bash -c "printf '\xa3\x63tag\x61t\x6csession_type\x6cnotification\x67payload\xf0' | maro-send -p w1 -W 5s"
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	# the message's own bytes, whole (base64url): a message whose payload,
	# its last byte, is still simple(16)
	b64=$(jq -r .cbor got | tr -- '-_' '+/')
	while [ $((${#b64} % 4)) -ne 0 ]; do b64="$b64="; done
	base64 -d <<< "$b64" > back.cbor
	run -0 maro-msg --check < back.cbor
	run -0 sh -c 'tail -c 8 back.cbor | od -An -c | tr -s " "'
	assert_output ' p a y l o a d 360'
}

@test "CBOR to JSON: a negative bignum has the '~' of RFC 8949 6.1, a positive one not" {
	printf '\xa2\x63tag\x61x\x67payload\xc3\x42\x01\x00' > neg.cbor
	printf '\xa2\x63tag\x61x\x67payload\xc2\x42\x01\x00' > pos.cbor
	run -0 maro-msg -f payload < neg.cbor
	[ "$output" = '"~AQA"' ]
	run -0 maro-msg -f payload < pos.cbor
	[ "$output" = '"AQA"' ]
}

@test "CBOR to JSON: a map key holding a NUL is refused (no JSON input could read it back)" {
	printf '\xa2\x63tag\x61x\x67payload\xa1\x62a\x00\x01' > in.cbor
	run --separate-stderr maro-msg -f json < in.cbor
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-msg: malformed input at byte offset 0: map key holds a NUL character (JSON input could not read it back)" ]
}

@test "JSON input: a repeated key is refused everywhere (-i json, --json, --payloads-json, --json-lines)" {
	run --separate-stderr maro-msg -i json <<< '{"tag":"x","tag":"y"}'
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-msg: malformed input at line 1: invalid JSON at column 16: duplicate object key near '\"tag\"'" ]
	run --separate-stderr maro-msg -t x --json '{"a":1,"a":2}'
	[ "$status" -eq 2 ]
	[[ $stderr == "maro-msg: invalid JSON payload (line 1, column 10): duplicate object key near '\"a\"'"* ]]
	run --separate-stderr maro-send -p w -t x --json '{"a":1,"a":2}' -W 1s
	[ "$status" -eq 2 ]
	[[ $stderr == "maro-send: invalid JSON payload (line 1, column 10): duplicate object key near '\"a\"'"* ]]
	printf '{"a":1,"a":2}\n' > p.json
	maro-msg -t q -d 1 -n boss > req.cbor
	run --separate-stderr maro-msg reply -n w --payloads p.json --payloads-json < req.cbor
	[ "$status" -eq 65 ]
	[[ $stderr == "maro-msg: 'p.json' line 1: invalid JSON at column 10: duplicate object key near '\"a\"'" ]]
	bg 30 maro-dist -n w.1 --raw --co '*:a:1' 'cat'
	run --separate-stderr timeout 20 sh -c 'printf "1\n{\"a\":1,\"a\":2}\n" | maro-scatter -P w -t a --json-lines -W 15s -f payload'
	[ "$status" -eq 65 ]
	[ "$output" = 1 ]
	[ "$stderr" = "maro-scatter: malformed input at line 2: invalid JSON: duplicate object key near '\"a\"'" ]
}

@test "text lengths at the edges of CBOR's heads (23, 24, 255, 256 bytes) come back the same" {
	local n s
	for n in 1 23 24 25 255 256 65535 65536; do
		s=$(head -c "$n" /dev/zero | tr '\0' 'a')
		run -0 maro-msg -t "t$n" -d "$s" -f payload
		[ "${#output}" -eq "$n" ]
		run -0 sh -c 'maro-msg -t x -d "$1" | maro-msg --check -v' sh "$s"
		assert_output 'maro-msg: 1 message ok'
	done
}
