/*
 * maro-keygen: make a group key file for CURVE (curve.h, maro(7) SECURITY).
 */
#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "maro.h"

static const char *const synopsis[] = { "FILE", NULL };

static const struct maro_opt opts[] = {
	{ 0 },
};

static const struct maro_tool tool = {
	"Make a group key file for CURVE: give it to every member of the group.",
	synopsis, opts, 0,
	MARO_TOOL_OPERANDS,
};

int
main(int argc, char **argv)
{
	char errbuf[512];
	struct maro_curve_key k;
	struct maro_common cm;

	maro_cli_init(argv[0]);
	maro_common_init(&cm);
	optind = maro_opt_parse(&tool, &cm, argc, argv, NULL, NULL);
	if (optind >= argc)
		maro_usage_error("no key file named");
	if (optind + 1 < argc)
		maro_usage_error("unexpected argument '%s'", argv[optind + 1]);

	if (maro_curve_keygen(argv[optind], errbuf, sizeof errbuf) < 0)
		maro_die(errno == EEXIST ? MARO_EXIT_USAGE : MARO_EXIT_SOFTWARE, "%s", errbuf);
	if (maro_verbose && maro_curve_load(argv[optind], &k, errbuf, sizeof errbuf) == 0) {
		maro_info("wrote '%s' (public key %s)", argv[optind], k.public_z85);
		maro_curve_wipe(&k);
	}
	return maro_cli_close_stdout(0);
}
