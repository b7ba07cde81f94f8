/*
 * tests/stress/stress_iter.c - cursors racing with writers and removers.
 *
 * Keys come in three sets:
 *   stable  written once before any cursor opens, never touched again;
 *   dead    written, then removed before any cursor opens, never again;
 *   churn   put (with and without a short TTL), replaced and removed at
 *           random by the writer threads for the whole run, so the index
 *           grows and shrinks under the cursors.
 * Iterator threads open cursors over and over and walk them to the end,
 * checking (larder.h "Iteration", core/iter.c ITER-I1..I3) on every walk:
 *   - each stable key is handed out exactly once, with its value, no TTL;
 *   - no key is handed out twice;
 *   - no dead key is handed out;
 *   - every value handed out belongs to its key (the value names the key id),
 *     and a churn key's TTL is within what its writer gave it.
 * Arguments: --writers N --iterators N --duration-ms N --seed N.
 * Run under ThreadSanitizer and ASan (presets tsan, asan-ubsan).
 */
#include <stdlib.h>

#include "harness.h"

#define STABLE 20000u
#define DEAD 5000u
#define CHURN 40000u
#define MAX_TTL_MS 50u

static larder *cache;
static _Atomic int stop;
static _Atomic uint64_t walks;
static uint64_t seed;

static size_t key_of(char *buf, uint64_t id)
{
	return (size_t)snprintf(buf, 32, "key-%07llu", (unsigned long long)id);
}

/* The value names the key and a generation; its length varies with gen. */
static size_t value_of(char *buf, uint64_t id, uint64_t gen)
{
	int n = snprintf(buf, 256, "v%07llu:%llu:", (unsigned long long)id, (unsigned long long)gen);
	size_t pad = gen % 120;
	memset(buf + n, 'x', pad);
	return (size_t)n + pad;
}

static uint64_t id_of(const void *key, size_t key_len)
{
	char k[32];
	if (key_len != 11 || memcmp(key, "key-", 4) != 0)
		return UINT64_MAX;
	memcpy(k, key, key_len);
	k[key_len] = 0;
	return strtoull(k + 4, NULL, 10);
}

struct walk {
	uint8_t *seen;
	uint64_t dup, dead, bad_value, bad_ttl, stable_bad, foreign;
};

static void on_entry(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	(void)entry_bytes;
	uint64_t id = id_of(key, key_len);
	if (id >= STABLE + DEAD + CHURN) {
		w->foreign++;
		return;
	}
	if (w->seen[id]++)
		w->dup++;
	if (id >= STABLE && id < STABLE + DEAD)
		w->dead++;
	char want[16];
	snprintf(want, sizeof(want), "v%07llu:", (unsigned long long)id);
	if (value_len < 9 || memcmp(value, want, 9) != 0)
		w->bad_value++;
	if (id < STABLE) {
		char v[256];
		size_t vl = value_of(v, id, 0);
		if (value_len != vl || memcmp(value, v, vl) != 0 || ttl_ms != LARDER_TTL_NEVER)
			w->stable_bad++;
	} else if (ttl_ms != LARDER_TTL_NEVER && (ttl_ms == 0 || ttl_ms > MAX_TTL_MS)) {
		w->bad_ttl++;
	}
}

static void *iterator(void *arg)
{
	(void)arg;
	struct walk w;
	w.seen = malloc(STABLE + DEAD + CHURN);
	if (!CHECK(w.seen != NULL))
		return NULL;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memset(w.seen, 0, STABLE + DEAD + CHURN);
		w.dup = w.dead = w.bad_value = w.bad_ttl = w.stable_bad = w.foreign = 0;
		larder_iter *it;
		if (!CHECK_RC(larder_iter_open(cache, &it), LARDER_OK))
			break;
		int rc;
		while ((rc = larder_iter_next(it, on_entry, &w)) == LARDER_OK)
			;
		larder_iter_close(it);
		CHECK_RC(rc, LARDER_MISS);
		uint64_t missing = 0;
		for (uint64_t i = 0; i < STABLE; i++)
			missing += w.seen[i] != 1;
		CHECK_EQ(missing, 0);
		CHECK_EQ(w.dup, 0);
		CHECK_EQ(w.dead, 0);
		CHECK_EQ(w.bad_value, 0);
		CHECK_EQ(w.bad_ttl, 0);
		CHECK_EQ(w.stable_bad, 0);
		CHECK_EQ(w.foreign, 0);
		atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
		if (th_failures())
			break;
	}
	free(w.seen);
	return NULL;
}

