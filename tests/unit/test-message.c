#include "unit.h"

void
test_message(void)
{
}
