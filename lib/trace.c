#include <stdarg.h>
#include <stdio.h>

#include "trace.h"

maro_trace_fn *maro_trace_hook;

void
maro_trace(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!maro_trace_hook)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	maro_trace_hook(line);
}
