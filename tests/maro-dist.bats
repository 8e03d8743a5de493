#!/usr/bin/env bats
# backends: dir redis
# maro-dist: handlers run per trigger and as coprocesses.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	export MARO_TTL=1s
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

live() { maro-peers -f json | grep -c "\"$1" || :; }

# requests N [REPLY_TO]: N echo tasks for worker.1 (payloads 1..N), as CBOR, in in.cbor
requests() {
	local to=${2:+\"reply_to\":\"$2\",}
	seq "$1" | sed "s/.*/{\"tag\":\"echo\",\"destination\":\"worker.1\",$to\"session_type\":\"task\",\"payload\":&}/" |
		maro-msg -i json > in.cbor
}

# gated_worker [VAR=VALUE...] [FLAG...]: maro-dist worker.1 (-v and the
# FLAGs, stderr in dist.err; $dist is its bg pid) in the environment's
# VARs, whose --raw coprocess writes each task to "seen" and answers only
# once a line comes through the fifo "gate"
gated_worker() {
	local vars=()
	while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
		vars+=("$1")
		shift
	done
	mkfifo gate
	bg 60 env "${vars[@]}" maro-dist -n worker.1 -v "$@" --raw --co '*:echo:1' \
		'tee seen | { read -r g < gate; cat; }' 2> dist.err
	dist=$BG_PID
}

# echo_worker: maro-dist worker.1 answering through a cat coprocess, once
# it is live; $dist is the maro-dist process itself, fds counts its descriptors
# echo_worker [-v]: worker.1, answering each task with its payload; with
# -v, what it says goes to dist.err.  Sets dist to its pid.
echo_worker() {
	if [ "${1:-}" = -v ]; then
		bg 60 maro-dist -n worker.1 -v --raw --co '*:echo:1' cat 2> dist.err
	else
		bg 60 maro-dist -n worker.1 --raw --co '*:echo:1' cat
	fi
	maro-peers -e worker=1 -W 10s -q || { echo "worker.1 did not join" >&2; return 1; }
	dist=$(child_pid "$BG_PID" maro-dist)
}
fds() { ls "/proc/$dist/fd" | wc -l; }

# start_collector: a receiver named collector, payloads in "got"; $collector is its pid
start_collector() {
	bg 60 maro-recv -n collector -f payload > got
	collector=$(child_pid "$BG_PID" maro-recv)
}

@test "usage: a handler is needed, --exit goes after --on, events are checked" {
	run maro-dist -n w
	assert_failure 2
	run maro-dist -n w --exit
	assert_failure 2
	run maro-dist -n w --on 'bad' true
	assert_failure 2
	assert_output --partial "column"
	run maro-dist -n w --on 'a:b:1'
	assert_failure 2
	assert_output --partial "needs a command"
}

@test "per-trigger handler: messages on stdin, replies back, MARO_* set" {
	bg 60 maro-dist -n worker.1 --on '*:double:1' \
		'maro-msg -f json | jq -c --arg n "$MARO_NAME/$MARO_TYPE/$MARO_EVENT" ".payload |= [. * 2, \$n]" | maro-msg reply -i json'
	run timeout 30 maro-send -p worker.1 -t double --json 21 -W 20s -f payload
	assert_success
	assert_output '[42,"worker.1/worker/*:double:1"]'
}

@test "coprocess handler with --raw: one long-lived shell loop answers many tasks" {
	bg 60 maro-dist -n worker.1 --raw --co '*:square:1' 'while read n; do echo $((n * n)); done'
	run timeout 30 sh -c 'seq 50 | maro-scatter -P worker -t square --json-lines --window 4 --ordered -W 20s -f payload'
	assert_success
	[ "$output" = "$(seq 50 | awk '{ print $1 * $1 }')" ]
	# one coprocess, not fifty
	[ "$(pgrep -c -P "$(child_pid "$BG_PID" maro-dist)")" -eq 1 ]
}

@test "a failing handler answers its task with a failure reply: its exit status or signal and its stderr's tail, escaped where printed" {
	bg 60 maro-dist -n worker.1 --on '*:flaky:1' \
		'if [ -e ok ]; then maro-msg reply -d done; else touch ok; printf "one\nbad \033[31mred\n" >&2; exit 3; fi' \
		--on '*:die:1' 'kill -9 $$' 2> err
	maro-peers -e worker=1 -W 10s -q
	# not sent again until -W: answered at once, the sender fails (3) with the reason
	run -3 --separate-stderr timeout 30 maro-send -p worker.1 -t flaky -d x -W 25s -f payload
	[ -z "$output" ]
	[[ "$stderr" == "maro-send: 'worker.1' failed the task in session "*': exited 3: one\nbad \x1b[31mred' ]]
	grep -q "^maro-dist: handler for '\*:flaky:1' exited 3: 1 task request answered with a failure reply$" err
	# its stderr still reaches ours, as it was
	grep -q $'^bad \033\\[31mred$' err
	# the handler runs again for the next request
	run -0 timeout 30 maro-send -p worker.1 -t flaky -d x -W 25s -f payload
	assert_output done
	rm ok
	# on the wire: error "failed", the reason unescaped as the payload
	run -0 timeout 30 sh -c 'maro-send --async -n me -p worker.1 -t flaky -d x -W 20s > /dev/null &&
		maro-recv -n me -C 1 -W 20s -f json'
	[ "$(jq -r '[.session_stage, .error, .payload] | join("|")' <<< "$output")" = $'complete|failed|exited 3: one\nbad \033[31mred' ]
	# killed: the signal's name
	run -3 --separate-stderr timeout 30 maro-send -p worker.1 -t die -d x -W 25s
	[[ "$stderr" == *"failed the task in session "*": killed by SIGKILL" ]]
}

@test "a handler failing a notification: said on stderr, acknowledged (no one to answer), not run again" {
	bg 60 maro-dist -n worker.1 --on '*:note:1' 'echo run >> runs; exit 1' 2> dist.err
	maro-peers -e worker=1 -W 10s -q
	run -0 timeout 30 maro-send -p worker.1 -t note --notification -d x -W 10s
	grep -q "^maro-dist: handler for '\*:note:1' exited 1: 1 notification acknowledged, not handled$" dist.err
	assert_equal "$(wc -l < runs)" 1
}

@test "a handler that leaves a background command holding its output: said, and the worker goes on within about a second" {
	bg 60 maro-dist -n worker.1 --raw --on '*:t:1' 'read -r x; sleep 30 & echo "r$x"' 2> dist.err
	maro-peers -e worker=1 -W 10s -q
	local t0 ms
	t0=$(date +%s%N)
	run -0 timeout 20 maro-send -p worker.1 -t t -d 1 -W 8s -f payload
	ms=$((($(date +%s%N) - t0) / 1000000))
	assert_output r1
	# about a second, not the background command's 30 s nor -W: 6 s for a
	# machine busy with other suites
	[ "$ms" -lt 6000 ]
	grep -q "^maro-dist: handler for '\*:t:1' ended, but a process it left running holds its standard output open: going on with the 3 bytes it wrote" dist.err
	# the next trigger is not stalled behind it
	run -0 timeout 20 maro-send -p worker.1 -t t -d 2 -W 8s -f payload
	assert_output r2
}

@test "a CBOR coprocess fails a task with a reply that carries 'error': a failed attempt toward --retries" {
	bg 60 maro-dist -n worker.1 --co '*:t:1' \
		'maro-msg reply -d "no lens there" | maro-msg -f json | jq -c --unbuffered ".error = \"failed\"" | maro-msg -i json'
	maro-peers -e worker=1 -W 10s -q
	run -3 --separate-stderr timeout 30 maro-send -p worker.1 -t t -d x -W 20s
	[[ "$stderr" == "maro-send: 'worker.1' failed the task in session "*": no lens there" ]]
	run -3 --separate-stderr timeout 30 sh -c 'echo 1 | maro-scatter -P worker -t t --retries 2 -W 20s'
	[[ "$stderr" == *"line 1 of the input given up after 2 failed attempts ('worker.1': no lens there): payload \"1\""* ]]
}

@test "--fail-prefix: a --raw coprocess fails one task on purpose; --retries counts it, the others are answered" {
	run -2 maro-dist -n worker.1 --fail-prefix 'ERR ' --co '*:j:1' cat
	assert_output --partial "--fail-prefix goes with --raw"
	run -2 maro-dist -n worker.1 --raw --fail-prefix '' --co '*:j:1' cat
	assert_output --partial "--fail-prefix must be one line, not empty"
	bg 60 maro-dist -n worker.1 --raw --fail-prefix 'ERR ' --co '*:sq:1' \
		'while read -r n; do echo "$n" >> runs; if [ "$n" = 3 ]; then echo "ERR three is unlucky"; else echo $((n * n)); fi; done'
	maro-peers -e worker=1 -W 10s -q
	run -3 --separate-stderr timeout 30 maro-send -p worker.1 -t sq -d 3 -W 20s
	[[ "$stderr" == "maro-send: 'worker.1' failed the task in session "*": three is unlucky" ]]
	: > runs
	run -3 --separate-stderr timeout 30 sh -c 'seq 5 | maro-scatter -P worker -t sq --ordered --retries 2 --failed failed.cbor -W 20s -f payload'
	assert_output $'1\n4\n16\n25'
	[[ "$stderr" == *"line 3 of the input given up after 2 failed attempts ('worker.1': three is unlucky): payload \"3\""* ]]
	assert_equal "$(grep -c '^3$' runs)" 2
	[ "$(maro-msg -f payload < failed.cbor)" = 3 ]
	# without --retries: given up at the first failure
	run -3 --separate-stderr timeout 30 sh -c 'echo 3 | maro-scatter -P worker -t sq -W 20s -f payload'
	[[ "$stderr" == *"line 1 of the input given up after 1 failed attempt ('worker.1': three is unlucky)"* ]]
}

@test "an exit event ends the loop with 0, after the other handlers" {
	bg 60 maro-dist -n worker.1 --on '*:work:1' 'maro-msg reply' --on '*:stop:1' --exit
	dist=$BG_PID
	run timeout 20 maro-send -p worker.1 -t work -d a -W 15s -f payload
	assert_success
	assert_output a
	run timeout 20 maro-send -p worker.1 -t stop --notification -W 15s
	assert_success
	wait_exit "$dist" 10
	[ "$status" -eq 0 ]
	[ "$(live worker.1)" -eq 0 ]
}

@test "SIGTERM stops cleanly: 143, entry gone, coprocess gone" {
	bg 60 maro-dist -n worker.1 --raw --co '*:x:1' 'cat'
	dist=$(child_pid "$BG_PID" maro-dist)
	co=$(child_pid "$dist" sh)
	wait_until 10 live_is worker.1 1
	kill -TERM "$dist"
	wait_exit "$BG_PID" 10
	[ "$status" -eq 143 ]
	[ "$(live worker.1)" -eq 0 ]
	run ! kill -0 "$co" 2>/dev/null
}

@test "a master/worker round: dist workers, scatter, wait-event on progress" {
	for i in 1 2 3; do
		bg 60 maro-dist -n "worker.$i" --raw --co 'master:square:1' \
			'while read n; do echo $((n * n)); done' \
			--on 'master:report:1' '(maro-send -n "$MARO_NAME" -p master -t progress -d "$MARO_NAME" --notification -W 20s >/dev/null &); echo ok'
	done
	wait_until 10 live_is worker. 3
	run timeout 30 sh -c 'seq 30 | maro-scatter -n master -P worker -t square --json-lines -W 20s -f payload | sort -n'
	assert_success
	[ "$output" = "$(seq 30 | awk '{ print $1 * $1 }' | sort -n)" ]
	run timeout 30 maro-bcast -n master -P worker -t report -W 20s -f payload
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	run timeout 30 maro-wait-event -n master -W 20s -f payload 'worker:progress:100%'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | sort | tr '\n' ' ')" = "worker.1 worker.2 worker.3 " ]
}

