/*
 * test_shards.c - the simulator split into shards (larder_sim_set_shards),
 * through the public API only:
 *   - bad shard counts, and a count set after the first access, are refused
 *     and change nothing;
 *   - one shard is the unsharded simulator exactly: the same verdict on
 *     every access and the same hit events, for every policy and every
 *     delivery model (strict, sampled, hit ring, passes);
 *   - with K > 1 the shards' capacities sum to the total, each within one
 *     unit of total / K;
 *   - the capacity stays one budget (SIM-S1, SIM-S3 in src/sim/sim.c): after
 *     every access of the strict model the shards' used sum to at most the
 *     capacity (the pass model: at most the capacity plus the inserts one
 *     pass can leave waiting), and a shard holding large values does not
 *     starve the others: every shard keeps entries.
 */
#include <stdint.h>
#include <stdio.h>

#include "larder.h"
#include "sim_check.h"

static const enum larder_policy policies[] = {
	LARDER_POLICY_LRU,	LARDER_POLICY_FIFO,	LARDER_POLICY_S3FIFO,
	LARDER_POLICY_S3FIFO_TUNED, LARDER_POLICY_WTINYLFU, LARDER_POLICY_WTINYLFU_TUNED,
	LARDER_POLICY_ARC,	LARDER_POLICY_DEFAULT};
#define N_POLICIES (sizeof policies / sizeof policies[0])

static const unsigned modes[] = {0, LARDER_SIM_SAMPLE_HITS, LARDER_SIM_HIT_RING,
				 LARDER_SIM_HIT_RING | LARDER_SIM_HIT_DEDUP, LARDER_SIM_PASSES,
				 LARDER_SIM_PASSES | LARDER_SIM_HIT_RING};
#define N_MODES (sizeof modes / sizeof modes[0])

/* The most a pass can leave waiting beyond capacity: 256 inserts (half a
 * writer's event ring, larder.h LARDER_SIM_PASSES) of the largest size. */
#define MAX_SIZE 8u
#define PASS_SLACK (256u * MAX_SIZE)

/* A skewed request: a few hot keys, a long tail; the size of a key changes
 * now and then, so replacements are exercised too. */
static void request(uint64_t i, uint64_t *key, uint64_t *size)
{
	uint64_t r = rnd();
	*key = (r & 3) ? (r >> 8) % 300 : (r >> 8) % 20000;
	*size = 1 + (*key * 7 + (i >> 13)) % MAX_SIZE;
}

static uint64_t used_sum(const larder_sim *s, uint32_t shards, uint64_t *cap_sum,
			 uint32_t *empty)
{
	uint64_t used = 0, cap = 0;
	*empty = 0;
	for (uint32_t k = 0; k < shards; k++) {
		uint64_t c, u;
		if (larder_sim_shard_info(s, k, &c, &u) != LARDER_OK)
			return UINT64_MAX;
		used += u;
		cap += c;
		*empty += (u == 0);
	}
	*cap_sum = cap;
	return used;
}

static void test_bad_counts(void)
{
	larder_sim *s;
	CHECK(larder_sim_create(&s, LARDER_POLICY_DEFAULT, 8, 0) == LARDER_OK, "create");
	static const uint32_t bad[] = {0, 3, 6, 12, 65537, 131072, 16 /* > capacity 8 */};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(larder_sim_set_shards(s, bad[i]) == LARDER_EINVAL, "shards %u accepted",
		      bad[i]);
	CHECK(larder_sim_set_shards(NULL, 2) == LARDER_EINVAL, "NULL sim accepted");
	uint64_t c, u;
	CHECK(larder_sim_shard_info(s, 0, &c, &u) == LARDER_OK && c == 8 && u == 0,
	      "a refused count changed the single shard");
	CHECK(larder_sim_shard_info(s, 1, &c, &u) == LARDER_EINVAL, "shard 1 of 1 answered");
	CHECK(larder_sim_shard_info(s, 0, NULL, &u) == LARDER_EINVAL, "NULL capacity accepted");
	CHECK(larder_sim_set_shards(s, 8) == LARDER_OK, "8 shards of 8 refused");
	CHECK(larder_sim_shard_info(s, 7, &c, &u) == LARDER_OK && c == 1, "shard 7 of 8");
	CHECK(larder_sim_access(s, 1, 1) == 0, "first access");
	CHECK(larder_sim_set_shards(s, 2) == LARDER_EINVAL, "shards changed after an access");
	CHECK(larder_sim_shard_info(s, 7, &c, &u) == LARDER_OK, "the 8 shards stay");
	larder_sim_destroy(s);
}

static void test_one_shard_is_unsharded(void)
{
	for (size_t p = 0; p < N_POLICIES; p++) {
		for (size_t m = 0; m < N_MODES; m++) {
			larder_sim *a, *b;
			CHECK(larder_sim_create(&a, policies[p], 3000, modes[m]) == LARDER_OK &&
				      larder_sim_create(&b, policies[p], 3000, modes[m]) == LARDER_OK,
			      "create");
			CHECK(larder_sim_set_shards(b, 1) == LARDER_OK, "one shard refused");
			rng_state = 0x5eed0001;
			for (uint64_t i = 0; i < 200000; i++) {
				uint64_t key, size;
				request(i, &key, &size);
				int ra = larder_sim_access(a, key, size);
				int rb = larder_sim_access(b, key, size);
				CHECK(ra >= 0 && ra == rb,
				      "%s mode %u: access %llu differs (%d unsharded, %d one shard)",
				      larder_sim_policy_name(a), modes[m], (unsigned long long)i, ra,
				      rb);
			}
			CHECK(larder_sim_hit_events(a) == larder_sim_hit_events(b),
			      "%s mode %u: hit events differ", larder_sim_policy_name(a), modes[m]);
			larder_sim_destroy(a);
			larder_sim_destroy(b);
		}
	}
}

