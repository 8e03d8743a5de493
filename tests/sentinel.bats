#!/usr/bin/env bats
# check: alone (failovers timed by the sentinels: a busy machine delays them past the bounds)
# The registry behind Redis Sentinel: a primary, its replica and three
# sentinels on loopback ports (scripts/test-sentinel), a redis+sentinel://
# URL, and kill -9 of the primary in the middle of a stream and of a
# scatter: nothing lost, nobody expired, no tool exits.  And sentinels
# that lie (tests/tools/fake-sentinel): answers that trickle or never end,
# from them or the server they name, cost no more than -W or a few KiB.

load helpers

setup_file() {
	command -v redis-sentinel > /dev/null || skip "redis-sentinel is not installed (make deps)"
	timeout 60 sh "$MARO_TOP/scripts/test-sentinel" start "$BATS_FILE_TMPDIR/s" > "$BATS_FILE_TMPDIR/url"
}
teardown_file() { sh "$MARO_TOP/scripts/test-sentinel" stop "$BATS_FILE_TMPDIR/s" 2>/dev/null || :; }
setup() {
	export MARO_GROUP="t$BATS_SUITE_TEST_NUMBER-$$"
	MARO_REGISTRY=$(cat "$BATS_FILE_TMPDIR/url")
	export MARO_REGISTRY
	cd "$BATS_TEST_TMPDIR"
}
teardown() { default_teardown; }

ts() { sh "$MARO_TOP/scripts/test-sentinel" "$1" "$BATS_FILE_TMPDIR/s" "${@:2}"; }
role() { timeout 5 redis-cli -h 127.0.0.1 -p "$1" role 2>/dev/null | head -n 1; }
primary_is_not() { p=$(ts primary) && [ "$p" != "$1" ] && [ "$(role "$p")" = master ]; }
# a replica of the primary, its link up: ready to be promoted
replica_of_primary() {
	[ "$(role "$1")" = slave ] &&
		timeout 5 redis-cli -h 127.0.0.1 -p "$1" info replication | grep -q '^master_link_status:up'
}

numbers() {
	seq "$1" "$2" | sed 's/.*/{"tag":"n","session_type":"notification","payload":&}/' |
		maro-msg -i json
}
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

# the primary killed ($old) comes back, and ends a replica of the new one
# kill_primary: kill -9 the primary the sentinels name (its port in $old),
# and note when.
kill_primary() {
	old=$(ts primary)
	ts kill "$old"
	date +%s > "$BATS_FILE_TMPDIR/killed"
}
# failover_ready: the sentinels may fail over again.  One that took part
# in a failover, as its leader or a voter, starts no other for the same
# master within twice its failover-timeout (20 s, scripts/test-sentinel):
# a kill sooner would wait that long for a new primary, past the TTLs.
failover_ready() {
	local last=0
	[ ! -f "$BATS_FILE_TMPDIR/killed" ] || last=$(cat "$BATS_FILE_TMPDIR/killed")
	[ "$(date +%s)" -ge $((last + 21)) ]
}

# sentinels_agree PORT: every sentinel lists PORT as a replica that says
# so itself (flags and role reported "slave", its link up).  A sentinel
# still holding the role it reported before could take the next primary
# promoted there for a stale master and demote it again (seen: a failover
# undone 10 ms after it ended, the tools left with no primary).
sentinels_agree() {
	local s
	while read -r s; do
		timeout 5 redis-cli -h 127.0.0.1 -p "$s" sentinel replicas mymaster | tr -d '\r' | paste - - |
			awk -F '\t' -v p="$1" '$1 == "name" { n = ($2 == "127.0.0.1:" p) }
				n && $1 == "flags" { f = $2 } n && $1 == "role-reported" { r = $2 }
				n && $1 == "master-link-status" { l = $2 }
				END { exit !(f == "slave" && r == "slave" && l == "ok") }' || return 1
	done < "$BATS_FILE_TMPDIR/s/sentinels"
}

bring_back() {
	ts restart "$old" 5>&-
	wait_until 40 replica_of_primary "$old"
	wait_until 30 sentinels_agree "$old"
}

