#include <string.h>

#include "reply.h"
#include "unit.h"

/*
 * A peer's text printed or logged: control characters escaped, text as it
 * is; cut at the front when too long, on a character.
 */
static void
test_reply_escape(void)
{
	char out[64];
	const char *red = "bad \033[31mred\n\tend\x7f \xc2\x9b x \xc3\xa9";

	maro_reply_escape(maro_str_c(red), out, sizeof out);
	CHECK(!strcmp(out, "bad \\x1b[31mred\\n\\tend\\x7f \\x9b x \xc3\xa9"));
	/* too long: "..." and its end; never half of a character */
	maro_reply_escape(maro_str_c("0123456789 \xc3\xa9\xc3\xa9 end"), out, 11);
	CHECK(!strcmp(out, "...\xc3\xa9 end"));
	maro_reply_escape(maro_str_c("abc"), out, 4);
	CHECK(!strcmp(out, "abc"));
	maro_reply_escape(maro_str_c(""), out, sizeof out);
	CHECK(!strcmp(out, ""));
}

/* Which failure replies another attempt would meet again. */
static void
test_reply_final(void)
{
	CHECK(maro_reply_error_final(maro_str_c(MARO_REPLY_NO_HANDLER)));
	CHECK(maro_reply_error_final(maro_str_c(MARO_REPLY_NOT_JSON)));
	CHECK(!maro_reply_error_final(maro_str_c(MARO_REPLY_FAILED)));
	CHECK(!maro_reply_error_final(maro_str_c("out of disk")));
}

void
test_reply(void)
{
	test_reply_escape();
	test_reply_final();
}
