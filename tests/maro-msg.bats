#!/usr/bin/env bats
# maro-msg: building, printing, checking and answering messages, and the
# bad-input table: every fault exits 65 with its offset, after the items
# before it were written.

load helpers

setup() { cd "$BATS_TEST_TMPDIR"; unset MARO_NAME; }
teardown() { default_teardown; }

uuid='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'

# A request with every field, keys in the order the tools encode them.
sid=11111111-1111-4111-8111-111111111111
mid=22222222-2222-4222-8222-222222222222
req='{"tag":"sum","source":"boss","destination":"w.1","session_type":"task","session_stage":"request","session_id":"'$sid'","message_id":"'$mid'","reply_to":"inbox.boss","payload":{"n":[1,-2,2.5],"s":"é"}}'

good() { maro-msg -t ok -d "$1" -n src; }

# ---- build mode

@test "build: the fields, fresh distinct UUIDs, one message per -d times each -p" {
	run sh -c 'maro-msg -t sum -d 1 -d 2 -p w.1 -p w.2 -n boss | maro-msg -f json'
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	printf '%s\n' "${lines[@]}" > out
	[ "$(jq -c 'del(.session_id, .message_id)' out)" = "$(printf '%s\n' \
		'{"tag":"sum","source":"boss","destination":"w.1","session_type":"task","session_stage":"request","payload":"1"}' \
		'{"tag":"sum","source":"boss","destination":"w.1","session_type":"task","session_stage":"request","payload":"2"}' \
		'{"tag":"sum","source":"boss","destination":"w.2","session_type":"task","session_stage":"request","payload":"1"}' \
		'{"tag":"sum","source":"boss","destination":"w.2","session_type":"task","session_stage":"request","payload":"2"}')" ]
	jq -r '.message_id, .session_id' out > ids
	[ "$(wc -l < ids)" -eq 8 ]
	[ "$(sort -u ids | wc -l)" -eq 8 ]
	while read -r id; do [[ $id =~ $uuid ]]; done < ids
}

@test "build: no -d, no -p, no -n: one message without payload, destination or source" {
	run maro-msg -t bare -f json
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jq -c 'keys_unsorted' <<< "$output")" = '["tag","session_type","session_stage","session_id","message_id"]' ]
	[ "$(jq -r .tag <<< "$output")" = bare ]
}

@test "build: --json payload, --notification, MARO_NAME as the source, -n over MARO_NAME" {
	run env MARO_NAME=me maro-msg -t t --json '{"a": [1, 2.5, null, "x"]}' --notification -f json
	assert_success
	[ "$(jq -c '[.payload, .session_type, .session_stage, .source]' <<< "$output")" = '[{"a":[1,2.5,null,"x"]},"notification","request","me"]' ]
	run env MARO_NAME=me maro-msg -t t -n other -f json
	[ "$(jq -r .source <<< "$output")" = other ]
	run env MARO_NAME= maro-msg -t t -f json
	jq -e 'has("source") | not' <<< "$output"
	run maro-msg -t t --json '"text"' -p a -p b -f payload
	assert_output "$(printf 'text\ntext')"
}

@test "build: writes CBOR on a pipe, and reads no input" {
	maro-msg -t t --json 1 < /dev/null > out.cbor
	# a map of 6: tag, session_type, session_stage, session_id, message_id, payload 1
	[ "$(head -c 9 out.cbor | od -An -tx1 | tr -d ' \n')" = a66374616761746c73 ]
	[ "$(tail -c 9 out.cbor | od -An -tx1 | tr -d ' \n')" = 677061796c6f616401 ]
	# stdin is not read: a terminal, a closed one or a stream all give the same
	run sh -c 'printf "\xff" | maro-msg -t t -f json'
	assert_success
	run sh -c 'maro-msg -t t -f json <&-'
	assert_success
}

@test "build: a payload that receivers would refuse is a usage error" {
	deep=$(printf '[%.0s' $(seq 70))$(printf ']%.0s' $(seq 70))
	run maro-msg -t t --json "$deep"
	assert_failure 2
	assert_output --partial "nesting deeper than the limit"
	run maro-msg -t t --json "$deep" --max-depth 100 -f payload
	assert_success
	assert_output "$(printf '[%.0s' $(seq 70))$(printf ']%.0s' $(seq 70))"
	run maro-msg -t t -d "$(head -c 300 /dev/zero | tr '\0' x)" --max-size 200
	assert_failure 2
	assert_output --partial "size limit"
	run maro-msg -t t --json '{"a": 1'
	assert_failure 2
	assert_output --partial "invalid JSON payload"
	run maro-msg -t "$(printf '\xff')"
	assert_failure 2
	assert_output --partial "not valid UTF-8"
}