@test "sentinel: malformed URLs are usage errors (2), the password never shown" {
	for url in 'redis+sentinel://127.0.0.1:1' 'redis+sentinel://127.0.0.1:1/' \
		'redis+sentinel://127.0.0.1:0/m' 'redis+sentinel://127.0.0.1:1,/m' \
		'redis+sentinel://:1/m' 'redis+sentinel://127.0.0.1:1/m/x' \
		'redis+sentinel://127.0.0.1:1/bad%20name' 'redis+sentinel://u:s3cret@127.0.0.1:x/m' \
		'redis+sentinel:/127.0.0.1:1/m'; do
		run --separate-stderr timeout 10 maro-peers --registry "$url"
		[ "$status" -eq 2 ] || { echo "$url: $status $stderr"; false; }
		[[ "$stderr" != *s3cret* ]]
		[[ "$stderr" == *"redis+sentinel://"* ]] || { echo "$url: $stderr"; false; }
	done
}

@test "sentinel: no sentinel answers, or none knows the master: 69, said" {
	run --separate-stderr timeout 10 maro-peers --registry 'redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster'
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"cannot connect to sentinel at 127.0.0.1:"* ]]
	run --separate-stderr timeout 10 maro-peers --registry "${MARO_REGISTRY%/mymaster}/nosuch"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"no sentinel knows a master 'nosuch'"* ]]
	# one set of credentials: a user the sentinels do not have is refused
	run --separate-stderr timeout 10 maro-peers --registry "redis+sentinel://u:pw-s3cret@${MARO_REGISTRY#redis+sentinel://}"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"sentinel authentication failed at 127.0.0.1:"* ]]
	[[ "$stderr" != *s3cret* ]]
	# a password alone is ignored by servers that have none
	run timeout 10 maro-peers --registry "redis+sentinel://:pw@${MARO_REGISTRY#redis+sentinel://}"
	assert_success
	# a dead sentinel first in the list: the next one answers
	run timeout 10 maro-peers --registry "redis+sentinel://127.0.0.1:1,${MARO_REGISTRY#redis+sentinel://}"
	assert_success
}

@test "sentinel: a sentinel that names a replica is not trusted: ROLE says so" {
	# a fourth sentinel, told the replica is the master: first in the URL
	read -r primary replica < "$BATS_FILE_TMPDIR/s/servers"
	[ "$(role "$replica")" = slave ]
	# a random port, and another if it was taken before the sentinel bound
	# it (suites run side by side, and a client's own port may be any)
	local try
	for try in 1 2 3 4 5; do
		port=$(( 20000 + RANDOM % 40000 ))
		printf '%s\n' "port $port" "bind 127.0.0.1" "dir $BATS_TEST_TMPDIR" \
			"sentinel monitor mymaster 127.0.0.1 $replica 2" \
			"sentinel down-after-milliseconds mymaster 60000" "logfile $BATS_TEST_TMPDIR/rogue.log" > rogue.conf
		bg 60 redis-server rogue.conf --sentinel
		# ready, or gone
		wait_until 10 sh -c "redis-cli -p $port sentinel get-master-addr-by-name mymaster 2>/dev/null |
			grep -qx $replica || ! kill -0 $BG_PID"
		if kill -0 "$BG_PID" 2>/dev/null; then break; fi
	done
	redis-cli -p "$port" sentinel get-master-addr-by-name mymaster | grep -qx "$replica" || { cat rogue.log; false; }
	bg 60 maro-recv -n sink -C 1 -f payload --registry "redis+sentinel://127.0.0.1:$port,${MARO_REGISTRY#redis+sentinel://}" > out
	recv=$BG_PID
	wait_until 10 is_live sink
	run timeout 20 sh -c 'maro-msg -t n --json 7 --notification | maro-send -p sink -W 15s --registry "$1"' _ \
		"redis+sentinel://127.0.0.1:$port,${MARO_REGISTRY#redis+sentinel://}"
	assert_success
	wait_exit "$recv" 10
	[ "$status" -eq 0 ]
	[ "$(cat out)" = 7 ]
}

@test "sentinel: a stream and a request/reply session over the sentinel URL" {
	numbers 1 2000 > in.cbor
	bg 60 maro-recv -n sink -C 2000 -f payload > out
	recv=$BG_PID
	run timeout 60 maro-send -p sink -W 30s < in.cbor
	assert_success
	wait_exit "$recv" 30
	[ "$status" -eq 0 ]
	seq 1 2000 | cmp - out
	bg 60 sh -c 'maro-recv -n worker.1 -f json |
		jq -c --unbuffered ".payload |= . * 2" |
		maro-msg reply -n worker.1 -i json | maro-send'
	run timeout 20 maro-send -p worker.1 -t double --json 21 -f payload -W 15s
	assert_success
	assert_output 42
}

