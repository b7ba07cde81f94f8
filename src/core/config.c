/*
 * core/config.c - the opaque configuration object and its setters.
 *
 * No struct layout reaches the ABI: bindings call setters, and a field added
 * later gets a setter and a default without breaking anyone.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "evict/policy.h"
#include "pool/pool.h"


uint64_t larder__clock_default(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int larder_config_create(larder_config **out)
{
	if (!out)
		return LARDER_EINVAL;
	larder_config *c = larder__calloc(1, sizeof(*c));
	*out = c;
	if (!c)
		return LARDER_ENOMEM;
	c->capacity = 64u << 20;
	c->expected_entries = 4096;
	c->shards = 1;
	c->max_key_bytes = 250;
	c->max_value_bytes = 1u << 20;
	c->default_ttl_ms = LARDER_TTL_NEVER;
	c->policy = LARDER_POLICY_DEFAULT;
	c->clock = larder__clock_default;
	c->write_wait_ms = 1000;
	c->pool_max_share = 1.0;
	c->miss_cost = 1.0;
	return LARDER_OK;
}

void larder_config_destroy(larder_config *config)
{
	if (config) {
		larder__pool_unref(config->pool);
		free(config->dict);
	}
	free(config);
}

int larder_config_set_capacity(larder_config *config, uint64_t bytes)
{
	if (!config || bytes < LARDER__CAPACITY_MIN || bytes > (UINT64_MAX >> 2))
		return LARDER_EINVAL;
	config->capacity = bytes;
	config->capacity_set = 1;
	return LARDER_OK;
}

int larder_config_set_expected_entries(larder_config *config, uint64_t entries)
{
	if (!config || entries > ((uint64_t)1 << 40))
		return LARDER_EINVAL;
	config->expected_entries = entries;
	return LARDER_OK;
}

int larder_config_set_shards(larder_config *config, unsigned shards)
{
	if (!config || shards == 0 || shards > LARDER_SHARDS_MAX || (shards & (shards - 1)))
		return LARDER_EINVAL;
	config->shards = shards;
	return LARDER_OK;
}

int larder_config_set_max_key_bytes(larder_config *config, size_t bytes)
{
	if (!config || bytes == 0 || bytes > LARDER_KEY_LIMIT)
		return LARDER_EINVAL;
	config->max_key_bytes = bytes;
	return LARDER_OK;
}

int larder_config_set_max_value_bytes(larder_config *config, size_t bytes)
{
	if (!config || bytes > LARDER_VALUE_LIMIT)
		return LARDER_EINVAL;
	config->max_value_bytes = bytes;
	return LARDER_OK;
}

int larder_config_set_default_ttl_ms(larder_config *config, uint64_t ttl_ms)
{
	if (!config)
		return LARDER_EINVAL;
	config->default_ttl_ms = ttl_ms == 0 ? LARDER_TTL_NEVER : ttl_ms;
	return LARDER_OK;
}

int larder_config_set_policy(larder_config *config, enum larder_policy policy)
{
	if (!config || !larder__policy_ops_for(policy))
		return LARDER_EINVAL;
	config->policy = policy;
	return LARDER_OK;
}

int larder_config_set_clock(larder_config *config, larder_clock_fn *fn, void *ctx)
{
	if (!config)
		return LARDER_EINVAL;
	config->clock = fn ? fn : larder__clock_default;
	config->clock_ctx = fn ? ctx : NULL;
	return LARDER_OK;
}

int larder_config_set_removal_listener(larder_config *config, larder_removal_fn *fn, void *ctx)
{
	if (!config)
		return LARDER_EINVAL;
	config->listener = fn;
	config->listener_ctx = fn ? ctx : NULL;
	return LARDER_OK;
}

int larder_config_set_hash_seed(larder_config *config, uint64_t seed)
{
	if (!config)
		return LARDER_EINVAL;
	config->seed = seed;
	config->seed_set = 1;
	return LARDER_OK;
}

int larder_config_set_write_wait_ms(larder_config *config, uint64_t ms)
{
	if (!config || ms > 3600u * 1000u)
		return LARDER_EINVAL;
	config->write_wait_ms = ms;
	return LARDER_OK;
}

int larder_config_set_expiry(larder_config *config, enum larder_expiry expiry)
{
	if (!config || (expiry != LARDER_EXPIRE_AFTER_WRITE && expiry != LARDER_EXPIRE_AFTER_ACCESS))
		return LARDER_EINVAL;
	config->expiry = expiry;
	return LARDER_OK;
}

int larder_config_set_pool(larder_config *config, larder_pool *pool)
{
	if (!config)
		return LARDER_EINVAL;
	if (pool)
		larder__pool_ref(pool);
	larder__pool_unref(config->pool);
	config->pool = pool;
	return LARDER_OK;
}

int larder_config_set_pool_shares(larder_config *config, double min_share, double max_share)
{
	/* Written so that NaN fails every comparison into EINVAL. */
	if (!config || !(min_share >= 0.0 && min_share <= max_share && max_share <= 1.0 &&
			 max_share > 0.0))
		return LARDER_EINVAL;
	config->pool_min_share = min_share;
	config->pool_max_share = max_share;
	return LARDER_OK;
}

int larder_config_set_miss_cost(larder_config *config, double cost)
{
	if (!config || !(cost > 0.0 && cost <= 1e9))
		return LARDER_EINVAL;
	config->miss_cost = cost;
	return LARDER_OK;
}

int larder_config_set_compression(larder_config *config, size_t min_value_bytes,
				  unsigned min_saving_percent)
{
	if (!config || min_value_bytes > LARDER_VALUE_LIMIT || min_saving_percent > 99)
		return LARDER_EINVAL;
	config->compress_min = min_value_bytes;
	config->compress_saving_pct = min_saving_percent;
	return LARDER_OK;
}

int larder_config_set_compression_dictionary(larder_config *config, enum larder_dictionary mode,
					     const void *dict, size_t dict_len)
{
	if (!config)
		return LARDER_EINVAL;
	unsigned char *copy = NULL;
	switch (mode) {
	case LARDER_DICTIONARY_TRAIN:
	case LARDER_DICTIONARY_NONE:
		if (dict || dict_len)
			return LARDER_EINVAL;
		break;
	case LARDER_DICTIONARY_GIVEN:
		if (!dict || !dict_len || dict_len > LARDER_DICTIONARY_MAX_BYTES)
			return LARDER_EINVAL;
		if (!(copy = larder__malloc(dict_len)))
			return LARDER_ENOMEM;
		memcpy(copy, dict, dict_len);
		break;
	default:
		return LARDER_EINVAL;
	}
	free(config->dict);
	config->dict_mode = mode;
	config->dict = copy;
	config->dict_len = copy ? dict_len : 0;
	return LARDER_OK;
}
