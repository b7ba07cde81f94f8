/*
 * tests/model/model_gen.c - configurations and operation sequences drawn
 * from a seed (design: model.h).
 *
 * The mix leans on what finds bugs: few keys (24), so operations meet each
 * other's entries; TTLs near the clock's steps, and clock moves that land
 * exactly on a key's deadline or one ms before; values around the entry
 * limit of a tiny cache, a quarter of them compressible (for the caches
 * that compress); a bad argument in about one call in twelve, often two at
 * once (error precedence); a sync point every few dozen operations.
 */
#include <stdlib.h>

#include "model.h"

static const enum larder_policy policies[] = {
	LARDER_POLICY_DEFAULT,  LARDER_POLICY_S3FIFO,	       LARDER_POLICY_FIFO,
	LARDER_POLICY_LRU,	LARDER_POLICY_WTINYLFU,	       LARDER_POLICY_ARC,
	LARDER_POLICY_WTINYLFU_TUNED, LARDER_POLICY_S3FIFO_TUNED,
};

const char *mk_policy_name(enum larder_policy p)
{
	static const char *const names[] = { "DEFAULT", "S3FIFO", "FIFO", "LRU", "WTINYLFU",
					     "ARC", "WTINYLFU_TUNED", "S3FIFO_TUNED" };
	return (unsigned)p < TH_COUNT(names) ? names[p] : "?";
}

const char *mk_kind_name(unsigned kind)
{
	static const char *const names[MOP_KINDS] = {
		"put",	 "put_if_absent",  "replace",	   "replace_if_equals", "remove",
		"remove_if_equals", "touch", "get",	   "get_with",	       "get_batch",
		"contains", "ttl_remaining", "clear",	   "set_capacity",     "stats",
		"clock", "sync",	 "peek", "iter", "snapshot", "flush", "access",
	};
	return kind < MOP_KINDS ? names[kind] : "?";
}

void mk_config(struct mcfg *cfg, uint64_t seed)
{
	struct th_rng r = { seed };
	static const uint64_t ttls[] = { 0, 0, 0, 7, 50, 100, 1000, 3600000, UINT64_MAX - 2 };
	static const size_t keys[] = { 250, 250, 250, 8, 16, 40, 300 };
	static const size_t values[] = { 1u << 20, 1u << 20, 4096, 600, 64, 0 };

	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = seed;
	cfg->tiny = th_rng_below(&r, 2) == 0;
	cfg->capacity = cfg->tiny ? (64u << 10) << th_rng_below(&r, 3) : (uint64_t)64 << 20;
	cfg->policy = policies[th_rng_below(&r, TH_COUNT(policies))];
	cfg->expiry = th_rng_below(&r, 2) ? LARDER_EXPIRE_AFTER_ACCESS : LARDER_EXPIRE_AFTER_WRITE;
	cfg->default_ttl = ttls[th_rng_below(&r, TH_COUNT(ttls))];
	cfg->max_key = keys[th_rng_below(&r, TH_COUNT(keys))];
	cfg->max_value = values[th_rng_below(&r, TH_COUNT(values))];
	cfg->write_wait_ms = th_rng_below(&r, 3) == 0 ? 0 : 60000;
	static const uint64_t expected[] = { 0, 16, 4096, 100000 };
	cfg->expected_entries = expected[th_rng_below(&r, TH_COUNT(expected))];
	cfg->backwards = th_rng_below(&r, 6) == 0;
	/* Drawn last, so that every earlier field keeps its value for a seed. */
	static const size_t compress_mins[] = { 0, 0, 0, 0, 1, 16, 100 };
	static const unsigned savings[] = { 0, 10, 50 };
	static const enum larder_dictionary dictionaries[] = {
		LARDER_DICTIONARY_NONE, LARDER_DICTIONARY_TRAIN, LARDER_DICTIONARY_GIVEN
	};
	cfg->compress_min = compress_mins[th_rng_below(&r, TH_COUNT(compress_mins))];
	cfg->compress_saving = savings[th_rng_below(&r, TH_COUNT(savings))];
	cfg->dictionary = dictionaries[th_rng_below(&r, TH_COUNT(dictionaries))];
	/* 16 shards: a shard's policy has 1/16 of the capacity, less than the
	 * entry limit (1/8), so one entry can be over its shard's share. */
	static const unsigned shards[] = { 1, 1, 2, 4, 16 };
	cfg->shards = shards[th_rng_below(&r, TH_COUNT(shards))];
	/* Pooled with one shard only: pools required it until pool27, and the
	 * model's seeds keep their configurations. */
	cfg->pooled = cfg->shards == 1 && th_rng_below(&r, 3) == 0;
}

