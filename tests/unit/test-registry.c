#include "unit.h"

void
test_registry(void)
{
}
