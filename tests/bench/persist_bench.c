/*
 * persist_bench.c - what iteration and snapshots cost (docs/persistence.md).
 *
 * Modes (one command each; every figure is a median of --rounds rounds,
 * with min..max, and comparisons are made within the same run):
 *   --iter:  fills --entries entries (16-byte keys, 32-byte values), then
 *            per round: --readers reader threads (larder_get of random keys)
 *            and --writers writer threads (larder_put of random keys) run for
 *            --duration-ms alone (the baseline), then again while one thread
 *            walks a cursor over the whole cache as fast as it can. Prints
 *            entries per second of the walk and the readers' and writers'
 *            operations per second with the walk as a ratio of without.
 *   --save:  fills --entries entries of --value-bytes values; per round:
 *            larder_save (with its fsync) of the cache against the device's
 *            sequential write of as many bytes (write + fsync), larder_load
 *            of the file into a fresh cache with the file in the page cache
 *            (warm) and again after evicting it (cold) against the device's
 *            sequential read of the evicted file, and `cp` + `sync` of that
 *            file (the yardstick, kept beside them), with the load's
 *            user and system CPU time (the system part is mostly the
 *            kernel zeroing fresh pages for the new cache), how many
 *            CPUs that kept busy on average, and how often the loaders'
 *            events spilled and they waited for the maintainer. Then
 *            readers run
 *            for the save's length alone and while a save runs: the cost to
 *            concurrent gets. Only one cache is open at a time (see
 *            bench_save), so 10^8 entries need one cache's memory.
 *   --load-only: one save, then --rounds loads of it (for profilers).
 *   --touch: no cache; the first touch of --mib MiB of fresh memory right
 *            after as much was freed and after --pause-ms (bench_touch):
 *            what the new cache's memory costs a load on this machine.
 * Arguments: --entries N --value-bytes N --readers N --writers N
 *            --duration-ms N --rounds N --dir PATH (the snapshot's directory)
 *            --expected N (the caches' larder_config_set_expected_entries;
 *            default --entries: an index sized for the load, where larderd
 *            sizes its own for one entry per KiB of memory and lets it grow).
 * The machine may be shared: read the ratios, not the absolute numbers.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

struct opts {
	uint64_t entries, value_bytes, readers, writers, duration_ms, rounds, expected;
	const char *dir;
};

static struct opts o;
static larder *cache;
static _Atomic int phase_stop;
static _Atomic uint64_t reads_done, writes_done;

static size_t key_of(char *k, uint64_t id)
{
	return (size_t)snprintf(k, 32, "key-%012llu", (unsigned long long)id);
}

/* Two threads fill the cache, each a half of the ids (on two cores, a 10^8
 * fill takes minutes; it is not what is measured). */
struct fill_part {
	larder *cache;
	uint64_t from, to;
};

static void *fill_part(void *arg)
{
	struct fill_part *f = arg;
	char k[32];
	unsigned char *v = calloc(1, o.value_bytes + 1);
	for (uint64_t id = f->from; id < f->to; id++) {
		memcpy(v, &id, sizeof(id) < o.value_bytes ? sizeof(id) : o.value_bytes);
		if (larder_put(f->cache, k, key_of(k, id), v, o.value_bytes, LARDER_TTL_NEVER) != LARDER_OK) {
			fprintf(stderr, "fill failed at %llu\n", (unsigned long long)id);
			exit(1);
		}
	}
	free(v);
	return NULL;
}

static void fill(larder *c)
{
	struct fill_part parts[2] = { { c, 0, o.entries / 2 }, { c, o.entries / 2, o.entries } };
	if (th_run_threads(2, fill_part, parts, sizeof(parts[0])) != 0)
		exit(1);
}