# ---- output formats

@test "formats: json is the whole map, compact, one line each" {
	printf '%s\n%s\n' "$req" "$req" | maro-msg -i json > m.cbor
	run maro-msg -f json < m.cbor
	assert_success
	assert_output "$(printf '%s\n%s' "$req" "$req")"
}

@test "formats: diag is RFC 8949 diagnostic notation, one line each" {
	printf '%s\n' "$req" | maro-msg -i json > m.cbor
	run maro-msg -f diag < m.cbor
	assert_success
	assert_output '{"tag": "sum", "source": "boss", "destination": "w.1", "session_type": "task", "session_stage": "request", "session_id": "'$sid'", "message_id": "'$mid'", "reply_to": "inbox.boss", "payload": {"n": [1, -2, 2.5], "s": "é"}}'
	# byte strings, tags, indefinite lengths, the widths of floats, undefined
	printf '\xa2\x63tag\x61t\x67payload\x87\x42\x01\x02\xc1\x02\x9f\x01\xff\xf9\x3e\x00\xfa\x47\xc3\x50\x00\xfb\x7e\x37\xe4\x3c\x88\x00\x75\x9c\xf7' > m2.cbor
	run maro-msg -f diag < m2.cbor
	assert_success
	assert_output '{"tag": "t", "payload": [h'"'0102'"', 1(2), [_ 1], 1.5, 100000.0, 1.0e+300, undefined]}'
}

@test "formats: payload is text as it is, nothing as an empty line, the rest as JSON" {
	{ maro-msg -t t -d 'two words'; maro-msg -t t; maro-msg -t t --json '{"k": [1, "x", true]}'; maro-msg -t t --json '"quoted?"'; maro-msg -t t -d ''; } > m.cbor
	run maro-msg -f payload < m.cbor
	assert_success
	[ "$output" = "$(printf 'two words\n\n{"k":[1,"x",true]}\nquoted?\n')" ]
	[ "$(maro-msg -f payload < m.cbor | wc -l)" -eq 5 ]
}

@test "formats: an indefinite-length text payload is text as it is too, its chunks joined" {
	# (_ "a", "bc", ""), and (_ ) with no chunk
	printf '\xa2\x63tag\x61x\x67payload\x7f\x61a\x78\x02bc\x60\xff' > m.cbor
	printf '\xa2\x63tag\x61x\x67payload\x7f\xff' >> m.cbor
	run maro-msg -f payload < m.cbor
	assert_success
	[ "$output" = "$(printf 'abc\n')" ]
	[ "$(maro-msg -f payload < m.cbor | wc -l)" -eq 2 ]
}

@test "formats: simple values and tags libcbor cannot decode pass as cbor; converting them is 65, named" {
	# payloads simple(16), [simple(32)] and 6(1): well-formed
	for h in '\xf0' '\x81\xf8\x20' '\xc6\x01'; do printf "\xa2\x63tag\x61x\x67payload$h"; done > odd.cbor
	maro-msg -f cbor < odd.cbor > same.cbor
	cmp odd.cbor same.cbor
	run --separate-stderr maro-msg -f json < odd.cbor
	[ "$status" -eq 65 ]
	[[ $stderr == *"simple value 16 cannot be converted (libcbor"* ]]
	printf '\xa2\x63tag\x61x\x67payload\xc6\x01' > tag.cbor
	run --separate-stderr maro-msg -f diag < tag.cbor
	[ "$status" -eq 65 ]
	[[ $stderr == *"tag 6 cannot be converted"* ]]
	# 0xf8 with a value under 32 is malformed
	printf '\xa2\x63tag\x61x\x67payload\xf8\x10' > bad.cbor
	run maro-msg -f cbor < bad.cbor
	[ "$status" -eq 65 ]
}

@test "formats: cbor passes each item's bytes through, whatever their encoding" {
	# not the preferred encoding (a 2-byte head for a small length, an indefinite map): kept
	printf '\xbf\x63tag\x79\x00\x01t\xff\xa1\x63tag\x61u' > odd.cbor
	maro-msg -f cbor < odd.cbor > same.cbor
	cmp odd.cbor same.cbor
	run maro-msg -f json < odd.cbor
	assert_output "$(printf '{"tag":"t"}\n{"tag":"u"}')"
}