static void *writer(void *arg)
{
	struct th_rng r = { seed ^ th_mix64((uint64_t)(uintptr_t)arg) };
	char k[32], v[256];
	uint64_t gen = 1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t id = STABLE + DEAD + th_rng_below(&r, CHURN);
		size_t kl = key_of(k, id);
		uint64_t op = th_rng_below(&r, 10);
		if (op < 3) {
			int rc = larder_remove(cache, k, kl);
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		} else {
			size_t vl = value_of(v, id, gen++);
			uint64_t ttl = op < 5 ? 1 + th_rng_below(&r, MAX_TTL_MS) : LARDER_TTL_NEVER;
			CHECK_RC(larder_put(cache, k, kl, v, vl, ttl), LARDER_OK);
		}
	}
	return NULL;
}

static int failed(void *ctx)
{
	(void)ctx;
	return th_failures() != 0;
}

static int walked_or_failed(void *ctx)
{
	(void)ctx;
	return atomic_load_explicit(&walks, memory_order_relaxed) > 0 || th_failures() != 0;
}

/* Ends the run after its duration, or at the first failure; not before one
 * walk has ended beside the writers, however late a loaded machine started
 * the iterators (60 s more at most; then CHECK_GT(walks, 0) fails). */
static void *timer(void *arg)
{
	(void)th_poll_for(failed, NULL, (uint64_t)(uintptr_t)arg);
	(void)th_wait_until(walked_or_failed, NULL, 60000);
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	return NULL;
}

struct role {
	void *(*fn)(void *);
	void *arg;
};

static void *run_role(void *arg)
{
	const struct role *r = arg;
	return r->fn(r->arg);
}

static void test_iter_stress(int argc, char **argv)
{
	uint64_t writers = th_arg_u64(argc, argv, "--writers", 2);
	uint64_t iterators = th_arg_u64(argc, argv, "--iterators", 2);
	uint64_t duration = th_arg_u64(argc, argv, "--duration-ms", TH_TSAN ? 2000 : 4000);
	seed = th_arg_seed(argc, argv);
	larder_config *cfg = th_config(256u << 20);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_expected_entries(cfg, 1000) == LARDER_OK);
	cache = th_open(cfg);
	REQUIRE(cache != NULL);
	char k[32], v[256];
	for (uint64_t id = 0; id < STABLE + DEAD; id++) {
		size_t kl = key_of(k, id), vl = value_of(v, id, 0);
		REQUIRE(larder_put(cache, k, kl, v, vl, LARDER_TTL_NEVER) == LARDER_OK);
	}
	for (uint64_t id = STABLE; id < STABLE + DEAD; id++)
		REQUIRE(larder_remove(cache, k, key_of(k, id)) == LARDER_OK);
	size_t n = (size_t)(writers + iterators + 1);
	struct role *roles = calloc(n, sizeof(*roles));
	REQUIRE(roles != NULL);
	for (size_t i = 0; i < n; i++) {
		if (i < writers)
			roles[i] = (struct role){ writer, (void *)(uintptr_t)(i + 1) };
		else if (i < writers + iterators)
			roles[i] = (struct role){ iterator, NULL };
		else
			roles[i] = (struct role){ timer, (void *)(uintptr_t)duration };
	}
	th_run_threads(n, run_role, roles, sizeof(*roles));
	free(roles);
	printf("walks %llu, index resizes %llu, shrinks %llu\n",
	       (unsigned long long)atomic_load(&walks),
	       (unsigned long long)th_stat(cache, LARDER_STAT_INDEX_RESIZES),
	       (unsigned long long)th_stat(cache, LARDER_STAT_INDEX_SHRINKS));
	CHECK_GT(atomic_load(&walks), 0);
	larder_close(cache);
}

int main(int argc, char **argv)
{
	test_iter_stress(argc, argv);
	long f = th_failures();
	printf("%s\n", f ? "FAIL" : "PASS");
	return f ? 1 : 0;
}
