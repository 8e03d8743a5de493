# Shared by every suite: the tools on PATH, a private registry per test,
# background processes that are bounded and killed by pid.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

PATH="$MARO_BIN:$PATH"

# sleep as a bash builtin (bash-builtins): a fork and an exec cost several
# milliseconds here, and the polls of wait_until and wait_exit were most of
# a suite's processes.  Without the package, /bin/sleep as before.
enable -f /usr/lib/bash/sleep sleep 2> /dev/null || :
export MARO_TOP="${MARO_TOP:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"

# Every background process a test starts; teardown kills them by pid.
BG_PIDS=()

# bg SECONDS CMD...: run CMD in the background for at most SECONDS.
# Sets BG_PID.  Output goes wherever the caller redirects it.
bg() {
	local limit=$1
	shift
	# an explicit <&0: bash gives background jobs /dev/null otherwise
	# and no fd 5: tests keep fifos open there, and a child holding one
	# would keep its reader from ever seeing the end
	# and no fd 3: bats waits for whoever holds it
	timeout -k 2 "$limit" "$@" <&0 3>&- 5>&- &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# page_example PAGE N: the Nth literal block of man/PAGE's EXAMPLES, as a
# shell reads it (\e is a backslash, \& nothing)
page_example() {
	awk -v want="$2" '
		/^\.Sh / { inex = ($2 == "EXAMPLES") }
		inex && /^\.Bd -literal/ { n++; inblk = (n == want); next }
		/^\.Ed/ { inblk = 0; next }
		inblk { gsub(/\\e/, "\\"); gsub(/\\&/, ""); print }
	' "$MARO_TOP/man/$1"
}

# wait_until SECONDS CMD...: poll CMD until it succeeds: after 10 ms, then
# each pause half again as long, up to 200 ms (a CMD that runs a tool costs a
# process a look: a wait of seconds looks some 20 times, not 100).
wait_until() {
	local limit=$1 deadline _wu_pause=10 _wu_nap
	shift
	deadline=$((SECONDS + limit))
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "wait_until: timed out after ${limit}s: $*" >&2
			return 1
		fi
		printf -v _wu_nap '0.%03d' "$_wu_pause"
		sleep "$_wu_nap"
		_wu_pause=$((_wu_pause * 3 / 2))
		[ "$_wu_pause" -le 200 ] || _wu_pause=200
	done
}

# For wait_until, which runs its command again each time:
# has_lines FILE N: FILE has at least N lines.
has_lines() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
# live_is PREFIX N: exactly N live peers whose names start with PREFIX.
live_is() { [ "$(maro-peers -P "$1" -f json | wc -l)" -eq "$2" ]; }
# is_live NAME / not_live NAME
is_live() { maro-peers -f json | grep -q "\"name\":\"$1\""; }
not_live() { ! is_live "$1"; }

# wait_exit PID SECONDS: wait for a background pid to finish; its status in $status.
wait_exit() {
	local pid=$1 limit=${2:-30} deadline
	deadline=$((SECONDS + limit))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "wait_exit: $pid still running after ${limit}s" >&2
			return 1
		fi
		sleep 0.02
	done
	status=0
	wait "$pid" || status=$?
}

# child_pid PID NAME: the pid of PID's child (or grandchild) named NAME, once
# it exists.  bg runs commands under timeout(1), and pipelines under sh.
child_pid() {
	local parent=$1 name=$2 pid i
	for i in $(seq 250); do
		pid=$(pgrep -P "$parent" -x "$name" | head -n 1)
		[ -n "$pid" ] || pid=$(for c in $(pgrep -P "$parent"); do pgrep -P "$c" -x "$name"; done | head -n 1)
		if [ -n "$pid" ]; then
			echo "$pid"
			return 0
		fi
		sleep 0.02
	done
	echo "child_pid: no $name under $parent" >&2
	return 1
}

# timeout(1) leads a process group of its own: signal the whole group.
kill_bg() {
	local pid i
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || :
	done
	# a group that has not ended within 3 s is killed outright
	for pid in "${BG_PIDS[@]}"; do
		for i in $(seq 150); do
			kill -0 -- "-$pid" 2>/dev/null || break
			sleep 0.02
		done
		kill -KILL -- "-$pid" 2>/dev/null || :
		wait "$pid" 2>/dev/null || :
	done
	BG_PIDS=()
}

# A registry of the backend under test (MARO_TEST_BACKEND: dir, the
# default, or redis with a server this suite started in setup_file, or
# sentinel: a primary, its replica and three sentinels, the set that
# scripts/check started if it names one, MARO_TEST_SENTINEL_URL).
use_registry() {
	export MARO_GROUP="t$BATS_SUITE_TEST_NUMBER-$$"
	if [ "${MARO_TEST_BACKEND:-dir}" = sentinel ]; then
		MARO_REGISTRY=$(cat "$BATS_FILE_TMPDIR/sentinel.url")
		export MARO_REGISTRY
	elif [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		export MARO_REGISTRY="redis://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/redis/redis.port")/0"
	else
		export MARO_REGISTRY="dir:$BATS_TEST_TMPDIR/registry"
	fi
}

# In setup_file: start a redis-server for the suite when the backend wants one.
redis_setup_file() {
	if [ "${MARO_TEST_BACKEND:-dir}" = redis ]; then
		sh "$MARO_TOP/scripts/test-redis" start "$BATS_FILE_TMPDIR/redis" >/dev/null
	elif [ "${MARO_TEST_BACKEND:-dir}" = sentinel ]; then
		command -v redis-sentinel > /dev/null || skip "redis-sentinel is not installed (make deps)"
		if [ -n "${MARO_TEST_SENTINEL_URL:-}" ]; then
			echo "$MARO_TEST_SENTINEL_URL" > "$BATS_FILE_TMPDIR/sentinel.url"
		else
			timeout 60 sh "$MARO_TOP/scripts/test-sentinel" start "$BATS_FILE_TMPDIR/sentinel" \
				> "$BATS_FILE_TMPDIR/sentinel.url"
		fi
	fi
}

# the port of the suite's redis-server (redis_setup_file)
redis_port() { cat "$BATS_FILE_TMPDIR/redis/redis.port"; }

redis_teardown_file() {
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_FILE_TMPDIR/redis" 2>/dev/null || :
	sh "$MARO_TOP/scripts/test-sentinel" stop "$BATS_FILE_TMPDIR/sentinel" 2>/dev/null || :
}

default_teardown() {
	kill_bg
}
