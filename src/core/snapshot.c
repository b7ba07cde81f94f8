/*
 * core/snapshot.c - warm restart: larder_save() and larder_load().
 *
 * Save streams a cursor (core/iter.c, in its range mode: a range of entries
 * per read section, no second lookup) into a buffer and the buffer into a
 * temporary file beside the target, hashing every byte as it goes (XXH3-64,
 * streaming), then writes the trailer, fsyncs, renames over the target and
 * fsyncs the directory. The cursor's callback only copies into the buffer
 * (growing it, inside the section, for a range bigger than half of it):
 * every system call happens outside read sections, so a slow disk delays no
 * grace period. A flusher thread writes one buffer while the cursor fills
 * the other (SNAP-S1), and write-back to the device starts every 8 MiB, so
 * the final fsync waits for the tail only. Format: core/snapshot.h.
 *
 * Load maps the file and checks it whole before it writes anything:
 *   SNAP-L1. magic and version first (LARDER_EFORMAT: someone else's file, or a
 *       newer larder's), then the length and the trailer (LARDER_ECORRUPT),
 *       then the checksum and every record's lengths against the bytes
 *       left and the record count (LARDER_ECORRUPT; in a file of 16 MiB or
 *       more the checksum runs in a thread beside the records' walk). Only a
 *       file that passes all of them is applied, so a refused file leaves
 *       the cache as it was.
 *   SNAP-L2. A record's TTL counts down by the wall-clock time between the save's
 *       start and the load (a clock set backwards counts as no time); one
 *       with nothing left is dropped. The saved TTL was measured against the
 *       saving cache's clock at the moment the cursor handed the entry out.
 *   SNAP-L3. Capacity: the load keeps its own count of the bytes its entries
 *       charge as stored (compressed, in a compressing cache: the write
 *       reports it, larder__put_batch), starting from the cache's used
 *       bytes, and skips an entry that would take it above the capacity;
 *       so a load never makes the maintainer evict what it has just loaded
 *       (the policy's choice would depend on timing). Keys it overwrites
 *       are counted as if new: a load into a full cache may stop early;
 *       into an empty one it is exact.
 *   SNAP-L4. A snapshot that fits whole (its plain charge, summed while SNAP-L1
 *       checks the records, plus the used bytes: a compressing cache
 *       charges no more) is written by several threads
 *       (load_parallel); only one that does not fit needs the file order.
 *   SNAP-L5. Records are written in batches, the next batch's home buckets
 *       prefetched meanwhile (batch_fill); the order of writes stays the
 *       file's, so SNAP-L3 is unchanged.
 *   SNAP-L6. Before the first write the index is grown to hold the cache's
 *       entries and the records that will fit (larder__bulk_begin in
 *       maint/resize.c: at once, by 2^k), and no table is shrunk while the
 *       load runs; every RESERVE_EVERY batches a loader asks again for what
 *       its stretch has left, so a table a clear swapped in meanwhile is
 *       grown for the rest of the load, not for all of it. Growing under
 *       the bulk writes instead, which outrun the maintainer (EV-V7), took
 *       minutes (docs/persistence.md).
 *   SNAP-L7. Only a regular file is read: a directory, FIFO, socket or device
 *       path is LARDER_EFORMAT at once (opened without blocking, so a FIFO
 *       with no writer does not hang the load; a path open() refuses, as it
 *       refuses a socket with ENXIO, is looked at with stat() before the
 *       failure is reported). Tests: test_save_paths_link_socket
 *       (tests/unit/test_contracts_docs.c).
 * Save:
 *   SNAP-S2. A path that names an existing device (such as /dev/null, when
 *       run as root), FIFO or socket is refused with LARDER_EINVAL before
 *       anything is written: the rename would replace it. (A directory is
 *       left to the rename, which fails: LARDER_ESYS, EISDIR.) Tests:
 *       test_snapshot_path_not_a_file (tests/unit/test_outside.c).
 * Not guaranteed: a point-in-time cut (see larder_save in larder.h).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/entry.h"
#include "core/hash.h"
#include "core/iter.h"
#include "core/snapshot.h"
#include "maint/maintainer.h"
#include "mem/slab.h"

#define WRITE_BUFFER_BYTES ((size_t)1 << 20)

/* Little-endian fields as whole words: byte-by-byte loops were about 90 of
 * the ~130 instructions the load spent per record outside the write itself
 * (callgrind, 10^6 records). */
