/*
 * evict/s3fifo.c - S3-FIFO (Yang, Zhang, Qiu, Yue, Rashmi, "FIFO queues are
 * all you need for cache eviction", SOSP 2023).
 *
 * Three FIFO queues:
 *   small  ~10% of capacity: where new keys land;
 *   main   the rest: keys that proved themselves, each with a 2-bit counter;
 *   ghost  fingerprints (evict/ghostwin.c) of keys evicted from small, bounded at
 *          90% of capacity in charged bytes, as the reference simulator does.
 * A hit only bumps the counter (saturating at 3): no queue move, which is why
 * sampled, lossy hit events (maint/events.h) hurt it little. Eviction:
 *   - from small while main is within its share: the oldest entry moves to
 *     main if it was hit S3_MOVE_HITS times in small, else it leaves and its
 *     fingerprint goes to the ghost;
 *   - from main otherwise: the oldest entry with a counter > 0 is reinserted
 *     at the new end with the counter decremented; one with 0 leaves.
 * An insert whose fingerprint is in the ghost goes straight to main, and so
 * does one made while the cache is still filling (nothing evicted yet) once
 * small is full, as the reference simulator (libCacheSim) does.
 * S3_MOVE_HITS is 1, the paper's (libCacheSim's default is 2, which is 0.06
 * points worse on the mean over the reference cells; docs/policies.md).
 *
 * Skip zone (optional, S3_SKIP_PERCENT > 0): hits on an entry still in the
 * youngest part of small are ignored, so a burst of requests right after a
 * miss (a key "seen once", in a correlated burst) leaves small without
 * earning promotion. The young part is tracked with a boundary pointer and a
 * YOUNG bit, O(1) per insert. The traces decide whether it stays on: with
 * the zone at half of small the mean gap to Belady over the 55 reference
 * cells drops from 0.0774 to 0.0757 (it helps cloudphysics, cache2k_orm-busy
 * and lirs_multi3 most; it costs a few tenths of a point on lirs_sprite and
 * adaptsize), so it is on; see docs/policies.md.
 *
 * Accessed bit (policy.h POLICY-P5). Hit events reach hit() late (a batching
 * window) or not at all (a full ring), and an entry that was hit once in
 * small may have left small before its event arrives. So each decision also
 * takes the entry's accessed bit and counts it as one access: freq is raised
 * to at least 1 (not incremented, so a hit whose event did arrive is not
 * counted twice). The bit is also taken, and dropped, when an entry leaves
 * the skip zone: hits while young are ignored, by event or by bit. In small,
 * where one access is all that counts (S3_MOVE_HITS 1), hit events are not
 * used at all: the bit says on time what a late event would say too late,
 * and a late event would count a hit made while young. With every hit
 * delivered at once this is exactly the event-driven policy; with delayed
 * or lost events, docs/policies.md measures it.
 *
 * Tuned small queue (larder__policy_s3fifo_tuned, the default policy): the
 * best share of small differs per workload and per size (on the reference
 * cells the best static share ranges from 1% to 50%; picking it per cell
 * would cut the mean gap to Belady from 0.0757 to 0.0669). evict/tuner.c runs
 * eight mini S3-FIFO caches (this code, shares 1% to 50%) on a hash sample
 * of the keys and the cache follows the winner: set_targets at once, the
 * queues lazily (eviction drains whichever queue is over its target; the
 * skip zone, half of small, shrinks in push_small). The SAMPLED bit, set at
 * insert from the hash, spares an unsampled hit the host's hash callback.
 * Mean gap to Belady over the 55 cells (docs/policies.md): 0.0710 with every
 * hit delivered, 0.0726 with the engine's hit ring (plain: 0.0757 both).
 *
 * Invariants:
 *   S3FIFO-F1. Every linked entry is in exactly one of small/main, named by its
 *       MAIN bit; each queue's bytes are its entries' charged bytes.
 *   S3FIFO-F2. young_bytes is the bytes of small's entries with the YOUNG bit, which
 *       form a suffix of small starting at young_oldest.
 *   S3FIFO-F3. evict() is O(1) amortised: each counter decrement pays for one main
 *       reinsertion (counters rise only on hits), and each entry moves from
 *       small to main at most once per insertion.
 *   S3FIFO-F4. SAMPLED is set iff the tuner exists and samples the key's hash; it
 *       survives moves between queues and replace().
 *   S3FIFO-F5. The state replace() changes (struct larder__s3fifo_queues,
 *       evict/s3fifo.h) is the policy's first member, so the maintainer
 *       swaps inline, on the same state, what replace() would
 *       (larder__s3fifo_swap; maint/apply.c).
 */
