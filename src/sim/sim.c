/*
 * sim/sim.c - the public cache simulator (larder_sim_*, larder.h).
 *
 * Replays a stream of key ids through the very policy code the maintainer
 * runs (the same const struct larder__policy_ops, no copy), on real entries
 * in slab slots with ids (mem/slab.h, mem/pagedir.h), as the policies link
 * them: a struct larder__entry header, the 8-byte key, and as the value the
 * simulator's own fields (struct sim_entry). What the engine has and the
 * simulator leaves out: real values, the lock-free index (a private
 * open-addressing map stands in), threads and the event channel.
 *
 * One access = one request of the trace:
 *   present -> a hit: the entry is marked accessed at once, as the engine's
 *              readers mark it (larder__entry_mark_accessed, core/entry.h
 *              ENTRY-E7), and the hit is delivered to policy->hit() (every one; or a random
 *              sample with LARDER_SIM_SAMPLE_HITS; or, with
 *              LARDER_SIM_HIT_RING, batched through a bounded ring drained
 *              every drain_every requests as the engine's per-thread hit
 *              ring is: to measure what the engine's lossy hit events
 *              cost); a different size is an update of the value,
 *              delivered as replace() the way a put would be.
 *   absent  -> a miss: the entry is inserted, then victims are evicted while
 *              the charged size is over capacity, the order the maintainer
 *              applies an insertion event and then enforces capacity.
 * That strict model evicts at every miss while hit samples wait in the ring,
 * so with LARDER_SIM_HIT_RING it evicts entries whose samples are in flight,
 * which the engine never does: its maintainer pass (maint/maintainer.c)
 * drains every event ring, then every hit ring, and only then evicts. With
 * LARDER_SIM_PASSES the simulator does the same: a missed key is in the map
 * at once (the next request for it hits, and marks it, as in the engine's
 * index) but waits in waiting[] for the drain, which inserts it, delivers the
 * ring's samples and then evicts down to capacity; a drain comes every
 * drain_every requests of the one simulated thread (the batching window) or
 * at the miss that leaves SIM_PASS_INSERTS inserts waiting (the writer's
 * event ring half full: it wakes the maintainer). So between drains the cache
 * holds the waiting inserts beyond capacity, as the engine does within its
 * overshoot bound (core/cache.c CACHE-B1..B3): the pass model's miss ratios are
 * lower than the strict model's for that reason alone, and what sampling
 * costs there is measured against the pass model with every hit delivered at
 * once (LARDER_SIM_PASSES without LARDER_SIM_HIT_RING), never against the
 * strict model. Not modelled: the maintainer's idle sleep (a pass with no
 * work lets it sleep until a writer wakes it, so in a phase without misses
 * the engine drains less often than every window; on the reference traces
 * every window of 1024 requests has misses), reader threads running during a
 * pass, and a size change of a linked entry, which is replaced at once.
 * Capacity is in the same unit as the sizes given: pass size 1 for every
 * access to count objects, as the reference tables do.
 *
 * Shards (larder_sim_set_shards): the cache split by key hash into K policy
 * instances, as docs/shards.md plans for the engine. A key's shard is
 * hash & (K - 1); each shard's policy is created for 1/K of the capacity
 * (the remainder spread over the first shards, so the K capacities sum to
 * the total) and sees only its shard's inserts, hits and replacements. The
 * byte budget stays one: eviction runs while the total is over capacity,
 * and takes its victim from a shard whose share is at least the mean
 * (used_k * K >= used): the shard that just inserted when it qualifies
 * (its maintainer is the one running), else the largest (the others'
 * maintainers evict in their own passes; ties go to the lowest index).
 * A drain of the pass model is every shard's pass at once: the waiting
 * inserts go to their shards, the hits to theirs, then the largest shards
 * evict. With K = 1 every step is the unsharded simulator's.
 *
 * Invariants:
 *   SIM-S1. used == the summed sizes of the map's entries, and after every
 *       access (with LARDER_SIM_PASSES: every drain) used <= capacity (or
 *       the map is empty).
 *   SIM-S2. Every entry in the map is linked in its shard's policy, or waits
 *       in waiting[] (waiting_at != 0), and nothing else is linked.
 *   SIM-S3. Each shard's used is the summed sizes of the map's entries of
 *       that shard; the shards' used sum to used and their capacities to
 *       capacity.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "evict/policy.h"
#include "larder.h"
#include "maint/events.h"
#include "mem/slab.h"

/* One slab slot: an entry whose value is the fields after the key. */
struct sim_entry {
	struct larder__entry e;
	unsigned char key[8];
	uint64_t hash;
	uint64_t size;
	uint64_t id;
	uint64_t sampled_epoch; /* LARDER_SIM_HIT_DEDUP: drain epoch of its last sample */
	uint32_t waiting_at; /* LARDER_SIM_PASSES: 1 + its place in waiting[], 0 = linked */
	struct sim_entry *free_next;
};

