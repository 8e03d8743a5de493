#!/usr/bin/env bats
# scripts/lint-bats finds the bats pitfalls ShellCheck does not see, and
# only those (fixtures in tests/lint/, not .bats: bats would read them).

load helpers

@test "lint-bats: a negated command anywhere, or an && list before a test's last line, is named, exit 1" {
	run -1 sh "$MARO_TOP/scripts/lint-bats" "$MARO_TOP/tests/lint/pitfalls.txt"
	assert_output "$MARO_TOP/tests/lint/pitfalls.txt:2: a negated command never fails a test here: use run ! (or run -N)
$MARO_TOP/tests/lint/pitfalls.txt:3: only the last condition of an && list can fail a test here: one per line
$MARO_TOP/tests/lint/pitfalls.txt:5: a negated command never fails a test here: use run ! (or run -N)
$MARO_TOP/tests/lint/pitfalls.txt:9: only the last condition of an && list can fail a test here: one per line
$MARO_TOP/tests/lint/pitfalls.txt:15: a negated command never fails a test here: use run ! (or run -N)"
}

@test "lint-bats: the last line, conditions, quotes and here-documents are fine, exit 0" {
	run -0 sh "$MARO_TOP/scripts/lint-bats" "$MARO_TOP/tests/lint/clean.txt"
	assert_output ''
}

@test "lint-traps: a trap on INT, TERM or HUP that does not die of its signal is named, exit 1; one that does, a reset or an ignore is fine" {
	run -1 sh "$MARO_TOP/scripts/lint-traps" "$MARO_TOP/tests/lint/traps.txt"
	[ "${#lines[@]}" -eq 9 ]
	assert_line --index 0 "$MARO_TOP/tests/lint/traps.txt:2: a trap on INT that does not end with 'trap - INT; kill -INT \$\$': whoever runs the script goes on after the signal"
	assert_line --index 1 --partial "traps.txt:2: a trap on TERM "
	assert_line --index 2 --partial "traps.txt:3: a trap on INT "
	assert_line --index 3 --partial "traps.txt:4: a trap on TERM "
	# exit 130 is a child that handled the signal, to the shell that runs it
	assert_line --index 4 --partial "traps.txt:6: a trap on INT "
	assert_line --index 5 --partial "traps.txt:7: a trap on TERM "
	# the wrong signal raised; raised without a reset (the trap again)
	assert_line --index 6 --partial "traps.txt:12: a trap on TERM "
	assert_line --index 7 --partial "traps.txt:13: a trap on INT "
	# a function that raises nothing
	assert_line --index 8 --partial "traps.txt:21: a trap on INT "
	# the project's scripts as they are
	run -0 sh "$MARO_TOP/scripts/lint-traps" "$MARO_TOP"/scripts/*
}

@test "layers: lib/ as it is has no cycle of includes, and only cli, opt and tool include cli.h" {
	run -0 sh "$MARO_TOP/scripts/layers" "$MARO_TOP/lib"
	assert_output ''
}

@test "layers: a cycle, and a module below the front end that prints, are named, exit 1" {
	cp -r "$MARO_TOP/lib" "$BATS_TEST_TMPDIR/lib"
	# the clock, at the bottom, calling up into cli: the cycle cli -> clock -> cli
	sed -i '1i #include "cli.h"' "$BATS_TEST_TMPDIR/lib/clock.c"
	run -1 sh "$MARO_TOP/scripts/layers" "$BATS_TEST_TMPDIR/lib"
	assert_line "lib/ has a cycle of includes:"
	assert_line --regexp "^  tsort: (clock|cli)$"
	assert_line "clock.c includes cli.h: only cli, opt and tool print and exit"
}

@test "mutate --check: the mutants as they are apply and name tests that exist, exit 0" {
	run -0 sh "$MARO_TOP/scripts/mutate" --check
	assert_output ''
}

@test "mutate --check: a mutant that no longer applies, or names no behaviour or no test that exists, is named, exit 1" {
	run -1 sh "$MARO_TOP/scripts/mutate" --check "$MARO_TOP" \
	    "$MARO_TOP/tests/lint/mutant-stale.txt" "$MARO_TOP/tests/lint/mutant-untested.txt"
	assert_output "mutant-stale.txt: does not apply to the tree (a line moved: refresh the patch)
mutant-untested.txt: does not apply to the tree (a line moved: refresh the patch)
mutant-untested.txt: no '# behaviour:' line
mutant-untested.txt: no test of lint.bats matches 'no-such-test'
mutant-untested.txt: no suite tests/nosuch.bats"
}
