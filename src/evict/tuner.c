/*
 * evict/tuner.c - chooses one parameter of a policy by simulation on a sample:
 * W-TinyLFU's window size, S3-FIFO's small-queue share.
 *
 * Why: the best value differs per workload (REFERENCE.tsv: a 1% window wins
 * on frequency-heavy traces, 25-50% on recency-heavy ones, and the loop trace
 * wants the smallest; S3-FIFO's best small queue ranges from 2% to 40% of
 * the cache across the same cells), and a hill climber on the cache's own
 * hit rate is slow and noisy. Caffeine's simulator has the same idea as its
 * "MiniSim" climber: run small caches with different values on a spatial
 * sample of the keys and follow the one that hits most (as SHARDS-style
 * sampling shows, a 1/S hash sample of the keys in a cache 1/S the size
 * predicts the full cache's miss ratio curve).
 *
 * How: kind->count mini caches (the very policy code, kind->ops, created
 * with one parameter each) see every request whose key hash falls in the
 * sample (1 in S keys; S a power of two chosen so that a mini cache holds
 * about kind->mini_entries entries; S = kind->min_sample for small caches).
 * Every `period` sampled requests each mini cache's hits are folded into a
 * score that halves each period (recent periods weigh most), and the parameter of the
 * best score becomes the answer. A hit is marked in the mini entry
 * (policy.h POLICY-P5) before it is delivered, as the engine's readers do. Keys in
 * the sample are nodes in a private open-addressing map; a node owns one
 * entry per mini cache, so the mini caches keep their queues in real entries
 * as the engine does: slab slots with ids (mem/pagedir.h) from the tuner's
 * own slab, whose value is the node's address. A node keeps its entries
 * while on the free list.
 *
 * Invariants:
 *   TUNER-T1. A node is in the map iff some mini cache holds it (present != 0),
 *       except the node of the request being applied.
 *   TUNER-T2. Each mini cache's used bytes <= its capacity after an access.
 *   TUNER-T3. Cost: O(kind->count) policy operations per sampled request, nothing
 *       for the others; memory O(kind->count x max_entries), independent of
 *       the cache size. S follows the expected entries the cache was opened
 *       with; max_entries (MINI_ENTRIES_CAP x the larger of a mini cache's
 *       expected entries and kind->mini_entries) is what keeps TUNER-T3 when they
 *       were underestimated: a cache opened for a few entries and filled
 *       with 10^8 small ones would otherwise give each mini cache 1/S of
 *       its bytes, so the tuner would hold nodes for a quarter of the keys
 *       and its mini caches' ghosts fingerprints for more (it doubled the
 *       RSS of `larder-bench --memory 8G --value-size 64`). A mini cache
 *       past max_entries lowers every mini cache's capacity to 3/4 of the
 *       bytes that many of its entries take (fit_capacity), ghosts included.
 *       Then the mini caches model a smaller cache than the real one (about
 *       max_entries x S entries): the choice is a worse prediction.
 * Not guaranteed: the choice is a prediction. With lossy hit events the
 * mini caches see the same lossy stream as the real cache.
 *
 * Curves (LARDER__TUNER_CURVE, tuner.h): the same machinery with mini caches
 * of different sizes on one sample, so that mini k's hits x S estimate the
 * hits of a full cache of its size x S (SHARDS): the points of a miss-ratio
 * curve, read by the pool's probe (pool/probe.c). Nothing is decided and no
 * mini cache is shrunk: TUNER-T3 is kept by the owner, which rebuilds the tuner
 * with a sparser sample when the largest mini cache holds too many entries
 * (a shrink would move the curve's points).
 */
#include "evict/tuner.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "evict/s3fifo.h"
#include "evict/wtinylfu.h"

/* TUNER-T3: a mini cache holds at most this many times its expected entries. */
#define MINI_ENTRIES_CAP 8u
#include "core/alloc.h"
#include "mem/slab.h"

extern const struct larder__policy_ops larder__policy_wtinylfu;
extern const struct larder__policy_ops larder__policy_s3fifo;

static int window_create(struct larder__policy **out, const struct larder__policy_host *host,
			 uint64_t capacity_bytes, uint64_t expected_entries, unsigned permille)
{
	return larder__wtinylfu_create(out, host, capacity_bytes, expected_entries, permille,
				       LARDER__WINDOW_FIXED);
}

