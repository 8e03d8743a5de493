#!/usr/bin/env bats
# Every tool's options come from one table (lib/opt.h): --help,
# --list-options and the parse.  Here each tool's table is held against its
# man page: every flag it takes is documented in OPTIONS and SYNOPSIS, every
# flag documented is taken, with the same short letter; and the shared
# flags resolve with one precedence: flag > MARO_* > default.

load helpers

setup() { cd "$BATS_TEST_TMPDIR"; }
teardown() { default_teardown; }

TOOLS="maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv maro-scatter
maro-send maro-wait-event"

# man_flags PAGE SECTION: the flags a section of an mdoc page names, one per
# line ("-x", "--long"), and "-x --long" for each pair it gives ("Fl x , -long")
man_flags() {
	awk -v want="$2" '
	/^\.Sh / { on = ($2 == want); next }
	!on { next }
	# in OPTIONS, the flags an item is about; in SYNOPSIS, all
	want == "OPTIONS" && !/^\.It / { next }
	{
		n = split($0, t, /[ \t]+/)
		sub(/^\./, "", t[1])
		for (i = 1; i <= n; i++) {
			if (t[i] != "Fl" || i == n)
				continue
			w = t[i + 1]
			sub(/[|,]$/, "", w)
			# "Fl -task | -notification", "Fl h | V": alternatives
			for (j = i + 2; t[j] == "|" && j < n; j += 2) {
				a = t[j + 1]
				sub(/[|,]$/, "", a)
				if (a ~ /^-[a-z]/)
					print "-" a
				else if (a ~ /^[A-Za-z]$/)
					print "-" a
			}
			if (w ~ /^-[a-z]/) {
				print "-" w
			} else if (w ~ /^[A-Za-z]+$/) {
				for (j = 1; j <= length(w); j++)
					print "-" substr(w, j, 1)
				# "Fl x , -long": a pair
				if (length(w) == 1 && t[i + 2] == "," && t[i + 3] ~ /^-[a-z]/) {
					l = t[i + 3]
					sub(/,$/, "", l)
					print "-" l
					print "-" w " -" l
				}
			}
		}
	}' "$MARO_TOP/man/$1.1" | sort -u
}

# tool_flags TOOL: what the tool takes, one per line ("-x", "--long"), from its table
tool_flags() {
	"$1" --list-options | sed 's/=$//' | sort -u
}

# tool_pairs TOOL: "-x --long" for each flag with a short letter, from --help
tool_pairs() {
	"$1" --help | sed -n 's/^  \(-[A-Za-z]\), \(--[a-z-]*\).*/\1 \2/p' | sort -u
}

@test "--list-options: one line per flag, each once, --help and --version among them" {
	local t
	for t in $TOOLS; do
		run -0 "$t" --list-options
		assert_line -- --help
		assert_line -- -h
		assert_line -- --version
		assert_line -- -V
		[ "$(printf '%s\n' "${lines[@]}" | sort | uniq -d)" = "" ] || {
			echo "$t: twice: $(printf '%s\n' "${lines[@]}" | sort | uniq -d)"
			return 1
		}
	done
}

# undocumented TOOL SECTION: the flags TOOL takes that SECTION of its page
# names neither as they are nor by the other half of their pair (one awk a
# tool, not a grep a flag: this suite is read, not run, and ought to be quick)
undocumented() {
	{ man_flags "$1" "$2" | grep -v ' ' || :; } > doc
	tool_pairs "$1" > pairs
	tool_flags "$1" > taken
	awk 'FILENAME == "doc" { d[$1] = 1; next }
	FILENAME == "pairs" { o[$1] = $2; o[$2] = $1; next }
	!($1 in d) && !(($1 in o) && (o[$1] in d)) { print }' doc pairs taken
}

@test "every flag a tool takes is in its man page's OPTIONS, with the same short letter" {
	local t missing=""
	for t in $TOOLS; do
		missing="$missing$(undocumented "$t" OPTIONS | sed "s/^/ $t:/" | tr -d '\n')"
		# a pair the page gives is the tool's pair
		missing="$missing$({ man_flags "$t" OPTIONS | grep ' ' || :; } | comm -23 - pairs |
			sed "s/^\(.*\) \(.*\)$/ $t:'\1,\2'/" | tr -d '\n')"
	done
	[ -z "$missing" ] || { echo "not in OPTIONS, or paired otherwise:$missing"; return 1; }
}

