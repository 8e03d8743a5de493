#!/usr/bin/env bats
# backends: dir redis
# Security: the group key (CURVE) keeps out whoever lacks it, and Redis
# credentials are never shown.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE
	maro-keygen group.key
}
teardown() { default_teardown; }

backend() { [ "${MARO_TEST_BACKEND:-dir}" = "$1" ]; }
redis_port() { cat "$BATS_FILE_TMPDIR/redis/redis.port"; }

# keyed_recv NAME COUNT [OPTION]: a receiver with the group key, once it is
# live; payloads in NAME.out, stderr in NAME.err.  RECV is its bg pid.
keyed_recv() {
	bg 60 maro-recv --keyfile group.key -n "$1" -C "$2" -W 50s -f payload ${3:+"$3"} > "$1.out" 2> "$1.err"
	RECV=$BG_PID
	wait_until 10 is_live "$1"
}

@test "maro-keygen: a 0600 file with a key pair, never overwritten" {
	[ "$(stat -c %a group.key)" = 600 ]
	[ "$(grep -cE '^(public|secret) = .{40}$' group.key)" -eq 2 ]
	cp group.key before
	run maro-keygen group.key
	assert_failure 2
	assert_output "maro-keygen: cannot create 'group.key': File exists"
	cmp group.key before
	maro-keygen other.key
	run ! cmp -s group.key other.key
	run maro-keygen
	assert_failure 2
	run maro-keygen a b
	assert_failure 2
	run maro-keygen "$BATS_TEST_TMPDIR/no/such/dir/k"
	assert_failure 70
	assert_output --partial 'No such file or directory'
}

@test "a key file others may read, a broken one or a missing one: exit 2, the key never shown" {
	chmod 640 group.key
	run maro-recv --keyfile group.key -n w -C 1 -W 1s
	assert_failure 2
	assert_output "maro-recv: key file 'group.key' is accessible by others (mode 640): chmod 600 it"
	MARO_KEYFILE=group.key run maro-send --notification -t x -d 1 -p w -W 1s
	assert_failure 2
	assert_output --partial "is accessible by others"
	chmod 600 group.key
	secret=$(sed -n 's/^secret = //p' group.key)
	maro-keygen other.key
	{ grep '^public' other.key; grep '^secret' group.key; } > bad.key
	chmod 600 bad.key
	run maro-send --keyfile bad.key --notification -t x -d 1 -p w -W 1s
	assert_failure 2
	assert_output --partial "the public key does not belong to the secret key"
	refute_output --partial "$secret"
	printf 'hello\n' > junk.key
	chmod 600 junk.key
	run maro-recv --keyfile junk.key -n w -C 1 -W 1s
	assert_failure 2
	assert_output --partial "not a maro key file"
	run maro-recv --keyfile missing.key -n w -C 1 -W 1s
	assert_failure 2
	assert_output "maro-recv: cannot open key file 'missing.key': No such file or directory"
}

@test "with the key messages go through; without it a sender cannot deliver, and the receiver says so and keeps serving" {
	keyed_recv w 2
	run timeout 20 maro-send --keyfile group.key --notification -t x -d first -p w -W 10s
	assert_success
	run timeout 20 maro-send --notification -t x -d intruder -p w -W 2s
	assert_failure 69
	assert_output --partial "not delivered to 'w'"
	maro-keygen another.key
	run timeout 20 maro-send --keyfile another.key --notification -t x -d other-group -p w -W 2s
	assert_failure 69
	# said at its next heartbeat
	wait_until 10 grep -q "maro-recv: rejected [0-9]* connections\? without the group key" w.err
	MARO_KEYFILE=group.key run timeout 20 maro-send --notification -t x -d second -p w -W 10s
	assert_success
	wait_exit "$RECV" 20
	[ "$status" -eq 0 ]
	[ "$(cat w.out)" = "$(printf 'first\nsecond')" ]
}

# refused_fast KEYOPT...: a task for w, -W 20s, refused for want of the key:
# exit 69 at once (3 s: a machine busy with other suites, not -W's 20), the
# peer and the cause named once, on stderr
refused_fast() {
	local t0 ms
	t0=$(date +%s%N)
	run --separate-stderr timeout 30 maro-send "$@" -t x -d y -p w -W 20s
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$status" -eq 69 ]
	[ -z "$output" ]
	[ "$ms" -lt 3000 ] || { echo "took $ms ms" >&2; return 1; }
	[ "$(grep -c "maro-send: 'w' refused our connection for want of the group key" <<< "$stderr")" -eq 1 ]
}