# watch: maro-peers in a loop until the file "stop" exists, each listing
# of the group (or its failure) followed by a line "--"
watch_peers() {
	bg 120 sh -c 'until [ -f stop ]; do maro-peers -f json -W 10s 2>&1; echo --; done > listings'
}
# now_ms PORT: that server's clock, ms
now_ms() { timeout 5 redis-cli -h 127.0.0.1 -p "$1" time | awk 'NR == 1 { s = $1 } NR == 2 { printf "%d%03d\n", s, $1 / 1000 }'; }
# beat_since PORT MS NAME...: each NAME heartbeated on that server at MS or later
beat_since() {
	local port=$1 since=$2 n hb
	shift 2
	for n in "$@"; do
		hb=$(timeout 5 redis-cli -h 127.0.0.1 -p "$port" hget "maro:$MARO_GROUP:m:$n" hb)
		[ -n "$hb" ] && [ "$hb" -ge "$since" ] || return 1
	done
}
# every listing succeeded (maro-peers waits out the failover) and names NAME
always_listed() {
	awk -v want="\"name\":\"$1\"" '
		$0 == "--" { n++; if (!ok && !bad++) print "without it: " last; ok = 0; last = ""; next }
		{ last = last $0 " " }
		index($0, want) { ok = 1 }
		END { print n " listings, " bad + 0 " without it"; exit bad > 0 || n < 2 }' listings
}

@test "sentinel: after a lost connection each entry is written whole, not renewed" {
	bg 60 maro-recv -n sink -f payload > /dev/null
	wait_until 10 is_live sink
	p=$(ts primary)
	key="maro:$MARO_GROUP:m:sink"
	# what a failover loses: the entry there is not the one last written
	run timeout 5 redis-cli -h 127.0.0.1 -p "$p" hset "$key" ncpu 999 stats in=0
	assert_output 0
	# the tools' connections drop, as when their primary goes
	timeout 5 redis-cli -h 127.0.0.1 -p "$p" client kill type normal
	# the next heartbeat writes every field again (a renewal would leave
	# them for 20 s)
	wait_until 5 sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $p hget $key ncpu)\" = $(getconf _NPROCESSORS_ONLN) ]"
	is_live sink
}

# conn PORT PID: the local address of PID's connection to the server on PORT
conn() { ss -Htnp "dport = :$1" | awk -v p="pid=$2," 'index($0, p) { print $4; exit }'; }
# listed PORT ADDR: the server on PORT has a client connected from ADDR
listed() { timeout 5 redis-cli -h 127.0.0.1 -p "$1" client list | grep -q "addr=$2 "; }

@test "sentinel: a primary demoted under a connected tool: -READONLY, and the tool follows" {
	bg 60 maro-recv -n sink -f payload > /dev/null 2> recv.err
	recv=$(child_pid "$BG_PID" maro-recv)
	wait_until 10 is_live sink
	read -r a b < "$BATS_FILE_TMPDIR/s/servers"
	old=$(ts primary)
	new=$a
	[ "$old" != "$a" ] || new=$b
	addr=$(conn "$old" "$recv")
	[ -n "$addr" ]
	# the sentinels promote the replica; the old primary is made its
	# replica by hand before they would demote it themselves (and kill its
	# clients): the tool's connection stays open, its next write refused
	run timeout 5 redis-cli -h 127.0.0.1 -p "$(head -n 1 "$BATS_FILE_TMPDIR/s/sentinels")" \
		sentinel failover mymaster
	assert_output OK
	wait_until 10 sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $new role | head -n 1)\" = master ]"
	# in one transaction: the clients it has right after REPLICAOF
	run timeout 5 redis-cli -h 127.0.0.1 -p "$old" <<< "MULTI
