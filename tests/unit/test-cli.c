#include "unit.h"

void
test_cli(void)
{
}
