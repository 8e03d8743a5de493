#include <stdio.h>
#include <string.h>

#include "unit.h"

int unit_passed, unit_failed;

int
main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "hostile"))
		return fixture_hostile(argv[2]);
	if (argc > 1) {
		fprintf(stderr, "usage: unit-tests [hostile ENDPOINT]\n");
		return 2;
	}
	test_cborseq();
	test_message();
	test_cli();
	test_convert();
	test_registry();
	test_event();
	printf("unit: %d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}