static void put_u32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- Save ------------------------------------------------------------------- */

struct writer {
	int fd;
	unsigned char *buf; /* the buffer the cursor fills */
	size_t used, cap;
	int nomem; /* the callback could not grow buf */
	XXH3_state_t *hash;
	uint64_t records;
	uint64_t written, kicked; /* bytes written; bytes whose write-back was started */
	/* SNAP-S1: the flusher and what it shares with the saver, under lock. */
	int threaded;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned char *other; /* the second buffer: being written, or free */
	size_t other_cap;
	size_t job_len; /* bytes of `other` to write; 0: the flusher is idle */
	int stop, job_rc, job_errno;
};

/*
 * Every WRITEBACK_BYTES written, the save asks the kernel to start writing
 * them to the device (sync_file_range, SYNC_FILE_RANGE_WRITE: it does not
 * wait), so the device works while the cursor walks the rest and the final
 * fsync waits only for the tail, not for the whole file. Only a hint: a file
 * system that refuses it leaves everything to the fsync, as before.
 */
#define WRITEBACK_BYTES ((uint64_t)8 << 20)

/* Hashes and writes len bytes of p (outside any read section). */
static int write_out(struct writer *w, const unsigned char *p, size_t len)
{
	if (XXH3_64bits_update(w->hash, p, len) != XXH_OK)
		return LARDER_ENOMEM;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(w->fd, p + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return LARDER_ESYS;
		}
		off += (size_t)n;
	}
	w->written += len;
	if (w->written - w->kicked >= WRITEBACK_BYTES) {
		(void)sync_file_range(w->fd, (off_t)w->kicked, (off_t)(w->written - w->kicked),
				      SYNC_FILE_RANGE_WRITE);
		w->kicked = w->written;
	}
	return LARDER_OK;
}

/*
 * SNAP-S1. While the cursor walks, a flusher thread hashes and writes one
 * buffer as the saver fills the other, so the walk (random reads of the
 * cache's memory) and the copy into the page cache overlap instead of
 * adding up. Buffers change hands only under w->lock: the saver hands its
 * full buffer over (flush) once the flusher is idle and takes the one the
 * flusher finished; the hash state, the file offset counts and fd are the
 * flusher's while it runs and the saver's again after flusher_stop(). The
 * first write error stops the writing (job_rc, with the flusher's errno),
 * and the saver reports it at its next hand-over. Without a second buffer or
 * a thread, flush writes in the saver's thread, as one buffer did before.
 */
static void *flusher_main(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->job_len && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->job_len)
			break;
		int rc = w->job_rc;
		const unsigned char *p = w->other;
		size_t len = w->job_len;
		pthread_mutex_unlock(&w->lock);
		if (rc == LARDER_OK)
			rc = write_out(w, p, len);
		int err = errno;
		pthread_mutex_lock(&w->lock);
		if (w->job_rc == LARDER_OK && rc != LARDER_OK) {
			w->job_rc = rc;
			w->job_errno = err;
		}
		w->job_len = 0;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void flusher_start(struct writer *w)
{
	w->other = larder__malloc(WRITE_BUFFER_BYTES);
	w->other_cap = WRITE_BUFFER_BYTES;
	if (!w->other)
		return;
	if (pthread_mutex_init(&w->lock, NULL) != 0)
		return;
	if (pthread_cond_init(&w->cond, NULL) != 0) {
		pthread_mutex_destroy(&w->lock);
		return;
	}
	w->job_len = 0;
	w->stop = 0;
	w->job_rc = LARDER_OK;
	if (pthread_create(&w->thread, NULL, flusher_main, w) != 0) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		return;
	}
	w->threaded = 1;
}

/* Waits for the flusher's last buffer, ends it; its first error, if any. */
static int flusher_stop(struct writer *w)
{
	if (!w->threaded)
		return LARDER_OK;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	w->threaded = 0;
	if (w->job_rc != LARDER_OK)
		errno = w->job_errno;
	return w->job_rc;
}