static void *reader(void *arg)
{
	struct th_rng r = { (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull };
	char k[32];
	unsigned char *buf = malloc(o.value_bytes + 1);
	uint64_t n = 0;
	size_t len;
	while (!atomic_load_explicit(&phase_stop, memory_order_relaxed)) {
		for (int i = 0; i < 256; i++) {
			uint64_t id = th_rng_below(&r, o.entries);
			if (larder_get(cache, k, key_of(k, id), buf, o.value_bytes + 1, &len) != LARDER_OK)
				abort();
		}
		n += 256;
	}
	atomic_fetch_add(&reads_done, n);
	free(buf);
	return NULL;
}

static void *writer(void *arg)
{
	struct th_rng r = { (uint64_t)(uintptr_t)arg * 0xbf58476d1ce4e5b9ull };
	char k[32];
	unsigned char *v = calloc(1, o.value_bytes + 1);
	uint64_t n = 0;
	while (!atomic_load_explicit(&phase_stop, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++) {
			uint64_t id = th_rng_below(&r, o.entries);
			if (larder_put(cache, k, key_of(k, id), v, o.value_bytes, LARDER_TTL_NEVER) != LARDER_OK)
				abort();
		}
		n += 64;
	}
	atomic_fetch_add(&writes_done, n);
	free(v);
	return NULL;
}

static void count_entry(void *ctx, const void *key, size_t key_len, const void *value,
			size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)key, (void)key_len, (void)value, (void)value_len, (void)ttl_ms, (void)entry_bytes;
	(*(uint64_t *)ctx)++;
}

enum job { JOB_NONE, JOB_WALK, JOB_SAVE, JOB_SLEEP };

struct job_arg {
	enum job job;
	uint64_t walked;
	uint64_t ns;
	char path[512];
};

/* The job thread: does its job (a walk, a save) or waits out the phase. */
static void *job_thread(void *arg)
{
	struct job_arg *j = arg;
	uint64_t t0 = th_now_ns();
	if (j->job == JOB_WALK) {
		larder_iter *it;
		if (larder_iter_open(cache, &it) != LARDER_OK)
			abort();
		while (larder_iter_next(it, count_entry, &j->walked) == LARDER_OK)
			;
		larder_iter_close(it);
	} else if (j->job == JOB_SAVE) {
		if (larder_save(cache, j->path) != LARDER_OK)
			abort();
	} else {
		th_pause_ms(o.duration_ms);
	}
	j->ns = th_now_ns() - t0;
	atomic_store(&phase_stop, 1);
	return NULL;
}

struct role {
	int kind; /* 0 reader, 1 writer, 2 job */
	uintptr_t seed;
	struct job_arg *job;
};

static void *run_role(void *arg)
{
	struct role *r = arg;
	if (r->kind == 0)
		return reader((void *)r->seed);
	if (r->kind == 1)
		return writer((void *)r->seed);
	return job_thread(r->job);
}

/* One phase: readers and writers while the job runs (or for duration_ms). */
static void phase(struct job_arg *job, uint64_t readers, uint64_t writers, double *rps, double *wps)
{
	atomic_store(&phase_stop, 0);
	atomic_store(&reads_done, 0);
	atomic_store(&writes_done, 0);
	size_t n = (size_t)(readers + writers + 1);
	struct role *roles = calloc(n, sizeof(*roles));
	for (size_t i = 0; i < n; i++) {
		roles[i].kind = i < readers ? 0 : i < readers + writers ? 1 : 2;
		roles[i].seed = i + 1 + (uintptr_t)th_now_ns();
		roles[i].job = job;
	}
	uint64_t t0 = th_now_ns();
	th_run_threads(n, run_role, roles, sizeof(*roles));
	double s = (double)(th_now_ns() - t0) / 1e9;
	*rps = (double)atomic_load(&reads_done) / s;
	*wps = (double)atomic_load(&writes_done) / s;
	free(roles);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, uint64_t n, const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("| %-48s | %12.3f | %10.3f .. %-10.3f | %s |\n", name, v[n / 2], v[0], v[n - 1], unit);
}

static larder *open_cache(void)
{
	larder_config *cfg = th_config(((o.entries * (o.value_bytes + 64)) * 3) / 2 + (64u << 20));
	if (!cfg || larder_config_set_expected_entries(cfg, o.expected) != LARDER_OK ||
	    larder_config_set_max_value_bytes(cfg, o.value_bytes + 1) != LARDER_OK)
		abort();
	return th_open(cfg);
}

static void bench_iter(void)
{
	double eps[64], rr[64], wr[64];
	for (uint64_t r = 0; r < o.rounds; r++) {
		struct job_arg idle = { JOB_SLEEP, 0, 0, "" }, walk = { JOB_WALK, 0, 0, "" };
		double r0, w0, r1, w1;
		phase(&idle, o.readers, o.writers, &r0, &w0);
		phase(&walk, o.readers, o.writers, &r1, &w1);
		eps[r] = (double)walk.walked / ((double)walk.ns / 1e9) / 1e6;
		rr[r] = o.readers ? r1 / r0 : 0;
		wr[r] = o.writers ? w1 / w0 : 0;
		if (walk.walked < o.entries * 9 / 10)
			fprintf(stderr, "walk saw only %llu entries\n", (unsigned long long)walk.walked);
	}
	printf("| figure (%llu entries, %llu readers, %llu writers) | median | min .. max | unit |\n",
	       (unsigned long long)o.entries, (unsigned long long)o.readers,
	       (unsigned long long)o.writers);
	printf("|---|---|---|---|\n");
	report("walk rate", eps, o.rounds, "M entries/s");
	report("readers' gets during the walk / without", rr, o.rounds, "ratio");
	report("writers' puts during the walk / without", wr, o.rounds, "ratio");
}

