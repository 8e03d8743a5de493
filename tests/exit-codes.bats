#!/usr/bin/env bats
# backends: dir redis
# check: early (a long one)
# Every exit status a tool's man page lists under EXIT STATUS, produced and
# pinned exactly, tool by tool.  The codes are read from the pages: a code
# added to a page without a case here fails the first test.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

DOWN=redis://127.0.0.1:1/0	# no server: the registry is unavailable

# The cases: TOOL CODE COMMAND (bash, in the test's directory, with the
# peers of `peers` live).  130 and 143 are produced by SIGINT and SIGTERM
# sent to COMMAND's tool while it waits (see `signal`).
cases() {
	cat <<-'EOF'
	maro-bcast 0 maro-bcast -P p.a -t echo -d hi -W 10s
	maro-bcast 1 maro-bcast -P p. -t echo -d hi -W 2s
	maro-bcast 2 maro-bcast --bogus
	maro-bcast 3 maro-dist -n jb.1 --raw --json-lines --co '*:j:1' cat -W 10s & d=$!; maro-bcast -e jb=1 -P jb -t j -d not-json -W 10s; s=$?; kill $d; exit $s
	maro-bcast 65 { maro-msg -t a; maro-msg -t b; } | maro-bcast -P p.a -W 2s
	maro-bcast 69 maro-bcast -P nobody -t x -W 2s
	maro-bcast 124 maro-bcast -P p.m -t echo -d hi -W 1s
	maro-bcast 130 maro-bcast -P nobody -e nobody=1 -t x
	maro-dist 0 maro-dist -n d0 --on '*:stop:1' --exit -W 10s & d=$!; maro-send -p d0 -t stop --notification -W 5s; wait $d
	maro-dist 1 maro-dist -n d1 --co '*:x:1' 'exit 0' -W 10s
	maro-dist 2 maro-dist --bogus
	maro-dist 65 maro-dist -n d65 --co '*:x:1' 'printf "\377"; sleep 5' -W 10s
	maro-dist 69 maro-dist -n p.m --on '*:x:1' true -W 2s
	maro-dist 70 MARO_BUNDLE_CACHE=/dev/null/c maro-dist -n d70 --bundle nobody --on '*:x:1' true -W 5s
	maro-dist 124 maro-dist -n d124 --on '*:x:1' true -W 1s
	maro-dist 130 maro-dist -n dsig --on '*:x:1' true
	maro-keygen 0 maro-keygen k0.key
	maro-keygen 2 maro-keygen k2.key && maro-keygen k2.key
	maro-keygen 70 maro-keygen no/such/dir/k.key
	maro-msg 0 maro-msg -t x -d y > /dev/null
	maro-msg 1 maro-msg -t x -d y > /dev/full
	maro-msg 2 maro-msg --bogus
	maro-msg 65 printf '\377' | maro-msg -f json
	maro-peers 0 maro-peers
	maro-peers 2 maro-peers --registry bogus
	maro-peers 69 maro-peers --registry $DOWN
	maro-peers 124 maro-peers -e nobody=1 -W 1s
	maro-peers 130 maro-peers -e nobody=1
	maro-pool 0 maro-pool -j 1 --name pool.ok -- true
	maro-pool 1 maro-pool -j 1 --name pool.bad --max-restarts 1 --restart-window 1m -- false
	maro-pool 2 maro-pool --bogus
	maro-pool 69 maro-pool -j 1 --registry $DOWN -- true
	maro-pool 124 maro-pool -j 1 --name pool.w -W 1s -- sleep 30
	maro-pool 130 maro-pool -j 1 --name pool.sig -- sleep 30
	maro-recv 0 maro-recv -n r0 --idle-timeout 1s
	maro-recv 1 maro-recv -n r1 -W 10s > /dev/null & r=$!; until maro-peers -f json | grep -q '"r1"'; do sleep 0.05; done; maro-recv -n r1 --takeover -W 4s > /dev/null; wait $r
	maro-recv 2 maro-recv --bogus
	maro-recv 65 printf '\377' > bad.cbor; maro-recv -n r65 --sessions-from bad.cbor -W 2s
	maro-recv 69 maro-recv -n p.m -W 1s
	maro-recv 124 maro-recv -n r124 -W 1s
	maro-recv 130 maro-recv -n rsig
	maro-scatter 0 echo a | maro-scatter -P p.a -t echo -W 10s
	maro-scatter 1 printf 'a\nb\n' | maro-scatter -P p. -t echo -W 3s
	maro-scatter 2 maro-scatter --bogus
	maro-scatter 3 echo a | maro-scatter -P p.m -t echo --task-timeout 300ms --retries 1 -W 10s
	maro-scatter 65 printf 'a\n\377\n' | maro-scatter -P p.a -t echo -W 10s
	maro-scatter 69 echo a | maro-scatter -P p.a -t echo --registry $DOWN -W 2s
	maro-scatter 124 echo a | maro-scatter -P p.m -t echo -W 1s
	maro-scatter 130 echo a | maro-scatter -P nobody -t x
	maro-send 0 maro-send -p p.a -t echo -d hi -W 10s
	maro-send 1 maro-send -p p.a -p p.m -t echo -d hi -W 2s
	maro-send 2 maro-send --bogus
	maro-send 3 maro-dist -n js.1 --raw --json-lines --co '*:j:1' cat -W 10s & d=$!; maro-send -e js=1 -p js.1 -t j -d not-json -W 10s; s=$?; kill $d; exit $s
	maro-send 65 printf '\377' | maro-send -W 2s
	maro-send 69 maro-send -p x -t y --registry $DOWN -W 2s
	maro-send 124 maro-send -p nobody -t x --notification -W 1s
	maro-send 130 maro-send -p nobody -t x --notification
	maro-wait-event 0 maro-wait-event -n we0 'x:go:1' -W 10s & w=$!; maro-send -n x.1 -p we0 -t go --notification -W 5s; wait $w
	maro-wait-event 1 maro-wait-event -n we1 'a:b:1' -W 10s & w=$!; until maro-peers -f json | grep -q '"we1"'; do sleep 0.05; done; maro-wait-event -n we1 --takeover 'a:b:1' -W 3s; wait $w
	maro-wait-event 2 maro-wait-event --bogus 'a:b:1'
	maro-wait-event 69 maro-wait-event -n p.m 'a:b:1' -W 1s
	maro-wait-event 124 maro-wait-event -n we124 'a:b:1' -W 1s
	maro-wait-event 130 maro-wait-event -n wesig 'a:b:1'
	EOF
}

