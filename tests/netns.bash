# Hosts on one machine for a suite: a network namespace per host on a
# private bridge.  The suite sets NETNS (a prefix with its pid), HOSTS and
# ADDR[host] before net_up.  The bridge lives in a namespace of its own
# (the "hub"), so nothing is added to the root namespace and parallel runs,
# whose namespaces carry the pid of their bats process, can use the same
# addresses without meeting.
#
# Everything made is listed in $BATS_FILE_TMPDIR/made ("netns NAME" and
# "pid PID" lines, the suite adding its own processes), so that net_down
# removes exactly that, whatever point the setup reached.

# HOSTED: the sh -c script that names a UTS namespace and execs the command
# (sh -c "$HOSTED" HOST CMD...): the pid taken is CMD's own.
HOSTED='hostname "$0" && exec "$@"'

# on HOST CMD...: run CMD on HOST: in its network namespace, and in a UTS
# namespace of its own whose host name is HOST (what heartbeats and
# maro-pool's job names carry).  ip netns exec, unshare and sh all exec, so
# a pid taken from it is CMD's own.
on() {
	local host=$1
	shift
	ip netns exec "$NETNS-$host" unshare --uts sh -c "$HOSTED" "$host" "$@"
}

# on_bg SECONDS HOST CMD...: bg (bounded, killed by pid at teardown) on HOST.
on_bg() {
	local limit=$1 host=$2
	shift 2
	bg "$limit" ip netns exec "$NETNS-$host" unshare --uts sh -c "$HOSTED" "$host" "$@"
}

net_down() {
	local made=$BATS_FILE_TMPDIR/made kind what pid i
	[ -f "$made" ] || return 0
	# processes first: a namespace lives on while a process is in it
	while read -r kind what; do
		[ "$kind" = pid ] || continue
		kill -TERM -- "-$what" 2>/dev/null || kill -TERM "$what" 2>/dev/null || :
		for i in $(seq 150); do
			kill -0 "$what" 2>/dev/null || break
			sleep 0.02
		done
		kill -KILL -- "-$what" 2>/dev/null || kill -KILL "$what" 2>/dev/null || :
	done < "$made"
	while read -r kind what; do
		[ "$kind" = netns ] || continue
		# anything still in a namespace of ours was started by the suite
		for pid in $(ip netns pids "$what" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || :
		done
		# deleting the hub takes the bridge and every veth pair with it
		ip netns delete "$what" 2>/dev/null || :
	done < "$made"
	rm -f "$made"
}

net_up() {
	local made=$BATS_FILE_TMPDIR/made host ns
	ns=$NETNS-hub
	ip netns add "$ns" || return 1
	echo "netns $ns" >> "$made"
	ip -n "$ns" link set lo up &&
		ip -n "$ns" link add br0 type bridge &&
		ip -n "$ns" link set br0 up || return 1
	for host in $HOSTS; do
		ns=$NETNS-$host
		ip netns add "$ns" || return 1
		echo "netns $ns" >> "$made"
		# the veth pair is made across the two namespaces at once: its
		# ends never appear in the root namespace
		ip -n "$NETNS-hub" link add "v-$host" type veth peer name eth0 netns "$ns" &&
			ip -n "$NETNS-hub" link set "v-$host" master br0 up &&
			ip -n "$ns" link set lo up &&
			ip -n "$ns" addr add "${ADDR[$host]}/24" dev eth0 &&
			ip -n "$ns" link set eth0 up || return 1
	done
}
