#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "convert.h"
#include "message.h"

static int
one(const struct maro_build *b, const char *dest, const uint8_t *payload, size_t plen,
    struct maro_buf *out)
{
	struct maro_msg m;
	char ids[2][MARO_UUID_LEN + 1];

	memset(&m, 0, sizeof m);
	m.tag = maro_str_c(b->tag);
	m.destination = maro_str_c(dest);
	m.type = b->notification ? MARO_SESSION_NOTIFICATION : MARO_SESSION_TASK;
	m.payload.p = payload;
	m.payload.n = plen;
	maro_msg_fill(&m, b->source, ids);
	return maro_msg_encode(&m, out);
}

int
maro_build_messages(const struct maro_build *b, struct maro_buf *out, char *err, size_t errlen)
{
	struct maro_buf payload = { 0 };
	size_t i, j, ndest = b->dests.n ? b->dests.n : 1;
	int rc = -1;

	if (b->json) {
		json_error_t je;
		json_t *v = json_loads(b->json, MARO_JSON_LOAD_FLAGS, &je);

		if (!v) {
			snprintf(err, errlen, "invalid JSON payload (line %d, column %d): %s",
			    je.line, je.column, je.text);
			return -1;
		}
		rc = maro_json_to_cbor(v, &payload);
		json_decref(v);
		if (rc < 0) {
			snprintf(err, errlen, "cannot encode the JSON payload");
			goto out;
		}
	}
	for (j = 0; j < ndest; j++) {
		const char *dest = b->dests.n ? b->dests.v[j] : NULL;

		if (b->data.n) {
			for (i = 0; i < b->data.n; i++) {
				payload.len = 0;
				if (maro_buf_cbor_text(&payload, b->data.v[i], strlen(b->data.v[i])) < 0 &&
				    errno == EILSEQ) {
					snprintf(err, errlen, "-d '%.64s' is not valid UTF-8 text",
					    b->data.v[i]);
					goto out;
				}
				if (!payload.len || one(b, dest, payload.p, payload.len, out) < 0)
					goto nomem;
			}
		} else if (one(b, dest, b->json ? payload.p : NULL, payload.len, out) < 0) {
			goto nomem;
		}
	}
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = -1;
out:
	maro_buf_free(&payload);
	return rc;
}
