/*
 * tests/unit/test_snapshot.c - larder_save / larder_load (warm restart).
 *
 * Invariants checked (larder.h "Snapshots", core/snapshot.c SNAP-L1..L5, SNAP-S1):
 *   - a round trip (a file over 16 MiB: the threaded load) restores every
 *     key and value, empty values, the longest key, values in private
 *     mappings, and TTLs as remaining time;
 *   - entries whose time ran out while the file waited are dropped, the
 *     others come back with the wait taken off (SNAP-L2);
 *   - a large snapshot (checksum and records checked side by side) with a
 *     byte changed or cut short is refused with nothing written;
 *   - every single-byte change and every truncation of a small snapshot is
 *     refused (LARDER_EFORMAT or LARDER_ECORRUPT) with the cache left empty,
 *     or loaded exactly; never a crash (run under ASan/UBSan too);
 *   - foreign, empty and missing files are refused with their codes;
 *   - a load into a smaller cache fills it to capacity and no further, with
 *     no eviction, every entry it took intact (SNAP-L3);
 *   - a failed save (a rename that fails, a write that fails midway in the
 *     flusher thread) leaves no temporary file and the previous snapshot
 *     whole, and says why (errno);
 *   - saves racing with writers and clears produce sound files whose every
 *     entry belongs to its key;
 *   - the load's bulk writes (SNAP-L5) racing with readers and with a writer
 *     of the same keys: every value read is its key's, every entry is
 *     there at the end, the write count is the records plus the writer's
 *     puts and the maintainer's totals match a walk;
 *   - loads racing with readers and clears: the totals match a walk, writes
 *     less removals is the entries left, nothing is evicted;
 *   - a cache closed right after a load (its batches' events not yet
 *     applied) gives back every page it mapped;
 *   - a load with each of its allocations failed in turn (a batch's event
 *     block among them) loads whole or fails with LARDER_ENOMEM, the
 *     totals matching the index either way;
 *   - keys repeated within one batch, for every policy: the maintainer's
 *     run of inserts (POLICY-P6) is queued before a replace of one of them;
 *     the last value wins, the totals and the policy's links match;
 *   - a load into a cache whose index was sized for 64 entries (SNAP-L6):
 *     it ends, the index grown for the records before the writes (fewer
 *     growths than doubling takes), none shrunk meanwhile, nothing
 *     evicted, every entry its key's;
 *   - CACHE-B4: the plain bulk write (one shard, no compression) and the
 *     general one load a file of mixed sizes and TTLs into the same keys,
 *     values, TTLs, used bytes and counts, whole and into a small cache;
 *   - SNAP-L6's parts alone: a bulk writer's ask grows the index at once;
 *     after a clear, an ask without waiting grows the fresh table for what
 *     is left, not for the whole; no sparse table shrinks until the bulk
 *     writer ends, and it does then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/snapshot.h"
#include "core/testing.h"
#include "harness.h"
#include "index/table.h"
#include "maint/handle.h"
#include "maint/maintainer.h"

static char dir[256];

static void path_in_dir(char *out, const char *name)
{
	snprintf(out, 512, "%s/%s", dir, name);
}

static size_t key_of(char *buf, uint64_t id)
{
	return (size_t)snprintf(buf, 32, "snap-%llu", (unsigned long long)id);
}

/* Values of varied lengths whose bytes depend on the id: 0 to ~3000 bytes. */
static size_t value_of(unsigned char *buf, uint64_t id)
{
	size_t len = (size_t)(th_mix64(id) % 3000);
	if (id % 97 == 0)
		len = 0;
	uint64_t m = th_mix64(id);
	for (size_t i = 0; i < len; i++) /* cheap (sanitizer builds), distinct per id */
		buf[i] = (unsigned char)((m >> (8 * (i % 8))) + i / 8);
	return len;
}

static int value_ok(const void *key, size_t key_len, const void *value, size_t value_len)
{
	char k[64];
	if (key_len < 6 || key_len > 40 || memcmp(key, "snap-", 5) != 0)
		return 0;
	memcpy(k, key, key_len);
	k[key_len] = 0;
	uint64_t id = strtoull(k + 5, NULL, 10);
	static __thread unsigned char v[4096];
	size_t vl = value_of(v, id);
	return vl == value_len && memcmp(v, value, vl) == 0;
}

static void fill(larder *c, uint64_t from, uint64_t n, uint64_t ttl)
{
	char k[32];
	unsigned char v[4096];
	for (uint64_t id = from; id < from + n; id++) {
		size_t kl = key_of(k, id), vl = value_of(v, id);
		CHECK_RC(larder_put(c, k, kl, v, vl, ttl), LARDER_OK);
	}
}

struct check {
	uint64_t entries, bad;
};

static void check_entry(void *ctx, const void *key, size_t key_len, const void *value,
			size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct check *ch = ctx;
	(void)ttl_ms;
	(void)entry_bytes;
	ch->entries++;
	if (!value_ok(key, key_len, value, value_len))
		ch->bad++;
}

/* Walks the cache: how many entries, and whether each is its key's value. */
static struct check walk(larder *c)
{
	struct check ch = { 0, 0 };
	larder_iter *it;
	if (!CHECK_RC(larder_iter_open(c, &it), LARDER_OK))
		return ch;
	int rc;
	while ((rc = larder_iter_next(it, check_entry, &ch)) == LARDER_OK)
		;
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	return ch;
}

static unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!CHECK(f != NULL))
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *d = malloc((size_t)n + 1);
	CHECK(d && fread(d, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return d;
}

static void write_file(const char *path, const void *d, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!CHECK(f != NULL))
		return;
	CHECK_EQ(fwrite(d, 1, len, f), len);
	fclose(f);
}

