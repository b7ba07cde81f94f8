/*
 * tests/model/model_run.c - one run: a sequence of operations applied to a
 * fresh cache and to the reference model, every result compared (design and
 * tolerances: model.h).
 *
 * The model holds, per key, its current value (a "version": the seed and
 * length its bytes come from) and deadline; every value that left the
 * model (overwritten, removed, cleared) waits, with the set of causes the
 * listener may report it with, until a sync point matches it with a report.
 * Reports are matched by key and by a hash of the value bytes, so values
 * with equal bytes are interchangeable: the model is exact up to what a
 * report can tell apart.
 *
 * Invariants checked (numbers used in failure messages):
 *   MODEL-K1. each call returns what the model predicts, bad arguments included
 *       (larder.h's precedence of errors); values read are the model's bytes;
 *       a too-small buffer is left untouched and told the length;
 *   MODEL-K2. ttl_remaining is the model's deadline minus the clock, exactly,
 *       and so is the TTL a walk (larder_iter_next) hands out; a snapshot
 *       loaded into a fresh cache (another policy, shard count, hash seed
 *       and compression) holds every live value with a TTL no longer, or
 *       when it is the smallest cache, some of them, up to its capacity
 *       and with nothing evicted; one loaded back into the run's cache
 *       rewrites each live key (REPLACED) with its value and deadline;
 *       expire-after-access reads move the deadline as larder.h says;
 *   MODEL-K3. at a sync point every value that left the model was reported once,
 *       with an allowed cause, every value due by the clock was reported
 *       EXPIRED, and no report is left unexplained;
 *   MODEL-K4. at a sync point the counters equal the model's counts (writes,
 *       hits, misses, removals by cause), the index walk equals the entry
 *       and byte counters, and the policy's queues are well linked; after a
 *       larder_flush the entry count equals the model's live keys (in runs
 *       without eviction or a clock stepping back);
 *   MODEL-K5. close returns every mapped byte.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/snapshot.h"
#include "model.h"

#define V_NONE (-1)
#define CAUSE_BIT(c) (1u << (c))

enum ver_state { V_CURRENT, V_GONE, V_REPORTED };

struct ver {
	uint8_t key;
	uint8_t state;
	unsigned allowed;   /* causes the listener may report it with, once gone */
	uint32_t vseed, len;
	uint64_t hash;      /* of its bytes */
	uint64_t deadline;  /* when it left (or now, while current) */
	uint64_t max_clock; /* the clock's largest reading when it left */
	int was_due;        /* an earlier deadline of it was once reached (due_passed) */
};

struct mkey {
	long cur; /* index of its current version, or V_NONE */
	uint64_t deadline;
};

struct report {
	unsigned char key[MK_KEY_MAX + 2];
	size_t key_len, value_len;
	uint64_t hash;
	enum larder_cause cause;
};

struct world {
	const struct mcfg *cfg;
	const struct mop *ops;
	larder *c;
	larder_pool *pool; /* cfg->pooled: the cache's own pool */
	_Atomic uint64_t now; /* the injected clock */
	uint64_t max_clock;
	uint64_t capacity, default_ttl, access_ttl, access_slack;
	int evict_possible;
	struct mkey keys[MK_KEYS];
	unsigned char key_bytes[MK_KEYS][MK_KEY_MAX + 2];
	size_t key_len[MK_KEYS];
	struct ver *vers;
	size_t nvers, cap_vers;
	/* listener reports, under mu */
	pthread_mutex_t mu;
	struct report *reports;
	size_t nreports, cap_reports, reports_done;
	int report_overflow;
	/* the model's counts */
	uint64_t writes, hits, misses, by_cause[5];
	unsigned char *vbuf, *xbuf, *rbuf;
	long op; /* index of the operation running */
	struct mtrace *trace; /* optional: what the run saw of each operation */
	struct mfail *fail;
	int failed;
};

static larder *open_cache(struct world *w, const struct mcfg *cfg, int listen);

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static uint64_t hash_seeded(uint32_t seed, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ mk_value_byte(seed, i)) * 1099511628211ull;
	return h;
}

static void fill(unsigned char *p, uint32_t seed, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = mk_value_byte(seed, i);
}

__attribute__((format(printf, 2, 3))) static void failf(struct world *w, const char *fmt, ...)
{
	va_list ap;
	if (w->failed)
		return;
	w->failed = 1;
	w->fail->op = w->op;
	va_start(ap, fmt);
	vsnprintf(w->fail->what, sizeof(w->fail->what), fmt, ap);
	va_end(ap);
}

/* ---- The listener and the clock ------------------------------------------- */

static uint64_t clock_fn(void *ctx)
{
	struct world *w = ctx;
	return atomic_load_explicit(&w->now, memory_order_acquire);
}

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	struct world *w = ctx;
	pthread_mutex_lock(&w->mu);
	if (w->nreports == w->cap_reports) {
		size_t cap = w->cap_reports ? 2 * w->cap_reports : 1024;
		struct report *r = realloc(w->reports, cap * sizeof(*r));
		if (!r) {
			w->report_overflow = 1;
			pthread_mutex_unlock(&w->mu);
			return;
		}
		w->reports = r;
		w->cap_reports = cap;
	}
	struct report *r = &w->reports[w->nreports++];
	r->key_len = key_len;
	memcpy(r->key, key, key_len < sizeof(r->key) ? key_len : sizeof(r->key));
	r->value_len = value_len;
	r->hash = hash_bytes(value, value_len);
	r->cause = cause;
	pthread_mutex_unlock(&w->mu);
}

/* ---- The model --------------------------------------------------------------- */

static uint64_t now_of(struct world *w)
{
	return atomic_load_explicit(&w->now, memory_order_relaxed);
}

static uint64_t deadline_from(uint64_t now, uint64_t ttl)
{
	return ttl >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + ttl;
}

/* The deadline a write or touch with ttl sets now (UINT64_MAX: none). */
static uint64_t deadline_for(struct world *w, uint64_t ttl)
{
	if (ttl == LARDER_TTL_DEFAULT)
		ttl = w->default_ttl;
	return ttl == LARDER_TTL_NEVER ? UINT64_MAX : deadline_from(now_of(w), ttl);
}

static int mlive(struct world *w, unsigned k)
{
	return w->keys[k].cur != V_NONE && now_of(w) < w->keys[k].deadline;
}

static struct ver *cur_ver(struct world *w, unsigned k)
{
	return w->keys[k].cur == V_NONE ? NULL : &w->vers[w->keys[k].cur];
}

/* The causes the listener may report for a value leaving now, besides the
 * one its leaving calls for. */
static unsigned extra_causes(struct world *w, const struct ver *v, uint64_t deadline)
{
	unsigned m = 0;
	if (w->evict_possible)
		m |= CAUSE_BIT(LARDER_CAUSE_EVICTED);
	if (deadline <= w->max_clock || v->was_due)
		m |= CAUSE_BIT(LARDER_CAUSE_EXPIRED);
	return m;
}

/*
 * k's deadline is about to move (a read's extension, a touch). If the
 * clock has already reached it once (it stepped back since), the
 * maintainer, which keeps the largest time it saw, may expire the value
 * at the same moment, racing with the move: the model then allows EXPIRED
 * for this value from now on (larder.h: a read that races with the
 * deadline may not keep the entry).
 */
static void due_passed(struct world *w, unsigned k)
{
	struct ver *v = cur_ver(w, k);
	if (v && w->keys[k].deadline <= w->max_clock)
		v->was_due = 1;
}

/* The current value of k leaves the model (overwritten, removed, cleared):
 * live ones with cause `live_cause`, expired ones EXPIRED. */
static void leave(struct world *w, unsigned k, enum larder_cause live_cause, int also_live_cause)
{
	struct ver *v = cur_ver(w, k);
	if (!v)
		return;
	v->state = V_GONE;
	v->deadline = w->keys[k].deadline;
	v->max_clock = w->max_clock;
	v->allowed = extra_causes(w, v, v->deadline);
	if (mlive(w, k) || also_live_cause)
		v->allowed |= CAUSE_BIT(live_cause);
	else
		v->allowed |= CAUSE_BIT(LARDER_CAUSE_EXPIRED);
	w->keys[k].cur = V_NONE;
}

