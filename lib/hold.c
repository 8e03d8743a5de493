#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hold.h"

/* the value in ids of a message whose bytes a caller took away */
#define AWAY UINT64_MAX

/* The message held with this serial (binary search), or NULL. */
static struct maro_held *
find(struct maro_hold *h, uint64_t serial)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->msg[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->n && h->msg[lo].serial == serial ? &h->msg[lo] : NULL;
}

/* Room for one more message, in msg[] and the arrays that follow it. */
static int
grow(struct maro_hold *h)
{
	size_t cap = h->cap ? h->cap * 2 : 256;
	void *p;

	if (!(p = realloc(h->msg, cap * sizeof *h->msg)))
		return -1;
	h->msg = p;
	if (!(p = realloc(h->view, cap * sizeof *h->view)))
		return -1;
	h->view = p;
	if (!(p = realloc(h->take, cap)))
		return -1;
	h->take = p;
	h->cap = cap;
	return 0;
}

int
maro_hold_put(struct maro_hold *h, const struct maro_delivery *dl,
    int (*away)(void *arg, const struct maro_delivery *dl), void *arg)
{
	struct maro_held *m;
	uint64_t at, idh = !dl->msg.message_id.p ? 0 :
	    dl->id_hash ? dl->id_hash : maro_inbox_id_hash(dl->msg.message_id);

	/* a resent copy of a message held, or taken away: not new work */
	if (idh && maro_strset_get_h(&h->ids, dl->msg.message_id.p, dl->msg.message_id.n, idh, &at)) {
		struct maro_held *o = at != AWAY ? find(h, at) : NULL;

		if (o) {
			o->peer = dl->peer;
			o->seq = dl->seq;
			return 0;
		}
		/* where it is now is looked for only now, not for every message */
		if (at == AWAY && away && away(arg, dl))
			return 0;
	}
	if (h->n == h->cap && grow(h) < 0)
		return -1;
	m = &h->msg[h->n];
	if (!(m->p = malloc(dl->n ? dl->n : 1)))
		return -1;
	memcpy(m->p, dl->p, dl->n);
	m->n = dl->n;
	m->peer = dl->peer;
	m->seq = dl->seq;
	m->serial = h->serial++;
	m->idh = idh;
	m->acked = 0;
	maro_msg_rebase(&m->msg, &dl->msg, dl->p, m->p);	/* decoded once, by the inbox */
	if (m->msg.message_id.p &&
	    maro_strset_put_h(&h->ids, m->msg.message_id.p, m->msg.message_id.n, idh, m->serial) < 0) {
		free(m->p);
		return -1;
	}
	h->n++;
	return 0;
}

int
maro_hold_live(struct maro_hold *h, struct maro_registry *reg, const struct maro_event *e,
    int64_t max_age_us, unsigned *live)
{
	int64_t now = maro_now_us();
	ssize_t i;
	int u, rc = 0;

	if (!h->members || now - h->members_at >= max_age_us) {
		struct maro_entry *v;
		ssize_t k = maro_registry_list(reg, NULL, &v);

		if (k >= 0) {
			free(h->members);
			h->members = v;
			h->nmembers = k;
			h->members_at = now;
		} else {
			rc = -1;
		}
	}
	for (u = 0; u < e->nunits; u++) {
		size_t len = strlen(e->units[u].source);

		live[u] = 0;
		for (i = 0; i < h->nmembers; i++)
			if (!strncmp(h->members[i].name, e->units[u].source, len))
				live[u]++;
	}
	return rc;
}

int
maro_hold_match(struct maro_hold *h, const struct maro_event *e, const unsigned *live,
    unsigned *have, unsigned *need)
{
	unsigned char none;
	size_t i;

	for (i = 0; i < h->n; i++) {
		h->view[i].source = h->msg[i].msg.source;
		h->view[i].tag = h->msg[i].msg.tag;
	}
	return maro_event_match(e, h->view, h->n, live, h->take ? h->take : &none, have, need);
}

size_t
maro_hold_take_all(struct maro_hold *h, const struct maro_event_unit *u)
{
	size_t i, k = 0;

	for (i = 0; i < h->n; i++)
		if (!h->take[i] && maro_event_unit_matches(u, &h->view[i])) {
			h->take[i] = 1;
			k++;
		}
	return k;
}

/* Marks the units every way for e to hold needs: no OR above them. */
static void
mark_must(const struct maro_event *e, int node, unsigned char *must)
{
	const struct maro_event_node *n = &e->nodes[node];
	int i;

	if (n->kind == MARO_EVENT_UNIT)
		must[n->unit] = 1;
	else if (n->kind == MARO_EVENT_AND)
		for (i = 0; i < n->nchild; i++)
			mark_must(e, n->child[i], must);
}

/* Whether an older message of the same source was counted toward percentage unit u. */
static int
source_counted(const struct maro_hold *h, size_t i, int u)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (h->msg[k].acked == u + 1 && maro_str_same(h->msg[k].msg.source, h->msg[i].msg.source))
			return 1;
	return 0;
}

size_t
maro_hold_ack_sure(struct maro_hold *h, struct maro_inbox *ib, const struct maro_event *e,
    const unsigned *live)
{
	unsigned char must[MARO_EVENT_MAX_UNITS] = { 0 };
	struct maro_event_msg m;
	size_t i, n = 0;
	int u;

	mark_must(e, e->root, must);
	for (i = 0; i < h->n; i++) {
		if (h->msg[i].acked)
			continue;
		m.source = h->msg[i].msg.source;
		m.tag = h->msg[i].msg.tag;
		for (u = 0; u < e->nunits; u++) {
			const struct maro_event_unit *eu = &e->units[u];

			if (must[u] && h->counted[u] < maro_event_need(eu, live[u]) &&
			    maro_event_unit_matches(eu, &m) && !(eu->percent && source_counted(h, i, u))) {
				maro_hold_ack(h, ib, i);
				h->msg[i].acked = (unsigned char)(u + 1);
				h->counted[u]++;
				n++;
				break;
			}
		}
	}
	return n;
}

void
maro_hold_ack(struct maro_hold *h, struct maro_inbox *ib, size_t i)
{
	struct maro_delivery dl = { .n = h->msg[i].n, .peer = h->msg[i].peer, .seq = h->msg[i].seq,
		.msg = h->msg[i].msg };

	maro_inbox_done(ib, &dl);
}

int
maro_hold_release(struct maro_hold *h)
{
	size_t i, k = 0;
	int rc = 0;

	for (i = 0; i < h->n; i++) {
		if (h->take[i]) {
			/* its id still points into its bytes (or into the taker's copy of them) */
			struct maro_str id = h->msg[i].msg.message_id;

			if (id.p && h->msg[i].p)
				maro_strset_take_h(&h->ids, id.p, id.n, h->msg[i].idh);
			else if (id.p && maro_strset_put_h(&h->ids, id.p, id.n, h->msg[i].idh, AWAY) < 0)
				rc = -1;
			free(h->msg[i].p);
			continue;
		}
		h->msg[k++] = h->msg[i];
	}
	h->n = k;
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

void
maro_hold_forget(struct maro_hold *h, struct maro_str id, uint64_t idh)
{
	if (id.p)
		maro_strset_take_h(&h->ids, id.p, id.n, idh);
}

void
maro_hold_free(struct maro_hold *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->msg[i].p);
	free(h->msg);
	free(h->view);
	free(h->take);
	free(h->members);
	maro_strset_free(&h->ids);
	memset(h, 0, sizeof *h);
}
