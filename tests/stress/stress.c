/*
 * tests/stress/stress.c - concurrency torture test of the engine.
 *
 * Usage: larder_stress [--threads N] [--ops N] [--cas N] [--cap-ops N]
 *                      [--duration-ms N] [--seed N] [phase-name...]
 *   --threads      worker threads (default 6: more than the cores of a CI box)
 *   --ops          operations per thread in the mixed phase
 *   --cas          increments per thread per counter in the CAS phase
 *   --cap-ops      writes per thread in the capacity phase
 *   --duration-ms  a cap on the whole run; a phase stops early at its share
 *   --policy       enum larder_policy for every cache (default 0: the default)
 *   --seed         the run's seed (printed; a run is reproducible per thread
 *                  schedule, which no seed controls)
 * Defaults take ~10-20 s on 2 cores, and do less work under ThreadSanitizer and
 * AddressSanitizer.
 *
 * Phases (each on its own cache, each closed at its end), with the design
 * invariants they assert (docs/architecture.md, "The engine-wide invariants";
 * larder.h):
 *   mixed     every operation over 512 keys, including clear and set_capacity.
 *             STRESS-S1. every value read is whole and belongs to its key: it
 *                 carries (key id, writer, version, length, checksum) and a payload
 *                 derived from them; a torn, foreign, stale-freed or poisoned
 *                 (0xdb, freed memory is poisoned) value fails;
 *             STRESS-S2. a version read was really written: it is <= the writer's
 *                 published version counter;
 *             STRESS-S3. every call returns one of its documented results;
 *             STRESS-S4. after quiescing, entries and used bytes equal a full walk.
 *   cas       4 counters incremented by replace_if_equals retry loops in every
 *             thread, amid other writes (no clear, no eviction in this cache).
 *             STRESS-S5. each counter ends at exactly threads * increments.
 *   capacity  a 4 MiB cache under heavy writes; a monitor thread samples used
 *             bytes continuously, from before the first write to after the
 *             last (waited for, not hoped for: on a loaded machine the timed
 *             writers may find their deadline passed and the monitor may not
 *             have run at all by then).
 *             STRESS-S6. used bytes never exceed capacity +
 *                 LARDER_STAT_OVERSHOOT_BOUND;
 *             STRESS-S7. after quiescing, used bytes <= capacity and equal the walk.
 *   no_leak   runs after the other phases.
 *             STRESS-S8. after every cache is closed, larder__test_mapped_bytes()
 *                 is back to its value before the first open.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>

#include "harness.h"

#define NKEYS 512
#define MAX_WRITERS 256
#define MAX_VALUE (20 * 1024)
#define NCOUNTERS 4

static struct {
	uint64_t threads, ops, cas, cap_ops, duration_ms, seed, policy;
	uint64_t start_ms;
	uint64_t mapped_before;
} opt;

/* ---- Failure reporting that does not flood ------------------------------- */

#define STRESS_FAIL(...) TH_FAIL_CAPPED(40, __VA_ARGS__)

/* ---- Self-checking values ------------------------------------------------ */

/*
 * A value is this header followed by a payload derived from (key, writer,
 * version); no payload byte is ever the poison byte, so poison cannot pass.
 */
struct vhdr {
	uint32_t key_id;
	uint32_t writer;
	uint64_t version;
	uint32_t length; /* the whole value, header included */
	uint32_t check;  /* FNV-1a over the header (check = 0) and the payload */
};

static _Atomic uint64_t writer_version[MAX_WRITERS];

