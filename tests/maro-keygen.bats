#!/usr/bin/env bats
# maro-keygen: a group key file, 0600, never overwritten; usage and errors.

load helpers

setup() { cd "$BATS_TEST_TMPDIR"; }
teardown() { default_teardown; }

@test "a 0600 file with a key pair that the tools accept; never overwritten" {
	run maro-keygen group.key
	assert_success
	assert_output ''
	[ "$(stat -c %a group.key)" = 600 ]
	[ "$(grep -cE '^(public|secret) = .{40}$' group.key)" -eq 2 ]
	cp group.key before
	run maro-keygen group.key
	assert_failure 2
	assert_output "maro-keygen: cannot create 'group.key': File exists"
	cmp group.key before
	run maro-keygen -v other.key
	assert_success
	assert_output --regexp "^maro-keygen: wrote 'other.key' \(public key .{40}\)$"
	refute_output --partial "$(sed -n 's/^secret = //p' other.key)"
	run ! cmp -s group.key other.key
}

@test "usage errors exit 2; an unwritable place exits 70 with the cause" {
	run maro-keygen
	assert_failure 2
	run maro-keygen a b
	assert_failure 2
	run maro-keygen --no-such-option x
	assert_failure 2
	run maro-keygen "$BATS_TEST_TMPDIR/no/such/dir/k"
	assert_failure 70
	assert_output --partial 'No such file or directory'
}

@test "--help and -V print to stdout and exit 0" {
	run maro-keygen --help
	assert_success
	assert_line --index 0 "usage: maro-keygen [-v] FILE"
	run maro-keygen -V
	assert_success
	assert_output --partial maro-keygen
}