/* CPU seconds of the whole process so far (every thread: the loaders and
 * the maintainer), user and system. */
static void cpu_seconds(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (double)st.st_size : 0;
}

/*
 * The device's own sequential speeds, each taken the way a snapshot does
 * its I/O, in the same round as the save or load it is compared with (the
 * shared virtual disk's speed drifts from minute to minute; `cp` + `sync`
 * of the same file swung 0.28-1.82 GB/s between rounds on a quiet machine).
 *
 * write_seconds: `bytes` in 1 MiB write()s to a new file, then fsync, as a
 * save writes and syncs its file (no shell, no second file read, nothing
 * else synced). read_seconds: the file read start to end in 1 MiB read()s
 * (what `dd bs=1M` does), after evict() took it out of the page cache, as a
 * cold load finds it. Both abort on an I/O error: a bench with a broken
 * baseline measures nothing.
 */
static double write_seconds(const char *path, double bytes)
{
	size_t chunk = 1u << 20;
	unsigned char *buf = malloc(chunk);
	if (!buf)
		abort();
	for (size_t i = 0; i < chunk; i++)
		buf[i] = (unsigned char)(i * 131u + 7u); /* not zeros: nothing may skip them */
	uint64_t t0 = th_now_ns();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	for (double done = 0; done < bytes;) {
		size_t n = bytes - done < (double)chunk ? (size_t)(bytes - done) : chunk;
		ssize_t w = write(fd, buf, n);
		if (w <= 0)
			abort();
		done += (double)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0)
		abort();
	double s = (double)(th_now_ns() - t0) / 1e9;
	unlink(path);
	free(buf);
	return s;
}

static double read_seconds(const char *path)
{
	size_t chunk = 1u << 20;
	unsigned char *buf = malloc(chunk);
	uint64_t t0 = th_now_ns();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0)
		abort();
	ssize_t r;
	while ((r = read(fd, buf, chunk)) > 0)
		;
	if (r < 0)
		abort();
	close(fd);
	double s = (double)(th_now_ns() - t0) / 1e9;
	free(buf);
	return s;
}

/* The load's own way of reading: the file mapped with MAP_POPULATE (as
 * larder_load maps it), then unmapped; after evict(), to show whether the
 * mapping reads the device as fast as read() does. */
static double populate_seconds(const char *path)
{
	uint64_t t0 = th_now_ns();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
		abort();
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED)
		abort();
	munmap(map, (size_t)st.st_size);
	close(fd);
	return (double)(th_now_ns() - t0) / 1e9;
}

/* Drops the file's pages from the page cache (they are clean: the save
 * fsynced them), so the next read of it goes to the device. */
static void evict(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
		abort();
	close(fd);
}

/* The share of the file's pages in the page cache (mincore), to show that
 * evict() did evict: a "cold" figure read from memory would flatter. */
static double resident_share(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
		abort();
	size_t len = (size_t)st.st_size, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (len + page - 1) / page, in = 0;
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	unsigned char *vec = malloc(pages);
	if (map == MAP_FAILED || !vec || mincore(map, len, vec) != 0)
		abort();
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	munmap(map, len);
	close(fd);
	free(vec);
	return (double)in / (double)pages;
}

static double faster(double a, double b)
{
	return a > b ? a : b;
}

/* Closes the cache, opens a fresh one and loads the file into it (the
 * new cache), as a restart does; returns the load's seconds. A load that
 * did not write every entry ends the bench. */
static double reload(const char *path)
{
	larder_close(cache);
	cache = open_cache();
	uint64_t t0 = th_now_ns();
	if (larder_load(cache, path) != LARDER_OK)
		abort();
	double s = (double)(th_now_ns() - t0) / 1e9;
	if (th_stat(cache, LARDER_STAT_WRITES) != o.entries) {
		fprintf(stderr, "load wrote %llu of %llu\n",
			(unsigned long long)th_stat(cache, LARDER_STAT_WRITES),
			(unsigned long long)o.entries);
		exit(1);
	}
	return s;
}