static uint32_t fnv1a(uint32_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static unsigned char payload_byte(uint64_t seed, size_t i)
{
	unsigned char b = (unsigned char)(th_mix64(seed + i / 8) >> ((i % 8) * 8));

	return b == LARDER__POISON_BYTE ? 0x5a : b;
}

static uint64_t payload_seed(const struct vhdr *h)
{
	return th_mix64(((uint64_t)h->key_id << 40) ^ ((uint64_t)h->writer << 32) ^ h->version);
}

static void make_value(unsigned char *buf, uint32_t key_id, uint32_t writer, uint64_t version,
		       size_t len)
{
	struct vhdr h = {key_id, writer, version, (uint32_t)len, 0};
	uint64_t seed = payload_seed(&h);

	for (size_t i = sizeof(h); i < len; i++)
		buf[i] = payload_byte(seed, i);
	h.check = fnv1a(fnv1a(2166136261u, (const unsigned char *)&h, sizeof(h)),
			buf + sizeof(h), len - sizeof(h));
	memcpy(buf, &h, sizeof(h));
}

/* STRESS-S1 and STRESS-S2. Returns 1 when the value is whole and belongs to key_id. */
static int verify_value(const char *what, uint32_t key_id, const void *value, size_t len)
{
	const unsigned char *p = value;
	struct vhdr h;
	uint32_t check;
	size_t poison = 0;

	if (len < sizeof(h) || len > MAX_VALUE) {
		STRESS_FAIL("%s key %u: impossible length %zu", what, key_id, len);
		return 0;
	}
	memcpy(&h, p, sizeof(h));
	for (size_t i = sizeof(h); i < len; i++)
		poison += p[i] == LARDER__POISON_BYTE;
	if (poison) {
		STRESS_FAIL("%s key %u: %zu poisoned (freed) bytes in a %zu-byte value", what, key_id,
			    poison, len);
		return 0;
	}
	if (h.key_id != key_id || h.length != len || h.writer >= opt.threads) {
		STRESS_FAIL("%s key %u: foreign or torn value: key %u writer %u length %u (read %zu)",
			    what, key_id, h.key_id, h.writer, h.length, len);
		return 0;
	}
	check = h.check;
	h.check = 0;
	if (fnv1a(fnv1a(2166136261u, (const unsigned char *)&h, sizeof(h)), p + sizeof(h),
		  len - sizeof(h)) != check) {
		STRESS_FAIL("%s key %u: checksum mismatch (writer %u version %" PRIu64 ")", what,
			    key_id, h.writer, h.version);
		return 0;
	}
	if (h.version > atomic_load_explicit(&writer_version[h.writer], memory_order_relaxed)) {
		/* relaxed is enough: the writer's increment happens before its put, which
		 * the engine publishes with release and we read with acquire */
		STRESS_FAIL("%s key %u: version %" PRIu64 " of writer %u was never written", what,
			    key_id, h.version, h.writer);
		return 0;
	}
	return 1;
}

static void key_name(char *buf, size_t size, uint32_t key_id)
{
	snprintf(buf, size, "key:%03u", key_id);
}

/* A config for this run: capacity, fixed seed from the harness, --policy. */
static larder_config *stress_config(uint64_t capacity)
{
	larder_config *config = th_config(capacity);

	if (config != NULL &&
	    !CHECK_RC(larder_config_set_policy(config, (enum larder_policy)opt.policy), LARDER_OK)) {
		larder_config_destroy(config);
		return NULL;
	}
	return config;
}

/* ---- Phase 1: every operation mixed -------------------------------------- */

struct worker {
	larder *cache;
	uint32_t id;
	struct th_rng rng;
	/* Checked every 256 ops, the first time after 255: a worker that starts
	 * late on a loaded machine, past its deadline, still does some work. */
	uint64_t deadline_ms;
	uint64_t ops_done, busy, hits, misses, clears, capacity_changes;
	uint64_t writes_ok; /* writes that stored a new value (one new entry each) */
	unsigned char *buf, *value;
};

/*
 * The mixed phase's removal listener (on the maintainer thread): every value
 * removed must still be whole when reported (STRESS-S1 again: nothing is freed before
 * the listener ran), and the per-cause tallies feed STRESS-S9 below.
 */
static _Atomic uint64_t removed[LARDER_CAUSE_CLEARED + 1];

static int verify_value(const char *what, uint32_t key_id, const void *value, size_t len);

static void stress_listener(void *ctx, const void *key, size_t key_len, const void *value,
			    size_t value_len, enum larder_cause cause)
{
	char name[16];
	unsigned id = 0;

	(void)ctx;
	if (key_len >= sizeof(name) || (unsigned)cause > LARDER_CAUSE_CLEARED) {
		STRESS_FAIL("listener: key of %zu bytes, cause %d", key_len, (int)cause);
		return;
	}
	memcpy(name, key, key_len);
	name[key_len] = '\0';
	if (sscanf(name, "key:%u", &id) != 1 || id >= NKEYS)
		STRESS_FAIL("listener: foreign key '%s'", name);
	else
		verify_value(larder_cause_name(cause), id, value, value_len);
	/* relaxed: read after quiesce, which orders the maintainer's work before it */
	atomic_fetch_add_explicit(&removed[cause], 1, memory_order_relaxed);
}

static int op_result_ok(const char *op, int rc, int a, int b, int c)
{
	if (rc == a || rc == b || rc == c)
		return 1;
	STRESS_FAIL("%s returned %d (%s)", op, rc, larder_strerror(rc));
	return 0;
}

static int clock_passed(void *ctx)
{
	return th_now_ms() >= *(const uint64_t *)ctx;
}

/* A TTL that never runs out during a run, however slow: an expiry while the
 * final checks run would make the counters and the listener's tallies
 * describe two instants (60 s did not suffice: the mixed phase alone may last
 * 30 s, and the checks after it are slow under TSan on a loaded machine). */
#define LONG_TTL_MS (24u * 3600u * 1000u)

static uint64_t pick_ttl(struct worker *w)
{
	uint64_t r = th_rng_below(&w->rng, 100);

	if (r < 70)
		return LARDER_TTL_NEVER;
	if (r < 90)
		return LONG_TTL_MS;
	return 1 + th_rng_below(&w->rng, 20); /* expires during the run (real clock) */
}

static size_t pick_len(struct worker *w)
{
	uint64_t r = th_rng_below(&w->rng, 1000);

	if (r < 5)
		return sizeof(struct vhdr) + (size_t)th_rng_below(&w->rng, MAX_VALUE - sizeof(struct vhdr));
	if (r < 100)
		return sizeof(struct vhdr) + (size_t)th_rng_below(&w->rng, 4000);
	return sizeof(struct vhdr) + (size_t)th_rng_below(&w->rng, 600);
}

/* A fresh value for key_id from this writer. */
static size_t new_value(struct worker *w, uint32_t key_id)
{
	size_t len = pick_len(w);
	/* relaxed: only this thread writes its counter; see verify_value() */
	uint64_t version = atomic_fetch_add_explicit(&writer_version[w->id], 1,
						     memory_order_relaxed) + 1;

	make_value(w->value, key_id, w->id, version, len);
	return len;
}

struct read_ctx {
	uint32_t key_id;
	int calls;
	int dwell; /* stay in the read section a while, then check again */
};

static void read_fn(void *ctx, const void *value, size_t value_len)
{
	struct read_ctx *r = ctx;

	r->calls++;
	if (!verify_value("get_with", r->key_id, value, value_len) || !r->dwell)
		return;
	/*
	 * Widen the window in which a premature free would show: other threads
	 * overwrite and remove this key meanwhile; the bytes must not change.
	 */
	sched_yield();
	verify_value("get_with (after dwelling)", r->key_id, value, value_len);
}

struct batch_ctx {
	const uint32_t *ids;
	size_t count;
	long calls, last;
};

static void batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct batch_ctx *b = ctx;

	if (index >= b->count || (long)index <= b->last) {
		STRESS_FAIL("get_batch: index %zu after %ld (count %zu)", index, b->last, b->count);
		return;
	}
	b->last = (long)index;
	b->calls++;
	verify_value("get_batch", b->ids[index], value, value_len);
}