@test "formats: JSON loses what it cannot say: bytes, tags, undefined, keys, non-finite floats" {
	# {"tag": "t", "payload": {h'01': h'0102', 1: 2(h'ff'), "u": undefined, "n": NaN, "i": -Infinity}}
	printf '\xa2\x63tag\x61t\x67payload\xa5\x41\x01\x42\x01\x02\x01\xc2\x41\xff\x61u\xf7\x61n\xf9\x7e\x00\x61i\xf9\xfc\x00' > m.cbor
	run maro-msg -f json < m.cbor
	assert_success
	assert_output '{"tag":"t","payload":{"h'"'01'"'":"AQI","1":"_w","u":null,"n":null,"i":null}}'
}

@test "formats: a payload that is not UTF-8 text cannot be JSON: 65 at its item" {
	{ good 1; printf '\xa2\x63tag\x61t\x67payload\x62\xc3\x28'; } > in.cbor
	off=$(good 1 | wc -c)
	run --separate-stderr maro-msg -f json < in.cbor
	[ "$status" -eq 65 ]
	[ "$(jq -r .payload <<< "$output")" = 1 ]
	[ "$stderr" = "maro-msg: malformed input at byte offset $off: text string is not valid UTF-8" ]
}

# ---- -i json

@test "-i json: one object per line, blank lines skipped, nothing added" {
	printf '\n{"tag":"a"}\n  \n{"tag":"b","payload":[1]}\n\r\n{"tag":"c","x":{"y":null}}' > in.jsonl
	run maro-msg -i json -f json < in.jsonl
	assert_success
	assert_output "$(printf '%s\n' '{"tag":"a"}' '{"tag":"b","payload":[1]}' '{"tag":"c","x":{"y":null}}')"
	# the CBOR is exactly the map of the line: {"tag": "a"}
	printf '{"tag":"a"}\n' | maro-msg -i json > a.cbor
	printf '\xa1\x63tag\x61a' > want.cbor
	cmp a.cbor want.cbor
}

@test "-i json: a bad line stops at its number, after the lines before it" {
	printf '{"tag":"a"}\n\n{"tag": 1}\n{"tag":"z"}\n' > in.jsonl
	run --separate-stderr maro-msg -i json -f payload < in.jsonl
	[ "$status" -eq 65 ]
	[ "$output" = "" ]
	[ "$stderr" = "maro-msg: malformed input at line 3: 'tag' must be a UTF-8 text string" ]
	printf '{"tag":"a","payload":"a"}\n[1]\n' > in.jsonl
	run --separate-stderr maro-msg -i json -f payload < in.jsonl
	[ "$status" -eq 65 ]
	[ "$output" = a ]
	[ "$stderr" = "maro-msg: malformed input at line 2: not a JSON object (a message is an object)" ]
	printf '{"tag":"a"}\n{"tag":"a",\n' > in.jsonl
	run --separate-stderr maro-msg -i json < in.jsonl
	[ "$status" -eq 65 ]
	[[ $stderr == "maro-msg: malformed input at line 2: invalid JSON"* ]]
	printf '{"tag":"a","tag":"b"}\n' > in.jsonl
	run --separate-stderr maro-msg -i json < in.jsonl
	[ "$status" -eq 65 ]
	[[ $stderr == *"line 1: invalid JSON"*"duplicate"* ]]
	printf '{"payload":1}\n' > in.jsonl
	run --separate-stderr maro-msg -i json < in.jsonl
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-msg: malformed input at line 1: message has no 'tag'" ]
}

# ---- round trips

@test "round trip: CBOR to CBOR is byte for byte the same" {
	# with byte strings, tags, indefinite lengths and odd float widths, which JSON would lose
	{ good 1; maro-msg -t y --notification -p a.b; printf '\xa2\x63tag\x61t\x67payload\xc1\x42\x01\x02\xbf\x63tag\x61t\x67payload\x9f\xfa\x3f\xc0\x00\x00\x5f\x41\x01\xff\xff\xff'; } > in.cbor
	maro-msg -f cbor < in.cbor > same.cbor
	cmp in.cbor same.cbor
	maro-msg < in.cbor > same2.cbor
	cmp in.cbor same2.cbor
}