static void store(struct world *w, unsigned k, uint32_t seed, uint32_t len, uint64_t deadline)
{
	if (w->nvers == w->cap_vers) {
		size_t cap = w->cap_vers ? 2 * w->cap_vers : 256;
		struct ver *v = realloc(w->vers, cap * sizeof(*v));
		if (!v) {
			failf(w, "out of memory in the model");
			return;
		}
		w->vers = v;
		w->cap_vers = cap;
	}
	struct ver *v = &w->vers[w->nvers];
	*v = (struct ver){ (uint8_t)k, V_CURRENT, 0, seed, len, hash_seeded(seed, len), 0, 0, 0 };
	w->keys[k].cur = (long)w->nvers++;
	w->keys[k].deadline = deadline;
}

/* MODEL-K2: a value read of live k at now extends its deadline (after access). */
static void read_extends(struct world *w, unsigned k)
{
	uint64_t d = w->keys[k].deadline;
	if (!w->access_ttl || d == UINT64_MAX)
		return;
	uint64_t want = deadline_from(now_of(w), w->access_ttl);
	if (d < want - w->access_slack) {
		due_passed(w, k);
		w->keys[k].deadline = want;
	}
}

/* ---- Reports (MODEL-K3) ------------------------------------------------------------ */

static int key_index(struct world *w, const struct report *r)
{
	for (unsigned k = 0; k < MK_KEYS; k++)
		if (w->key_len[k] == r->key_len && memcmp(w->key_bytes[k], r->key, r->key_len) == 0)
			return (int)k;
	return -1;
}

/* The causes a current value may be reported with: dropped by the engine. */
static unsigned current_causes(struct world *w, unsigned k)
{
	return extra_causes(w, cur_ver(w, k), w->keys[k].deadline);
}

/* ---- Matching reports with values (MODEL-K3) --------------------------------------
 *
 * After a quiesce every removal so far has been reported, so the reports not
 * yet matched and the values waiting for one (gone from the model, or
 * current ones the engine may have dropped) must pair up: each report with
 * a distinct value of its key, with equal bytes, whose allowed causes hold
 * the report's. Values with equal bytes are interchangeable except for
 * their causes, and reports do not come in the order values left (a clear's
 * walk reports after the wheel), so the pairing is a bipartite matching
 * (Kuhn's augmenting paths): first with gone values only, whose matching is
 * then maximal, so every gone value that can be matched is; then with the
 * current ones too, which augmenting paths never unmatch a gone value for.
 * A current value is thus taken as dropped only when no gone one explains
 * the report.
 */

struct matcher {
	struct world *w;
	struct report *r; /* the pending reports */
	size_t nr;
	long *ver_of;     /* per report: its value's index in w->vers, or -1 */
	long *report_of;  /* per value (index in w->vers): its report, or -1 */
	unsigned char *seen;
	int with_current;
};

static int edge(struct matcher *m, size_t ri, size_t vi)
{
	struct world *w = m->w;
	const struct report *r = &m->r[ri];
	struct ver *v = &w->vers[vi];
	unsigned causes;
	if (v->len != r->value_len || v->hash != r->hash || key_index(w, r) != v->key)
		return 0;
	if (v->state == V_GONE)
		causes = v->allowed;
	else if (v->state == V_CURRENT && m->with_current && w->keys[v->key].cur == (long)vi)
		causes = current_causes(w, v->key);
	else
		return 0;
	return (causes & CAUSE_BIT(r->cause)) != 0;
}

static int augment(struct matcher *m, size_t ri)
{
	for (size_t vi = 0; vi < m->w->nvers; vi++) {
		if (m->seen[vi] || !edge(m, ri, vi))
			continue;
		m->seen[vi] = 1;
		if (m->report_of[vi] < 0 || augment(m, (size_t)m->report_of[vi])) {
			m->report_of[vi] = (long)ri;
			m->ver_of[ri] = (long)vi;
			return 1;
		}
	}
	return 0;
}

/*
 * strict: every pending report must be explained (a sync point). Not
 * strict (engine_dropped(), in the middle of an operation): a report the
 * model cannot explain yet stays pending, because it may be of the value
 * the operation itself just wrote (evicted at once, or expired at once by
 * a maintainer whose time is ahead of a clock that stepped back), which
 * the model records only after the check.
 */
static void reconcile(struct world *w, int strict)
{
	struct matcher m = { w, NULL, 0, NULL, NULL, NULL, 0 };
	pthread_mutex_lock(&w->mu);
	size_t n = w->nreports;
	pthread_mutex_unlock(&w->mu);
	if (w->report_overflow)
		failf(w, "K3: the listener ran out of memory recording reports");
	if (n == w->reports_done || w->failed)
		return;
	m.nr = n - w->reports_done;
	m.r = w->reports + w->reports_done; /* stable: the maintainer is quiescent */
	m.ver_of = malloc(m.nr * sizeof(long));
	m.report_of = malloc((w->nvers + 1) * sizeof(long));
	m.seen = malloc(w->nvers + 1);
	if (!m.ver_of || !m.report_of || !m.seen) {
		failf(w, "out of memory in the model");
		goto done;
	}
	for (size_t i = 0; i < m.nr; i++) {
		m.ver_of[i] = -1;
		if (key_index(w, &m.r[i]) < 0) {
			failf(w, "K3: the listener reported a key the run never wrote (%zu bytes)",
			      m.r[i].key_len);
			goto done;
		}
	}
	for (size_t v = 0; v < w->nvers; v++)
		m.report_of[v] = -1;
	for (m.with_current = 0; m.with_current < 2; m.with_current++)
		for (size_t i = 0; i < m.nr; i++)
			if (m.ver_of[i] < 0) {
				memset(m.seen, 0, w->nvers);
				augment(&m, i);
			}
	for (size_t i = 0; strict && i < m.nr; i++) {
		if (m.ver_of[i] < 0) {
			failf(w, "K3: the listener reported key %d (a value of %zu bytes) %s, which "
				 "the model cannot explain",
			      key_index(w, &m.r[i]), m.r[i].value_len,
			      larder_cause_name(m.r[i].cause));
			goto done;
		}
	}
	/* The matched reports move to the front of the pending ones and are
	 * done; the rest stay pending (only when not strict). */
	size_t done_here = 0;
	for (size_t i = 0; i < m.nr; i++) {
		if (m.ver_of[i] < 0)
			continue;
		struct ver *v = &w->vers[m.ver_of[i]];
		if (v->state == V_CURRENT)
			w->keys[v->key].cur = V_NONE; /* the engine dropped it (model.h) */
		v->state = V_REPORTED;
		w->by_cause[m.r[i].cause]++;
		struct report t = m.r[done_here];
		long tv = m.ver_of[done_here];
		m.r[done_here] = m.r[i];
		m.ver_of[done_here] = m.ver_of[i];
		m.r[i] = t;
		m.ver_of[i] = tv;
		done_here++;
	}
	w->reports_done += done_here;
done:
	free(m.ver_of);
	free(m.report_of);
	free(m.seen);
}

/* ---- Sync points (MODEL-K3, MODEL-K4) -------------------------------------------------- */

static int quiesce(struct world *w)
{
	if (th_quiesce(w->c, 60000) != 0) {
		failf(w, "the maintainer did not quiesce within 60 s");
		return 0;
	}
	return 1;
}

static uint64_t stat_of(struct world *w, enum larder_stat s)
{
	uint64_t v[LARDER_STAT_COUNT];
	if (larder_stats(w->c, v, LARDER_STAT_COUNT) != LARDER_OK) {
		failf(w, "larder_stats failed");
		return 0;
	}
	return v[s];
}

