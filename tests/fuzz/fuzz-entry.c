/*
 * fuzz-entry: a stored registry entry (lib/registry-impl.h) as the dir:
 * backend reads it, key=value lines, through maro_registry_field and the
 * MAC check of maro_registry_entry_check, with a group key.
 *
 * Any bytes must parse or be refused without a crash or a read past them.
 * An entry that passes must be one a reader may use: a valid name and
 * type, an endpoint of tcp:// or ipc://, a token.  An entry whose fields
 * pass all but the MAC, given the MAC of its stored fields, must pass;
 * with one bit of that MAC flipped, it must not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "registry-impl.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

/* Parses text (n bytes) as lines; 0 parsed, -1 refused.  The last line needs no newline. */
static int
parse(struct maro_registry *r, const char *text, size_t n, struct maro_entry *e,
    struct maro_registry_meta *m)
{
	const char *p = text, *end = text + n;

	memset(e, 0, sizeof *e);
	memset(m, 0, sizeof *m);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end, *eq;

		eq = memchr(p, '=', (size_t)(eol - p));
		if (!eq || eq == p || maro_registry_field(e, m, p, (size_t)(eq - p), eq + 1,
		    (size_t)(eol - eq - 1)) < 0)
			return -1;
		p = nl ? nl + 1 : end;
	}
	return maro_registry_entry_check(r, e, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct maro_registry r;
	struct maro_entry e;
	struct maro_registry_meta m;
	unsigned char mac[MARO_MAC_BYTES];
	char hex[MARO_MAC_HEX + 1], *text;
	size_t len;

	if (size > 8192)
		return 0;
	memset(&r, 0, sizeof r);
	snprintf(r.group, sizeof r.group, "g");
	r.keyed = 1;
	memset(r.mac_key, 0x5a, sizeof r.mac_key);
	if (parse(&r, (const char *)data, size, &e, &m) == 0) {
		REQUIRE(maro_name_valid(e.name) && maro_name_valid(e.type) && e.type[0] != '~');
		REQUIRE(maro_registry_endpoint_ok(e.endpoint, strlen(e.endpoint)));
		REQUIRE(strlen(m.token) == MARO_TOKEN_LEN && m.has_mac && !m.mac_bad);
		return 0;
	}
	/* all but the MAC: give it the right one, then a wrong one */
	if (!m.mac_bad || maro_registry_mac_raw(r.mac_key, r.group, m.raw, m.rawlen, mac) < 0)
		return 0;
	sodium_bin2hex(hex, sizeof hex, mac, sizeof mac);
	text = malloc(size + MARO_MAC_HEX + 8);
	REQUIRE(text);
	/* a mac line of the input's own is replaced by being read first: the last one counts */
	memcpy(text, data, size);
	len = size;
	if (len && text[len - 1] != '\n')
		text[len++] = '\n';
	memcpy(text + len, "mac=", 4);
	memcpy(text + len + 4, hex, MARO_MAC_HEX);
	len += 4 + MARO_MAC_HEX;
	REQUIRE(parse(&r, text, len, &e, &m) == 0);
	text[len - 1] = text[len - 1] == '0' ? '1' : '0';
	REQUIRE(parse(&r, text, len, &e, &m) < 0 && m.mac_bad);
	free(text);
	return 0;
}