static void do_get(struct worker *w, uint32_t k, const char *key)
{
	size_t len = 0, buf_len = MAX_VALUE;
	int small = th_rng_below(&w->rng, 10) == 0;
	int rc;

	if (small) {
		buf_len = (size_t)th_rng_below(&w->rng, 64);
		memset(w->buf, 0xc3, 64);
	}
	rc = larder_get(w->cache, key, strlen(key), w->buf, buf_len, &len);
	if (rc == LARDER_OK) {
		w->hits++;
		verify_value("get", k, w->buf, len);
	} else if (rc == LARDER_EBUFSIZE && small) {
		if (len <= buf_len || len < sizeof(struct vhdr))
			STRESS_FAIL("get: EBUFSIZE with needed %zu for a %zu-byte buffer", len,
				    buf_len);
		for (size_t i = 0; i < 64; i++)
			if (w->buf[i] != 0xc3) {
				STRESS_FAIL("get: EBUFSIZE but the buffer was written");
				break;
			}
	} else {
		w->misses++;
		op_result_ok("get", rc, LARDER_MISS, LARDER_MISS, LARDER_MISS);
	}
}

static void do_batch(struct worker *w)
{
	uint32_t ids[8];
	char names[8][16];
	const void *keys[8];
	size_t lens[8];
	struct batch_ctx b = {ids, 8, 0, -1};
	long n;

	for (int i = 0; i < 8; i++) {
		ids[i] = (uint32_t)th_rng_below(&w->rng, NKEYS);
		key_name(names[i], sizeof(names[i]), ids[i]);
		keys[i] = names[i];
		lens[i] = strlen(names[i]);
	}
	if (th_rng_below(&w->rng, 4) == 0)
		lens[th_rng_below(&w->rng, 8)] = 0; /* an invalid key is skipped */
	n = larder_get_batch(w->cache, 8, keys, lens, batch_fn, &b);
	if (n < 0 || n != b.calls)
		STRESS_FAIL("get_batch returned %ld with %ld callbacks", n, b.calls);
}

/* Reads the key's current value into w->buf: its length, or -1 on a miss. */
static long read_current(struct worker *w, const char *key)
{
	size_t len = 0;
	int rc = larder_get(w->cache, key, strlen(key), w->buf, MAX_VALUE, &len);

	if (rc == LARDER_OK)
		return (long)len;
	op_result_ok("get", rc, LARDER_MISS, LARDER_MISS, LARDER_MISS);
	return -1;
}

