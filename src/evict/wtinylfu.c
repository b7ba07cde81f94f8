/*
 * evict/wtinylfu.c - W-TinyLFU (Einziger, Eytan, Friedman, Manes, "Adaptive
 * Software Cache Management", Middleware 2018; TinyLFU, ACM ToS 2017), shaped
 * after Caffeine's BoundedLocalCache.
 *
 * Queues (all LRU, in the entries' links; sizes in charged bytes):
 *   window     new entries land here (initially 1% of capacity);
 *   probation  main's 20%: entries admitted from the window, or demoted;
 *   protected  main's 80%: entries hit while in probation.
 * Admission: an entry leaving the window enters probation as a candidate;
 * while the cache is over capacity, the oldest candidate and probation's LRU
 * (the victim) are compared by their frequency in the count-min sketch
 * (evict/sketch.c, keyed by the cache's seeded hash) and the lower one is
 * evicted; a tie evicts the candidate. Hash-flooding guard (Caffeine): a
 * candidate whose estimate is at least 6 but not above the victim's is still
 * admitted with probability 1/128, so an attacker who raises a victim's count
 * cannot pin it forever.
 *
 * Window size: hill climbing as in Caffeine (HillClimberType SIMPLE). Every
 * sample of 10 x (capacity in entries) events the hit rate of the sample is
 * compared with the previous one; the window moves by a step (6.25% of
 * capacity at first, then decaying by 0.98 each sample; restarting at 6.25%
 * when the hit rate moves by 5 points or more) in the direction that
 * improved it. Hits seen here are the sampled hit events, so the rate is a
 * scaled estimate; the climber compares rates, and the scale cancels.
 * The climber resizes lazily: the targets change at once and entries flow
 * between queues as later events arrive (at most W_RESIZE_MOVES per event).
 *
 * Tuned window (LARDER__WINDOW_TUNED, larder__policy_wtinylfu_tuned): instead
 * of the climber, evict/tuner.c simulates seven window sizes on a sample of
 * the keys and the window follows the winner; such a switch moves entries
 * between window and main at once (resize_window), since a lazily grown
 * window would fill with keys admitted without the frequency filter.
 *
 * Accessed bit (policy.h POLICY-P5): hit() takes it, so a set bit is a hit whose
 * sample is late or lost. An entry leaving the window takes its bit into the
 * sketch (one increment: the frequency its judgement reads), not into its
 * place (the hit came before the inserts that now push it out, so moving it
 * back to the window's newest end would overstate its recency) and marks
 * itself W_FOLDED, so that the late sample, when it comes with no new bit
 * set, is not counted again (the tuner still sees it: it never saw the fold;
 * an entry that changes queues before its sample comes loses the flag, and
 * that sample counts: one access over).
 * Folding also at the judgement (the victim's or the candidate's bit as a
 * move to protected, or the protected tail's as a touch) was measured and
 * dropped: up to 6.4 points worse in the worst cell with late samples
 * (docs/policies.md, "Lossy hit events"). With every hit delivered at once
 * no bit is set when an entry leaves the window: nothing changes.
 *
 * Invariants:
 *   WTLFU-W1. Every linked entry is in exactly one queue, named by its QUEUE bits;
 *       bytes add up per queue.
 *   WTLFU-W2. cand is NULL or in probation; the candidates are cand and every
 *       probation entry newer than it: entries that left the window and
 *       await their judgement, never entries demoted from protected.
 *   WTLFU-W3. Every call is O(1) amortised: the sketch's halving and growth are
 *       spread over increments (evict/sketch.c SKETCH-K4); the climber's resizing moves at most
 *       W_RESIZE_MOVES entries per event; a tuned switch moves up to the
 *       window's size once per tuner decision (one per 16 x mini-cache entries
 *       sampled events, each standing for S events of the cache).
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "evict/list.h"
#include "evict/policy.h"
#include "evict/sketch.h"
#include "evict/tuner.h"
#include "evict/wtinylfu.h"

#ifndef W_CLIMB
#define W_CLIMB 1
#endif
#ifndef W_FIRST_STEP_SIGN
#define W_FIRST_STEP_SIGN 1
#endif
#ifndef W_WINDOW_PERMILLE
#define W_WINDOW_PERMILLE 10
#endif

enum {
	W_WINDOW = 0,
	W_PROBATION = 1,
	W_PROTECTED = 2,
	W_QUEUE_MASK = 3,
	W_FOLDED = 4, /* its bit reached the sketch before its hit sample came */
};