static void check_counter(struct world *w, enum larder_stat s, uint64_t want)
{
	uint64_t got = stat_of(w, s);
	if (got != want)
		failf(w, "K4: counter %s is %" PRIu64 ", the model counts %" PRIu64,
		      larder_stat_name(s), got, want);
}

static void sync_point(struct world *w)
{
	if (!quiesce(w))
		return;
	reconcile(w, 1);
	uint64_t now = now_of(w);
	for (size_t i = 0; i < w->nvers && !w->failed; i++) {
		struct ver *v = &w->vers[i];
		if (v->state == V_GONE)
			failf(w, "K3: key %u's value of %u bytes left the cache (allowed causes %#x) "
				 "but the listener never reported it", v->key, v->len, v->allowed);
	}
	for (unsigned k = 0; k < MK_KEYS && !w->failed; k++)
		if (w->keys[k].cur != V_NONE && w->keys[k].deadline <= now)
			failf(w, "K3: key %u expired at %" PRIu64 " (clock %" PRIu64 ") but was not "
				 "reported EXPIRED", k, w->keys[k].deadline - MK_T0, now - MK_T0);
	if (w->failed)
		return;
	check_counter(w, LARDER_STAT_WRITES, w->writes);
	check_counter(w, LARDER_STAT_HITS, w->hits);
	check_counter(w, LARDER_STAT_MISSES, w->misses);
	check_counter(w, LARDER_STAT_REPLACEMENTS, w->by_cause[LARDER_CAUSE_REPLACED]);
	check_counter(w, LARDER_STAT_REMOVALS, w->by_cause[LARDER_CAUSE_EXPLICIT]);
	check_counter(w, LARDER_STAT_EXPIRATIONS, w->by_cause[LARDER_CAUSE_EXPIRED]);
	check_counter(w, LARDER_STAT_EVICTIONS, w->by_cause[LARDER_CAUSE_EVICTED]);
	check_counter(w, LARDER_STAT_CLEARED, w->by_cause[LARDER_CAUSE_CLEARED]);
	check_counter(w, LARDER_STAT_CAPACITY_BYTES, w->capacity);
	uint64_t entries = 0, bytes = 0, live = 0;
	larder__test_walk(w->c, &entries, &bytes);
	for (unsigned k = 0; k < MK_KEYS; k++)
		live += w->keys[k].cur != V_NONE;
	if (entries != live)
		failf(w, "K4: the index holds %" PRIu64 " entries, the model %" PRIu64, entries, live);
	check_counter(w, LARDER_STAT_ENTRIES, entries);
	check_counter(w, LARDER_STAT_USED_BYTES, bytes);
	if (!w->failed && larder__test_check_links(w->c, 60000) != 0)
		failf(w, "K4: the eviction policy's queues are broken");
}

/* The engine says k is absent where the model holds it live: the model
 * accepts it only once the listener reported the current value dropped. */
static int engine_dropped(struct world *w, unsigned k)
{
	if (w->keys[k].cur == V_NONE || !quiesce(w))
		return 0;
	reconcile(w, 0);
	return !w->failed && w->keys[k].cur == V_NONE;
}

/* ---- Arguments with their faults (MODEL-K1) ------------------------------------- */

struct args {
	larder *c;
	const void *key;
	size_t key_len;
	const void *value;
	size_t value_len;
	const void *expected;
	size_t expected_len;
	int null_out, null_buf, null_array;
	int einval, ekeysize, evalsize; /* what the faults call for */
};

static void make_args(struct world *w, const struct mop *o, struct args *a)
{
	unsigned k = o->key;
	uint16_t f = o->faults;
	size_t klen = w->key_len[k];
	const unsigned char *kp = w->key_bytes[k];

	memset(a, 0, sizeof(*a));
	a->c = (f & MF_NULL_CACHE) ? NULL : w->c;
	if (f & MF_LONG_KEY)
		kp = mk_key(w->cfg->max_key, k, 1, &klen);
	a->key = (f & MF_NULL_KEY) ? NULL : kp;
	a->key_len = (f & MF_EMPTY_KEY) ? 0 : klen;
	a->value_len = (f & MF_LONG_VALUE) ? w->cfg->max_value + 1 : o->vlen;
	if ((f & MF_NULL_VALUE) && a->value_len == 0)
		a->value_len = 1;
	fill(w->vbuf, o->vseed, a->value_len);
	a->value = (f & MF_NULL_VALUE) ? NULL : w->vbuf;
	struct ver *v = cur_ver(w, k);
	uint32_t exseed = o->ex_current && v ? v->vseed : o->exseed;
	a->expected_len = o->ex_current && v ? v->len : o->exlen;
	fill(w->xbuf, exseed, a->expected_len);
	if (w->trace && w->op >= 0) {
		w->trace[w->op].ex_seed = exseed;
		w->trace[w->op].ex_len = (uint32_t)a->expected_len;
	}
	if ((f & MF_NULL_EXPECT) && a->expected_len == 0)
		a->expected_len = 1;
	a->expected = (f & MF_NULL_EXPECT) ? NULL : w->xbuf;
	a->null_out = (f & MF_NULL_OUT) != 0;
	a->null_buf = (f & MF_NULL_BUF) != 0;
	a->null_array = (f & MF_NULL_ARRAY) != 0;
	a->einval = !a->c || !a->key || a->key_len == 0 || (!a->value && a->value_len) ||
		    (!a->expected && a->expected_len) || a->null_out || a->null_buf;
	a->ekeysize = a->key_len > w->cfg->max_key;
	a->evalsize = a->value_len > w->cfg->max_value;
}

/* larder.h's precedence: EINVAL, EKEYSIZE, EVALSIZE; 0 when none applies. */
static int arg_error(const struct args *a, int uses_value, int uses_expected, int uses_out)
{
	if (!a->c || !a->key || a->key_len == 0 || (uses_value && !a->value && a->value_len) ||
	    (uses_expected && !a->expected && a->expected_len) || (uses_out && a->null_out) ||
	    a->null_buf)
		return LARDER_EINVAL;
	if (a->ekeysize)
		return LARDER_EKEYSIZE;
	if (uses_value && a->evalsize)
		return LARDER_EVALSIZE;
	return 0;
}

static void expect_rc(struct world *w, const char *what, int got, int want)
{
	if (w->trace && w->op >= 0)
		w->trace[w->op].rc = want;
	if (got != want)
		failf(w, "K1: %s returned %d (%s), the model expects %d (%s)", what, got,
		      larder_strerror(got), want, larder_strerror(want));
}

/* ---- Writes ------------------------------------------------------------------- */

/* Whether an entry of this many value bytes passes the 1/8-of-capacity rule. */
static int entry_fits(struct world *w, const struct args *a, uint64_t deadline)
{
	uint64_t bytes = 16 + (deadline != UINT64_MAX ? 16 : 0) + a->key_len + a->value_len;
	return bytes <= w->capacity / 8;
}

/* Whether a touch gives key k, live without a deadline, one that takes its
 * entry over the limit (larder_touch: LARDER_EVALSIZE, the entry kept). */
static int touch_over_limit(struct world *w, unsigned k, const struct args *a, uint64_t deadline)
{
	struct ver *v = cur_ver(w, k);
	struct args raw = *a;
	if (!v || !mlive(w, k) || w->keys[k].deadline != UINT64_MAX || deadline == UINT64_MAX)
		return 0;
	raw.value_len = v->len;
	return !entry_fits(w, &raw, deadline);
}

/* Whether a compressing cache might store this value in fewer bytes (the
 * model does not compute the stored size: model.h). */
static int may_compress(struct world *w, const struct args *a)
{
	return w->cfg->compress_min > 0 && a->value_len >= w->cfg->compress_min;
}

static int may_be_busy(struct world *w)
{
	return w->cfg->write_wait_ms == 0 && w->evict_possible;
}

static int equal_current(struct world *w, unsigned k, const struct args *a)
{
	struct ver *v = cur_ver(w, k);
	return v && v->len == a->expected_len && hash_bytes(a->expected, a->expected_len) == v->hash;
}