static void do_write(struct worker *w, uint64_t r, uint32_t k, const char *key)
{
	size_t klen = strlen(key), len;
	long cur;
	int rc;

	if (r < 15) {
		len = new_value(w, k);
		rc = larder_put(w->cache, key, klen, w->value, len, pick_ttl(w));
		op_result_ok("put", rc, LARDER_OK, LARDER_EBUSY, LARDER_OK);
	} else if (r < 20) {
		len = new_value(w, k);
		rc = larder_put_if_absent(w->cache, key, klen, w->value, len, pick_ttl(w));
		op_result_ok("put_if_absent", rc, LARDER_OK, LARDER_EXISTS, LARDER_EBUSY);
	} else if (r < 25) {
		len = new_value(w, k);
		rc = larder_replace(w->cache, key, klen, w->value, len, pick_ttl(w));
		op_result_ok("replace", rc, LARDER_OK, LARDER_MISS, LARDER_EBUSY);
	} else if (r < 33) {
		if ((cur = read_current(w, key)) < 0)
			return;
		verify_value("get (cas)", k, w->buf, (size_t)cur);
		len = new_value(w, k);
		rc = larder_replace_if_equals(w->cache, key, klen, w->buf, (size_t)cur, w->value,
					      len, pick_ttl(w));
		if (rc != LARDER_MISMATCH && rc != LARDER_MISS)
			op_result_ok("replace_if_equals", rc, LARDER_OK, LARDER_EBUSY, LARDER_OK);
	} else if (r < 38) {
		rc = larder_remove(w->cache, key, klen);
		op_result_ok("remove", rc, LARDER_OK, LARDER_MISS, LARDER_EBUSY);
	} else if (r < 42) {
		if ((cur = read_current(w, key)) < 0)
			return;
		rc = larder_remove_if_equals(w->cache, key, klen, w->buf, (size_t)cur);
		if (rc != LARDER_EBUSY)
			op_result_ok("remove_if_equals", rc, LARDER_OK, LARDER_MISS, LARDER_MISMATCH);
	} else {
		rc = larder_touch(w->cache, key, klen, pick_ttl(w));
		op_result_ok("touch", rc, LARDER_OK, LARDER_MISS, LARDER_EBUSY);
	}
	if (rc == LARDER_EBUSY)
		w->busy++;
	if (rc == LARDER_OK && r < 33)
		w->writes_ok++; /* put, put_if_absent, replace, replace_if_equals */
}

