/*
 * fuzz-event: the event-expression parser (lib/event.h) and the matcher.
 *
 * Any text must parse or fail with a column inside it (or just past its
 * end) and a message.  A parsed event must be a sound tree: every index in
 * range, every unit valid, each used once.  Written back as infix text it
 * must parse to the same units.  Matching it against messages made from
 * its own units must leave take[] consistent with the result.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static void
check_tree(const struct maro_event *e, int node, unsigned char *seen_node, unsigned char *seen_unit)
{
	const struct maro_event_node *nd;
	int i;

	REQUIRE(node >= 0 && node < e->nnodes && !seen_node[node]);
	seen_node[node] = 1;
	nd = &e->nodes[node];
	if (nd->kind == MARO_EVENT_UNIT) {
		const struct maro_event_unit *u;

		REQUIRE(nd->unit >= 0 && nd->unit < e->nunits && !seen_unit[nd->unit]);
		seen_unit[nd->unit] = 1;
		u = &e->units[nd->unit];
		REQUIRE(memchr(u->source, 0, sizeof u->source) && memchr(u->tag, 0, sizeof u->tag));
		REQUIRE(u->amount >= 1 && (!u->percent || u->amount <= 100));
		return;
	}
	REQUIRE(nd->kind == MARO_EVENT_AND || nd->kind == MARO_EVENT_OR);
	REQUIRE(nd->nchild >= 2 && nd->nchild <= MARO_EVENT_MAX_UNITS);
	for (i = 0; i < nd->nchild; i++)
		check_tree(e, nd->child[i], seen_node, seen_unit);
}

/* Infix text of the tree, or -1 when a name cannot be written in infix. */
static int
infix(const struct maro_event *e, int node, char *out, size_t len, size_t *pos)
{
	const struct maro_event_node *nd = &e->nodes[node];
	int i, k;

	if (nd->kind == MARO_EVENT_UNIT) {
		const struct maro_event_unit *u = &e->units[nd->unit];
		const char *t;

		for (t = u->tag; *t; t++)
			if (strchr(" \t\n()&|:\"'", *t))
				return -1;
		k = snprintf(out + *pos, len - *pos, " ");
		if (k < 0 || (size_t)k >= len - *pos)
			return -1;
		*pos += (size_t)k;
		maro_event_unit_text(u, out + *pos, len - *pos);
		*pos += strlen(out + *pos);
		return *pos + 1 < len ? 0 : -1;
	}
	k = snprintf(out + *pos, len - *pos, "(");
	if (k < 0 || (size_t)k >= len - *pos)
		return -1;
	*pos += (size_t)k;
	for (i = 0; i < nd->nchild; i++) {
		if (i) {
			k = snprintf(out + *pos, len - *pos, nd->kind == MARO_EVENT_AND ? " AND" : " ||");
			if (k < 0 || (size_t)k >= len - *pos)
				return -1;
			*pos += (size_t)k;
		}
		if (infix(e, nd->child[i], out, len, pos) < 0)
			return -1;
	}
	k = snprintf(out + *pos, len - *pos, ")");
	if (k < 0 || (size_t)k >= len - *pos)
		return -1;
	*pos += (size_t)k;
	return 0;
}

static void
check_match(const struct maro_event *e, const uint8_t *data, size_t size)
{
	struct maro_event_msg msgs[2 * MARO_EVENT_MAX_UNITS];
	unsigned live[MARO_EVENT_MAX_UNITS], have[MARO_EVENT_MAX_UNITS], need[MARO_EVENT_MAX_UNITS];
	unsigned char take[2 * MARO_EVENT_MAX_UNITS];
	size_t n = 0, i;
	int ok;

	/* one or two messages per unit, as the input's bytes say */
	for (i = 0; i < (size_t)e->nunits; i++) {
		const struct maro_event_unit *u = &e->units[i];
		unsigned char b = size ? data[i % size] : 0;
		int copies = 1 + (b & 1), c;

		live[i] = b >> 5;
		for (c = 0; c < copies; c++) {
			msgs[n].source = maro_str_c(u->source[0] ? u->source : "any");
			msgs[n].tag = maro_str_c(u->tag[0] ? u->tag : "t");
			n++;
		}
	}
	memset(have, 0, sizeof have);
	memset(need, 0, sizeof need);
	ok = maro_event_match(e, msgs, n, live, take, have, need);
	REQUIRE(ok == 0 || ok == 1);
	for (i = 0; i < n; i++)
		REQUIRE(take[i] <= 1 && (ok || !take[i]));
	for (i = 0; i < (size_t)e->nunits; i++) {
		REQUIRE(need[i] == maro_event_need(&e->units[i], live[i]) || need[i] == 0);
		REQUIRE(need[i] == 0 || have[i] <= need[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct maro_event e, e2;
	static char text[65536], again[65536];
	unsigned char seen_node[2 * MARO_EVENT_MAX_UNITS], seen_unit[MARO_EVENT_MAX_UNITS];
	char err[256];
	int col = 0, i;
	size_t pos = 0;

	if (size >= sizeof text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (maro_event_parse(&e, text, &col, err, sizeof err) < 0) {
		REQUIRE(err[0] && col >= 1 && (size_t)col <= strlen(text) + 1);
		return 0;
	}
	REQUIRE(e.nunits >= 1 && e.nunits <= MARO_EVENT_MAX_UNITS);
	REQUIRE(e.nnodes >= 1 && e.nnodes <= 2 * MARO_EVENT_MAX_UNITS);
	memset(seen_node, 0, sizeof seen_node);
	memset(seen_unit, 0, sizeof seen_unit);
	check_tree(&e, e.root, seen_node, seen_unit);
	for (i = 0; i < e.nunits; i++)
		REQUIRE(seen_unit[i]);
	check_match(&e, data, size);

	if (infix(&e, e.root, again, sizeof again, &pos) == 0) {
		REQUIRE(maro_event_parse(&e2, again, &col, err, sizeof err) == 0);
		REQUIRE(e2.nunits == e.nunits);
		for (i = 0; i < e.nunits; i++)
			REQUIRE(!memcmp(&e.units[i], &e2.units[i], sizeof e.units[i]));
	}
	return 0;
}
