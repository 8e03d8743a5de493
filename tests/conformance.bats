#!/usr/bin/env bats
# backends: dir redis
# check: early (a long one)
# maro(7) as a contract: each test proves one statement of the page against
# the tools, speaking the protocol itself.  Registry entries are written
# here by hand (files and an OFD lock; redis-cli), frames and messages are
# built here byte by byte and sent or served by tests/tools/wire-peer.c,
# which uses libzmq and nothing of lib/.  A failure names the sentence.

load helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	WIRE="$MARO_BIN/../tests/wire-peer"
	[ -x "$WIRE" ] || skip "no wire-peer: make all builds it"
}
teardown() { default_teardown; }

# CBOR by hand: text STRING (definite, shorter than 256 bytes) ...
ctext() {
	local n=${#1}
	if [ "$n" -lt 24 ]; then
		printf "\\x$(printf %02x $((0x60 + n)))"
	else
		printf "\\x78\\x$(printf %02x "$n")"
	fi
	printf '%s' "$1"
}
# cmap KEY VALUE ...: a definite map of text keys and text values
cmap() {
	printf "\\x$(printf %02x $((0xa0 + $# / 2)))"
	while [ $# -gt 0 ]; do
		ctext "$1"
		ctext "$2"
		shift 2
	done
}
uuid() { cat /proc/sys/kernel/random/uuid; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# entry_mac KEYFILE GROUP < FIELDS: the mac field of maro(7) REGISTRY, from
# the stored fields (key=value lines), computed here as the page says:
# BLAKE2b only (Python's hashlib), nothing of libsodium or lib/
entry_mac() {
	python3 -c '
import hashlib, sys
Z = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
def z85(s):
    out = b""
    for i in range(0, len(s), 5):
        v = 0
        for c in s[i:i + 5]:
            v = v * 85 + Z.index(c)
        out += v.to_bytes(4, "big")
    return out
secret = [l.split("=", 1)[1].strip() for l in open(sys.argv[1]) if l.startswith("secret")][0]
key = hashlib.blake2b(b"", digest_size=32, key=z85(secret), salt=(1).to_bytes(8, "little") + bytes(8),
    person=b"maro-reg" + bytes(8)).digest()
f = dict(l.rstrip("\n").split("=", 1) for l in sys.stdin if "=" in l)
line = lambda k: k + "=" + f.get(k, "") + "\n"
text = "group=" + sys.argv[2] + "\n" + "".join(map(line,
    "name type endpoint host pid started ncpu load1 mem info stats".split()))
# job and version only when they are not empty
text += (line("job") if f.get("job") else "") + (line("version") if f.get("version") else "")
text += "".join(map(line, "token ttl owner".split()))
print(hashlib.blake2b(text.encode(), digest_size=32, key=key).hexdigest())
' "$1" "$2"
}

# register NAME ENDPOINT [TYPE [FIELD...]]: an entry written by hand, as
# REGISTRY says, with a TTL of 60 s and no heartbeat; FIELD "-token" or
# "-owner" leaves that field out; with $KEYFILE set it carries the mac
# computed by entry_mac, or a wrong one with FIELD "+badmac"; with $JOB
# set, the field job, under the mac, or added after it with FIELD "+jobafter";
# with $VERSION set, the field version, under the mac (FIELD "+versionafter":
# after it)
register() {
	local name=$1 endpoint=$2 type=${3:-$1} skip=" ${*:4} " token owner now f mac
	token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		local cli=(redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")")
		now=$("${cli[@]}" TIME | head -n 1)000
		f=(name "$name" type "$type" endpoint "$endpoint" host "$(hostname)" pid $$ started "$now"
			hb "$now" ttl 60000)
		[[ $skip == *" -token "* ]] || f+=(token "$token")
		[ -z "${JOB:-}" ] || [[ $skip == *" +jobafter "* ]] || f+=(job "$JOB")
		[ -z "${VERSION:-}" ] || [[ $skip == *" +versionafter "* ]] || f+=(version "$VERSION")
		if [ -n "${KEYFILE:-}" ]; then
			mac=$(printf '%s=%s\n' "${f[@]}" | entry_mac "$KEYFILE" "$MARO_GROUP")
			[[ $skip != *" +badmac "* ]] || mac=$(tr 0-9a-f 1-9a-f0 <<< "$mac")
			f+=(mac "$mac")
		fi
		[ -z "${JOB:-}" ] || [[ $skip != *" +jobafter "* ]] || f+=(job "$JOB")
		[ -z "${VERSION:-}" ] || [[ $skip != *" +versionafter "* ]] || f+=(version "$VERSION")
		"${cli[@]}" HSET "maro:$MARO_GROUP:m:$name" "${f[@]}" > /dev/null
		"${cli[@]}" PEXPIRE "maro:$MARO_GROUP:m:$name" 60000 > /dev/null
		"${cli[@]}" ZADD "maro:$MARO_GROUP:members" $((now + 60000)) "$name" > /dev/null
		return
	fi
	local dir="$BATS_TEST_TMPDIR/registry/$MARO_GROUP"
	mkdir -p -m 0700 "$BATS_TEST_TMPDIR/registry" "$dir"
	owner=".owner.$$.${token:0:8}"
	bg 60 "$WIRE" hold "$dir/$owner" 60000 > "hold.$name"
	wait_until 10 grep -q held "hold.$name"
	now=$(now_ms)
	{
		printf '%s\n' "name=$name" "type=$type" "endpoint=$endpoint" "host=$(hostname)" \
			"pid=$$" "started=$now" "hb=$now" "ttl=60000"
		[[ $skip == *" -token "* ]] || echo "token=$token"
		[[ $skip == *" -owner "* ]] || echo "owner=$owner"
		[ -z "${JOB:-}" ] || [[ $skip == *" +jobafter "* ]] || echo "job=$JOB"
		[ -z "${VERSION:-}" ] || [[ $skip == *" +versionafter "* ]] || echo "version=$VERSION"
	} > "$dir/.tmp.$$.$name"
	if [ -n "${KEYFILE:-}" ]; then
		mac=$(entry_mac "$KEYFILE" "$MARO_GROUP" < "$dir/.tmp.$$.$name")
		[[ $skip != *" +badmac "* ]] || mac=$(tr 0-9a-f 1-9a-f0 <<< "$mac")
		echo "mac=$mac" >> "$dir/.tmp.$$.$name"
	fi
	[ -z "${JOB:-}" ] || [[ $skip != *" +jobafter "* ]] || echo "job=$JOB" >> "$dir/.tmp.$$.$name"
	[ -z "${VERSION:-}" ] || [[ $skip != *" +versionafter "* ]] ||
		echo "version=$VERSION" >> "$dir/.tmp.$$.$name"
	mv "$dir/.tmp.$$.$name" "$dir/$name.entry"
}

# serve NAME [wire-peer serve flags]: a hand-made inbox under NAME; frames in $BATS_TEST_TMPDIR/NAME.log
serve() {
	local name=$1
	shift
	mkdir -p "in.$name"
	bg 30 "$WIRE" serve "$@" "in.$name" > "$name.log"
	wait_until 10 grep -q '^endpoint ' "$name.log"
	register "$name" "$(sed -n 's/^endpoint //p' "$name.log")"
}

# acked: the sequence numbers the ACKs in $output acknowledged, one line, sorted
acked() {
	grep -E '^[0-9]+ [0-9]+$' <<< "$output" | awk '{ for (i = 0; i < $2; i++) print $1 + i }' | sort -n |
		tr '\n' ' '
}

# recv NAME: maro-recv under NAME writing JSON lines to NAME.out; $EP its endpoint
recv() {
	bg 30 maro-recv -n "$1" -f json > "$1.out"
	wait_until 10 is_live "$1"
	EP=$(maro-peers -f json | jq -r --arg n "$1" 'select(.name == $n) | .endpoint')
}

@test "maro(7) REGISTRY: a reader finds a member registered by hand with the fields of the table" {
	register by.hand tcp://127.0.0.1:9 hand
	run -0 maro-peers -f json
	assert_equal "$(jq -r '.name + " " + .type + " " + .endpoint' <<< "$output")" "by.hand hand tcp://127.0.0.1:9"
}

@test "maro(7) REGISTRY: a member publishes its tools' version; maro-peers --status says when members run more than one MAJOR.MINOR" {
	local mine
	mine=$(maro-peers --version | cut -d' ' -f2)
	bg 30 maro-recv -n w.v -W 25s > /dev/null
	wait_until 10 is_live w.v
	run -0 maro-peers -f json
	assert_equal "$(jq -r 'select(.name == "w.v") | .version' <<< "$output")" "$mine"
	# another patch of the same MAJOR.MINOR talks to it: nothing said
	VERSION=${mine%.*}.99 register other.patch tcp://127.0.0.1:9 hand
	run -0 maro-peers --status
	refute_output --partial "versions"
	VERSION=9.1.0 register other.minor tcp://127.0.0.1:9 hand
	run -0 maro-peers --status
	assert_line --regexp '^versions .*: members of another MAJOR.MINOR cannot talk to each other$'
	assert_line --partial " $mine (1)"
	assert_line --partial " 9.1.0 (1)"
	run -0 maro-peers --status -f json
	assert_equal "$(jq -cS .versions <<< "$output")" \
		"$(jq -cnS --arg a "$mine" --arg b "${mine%.*}.99" '{($a): 1, ($b): 1, "9.1.0": 1}')"
	# what is not numbers and single dots, MAJOR.MINOR first, reads as empty; the entry stays
	VERSION='1.0; rm -rf x' register odd.version tcp://127.0.0.1:9 hand
	VERSION='...' register dots.version tcp://127.0.0.1:9 hand
	VERSION='1' register major.version tcp://127.0.0.1:9 hand
	run -0 maro-peers -f json
	assert_equal "$(jq -r 'select(.name | endswith(".version")) | .name + "[" + .version + "]"' <<< "$output" | sort | tr '\n' ' ')" \
		"dots.version[] major.version[] odd.version[] "
}

@test "maro(7) REGISTRY MUST: a reader skips an entry without a token" {
	register no.token tcp://127.0.0.1:9 no -token
	register good tcp://127.0.0.1:9
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output")" good
}

@test "maro(7) REGISTRY MUST: a reader skips a dir: entry without an owner" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	register no.owner tcp://127.0.0.1:9 no -owner
	register good tcp://127.0.0.1:9
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output")" good
}

@test "maro(7) REGISTRY: a dir: entry whose owner's lock nobody holds is not live" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only"
	register gone tcp://127.0.0.1:9
	register good tcp://127.0.0.1:9
	kill -TERM -- "-${BG_PIDS[0]}"
	wait_until 10 sh -c '[ "$(maro-peers -f json | jq -r .name)" = good ]'
}

@test "maro(7) GROUPS MUST: a reader skips an entry whose type begins with '~'" {
	serve odd
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")" HSET "maro:$MARO_GROUP:m:odd" type '~odd' > /dev/null
	else
		local f="$BATS_TEST_TMPDIR/registry/$MARO_GROUP/odd.entry"
		sed 's/^type=odd$/type=~odd/' "$f" > odd.entry
		mv odd.entry "$f"
	fi
	register good tcp://127.0.0.1:9
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output")" good
	# not found, so waited for until -W
	run -124 maro-send -t x --notification -W 1s -p odd
	run -1 grep '^item' odd.log
}

@test "maro(7) WIRE: a sender's frames are one ZeroMQ frame: 'm', 1, 'D', flags 0x01 or 0, then seq u64, length u32, message; sequence numbers from 1" {
	serve w.1 -c 3
	run -0 sh -c 'for i in 1 2 3; do echo "{\"tag\":\"x\",\"destination\":\"w.1\",\"session_type\":\"notification\",\"payload\":$i}"; done |
		maro-msg -i json | maro-send -W 10s'
	# acknowledged, so served: the log is whole
	run -1 grep '^bad' w.1.log
	run -0 sh -c "sed -n 's/^item seq=\([0-9]*\) .*/\1/p' w.1.log | sort -n | uniq | tr '\n' ' '"
	assert_output "1 2 3 "
	run -0 sh -c "grep -o 'flags=[0-9a-f]*' w.1.log | sort -u | tr '\n' ' '"
	[[ $output =~ ^(flags=0[01] )+$ ]]
}

@test "maro(7) MESSAGES: a message a tool builds has the keys of the table in its order, UUID ids" {
	serve w.1 -c 1
	run -0 maro-send -t x --notification -d '"v"' -W 10s -p w.1
	run -0 maro-msg -f json < in.w.1/1.cbor
	assert_equal "$(jq -c keys_unsorted <<< "$output")" \
		'["tag","destination","session_type","session_stage","session_id","message_id","payload"]'
	[[ $(jq -r .message_id <<< "$output") =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
	assert_equal "$(jq -r .destination <<< "$output")" w.1
}

@test "maro(7) WIRE: an ACK acknowledges: a sender exits 0 once every sequence number was acknowledged" {
	serve w.1 -c 2
	run -0 maro-send -t x --notification -d 1 -W 10s -p w.1
}

@test "maro(7) WIRE: a sender with no ACK sends again, the same sequence number, after about a second" {
	serve w.1 -n -c 2
	run -124 maro-send -t x --notification -d 1 -W 2.5s -p w.1
	run -0 sh -c "grep -c '^item seq=1 ' w.1.log"
	[ "$output" -ge 2 ]
}

@test "maro(7) LIMITS: a sender keeps at most --window (or MARO_WINDOW) messages unacknowledged at a peer: one that never acknowledges sees only the first N" {
	seq 10 | sed 's/.*/{"tag":"x","session_type":"notification","destination":"w.1","payload":&}/' |
		maro-msg -i json > one.cbor
	sed 's/w\.1/w.2/' <(maro-msg -f json < one.cbor) | maro-msg -i json > two.cbor
	serve w.1 -n -c -1
	serve w.2 -n -c -1
	bg 10 env MARO_WINDOW=2 maro-send -W 1s < two.cbor
	local two=$BG_PID
	run -124 maro-send --window 3 -W 1s < one.cbor
	wait_exit "$two" 5
	[ "$status" -eq 124 ]
	[ "$(sed -n 's/^item seq=\([0-9]*\) .*/\1/p' w.1.log | sort -nu | tr '\n' ' ')" = "1 2 3 " ] || fail "$(cat w.1.log)"
	[ "$(sed -n 's/^item seq=\([0-9]*\) .*/\1/p' w.2.log | sort -nu | tr '\n' ' ')" = "1 2 " ]
}

@test "maro(7) WIRE MUST: a receiver ignores the reserved ACK flags (0x02 to 0x80 set)" {
	serve w.1 -a 0xfe -c 1
	run -0 maro-send -t x --notification -d 1 -W 5s -p w.1
}

@test "maro(7) WIRE MUST: a receiver acknowledges each message it handed on" {
	recv r
	cmap tag t destination r message_id "$(uuid)" > m1
	cmap tag u destination r message_id "$(uuid)" > m2
	run -0 --separate-stderr "$WIRE" send -s 7 "$EP" m1 m2
	assert_equal "$(acked)" "7 8 "
	refute_line --regexp '^ack flags=[^0]'
	wait_until 5 has_lines r.out 2
	assert_equal "$(jq -r .tag r.out | tr '\n' ' ')" "t u "
}

@test "maro(7) WIRE MUST: a receiver takes sequence numbers that do not start at 1, and reserved DATA flags set" {
	recv r
	cmap tag t message_id "$(uuid)" > m1
	run -0 --separate-stderr "$WIRE" send -f 0xfe -s 1000000 "$EP" m1
	assert_line '1000000 1'
}

@test "maro(7) MESSAGES MUST: a reader refuses a repeated top-level key (dropped, not acknowledged)" {
	recv r
	{ printf '\xa3'; ctext tag; ctext t; ctext k; ctext 1; ctext k; ctext 2; } > bad
	cmap tag good message_id "$(uuid)" > good
	run -1 --separate-stderr "$WIRE" send -T 1500 "$EP" bad good
	assert_equal "$(acked)" "2 "
	wait_until 5 has_lines r.out 1
	assert_equal "$(jq -r .tag r.out)" good
}

@test "maro(7) MESSAGES MUST: a reader refuses a session_type or session_stage outside its enumeration" {
	recv r
	cmap tag t session_type Task > bad1
	cmap tag t session_stage done > bad2
	cmap tag good message_id "$(uuid)" > good
	run -1 --separate-stderr "$WIRE" send -T 1500 "$EP" bad1 bad2 good
	assert_equal "$(acked)" "3 "
	run -0 cat r.out
	assert_equal "$(jq -r .tag r.out)" good
}

@test "maro(7) MESSAGES MUST: a reader refuses a map without tag and a known key that is not text" {
	recv r
	cmap source s message_id "$(uuid)" > bad1
	{ printf '\xa2'; ctext tag; ctext t; ctext source; printf '\x01'; } > bad2
	cmap tag good > good
	run -1 --separate-stderr "$WIRE" send -T 1500 "$EP" bad1 bad2 good
	assert_equal "$(acked)" "3 "
}

@test "maro(7) MESSAGES MUST: a reader accepts a destination not its own, an id that is not a UUID, keys in any order, unknown keys" {
	recv r
	cmap x.unknown 1 message_id not-a-uuid destination elsewhere tag t session_id S > m1
	run -0 --separate-stderr "$WIRE" send "$EP" m1
	wait_until 5 has_lines r.out 1
	assert_equal "$(jq -c . r.out)" \
		'{"x.unknown":"1","message_id":"not-a-uuid","destination":"elsewhere","tag":"t","session_id":"S"}'
}

@test "maro(7) DELIVERY MUST: a receiver drops a duplicate message_id and acknowledges it" {
	recv r
	cmap tag t message_id "$(uuid)" > m1
	run -0 --separate-stderr "$WIRE" send "$EP" m1
	run -0 --separate-stderr "$WIRE" send "$EP" m1
	cmap tag last message_id "$(uuid)" > m2
	run -0 --separate-stderr "$WIRE" send "$EP" m2
	wait_until 5 has_lines r.out 2
	assert_equal "$(jq -r .tag r.out | tr '\n' ' ')" "t last "
}

@test "maro(7) DELIVERY: a message without message_id is handed on each time it comes (no de-duplication)" {
	recv r
	cmap tag t > m1
	run -0 --separate-stderr "$WIRE" send "$EP" m1
	run -0 --separate-stderr "$WIRE" send "$EP" m1
	wait_until 5 has_lines r.out 2
}

@test "maro(7) WIRE: a receiver accepts a frame of more than 64 KiB of items (the limit binds senders)" {
	recv r
	local big
	big=$(head -c 40000 /dev/zero | tr '\0' a)
	{ printf '\xa2'; ctext tag; ctext t; printf 'gpayload\x79\x9c\x40%s' "$big"; } > m1
	cp m1 m2
	# not the same message twice: the one without a message_id is not a duplicate
	run -0 --separate-stderr "$WIRE" send "$EP" m1 m2
	wait_until 5 has_lines r.out 2
	[ "$(stat -c %s m1)" -gt 40000 ]
}

# entry NAME FIELD: a field of NAME's entry, private ones included, read from the registry itself
entry() {
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")" HGET "maro:$MARO_GROUP:m:$1" "$2"
	else
		sed -n "s/^$2=//p" "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/$1.entry"
	fi
}

@test "maro(7) GROUPS, SESSIONS, DELIVERY: a blocking request names its private inbox ~NAME.8hex of the owner's type in reply_to, and a reply sent there settles it unacknowledged" {
	# the worker never acknowledges: the reply alone must settle the request
	serve w.1 -n -c 1
	bg 30 maro-send -n master.7 -t sum -d 1 -W 20s -f json -p w.1 > reply.json
	wait_until 10 test -s in.w.1/1.cbor
	run -0 maro-msg -f json < in.w.1/1.cbor
	local req=$output inbox sid
	inbox=$(jq -r .reply_to <<< "$req")
	sid=$(jq -r .session_id <<< "$req")
	[[ $inbox =~ ^~master\.7\.[0-9a-f]{8}$ ]] || { echo "reply_to: $inbox"; return 1; }
	assert_equal "$(jq -r '.session_type + " " + .session_stage' <<< "$req")" "task request"
	assert_equal "$(entry "$inbox" type)" master
	cmap tag sum source w.1 destination master.7 session_type task session_stage complete \
		session_id "$sid" message_id "$(uuid)" reply_to "$inbox" > reply
	run -0 --separate-stderr "$WIRE" send "$(entry "$inbox" endpoint)" reply
	wait_exit "$BG_PID" 10
	assert_equal "$status" 0
	assert_equal "$(jq -r .session_stage reply.json)" complete
}

@test "maro(7) WIRE: sequence numbers do not restart when the name moves: the new holder gets the next number, and the unacknowledged under theirs" {
	serve w.1
	mkfifo feed
	bg 30 sh -c 'maro-send -W 20s < feed'
	local sender=$BG_PID
	exec 5> feed
	maro-msg -t x --notification -d one -p w.1 >&5
	wait_until 10 grep -q '^item seq=1 ' w.1.log
	# the first holder leaves without a word; another takes the name elsewhere
	kill -TERM -- "-${BG_PIDS[0]}"
	[ "${MARO_TEST_BACKEND:-dir}" = redis ] || kill -TERM -- "-${BG_PIDS[1]}"
	mkdir in.w.1b
	bg 30 "$WIRE" serve -c 1 in.w.1b > w.1b.log
	wait_until 10 grep -q '^endpoint ' w.1b.log
	register w.1 "$(sed -n 's/^endpoint //p' w.1b.log)"
	maro-msg -t x --notification -d two -p w.1 >&5
	exec 5>&-
	wait_exit "$sender" 15
	assert_equal "$status" 0
	run -0 grep '^item' w.1b.log
	assert_output --regexp '^item seq=2 '
	run -0 maro-msg -f payload < in.w.1b/2.cbor
	assert_output two
}

@test "maro(7) REGISTRY MUST: with a group key, a reader takes an entry whose mac is computed as the page says (its job too), and skips one with a wrong mac or none, or a job added after" {
	maro-keygen group.key
	KEYFILE=group.key VERSION=0.1.7 JOB='start=1795000000 total=4 read=4 done=3 failed=1 gaveup=0 open=1 rate=1.50 eta=1' \
		register by.hand tcp://127.0.0.1:9 hand
	KEYFILE=group.key register bad.mac tcp://127.0.0.1:9 bad +badmac
	KEYFILE=group.key JOB='start=1795000000 done=9' register job.after tcp://127.0.0.1:9 after +jobafter
	KEYFILE=group.key VERSION=0.1.7 register version.after tcp://127.0.0.1:9 after +versionafter
	register no.mac tcp://127.0.0.1:9 no
	MARO_KEYFILE=group.key run -0 --separate-stderr maro-peers -v -f json
	assert_equal "$(jq -r '.name + " " + .version' <<< "$output")" "by.hand 0.1.7"
	[[ "$stderr" == *"skipped the entry of 'bad.mac': its MAC is wrong"* ]]
	[[ "$stderr" == *"skipped the entry of 'job.after': its MAC is wrong"* ]]
	[[ "$stderr" == *"skipped the entry of 'version.after': its MAC is wrong"* ]]
	[[ "$stderr" == *"skipped the entry of 'no.mac': its MAC is missing"* ]]
	MARO_KEYFILE=group.key run -0 --separate-stderr maro-peers --status -f json
	assert_equal "$(jq -c '[.jobs[] | [.name, .start, .total, .done, .failed, .open, .rate, .eta]]' <<< "$output")" \
		'[["by.hand",1795000000,4,3,1,1,1.5,1]]'
	# a reader without the key takes them all
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output" | sort | tr '\n' ' ')" "bad.mac by.hand job.after no.mac version.after "
	# a sender with the key finds no trusted entry: refused at once, not waited for
	run -69 --separate-stderr timeout 20 maro-send --keyfile group.key -p no.mac -t x -d y --notification -W 10s
	[[ "$stderr" == *"'no.mac' refused our connection for want of the group key: its entry lacks our group key's MAC"* ]]
}

@test "maro(7) REGISTRY: the mac a tool writes is the one the page defines, over the fields as stored" {
	maro-keygen group.key
	bg 30 maro-recv --keyfile group.key -n w.mac -W 25s > /dev/null
	wait_until 10 is_live w.mac
	local stored
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		stored=$(redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")" HGETALL "maro:$MARO_GROUP:m:w.mac" | paste -d= - -)
	else
		stored=$(cat "$BATS_TEST_TMPDIR/registry/$MARO_GROUP/w.mac.entry")
	fi
	local mac
	mac=$(sed -n 's/^mac=//p' <<< "$stored")
	[[ "$mac" =~ ^[0-9a-f]{64}$ ]]
	assert_equal "$(grep -v '^mac=' <<< "$stored" | entry_mac group.key "$MARO_GROUP")" "$mac"
}

@test "maro(7) REGISTRY: an entry whose heartbeat is older than its ttl is dead to every reader" {
	[ "${MARO_TEST_BACKEND:-dir}" = dir ] || skip "dir backend only: Redis expires it"
	register old tcp://127.0.0.1:9
	register good tcp://127.0.0.1:9
	local f="$BATS_TEST_TMPDIR/registry/$MARO_GROUP/old.entry" hb
	hb=$(( $(now_ms) - 10000 ))
	sed "s/^hb=.*/hb=$hb/; s/^ttl=.*/ttl=5000/" "$f" > old.entry
	touch -d '10 seconds ago' old.entry
	mv old.entry "$f"
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output")" good
}

@test "maro(7) MESSAGES MUST: every tool that reads messages on standard input refuses each malformed one, exit 65 at its offset" {
	local t f
	{ printf '\xa3'; ctext tag; ctext t; ctext k; ctext 1; ctext k; ctext 2; } > repeated
	cmap tag t session_type Task > enumeration
	cmap source s > untagged
	{ printf '\xa2'; ctext tag; ctext t; ctext reply_to; printf '\x01'; } > not-text
	for f in repeated enumeration untagged not-text; do
		for t in "maro-msg -f json" "maro-msg reply" "maro-send -W 5s -p x" \
			"maro-bcast -P x -W 5s" "maro-scatter -P x -W 5s"; do
			run --separate-stderr $t < "$f"
			[ "$status" = 65 ] || { echo "$t < $f: $status $stderr"; return 1; }
			[[ $stderr == *"malformed input at byte offset "* ]] || { echo "$t < $f: $stderr"; return 1; }
		done
	done
}

@test "maro(7) REGISTRY: a reader turns the control characters of info into spaces (a newline too, on Redis)" {
	register by.hand tcp://127.0.0.1:9
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")" HSET "maro:$MARO_GROUP:m:by.hand" info $'a\nb\tc' > /dev/null
	else
		local f="$BATS_TEST_TMPDIR/registry/$MARO_GROUP/by.hand.entry"
		{ cat "$f"; printf 'info=a\x01b\tc\n'; } > e
		mv e "$f"
	fi
	run -0 maro-peers -f json
	assert_equal "$(jq -r .info <<< "$output")" "a b c"
}

@test "maro(7) REGISTRY redis: a hash without an expiry, or a name not in the members set, is not live" {
	[ "${MARO_TEST_BACKEND:-dir}" = redis ] || skip "redis backend only"
	local cli=(redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")")
	register lasting tcp://127.0.0.1:9
	register unlisted tcp://127.0.0.1:9
	register good tcp://127.0.0.1:9
	"${cli[@]}" PERSIST "maro:$MARO_GROUP:m:lasting" > /dev/null
	"${cli[@]}" ZREM "maro:$MARO_GROUP:members" unlisted > /dev/null
	run -0 maro-peers -f json
	assert_equal "$(jq -r .name <<< "$output")" good
	# looked up by name, a hash without an expiry is no holder either
	run -124 maro-send -t x --notification -W 1s -p lasting
}

# item SEQ FILE: a DATA item (seq u64, length u32, the message) for a frame built here
item() {
	local n
	n=$(stat -c %s "$2")
	printf "\\x$(printf %02x $(($1 >> 56 & 255)))\\x$(printf %02x $(($1 >> 48 & 255)))"
	printf "\\x$(printf %02x $(($1 >> 40 & 255)))\\x$(printf %02x $(($1 >> 32 & 255)))"
	printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))"
	printf "\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"
	printf "\\x$(printf %02x $((n >> 24 & 255)))\\x$(printf %02x $((n >> 16 & 255)))"
	printf "\\x$(printf %02x $((n >> 8 & 255)))\\x$(printf %02x $((n & 255)))"
	cat "$2"
}

@test "maro(7) WIRE MUST: a frame of another version or type is dropped whole, unacknowledged, and the inbox keeps serving" {
	recv r
	cmap tag v2 message_id "$(uuid)" > m
	{ printf 'm\x02D\x00'; item 1 m; } > v2
	{ printf 'm\x01X\x00'; item 1 m; } > typex
	run -1 --separate-stderr "$WIRE" send -r -T 1000 "$EP" v2
	run -1 --separate-stderr "$WIRE" send -r -T 1000 "$EP" typex
	cmap tag good message_id "$(uuid)" > good
	{ printf 'm\x01D\x01'; item 5 good; } > ok
	run -0 --separate-stderr "$WIRE" send -r -T 3000 "$EP" ok
	assert_line '5 1'
	wait_until 5 has_lines r.out 1
	assert_equal "$(jq -r .tag r.out)" good
}

@test "maro(7) WIRE MUST: an item whose length overruns its frame is dropped with the rest of the frame; the items before it are served" {
	recv r
	cmap tag first message_id "$(uuid)" > m1
	cmap tag second message_id "$(uuid)" > m2
	# the second item says it is longer than what is left of the frame
	{ printf 'm\x01D\x01'; item 1 m1; item 2 m2 | head -c 8; printf '\x00\x00\x00\x99'; tail -c +13 < <(item 2 m2); } > frame
	run -0 --separate-stderr "$WIRE" send -r -T 1500 "$EP" frame
	assert_equal "$(acked)" "1 "
	wait_until 5 has_lines r.out 1
	assert_equal "$(jq -r .tag r.out)" first
}