/* The status a conditional write or remove returns, by the model. */
static int status_for(struct world *w, unsigned kind, unsigned k, const struct args *a, int live)
{
	switch (kind) {
	case MOP_PUT_IF_ABSENT:
		return live ? LARDER_EXISTS : LARDER_OK;
	case MOP_REPLACE:
	case MOP_REMOVE:
	case MOP_TOUCH:
		return live ? LARDER_OK : LARDER_MISS;
	case MOP_REPLACE_IF_EQUALS:
	case MOP_REMOVE_IF_EQUALS:
		return !live ? LARDER_MISS : equal_current(w, k, a) ? LARDER_OK : LARDER_MISMATCH;
	default:
		return LARDER_OK;
	}
}

static int call_write(unsigned kind, const struct args *a, uint64_t ttl)
{
	switch (kind) {
	case MOP_PUT:
		return larder_put(a->c, a->key, a->key_len, a->value, a->value_len, ttl);
	case MOP_PUT_IF_ABSENT:
		return larder_put_if_absent(a->c, a->key, a->key_len, a->value, a->value_len, ttl);
	case MOP_REPLACE:
		return larder_replace(a->c, a->key, a->key_len, a->value, a->value_len, ttl);
	case MOP_REPLACE_IF_EQUALS:
		return larder_replace_if_equals(a->c, a->key, a->key_len, a->expected,
						a->expected_len, a->value, a->value_len, ttl);
	case MOP_REMOVE:
		return larder_remove(a->c, a->key, a->key_len);
	case MOP_REMOVE_IF_EQUALS:
		return larder_remove_if_equals(a->c, a->key, a->key_len, a->expected,
					       a->expected_len);
	default:
		return larder_touch(a->c, a->key, a->key_len, ttl);
	}
}

static void do_write(struct world *w, const struct mop *o)
{
	struct args a;
	unsigned k = o->key, kind = o->kind;
	int is_store = kind <= MOP_REPLACE_IF_EQUALS;
	int is_ifeq = kind == MOP_REPLACE_IF_EQUALS || kind == MOP_REMOVE_IF_EQUALS;

	make_args(w, o, &a);
	a.null_out = a.null_buf = 0;
	int want = arg_error(&a, is_store, is_ifeq, 0);
	uint64_t deadline = deadline_for(w, o->ttl);
	int may_refuse = 0; /* over the entry limit raw, maybe not compressed */
	if (!want && is_store && !entry_fits(w, &a, deadline)) {
		if (may_compress(w, &a))
			may_refuse = 1;
		else
			want = LARDER_EVALSIZE;
	}
	if (!want && kind == MOP_TOUCH && touch_over_limit(w, k, &a, deadline))
		may_refuse = 1; /* refused unless stored compressed, or gone meanwhile */
	int got = call_write(kind, &a, o->ttl);
	if (want) {
		expect_rc(w, mk_kind_name(kind), got, want);
		return;
	}
	if (got == LARDER_EVALSIZE && may_refuse)
		return; /* it did not compress below the limit: nothing changed */
	if (got == LARDER_EBUSY && may_be_busy(w))
		return; /* at the memory bound with no wait: nothing changed (larder.h) */
	int live = mlive(w, k);
	want = status_for(w, kind, k, &a, live);
	if (got != want && live && engine_dropped(w, k)) {
		live = 0;
		want = status_for(w, kind, k, &a, live);
	}
	expect_rc(w, mk_kind_name(kind), got, want);
	if (w->failed || got != LARDER_OK) {
		/* an expired value met by remove(_if_equals) is unlinked anyway */
		if (!w->failed && !live && w->keys[k].cur != V_NONE &&
		    (kind == MOP_REMOVE || kind == MOP_REMOVE_IF_EQUALS))
			leave(w, k, LARDER_CAUSE_EXPIRED, 0);
		return;
	}
	switch (kind) {
	case MOP_REMOVE:
	case MOP_REMOVE_IF_EQUALS:
		leave(w, k, LARDER_CAUSE_EXPLICIT, 0);
		break;
	case MOP_TOUCH:
		due_passed(w, k);
		w->keys[k].deadline = deadline;
		break;
	default:
		leave(w, k, LARDER_CAUSE_REPLACED, 0);
		store(w, k, o->vseed, (uint32_t)a.value_len, deadline);
		w->writes++;
		break;
	}
}

/* ---- Reads --------------------------------------------------------------------- */

struct got {
	int calls;
	size_t len;
	uint64_t hash;
	size_t index[MK_BATCH + 1];
	uint64_t hashes[MK_BATCH + 1];
	size_t lens[MK_BATCH + 1];
};

static void got_fn(void *ctx, const void *value, size_t len)
{
	struct got *g = ctx;
	g->calls++;
	g->len = len;
	g->hash = hash_bytes(value, len);
}

static void got_batch_fn(void *ctx, size_t index, const void *value, size_t len)
{
	struct got *g = ctx;
	if (g->calls <= MK_BATCH) {
		g->index[g->calls] = index;
		g->lens[g->calls] = len;
		g->hashes[g->calls] = hash_bytes(value, len);
	}
	g->calls++;
}

/* Checks that a read found the model's value of k (MODEL-K1). */
static void check_value(struct world *w, const char *what, unsigned k, size_t len, uint64_t hash)
{
	struct ver *v = cur_ver(w, k);
	if (!v || v->len != len || v->hash != hash)
		failf(w, "K1: %s of key %u returned %zu bytes that are not the model's value (%u "
			 "bytes)", what, k, len, v ? v->len : 0);
}

/* A value read or contains: live by the model, or dropped by the engine. */
static int read_live(struct world *w, unsigned k, int engine_found)
{
	int live = mlive(w, k);
	if (live && !engine_found && engine_dropped(w, k))
		live = 0;
	return live;
}

/* get, or with peek set larder_peek: the same results, but no hit or miss
 * counted and no deadline extended (MODEL-K4 then checks the counters). */
static void do_get(struct world *w, const struct mop *o, int peek)
{
	struct args a;
	unsigned k = o->key;
	size_t buf_len = o->arg, len = 12345;
	make_args(w, o, &a);
	unsigned char *buf = a.null_buf ? NULL : buf_len ? w->rbuf : NULL;
	if (a.null_buf && buf_len == 0)
		buf_len = 1;
	memset(w->rbuf, 0xee, 64);
	const char *what = peek ? "peek" : "get";
	int got = (peek ? larder_peek : larder_get)(a.c, a.key, a.key_len, buf, buf_len,
						    a.null_out ? NULL : &len);
	int want = arg_error(&a, 0, 0, 1);
	if (want) {
		expect_rc(w, what, got, want);
		return;
	}
	int live = read_live(w, k, got == LARDER_OK || got == LARDER_EBUFSIZE);
	struct ver *v = cur_ver(w, k);
	want = !live ? LARDER_MISS : v->len > buf_len ? LARDER_EBUFSIZE : LARDER_OK;
	expect_rc(w, what, got, want);
	if (w->failed)
		return;
	if (got == LARDER_OK) {
		check_value(w, what, k, len, hash_bytes(w->rbuf, len));
		if (!peek) {
			w->hits++;
			read_extends(w, k);
		}
	} else if (got == LARDER_EBUFSIZE) {
		if (len != v->len)
			failf(w, "K1: %s with a %zu-byte buffer said %zu bytes are needed, not %u",
			      what, buf_len, len, v->len);
		for (int i = 0; i < 64 && buf && !w->failed; i++)
			if (w->rbuf[i] != 0xee)
				failf(w, "K1: %s wrote into a buffer that was too small", what);
	} else if (!peek) {
		w->misses++;
	}
}

