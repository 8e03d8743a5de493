#include "unit.h"

void
test_convert(void)
{
}