# acks_best ENDPOINT N PROMPT: the time (us) N messages took to ENDPOINT,
# each waiting for its ack, sent with the header's prompt flag (PROMPT 1) or
# without (0): the best of three, for a machine busy with other suites
acks_best() {
	local best=999999999 i t
	for i in 1 2 3; do
		t=$(timeout 20 "$MARO_BIN/../tests/unit-tests" acks "$1" "$2" "$3") || return 1
		[ "$t" -ge "$best" ] || best=$t
	done
	echo "$best"
}

@test "acknowledgements are held up to 2 ms, and sent at once to a sender whose frame asks (maro(7))" {
	bg 60 maro-dist -n worker.1 --raw --co '*:echo:1' 'cat > /dev/null'
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	ep=$(maro-peers -P worker.1 -f json | jq -r .endpoint)
	# 20 messages one at a time, each waiting for its ack: held, each waits its 2 ms
	run acks_best "$ep" 20 0
	assert_success
	held=$output
	[ "$held" -ge 36000 ]
	# the same with the header's prompt flag: no wait for the delay.  The
	# difference, not a ratio: a busy machine slows both runs alike, and
	# the best of three of each leaves the 20 delays of 2 ms (40 ms)
	run acks_best "$ep" 20 1
	assert_success
	echo "held $held us, prompt $output us"
	[ $((held - output)) -ge 30000 ]
}

