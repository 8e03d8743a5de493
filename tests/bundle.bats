#!/usr/bin/env bats
# backends: dir
# Bundles: a job's files served by maro-dist --serve-bundle and fetched by
# maro-dist --bundle workers into a per-host cache, checked and confined.

load helpers

setup() {
	use_registry
	export MARO_TTL=1s
	cd "$BATS_TEST_TMPDIR"
	mkdir -p master/job/lib hostA hostB
	# the job's code lives only here: not on the workers' PATH, not in their cwd
	printf '#!/bin/sh\nwhile read -r n; do echo "$n $(cat lib/word) $(basename "$PWD")"; done\n' > master/job/run.sh
	chmod 755 master/job/run.sh
	echo hello > master/job/lib/word
}
teardown() {
	default_teardown
	[ -z "${shared:-}" ] || rm -rf "$shared"
}

# as_nobody CMD...: CMD as uid/gid 65534 (nobody), no other groups: another local user
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# serve PATH: a bundle server 'files' for PATH, live; $srv its pid
serve() {
	bg 60 maro-dist -n files --serve-bundle "$1" 2> srv.err
	srv=$BG_PID
	maro-peers -e files=1 -W 10s -q || { cat srv.err >&2; return 1; }
}

# worker HOST NAME: a maro-dist worker NAME started in HOST (its own cwd and
# cache), running the bundle's run.sh; stderr in HOST/NAME.err
worker() {
	bg 60 env -C "$1" XDG_CACHE_HOME="$PWD/$1/cache" maro-dist -n "$2" -v --bundle files --raw \
		--co '*:sq:1' './run.sh' --on '*:stop:1' --exit 2> "$1/$2.err"
}

# fetch_only HOST NAME: a worker NAME of HOST that gets the bundle, stopped
# once it said so; stderr in HOST/NAME.err
fetch_only() {
	bg 60 ${AS:-} env -C "$1" XDG_CACHE_HOME="$PWD/$1/cache" maro-dist -n "$2" -v --bundle files \
		--on '*:x:1' true 2> "$1/$2.err"
	wait_until 30 grep -q 'fetched$' "$1/$2.err"
	stop_bg "$BG_PID"
}

# stop_bg PID: SIGTERM to a bg process group, and wait for it
stop_bg() {
	kill -TERM -- "-$1" 2>/dev/null || :
	wait "$1" 2>/dev/null || :
}

# bundles CACHE: the bundles in CACHE, one name a line (not their manifests, locks or temporaries)
bundles() { ls "$1" | grep -x '[0-9a-f]\{64\}' || :; }

fetched() { sed -n 's/.*bundle [0-9a-f]* from .files.: [0-9]* bytes, \([0-9]*\) fetched$/\1/p' "$1"; }

@test "a job whose code is only on the master runs in workers elsewhere; the same files again move no bytes" {
	serve master/job
	# two workers of host A fetch at once into one cache: one good copy
	worker hostA w.1
	worker hostA w.2
	worker hostB w.3
	seq 30 | maro-scatter -e w=3 -P w -t sq -W 20s -f payload > out
	[ "$(wc -l < out)" -eq 30 ]
	[ "$(sort -u out | wc -l)" -eq 30 ]
	[ "$(grep -c ' hello [0-9a-f]\{64\}$' out)" -eq 30 ]
	[ "$(bundles hostA/cache/maro/bundles | wc -l)" -eq 1 ]
	[ "$(bundles hostB/cache/maro/bundles | wc -l)" -eq 1 ]
	[ "$(bundles hostA/cache/maro/bundles)" = "$(bundles hostB/cache/maro/bundles)" ]
	[ "$(fetched hostB/w.3.err)" -gt 0 ]
	# one of host A's two took it from the other
	[ "$(fetched hostA/w.1.err) $(fetched hostA/w.2.err)" = "$(fetched hostB/w.3.err) 0" ] ||
		[ "$(fetched hostA/w.1.err) $(fetched hostA/w.2.err)" = "0 $(fetched hostB/w.3.err)" ]
	maro-send -p w.1 -p w.2 -p w.3 -t stop --notification -W 10s
	wait_until 10 not_live w.1
	# a second job with the same files: every worker finds them in its host's cache
	worker hostA w.4
	worker hostB w.5
	seq 4 | maro-scatter -e w=2 -P w -t sq -W 20s -f payload > out2
	[ "$(wc -l < out2)" -eq 4 ]
	[ "$(fetched hostA/w.4.err)" = 0 ]
	[ "$(fetched hostB/w.5.err)" = 0 ]
	maro-send -p w.4 -p w.5 -t stop --notification -W 10s
	[ ! -e hostA/run.sh ]
	[ ! -e hostB/run.sh ]
}

