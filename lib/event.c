#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"

/* Parentheses and tuples recurse: a hostile expression must not exhaust the stack. */
#define MAX_NESTING 256

struct parser {
	struct maro_event *e;
	const char *s;
	size_t pos;
	int col;
	char *err;
	size_t errlen;
	int depth;
};

static int fail(struct parser *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(struct parser *p, size_t at, const char *fmt, ...)
{
	va_list ap;

	if (p->col)
		return -1;	/* the first fault is the one to report */
	p->col = (int)at + 1;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void
skip_space(struct parser *p)
{
	while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n')
		p->pos++;
}

static int
new_node(struct parser *p, int kind)
{
	struct maro_event_node *n;

	if (p->e->nnodes == (int)(sizeof p->e->nodes / sizeof p->e->nodes[0]))
		return fail(p, p->pos, "too many operators");
	n = &p->e->nodes[p->e->nnodes];
	memset(n, 0, sizeof *n);
	n->kind = kind;
	return p->e->nnodes++;
}

static int
add_child(struct parser *p, int parent, int child)
{
	struct maro_event_node *n = &p->e->nodes[parent];

	if (n->nchild == MARO_EVENT_MAX_UNITS)
		return fail(p, p->pos, "too many operands");
	n->child[n->nchild++] = child;
	return 0;
}

static int
name_char(int c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '-';
}

/* source:tag:amount, from s[start..end) (no spaces inside) */
static int
parse_unit(struct parser *p, size_t start, size_t end)
{
	const char *s = p->s;
	struct maro_event_unit *u;
	size_t i = start, f0, f1;
	unsigned long v = 0;
	int node;

	if (p->e->nunits == MARO_EVENT_MAX_UNITS)
		return fail(p, start, "more than %d unit events", MARO_EVENT_MAX_UNITS);
	u = &p->e->units[p->e->nunits];
	memset(u, 0, sizeof *u);
	/* source */
	f0 = i;
	if (i < end && s[i] == '*')
		i++;
	else
		while (i < end && name_char((unsigned char)s[i]))
			i++;
	if (i == f0)
		return fail(p, i, "expected a source name prefix or '*'");
	if (i - f0 > MARO_NAME_MAX)
		return fail(p, f0, "source longer than %d bytes", MARO_NAME_MAX);
	if (i >= end || s[i] != ':')
		return fail(p, i, "expected ':' after the source (unit events are source:tag:amount)");
	if (s[f0] != '*')
		memcpy(u->source, s + f0, i - f0);
	f1 = ++i;
	/* tag */
	if (i < end && s[i] == '*')
		i++;
	else
		while (i < end && s[i] != ':' && s[i] != ' ' && s[i] != '(' && s[i] != ')')
			i++;
	if (i == f1)
		return fail(p, i, "expected a tag or '*'");
	if (i - f1 > MARO_NAME_MAX)
		return fail(p, f1, "tag longer than %d bytes", MARO_NAME_MAX);
	if (i >= end || s[i] != ':')
		return fail(p, i, "expected ':' after the tag");
	if (s[f1] != '*')
		memcpy(u->tag, s + f1, i - f1);
	i++;
	/* amount */
	if (i >= end || !isdigit((unsigned char)s[i]))
		return fail(p, i, "expected an amount: a number or a percentage");
	while (i < end && isdigit((unsigned char)s[i])) {
		v = v * 10 + (unsigned long)(s[i] - '0');
		if (v > 1000000)
			return fail(p, i, "amount too large");
		i++;
	}
	if (i < end && s[i] == '%') {
		u->percent = 1;
		i++;
		if (v > 100)
			return fail(p, i - 1, "a percentage is at most 100%%");
	}
	if (v == 0)
		return fail(p, i - 1, "the amount must be at least 1");
	if (i != end)
		return fail(p, i, "unexpected '%c' after the amount", s[i]);
	u->amount = (unsigned)v;
	node = new_node(p, MARO_EVENT_UNIT);
	if (node < 0)
		return -1;
	p->e->nodes[node].unit = p->e->nunits++;
	return node;
}

static int parse_or(struct parser *p);

static int
match_op(struct parser *p, const char *word, const char *sym)
{
	size_t n = strlen(word);

	skip_space(p);
	if (!strncmp(p->s + p->pos, sym, strlen(sym))) {
		p->pos += strlen(sym);
		return 1;
	}
	if (!strncmp(p->s + p->pos, word, n) && !name_char((unsigned char)p->s[p->pos + n]) &&
	    p->s[p->pos + n] != ':') {
		p->pos += n;
		return 1;
	}
	return 0;
}

static int
parse_primary(struct parser *p)
{
	size_t start;

	skip_space(p);
	if (p->s[p->pos] == '(') {
		size_t open = p->pos++;
		int n;

		if (p->depth == MAX_NESTING)
			return fail(p, open, "parentheses nested deeper than %d", MAX_NESTING);
		p->depth++;
		n = parse_or(p);
		p->depth--;
		if (n < 0)
			return -1;
		skip_space(p);
		if (p->s[p->pos] != ')')
			return fail(p, p->s[p->pos] ? p->pos : open,
			    p->s[p->pos] ? "expected ')' or an operator" : "unclosed '('");
		p->pos++;
		return n;
	}
	if (!p->s[p->pos])
		return fail(p, p->pos, "expected a unit event (source:tag:amount)");
	start = p->pos;
	while (p->s[p->pos] && p->s[p->pos] != ' ' && p->s[p->pos] != '\t' &&
	    p->s[p->pos] != '(' && p->s[p->pos] != ')' && p->s[p->pos] != '&' && p->s[p->pos] != '|')
		p->pos++;
	return parse_unit(p, start, p->pos);
}

/* left-assoc chains of one operator, flattened into one node */
static int
parse_chain(struct parser *p, int kind, int (*sub)(struct parser *), const char *word,
    const char *sym)
{
	int first = sub(p), node = -1;

	if (first < 0)
		return -1;
	while (match_op(p, word, sym)) {
		int next;

		if (node < 0) {
			node = new_node(p, kind);
			if (node < 0 || add_child(p, node, first) < 0)
				return -1;
		}
		next = sub(p);
		if (next < 0 || add_child(p, node, next) < 0)
			return -1;
	}
	return node < 0 ? first : node;
}

static int
parse_and(struct parser *p)
{
	return parse_chain(p, MARO_EVENT_AND, parse_primary, "AND", "&&");
}

static int
parse_or(struct parser *p)
{
	return parse_chain(p, MARO_EVENT_OR, parse_and, "OR", "||");
}

/* MARO's tuples: ( item , item , ... , "AND"|"OR" ), items quoted units or tuples */
static int
parse_tuple(struct parser *p)
{
	int items[MARO_EVENT_MAX_UNITS], nitems = 0, node, i, kind = -1;

	skip_space(p);
	if (p->s[p->pos] != '(')
		return fail(p, p->pos, "expected '(' to open a tuple");
	p->pos++;
	for (;;) {
		skip_space(p);
		if (p->s[p->pos] == '(') {
			int t;

			if (p->depth == MAX_NESTING)
				return fail(p, p->pos, "tuples nested deeper than %d", MAX_NESTING);
			p->depth++;
			t = parse_tuple(p);
			p->depth--;
			if (t < 0)
				return -1;
			if (nitems == MARO_EVENT_MAX_UNITS)
				return fail(p, p->pos, "too many items in a tuple");
			items[nitems++] = t;
		} else if (p->s[p->pos] == '"' || p->s[p->pos] == '\'') {
			char q = p->s[p->pos];
			size_t start = ++p->pos;

			while (p->s[p->pos] && p->s[p->pos] != q)
				p->pos++;
			if (!p->s[p->pos])
				return fail(p, start - 1, "unclosed quote");
			if (p->pos - start == 3 && !strncmp(p->s + start, "AND", 3))
				kind = MARO_EVENT_AND;
			else if (p->pos - start == 2 && !strncmp(p->s + start, "OR", 2))
				kind = MARO_EVENT_OR;
			else {
				int u = parse_unit(p, start, p->pos);

				if (u < 0)
					return -1;
				if (nitems == MARO_EVENT_MAX_UNITS)
					return fail(p, p->pos, "too many items in a tuple");
				items[nitems++] = u;
			}
			p->pos++;
		} else {
			return fail(p, p->pos, "expected a quoted unit event, a tuple or \"AND\"/\"OR\"");
		}
		skip_space(p);
		if (kind >= 0) {
			if (p->s[p->pos] == ',')
				p->pos++, skip_space(p);
			if (p->s[p->pos] != ')')
				return fail(p, p->pos, "the operator must come last in a tuple");
			p->pos++;
			break;
		}
		if (p->s[p->pos] != ',')
			return fail(p, p->pos, "expected ',' in a tuple");
		p->pos++;
	}
	if (nitems < 2)
		return fail(p, p->pos - 1, "a tuple combines at least two events");
	node = new_node(p, kind);
	if (node < 0)
		return -1;
	for (i = 0; i < nitems; i++)
		if (add_child(p, node, items[i]) < 0)
			return -1;
	return node;
}

int
maro_event_parse(struct maro_event *e, const char *text, int *col, char *err, size_t errlen)
{
	struct parser p = { e, text, 0, 0, err, errlen, 0 };
	int root;

	memset(e, 0, sizeof *e);
	err[0] = '\0';
	skip_space(&p);
	/* a quote anywhere means MARO's tuples; infix has no quotes */
	if (text[p.pos] == '(' && strpbrk(text, "\"'"))
		root = parse_tuple(&p);
	else
		root = parse_or(&p);
	if (root >= 0) {
		skip_space(&p);
		if (text[p.pos])
			root = fail(&p, p.pos, "unexpected '%c'", text[p.pos]);
	}
	if (root < 0) {
		*col = p.col;
		return -1;
	}
	e->root = root;
	return 0;
}

unsigned
maro_event_need(const struct maro_event_unit *u, unsigned live)
{
	unsigned long n;

	if (!u->percent)
		return u->amount;
	if (live == 0)
		return 0;	/* nobody to count yet: keep waiting */
	n = ((unsigned long)live * u->amount + 99) / 100;
	return n ? (unsigned)n : 1;
}

int
maro_event_unit_matches(const struct maro_event_unit *u, const struct maro_event_msg *m)
{
	if (u->source[0] && !maro_str_has_prefix(m->source, u->source))
		return 0;
	if (u->tag[0] && !maro_str_eq(m->tag, u->tag))
		return 0;
	return 1;
}

int
maro_event_matches_any(const struct maro_event *e, const struct maro_event_msg *m)
{
	for (int u = 0; u < e->nunits; u++)
		if (maro_event_unit_matches(&e->units[u], m))
			return 1;
	return 0;
}

void
maro_event_unit_text(const struct maro_event_unit *u, char *out, size_t len)
{
	snprintf(out, len, "%s:%s:%u%s", u->source[0] ? u->source : "*",
	    u->tag[0] ? u->tag : "*", u->amount, u->percent ? "%" : "");
}

struct match {
	const struct maro_event *e;
	const struct maro_event_msg *msgs;
	size_t n;
	const unsigned *live;
	unsigned char *take;	/* 1: taken by the evaluation so far */
	unsigned *have, *need;
};

/*
 * Whether message j counts toward unit u: it matches and is not taken;
 * for a percentage, its source is also not one an older message counted
 * already (P% of the workers is that many workers, not messages).  Older
 * messages counted are those untaken and matching before j; while taking,
 * those marked 2.
 */
static int
counts(const struct match *m, const struct maro_event_unit *u, size_t j, int taking)
{
	size_t k;

	if (m->take[j] || !maro_event_unit_matches(u, &m->msgs[j]))
		return 0;
	if (!u->percent)
		return 1;
	for (k = 0; k < j; k++)
		if ((taking ? m->take[k] == 2 : !m->take[k] && maro_event_unit_matches(u, &m->msgs[k])) &&
		    maro_str_same(m->msgs[k].source, m->msgs[j].source))
			return 0;
	return 1;
}

static int
eval(struct match *m, int node)
{
	const struct maro_event_node *nd = &m->e->nodes[node];
	int i;

	if (nd->kind == MARO_EVENT_UNIT) {
		const struct maro_event_unit *u = &m->e->units[nd->unit];
		unsigned need = maro_event_need(u, m->live ? m->live[nd->unit] : 0), got = 0;
		size_t j;

		for (j = 0; j < m->n && (need == 0 || got < need); j++)
			got += counts(m, u, j, 0);
		if (m->have && got > m->have[nd->unit])
			m->have[nd->unit] = got;
		if (m->need)
			m->need[nd->unit] = need;
		if (need == 0 || got < need)
			return 0;
		for (j = 0, got = 0; j < m->n && got < need; j++)
			if (counts(m, u, j, 1)) {
				/* the oldest of each source: its later ones stay for the next trigger */
				m->take[j] = 2;
				got++;
			}
		for (j = 0; j < m->n; j++)
			m->take[j] = m->take[j] != 0;
		return 1;
	}
	if (nd->kind == MARO_EVENT_AND) {
		for (i = 0; i < nd->nchild; i++)
			if (!eval(m, nd->child[i]))
				return 0;
		return 1;
	}
	for (i = 0; i < nd->nchild; i++) {
		unsigned char *saved = malloc(m->n ? m->n : 1);
		int ok;

		if (!saved)
			return 0;
		memcpy(saved, m->take, m->n);
		ok = eval(m, nd->child[i]);
		if (!ok)
			memcpy(m->take, saved, m->n);	/* a failed branch takes nothing */
		free(saved);
		if (ok)
			return 1;
	}
	return 0;
}

int
maro_event_match(const struct maro_event *e, const struct maro_event_msg *msgs, size_t n,
    const unsigned *live, unsigned char *take, unsigned *have, unsigned *need)
{
	struct match m = { e, msgs, n, live, take, have, need };
	int ok;

	memset(take, 0, n);
	if (have)
		memset(have, 0, (size_t)e->nunits * sizeof *have);
	ok = eval(&m, e->root);
	if (!ok)
		memset(take, 0, n);
	return ok;
}