#include <stddef.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "evict/ghostwin.h"
#include "evict/list.h"
#include "evict/policy.h"
#include "evict/s3fifo.h"
#include "evict/tuner.h"

#ifndef S3_SMALL_PERCENT
#define S3_SMALL_PERCENT 10
#endif
#ifndef S3_GHOST_PERCENT
#define S3_GHOST_PERCENT 90
#endif
#ifndef S3_MOVE_HITS
#define S3_MOVE_HITS 1
#endif
#ifndef S3_WARMUP_MAIN
#define S3_WARMUP_MAIN 1
#endif
#ifndef S3_SKIP_PERCENT
#define S3_SKIP_PERCENT 50
#endif

enum {
	S3_MAIN = LARDER__S3FIFO_MAIN,
	S3_FREQ_SHIFT = 1,
	S3_FREQ_MASK = 3 << S3_FREQ_SHIFT,
	S3_YOUNG = LARDER__S3FIFO_YOUNG,
	S3_SAMPLED = 1 << 4, /* its key is in the tuner's sample */
};

struct larder__policy {
	struct larder__s3fifo_queues q; /* first: S3FIFO-F5 */
	struct larder__policy_host host;
	struct larder__ghostwin ghost;
	uint64_t capacity;
	unsigned small_permille;
	uint64_t small_target;
	uint64_t skip_bytes;
	int has_evicted; /* no eviction yet: the cache is still filling */
	struct larder__tuner *tuner; /* the tuned variant only */
	uint64_t sample_mask;        /* the tuner's S - 1, for in_sample() */
};

_Static_assert(offsetof(struct larder__policy, q) == 0, "S3FIFO-F5: the queues come first");

static unsigned freq_of(const struct larder__entry *e)
{
	return (larder__pbits(e) & S3_FREQ_MASK) >> S3_FREQ_SHIFT;
}

static void set_freq(struct larder__entry *e, unsigned f)
{
	larder__set_pbits(e, (larder__pbits(e) & ~(unsigned)S3_FREQ_MASK) | (f << S3_FREQ_SHIFT));
}

static uint64_t entry_bytes(struct larder__policy *p, const struct larder__entry *e)
{
	return p->host.size(p->host.ctx, e);
}

static void set_targets(struct larder__policy *p, uint64_t capacity)
{
	p->capacity = capacity;
	p->small_target = capacity * p->small_permille / 1000;
	if (p->small_target == 0)
		p->small_target = 1;
	p->skip_bytes = p->small_target * S3_SKIP_PERCENT / 100;
}

int larder__s3fifo_create(struct larder__policy **out, const struct larder__policy_host *host,
			  uint64_t capacity_bytes, uint64_t expected_entries,
			  unsigned small_permille)
{
	struct larder__policy *p = larder__calloc(1, sizeof *p);
	if (!p)
		return LARDER_ENOMEM;
	p->host = *host;
	p->small_permille = small_permille;
	larder__queue_init(&p->q.small, host->dir);
	larder__queue_init(&p->q.main, host->dir);
	set_targets(p, capacity_bytes);
	uint64_t bound = capacity_bytes * S3_GHOST_PERCENT / 100;
	if (larder__ghostwin_init(&p->ghost, bound ? bound : 1, expected_entries) != 0) {
		free(p);
		return LARDER_ENOMEM;
	}
	*out = p;
	return LARDER_OK;
}

static int s3_create(struct larder__policy **out, const struct larder__policy_host *host,
		     uint64_t capacity_bytes, uint64_t expected_entries)
{
	return larder__s3fifo_create(out, host, capacity_bytes, expected_entries,
				     S3_SMALL_PERCENT * 10);
}

static int tuned_create(struct larder__policy **out, const struct larder__policy_host *host,
			uint64_t capacity_bytes, uint64_t expected_entries)
{
	int rc = s3_create(out, host, capacity_bytes, expected_entries);
	/* No memory for the tuner: plain S3-FIFO. */
	if (rc == LARDER_OK && larder__tuner_create(&(*out)->tuner, &larder__tuner_small_queues,
						    capacity_bytes, expected_entries) != 0)
		(*out)->tuner = NULL;
	if (rc == LARDER_OK && (*out)->tuner)
		(*out)->sample_mask = larder__tuner_sample_every((*out)->tuner) - 1;
	return rc;
}