#define SIM_VALUE_BYTES (sizeof(struct sim_entry) - offsetof(struct sim_entry, hash))
_Static_assert(offsetof(struct sim_entry, key) == LARDER__ENTRY_HEADER_BYTES,
	       "the key follows the header, as in the engine");

/* A writer wakes the maintainer when half its event ring is unread
 * (maint/events.h, larder__events_half_full). */
#define SIM_PASS_INSERTS (LARDER__EVENT_RING / 2)

/* The shard is chosen from the hash's low 16 bits, which the index leaves
 * to it (docs/shards.md). */
#define SIM_MAX_SHARDS 65536u

/* One shard: its own policy instance, sized for its part of the capacity. */
struct sim_shard {
	struct larder__policy *policy;
	uint64_t capacity;
	uint64_t used;
};

struct larder_sim {
	const struct larder__policy_ops *ops;
	struct sim_shard *shards;
	uint32_t n_shards; /* a power of two */
	int started;	   /* an access was made: the shards are fixed */
	uint64_t capacity;
	uint64_t used;
	uint64_t seed;
	unsigned flags;
	uint32_t sample_one_in;
	uint64_t rng;
	struct sim_entry **map; /* open addressing by hash, backward-shift deletion */
	uint64_t map_mask;
	uint64_t live;
	struct sim_entry *free_list;
	struct larder__slab slab; /* every entry ever made; freed whole by destroy */
	struct larder__slab_cursor cursor;
	uint64_t hit_events;
	/* LARDER_SIM_HIT_RING: key ids of buffered hits, newest ring_slots kept */
	uint64_t *ring;
	uint32_t ring_slots, drain_every;
	uint64_t ring_head, ring_from, since_drain;
	uint64_t epoch; /* drains so far, plus one */
	/* LARDER_SIM_PASSES: entries inserted since the last pass, in order */
	struct sim_entry *waiting[SIM_PASS_INSERTS];
	uint32_t n_waiting;
};

#define SIM_DEFAULT_SEED 0x6c61726465722d73ull /* "larder-s": runs repeat exactly */
/* The hit ring model's defaults: the engine's own ring (maint/handle.h), and
 * a drain every 1024 requests (one thread at about 5 M hits/s between two
 * maintainer passes 200 us apart). */
#define SIM_DEFAULT_RING_SLOTS LARDER__HIT_RING
#define SIM_DEFAULT_DRAIN 1024u

static struct sim_entry *of_entry(const struct larder__entry *e)
{
	return (struct sim_entry *)(uintptr_t)e;
}

static struct sim_shard *shard_of(const struct larder_sim *s, const struct sim_entry *se)
{
	return &s->shards[se->hash & (s->n_shards - 1)];
}

static uint64_t host_hash(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return of_entry(e)->hash;
}

static size_t host_size(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return (size_t)of_entry(e)->size;
}

static int map_init(struct larder_sim *s, uint64_t n)
{
	uint64_t slots = 64;
	while (slots < n * 2)
		slots <<= 1;
	s->map = larder__calloc(slots, sizeof *s->map);
	s->map_mask = slots - 1;
	return s->map ? 0 : -1;
}

static struct sim_entry *map_find(const struct larder_sim *s, uint64_t id, uint64_t hash)
{
	for (uint64_t i = hash & s->map_mask;; i = (i + 1) & s->map_mask) {
		struct sim_entry *se = s->map[i];
		if (!se || se->id == id)
			return se;
	}
}

static void map_store(struct sim_entry **map, uint64_t mask, struct sim_entry *se)
{
	uint64_t i = se->hash & mask;
	while (map[i])
		i = (i + 1) & mask;
	map[i] = se;
}

