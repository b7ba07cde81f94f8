/*
 * core/stats.c - names for results, causes and counters, and the per size
 * class memory audit.
 *
 * The counters themselves live where they are written: per-thread handles
 * (maint/events.h), the maintainer (maint/maintainer.c) and the slab; they
 * are summed only when larder_stats() is called (core/cache.c), so the read
 * path never writes a shared line. The size class figures are the slab's own
 * (mem/slab.h), written under its lock or by the maintainer alone.
 */
#include "larder.h"

#include "core/cache.h"
#include "mem/sizeclass.h"
#include "mem/slab.h"

static const char *const stat_names[LARDER_STAT_COUNT] = {
	[LARDER_STAT_HITS] = "hits",
	[LARDER_STAT_MISSES] = "misses",
	[LARDER_STAT_WRITES] = "writes",
	[LARDER_STAT_ENTRIES] = "entries",
	[LARDER_STAT_USED_BYTES] = "used_bytes",
	[LARDER_STAT_CAPACITY_BYTES] = "capacity_bytes",
	[LARDER_STAT_OVERSHOOT_BOUND] = "overshoot_bound",
	[LARDER_STAT_EVICTIONS] = "evictions",
	[LARDER_STAT_EXPIRATIONS] = "expirations",
	[LARDER_STAT_REMOVALS] = "removals",
	[LARDER_STAT_REPLACEMENTS] = "replacements",
	[LARDER_STAT_CLEARED] = "cleared",
	[LARDER_STAT_WRITE_WAITS] = "write_waits",
	[LARDER_STAT_WRITE_BUSY] = "write_busy",
	[LARDER_STAT_INDEX_SLOTS] = "index_slots",
	[LARDER_STAT_INDEX_RESIZES] = "index_resizes",
	[LARDER_STAT_PAGES_MAPPED] = "pages_mapped_bytes",
	[LARDER_STAT_PAGES_RETURNED] = "pages_returned_bytes",
	[LARDER_STAT_MAINT_PASSES] = "maintainer_passes",
	[LARDER_STAT_HIT_SAMPLES] = "hit_samples",
	[LARDER_STAT_MAINT_WAITS] = "maintainer_waits",
	[LARDER_STAT_RESERVE_BYTES] = "reserve_bytes",
	[LARDER_STAT_LARGE_BYTES] = "large_bytes",
	[LARDER_STAT_RESERVE_PAGES] = "reserve_pages",
	[LARDER_STAT_RETURNING_BYTES] = "returning_bytes",
	[LARDER_STAT_INDEX_SHRINKS] = "index_shrinks",
	[LARDER_STAT_INDEX_BYTES] = "index_bytes",
	[LARDER_STAT_BUSY_MEMORY] = "busy_memory",
	[LARDER_STAT_BUSY_EVENTS] = "busy_events",
	[LARDER_STAT_BUSY_INDEX] = "busy_index",
	[LARDER_STAT_EVENTS_SPILLED] = "events_spilled",
	[LARDER_STAT_DICT_BYTES] = "dict_bytes",
	[LARDER_STAT_LIVE_BYTES] = "live_bytes",
};

static const char *const class_stat_names[LARDER_CLASS_STAT_COUNT] = {
	[LARDER_CLASS_SLOT_BYTES] = "slot_bytes",
	[LARDER_CLASS_PAGE_BYTES] = "page_bytes",
	[LARDER_CLASS_PAGES] = "pages",
	[LARDER_CLASS_SLOTS_USED] = "slots_used",
	[LARDER_CLASS_SLOTS_FREE] = "slots_free",
	[LARDER_CLASS_BYTES] = "bytes",
	[LARDER_CLASS_USED_BYTES] = "used_bytes",
};

const char *larder_stat_name(enum larder_stat stat)
{
	return (unsigned)stat < LARDER_STAT_COUNT ? stat_names[stat] : NULL;
}

const char *larder_class_stat_name(enum larder_class_stat stat)
{
	return (unsigned)stat < LARDER_CLASS_STAT_COUNT ? class_stat_names[stat] : NULL;
}

size_t larder_size_class_count(void)
{
	return LARDER__SIZECLASS_COUNT;
}

/* The slab keeps these counters itself (mem/slab.c); this only copies them. */
int larder_stats_size_class(larder *c, size_t class_index, uint64_t *values, size_t count)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT] = { 0 };
	if (!c || (!values && count) || class_index >= LARDER__SIZECLASS_COUNT)
		return LARDER_EINVAL;
	for (unsigned i = 0; i < c->shard_count; i++) /* each shard's slab */
		larder__slab_class_stats(&c->shard[i].slab, (unsigned)class_index, v);
	for (size_t i = 0; i < count; i++)
		values[i] = i < LARDER_CLASS_STAT_COUNT ? v[i] : 0;
	return LARDER_OK;
}

const char *larder_strerror(int code)
{
	switch (code) {
	case LARDER_OK:
		return "success";
	case LARDER_MISS:
		return "key not found";
	case LARDER_EXISTS:
		return "key already present";
	case LARDER_MISMATCH:
		return "current value differs from the expected one";
	case LARDER_EINVAL:
		return "invalid argument";
	case LARDER_EKEYSIZE:
		return "key too long";
	case LARDER_EVALSIZE:
		return "value too large";
	case LARDER_ENOMEM:
		return "out of memory";
	case LARDER_EBUFSIZE:
		return "buffer too small";
	case LARDER_EBUSY:
		return "cache at its memory bound; no room was freed in time";
	case LARDER_ETHREAD:
		return "could not start the maintainer thread";
	case LARDER_ESYS:
		return "system call failed";
	case LARDER_ESTATE:
		return "wrong state: the pool is closed or still has open caches, or it owns this "
		       "cache's capacity";
	case LARDER_EFORMAT:
		return "not a larder snapshot, or of an unsupported version";
	case LARDER_ECORRUPT:
		return "snapshot truncated or failing its checksum";
	}
	return "unknown result code";
}

const char *larder_cause_name(enum larder_cause cause)
{
	switch (cause) {
	case LARDER_CAUSE_EXPLICIT:
		return "explicit";
	case LARDER_CAUSE_REPLACED:
		return "replaced";
	case LARDER_CAUSE_EXPIRED:
		return "expired";
	case LARDER_CAUSE_EVICTED:
		return "evicted";
	case LARDER_CAUSE_CLEARED:
		return "cleared";
	}
	return "unknown";
}