static void test_snapshot_round_trip(void)
{
	char path[512];
	path_in_dir(path, "round.snap");
	larder_config *cfg = th_config(256 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_max_key_bytes(cfg, LARDER_KEY_LIMIT) == LARDER_OK);
	REQUIRE(larder_config_set_max_value_bytes(cfg, 8 * MiB) == LARDER_OK);
	larder *a = th_open(cfg);
	REQUIRE(a != NULL);
	/* About 22 MB: over 16 MiB, so the load takes its threaded path (SNAP-L4). */
	fill(a, 0, 12000, LARDER_TTL_NEVER);
	fill(a, 12000, 1000, 3600 * 1000); /* an hour */
	/* The longest key, and a value in a private mapping (over 256 KiB). */
	char *longkey = malloc(LARDER_KEY_LIMIT);
	unsigned char *big = malloc(3 * MiB);
	REQUIRE(longkey && big);
	memset(longkey, 'L', LARDER_KEY_LIMIT);
	for (size_t i = 0; i < 3 * MiB; i++)
		big[i] = (unsigned char)(i * 31 + 7);
	CHECK_RC(larder_put(a, longkey, LARDER_KEY_LIMIT, big, 3 * MiB, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size > 16 * MiB);

	cfg = th_config(256 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_max_key_bytes(cfg, LARDER_KEY_LIMIT) == LARDER_OK);
	REQUIRE(larder_config_set_max_value_bytes(cfg, 8 * MiB) == LARDER_OK);
	larder *b = th_open(cfg);
	REQUIRE(b != NULL);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	char k[32];
	unsigned char v[4096], got[4096];
	uint64_t bad = 0;
	for (uint64_t id = 0; id < 13000; id++) {
		size_t kl = key_of(k, id), vl = value_of(v, id), gl = 0;
		int rc = larder_get(b, k, kl, got, sizeof(got), &gl);
		bad += rc != LARDER_OK || gl != vl || memcmp(got, v, vl) != 0;
		uint64_t ttl = 0;
		CHECK_RC(larder_ttl_remaining(b, k, kl, &ttl), LARDER_OK);
		if (id < 12000)
			bad += ttl != LARDER_TTL_NEVER;
		else /* generous: the save and load of a loaded machine */
			bad += ttl > 3600 * 1000 || ttl < 3000 * 1000;
	}
	CHECK_EQ(bad, 0);
	unsigned char *big2 = malloc(3 * MiB);
	size_t bl = 0;
	REQUIRE(big2 != NULL);
	CHECK_RC(larder_get(b, longkey, LARDER_KEY_LIMIT, big2, 3 * MiB, &bl), LARDER_OK);
	CHECK_EQ(bl, 3 * MiB);
	CHECK(memcmp(big, big2, 3 * MiB) == 0);
	CHECK_EQ(th_stat(b, LARDER_STAT_WRITES), 13001);
	free(big2);
	free(big);
	free(longkey);
	larder_close(a);
	larder_close(b);
	unlink(path);
}

/* Rewrites the save time in the header and the checksum to match. */
static void age_snapshot(unsigned char *d, size_t len, uint64_t ms)
{
	uint64_t t = 0;
	for (int i = 7; i >= 0; i--)
		t = t << 8 | d[16 + i];
	t -= ms;
	for (int i = 0; i < 8; i++)
		d[16 + i] = (unsigned char)(t >> (8 * i));
	size_t tr = len - LARDER__SNAP_TRAILER_BYTES;
	uint64_t h = XXH3_64bits(d, tr + LARDER__SNAP_CHECKED_BYTES);
	for (int i = 0; i < 8; i++)
		d[tr + 16 + i] = (unsigned char)(h >> (8 * i));
}

static void test_snapshot_ttl_counts_down(void)
{
	char path[512];
	path_in_dir(path, "ttl.snap");
	larder *a = th_open(th_config(64 * MiB));
	REQUIRE(a != NULL);
	fill(a, 0, 100, 60 * 1000);        /* a minute */
	fill(a, 100, 100, 3600 * 1000);    /* an hour */
	fill(a, 200, 100, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	size_t len;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d != NULL);
	age_snapshot(d, len, 10 * 60 * 1000); /* saved ten minutes ago */
	write_file(path, d, len);
	free(d);
	larder *b = th_open(th_config(64 * MiB));
	REQUIRE(b != NULL);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	char k[32];
	uint64_t bad = 0;
	for (uint64_t id = 0; id < 300; id++) {
		size_t kl = key_of(k, id);
		uint64_t ttl = 0;
		int rc = larder_ttl_remaining(b, k, kl, &ttl);
		if (id < 100)
			bad += rc != LARDER_MISS;
		else if (id < 200)
			bad += rc != LARDER_OK || ttl > 50 * 60 * 1000 || ttl < 40 * 60 * 1000;
		else
			bad += rc != LARDER_OK || ttl != LARDER_TTL_NEVER;
	}
	CHECK_EQ(bad, 0);
	larder_close(a);
	larder_close(b);
	unlink(path);
}

/* How many files of dir have a temporary name (a failed save leaves none). */
static int temporary_files(void)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "ls %s | grep -c tmp", dir);
	FILE *p = popen(cmd, "r");
	int tmps = -1;
	CHECK(p && fscanf(p, "%d", &tmps) == 1);
	if (p)
		pclose(p);
	return tmps;
}

/* A 64 MiB cache holding 20,000 entries (~30 MiB), saved to path (name in dir). */
static larder *saved_cache(char *path, const char *name)
{
	path_in_dir(path, name);
	larder *c = th_open(th_config(64 * MiB));
	if (!c)
		return NULL;
	fill(c, 0, 20000, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(c, path), LARDER_OK);
	return c;
}

