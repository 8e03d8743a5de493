#!/usr/bin/env bats
# backends: dir redis
# maro-tutorial(7) and its scripts: each workflow runs, checks its own
# result and leaves nothing behind; the page shows what the scripts run.

load helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	# on dir:, each script makes its own registry, as a user runs it
	if [ "${MARO_TEST_BACKEND:-dir}" = dir ]; then unset MARO_REGISTRY; fi
	export TMPDIR=$BATS_TEST_TMPDIR
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

# left_behind PATTERN: nothing of the script is left: its directory, its processes
left_behind() {
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial maro-tutorial
	run pgrep -s 0 -f "$1"
	assert_failure
}

# page_blocks: "SCRIPT<US>LINE" (US: the unit separator, not white space) for each line of the page's literal blocks
# outside EXAMPLES, unescaped and without its indent; SCRIPT is the first
# scripts/tutorial-* its subsection names, or empty.
page_blocks() {
	awk '
		/^\.Sh / { sec = $2; script = ""; next }
		/^\.Ss / { script = ""; next }
		/^\.Pa scripts\/tutorial-/ && script == "" { script = $2 }
		/^\.Bd -literal/ { inblk = 1; next }
		/^\.Ed/ { inblk = 0; next }
		inblk && sec != "EXAMPLES" {
			gsub(/\\e/, "\\"); gsub(/\\&/, ""); sub(/^[ \t]+/, "")
			print script "\037" $0
		}
	' "$MARO_TOP/man/maro-tutorial.7"
}

# script_has SCRIPT LINE: LINE is a line of SCRIPT, indent aside
script_has() {
	sed 's/^[[:space:]]*//' "$MARO_TOP/$1" | grep -qxF -- "$2"
}