REPLICAOF 127.0.0.1 $new
CLIENT LIST
EXEC"
	# (redis-cli prints EXEC's first reply, REPLICAOF's OK, after the last QUEUED)
	[ "${lines[2]}" = QUEUEDOK ] || { echo "$output"; false; }
	[[ "$output" == *"addr=$addr "* ]]
	since=$(now_ms "$new")
	# the next heartbeat meets -READONLY on the old primary: the tool asks
	# the sentinels again and beats on the new one, and says nothing
	wait_until 10 beat_since "$new" "$since" sink
	run ! listed "$old" "$addr"
	is_live sink
	[ ! -s recv.err ] || { cat recv.err; false; }
	wait_until 10 primary_is_not "$old"
	wait_until 10 replica_of_primary "$old"
}

@test "sentinel: kill -9 of the primary mid-stream of 100,000: nothing lost, nobody gone, no exit" {
	wait_until 30 failover_ready
	mkfifo feed
	numbers 1 40000 > a.cbor
	numbers 40001 70000 > b.cbor
	numbers 70001 100000 > c.cbor
	bg 120 maro-recv -n sink -C 100000 -f payload > out 2> recv.err
	recv=$BG_PID
	exec 5<> feed
	bg 120 maro-send -p sink -W 100s < feed 2> send.err
	send=$BG_PID
	cat a.cbor >&5
	wait_until 60 has_lines out 20000
	watch_peers
	kill_primary
	# the next part flows while the sentinels elect a new primary
	cat b.cbor >&5
	wait_until 20 primary_is_not "$old"
	# the receiver heartbeats on the new primary
	since=$(now_ms "$p")
	wait_until 10 beat_since "$p" "$since" sink
	wait_until 60 has_lines out 70000
	: > stop
	wait_exit "$BG_PID" 20
	# the receiver was listed all along: its entry outlived the failover
	run always_listed sink
	assert_success
	cat c.cbor >&5
	exec 5>&-
	wait_exit "$send" 100
	[ "$status" -eq 0 ] || { cat send.err; false; }
	wait_exit "$recv" 30
	[ "$status" -eq 0 ] || { cat recv.err; false; }
	seq 1 100000 | cmp - out
	bring_back
}