static void test_snapshot_bad_files(void)
{
	char path[512], missing[512];
	path_in_dir(path, "bad.snap");
	path_in_dir(missing, "no-such-dir/x.snap");
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c != NULL);
	CHECK_RC(larder_load(NULL, path), LARDER_EINVAL);
	CHECK_RC(larder_load(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(NULL, path), LARDER_EINVAL);
	CHECK_RC(larder_save(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(c, ""), LARDER_EINVAL);
	errno = 0;
	CHECK_RC(larder_load(c, missing), LARDER_ESYS);
	CHECK_EQ(errno, ENOENT);
	CHECK_RC(larder_save(c, missing), LARDER_ESYS);
	write_file(path, "", 0);
	CHECK_RC(larder_load(c, path), LARDER_EFORMAT);
	const char *foreign = "VALUE foo 0 3\r\nbar\r\nEND\r\n plus some more bytes to be long enough"
			      " for a header and a trailer of a snapshot file, really";
	write_file(path, foreign, strlen(foreign));
	CHECK_RC(larder_load(c, path), LARDER_EFORMAT);
	/* A newer version. */
	fill(c, 0, 3, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(c, path), LARDER_OK);
	size_t len;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d != NULL);
	d[8] = 2;
	write_file(path, d, len);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_RC(larder_load(c, path), LARDER_EFORMAT);
	CHECK_EQ(walk(c).entries, 0);
	free(d);
	/* A directory where the file should go: the rename fails, no temporary stays. */
	char sub[512];
	path_in_dir(sub, "is-a-dir");
	CHECK(mkdir(sub, 0700) == 0);
	char inner[600];
	snprintf(inner, sizeof(inner), "%s/keep", sub);
	write_file(inner, "x", 1); /* a non-empty directory cannot be renamed over */
	CHECK_RC(larder_save(c, sub), LARDER_ESYS);
	CHECK_EQ(temporary_files(), 0);
	unlink(inner);
	rmdir(sub);
	larder_close(c);
	unlink(path);
}

/* Every byte flipped, every truncation: refused with the cache empty, or exact. */
static void test_snapshot_every_byte(void)
{
	char path[512], probe[512];
	path_in_dir(path, "small.snap");
	path_in_dir(probe, "probe.snap");
	larder *a = th_open(th_config(4 * MiB));
	REQUIRE(a != NULL);
	char k[32];
	for (uint64_t id = 0; id < 12; id++) {
		unsigned char v[4096];
		size_t kl = key_of(k, id), vl = value_of(v, id) % 40;
		value_of(v, id);
		CHECK_RC(larder_put(a, k, kl, v, vl, id % 2 ? 3600 * 1000 : LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(larder_save(a, path), LARDER_OK);
	size_t len;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d != NULL);
	larder *b = th_open(th_config(4 * MiB));
	REQUIRE(b != NULL);
	uint64_t refused = 0, loaded = 0, wrong = 0;
	for (size_t i = 0; i < len + len; i++) {
		size_t n = len;
		if (i < len) {
			d[i] ^= 0x5a;
			write_file(probe, d, n);
			d[i] ^= 0x5a;
		} else {
			n = i - len;
			write_file(probe, d, n);
		}
		CHECK_RC(larder_clear(b), LARDER_OK);
		int rc = larder_load(b, probe);
		if (rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT) {
			refused++;
			wrong += walk(b).entries != 0;
		} else if (rc == LARDER_OK) {
			loaded++;
		} else {
			wrong++;
		}
	}
	printf("    %zu-byte snapshot: %llu changed files refused, %llu loaded\n", len,
	       (unsigned long long)refused, (unsigned long long)loaded);
	CHECK_EQ(wrong, 0);
	CHECK_EQ(refused, 2 * len); /* a 64-bit checksum catches every one-byte change */
	free(d);
	larder_close(a);
	larder_close(b);
	unlink(path);
	unlink(probe);
}

static void test_snapshot_smaller_cache(void)
{
	char path[512];
	larder *a = saved_cache(path, "big.snap");
	REQUIRE(a != NULL);
	const uint64_t cap = 4 * MiB;
	larder *b = th_open(th_config(cap));
	REQUIRE(b != NULL);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	uint64_t entries = 0, bytes = 0;
	CHECK(th_check_accounting(b, 60000, &entries, &bytes));
	CHECK_LE(bytes, cap);
	CHECK_GE(bytes, cap - 8 * KiB); /* full: nothing of a few KiB fit any more */
	CHECK_EQ(th_stat(b, LARDER_STAT_EVICTIONS), 0);
	struct check ch = walk(b);
	CHECK_EQ(ch.entries, entries);
	CHECK_EQ(ch.bad, 0);
	larder_close(a);
	larder_close(b);
	unlink(path);
}

/* A write that fails midway (the file size limit, EFBIG), in the flusher
 * thread's buffers (SNAP-S1): the save says so with errno, leaves no
 * temporary file, and the previous snapshot stays whole. */
static void test_snapshot_write_fails(void)
{
	char path[512];
	larder *c = saved_cache(path, "limited.snap");
	REQUIRE(c != NULL);
	size_t before_len, after_len;
	unsigned char *before = read_file(path, &before_len);
	REQUIRE(before != NULL);
	struct rlimit keep, small;
	REQUIRE(getrlimit(RLIMIT_FSIZE, &keep) == 0);
	small = keep;
	small.rlim_cur = 4 * MiB;
	void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
	errno = 0;
	int rc = larder_save(c, path);
	int err = errno;
	setrlimit(RLIMIT_FSIZE, &keep);
	signal(SIGXFSZ, old);
	CHECK_RC(rc, LARDER_ESYS);
	CHECK_EQ(err, EFBIG);
	CHECK_EQ(temporary_files(), 0);
	unsigned char *after = read_file(path, &after_len);
	REQUIRE(after != NULL);
	CHECK(after_len == before_len && memcmp(before, after, before_len) == 0);
	free(before);
	free(after);
	larder_close(c);
	unlink(path);
}

/* A large file (its checksum checked in a thread beside the records' walk,
 * SNAP-L1) with one byte changed in a value, in a length, or cut short: refused,
 * nothing written. */
static void test_snapshot_large_damaged(void)
{
	char path[512];
	larder *a = saved_cache(path, "large-damaged.snap");
	REQUIRE(a != NULL);
	larder_close(a);
	size_t len;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d != NULL);
	REQUIRE(len > 16 * MiB);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	CHECK_RC(larder_config_set_expected_entries(cfg, 20000), LARDER_OK); /* no growth: quick under TSan */
	larder *b = th_open(cfg);
	REQUIRE(b != NULL);
	const size_t at[] = { len / 2, LARDER__SNAP_HEADER_BYTES + 1 };
	for (size_t i = 0; i < 2; i++) {
		d[at[i]] ^= 0x40;
		write_file(path, d, len);
		CHECK_RC(larder_load(b, path), LARDER_ECORRUPT);
		d[at[i]] ^= 0x40;
	}
	write_file(path, d, len - 1000);
	CHECK_RC(larder_load(b, path), LARDER_ECORRUPT);
	CHECK_EQ(walk(b).entries, 0);
	CHECK_EQ(th_stat(b, LARDER_STAT_WRITES), 0);
	write_file(path, d, len);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	CHECK_EQ(walk(b).entries, 20000);
	larder_close(b);
	free(d);
	unlink(path);
}

static larder *race_cache;
static _Atomic int race_stop;

static void *race_writer(void *arg)
{
	uint64_t round = (uint64_t)(uintptr_t)arg;
	while (!atomic_load_explicit(&race_stop, memory_order_relaxed)) {
		fill(race_cache, (round % 8) * 1000, 1000, round % 3 ? LARDER_TTL_NEVER : 60000);
		if (round % 5 == 0)
			CHECK_RC(larder_clear(race_cache), LARDER_OK);
		round++;
	}
	return NULL;
}

struct saver {
	int index;
};

static void *race_saver(void *arg)
{
	const struct saver *s = arg;
	char path[512], name[64];
	snprintf(name, sizeof(name), "race-%d.snap", s->index % 2); /* two savers per path */
	path_in_dir(path, name);
	for (int i = 0; i < 10; i++)
		CHECK_RC(larder_save(race_cache, path), LARDER_OK);
	return NULL;
}

static void *race_role(void *arg)
{
	int i = *(int *)arg;
	if (i == 0)
		return race_writer((void *)(uintptr_t)1);
	struct saver s = { i };
	void *r = race_saver(&s);
	return r;
}

static void test_snapshot_races_with_clear(void)
{
	race_cache = th_open(th_config(64 * MiB));
	REQUIRE(race_cache != NULL);
	atomic_store(&race_stop, 0);
	/* Role 0 writes and clears until the savers (1..4) are done. */
	pthread_t w;
	int zero = 0;
	REQUIRE(pthread_create(&w, NULL, race_role, &zero) == 0);
	int ids[4] = { 1, 2, 3, 4 };
	th_run_threads(4, race_role, ids, sizeof(ids[0]));
	atomic_store(&race_stop, 1);
	pthread_join(w, NULL);
	for (int i = 0; i < 2; i++) {
		char path[512], name[64];
		snprintf(name, sizeof(name), "race-%d.snap", i);
		path_in_dir(path, name);
		larder *b = th_open(th_config(64 * MiB));
		REQUIRE(b != NULL);
		CHECK_RC(larder_load(b, path), LARDER_OK);
		struct check ch = walk(b);
		CHECK_EQ(ch.bad, 0);
		larder_close(b);
		unlink(path);
	}
	larder_close(race_cache);
}

/* ---- The load's bulk writes against other threads -------------------------- */

/* The race tests' snapshot: 12,000 entries, about 18 MB, so that the load
 * takes its threaded path (SNAP-L4: 16 MiB or more), and no more, so that
 * they stay short under ThreadSanitizer. */
enum { LOAD_KEYS = 12000 };

static void race_snapshot(char *path, const char *name)
{
	path_in_dir(path, name);
	larder *c = th_open(th_config(64 * MiB));
	REQUIRE(c != NULL);
	fill(c, 0, LOAD_KEYS, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(c, path), LARDER_OK);
	larder_close(c);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size >= 16 * MiB);
}