static int map_add(struct larder_sim *s, struct sim_entry *se)
{
	if ((s->live + 1) * 2 > s->map_mask + 1) {
		uint64_t n = (s->map_mask + 1) * 2;
		struct sim_entry **m = larder__calloc(n, sizeof *m);
		if (!m)
			return LARDER_ENOMEM;
		for (uint64_t i = 0; i <= s->map_mask; i++)
			if (s->map[i])
				map_store(m, n - 1, s->map[i]);
		free(s->map);
		s->map = m;
		s->map_mask = n - 1;
	}
	map_store(s->map, s->map_mask, se);
	s->live++;
	return LARDER_OK;
}

static void map_del(struct larder_sim *s, struct sim_entry *se)
{
	uint64_t i = se->hash & s->map_mask;
	while (s->map[i] != se)
		i = (i + 1) & s->map_mask;
	for (uint64_t j = i;;) {
		j = (j + 1) & s->map_mask;
		if (!s->map[j])
			break;
		uint64_t home = s->map[j]->hash & s->map_mask;
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			s->map[i] = s->map[j];
			i = j;
		}
	}
	s->map[i] = NULL;
	s->live--;
}

static struct sim_entry *entry_new(struct larder_sim *s, uint64_t id, uint64_t hash,
				   uint64_t size)
{
	struct sim_entry *se = s->free_list;
	if (se)
		s->free_list = se->free_next;
	else if (!(se = larder__slab_alloc(&s->slab, &s->cursor, sizeof *se)))
		return NULL;
	memset(&se->e, 0, sizeof se->e);
	se->e.next = larder__pagedir_id(se, sizeof *se); /* ENTRY-E6: in no queue yet */
	se->e.key_len = sizeof se->key;
	se->e.value_len = SIM_VALUE_BYTES;
	memcpy(se->key, &id, sizeof id);
	se->hash = hash;
	se->size = size;
	se->id = id;
	se->sampled_epoch = 0;
	se->waiting_at = 0;
	return se;
}

static void entry_free(struct larder_sim *s, struct sim_entry *se)
{
	se->free_next = s->free_list;
	s->free_list = se;
}

static void shards_free(const struct larder__policy_ops *ops, struct sim_shard *sh, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		ops->destroy(sh[k].policy);
	free(sh);
}

/* Replaces the shards by n fresh ones (nothing is linked yet); on failure
 * the old ones stay. */
static int shards_make(struct larder_sim *s, uint32_t n)
{
	struct sim_shard *sh = larder__calloc(n, sizeof *sh);
	if (!sh)
		return LARDER_ENOMEM;
	const struct larder__policy_host host = {host_hash, host_size, NULL, &s->slab.dir};
	for (uint32_t k = 0; k < n; k++) {
		sh[k].capacity = s->capacity / n + (k < s->capacity % n);
		if (s->ops->create(&sh[k].policy, &host, sh[k].capacity, sh[k].capacity) !=
		    LARDER_OK) {
			shards_free(s->ops, sh, k);
			return LARDER_ENOMEM;
		}
	}
	if (s->shards)
		shards_free(s->ops, s->shards, s->n_shards);
	s->shards = sh;
	s->n_shards = n;
	return LARDER_OK;
}

int larder_sim_create(larder_sim **out, enum larder_policy policy, uint64_t capacity,
		      unsigned flags)
{
	if (!out)
		return LARDER_EINVAL;
	*out = NULL;
	const struct larder__policy_ops *ops = larder__policy_ops_for(policy);
	if (!ops || capacity == 0 ||
	    (flags & ~(unsigned)(LARDER_SIM_SAMPLE_HITS | LARDER_SIM_HIT_RING |
				 LARDER_SIM_HIT_DEDUP | LARDER_SIM_PASSES)))
		return LARDER_EINVAL;
	struct larder_sim *s = larder__calloc(1, sizeof *s);
	if (!s)
		return LARDER_ENOMEM;
	s->ops = ops;
	s->capacity = capacity;
	s->flags = flags;
	s->seed = SIM_DEFAULT_SEED;
	s->sample_one_in = LARDER_SIM_DEFAULT_SAMPLE;
	s->rng = SIM_DEFAULT_SEED | 1;
	if ((flags & (LARDER_SIM_HIT_RING | LARDER_SIM_PASSES)) &&
	    larder_sim_set_hit_ring(s, SIM_DEFAULT_RING_SLOTS, SIM_DEFAULT_DRAIN) != LARDER_OK)
		goto fail_map;
	if (map_init(s, capacity < (1u << 20) ? capacity : (1u << 20)) != 0)
		goto fail_map;
	if (larder__slab_init(&s->slab) != 0)
		goto fail_slab;
	if (shards_make(s, 1) != LARDER_OK)
		goto fail_policy;
	*out = s;
	return LARDER_OK;
fail_policy:
	larder__slab_destroy(&s->slab);
fail_slab:
	free(s->map);
fail_map:
	free(s->ring);
	free(s);
	return LARDER_ENOMEM;
}

