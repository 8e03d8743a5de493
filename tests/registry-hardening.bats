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
