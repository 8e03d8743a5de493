#!/usr/bin/env bats
# Every tool's options come from one table (lib/opt.h): --help,
# --list-options and the parse.  Here each tool's table is held against its
# man page: every flag it takes is documented in OPTIONS and SYNOPSIS, every
# flag documented is taken, with the same short letter; and the shared
# flags resolve with one precedence: flag > MARO_* > default.  Then the
# effect of each shared flag, one test per flag over every tool that
# documents it: the group and registry a member joins and a sender looks
# in, the group key, the address advertised, the type, what -v adds and -q
# takes away, the version, a takeover, a task.

load helpers

setup() {
	use_registry
	cd "$BATS_TEST_TMPDIR"
	unset MARO_KEYFILE MARO_TRANSPORT MARO_ADVERTISE MARO_INSECURE_TCP MARO_NAME
	export MARO_TTL=2s
	# the host as a maro-pool job's name carries it
	HOST=$(hostname | cut -c1-48 | sed 's/[^A-Za-z0-9-]/-/g')
	# the members that members() starts, as names() lists them
	MEMBERS=$(printf '%s\n' m.dist m.pool m.recv m.wait "m.$HOST.1" | LC_ALL=C sort | tr '\n' ' ')
}
teardown() { default_teardown; }

# names ARGS...: the names maro-peers ARGS lists, sorted, on one line
names() { maro-peers -f json "$@" 2> /dev/null | jq -r .name | LC_ALL=C sort | tr '\n' ' '; }
names_are() {
	local want=$1
	shift
	[ "$(names "$@")" = "$want" ]
}

# members ARGS...: one member of each tool that joins, each given ARGS:
# maro-recv, maro-wait-event, maro-dist, and a maro-pool (itself and its job)
members() {
	bg 30 maro-recv -n m.recv "$@" > /dev/null
	bg 30 maro-wait-event -n m.wait "$@" 'x:go:1' > /dev/null
	bg 30 maro-dist -n m.dist "$@" --on 'x:go:1' true
	bg 30 maro-pool --name m.pool -j 1 -T m "$@" -- maro-recv > /dev/null
}

# echo_peer NAME ARGS...: a maro-dist NAME, given ARGS, that answers each
# task tagged echo with its payload
echo_peer() { bg 30 maro-dist -n "$1" "${@:2}" --raw --co '*:echo:1' cat; }

# The endpoint of a blocking sender's private reply inbox (~...): the dir
# registry's entry file (maro(7), REGISTRY)
private_endpoint() {
	sed -n 's/^endpoint=//p' "$BATS_TEST_TMPDIR/registry/$MARO_GROUP"/~*.entry 2> /dev/null | head -n 1
}
has_private() { [ -n "$(private_endpoint)" ]; }

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

