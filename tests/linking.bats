#!/usr/bin/env bats
# What a tool loads when it starts.  Built as the GNUmakefile does by
# default (LINK=static), libzmq, hiredis, jansson, libsodium and (in
# maro-dist) libcrypto's SHA-256 are in the binary and a tool needs only
# libcbor and libc, so that its
# start costs little more than an exec (make bench, "start-up");
# maro-peers loads libmicrohttpd when it serves (lib/http.c).  A
# sanitizer's runtime is let be; LINK=shared (MARO_LINK, from make test)
# loads the libraries on purpose.

load helpers

# needed TOOL: the shared libraries TOOL names, one a line, sorted; not
# the dynamic loader, which loads every program (the unwinder asks it
# where code is)
needed() {
	readelf -d "$MARO_BIN/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' |
		grep -Ev '^(ld-linux|lib(asan|ubsan|tsan|lsan)\.so)' | sort
}

@test "every tool needs only libcbor and libc (maro-peers loads libmicrohttpd when it serves)" {
	[ "${MARO_LINK:-static}" = static ] || skip "built with LINK=${MARO_LINK}: the shared libraries on purpose"
	command -v readelf > /dev/null || skip "no readelf (binutils)"
	local t want
	for t in maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv \
	    maro-scatter maro-send maro-wait-event; do
		want=$'libc.so.6\nlibcbor.so.0.8'
		run -0 needed "$t"
		assert_output "$want"
	done
}

@test "maro-msg, which talks to no peer, carries no libzmq; maro-send carries it and says its version" {
	[ "${MARO_LINK:-static}" = static ] || skip "built with LINK=${MARO_LINK}: the shared libraries on purpose"
	run -0 nm "$MARO_BIN/maro-msg"
	refute_output --partial zmq_ctx_new
	run -0 nm "$MARO_BIN/maro-send"
	assert_output --partial zmq_ctx_new
	run -0 maro-send -V
	assert_output --regexp "\(libzmq $(pkg-config --modversion libzmq 2>/dev/null || echo '[0-9.]+'),"
}

@test "only maro-dist, which fetches and serves bundles, carries libcrypto, whose start-up probes the CPU" {
	[ "${MARO_LINK:-static}" = static ] || skip "built with LINK=${MARO_LINK}: the shared libraries on purpose"
	# its constructor runs CPUID, which a virtual machine traps: some 40 us
	# of every start (lib/tool-bundle.c keeps --bundle out of lib/tool.c)
	local t
	for t in maro-bcast maro-keygen maro-msg maro-peers maro-pool maro-recv \
	    maro-scatter maro-send maro-wait-event; do
		run -0 nm "$MARO_BIN/$t"
		refute_output --partial OPENSSL_cpuid_setup
	done
	run -0 nm "$MARO_BIN/maro-dist"
	assert_output --partial OPENSSL_cpuid_setup
}

@test "a tool carries libcrypto's SHA-256 for bundles (with the CPU's SHA extensions), not its EVP providers" {
	[ "${MARO_LINK:-static}" = static ] || skip "built with LINK=${MARO_LINK}: the shared libraries on purpose"
	# EVP would bring 3.4 MB of providers into every tool (lib/handler.c links lib/bundle.c in)
	run -0 sh -c "nm '$MARO_BIN/maro-dist' | awk '/sha256_block_data_order_shaext|EVP_MD_fetch/ { print \$3 }' | sort -u"
	assert_output sha256_block_data_order_shaext
}
