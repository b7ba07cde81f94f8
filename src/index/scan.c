/*
 * index/scan.c - every entry of a range of home keys, without a lock.
 *
 * A range [lo, hi) of home keys is the buckets home(lo) .. home(hi - 1) of a
 * table (index/scan.h), plus the buckets its entries overflowed into: the
 * scan goes on past home(hi - 1) while the bucket it just read counts
 * entries whose probe path runs beyond it (the overflow count in ctl, which
 * an insert raises on its whole path before it publishes, R-SLOT, and an
 * erase lowers only after it empties the slot), wrapping at the end as
 * probes do. Entries homed outside the range that sit in these buckets are
 * skipped by their home key.
 *
 * SCAN-S1. An entry present throughout the scan is reported, because:
 *   SCAN-S1a. In a table that is not being resized, its slot never changes (TABLE-X2)
 *        and lies on the scanned run: the overflow counts of its path stay
 *        raised while it is there.
 *   SCAN-S1b. During a resize the maintainer copies an entry into t->next
 *        before it turns the old slot into a marker (TABLE-X3 in index/table.c),
 *        and t->next is set (R-NEXT) before the first copy. The scan reads
 *        t completely before it loads t->next (A-NEXT, acquire): if it met
 *        the marker, the copy was published before the marker it read, so
 *        the later scan of t->next (same range, that table's buckets) finds
 *        it; if it met the entry in t, it is reported from there (and maybe
 *        once more from t->next: the caller removes duplicates).
 *   SCAN-S1c. A table that stopped being the root during the scan (a growth
 *        finished, or a clear swapped it) is still readable: the caller's
 *        read section keeps it mapped (its retirement waits for a grace
 *        period), and the entries of a cleared table were removed, so none
 *        of them is "present throughout".
 */
#include "index/scan.h"

/* Entries sit in slab order, buckets in hash order: each entry's key is a
 * cache miss. Starting the next bucket's while this one's are hashed keeps
 * several in flight. */
static void prefetch_entries(const struct larder__bucket *b)
{
	for (unsigned s = 0; s < LARDER__BUCKET_SLOTS; s++) {
		/* Relaxed: only a prefetch hint; the scan loads the slot properly. */
		uint64_t w = atomic_load_explicit(&b->slot[s], LARDER__RELAXED);
		if ((w & LARDER__SLOT_PTR_MASK) > LARDER__SLOT_MARKER)
			__builtin_prefetch((const char *)larder__slot_entry(w) + LARDER__ENTRY_HEADER_BYTES);
	}
}

static int scan_one(struct larder__table *t, uint64_t lo, uint64_t hi, larder__entry_hash_fn *hash,
		    void *hash_ctx, larder__scan_fn *fn, void *ctx)
{
	const uint64_t n = t->last + 1;
	const uint64_t first = (lo * n) >> 32, last = ((hi - 1) * n) >> 32;
	const uint64_t run = last - first + 1;
	uint64_t i = first;
	prefetch_entries(&t->buckets[i]);
	for (uint64_t scanned = 0; scanned < n; scanned++) {
		struct larder__bucket *b = &t->buckets[i];
		prefetch_entries(&t->buckets[larder__table_after(t, i)]);
		/* A-CTL: the overflow count; its increments precede R-SLOT. */
		uint64_t ctl = atomic_load_explicit(&b->ctl, LARDER__ACQUIRE);
		for (unsigned s = 0; s < LARDER__BUCKET_SLOTS; s++) {
			/* A-SLOT: pairs with R-SLOT; the entry's fields are visible. */
			uint64_t w = atomic_load_explicit(&b->slot[s], LARDER__ACQUIRE);
			if ((w & LARDER__SLOT_PTR_MASK) <= LARDER__SLOT_MARKER)
				continue; /* empty, or moved on (SCAN-S1b) */
			struct larder__entry *e = larder__slot_entry(w);
			uint64_t h = hash(hash_ctx, e);
			uint64_t k = larder__home_key(h);
			if (k < lo || k >= hi)
				continue;
			int rc = fn(ctx, e, h);
			if (rc)
				return rc;
		}
		if (scanned + 1 >= run && (ctl >> 32) == 0)
			break;
		i = larder__table_after(t, i);
	}
	return 0;
}

int larder__table_scan_homes_rcu(struct larder__table *t, uint64_t lo, uint64_t hi,
				 larder__entry_hash_fn *hash, void *hash_ctx, larder__scan_fn *fn,
				 void *ctx)
{
	for (; t; t = larder__table_next(t)) { /* SCAN-S1b: next loaded after t is read */
		int rc = scan_one(t, lo, hi, hash, hash_ctx, fn, ctx);
		if (rc)
			return rc;
	}
	return 0;
}