@test "a shared flag resolves flag > MARO_* > default (name, group, registry, and the window of maro-send)" {
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
	# MARO_GROUP and MARO_REGISTRY, when no flag: a receiver and a sender
	# meet there, and nowhere else; the sender's MARO_NAME is the source
	MARO_REGISTRY=$reg MARO_GROUP=envgroup maro-recv -n e.recv -C 1 -f json -W 20s > e.out &
	pid=$!
	wait_until 5 sh -c "maro-peers --registry $reg -g envgroup | grep -q e.recv"
	run -0 maro-peers -f json
	refute_output --partial e.recv
	run -0 maro-peers --registry "$reg" -f json
	refute_output --partial e.recv
	run -0 env MARO_REGISTRY="$reg" MARO_GROUP=envgroup MARO_NAME=e.sender \
		maro-send -p e.recv -t t -d hi --notification -W 10s
	wait "$pid"
	run -0 jq -r '"\(.source) \(.payload)"' e.out
	assert_output "e.sender hi"
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

@test "-g: a member joins the group it names (maro-peers -g lists it there); a sender reaches the peers of its group alone" {
	members -g other
	wait_until 10 names_are "$MEMBERS" -g other
	names_are "" --group other -P nobody
	names_are ""
	echo_peer p.a -g other
	wait_until 10 names_are "$MEMBERS" -g other -P m
	wait_until 10 names_are "p.a " -g other -P p
	run -0 maro-send -g other -p p.a -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 maro-bcast --group other -P p. -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 sh -c 'echo hi | maro-scatter -g other -P p. -t echo -f payload -W 10s'
	assert_output hi
	# from MARO_GROUP, none of them is there
	run -69 maro-send --fail-fast -p p.a -t echo -d hi -W 5s
	run -69 maro-bcast -P p. -t echo -d hi -W 5s
	run -124 sh -c 'echo hi | maro-scatter -P p. -t echo -W 300ms'
}

@test "--registry: a member registers where it names, over MARO_REGISTRY; a sender looks its peers up there" {
	local other=dir:$BATS_TEST_TMPDIR/other
	members --registry "$other"
	wait_until 10 names_are "$MEMBERS" --registry "$other"
	names_are ""
	echo_peer p.a --registry "$other"
	wait_until 10 names_are "p.a " --registry "$other" -P p
	run -0 maro-send --registry "$other" -p p.a -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 maro-bcast --registry "$other" -P p. -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 sh -c "echo hi | maro-scatter --registry $other -P p. -t echo -f payload -W 10s"
	assert_output hi
	# in MARO_REGISTRY, no one
	run -69 maro-send --fail-fast -p p.a -t echo -d hi -W 5s
	run -69 maro-bcast -P p. -t echo -d hi -W 5s
	run -124 sh -c 'echo hi | maro-scatter -P p. -t echo -W 300ms'
}

@test "--keyfile: a member with the group key takes messages only from senders that have it; a sender with it reaches such members, one without is refused (69)" {
	maro-keygen k.key
	members --keyfile "$PWD/k.key"
	echo_peer p.a --keyfile "$PWD/k.key"
	wait_until 10 names_are "$MEMBERS" -P m
	wait_until 10 is_live p.a
	# without the key each is refused, named, at once; the members serve on
	local m
	for m in m.recv m.wait m.dist m.pool "m.$HOST.1" p.a; do
		run -69 --separate-stderr maro-send -n x.1 -p "$m" -t go --notification -W 10s
		[[ $stderr == *"'$m' refused our connection for want of the group key"* ]] ||
			fail "$m: $stderr"
	done
	run -69 maro-bcast -P p. -t echo -d hi -W 10s
	assert_output --partial "refused our connection for want of the group key"
	run -69 sh -c 'echo hi | maro-scatter -P p. -t echo -W 10s'
	assert_output --partial "refused our connection for want of the group key"
	# with it every one takes it: the pool's job got the key from the pool
	run -0 maro-send --keyfile k.key -n x.1 -p m.recv -p m.wait -p m.dist -p m.pool -p "m.$HOST.1" \
		-t go --notification -W 10s
	run -0 maro-send --keyfile k.key -p p.a -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 maro-bcast --keyfile k.key -P p. -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 sh -c 'echo hi | maro-scatter --keyfile k.key -P p. -t echo -f payload -W 10s'
	assert_output hi
}

@test "the variables alone: MARO_GROUP, MARO_REGISTRY and MARO_KEYFILE put every tool where -g, --registry and --keyfile would, a pool's jobs too; MARO_NAME names a waiter, a broadcaster and a scatter" {
	local home=$MARO_REGISTRY home_group=$MARO_GROUP
	maro-keygen k.key
	export MARO_GROUP=other MARO_REGISTRY=dir:$BATS_TEST_TMPDIR/other MARO_KEYFILE=$PWD/k.key
	members
	echo_peer p.a
	MARO_NAME=n.wait bg 30 maro-wait-event 'x:go:1' > /dev/null
	bg 30 sh -c 'maro-recv -n src.recv -C 2 -f json > src.out'
	wait_until 10 names_are "$MEMBERS" -P m
	wait_until 10 is_live p.a
	wait_until 10 is_live n.wait
	wait_until 10 is_live src.recv
	# nobody where the test's own variables point
	run -0 --separate-stderr maro-peers --registry "$home" -g "$home_group" -f json
	assert_output ""
	# each member has the key: a sender without it is refused, one with it
	# (from the variable) is taken, the pool's job's too
	run -69 --separate-stderr env -u MARO_KEYFILE maro-send -n x.1 -p m.recv -t go --notification -W 10s
	[[ $stderr == *"'m.recv' refused our connection for want of the group key"* ]] || fail "$stderr"
	run -0 maro-send -n x.1 -p m.recv -p m.wait -p m.dist -p m.pool -p "m.$HOST.1" -p n.wait \
		-t go --notification -W 10s
	run -0 maro-bcast -P p. -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 sh -c 'echo hi | maro-scatter -P p. -t echo -f payload -W 10s'
	assert_output hi
	# MARO_NAME is the source of what a broadcast and a scatter send
	run -0 env MARO_NAME=n.bcast maro-bcast -P src. -t s -d b --notification -W 10s
	run -0 sh -c 'echo s | MARO_NAME=n.scatter maro-scatter -P src. -t s --async -W 10s > /dev/null'
	wait_exit "$BG_PID" 10
	[ "$status" -eq 0 ]
	run -0 jq -r .source src.out
	assert_output "n.bcast
n.scatter"
}

@test "--advertise and MARO_ADVERTISE: a member's inbox is bound at that address and listed with it; a sender's reply inbox too, and the replies come there" {
	# inboxes on TCP (the dir registry binds ipc sockets, which have no address)
	export MARO_TRANSPORT=tcp MARO_INSECURE_TCP=1
	bg 30 maro-recv -n a.recv --advertise 127.0.0.2 > /dev/null
	bg 30 maro-wait-event -n a.wait --advertise 127.0.0.2 'x:go:1' > /dev/null
	bg 30 maro-dist -n a.dist --advertise 127.0.0.2 --on 'x:go:1' true
	MARO_ADVERTISE=127.0.0.3 bg 30 maro-recv -n a.env > /dev/null
	MARO_ADVERTISE=127.0.0.3 bg 30 maro-recv -n a.both --advertise 127.0.0.2 > /dev/null
	MARO_ADVERTISE=127.0.0.3 bg 30 maro-wait-event -n a.wenv 'x:go:1' > /dev/null
	wait_until 10 live_is a. 6
	run -0 sh -c "maro-peers -P a. -f json | jq -r '\"\\(.name) \\(.endpoint)\"' | sed 's/:[0-9]*\$//' | LC_ALL=C sort"
	assert_output "a.both tcp://127.0.0.2
a.dist tcp://127.0.0.2
a.env tcp://127.0.0.3
a.recv tcp://127.0.0.2
a.wait tcp://127.0.0.2
a.wenv tcp://127.0.0.3"
	# each takes a message there
	run -0 maro-send -n x.1 -p a.recv -p a.wait -p a.dist -p a.env -p a.both -p a.wenv -t go --notification -W 10s
	# a blocking sender's reply inbox: a peer that answers once told to
	bg 30 maro-dist -n p.a --raw --co '*:echo:1' 'while read -r x; do until [ -e go ]; do sleep 0.02; done; echo "$x"; done'
	wait_until 10 is_live p.a
	local cmd addr
	# the address the command's reply inbox must have, and the command
	while read -r addr cmd; do
		rm -f go out
		bg 30 sh -c "$cmd -t echo -f payload -W 20s > out"
		wait_until 10 has_private
		[ "$(private_endpoint | sed 's/:[0-9]*$//')" = "tcp://$addr" ] || fail "$cmd: $(private_endpoint)"
		touch go
		wait_exit "$BG_PID" 20
		[ "$status" -eq 0 ] || fail "$cmd: exit $status"
		[ "$(cat out)" = hi ] || fail "$cmd: wrote $(cat out)"
		wait_until 5 eval '! has_private'
	done <<-'EOF'
	127.0.0.2 maro-send --advertise 127.0.0.2 -p p.a -d hi
	127.0.0.2 maro-bcast --advertise 127.0.0.2 -P p. -d hi
	127.0.0.2 echo hi | maro-scatter --advertise 127.0.0.2 -P p.
	127.0.0.3 MARO_ADVERTISE=127.0.0.3 maro-send -p p.a -d hi
	127.0.0.2 MARO_ADVERTISE=127.0.0.3 maro-bcast --advertise 127.0.0.2 -P p. -d hi
	127.0.0.3 MARO_ADVERTISE=127.0.0.3 maro-bcast -P p. -d hi
	127.0.0.3 echo hi | MARO_ADVERTISE=127.0.0.3 maro-scatter -P p.
	EOF
}

@test "SLURM_LAUNCH_NODE_IPADDR: on a job over several nodes the address that routes to it is advertised; not on one node; below --advertise and MARO_ADVERTISE" {
	local addr
	addr=$(hostname -I 2> /dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v : | head -n 1)
	[ -n "$addr" ] || skip "no address but the loopback"
	export MARO_TRANSPORT=tcp MARO_INSECURE_TCP=1 SLURM_LAUNCH_NODE_IPADDR=$addr
	SLURM_JOB_NUM_NODES=2 bg 30 maro-recv -n s.nodes > /dev/null
	SLURM_NNODES=3 bg 30 maro-recv -n s.nnodes > /dev/null
	SLURM_JOB_NUM_NODES=1 bg 30 maro-recv -n s.one > /dev/null
	SLURM_JOB_NUM_NODES=2 MARO_ADVERTISE=127.0.0.3 bg 30 maro-recv -n s.env > /dev/null
	SLURM_JOB_NUM_NODES=2 bg 30 maro-recv -n s.flag --advertise 127.0.0.2 > /dev/null
	wait_until 10 live_is s. 5
	run -0 sh -c "maro-peers -P s. -f json | jq -r '\"\\(.name) \\(.endpoint)\"' | sed 's/:[0-9]*\$//' | LC_ALL=C sort"
	assert_output "s.env tcp://127.0.0.3
s.flag tcp://127.0.0.2
s.nnodes tcp://$addr
s.nodes tcp://$addr
s.one tcp://127.0.0.1"
	# and the address works
	run -0 maro-send -p s.nodes -p s.nnodes -t t -d x --notification -W 10s
}

@test "--type: the member is listed with that type and counted by -e TYPE=N; without it, the name up to its first . or _" {
	bg 30 maro-recv -n t.recv --type kind > /dev/null
	bg 30 maro-wait-event -n t.wait --type kind 'x:go:1' > /dev/null
	bg 30 maro-dist -n t.dist --type kind --on 'x:go:1' true
	bg 30 maro-recv -n t_plain > /dev/null
	run -0 maro-peers -e kind=3 -e t=1 -W 10s -q
	run -0 sh -c "maro-peers -P t -f json | jq -r '\"\\(.name) \\(.type)\"' | LC_ALL=C sort"
	assert_output "t.dist kind
t.recv kind
t.wait kind
t_plain t"
	run -0 maro-send -e kind=3 -P t. -t go -n x.1 --notification -W 10s
}

# Each tool in a run that -v makes say something more, and what: the
# command (V where -v goes), the line -v adds (a regex)
verbose_cases() {
	cat <<-'EOF'
	maro-recv -n v.r --idle-timeout 100ms V#^maro-recv: joined group 'G' as 'v\.r'$
	maro-wait-event -n v.w 'x:go:1' -W 200ms V#^maro-wait-event: joined group 'G' as 'v\.w', waiting for x:go:1$
	maro-dist -n v.d --on 'x:go:1' true -W 200ms V#^maro-dist: 0 triggers, 0 failed$
	maro-pool -j 1 --name v.pool -T v V -- true#^maro-pool: started v\.H\.1 \(pid [0-9]+\)$
	maro-send -p p.a -t echo -d hi V#^maro-send: 1 delivered, 0 resent, 1 replies$
	maro-bcast -P p. -t echo -d hi V#^maro-bcast: 1 delivered, 1 replies$
	echo hi | maro-scatter -P p. -t echo V#^maro-scatter: 1 tasks, 1 answered, 0 resent, 0 stray replies$
	maro-msg -t a -d b V#^maro-msg: 1 message written$
	maro-peers V#^maro-peers: group 'G' in the dir registry$
	maro-keygen k$$.key V#^maro-keygen: wrote 'k[0-9]+\.key' \(public key .{40}\)$
	EOF
}

@test "-v: every tool says on standard error what it would not say without it" {
	echo_peer p.a
	wait_until 10 is_live p.a
	local cmd want tools=""
	while IFS='#' read -r cmd want; do
		want=${want//G/$MARO_GROUP}
		want=${want//H/$HOST}
		run --separate-stderr sh -c "${cmd/ V/} > /dev/null"
		local quiet=$stderr
		run --separate-stderr sh -c "${cmd/ V/ -v} > /dev/null"
		grep -Eq "$want" <<< "$stderr" || fail "${cmd/ V/ -v}: no line like $want in: $stderr"
		run ! grep -Eq "$want" <<< "$quiet"
		tools="$tools ${cmd%% *}"
	done < <(verbose_cases)
	[ "$(echo $tools | wc -w)" -eq 10 ]
}

@test "-q: each tool leaves out what its page says -q leaves out" {
	echo_peer p.a
	bg 30 maro-recv -n p.m > /dev/null
	wait_until 10 live_is p. 2
	local cmd want
	# the command (Q where -q goes), # and a line it says without -q (a regex)
	while IFS='#' read -r cmd want; do
		run --separate-stderr sh -c "${cmd/ Q/}"
		grep -Eq "$want" <<< "$output$stderr" || fail "${cmd/ Q/}: no line like $want in: $output$stderr"
		run --separate-stderr sh -c "${cmd/ Q/ -q}"
		if grep -Eq "$want" <<< "$output$stderr"; then
			fail "${cmd/ Q/ -q}: still said $output$stderr"
		fi
	done <<-'EOF'
	maro-recv -n q.r -W 200ms Q#^maro-recv: timed out after 0 messages$
	maro-send -p nobody -t x -d y --notification -W 300ms Q#^maro-send: not delivered to 'nobody': 
	maro-bcast -P p. -t echo -d hi -W 300ms Q > /dev/null#^maro-bcast: no reply from 'p\.m' in session 
	echo a | maro-scatter -P p.m -t echo -W 300ms Q#^maro-scatter: no reply in session .* \(line 1 of the input\): payload "a"$
	(sleep 0.2; maro-send -n x.1 -p q.w -t go --notification -W 5s) & maro-wait-event -n q.w 'x:go:1' -f json -W 5s Q#"tag":"go"
	maro-wait-event -n q.w 'x:go:1' -W 200ms Q#^maro-wait-event: timed out; still missing: x:go 0/1$
	maro-pool -j 1 --name q.pool -T q Q -- true#^maro-pool: q\..*\.1 finished \(status 0\)$
	maro-peers Q#^NAME +TYPE +HOST
	maro-peers -e p=2 -W 5s Q#^p\.a 
	printf '' | script -qec 'maro-msg -i json Q' /dev/null#^maro-msg: reading JSON messages, one per line, from the terminal; end with \^D
	EOF
}

@test "-V and --version: the tool's name and version, and those of libzmq, hiredis, libcbor and jansson it was built with" {
	local t v want=""
	if command -v pkg-config > /dev/null && pkg-config --exists libzmq hiredis libcbor jansson; then
		want=$(printf 'libzmq %s, hiredis %s, libcbor %s, jansson %s' $(pkg-config --modversion libzmq hiredis libcbor jansson))
	fi
	for t in maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv maro-scatter maro-send maro-wait-event; do
		for v in -V --version; do
			run -0 --separate-stderr "$t" "$v"
			assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+ \(libzmq [0-9.]+, hiredis [0-9.]+, libcbor [0-9.]+, jansson [0-9.]+\)$"
			[ -z "$want" ] || assert_output --partial "($want)"
			[ -z "$stderr" ]
		done
	done
}

@test "--takeover: the name goes to the new process, and its holder says so and leaves with 1 (maro-recv, maro-wait-event, maro-dist)" {
	local t cmd first pid
	while read -r t cmd; do
		bg 30 sh -c "exec $cmd" 2> first.err
		first=$BG_PID
		wait_until 10 is_live "$t"
		pid=$(maro-peers -f json | jq -r "select(.name == \"$t\") | .pid")
		# without --takeover the name is not had: 69, the holder named
		run -69 sh -c "$cmd -W 5s"
		assert_output --partial "name '$t' is held by pid $pid"
		bg 30 sh -c "exec $cmd --takeover" 2> second.err
		wait_until 10 eval '[ "$(maro-peers -f json | jq -r "select(.name == \"$t\") | .pid")" = "$(child_pid $BG_PID ${cmd%% *})" ]'
		# the old holder notices at its next heartbeat (MARO_TTL 2 s: within a second)
		wait_exit "$first" 5
		[ "$status" -eq 1 ] || fail "$t: the old holder exited $status"
		run cat first.err
		assert_output --regexp "^${cmd%% *}: name '$t' was taken over by pid [0-9]+ on "
		kill_bg
	done <<-'EOF'
	k.recv maro-recv -n k.recv
	k.wait maro-wait-event -n k.wait x:go:1
	k.dist maro-dist -n k.dist --on x:go:1 true
	EOF
}

@test "--task (the default) waits for each peer's reply and writes it; --notification only for delivery (maro-send, maro-bcast, maro-msg)" {
	echo_peer p.a
	bg 30 maro-recv -n p.m > /dev/null
	wait_until 10 live_is p. 2
	run -0 maro-msg -t a --notification --task -f json
	[ "$(jq -c '[.session_type, .session_stage]' <<< "$output")" = '["task","request"]' ]
	run -0 sh -c 'maro-msg -t echo -d hi --task -p p.a | maro-send -f payload -W 10s'
	assert_output hi
	run -0 maro-send --task -p p.a -t echo -d hi -f payload -W 10s
	assert_output hi
	run -0 maro-bcast --task -P p.a -t echo -d hi -f payload -W 10s
	assert_output hi
	# p.m takes messages and never answers: a task waits to -W, a notification is done once delivered
	run -124 maro-send --task -p p.m -t echo -d hi -W 500ms
	run -124 maro-bcast --task -P p.m -t echo -d hi -W 500ms
	run -0 maro-send --notification -p p.m -t echo -d hi -W 10s
	assert_output ''
	run -0 maro-bcast --notification -P p.m -t echo -d hi -W 10s
	assert_output ''
}