static void do_read(struct worker *w, uint64_t r, uint32_t k, const char *key)
{
	size_t klen = strlen(key);
	int rc;

	if (r < 20) {
		do_get(w, k, key);
	} else if (r < 32) {
		struct read_ctx rc_ctx = {k, 0, th_rng_below(&w->rng, 16) == 0};
		rc = larder_get_with(w->cache, key, klen, read_fn, &rc_ctx);
		if (op_result_ok("get_with", rc, LARDER_OK, LARDER_MISS, LARDER_OK) &&
		    rc_ctx.calls != (rc == LARDER_OK))
			STRESS_FAIL("get_with: %d returned with %d callbacks", rc, rc_ctx.calls);
	} else if (r < 37) {
		do_batch(w);
	} else if (r < 42) {
		rc = larder_contains(w->cache, key, klen);
		op_result_ok("contains", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	} else {
		uint64_t ttl = 0;
		rc = larder_ttl_remaining(w->cache, key, klen, &ttl);
		if (op_result_ok("ttl_remaining", rc, LARDER_OK, LARDER_MISS, LARDER_MISS) &&
		    rc == LARDER_OK && (ttl == 0 || (ttl != LARDER_TTL_NEVER && ttl > LONG_TTL_MS)))
			STRESS_FAIL("ttl_remaining: %" PRIu64 " ms", ttl);
	}
}

static void *mixed_worker(void *arg)
{
	struct worker *w = arg;
	char key[16];

	for (w->ops_done = 0; w->ops_done < opt.ops; w->ops_done++) {
		uint32_t k = (uint32_t)th_rng_below(&w->rng, NKEYS);
		uint64_t r = th_rng_below(&w->rng, 100000);

		if ((w->ops_done & 255) == 255 && th_now_ms() > w->deadline_ms)
			break;
		key_name(key, sizeof(key), k);
		if (r < 2) {
			CHECK_RC(larder_clear(w->cache), LARDER_OK);
			w->clears++;
		} else if (r < 7) {
			uint64_t cap = th_rng_below(&w->rng, 2) ? 8 * MiB : 256 * KiB;
			CHECK_RC(larder_set_capacity(w->cache, cap), LARDER_OK);
			w->capacity_changes++;
		} else if (r < 50000) {
			do_read(w, (r - 7) * 47 / 49993, k, key);
		} else {
			do_write(w, (r - 50000) * 47 / 50000, k, key);
		}
	}
	return NULL;
}

static uint64_t phase_deadline(unsigned share_percent)
{
	uint64_t end = opt.start_ms + opt.duration_ms;
	uint64_t now = th_now_ms();
	uint64_t budget = opt.duration_ms * share_percent / 100;

	return now + budget < end ? now + budget : end;
}

static struct worker *make_workers(larder *cache, uint64_t salt, uint64_t deadline)
{
	struct worker *w = calloc(opt.threads, sizeof(*w));

	if (!CHECK(w != NULL))
		return NULL;
	for (uint32_t i = 0; i < opt.threads; i++) {
		w[i].cache = cache;
		w[i].id = i;
		w[i].rng.s = th_mix64(opt.seed ^ salt ^ ((uint64_t)i << 48));
		w[i].deadline_ms = deadline;
		w[i].buf = malloc(MAX_VALUE);
		w[i].value = malloc(MAX_VALUE);
		CHECK(w[i].buf != NULL && w[i].value != NULL);
	}
	return w;
}

static void free_workers(struct worker *w)
{
	for (uint32_t i = 0; w && i < opt.threads; i++) {
		free(w[i].buf);
		free(w[i].value);
	}
	free(w);
}

/* After quiescing, every key either misses or holds a whole value of its own. */
static void check_all_keys(larder *cache)
{
	unsigned char *buf = malloc(MAX_VALUE);
	size_t len;

	REQUIRE(buf != NULL);
	for (uint32_t k = 0; k < NKEYS; k++) {
		char key[16];
		int rc;

		key_name(key, sizeof(key), k);
		rc = larder_get(cache, key, strlen(key), buf, MAX_VALUE, &len);
		if (rc == LARDER_OK)
			verify_value("final get", k, buf, len);
		else
			CHECK_RC(rc, LARDER_MISS);
	}
	free(buf);
}

/*
 * STRESS-S9. Every entry is removed exactly once and every removal is reported:
 * entries created (successful writes) minus removals reported == entries in
 * the index, and the per-cause counters equal the listener's tallies. Call
 * after quiescing (th_check_accounting).
 */
static void check_conservation(larder *cache, uint64_t writes)
{
	static const enum larder_stat stat_of[] = {
		[LARDER_CAUSE_EXPLICIT] = LARDER_STAT_REMOVALS,
		[LARDER_CAUSE_REPLACED] = LARDER_STAT_REPLACEMENTS,
		[LARDER_CAUSE_EXPIRED] = LARDER_STAT_EXPIRATIONS,
		[LARDER_CAUSE_EVICTED] = LARDER_STAT_EVICTIONS,
		[LARDER_CAUSE_CLEARED] = LARDER_STAT_CLEARED,
	};
	uint64_t entries = 0, bytes = 0, total = 0;

	larder__test_walk(cache, &entries, &bytes);
	for (int i = 0; i <= LARDER_CAUSE_CLEARED; i++) {
		uint64_t n = atomic_load_explicit(&removed[i], memory_order_relaxed);
		total += n;
		if (!CHECK_EQ(th_stat(cache, stat_of[i]), n))
			printf("  cause %s: stats %" PRIu64 ", listener %" PRIu64 "\n",
			       larder_cause_name((enum larder_cause)i), th_stat(cache, stat_of[i]),
			       n);
	}
	printf("  %" PRIu64 " writes, removals: %" PRIu64 " explicit, %" PRIu64 " replaced, %" PRIu64
	       " expired, %" PRIu64 " evicted, %" PRIu64 " cleared; %" PRIu64 " entries left\n",
	       writes, atomic_load(&removed[0]), atomic_load(&removed[1]), atomic_load(&removed[2]),
	       atomic_load(&removed[3]), atomic_load(&removed[4]), entries);
	CHECK_EQ(writes - total, entries);
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITES), writes);
}

static void phase_mixed(void)
{
	larder_config *config = stress_config(8 * MiB);
	larder *cache;
	struct worker *w;
	uint64_t ops = 0, busy = 0, hits = 0, misses = 0, clears = 0, caps = 0, writes = 0;
	uint64_t mapped = larder__test_mapped_bytes(), t0 = th_now_ms();

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_max_value_bytes(config, MAX_VALUE), LARDER_OK);
	CHECK_RC(larder_config_set_hash_seed(config, opt.seed), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, stress_listener, NULL), LARDER_OK);
	for (int i = 0; i <= LARDER_CAUSE_CLEARED; i++)
		atomic_store(&removed[i], 0);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	w = make_workers(cache, 1, phase_deadline(50));
	if (w != NULL) {
		th_run_threads(opt.threads, mixed_worker, w, sizeof(*w));
		for (uint32_t i = 0; i < opt.threads; i++) {
			ops += w[i].ops_done;
			busy += w[i].busy;
			hits += w[i].hits;
			misses += w[i].misses;
			clears += w[i].clears;
			caps += w[i].capacity_changes;
			writes += w[i].writes_ok;
		}
	}
	printf("  mixed: %" PRIu64 " ops in %" PRIu64 " ms (%" PRIu64 " get hits, %" PRIu64
	       " misses, %" PRIu64 " clears, %" PRIu64 " capacity changes, %" PRIu64 " EBUSY)\n",
	       ops, th_now_ms() - t0, hits, misses, clears, caps, busy);
	CHECK_GT(ops, 0);
	/* Let every short TTL (1-20 ms, real clock) pass first: the timing wheel
	 * expires entries on time, so one expiring between the walk and the
	 * counters would make STRESS-S4 compare two different instants. */
	uint64_t short_ttls_over = th_now_ms() + 21;
	CHECK(th_wait_until(clock_passed, &short_ttls_over, 60000));
	th_check_accounting(cache, 60000, NULL, NULL);
	check_all_keys(cache);
	check_conservation(cache, writes);
	/* STRESS-S4 again after a final shrink: evicted down to the new capacity */
	CHECK_RC(larder_set_capacity(cache, 256 * KiB), LARDER_OK);
	{
		uint64_t bytes = 0;
		th_check_accounting(cache, 60000, NULL, &bytes);
		CHECK_LE(bytes, 256 * KiB);
		check_conservation(cache, writes);
	}
	free_workers(w);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

