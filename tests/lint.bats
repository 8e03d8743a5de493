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

@test "layers: README's map of lib/ as it is agrees with the includes, exit 0" {
	run -0 sh "$MARO_TOP/scripts/layers" "$MARO_TOP/lib" "$MARO_TOP/README.md"
	assert_output ''
}

@test "layers: a map that puts a module above one it includes, or leaves one out, is named, exit 1" {
	# the registry's row above the transport's (transport.h includes
	# registry.h), the bundle's row gone, format in two rows and a module
	# that does not exist
	awk '/^    transport / { t = $0; next } /^    registry / { print; print t; next }
	    /^    format / { print; print "    format nosuch   twice"; next }
	    $0 !~ /^    bundle / { print }' "$MARO_TOP/README.md" > "$BATS_TEST_TMPDIR/README.md"
	run -1 sh "$MARO_TOP/scripts/layers" "$MARO_TOP/lib" "$BATS_TEST_TMPDIR/README.md"
	assert_line "README.md: transport includes registry, which the map puts above it"
	assert_line "README.md: bundle is in no row of the map of lib/"
	assert_line "README.md: manifest is in no row of the map of lib/"
	assert_line "README.md: format is in two rows of the map of lib/"
	assert_line "README.md: nosuch in the map of lib/ is no module of lib/"
	run -2 sh "$MARO_TOP/scripts/layers" "$MARO_TOP/lib" "$BATS_TEST_TMPDIR/no-such-map"
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

@test "mutate-sample --check: the map and the triage as they are, exit 0" {
	run -0 sh "$MARO_TOP/scripts/mutate-sample" --check
	assert_output ''
}

@test "mutate-sample --check: a module without a row, a suite or file that is gone, a stale triage line, are named, exit 1" {
	local t=$BATS_TEST_TMPDIR/top
	mkdir -p "$t/tests/mutants" "$t/lib" "$t/cmd" "$t/scripts"
	cp "$MARO_TOP/tests/mutants/map" "$t/tests/mutants/map"
	mkdir -p "$t/tests/tools"
	cp "$MARO_TOP/tests/tools/mutants.py" "$t/tests/tools/"
	cd "$MARO_TOP"
	cp --parents lib/*.c cmd/*.c tests/*.bats "$t"
	sed -i '/^lib\/hold.c:/d; s/^lib\/event.c: unit/lib\/event.c: unit nosuch.bats/' "$t/tests/mutants/map"
	echo 'lib/gone.c: unit' >> "$t/tests/mutants/map"
	local id
	cd "$t"
	id=$(python3 tests/tools/mutants.py ids lib/joblog.c | head -n 1)
	{
		echo "$id lib/joblog.c equivalent the same either way"
		echo "0123456789ab lib/joblog.c equivalent a line that changed since"
		echo "$id lib/joblog.c maybe no such status"
	} > "$t/tests/mutants/triage"
	run -1 sh "$MARO_TOP/scripts/mutate-sample" --check "$t"
	assert_output "map: no row for lib/hold.c
map: lib/event.c: no suite tests/nosuch.bats
map: no file lib/gone.c
triage: 0123456789ab: no such mutant of lib/joblog.c (the line changed: triage it again)
triage: $id: status 'maybe' (equivalent or killed-by)"
}

@test "mutate-sample: the sample is the seed's: the same seed, the same mutants; another seed, others; each applies to one line" {
	run -0 env MUTATE_SEED=7 MUTATE_COUNT=40 sh "$MARO_TOP/scripts/mutate-sample" --list lib/event.c lib/hold.c
	local first=$output
	[ "${#lines[@]}" -ge 40 ]
	run -0 env MUTATE_SEED=7 MUTATE_COUNT=40 sh "$MARO_TOP/scripts/mutate-sample" --list lib/event.c lib/hold.c
	[ "$output" = "$first" ]
	run -0 env MUTATE_SEED=8 MUTATE_COUNT=40 sh "$MARO_TOP/scripts/mutate-sample" --list lib/event.c lib/hold.c
	[ "$output" != "$first" ]
	# every operator occurs, and a mutant changes its line and only it
	run -0 python3 "$MARO_TOP/tests/tools/mutants.py" list "$MARO_TOP/lib/workq.c"
	for op in ROR LCR AOR CRP NEG SDL RET; do
		assert_line --regexp "^[0-9a-f]{12}	[^	]+	[0-9]+	$op	"
	done
	local id line
	IFS=$'\t' read -r id _ line _ < <(python3 "$MARO_TOP/tests/tools/mutants.py" list "$MARO_TOP/lib/workq.c" | grep -m1 '	ROR	')
	run -0 bash -c "diff <(python3 '$MARO_TOP/tests/tools/mutants.py' apply $id '$MARO_TOP/lib/workq.c') '$MARO_TOP/lib/workq.c' | grep -c '^[<>]'"
	assert_output 2
	run -0 bash -c "diff <(python3 '$MARO_TOP/tests/tools/mutants.py' apply $id '$MARO_TOP/lib/workq.c') '$MARO_TOP/lib/workq.c' | head -n 1"
	assert_output "${line}c${line}"
}

# The sample outlives edits: a mutant is in it by a hash of the seed and
# its id, so that an edit of one module (or a mutant more in it) leaves
# the sample of the others, and the rest of its own, as they were, and
# the results of earlier runs (MUTATE_RESUME) keep counting.
@test "mutate-sample: an edit of one module leaves the others' sample as it was, and its own but at the margin" {
	local t=$BATS_TEST_TMPDIR/top
	mkdir -p "$t/lib" "$t/tests/tools"
	cp "$MARO_TOP/tests/tools/mutants.py" "$t/tests/tools/"
	cp "$MARO_TOP/lib/event.c" "$MARO_TOP/lib/hold.c" "$t/lib/"
	cd "$t"
	python3 tests/tools/mutants.py sample 7 40 lib/event.c lib/hold.c > before
	# a function more at the top of event.c: mutants more before the others
	# (an if with a comparison and a constant, two returns)
	sed -i '0,/^#include "event.h"/s//&\nint unused_x(int a);\nint\nunused_x(int a)\n{\n\tif (a == 3)\n\t\treturn -1;\n\treturn 0;\n}/' lib/event.c
	run -0 python3 tests/tools/mutants.py list lib/event.c
	[ "$(grep -c '	if (a == 3)' <<< "$output")" -ge 2 ]
	python3 tests/tools/mutants.py sample 7 40 lib/event.c lib/hold.c > after
	assert_equal "$(grep 'lib/hold.c' after)" "$(grep 'lib/hold.c' before)"
	# event.c's own: all but at most as many as its share changed by
	grep 'lib/event.c' before | cut -f 1 | sort > b.ids
	grep 'lib/event.c' after | cut -f 1 | sort > a.ids
	run -0 comm -23 b.ids a.ids
	[ "${#lines[@]}" -le 1 ]
}

@test "mutate-sample: MUTATE_JOBS that is not a number from 1 is a usage error (2), nothing built" {
	run -2 env MUTATE_JOBS=0 sh "$MARO_TOP/scripts/mutate-sample" lib/event.c
	assert_output "mutate-sample: MUTATE_JOBS must be a number from 1"
	run -2 env MUTATE_JOBS=two sh "$MARO_TOP/scripts/mutate-sample" --list lib/event.c
	assert_output "mutate-sample: MUTATE_JOBS must be a number from 1"
}

@test "promises check: the pages and tests/promises as they are, exit 0, the gaps counted" {
	run -0 --separate-stderr sh "$MARO_TOP/scripts/promises" check
	assert_output ''
	[[ $stderr =~ ^promises:\ [0-9]+\ on\ the\ pages,\ [0-9]+\ with\ a\ test,\ [0-9]+\ gaps ]]
}

@test "promises check: a page that gains an option, an exit status, a variable or a metric without a row, a stale row, a test that is gone, exit 1" {
	local t=$BATS_TEST_TMPDIR/top
	mkdir -p "$t/man" "$t/tests"
	cp "$MARO_TOP"/man/*.1 "$MARO_TOP"/man/*.7 "$t/man/"
	cp "$MARO_TOP"/tests/*.bats "$MARO_TOP/tests/promises" "$t/tests/"
	# a new option, exit status, variable and metric on maro-send's page
	sed -i 's/^\.It Fl -async$/.It Fl -frobnicate\n&/; s/^\.It 124$/.It 99\nnew\n&/' "$t/man/maro-send.1"
	sed -i 's/^\.It Ev MARO_REDIS_PASSWORD$/.It Ev MARO_NEW_KNOB\nnew\n&/' "$t/man/maro-peers.1"
	# variables after the first of an .It Ev line, and on an .Ev line of their own
	sed -i 's/^\.It Ev MARO_NAME , MARO_GROUP/.It Ev MARO_NAME , MARO_SECOND_KNOB , MARO_GROUP/' "$t/man/maro-recv.1"
	sed -i '/^\.Sh ENVIRONMENT$/,/^\.Sh /s/^\.Ev MARO_WINDOW$/.Ev MARO_WINDOW ,\n.Ev MARO_THIRD_KNOB/' "$t/man/maro-send.1"
	sed -i 's/^\.It Ic maro_host_members No (gauge)$/.It Ic maro_new_total No (counter)\nnew\n&/' "$t/man/maro-peers.1"
	# a row for a promise no page makes, and a row whose test was renamed
	echo 'maro-send option --gone maro-send.bats:^x' >> "$t/tests/promises"
	sed -i 's/^maro-msg option --check .*/maro-msg option --check maro-msg.bats:^no such test/' "$t/tests/promises"
	run -1 sh "$MARO_TOP/scripts/promises" check "$t"
	assert_line "promises: no row for maro-peers env MARO_NEW_KNOB"
	assert_line "promises: no row for maro-recv env MARO_SECOND_KNOB"
	assert_line "promises: no row for maro-send env MARO_THIRD_KNOB"
	assert_line "promises: no row for maro-peers metric maro_new_total"
	assert_line "promises: no row for maro-send exit 99"
	assert_line "promises: no row for maro-send option --frobnicate"
	assert_line "promises: no such promise on the page (any more): maro-send option --gone"
	assert_line "promises: maro-msg option --check: no test of maro-msg.bats matches '^no such test'"
}