# hostile NAME: serve the stream in NAME (a file), fetch it as w.1 in hostA:
# exit 65, and nothing of it anywhere but the cache, which keeps no bundle
hostile() {
	serve "$1"
	cd hostA
	run -65 env XDG_CACHE_HOME="$PWD/cache" maro-dist -n w.1 --bundle files --on '*:x:1' true -W 10s
	cd ..
	echo "$output"
	[ -z "$(find . -name 'evil*')" ]
	[ -z "$(find hostA/cache/maro/bundles -mindepth 1 -maxdepth 1 ! -name 'tmp.*' ! -name .locks)" ]
	[ -z "$(find hostA/cache/maro/bundles -mindepth 2 ! -path '*/.locks/*')" ]
}

@test "a bundle whose bytes do not hash to its name is refused with 65" {
	printf 'maro-bundle 1\nf 0644 4 data\nabcde\n' > b
	serve b
	# the server named the bytes it read; they change under it
	printf 'maro-bundle 1\nf 0644 4 data\nABCDe\n' > b.new
	cat b.new > b
	cd hostA
	run -65 env XDG_CACHE_HOME="$PWD/cache" maro-dist -n w.1 --bundle files --on '*:x:1' true -W 10s
	[[ $output == *"does not hash to its name"* ]]
	[ -z "$(find cache/maro/bundles -mindepth 1 -maxdepth 1 ! -name 'tmp.*' ! -name .locks)" ]
}

@test "a path with .. is refused with 65" {
	printf 'maro-bundle 1\nf 0644 2 ../../../../../../evil\nx\ne\n' > b
	hostile b
	[[ $output == *"a path out of the bundle: '../../../../../../evil'"* ]]
}

@test "an absolute path is refused with 65" {
	printf 'maro-bundle 1\nf 0644 2 %s/evil\nx\ne\n' "$BATS_TEST_TMPDIR" > b
	hostile b
	[[ $output == *"a path out of the bundle"* ]]
	[ ! -e /etc/evil ]
}

@test "a link to / is refused with 65" {
	printf 'maro-bundle 1\nl 1 evil\n/e\n' > b
	hostile b
	[[ $output == *"the link 'evil' leads out of the bundle"* ]]
}

@test "a file through a link in the bundle is refused with 65" {
	printf 'maro-bundle 1\nd 0755 d\nl 1 evil.l\ndf 0644 2 evil.l/evil.f\nx\ne\n' > b
	hostile b
	[[ $output == *"a path out of the bundle: 'evil.l/evil.f'"* ]]
}

@test "a fifo or device is refused with 65, by the fetcher and by the server" {
	printf 'maro-bundle 1\np 0644 evil\ne\n' > b
	hostile b
	[[ $output == *"a record of type 'p'"* ]]
	stop_bg "$srv"
	mkfifo master/job/evil.fifo
	run -65 maro-dist -n files2 --serve-bundle master/job -W 5s
	[[ $output == *"evil.fifo' is a device, fifo or socket"* ]]
}

@test "the server refuses a link with '..' that every worker would refuse (65); a link down is shipped" {
	mkdir master/job/bin
	ln -s ../lib/word master/job/bin/tool
	run -65 maro-dist -n files --serve-bundle master/job -W 5s
	assert_output --partial "the link 'master/job/bin/tool' -> '../lib/word': a bundle's links must lead down"
	rm master/job/bin/tool
	ln -s lib/word master/job/word
	serve master/job
	fetch_only hostA w.1
	[ "$(readlink hostA/cache/maro/bundles/[0-9a-f]*/word)" = lib/word ]
	[ "$(cat hostA/cache/maro/bundles/[0-9a-f]*/word)" = hello ]
}