#define W_PROTECTED_PERCENT 80
#define W_ADMIT_HASHDOS_THRESHOLD 6
#define W_STEP_PERMILLE 62.5
#define W_STEP_DECAY 0.98
#define W_RESTART_THRESHOLD 0.05
#define W_RESIZE_MOVES 4

struct larder__policy {
	struct larder__policy_host host;
	struct larder__queue q[3];
	struct larder__sketch sketch;
	uint64_t sketch_entries;
	uint64_t capacity;
	uint64_t window_max, protected_max;
	struct larder__entry *cand;
	uint64_t rng;
	/* hill climber */
	uint64_t hits, misses, sample;
	double prev_rate, step;
	enum larder__window_control control;
	struct larder__tuner *tuner; /* LARDER__WINDOW_TUNED only */
	unsigned tuned_permille;
};

static uint64_t bytes_of(struct larder__policy *p, const struct larder__entry *e)
{
	return p->host.size(p->host.ctx, e);
}

static unsigned queue_id(const struct larder__entry *e)
{
	return larder__pbits(e) & W_QUEUE_MASK;
}

static uint64_t total_entries(const struct larder__policy *p)
{
	return p->q[0].count + p->q[1].count + p->q[2].count;
}

static uint64_t total_bytes(const struct larder__policy *p)
{
	return p->q[0].bytes + p->q[1].bytes + p->q[2].bytes;
}

static void set_window(struct larder__policy *p, uint64_t window_max)
{
	if (window_max < 1)
		window_max = 1;
	if (window_max > p->capacity - p->capacity / 100)
		window_max = p->capacity - p->capacity / 100;
	p->window_max = window_max;
	p->protected_max = (p->capacity - window_max) * W_PROTECTED_PERCENT / 100;
}

static void set_capacity(struct larder__policy *p, uint64_t capacity, unsigned window_permille)
{
	p->capacity = capacity ? capacity : 1;
	set_window(p, p->capacity * window_permille / 1000);
	p->step = W_FIRST_STEP_SIGN * (double)p->capacity * W_STEP_PERMILLE / 1000.0;
}

int larder__wtinylfu_create(struct larder__policy **out, const struct larder__policy_host *host,
			    uint64_t capacity_bytes, uint64_t expected_entries,
			    unsigned window_permille, enum larder__window_control control)
{
	struct larder__policy *p = larder__calloc(1, sizeof *p);
	if (!p)
		return LARDER_ENOMEM;
	p->host = *host;
	for (int i = 0; i < 3; i++)
		larder__queue_init(&p->q[i], host->dir);
	p->sketch_entries = expected_entries ? expected_entries : 64;
	if (larder__sketch_init(&p->sketch, p->sketch_entries) != 0) {
		free(p);
		return LARDER_ENOMEM;
	}
	set_capacity(p, capacity_bytes, window_permille);
	p->rng = 0x9E3779B97F4A7C15ull ^ capacity_bytes;
	p->sample = p->sketch.sample_size;
	p->control = control;
	p->tuned_permille = window_permille;
	if (control == LARDER__WINDOW_TUNED &&
	    larder__tuner_create(&p->tuner, &larder__tuner_windows, capacity_bytes,
				 p->sketch_entries) != 0)
		p->control = LARDER__WINDOW_CLIMB; /* no memory for the tuner: still adaptive */
	*out = p;
	return LARDER_OK;
}

