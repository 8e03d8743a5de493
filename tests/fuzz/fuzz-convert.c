/*
 * fuzz-convert: CBOR to JSON and to diagnostic notation (lib/convert.h).
 *
 * Any bytes: both conversions succeed or fail with a message, never both
 * ways for the same well-formed item unless the text is not UTF-8.  A JSON
 * value made from CBOR survives the trip JSON -> CBOR -> JSON unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cborseq.h"
#include "convert.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maro_err err;
	struct maro_buf diag = { 0 }, cbor = { 0 };
	json_t *j, *j2;
	int d;

	memset(&err, 0, sizeof err);
	d = maro_cbor_to_diag(data, size, &diag, &err);
	if (d < 0)
		REQUIRE(err.msg[0] && diag.len == 0);
	else
		REQUIRE(diag.len > 0 && !memchr(diag.p, '\n', diag.len));
	maro_buf_free(&diag);

	memset(&err, 0, sizeof err);
	j = maro_cbor_to_json(data, size, &err);
	if (!j) {
		REQUIRE(err.msg[0]);
		return 0;
	}
	/* what makes JSON makes diagnostic notation */
	REQUIRE(d == 0);
	REQUIRE(maro_json_to_cbor(j, &cbor) == 0);
	{
		struct maro_cbor_limits lim = { cbor.len, MARO_CBOR_MAX_DEPTH_LIMIT };

		REQUIRE(maro_cbor_check(cbor.p, cbor.len, &lim, &err) == 0);
	}
	j2 = maro_cbor_to_json(cbor.p, cbor.len, &err);
	REQUIRE(j2);
	/* json_equal() looks keys up as C strings: compare the texts (keys may hold NUL) */
	{
		char *a = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		char *b = json_dumps(j2, JSON_COMPACT | JSON_ENCODE_ANY);

		REQUIRE(a && b && !strcmp(a, b));
		free(a);
		free(b);
	}
	json_decref(j2);
	json_decref(j);
	maro_buf_free(&cbor);
	return 0;
}
