/*
 * fuzz-manifest: the parser of a bundle's manifest (lib/manifest.h).
 *
 * Each line of the input is parsed as the first line and as a record.
 * A record that parses must be sound (a known type, a mode within 07777,
 * a path that is the rest of the line), and
 * written back it must parse to the same record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static void
one(const char *line)
{
	struct maro_manifest_entry e, again;
	char hash[MARO_MANIFEST_HASH_LEN + 1], out[8192];
	int k;

	if (maro_manifest_head(line, hash) == 0)
		REQUIRE(strlen(hash) == MARO_MANIFEST_HASH_LEN && strstr(line, hash));
	if (maro_manifest_parse(line, &e) < 0)
		return;
	REQUIRE(strchr("dfle", e.type));
	if (e.type == 'e') {
		REQUIRE((k = maro_manifest_format(&e, out, sizeof out)) > 0);
		return;
	}
	REQUIRE(e.mode <= 07777);
	REQUIRE(e.path > line && *e.path && e.path + strlen(e.path) == line + strlen(line));
	k = maro_manifest_format(&e, out, sizeof out);
	REQUIRE(k > 0 && out[k - 1] == '\n');
	out[k - 1] = '\0';
	REQUIRE(maro_manifest_parse(out, &again) == 0);
	REQUIRE(again.type == e.type && again.mode == e.mode && again.size == e.size && again.ino == e.ino &&
	    again.mtime == e.mtime && again.ctime == e.ctime &&
	    !strcmp(again.path, e.path));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *line, *next;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = text; line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		one(line);
	}
	free(text);
	return 0;
}
