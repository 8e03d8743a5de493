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