static int w_create(struct larder__policy **out, const struct larder__policy_host *host,
		    uint64_t capacity_bytes, uint64_t expected_entries)
{
	return larder__wtinylfu_create(out, host, capacity_bytes, expected_entries,
				       W_WINDOW_PERMILLE,
				       W_CLIMB ? LARDER__WINDOW_CLIMB : LARDER__WINDOW_FIXED);
}

static int tuned_create(struct larder__policy **out, const struct larder__policy_host *host,
			uint64_t capacity_bytes, uint64_t expected_entries)
{
	return larder__wtinylfu_create(out, host, capacity_bytes, expected_entries,
				       W_WINDOW_PERMILLE, LARDER__WINDOW_TUNED);
}

static void w_destroy(struct larder__policy *p)
{
	if (p->tuner)
		larder__tuner_destroy(p->tuner);
	larder__sketch_destroy(&p->sketch);
	free(p);
}

static void unlink_entry(struct larder__policy *p, struct larder__entry *e, uint64_t bytes)
{
	if (e == p->cand) /* WTLFU-W2: the next newer probation entry, or NULL */
		p->cand = larder__queue_newer(&p->q[W_PROBATION], e);
	larder__queue_unlink(&p->q[queue_id(e)], e, bytes);
}

static void push(struct larder__policy *p, unsigned qid, struct larder__entry *e,
		 uint64_t bytes)
{
	larder__set_pbits(e, qid);
	larder__queue_push(&p->q[qid], e, bytes);
}

/* Moves e (linked) to the newest end of queue qid. */
static void move(struct larder__policy *p, unsigned qid, struct larder__entry *e, uint64_t bytes)
{
	unlink_entry(p, e, bytes);
	push(p, qid, e, bytes);
}

/*
 * Moves e from protected to probation's newest end, but older than the
 * candidates when some wait (WTLFU-W2): a demoted entry is no candidate. As the
 * newest probation entry it would be judged against the victim as if it were
 * leaving the window, which happens when the judgement waits (the engine's
 * pass applies its inserts, then the hit samples that demote, then evicts;
 * the climber's lazy resizing leaves candidates waiting too): with the
 * candidates kept apart, W-TinyLFU's mean gap to Belady went from 0.0851 to
 * 0.0773 with every hit delivered (docs/policies.md).
 */
static void demote(struct larder__policy *p, struct larder__entry *e, uint64_t bytes)
{
	if (!p->cand) {
		move(p, W_PROBATION, e, bytes);
		return;
	}
	unlink_entry(p, e, bytes);
	larder__set_pbits(e, W_PROBATION);
	larder__queue_push_before(&p->q[W_PROBATION], e, p->cand, bytes);
}

/* Moves up to `moves` entries out of over-full window and protected queues. */
static void rebalance(struct larder__policy *p, int moves)
{
	struct larder__entry *e;
	for (; moves > 0 && p->q[W_WINDOW].bytes > p->window_max &&
	       (e = larder__queue_oldest(&p->q[W_WINDOW])) != NULL;
	     moves--) {
		uint64_t b = bytes_of(p, e);
		int folded = larder__entry_take_accessed(e);
		if (folded)
			larder__sketch_increment(&p->sketch, p->host.hash(p->host.ctx, e));
		move(p, W_PROBATION, e, b);
		if (folded)
			larder__set_pbits(e, W_PROBATION | W_FOLDED);
		if (!p->cand)
			p->cand = e;
	}
	for (; moves > 0 && p->q[W_PROTECTED].bytes > p->protected_max &&
	       (e = larder__queue_oldest(&p->q[W_PROTECTED])) != NULL;
	     moves--) {
		demote(p, e, bytes_of(p, e));
	}
}

/*
 * Moves the window to window_max at once, as Caffeine's increaseWindow /
 * decreaseWindow do: growing takes main's LRU entries into the window,
 * shrinking hands the window's LRU entries to probation. The cache's
 * content does not change, only the queues; without this, a grown window
 * would fill with new keys admitted without the frequency filter.
 * O(entries moved) once per decision; decisions come once per sample of
 * >= 2 x capacity-in-entries events, so O(1) amortised (WTLFU-W3).
 */