/* Writes the buffer out: hands it to the flusher, or writes it here. */
static int flush(struct writer *w)
{
	if (!w->threaded) {
		int rc = write_out(w, w->buf, w->used);
		w->used = 0;
		return rc;
	}
	pthread_mutex_lock(&w->lock);
	while (w->job_len)
		pthread_cond_wait(&w->cond, &w->lock);
	int rc = w->job_rc;
	if (rc == LARDER_OK) {
		unsigned char *b = w->other;
		size_t cap = w->other_cap;
		w->other = w->buf;
		w->other_cap = w->cap;
		w->job_len = w->used;
		w->buf = b;
		w->cap = cap;
		w->used = 0;
		pthread_cond_broadcast(&w->cond);
	} else {
		errno = w->job_errno;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* The cursor's question before each entry after a call's first (ITER-I5 in
 * core/iter.c), inside the read section: a quarter of the buffer still
 * free. So a range of large values goes out in pieces, each flushed
 * before the next, instead of growing the buffer to hold the range, while
 * a range of small entries (a few hundred of them, started below half
 * full) is hardly ever cut, which would cost its rest a second lookup. */
static int buffer_has_room(void *ctx)
{
	const struct writer *w = ctx;
	return w->used < w->cap - w->cap / 4;
}

/* The cursor's callback, inside a read section: copies only. */
static void append_entry(void *ctx, const void *key, size_t key_len, const void *value,
			 size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct writer *w = ctx;
	(void)entry_bytes;
	size_t need = LARDER__SNAP_RECORD_BYTES + key_len + value_len;
	if (w->used + need > w->cap) {
		/* The caller flushes before each call once the buffer is half
		 * full, and a call stops at three quarters (buffer_has_room);
		 * a record bigger than the rest grows it. */
		size_t cap = 2 * (w->used + need);
		unsigned char *b = larder__realloc(w->buf, cap);
		if (!b) {
			w->nomem = 1;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	unsigned char *p = w->buf + w->used;
	put_u32(p, (uint32_t)key_len);
	put_u32(p + 4, (uint32_t)value_len);
	put_u64(p + 8, ttl_ms == LARDER_TTL_NEVER ? UINT64_MAX : ttl_ms);
	memcpy(p + LARDER__SNAP_RECORD_BYTES, key, key_len);
	if (value_len)
		memcpy(p + LARDER__SNAP_RECORD_BYTES + key_len, value, value_len);
	w->used += need;
	w->records++;
}

static int write_entries(larder *c, struct writer *w)
{
	larder_iter *it;
	int rc = larder_iter_open(c, &it);
	if (rc != LARDER_OK)
		return rc;
	flusher_start(w);
	for (;;) {
		if (w->used >= w->cap / 2 && (rc = flush(w)) != LARDER_OK)
			break;
		rc = larder__iter_next_range(it, append_entry, buffer_has_room, w);
		if (rc == LARDER_MISS) {
			rc = LARDER_OK;
			break;
		}
		if (rc != LARDER_OK)
			break;
		if (w->nomem) {
			rc = LARDER_ENOMEM;
			break;
		}
	}
	larder_iter_close(it);
	int flushed = flusher_stop(w);
	return rc != LARDER_OK ? rc : flushed;
}

static int write_snapshot(larder *c, struct writer *w)
{
	unsigned char *h = w->buf;
	memset(h, 0, LARDER__SNAP_HEADER_BYTES);
	memcpy(h, LARDER__SNAP_MAGIC, 8);
	put_u32(h + 8, LARDER__SNAP_VERSION);
	put_u32(h + 12, LARDER__SNAP_HEADER_BYTES);
	put_u64(h + 16, wall_ms());
	w->used = LARDER__SNAP_HEADER_BYTES;
	int rc = write_entries(c, w);
	if (rc != LARDER_OK)
		return rc;
	if (w->used + LARDER__SNAP_TRAILER_BYTES > w->cap && (rc = flush(w)) != LARDER_OK)
		return rc;
	unsigned char *t = w->buf + w->used;
	memset(t, 0, LARDER__SNAP_TRAILER_BYTES);
	memcpy(t, LARDER__SNAP_END_MAGIC, 8);
	put_u64(t + 8, w->records);
	w->used += LARDER__SNAP_CHECKED_BYTES;
	if ((rc = flush(w)) != LARDER_OK) /* hashes the magic and the count too */
		return rc;
	put_u64(w->buf, XXH3_64bits_digest(w->hash));
	put_u64(w->buf + 8, 0);
	w->used = LARDER__SNAP_TRAILER_BYTES - LARDER__SNAP_CHECKED_BYTES;
	return flush(w);
}

/* fsync of the directory (that holds the snapshot), so the rename is durable. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return LARDER_ESYS;
	int rc = fsync(fd) == 0 ? LARDER_OK : LARDER_ESYS;
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

int larder_save(larder *c, const char *path)
{
	if (!c || !path || !*path)
		return LARDER_EINVAL;
	/* SNAP-S2: the rename would replace whatever path names; only a regular
	 * file (or nothing yet) is ours to replace, never a device or a FIFO (a
	 * directory makes the rename fail). */
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return LARDER_EINVAL;
	static _Atomic unsigned long serial; /* distinct temporary names within a process */
	char *tmp = NULL;
	/* Relaxed: only the numbers' distinctness matters, nothing is published. */
	if (asprintf(&tmp, "%s.tmp.%ld.%lu", path, (long)getpid(),
		     atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed)) < 0)
		return LARDER_ENOMEM;
	/* The directory's name now: no allocation may fail after the rename. */
	char *dir_copy = strdup(path);
	if (!dir_copy) {
		free(tmp);
		return LARDER_ENOMEM;
	}
	const char *dir = dirname(dir_copy);
	struct writer w = { .fd = -1 };
	int rc = LARDER_ENOMEM;
	w.buf = larder__malloc(WRITE_BUFFER_BYTES);
	w.cap = WRITE_BUFFER_BYTES;
	w.hash = XXH3_createState();
	if (!w.buf || !w.hash || XXH3_64bits_reset(w.hash) != XXH_OK)
		goto fail_alloc;
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w.fd < 0) {
		rc = LARDER_ESYS;
		goto fail_alloc;
	}
	rc = write_snapshot(c, &w);
	if (rc == LARDER_OK && fsync(w.fd) != 0)
		rc = LARDER_ESYS;
	int saved = errno;
	if (close(w.fd) != 0 && rc == LARDER_OK) {
		rc = LARDER_ESYS;
		saved = errno;
	}
	if (rc == LARDER_OK && rename(tmp, path) != 0) {
		rc = LARDER_ESYS;
		saved = errno;
	}
	if (rc != LARDER_OK)
		unlink(tmp);
	else if ((rc = sync_dir(dir)) != LARDER_OK)
		saved = errno; /* the snapshot is in place, not known to be durable */
	errno = saved;
fail_alloc:
	XXH3_freeState(w.hash);
	free(w.buf);
	free(w.other);
	free(tmp);
	free(dir_copy);
	return rc;
}

/* ---- Load ------------------------------------------------------------------- */

/* SNAP-L1: everything but the records' count and lengths. */
static int check_frame(const unsigned char *d, size_t len, size_t *records_end)
{
	if (len < 8 || memcmp(d, LARDER__SNAP_MAGIC, 8) != 0)
		return LARDER_EFORMAT;
	if (len < 16)
		return LARDER_ECORRUPT;
	if (get_u32(d + 8) != LARDER__SNAP_VERSION || get_u32(d + 12) != LARDER__SNAP_HEADER_BYTES)
		return LARDER_EFORMAT;
	if (len < LARDER__SNAP_HEADER_BYTES + LARDER__SNAP_TRAILER_BYTES)
		return LARDER_ECORRUPT;
	size_t t = len - LARDER__SNAP_TRAILER_BYTES;
	if (memcmp(d + t, LARDER__SNAP_END_MAGIC, 8) != 0 || get_u64(d + t + 24) != 0)
		return LARDER_ECORRUPT;
	*records_end = t;
	return LARDER_OK;
}

/* SNAP-L1's checksum: the XXH3-64 of everything before the trailer's sum. */
struct sum_job {
	const unsigned char *d;
	size_t end; /* the records' end, where the trailer starts */
	int ok;
};

static void *sum_main(void *arg)
{
	struct sum_job *j = arg;
	j->ok = XXH3_64bits(j->d, j->end + LARDER__SNAP_CHECKED_BYTES) == get_u64(j->d + j->end + 16);
	return NULL;
}

/*
 * SNAP-L4: the stretches the loader threads take, found by the records'
 * walk (a second walk to find them cost a serial pass over the whole file:
 * 35-110 ms of a 10^7-entry load, docs/persistence.md). at[i] is the first
 * record boundary at or past from + step * (i + 1), for i < n - 1.
 */
#define MAX_LOADERS 8

struct cuts {
	size_t n, step;
	size_t at[MAX_LOADERS];
};

/* SNAP-L1: the records fill the space between header and trailer exactly.
 * *charge gets what they would all charge (SNAP-L3's figure, before skips);
 * cuts gets its boundaries. */
static int check_records(const unsigned char *d, size_t end, uint64_t want, uint64_t *charge,
			 struct cuts *cuts)
{
	size_t off = LARDER__SNAP_HEADER_BYTES, k = 0;
	size_t goal = cuts->n > 1 ? off + cuts->step : SIZE_MAX;
	uint64_t n = 0, total = 0;
	while (off < end) {
		while (off >= goal) { /* n - 1 times in all: goals only grow */
			cuts->at[k++] = off;
			goal = k + 1 < cuts->n ? goal + cuts->step : SIZE_MAX;
		}
		if (end - off < LARDER__SNAP_RECORD_BYTES)
			return LARDER_ECORRUPT;
		uint64_t body = (uint64_t)get_u32(d + off) + get_u32(d + off + 4);
		if (get_u32(d + off) == 0 || body > end - off - LARDER__SNAP_RECORD_BYTES)
			return LARDER_ECORRUPT;
		unsigned flags = get_u64(d + off + 8) == UINT64_MAX ? 0 : LARDER__ENTRY_TTL;
		total += larder__slab_charge(
			larder__entry_bytes(flags, get_u32(d + off), get_u32(d + off + 4)));
		off += LARDER__SNAP_RECORD_BYTES + body;
		n++;
	}
	while (k + 1 < cuts->n) /* goals past the last record */
		cuts->at[k++] = end;
	*charge = total;
	return n == want ? LARDER_OK : LARDER_ECORRUPT;
}

/* One of the cache's counters when the load starts (SNAP-L3: its used
 * bytes; SNAP-L6: its entries), 0 if they cannot be read. */
static uint64_t stat_now(larder *c, enum larder_stat which)
{
	uint64_t v[LARDER_STAT_USED_BYTES + 1];
	if (larder_stats(c, v, LARDER_STAT_USED_BYTES + 1) != LARDER_OK)
		return 0;
	return v[which];
}

/* One stretch of records [from, to), written in file order. */
struct part {
	larder *cache;
	const unsigned char *d;
	size_t from, to;
	uint64_t elapsed_ms; /* SNAP-L2 */
	uint64_t capacity; /* SNAP-L3: UINT64_MAX when everything fits */
	uint64_t charged;
	double entries_per_byte; /* SNAP-L6: the whole load's, per byte of this stretch left */
	int rc;
};

/*
 * SNAP-L5: the records of a stretch go to the cache in batches of
 * LOAD_BATCH, in file order: a batch is parsed, filtered (SNAP-L2, the
 * cache's limits) and its keys hashed, and their home buckets are
 * prefetched, while the batch before it is written. So each write finds its
 * bucket in the cache instead of stalling on it (in a large index, a miss
 * per entry). A batch is one bulk write (larder__put_batch in core/cache.c):
 * the hashes computed here serve the writes too, the thread's handle is
 * looked up once, and the maintainer gets one event for the batch (EV-V7 in
 * maint/events.h) and one wake-up: a load that posted one event per entry
 * outran the single maintainer, spilling most of its events and waiting
 * for its passes (docs/results/persistence-history.md, "The bulk load").
 */
#define LOAD_BATCH 16

struct batch {
	struct larder__put_rec rec[LOAD_BATCH];
	size_t n;
};

/* Takes records from *off up to `to` into b, at most LOAD_BATCH of them that
 * will be written, and prefetches their home buckets. */
static void batch_fill(struct part *p, size_t *off, struct batch *b)
{
	larder *c = p->cache;
	const unsigned char *d = p->d;
	b->n = 0;
	while (*off < p->to && b->n < LOAD_BATCH) {
		size_t key_len = get_u32(d + *off), value_len = get_u32(d + *off + 4);
		uint64_t ttl_ms = get_u64(d + *off + 8);
		const unsigned char *key = d + *off + LARDER__SNAP_RECORD_BYTES;
		*off += LARDER__SNAP_RECORD_BYTES + key_len + value_len;
		if (ttl_ms != UINT64_MAX) {
			if (ttl_ms <= p->elapsed_ms)
				continue; /* SNAP-L2 */
			ttl_ms -= p->elapsed_ms;
		} else {
			ttl_ms = LARDER_TTL_NEVER;
		}
		if (key_len > c->max_key_bytes || value_len > c->max_value_bytes)
			continue;
		b->rec[b->n] = (struct larder__put_rec){
			key, key_len, key + key_len, value_len, ttl_ms,
			larder__hash(c->seed, key, key_len),
		};
		b->n++;
	}
	larder__prefetch_homes(c, b->rec, b->n);
}

/* SNAP-L6: batches between a loader's asks for room in the index (a
 * fresh table after a clear holds at least 1,024 x 7 x 7/8 entries before
 * it must grow: 6,272, 392 batches). */
#define RESERVE_EVERY 64u

static void *load_part(void *arg)
{
	struct part *p = arg;
	struct batch b[2];
	size_t off = p->from;
	unsigned cur = 0, batches = 0;
	p->rc = LARDER_OK;
	batch_fill(p, &off, &b[cur]);
	while (b[cur].n) {
		if (++batches % RESERVE_EVERY == 0)
			larder__bulk_reserve(p->cache, (uint64_t)((double)(p->to - off) *
								 p->entries_per_byte));
		batch_fill(p, &off, &b[cur ^ 1]); /* SNAP-L5: the next batch's buckets load */
		/* SNAP-L3: a record that would take the load over p->capacity is
		 * skipped (the charge as stored: a compressing cache's is known
		 * only once the value is packed). */
		p->rc = larder__put_batch(p->cache, b[cur].rec, b[cur].n, p->capacity, &p->charged);
		if (p->rc != LARDER_OK)
			break;
		cur ^= 1;
	}
	return NULL;
}

/*
 * SNAP-L4: a snapshot that fits whole is written by up to MAX_LOADERS threads,
 * each a contiguous stretch of records (the order then no longer decides
 * anything); one that does not fit is written in file order by the caller
 * alone, so SNAP-L3's rule stays exact. A thread that cannot be started leaves
 * its stretch to the caller.
 */
#define PARALLEL_MIN_BYTES ((size_t)16 << 20)

static int load_parallel(struct part *whole, const struct cuts *cuts)
{
	size_t n = cuts->n;
	struct part parts[MAX_LOADERS];
	pthread_t threads[MAX_LOADERS];
	int started[MAX_LOADERS] = {0};
	for (size_t i = 0; i < n; i++) {
		parts[i] = *whole;
		parts[i].from = i ? cuts->at[i - 1] : whole->from;
		parts[i].to = i + 1 < n ? cuts->at[i] : whole->to;
	}
	for (size_t i = 1; i < n; i++)
		started[i] = pthread_create(&threads[i], NULL, load_part, &parts[i]) == 0;
	load_part(&parts[0]);
	int rc = parts[0].rc;
	for (size_t i = 1; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			load_part(&parts[i]);
		if (rc == LARDER_OK)
			rc = parts[i].rc;
	}
	return rc;
}

/* The CPUs this thread may run on (a process confined to some by taskset
 * or a cpuset gets no more loaders than it has CPUs), at least 1. */
static size_t loader_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (size_t)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 1 ? (size_t)n : 1;
}