/* W-TinyLFU's window, in thousandths of capacity; 1% (Caffeine's) at first. */
const struct larder__tuner_kind larder__tuner_windows = {
	.ops = &larder__policy_wtinylfu,
	.create = window_create,
	.count = 7,
	.params = {5, 10, 50, 150, 300, 500, 800},
	.first = 1,
	.mini_entries = 2048,
	.min_sample = 1,
	.period_factor = 16,
	.hysteresis = 1.02,
};

/*
 * S3-FIFO's small queue, in thousandths of capacity; 10% (the paper's) at
 * first. Period and hysteresis measured on the reference cells (mean gap to
 * Belady, every hit delivered / engine's hit ring): 8 and none 0.0709 /
 * 0.0727; 4 and none 0.0718 / 0.0722; 16 and 2% 0.0723 / 0.0729; a period
 * of 1 or 2 follows noise (0.0733, 0.0727). The window keeps 16 and 2%: with
 * 4 and none its mean is 0.0769 instead of 0.0735. Mini caches of 2048,
 * 1024 and 512 entries predict equally well here (0.0709 / 0.0727, 0.0707 /
 * 0.0726, 0.0707 / 0.0726); 1024 halves the sampled share of events. A
 * sample of at least 1 key in 4, even on small caches, costs 0.0003 / 0.0000
 * and caps the maintainer's extra work at 8 / 4 mini-cache operations per
 * event on average (1 in 1: 8 per event).
 */
const struct larder__tuner_kind larder__tuner_small_queues = {
	.ops = &larder__policy_s3fifo,
	.create = larder__s3fifo_create,
	.count = 8,
	.params = {10, 20, 50, 100, 200, 300, 400, 500},
	.first = 3,
	.mini_entries = 1024,
	.min_sample = 4,
	.period_factor = 8,
	.hysteresis = 1.0,
};

struct node {
	uint64_t hash;
	uint64_t bytes;
	unsigned present; /* bit k: mini cache k holds it */
	struct node *free_next;
	struct larder__entry *e[]; /* kind->count of them; value: this node's address */
};

struct mini {
	unsigned k;
	struct larder__policy *p;
	uint64_t capacity; /* bytes: the tuner's, scaled for a curve */
	uint64_t used, entries;
	uint64_t hits; /* this period; since creation for a curve */
	double score;
};

struct larder__tuner {
	const struct larder__tuner_kind *kind;
	struct mini m[LARDER__TUNER_MAX_K];
	struct larder__policy_host host[LARDER__TUNER_MAX_K];
	struct node **map;
	uint64_t map_mask, live;
	struct node *free_list;
	struct larder__slab slab; /* the nodes' entries; freed whole by destroy */
	struct larder__slab_cursor cursor;
	uint64_t sample_mask; /* sampled iff larder__tuner_mix(hash) & sample_mask == 0 */
	uint64_t capacity;    /* of each mini cache (for a curve: scale 1024), bytes */
	uint64_t entries;     /* a mini cache's expected entries */
	uint64_t max_entries; /* TUNER-T2, TUNER-T3 */
	uint64_t period, count;
	uint64_t requests; /* sampled, since creation */
	unsigned best;
};

static struct node *node_of(const struct larder__entry *e)
{
	struct node *n;
	memcpy(&n, larder__entry_value((struct larder__entry *)(uintptr_t)e), sizeof(n));
	return n;
}

static uint64_t host_hash(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return node_of(e)->hash;
}

static size_t host_size(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return (size_t)node_of(e)->bytes;
}

static int is_curve(const struct larder__tuner *t)
{
	return (t->kind->flags & LARDER__TUNER_CURVE) != 0;
}

/* What mini k gets of v (the capacity or the expected entries): all of it,
 * or its scale for a curve; at least 1. */
static uint64_t scaled(const struct larder__tuner *t, unsigned k, uint64_t v)
{
	if (is_curve(t))
		v = v / 1024 * t->kind->scale[k] + v % 1024 * t->kind->scale[k] / 1024;
	return v ? v : 1;
}

static int minis_create(struct larder__tuner *t)
{
	for (unsigned k = 0; k < t->kind->count; k++) {
		struct mini *m = &t->m[k];
		m->k = k;
		m->capacity = scaled(t, k, t->capacity);
		t->host[k] = (struct larder__policy_host){host_hash, host_size, m, &t->slab.dir};
		int rc = is_curve(t) ? t->kind->ops->create(&m->p, &t->host[k], m->capacity,
							    scaled(t, k, t->entries))
				     : t->kind->create(&m->p, &t->host[k], m->capacity,
						       t->entries, t->kind->params[k]);
		if (rc != LARDER_OK)
			return -1;
	}
	return 0;
}