struct load_race {
	larder *cache;
	const char *path;
	int loads, with_clear;
	_Atomic int done; /* the loader finished */
	_Atomic uint64_t hits, bad, puts, clears;
};

static int clearing(void *arg)
{
	return atomic_load(&((struct load_race *)arg)->clears) > 0;
}

static void *load_race_loader(void *arg)
{
	struct load_race *r = arg;
	/* With the clearer, only once it clears: a loader that finished
	 * before that thread ran would race with nothing. */
	if (r->with_clear && !CHECK(th_wait_until(clearing, r, 60000))) {
		atomic_store(&r->done, 1);
		return NULL;
	}
	for (int i = 0; i < r->loads; i++)
		CHECK_RC(larder_load(r->cache, r->path), LARDER_OK);
	atomic_store(&r->done, 1);
	return NULL;
}

/* Gets keys of the snapshot until the loader is done: every value found
 * must be its key's (a half-built or foreign entry would not be). */
static void *load_race_reader(void *arg)
{
	struct load_race *r = arg;
	struct th_rng rng = { (uint64_t)(uintptr_t)&rng };
	char k[32];
	unsigned char v[4096];
	uint64_t hits = 0, bad = 0;
	while (!atomic_load(&r->done)) {
		size_t kl = key_of(k, th_rng_below(&rng, LOAD_KEYS)), vl = 0;
		int rc = larder_get(r->cache, k, kl, v, sizeof(v), &vl);
		if (rc == LARDER_OK) {
			hits++;
			bad += !value_ok(k, kl, v, vl);
		} else {
			bad += rc != LARDER_MISS;
		}
	}
	atomic_fetch_add(&r->hits, hits);
	atomic_fetch_add(&r->bad, bad);
	return NULL;
}

/* Puts and removes every fourth key of the snapshot, with the snapshot's
 * own values, until the loader is done, then puts them all once more: the
 * final contents are the snapshot's whatever the interleaving. */
