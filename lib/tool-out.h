/*
 * tool-out: the standard output of a tool that writes messages as they
 * come (maro-send, maro-bcast, maro-scatter): each one in the format of
 * -f (CBOR as it came, without a copy).  A write that fails keeps its
 * errno in error and writes nothing more; maro_tool_out_flush then says
 * so and gives the status to leave with.  Part of the front end: it
 * prints.
 */
#ifndef MARO_TOOL_OUT_H
#define MARO_TOOL_OUT_H

#include <stdint.h>

#include "buf.h"
#include "format.h"
#include "writer.h"

struct maro_tool_out {
	struct maro_writer w;
	struct maro_buf line;
	enum maro_format fmt;
	int error;
};
void maro_tool_out_init(struct maro_tool_out *o, enum maro_format fmt);
/* Writes one message; one that cannot be printed in the format is said and skipped. */
void maro_tool_out_put(struct maro_tool_out *o, const uint8_t *p, size_t n);
/*
 * Writes out what is buffered.  0, or the status (maro_cli_output_failed,
 * cli.h); 0 too when a signal came, which the loop's stop then says.
 */
int maro_tool_out_flush(struct maro_tool_out *o);
void maro_tool_out_free(struct maro_tool_out *o);

#endif
