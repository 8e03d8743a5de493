#!/usr/bin/env bats
# backends: dir redis
# check: early (a long one)
# Hostile and broken input: oversized messages, garbage on the wire and in
# the registry, peers that stall or flood, bad events and names, one
# message_id ten thousand times.  Nothing may crash, hang past its bound, or
# lose an honest peer's message.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE MARO_TRANSPORT
	STOPPED=
}
teardown() {
	# a stopped process cannot act on the TERM of kill_bg
	[ -z "$STOPPED" ] || kill -CONT "$STOPPED" 2>/dev/null || :
	default_teardown
}

backend() { [ "${MARO_TEST_BACKEND:-dir}" = "$1" ]; }
redis_port() { cat "$BATS_FILE_TMPDIR/redis/redis.port"; }
rcli() { redis-cli -h 127.0.0.1 -p "$(redis_port)" "$@"; }
hostile() { timeout 20 "$MARO_BIN/../tests/unit-tests" hostile "$1"; }
endpoint_of() { maro-peers -f json | jq -r --arg n "$1" 'select(.name == $n) | .endpoint'; }

# notes TAG FROM TO: notifications tagged TAG with payloads FROM..TO, as CBOR
notes() {
	seq "$2" "$3" | sed "s/.*/{\"tag\":\"$1\",\"session_type\":\"notification\",\"payload\":&}/" |
		maro-msg -i json
}

# sink NAME [OPTION...]: a receiver writing payloads to NAME.out, once live.
# RECV is its bg pid.
sink() {
	local name=$1
	shift
	bg 60 maro-recv -n "$name" -f payload "$@" > "$name.out" 2> "$name.err"
	RECV=$BG_PID
	wait_until 10 is_live "$name"
}

# The endpoint of the private reply inbox of a blocking sender (~...).
private_endpoint() {
	if backend redis; then
		local key
		key=$(rcli --scan --pattern "maro:$MARO_GROUP:m:~*" | head -n 1)
		[ -n "$key" ] && rcli hget "$key" endpoint
	else
		sed -n 's/^endpoint=//p' "$BATS_TEST_TMPDIR/registry/$MARO_GROUP"/~*.entry 2> /dev/null | head -n 1
	fi
}
has_private() { [ -n "$(private_endpoint)" ]; }

@test "oversized message: refused at the limit with the offset, exit 65; smaller ones before it delivered" {
	sink sink -C 1
	maro-msg -t ok -d 1 --notification -p sink > in.cbor
	good=$(wc -c < in.cbor)
	maro-msg -t big --notification -p sink --json "\"$(head -c 3000 /dev/zero | tr '\0' a)\"" >> in.cbor
	run timeout 20 maro-send --max-size 1000 -W 10s < in.cbor
	assert_failure 65
	assert_output --regexp "^maro-send: malformed input at byte offset [0-9]+: .*exceeds the item size limit"
	off=$(sed -n 's/.*byte offset \([0-9]*\).*/\1/p' <<< "$output")
	[ "$off" -ge "$good" ]
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat sink.out)" = 1 ]
}

@test "a message over the default 16 MiB: refused by maro-send and maro-msg, exit 65" {
	# {tag: "x", destination: "sink", session_type: "notification", payload: h'00...'}
	{
		printf '\xa4\x63tag\x61x\x6bdestination\x64sink\x6csession_type\x6cnotification'
		printf '\x67payload\x5a\x01\x00\x00\x01'
		head -c 16777217 /dev/zero
	} > huge.cbor
	run timeout 20 maro-send -W 2s < huge.cbor
	assert_failure 65
	assert_output --partial "exceeds the item size limit"
	run timeout 20 maro-msg --check < huge.cbor
	assert_failure 65
	assert_output --partial "exceeds the item size limit"
}

@test "a receiver with --max-size refuses a bigger message; the sender times out with 124, the receiver serves on" {
	sink sink -C 1 --max-size 1000
	maro-msg -t big --notification -p sink --json "\"$(head -c 3000 /dev/zero | tr '\0' a)\"" > big.cbor
	run timeout 20 maro-send -W 2s < big.cbor
	assert_failure 124
	assert_output --partial "not delivered to 'sink'"
	run timeout 20 maro-send -p sink -t ok -d small --notification -W 10s
	assert_success
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat sink.out)" = small ]
}