const unsigned char *mk_key(size_t max_key, unsigned i, int long_key, size_t *len)
{
	/* Lengths that cross the fast path's 8..16 bytes and the limits. */
	static const size_t lens[MK_KEYS] = { 1, 2, 3, 5, 7, 8, 8, 9, 12, 15, 16, 16,
					      17, 20, 24, 31, 32, 40, 64, 100, 8, 16, 250, 300 };
	static unsigned char buf[MK_KEY_MAX + 2];
	size_t n = long_key ? max_key + 1 : lens[i % MK_KEYS];
	if (!long_key && n > max_key)
		n = max_key - (i % (max_key < 4 ? max_key : 4)); /* distinct short keys */
	/* the first byte tells the keys apart, the rest is a pattern */
	for (size_t j = 0; j < n && j < sizeof(buf); j++)
		buf[j] = (unsigned char)(j == 0 ? 'A' + i : (i * 31u + j * 7u) & 0xff);
	*len = n;
	return buf;
}

/* A value length: mostly short, some near a tiny cache's entry limit, some
 * at or over max_value. */
static uint32_t pick_vlen(struct th_rng *r, const struct mcfg *cfg)
{
	uint64_t lim = cfg->max_value, x = th_rng_below(r, 100);
	if (x < 50)
		x = th_rng_below(r, 33);
	else if (x < 80)
		x = th_rng_below(r, 400);
	else if (x < 92)
		x = cfg->capacity / 8 - th_rng_below(r, 80); /* around the entry limit */
	else
		x = lim - th_rng_below(r, 3); /* at the limit (wraps, then clamps, for 0) */
	if (x > lim)
		x = lim;
	return (uint32_t)(x > (1u << 20) ? (1u << 20) : x);
}

static uint64_t pick_ttl(struct th_rng *r)
{
	switch (th_rng_below(r, 10)) {
	case 0:
	case 1:
		return LARDER_TTL_DEFAULT;
	case 2:
		return LARDER_TTL_NEVER;
	case 3:
		return UINT64_MAX - 1 - th_rng_below(r, 2); /* saturates */
	case 4:
		return 1000 + th_rng_below(r, 100000);
	default:
		return 1 + th_rng_below(r, 60);
	}
}

static uint16_t pick_faults(struct th_rng *r, unsigned kind)
{
	static const uint16_t any[] = { MF_NULL_CACHE, MF_NULL_KEY, MF_EMPTY_KEY, MF_LONG_KEY };
	uint16_t f = 0;
	if (th_rng_below(r, 12) != 0)
		return 0;
	for (int n = 1 + (int)th_rng_below(r, 2); n > 0; n--) {
		switch (th_rng_below(r, 3)) {
		case 0:
			f |= any[th_rng_below(r, TH_COUNT(any))];
			break;
		case 1:
			if (kind <= MOP_REPLACE_IF_EQUALS)
				f |= th_rng_below(r, 2) ? MF_NULL_VALUE : MF_LONG_VALUE;
			else if (kind == MOP_GET || kind == MOP_PEEK)
				f |= th_rng_below(r, 2) ? MF_NULL_OUT : MF_NULL_BUF;
			else if (kind == MOP_GET_WITH || kind == MOP_TTL_REMAINING || kind == MOP_ITER ||
				 kind == MOP_SNAPSHOT)
				f |= MF_NULL_OUT;
			else if (kind == MOP_GET_BATCH)
				f |= th_rng_below(r, 2) ? MF_NULL_OUT : MF_NULL_ARRAY;
			break;
		default:
			if (kind == MOP_REPLACE_IF_EQUALS || kind == MOP_REMOVE_IF_EQUALS)
				f |= MF_NULL_EXPECT;
			break;
		}
	}
	if (kind == MOP_GET_BATCH) /* only the cache, the arrays and fn are checked */
		f &= MF_NULL_CACHE | MF_NULL_OUT | MF_NULL_ARRAY;
	if (kind == MOP_ITER || kind == MOP_SNAPSHOT) /* only the cache and fn or path */
		f &= MF_NULL_CACHE | MF_NULL_OUT;
	if (kind == MOP_ACCESS) /* the cache and the key only */
		f &= MF_NULL_CACHE | MF_NULL_KEY | MF_EMPTY_KEY | MF_LONG_KEY;
	if (kind == MOP_FLUSH)
		f &= MF_NULL_CACHE;
	return f;
}