@test "round trip: CBOR to JSON to CBOR gives the same bytes without byte strings or tags" {
	{
		good 1
		maro-msg -t x --json '{"n": -5, "f": 0.1, "h": 1.5, "s": 100000.0, "big": 1e300, "neg": -4.1, "i": 9223372036854775807, "s2": "é\u0000\n", "l": [[], {}, true, false, null]}' -n a -p b
		maro-msg -t y --notification -p a.b
		printf '%s\n' "$req" | maro-msg -i json
		maro-msg -t z -f cbor | maro-msg reply -n w
	} > in.cbor
	maro-msg -f json < in.cbor > in.jsonl
	[ "$(wc -l < in.jsonl)" -eq 5 ]
	maro-msg -i json -f cbor < in.jsonl > back.cbor
	cmp in.cbor back.cbor
	# and JSON to CBOR to JSON gives the same text
	maro-msg -f json < back.cbor > back.jsonl
	cmp in.jsonl back.jsonl
}

# ---- reply mode

@test "reply: keeps session_id and reply_to, swaps source and destination, new message_id, stage complete" {
	printf '%s\n' "$req" | maro-msg -i json > req.cbor
	run sh -c 'maro-msg reply -n w.1 -d done -f json < req.cbor'
	assert_success
	[ "$(jq -c 'del(.message_id)' <<< "$output")" = '{"tag":"sum","source":"w.1","destination":"boss","session_type":"task","session_stage":"complete","session_id":"'$sid'","reply_to":"inbox.boss","payload":"done"}' ]
	id=$(jq -r .message_id <<< "$output")
	[[ $id =~ $uuid ]]
	[ "$id" != "$mid" ]
	# two replies to one request: two message ids
	run sh -c 'cat req.cbor req.cbor | maro-msg reply -f json | jq -r .message_id | sort -u | wc -l'
	assert_output 2
}

@test "reply: source is -n, else MARO_NAME, else the request's destination; tag is -t, else the request's" {
	printf '%s\n' "$req" | maro-msg -i json > req.cbor
	run sh -c 'maro-msg reply -f json < req.cbor'
	[ "$(jq -c '[.source, .destination, .tag]' <<< "$output")" = '["w.1","boss","sum"]' ]
	run sh -c 'MARO_NAME=env.1 maro-msg reply -f json < req.cbor'
	[ "$(jq -r .source <<< "$output")" = env.1 ]
	run sh -c 'MARO_NAME=env.1 maro-msg reply -n flag.1 -t total -f json < req.cbor'
	[ "$(jq -c '[.source, .tag]' <<< "$output")" = '["flag.1","total"]' ]
	# a request without source or destination: a reply without them
	run sh -c 'maro-msg -t t | maro-msg reply -f json'
	jq -e 'has("source") or has("destination") | not' <<< "$output"
	# "reply" after the options works too
	run sh -c 'maro-msg -n x reply -f json < req.cbor'
	[ "$(jq -r .source <<< "$output")" = x ]
}

@test "reply: a notification still gets a reply, at stage receive" {
	run sh -c 'maro-msg -t n --notification -n a -p b | maro-msg reply -f json'
	assert_success
	[ "$(jq -c '[.session_type, .session_stage, .source, .destination]' <<< "$output")" = '["notification","receive","b","a"]' ]
}

@test "reply: the payload from -d, from --json, or the request's own" {
	printf '%s\n' "$req" | maro-msg -i json > req.cbor
	run sh -c 'maro-msg reply -d "a b" -f payload < req.cbor'
	assert_output 'a b'
	run sh -c 'maro-msg reply --json "[1, {\"x\": 2.5}]" -f payload < req.cbor'
	assert_output '[1,{"x":2.5}]'
	run sh -c 'maro-msg reply -f payload < req.cbor'
	assert_output '{"n":[1,-2,2.5],"s":"é"}'
	run maro-msg reply --json '[1' < req.cbor
	assert_failure 2
	run maro-msg reply --json "$(printf "[%.0s" $(seq 70))$(printf "]%.0s" $(seq 70))" < req.cbor
	assert_failure 2
	assert_output --partial "the replies would be refused: nesting deeper than the limit"
}

