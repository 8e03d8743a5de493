#!/usr/bin/env bats
# backends: dir redis
# The collectives of scripts/collective, each run by 4 peers (ranks 0-3),
# each peer a separate process, as on 4 hosts.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	export COLL_TIMEOUT=30s
	collective="$MARO_TOP/scripts/collective"
}
teardown() { default_teardown; }

# peers OP: runs rank r of OP for r = 0..3, input from in.r, output in out.r,
# and waits for all four; their exit statuses end up in st.r.
peers() {
	local r pids=()
	for r in 0 1 2 3; do
		bg 60 bash "$collective" "$1" "$r" 4 < "in.$r" > "out.$r" 2> "err.$r"
		pids+=("$BG_PID")
	done
	for r in 0 1 2 3; do
		wait_exit "${pids[$r]}" 60
		echo "$status" > "st.$r"
	done
}

# all_ok: every peer exited 0 with nothing on stderr but the notice of a
# peer awaited (maro-send says it after 1 s: a busy machine starts ranks late)
all_ok() {
	local r
	for r in 0 1 2 3; do
		[ "$(cat "st.$r")" = 0 ] || { echo "rank $r: exit $(cat "st.$r"): $(cat "err.$r")"; return 1; }
		if grep -Ev "^maro-send: no member named 'coll\.[0-9]+' in group .*; waiting \(-W: [0-9]+s left\)$" \
			"err.$r"; then
			echo "rank $r: $(cat "err.$r")"
			return 1
		fi
	done
}

# out R: rank R's output on one line
out() { tr '\n' ' ' < "out.$1"; }

@test "broadcast: the root's value reaches every rank" {
	echo 'hello world' > in.0
	for r in 1 2 3; do : > "in.$r"; done
	peers broadcast
	all_ok
	for r in 0 1 2 3; do [ "$(cat "out.$r")" = 'hello world' ]; done
}

@test "scatter: value r of the root goes to rank r" {
	printf '%s\n' alpha beta gamma delta > in.0
	for r in 1 2 3; do : > "in.$r"; done
	peers scatter
	all_ok
	[ "$(out 0)$(out 1)$(out 2)$(out 3)" = 'alpha beta gamma delta ' ]
}

@test "gather: the root has every value in rank order" {
	for r in 0 1 2 3; do echo "v$r" > "in.$r"; done
	peers gather
	all_ok
	[ "$(out 0)" = 'v0 v1 v2 v3 ' ]
	[ ! -s out.1 ] && [ ! -s out.2 ] && [ ! -s out.3 ]
}

@test "reduce: the root has the sum, and REDUCE supplies another reduction" {
	for r in 0 1 2 3; do echo $((r * r + 1)) > "in.$r"; done
	peers reduce
	all_ok
	[ "$(out 0)" = '18 ' ]
	REDUCE='sort -n | tail -n 1' peers reduce
	all_ok
	[ "$(out 0)" = '10 ' ]
}

@test "all-reduce: every rank has the sum" {
	for r in 0 1 2 3; do echo $((r + 1)) > "in.$r"; done
	peers all-reduce
	all_ok
	for r in 0 1 2 3; do [ "$(cat "out.$r")" = 10 ]; done
}

@test "all-reduce with a jq reduction over JSON values" {
	for r in 0 1 2 3; do echo "[$r,$((r * 2))]" > "in.$r"; done
	REDUCE='jq -sc "transpose | map(add)"' peers all-reduce
	all_ok
	for r in 0 1 2 3; do [ "$(cat "out.$r")" = '[6,12]' ]; done
}

@test "all-gather: every rank has every value in rank order" {
	for r in 0 1 2 3; do echo "v$r" > "in.$r"; done
	peers all-gather
	all_ok
	for r in 0 1 2 3; do [ "$(out "$r")" = 'v0 v1 v2 v3 ' ]; done
}

@test "reduce-scatter: rank j has the sum of everyone's value j" {
	for r in 0 1 2 3; do printf '%s\n' $((r + 1)) $((10 * (r + 1))) $((100 * (r + 1))) $((1000 * (r + 1))) > "in.$r"; done
	peers reduce-scatter
	all_ok
	[ "$(out 0)$(out 1)$(out 2)$(out 3)" = '10 100 1000 10000 ' ]
}

@test "all-to-all: rank j has value j of every rank, in rank order" {
	for r in 0 1 2 3; do printf "$r.%s\n" 0 1 2 3 > "in.$r"; done
	peers all-to-all
	all_ok
	for j in 0 1 2 3; do [ "$(out "$j")" = "0.$j 1.$j 2.$j 3.$j " ]; done
}

@test "a rank that never comes: the others fail at COLL_TIMEOUT, naming it" {
	export COLL_TIMEOUT=2s
	for r in 0 1 2; do echo "$r" > "in.$r"; done
	local r pids=()
	for r in 0 1 2; do
		bg 30 bash "$collective" allgather "$r" 4 < "in.$r" > "out.$r" 2> "err.$r"
		pids+=("$BG_PID")
	done
	for r in 0 1 2; do
		wait_exit "${pids[$r]}" 30
		# its send reached the two others, not rank 3: done in part
		[ "$status" -eq 1 ]
		grep -q "not delivered to 'coll.3'" "err.$r"
	done
}

@test "usage errors exit 2; a scatter without one line per rank exits 65" {
	run bash "$collective" allreduce 4 4
	[ "$status" -eq 2 ]
	assert_output --partial usage
	run bash "$collective" nosuch 0 4
	[ "$status" -eq 2 ]
	assert_output --partial "unknown operation 'nosuch'"
	run bash "$collective" scatter 0 4 <<< $'a\nb'
	[ "$status" -eq 65 ]
	assert_output --partial 'needs 4 input lines'
}

@test "the usage line lists the operations, by maro(7)'s names" {
	run -2 bash "$collective"
	assert_line "  OP: broadcast scatter gather reduce all-reduce all-gather reduce-scatter all-to-all"
}

@test "a collective of one peer is the identity, or REDUCE of its input" {
	local op
	for op in broadcast scatter gather all-gather all-to-all allgather alltoall; do
		run -0 bash "$collective" "$op" 0 1 <<< 7
		assert_output 7
	done
	for op in reduce all-reduce allreduce reduce-scatter; do
		run -0 bash "$collective" "$op" 0 1 <<< $'3'
		assert_output 3
	done
	REDUCE='sed s/^/r:/' run -0 bash "$collective" all-reduce 0 1 <<< 5
	assert_output r:5
	run -65 bash "$collective" scatter 0 1 <<< $'a\nb'
	assert_output --partial 'needs 1 input line'
	run -2 bash "$collective" reduce 1 1
	assert_output --partial 'RANK must be below SIZE'
}