static void do_get_with(struct world *w, const struct mop *o)
{
	struct args a;
	struct got g = { 0 };
	unsigned k = o->key;
	make_args(w, o, &a);
	int got = larder_get_with(a.c, a.key, a.key_len, a.null_out ? NULL : got_fn, &g);
	int want = arg_error(&a, 0, 0, 1);
	if (want) {
		expect_rc(w, "get_with", got, want);
		if (g.calls)
			failf(w, "K1: get_with called back on an error");
		return;
	}
	int live = read_live(w, k, got == LARDER_OK);
	expect_rc(w, "get_with", got, live ? LARDER_OK : LARDER_MISS);
	if (w->failed)
		return;
	if (g.calls != (got == LARDER_OK))
		failf(w, "K1: get_with called back %d times for %s", g.calls, larder_strerror(got));
	else if (got == LARDER_OK) {
		check_value(w, "get_with", k, g.len, g.hash);
		w->hits++;
		read_extends(w, k);
	} else {
		w->misses++;
	}
}

static void do_get_batch(struct world *w, const struct mop *o)
{
	const void *keys[MK_BATCH];
	size_t lens[MK_BATCH];
	unsigned char longkey[MK_KEY_MAX + 2];
	struct got g = { 0 };
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	size_t klen;
	const unsigned char *lk = mk_key(w->cfg->max_key, 0, 1, &klen);

	memcpy(longkey, lk, klen);
	for (unsigned j = 0; j < o->nbatch; j++) {
		unsigned b = o->batch[j];
		if (b == MB_NULL || b == MB_EMPTY) {
			keys[j] = b == MB_NULL ? NULL : (const void *)"";
			lens[j] = b == MB_NULL ? 3 : 0;
		} else {
			keys[j] = b == MB_LONG ? longkey : w->key_bytes[b];
			lens[j] = b == MB_LONG ? klen : w->key_len[b];
		}
	}
	int null_keys = (o->faults & MF_NULL_ARRAY) && (o->vseed & 1);
	int null_lens = (o->faults & MF_NULL_ARRAY) && !(o->vseed & 1);
	long n = larder_get_batch(c, o->nbatch, null_keys ? NULL : keys, null_lens ? NULL : lens,
				  (o->faults & MF_NULL_OUT) ? NULL : got_batch_fn, &g);
	if (!c || null_keys || null_lens || (o->faults & MF_NULL_OUT)) {
		expect_rc(w, "get_batch", (int)n, LARDER_EINVAL);
		if (g.calls)
			failf(w, "K1: get_batch called back on an error");
		return;
	}
	/* The callbacks name the slots the engine found, in order (MODEL-K1). */
	int eng[MK_BATCH] = { 0 };
	if (n < 0 || g.calls != n || g.calls > o->nbatch) {
		failf(w, "K1: get_batch returned %ld with %d callbacks for %u keys", n, g.calls,
		      o->nbatch);
		return;
	}
	for (int i = 0; i < g.calls; i++) {
		if (g.index[i] >= o->nbatch || (i > 0 && g.index[i] <= g.index[i - 1]) ||
		    o->batch[g.index[i]] >= MK_KEYS) {
			failf(w, "K1: get_batch's callback %d named index %zu out of order or of a "
				 "skipped key", i, g.index[i]);
			return;
		}
		eng[g.index[i]] = 1;
	}
	/* Each slot the engine found held the model's live value when it was
	 * read: judged before any reconcile below, which may learn of
	 * evictions that came after the batch. */
	long want = 0;
	for (int i = 0; i < g.calls && !w->failed; i++) {
		unsigned j = (unsigned)g.index[i], b = o->batch[j];
		if (!mlive(w, b)) {
			failf(w, "K1: get_batch returned key %u (slot %u), which the model holds "
				 "absent", b, j);
			return;
		}
		check_value(w, "get_batch", b, g.lens[i], g.hashes[i]);
		w->hits++;
		read_extends(w, b);
		want++;
	}
	/* The slots it missed: absent by the model, or dropped by the engine. */
	for (unsigned j = 0; j < o->nbatch && !w->failed; j++) {
		unsigned b = o->batch[j];
		if (b >= MK_KEYS || eng[j])
			continue;
		if (read_live(w, b, 0)) {
			failf(w, "K1: get_batch missed key %u (slot %u), which the model holds live", b,
			      j);
			return;
		}
		w->misses++;
	}
	if (w->trace && w->op >= 0)
		w->trace[w->op].rc = (int)want;
}

static void do_contains(struct world *w, const struct mop *o)
{
	struct args a;
	make_args(w, o, &a);
	int got = larder_contains(a.c, a.key, a.key_len);
	int want = arg_error(&a, 0, 0, 0);
	if (want) {
		expect_rc(w, "contains", got, want);
		return;
	}
	int live = read_live(w, o->key, got == LARDER_OK);
	expect_rc(w, "contains", got, live ? LARDER_OK : LARDER_MISS);
}

/* larder_access: a get's result without its copy, and a get's extension
 * (read_extends), but no hit or miss counted (MODEL-K4 checks the counters). */
static void do_access(struct world *w, const struct mop *o)
{
	struct args a;
	make_args(w, o, &a);
	int got = larder_access(a.c, a.key, a.key_len);
	int want = arg_error(&a, 0, 0, 0);
	if (want) {
		expect_rc(w, "access", got, want);
		return;
	}
	int live = read_live(w, o->key, got == LARDER_OK);
	expect_rc(w, "access", got, live ? LARDER_OK : LARDER_MISS);
	if (!w->failed && got == LARDER_OK)
		read_extends(w, o->key);
}

static void do_ttl_remaining(struct world *w, const struct mop *o)
{
	struct args a;
	uint64_t ttl = 4242;
	unsigned k = o->key;
	make_args(w, o, &a);
	int got = larder_ttl_remaining(a.c, a.key, a.key_len, a.null_out ? NULL : &ttl);
	int want = arg_error(&a, 0, 0, 1);
	if (want) {
		expect_rc(w, "ttl_remaining", got, want);
		return;
	}
	int live = read_live(w, k, got == LARDER_OK);
	expect_rc(w, "ttl_remaining", got, live ? LARDER_OK : LARDER_MISS);
	if (w->failed || got != LARDER_OK)
		return;
	uint64_t d = w->keys[k].deadline;
	uint64_t model = d == UINT64_MAX ? LARDER_TTL_NEVER : d - now_of(w);
	if (ttl != model)
		failf(w, "K2: ttl_remaining of key %u is %" PRIu64 ", the model says %" PRIu64, k, ttl,
		      model);
}

/* What a walk handed out; judged after it, outside its read sections (a
 * quiesce inside one would wait for a grace period the walk itself holds). */
struct walk {
	struct world *w;
	int calls;
	int key[MK_KEYS + 1]; /* key index, -1 for bytes no key of the run has */
	size_t len[MK_KEYS + 1];
	uint64_t hash[MK_KEYS + 1], ttl[MK_KEYS + 1], bytes[MK_KEYS + 1];
};

static void walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *wk = ctx;
	int i = wk->calls++;
	if (i > MK_KEYS)
		return;
	wk->key[i] = -1;
	for (unsigned k = 0; k < MK_KEYS; k++)
		if (wk->w->key_len[k] == key_len && memcmp(wk->w->key_bytes[k], key, key_len) == 0)
			wk->key[i] = (int)k;
	wk->len[i] = value_len;
	wk->hash[i] = hash_bytes(value, value_len);
	wk->ttl[i] = ttl_ms;
	wk->bytes[i] = entry_bytes;
}

/* Hands every entry of it to wk; a cursor that ends is told so again. */
static void walk_to_end(struct world *w, larder_iter *it, struct walk *wk)
{
	int got;
	while ((got = larder_iter_next(it, walk_fn, wk)) == LARDER_OK && wk->calls <= MK_KEYS)
		;
	if (got == LARDER_MISS)
		expect_rc(w, "iter_next after the end", larder_iter_next(it, walk_fn, wk),
			  LARDER_MISS);
	if (got != LARDER_MISS || wk->calls > MK_KEYS)
		failf(w, "K1: a walk ended with %d (%s) after %d entries, more than the run has keys",
		      got, larder_strerror(got), wk->calls);
}