/* ---- Phase 2: CAS counters ------------------------------------------------ */

static void *cas_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t total = opt.cas * NCOUNTERS;

	for (w->ops_done = 0; w->ops_done < total; w->ops_done++) {
		uint32_t c = (uint32_t)((w->id + w->ops_done) % NCOUNTERS);
		char key[16], noise[16];
		uint64_t old = 0, new;
		size_t len = 0;
		int rc, done = 0;

		snprintf(key, sizeof(key), "ctr:%u", c);
		while (!done) {
			rc = larder_get(w->cache, key, strlen(key), &old, sizeof(old), &len);
			if (rc != LARDER_OK || len != sizeof(old)) {
				STRESS_FAIL("counter %u: get %d (%s), length %zu", c, rc,
					    larder_strerror(rc), len);
				return NULL;
			}
			new = old + 1;
			rc = larder_replace_if_equals(w->cache, key, strlen(key), &old, sizeof(old),
						      &new, sizeof(new), LARDER_TTL_NEVER);
			if (rc == LARDER_OK)
				done = 1;
			else if (rc == LARDER_EBUSY)
				w->busy++;
			else if (rc != LARDER_MISMATCH) {
				STRESS_FAIL("counter %u: replace_if_equals %d (%s)", c, rc,
					    larder_strerror(rc));
				return NULL;
			}
		}
		/* other traffic in the same cache, so counters share pages and events */
		snprintf(noise, sizeof(noise), "noise:%u",
			 (unsigned)th_rng_below(&w->rng, 256));
		len = new_value(w, 0);
		rc = larder_put(w->cache, noise, strlen(noise), w->value,
				len, LARDER_TTL_NEVER);
		op_result_ok("put", rc, LARDER_OK, LARDER_EBUSY, LARDER_OK);
	}
	return NULL;
}

