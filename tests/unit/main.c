#include <stdio.h>

#include "unit.h"

int unit_passed, unit_failed;

int
main(void)
{
	test_cborseq();
	test_message();
	test_cli();
	test_convert();
	test_registry();
	printf("unit: %d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}
