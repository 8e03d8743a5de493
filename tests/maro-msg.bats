#!/usr/bin/env bats
# maro-msg: building, printing, checking and answering messages, and the
# bad-input table: every fault exits 65 with its offset, after the items
# before it were written.

load helpers

setup() { cd "$BATS_TEST_TMPDIR"; }
teardown() { default_teardown; }

uuid='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'

good() { maro-msg -t ok -d "$1" -n src; }

@test "build: fields, fresh UUIDs, one message per -d and -p" {
	run sh -c 'maro-msg -t sum -d 1 -d 2 -p w.1 -p w.2 -n boss | maro-msg -f json'
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	printf '%s\n' "${lines[@]}" > out
	jq -e -s 'all(.tag == "sum" and .source == "boss" and .session_type == "task" and .session_stage == "request")' out
	[ "$(jq -r .destination out | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "2 2 " ]
	[ "$(jq -r .message_id out | sort -u | wc -l)" -eq 4 ]
	[ "$(jq -r .session_id out | sort -u | wc -l)" -eq 4 ]
	jq -r '.message_id, .session_id' out | while read -r id; do [[ $id =~ $uuid ]]; done
}

@test "build: --json payload, --notification, MARO_NAME as source, no payload" {
	run sh -c 'MARO_NAME=me maro-msg -t t --json "{\"a\": [1, 2.5, null]}" --notification -f json'
	assert_success
	[ "$(jq -c .payload <<< "$output")" = '{"a":[1,2.5,null]}' ]
	[ "$(jq -r .session_type <<< "$output")" = notification ]
	[ "$(jq -r .source <<< "$output")" = me ]
	run maro-msg -t bare -f json
	jq -e 'has("payload") | not' <<< "$output"
}

@test "formats: json, diag, payload" {
	maro-msg -t t --json '{"k": [1, "x", true]}' -n s > m.cbor
	run maro-msg -f diag < m.cbor
	assert_success
	assert_output --partial '"tag": "t"'
	assert_output --partial '"payload": {"k": [1, "x", true]}'
	run maro-msg -f payload < m.cbor
	assert_output '{"k":[1,"x",true]}'
	run sh -c 'maro-msg -t t -d "two words" | maro-msg -f payload'
	assert_output 'two words'
	run sh -c 'maro-msg -t t | maro-msg -f payload'
	assert_output ''
	[ "${#lines[@]}" -eq 0 ]
}

@test "round trips: CBOR to CBOR byte for byte, CBOR to JSON to CBOR the same bytes" {
	{ good 1; maro-msg -t x --json '{"n": -5, "f": 0.1, "big": 1e300, "s": "é", "l": [[], {}]}'; maro-msg -t y --notification -p a.b; } > in.cbor
	maro-msg -f cbor < in.cbor > same.cbor
	cmp in.cbor same.cbor
	maro-msg -f json < in.cbor | maro-msg -i json -f cbor > back.cbor
	cmp in.cbor back.cbor
}

@test "diag of byte strings, tags, indefinite lengths, floats" {
	# {"tag": "t", "payload": [h'0102', 1(2), [_ 1], 1.5, undefined]}
	printf '\xa2\x63tag\x61t\x67payload\x85\x42\x01\x02\xc1\x02\x9f\x01\xff\xf9\x3e\x00\xf7' > m.cbor
	run maro-msg -f diag < m.cbor
	assert_success
	assert_output --partial "[h'0102', 1(2), [_ 1], 1.5, undefined]"
	run maro-msg -f json < m.cbor
	assert_success
	[ "$(jq -c .payload <<< "$output")" = '["AQI",2,[1],1.5,null]' ]
}

@test "a pipe that delivers one message and stays open yields it at once" {
	mkfifo feed
	exec 5<> feed	# read-write: opening it does not wait for the other end
	bg 20 maro-msg -f payload < feed > out
	maro-msg -t a -d first >&5
	# the pipe stays open: the message must come out anyway
	wait_until 3 has_lines out 1
	[ "$(cat out)" = first ]
	exec 5>&-
	wait_exit "$BG_PID" 10
	[ "$status" -eq 0 ]
}

@test "reply: envelope rules and payload sources" {
	maro-msg -t sum --json 3 -n boss -p w.1 > req.cbor
	run sh -c 'maro-msg reply -n w.1 -d done < req.cbor | maro-msg -f json'
	assert_success
	rep=$output
	req=$(maro-msg -f json < req.cbor)
	[ "$(jq -r .session_id <<< "$rep")" = "$(jq -r .session_id <<< "$req")" ]
	[ "$(jq -r .message_id <<< "$rep")" != "$(jq -r .message_id <<< "$req")" ]
	[ "$(jq -r '.source + ">" + .destination + ":" + .session_stage + ":" + .payload' <<< "$rep")" = "w.1>boss:complete:done" ]
	# the request's payload is kept when none is given; the request's destination becomes the source
	run sh -c 'maro-msg reply < req.cbor | maro-msg -f json'
	[ "$(jq -c '[.source, .payload]' <<< "$output")" = '["w.1",3]' ]
	# --json and -t
	run sh -c 'maro-msg reply -t total --json "[1]" < req.cbor | maro-msg -f json'
	[ "$(jq -c '[.tag, .payload]' <<< "$output")" = '["total",[1]]' ]
	# a notification's reply has stage receive
	run sh -c 'maro-msg -t n --notification -n a | maro-msg reply -n b | maro-msg -f json'
	[ "$(jq -r .session_stage <<< "$output")" = receive ]
}

@test "reply: --payloads pairs lines with requests; JSON requests in" {
	{ good 1; good 2; } > reqs.cbor
	printf 'one\ntwo\n' > p.txt
	run sh -c 'maro-msg reply --payloads p.txt < reqs.cbor | maro-msg -f payload'
	assert_output "$(printf 'one\ntwo')"
	printf '[1]\n{"a":2}\n' > p.json
	run sh -c 'maro-msg reply --payloads p.json --payloads-json < reqs.cbor | maro-msg -f payload'
	assert_output "$(printf '[1]\n{"a":2}')"
	printf 'only\n' > short.txt
	run maro-msg reply --payloads short.txt < reqs.cbor
	assert_failure 65
	assert_output --partial "more requests than lines"
	run sh -c 'maro-msg -f json < reqs.cbor | jq -c ".payload |= . + \"!\"" | maro-msg reply -i json | maro-msg -f payload'
	assert_output "$(printf '1!\n2!')"
}

@test "--check: silent success, -v counts, faults with offsets" {
	{ good 1; good 2; } > ok.cbor
	run maro-msg --check < ok.cbor
	assert_success
	assert_output ''
	run maro-msg --check -v < ok.cbor
	assert_output --partial "2 messages ok"
	n=$(wc -c < ok.cbor)
	printf '\xff' >> ok.cbor
	run maro-msg --check < ok.cbor
	assert_failure 65
	assert_output --partial "byte offset $n"
}

# bad_input BYTES REASON [AT]: two good messages, then BYTES; expect 65, the
# offset of BYTES (plus AT: the offending value within it), REASON, and both
# good messages written before.
bad_input() {
	{ good 1; good 2; printf "$1"; } > in.cbor
	off=$(( $(wc -c < in.cbor) - $(printf "$1" | wc -c) + ${3:-0} ))
	run --separate-stderr sh -c 'maro-msg -f payload < in.cbor'
	[ "$status" -eq 65 ]
	[ "$output" = "$(printf '1\n2')" ]
	[[ "$stderr" == *"byte offset $off"* ]]
	[[ "$stderr" == *"$2"* ]]
}

@test "bad input: a truncated item at the end of the stream" {
	bad_input '\xa1\x63ta' "truncated"
}

@test "bad input: garbage bytes" {
	bad_input '\xff\xfe\xfd' "malformed"
}

@test "bad input: an item that is not a map" {
	bad_input '\x83\x01\x02\x03' "not a map"
}

@test "bad input: a map without tag" {
	bad_input '\xa1\x67payload\x01' "no 'tag'"
}

@test "bad input: wrong types in known keys" {
	bad_input '\xa1\x63tag\x01' "'tag' must be" 5
	bad_input '\xa2\x63tag\x61x\x66source\x80' "'source' must be" 14
	bad_input '\xa2\x63tag\x61x\x6dsession_stage\x63\x62\x61\x64' "'session_stage' must be" 21
}

@test "bad input: an indefinite-length item that never ends" {
	bad_input '\xbf\x63tag\x61x\x9f\x01\x02' "truncated"
}

@test "bad input: a declared length of 2^60" {
	bad_input '\x5b\x10\x00\x00\x00\x00\x00\x00\x00' "limit"
	bad_input '\xbb\x10\x00\x00\x00\x00\x00\x00\x00' "limit"
}

@test "bad input: nesting 100000 deep" {
	{ good 1; good 2; head -c 100000 /dev/zero | tr '\0' '\201'; } > in.cbor
	off=$(( $(wc -c < in.cbor) - 100000 ))
	run --separate-stderr maro-msg -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$output" = "$(printf '1\n2')" ]
	[[ "$stderr" == *"nesting deeper than the limit"* ]]
	[[ "$stderr" == *"byte offset $((off + 64))"* ]]
}

@test "bad input: an item over --max-size" {
	{ good 1; maro-msg -t big -d "$(head -c 2000 /dev/zero | tr '\0' x)"; } > in.cbor
	run maro-msg --check --max-size 1000 < in.cbor
	assert_failure 65
	assert_output --partial "size limit"
}

@test "bad input: JSON lines name the line" {
	printf '{"tag":"a"}\n\n{"tag": 1}\n' > in.jsonl
	run --separate-stderr maro-msg -i json -f payload < in.jsonl
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"line 3"* ]]
	printf '{"tag":"a"}\n[1]\n' > in2.jsonl
	run maro-msg -i json < in2.jsonl
	assert_failure 65
	assert_output --partial "line 2"
}

@test "empty input: exit 0, no output" {
	run maro-msg -f json < /dev/null
	assert_success
	assert_output ''
	run maro-msg -i json < /dev/null
	assert_success
}

@test "usage errors exit 2; --help and -V exit 0 on stdout" {
	run maro-msg -t a -d x --json 1
	assert_failure 2
	run maro-msg -d x
	assert_failure 2
	assert_output --partial "needs -t TAG"
	run maro-msg -f yaml
	assert_failure 2
	run maro-msg --bogus
	assert_failure 2
	run --separate-stderr maro-msg --help
	assert_success
	[[ "$output" == usage:* ]]
	run maro-msg -V
	assert_success
	assert_output --regexp '^maro-msg [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$'
}

@test "EPIPE ends quietly" {
	run sh -c 'maro-msg -t a $(for i in $(seq 2000); do printf -- "-d %s " $i; done) -f json | head -n 1 >/dev/null; echo "${PIPESTATUS:-}"'
	assert_success
	refute_output --partial "error"
}
