#!/usr/bin/env bats
# The man pages: found by man(1) from the source tree (MANPATH=man) and
# after make install, every one of them.

load helpers

setup() { cd "$BATS_TEST_TMPDIR"; }
teardown() { default_teardown; }

# pages: every page of the tree, as "NAME SECTION" lines
pages() {
	local f
	for f in "$MARO_TOP"/man/*.[17]; do
		f=${f##*/}
		echo "${f%.*} ${f##*.}"
	done
}

@test "man finds every page from the source tree (MANPATH=man), and nothing else" {
	local name sec n=0
	[ "$(pages | wc -l)" -ge 11 ]
	while read -r name sec; do
		run -0 env MANPATH="$MARO_TOP/man" man -w "$sec" "$name"
		assert_output "$MARO_TOP/man/$name.$sec"
		run -0 env MANPATH="$MARO_TOP/man" MANWIDTH=80 man -P cat "$sec" "$name"
		assert_line --partial "$name"
		n=$((n + 1))
	done < <(pages)
	[ "$(pages | wc -l)" -eq "$n" ]
	# the section directories hold links to the pages, and only those
	run -0 sh -c 'cd "$1/man" && ls man1 man7 | grep -v : | grep . | sort' sh "$MARO_TOP"
	assert_output "$(cd "$MARO_TOP/man" && ls ./*.[17] | sed 's|^\./||' | sort)"
}

@test "make install puts every tool and page where man and PATH find them" {
	local d=$BATS_TEST_TMPDIR/root name sec
	run -0 make -s -C "$MARO_TOP" install DESTDIR="$d" PREFIX=/usr \
		TOOLS="$(echo "$MARO_BIN"/maro-*)"
	while read -r name sec; do
		run -0 env MANPATH="$d/usr/share/man" man -w "$sec" "$name"
		assert_output "$d/usr/share/man/man$sec/$name.$sec"
	done < <(pages)
	for name in send recv scatter bcast peers wait-event msg dist pool keygen; do
		[ -x "$d/usr/bin/maro-$name" ]
	done
	run -0 "$d/usr/bin/maro-send" -V
	assert_output --partial "maro-send $(sed -n 's/^VERSION := //p' "$MARO_TOP/GNUmakefile")"
}

@test "every page renders without a stray macro name or a doubled quote; maro(7)'s enumerations read as written" {
	local f out
	for f in "$MARO_TOP"/man/*.[17]; do
		out=$(MANWIDTH=80 man -l -P cat "$f" 2> /dev/null | col -b)
		[ -n "$out" ]
		# a macro name in the text: a Ta outside a column list, a nested quote
		run ! grep -nE '(^|[^A-Za-z])(Ta|Ql|Qo|Qc|Qq|Pq|Po|Pc|Ns|Xr|Fl|Ic|Ar|Em|Sy|Dq)( |$)' <<< "$out"
		run ! grep -n '""' <<< "$out"
	done
	out=$(MANWIDTH=120 man -l -P cat "$MARO_TOP/man/maro.7" 2> /dev/null | col -b)
	grep -qE 'session_type[[:space:]]+text[[:space:]]+"task" or "notification"$' <<< "$out"
	grep -qE 'session_stage[[:space:]]+text[[:space:]]+"request", "receive" or "complete"$' <<< "$out"
}

@test "every page renders at 80 columns without a warning from troff (a line it cannot break)" {
	local f err
	for f in "$MARO_TOP"/man/*.[17]; do
		err=$(MANWIDTH=80 man -l "$f" 2>&1 > /dev/null)
		[ -z "$err" ] || fail "${f##*/}: $err"
	done
}