int larder__tuner_create(struct larder__tuner **out, const struct larder__tuner_kind *kind,
			 uint64_t capacity_bytes, uint64_t expected_entries)
{
	struct larder__tuner *t = larder__calloc(1, sizeof *t);
	if (!t)
		return -1;
	t->kind = kind;
	uint64_t s = kind->min_sample;
	while (expected_entries / (s * 2) >= kind->mini_entries && capacity_bytes / (s * 2) > 0)
		s *= 2;
	t->sample_mask = s - 1;
	t->capacity = capacity_bytes / s ? capacity_bytes / s : 1;
	t->entries = expected_entries / s ? expected_entries / s : 1;
	t->max_entries = MINI_ENTRIES_CAP *
			 (t->entries > kind->mini_entries ? t->entries : kind->mini_entries);
	t->period = kind->period_factor * t->entries;
	t->map_mask = 1023;
	t->best = kind->first;
	if (larder__slab_init(&t->slab) != 0) {
		free(t);
		return -1;
	}
	t->map = larder__calloc(t->map_mask + 1, sizeof *t->map);
	if (!t->map || minis_create(t) != 0) {
		larder__tuner_destroy(t);
		return -1;
	}
	*out = t;
	return 0;
}

void larder__tuner_destroy(struct larder__tuner *t)
{
	if (!t)
		return;
	for (unsigned k = 0; k < t->kind->count; k++)
		if (t->m[k].p)
			t->kind->ops->destroy(t->m[k].p);
	for (uint64_t i = 0; t->map && i <= t->map_mask; i++)
		free(t->map[i]);
	free(t->map);
	while (t->free_list) {
		struct node *n = t->free_list->free_next;
		free(t->free_list);
		t->free_list = n;
	}
	larder__slab_destroy(&t->slab);
	free(t);
}

static struct node **map_slot(struct larder__tuner *t, uint64_t hash)
{
	uint64_t i = larder__tuner_mix(hash) >> 20 & t->map_mask;
	while (t->map[i] && t->map[i]->hash != hash)
		i = (i + 1) & t->map_mask;
	return &t->map[i];
}

static int map_grow(struct larder__tuner *t)
{
	uint64_t n = (t->map_mask + 1) * 2;
	struct node **m = larder__calloc(n, sizeof *m);
	if (!m)
		return -1;
	struct node **old = t->map;
	uint64_t old_mask = t->map_mask;
	t->map = m;
	t->map_mask = n - 1;
	for (uint64_t i = 0; i <= old_mask; i++)
		if (old[i])
			*map_slot(t, old[i]->hash) = old[i];
	free(old);
	return 0;
}

/* Backward-shift deletion, as in ghost.c. */
static void map_del(struct larder__tuner *t, struct node *n)
{
	uint64_t i = larder__tuner_mix(n->hash) >> 20 & t->map_mask;
	while (t->map[i] != n)
		i = (i + 1) & t->map_mask;
	for (uint64_t j = i;;) {
		j = (j + 1) & t->map_mask;
		if (!t->map[j])
			break;
		uint64_t home = larder__tuner_mix(t->map[j]->hash) >> 20 & t->map_mask;
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			t->map[i] = t->map[j];
			i = j;
		}
	}
	t->map[i] = NULL;
	t->live--;
	n->free_next = t->free_list;
	t->free_list = n;
}

/* A node with its kind->count entries, or NULL when out of memory. */
static struct node *node_new(struct larder__tuner *t)
{
	struct node *n = larder__malloc(sizeof *n + t->kind->count * sizeof n->e[0]);
	if (!n)
		return NULL;
	for (unsigned k = 0; k < t->kind->count; k++) {
		size_t bytes = larder__entry_bytes(0, 0, sizeof(n));
		struct larder__entry *e = larder__slab_alloc(&t->slab, &t->cursor, bytes);
		if (!e) {
			free(n); /* the slots taken stay in the slab until destroy */
			return NULL;
		}
		*e = (struct larder__entry){ .value_len = sizeof(n) };
		e->next = larder__pagedir_id(e, bytes); /* ENTRY-E6: in no queue yet */
		memcpy(larder__entry_value(e), &n, sizeof(n));
		n->e[k] = e;
	}
	return n;
}

static struct node *node_get(struct larder__tuner *t, uint64_t hash, uint64_t bytes)
{
	if ((t->live + 1) * 2 > t->map_mask + 1 && map_grow(t) != 0)
		return NULL;
	struct node **slot = map_slot(t, hash);
	if (*slot)
		return *slot;
	struct node *n = t->free_list;
	if (n)
		t->free_list = n->free_next;
	else if (!(n = node_new(t)))
		return NULL;
	n->hash = hash;
	n->bytes = bytes ? bytes : 1;
	n->present = 0;
	*slot = n;
	t->live++;
	return n;
}