/*
 * Per round: save the cache (timed), readers alone and during a second save
 * (when --readers > 0), the device's sequential write of as many bytes
 * (write + fsync) and `cp` + `sync` of the file (in turns, one round the
 * one first, the next round the other), then the cache is closed and a
 * fresh one loads the file (timed, the file in the page cache: "warm");
 * then the file is evicted from the page cache, read start to end (the
 * device's sequential read), evicted, mapped with MAP_POPULATE (the load's
 * own read, for comparison), evicted again and loaded into a fresh cache
 * (timed: "cold"), which becomes the cache of the next round. Only one
 * cache is open at a time, so the peak memory is one cache plus the file
 * in the page cache (what a restart of a process needs), and every round's
 * save is of a cache that the previous round loaded: a load that lost an
 * entry shows in the next round's count.
 */
static void bench_save(void)
{
	double save_gbs[64], load_gbs[64], cp_gbs[64], save_ratio[64], load_ratio[64], get_ratio[64];
	double write_gbs[64], read_gbs[64], cold_gbs[64], save_write[64], cold_read[64];
	double resident[64], populate_gbs[64];
	double load_user[64], load_sys[64], load_busy[64], load_waits[64], load_spilled[64];
	double load_growths[64], cold_user[64], cold_sys[64];
	char path[512], copy[600], cmd[2000];
	snprintf(path, sizeof(path), "%s/persist_bench.snap", o.dir);
	snprintf(copy, sizeof(copy), "%s.cp", path);
	double size = 0;
	for (uint64_t r = 0; r < o.rounds; r++) {
		uint64_t t0 = th_now_ns();
		if (larder_save(cache, path) != LARDER_OK)
			abort();
		double save_s = (double)(th_now_ns() - t0) / 1e9;
		size = file_bytes(path);
		get_ratio[r] = 0;
		if (o.readers) {
			/* Gets alone for the save's length, then during a save. */
			struct job_arg idle = { JOB_SLEEP, 0, 0, "" }, save = { JOB_SAVE, 0, 0, "" };
			memcpy(save.path, path, sizeof(path));
			uint64_t keep = o.duration_ms;
			o.duration_ms = (uint64_t)(save_s * 1000) + 1;
			double r0, w0, r1, w1;
			phase(&idle, o.readers, 0, &r0, &w0);
			phase(&save, o.readers, 0, &r1, &w1);
			o.duration_ms = keep;
			get_ratio[r] = r1 / r0;
		}
		/* The two write baselines take turns at going first, so that
		 * neither always runs right after the save (a disk's speed
		 * depends on what it has just been given). */
		double write_s = r % 2 == 0 ? write_seconds(copy, size) : 0;
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && sync '%s'", path, copy, copy);
		t0 = th_now_ns();
		if (system(cmd) != 0)
			abort();
		double cp_s = (double)(th_now_ns() - t0) / 1e9;
		unlink(copy);
		if (r % 2 == 1)
			write_s = write_seconds(copy, size);
		double u0, s0, u1, s1;
		cpu_seconds(&u0, &s0);
		double load_s = reload(path);
		cpu_seconds(&u1, &s1);
		load_user[r] = u1 - u0;
		load_sys[r] = s1 - s0;
		load_busy[r] = (load_user[r] + load_sys[r]) / load_s;
		/* Per 10^6 entries: the loaders' events that went to a spill, and
		 * writes that waited for the maintainer to take their events (a
		 * load that waits runs at the maintainer's speed). */
		load_spilled[r] = (double)th_stat(cache, LARDER_STAT_EVENTS_SPILLED) * 1e6 /
				  (double)o.entries;
		load_waits[r] = (double)th_stat(cache, LARDER_STAT_MAINT_WAITS) * 1e6 /
				(double)o.entries;
		/* Index doublings finished by the load's end (an index sized
		 * below the snapshot's entries grows while it loads). */
		load_growths[r] = (double)th_stat(cache, LARDER_STAT_INDEX_RESIZES);
		evict(path);
		double read_s = read_seconds(path);
		evict(path);
		double populate_s = populate_seconds(path);
		evict(path);
		resident[r] = resident_share(path);
		cpu_seconds(&u0, &s0);
		double cold_s = reload(path);
		cpu_seconds(&u1, &s1);
		cold_user[r] = u1 - u0;
		cold_sys[r] = s1 - s0;
		save_gbs[r] = size / save_s / 1e9;
		load_gbs[r] = size / load_s / 1e9;
		cp_gbs[r] = size / cp_s / 1e9;
		write_gbs[r] = size / write_s / 1e9;
		read_gbs[r] = size / read_s / 1e9;
		populate_gbs[r] = size / populate_s / 1e9;
		cold_gbs[r] = size / cold_s / 1e9;
		save_ratio[r] = save_gbs[r] / cp_gbs[r];
		load_ratio[r] = load_gbs[r] / cp_gbs[r];
		/* Against the faster of the two ways of measuring the device in
		 * this round: each is a lower bound on what the device can do,
		 * and either may be slowed by the machine's other jobs (a
		 * read() loop waiting for a CPU between calls ran 0.2-1.5 s
		 * where one MAP_POPULATE took 0.2-0.4 s, at load average 17). */
		save_write[r] = save_gbs[r] / faster(write_gbs[r], cp_gbs[r]);
		cold_read[r] = cold_gbs[r] / faster(read_gbs[r], populate_gbs[r]);
	}
	unlink(path);
	printf("| figure (%llu entries of %llu-byte values, snapshot %.0f MB) | median | min .. max | unit |\n",
	       (unsigned long long)o.entries, (unsigned long long)o.value_bytes, size / 1e6);
	printf("|---|---|---|---|\n");
	report("save (write + fsync + rename)", save_gbs, o.rounds, "GB/s");
	report("device write: 1 MiB writes + fsync", write_gbs, o.rounds, "GB/s");
	report("device write: cp + sync of the same file", cp_gbs, o.rounds, "GB/s");
	report("save / device write (the faster of the two)", save_write, o.rounds, "ratio");
	report("load, file in the page cache (warm)", load_gbs, o.rounds, "GB/s");
	report("load, file evicted first (cold)", cold_gbs, o.rounds, "GB/s");
	report("device read: 1 MiB reads of the evicted file", read_gbs, o.rounds, "GB/s");
	report("device read: map + populate (the load's read)", populate_gbs, o.rounds, "GB/s");
	report("cold load / device read (the faster of the two)", cold_read, o.rounds, "ratio");
	report("file's pages cached after the eviction", resident, o.rounds, "share");
	report("save / cp", save_ratio, o.rounds, "ratio");
	report("warm load / cp", load_ratio, o.rounds, "ratio");
	report("warm load, user CPU (all threads)", load_user, o.rounds, "s");
	report("warm load, system CPU (all threads)", load_sys, o.rounds, "s");
	/* Out of the machine's CPUs: a load that keeps them all busy has no
	 * idle CPU for work moved to another thread (pre-faulting its memory,
	 * say) to use. */
	report("warm load, CPUs busy ((user + system) / wall)", load_busy, o.rounds, "CPUs");
	/* The cold load runs seconds after the previous cache's memory was
	 * freed: in a virtual machine whose free memory goes back to the host
	 * (free page reporting), the new cache's first touches are then the
	 * host's page faults, system time here (--touch measures them alone). */
	report("cold load, user CPU (all threads)", cold_user, o.rounds, "s");
	report("cold load, system CPU (all threads)", cold_sys, o.rounds, "s");
	report("warm load, events spilled per 10^6 entries", load_spilled, o.rounds, "events");
	report("warm load, waits for the maintainer per 10^6", load_waits, o.rounds, "waits");
	report("warm load, index growths finished", load_growths, o.rounds, "growths");
	if (o.readers)
		report("readers' gets during a save / without", get_ratio, o.rounds, "ratio");
}