int larder_sim_set_shards(larder_sim *s, uint32_t shards)
{
	if (!s || s->started || shards == 0 || shards > SIM_MAX_SHARDS ||
	    (shards & (shards - 1)) || shards > s->capacity)
		return LARDER_EINVAL;
	return shards_make(s, shards);
}

int larder_sim_shard_info(const larder_sim *s, uint32_t shard, uint64_t *capacity,
			  uint64_t *used)
{
	if (!s || !capacity || !used || shard >= s->n_shards)
		return LARDER_EINVAL;
	*capacity = s->shards[shard].capacity;
	*used = s->shards[shard].used;
	return LARDER_OK;
}

int larder_sim_set_hit_sampling(larder_sim *s, uint32_t one_in, uint64_t seed)
{
	if (!s || one_in == 0)
		return LARDER_EINVAL;
	s->sample_one_in = one_in;
	s->rng = seed | 1;
	return LARDER_OK;
}

int larder_sim_set_hit_ring(larder_sim *s, uint32_t ring_slots, uint32_t drain_every)
{
	if (!s || ring_slots == 0 || ring_slots > 65536 || drain_every == 0)
		return LARDER_EINVAL;
	uint64_t *r = larder__calloc(ring_slots, sizeof *r);
	if (!r)
		return LARDER_ENOMEM;
	free(s->ring);
	s->ring = r;
	s->ring_slots = ring_slots;
	s->drain_every = drain_every;
	s->ring_head = s->ring_from = s->since_drain = 0;
	s->epoch = 1;
	return LARDER_OK;
}

/* No shard is preferred: the pass model's drain, where all shards evict. */
#define SIM_NO_SHARD UINT32_MAX

static void enforce_capacity(struct larder_sim *s, uint32_t prefer);

/*
 * The maintainer's drain: the newest ring_slots hits, to entries still
 * present. With LARDER_SIM_PASSES it is maint_pass: the waiting inserts
 * first, then the hits, then the evictions.
 */
static void drain_ring(struct larder_sim *s)
{
	for (uint32_t i = 0; i < s->n_waiting; i++) {
		struct sim_entry *se = s->waiting[i];
		se->waiting_at = 0;
		s->ops->insert(shard_of(s, se)->policy, &se->e, se->hash, se->size);
	}
	s->n_waiting = 0;
	uint64_t from = s->ring_from;
	if (s->ring_head - from > s->ring_slots)
		from = s->ring_head - s->ring_slots; /* lossy: overwritten */
	for (uint64_t i = from; i != s->ring_head; i++) {
		uint64_t id = s->ring[i % s->ring_slots];
		struct sim_entry *se =
			map_find(s, id, larder__hash(s->seed, &id, sizeof id));
		if (se) {
			s->hit_events++;
			s->ops->hit(shard_of(s, se)->policy, &se->e);
		}
	}
	s->ring_from = s->ring_head;
	s->since_drain = 0;
	s->epoch++;
	if (s->flags & LARDER_SIM_PASSES)
		enforce_capacity(s, SIM_NO_SHARD);
}

const char *larder_sim_policy_name(const larder_sim *s)
{
	return s ? s->ops->name : NULL;
}

uint64_t larder_sim_hit_events(const larder_sim *s)
{
	return s ? s->hit_events : 0;
}

static int sample_hit(struct larder_sim *s)
{
	if (!(s->flags & LARDER_SIM_SAMPLE_HITS) || s->sample_one_in == 1)
		return 1;
	/* xorshift64*: a private, deterministic stream (no shared RNG). */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return ((s->rng * 0x2545F4914F6CDD1Dull) >> 32) % s->sample_one_in == 0;
}

/* The shard that evicts next (the share rule in the header comment): prefer
 * when its share is at least the mean, else the largest. */