@test "every flag a man page's OPTIONS names is one the tool takes" {
	local t extra=""
	for t in $TOOLS; do
		tool_flags "$t" > taken
		extra="$extra$({ man_flags "$t" OPTIONS | grep -v ' ' || :; } | comm -23 - taken |
			sed "s/^/ $t:/" | tr -d '\n')"
	done
	[ -z "$extra" ] || { echo "documented but not taken:$extra"; return 1; }
}

@test "every flag a tool takes is in its man page's SYNOPSIS" {
	local t missing=""
	for t in $TOOLS; do
		missing="$missing$(undocumented "$t" SYNOPSIS | grep -vx -- '--help\|--version' |
			sed "s/^/ $t:/" | tr -d '\n')"
	done
	[ -z "$missing" ] || { echo "not in SYNOPSIS:$missing"; return 1; }
}

@test "--help: a usage line, the summary, one line per flag of the table, the man page named" {
	local t
	for t in $TOOLS; do
		run -0 "$t" --help
		[[ ${lines[0]} == "usage: $t "* ]]
		assert_line "       $t -h | -V"
		assert_line "The manual: man $t"
		# every long flag of the table has its help line
		while read -r f; do
			[[ $f == --* ]] || continue
			if [ "$f" = --list-options ]; then continue; fi
			assert_line --regexp "^  (-[A-Za-z], |    )$f( |\[|$)"
		done < <(tool_flags "$t")
	done
}

@test "--help and --list-options fail like any write when standard output is full" {
	local t
	for t in maro-send maro-recv; do
		run -70 --separate-stderr sh -c "$t --help > /dev/full"
		[[ $stderr == "$t: error writing standard output: "* ]]
		run -70 --separate-stderr sh -c "$t --list-options > /dev/full"
	done
}

@test "a shared flag resolves flag > MARO_* > default (name, and the window of maro-send)" {
	local reg=dir:$BATS_TEST_TMPDIR/reg
	# the flag wins over the variable
	MARO_NAME=from-env maro-recv --registry "$reg" -n from-flag --idle-timeout 5s > /dev/null &
	local pid=$!
	wait_until 5 sh -c "maro-peers --registry $reg | grep -q from-flag"
	run -0 maro-peers --registry "$reg"
	refute_output --partial from-env
	kill "$pid"
	wait "$pid" || true
	# the variable, when no flag
	MARO_NAME=from-env maro-recv --registry "$reg" --idle-timeout 5s > /dev/null &
	pid=$!
	wait_until 5 sh -c "maro-peers --registry $reg | grep -q from-env"
	kill "$pid"
	wait "$pid" || true
	# an empty variable is none: the name is required
	run -2 --separate-stderr env MARO_NAME= maro-recv --registry "$reg"
	assert_equal "$stderr" "maro-recv: a name is required (-n NAME or MARO_NAME); try 'maro-recv --help'"
	# a bad variable is a usage error naming it; the flag overrides it
	run -2 --separate-stderr env MARO_WINDOW=x maro-send --registry "$reg" -p nobody -t t -W 1ms
	assert_equal "$stderr" "maro-send: invalid number 'x' for MARO_WINDOW; try 'maro-send --help'"
	run -124 --separate-stderr env MARO_WINDOW=x maro-send --registry "$reg" --window 2 -p nobody -t t -W 100ms
}

@test "a flag a tool does not take, or a value it cannot, is a usage error: exit 2, nothing on stdout" {
	local t
	for t in $TOOLS; do
		run -2 --separate-stderr "$t" --no-such-flag
		[ -z "$output" ]
		[[ $stderr == *"$t: invalid option; try '$t --help'" ]]
	done
	run -2 --separate-stderr maro-recv -n a -W soon
	assert_equal "$stderr" "maro-recv: invalid duration 'soon' for -W (use N[.N][ms|s|m|h]); try 'maro-recv --help'"
	run -2 --separate-stderr maro-send -e nope
	assert_equal "$stderr" "maro-send: invalid -e 'nope' (use TYPE=N, N at least 1); try 'maro-send --help'"
}