# reply_endpoint PREFIX: the endpoint of the reply inbox ~PREFIX.* (never listed by maro-peers)
reply_endpoint() {
	local key
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		key=$(redis-cli -p "$(redis_port)" --scan --pattern "maro:$MARO_GROUP:m:~$1.*" | head -n 1)
		[ -n "$key" ] && redis-cli -p "$(redis_port)" HGET "$key" endpoint
	else
		sed -n 's/^endpoint=//p' "${MARO_REGISTRY#dir:}/$MARO_GROUP/~$1."*.entry 2> /dev/null | head -n 1
	fi
}
has_reply_inbox() { [ -n "$(reply_endpoint "$1")" ]; }

@test "a scatter's reply inbox holds its acknowledgements up to 20 ms, and sends them at once to a sender whose frame asks (maro(7))" {
	[ "${MARO_TEST_BACKEND:-dir}" != sentinel ] || skip "the reply inbox's entry is read from a dir: or a plain Redis registry"
	bg 60 maro-dist -n sink.1 --raw --co '*:echo:1' 'cat > /dev/null'
	run maro-peers -e sink=1 -W 10s -q
	assert_success
	# a task its worker never answers: the scatter and its reply inbox stay
	bg 60 sh -c 'echo 1 | exec maro-scatter -n boss -P sink -t echo -W 30s -f payload'
	wait_until 10 has_reply_inbox boss
	ep=$(reply_endpoint boss)
	# 10 messages one at a time, each waiting for its ack: each waits its 20 ms (2 ms before)
	run acks_best "$ep" 10 0
	assert_success
	held=$output
	[ "$held" -ge 180000 ]
	# the same with the header's prompt flag: no wait for the delay (200 ms less)
	run acks_best "$ep" 10 1
	assert_success
	echo "held $held us, prompt $output us"
	[ $((held - output)) -ge 150000 ]
}

