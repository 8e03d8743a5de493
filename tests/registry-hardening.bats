#!/usr/bin/env bats
# backends: dir redis
# The registry against a hostile local user and a careless one: no secret
# in a message, no live name taken over, no directory another user owns,
# no silent fall-back to a transport anyone can reach.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	default_teardown
	[ -z "${shared:-}" ] || rm -rf "$shared"
}

@test "a mistyped registry URL never shows its password, whatever its shape" {
	local u
	for u in 'redis:/:S3cretPW@127.0.0.1:6411' 'redis//:S3cretPW@h:1' 'S3cretPW@h' \
		'redis:/user:S3cretPW@h' 'http://a:S3cretPW@x@y' 'redis:S3cretPW@h'; do
		run -2 --separate-stderr maro-peers --registry "$u"
		assert_output ''
		[[ "$stderr" == "maro-peers: invalid registry '"*"***@"* ]]
		[[ "$stderr" != *S3cretPW* ]]
	done
}

@test "a live name is not taken over from another PID namespace (a pid probe there says 'dead')" {
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "unshare --pid needs root (and a kernel that allows it)"
	bg 30 maro-recv -n svc.1 -f payload > first.out
	local first=$BG_PID
	wait_until 10 is_live svc.1
	run -69 --separate-stderr timeout 10 unshare --pid --fork --mount-proc maro-recv -n svc.1 -W 2s
	[[ "$stderr" == *"name 'svc.1' is held by pid "* ]]
	# the first still holds it and serves
	run -0 timeout 10 maro-send -p svc.1 -t t -d still-mine --notification -W 5s
	wait_until 10 grep -qx still-mine first.out
	kill -0 "$first"
}

@test "a holder killed by SIGKILL: dir: frees the name at once (its lock), Redis when the entry expires" {
	# long enough that the entry outlives the start of the next process
	export MARO_TTL=5s
	bg 30 maro-recv -n svc.2 > /dev/null
	local recv
	recv=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live svc.2
	kill -KILL "$recv"
	if [ "$MARO_TEST_BACKEND" = dir ]; then
		run -124 timeout 10 maro-recv -n svc.2 -W 1s
	else
		# no pid probe says it died: the name is held until the TTL ends
		run -69 timeout 10 maro-recv -n svc.2 -W 1s
		wait_until 10 not_live svc.2
		run -124 timeout 10 maro-recv -n svc.2 -W 1s
	fi
}

# as_nobody CMD...: CMD as uid/gid 65534 (nobody), no other groups
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

@test "dir: a registry directory another user made or can write is refused, 69, naming it" {
	[ "$MARO_TEST_BACKEND" = dir ] || skip "dir: only"
	[ "$(id -u)" -eq 0 ] || skip "needs root, to act as a second user (setpriv)"
	# a place like /tmp: root's, sticky, anyone may write
	shared=$(mktemp -d /tmp/maro-shared.XXXXXX)
	chmod 1777 "$shared"
	# another user makes the victim's default-looking root before its first run
	as_nobody mkdir -m 777 "$shared/maro-0"
	run -69 --separate-stderr maro-recv -n w2 -W 1s --registry "dir:$shared/maro-0"
	assert_equal "$stderr" "maro-recv: registry directory '$shared/maro-0' is owned by another user (uid 65534): refused"
	# ours, but writable by others
	mkdir -m 700 "$shared/ours"
	mkdir -m 777 "$shared/ours/maro"
	chmod 777 "$shared/ours/maro"
	run -69 --separate-stderr maro-peers -g maro --registry "dir:$shared/ours"
	assert_equal "$stderr" "maro-peers: registry directory '$shared/ours/maro' is writable by others (mode 777): refused"
	# a symbolic link where the root should be
	ln -s "$shared/ours" "$shared/link"
	run -69 --separate-stderr maro-peers --registry "dir:$shared/link"
	[[ "$stderr" == *"registry directory '$shared/link' is a symbolic link: refused"* ]]
	# above the root: another user's directory
	as_nobody mkdir -m 755 "$shared/theirs"
	run -69 --separate-stderr maro-peers --registry "dir:$shared/theirs/reg"
	[[ "$stderr" == *"directory '$shared/theirs', above the registry, is owned by another user (uid 65534): refused"* ]]
}