@test "tutorial-sweep: results in order, the point that kills workers given up, kept and retried" {
	run -0 timeout 90 sh "$MARO_TOP/scripts/tutorial-sweep"
	assert_line --index 0 "sweep: 3 workers live"
	# the five points answered, in the order of the grid, [100, 100] left out
	assert_line --index 1 "    50 100 100"
	assert_line --index 2 "    50 200 66"
	assert_line --index 3 "    50 400 57"
	assert_line --index 4 "    100 200 200"
	assert_line --index 5 "    100 400 133"
	assert_line --index 6 "sweep: maro-scatter exited 3, 5 of 6 points answered"
	assert_line --index 7 "sweep: line 4 of the input given up after 2 failed attempts (its peer left): payload [100, 100]"
	assert_line --regexp '^sweep: maro-pool restarted a worker [0-9]+ times$'
	assert_line "sweep: failed.cbor holds [100,100]"
	assert_line "sweep: retried: 100 100 inf"
	assert_line --index $((${#lines[@]} - 1)) "sweep: ok, 6 points, in order"
	left_behind "maro-dist --raw --co master:lens:1"
}

@test "tutorial-resume: the master killed half way, resumed from its job log, nothing done twice" {
	run -0 timeout 90 sh "$MARO_TOP/scripts/tutorial-resume"
	assert_line --index 0 "resume: 3 workers live"
	assert_line --index 1 --regexp '^resume: master killed with [0-9]+ points logged, [0-9]+ done$'
	assert_line --index 2 --regexp '^resume: resumed, maro-scatter exited 3, [0-9]+ more results$'
	assert_line --index 3 'resume: line 13 of the input given up after 2 failed attempts (its peer left): payload "13"'
	assert_line --index 4 "resume: the log says: 13: failed: its peer left"
	assert_line --index 5 "resume: resumed again: 13 1521"
	assert_line --index 6 --regexp '^resume: ok, 40 points, none done before the kill run again \([0-3] in flight at the kill were\)$'
	[ "${#lines[@]}" -eq 7 ]
	# the points done before the kill and those done after add up to the 39 that could be
	local before after
	before=$(sed -n 's/^resume: master killed with [0-9]* points logged, \([0-9]*\) done$/\1/p' <<< "$output")
	after=$(sed -n 's/^resume: resumed, maro-scatter exited 3, \([0-9]*\) more results$/\1/p' <<< "$output")
	[ "$((before + after))" -eq 39 ] || fail "$before done before the kill, $after after"
	[ "$before" -ge 10 ]
	[ "$before" -lt 39 ]
	left_behind "maro-dist --raw --co \*:sim:1"
}

@test "tutorial-barrier: the master goes on at 3 reports of 5, takes the other 2, the shares add up" {
	run -0 timeout 60 sh "$MARO_TOP/scripts/tutorial-barrier"
	assert_line --index 0 "barrier: 5 workers live"
	assert_line --index 1 "barrier: 60% of the workers reported (3 of 5); the master goes on with:"
	assert_line --index 5 "barrier: the other 2 reports, held by their senders until taken:"
	assert_line --index 8 "barrier: ok, the sum of the squares of 1..100000 is 333338333350000"
	[ "${#lines[@]}" -eq 9 ]
	# one report from each job, three before the bar, two after
	[ "$(printf '%s\n' "${lines[@]:2:3}" "${lines[@]:6:2}" | sed -n 's/^    job \([1-5]\): [0-9]*$/\1/p' | sort | tr -d '\n')" = 12345 ]
	left_behind "maro-dist --raw --co master:run:1"
}

@test "tutorial-barrier: with four workers the bar is still three reports, with one it is one" {
	run -0 timeout 60 sh "$MARO_TOP/scripts/tutorial-barrier" 4
	assert_line "barrier: 60% of the workers reported (3 of 4); the master goes on with:"
	assert_line "barrier: the other 1 reports, held by their senders until taken:"
	assert_line "barrier: ok, the sum of the squares of 1..100000 is 333338333350000"
	run -0 timeout 60 sh "$MARO_TOP/scripts/tutorial-barrier" 1
	assert_line "barrier: 60% of the workers reported (1 of 1); the master goes on with:"
	assert_line "barrier: the other 0 reports, held by their senders until taken:"
	assert_line "barrier: ok, the sum of the squares of 1..100000 is 333338333350000"
}

@test "tutorial-broadcast: one reply from each worker, then a stop that ends the pool" {
	run -0 timeout 60 sh "$MARO_TOP/scripts/tutorial-broadcast"
	assert_line --index 0 "broadcast: 4 workers live"
	assert_line --index 1 "broadcast: 4 replies to one task:"
	[ "$(printf '%s\n' "${lines[@]:2:4}" | sed -n 's/^    worker\.[^ ]*\.\([1-4]\) \([0-9]*\)$/\1 \2/p' | sort)" = "$(printf '%s\n' '1 10' '2 20' '3 30' '4 40')" ]
	assert_line --index 6 "broadcast: stop delivered, maro-pool exited 0"
	assert_line --index 7 "broadcast: ok, 4 replies adding up to 100"
	left_behind "maro-dist --raw --co master:weights:1"
}

@test "the tutorial scripts say their usage, and where the tools are when none are found" {
	local s
	if PATH=/usr/bin:/bin command -v maro-peers > /dev/null; then skip "maro tools installed in /usr/bin"; fi
	for s in sweep resume barrier broadcast; do
		run -2 sh "$MARO_TOP/scripts/tutorial-$s" 3 extra
		assert_output "usage: [MARO_BIN=DIR] sh scripts/tutorial-$s [WORKERS]"
		# out of the tree, no MARO_BIN, nothing on PATH
		cp "$MARO_TOP/scripts/tutorial-$s" .
		run -2 env -u MARO_BIN PATH=/usr/bin:/bin sh "./tutorial-$s"
		assert_output "tutorial-$s: no maro tools: run make, or set MARO_BIN=DIR"
	done
}

# page_commands: the commands the tutorial and the README give to run a
# script from the top of the tree, unescaped, one a line: each line of the
# page's literal blocks and each inline `...` of the README that runs
# scripts/tutorial-* or scripts/demo (scripts/slurm-demo is tests/slurm.bats').
page_commands() {
	{
		awk '/^\.Bd -literal/ { b = 1; next } /^\.Ed/ { b = 0 } b { gsub(/\\&/, ""); sub(/^[ \t]+/, ""); print }' \
			"$MARO_TOP/man/maro-tutorial.7"
		grep -o '`[^`]*`' "$MARO_TOP/README.md" | tr -d '`'
		sed -n 's/^    //p' "$MARO_TOP/README.md"
	} | grep -E '^(MARO_BIN=[^ ]+ )?sh scripts/(tutorial-[a-z]+|demo)( [0-9]+)*$' | sort -u
}

@test "the tutorial's and the README's script commands run as printed, from the top of the tree, with a clean PATH" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "the scripts make their own dir: registry"
	[ "$(cd "$MARO_TOP/build/bin" 2>/dev/null && pwd -P)" = "$(cd "$MARO_BIN" && pwd -P)" ] ||
		skip "the tools under test are not the tree's build/bin"
	local cmd out rc n=0
	while IFS= read -r cmd; do
		n=$((n + 1))
		rc=0
		out=$(timeout 120 env -i PATH=/usr/bin:/bin HOME="$HOME" TMPDIR="$BATS_TEST_TMPDIR" \
			sh -c "cd \"\$1\" && $cmd" sh "$MARO_TOP" 2>&1) || rc=$?
		[ "$rc" -eq 0 ] || fail "'$cmd' exited $rc: $out"
	done < <(page_commands)
	# the four tutorial scripts, with and without MARO_BIN, and the demo
	[ "$n" -ge 6 ] || fail "only $n commands found: $(page_commands)"
}

@test "maro-tutorial(7): every script it names exists, and its command blocks are lines of the scripts" {
	local script line n=0 s
	# every scripts/... the page names is there
	while read -r s; do
		[ -f "$MARO_TOP/$s" ] || fail "the page names $s, which is not there"
	done < <(grep -Eo 'scripts/[A-Za-z0-9_-]+' "$MARO_TOP/man/maro-tutorial.7" | sort -u)
	# each workflow has its subsection, which names its script
	for s in sweep resume barrier broadcast; do
		grep -qx ".Pa scripts/tutorial-$s" "$MARO_TOP/man/maro-tutorial.7" || fail "no subsection names tutorial-$s"
	done
	while IFS=$'\037' read -r script line; do
		n=$((n + 1))
		if [ -n "$script" ]; then
			script_has "$script" "$line" || fail "'$line' is not a line of $script"
		elif [[ "$line" =~ ^MARO_BIN=build/bin\ sh\ (scripts/tutorial-[a-z]+)$ ]]; then
			[ -f "$MARO_TOP/${BASH_REMATCH[1]}" ] || fail "'$line': no such script"
		else
			# before any workflow: a line of the sweep, which it follows
			script_has scripts/tutorial-sweep "$line" || fail "'$line' is not a line of scripts/tutorial-sweep"
		fi
	done < <(page_blocks)
	[ "$n" -ge 15 ] || fail "only $n lines of command blocks found"
	# EXAMPLES: the three scripts, as run from the top of the tree
	run -0 awk '/^\.Sh / { ex = ($2 == "EXAMPLES") } ex && /^\.Bd/ { b = 1; next } /^\.Ed/ { b = 0 } ex && b' "$MARO_TOP/man/maro-tutorial.7"
	assert_output "$(printf 'MARO_BIN=build/bin sh scripts/tutorial-%s\n' sweep resume barrier broadcast)"
}