static void test_capacities_sum(void)
{
	static const uint64_t caps[] = {16, 1000, 1001, 65535, (1u << 20) + 7};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		for (uint32_t k = 2; k <= 16; k *= 2) {
			larder_sim *s;
			CHECK(larder_sim_create(&s, LARDER_POLICY_S3FIFO, caps[i], 0) == LARDER_OK,
			      "create");
			CHECK(larder_sim_set_shards(s, k) == LARDER_OK, "%u shards refused", k);
			uint64_t sum = 0;
			for (uint32_t j = 0; j < k; j++) {
				uint64_t c, u;
				CHECK(larder_sim_shard_info(s, j, &c, &u) == LARDER_OK, "info");
				CHECK(c == caps[i] / k || c == caps[i] / k + 1,
				      "shard %u of %u: capacity %llu of %llu", j, k,
				      (unsigned long long)c, (unsigned long long)caps[i]);
				sum += c;
			}
			CHECK(sum == caps[i], "%u shards: capacities sum to %llu, not %llu", k,
			      (unsigned long long)sum, (unsigned long long)caps[i]);
			larder_sim_destroy(s);
		}
	}
}

static void test_one_budget(void)
{
	const uint64_t cap = 5000;
	for (size_t p = 0; p < N_POLICIES; p++) {
		for (uint32_t k = 2; k <= 16; k *= 4) {
			for (int passes = 0; passes <= 1; passes++) {
				larder_sim *s;
				CHECK(larder_sim_create(&s, policies[p], cap,
							passes ? LARDER_SIM_PASSES : 0) == LARDER_OK,
				      "create");
				CHECK(larder_sim_set_shards(s, k) == LARDER_OK, "set_shards");
				rng_state = 0x5eed0002 + k;
				uint64_t csum, used = 0;
				uint32_t empty = 0;
				for (uint64_t i = 0; i < 100000; i++) {
					uint64_t key, size;
					request(i, &key, &size);
					CHECK(larder_sim_access(s, key, size) >= 0, "access");
					used = used_sum(s, k, &csum, &empty);
					CHECK(used <= cap + (passes ? PASS_SLACK : 0),
					      "%s, %u shards, passes %d: %llu used of %llu after %llu",
					      larder_sim_policy_name(s), k, passes,
					      (unsigned long long)used, (unsigned long long)cap,
					      (unsigned long long)i);
				}
				CHECK(csum == cap, "capacities sum to %llu", (unsigned long long)csum);
				CHECK(used > cap / 2 && empty == 0,
				      "%s, %u shards: %llu used, %u shards empty",
				      larder_sim_policy_name(s), k, (unsigned long long)used, empty);
				larder_sim_destroy(s);
			}
		}
	}
}

/* The shard a key lands in: the one whose used grows when it is accessed. */
static int shard_of_key(larder_sim *probe, uint32_t shards, uint64_t key)
{
	uint64_t before[16], c, u;
	for (uint32_t k = 0; k < shards; k++)
		if (larder_sim_shard_info(probe, k, &c, &before[k]) != LARDER_OK)
			return -1;
	if (larder_sim_access(probe, key, 1) != 0)
		return -1;
	for (uint32_t k = 0; k < shards; k++)
		if (larder_sim_shard_info(probe, k, &c, &u) == LARDER_OK && u != before[k])
			return (int)k;
	return -1;
}

static void test_skewed_shard(void)
{
	enum { SHARDS = 4, BIG = 64, KEYS = 4000 };
	const uint64_t cap = 3000;
	larder_sim *probe;
	CHECK(larder_sim_create(&probe, LARDER_POLICY_LRU, 1u << 20, 0) == LARDER_OK, "probe");
	CHECK(larder_sim_set_shards(probe, SHARDS) == LARDER_OK, "probe shards");
	static int home[KEYS];
	for (uint64_t key = 0; key < KEYS; key++) {
		home[key] = shard_of_key(probe, SHARDS, key);
		CHECK(home[key] >= 0, "key %llu found no shard", (unsigned long long)key);
	}
	larder_sim_destroy(probe);
	for (size_t p = 0; p < N_POLICIES; p++) {
		larder_sim *s;
		CHECK(larder_sim_create(&s, policies[p], cap, 0) == LARDER_OK, "create");
		CHECK(larder_sim_set_shards(s, SHARDS) == LARDER_OK, "set_shards");
		rng_state = 0x5eed0003;
		uint64_t csum, used = 0;
		uint32_t empty = 0;
		for (uint64_t i = 0; i < 60000; i++) {
			uint64_t key = rnd() % KEYS;
			CHECK(larder_sim_access(s, key, home[key] == 0 ? BIG : 1) >= 0, "access");
			used = used_sum(s, SHARDS, &csum, &empty);
			CHECK(used <= cap, "%s: %llu used of %llu", larder_sim_policy_name(s),
			      (unsigned long long)used, (unsigned long long)cap);
		}
		CHECK(empty == 0, "%s: %u shards starved by the one with large values",
		      larder_sim_policy_name(s), empty);
		larder_sim_destroy(s);
	}
}

int main(void)
{
	test_bad_counts();
	test_one_shard_is_unsharded();
	test_capacities_sum();
	test_one_budget();
	test_skewed_shard();
	return sim_check_result();
}