@test "reply: --payloads pairs line i with request i, as text or JSON" {
	{ good 1; good 2; good 3; } > reqs.cbor
	printf 'one\n\nthree\n' > p.txt
	run sh -c 'maro-msg reply --payloads p.txt < reqs.cbor | maro-msg -f json | jq -c .payload'
	assert_output "$(printf '"one"\n""\n"three"')"
	printf '[1]\n{"a":2}\n"s"\n' > p.json
	run sh -c 'maro-msg reply --payloads p.json --payloads-json -f payload < reqs.cbor'
	assert_output "$(printf '[1]\n{"a":2}\ns')"
	printf '[1]\n{"a":\n' > bad.json
	run --separate-stderr maro-msg reply --payloads bad.json --payloads-json -f payload < reqs.cbor
	[ "$status" -eq 65 ]
	[ "$output" = '[1]' ]
	[[ $stderr == "maro-msg: 'bad.json' line 2: invalid JSON"* ]]
	run maro-msg reply --payloads missing.txt < reqs.cbor
	assert_failure 1
	assert_output --partial "cannot open 'missing.txt'"
}

@test "reply: running out of --payloads lines is an error, after the replies before it" {
	{ good 1; good 2; good 3; } > reqs.cbor
	printf 'only\nsecond' > short.txt
	run --separate-stderr maro-msg reply --payloads short.txt -f payload < reqs.cbor
	[ "$status" -eq 65 ]
	[ "$output" = "$(printf 'only\nsecond')" ]
	[ "$stderr" = "maro-msg: 'short.txt' has 2 lines: no payload for request 3" ]
}

@test "reply: a shell worker computes on JSON, maro-msg fixes the envelope" {
	{ maro-msg -t sq --json 3 -n boss -p w; maro-msg -t sq --json 4 -n boss -p w; } > reqs.cbor
	run sh -c 'maro-msg -f json < reqs.cbor | jq -c --unbuffered ".payload |= . * ." | maro-msg -i json reply | maro-msg -f json'
	assert_success
	[ "$(jq -c '[.payload, .source, .destination, .session_stage]' <<< "$output")" = "$(printf '%s\n' '[9,"w","boss","complete"]' '[16,"w","boss","complete"]')" ]
	# the session ids are the requests'
	[ "$(jq -r .session_id <<< "$output")" = "$(maro-msg -f json < reqs.cbor | jq -r .session_id)" ]
}

# ---- --check

@test "--check: silent on success, -v counts, a fault has its offset" {
	{ good 1; good 2; } > ok.cbor
	run --separate-stderr maro-msg --check < ok.cbor
	assert_success
	[ "$output" = "" ]
	[ "$stderr" = "" ]
	run --separate-stderr maro-msg --check -v < ok.cbor
	assert_success
	[ "$output" = "" ]
	[ "$stderr" = "maro-msg: 2 messages ok" ]
	n=$(wc -c < ok.cbor)
	printf '\xa1\x63tag\x01' >> ok.cbor
	run --separate-stderr maro-msg --check < ok.cbor
	[ "$status" -eq 65 ]
	[ "$output" = "" ]
	[ "$stderr" = "maro-msg: malformed input at byte offset $((n + 5)): 'tag' must be a UTF-8 text string" ]
}

# ---- the bad-input table

# bad_input BYTES REASON [AT]: two good messages, then BYTES; expect 65,
# the offset of BYTES (plus AT: the offending value within it), the exact
# REASON, and both good messages written before.
bad_input() {
	{ good 1; good 2; printf "$1"; } > in.cbor
	off=$(( $(wc -c < in.cbor) - $(printf "$1" | wc -c) + ${3:-0} ))
	run --separate-stderr maro-msg -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$output" = "$(printf '1\n2')" ]
	[ "$stderr" = "maro-msg: malformed input at byte offset $off: $2" ]
}

@test "bad input: a truncated item at the end of the stream" {
	bad_input '\xa1\x63ta' "truncated CBOR item at end of input (4 bytes of it read)"
}

@test "bad input: garbage bytes" {
	bad_input '\x1c\xfe\xfd' "malformed CBOR"
	bad_input '\xff\x00' "unexpected break"
}

@test "bad input: an item that is not a map" {
	bad_input '\x83\x01\x02\x03' "item is not a map (a message is a CBOR map)"
	bad_input '\x63tag' "item is not a map (a message is a CBOR map)"
}

@test "bad input: a map without tag" {
	bad_input '\xa1\x67payload\x01' "message has no 'tag'"
	bad_input '\xa0' "message has no 'tag'"
}

