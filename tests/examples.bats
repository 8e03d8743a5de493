#!/usr/bin/env bats
# The EXAMPLES of the man pages, run as pasted: each block is read from the
# page itself (so a page that changes is tested as it now reads), with the
# processes the page says to start, and the examples of the tools that talk
# to each other run together.  Left out: maro-keygen's, which copies the key
# to another host with scp; maro-pool's is run with the CPUs this machine has.

load helpers

setup() {
	use_registry
	export MARO_TTL=2s
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

# example PAGE N: the Nth literal block of man/PAGE's EXAMPLES, as a shell
# reads it (\e is a backslash); in a block of "$ " prompts, only the commands.
example() {
	page_example "$1" "$2" | awk '
		{ line[NR] = $0; if ($0 ~ /^\$ /) prompt = 1 }
		END {
			for (i = 1; i <= NR; i++)
				if (!prompt) print line[i]
				else if (line[i] ~ /^\$ /) print substr(line[i], 3)
		}'
}

# output_of PAGE N: the lines of the Nth block that are not commands
output_of() {
	awk -v want="$2" '
		/^\.Sh / { inex = ($2 == "EXAMPLES") }
		inex && /^\.Bd -literal/ { n++; inblk = (n == want); next }
		/^\.Ed/ { inblk = 0; next }
		inblk && !/^\$ / { print }
	' "$MARO_TOP/man/$1"
}

# shell_worker N: maro-recv(1)'s shell worker (it doubles payloads), as worker.N
shell_worker() {
	bg 60 bash -c "$(example maro-recv.1 2 | sed "s/worker\.1/worker.$1/g")" 2> "worker.$1.err"
}

@test "example: extracts the blocks of a page, unescaped, prompts and output left out" {
	run -0 example maro-dist.1 1
	assert_line --index 0 'maro-dist -n worker.1 --raw \'
	run -0 example maro-msg.1 1
	assert_output "maro-msg -t sum -p worker.1 --json '[1, 2, 3]' -f json"
	run -0 example maro-peers.1 9
	assert_output ''
	# every page but maro(7) has examples
	local page
	for page in "$MARO_TOP"/man/maro-*.1; do
		[ -n "$(example "${page##*/}" 1)" ] || fail "${page##*/} has no EXAMPLES block"
	done
}

@test "maro-msg(1): what a message looks like, as the page shows it" {
	local shown
	shown=$(output_of maro-msg.1 1)
	run -0 bash -c "$(example maro-msg.1 1)"
	# the page elides the rest of the line with ...
	[[ "$output" == "${shown%...*}"* ]] || fail "page shows '$shown', the tool writes '$output'"
}

@test "maro-dist(1)'s worker squares what maro-scatter(1) sends and stops on maro-bcast(1)'s stop" {
	local worker
	bg 60 bash -c "$(example maro-dist.1 1)" 2> dist.err
	worker=$BG_PID
	wait_until 10 is_live worker.1
	run -0 timeout 30 bash -c "$(example maro-scatter.1 1)"
	[ "${#lines[@]}" -eq 1000 ]
	[ "$(sort -n <<< "$output")" = "$(seq 1000 | awk '{ print $1 * $1 }')" ]
	# the sweep with a job log: every square once, the second run resumed with nothing to do
	run -0 timeout 60 bash -c "$(example maro-scatter.1 2)"
	assert_output ""
	[ "$(sort -n squares)" = "$(seq 1000 | awk '{ print $1 * $1 }')" ]
	[ "$(awk -F '\t' 'NR > 1 && $7 == "done"' squares.log | wc -l)" -eq 1000 ]
	run -0 timeout 30 bash -c "$(example maro-bcast.1 2)"
	wait_exit "$worker" 10
	[ "$status" -eq 0 ]
	[ ! -s dist.err ] || fail "maro-dist said: $(cat dist.err)"
}

@test "maro-bcast(1): the status of eight workers, once eight are live" {
	local i
	for i in 1 2 3 4 5 6 7 8; do
		bg 60 maro-dist -n "worker.$i" --raw --co '*:status:1' 'while read -r x; do echo idle; done'
	done
	run -0 timeout 30 bash -c "$(example maro-bcast.1 1)"
	[ "${#lines[@]}" -eq 8 ]
	[ "$(jq -r .source <<< "$output" | sort -V | tr '\n' ' ')" = "worker.1 worker.2 worker.3 worker.4 worker.5 worker.6 worker.7 worker.8 " ]
	[ "$(jq -r .payload <<< "$output" | sort -u)" = idle ]
}

@test "maro-recv(1)'s shell worker answers maro-send(1) and the --async requests of maro-recv(1)" {
	shell_worker 1
	wait_until 10 is_live worker.1
	run -0 timeout 30 bash -c "$(example maro-send.1 1)"
	assert_output 42
	run -0 timeout 40 bash -c "$(example maro-recv.1 3)"
	[ "$(maro-msg -f payload <<< "$output")" = 42 ]
	[ "$(maro-msg -f json < sent | jq -r .session_id)" = "$(maro-msg -f json <<< "$output" | jq -r .session_id)" ]
	# the README's worker is the same pipeline, and so is maro-msg(1)'s
	[ "$(example maro-recv.1 2)" = "$(sed -n '/^    # terminal 1/,/maro-send$/p' "$MARO_TOP/README.md" | sed '1d; s/^    //')" ]
	[ "$(example maro-msg.1 4 | sed 's/ reply -n worker.1 / reply /; s/-i json reply/reply -i json/')" = "$(example maro-recv.1 2)" ]
}

@test "maro-msg(1): one task for each of three workers, their replies written" {
	shell_worker 1
	shell_worker 2
	shell_worker 3
	wait_until 10 live_is worker. 3
	run -0 timeout 30 bash -c "$(example maro-msg.1 2)"
	[ "$(maro-msg -f json <<< "$output" | jq -r '"\(.source) \(.payload)"' | sort)" = "$(printf 'worker.%s 42\n' 1 2 3)" ]
}

@test "maro-msg(1): replies computed by another program, and a file of messages checked" {
	local i
	printf '#!/bin/sh\nawk '\''{ print $1 * 2; fflush() }'\''\n' > compute
	chmod +x compute
	for i in $(seq 10); do
		bg 60 maro-send -p worker.2 -t double --json "$i" -f payload -W 50s > "reply.$i"
	done
	run -0 timeout 40 bash -c "$(example maro-msg.1 5)"
	for i in $(seq 10); do
		wait_until 10 has_lines "reply.$i" 1
		[ "$(cat "reply.$i")" = $((2 * i)) ]
	done
	cp reqs.cbor sent.cbor
	run -0 bash -c "$(example maro-msg.1 3 | sed -n 2p)"
	assert_output ok
	printf '\377' >> sent.cbor
	run -65 maro-msg --check < sent.cbor
}

@test "maro-peers(1): eight workers, waited for, then told to go; the names of the live ones" {
	local i block
	bg 60 bash -c "$(example maro-peers.1 2)" 2> block.err
	block=$BG_PID
	wait_exit "$block" 40
	[ "$status" -eq 0 ] || fail "the block exited $status: $(cat block.err)"
	for i in 1 2 3 4 5 6 7 8; do
		wait_until 10 has_lines "out.$i" 0
		[ "$(maro-msg -f json < "out.$i" | jq -r '"\(.tag) \(.payload)"')" = "go now" ]
	done
	run -0 bash -c "$(example maro-peers.1 3)"
	[ "$(sort -V <<< "$output" | tr '\n' ' ')" = "worker.1 worker.2 worker.3 worker.4 worker.5 worker.6 worker.7 worker.8 " ]
	# the listing has the page's columns
	run -0 bash -c "$(example maro-peers.1 1)"
	[ "$(head -n 1 <<< "$output" | tr -s ' ')" = "$(output_of maro-peers.1 1 | head -n 1 | tr -s ' ')" ]
}

@test "maro-peers(1): the metrics for a textfile collector; the page and /metrics served on the loopback" {
	command -v promtool > /dev/null || skip "promtool is not installed (make deps installs Debian's prometheus)"
	bg 60 maro-recv -n worker.1 > /dev/null
	wait_until 10 live_is worker. 1
	run -0 bash -c "$(example maro-peers.1 6)"
	promtool check metrics < maro.prom
	grep -q '^maro_component_up{.*name="worker.1"' maro.prom
	[ ! -e maro.prom.tmp ]
	# port 9464 may be another's on this machine: a free one, and the hour as a bound
	[ "$(example maro-peers.1 7)" = "maro-peers --serve 9464 -W 1h" ]
	bg 30 bash -c "$(example maro-peers.1 7 | sed 's/9464 -W 1h/0 -W 20s/')" > url
	wait_until 10 has_lines url 1
	run -0 curl -sS "$(cat url)metrics"
	assert_line "maro_registry_up{group=\"$MARO_GROUP\"} 1"
}

@test "maro-send(1): wait for four workers, then tell each to reset" {
	local i
	for i in 1 2 3 4; do
		bg 60 maro-recv -n "worker.$i" -C 1 > "out.$i"
	done
	run -0 timeout 40 bash -c "$(example maro-send.1 3)"
	for i in 1 2 3 4; do
		wait_until 10 has_lines "out.$i" 0
		[ "$(maro-msg -f json < "out.$i" | jq -r .tag)" = reset ]
	done
}

@test "maro-wait-event(1): the master's barrier returns on the worker's report" {
	local master
	# the worker whose report it is: a live member (60% of no live worker cannot hold)
	bg 60 maro-recv -n worker.3 > /dev/null
	bg 60 bash -c "$(example maro-wait-event.1 1)" > got 2> wait.err
	master=$BG_PID
	wait_until 10 is_live master
	wait_until 10 is_live worker.3
	run -0 timeout 30 bash -c "$(example maro-wait-event.1 2)"
	wait_exit "$master" 10
	[ "$status" -eq 0 ] || fail "maro-wait-event exited $status: $(cat wait.err)"
	[ "$(maro-msg -f json < got | jq -r '"\(.source) \(.tag) \(.payload)"')" = "worker.3 update 60" ]
}

@test "maro-wait-event(1): either both halves, or the fallback" {
	local master left
	bg 60 bash -c "$(example maro-wait-event.1 3)" > got 2> wait.err
	master=$BG_PID
	wait_until 10 is_live master
	# a report under an OR waits for the event, which may take the other branch
	bg 60 maro-send -n left -p master -t done --notification -W 4s
	left=$BG_PID
	run -0 maro-send -n fallback -p master -t done --notification -W 10s
	wait_exit "$master" 10
	[ "$status" -eq 0 ] || fail "maro-wait-event exited $status: $(cat wait.err)"
	[ "$(jq -r .source < got)" = fallback ]
	# the half it did not take was never acknowledged: still its sender's
	wait_exit "$left" 10
	[ "$status" -eq 124 ]
}

@test "maro-dist(1): the learner trains when 60% of the workers sent experience" {
	local learner
	printf '#!/bin/sh\ncat > /dev/null\necho trained >> trained.log\n' > train.sh
	chmod +x train.sh
	bg 60 bash -c "$(example maro-dist.1 2)" 2> dist.err
	learner=$BG_PID
	bg 60 maro-recv -n worker.1 > /dev/null
	wait_until 10 is_live learner
	wait_until 10 is_live worker.1
	run -0 maro-send -n worker.1 -p learner -t experience -d x --notification -W 10s
	wait_until 10 has_lines trained.log 1
	[ ! -s dist.err ] || fail "maro-dist said: $(cat dist.err)"
}

@test "maro-dist(1): a --json-lines worker's objects come back as objects, not strings" {
	run -0 timeout 40 bash -c "$(example maro-dist.1 3)"
	assert_output $'{"n":1,"sq":1}\n{"n":2,"sq":4}\n{"n":3,"sq":9}'
}

@test "maro-dist(1): a worker in another directory runs the job's code the master serves as a bundle" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	bg 60 bash -c "$(example maro-dist.1 4)" > out 2> block.err
	wait_until 30 has_lines out 3 || fail "$(cat block.err)"
	[ "$(cat out)" = $'done:1\ndone:2\ndone:3' ]
	[ -x "$(echo cache/maro/bundles/*/run.sh)" ]
}

@test "maro-pool(1): workers pinned one per CPU square what the master scatters" {
	local n block
	n=$(nproc)
	bg 90 bash -c "$(example maro-pool.1 1 | sed "s/--cpus 0-7/--cpus 0-$((n - 1))/; s/worker=8/worker=$n/")" > squares 2> block.err
	block=$BG_PID
	wait_exit "$block" 80
	[ "$status" -eq 0 ] || fail "the block exited $status: $(cat block.err)"
	[ "$(sort -n squares)" = "$(seq 1000 | awk '{ print $1 * $1 }')" ]
	run -0 bash -c "$(example maro-pool.1 2)"
	assert_line --regexp "^worker +$n$"
}
