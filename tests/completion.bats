#!/usr/bin/env bats
# Shell completion (completion/maro.bash): the flags come from each tool's
# own --list-options, so a flag added to a table completes with no other
# change; make install puts it where bash-completion finds it.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	# shellcheck source=/dev/null
	source "$MARO_TOP/completion/maro.bash"
}
teardown() { default_teardown; }

# complete WORD...: what bash offers for the last word of the command line
complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_maro "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

@test "completion: a flag's prefix completes to the tool's flags, with '=' when a value follows" {
	run -0 complete_words maro-send --ti
	assert_output "--timeout="
	run -0 complete_words maro-recv --sess
	assert_output "--session=
--sessions-from="
	run -0 complete_words maro-scatter --ret
	assert_output "--retries="
	# a flag of another tool is not offered
	run -0 complete_words maro-recv --retr
	assert_output ""
	run -0 complete_words maro-pool --j
	assert_output "--jobs="
}

@test "completion: every tool's flags are offered, exactly those of --list-options" {
	local t
	for t in maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv \
		maro-scatter maro-send maro-wait-event; do
		run -0 complete_words "$t" --
		assert_output "$("$t" --list-options | grep -- '^--')"
		complete -p "$t"
	done
}

@test "completion: the values of -f and -i" {
	run -0 complete_words maro-recv -f j
	assert_output json
	run -0 complete_words maro-send --format c
	assert_output cbor
	run -0 complete_words maro-peers -f t
	assert_output text
	run -0 complete_words maro-peers -f p
	assert_output prometheus
	run -0 complete_words maro-msg -i c
	assert_output cbor
}

@test "completion: values after --format= and --input=, as bash splits them at '='" {
	run -0 complete_words maro-recv --format = j
	assert_output json
	run -0 complete_words maro-peers --format =
	assert_output "text
json
prometheus"
	run -0 complete_words maro-msg --input = c
	assert_output cbor
}

@test "completion: an optional value is offered with and without '=' (--progress), and maro-msg reply" {
	run -0 complete_words maro-scatter --prog
	assert_output "--progress
--progress="
	run -0 complete_words maro-msg r
	assert_output reply
	run -0 complete_words maro-msg ""
	assert_output reply
	# after the subcommand, its flags
	run -0 complete_words maro-msg reply --payloads-j
	assert_output "--payloads-json"
}

@test "completion: -p offers the live members' names, -P their names and types; nothing, quickly, when none" {
	export MARO_REGISTRY="dir:$BATS_TEST_TMPDIR/registry" MARO_GROUP=comp
	bg 30 maro-recv -n worker.1 -f payload > /dev/null
	bg 30 maro-recv -n master -f payload > /dev/null
	wait_until 10 sh -c '[ "$(maro-peers -f json | wc -l)" -eq 2 ]'
	run -0 complete_words maro-send -p w
	assert_output worker.1
	run -0 complete_words maro-msg --peer ""
	assert_output "master
worker.1"
	run -0 complete_words maro-scatter -P wor
	assert_output "worker
worker.1"
	# the group of the command line, not the environment's
	run -0 complete_words maro-send -g other -p w
	assert_output ""
	# a registry that does not answer: nothing, within a second or so, and silent
	start=$SECONDS
	run --separate-stderr complete_words maro-send --registry redis://127.0.0.1:1 -p w
	assert_success
	assert_output ""
	[ -z "$stderr" ]
	[ $((SECONDS - start)) -le 2 ]
}

@test "completion: make install puts it under share/bash-completion/completions, one per tool" {
	local d=$BATS_TEST_TMPDIR/root
	run -0 make -s -C "$MARO_TOP" install DESTDIR="$d" PREFIX=/usr \
		TOOLS="$(echo "$MARO_BIN"/maro-*)"
	for t in "$MARO_BIN"/maro-*; do
		cmp "$MARO_TOP/completion/maro.bash" "$d/usr/share/bash-completion/completions/${t##*/}"
	done
	run -0 make -s -C "$MARO_TOP" uninstall DESTDIR="$d" PREFIX=/usr \
		TOOLS="$(echo "$MARO_BIN"/maro-*)"
	run -0 find "$d/usr/share/bash-completion/completions" -type f
	assert_output ""
}