@test "an answered task is settled by its reply: no acknowledgement, no resend, every task answered once" {
	echo_worker
	# the worker sends no ack for these: were the reply not to settle a task,
	# an outbox window of 8 would fill, and wait a second to send them again
	run timeout 30 sh -c 'seq 300 | MARO_WINDOW=8 maro-scatter -P worker -t echo --window 4 -v -W 20s -f payload 2> err | sort -n'
	assert_success
	[ "$output" = "$(seq 300)" ]
	grep -q "300 tasks, 300 answered, 0 resent, 0 stray replies" err
}

@test "replies through an outbox window of 2 keep moving: room made while waiting is used at once" {
	bg 60 env MARO_WINDOW=2 maro-dist -n worker.1 --raw --co '*:echo:1' cat
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	# every reply waits for the acknowledgement of the one before; when the
	# worker read that acknowledgement while waiting for room, it slept up to
	# 100 ms all the same (these took ~30 s, and hit the -W)
	requests 5000
	run timeout 60 sh -c 'maro-send -n master -W 20s -f payload < in.cbor | sort -n'
	assert_success
	[ "$output" = "$(seq 5000)" ]
}

@test "a CBOR coprocess may answer out of order: each reply goes to its own request" {
	# answers each pair of tasks second first: a reply then matches a
	# request behind the oldest waiting one, by its session
	bg 60 maro-dist -n worker.1 --co '*:echo:1' 'maro-msg -f json |
		while read -r a && read -r b; do printf "%s\n%s\n" "$b" "$a"; done |
		sed -u "s/\"payload\":\([0-9]*\)/\"payload\":\"r\1\"/" | maro-msg reply -i json'
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	requests 200
	run timeout 60 maro-send -n master -W 20s -f payload < in.cbor
	assert_success
	[ "${lines[0]}" = r2 ]
	[ "${lines[1]}" = r1 ]
	[ "${lines[199]}" = r199 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -V)" = "$(seq 200 | sed 's/^/r/')" ]
}

@test "a task sent again while its coprocess works on it is not handed over twice" {
	gated_worker
	requests 20
	bg 60 maro-send -n master -v -W 30s -f payload < in.cbor > got 2> send.err
	send=$BG_PID
	wait_until 20 has_lines seen 20
	# unanswered for 1 s, then 2 s more: the sender sends all 20 again, twice
	wait_until 20 sh -c '[ "$(grep -c "no acknowledgement from .worker.1. in .* ms: sending 20 again" send.err)" -ge 2 ]'
	echo go > gate
	wait_exit "$send" 30
	[ "$status" -eq 0 ]
	[ "$(sort -n got)" = "$(seq 20)" ]
	# with --raw a line answers the oldest request waiting: a copy handed
	# over again would take the answer of another
	[ "$(wc -l < seen)" -eq 20 ]
	run ! grep -q "no request waits for" dist.err
}

@test "stopped by a signal with replies it cannot send: one line counts them, exit 143" {
	gated_worker MARO_WINDOW=1
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	requests 50
	bg 60 sh -c 'maro-send -n master -W 50s < in.cbor > /dev/null 2>&1'
	requester=$(child_pid "$BG_PID" maro-send)
	wait_until 20 has_lines seen 50
	# the requester stops: one answer fills the window of 1, the rest wait
	kill -STOP "$requester"
	echo go > gate
	wait_until 20 grep -q "connecting to '~master" dist.err
	kill -TERM "$(child_pid "$dist" maro-dist)"
	wait_exit "$dist" 20
	dist_status=$status
	kill -9 "$requester"
	[ "$dist_status" -eq 143 ]
	run grep -c "cannot send" dist.err
	[ "$output" = 0 ]
	run grep "stopped by a signal" dist.err
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" =~ "stopped by a signal: "[0-9]+" replies not sent, "[01]" sent but not acknowledged" ]]
}

@test "a reply waiting for room longer than a TTL: the worker stays listed, and -W still ends the wait (124)" {
	gated_worker MARO_WINDOW=1 -W 12s
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	requests 50
	bg 60 sh -c 'maro-send -n master -W 50s < in.cbor > /dev/null 2>&1'
	requester=$(child_pid "$BG_PID" maro-send)
	wait_until 20 has_lines seen 50
	# the requester stops: one answer fills the window of 1, the rest wait
	kill -STOP "$requester"
	echo go > gate
	wait_until 20 grep -q "connecting to '~master" dist.err
	# more than two TTLs (2 s here) of waiting: listed at every look (a
	# worker that did not beat while it waited left the registry)
	end=$((SECONDS + 5))
	while [ "$SECONDS" -lt "$end" ]; do
		is_live worker.1 || { kill -9 "$requester"; echo "worker.1 not listed" >&2; return 1; }
		sleep 0.2
	done
	wait_exit "$dist" 20
	dist_status=$status
	kill -9 "$requester"
	[ "$dist_status" -eq 124 ]
	run grep "stopped by -W" dist.err
	assert_success
	[[ "$output" =~ "stopped by -W: "[0-9]+" replies not sent" ]]
}