/* Whether the tuner samples the key (larder__tuner_in_sample). */
static int in_sample(const struct larder__policy *p, uint64_t hash)
{
	return p->tuner && larder__tuner_in_sample(p->sample_mask, hash);
}

static void s3_destroy(struct larder__policy *p)
{
	if (p->tuner)
		larder__tuner_destroy(p->tuner);
	larder__ghostwin_destroy(&p->ghost);
	free(p);
}

/* Leaves the skip zone: S3FIFO-F2 for an entry that stops being young; the hits it
 * had while young do not count, so its accessed bit is dropped. */
static void unyoung(struct larder__policy *p, struct larder__entry *e, uint64_t bytes)
{
	if (!(larder__pbits(e) & S3_YOUNG))
		return;
	larder__entry_take_accessed(e);
	if (p->q.young_oldest == e)
		p->q.young_oldest = larder__queue_newer(&p->q.small, e); /* S3FIFO-F2: in small */
	p->q.young_bytes -= bytes;
	larder__set_pbits(e, larder__pbits(e) & ~(unsigned)S3_YOUNG);
}

/* S3FIFO-F2 also after the tuner resizes small (and so the zone): entries leave the
 * zone oldest first, each once per insertion, so the loops are O(1) amortised. */
static void push_small(struct larder__policy *p, struct larder__entry *e, uint64_t bytes)
{
	if (p->skip_bytes == 0) {
		while (p->q.young_oldest)
			unyoung(p, p->q.young_oldest, entry_bytes(p, p->q.young_oldest));
		larder__queue_push(&p->q.small, e, bytes);
		return;
	}
	larder__queue_push(&p->q.small, e, bytes);
	larder__set_pbits(e, larder__pbits(e) | S3_YOUNG);
	if (!p->q.young_oldest)
		p->q.young_oldest = e;
	p->q.young_bytes += bytes;
	while (p->q.young_bytes > p->skip_bytes && p->q.young_oldest != e)
		unyoung(p, p->q.young_oldest, entry_bytes(p, p->q.young_oldest));
}

/* The tuned variant: one request of a sampled key, and the small queue's
 * share the tuner picks. A new share takes effect lazily: eviction drains
 * whichever queue is over its target (s3_evict), the skip zone follows in
 * push_small. */
static void follow_tuner(struct larder__policy *p, uint64_t hash, uint64_t bytes)
{
	larder__tuner_access(p->tuner, hash, bytes);
	unsigned share = larder__tuner_choice(p->tuner);
	if (share != p->small_permille) {
		p->small_permille = share;
		set_targets(p, p->capacity);
	}
}

static void s3_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
		      size_t bytes)
{
	unsigned sampled = in_sample(p, hash) ? S3_SAMPLED : 0;
	larder__set_pbits(e, sampled);
	p->q.fresh = e;
	p->q.fresh_bytes = bytes;
	if (larder__ghostwin_remove(&p->ghost, larder__ghostwin_fp(hash))) {
		larder__set_pbits(e, S3_MAIN | sampled);
		larder__queue_push(&p->q.main, e, bytes);
	} else if (S3_WARMUP_MAIN && !p->has_evicted && p->q.small.bytes >= p->small_target) {
		/* Filling up: small is full but the cache is not, so keep the key
		 * in main rather than push an older one out of small early. */
		larder__set_pbits(e, S3_MAIN | sampled);
		larder__queue_push(&p->q.main, e, bytes);
	} else {
		push_small(p, e, bytes);
	}
	if (sampled)
		follow_tuner(p, hash, bytes);
}

/*
 * POLICY-P6: a run for each queue, spliced at the end (or before an entry of
 * the tuner's sample, which goes through s3_insert: its follow_tuner may
 * change the targets the next entries' choices read). Each entry's queue is
 * chosen as s3_insert would, counting the small run in small's bytes; the
 * skip zone is settled once per splice: entries leave it oldest first while
 * it is over its bytes, never the newest, which leaves the same suffix
 * young as settling after each push (S3FIFO-F2).
 */
struct s3_runs {
	struct larder__run small, main;
};