@test "MARO_MAX_SIZE and MARO_MAX_DEPTH bound every tool: input over them is 65, a receiver leaves such a message unacknowledged; the flag beats the variable; maro-scatter --max-size" {
	MARO_MAX_SIZE=1000 sink sink -C 1
	MARO_MAX_DEPTH=5 sink deep -C 1
	maro-msg -t big --notification -p sink --json "\"$(head -c 3000 /dev/zero | tr '\0' a)\"" > big.cbor
	maro-msg -t deep --notification -p deep --json '[[[[[[[[[[1]]]]]]]]]]' > deep.cbor
	# from standard input: refused at the item, its offset named
	run -65 env MARO_MAX_SIZE=1000 maro-send -W 2s < big.cbor
	assert_output --regexp "^maro-send: malformed input at byte offset [0-9]+: .*exceeds the item size limit"
	run -65 env MARO_MAX_DEPTH=5 maro-send -W 2s < deep.cbor
	assert_output --partial "nesting deeper than the limit"
	run -65 maro-scatter --max-size 1000 -W 2s < big.cbor
	assert_output --partial "exceeds the item size limit"
	# by the receivers: not taken, so never acknowledged (the flag reads
	# it, MARO_MAX_SIZE notwithstanding)
	run -124 env MARO_MAX_SIZE=1000 maro-send --max-size 100000 -W 1s < big.cbor
	assert_output --partial "not delivered to 'sink'"
	run -124 maro-send -W 1s < deep.cbor
	assert_output --partial "not delivered to 'deep'"
	# and they serve on
	run -0 maro-send -p sink -p deep -t ok -d small --notification -W 10s
	wait_until 10 not_live sink
	wait_until 10 not_live deep
	[ "$(cat sink.out deep.out)" = "$(printf 'small\nsmall')" ]
}

@test "garbage frames from many hostile peers during an honest stream: every honest message, in order" {
	sink sink -C 2000
	ep=$(endpoint_of sink)
	[ -n "$ep" ]
	# the attack itself goes through
	run hostile "$ep"
	assert_success
	assert_output "hostile: sent"
	notes n 1 2000 > in.cbor
	bg 60 maro-send -p sink -W 50s < in.cbor
	send=$BG_PID
	for i in 1 2 3 4; do
		bg 30 "$MARO_BIN/../tests/unit-tests" hostile "$ep"
	done
	wait_exit "$send" 55
	[ "$status" -eq 0 ]
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	seq 1 2000 | cmp - sink.out
	# and the receiver said what it dropped
	grep -E "^maro-recv: dropped [0-9]+ malformed or oversized frames? or messages?, unacknowledged" sink.err
}

