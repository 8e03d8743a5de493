#include "unit.h"

void
test_cborseq(void)
{
}
