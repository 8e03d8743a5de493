#include <errno.h>
#include <unistd.h>

#include "cli.h"
#include "tool-out.h"

void
maro_tool_out_init(struct maro_tool_out *o, enum maro_format fmt)
{
	maro_writer_init(&o->w, STDOUT_FILENO);
	o->line = (struct maro_buf){ 0 };
	o->fmt = fmt;
	o->error = 0;
}

/*
 * A write refused because a signal came (maro_io_interrupt) is no error
 * of the output: the loop's stop says the signal, and the tool leaves
 * through its outcome, which says what the run did (what was not written
 * stays unwritten: nothing is written after a signal).
 */
static int
signalled(int err)
{
	return err == EINTR && maro_signal;
}

void
maro_tool_out_put(struct maro_tool_out *o, const uint8_t *p, size_t n)
{
	struct maro_err err;

	if (o->error)
		return;
	if (o->fmt == MARO_FORMAT_CBOR) {
		if (maro_writer_put(&o->w, p, n) < 0 && !signalled(errno))
			o->error = errno;
		return;
	}
	o->line.len = 0;
	if (maro_format_item(&o->line, o->fmt, p, n, &err) < 0) {
		maro_warn("cannot print a message: %s", err.msg);
		return;
	}
	if (maro_writer_put(&o->w, o->line.p, o->line.len) < 0 && !signalled(errno))
		o->error = errno;
}

int
maro_tool_out_flush(struct maro_tool_out *o)
{
	if (!o->error && maro_writer_flush(&o->w) < 0 && !signalled(errno))
		o->error = errno;
	return o->error ? maro_cli_output_failed(o->error) : 0;
}

void
maro_tool_out_free(struct maro_tool_out *o)
{
	maro_writer_free(&o->w);
	maro_buf_free(&o->line);
}