@test "'no handler' replies waiting for room when -W comes: 124 and one line counts them (not 70)" {
	start_collector
	bg 60 env MARO_WINDOW=1 maro-dist -n worker.1 -v -W 5s --on '*:other:1' true 2> dist.err
	dist=$BG_PID
	run maro-peers -e worker=1 -e collector=1 -W 10s -q
	assert_success
	# the replies go to a named inbox that takes nothing: one fills the window
	kill -STOP "$collector"
	requests 20 collector
	bg 60 sh -c 'maro-send -W 30s < in.cbor > /dev/null 2>&1'
	send=$BG_PID
	wait_exit "$dist" 20
	dist_status=$status
	kill -9 "$collector"
	[ "$dist_status" -eq 124 ] || { cat dist.err; false; }
	run grep -c "out of memory" dist.err
	assert_output 0
	grep -q "stopped by -W: [0-9]* replies not sent" dist.err
}

@test "a handler that writes all the time: the worker stays listed while it runs" {
	bg 60 maro-dist -n worker.1 --raw --on '*:echo:1' \
		'for i in $(seq 40); do printf "%s " $i; echo $i >> ran; sleep 0.1; done; echo'
	run maro-peers -e worker=1 -W 10s -q
	assert_success
	requests 1
	bg 60 sh -c 'maro-send -n master -W 30s -f payload < in.cbor > out'
	send=$BG_PID
	wait_until 10 test -s ran
	# 4 s of output every 0.1 s: more than two TTLs (2 s here)
	while kill -0 "$send" 2> /dev/null && ! has_lines ran 40; do
		is_live worker.1 || { echo "worker.1 not listed after $(wc -l < ran) lines" >&2; return 1; }
		sleep 0.2
	done
	wait_exit "$send" 20
	[ "$status" -eq 0 ]
	# one line, written a piece at a time
	[ "$(cat out)" = "$(echo $(seq 40)) " ]
}

@test "stopped by a signal, it acknowledges no request whose reply it did not send" {
	start_collector
	gated_worker MARO_WINDOW=1
	run maro-peers -e worker=1 -e collector=1 -W 10s -q
	assert_success
	# replies go to a named inbox that takes nothing: one fills the window
	kill -STOP "$collector"
	requests 50 collector
	bg 60 sh -c 'maro-send -W 5s < in.cbor 2> send.err'
	send=$BG_PID
	wait_until 20 has_lines seen 50
	echo go > gate
	wait_until 20 grep -q "connecting to 'collector'" dist.err
	kill -TERM "$(child_pid "$dist" maro-dist)"
	wait_exit "$dist" 20
	[ "$status" -eq 143 ]
	# the 49 replies never sent leave their requests with the sender
	# (it counted all 50 delivered before)
	wait_exit "$send" 20
	kill -9 "$collector"
	[ "$status" -eq 1 ]
	grep -q "timed out: 49 not delivered" send.err
}

@test "stopped by a signal, it still delivers the replies it had queued, for a moment" {
	start_collector
	gated_worker
	run maro-peers -e worker=1 -e collector=1 -W 10s -q
	assert_success
	kill -STOP "$collector"
	requests 50 collector
	bg 60 maro-send -W 30s < in.cbor
	send=$BG_PID
	wait_until 20 has_lines seen 50
	echo go > gate
	# the sender's 50 are acknowledged once their replies are queued
	wait_exit "$send" 30
	[ "$status" -eq 0 ]
	# the replies' inbox comes back once the signal came: they reach it
	kill -TERM "$(child_pid "$dist" maro-dist)"
	wait_until 10 grep -q "stopping: 50 replies queued" dist.err
	kill -CONT "$collector"
	wait_exit "$dist" 20
	[ "$status" -eq 143 ]
	wait_until 10 has_lines got 50
	[ "$(sort -n got)" = "$(seq 50)" ]
	kill -TERM "$collector"
}

@test "the socket to a finished requester's reply inbox is closed once idle: no descriptor kept per requester" {
	echo_worker -v
	before=$(fds)
	# five requesters come and go, each with its own reply inbox
	for i in 1 2 3 4 5; do
		run timeout 20 sh -c "echo $i | maro-scatter -P worker -t echo -W 15s -f payload"
		assert_success
		assert_output "$i"
	done
	# each left a socket behind, which keeps trying to reconnect to it (the
	# last one's at least: on a busy machine the first may have idled out)...
	[ "$(fds)" -gt "$before" ]
	# ...until it has been idle for 5 s (maro(7), DELIVERY)
	fds_back() { [ "$(fds)" -le "$before" ]; }
	wait_until 20 fds_back
	# each closed once, and said so under -v
	run -0 grep -c "closed the connection to '~.*': nothing to send to it for 5 s" dist.err
	assert_output 5
	# and a new requester is answered as before
	run timeout 20 sh -c "echo 6 | maro-scatter -P worker -t echo -W 15s -f payload"
	assert_success
	assert_output 6
}