/* One walk over the whole cache, nothing else running: every key the model
 * holds live is handed out once with its value and remaining TTL, unless
 * the engine dropped it (larder.h, Iteration); it counts nothing. */
static void do_iter(struct world *w, const struct mop *o)
{
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	struct walk wk = { .w = w };
	larder_iter *it = NULL;
	int seen[MK_KEYS] = { 0 };
	expect_rc(w, "iter_open", larder_iter_open(c, &it), c ? LARDER_OK : LARDER_EINVAL);
	if (!it)
		return;
	if (o->faults & MF_NULL_OUT)
		expect_rc(w, "iter_next without fn", larder_iter_next(it, NULL, &wk), LARDER_EINVAL);
	walk_to_end(w, it, &wk);
	larder_iter_close(it);
	if (w->trace && w->op >= 0)
		w->trace[w->op].rc = wk.calls;
	if (w->failed)
		return;
	uint64_t now = now_of(w);
	for (int i = 0; i < wk.calls && !w->failed; i++) {
		int k = wk.key[i];
		if (k < 0 || seen[k]++ || !mlive(w, (unsigned)k)) {
			failf(w, "K1: a walk handed out key %d %s", k,
			      k < 0 ? "(not a key of the run)"
			      : seen[k] > 1 ? "twice"
					    : "which the model holds absent");
			return;
		}
		check_value(w, "a walk", (unsigned)k, wk.len[i], wk.hash[i]);
		uint64_t d = w->keys[k].deadline;
		uint64_t ttl = d == UINT64_MAX ? LARDER_TTL_NEVER : d - now;
		uint64_t least = 16 + w->key_len[k] + (w->cfg->compress_min ? 0 : wk.len[i]);
		if (wk.ttl[i] != ttl || wk.bytes[i] < least)
			failf(w, "K2: a walk handed out key %d with TTL %" PRIu64 " and %" PRIu64
				 " entry bytes; the model says TTL %" PRIu64 " and at least %" PRIu64,
			      k, wk.ttl[i], wk.bytes[i], ttl, least);
	}
	for (unsigned k = 0; k < MK_KEYS && !w->failed; k++)
		if (!seen[k] && read_live(w, k, 0))
			failf(w, "K1: a walk missed key %u, which the model holds live", k);
}

/* The small loader's capacity: the smallest a cache may have. */
#define MK_LOADER_SMALL ((uint64_t)64 << 10)

/* The cache a snapshot is loaded into: the run's limits and clock, the
 * other compression choice (snapshots hold plain values, so any cache loads
 * them: larder.h), another policy, shard count and hash seed (so another
 * order), no listener; room for every key at its longest, or (small) the
 * smallest capacity, which holds only some of them. */
static larder *open_loader(struct world *w, int small)
{
	static const enum larder_policy policies[] = {
		LARDER_POLICY_FIFO, LARDER_POLICY_LRU, LARDER_POLICY_ARC, LARDER_POLICY_WTINYLFU,
		LARDER_POLICY_S3FIFO_TUNED,
	};
	struct mcfg l = *w->cfg;
	l.capacity = small ? MK_LOADER_SMALL : (uint64_t)64 << 20;
	l.pooled = 0;
	l.compress_min = w->cfg->compress_min ? 0 : 1;
	l.dictionary = LARDER_DICTIONARY_NONE;
	l.shards = w->cfg->shards == 1 ? 4 : 1;
	l.policy = policies[(w->cfg->seed >> 8) % 5];
	l.seed = th_mix64(w->cfg->seed);
	return open_cache(w, &l, 0);
}

/* How long a snapshot may have taken, in ms of the wall clock the load
 * subtracts from each TTL: the monotonic time the op took plus room for the
 * wall clock being stepped meanwhile. */
#define MK_SNAPSHOT_SLACK_MS 60000

/* Whether the loader holds what the load charged and nothing was evicted
 * (larder_load stops adding entries at capacity). */
static void check_loader_fill(struct world *w, larder *l)
{
	uint64_t v[LARDER_STAT_EVICTIONS + 1];
	if (larder_flush(l, TH_STUCK_MS) != LARDER_OK ||
	    larder_stats(l, v, LARDER_STAT_EVICTIONS + 1) != LARDER_OK)
		failf(w, "could not flush the loaded cache");
	else if (v[LARDER_STAT_EVICTIONS] != 0 || v[LARDER_STAT_USED_BYTES] > MK_LOADER_SMALL)
		failf(w, "K1: a load into %" PRIu64 " bytes evicted %" PRIu64 ", used %" PRIu64,
		      MK_LOADER_SMALL, v[LARDER_STAT_EVICTIONS], v[LARDER_STAT_USED_BYTES]);
}

/* Whether loading a snapshot back into the run's cache rewrites exactly the
 * keys the model holds live: nothing evicts or expires behind the model's
 * back, every live entry passes the entry limit, and all of them fit twice
 * beside the used bytes (a load counts an overwritten key as new: larder.h
 * "loading stops adding entries at capacity"). */
static int load_back_exact(struct world *w)
{
	if (w->evict_possible || w->cfg->backwards)
		return 0;
	uint64_t need = stat_of(w, LARDER_STAT_USED_BYTES);
	for (unsigned k = 0; k < MK_KEYS; k++) {
		const struct ver *v = cur_ver(w, k);
		if (!v || !mlive(w, k))
			continue;
		uint64_t bytes = 32 + w->key_len[k] + v->len;
		if (bytes > w->capacity / 8)
			return 0;
		need += 2 * (bytes + 64);
	}
	return need <= w->capacity;
}

/* Loads the snapshot at path back into the run's cache (larder.h: keys
 * already in the cache are overwritten), through the load's in-memory seam
 * with no wall-clock time passed since the save, so that each TTL comes
 * back whole: each live key's value leaves REPLACED and comes back with
 * its bytes and its deadline. */
static void load_back(struct world *w, const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *d = NULL;
	long n = -1;
	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (d = malloc((size_t)n)) && fread(d, 1, (size_t)n, f) != (size_t)n)
		n = -1;
	if (f)
		fclose(f);
	if (!d || n <= 0) {
		failf(w, "could not read the snapshot back");
		free(d);
		return;
	}
	expect_rc(w, "load back", larder__snapshot_load_mem(w->c, d, (size_t)n, 0), LARDER_OK);
	free(d);
	uint64_t now = now_of(w);
	for (unsigned k = 0; k < MK_KEYS && !w->failed; k++) {
		const struct ver *v = cur_ver(w, k);
		if (!v || !mlive(w, k))
			continue;
		uint64_t d_k = w->keys[k].deadline, ttl = 0;
		uint64_t model = d_k == UINT64_MAX ? LARDER_TTL_NEVER : d_k - now;
		int rc = larder_ttl_remaining(w->c, w->key_bytes[k], w->key_len[k], &ttl);
		if (rc != LARDER_OK || ttl != model) {
			failf(w, "K2: key %u loaded back: %d, TTL %" PRIu64 ", the model's %" PRIu64,
			      k, rc, ttl, model);
			return;
		}
		uint32_t seed = v->vseed, len = v->len;
		leave(w, k, LARDER_CAUSE_REPLACED, 0);
		store(w, k, seed, len, d_k);
		w->writes++;
	}
}

/* Saves the cache, loads the file into a fresh cache and walks that: every
 * key the model holds live is there once, with its value and a TTL no
 * longer than the model's (the load subtracts the wall-clock time since
 * the save), unless its TTL may have run out meanwhile or the engine had
 * dropped it, or (every third snapshot of a run) the loader is too small to
 * take them all: then it holds a part of them, filled up to its capacity
 * and not evicting. A save counts nothing (MODEL-K4 at the next sync
 * point). The other snapshots are then loaded back into the run's own
 * cache too, when the model can tell what that rewrites (load_back_exact). */