static void *load_race_writer(void *arg)
{
	struct load_race *r = arg;
	char k[32];
	unsigned char v[4096];
	uint64_t puts = 0;
	for (uint64_t round = 0;; round++) {
		int last = atomic_load(&r->done);
		for (uint64_t id = 0; id < LOAD_KEYS; id += 4) {
			size_t kl = key_of(k, id), vl = value_of(v, id);
			if (!last && (id / 4 + round) % 3 == 0) {
				int rc = larder_remove(r->cache, k, kl);
				CHECK(rc == LARDER_OK || rc == LARDER_MISS);
			} else if (CHECK_RC(larder_put(r->cache, k, kl, v, vl, LARDER_TTL_NEVER),
					    LARDER_OK)) {
				puts++;
			}
		}
		if (last)
			break;
	}
	atomic_store(&r->puts, puts);
	return NULL;
}

/* Clears the cache again and again until the loader is done. */
static void *load_race_clearer(void *arg)
{
	struct load_race *r = arg;
	while (!atomic_load(&r->done)) {
		CHECK_RC(larder_clear(r->cache), LARDER_OK);
		atomic_fetch_add(&r->clears, 1);
	}
	return NULL;
}

struct load_role {
	struct load_race *race;
	int role;
};

static void *load_race_role(void *arg)
{
	const struct load_role *lr = arg;
	struct load_race *r = lr->race;
	switch (lr->role) {
	case 0:
		return load_race_loader(r);
	case 1:
		return r->with_clear ? load_race_clearer(r) : load_race_writer(r);
	default:
		return load_race_reader(r);
	}
}

/* Runs a loader, the writer (or the clearer, with_clear) and a reader on a
 * fresh 128 MiB cache; returns the cache. */
static larder *run_load_race(struct load_race *r, const char *path, int loads, int with_clear)
{
	*r = (struct load_race){ .path = path, .loads = loads, .with_clear = with_clear };
	r->cache = th_open(th_config(128 * MiB));
	if (!r->cache)
		return NULL;
	struct load_role roles[3] = { { r, 0 }, { r, 1 }, { r, 2 } };
	th_run_threads(3, load_race_role, roles, sizeof(roles[0]));
	CHECK_EQ(atomic_load(&r->bad), 0);
	return r->cache;
}

/* SNAP-L5: the bulk writes of a threaded load (an 18 MB file), read while
 * they land and overwritten and removed by a writer of the same keys. */
static void test_snapshot_load_races_writer(void)
{
	char path[512];
	race_snapshot(path, "load-race.snap");
	struct load_race r;
	larder *b = run_load_race(&r, path, 1, 0);
	REQUIRE(b != NULL);
	uint64_t entries = 0, bytes = 0;
	CHECK(th_check_accounting(b, 60000, &entries, &bytes));
	CHECK_EQ(entries, LOAD_KEYS);
	struct check ch = walk(b);
	CHECK_EQ(ch.entries, LOAD_KEYS);
	CHECK_EQ(ch.bad, 0);
	CHECK_EQ(th_stat(b, LARDER_STAT_WRITES), LOAD_KEYS + atomic_load(&r.puts));
	CHECK_EQ(th_stat(b, LARDER_STAT_EVICTIONS), 0);
	CHECK(th_check_memory_audit(b));
	larder_close(b);
	unlink(path);
}

/* Loads racing with clears (and readers): whatever each clear caught, the
 * totals match the index and every write is accounted for; a last load
 * into the quiet cache restores every entry. */
static void test_snapshot_load_races_with_clear(void)
{
	char path[512];
	race_snapshot(path, "load-clear.snap");
	struct load_race r;
	larder *b = run_load_race(&r, path, 2, 1);
	REQUIRE(b != NULL);
	uint64_t entries = 0, bytes = 0;
	CHECK(th_check_accounting(b, 60000, &entries, &bytes));
	CHECK_LE(entries, LOAD_KEYS);
	CHECK_GE(atomic_load(&r.clears), 1);
	uint64_t gone = th_stat(b, LARDER_STAT_REPLACEMENTS) + th_stat(b, LARDER_STAT_CLEARED) +
			th_stat(b, LARDER_STAT_REMOVALS) + th_stat(b, LARDER_STAT_EXPIRATIONS) +
			th_stat(b, LARDER_STAT_EVICTIONS);
	CHECK_EQ(th_stat(b, LARDER_STAT_WRITES) - gone, entries);
	CHECK_EQ(th_stat(b, LARDER_STAT_EVICTIONS), 0);
	CHECK_EQ(walk(b).bad, 0);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	struct check ch = walk(b);
	CHECK_EQ(ch.entries, LOAD_KEYS);
	CHECK_EQ(ch.bad, 0);
	CHECK(th_check_accounting(b, 60000, NULL, NULL));
	larder_close(b);
	unlink(path);
}

/* Close right after a load returns, before the maintainer has applied its
 * batches' events: every page the cache mapped goes back. */
static void test_snapshot_load_then_close(void)
{
	char path[512];
	race_snapshot(path, "load-close.snap");
	uint64_t mapped = larder__test_mapped_bytes();
	for (int i = 0; i < 2; i++) {
		larder *b = th_open(th_config(64 * MiB));
		REQUIRE(b != NULL);
		CHECK_RC(larder_load(b, path), LARDER_OK);
		larder_close(b);
	}
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
	unlink(path);
}

/* Every allocation of a load failed in turn (EV-V7: a block that cannot be
 * had makes each write post its own event): the load succeeds whole or
 * says LARDER_ENOMEM, and either way the maintainer's totals match the
 * index and every entry is its key's. */
