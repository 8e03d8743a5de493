/*
 * maro-keygen: make a group key file for CURVE (curve.h, maro(7) SECURITY).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "maro.h"

static void
usage(void)
{
	printf("usage: %s [-v] FILE\n"
	    "       %s -h | -V\n", maro_progname, maro_progname);
}

static const struct option longopts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	char errbuf[512];
	struct maro_curve_key k;
	int ch;

	maro_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "vhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v': maro_verbose = 1; break;
		case 'h': usage(); return 0;
		case 'V': maro_print_version(); return 0;
		default: maro_usage_error("invalid option");
		}
	}
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