static void resize_window(struct larder__policy *p, uint64_t window_max)
{
	set_window(p, window_max);
	struct larder__queue *q = p->q;
	struct larder__entry *e;
	while (q[W_WINDOW].bytes < p->window_max &&
	       ((e = larder__queue_oldest(&q[W_PROBATION])) != NULL ||
		(e = larder__queue_oldest(&q[W_PROTECTED])) != NULL)) {
		uint64_t b = bytes_of(p, e);
		if (q[W_WINDOW].bytes + b > p->window_max)
			break;
		move(p, W_WINDOW, e, b);
	}
	while (q[W_WINDOW].bytes > p->window_max &&
	       (e = larder__queue_oldest(&q[W_WINDOW])) != NULL) {
		uint64_t b = bytes_of(p, e);
		move(p, W_PROBATION, e, b);
	}
	while (p->q[W_PROTECTED].bytes > p->protected_max &&
	       (e = larder__queue_oldest(&p->q[W_PROTECTED])) != NULL)
		demote(p, e, bytes_of(p, e));
}

/* The tuned window: follow the tuner's current winner. */
static void follow_tuner(struct larder__policy *p, uint64_t hash, uint64_t bytes)
{
	larder__tuner_access(p->tuner, hash, bytes);
	unsigned w = larder__tuner_choice(p->tuner);
	if (w != p->tuned_permille) {
		p->tuned_permille = w;
		resize_window(p, p->capacity * w / 1000);
	}
}

static void climb(struct larder__policy *p)
{
	if (p->control != LARDER__WINDOW_CLIMB || p->hits + p->misses < p->sample)
		return;
	double rate = (double)p->hits / (double)(p->hits + p->misses);
	double change = rate - p->prev_rate;
	double amount = change >= 0 ? p->step : -p->step;
	double restart = (double)p->capacity * W_STEP_PERMILLE / 1000.0;
	p->step = (change >= W_RESTART_THRESHOLD || change <= -W_RESTART_THRESHOLD)
			  ? (amount >= 0 ? restart : -restart)
			  : W_STEP_DECAY * amount;
	p->prev_rate = rate;
	p->hits = p->misses = 0;
	double w = (double)p->window_max + amount;
	/* Lazy (targets only): measured 0.15 points better on the reference
	 * cells than moving entries at once, for these small steps. */
	set_window(p, w < 1 ? 1 : (uint64_t)w);
}

/* Grows the sketch when the cache holds more entries than it was sized for. */
static void fit_sketch(struct larder__policy *p)
{
	uint64_t n = total_entries(p);
	if (n <= p->sketch_entries)
		return;
	if (larder__sketch_resize(&p->sketch, n * 2) == 0) {
		p->sketch_entries = n * 2;
		p->sample = p->sketch.sample_size;
	}
}

static void w_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
		     size_t bytes)
{
	larder__sketch_increment(&p->sketch, hash);
	p->misses++;
	push(p, W_WINDOW, e, bytes);
	rebalance(p, W_RESIZE_MOVES);
	/* With room to spare nothing will be evicted: the moved entries are in. */
	if (total_bytes(p) <= p->capacity)
		p->cand = NULL;
	fit_sketch(p);
	climb(p);
	if (p->tuner)
		follow_tuner(p, hash, bytes);
}

static void w_replace(struct larder__policy *p, struct larder__entry *old,
		      struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	larder__init_pbits(e, larder__pbits(old));
	larder__queue_swap(&p->q[queue_id(old)], old, e, old_bytes, bytes);
	if (p->cand == old)
		p->cand = e;
	rebalance(p, W_RESIZE_MOVES);
}

