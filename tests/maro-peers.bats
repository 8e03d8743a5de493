#!/usr/bin/env bats
# backends: dir redis
# maro-peers: listing, prefixes, private names, -e, --watch, liveness and
# expiry, name collisions, an unavailable or restarted registry, garbage.

load helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	export MARO_TTL=2s
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	# a stopped process cannot act on the TERM of kill_bg
	[ -z "${STOPPED:-}" ] || kill -CONT "$STOPPED" 2>/dev/null || :
	default_teardown
}

UNIT="$MARO_BIN/../tests/unit-tests"

backend() { [ "${MARO_TEST_BACKEND:-dir}" = "$1" ]; }
redis_port() { cat "$BATS_FILE_TMPDIR/redis/redis.port"; }

# hold NAME [ENDPOINT]: a holder of NAME in the background, once it holds
# it.  HOLDER is its bg pid (timeout's), HOLD_PID the holder's own.
hold() {
	bg 60 "$UNIT" hold "$@" > "hold.$1" 2>&1
	HOLDER=$BG_PID
	wait_until 10 grep -qx "held $1" "hold.$1"
	HOLD_PID=$(child_pid "$HOLDER" unit-tests)
}

listed() { maro-peers -f json | jq -r .name | grep -qx "$1"; }

@test "an empty group: the header alone, no JSON, exit 0" {
	run --separate-stderr maro-peers
	assert_success
	assert_output --regexp '^NAME +TYPE +HOST +ENDPOINT +PID +AGE$'
	run --separate-stderr maro-peers -f json
	assert_success
	assert_output ""
	run --separate-stderr maro-peers -q
	assert_success
	assert_output ""
}

# what the registry holds, as a list of names: a reader must leave it as it was
stored() {
	if backend dir; then
		find "${MARO_REGISTRY#dir:}" 2>/dev/null | sort
	else
		redis-cli -p "$(redis_port)" --scan | sort
	fi
}

@test "a mistyped group is said, creates nothing, and exits 0 (-e: waits, then 124)" {
	MARO_GROUP=sweep1 hold worker.1
	before=$(stored)
	run --separate-stderr env MARO_GROUP=sweeep1 maro-peers
	assert_success
	assert_output --regexp '^NAME +TYPE'
	[ "$stderr" = "maro-peers: no group 'sweeep1' in $MARO_REGISTRY (groups: sweep1)" ]
	run --separate-stderr maro-peers -g sweeep1 -f json
	assert_success
	assert_output ""
	[[ "$stderr" == *"no group 'sweeep1'"* ]]
	run --separate-stderr maro-peers -g sweeep1 --status
	assert_success
	[[ "$stderr" == *"no group 'sweeep1' in $MARO_REGISTRY (groups: sweep1)"* ]]
	run --separate-stderr timeout 10 maro-peers -g sweeep1 -e worker=1 -W 0.5s
	assert_failure 124
	[[ "$stderr" == *"no group 'sweeep1' in $MARO_REGISTRY (groups: sweep1)"* ]]
	[[ "$stderr" == *"timed out waiting for peers: worker 0 of 1 live"* ]]
	# a prefix that matches no one is a filter, not a typo: nothing said
	run --separate-stderr maro-peers -g sweep1 -P nothing
	assert_success
	[ -z "$stderr" ]
	[ "$(stored)" = "$before" ]
}

@test "a registry directory that does not exist is said and not created" {
	backend dir || skip "dir backend only"
	run --separate-stderr maro-peers --registry "dir:$BATS_TEST_TMPDIR/nonexistent/deep/x"
	assert_success
	[ "$stderr" = "maro-peers: no group '$MARO_GROUP' in dir:$BATS_TEST_TMPDIR/nonexistent/deep/x (no such directory)" ]
	run --separate-stderr timeout 10 maro-peers --registry "dir:$BATS_TEST_TMPDIR/nonexistent/x" -e a=1 -W 0.3s
	assert_failure 124
	run --separate-stderr maro-peers --registry "dir:$BATS_TEST_TMPDIR/nonexistent/x" --status -f json
	assert_success
	[ ! -e "$BATS_TEST_TMPDIR/nonexistent" ]
	# nor do a broadcast or a look-up with no one to find
	run --separate-stderr sh -c "echo '{\"tag\":\"t\"}' | maro-msg -i json | maro-bcast -g nobody -t t -W 0.5s"
	assert_failure 69
	[ ! -e "${MARO_REGISTRY#dir:}/nobody" ]
}