@test "the server packs its directory in TMPDIR" {
	run -69 env TMPDIR="$PWD/none" maro-dist -n files --serve-bundle master/job -W 5s
	assert_output --partial "cannot make a temporary file in '$PWD/none'"
	mkdir tmp
	TMPDIR="$PWD/tmp" serve master/job
	fetch_only hostA w.1
	cmp master/job/run.sh hostA/cache/maro/bundles/*/run.sh
}

@test "a file over MARO_BUNDLE_FILE_MAX is refused with 65" {
	{ printf 'maro-bundle 1\nf 0644 2048 evil\n'; head -c 2048 /dev/zero; printf 'e\n'; } > b
	export MARO_BUNDLE_FILE_MAX=1K
	hostile b
	[[ $output == *"'evil' (2048 bytes) is over the limit of 1024 bytes a file"* ]]
}

@test "set-uid, set-gid and sticky bits are dropped, executables stay executable, nothing is writable" {
	printf 'maro-bundle 1\nd 3755 d\nf 6755 3 d/x\nx\n\nf 0640 1 y\nyd 0700 z\nf 0600 1 z/w\nwe\n' > b
	serve b
	fetch_only hostA w.1
	cd "hostA/cache/maro/bundles/$(bundles hostA/cache/maro/bundles)"
	[ "$(stat -c %a d d/x y z z/w)" = $'555\n555\n440\n500\n400' ]
	# a job run in it cannot change the bundle for the next (but root ignores modes)
	[ "$(stat -c %a .)" = 555 ]
	[ -z "$(find . -perm /222)" ]
	# root without the capabilities that override modes stands for another user
	AS=
	if [ "$(id -u)" = 0 ] && setpriv --bounding-set -dac_override,-dac_read_search true 2>/dev/null; then
		AS="setpriv --bounding-set -dac_override,-dac_read_search"
		run ! $AS sh -c 'echo changed > y'
		run ! $AS touch new
		[ "$(cat y)" = y ]
	fi
	cd "$BATS_TEST_TMPDIR"
	# and the bundle still goes when the cache is over its cap: the next fetch evicts it
	printf 'maro-bundle 1\nf 0644 1 other\nxe\n' > b
	stop_bg "$srv"
	wait_until 10 not_live files
	serve b
	MARO_BUNDLE_CACHE_MAX=1 fetch_only hostA w.2
	# the old one went whole (nothing left renamed 'gone.*' half emptied)
	[ "$(bundles hostA/cache/maro/bundles | wc -l)" -eq 1 ]
	[ -z "$(find hostA/cache/maro/bundles -maxdepth 1 -name 'gone.*')" ]
	[ "$(cat hostA/cache/maro/bundles/[0-9a-f]*/other)" = x ]
}