/*
 * --load-only: saves once, then loads the file into a fresh cache
 * --rounds times and prints each load's time and CPU (all threads: the
 * loaders' and the maintainer's); for profilers (callgrind, perf), where
 * only the loads should dominate, and for comparing builds by CPU.
 */
static void bench_load_only(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/persist_bench.snap", o.dir);
	if (larder_save(cache, path) != LARDER_OK)
		abort();
	larder_close(cache);
	for (uint64_t r = 0; r < o.rounds; r++) {
		cache = open_cache();
		double u0, s0, u1, s1;
		cpu_seconds(&u0, &s0);
		uint64_t t0 = th_now_ns();
		if (larder_load(cache, path) != LARDER_OK)
			abort();
		double s = (double)(th_now_ns() - t0) / 1e9;
		cpu_seconds(&u1, &s1);
		printf("load %llu: %.3f s, %llu entries, user CPU %.3f s, system CPU %.3f s\n",
		       (unsigned long long)r, s,
		       (unsigned long long)th_stat(cache, LARDER_STAT_WRITES), u1 - u0, s1 - s0);
		if (r + 1 < o.rounds)
			larder_close(cache);
	}
	unlink(path);
}

/* Maps `bytes` of fresh memory as the slab maps its pages (huge pages
 * advised), writes a byte of every 4 KiB and unmaps it: the seconds. */