@test "a key mismatch is named on the sender's stderr within a second, even without -v: exit 69, not -W" {
	maro-keygen another.key
	# the receiver has the key, the sender none; the sender another group's
	keyed_recv w 1
	refused_fast
	[[ "$stderr" == *"it has a group key and we have none (MARO_KEYFILE)"* ]]
	refused_fast --keyfile another.key
	[[ "$stderr" == *"it has no group key, or another group's"* ]]
	# blocking or not, through the shared outbox: maro-bcast and maro-scatter too
	run -69 --separate-stderr timeout 30 maro-bcast -t x -d y -P w -W 20s
	[[ "$stderr" == *"maro-bcast: 'w' refused our connection for want of the group key"* ]]
	run -69 --separate-stderr timeout 30 maro-scatter -t x -P w -W 20s <<< 1
	[[ "$stderr" == *"maro-scatter: 'w' refused our connection for want of the group key"* ]]
	kill "$RECV"
	wait_exit "$RECV" 10
	wait_until 10 not_live w
	# the other way: the sender has a key, the receiver none
	bg 60 maro-recv -n w -C 1 -W 50s > /dev/null 2>&1
	wait_until 10 is_live w
	refused_fast --keyfile group.key
	[[ "$stderr" == *"it has no group key"* ]]
}

@test "a client that knows the public key but not the secret is refused by the receiver's ZAP handler" {
	keyed_recv w 1
	ep=$(maro-peers -f json | jq -r 'select(.name == "w") | .endpoint')
	pub=$(sed -n 's/^public *= *//p' group.key)
	[ "${#pub}" -eq 40 ]
	run "$MARO_BIN/../tests/unit-tests" outsider "$ep" "$pub"
	assert_success
	assert_output refused
	wait_until 5 grep -q "maro-recv: rejected [0-9]* connections\? without the group key" w.err
	[ ! -s w.out ]
	# the same client with the group's own pair is a member: its message is taken
	sec=$(sed -n 's/^secret *= *//p' group.key)
	run "$MARO_BIN/../tests/unit-tests" outsider "$ep" "$pub" "$pub" "$sec"
	assert_success
	assert_output acked
	wait_exit "$RECV" 20
	[ "$status" -eq 0 ]
	[ "$(cat w.out)" = intruder ]
}

# holds NAME PID: the registry's entry of NAME is PID's
holds() { maro-peers -f json | jq -e --arg n "$1" --argjson p "$2" 'select(.name == $n) | .pid == $p' > /dev/null; }

@test "a name registered by a process without the key receives nothing" {
	# the intruder takes the name over; keyed senders cannot hand it anything
	bg 30 maro-recv -n w --takeover -C 1 -W 20s -f payload > intruder.out 2> intruder.err
	intruder=$BG_PID
	wait_until 10 is_live w
	run timeout 20 maro-send --keyfile group.key --notification -t x -d for-members-only -p w -W 2s
	assert_failure 69
	[ ! -s intruder.out ]
	# the member takes its name back: the next keyed message is its, once
	# the registry names it (the intruder's entry was live all along)
	keyed_recv w 1 --takeover
	wait_until 10 holds w "$(child_pid "$RECV" maro-recv)"
	run timeout 20 maro-send --keyfile group.key --notification -t x -d for-members-only -p w -W 10s
	assert_success
	wait_exit "$RECV" 20
	[ "$(cat w.out)" = for-members-only ]
	[ ! -s intruder.out ]
}

@test "on the wire: plaintext without the key, none with it" {
	command -v strace > /dev/null || skip "strace is not installed"
	export MARO_TRANSPORT=tcp MARO_INSECURE_TCP=1
	# LeakSanitizer cannot run under ptrace (the instrumented build)
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
	keyed_recv w 1
	bg 60 maro-recv -n open -C 1 -W 50s -f payload > open.out
	open=$BG_PID
	wait_until 10 is_live open
	run strace -f -qq -s 65536 -e trace=network,write -o plain.trace \
		maro-send --notification -t x -d MARKER-plain-1234 -p open -W 10s
	assert_success
	grep -q 'MARKER-plain-1234' plain.trace	# the check can see plaintext
	run strace -f -qq -s 65536 -e trace=network,write -o curve.trace \
		maro-send --keyfile group.key --notification -t x -d MARKER-curve-5678 -p w -W 10s
	assert_success
	grep -q 'sendto\|write' curve.trace
	run ! grep -q 'MARKER-curve' curve.trace
	wait_exit "$RECV" 20
	[ "$(cat w.out)" = MARKER-curve-5678 ]
}

@test "maro-dist passes the key file to its handlers" {
	bg 60 maro-dist -n w --keyfile group.key --raw \
		--on 'boss:ask:1' 'maro-send --notification -t answer -d "$MARO_KEYFILE" -p boss -W 10s > /dev/null; echo done'
	wait_until 10 is_live w
	keyed_recv boss 1
	run timeout 20 maro-send --keyfile group.key -n boss -p w -t ask -d go -W 10s -f payload
	assert_success
	assert_output done
	wait_exit "$RECV" 20
	[ "$(cat boss.out)" = group.key ]
}