static void w_hit(struct larder__policy *p, struct larder__entry *e)
{
	uint64_t hash = p->host.hash(p->host.ctx, e);
	if (p->tuner)
		follow_tuner(p, hash, bytes_of(p, e));
	int marked = larder__entry_take_accessed(e);
	if (larder__pbits(e) & W_FOLDED) {
		larder__set_pbits(e, queue_id(e));
		if (!marked)
			return; /* rebalance() already counted this sample's hit */
	}
	larder__sketch_increment(&p->sketch, hash);
	p->hits++;
	unsigned qid = queue_id(e);
	if (qid != W_PROBATION) {
		larder__queue_touch(&p->q[qid], e);
	} else {
		uint64_t b = bytes_of(p, e);
		move(p, W_PROTECTED, e, b);
		rebalance(p, W_RESIZE_MOVES);
	}
	climb(p);
}

static void w_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	unlink_entry(p, e, bytes);
}

static int admit(struct larder__policy *p, struct larder__entry *cand,
		 struct larder__entry *victim)
{
	unsigned cf = larder__sketch_estimate(&p->sketch, p->host.hash(p->host.ctx, cand));
	unsigned vf = larder__sketch_estimate(&p->sketch, p->host.hash(p->host.ctx, victim));
	if (cf > vf)
		return 1;
	if (cf < W_ADMIT_HASHDOS_THRESHOLD)
		return 0;
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return (p->rng & 127) == 0;
}

static struct larder__entry *take(struct larder__policy *p, struct larder__entry *e,
				  uint64_t *hash)
{
	unlink_entry(p, e, bytes_of(p, e));
	larder__policy_victim_hash(&p->host, e, hash);
	return e;
}

static struct larder__entry *w_evict(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *victim = larder__queue_oldest(&p->q[W_PROBATION]);
	struct larder__entry *cand = p->cand;
	if (cand && victim && cand != victim) {
		if (!admit(p, cand, victim))
			return take(p, cand, hash); /* advances cand (WTLFU-W2) */
		/* admitted: the next candidate is judged next */
		p->cand = larder__queue_newer(&p->q[W_PROBATION], cand);
		return take(p, victim, hash);
	}
	if (cand) /* the only probation entries are candidates: the oldest goes */
		return take(p, cand, hash);
	if (victim)
		return take(p, victim, hash);
	if ((victim = larder__queue_oldest(&p->q[W_PROTECTED])) != NULL)
		return take(p, victim, hash);
	if ((victim = larder__queue_oldest(&p->q[W_WINDOW])) != NULL)
		return take(p, victim, hash);
	return NULL;
}

static void w_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	double frac = (double)p->window_max / (double)p->capacity;
	p->capacity = capacity_bytes ? capacity_bytes : 1;
	set_window(p, (uint64_t)(frac * (double)p->capacity));
	p->step = (double)p->capacity * W_STEP_PERMILLE / 1000.0;
	if (p->tuner)
		larder__tuner_set_capacity(p->tuner, p->capacity);
}

static int64_t w_check(struct larder__policy *p)
{
	int64_t n = 0;
	for (int i = 0; i < 3; i++) {
		int64_t k = larder__queue_check(&p->q[i], p->host.size, p->host.ctx);
		if (k < 0)
			return -1;
		n += k;
	}
	return n;
}

const struct larder__policy_ops larder__policy_wtinylfu = {
	.name = "wtinylfu",
	.hits_keep_awake = 1,
	.create = w_create,
	.destroy = w_destroy,
	.insert = w_insert,
	.replace = w_replace,
	.hit = w_hit,
	.remove = w_remove,
	.evict = w_evict,
	.set_capacity = w_set_capacity,
	.check = w_check,
};

/* W-TinyLFU whose window the tuner picks by mini-simulations (not the default). */
const struct larder__policy_ops larder__policy_wtinylfu_tuned = {
	.name = "wtinylfu-tuned",
	.hits_keep_awake = 1,
	.create = tuned_create,
	.destroy = w_destroy,
	.insert = w_insert,
	.replace = w_replace,
	.hit = w_hit,
	.remove = w_remove,
	.evict = w_evict,
	.set_capacity = w_set_capacity,
	.check = w_check,
};