void mk_ops(const struct mcfg *cfg, uint64_t seed, struct mop *ops, size_t n)
{
	struct th_rng r = { seed ^ 0x6d6f64656cull };
	uint64_t now = MK_T0, deadline_guess[MK_KEYS] = { 0 };
	/* weights per kind, out of 1000 */
	static const struct {
		unsigned kind, weight;
	} mix[] = {
		{ MOP_PUT, 140 },	   { MOP_PUT_IF_ABSENT, 40 }, { MOP_REPLACE, 40 },
		{ MOP_REPLACE_IF_EQUALS, 50 }, { MOP_REMOVE, 40 },	{ MOP_REMOVE_IF_EQUALS, 30 },
		{ MOP_TOUCH, 60 },	   { MOP_GET, 90 },	      { MOP_GET_WITH, 60 },
		{ MOP_GET_BATCH, 50 },	   { MOP_CONTAINS, 50 },      { MOP_TTL_REMAINING, 60 },
		{ MOP_CLEAR, 6 },	   { MOP_SET_CAPACITY, 12 },  { MOP_STATS, 10 },
		{ MOP_CLOCK, 187 },	   { MOP_SYNC, 22 },	      { MOP_PEEK, 20 },
		{ MOP_ITER, 10 },	   { MOP_SNAPSHOT, 3 },	      { MOP_FLUSH, 10 },
		{ MOP_ACCESS, 10 },
	};
	for (size_t i = 0; i < n; i++) {
		struct mop *o = &ops[i];
		unsigned x = (unsigned)th_rng_below(&r, 1000), k = 0;
		memset(o, 0, sizeof(*o));
		while (x >= mix[k].weight) {
			x -= mix[k].weight;
			k++;
		}
		o->kind = (uint8_t)mix[k].kind;
		o->key = (uint8_t)th_rng_below(&r, MK_KEYS);
		o->faults = pick_faults(&r, o->kind);
		o->vlen = pick_vlen(&r, cfg);
		o->vseed = (uint32_t)th_rng_next(&r);
		o->ex_current = th_rng_below(&r, 3) != 0;
		o->exlen = th_rng_below(&r, 8) == 0 ? (uint32_t)cfg->max_value + 1
						     : (uint32_t)th_rng_below(&r, 5);
		o->exseed = (uint32_t)th_rng_next(&r);
		o->ttl = pick_ttl(&r);
		switch (o->kind) {
		case MOP_GET:
		case MOP_PEEK:
			/* buffer: exact, too small, none, roomy */
			o->arg = th_rng_below(&r, 4) == 0 ? th_rng_below(&r, 40) : (1u << 20) + 64;
			break;
		case MOP_GET_BATCH:
			o->nbatch = (uint8_t)th_rng_below(&r, MK_BATCH + 1);
			for (unsigned j = 0; j < o->nbatch; j++)
				o->batch[j] = th_rng_below(&r, 10) == 0
						      ? (uint8_t)(MB_NULL + th_rng_below(&r, 3))
						      : (uint8_t)th_rng_below(&r, MK_KEYS);
			break;
		case MOP_SET_CAPACITY:
			if (th_rng_below(&r, 10) == 0)
				o->arg = th_rng_below(&r, 2) ? 65535 : ((uint64_t)1 << 62);
			else if (cfg->tiny)
				o->arg = (64u << 10) + th_rng_below(&r, 512u << 10);
			else
				o->arg = th_rng_below(&r, 8) == 0 ? (128u << 10)
								  : (16u << 20) + th_rng_below(&r, 96u << 20);
			break;
		case MOP_CLOCK: {
			uint64_t d = deadline_guess[o->key];
			unsigned how = (unsigned)th_rng_below(&r, 10);
			if (how < 3 && d > now)
				now = d - th_rng_below(&r, 2); /* onto a deadline, or 1 ms before */
			else if (how == 3)
				now += 1000 + th_rng_below(&r, 100000);
			else if (how == 4 && cfg->backwards)
				now -= th_rng_below(&r, 60);
			else
				now += th_rng_below(&r, 12);
			o->arg = now;
			break;
		}
		default:
			break;
		}
		if (o->kind <= MOP_REPLACE_IF_EQUALS || o->kind == MOP_TOUCH) {
			uint64_t ttl = o->ttl == LARDER_TTL_DEFAULT ? cfg->default_ttl : o->ttl;
			if (ttl && ttl < 1000000)
				deadline_guess[o->key] = now + ttl;
		}
	}
}
