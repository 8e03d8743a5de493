/*
 * The tools' side of --bundle (maro_tool_bundle, tool.h).  Apart from
 * tool.c so that a tool that fetches no bundle links neither lib/bundle.c
 * nor libcrypto's SHA-256, whose start-up code probes the CPU in every
 * process that carries it (some 40 us of a maro-send's start on a VM,
 * where each CPUID traps).
 */
#include <stdint.h>

#include "cli.h"
#include "tool.h"

static void
bundle_progress(void *arg, uint64_t done, uint64_t size)
{
	maro_warn("bundle from '%s': %.1f of %.1f MiB", (const char *)arg, done / 1048576.0, size / 1048576.0);
}

const char *
maro_tool_bundle(struct maro_ctx *c, const struct maro_common *cm, const char *server,
    int64_t deadline, struct maro_bundle_got *got)
{
	static const int status[] = { 0, MARO_EXIT_DATAERR, MARO_EXIT_DATAERR, MARO_EXIT_SOFTWARE,
		MARO_EXIT_UNAVAILABLE, MARO_EXIT_TIMEOUT, 0, MARO_EXIT_SOFTWARE };
	struct maro_bundle_limits lim;
	struct maro_err err;
	const char *bad;
	int rc;

	if (maro_bundle_limits_env(&lim, &bad) < 0)
		maro_usage_error("%s is not a size in bytes (N, NK, NM or NG, below 16 EiB)", bad);
	if ((rc = maro_bundle_fetch(c, cm->name, server, &lim, deadline, cm->quiet ? NULL : bundle_progress,
	    (void *)server, got, &err)) != 0)
		maro_die(rc == MARO_BUNDLE_SIGNAL ? maro_signal_status() : status[rc], "bundle of '%s': %s",
		    server, err.msg);
	if (got->altered[0])
		maro_warn("bundle %.12s in the cache '%s' failed its check (%s): fetched again", got->hash,
		    got->path, got->altered);
	maro_info("bundle %.12s from '%s': %llu bytes, %llu fetched", got->hash, server,
	    (unsigned long long)got->size, (unsigned long long)got->fetched);
	return got->dir;
}

int
maro_tool_bundle_clear(void)
{
	struct maro_bundle_cleared out;
	struct maro_err err;

	if (maro_bundle_clear(&out, &err) != 0)
		maro_die(MARO_EXIT_SOFTWARE, "%s", err.msg);
	if (out.gone && !out.removed) {
		maro_warn("no bundle cache at '%s': nothing to clear", out.path);
		return MARO_EXIT_OK;
	}
	maro_warn("%s '%s': %llu bundle%s removed (%.1f MiB)%s", out.gone ? "cleared and removed the bundle cache" :
	    "cleared the bundle cache", out.path, (unsigned long long)out.removed, out.removed == 1 ? "" : "s",
	    out.bytes / 1048576.0, out.kept || out.failed ? "" : "; nothing left");
	if (out.kept)
		maro_warn("%llu bundle%s in use by a running worker (or being fetched) kept: stop the workers and "
		    "clear again", (unsigned long long)out.kept, out.kept == 1 ? "" : "s");
	if (out.failed)
		maro_warn("%llu entr%s could not be removed", (unsigned long long)out.failed,
		    out.failed == 1 ? "y" : "ies");
	return out.gone ? MARO_EXIT_OK : MARO_EXIT_INCOMPLETE;
}