static void mini_access(struct larder__tuner *t, struct mini *m, struct node *n)
{
	const struct larder__policy_ops *ops = t->kind->ops;
	unsigned bit = 1u << m->k;
	struct larder__entry *e = n->e[m->k];
	if (n->present & bit) {
		m->hits++;
		larder__entry_mark_accessed(e);
		ops->hit(m->p, e);
		return;
	}
	e->mbits = 0; /* its links: ENTRY-E6, left so by the eviction that unlinked it */
	larder__entry_take_accessed(e); /* a new entry, as the engine's are */
	ops->insert(m->p, e, n->hash, n->bytes);
	n->present |= bit;
	m->used += n->bytes;
	m->entries++;
	while (m->used > m->capacity) {
		struct larder__entry *v = ops->evict(m->p, NULL);
		if (!v)
			break;
		struct node *vn = node_of(v);
		vn->present &= ~bit;
		m->used -= vn->bytes;
		m->entries--;
		if (!vn->present && vn != n)
			map_del(t, vn);
	}
}

static void decide(struct larder__tuner *t)
{
	unsigned best = t->best;
	for (unsigned k = 0; k < t->kind->count; k++) {
		t->m[k].score = t->m[k].score * 0.5 + (double)t->m[k].hits;
		t->m[k].hits = 0;
	}
	for (unsigned k = 0; k < t->kind->count; k++)
		if (t->m[k].score > t->m[best].score)
			best = k;
	if (t->m[best].score < t->m[t->best].score * t->kind->hysteresis)
		best = t->best;
	t->best = best;
	t->count = 0;
}

/* Gives every mini cache `capacity` bytes (its scale of them for a curve),
 * evicting down to it (TUNER-T2). */
static void apply_capacity(struct larder__tuner *t, uint64_t capacity)
{
	t->capacity = capacity ? capacity : 1;
	for (unsigned k = 0; k < t->kind->count; k++) {
		struct mini *m = &t->m[k];
		m->capacity = scaled(t, k, t->capacity);
		t->kind->ops->set_capacity(m->p, m->capacity);
		while (m->used > m->capacity) {
			struct larder__entry *v = t->kind->ops->evict(m->p, NULL);
			if (!v)
				break;
			struct node *vn = node_of(v);
			vn->present &= ~(1u << k);
			m->used -= vn->bytes;
			m->entries--;
			if (!vn->present)
				map_del(t, vn);
		}
	}
}

/* TUNER-T3: m holds more than max_entries (the cache was opened for far fewer
 * entries than it holds), so every mini cache gets 3/4 of the bytes that
 * max_entries of m's entries take. */
static void fit_capacity(struct larder__tuner *t, const struct mini *m)
{
	apply_capacity(t, m->used / m->entries * t->max_entries / 4 * 3);
}

void larder__tuner_access(struct larder__tuner *t, uint64_t hash, uint64_t bytes)
{
	if (!larder__tuner_in_sample(t->sample_mask, hash))
		return;
	struct node *n = node_get(t, hash, bytes);
	if (!n)
		return; /* no memory: this request goes unsampled */
	for (unsigned k = 0; k < t->kind->count; k++)
		mini_access(t, &t->m[k], n);
	if (!n->present)
		map_del(t, n);
	t->requests++;
	if (is_curve(t))
		return; /* TUNER-T3 is the owner's; nothing to decide */
	for (unsigned k = 0; k < t->kind->count; k++)
		if (t->m[k].entries > t->max_entries) {
			fit_capacity(t, &t->m[k]);
			break;
		}
	if (++t->count >= t->period)
		decide(t);
}

unsigned larder__tuner_choice(const struct larder__tuner *t)
{
	return t->kind->params[t->best];
}

void larder__tuner_set_capacity(struct larder__tuner *t, uint64_t capacity_bytes)
{
	apply_capacity(t, capacity_bytes / (t->sample_mask + 1));
}

uint64_t larder__tuner_requests(const struct larder__tuner *t)
{
	return t->requests;
}

uint64_t larder__tuner_hits(const struct larder__tuner *t, unsigned k)
{
	return t->m[k].hits;
}

uint64_t larder__tuner_mini_entries(const struct larder__tuner *t, unsigned k)
{
	return t->m[k].entries;
}

uint64_t larder__tuner_sample_every(const struct larder__tuner *t)
{
	return t->sample_mask + 1;
}