@test "sentinel: kill -9 of the primary mid-scatter of 2,000 tasks: each answered once, every worker listed" {
	wait_until 30 failover_ready
	for i in 1 2 3; do
		bg 120 maro-dist -n "worker.$i" --raw --co 'master:sq:1' \
			'while read x; do sleep 0.004; echo $((x * x)); done' 2> "w$i.err"
		eval "w$i=\$BG_PID"
	done
	wait_until 15 live_is worker 3
	seq 2000 > tasks
	bg 120 maro-scatter -n master -P worker -t sq --window 2 -W 100s -f payload \
		< tasks > answers 2> scatter.err
	sc=$BG_PID
	wait_until 60 has_lines answers 300
	watch_peers
	kill_primary
	# a tool started now waits for the new primary, within -W even when
	# the failover (about 2 s) outlasts its TTL
	MARO_TTL=1s run maro-peers -f json -W 10s
	assert_success
	[ "$(grep -c '"name":"worker\.' <<< "$output")" -eq 3 ]
	wait_until 20 primary_is_not "$old"
	[ "$(lines answers)" -lt 2000 ]	# the failover came in the middle
	# every worker heartbeats on the new primary
	since=$(now_ms "$p")
	wait_until 10 beat_since "$p" "$since" worker.1 worker.2 worker.3
	wait_until 60 has_lines answers 1800
	: > stop
	wait_exit "$BG_PID" 20
	# every worker listed all along, none expired meanwhile
	for n in worker.1 worker.2 worker.3; do
		run always_listed "$n"
		assert_success
	done
	wait_exit "$sc" 100
	[ "$status" -eq 0 ] || { cat scatter.err; false; }
	seq 2000 | awk '{ print $1 * $1 }' | sort > expected
	sort answers | cmp - expected
	# no worker exited
	kill -0 "$w1"
	kill -0 "$w2"
	kill -0 "$w3"
	# the old primary comes back empty and says it is a primary (stale):
	# a tool started then asks the sentinels, and finds the workers
	ts restart "$old" 5>&-
	[ "$(role "$old")" = master ]
	run maro-peers -f json -W 10s
	assert_success
	[ "$(grep -c '"name":"worker\.' <<< "$output")" -eq 3 ]
	bg 30 maro-recv -n late -C 1 -f payload > late.out
	late=$BG_PID
	run timeout 20 sh -c 'maro-msg -t n --json 5 --notification | maro-send -p late -W 15s'
	assert_success
	wait_exit "$late" 10
	[ "$(cat late.out)" = 5 ]
	wait_until 40 replica_of_primary "$old"
	run maro-peers -f json -W 10s
	assert_success
	[ "$(grep -c '"name":"worker\.' <<< "$output")" -eq 3 ]
	kill -0 "$w1"
	kill -0 "$w2"
	kill -0 "$w3"
}

# fake SECONDS MODE [named]: a hostile sentinel (tests/tools/fake-sentinel)
# on a free port for at most SECONDS, its URL in $fake
fake() {
	command -v python3 > /dev/null || skip "python3 is not installed (the fake sentinel)"
	bg "$1" python3 "$MARO_TOP/tests/tools/fake-sentinel" "$2" fake.port "${@:3}"
	wait_until 10 test -s fake.port
	fake="redis+sentinel://127.0.0.1:$(cat fake.port)/mymaster"
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

@test "sentinel: a primary lost between a tool's start and its first reply is waited for past the TTL, within -W" {
	# the fake names itself, vouches for itself (ROLE), hangs up at the
	# first command, refuses everything for 2 s, then names the real primary
	command -v python3 > /dev/null || skip "python3 is not installed (the fake sentinel)"
	bg 30 python3 "$MARO_TOP/tests/tools/fake-sentinel" vanish fake.port "$(ts primary)"
	wait_until 10 test -s fake.port
	t=$(date +%s%N)
	# a TTL of 1 s: past it, a running tool's call would fail; a starting one waits
	MARO_TTL=1s run --separate-stderr timeout 20 maro-peers -W 10s \
		--registry "redis+sentinel://127.0.0.1:$(cat fake.port)/mymaster"
	echo "$status in $(ms_since "$t") ms: $stderr"
	assert_success
	[ "$(ms_since "$t")" -ge 2000 ]
}

@test "sentinel: one that trickles its answer costs 0.5 s, and -W holds (69)" {
	fake 30 trickle
	t=$(date +%s%N)
	run --separate-stderr timeout 10 maro-peers -W 1s --registry "$fake"
	echo "$status $(ms_since "$t") ms: $stderr"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"sentinel at 127.0.0.1:$(cat fake.port) did not answer in time"* ]]
	[ "$(ms_since "$t")" -lt 2500 ]
	# first in the list: the next sentinel answers after its 0.5 s
	t=$(date +%s%N)
	run timeout 10 maro-peers -W 8s --registry "redis+sentinel://127.0.0.1:$(cat fake.port),${MARO_REGISTRY#redis+sentinel://}"
	echo "$(ms_since "$t") ms"
	assert_success
	[ "$(ms_since "$t")" -lt 2500 ]
}

@test "sentinel: one that announces an 800 MB answer is refused at 4 KiB (69, at once)" {
	fake 30 huge
	t=$(date +%s%N)
	run --separate-stderr /usr/bin/time -f %M -o rss timeout 10 maro-peers -W 5s --registry "$fake"
	echo "$status $(ms_since "$t") ms, $(tail -n 1 rss) KiB: $stderr"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"sentinel at 127.0.0.1:$(cat fake.port): reply longer than 4096 bytes"* ]]
	[ "$(ms_since "$t")" -lt 2000 ]
	[ "$(tail -n 1 rss)" -lt 65536 ]
}

@test "sentinel: a named server that trickles or floods its answers before ROLE: -W holds (69)" {
	fake 30 trickle named
	t=$(date +%s%N)
	run --separate-stderr timeout 10 maro-peers -W 1s --registry "$fake"
	echo "$status $(ms_since "$t") ms: $stderr"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"redis at 127.0.0.1:$(cat fake.port) did not answer in time"* ]]
	[ "$(ms_since "$t")" -lt 2500 ]
	kill_bg
	rm fake.port
	fake 30 huge named
	t=$(date +%s%N)
	run --separate-stderr /usr/bin/time -f %M -o rss timeout 10 maro-peers -W 1s --registry "$fake"
	echo "$status $(ms_since "$t") ms, $(tail -n 1 rss) KiB: $stderr"
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"redis at 127.0.0.1:$(cat fake.port): reply longer than 65536 bytes"* ]]
	[ "$(ms_since "$t")" -lt 2500 ]
	[ "$(tail -n 1 rss)" -lt 65536 ]
}