@test "a receiver killed mid-transfer leaves no bundle; the next try completes" {
	head -c 4M /dev/urandom > master/job/big
	serve master/job
	cd hostA
	# at 256 KiB/s the transfer takes 16 s: the receiver is surely killed in the midst of it
	bg 60 env XDG_CACHE_HOME="$PWD/cache" MARO_BUNDLE_RATE=256K maro-dist -n w.1 -v --bundle files \
		--on '*:x:1' true 2> w.1.err
	w=$(child_pid "$BG_PID" maro-dist)
	# the stream is unpacked as it comes, into the temporary directory
	wait_until 10 eval 'ls cache/maro/bundles/tmp.*/root/big >/dev/null 2>&1'
	kill -9 "$w"
	wait_exit "$BG_PID" 10
	[ -z "$(find cache/maro/bundles -mindepth 1 -maxdepth 1 ! -name 'tmp.*' ! -name .locks)" ]
	[ "$(stat -c %s cache/maro/bundles/tmp.*/root/big)" -lt $((4 << 20)) ]
	cd ..
	fetch_only hostA w.2
	[ "$(fetched hostA/w.2.err)" -gt $((4 << 20)) ]
	cmp master/job/big hostA/cache/maro/bundles/*/big
}

@test "the least recently used bundle goes when the cache is over MARO_BUNDLE_CACHE_MAX; a file named like one stays" {
	head -c 600K /dev/urandom > master/job/one
	serve master/job
	export MARO_BUNDLE_CACHE_MAX=1M
	fetch_only hostA w.1
	first=$(bundles hostA/cache/maro/bundles)
	stop_bg "$srv"
	wait_until 10 not_live files
	head -c 600K /dev/urandom > master/job/one
	serve master/job
	# a file named like a bundle is no bundle: eviction passes it by
	stray=hostA/cache/maro/bundles/$(printf '%064d' 0)
	echo stray > "$stray"
	touch -d '2000-01-01' "$stray"
	fetch_only hostA w.2
	[ "$(cat "$stray")" = stray ]
	rm "$stray"
	[ "$(bundles hostA/cache/maro/bundles | wc -l)" -eq 1 ]
	[ "$(bundles hostA/cache/maro/bundles)" != "$first" ]
}

# serve_next PATH: the server 'files' stopped, and started again for PATH
serve_next() {
	stop_bg "$srv"
	wait_until 10 not_live files
	serve "$1"
}

@test "eviction counts 512 bytes an entry, and passes by a bundle whose lock is held and one a running worker uses" {
	cache=hostA/cache/maro/bundles
	# A: 100 empty files, some 50 KiB of inodes however few bytes
	awk 'BEGIN { print "maro-bundle 1"; for (i = 0; i < 100; i++) print "f 0644 0 e" i; print "e" }' > a.b
	serve a.b
	fetch_only hostA w.1
	A=$(bundles "$cache")
	# B, over a cap of 40 KiB with A: A goes
	printf 'maro-bundle 1\nf 0644 1 b\nbe\n' > b.b
	serve_next b.b
	MARO_BUNDLE_CACHE_MAX=40K fetch_only hostA w.2
	B=$(bundles "$cache")
	[ "$B" != "$A" ]
	[ "$(bundles "$cache" | wc -l)" -eq 1 ]
	# B's lock held, as by a fetch of it in the midst: C's fetch over the cap leaves B and its lock file
	ino=$(stat -c %i "$cache/.locks/$B")
	bg 30 flock -n "$cache/.locks/$B" -c 'touch held; exec sleep 30'
	holder=$BG_PID
	wait_until 10 test -e held
	printf 'maro-bundle 1\nf 0644 1 c\nce\n' > c.b
	serve_next c.b
	MARO_BUNDLE_CACHE_MAX=1 fetch_only hostA w.3
	[ -d "$cache/$B" ]
	[ "$(stat -c %i "$cache/.locks/$B")" = "$ino" ]
	stop_bg "$holder"
	# C in use by a running worker: D's fetch over the cap leaves C; B, unused and unlocked now, goes
	C=$(bundles "$cache" | grep -vx "$B")
	bg 60 env -C hostA XDG_CACHE_HOME="$PWD/hostA/cache" maro-dist -n w.4 -v --bundle files --on '*:x:1' true \
		2> hostA/w.4.err
	wait_until 30 grep -q 'fetched$' hostA/w.4.err
	printf 'maro-bundle 1\nf 0644 1 d\nde\n' > d.b
	serve_next d.b
	MARO_BUNDLE_CACHE_MAX=1 fetch_only hostA w.5
	[ -d "$cache/$C" ]
	[ ! -e "$cache/$B" ]
	[ ! -e "$cache/.locks/$B" ]
}

@test "with a group key the bundle travels encrypted, a member without it gets nothing; a long transfer says how it goes, unless -q" {
	maro-keygen group.key
	export MARO_KEYFILE=$PWD/group.key
	head -c 2M /dev/urandom > master/job/data
	serve master/job
	run -69 env -u MARO_KEYFILE XDG_CACHE_HOME="$PWD/hostB/cache" maro-dist -n w.0 --bundle files \
		--on '*:x:1' true -W 5s
	[[ $output == *"refused for want of the group key"* ]]
	[ -z "$(find hostB/cache/maro/bundles -mindepth 1 ! -name .locks)" ]
	# at 1 MiB/s the 2 MiB take two seconds: one line a second says how far;
	# at the same time on host B, -q says nothing of it
	bg 60 env -C hostB XDG_CACHE_HOME="$PWD/hostB/cache" MARO_BUNDLE_RATE=1M maro-dist -n w.2 -q -v \
		--bundle files --on '*:x:1' true 2> hostB/w.2.err
	local quiet=$BG_PID
	MARO_BUNDLE_RATE=1M fetch_only hostA w.1
	grep -q "maro-dist: bundle from 'files': [0-9.]* of 2.0 MiB$" hostA/w.1.err
	cmp master/job/data hostA/cache/maro/bundles/*/data
	wait_until 30 grep -q 'fetched$' hostB/w.2.err
	stop_bg "$quiet"
	run -0 grep -c ' fetched$' hostB/w.2.err
	run -1 grep -c 'MiB$' hostB/w.2.err
	cmp master/job/data hostB/cache/maro/bundles/*/data
}

@test "a job that maro-pool starts again gets the bundle from the host's cache before its first task" {
	serve master/job
	bg 60 env -C hostA XDG_CACHE_HOME="$PWD/hostA/cache" maro-pool -j 1 -T w -- \
		maro-dist -v --bundle files --raw --co '*:sq:1' ./run.sh 2> hostA/pool.err
	wait_until 10 grep -q 'fetched$' hostA/pool.err
	maro-peers -e w=1 -W 10s -q
	kill -9 "$(child_pid "$(child_pid "$BG_PID" maro-pool)" maro-dist)"
	wait_until 10 eval '[ "$(grep -c "fetched$" hostA/pool.err)" -eq 2 ]'
	[ "$(grep 'fetched$' hostA/pool.err | sed -n '2s/.* \([0-9]*\) fetched$/\1/p')" = 0 ]
	seq 5 | maro-scatter -e w=1 -P w -t sq -W 20s -f payload > out
	[ "$(sort out | cut -d' ' -f1-2 | tr '\n' ' ')" = "1 hello 2 hello 3 hello 4 hello 5 hello " ]
}

@test "a copy a job changed fails its check at the next use and is fetched again; one the job only read is used as it is" {
	serve master/job
	fetch_only hostA w.1
	h=$(bundles hostA/cache/maro/bundles)
	# job 1 (the same user) makes the copy writable and rewrites run.sh for every later job
	chmod u+w "hostA/cache/maro/bundles/$h" "hostA/cache/maro/bundles/$h/run.sh"
	printf '#!/bin/sh\ntouch "%s/planted.ran"\ncat\n' "$PWD" > run.evil
	cat run.evil > "hostA/cache/maro/bundles/$h/run.sh"
	chmod u-w "hostA/cache/maro/bundles/$h" "hostA/cache/maro/bundles/$h/run.sh"
	worker hostA w.2
	wait_until 10 grep -q 'fetched$' hostA/w.2.err
	grep -qx "maro-dist: bundle ${h:0:12} in the cache '$PWD/hostA/cache/maro/bundles/$h' failed its check ('run.sh' changed): fetched again" hostA/w.2.err
	[ "$(fetched hostA/w.2.err)" -gt 0 ]
	seq 2 | maro-scatter -e w=1 -P w -t sq -W 10s -f payload > out
	[ "$(cut -d' ' -f1-2 out | sort | tr '\n' ' ')" = "1 hello 2 hello " ]
	[ ! -e planted.ran ]
	maro-send -p w.2 -t stop --notification -W 10s
	wait_until 10 not_live w.2
	# a file added, in the fresh copy: the same
	chmod u+w "hostA/cache/maro/bundles/$h"
	touch "hostA/cache/maro/bundles/$h/extra"
	chmod u-w "hostA/cache/maro/bundles/$h"
	fetch_only hostA w.3
	grep -q "failed its check (it holds entries its manifest does not name): fetched again" hostA/w.3.err
	[ ! -e "hostA/cache/maro/bundles/$h/extra" ]
	# untouched (only read, and its times of use moved): used as it is, nothing said
	cat "hostA/cache/maro/bundles/$h/run.sh" > /dev/null
	fetch_only hostA w.4
	[ "$(fetched hostA/w.4.err)" = 0 ]
	run ! grep -q 'failed its check' hostA/w.4.err
}

@test "--clear-bundles, as a normal user: removes the bundles no running worker uses (1 while one is in use), then the cache (0)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root, to act as a normal user (setpriv)"
	shared=$(mktemp -d /tmp/maro-shared.XXXXXX)
	chmod 1777 "$shared"
	as_nobody mkdir -m 0700 "$shared/home"
	cp -r master/job "$shared/job"
	chmod -R a+rX "$shared/job"
	export XDG_CACHE_HOME="$shared/home/cache" MARO_REGISTRY="dir:$shared/home/reg" TMPDIR=$shared
	cache=$shared/home/cache/maro/bundles
	# bundle A, fetched by a worker that ended; bundle B, in use by a running one
	for b in A B; do
		echo "$b" > "$shared/job/version"
		bg 60 setpriv --reuid=65534 --regid=65534 --clear-groups maro-dist -n "files$b" \
			--serve-bundle "$shared/job" 2> "srv$b.err"
		as_nobody maro-peers -e "files$b=1" -W 10s -q || { cat "srv$b.err" >&2; return 1; }
		bg 60 setpriv --reuid=65534 --regid=65534 --clear-groups maro-dist -n "w$b" -v \
			--bundle "files$b" --on '*:x:1' true 2> "w$b.err"
		eval "w$b=\$BG_PID"
		wait_until 30 grep -q 'fetched$' "w$b.err"
	done
	stop_bg "$wA"
	[ "$(bundles "$cache" | wc -l)" -eq 2 ]
	# what a user tries first: the read-only bundles stop rm -rf
	run ! as_nobody rm -rf "$cache/$(bundles "$cache" | head -n 1)"
	run -1 as_nobody maro-dist --clear-bundles
	echo "$output"
	[ "${lines[0]}" = "maro-dist: cleared the bundle cache '$cache': 1 bundle removed (0.0 MiB)" ]
	[ "${lines[1]}" = "maro-dist: 1 bundle in use by a running worker (or being fetched) kept: stop the workers and clear again" ]
	[ "$(bundles "$cache" | wc -l)" -eq 1 ]
	[ "$(cat "$cache/$(bundles "$cache")/version")" = B ]
	# the worker ends: all of it goes, the cache too
	stop_bg "$wB"
	run -0 as_nobody maro-dist --clear-bundles
	assert_output "maro-dist: cleared and removed the bundle cache '$cache': 1 bundle removed (0.0 MiB); nothing left"
	[ ! -e "$cache" ]
	run -0 as_nobody rm -rf "$shared/home/cache"
	run -0 as_nobody maro-dist --clear-bundles
	assert_output "maro-dist: no bundle cache at '$cache': nothing to clear"
	run -2 maro-dist --clear-bundles -v
	# a cache that another user made first (root, here) is not cleared: 70, named, untouched
	mkdir -p "$cache/0123456789ab"
	chmod -R 0777 "$shared/home/cache"
	run -70 as_nobody maro-dist --clear-bundles
	assert_output "maro-dist: will not use the bundle cache '$cache': '$shared/home/cache' above it may be written by others and is not sticky (mode 0777)"
	[ -d "$cache/0123456789ab" ]
}

# nested FILE: a stream of 1000 directories, each in the one before (a/a/a...)
nested() {
	awk 'BEGIN { print "maro-bundle 1"; p = "a"; for (i = 0; i < 1000; i++) { print "d 0755 " p; p = p "/a" } print "e" }' > "$1"
}

@test "1000 nested directories unpack at once; -W ends the worker in time (124)" {
	nested b
	serve b
	cd hostA
	t0=$(date +%s%N)
	run -124 env XDG_CACHE_HOME="$PWD/cache" maro-dist -n w.1 -v --bundle files --on '*:x:1' true -W 3s
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$output"; echo "$ms ms"
	# the check of a record's parents costs its depth, not the depth squared
	[[ $output == *" fetched"* ]]
	[ "$ms" -lt 4500 ]
	[ -d "cache/maro/bundles/$(bundles cache/maro/bundles)/a/a/a/a/a" ]
}

@test "SIGTERM ends a fetch at once (143)" {
	nested b
	serve b
	cd hostA
	bg 30 env XDG_CACHE_HOME="$PWD/cache" maro-dist -n w.1 -v --bundle files --on '*:x:1' true -W 20s 2> w.1.err
	wait_until 10 test -d cache/maro/bundles
	local pid
	pid=$(child_pid "$BG_PID" maro-dist)
	t0=$(date +%s%N)
	kill -TERM "$pid"
	wait_exit "$BG_PID" 10
	ms=$((($(date +%s%N) - t0) / 1000000))
	cat w.1.err; echo "$ms ms"
	[ "$status" -eq 143 ]
	# at once: not at -W (20 s); 8 s for a machine busy with other suites
	[ "$ms" -lt 8000 ]
}

# known_hash: the name of master/job's bundle, as any worker learns it (fetched
# into hostB's cache, the server stopped after); in $hash
known_hash() {
	serve master/job
	fetch_only hostB w.0
	hash=$(bundles hostB/cache/maro/bundles)
	stop_bg "$srv"
	wait_until 10 not_live files
	printf '#!/bin/sh\ntouch "%s/planted.ran"\ncat\n' "$PWD" > run.evil
}

@test "a cache below a directory another user may write is refused (70) before the server is up: a bundle planted by a swap never runs" {
	[ "$(id -u)" -eq 0 ] || skip "needs root, to act as a second user (setpriv)"
	known_hash
	# a place like /tmp: root's, sticky, anyone may write; the attacker's own directory in it, open to all
	shared=$(mktemp -d /tmp/maro-shared.XXXXXX)
	chmod 1777 "$shared"
	as_nobody mkdir -m 0777 "$shared/p"
	as_nobody mkdir -p "$shared/evil/$hash"
	as_nobody sh -c "cat > '$shared/evil/$hash/run.sh' && chmod 755 '$shared/evil/$hash/run.sh'" < run.evil
	# the victim starts before its server is up
	bg 30 env -C hostA MARO_BUNDLE_CACHE="$shared/p/bundles" maro-dist -n w1 --bundle files --raw \
		--co '*:go:1' ./run.sh -W 20s 2> hostA/w1.err
	victim=$BG_PID
	# once the victim made its cache (or gave up), the attacker swaps it for a link to its own tree
	wait_until 10 eval '[ -d "$shared/p/bundles/.locks" ] || ! kill -0 "$victim" 2>/dev/null'
	as_nobody sh -c "mv '$shared/p/bundles' '$shared/p/old' 2>/dev/null; ln -s '$shared/evil' '$shared/p/bundles'"
	# the server joins, a task comes
	serve master/job
	run maro-scatter -e w1=1 -P w1 -t go -d 1 -W 5s -f payload
	wait_exit "$victim" 30
	cat hostA/w1.err
	[ ! -e planted.ran ]
	[ "$status" -eq 70 ]
	[ "$(cat hostA/w1.err)" = "maro-dist: bundle of 'files': will not use the bundle cache '$shared/p/bundles': '$shared/p' above it is owned by uid 65534, neither root nor us" ]
}

# plant NAME: the cache c/bundles renamed to c/NAME, and a cache put up in its
# place holding the bundle's name with run.evil as its run.sh
plant() {
	mv c/bundles "c/$1"
	mkdir -m 0700 c/bundles
	cp -r "hostB/cache/maro/bundles/$hash" c/bundles/
	cp "hostB/cache/maro/bundles/$hash.manifest" c/bundles/ 2>/dev/null || :
	chmod u+w "c/bundles/$hash" "c/bundles/$hash/run.sh"
	cat run.evil > "c/bundles/$hash/run.sh"
}

@test "the cache is used by the handle opened first: one renamed and replaced before the server joins, or after the fetch, redirects nothing" {
	known_hash
	mkdir c
	bg 30 env -C hostA MARO_BUNDLE_CACHE="$PWD/c/bundles" maro-dist -n w1 -v --bundle files --raw \
		--on '*:go:1' ./run.sh -W 30s 2> hostA/w1.err
	wait_until 10 test -d c/bundles/.locks
	# before the server joins: the worker fetches into the cache it opened, not the one put up
	plant old1
	serve master/job
	wait_until 10 grep -q 'fetched$' hostA/w1.err
	[ "$(fetched hostA/w1.err)" -gt 0 ]
	cmp master/job/run.sh "c/old1/$hash/run.sh"
	# after the fetch: each handler enters the bundle by its handle, not by its path
	plant old2
	echo 5 | maro-scatter -e w1=1 -P w1 -t go -W 10s -f payload > out
	[ "$(cut -d' ' -f1-2 out)" = "5 hello" ]
	[ ! -e planted.ran ]
}

# unsafe_cache: a worker of host A with MARO_BUNDLE_CACHE=hostA/cache is refused with 70
unsafe_cache() {
	run -70 env -C hostA MARO_BUNDLE_CACHE="$PWD/hostA/cache" maro-dist -n w.1 --bundle files \
		--raw --co '*:sq:1' ./run.sh -W 10s
	echo "$output"
	[[ $output == *"will not use the bundle cache '$PWD/hostA/cache': $1"* ]]
}

@test "a cache writable by others, a link or another's is refused with 70; a bundle planted there never runs" {
	serve master/job
	fetch_only hostB w.0
	hash=$(bundles hostB/cache/maro/bundles)
	# another user made the cache first, open to all, and planted the bundle
	mkdir -m 0777 hostA/cache
	cp -r "hostB/cache/maro/bundles/$hash" hostA/cache/
	chmod -R u+w "hostA/cache/$hash"
	printf '#!/bin/sh\ntouch "%s/planted.ran"\n' "$PWD" > "hostA/cache/$hash/run.sh"
	chmod 0777 hostA/cache
	unsafe_cache "it is writable by group or others (mode 0777)"
	[ ! -e planted.ran ]
	rm -rf hostA/cache
	ln -s "$PWD/hostB/cache/maro/bundles" hostA/cache
	unsafe_cache "it is a symbolic link"
	rm hostA/cache
	if [ "$(id -u)" = 0 ]; then
		mkdir -m 0700 hostA/cache
		chown nobody hostA/cache
		unsafe_cache "it is owned by uid $(id -u nobody), not by us (uid 0)"
	fi
	[ ! -e planted.ran ]
	# one made by the worker is its own, 0700
	rm -rf hostA/cache
	fetch_only hostA w.2
	[ "$(stat -c %a hostA/cache/maro/bundles)" = 700 ]
}

@test "a full disk is no hostile bundle: the cache cannot be written (70)" {
	[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs as the cache takes root"
	unshare -m true 2>/dev/null || skip "no mount namespace here (unshare -m)"
	head -c 1M /dev/urandom > master/job/big
	serve master/job
	mkdir hostA/cache
	# a cache of 256 KiB in a mount namespace of the worker's own
	run -70 unshare -m sh -c 'mount -t tmpfs -o size=256k,mode=0700 none hostA/cache &&
		exec env MARO_BUNDLE_CACHE="$PWD/hostA/cache" maro-dist -n w.1 --bundle files --on "*:x:1" true -W 10s'
	echo "$output"
	[[ $output == *"'big' cannot be written: No space left on device"* ]]
}

@test "a cache out of inodes, with room for its lock but not for the fetch's directory: said, 70" {
	[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs as the cache takes root"
	unshare -m true 2>/dev/null || skip "no mount namespace here (unshare -m)"
	serve master/job
	mkdir hostA/cache
	# three inodes: the cache, .locks and the bundle's lock file; none for tmp.*
	run -70 unshare -m sh -c 'mount -t tmpfs -o size=256k,nr_inodes=3,mode=0700 none hostA/cache &&
		exec env MARO_BUNDLE_CACHE="$PWD/hostA/cache" maro-dist -n w.1 --bundle files --on "*:x:1" true -W 10s'
	assert_output "maro-dist: bundle of 'files': cannot write to the bundle cache '$PWD/hostA/cache': No space left on device"
}

@test "each entry counts 512 bytes toward MARO_BUNDLE_MAX: many empty ones are refused with 65" {
	awk 'BEGIN { print "maro-bundle 1"; for (i = 0; i < 9; i++) print "d 0755 evil" i; print "e" }' > b
	export MARO_BUNDLE_MAX=4K
	hostile b
	[[ $output == *"more entries than the limit of 4096 bytes a bundle allows (each counts 512 bytes toward MARO_BUNDLE_MAX)"* ]]
}

@test "a bundle limit that is no size, or over 16 EiB, is a usage error (2)" {
	for v in 17179869184G 18446744073709551616 -1 1T; do
		run -2 env MARO_BUNDLE_MAX="$v" maro-dist -n w.1 --bundle files --on '*:x:1' true -W 2s
		assert_output "maro-dist: MARO_BUNDLE_MAX is not a size in bytes (N, NK, NM or NG, below 16 EiB); try 'maro-dist --help'"
	done
}
