/*
 * registry.c - process-wide native caches of the Node.js binding.
 *
 * Every worker thread of a Node process loads the addon into its own
 * JavaScript environment, but all of them share this file's globals: a
 * cache opened by name is found here and shared, and reference counting
 * decides when it is closed. A handle (addon.c) holds one reference from
 * its open until its close(), its garbage collection or its environment's
 * teardown, whichever comes first; reads on a handle need no further
 * synchronisation because a handle is used by one JavaScript thread only,
 * and its reference keeps the cache alive whatever other workers do.
 *
 * Invariants (asserted by test/registry_stress.c):
 *   REGISTRY-R1. A cache is closed exactly once, by the release that drops its last
 *       reference, and never while a reference is held.
 *   REGISTRY-R2. A name maps to at most one open cache; after its last release a new
 *       open of the name creates a fresh cache.
 *   REGISTRY-R3. The removal listener calls a subscriber's notify only between its
 *       subscribe and unsubscribe (sub_lock orders both against the
 *       listener's walk).
 *   REGISTRY-P1. A pool is referenced by its holders and by every cache open in it
 *       until that cache's larder_close() has returned, so the last release
 *       finds no cache open in it and larder_pool_close() cannot refuse.
 *       Names of pools map as REGISTRY-R2 says for caches.
 *
 * Locks: registry_lock guards the name lists and every refs field; a cache's
 * sub_lock guards its subscriber list and is taken by its maintainer thread
 * (listener) and by JavaScript threads (subscribe, unsubscribe). Neither is
 * held while the other is taken, and larder_close() runs with no lock held,
 * so closing a cache cannot wait on a listener that waits on a lock.
 */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lnode_shared {
	char *name;                     /* NULL for a private cache; immutable */
	larder *cache;                  /* immutable once open */
	struct lnode_settings settings; /* immutable once open */
	uint32_t refs;                  /* under registry_lock */
	struct lnode_shared *next;      /* named list; under registry_lock */
	pthread_mutex_t sub_lock;
	struct lnode_sub *subs; /* under sub_lock */
};