@test "dir: a registry path too long for socket names keeps ipc in a private directory, never loopback TCP" {
	[ "$MARO_TEST_BACKEND" = dir ] || skip "dir: only"
	local long
	long=$BATS_TEST_TMPDIR/$(printf 'p%.0s' $(seq 100))
	export MARO_REGISTRY=dir:$long TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir -m 700 "$TMPDIR"
	bg 30 maro-recv -n w1 -C 1 -f payload > got
	local recv=$BG_PID
	wait_until 10 is_live w1
	run -0 maro-peers -f json
	local ep
	ep=$(jq -r .endpoint <<< "$output")
	[[ "$ep" == "ipc://$TMPDIR/maro-$(id -u)."??????"/s."* ]]
	[ "$(stat -c %a "$(dirname "${ep#ipc://}")")" = 700 ]
	run -0 timeout 10 maro-send -p w1 -t t -d hello --notification -W 5s
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	run cat got
	assert_output hello
	# gone with its process: directory and socket
	run ls -A "$TMPDIR"
	assert_output ''
}

# rcli ARGS...: a client of the suite's Redis, as anyone with its address (and password) is
rcli() { redis-cli -p "$(redis_port)" "$@"; }
# entry_field NAME FIELD: what the registry stores of NAME's entry
entry_field() {
	if [ "$MARO_TEST_BACKEND" = redis ]; then
		rcli HGET "maro:$MARO_GROUP:m:$1" "$2"
	else
		sed -n "s/^$2=//p" "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/$1.entry"
	fi
}
# field_is NAME FIELD VALUE, field_is_not ...: for wait_until, which runs them again and again
field_is() { [ "$(entry_field "$1" "$2")" = "$3" ]; }
field_is_not() { [ "$(entry_field "$1" "$2")" != "$3" ]; }
# forge NAME FIELD VALUE: the entry's field changed by someone without the group key
forge() {
	if [ "$MARO_TEST_BACKEND" = redis ]; then
		rcli HSET "maro:$MARO_GROUP:m:$1" "$2" "$3" > /dev/null
	else
		local f="$BATS_TEST_TMPDIR/registry/$MARO_GROUP/$1.entry"
		sed "s|^$2=.*|$2=$3|" "$f" > "$f.forged"
		mv "$f.forged" "$f"
	fi
}

@test "with a group key, a registry writer without it cannot redirect, take over or hide a live member for more than a heartbeat" {
	maro-keygen group.key
	bg 60 maro-recv --keyfile group.key -n victim.1 -W 50s -f payload > victim.out 2> victim.err
	local victim=$BG_PID
	# the attacker's own inbox, without the key
	bg 60 maro-recv -n evil -W 50s -f payload > evil.out 2> /dev/null
	wait_until 10 is_live victim.1
	wait_until 10 is_live evil
	local mine evil
	mine=$(entry_field victim.1 endpoint)
	evil=$(entry_field evil endpoint)
	[ -n "$mine" ] && [ -n "$evil" ] && [ "$mine" != "$evil" ]
	# 1. the endpoint: readers with the key skip the entry, its owner writes it back
	forge victim.1 endpoint "$evil"
	wait_until 5 field_is victim.1 endpoint "$mine"
	wait_until 5 grep -q "maro-recv: the entry of 'victim.1' was changed by someone without the group key: written back" victim.err
	run -0 timeout 20 maro-send --keyfile group.key -p victim.1 -t t -d for-the-victim --notification -W 10s
	wait_until 10 grep -qx for-the-victim victim.out
	# 2. the token: a forgery, not a takeover; the victim keeps its name
	forge victim.1 token ffffffffffffffffffffffffffffffff
	wait_until 5 field_is_not victim.1 token ffffffffffffffffffffffffffffffff
	run -0 timeout 20 maro-send --keyfile group.key -p victim.1 -t t -d still-mine --notification -W 10s
	wait_until 10 grep -qx still-mine victim.out
	kill -0 "$victim"
	# 3. a field a reader uses, changed without the key: skipped by every reader with it
	forge victim.1 pid 1
	MARO_KEYFILE=group.key run -0 --separate-stderr maro-peers -v -f json
	if [ "$(entry_field victim.1 pid)" = 1 ]; then
		# still forged when listed: skipped, and said under -v
		[[ "$output" != *victim.1* ]]
		[[ "$stderr" == *"skipped the entry of 'victim.1': its MAC is wrong"* ]]
	fi
	wait_until 5 field_is_not victim.1 pid 1
	# 4. hidden (deleted): back at the owner's next heartbeat
	if [ "$MARO_TEST_BACKEND" = redis ]; then
		rcli DEL "maro:$MARO_GROUP:m:victim.1" > /dev/null
		rcli ZREM "maro:$MARO_GROUP:members" victim.1 > /dev/null
	else
		rm "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/victim.1.entry"
	fi
	wait_until 5 is_live victim.1
	run -0 timeout 20 maro-send --keyfile group.key -p victim.1 -t t -d back --notification -W 10s
	wait_until 10 grep -qx back victim.out
	kill -0 "$victim"
	[ ! -s evil.out ]
	# said once, however often it happened
	[ "$(grep -c 'written back' victim.err)" -eq 1 ]
}