@test "connections that stall mid-handshake, announce a huge frame, or say nothing do not block others" {
	export MARO_TRANSPORT=tcp MARO_INSECURE_TCP=1
	sink sink -C 1
	ep=$(endpoint_of sink)
	[[ "$ep" =~ ^tcp://([0-9.]+):([0-9]+)$ ]]
	host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
	# a ZMTP 3 greeting cut short
	exec 7<> "/dev/tcp/$host/$port"
	printf '\xff\0\0\0\0\0\0\0\1\x7f\3' >&7
	# a full greeting, then a long frame that never comes
	exec 8<> "/dev/tcp/$host/$port"
	printf '\xff\0\0\0\0\0\0\0\1\x7f\3\0NULL' >&8
	head -c 48 /dev/zero >&8
	printf '\x06\x7f\xff\xff\xff\xff\xff\xff\xff' >&8
	# and a hundred connections that say nothing
	fds=()
	for i in $(seq 100); do
		exec {fd}<> "/dev/tcp/$host/$port"
		fds+=("$fd")
	done
	run timeout 20 maro-send -p sink -t ok -d honest --notification -W 10s
	exec 7>&- 8>&-
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	assert_success
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat sink.out)" = honest ]
}

@test "garbage at a blocking sender's private reply inbox and at maro-wait-event: the reply and the event still arrive" {
	sink worker.1 -C 1 -f json
	bg 60 maro-send -n master -p worker.1 -t job -d x -W 30s -f payload > reply
	master=$BG_PID
	wait_until 10 has_lines worker.1.out 1
	wait_until 10 has_private
	run hostile "$(private_endpoint)"
	assert_success
	maro-msg reply -i json -d done < worker.1.out > reply.cbor
	run timeout 20 maro-send -W 10s < reply.cbor
	assert_success
	wait_exit "$master" 20
	[ "$status" -eq 0 ]
	[ "$(cat reply)" = done ]

	bg 30 maro-wait-event -n waiter -W 20s -f payload 'w:ev:2' > event.out
	waiter=$BG_PID
	wait_until 10 is_live waiter
	run hostile "$(endpoint_of waiter)"
	assert_success
	# unconsumed messages stay unacknowledged: both senders wait for the event
	bg 30 maro-send -n w.1 -p waiter -t ev -d one --notification -W 20s
	one=$BG_PID
	is_live waiter
	bg 30 maro-send -n w.2 -p waiter -t ev -d two --notification -W 20s
	two=$BG_PID
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	wait_exit "$one" 20
	[ "$status" -eq 0 ]
	wait_exit "$two" 20
	[ "$status" -eq 0 ]
	sort event.out | cmp - <(printf 'one\ntwo\n')
}

@test "a receiver that stops reading: the sender gives up at -W with 124; after SIGCONT it drains" {
	MARO_TTL=30s sink sink -C 50 --tag b
	pid=$(child_pid "$RECV" maro-recv)
	kill -STOP "$pid"
	STOPPED=$pid
	notes a 1 50 > a.cbor
	start=$SECONDS
	run timeout 20 maro-send -p sink -W 2s < a.cbor
	assert_failure 124
	assert_output --partial "not delivered to 'sink'"
	assert_output --partial "timed out: 50 not delivered"
	[ $((SECONDS - start)) -le 6 ]
	notes b 1 50 > b.cbor
	bg 60 maro-send -p sink -W 30s < b.cbor
	send=$BG_PID
	kill -CONT "$pid"
	STOPPED=
	wait_exit "$send" 35
	[ "$status" -eq 0 ]
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	seq 1 50 | cmp - sink.out
}

@test "a flood from one sender: another sender's message gets through within 5 s" {
	sink sink
	notes flood 1 2000 > chunk.cbor
	bg 60 sh -c 'while :; do cat chunk.cbor || exit; done | maro-send -p sink -W 55s'
	flood=$BG_PID
	wait_until 20 has_lines sink.out 10000
	start=$SECONDS
	run timeout 20 maro-send -n honest -p sink -t honest -d 'hello from the other one' --notification -W 10s
	assert_success
	took=$((SECONDS - start))
	echo "# honest message through a flood in ${took}s" >&3
	[ "$took" -le 5 ]
	# the flood was still going
	kill -0 "$flood"
	kill_bg
	[ "$(grep -c '^hello from the other one$' sink.out)" -eq 1 ]
	[ "$(grep -c '^[0-9]*$' sink.out)" -ge 10000 ]
}

# corrupt_entry NAME FIELD VALUE: set one field of NAME's live entry.
corrupt_entry() {
	if backend redis; then
		rcli hset "maro:$MARO_GROUP:m:$1" "$2" "$3" > /dev/null
	else
		local f="$BATS_TEST_TMPDIR/registry/$MARO_GROUP/$1.entry"
		grep -v "^$2=" saved.entry > "$f.new"
		printf '%s=%s\n' "$2" "$3" >> "$f.new"
		mv "$f.new" "$f"
	fi
}

restore_entry() {
	if backend redis; then
		rcli del "maro:$MARO_GROUP:m:$1" > /dev/null
		local kv
		mapfile -t kv < saved.entry
		rcli hset "maro:$MARO_GROUP:m:$1" "${kv[@]}" > /dev/null
		rcli pexpire "maro:$MARO_GROUP:m:$1" 30000 > /dev/null
	else
		cp saved.entry "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/$1.entry"
	fi
}

@test "registry entries with garbage fields are skipped: maro-peers lists nothing, maro-send waits and times out" {
	# a live owner that cannot heartbeat over our edits: stopped, with a long TTL
	MARO_TTL=30s sink sink -C 1
	pid=$(child_pid "$RECV" maro-recv)
	kill -STOP "$pid"
	STOPPED=$pid
	if backend redis; then
		rcli --raw hgetall "maro:$MARO_GROUP:m:sink" > saved.entry
	else
		cp "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/sink.entry" saved.entry
	fi
	# the edits themselves are sound: the entry as it was is live
	restore_entry sink
	is_live sink
	for garbage in 'endpoint|not-an-endpoint' 'endpoint|tcp://*:1' 'endpoint|tcp://127.0.0.1:99999' \
		'endpoint|http://127.0.0.1:80' 'endpoint|tcp://127.0.0.1:1 ; rm -rf /' 'pid|-5' 'pid|12ab' \
		'name|other' 'name|../../etc/passwd' 'ttl|0' 'hb|yesterday' "host|$(printf 'a\tb')" \
		"type|$(printf '\xff\xfe')" "info|$(head -c 5000 /dev/zero | tr '\0' x)"; do
		restore_entry sink
		corrupt_entry sink "${garbage%%|*}" "${garbage#*|}"
		run timeout 10 maro-peers -f json
		assert_success
		refute_output --partial '"sink"'
		run timeout 10 maro-send -p sink -t x -d y --notification -W 300ms
		assert_failure 124
		assert_output --partial "not delivered to 'sink'"
	done
	restore_entry sink
	kill -CONT "$pid"
	STOPPED=
	run timeout 20 maro-send -p sink -t ok -d honest --notification -W 10s
	assert_success
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat sink.out)" = honest ]
}