static struct sim_shard *victim_shard(const struct larder_sim *s, uint32_t prefer)
{
	if (prefer != SIM_NO_SHARD && s->shards[prefer].used * s->n_shards >= s->used)
		return &s->shards[prefer];
	struct sim_shard *big = &s->shards[0];
	for (uint32_t k = 1; k < s->n_shards; k++)
		if (s->shards[k].used > big->used)
			big = &s->shards[k];
	return big;
}

static void enforce_capacity(struct larder_sim *s, uint32_t prefer)
{
	while (s->used > s->capacity) {
		struct sim_shard *sh = victim_shard(s, prefer);
		struct larder__entry *e = s->ops->evict(sh->policy, NULL);
		if (!e)
			break; /* POLICY-P2: nothing linked; cannot happen while its used > 0 */
		struct sim_entry *v = of_entry(e);
		sh->used -= v->size;
		s->used -= v->size;
		map_del(s, v);
		entry_free(s, v);
	}
}

static int on_hit(struct larder_sim *s, struct sim_entry *se, uint64_t id, uint64_t hash,
		  uint64_t size)
{
	if (se->size == size) {
		larder__entry_mark_accessed(&se->e);
		if ((s->flags & LARDER_SIM_HIT_RING) || se->waiting_at) {
			if (!(s->flags & LARDER_SIM_HIT_DEDUP) || se->sampled_epoch != s->epoch) {
				se->sampled_epoch = s->epoch;
				s->ring[s->ring_head++ % s->ring_slots] = id;
			}
		} else if (sample_hit(s)) {
			s->hit_events++;
			s->ops->hit(shard_of(s, se)->policy, &se->e);
		}
		return 1;
	}
	/* A new size is a put of a new value: replace, as the engine would. */
	struct sim_shard *sh = shard_of(s, se); /* the same key: the same shard */
	struct sim_entry *ne = entry_new(s, id, hash, size);
	if (!ne)
		return LARDER_ENOMEM;
	map_del(s, se);
	if (map_add(s, ne) != LARDER_OK) {
		entry_free(s, ne);
		map_store(s->map, s->map_mask, se); /* the slot just freed is there */
		s->live++;
		return LARDER_ENOMEM;
	}
	if (se->waiting_at) { /* its insert is still waiting: the new value's instead */
		ne->waiting_at = se->waiting_at;
		s->waiting[se->waiting_at - 1] = ne;
	} else {
		s->ops->replace(sh->policy, &se->e, &ne->e, se->size, size);
	}
	s->used = s->used - se->size + size;
	sh->used = sh->used - se->size + size;
	entry_free(s, se);
	if (!(s->flags & LARDER_SIM_PASSES))
		enforce_capacity(s, (uint32_t)(sh - s->shards));
	return 1;
}

int larder_sim_access(larder_sim *s, uint64_t key_id, uint64_t size)
{
	if (!s)
		return LARDER_EINVAL;
	s->started = 1;
	if (size == 0)
		size = 1;
	if ((s->flags & (LARDER_SIM_HIT_RING | LARDER_SIM_PASSES)) &&
	    ++s->since_drain >= s->drain_every)
		drain_ring(s);
	uint64_t hash = larder__hash(s->seed, &key_id, sizeof key_id);
	struct sim_entry *se = map_find(s, key_id, hash);
	if (se)
		return on_hit(s, se, key_id, hash, size);
	se = entry_new(s, key_id, hash, size);
	if (!se)
		return LARDER_ENOMEM;
	if (map_add(s, se) != LARDER_OK) {
		entry_free(s, se);
		return LARDER_ENOMEM;
	}
	struct sim_shard *sh = shard_of(s, se);
	s->used += size;
	sh->used += size;
	if (s->flags & LARDER_SIM_PASSES) {
		s->waiting[s->n_waiting++] = se;
		se->waiting_at = s->n_waiting;
		if (s->n_waiting == SIM_PASS_INSERTS)
			drain_ring(s); /* the writer's ring is half full: it wakes the maintainer */
		return 0;
	}
	s->ops->insert(sh->policy, &se->e, hash, size);
	enforce_capacity(s, (uint32_t)(sh - s->shards));
	return 0;
}

void larder_sim_destroy(larder_sim *s)
{
	if (!s)
		return;
	shards_free(s->ops, s->shards, s->n_shards);
	free(s->map);
	larder__slab_destroy(&s->slab);
	free(s->ring);
	free(s);
}