@test "without a group key, an endpoint rewritten by another registry writer is undone at its owner's next heartbeat" {
	bg 60 maro-recv -n victim.2 -W 50s -f payload > victim.out 2> victim.err
	wait_until 10 is_live victim.2
	local mine
	mine=$(entry_field victim.2 endpoint)
	forge victim.2 endpoint tcp://127.0.0.1:9
	wait_until 5 field_is victim.2 endpoint "$mine"
	run -0 timeout 20 maro-send -p victim.2 -t t -d mine --notification -W 10s
	wait_until 10 grep -qx mine victim.out
}

# acl_user NAME GROUP PASSWORD: a Redis user that may touch group GROUP's keys only, as maro(7) SECURITY shows
acl_user() {
	rcli ACL SETUSER "$1" on ">$3" resetkeys "~maro:$2:*" resetchannels -@all +auth +ping +select +role \
		+eval +time +type +hget +hset +hgetall +del +pttl +pexpire +zadd +zrem +zrangebyscore \
		+zremrangebyscore > /dev/null
}

@test "redis: the ACL of maro(7) SECURITY keeps a group's clients to its own keys, and the tools work with it" {
	[ "$MARO_TEST_BACKEND" = redis ] || skip "redis only"
	local port a b
	port=$(redis_port)
	acl_user "ga-$$" "A$$" pw-a
	acl_user "gb-$$" "B$$" pw-b
	a="redis://ga-$$:pw-a@127.0.0.1:$port/0"
	b="redis://gb-$$:pw-b@127.0.0.1:$port/0"
	# the tools, as group A's user: join, list, send, leave
	MARO_REGISTRY=$a MARO_GROUP=A$$ bg 60 maro-recv -n w.1 -C 1 -W 50s -f payload > a.out
	local recv=$BG_PID
	MARO_REGISTRY=$a MARO_GROUP=A$$ wait_until 10 is_live w.1
	MARO_REGISTRY=$b MARO_GROUP=B$$ bg 60 maro-recv -n w.1 -W 50s -f payload > b.out
	MARO_REGISTRY=$b MARO_GROUP=B$$ wait_until 10 is_live w.1
	run -0 timeout 20 env MARO_REGISTRY="$a" MARO_GROUP="A$$" maro-send -p w.1 -t t -d for-a --notification -W 10s
	wait_exit "$recv" 20
	[ "$status" -eq 0 ]
	[ "$(cat a.out)" = for-a ]
	# group B's keys: A's user can neither read nor write them, nor anything else
	run -0 redis-cli --user "ga-$$" --pass pw-a --no-auth-warning -p "$port" HGETALL "maro:B$$:m:w.1"
	[[ "$output" == *NOPERM* ]]
	run -0 redis-cli --user "ga-$$" --pass pw-a --no-auth-warning -p "$port" HSET "maro:B$$:m:w.1" endpoint tcp://127.0.0.1:9
	[[ "$output" == *NOPERM* ]]
	run -0 redis-cli --user "ga-$$" --pass pw-a --no-auth-warning -p "$port" EVAL "return redis.call('HSET', KEYS[1], 'endpoint', 'x')" 1 "maro:B$$:m:w.1"
	[[ "$output" == *NOPERM* || "$output" == *"No permissions"* ]]
	run -0 redis-cli --user "ga-$$" --pass pw-a --no-auth-warning -p "$port" KEYS '*'
	[[ "$output" == *NOPERM* ]]
	run -0 redis-cli --user "ga-$$" --pass pw-a --no-auth-warning -p "$port" FLUSHALL
	[[ "$output" == *NOPERM* ]]
	# nor through the tools: group B under A's user is refused
	run -69 timeout 20 env MARO_REGISTRY="$a" MARO_GROUP="B$$" maro-peers
	[ "$(rcli HGET "maro:B$$:m:w.1" endpoint)" != tcp://127.0.0.1:9 ]
	rcli ACL DELUSER "ga-$$" "gb-$$" > /dev/null
}

# the files of the group directory (dir:), one name a line
group_files() { ls -A "${MARO_REGISTRY#dir:}/$MARO_GROUP" 2>/dev/null | sort; }

@test "dir: a tool refused a held name (69) leaves neither its socket nor its owner file" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	bg 30 maro-recv -n svc.1 -f payload > first.out
	wait_until 10 is_live svc.1
	before=$(group_files)
	[[ "$before" == *".owner."* ]]
	[[ "$before" == *"s."* ]]
	run -69 --separate-stderr timeout 10 maro-recv -n svc.1 -W 2s
	[[ "$stderr" == *"name 'svc.1' is held by pid "* ]]
	[ "$(group_files)" = "$before" ]
	run -69 --separate-stderr timeout 10 maro-dist -n svc.1 --on 'a:b:1' cat -W 2s
	[ "$(group_files)" = "$before" ]
}