@test "a requester still gets its replies after another's socket closed and a third one came" {
	echo_worker -v
	# A comes and goes: the first socket of the worker's table
	run timeout 20 sh -c "echo a | maro-scatter -P worker -t echo -W 15s -f payload"
	assert_success
	assert_output a
	# B stays, fed a task at a time: the second
	mkfifo feed
	bg 60 sh -c 'maro-scatter -P worker -t echo -W 50s -f payload < feed > b.out'
	b=$BG_PID
	exec 5> feed
	echo b1 >&5
	wait_until 20 has_lines b.out 1
	# A's socket idles out and closes (5 s) while B keeps busy: B's moves
	# into its place.  The worker says so under -v: a count of descriptors
	# taken after B's first reply missed a close that came before it
	n=1
	a_closed() { n=$((n + 1)); echo "b$n" >&5; grep -q "closed the connection to '~.*': nothing to send" dist.err; }
	wait_until 20 a_closed
	run -0 grep -c "closed the connection to" dist.err
	assert_output 1
	# C: a new socket, in the place B's had; its reply and B's must not cross
	run timeout 20 sh -c "echo c | maro-scatter -P worker -t echo -W 15s -f payload"
	assert_success
	assert_output c
	echo last >&5
	exec 5>&-
	wait_exit "$b" 30
	[ "$status" -eq 0 ]
	[ "$(tail -n 1 b.out)" = last ]
	[ "$(wc -l < b.out)" -eq $((n + 1)) ]
}

# ask KIND BYTES: one echo task to worker.1 whose payload is the CBOR item
# BYTES (printf escapes), from requester KIND; its reply (payload) in out.KIND
ask() {
	printf "\xa2\x63tag\x64echo\x67payload$2" |
		maro-send -n "$1" -p worker.1 -W 3s -f payload > "out.$1" 2> "err.$1"
}

@test "--raw: every requester gets the reply to its own payload, whatever payloads came before (finding: a simple value shifted every later reply)" {
	local sh_loop='while IFS= read -r x; do printf "reply-to:%s\\n" "$x"; done'
	bg 60 maro-dist -n worker.1 --raw --co '*:echo:1' "$sh_loop" 2> dist.err
	wait_until 10 live_is worker. 1
	# payloads JSON cannot say (given as {"cbor":...}), and ones that are a
	# line only once made JSON (a line break, a map, bytes), between honest ones
	local kinds=('\xf8\x20' '\xf0' '\xc6\x01' '\x63a\x0ab' '\xa1\x61k\x01' '\x42\x0a\x0a' '\xf7' '\xf8\xff')
	local want=('{"cbor":"-CA"}' '{"cbor":"8A"}' '{"cbor":"xgE"}' '"a\nb"' '{"k":1}' '"Cgo"' 'null' '{"cbor":"-P8"}')
	local k
	for k in "${!kinds[@]}"; do
		run ask "bad$k" "${kinds[$k]}"
		run -0 timeout 10 maro-send -n "good$k" -p worker.1 -t echo -d "secret-$k" -W 5s -f payload
		assert_output "reply-to:secret-$k"
	done
	# and each odd one got its own
	for k in "${!kinds[@]}"; do
		run cat "out.bad$k"
		assert_output "reply-to:${want[$k]}"
	done
}

@test "--raw --on: an odd payload keeps the pairing of lines and requests in one run right" {
	bg 60 maro-dist -n worker.1 --raw --on '*:echo:2' 'while IFS= read -r x; do printf "r:%s\\n" "$x"; done' 2> dist.err
	wait_until 10 live_is worker. 1
	# one connection, in this order: a payload JSON cannot say, then "mine"
	run -0 --separate-stderr timeout 10 bash -c 'printf "\xa3\x63tag\x64echo\x6asession_id\x65s-bad\x67payload\xf8\x20\xa3\x63tag\x64echo\x6asession_id\x66s-good\x67payload\x64mine" |
		maro-send -p worker.1 -W 5s -f json'
	run -0 jq -r '"\(.session_id) \(.payload)"' <<< "$output"
	assert_output --partial "s-good r:mine"
	assert_output --partial 's-bad r:{"cbor":"-CA"}'
}