@test "bad input: wrong types in known keys" {
	bad_input '\xa1\x63tag\x01' "'tag' must be a UTF-8 text string" 5
	bad_input '\xa2\x63tag\x61x\x66source\x80' "'source' must be a UTF-8 text string" 14
	bad_input '\xa2\x63tag\x61x\x6asession_id\x41x' "'session_id' must be a UTF-8 text string" 18
	bad_input '\xa2\x63tag\x61x\x6dsession_stage\x63bad' "'session_stage' must be \"request\", \"receive\" or \"complete\"" 21
	bad_input '\xa2\x63tag\x61x\x6csession_type\xf5' "'session_type' must be \"task\" or \"notification\"" 20
	bad_input '\xa2\x63tag\x61x\x63tag\x61y' "repeated key 'tag'" 7
}

@test "bad input: a repeated unknown key, which JSON would keep one of and CBOR both" {
	bad_input '\xa3\x63tag\x61x\x61k\x01\x61k\x02' "repeated key 'k'" 10
	bad_input '\xa3\x01\x02\x63tag\x61x\x01\x03' "repeated key (CBOR 01)" 9
	# the same text, its length written long: the same key
	bad_input '\xa3\x61k\x01\x63tag\x61x\x78\x01k\x02' "repeated key 'k'" 10
}

@test "bad input: an indefinite-length item that never ends" {
	bad_input '\xbf\x63tag\x61x\x9f\x01\x02' "truncated CBOR item at end of input (10 bytes of it read)"
	bad_input '\x5f\x41\x01' "truncated CBOR item at end of input (3 bytes of it read)"
}

@test "bad input: a declared length of 2^60" {
	bad_input '\x5b\x10\x00\x00\x00\x00\x00\x00\x00' "declared length exceeds the item size limit"
	bad_input '\x9b\x10\x00\x00\x00\x00\x00\x00\x00' "declared length exceeds the item size limit"
	bad_input '\xa2\x63tag\x61x\x67payload\x7b\x10\x00\x00\x00\x00\x00\x00\x00' "declared length exceeds the item size limit" 15
}

@test "bad input: nesting 100000 deep" {
	{ good 1; good 2; head -c 100000 /dev/zero | tr '\0' '\201'; } > in.cbor
	off=$(( $(wc -c < in.cbor) - 100000 ))
	run --separate-stderr timeout 10 maro-msg -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$output" = "$(printf '1\n2')" ]
	[ "$stderr" = "maro-msg: malformed input at byte offset $((off + 64)): nesting deeper than the limit" ]
	# the same through tags, and past the hard limit of 1024
	{ good 1; head -c 100000 /dev/zero | tr '\0' '\301'; } > in.cbor
	run --separate-stderr timeout 10 maro-msg --max-depth 1024 -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$output" = 1 ]
	[[ $stderr == *"byte offset $(( $(good 1 | wc -c) + 1024 )): nesting deeper than the limit" ]]
}

@test "bad input: an empty array or map past --max-depth is too deep, as a full one is" {
	# {"tag": "x", "payload": [[]]}: the map, the array, the empty one
	printf '\xa2\x63tag\x61x\x67payload\x81\x80' > in.cbor
	run --separate-stderr maro-msg --max-depth 2 -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$stderr" = "maro-msg: malformed input at byte offset 16: nesting deeper than the limit" ]
	printf '\xa2\x63tag\x61x\x67payload\x81\xa0' > in.cbor
	run maro-msg --max-depth 2 -f payload < in.cbor
	[ "$status" -eq 65 ]
	run maro-msg --max-depth 3 -f payload < in.cbor
	assert_success
	assert_output '[{}]'
}

@test "bad input: an item over --max-size" {
	{ good 1; maro-msg -t big -d "$(head -c 2000 /dev/zero | tr '\0' x)"; } > in.cbor
	run --separate-stderr maro-msg --max-size 1000 -f payload < in.cbor
	[ "$status" -eq 65 ]
	[ "$output" = 1 ]
	# the offset of the payload's head: 3 bytes before its 2000 bytes of text, at the end
	[ "$stderr" = "maro-msg: malformed input at byte offset $(( $(wc -c < in.cbor) - 2003 )): declared length exceeds the item size limit" ]
	run maro-msg --check --max-size 3000 < in.cbor
	assert_success
}