static double touch_seconds(size_t bytes)
{
	uint64_t t0 = th_now_ns();
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		abort();
	(void)madvise(m, bytes, MADV_HUGEPAGE);
	for (size_t i = 0; i < bytes; i += 4096)
		((volatile unsigned char *)m)[i] = 1;
	double s = (double)(th_now_ns() - t0) / 1e9;
	munmap(m, bytes);
	return s;
}

/*
 * --touch: what a load's fresh memory costs on this machine, apart from
 * any cache: --mib MiB first touched right after as much was unmapped (the
 * kernel hands the same pages back: zeroing only), and again after a pause
 * of --pause-ms (default 4,000), when a virtual machine with free page
 * reporting (virtio-balloon) has given the freed memory back to the host,
 * whose page faults then back each touch. A load into a new cache touches
 * about its used bytes (LARDER_STAT_PAGES_MAPPED) of such memory.
 */
static void bench_touch(uint64_t mib, uint64_t pause_ms)
{
	double hot[64], cold[64];
	size_t bytes = (size_t)mib << 20;
	(void)touch_seconds(bytes); /* the first round's "right after" needs a free before it */
	for (uint64_t r = 0; r < o.rounds; r++) {
		hot[r] = (double)bytes / touch_seconds(bytes) / 1e9;
		usleep((useconds_t)(pause_ms * 1000));
		cold[r] = (double)bytes / touch_seconds(bytes) / 1e9;
	}
	printf("| figure (%llu MiB, pause %llu ms) | median | min .. max | unit |\n",
	       (unsigned long long)mib, (unsigned long long)pause_ms);
	printf("|---|---|---|---|\n");
	report("first touch right after a free", hot, o.rounds, "GB/s");
	report("first touch after the pause", cold, o.rounds, "GB/s");
}

int main(int argc, char **argv)
{
	int iter = 0, save = 0, load_only = 0, touch = 0;
	for (int i = 1; i < argc; i++) {
		iter |= strcmp(argv[i], "--iter") == 0;
		save |= strcmp(argv[i], "--save") == 0;
		load_only |= strcmp(argv[i], "--load-only") == 0;
		touch |= strcmp(argv[i], "--touch") == 0;
	}
	o.entries = th_arg_u64(argc, argv, "--entries", 1000000);
	o.value_bytes = th_arg_u64(argc, argv, "--value-bytes", 32);
	o.readers = th_arg_u64(argc, argv, "--readers", 1);
	o.writers = th_arg_u64(argc, argv, "--writers", iter ? 1 : 0);
	o.duration_ms = th_arg_u64(argc, argv, "--duration-ms", 2000);
	o.rounds = th_arg_u64(argc, argv, "--rounds", 5);
	o.expected = th_arg_u64(argc, argv, "--expected", o.entries);
	o.dir = ".";
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--dir") == 0)
			o.dir = argv[i + 1];
	uint64_t mib = th_arg_u64(argc, argv, "--mib", 1024);
	if ((!iter && !save && !load_only && !touch) || o.rounds < 1 || o.rounds > 64 ||
	    o.entries < 1 || o.expected < 1 || mib < 1 || mib > ((uint64_t)1 << 20)) {
		fprintf(stderr, "usage: larder_persist_bench --iter|--save|--load-only|--touch [--entries N] [--value-bytes N]"
				" [--readers N] [--writers N] [--duration-ms N] [--rounds N] [--dir PATH]"
				" [--expected N] [--mib N] [--pause-ms N]\n");
		return 2;
	}
	if (touch) {
		bench_touch(mib, th_arg_u64(argc, argv, "--pause-ms", 4000));
		return 0;
	}
	cache = open_cache();
	if (!cache)
		return 1;
	uint64_t t0 = th_now_ns();
	fill(cache);
	printf("filled %llu entries in %.1f s\n", (unsigned long long)o.entries,
	       (double)(th_now_ns() - t0) / 1e9);
	if (iter)
		bench_iter();
	if (save)
		bench_save();
	if (load_only)
		bench_load_only();
	larder_close(cache);
	return th_failures() ? 1 : 0;
}