# group_of PGID: the live processes of a process group (zombies are dead:
# a container's init may be slow to reap them)
group_of() { ps -e -o pgid=,stat=,pid= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { print $3 }'; }

@test "SIGTERM while a handler runs: it and what sh -c started are stopped, 143 within 2.5 s" {
	bg 60 maro-dist -n worker.1 --on '*:go:1' 'sleep 30 & sleep 31; wait' 2> dist.err
	local dist bgdist=$BG_PID
	dist=$(child_pid "$BG_PID" maro-dist)
	wait_until 10 live_is worker. 1
	bg 30 maro-send -p worker.1 -t go --notification -W 20s
	local sleeper
	wait_until 10 pgrep -s 0 -f '^sleep 31$'
	sleeper=$(pgrep -s 0 -f '^sleep 31$')
	local pg
	pg=$(ps -o pgid= -p "$sleeper" | tr -d ' ')
	[ "$pg" != "$dist" ]
	local t0=$SECONDS
	kill -TERM "$dist"
	wait_exit "$bgdist" 10
	[ "$status" -eq 143 ]
	[ $((SECONDS - t0)) -le 3 ]
	# the handler's whole group: sleep 30 in the background too
	run group_of "$pg"
	assert_output ''
}

@test "maro-dist killed by SIGKILL takes its coprocess and handler with it" {
	bg 60 maro-dist -n worker.1 --raw --co '*:echo:1' 'echo up > co.up; while read -r x; do echo "$x"; done' \
		--on '*:go:1' 'echo up > on.up; sleep 30' 2> dist.err
	local dist
	dist=$(child_pid "$BG_PID" maro-dist)
	wait_until 10 live_is worker. 1
	bg 30 maro-send -p worker.1 -t go --notification -W 20s
	wait_until 10 test -s on.up
	wait_until 10 test -s co.up
	local kids
	kids=$(pgrep -P "$dist" | tr '\n' ' ')
	[ -n "$kids" ]
	kill -KILL "$dist"
	local p
	for p in $kids; do
		wait_until 5 sh -c "[ -z \"\$(ps -o stat= -p $p | grep -v '^Z')\" ]"
	done
}

@test "a coprocess that writes malformed CBOR is stopped and named with the byte offset: exit 65, the request left with its sender" {
	bg 60 maro-dist -n worker.1 --co '*:echo:1' 'head -c 1 > /dev/null; printf "\377"; sleep 30' 2> dist.err
	local dist=$BG_PID
	wait_until 10 live_is worker. 1
	run -124 timeout 10 maro-send -p worker.1 -t echo -d x -W 2s
	wait_exit "$dist" 10
	[ "$status" -eq 65 ]
	run cat dist.err
	assert_output --partial "coprocess for '*:echo:1' wrote malformed CBOR at byte offset 0"
}

@test "handler output is bounded by --max-size: a flood stops that handler, memory stays bounded" {
	bg 60 maro-dist -n worker.1 --max-size 1000000 --on '*:go:1' 'cat /dev/zero' 2> dist.err
	local dist
	dist=$(child_pid "$BG_PID" maro-dist)
	wait_until 10 live_is worker. 1
	bg 30 maro-send -p worker.1 -t go --notification -W 20s
	wait_until 10 grep -q "handler for '\*:go:1' wrote more than 1000000 bytes (--max-size): stopped" dist.err
	# each run stops at the limit
	[ "$(awk '/VmHWM/ { print $2 }' "/proc/$dist/status")" -lt 60000 ]
	kill -TERM "$dist"
}

@test "a --raw coprocess line without end is bounded by --max-size: stopped, exit 65" {
	bg 60 maro-dist -n worker.1 --max-size 100000 --raw --co '*:echo:1' 'tr -d "\n" < /dev/zero' 2> dist.err
	wait_exit "$BG_PID" 20
	[ "$status" -eq 65 ]
	run cat dist.err
	assert_output --partial "coprocess for '*:echo:1' wrote a line longer than 100000 bytes (--max-size)"
}

@test "--co: a coprocess that takes a request and writes nothing for 5 s is said to be maybe buffering, once" {
	# reads and never answers: as a program whose stdio holds its answers
	# -W 20s: time for the notice (5 s after the request) however late the
	# request comes, and for a second one (5 s later again) if it repeated
	bg 40 maro-dist -n quiet.1 --raw --co '*:t:1' 'while read -r l; do :; done' -W 20s 2> dist.err
	local dist=$BG_PID
	wait_until 10 is_live quiet.1
	bg 30 maro-send -p quiet.1 -t t -d x -W 20s > /dev/null 2>&1
	wait_until 15 grep -q 'written nothing for 5 s' dist.err
	wait_exit "$dist" 25
	run -0 grep -c 'has written nothing' dist.err
	assert_output 1
	run -0 cat dist.err
	assert_line --partial "maro-dist: coprocess for '*:t:1' has 1 request and has written nothing for 5 s: if it buffers its output"
}

@test "--co: a coprocess that answers at once is never said to be buffering" {
	bg 30 maro-dist -n prompt.1 --raw --co '*:t:1' 'while read -r l; do echo "$l"; done' -W 7s 2> dist.err
	local dist=$BG_PID
	wait_until 10 is_live prompt.1
	run -0 maro-send -p prompt.1 -t t -d x -W 5s
	wait_exit "$dist" 15
	run -0 cat dist.err
	refute_output --partial 'written nothing'
}

@test "a task no handler will take is answered at once with the 'no handler' reply: senders fail fast, not at -W" {
	bg 60 maro-dist -n worker.1 --raw --co 'master:sum:1' cat --on '*:stop:1' --exit
	maro-peers -e worker=1 -W 10s -q
	local t0 ms
	t0=$(date +%s%N)
	# no unit matches tag x; nor tag sum from another source than master
	run -69 --separate-stderr timeout 30 maro-send -p worker.1 -t x -d 1 -W 20s
	ms=$((($(date +%s%N) - t0) / 1000000))
	# at once, not at -W (20 s), with a busy machine's margin
	[ "$ms" -lt 8000 ]
	[ -z "$output" ]
	[ "$stderr" = "maro-send: 'worker.1' has no handler for tag 'x'" ]
	run -69 --separate-stderr timeout 30 maro-send -n other -p worker.1 -t sum -d 1 -W 20s
	[ "$stderr" = "maro-send: 'worker.1' has no handler for tag 'sum'" ]
	# the reply itself, as maro(7) defines it: stage complete, "error", a payload for people
	run -0 timeout 30 sh -c 'maro-send --async -n me -p worker.1 -t x -d 1 -W 20s > /dev/null &&
		maro-recv -n me -C 1 -W 20s -f json'
	[ "$(jq -r '[.session_stage, .error, .payload, .tag, .source] | join("|")' <<< "$output")" = \
		"complete|no handler|no handler for tag 'x'|x|worker.1" ]
	# the handled tag still works beside it
	run -0 timeout 30 maro-send -n master -p worker.1 -t sum -d 7 -W 20s -f payload
	assert_output 7
	# maro-scatter gives such a task up at once (--failed), whatever --retries; maro-bcast says it, 69
	run -3 --separate-stderr timeout 30 maro-scatter -n master -P worker -t x --failed failed.cbor -W 20s <<< 5
	[[ "$stderr" == *"line 1 of the input given up after 1 failed attempt ('worker.1': no handler for tag 'x'): payload \"5\""* ]]
	[[ "$stderr" == *"maro-scatter: 1 of 1 tasks given up" ]]
	[ "$(maro-msg -f payload < failed.cbor)" = 5 ]
	run -69 --separate-stderr timeout 30 maro-bcast -P worker -t x -d 1 -W 20s
	[ "$stderr" = "maro-bcast: 'worker.1' has no handler for tag 'x'" ]
	# a notification is owed no reply: still a message --exit takes, not a failure
	run -0 timeout 20 maro-send -p worker.1 -t stop --notification -W 15s
}

@test "--raw --json-lines: each JSON line is the reply's payload as a value; a line not JSON is a failure reply" {
	run -2 maro-dist -n worker.1 --json-lines --co '*:j:1' cat
	assert_output --partial "--json-lines goes with --raw"
	bg 60 maro-dist -n worker.1 --raw --json-lines --co '*:j:1' \
		'while read -r n; do if [ "$n" = bad ]; then echo "{nope"; else echo "{\"n\":$n,\"sq\":$((n * n))}"; fi; done' 2> dist.err
	maro-peers -e worker=1 -W 10s -q
	run -0 timeout 30 maro-send -p worker.1 -t j -d 3 -W 20s -f json
	[ "$(jq -c .payload <<< "$output")" = '{"n":3,"sq":9}' ]
	run -0 timeout 30 sh -c 'printf "1\n2\n" | maro-scatter -P worker -t j --ordered -W 20s -f payload'
	assert_output $'{"n":1,"sq":1}\n{"n":2,"sq":4}'
	# the bad line: a clear message on both sides, the task failed at once (3), the worker serving on
	run -3 --separate-stderr timeout 30 maro-send -p worker.1 -t j -d bad -W 20s
	[[ "$stderr" == "maro-send: 'worker.1' failed the task in session "*": the handler's line is not JSON: "*"at column 5" ]]
	grep -q "is not JSON (.*): failure reply sent" dist.err
	run -3 --separate-stderr timeout 30 sh -c 'printf "4\nbad\n5\n" | maro-scatter -P worker -t j --ordered -W 20s -f payload'
	assert_output $'{"n":4,"sq":16}\n{"n":5,"sq":25}'
	[[ "$stderr" == *"line 2 of the input given up after 1 failed attempt ('worker.1': the handler's line is not JSON"*"): payload \"bad\""* ]]
}

@test "maro-dist: a notification no handler's event takes is said once per source and tag, and stays unacknowledged" {
	bg 30 maro-dist -n w.1 --on 'master:stop:1' --exit 2> dist.err
	wait_until 10 is_live w.1
	# a stop sent without -n master: no source, and so no handler
	run -124 timeout 10 maro-send -p w.1 -t stop -d x --notification -W 1s
	run -124 timeout 10 maro-send -p w.1 -t stop -d x --notification -W 1s
	wait_until 10 grep -q "matches no handler" dist.err
	run cat dist.err
	assert_output "maro-dist: message with no source tagged 'stop' matches no handler's event; it stays unacknowledged"
	# the same from master ends it
	run -0 timeout 10 maro-send -n master -p w.1 -t stop -d x --notification -W 5s
}