@test "empty input: exit 0, no output" {
	for f in cbor json diag payload; do
		run --separate-stderr maro-msg -f $f < /dev/null
		[ "$status" -eq 0 ]
		[ "$output" = "" ]
		[ "$stderr" = "" ]
	done
	run --separate-stderr maro-msg -i json -f json < /dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run --separate-stderr maro-msg reply < /dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run --separate-stderr maro-msg --check -v < /dev/null
	[ "$status" -eq 0 ] && [ "$stderr" = "maro-msg: 0 messages ok" ]
}

# ---- streaming

@test "a pipe that delivers one message and stays open yields it at once" {
	start=$(date +%s%N)
	bg 20 sh -c '{ maro-msg -t a -d first; sleep 5; } | maro-msg -f payload | head -n 1 > out'
	wait_until 4 has_lines out 1
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$(cat out)" = first ]
	# at once: before the writer's 5 s, with a busy machine's margin
	[ "$elapsed" -lt 4500 ]
}

@test "the same for JSON lines in, and for replies" {
	start=$(date +%s%N)
	bg 20 sh -c '{ echo "{\"tag\":\"a\",\"payload\":\"j\"}"; sleep 5; } | maro-msg -i json -f payload > out1'
	bg 20 sh -c '{ maro-msg -t a; sleep 5; } | maro-msg reply -d r -f payload > out2'
	wait_until 4 has_lines out1 1
	wait_until 4 has_lines out2 1
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$(cat out1)" = j ]
	[ "$(cat out2)" = r ]
	[ "$elapsed" -lt 4500 ]
}

@test "a closed output pipe ends maro-msg quietly, even while its input stays open" {
	run --separate-stderr sh -c 'maro-msg -t a $(for i in $(seq 3000); do printf -- "-d %s " $i; done) -f json | head -n 1'
	assert_success
	[ "$stderr" = "" ]
	# the reader went away: maro-msg notices at its next write, not at the end of its input
	start=$SECONDS
	bg 20 sh -c '{ maro-msg -t a -d 1; sleep 1; maro-msg -t a -d 2; sleep 8; } | { maro-msg -f payload 2> err; echo $? > status; } | head -n 1 > out'
	wait_until 6 test -s status
	[ $((SECONDS - start)) -lt 6 ]
	[ "$(cat status)" -eq 0 ]
	[ "$(cat out)" = 1 ]
	[ ! -s err ]
}

@test "stdin that cannot be read is an I/O error, exit 1" {
	run --separate-stderr maro-msg -f json < .
	[ "$status" -eq 1 ]
	[[ $stderr == "maro-msg: error reading standard input: "* ]]
}

# ---- command line

@test "usage errors exit 2" {
	run --separate-stderr maro-msg -t a -d x --json 1
	[ "$status" -eq 2 ]
	[[ $stderr == *"-d and --json do not go together; try 'maro-msg --help'" ]]
	run maro-msg -d x
	assert_failure 2
	assert_output --partial "needs -t TAG"
	for args in "-f yaml" "-i xml" "--bogus" "extra" "-t a -i json" "-t a --check" \
		"--check -f json" "reply -p x" "reply --notification" "reply -d a -d b" \
		"reply -d a --payloads f" "--payloads f" "reply --payloads-json" \
		"--max-depth 0" "--max-depth 2000" "--max-size 0" "--max-size x" "-q -v" \
		"--check reply" "-t a --json 1 --json 2" "-t"; do
		run --separate-stderr maro-msg $args < /dev/null
		echo "maro-msg $args: $status $stderr"
		[ "$status" -eq 2 ]
		[ "$output" = "" ]
		[[ $stderr == "maro-msg: "*"; try 'maro-msg --help'" ]]
	done
}

@test "--help prints usage on stdout and exits 0; -V prints the library versions" {
	run --separate-stderr maro-msg --help
	[ "$status" -eq 0 ]
	[ "$stderr" = "" ]
	[[ ${lines[0]} == "usage: maro-msg [-f FORMAT] [-i cbor|json] [--check]"* ]]
	[[ $output == *"maro-msg -t TAG"* ]]
	[[ $output == *"maro-msg reply"* ]]
	run --separate-stderr maro-msg -h
	[ "$status" -eq 0 ]
	run --separate-stderr maro-msg -V
	[ "$status" -eq 0 ]
	assert_output --regexp '^maro-msg [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$'
	run maro-msg --version
	assert_success
}