@test "registry files and keys that are not entries at all: skipped, never trusted" {
	if backend redis; then
		rcli set "maro:$MARO_GROUP:m:evil" garbage > /dev/null
		rcli zadd "maro:$MARO_GROUP:members" 99999999999999 evil 99999999999999 "$(printf 'x\xff')" > /dev/null
		rcli hset "maro:$MARO_GROUP:m:odd" name odd endpoint 'tcp://127.0.0.1:9' > /dev/null
		rcli pexpire "maro:$MARO_GROUP:m:odd" 30000 > /dev/null
		rcli zadd "maro:$MARO_GROUP:members" 99999999999999 odd > /dev/null
	else
		d="$BATS_TEST_TMPDIR/registry/$MARO_GROUP"
		mkdir -p "$d"
		head -c 3000 /dev/urandom > "$d/evil.entry"
		: > "$d/empty.entry"
		head -c 10000 /dev/zero | tr '\0' 'x' > "$d/big.entry"
		ln -s /etc/passwd "$d/link.entry"
		mkdir "$d/dir.entry"
		printf 'name=odd\nendpoint=tcp://127.0.0.1:9\n' > "$d/odd.entry"
	fi
	run --separate-stderr timeout 10 maro-peers -f json
	assert_success
	assert_output ""
	# none of them is a member, and that is said (maro-peers(1))
	[[ $stderr == "maro-peers: no live members in group '$MARO_GROUP' in "* ]]
	for name in evil odd empty big link dir; do
		run timeout 10 maro-send -p "$name" -t x -d y --notification -W 300ms
		assert_failure 124
		assert_output --partial "not delivered to '$name'"
	done
	# a real receiver takes over a name that holds garbage
	sink evil -C 1
	run timeout 20 maro-send -p evil -t ok -d honest --notification -W 10s
	assert_success
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat evil.out)" = honest ]
}

