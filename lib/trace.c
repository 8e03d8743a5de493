#include <stdarg.h>
#include <stdio.h>

#include "trace.h"

maro_trace_fn *maro_trace_hook;

/*
 * registry.h's hook lives here, beside the other hook the front end sets:
 * defined in registry.c, the option code that sets it in every tool
 * (opt.c) pulled the registry, and with it libzmq, into tools that talk
 * to no peer (maro-msg: tests/linking.bats).
 */
void (*maro_registry_notice)(int level, const char *msg);

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
