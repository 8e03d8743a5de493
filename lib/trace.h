/*
 * trace: what the library says it does, for -v.  The library never
 * prints: it hands each line to the hook the front end installed (cli
 * points it at stderr under -v), and says nothing without one.
 */
#ifndef MARO_TRACE_H
#define MARO_TRACE_H

typedef void maro_trace_fn(const char *line);
extern maro_trace_fn *maro_trace_hook;

/* Formats a line and hands it to maro_trace_hook, if one is set. */
void maro_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