static void test_snapshot_load_alloc_fails(void)
{
	enum { KEYS = 300 };
	char path[512];
	path_in_dir(path, "load-alloc.snap");
	larder *a = th_open(th_config(64 * MiB));
	REQUIRE(a != NULL);
	fill(a, 0, KEYS, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	larder_close(a);
	/* How many allocations a load makes (its thread's state, pages, blocks). */
	larder *b = th_open(th_config(64 * MiB));
	REQUIRE(b != NULL);
	larder__test_fail_alloc_after(1000000);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	long made = 1000000 - larder__test_fail_alloc_after(-1);
	larder_close(b);
	CHECK_GE(made, KEYS / LARDER__BATCH_EVENTS);
	for (long k = 0; k <= made; k++) {
		b = th_open(th_config(64 * MiB));
		REQUIRE(b != NULL);
		larder__test_fail_alloc_after(k);
		int rc = larder_load(b, path);
		larder__test_fail_alloc_after(-1);
		CHECK(rc == LARDER_OK || rc == LARDER_ENOMEM);
		uint64_t entries = 0;
		CHECK(th_check_accounting(b, 60000, &entries, NULL));
		struct check ch = walk(b);
		CHECK_EQ(ch.entries, entries);
		CHECK_EQ(ch.bad, 0);
		if (rc == LARDER_OK)
			CHECK_EQ(entries, KEYS);
		larder_close(b);
	}
	unlink(path);
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The key of record r of repeated_snapshot: every fourth a new key, the
 * rest cycle over 7 keys, so every batch of 16 writes some key twice. */
static uint64_t repeated_key(uint64_t r)
{
	return r % 4 == 0 ? 1000 + r : r % 7;
}

/* A snapshot (made by hand: a real save never repeats a key) of `records`
 * records with repeated keys; record r's value is "value-r", every fifth
 * with a TTL. */
static unsigned char *repeated_snapshot(uint64_t records, uint64_t saved_ms, size_t *len)
{
	unsigned char *d = calloc(1, LARDER__SNAP_HEADER_BYTES + records * 64 +
					     LARDER__SNAP_TRAILER_BYTES);
	*len = 0;
	if (!CHECK(d != NULL))
		return NULL;
	memcpy(d, LARDER__SNAP_MAGIC, 8);
	put_le(d + 8, LARDER__SNAP_VERSION, 4);
	put_le(d + 12, LARDER__SNAP_HEADER_BYTES, 4);
	put_le(d + 16, saved_ms, 8);
	size_t off = LARDER__SNAP_HEADER_BYTES;
	for (uint64_t r = 0; r < records; r++) {
		char k[32], v[32];
		size_t kl = key_of(k, repeated_key(r));
		size_t vl = (size_t)snprintf(v, sizeof(v), "value-%llu", (unsigned long long)r);
		put_le(d + off, kl, 4);
		put_le(d + off + 4, vl, 4);
		put_le(d + off + 8, r % 5 == 0 ? 600000 : UINT64_MAX, 8);
		memcpy(d + off + LARDER__SNAP_RECORD_BYTES, k, kl);
		memcpy(d + off + LARDER__SNAP_RECORD_BYTES + kl, v, vl);
		off += LARDER__SNAP_RECORD_BYTES + kl + vl;
	}
	memcpy(d + off, LARDER__SNAP_END_MAGIC, 8);
	put_le(d + off + 8, records, 8);
	put_le(d + off + 16, XXH3_64bits(d, off + LARDER__SNAP_CHECKED_BYTES), 8);
	*len = off + LARDER__SNAP_TRAILER_BYTES;
	return d;
}

/*
 * Keys written more than once within one batch of the load (EV-V7), for
 * every policy: the maintainer queues a stretch of first-time inserts as
 * one run (POLICY-P6, maint/apply.c) and must queue it before it applies a
 * replace of one of them. Each key ends with its last record's value, the
 * totals and every queue's links match the index, and each record after a
 * key's first counts one replacement.
 */
static void test_snapshot_repeated_keys(void)
{
	enum { RECORDS = 400 };
	const enum larder_policy policies[] = {
		LARDER_POLICY_DEFAULT,	LARDER_POLICY_S3FIFO, LARDER_POLICY_FIFO,
		LARDER_POLICY_LRU,	LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC,
	};
	uint64_t saved_ms = 1700000000000ull, keys = 7 + (RECORDS + 3) / 4;
	size_t len;
	unsigned char *d = repeated_snapshot(RECORDS, saved_ms, &len);
	REQUIRE(d != NULL);
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		larder_config *cfg = th_config(64 * MiB);
		CHECK_RC(larder_config_set_policy(cfg, policies[i]), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c != NULL);
		CHECK_RC(larder__snapshot_load_mem(c, d, len, saved_ms), LARDER_OK);
		for (uint64_t r = 0; r < RECORDS; r++) {
			uint64_t last = r; /* the last record of r's key */
			for (uint64_t q = r + 1; q < RECORDS; q++)
				if (repeated_key(q) == repeated_key(r))
					last = q;
			char k[32], want[32], got[32];
			size_t kl = key_of(k, repeated_key(r)), gl = 0;
			size_t wl = (size_t)snprintf(want, sizeof(want), "value-%llu",
						     (unsigned long long)last);
			CHECK_RC(larder_get(c, k, kl, got, sizeof(got), &gl), LARDER_OK);
			CHECK(gl == wl && memcmp(got, want, wl) == 0);
		}
		uint64_t entries = 0;
		CHECK(th_check_accounting(c, 60000, &entries, NULL));
		CHECK_EQ(entries, keys);
		CHECK_EQ(th_stat(c, LARDER_STAT_REPLACEMENTS), RECORDS - keys);
		larder_close(c);
	}
	free(d);
}

/*
 * SNAP-L6: 100,000 small entries (a 19 MB file: the threaded load) into a
 * cache opened expecting 64. Growing the index under the bulk writes, one
 * doubling at a time, took the maintainer minutes for 10^6 entries
 * (docs/persistence.md): the load runs in a thread and the test polls for
 * its end with a generous deadline, failing (not hanging) past it. The index
 * is grown for the records at once (the empty first table, shrunk to 64
 * buckets before the load, needs nine doublings to hold them at TABLE-L1's
 * fill; a growth that the maintainer began before it saw the ask may come
 * first), no table is shrunk while the load runs (one was, with entries
 * lost, before SNAP-L6), and nothing is evicted.
 */
enum { SMALL_KEYS = 100000, SMALL_VALUE = 168 };

struct small_load {
	larder *cache;
	const char *path;
	int rc;
	_Atomic int done;
};

static void *small_loader(void *arg)
{
	struct small_load *l = arg;
	l->rc = larder_load(l->cache, l->path);
	atomic_store(&l->done, 1);
	return NULL;
}

static size_t small_value(unsigned char *v, uint64_t id)
{
	memset(v, (int)(id % 251), SMALL_VALUE);
	memcpy(v, &id, sizeof(id));
	return SMALL_VALUE;
}

static void test_snapshot_load_undersized_index(void)
{
	char path[512], k[32];
	unsigned char v[SMALL_VALUE], got[SMALL_VALUE];
	path_in_dir(path, "undersized.snap");
	larder *a = th_open(th_config(64 * MiB));
	REQUIRE(a != NULL);
	for (uint64_t id = 0; id < SMALL_KEYS; id++)
		CHECK_RC(larder_put(a, k, key_of(k, id), v, small_value(v, id), LARDER_TTL_NEVER),
			 LARDER_OK);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	larder_close(a);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size >= 16 * MiB);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_expected_entries(cfg, 64) == LARDER_OK);
	larder *b = th_open(cfg);
	REQUIRE(b != NULL);
	/* Shrinks may go below SMALL_BUCKETS, as far as the empty first table's
	 * own, which happens before the load. */
	larder__test_index_floor(b, 64);
	CHECK_EQ(th_quiesce(b, 60000), 0);
	uint64_t shrinks = th_stat(b, LARDER_STAT_INDEX_SHRINKS);
	struct small_load l = { .cache = b, .path = path };
	pthread_t loader;
	REQUIRE(pthread_create(&loader, NULL, small_loader, &l) == 0);
	uint64_t deadline = th_now_ms() + 240000 * TH_SLOW;
	while (!atomic_load(&l.done) && th_now_ms() < deadline)
		usleep(10000);
	if (!CHECK(atomic_load(&l.done))) {
		fprintf(stderr, "the load did not end in %u s\n", 240 * TH_SLOW);
		exit(1); /* the loader cannot be stopped; a hang would say less */
	}
	pthread_join(loader, NULL);
	CHECK_RC(l.rc, LARDER_OK);
	uint64_t entries = 0;
	CHECK(th_check_accounting(b, 60000, &entries, NULL));
	CHECK_EQ(entries, SMALL_KEYS);
	/* at most two growths of each shard's index */
	CHECK_LE(th_stat(b, LARDER_STAT_INDEX_RESIZES), 2 * th_shards());
	CHECK_EQ(th_stat(b, LARDER_STAT_INDEX_SHRINKS), shrinks);
	CHECK_EQ(th_stat(b, LARDER_STAT_EVICTIONS), 0);
	uint64_t bad = 0;
	for (uint64_t id = 0; id < SMALL_KEYS; id++) {
		size_t kl = key_of(k, id), vl = small_value(v, id), gl = 0;
		int rc = larder_get(b, k, kl, got, sizeof(got), &gl);
		bad += rc != LARDER_OK || gl != vl || memcmp(got, v, vl) != 0;
	}
	CHECK_EQ(bad, 0);
	larder_close(b);
	unlink(path);
}