@test "redis: the password works from the URL and the environment, is never shown, never in a child's arguments" {
	backend redis || skip "redis backend only"
	port=$(redis_port)
	user="sec-$$"
	redis-cli -p "$port" ACL SETUSER "$user" on '>pw-s3cret' '~*' '+@all' > /dev/null
	url="redis://$user:pw-s3cret@127.0.0.1:$port/0"
	bg 60 maro-dist --registry "$url" -n w --raw --on 'boss:ask:1' 'tr "\0" " " < /proc/$$/cmdline; echo'
	MARO_REGISTRY=$url wait_until 10 is_live w
	MARO_REDIS_PASSWORD=wrong run timeout 20 maro-send -n boss --registry "redis://$user:@127.0.0.1:$port/0" \
		-p w -t ask -d x -W 10s -f payload
	assert_failure 69
	assert_output "maro-send: redis authentication failed at 127.0.0.1:$port"
	refute_output --partial pw-s3cret
	MARO_REDIS_PASSWORD=pw-s3cret run timeout 20 maro-send -n boss --registry "redis://$user:@127.0.0.1:$port/0" \
		-p w -t ask -d x -W 10s -f payload
	assert_success
	assert_output --partial 'sh -c'
	refute_output --partial pw-s3cret
	run timeout 20 maro-recv --registry "redis://$user:wrong@127.0.0.1:$port/0" -n r -C 1 -W 2s
	assert_failure 69
	assert_output "maro-recv: redis authentication failed at 127.0.0.1:$port"
	run maro-send --registry "redis://$user:pw-s3cret@127.0.0.1:$port/0" --no-such-flag
	assert_failure 2
	refute_output --partial pw-s3cret
	redis-cli -p "$port" ACL DELUSER "$user" > /dev/null
}

@test "dir: MARO_TRANSPORT=tcp without the group key is refused, exit 2; with the key its inboxes are loopback TCP behind CURVE" {
	backend dir || skip "dir: only (Redis groups are on TCP anyway)"
	export MARO_TRANSPORT=tcp
	unset MARO_INSECURE_TCP
	run -2 --separate-stderr maro-recv -n w -C 1 -W 5s
	assert_equal "$stderr" "maro-recv: MARO_TRANSPORT=tcp on a dir: registry lets every local user deliver to the group: refused without a group key (MARO_KEYFILE), unless MARO_INSECURE_TCP=1"
	run -2 maro-send -p w -t t -d x --notification -W 2s
	keyed_recv w 1
	run -0 maro-peers -f json
	[[ "$(jq -r .endpoint <<< "$output")" == tcp://127.0.0.1:* ]]
	run -0 timeout 20 maro-send --keyfile group.key -p w -t t -d over-tcp --notification -W 10s
	wait_exit "$RECV" 20
	[ "$(cat w.out)" = over-tcp ]
	# asked for in so many words: served, open to every local user
	MARO_INSECURE_TCP=1 bg 60 maro-recv -n open -C 1 -W 50s -f payload > open.out
	local open=$BG_PID
	wait_until 10 is_live open
	run -0 timeout 20 env MARO_INSECURE_TCP=1 maro-send -p open -t t -d plain --notification -W 10s
	wait_exit "$open" 20
	[ "$(cat open.out)" = plain ]
}

@test "a registry URL whose password has %00 or a %-escape that is not one is refused, exit 2, the password never shown" {
	local u
	for u in 'redis://:pw-s3cret%00tail@127.0.0.1:1/0' 'redis://:pw-s3cret%zz@127.0.0.1:1/0' \
		'redis://us%3:pw-s3cret@127.0.0.1:1/0' 'redis+sentinel://:pw-s3cret%@127.0.0.1:1/m'; do
		run -2 --separate-stderr maro-peers --registry "$u"
		[[ "$stderr" == "maro-peers: invalid "*" URL: a %-escape in its user or password is not %XX with two hex digits, or is %00" ]]
		[[ "$stderr" != *s3cret* ]]
	done
}

# not_traced PID: no tracer holds PID
not_traced() { [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status")" = 0 ]; }

@test "an idle member with the group key sleeps: its key's thread wakes only for a handshake, not ten times a second" {
	command -v strace > /dev/null || skip "strace is not installed"
	keyed_recv idle 1
	pid=$(child_pid "$RECV" maro-recv)
	# 3 s of every thread's polls: the main loop's, two a heartbeat (1.25 to
	# 1.67 s apart), where a 100 ms timer of the key's thread made 30 more
	timeout 10 strace -f -c -e trace=poll,ppoll,epoll_wait -p "$pid" -o polls.txt &
	strace_pid=$!
	sleep 3
	kill -INT "$strace_pid"
	wait "$strace_pid" || :
	# detached: the member runs untraced again
	wait_until 5 not_traced "$pid"
	polls=$(awk '$NF == "poll" { print $4 }' polls.txt)
	[ "${polls:-0}" -lt 15 ]
	# and a sender with the key still gets through (the thread answers at once)
	run -0 maro-send --keyfile group.key -p idle -t x -d hello --notification -W 10s
	wait_exit "$RECV" 10
	[ "$(cat idle.out)" = hello ]
}