@test "dir: the last member to leave removes the group directory; a reader never makes it" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	local group_dir="${MARO_REGISTRY#dir:}/$MARO_GROUP"
	run -0 --separate-stderr maro-peers
	[ ! -e "$group_dir" ]
	bg 30 maro-recv -n a -f payload > a.out
	local a=$BG_PID
	bg 30 maro-recv -n b -f payload > b.out
	local b=$BG_PID
	wait_until 10 is_live a
	wait_until 10 is_live b
	kill -TERM "$a"
	wait_exit "$a" 10
	[ -d "$group_dir" ]	# b is still there
	kill -TERM "$b"
	wait_exit "$b" 10
	[ ! -e "$group_dir" ]
	# and a member that joins after that makes it again, and is found
	bg 30 maro-recv -n c -f payload > c.out
	wait_until 10 is_live c
	run -0 timeout 10 maro-send -p c -t t -d hello --notification -W 5s
	wait_until 10 grep -qx hello c.out
}

# Found as a rare failure of the test below in CI: a member stopped by
# SIGTERM while another process held the group's lock gave up the name's
# lock at once and left its entry; and two members leaving at once each
# found the other's files while it held the lock, and with one try each
# both left the directory behind.
# hold_lock LEN: all of .lock (LEN 0) or its byte 0, which no name's lock
# takes (LEN 1), for 200 ms, as another member's put, sweep or leave does
hold_lock() {
	rm -f locked
	bg 10 python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX, int(sys.argv[2]), 0)
open("locked", "w").close()
time.sleep(0.2)' "${MARO_REGISTRY#dir:}/$MARO_GROUP/.lock" "$1"
	wait_until 10 test -e locked
}

@test "dir: the last member leaves while another process holds the group's lock a moment: the directory still goes" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	local group_dir="${MARO_REGISTRY#dir:}/$MARO_GROUP" w len
	for len in 0 1; do
		bg 30 maro-recv -n solo -f payload > solo.out
		w=$BG_PID
		wait_until 10 is_live solo
		hold_lock "$len"
		kill -TERM "$w"
		wait_exit "$w" 10
		[ "$status" -eq 143 ]
		[ ! -e "$group_dir" ] || { echo "lock of $len bytes:"; ls -A "$group_dir"; false; }
	done
}

@test "dir: members joining and leaving over and over never lose a join to the removal" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	local round w
	bg 60 sh -c 'n=0; while [ $n -lt 40 ]; do maro-recv -n churn -W 0.05s >/dev/null 2>&1; n=$((n+1)); done'
	local churn=$BG_PID
	for round in 1 2 3 4 5 6 7 8 9 10; do
		bg 30 maro-recv -n "w$round" -W 20s -f payload > "w$round.out"
		w=$BG_PID
		wait_until 10 is_live "w$round"
		run -0 timeout 10 maro-send -p "w$round" -t t -d "to w$round" --notification -W 5s
		wait_until 10 grep -qx "to w$round" "w$round.out"
		kill -TERM "$w"
		wait_exit "$w" 10
	done
	wait_exit "$churn" 60
	[ ! -e "${MARO_REGISTRY#dir:}/$MARO_GROUP" ]
}
