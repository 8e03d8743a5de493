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
teardown() { default_teardown; }

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