/* Polls until the index has at least `slots` slots; false past the deadline.
 * Then quiesces: the maintainer swaps the grown table in before it counts
 * the resize (maint/resize.c), so INDEX_RESIZES is read after its pass. */
static int index_reaches(larder *c, uint64_t slots)
{
	uint64_t deadline = th_now_ms() + 60000u * TH_SLOW;
	while (th_stat(c, LARDER_STAT_INDEX_SLOTS) < slots && th_now_ms() < deadline)
		(void)larder__test_quiesce(c, 100); /* a pass or more; its result is polled */
	return th_stat(c, LARDER_STAT_INDEX_SLOTS) >= slots && th_quiesce(c, 60000) == 0;
}

/*
 * SNAP-L6 without a file: larder__bulk_begin() for 50,000 entries grows an
 * index of 64 buckets for them in one growth (it waits for it, but at most
 * 2 s: the test polls); after a clear, an ask for the
 * 20,000 left (larder__bulk_reserve, the loaders' ask every RESERVE_EVERY
 * batches) grows the fresh table for those, not for 50,000; while the bulk
 * writer is counted that empty table is not shrunk, and once it ends, it is.
 */
static void test_snapshot_reserve_parts(void)
{
	/* One shard: the counts below are one index's. */
	larder_config *cfg = th_config_one_shard(64 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_expected_entries(cfg, 64) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	larder__test_index_floor(c, 64); /* the empty first table shrinks to 64 buckets */
	CHECK_EQ(th_quiesce(c, 60000), 0);
	larder__bulk_begin(c, 50000);
	CHECK(index_reaches(c, larder__table_buckets_for(50000) * LARDER__BUCKET_SLOTS));
	CHECK_EQ(th_stat(c, LARDER_STAT_INDEX_RESIZES), 1);
	CHECK_RC(larder_clear(c), LARDER_OK); /* a fresh table of the first size */
	CHECK_LT(th_stat(c, LARDER_STAT_INDEX_SLOTS), larder__table_buckets_for(20000) *
							   LARDER__BUCKET_SLOTS);
	larder__bulk_reserve(c, 20000);
	CHECK(index_reaches(c, larder__table_buckets_for(20000) * LARDER__BUCKET_SLOTS));
	CHECK_LT(th_stat(c, LARDER_STAT_INDEX_SLOTS),
		 larder__table_buckets_for(50000) * LARDER__BUCKET_SLOTS);
	const uint64_t reserved = th_stat(c, LARDER_STAT_INDEX_SLOTS);
	uint64_t shrinks = th_stat(c, LARDER_STAT_INDEX_SHRINKS);
	CHECK_EQ(th_quiesce(c, 60000), 0); /* passes that would shrink the empty table */
	CHECK_EQ(th_stat(c, LARDER_STAT_INDEX_SHRINKS), shrinks);
	CHECK_EQ(th_stat(c, LARDER_STAT_INDEX_SLOTS), reserved);
	larder__bulk_end(c);
	CHECK_EQ(th_quiesce(c, 60000), 0);
	CHECK_EQ(th_stat(c, LARDER_STAT_INDEX_SHRINKS), shrinks + 1);
	CHECK_LT(th_stat(c, LARDER_STAT_INDEX_SLOTS), reserved);
	larder_close(c);
}

/* One cache of test_snapshot_plain_matches_general: one shard, a 2,000-byte
 * value limit, and either no compression (the plain bulk write, CACHE-B4)
 * or compression of values of at least LARDER_VALUE_LIMIT bytes, which
 * stores every value raw but takes the general way (write_common). */
static larder *bulk_twin(uint64_t capacity, int general)
{
	larder_config *cfg = th_config_one_shard(capacity);
	if (!cfg)
		return NULL;
	CHECK_RC(larder_config_set_max_value_bytes(cfg, 2000), LARDER_OK);
	if (general)
		CHECK_RC(larder_config_set_compression(cfg, LARDER_VALUE_LIMIT, 0), LARDER_OK);
	return th_open(cfg);
}

/*
 * CACHE-B4: the plain bulk write and the general one load the same file
 * into the same entries: the same keys (values over the limit skipped, and
 * in a small cache the same records skipped for room, SNAP-L3), values,
 * TTLs, used bytes and counts. A snapshot of mixed sizes and lifetimes,
 * loaded whole and into a cache of 2 MiB.
 */
static void test_snapshot_plain_matches_general(void)
{
	char path[512];
	path_in_dir(path, "plain.snap");
	larder *a = th_open(th_config(64 * MiB));
	REQUIRE(a != NULL);
	fill(a, 0, 2000, LARDER_TTL_NEVER);
	fill(a, 2000, 2000, 3600 * 1000);
	fill(a, 4000, 2000, 60 * 1000);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	larder_close(a);
	static const uint64_t caps[] = { 64 * MiB, 2 * MiB };
	for (size_t ci = 0; ci < TH_COUNT(caps); ci++) {
		larder *twin[2];
		uint64_t entries[2] = { 0, 0 }, bytes[2] = { 0, 0 };
		for (int g = 0; g < 2; g++) {
			twin[g] = bulk_twin(caps[ci], g);
			REQUIRE(twin[g] != NULL);
			CHECK_RC(larder_load(twin[g], path), LARDER_OK);
			CHECK(th_check_accounting(twin[g], 60000, &entries[g], &bytes[g]));
		}
		CHECK_EQ(entries[0], entries[1]);
		CHECK_EQ(bytes[0], bytes[1]);
		CHECK_GT(entries[0], 0);
		CHECK_EQ(th_stat(twin[0], LARDER_STAT_WRITES), th_stat(twin[1], LARDER_STAT_WRITES));
		CHECK_EQ(th_stat(twin[0], LARDER_STAT_EVICTIONS), 0);
		CHECK_EQ(th_stat(twin[1], LARDER_STAT_EVICTIONS), 0);
		char k[32];
		static unsigned char v[2][4096];
		uint64_t differ = 0, present = 0;
		for (uint64_t id = 0; id < 6000; id++) {
			size_t kl = key_of(k, id), vl[2] = { 0, 0 };
			uint64_t ttl[2] = { 0, 0 };
			int rc[2];
			for (int g = 0; g < 2; g++) {
				rc[g] = larder_get(twin[g], k, kl, v[g], sizeof(v[g]), &vl[g]);
				if (rc[g] == LARDER_OK &&
				    larder_ttl_remaining(twin[g], k, kl, &ttl[g]) != LARDER_OK)
					differ++;
			}
			present += rc[0] == LARDER_OK;
			/* The TTLs are counted down from each load's own clock read. */
			uint64_t gap = ttl[0] > ttl[1] ? ttl[0] - ttl[1] : ttl[1] - ttl[0];
			differ += rc[0] != rc[1] || vl[0] != vl[1] ||
				  memcmp(v[0], v[1], vl[0]) != 0 ||
				  (ttl[0] == LARDER_TTL_NEVER) != (ttl[1] == LARDER_TTL_NEVER) ||
				  (ttl[0] != LARDER_TTL_NEVER && gap > 30 * 1000);
		}
		printf("    %llu MiB cache: %llu of 6000 keys loaded\n",
		       (unsigned long long)(caps[ci] / MiB), (unsigned long long)present);
		CHECK_EQ(differ, 0);
		CHECK_EQ(present, entries[0]);
		CHECK_LT(present, 6000); /* values over 2,000 bytes were skipped */
		larder_close(twin[0]);
		larder_close(twin[1]);
	}
	unlink(path);
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof(dir), "%s/larder-snap-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	static const struct th_test tests[] = {
		TH_TEST(test_snapshot_round_trip),
		TH_TEST(test_snapshot_ttl_counts_down),
		TH_TEST(test_snapshot_bad_files),
		TH_TEST(test_snapshot_every_byte),
		TH_TEST(test_snapshot_smaller_cache),
		TH_TEST(test_snapshot_races_with_clear),
		TH_TEST(test_snapshot_write_fails),
		TH_TEST(test_snapshot_large_damaged),
		TH_TEST(test_snapshot_load_races_writer),
		TH_TEST(test_snapshot_load_races_with_clear),
		TH_TEST(test_snapshot_load_then_close),
		TH_TEST(test_snapshot_load_alloc_fails),
		TH_TEST(test_snapshot_repeated_keys),
		TH_TEST(test_snapshot_load_undersized_index),
		TH_TEST(test_snapshot_reserve_parts),
		TH_TEST(test_snapshot_plain_matches_general),
	};
	int rc = th_main(argc, argv, tests, TH_COUNT(tests));
	rmdir(dir);
	return rc;
}