static void splice_runs(struct larder__policy *p, struct s3_runs *r)
{
	larder__queue_splice(&p->q.main, &r->main);
	if (!r->small.count)
		return;
	struct larder__entry *newest = r->small.last, *first = r->small.first;
	uint64_t bytes = r->small.bytes;
	if (p->skip_bytes == 0) { /* no zone: the run has no YOUNG bits, as push_small */
		while (p->q.young_oldest) /* before the splice: the walk ends at small's tail */
			unyoung(p, p->q.young_oldest, entry_bytes(p, p->q.young_oldest));
		larder__queue_splice(&p->q.small, &r->small);
		return;
	}
	larder__queue_splice(&p->q.small, &r->small);
	if (!p->q.young_oldest)
		p->q.young_oldest = first;
	p->q.young_bytes += bytes;
	while (p->q.young_bytes > p->skip_bytes && p->q.young_oldest != newest)
		unyoung(p, p->q.young_oldest, entry_bytes(p, p->q.young_oldest));
}

static void s3_insert_batch(struct larder__policy *p, const struct larder__policy_new *in,
			    size_t n)
{
	struct s3_runs r;
	larder__run_init(&r.small);
	larder__run_init(&r.main);
	/* A batch only takes fingerprints out of the ghost: one that starts
	 * empty (a filling cache, a load) stays so, and is not asked again. */
	int ghosts = !larder__ghostwin_empty(&p->ghost);
	for (size_t i = 0; i < n; i++) {
		struct larder__entry *e = in[i].e;
		if (in_sample(p, in[i].hash)) {
			splice_runs(p, &r);
			s3_insert(p, e, in[i].hash, in[i].bytes);
			continue;
		}
		if ((ghosts && larder__ghostwin_remove(&p->ghost, larder__ghostwin_fp(in[i].hash))) ||
		    (S3_WARMUP_MAIN && !p->has_evicted &&
		     p->q.small.bytes + r.small.bytes >= p->small_target)) {
			larder__set_pbits(e, S3_MAIN);
			larder__run_push(&r.main, e, in[i].bytes);
		} else {
			larder__set_pbits(e, p->skip_bytes ? S3_YOUNG : 0);
			larder__run_push(&r.small, e, in[i].bytes);
		}
	}
	splice_runs(p, &r);
	if (n) {
		p->q.fresh = in[n - 1].e;
		p->q.fresh_bytes = in[n - 1].bytes;
	}
}

static struct larder__queue *queue_of(struct larder__policy *p, const struct larder__entry *e)
{
	return larder__s3fifo_queue_of(&p->q, larder__pbits(e));
}

void larder__s3fifo_replace(struct larder__policy *p, struct larder__entry *old,
			    struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	larder__s3fifo_swap(&p->q, old, e, old_bytes, bytes);
}

static void s3_hit(struct larder__policy *p, struct larder__entry *e)
{
	unsigned bits = larder__pbits(e);
	if (bits & S3_SAMPLED) /* only the tuned variant sets it */
		follow_tuner(p, p->host.hash(p->host.ctx, e), entry_bytes(p, e));
	/* In small one access decides, and the accessed bit tells it on time. */
	if (S3_MOVE_HITS == 1 && !(bits & S3_MAIN))
		return;
	unsigned f = freq_of(e);
	if (f < 3 && !(bits & S3_YOUNG))
		set_freq(e, f + 1);
}

static void s3_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	if (p->q.fresh == e)
		p->q.fresh = NULL;
	unyoung(p, e, bytes);
	larder__queue_unlink(queue_of(p, e), e, bytes);
}

/* e's counter with its accessed bit taken as one access (see the header). */
static unsigned freq_now(struct larder__entry *e)
{
	unsigned f = freq_of(e);
	return (larder__entry_take_accessed(e) && f == 0) ? 1 : f;
}

/* The oldest entry of small that leaves (its fingerprint to the ghost, its
 * hash to *hash), or NULL when all moved to main. */
static struct larder__entry *evict_small(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *e;
	while ((e = larder__queue_oldest(&p->q.small)) != NULL && e != p->q.fresh) {
		uint64_t bytes = entry_bytes(p, e);
		unyoung(p, e, bytes);
		larder__queue_unlink(&p->q.small, e, bytes);
		if (freq_now(e) >= S3_MOVE_HITS) {
			larder__set_pbits(e, (larder__pbits(e) & S3_SAMPLED) | S3_MAIN);
			larder__queue_push(&p->q.main, e, bytes);
			continue;
		}
		*hash = p->host.hash(p->host.ctx, e);
		larder__ghostwin_insert(&p->ghost, larder__ghostwin_fp(*hash), bytes);
		return e;
	}
	return NULL;
}