# peers: p.a answers every task (a --raw echo), p.m takes them and never answers
peers() {
	bg 120 maro-dist -n p.a --raw --co '*:echo:1' 'cat' 2> /dev/null
	bg 120 maro-recv -n p.m > /dev/null
	wait_until 10 live_is p. 2
}

# documented TOOL: its codes under EXIT STATUS in its page, one per line
documented() {
	sed -n '/^\.Sh EXIT STATUS/,/^\.Sh /p' "$MARO_TOP/man/$1.1" |
		sed -n 's/^\.It \([0-9][0-9 ,]*\)$/\1/p' | tr ', ' '\n\n' | grep .
}

# waits: PID sleeps in poll(2) or a sleep between two looks at the registry
waits() { grep -qE 'poll|sleep' "/proc/$1/wchan" 2>/dev/null; }

# signal TOOL SIG COMMAND: COMMAND in the background; once TOOL waits,
# SIG to it; its exit status in $status
signal() {
	bg 30 bash -c "$3"
	local p
	p=$(child_pid "$BG_PID" "$1")
	wait_until 10 waits "$p"
	kill "-$2" "$p"
	wait_exit "$BG_PID" 10
}

# check TOOL: runs the cases of TOOL; each must exit with its code
check() {
	local tool code cmd
	peers
	while read -r tool code cmd; do
		[ "$tool" = "$1" ] || continue
		if [ "$code" = 130 ]; then
			signal "$tool" INT "$cmd"
			[ "$status" -eq 130 ] || { echo "$tool: SIGINT gave $status: $cmd"; return 1; }
			signal "$tool" TERM "$cmd"
			[ "$status" -eq 143 ] || { echo "$tool: SIGTERM gave $status: $cmd"; return 1; }
			continue
		fi
		run timeout 30 bash -c "DOWN=$DOWN; $cmd" < /dev/null
		[ "$status" -eq "$code" ] || { echo "$tool: expected $code, got $status: $cmd"; echo "$output"; return 1; }
	done < <(cases)
}