static void do_snapshot(struct world *w, const struct mop *o)
{
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/larder-model-%ld.snap", (long)getpid());
	const char *p = (o->faults & MF_NULL_OUT) ? NULL : path;
	uint64_t t0 = th_now_ms();
	int want = c && p ? LARDER_OK : LARDER_EINVAL;
	expect_rc(w, "save", larder_save(c, p), want);
	if (want != LARDER_OK || w->failed)
		return;
	struct walk wk = { .w = w };
	larder_iter *it = NULL;
	int small = w->op % 3 == 0;
	larder *l = open_loader(w, small);
	if (!l) {
		failf(w, "could not open the cache to load into");
		unlink(path);
		return;
	}
	expect_rc(w, "load", larder_load(l, path), LARDER_OK);
	if (!w->failed && larder_iter_open(l, &it) != LARDER_OK)
		failf(w, "could not open a cursor on the loaded cache");
	if (it)
		walk_to_end(w, it, &wk);
	larder_iter_close(it);
	if (small && !w->failed)
		check_loader_fill(w, l);
	larder_close(l);
	if (w->trace && w->op >= 0)
		w->trace[w->op].rc = want;
	uint64_t now = now_of(w), slack = th_now_ms() - t0 + MK_SNAPSHOT_SLACK_MS;
	int seen[MK_KEYS] = { 0 };
	for (int i = 0; i < wk.calls && !w->failed; i++) {
		int k = wk.key[i];
		if (k < 0 || seen[k]++ || !mlive(w, (unsigned)k)) {
			failf(w, "K1: a loaded snapshot holds key %d %s", k,
			      k < 0 ? "(not a key of the run)"
			      : seen[k] > 1 ? "twice"
					    : "which the model holds absent");
			break;
		}
		check_value(w, "a loaded snapshot", (unsigned)k, wk.len[i], wk.hash[i]);
		uint64_t d = w->keys[k].deadline;
		int never = d == UINT64_MAX, bad;
		bad = never ? wk.ttl[i] != LARDER_TTL_NEVER
			    : wk.ttl[i] == LARDER_TTL_NEVER || wk.ttl[i] > d - now;
		if (bad)
			failf(w, "K2: a loaded snapshot holds key %d with TTL %" PRIu64
				 ", the model's is %" PRIu64,
			      k, wk.ttl[i], never ? LARDER_TTL_NEVER : d - now);
	}
	for (unsigned k = 0; k < MK_KEYS && !w->failed; k++) {
		uint64_t d = w->keys[k].deadline;
		if (!small && !seen[k] && mlive(w, k) && (d == UINT64_MAX || d - now > slack) &&
		    read_live(w, k, 0))
			failf(w, "K1: a loaded snapshot lacks key %u, which the model holds live", k);
	}
	if (!small && !w->failed && load_back_exact(w))
		load_back(w, path);
	unlink(path);
}

/* ---- Whole-cache operations ---------------------------------------------------- */

/* larder_flush: afterwards the entry count is every key the model holds live,
 * in a run where nothing else removes entries behind the model's back (no
 * eviction, a clock that never steps back). */
static void do_flush(struct world *w, const struct mop *o)
{
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	int got = larder_flush(c, TH_STUCK_MS);
	expect_rc(w, "flush", got, c ? LARDER_OK : LARDER_EINVAL);
	if (got != LARDER_OK || w->evict_possible || w->cfg->backwards)
		return;
	uint64_t v[LARDER_STAT_COUNT], live = 0;
	for (unsigned k = 0; k < MK_KEYS; k++)
		live += mlive(w, k);
	if (larder_stats(w->c, v, LARDER_STAT_COUNT) != LARDER_OK)
		failf(w, "K4: stats failed after a flush");
	else if (v[LARDER_STAT_ENTRIES] != live)
		failf(w, "K4: after a flush the cache counts %" PRIu64 " entries, the model %" PRIu64,
		      v[LARDER_STAT_ENTRIES], live);
}

static void do_clear(struct world *w, const struct mop *o)
{
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	int got = larder_clear(c);
	expect_rc(w, "clear", got, c ? LARDER_OK : LARDER_EINVAL);
	if (got != LARDER_OK)
		return;
	for (unsigned k = 0; k < MK_KEYS; k++)
		leave(w, k, LARDER_CAUSE_CLEARED, 1);
}

static void do_set_capacity(struct world *w, const struct mop *o)
{
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	uint64_t bytes = o->arg;
	int ok = c && bytes >= (64u << 10) && bytes < ((uint64_t)1 << 62);
	/* A pooled cache's capacity is the pool's to set (larder_set_capacity),
	 * whatever the bytes (tests/unit/test_contracts.c holds the same). */
	expect_rc(w, "set_capacity", larder_set_capacity(c, bytes),
		  c && w->pool ? LARDER_ESTATE : ok ? LARDER_OK : LARDER_EINVAL);
	if (!ok || w->pool || w->failed)
		return;
	w->capacity = bytes;
	/* 24 keys of at most 1 MiB, slot rounding included, fit in 48 MiB */
	if (bytes < (48u << 20))
		w->evict_possible = 1;
}

static void do_stats(struct world *w, const struct mop *o)
{
	uint64_t v[LARDER_STAT_COUNT + 4];
	larder *c = (o->faults & MF_NULL_CACHE) ? NULL : w->c;
	expect_rc(w, "stats(NULL, 0)", larder_stats(c, NULL, 0), c ? LARDER_OK : LARDER_EINVAL);
	expect_rc(w, "stats(NULL, 1)", larder_stats(w->c, NULL, 1), LARDER_EINVAL);
	memset(v, 0xab, sizeof(v));
	expect_rc(w, "stats", larder_stats(w->c, v, TH_COUNT(v)), LARDER_OK);
	if (w->failed)
		return;
	for (size_t i = LARDER_STAT_COUNT; i < TH_COUNT(v); i++)
		if (v[i] != 0)
			failf(w, "K1: larder_stats left index %zu (past the counters) not zero", i);
	if (v[LARDER_STAT_CAPACITY_BYTES] != w->capacity)
		failf(w, "K1: capacity_bytes is %" PRIu64 ", set to %" PRIu64,
		      v[LARDER_STAT_CAPACITY_BYTES], w->capacity);
	uint64_t bound = w->capacity / 100 > (4u << 20) ? w->capacity / 100 : (4u << 20);
	if (v[LARDER_STAT_OVERSHOOT_BOUND] != bound)
		failf(w, "K1: overshoot_bound is %" PRIu64 ", larder.h says %" PRIu64,
		      v[LARDER_STAT_OVERSHOOT_BOUND], bound);
	if (v[LARDER_STAT_WRITES] != w->writes || v[LARDER_STAT_HITS] != w->hits ||
	    v[LARDER_STAT_MISSES] != w->misses)
		failf(w, "K4: writes/hits/misses are %" PRIu64 "/%" PRIu64 "/%" PRIu64
			 ", the model counts %" PRIu64 "/%" PRIu64 "/%" PRIu64,
		      v[LARDER_STAT_WRITES], v[LARDER_STAT_HITS], v[LARDER_STAT_MISSES], w->writes,
		      w->hits, w->misses);
}

static void do_clock(struct world *w, const struct mop *o)
{
	atomic_store_explicit(&w->now, o->arg, memory_order_release);
	if (o->arg > w->max_clock)
		w->max_clock = o->arg;
	larder__test_wake(w->c); /* the maintainer works while the run goes on */
}

static void apply_op(struct world *w, const struct mop *o)
{
	switch (o->kind) {
	case MOP_GET:
	case MOP_PEEK:
		do_get(w, o, o->kind == MOP_PEEK);
		break;
	case MOP_GET_WITH:
		do_get_with(w, o);
		break;
	case MOP_GET_BATCH:
		do_get_batch(w, o);
		break;
	case MOP_CONTAINS:
		do_contains(w, o);
		break;
	case MOP_ACCESS:
		do_access(w, o);
		break;
	case MOP_TTL_REMAINING:
		do_ttl_remaining(w, o);
		break;
	case MOP_ITER:
		do_iter(w, o);
		break;
	case MOP_SNAPSHOT:
		do_snapshot(w, o);
		break;
	case MOP_FLUSH:
		do_flush(w, o);
		break;
	case MOP_CLEAR:
		do_clear(w, o);
		break;
	case MOP_SET_CAPACITY:
		do_set_capacity(w, o);
		break;
	case MOP_STATS:
		do_stats(w, o);
		break;
	case MOP_CLOCK:
		do_clock(w, o);
		break;
	case MOP_SYNC:
		sync_point(w);
		break;
	default:
		do_write(w, o);
		break;
	}
}