@test "-e waits for a group that does not exist yet, says so, and does not make it" {
	bg 30 maro-peers -g late -e worker=1 -W 20s -f json > out 2> err
	waiter=$BG_PID
	wait_until 10 grep -q "no group 'late' in $MARO_REGISTRY" err
	grep -q "; waiting for it" err
	if backend dir; then
		[ ! -e "${MARO_REGISTRY#dir:}/late" ]
	else
		[ -z "$(redis-cli -p "$(redis_port)" --scan --pattern 'maro:late:*')" ]
	fi
	MARO_GROUP=late hold worker.1
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	[ "$(jq -r .name out)" = worker.1 ]
}

@test "text: a header and one aligned row per peer, sorted by name" {
	hold worker.1 tcp://127.0.0.1:5001
	w1=$HOLD_PID
	hold master ipc:///tmp/maro-test-master.sock
	m=$HOLD_PID
	run maro-peers
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	host=$(hostname)
	assert_line --index 1 --regexp "^master +master +$host +ipc:///tmp/maro-test-master.sock +$m +[0-9]+\.[0-9]s$"
	assert_line --index 2 --regexp "^worker\.1 +worker +$host +tcp://127.0.0.1:5001 +$w1 +[0-9]+\.[0-9]s$"
	# columns line up: ENDPOINT starts at the same offset in every line
	head=${lines[0]%%ENDPOINT*}
	a=${lines[1]%%ipc://*}
	b=${lines[2]%%tcp://*}
	[ "${#head}" -eq "${#a}" ]
	[ "${#head}" -eq "${#b}" ]
	run --separate-stderr maro-peers -v
	assert_success
	[[ "$stderr" == *"group '$MARO_GROUP' in the ${MARO_TEST_BACKEND:-dir} registry"* ]]
	assert_line --index 0 --regexp '^NAME +TYPE +HOST +ENDPOINT +PID +AGE +NCPU +LOAD1 +MEM +INFO$'
	assert_line --index 2 --regexp "^worker\.1 .* [0-9]+\.[0-9]s +[0-9]+ +[0-9]+\.[0-9]{2} +[0-9.]+[MG]$"
}

@test "json: one compact object per line with every field" {
	hold worker.1 tcp://127.0.0.1:5001
	w1=$HOLD_PID
	hold worker.2
	run maro-peers -f json
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^\{"name":"worker\.1","type":"worker",'
	echo "${lines[0]}" | jq -e --arg h "$(hostname)" --argjson pid "$w1" --arg v "$(maro-peers -V | cut -d' ' -f2)" '
		.name == "worker.1" and .type == "worker" and .host == $h and
		.endpoint == "tcp://127.0.0.1:5001" and .pid == $pid and
		.started > 1600000000000 and .heartbeat_age_ms >= 0 and
		.heartbeat_age_ms < 3000 and .ncpu >= 1 and (.load1 | type) == "number" and
		.mem_used_kb > 0 and .info == "" and .stats.in == 0 and .stats.done == 0 and
		.version == $v and (keys | length) == 13'
	echo "${lines[1]}" | jq -e '.name == "worker.2"'
}

@test "-P lists only the names with the prefix" {
	hold worker.1
	hold worker.2
	hold workers
	hold master
	run sh -c 'maro-peers -f json -P worker. | jq -r .name'
	assert_success
	assert_output "$(printf '%s\n' worker.1 worker.2)"
	run sh -c 'maro-peers -f json -P worker | jq -r .name'
	assert_output "$(printf '%s\n' worker.1 worker.2 workers)"
	run maro-peers -q -P m
	assert_success
	assert_output --regexp '^master +master '
	run maro-peers -P nobody -f json
	assert_success
	assert_output ""
	run maro-peers -P 'a b'
	assert_failure 2
	assert_output --partial "invalid prefix 'a b'"
}

@test "private names are hidden from listings" {
	hold '~reply.1234'
	hold worker.1
	run sh -c 'maro-peers -f json | jq -r .name'
	assert_success
	assert_output worker.1
	run maro-peers
	refute_output --partial reply
	run maro-peers -P '~'
	assert_failure 2
	# and they count for no type
	run timeout 10 maro-peers -e reply=1 -W 0.3s
	assert_failure 124
}

@test "-e waits for a peer that appears later, then lists" {
	hold worker.1
	bg 30 maro-peers -e worker=2 -e master=1 -W 20s -f json > out
	waiter=$BG_PID
	hold worker.2
	kill -0 "$waiter"	# still waiting: no master yet
	hold master
	wait_exit "$waiter" 20
	[ "$status" -eq 0 ]
	[ "$(jq -r .name out | tr '\n' ' ')" = "master worker.1 worker.2 " ]
}

@test "-e times out with 124 at -W, saying what is missing" {
	hold worker.1
	start=$SECONDS
	run --separate-stderr timeout 10 maro-peers -e worker=2 -W 1s
	assert_failure 124
	[ $((SECONDS - start)) -le 4 ]
	[ -z "$output" ]
	[[ "$stderr" == *"timed out waiting for peers: worker 1 of 2 live"* ]]
	# not a terminal: no progress display
	[[ "$stderr" != *"waiting for peers: worker 1/2"* ]]
	run maro-peers -q -e worker=1 -W 5s
	assert_success
	assert_output ""
}

@test "-e needs TYPE=N with N at least 1" {
	for bad in worker worker=0 =3 worker=x 'a b=1'; do
		run maro-peers -e "$bad"
		assert_failure 2
		assert_output --partial "invalid -e '$bad'"
	done
}

@test "a holder killed with SIGKILL disappears (dir: at once; redis: within the TTL)" {
	hold worker.1
	hold worker.2
	listed worker.1
	kill -9 "$HOLD_PID"
	wait_until 5 sh -c "! kill -0 $HOLD_PID 2>/dev/null"
	if backend dir; then
		run ! listed worker.2
		run maro-peers -f json
		assert_output --partial '"worker.1"'
	else
		start=$SECONDS
		wait_until 5 sh -c '! maro-peers -f json | grep -q "\"worker.2\""'
		[ $((SECONDS - start)) -le 3 ]
		listed worker.1
	fi
}

@test "SIGTERM of a holder removes its entry at once" {
	hold worker.1
	hold worker.2
	kill -TERM "$HOLD_PID"
	wait_exit "$HOLDER" 10
	[ "$status" -eq 0 ]
	run sh -c 'maro-peers -f json | jq -r .name'
	assert_success
	assert_output worker.1
}

@test "a second holder of a name exits 1, naming the holder's pid and host" {
	hold worker.1
	run timeout 10 "$UNIT" hold worker.1
	assert_failure 1
	assert_output --partial "name 'worker.1' is held by pid $HOLD_PID on $(hostname)"
	# the first one is untouched
	run sh -c 'maro-peers -f json | jq -r .pid'
	assert_output "$HOLD_PID"
}

@test "--watch: the members as joins, then joins and leaves as they happen" {
	hold worker.1
	bg 30 maro-peers --watch -W 25s > watch
	watcher=$BG_PID
	wait_until 10 grep -qx "join worker.1 worker $(hostname) tcp://127.0.0.1:9" watch
	hold worker.2 tcp://127.0.0.1:5002
	wait_until 10 grep -qx "join worker.2 worker $(hostname) tcp://127.0.0.1:5002" watch
	kill -TERM "$HOLD_PID"
	wait_until 10 grep -qx "leave worker.2" watch
	[ "$(wc -l < watch)" -eq 3 ]
	kill -INT "$(child_pid "$watcher" maro-peers)"
	wait_exit "$watcher" 10
	[ "$status" -eq 130 ]
}

@test "--watch -f json: events as objects; -W ends it with 0" {
	hold worker.1
	bg 30 maro-peers --watch -f json -W 25s > watch
	watcher=$BG_PID
	wait_until 10 grep -q '"event":"join","name":"worker.1"' watch
	kill -TERM "$HOLD_PID"
	wait_until 10 grep -qx '{"event":"leave","name":"worker.1"}' watch
	jq -s -e 'map(select(.event == "join")) | length == 1 and .[0].type == "worker" and .[0].pid > 0' watch
	kill -TERM "$(child_pid "$watcher" maro-peers)"
	wait_exit "$watcher" 10
	[ "$status" -eq 143 ]
	run timeout 10 maro-peers --watch -W 0.3s
	assert_success
	assert_output ""
}

@test "Redis down at start: exit 69, the address and cause named" {
	run timeout 10 maro-peers --registry redis://127.0.0.1:1/0
	assert_failure 69
	assert_output "maro-peers: cannot connect to redis at 127.0.0.1:1: Connection refused"
	run timeout 10 maro-peers --registry redis://127.0.0.1:1/0 -e worker=1 -W 5s
	assert_failure 69
	MARO_REGISTRY=redis://127.0.0.1:1/0 run timeout 10 "$UNIT" hold worker.1
	assert_failure 69
	assert_output --partial "cannot connect to redis at 127.0.0.1:1"
}

@test "a wrong Redis password: exit 69, the password never shown" {
	backend redis || skip "redis backend only"
	port=$(redis_port)
	redis-cli -p "$port" ACL SETUSER "peers-$$" on '>right-pw' '~*' '+@all' > /dev/null
	run timeout 10 maro-peers --registry "redis://peers-$$:wrong-pw@127.0.0.1:$port/0"
	assert_failure 69
	assert_output "maro-peers: redis authentication failed at 127.0.0.1:$port"
	run timeout 10 maro-peers --registry "redis://peers-$$:right-pw@127.0.0.1:$port/0"
	assert_success
	MARO_REDIS_PASSWORD=right-pw run timeout 10 maro-peers --registry "redis://peers-$$:@127.0.0.1:$port/0"
	assert_success
	redis-cli -p "$port" ACL DELUSER "peers-$$" > /dev/null
}

@test "invalid group, registry URL or options: usage errors (2)" {
	run maro-peers -g 'a b'
	assert_failure 2
	assert_output --partial "invalid group name 'a b'"
	run maro-peers --registry 'ftp://u:secret@h/'
	assert_failure 2
	refute_output --partial secret
	run maro-peers -f xml
	assert_failure 2
	assert_output --partial "unknown format 'xml'"
	run maro-peers -W 5x
	assert_failure 2
	run maro-peers extra
	assert_failure 2
	run --separate-stderr maro-peers --no-such-option
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"try 'maro-peers --help'"* ]]
}

@test "--help and -V print to stdout and exit 0" {
	run maro-peers --help
	assert_success
	assert_line --index 0 "usage: maro-peers [-g GROUP] [--registry URL] [-e TYPE=N]... [-P PREFIX]"
	assert_line --index 1 --partial "[-f text|json|prometheus] [--status] [--serve ADDR] [--watch]"
	run maro-peers -V
	assert_success
	assert_output --regexp "^maro-peers [0-9.]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
}

@test "garbage in the registry is skipped, never fatal" {
	hold worker.1
	if backend dir; then
		dir=${MARO_REGISTRY#dir:}/$MARO_GROUP
		printf 'this is\nnot an entry\n' > "$dir/junk.entry"
		sed 's/^name=.*/name=evil/; s|^endpoint=.*|endpoint=http://evil.example/|' \
			"$dir/worker.1.entry" > "$dir/evil.entry"
		sed 's/^name=.*/name=copy/' "$dir/worker.1.entry" > "$dir/other.entry"
		head -c 100000 /dev/urandom > "$dir/noise.entry"
		mkfifo "$dir/fifo.entry"
	else
		key="maro:$MARO_GROUP"
		rc() { redis-cli -p "$(redis_port)" "$@" > /dev/null; }
		rc HSET "$key:m:junk" foo bar
		rc PEXPIRE "$key:m:junk" 60000
		rc HSET "$key:m:evil" name evil type x endpoint http://evil.example/ host h pid 1 \
			hb 1 ttl 60000 token 0123456789abcdef0123456789abcdef
		rc PEXPIRE "$key:m:evil" 60000
		rc SET "$key:m:str" garbage
		rc ZADD "$key:members" 99999999999999 junk 99999999999999 evil 99999999999999 str \
			99999999999999 gone
	fi
	run timeout 10 maro-peers -f json
	assert_success
	[ "$(echo "$output" | jq -r .name)" = worker.1 ]
	run timeout 10 maro-peers
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	# a name taken by garbage is free
	hold evil
	listed evil
}

@test "Redis stopped and restarted under a holder: its entry comes back" {
	backend redis || skip "redis backend only"
	hold worker.1
	port=$(redis_port)
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_FILE_TMPDIR/redis"
	run timeout 10 maro-peers
	assert_failure 69
	sh "$MARO_TOP/scripts/test-redis" start "$BATS_FILE_TMPDIR/redis" "$port" > /dev/null
	run maro-peers -f json
	assert_success
	wait_until 10 listed worker.1
	kill -0 "$HOLD_PID"
	run sh -c 'maro-peers -f json | jq -r .pid'
	assert_output "$HOLD_PID"
}

# stats_are NAME JQ: the stats of NAME in the --status summary satisfy JQ
stats_are() {
	maro-peers --status -f json |
		jq -e ".components[] | select(.name == \"$1\") | .stats | $2" > /dev/null
}

@test "stats: a worker's tasks done and failed, messages in and out, in the summary and the listing" {
	# the task 7 fails until the scatter gives it up
	bg 60 maro-dist -n worker.1 --raw --on '*:*:1' 'read x; [ "$x" != 7 ] || exit 3; echo "$x"' 2> dist.err
	wait_until 10 live_is worker. 1
	run timeout 30 sh -c 'seq 10 | maro-scatter -P worker -t t --json-lines --task-timeout 2s --retries 1 -W 20s -f payload 2> scatter.err'
	assert_failure 3
	[ "${#lines[@]}" -eq 9 ]
	# within a few heartbeats (dir: a rewrite at most every 5 s)
	wait_until 15 stats_are worker.1 '.done == 9 and .in >= 9 and .out >= 9 and .failed >= 1 and .flight == 0'
	run -0 maro-peers --status -f json
	[ "$(echo "$output" | jq -c '.type_stats.worker | [.publishers, .done]')" = "[1,9]" ]
	# the listing carries them too
	run -0 maro-peers -f json
	[ "$(echo "$output" | jq -c 'select(.name == "worker.1") | .stats | [.done, .in >= 9]')" = "[9,true]" ]
	# and the text: the type's sums, then the member's row
	run -0 maro-peers --status
	assert_line --regexp '^NAME +IN +OUT +DONE +FAILED +FLIGHT +DONE/s +IN/s +OUT/s$'
	assert_line --regexp '^worker +[0-9]+ +[0-9]+ +9 +[1-9][0-9]* +0 +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]$'
	assert_line --regexp '^worker\.1 +[0-9]+ +[0-9]+ +9 +[1-9][0-9]* +0 +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]$'
}

@test "stats: rates are positive while a scatter runs, and the sums of a type add up; its job is listed, -P matching its name, never among the members, and leaves with it" {
	local w job
	for w in 1 2; do
		bg 60 maro-dist -n "worker.$w" --raw --co '*:*:1' 'while read -r x; do sleep 0.02; echo "$x"; done'
	done
	wait_until 10 live_is worker. 2
	bg 40 sh -c 'seq 600 | maro-scatter -P worker -t t --json-lines -W 35s -f payload > out'
	# the job of an anonymous master, at every heartbeat: its name is anon and an id
	wait_until 10 sh -c 'maro-peers --status -f json | jq -e ".jobs[0] | .total == 600 and .done > 0" > /dev/null'
	run -0 maro-peers --status -f json
	job=$(jq -r '.jobs[0].name' <<< "$output")
	[[ "$job" =~ ^anon\.[0-9a-f]{8}$ ]]
	assert_equal "$(jq -c '[.members, (.jobs | length), .types]' <<< "$output")" '[2,1,{"worker":2}]'
	# -P: a job's name, after the '~' of its master's private entry
	run -0 maro-peers --status -f json -P anon
	assert_equal "$(jq -c '[.members, [.jobs[].name]]' <<< "$output")" "[0,[\"$job\"]]"
	run -0 maro-peers --status -f json -P worker
	assert_equal "$(jq -c '[.members, .jobs]' <<< "$output")" '[2,[]]'
	run -0 maro-peers --status -P anon
	assert_line --index 0 --regexp '^JOB +HOST +STARTED +TOTAL +DONE +FAILED +GAVEUP +OPEN +DONE/s +ETA +AGE$'
	assert_line --index 1 --regexp "^$job +[^ ]+ +[0-9:]{8} +600 +[0-9]+ +0 +0 +[0-9]+ +[0-9]+\\.[0-9] +[-0-9ms]+ +[0-9.]+s\$"
	# the members: no private name
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output" | tr '\n' ' ')" 'worker.1 worker.2 '
	wait_until 15 stats_are worker.1 '.rdone > 0 and .rin > 0 and .rout > 0'
	wait_until 15 stats_are worker.2 '.rdone > 0'
	run -0 maro-peers --status -f json
	echo "$output" | jq -e '.type_stats.worker.rdone > 0 and .type_stats.worker.publishers == 2' > /dev/null
	# once it is done, every task is counted, and the rates vanish; the job left with its master
	wait_until 40 has_lines out 600
	wait_until 15 sh -c 'maro-peers --status -f json | jq -e ".type_stats.worker | .done == 600 and .rdone == 0" > /dev/null'
	assert_equal "$(maro-peers --status -f json | jq -c .jobs)" '[]'
}

@test "stats: an entry whose stats are garbage is listed, its stats ignored" {
	hold worker.1
	local junk='in=x out=-1 zz=3 win=3/ rin=nan done=1e3'
	if backend dir; then
		dir=${MARO_REGISTRY#dir:}/$MARO_GROUP
		sed "s/^name=.*/name=copy/; s|^stats=.*|stats=$junk|" "$dir/worker.1.entry" > "$dir/copy.entry"
		sed "s/^name=.*/name=long/; s|^stats=.*|stats=in=1$(printf '%0300d' 0)|" \
			"$dir/worker.1.entry" > "$dir/long.entry"
	else
		key="maro:$MARO_GROUP"
		for n in copy long; do
			s=$junk
			[ $n = copy ] || s="in=1$(printf '%0300d' 0)"
			redis-cli -p "$(redis_port)" EVAL "
				redis.call('HSET', KEYS[2], unpack(redis.call('HGETALL', KEYS[1])))
				redis.call('HSET', KEYS[2], 'name', ARGV[1], 'stats', ARGV[2])
				redis.call('PEXPIRE', KEYS[2], 60000)
				redis.call('ZADD', KEYS[3], 99999999999999, ARGV[1])" \
				3 "$key:m:worker.1" "$key:m:$n" "$key:members" "$n" "$s" > /dev/null
		done
	fi
	run -0 timeout 10 maro-peers -f json
	[ "$(echo "$output" | jq -r .name | tr '\n' ' ')" = "copy long worker.1 " ]
	[ "$(echo "$output" | jq -c 'select(.name != "worker.1") | .stats')" = "$(printf 'null\nnull')" ]
	run -0 timeout 10 maro-peers --status -f json
	[ "$(echo "$output" | jq -c '[.members, [.components[].name]]')" = '[3,["worker.1"]]' ]
	run -0 timeout 10 maro-peers --status
	refute_line --regexp '^(copy|long) '
}

# sample FAMILY NAME: the value of FAMILY for member NAME (or host NAME) in
# the last scrape, metrics.prom
sample() {
	sed -n "s/^$1{.*\(name\|host\)=\"$2\"[,}].* \([^ ]*\)\$/\2/p" metrics.prom | head -n 1
}
# scraped_at_least FAMILY NAME N: a scrape (into metrics.prom) has it at N or more
scraped_at_least() {
	maro-peers --status -f prometheus > metrics.prom || return 1
	[ -n "$(sample "$1" "$2")" ] && awk -v x="$(sample "$1" "$2")" -v n="$3" 'BEGIN { exit !(x >= n) }'
}
# between X LO HI: LO <= X <= HI, as numbers
between() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x >= lo && x <= hi) }'; }

@test "metrics: every family maro-peers(1) lists, with plausible values, from a pool, its worker and a requester that stops acknowledging" {
	export MARO_WINDOW=64
	local host job t0 scatter
	# the host as entries carry it, and as job names do
	host=$(hostname)
	job=$(hostname | cut -c1-48 | sed 's/[^A-Za-z0-9-]/-/g')
	t0=$(date +%s)
	# the worker answers task 1 at once, task 2 once told to (the file go);
	# the other job fails and is given up after one restart
	cat > handler <<-'EOF2'
	while read -r x; do
		[ "$x" = 1 ] || { : > took; until [ -e go ]; do sleep 0.02; done; }
		echo "$x"
	done
	EOF2
	printf '%s\n' "w 1 - exec maro-dist --raw --co '*:t:1' 'sh $PWD/handler'" 'bad 1 - exit 3' > pool.conf
	bg 60 maro-pool --config pool.conf --max-restarts 1 2> pool.err
	wait_until 10 live_is "w.$job.1" 1
	bg 60 sh -c 'printf "1\n2\n" | exec maro-scatter -P w. -t t -f payload > out'
	scatter=$(child_pid "$BG_PID" maro-scatter)
	wait_until 10 test -e took
	# the reply to task 1 was acknowledged (the requester may be slow to
	# take it: an instrumented build once was stopped before it had)
	wait_until 10 scraped_at_least maro_messages_out_total "w.$job.1" 1
	# the requester stops: the reply to task 2 is not acknowledged, and sent again
	kill -STOP "$scatter"
	STOPPED=$scatter
	touch go
	wait_until 15 scraped_at_least maro_messages_resent_total "w.$job.1" 1
	if command -v promtool > /dev/null; then
		run -0 promtool check metrics < metrics.prom
	fi
	local w="w.$job.1" p="pool.$job"
	grep -qx "maro_registry_up{group=\"$MARO_GROUP\"} 1" metrics.prom
	[ "$(sample maro_component_up "$w")" = 1 ]
	[ "$(sample maro_component_up "$p")" = 1 ]
	# a live entry's heartbeat is younger than MARO_TTL (2 s here)
	between "$(sample maro_component_heartbeat_age_seconds "$w")" 0 2
	between "$(sample maro_component_start_time_seconds "$w")" "$t0" "$(date +%s)"
	# the worker took both tasks, its reply to task 1 was acknowledged
	between "$(sample maro_messages_in_total "$w")" 2 2
	between "$(sample maro_bytes_in_total "$w")" 100 100000
	between "$(sample maro_messages_out_total "$w")" 1 2
	between "$(sample maro_messages_resent_total "$w")" 1 100
	# its reply window: MARO_WINDOW per requester, at most one reply in it
	[ "$(sample maro_window_size "$w")" = 64 ]
	between "$(sample maro_window_used "$w")" 0 1
	# the host: a load average, and the two members on it (the stopped
	# requester's reply inbox is private, not a member)
	between "$(sample maro_host_load1 "$host")" 0 1000
	[ "$(sample maro_host_members "$host")" = 2 ]
	# the pool: two jobs, one running, the bad one restarted once and given up
	[ "$(sample maro_pool_jobs "$p")" = 2 ]
	[ "$(sample maro_pool_jobs_running "$p")" = 1 ]
	[ "$(sample maro_pool_restarts_total "$p")" = 1 ]
	[ "$(sample maro_pool_jobs_gaveup_total "$p")" = 1 ]
	kill -CONT "$scatter"
	STOPPED=
}

@test "XDG_RUNTIME_DIR: without MARO_REGISTRY the registry is dir:\$XDG_RUNTIME_DIR/maro, else dir:/tmp/maro-UID" {
	backend dir || skip "the default registry is a dir: one; this backend is tested with MARO_REGISTRY"
	unset MARO_REGISTRY
	mkdir -m 700 run
	XDG_RUNTIME_DIR=$PWD/run bg 30 maro-recv -n x.1 > /dev/null
	XDG_RUNTIME_DIR=$PWD/run wait_until 10 is_live x.1
	[ -d "run/maro/$MARO_GROUP" ]
	run -0 maro-peers --registry "dir:$PWD/run/maro" -f json
	assert_output --partial '"name":"x.1"'
	# another runtime directory is another registry; none, /tmp/maro-UID
	run -0 --separate-stderr env XDG_RUNTIME_DIR="$PWD/elsewhere" maro-peers -f json
	assert_output ''
	[[ $stderr == "maro-peers: no group '$MARO_GROUP' in dir:$PWD/elsewhere/maro "* ]]
	run -0 --separate-stderr env -u XDG_RUNTIME_DIR maro-peers -f json
	assert_output ''
	[[ $stderr == "maro-peers: no group '$MARO_GROUP' in dir:/tmp/maro-$(id -u)"* ]]
}