static struct larder__entry *evict_main(struct larder__policy *p)
{
	struct larder__entry *e;
	while ((e = larder__queue_oldest(&p->q.main)) != NULL) {
		unsigned f = freq_now(e);
		if (f > 0) {
			set_freq(e, f - 1);
			larder__queue_touch(&p->q.main, e);
			continue;
		}
		larder__queue_unlink(&p->q.main, e, entry_bytes(p, e));
		return e;
	}
	return NULL;
}

static struct larder__entry *s3_evict(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *e = NULL;
	uint64_t small_hash;
	uint64_t main_target = p->capacity - p->small_target;
	uint64_t main_bytes = p->q.main.bytes, small_bytes = p->q.small.bytes;
	/* Choose the queue as if the latest insert had not happened yet, as a
	 * cache that makes room before inserting would (the reference does);
	 * the engine applies an insertion before enforcing capacity. */
	if (p->q.fresh) {
		if (larder__pbits(p->q.fresh) & S3_MAIN)
			main_bytes -= p->q.fresh_bytes;
		else
			small_bytes -= p->q.fresh_bytes;
	}
	p->has_evicted = 1;
	if (main_bytes <= main_target && small_bytes > 0 &&
	    (e = evict_small(p, &small_hash)) != NULL) {
		if (hash) /* POLICY-P7: the ghost's hash */
			*hash = small_hash;
		return e; /* never the latest insert: evict_small stops before it */
	}
	e = evict_main(p);
	if (!e && p->q.fresh) { /* only the latest insert is left */
		e = p->q.fresh;
		s3_remove(p, e, p->q.fresh_bytes);
	}
	if (e == p->q.fresh)
		p->q.fresh = NULL;
	if (e)
		larder__policy_victim_hash(&p->host, e, hash);
	return e;
}

static void s3_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	set_targets(p, capacity_bytes);
	uint64_t bound = capacity_bytes * S3_GHOST_PERCENT / 100;
	larder__ghostwin_set_bound(&p->ghost, bound ? bound : 1);
	if (p->tuner)
		larder__tuner_set_capacity(p->tuner, capacity_bytes);
}

/* S3FIFO-F2: the YOUNG entries are the suffix of small from young_oldest, and
 * young_bytes their bytes (a tuner decision resizes the zone). */
static int check_young(struct larder__policy *p)
{
	uint64_t bytes = 0;
	int in_zone = 0;
	for (struct larder__entry *e = larder__queue_oldest(&p->q.small); e;
	     e = larder__queue_newer(&p->q.small, e)) {
		in_zone |= e == p->q.young_oldest;
		if (!(larder__pbits(e) & S3_YOUNG) != !in_zone)
			return -1;
		bytes += in_zone ? entry_bytes(p, e) : 0;
	}
	return bytes == p->q.young_bytes && (in_zone || !p->q.young_oldest) ? 0 : -1;
}

static int64_t s3_check(struct larder__policy *p)
{
	int64_t a = larder__queue_check(&p->q.small, p->host.size, p->host.ctx);
	int64_t b = larder__queue_check(&p->q.main, p->host.size, p->host.ctx);
	return a < 0 || b < 0 || check_young(p) != 0 ? -1 : a + b;
}

const struct larder__policy_ops larder__policy_s3fifo = {
	.name = "s3fifo",
	.hits_keep_awake = 0,
	.create = s3_create,
	.destroy = s3_destroy,
	.insert = s3_insert,
	.insert_batch = s3_insert_batch,
	.replace = larder__s3fifo_replace,
	.hit = s3_hit,
	.remove = s3_remove,
	.evict = s3_evict,
	.set_capacity = s3_set_capacity,
	.check = s3_check,
};

/* S3-FIFO whose small queue's share the tuner picks by mini-simulations. */
const struct larder__policy_ops larder__policy_s3fifo_tuned = {
	.name = "s3fifo-tuned",
	.hits_keep_awake = 0,
	.create = tuned_create,
	.destroy = s3_destroy,
	.insert = s3_insert,
	.insert_batch = s3_insert_batch,
	.replace = larder__s3fifo_replace,
	.hit = s3_hit,
	.remove = s3_remove,
	.evict = s3_evict,
	.set_capacity = s3_set_capacity,
	.check = s3_check,
};