/* ---- A run ------------------------------------------------------------------------ */

/* The dictionary a LARDER_DICTIONARY_GIVEN run hands over: sample content
 * shaped like the compressible values (model.h). */
static void dictionary_sample(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = mk_value_byte((uint32_t)(i / 64) << 2, i);
}

static int set_compression(larder_config *lc, const struct mcfg *cfg)
{
	unsigned char dict[MK_DICT_BYTES];
	int given = cfg->dictionary == LARDER_DICTIONARY_GIVEN;
	int rc;
	if (cfg->compress_min == 0)
		return LARDER_OK;
	rc = larder_config_set_compression(lc, cfg->compress_min, cfg->compress_saving);
	if (rc != LARDER_OK)
		return rc;
	if (given)
		dictionary_sample(dict, sizeof(dict));
	return larder_config_set_compression_dictionary(lc, cfg->dictionary, given ? dict : NULL,
							 given ? sizeof(dict) : 0);
}

/* The pool of a pooled run (cfg->pooled): budget and shares that give its
 * one cache cfg->capacity exactly, with no controller to move it (a static
 * split); in w->pool. LARDER_OK or the failing call's result. */
static int pool_create(struct world *w, const struct mcfg *cfg, larder_config *lc)
{
	larder_pool_config *pc = NULL;
	/* The smallest budget is 1 MiB: a tiny capacity is a share of it
	 * (1/16, 1/8 or 1/4: exact in binary). */
	uint64_t budget = cfg->capacity < (1u << 20) ? 1u << 20 : cfg->capacity;
	double share = (double)cfg->capacity / (double)budget;
	int rc = larder_pool_config_create(&pc);
	if (rc == LARDER_OK && (rc = larder_pool_config_set_budget(pc, budget)) == LARDER_OK &&
	    (rc = larder_pool_config_set_interval_ms(pc, 0)) == LARDER_OK &&
	    (rc = larder_pool_create(&w->pool, pc)) == LARDER_OK &&
	    (rc = larder_config_set_pool(lc, w->pool)) == LARDER_OK)
		rc = larder_config_set_pool_shares(lc, share, share);
	larder_pool_config_destroy(pc);
	return rc;
}

/* Whether the pooled cache has been given its whole share (it grows to it
 * in the background after larder_open: larder_config_set_pool). */
static int pool_share_given(void *ctx)
{
	struct world *w = ctx;
	uint64_t v[LARDER_STAT_COUNT];
	return larder_stats(w->c, v, LARDER_STAT_COUNT) == LARDER_OK &&
	       v[LARDER_STAT_CAPACITY_BYTES] == w->cfg->capacity;
}

/* A cache of cfg on the run's clock; with listen, reporting to the model;
 * pooled (cfg->pooled), in w->pool, which it creates. */
static larder *open_cache(struct world *w, const struct mcfg *cfg, int listen)
{
	larder_config *lc = NULL;
	larder *c = NULL;
	if (larder_config_create(&lc) != LARDER_OK)
		return NULL;
	if ((cfg->pooled ? pool_create(w, cfg, lc)
			 : larder_config_set_capacity(lc, cfg->capacity)) == LARDER_OK &&
	    larder_config_set_hash_seed(lc, cfg->seed) == LARDER_OK &&
	    larder_config_set_policy(lc, cfg->policy) == LARDER_OK &&
	    larder_config_set_expiry(lc, cfg->expiry) == LARDER_OK &&
	    larder_config_set_default_ttl_ms(lc, cfg->default_ttl) == LARDER_OK &&
	    larder_config_set_max_key_bytes(lc, cfg->max_key) == LARDER_OK &&
	    larder_config_set_max_value_bytes(lc, cfg->max_value) == LARDER_OK &&
	    larder_config_set_write_wait_ms(lc, cfg->write_wait_ms) == LARDER_OK &&
	    larder_config_set_expected_entries(lc, cfg->expected_entries) == LARDER_OK &&
	    larder_config_set_shards(lc, cfg->shards) == LARDER_OK &&
	    larder_config_set_clock(lc, clock_fn, w) == LARDER_OK &&
	    larder_config_set_removal_listener(lc, listen ? listener : NULL, w) == LARDER_OK &&
	    set_compression(lc, cfg) == LARDER_OK && larder_open(&c, lc) != LARDER_OK)
		c = NULL;
	if (c)
		larder__test_stuck_ms(c, TH_STUCK_MS); /* a loaded machine: harness.h */
	larder_config_destroy(lc);
	return c;
}

int mk_run(const struct mcfg *cfg, const struct mop *ops, size_t n, struct mfail *f,
	   struct mtrace *trace)
{
	struct world *w = calloc(1, sizeof(*w));
	size_t vmax = (1u << 20) + 64;
	int ok = 0;

	memset(f, 0, sizeof(*f));
	if (!w)
		return 0;
	w->cfg = cfg;
	w->ops = ops;
	w->fail = f;
	w->op = -1;
	w->trace = trace;
	pthread_mutex_init(&w->mu, NULL);
	atomic_init(&w->now, MK_T0);
	w->max_clock = MK_T0;
	w->capacity = cfg->capacity;
	w->default_ttl = cfg->default_ttl == 0 ? LARDER_TTL_NEVER : cfg->default_ttl;
	if (cfg->expiry == LARDER_EXPIRE_AFTER_ACCESS && w->default_ttl != LARDER_TTL_NEVER) {
		w->access_ttl = w->default_ttl;
		w->access_slack = w->access_ttl / 64 > 1000 ? 1000 : w->access_ttl / 64;
	}
	w->evict_possible = cfg->tiny;
	for (unsigned k = 0; k < MK_KEYS; k++) {
		const unsigned char *kp = mk_key(cfg->max_key, k, 0, &w->key_len[k]);
		memcpy(w->key_bytes[k], kp, w->key_len[k]);
		w->keys[k].cur = V_NONE;
	}
	w->vbuf = malloc(vmax);
	w->xbuf = malloc(vmax);
	w->rbuf = malloc(vmax);
	uint64_t mapped0 = larder__test_mapped_bytes();
	if (!w->vbuf || !w->xbuf || !w->rbuf || !(w->c = open_cache(w, cfg, 1))) {
		failf(w, "could not open the cache");
		if (w->pool && larder_pool_close(w->pool) != LARDER_OK)
			failf(w, "larder_pool_close refused a pool with no open cache");
		goto done;
	}
	if (w->pool && !th_wait_until(pool_share_given, w, 60000u)) {
		failf(w, "the pool never gave its cache its share (%" PRIu64 " bytes)",
		      cfg->capacity);
		n = 0; /* no operation: close and report */
	}
	for (size_t i = 0; i < n && !w->failed; i++) {
		w->op = (long)i;
		apply_op(w, &ops[i]);
	}
	if (!w->failed) {
		w->op = -1;
		sync_point(w);
	}
	larder_close(w->c);
	if (w->pool && larder_pool_close(w->pool) != LARDER_OK)
		failf(w, "larder_pool_close refused a pool with no open cache");
	if (!w->failed && larder__test_mapped_bytes() != mapped0)
		failf(w, "K5: close left %" PRIu64 " bytes mapped",
		      larder__test_mapped_bytes() - mapped0);
	ok = !w->failed;
done:
	free(w->vbuf);
	free(w->xbuf);
	free(w->rbuf);
	free(w->vers);
	free(w->reports);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return ok;
}