int larder__snapshot_load_mem(larder *c, const unsigned char *d, size_t len,
			      uint64_t now_unix_ms)
{
	size_t end;
	uint64_t charge;
	int rc = check_frame(d, len, &end);
	if (rc != LARDER_OK)
		return rc;
	/* SNAP-L1: the checksum and the records' walk both read the whole file
	 * and both must pass before anything is written; a large file has them
	 * read it side by side (the checksum in a thread of its own). */
	struct sum_job sum = { d, end, 0 };
	pthread_t summer;
	int threaded = len >= PARALLEL_MIN_BYTES && pthread_create(&summer, NULL, sum_main, &sum) == 0;
	if (!threaded)
		sum_main(&sum);
	size_t cpus = loader_cpus();
	struct cuts cuts = { .n = cpus > MAX_LOADERS ? MAX_LOADERS : cpus };
	cuts.step = (end - LARDER__SNAP_HEADER_BYTES) / cuts.n;
	rc = check_records(d, end, get_u64(d + end + 8), &charge, &cuts);
	if (threaded)
		pthread_join(summer, NULL);
	if (!sum.ok)
		return LARDER_ECORRUPT;
	if (rc != LARDER_OK)
		return rc;
	uint64_t saved_ms = get_u64(d + 16), records = get_u64(d + end + 8);
	struct part whole = {
		.cache = c,
		.d = d,
		.from = LARDER__SNAP_HEADER_BYTES,
		.to = end,
		.elapsed_ms = now_unix_ms > saved_ms ? now_unix_ms - saved_ms : 0, /* SNAP-L2 */
		/* Relaxed: a setting; a capacity changed during the load may be missed. */
		.capacity = atomic_load_explicit(&c->capacity, LARDER__RELAXED),
		.charged = stat_now(c, LARDER_STAT_USED_BYTES),
	};
	int parallel = 0;
	/* SNAP-L6: the records that will fit (SNAP-L3), about. */
	double fit = 1.0;
	if (whole.charged + charge <= whole.capacity) {
		whole.capacity = UINT64_MAX; /* everything fits: no entry is skipped for room */
		parallel = end - whole.from >= PARALLEL_MIN_BYTES;
	} else {
		fit = whole.capacity > whole.charged
			      ? (double)(whole.capacity - whole.charged) / (double)charge
			      : 0.0;
	}
	if (end > whole.from)
		whole.entries_per_byte = (double)records * fit / (double)(end - whole.from) *
					 (double)(parallel ? cuts.n : 1);
	larder__bulk_begin(c, stat_now(c, LARDER_STAT_ENTRIES) + (uint64_t)((double)records * fit));
	if (parallel) {
		rc = load_parallel(&whole, &cuts);
	} else {
		load_part(&whole);
		rc = whole.rc;
	}
	larder__bulk_end(c);
	return rc;
}

int larder_load(larder *c, const char *path)
{
	if (!c || !path)
		return LARDER_EINVAL;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (SNAP-L7). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0) {
		int saved = errno;
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return LARDER_EFORMAT; /* SNAP-L7: not a snapshot, whatever open() said */
		errno = saved;
		return LARDER_ESYS;
	}
	if (fstat(fd, &st) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return LARDER_ESYS;
	}
	/* SNAP-L7: a snapshot is a regular file; anything else (a directory, a
	 * FIFO, a device) is not one. */
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return LARDER_EFORMAT;
	}
	size_t len = (size_t)st.st_size;
	/* MAP_POPULATE: the whole file is read at once (the checksum reads it
	 * all anyway), rather than in one page fault per 4 KiB. */
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	int saved = errno;
	close(fd);
	if (map == MAP_FAILED) {
		errno = saved;
		return LARDER_ESYS;
	}
	(void)madvise(map, len, MADV_SEQUENTIAL); /* a hint; refusal is fine */
	int rc = larder__snapshot_load_mem(c, map, len, wall_ms());
	munmap(map, len);
	return rc;
}