static void phase_cas(void)
{
	larder_config *config = stress_config(64 * MiB);
	larder *cache;
	struct worker *w;
	uint64_t mapped = larder__test_mapped_bytes(), t0 = th_now_ms(), busy = 0;
	uint64_t want = opt.threads * opt.cas, zero = 0, repl0;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_max_value_bytes(config, MAX_VALUE), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	for (uint32_t c = 0; c < NCOUNTERS; c++) {
		char key[16];
		snprintf(key, sizeof(key), "ctr:%u", c);
		CHECK_RC(larder_put(cache, key, strlen(key), &zero, sizeof(zero), LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	/* stat-exact: the puts above were of new keys, which replace nothing */
	repl0 = th_stat(cache, LARDER_STAT_REPLACEMENTS);
	/* no deadline here: an early stop would make the expected totals unknown */
	w = make_workers(cache, 2, UINT64_MAX);
	if (w != NULL) {
		th_run_threads(opt.threads, cas_worker, w, sizeof(*w));
		for (uint32_t i = 0; i < opt.threads; i++)
			busy += w[i].busy;
	}
	printf("  cas: %" PRIu64 " increments per counter in %" PRIu64 " ms (%" PRIu64
	       " EBUSY retries)\n",
	       want, th_now_ms() - t0, busy);
	for (uint32_t c = 0; c < NCOUNTERS; c++) {
		char key[16];
		uint64_t value = 0;
		size_t len = 0;

		snprintf(key, sizeof(key), "ctr:%u", c);
		CHECK_RC(larder_get(cache, key, strlen(key), &value, sizeof(value), &len), LARDER_OK);
		CHECK_EQ(len, sizeof(value));
		if (!CHECK_EQ(value, want))
			printf("  counter %u lost %" PRId64 " updates\n", c,
			       (int64_t)(want - value));
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
	CHECK_GE(th_stat(cache, LARDER_STAT_REPLACEMENTS) - repl0, want * NCOUNTERS);
	free_workers(w);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

/* ---- Phase 3: capacity under pressure ----------------------------------- */

struct monitor {
	larder *cache;
	_Atomic int stop;
	/* Written by the monitor only; polled by the main thread (relaxed: a
	 * count, nothing is published through it). */
	_Atomic uint64_t samples;
	uint64_t max_used, capacity, bound, violations;
};

struct monitor_mark {
	struct monitor *m;
	uint64_t past;
};

static int monitor_sampled_past(void *arg)
{
	struct monitor_mark *k = arg;
	return atomic_load_explicit(&k->m->samples, memory_order_relaxed) > k->past;
}

/* Waits (60 s at most) until the monitor has completed a sample that began
 * after this call (the one completing now may have begun before it). */
static void monitor_catch_up(struct monitor *m)
{
	struct monitor_mark k = { m, atomic_load_explicit(&m->samples, memory_order_relaxed) + 1 };
	CHECK(th_wait_until(monitor_sampled_past, &k, 60000));
}

static void *monitor_thread(void *arg)
{
	struct monitor *m = arg;
	uint64_t values[LARDER_STAT_COUNT];

	while (!atomic_load_explicit(&m->stop, memory_order_acquire)) {
		if (larder_stats(m->cache, values, LARDER_STAT_COUNT) != LARDER_OK) {
			STRESS_FAIL("larder_stats failed");
			break;
		}
		atomic_fetch_add_explicit(&m->samples, 1, memory_order_relaxed); /* a count */
		if (values[LARDER_STAT_CAPACITY_BYTES] != m->capacity ||
		    values[LARDER_STAT_OVERSHOOT_BOUND] != m->bound)
			STRESS_FAIL("capacity or bound changed: %" PRIu64 " %" PRIu64,
				    values[LARDER_STAT_CAPACITY_BYTES],
				    values[LARDER_STAT_OVERSHOOT_BOUND]);
		if ((int64_t)values[LARDER_STAT_USED_BYTES] < 0) {
			/* a wrapped counter would hide an overshoot: it is a failure too */
			if (m->violations++ == 0)
				STRESS_FAIL("used bytes negative: %" PRId64 " (an inexact snapshot)",
					    (int64_t)values[LARDER_STAT_USED_BYTES]);
			continue;
		}
		if (values[LARDER_STAT_USED_BYTES] > m->max_used)
			m->max_used = values[LARDER_STAT_USED_BYTES];
		if (values[LARDER_STAT_USED_BYTES] > m->capacity + m->bound && m->violations++ == 0)
			STRESS_FAIL("used bytes %" PRIu64 " over capacity %" PRIu64 " + bound %" PRIu64,
				    values[LARDER_STAT_USED_BYTES], m->capacity, m->bound);
	}
	return NULL;
}

static void *capacity_worker(void *arg)
{
	struct worker *w = arg;
	unsigned char *big = malloc(256 * KiB);

	if (!CHECK(big != NULL))
		return NULL;
	memset(big, 0x3c, 256 * KiB);
	for (w->ops_done = 0; w->ops_done < opt.cap_ops; w->ops_done++) {
		uint32_t k = (uint32_t)th_rng_below(&w->rng, 65536);
		uint64_t r = th_rng_below(&w->rng, 1000);
		char key[24];
		size_t len;
		int rc;

		if ((w->ops_done & 255) == 255 && th_now_ms() > w->deadline_ms)
			break;
		snprintf(key, sizeof(key), "cap:%u", k);
		if (r < 50) {
			rc = larder_remove(w->cache, key, strlen(key));
			op_result_ok("remove", rc, LARDER_OK, LARDER_MISS, LARDER_EBUSY);
			continue;
		}
		if (r < 200) {
			do_get(w, k, key);
			continue;
		}
		if (r < 205) {
			/* large entries, 64-256 KiB, under their own keys (never verified) */
			snprintf(key, sizeof(key), "capbig:%u", k % 64);
			len = 64 * KiB + (size_t)th_rng_below(&w->rng, 192 * KiB);
			rc = larder_put(w->cache, key, strlen(key), big, len, LARDER_TTL_NEVER);
		} else {
			len = new_value(w, k);
			rc = larder_put(w->cache, key, strlen(key), w->value, len, LARDER_TTL_NEVER);
		}
		if (op_result_ok("put", rc, LARDER_OK, LARDER_EBUSY, LARDER_OK) &&
		    rc == LARDER_EBUSY)
			w->busy++;
	}
	free(big);
	return NULL;
}

static void phase_capacity(void)
{
	const uint64_t capacity = 4 * MiB;
	larder_config *config = stress_config(capacity);
	struct monitor m;
	struct worker *w;
	pthread_t mon;
	uint64_t mapped = larder__test_mapped_bytes(), t0 = th_now_ms(), ops = 0, busy = 0;
	uint64_t bytes = 0;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_max_value_bytes(config, 256 * KiB), LARDER_OK);
	/* Writers may still fail with EBUSY (allowed here); the drive below
	 * must not: a generous wait for room, whatever the machine's load. */
	CHECK_RC(larder_config_set_write_wait_ms(config, 60000), LARDER_OK);
	memset(&m, 0, sizeof(m));
	m.cache = th_open(config);
	REQUIRE(m.cache != NULL);
	m.capacity = th_stat(m.cache, LARDER_STAT_CAPACITY_BYTES);
	m.bound = th_stat(m.cache, LARDER_STAT_OVERSHOOT_BOUND);
	CHECK_EQ(m.capacity, capacity);
	CHECK_GT(m.bound, 0);
	atomic_init(&m.stop, 0);
	atomic_init(&m.samples, 0);
	REQUIRE(pthread_create(&mon, NULL, monitor_thread, &m) == 0);
	monitor_catch_up(&m); /* sampling before the first write */
	w = make_workers(m.cache, 3, phase_deadline(25));
	if (w != NULL) {
		th_run_threads(opt.threads, capacity_worker, w, sizeof(*w));
		for (uint32_t i = 0; i < opt.threads; i++) {
			ops += w[i].ops_done;
			busy += w[i].busy;
		}
	}
	/* Evictions, whatever the timed writers got done on a loaded machine:
	 * twice the capacity more, from here, under the monitor too. */
	{
		unsigned char *big = calloc(1, 256 * KiB);
		for (unsigned i = 0; big && i < 2 * capacity / (256 * KiB); i++) {
			char key[24];
			snprintf(key, sizeof(key), "drive:%u", i);
			CHECK_RC(larder_put(m.cache, key, strlen(key), big, 256 * KiB,
					    LARDER_TTL_NEVER),
				 LARDER_OK);
		}
		free(big);
	}
	monitor_catch_up(&m); /* a sample after the last write */
	/* Release: pairs with the acquire in monitor_thread(). */
	atomic_store_explicit(&m.stop, 1, memory_order_release);
	pthread_join(mon, NULL);
	printf("  capacity: %" PRIu64 " writes in %" PRIu64 " ms, %" PRIu64 " EBUSY; %" PRIu64
	       " samples, max used %" PRIu64 " (capacity %" PRIu64 " + bound %" PRIu64
	       "), %" PRIu64 " bad samples\n",
	       ops, th_now_ms() - t0, busy, atomic_load(&m.samples), m.max_used, m.capacity,
	       m.bound, m.violations);
	CHECK_EQ(m.violations, 0);
	CHECK_GE(atomic_load(&m.samples), 2);
	CHECK_EQ(th_quiesce(m.cache, 60000), 0);
	CHECK_GT(th_stat(m.cache, LARDER_STAT_EVICTIONS), 0);
	th_check_accounting(m.cache, 60000, NULL, &bytes);
	CHECK_LE(bytes, capacity);
	free_workers(w);
	larder_close(m.cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

static void phase_no_leak(void)
{
	CHECK_EQ(larder__test_mapped_bytes(), opt.mapped_before);
}

int main(int argc, char **argv)
{
	static const struct th_test phases[] = {
		{"mixed", phase_mixed},
		{"cas", phase_cas},
		{"capacity", phase_capacity},
		{"no_leak", phase_no_leak},
	};
	int rc;

	opt.threads = th_arg_u64(argc, argv, "--threads", 6);
	/* ~12 s on 2 shared cores at -O2 (measured: mixed 1.25 M ops/s, cas 210 k/s,
	 * capacity 950 k writes/s); the sanitizers run the same code 5-20x slower */
	opt.ops = th_arg_u64(argc, argv, "--ops", TH_TSAN ? 60000 : TH_ASAN ? 600000 : 1200000);
	opt.cas = th_arg_u64(argc, argv, "--cas", TH_TSAN ? 2000 : TH_ASAN ? 12000 : 30000);
	opt.cap_ops = th_arg_u64(argc, argv, "--cap-ops", TH_TSAN ? 30000 : TH_ASAN ? 250000 : 500000);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", 60000);
	opt.policy = th_arg_u64(argc, argv, "--policy", LARDER_POLICY_DEFAULT);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.threads < 1 || opt.threads > MAX_WRITERS) {
		fprintf(stderr, "--threads must be 1..%d\n", MAX_WRITERS);
		return 2;
	}
	printf("threads %" PRIu64 ", ops %" PRIu64 ", cas %" PRIu64 ", cap-ops %" PRIu64
	       ", policy %" PRIu64 ", duration cap %" PRIu64 " ms%s\n",
	       opt.threads, opt.ops, opt.cas, opt.cap_ops, opt.policy, opt.duration_ms,
	       TH_TSAN ? " (ThreadSanitizer defaults)" : "");
	opt.start_ms = th_now_ms();
	larder__test_poison_freed(1);
	opt.mapped_before = larder__test_mapped_bytes();
	rc = th_main(argc, argv, phases, TH_COUNT(phases));
	larder__test_poison_freed(0);
	return rc;
}