struct lnode_pool {
	char *name;                /* NULL for a private pool; immutable */
	larder_pool *pool;         /* immutable once open */
	uint64_t budget, interval; /* immutable once open */
	uint32_t refs;             /* under registry_lock */
	struct lnode_pool *next;   /* named_pools; under registry_lock */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lnode_shared *named;      /* under registry_lock */
static size_t open_count;               /* under registry_lock */
static struct lnode_pool *named_pools;  /* under registry_lock */
static size_t pool_count;               /* under registry_lock */

/* The engine's removal listener: copies the removal to every subscriber. */
static void shared_on_removal(void *ctx, const void *key, size_t key_len, const void *value,
			      size_t value_len, enum larder_cause cause)
{
	struct lnode_shared *s = ctx;
	struct lnode_sub *sub;

	pthread_mutex_lock(&s->sub_lock);
	for (sub = s->subs; sub != NULL; sub = sub->next) {
		if (lnode_dq_push(&sub->queue, key, key_len, value, value_len, (uint8_t)cause) ==
		    LNODE_DQ_FIRST)
			sub->notify(sub->notify_ctx);
	}
	pthread_mutex_unlock(&s->sub_lock);
}

static int settings_apply(larder_config *cfg, const struct lnode_settings *s, void *ctx)
{
	int rc;

	if (s->pool != NULL) {
		if ((rc = larder_config_set_pool(cfg, s->pool->pool)) != LARDER_OK ||
		    (rc = larder_config_set_pool_shares(cfg, s->min_share, s->max_share)) !=
			    LARDER_OK ||
		    (rc = larder_config_set_miss_cost(cfg, s->miss_cost)) != LARDER_OK)
			return rc;
	} else if ((rc = larder_config_set_capacity(cfg, s->capacity_bytes)) != LARDER_OK) {
		return rc;
	}
	if ((rc = larder_config_set_expected_entries(cfg, s->expected_entries)) != LARDER_OK ||
	    (rc = larder_config_set_shards(cfg, s->shards)) != LARDER_OK ||
	    (rc = larder_config_set_default_ttl_ms(cfg, s->default_ttl_ms)) != LARDER_OK ||
	    (rc = larder_config_set_max_key_bytes(cfg, s->max_key_bytes)) != LARDER_OK ||
	    (rc = larder_config_set_max_value_bytes(cfg, s->max_value_bytes)) != LARDER_OK ||
	    (rc = larder_config_set_policy(cfg, s->policy)) != LARDER_OK ||
	    (rc = larder_config_set_expiry(cfg, s->expiry)) != LARDER_OK ||
	    (rc = larder_config_set_compression(cfg, s->compress_min, s->compress_saving)) !=
		    LARDER_OK ||
	    (rc = larder_config_set_write_wait_ms(cfg, s->write_wait_ms)) != LARDER_OK)
		return rc;
	return larder_config_set_removal_listener(cfg, shared_on_removal, ctx);
}

/* Allocates and opens a cache with one reference; not yet listed. */
static int shared_create(struct lnode_shared **out, const char *name,
			 const struct lnode_settings *want)
{
	struct lnode_shared *s = calloc(1, sizeof(*s));
	larder_config *cfg = NULL;
	int rc = LARDER_ENOMEM;

	if (s == NULL)
		goto fail_alloc;
	if (name != NULL && (s->name = strdup(name)) == NULL)
		goto fail_name;
	if (pthread_mutex_init(&s->sub_lock, NULL) != 0)
		goto fail_mutex;
	if ((rc = larder_config_create(&cfg)) != LARDER_OK)
		goto fail_config;
	if ((rc = settings_apply(cfg, want, s)) != LARDER_OK)
		goto fail_open;
	if ((rc = larder_open(&s->cache, cfg)) != LARDER_OK)
		goto fail_open;
	larder_config_destroy(cfg);
	s->settings = *want;
	s->refs = 1;
	if (want->pool != NULL)
		want->pool->refs++; /* REGISTRY-P1; the caller holds registry_lock */
	*out = s;
	return LARDER_OK;

fail_open:
	larder_config_destroy(cfg);
fail_config:
	pthread_mutex_destroy(&s->sub_lock);
fail_mutex:
	free(s->name);
fail_name:
	free(s);
fail_alloc:
	*out = NULL;
	return rc;
}

/* The first setting in given that differs, or NULL. */
static const char *settings_mismatch(const struct lnode_settings *have,
				     const struct lnode_settings *want, unsigned given)
{
	if ((given & LNODE_SET_CAPACITY) && have->capacity_bytes != want->capacity_bytes)
		return "maxSize";
	if ((given & LNODE_SET_MAX_ENTRIES) && have->max_entries != want->max_entries)
		return "max";
	if ((given & LNODE_SET_TTL) && have->default_ttl_ms != want->default_ttl_ms)
		return "ttl";
	if ((given & LNODE_SET_MAX_KEY) && have->max_key_bytes != want->max_key_bytes)
		return "maxKeyBytes";
	if ((given & LNODE_SET_MAX_VALUE) && have->max_value_bytes != want->max_value_bytes)
		return "maxValueBytes";
	if ((given & LNODE_SET_POLICY) && have->policy != want->policy)
		return "policy";
	if ((given & LNODE_SET_EXPIRY) && have->expiry != want->expiry)
		return "updateAgeOnGet";
	if ((given & LNODE_SET_COMPRESSION) && (have->compress_min != want->compress_min ||
						have->compress_saving != want->compress_saving))
		return "compression";
	if ((given & LNODE_SET_POOL) && have->pool != want->pool)
		return "pool";
	if ((given & LNODE_SET_SHARES) &&
	    (have->min_share != want->min_share || have->max_share != want->max_share))
		return "minShare/maxShare";
	if ((given & LNODE_SET_MISS_COST) && have->miss_cost != want->miss_cost)
		return "missCost";
	if ((given & LNODE_SET_SHARDS) && have->shards != want->shards)
		return "shards";
	if ((given & LNODE_SET_WRITE_WAIT) && have->write_wait_ms != want->write_wait_ms)
		return "writeWaitMs";
	return NULL;
}

int lnode_registry_open(struct lnode_shared **out, const char *name,
			const struct lnode_settings *want, unsigned given, const char **mismatch)
{
	struct lnode_shared *s;
	int rc;

	*out = NULL;
	*mismatch = NULL;
	pthread_mutex_lock(&registry_lock);
	if (name != NULL) {
		for (s = named; s != NULL; s = s->next) {
			if (strcmp(s->name, name) != 0)
				continue;
			*mismatch = settings_mismatch(&s->settings, want, given);
			if (*mismatch != NULL) {
				pthread_mutex_unlock(&registry_lock);
				return LNODE_EMISMATCH;
			}
			s->refs++;
			pthread_mutex_unlock(&registry_lock);
			*out = s;
			return LARDER_OK;
		}
	}
	/*
	 * Opening under the lock keeps REGISTRY-R2 simple (no second open of the same
	 * name can race this one); an open takes milliseconds, and only other
	 * opens and releases wait for it.
	 */
	rc = shared_create(&s, name, want);
	if (rc == LARDER_OK) {
		if (name != NULL) {
			s->next = named;
			named = s;
		}
		open_count++;
		*out = s;
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

void lnode_registry_release(struct lnode_shared *s)
{
	struct lnode_shared **link;

	pthread_mutex_lock(&registry_lock);
	if (--s->refs != 0) {
		pthread_mutex_unlock(&registry_lock);
		return;
	}
	if (s->name != NULL) {
		for (link = &named; *link != s; link = &(*link)->next)
			;
		*link = s->next;
	}
	open_count--;
	pthread_mutex_unlock(&registry_lock);
	/* Unlisted and unreferenced: nobody else can reach s now (REGISTRY-R1). */
	larder_close(s->cache);
	if (s->settings.pool != NULL)
		lnode_pool_release(s->settings.pool); /* after the close (REGISTRY-P1) */
	pthread_mutex_destroy(&s->sub_lock);
	free(s->name);
	free(s);
}

larder *lnode_shared_cache(const struct lnode_shared *s)
{
	return s->cache;
}

const struct lnode_settings *lnode_shared_settings(const struct lnode_shared *s)
{
	return &s->settings;
}

void lnode_shared_subscribe(struct lnode_shared *s, struct lnode_sub *sub)
{
	pthread_mutex_lock(&s->sub_lock);
	sub->next = s->subs;
	s->subs = sub;
	pthread_mutex_unlock(&s->sub_lock);
}

void lnode_shared_unsubscribe(struct lnode_shared *s, struct lnode_sub *sub)
{
	struct lnode_sub **link;

	pthread_mutex_lock(&s->sub_lock);
	for (link = &s->subs; *link != NULL; link = &(*link)->next) {
		if (*link == sub) {
			*link = sub->next;
			break;
		}
	}
	pthread_mutex_unlock(&s->sub_lock);
}

int lnode_pool_open(struct lnode_pool **out, const char *name, uint64_t budget,
		    uint64_t interval_ms, unsigned given, const char **mismatch)
{
	struct lnode_pool *p;
	larder_pool_config *cfg = NULL;
	int rc;

	*out = NULL;
	*mismatch = NULL;
	pthread_mutex_lock(&registry_lock);
	for (p = name != NULL ? named_pools : NULL; p != NULL; p = p->next) {
		if (strcmp(p->name, name) != 0)
			continue;
		if ((given & 1u) && p->budget != budget)
			*mismatch = "maxSize";
		else if ((given & 2u) && p->interval != interval_ms)
			*mismatch = "interval";
		else
			p->refs++;
		pthread_mutex_unlock(&registry_lock);
		if (*mismatch != NULL)
			return LNODE_EMISMATCH;
		*out = p;
		return LARDER_OK;
	}
	rc = LARDER_ENOMEM;
	p = calloc(1, sizeof(*p));
	if (p == NULL || (name != NULL && (p->name = strdup(name)) == NULL))
		goto fail;
	if ((rc = larder_pool_config_create(&cfg)) != LARDER_OK ||
	    (rc = larder_pool_config_set_budget(cfg, budget)) != LARDER_OK ||
	    (rc = larder_pool_config_set_interval_ms(cfg, interval_ms)) != LARDER_OK ||
	    (rc = larder_pool_create(&p->pool, cfg)) != LARDER_OK)
		goto fail;
	larder_pool_config_destroy(cfg);
	p->budget = budget;
	p->interval = interval_ms;
	p->refs = 1;
	if (name != NULL) {
		p->next = named_pools;
		named_pools = p;
	}
	pool_count++;
	pthread_mutex_unlock(&registry_lock);
	*out = p;
	return LARDER_OK;

fail:
	pthread_mutex_unlock(&registry_lock);
	larder_pool_config_destroy(cfg);
	if (p != NULL)
		free(p->name);
	free(p);
	return rc;
}

void lnode_pool_release(struct lnode_pool *p)
{
	struct lnode_pool **link;

	pthread_mutex_lock(&registry_lock);
	if (--p->refs != 0) {
		pthread_mutex_unlock(&registry_lock);
		return;
	}
	if (p->name != NULL) {
		for (link = &named_pools; *link != p; link = &(*link)->next)
			;
		*link = p->next;
	}
	pool_count--;
	pthread_mutex_unlock(&registry_lock);
	/* No cache is open in it (REGISTRY-P1), so the engine cannot refuse. */
	int rc = larder_pool_close(p->pool);
	if (rc != LARDER_OK) {
		fprintf(stderr, "larder: pool close refused (%d): REGISTRY-P1 broken\n", rc);
		abort();
	}
	free(p->name);
	free(p);
}

larder_pool *lnode_pool_engine(const struct lnode_pool *p)
{
	return p->pool;
}

size_t lnode_pool_open_count(void)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = pool_count;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

size_t lnode_registry_open_count(void)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = open_count;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

uint32_t lnode_registry_refs(const char *name)
{
	struct lnode_shared *s;
	uint32_t refs = 0;

	pthread_mutex_lock(&registry_lock);
	for (s = named; s != NULL; s = s->next) {
		if (strcmp(s->name, name) == 0) {
			refs = s->refs;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return refs;
}