@test "malformed event expressions: exit 2 with the column, before joining the group" {
	while IFS='|' read -r expr col msg; do
		run timeout 10 maro-wait-event -n waiter -W 1s "$expr"
		assert_failure 2
		assert_output --partial "maro-wait-event: invalid event at column $col: $msg"
	done <<- 'EOF'
	|1|expected a unit event
	worker|7|expected ':' after the source
	worker:update|14|expected ':' after the tag
	worker:update:0|15|the amount must be at least 1
	worker:update:101%|18|a percentage is at most 100%
	worker:update:x|15|expected an amount
	a:b:1 AND|10|expected a unit event
	(a:b:1|1|unclosed '('
	a:b:1)|6|unexpected ')'
	a:b:1 OR OR c:d:1|12|expected ':' after the source
	a:b:1 c:d:1|7|unexpected 'c'
	((("a:b:1", "AND")|18|a tuple combines at least two events
	(("a:b:1", "c:d:1"), "OR", "e:f:1")|19|expected ',' in a tuple
	EOF
	run timeout 10 maro-wait-event -n waiter -W 1s "$(printf 'caf\xe9:b:1')"
	assert_failure 2
	assert_output --partial "invalid event at column 4: "
	# 65 units
	expr=$(for i in $(seq 65); do printf 'w%d:t:1 OR ' "$i"; done)w:t:1
	run timeout 10 maro-wait-event -n waiter -W 1s "$expr"
	assert_failure 2
	assert_output --partial "more than 64 unit events"
	# deep nesting, infix and tuples, up to what one argument can hold: no stack overflow
	for n in 300 131000; do
		expr=$(head -c "$n" /dev/zero | tr '\0' '(')
		run timeout 10 maro-wait-event -n waiter -W 1s "${expr}a:b:1"
		assert_failure 2
		assert_output --partial "nested deeper than"
		run timeout 10 maro-wait-event -n waiter -W 1s "${expr}\"a:b:1\""
		assert_failure 2
		assert_output --partial "nested deeper than"
	done
	# nothing joined the group
	run --separate-stderr maro-peers -f json
	assert_output ""
}

@test "non-UTF-8 and over-long names, groups and destinations: exit 2 on the command line, 65 in a message" {
	bad=$(printf 'w\xff')
	long=$(head -c 129 /dev/zero | tr '\0' w)
	for args in "maro-recv -n $bad" "maro-recv -n $long" "maro-recv -g $bad -n a" \
		"maro-send -p $bad -t x -d y" "maro-send -p $long -t x -d y" "maro-send -n $bad -p a -t x -d y" \
		"maro-wait-event -n $bad a:b:1" "maro-wait-event -n $long a:b:1" \
		"maro-peers -g $bad" "maro-peers -P $bad" "maro-send -P $bad -t x -d y" "maro-msg -t $bad -d y"; do
		run timeout 10 $args
		[ "$status" -eq 2 ] || { echo "exit $status: $args" >&2; false; }
		assert_output --regexp "invalid|not valid UTF-8"
	done
	# a 128-byte name is fine
	ok=$(head -c 128 /dev/zero | tr '\0' w)
	run timeout 10 maro-send -p "$ok" -t x -d y --notification -W 300ms
	assert_failure 124
	# a message whose destination is not UTF-8: {tag: "t", destination: "w\xff"}
	printf '\xa2\x63tag\x61t\x6bdestination\x62w\xff' > bad.cbor
	run timeout 10 maro-send -W 1s < bad.cbor
	assert_failure 65
	assert_output --partial "byte offset 19: 'destination' must be a UTF-8 text string"
	printf '{"tag":"t","session_type":"notification","destination":"%s"}\n' "$long" | maro-msg -i json > long.cbor
	run timeout 10 maro-send -W 1s < long.cbor
	assert_failure 65
	assert_output --partial "byte offset 0: destination longer than 128 bytes"
}

@test "10000 messages with one message_id: the sender completes, the receiver hands on exactly one" {
	sink sink
	id=0b7e8c1a-3f0e-4a52-9d7c-1f2e3d4c5b6a
	seq 1 10000 | sed "s/.*/{\"tag\":\"d\",\"session_type\":\"notification\",\"message_id\":\"$id\",\"payload\":&}/" |
		maro-msg -i json > dup.cbor
	run timeout 60 maro-send -p sink -W 50s < dup.cbor
	assert_success
	kill -TERM "$(child_pid "$RECV" maro-recv)"
	wait_exit "$RECV" 10
	[ "$status" -eq 143 ]
	[ "$(cat sink.out)" = 1 ]
}

@test "an id handed on 20000 messages before is still a duplicate: the filter grows without forgetting" {
	# the filter starts with room for 4096 ids and doubles up to 131072
	sink sink
	id=3c9d2e1f-4a5b-4c6d-8e7f-901a2b3c4d5e
	{
		printf '{"tag":"d","session_type":"notification","message_id":"%s","payload":"first"}\n' "$id"
		seq 1 20000 | sed 's/.*/{"tag":"d","session_type":"notification","payload":&}/'
		printf '{"tag":"d","session_type":"notification","message_id":"%s","payload":"again"}\n' "$id"
	} | maro-msg -i json > grow.cbor
	run timeout 60 maro-send -p sink -W 50s < grow.cbor
	assert_success
	kill -TERM "$(child_pid "$RECV" maro-recv)"
	wait_exit "$RECV" 10
	[ "$status" -eq 143 ]
	[ "$(wc -l < sink.out)" -eq 20001 ]
	[ "$(head -n 1 sink.out)" = first ]
	run grep -c again sink.out
	[ "$output" = 0 ]
}

@test "a peer that greets with ZMTP 1.0 is refused at once (libzmq 4.3 can abort on such bytes)" {
	sink sink -C 1
	ep=$(endpoint_of sink)
	[ -n "$ep" ]
	run timeout 20 "$MARO_BIN/../tests/unit-tests" zmtp1 "$ep"
	assert_success
	assert_output closed
	# the inbox serves on
	run timeout 20 maro-send -p sink -t ok -d after --notification -W 10s
	assert_success
	wait_exit "$RECV" 10
	[ "$status" -eq 0 ]
	[ "$(cat sink.out)" = after ]
}

# evil_sentinel MODE [named]: tests/tools/fake-sentinel answering with
# terminal controls, on a free port for at most 30 s; its port in $port
evil_sentinel() {
	command -v python3 > /dev/null || skip "python3 is not installed (the fake sentinel)"
	bg 30 python3 "$MARO_TOP/tests/tools/fake-sentinel" "$1" fake.port "${@:2}"
	wait_until 10 test -s fake.port
	port=$(cat fake.port)
}

# no_controls TEXT: TEXT has no byte a terminal acts on but its newlines
no_controls() { ! printf '%s' "$1" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f\x80-\xff]'; }

@test "terminal controls a hostile sentinel or server sends are escaped in every diagnostic" {
	local evil='\e[31mRED\e[0m\e]0;title\a\rfake\x9b2J evil'
	evil_sentinel evil
	run -69 --separate-stderr timeout 10 maro-peers -W 2s --registry "redis+sentinel://127.0.0.1:$port/mymaster"
	no_controls "$stderr"
	[[ "$stderr" == *"(sentinel at 127.0.0.1:$port: ERR $evil)" ]]
	# the server a sentinel names, and a redis:// server: their errors too
	kill_bg
	rm fake.port
	evil_sentinel evil named
	run -69 --separate-stderr timeout 10 maro-send -p x -W 2s --registry "redis+sentinel://127.0.0.1:$port/mymaster" < /dev/null
	no_controls "$stderr"
	[[ "$stderr" == *"(redis at 127.0.0.1:$port: ERR $evil)" ]]
	run -69 --separate-stderr timeout 10 maro-recv -n x -W 2s --registry "redis://127.0.0.1:$port/0"
	no_controls "$stderr"
	[[ "$stderr" == *"redis at 127.0.0.1:$port: ERR $evil" ]]
	# a host name a sentinel gives
	kill_bg
	rm fake.port
	evil_sentinel evilhost
	run -69 --separate-stderr timeout 10 maro-peers -W 2s --registry "redis+sentinel://127.0.0.1:$port/mymaster"
	no_controls "$stderr"
	[[ "$stderr" == *"cannot connect to redis at h${evil% evil}:6379"* ]]
}