@test "every code a man page lists has a case here, and every case a documented code" {
	local f tool code missing=
	for f in "$MARO_TOP"/man/maro-*.1; do
		tool=$(basename "$f" .1)
		for code in $(documented "$tool"); do
			if [ "$code" = 143 ]; then
				continue	# with 130: SIGTERM
			fi
			cases | grep -q "^$tool $code " || missing="$missing $tool:$code"
		done
	done
	[ -z "$missing" ] || { echo "no case for:$missing"; false; }
	while read -r tool code _; do
		documented "$tool" | grep -qx "$code" || { echo "$tool $code is not in its page"; false; }
	done < <(cases)
}

@test "maro-bcast exits with each documented code" { check maro-bcast; }
@test "maro-dist exits with each documented code" { check maro-dist; }
@test "maro-keygen exits with each documented code" { check maro-keygen; }
@test "maro-msg exits with each documented code" { check maro-msg; }
@test "maro-peers exits with each documented code" { check maro-peers; }
@test "maro-pool exits with each documented code" { check maro-pool; }
@test "maro-recv exits with each documented code" { check maro-recv; }
@test "maro-scatter exits with each documented code" { check maro-scatter; }
@test "maro-send exits with each documented code" { check maro-send; }
@test "maro-wait-event exits with each documented code" { check maro-wait-event; }

@test "when several codes apply, the worse one leaves (maro(7)): 65 over 3, 69 over 3 and over 1" {
	bg 60 maro-dist -n js.1 --raw --json-lines --co '*:j:1' cat
	run -0 maro-peers -e js=1 -W 10s -q
	# a task failed (its reply is not JSON), then the input breaks: 65
	run -65 --separate-stderr sh -c '{ maro-msg -t j -p js.1 -d not-json; printf "\377"; } | maro-send -W 10s'
	[[ $stderr == *"'js.1' failed the task"* ]] || { echo "$stderr"; false; }
	run -65 --separate-stderr sh -c '{ echo not-json; printf "\377"; } | maro-scatter -P js -t j -W 10s'
	[[ $stderr == *"'js.1' failed the task"* || $stderr == *"given up"* ]] || { echo "$stderr"; false; }
	# a task failed, and another peer has no handler for its tag: 69
	run -69 --separate-stderr sh -c '{ maro-msg -t j -p js.1 -d not-json; maro-msg -t other -p js.1 -d x; } | maro-send -W 10s'
	[[ $stderr == *"no handler for tag 'other'"* ]] || { echo "$stderr"; false; }
	# a peer without a handler, and a message never delivered (1 at -W): 69
	run -69 --separate-stderr sh -c '{ maro-msg -t other -p js.1 -d x; maro-msg -t j -p nobody -d x; } | maro-send -W 2s'
	[[ $stderr == *"timed out: 1 not delivered"* ]] || { echo "$stderr"; false; }
	# maro-bcast the same: one peer answers, one has no handler, one never answers (1 at -W): 69
	bg 60 maro-dist -n jb.1 --raw --co '*:j:1' cat
	bg 60 maro-dist -n jb.2 --on '*:other:1' true
	bg 60 maro-dist -n jb.3 --raw --co '*:j:1' 'cat > /dev/null'
	run -0 maro-peers -e jb=3 -W 10s -q
	run -69 --separate-stderr maro-bcast -P jb -t j -d x -W 2s -f payload
	assert_output x
	[[ $stderr == *"'jb.2' has no handler for tag 'j'"* && $stderr == *"jb.3"* ]] || { echo "$stderr"; false; }
}
