/*
 * larder-sim - miss ratios of larder's eviction policies on cache traces.
 *
 *   larder-sim TRACE... [--policies LIST] [--sizes LIST] [--csv FILE]
 *              [--svg FILE] [--bytes] [--sample N] [--hit-ring D[:SLOTS]]
 *              [--hit-dedup] [--passes D] [--shards K] [--reference TSV]
 *
 * TRACE is the public traces' text format (docs/policies.md; one "id" or "id size"
 * per line), plain or gzip (zlib's gzopen reads both). Each trace is loaded
 * once, its ids renumbered densely, then every (size, policy) cell is
 * replayed from memory.
 *
 * Policies: s3fifo lru wtinylfu arc fifo default go through the public
 * simulator (larder_sim_*), i.e. the engine's own policy code; exact-lru and
 * belady are yardsticks written here independently of the engine:
 *   exact-lru  a doubly linked list over the dense ids;
 *   belady     MIN with forced admission (Belady 1966): next uses are
 *              precomputed in one backward pass, and a max-heap of
 *              (next use, id) with lazy deletion names the victim.
 * Sizes: object counts, or percentages of the trace's unique objects
 * ("0.1%,1%,10%"), or "ref" for the sizes REFERENCE.tsv lists for the trace
 * (with --reference, whose miss ratios are then printed beside ours).
 * --bytes charges each request's size (sized traces) instead of 1.
 * --sample N delivers one hit in N to the policies, at random; --hit-ring
 * D[:SLOTS] delivers them as the engine's per-thread hit ring does (drained
 * every D requests, newest SLOTS kept, by default 1024 as in the engine):
 * the two ways to measure what lossy hit events cost; --hit-dedup adds the
 * proposed per-entry sample epoch to the ring model. --passes D models the
 * maintainer's pass (src/sim/sim.c, LARDER_SIM_PASSES): misses reach the
 * policy, and victims leave, only at a drain every D requests (or once 256
 * inserts wait); alone it delivers
 * hits of linked entries at once, with --hit-ring D[:SLOTS] (the same D)
 * through the ring. exact-lru and belady are unaffected.
 * --shards K (a power of two, 1 to 65536) splits each of larder's policies
 * into K instances routed by key hash, each sized for 1/K of the cache,
 * sharing its one capacity (larder_sim_set_shards, docs/shards.md): what a
 * cache with K maintainers would do. K = 1 is the unsharded run, exactly;
 * the yardsticks exact-lru and belady are never sharded.
 *
 * The CSV contract: header trace,policy,cache_size,requests,misses,miss_ratio
 * and one row per cell. Exit status 0, or 1 with a message on stderr.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "larder.h"

struct trace {
	char name[128];
	uint32_t *ids;   /* dense ids, 0..unique-1 */
	uint64_t *keys;  /* original id of each dense id */
	uint32_t *sizes; /* request sizes, or NULL for id-only traces */
	uint64_t n, unique;
};

#define MAX_COLS 16
#define MAX_SIZES 64

struct cell {
	uint64_t size;
	uint64_t misses[MAX_COLS];
	double ref[MAX_COLS];
};

static const char *policy_names[] = {"s3fifo", "lru", "wtinylfu", "arc", "fifo",
				     "wtinylfu-tuned", "s3fifo-tuned", "default", "exact-lru",
				     "belady"};
static const enum larder_policy policy_enums[] = {
	LARDER_POLICY_S3FIFO, LARDER_POLICY_LRU,	   LARDER_POLICY_WTINYLFU,
	LARDER_POLICY_ARC,    LARDER_POLICY_FIFO,	   LARDER_POLICY_WTINYLFU_TUNED,
	LARDER_POLICY_S3FIFO_TUNED, LARDER_POLICY_DEFAULT};
/* REFERENCE.tsv's algorithm names for our policies (NULL: none). */
static const char *ref_names[] = {"S3FIFO", "LRU", "WTinyLFU", "ARC", "FIFO", NULL, NULL, NULL,
				  "LRU", "Belady"};
#define N_POLICIES (sizeof policy_names / sizeof policy_names[0])

static int fail(const char *msg, const char *arg)
{
	fprintf(stderr, "larder-sim: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	return 1;
}

/* ---- Trace loading ------------------------------------------------------ */

struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	uint64_t mask, count;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static int idmap_grow(struct idmap *m)
{
	uint64_t n = m->mask ? (m->mask + 1) * 2 : 1u << 16;
	uint64_t *k = malloc(n * sizeof *k);
	uint32_t *v = malloc(n * sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	memset(v, 0xff, n * sizeof *v);
	for (uint64_t i = 0; m->mask && i <= m->mask; i++) {
		if (m->vals[i] == UINT32_MAX)
			continue;
		uint64_t j = mix64(m->keys[i]) & (n - 1);
		while (v[j] != UINT32_MAX)
			j = (j + 1) & (n - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->mask = n - 1;
	return 0;
}

/* The dense id of key, assigning the next one when new; UINT32_MAX on OOM. */
static uint32_t idmap_get(struct idmap *m, uint64_t key)
{
	if ((m->count + 1) * 2 > m->mask + 1 && idmap_grow(m) != 0)
		return UINT32_MAX;
	uint64_t j = mix64(key) & m->mask;
	while (m->vals[j] != UINT32_MAX) {
		if (m->keys[j] == key)
			return m->vals[j];
		j = (j + 1) & m->mask;
	}
	m->keys[j] = key;
	m->vals[j] = (uint32_t)m->count;
	return (uint32_t)m->count++;
}

static void trace_name(char *out, size_t cap, const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	snprintf(out, cap, "%s", b);
	char *dot = strstr(out, ".txt");
	if (!dot)
		dot = strstr(out, ".gz");
	if (dot)
		*dot = 0;
}

static int push_request(struct trace *t, uint64_t *cap, uint32_t id, uint64_t size, int sized)
{
	if (t->n == *cap) {
		*cap = *cap ? *cap * 2 : 1u << 20;
		uint32_t *ids = realloc(t->ids, *cap * sizeof *ids);
		if (!ids)
			return -1;
		t->ids = ids;
		if (sized) {
			uint32_t *sz = realloc(t->sizes, *cap * sizeof *sz);
			if (!sz)
				return -1;
			t->sizes = sz;
		}
	}
	t->ids[t->n] = id;
	if (sized)
		t->sizes[t->n] = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	t->n++;
	return 0;
}

static int load_trace(struct trace *t, const char *path)
{
	memset(t, 0, sizeof *t);
	trace_name(t->name, sizeof t->name, path);
	gzFile f = gzopen(path, "rb");
	if (!f)
		return fail("cannot open trace", path);
	gzbuffer(f, 1 << 20);
	struct idmap m = {0};
	uint64_t cap = 0;
	int sized = -1;
	char line[256];
	while (gzgets(f, line, sizeof line)) {
		char *e;
		uint64_t id = strtoull(line, &e, 10);
		if (e == line)
			continue;
		if (sized < 0)
			sized = (*e == ' ');
		uint64_t size = (*e == ' ') ? strtoull(e + 1, NULL, 10) : 1;
		uint32_t d = idmap_get(&m, id);
		if (d == UINT32_MAX || push_request(t, &cap, d, size, sized == 1) != 0) {
			gzclose(f);
			return fail("out of memory loading", path);
		}
	}
	gzclose(f);
	t->unique = m.count;
	t->keys = malloc((t->unique ? t->unique : 1) * sizeof *t->keys);
	if (!t->keys)
		return fail("out of memory", NULL);
	for (uint64_t i = 0; i <= m.mask && m.mask; i++)
		if (m.vals[i] != UINT32_MAX)
			t->keys[m.vals[i]] = m.keys[i];
	free(m.keys);
	free(m.vals);
	if (t->n == 0)
		return fail("empty trace", path);
	return 0;
}

/* ---- Yardsticks, independent of the engine -------------------------------- */

static uint64_t req_size(const struct trace *t, uint64_t i, int bytes)
{
	return (bytes && t->sizes) ? (t->sizes[i] ? t->sizes[i] : 1) : 1;
}

/* Exact LRU: a doubly linked list over dense ids (head = most recent). */
static uint64_t run_exact_lru(const struct trace *t, uint64_t cap, int bytes)
{
	uint32_t *prev = malloc(t->unique * sizeof *prev);
	uint32_t *next = malloc(t->unique * sizeof *next);
	uint64_t *held = calloc(t->unique, sizeof *held); /* charged size, 0 = absent */
	const uint32_t NIL = UINT32_MAX;
	uint32_t head = NIL, tail = NIL;
	uint64_t used = 0, misses = 0;
	if (!prev || !next || !held) {
		misses = UINT64_MAX;
		goto out;
	}
	for (uint64_t i = 0; i < t->n; i++) {
		uint32_t id = t->ids[i];
		uint64_t sz = req_size(t, i, bytes);
		if (held[id]) { /* unlink; relinked at the head below */
			if (prev[id] != NIL) next[prev[id]] = next[id]; else head = next[id];
			if (next[id] != NIL) prev[next[id]] = prev[id]; else tail = prev[id];
			used -= held[id];
		} else {
			misses++;
		}
		prev[id] = NIL;
		next[id] = head;
		if (head != NIL) prev[head] = id; else tail = id;
		head = id;
		held[id] = sz;
		used += sz;
		while (used > cap && tail != NIL) {
			uint32_t v = tail;
			tail = prev[v];
			if (tail != NIL) next[tail] = NIL; else head = NIL;
			used -= held[v];
			held[v] = 0;
		}
	}
out:
	free(prev);
	free(next);
	free(held);
	return misses;
}

struct heap_item {
	uint64_t next_use;
	uint32_t id;
};

static void heap_push(struct heap_item *h, uint64_t *n, struct heap_item it)
{
	uint64_t i = (*n)++;
	while (i > 0) {
		uint64_t p = (i - 1) / 2;
		if (h[p].next_use >= it.next_use)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = it;
}

static struct heap_item heap_pop(struct heap_item *h, uint64_t *n)
{
	struct heap_item top = h[0], last = h[--(*n)];
	uint64_t i = 0;
	for (;;) {
		uint64_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].next_use > h[c].next_use)
			c++;
		if (h[c].next_use <= last.next_use)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* next_use[i]: index of the next request for the same id, or UINT64_MAX. */
static uint64_t *next_uses(const struct trace *t)
{
	uint64_t *nu = malloc(t->n * sizeof *nu);
	uint64_t *last = malloc(t->unique * sizeof *last);
	if (!nu || !last) {
		free(nu);
		free(last);
		return NULL;
	}
	memset(last, 0xff, t->unique * sizeof *last);
	for (uint64_t i = t->n; i-- > 0;) {
		nu[i] = last[t->ids[i]];
		last[t->ids[i]] = i;
	}
	free(last);
	return nu;
}

/* Belady's MIN with forced admission: the victim is the cached id used furthest ahead. */
static uint64_t run_belady(const struct trace *t, const uint64_t *nu, uint64_t cap, int bytes)
{
	uint64_t *cur = malloc(t->unique * sizeof *cur); /* its next use while cached */
	uint64_t *held = calloc(t->unique, sizeof *held);
	struct heap_item *h = malloc(t->n * sizeof *h);
	uint64_t hn = 0, used = 0, misses = 0;
	if (!cur || !held || !h) {
		misses = UINT64_MAX;
		goto out;
	}
	for (uint64_t i = 0; i < t->n; i++) {
		uint32_t id = t->ids[i];
		uint64_t sz = req_size(t, i, bytes);
		if (held[id]) {
			used -= held[id];
		} else {
			misses++;
			while (used + sz > cap && hn > 0) {
				struct heap_item v = heap_pop(h, &hn);
				if (!held[v.id] || cur[v.id] != v.next_use)
					continue; /* stale: superseded by a later push */
				used -= held[v.id];
				held[v.id] = 0;
			}
		}
		held[id] = sz;
		used += sz;
		cur[id] = nu[i];
		heap_push(h, &hn, (struct heap_item){nu[i], id});
	}
out:
	free(cur);
	free(held);
	free(h);
	return misses;
}

/* ---- Larder's policies through the public simulator ----------------------- */

struct opts {
	int pol[MAX_COLS];
	int npol;
	char sizes[1024];
	const char *csv, *svg, *reference;
	int bytes;
	uint32_t sample;
	uint32_t ring_drain, ring_slots;
	uint32_t passes;
	uint32_t shards; /* 0: unsharded (the same as 1) */
	int dedup;
};

static uint64_t run_larder(const struct trace *t, enum larder_policy pol, uint64_t cap,
			   const struct opts *o, char *resolved, size_t rcap)
{
	larder_sim *s;
	int bytes = o->bytes;
	unsigned flags = (o->sample > 1 ? LARDER_SIM_SAMPLE_HITS : 0) |
			 (o->ring_drain ? LARDER_SIM_HIT_RING : 0) |
			 (o->ring_drain && o->dedup ? LARDER_SIM_HIT_DEDUP : 0) |
			 (o->passes ? LARDER_SIM_PASSES : 0);
	if (larder_sim_create(&s, pol, cap, flags) != LARDER_OK)
		return UINT64_MAX;
	if ((o->sample > 1 && larder_sim_set_hit_sampling(s, o->sample, 42) != LARDER_OK) ||
	    (o->ring_drain &&
	     larder_sim_set_hit_ring(s, o->ring_slots, o->ring_drain) != LARDER_OK) ||
	    (!o->ring_drain && o->passes &&
	     larder_sim_set_hit_ring(s, o->passes, o->passes) != LARDER_OK) ||
	    (o->shards && larder_sim_set_shards(s, o->shards) != LARDER_OK)) {
		larder_sim_destroy(s);
		return UINT64_MAX;
	}
	snprintf(resolved, rcap, "%s", larder_sim_policy_name(s));
	uint64_t misses = 0;
	for (uint64_t i = 0; i < t->n; i++) {
		int rc = larder_sim_access(s, t->keys[t->ids[i]], req_size(t, i, bytes));
		if (rc < 0) {
			misses = UINT64_MAX;
			break;
		}
		misses += (rc == 0);
	}
	larder_sim_destroy(s);
	return misses;
}

/* ---- Options, reference, output -------------------------------------------- */

static int parse_policies(struct opts *o, const char *list)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", list);
	o->npol = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		size_t k = 0;
		while (k < N_POLICIES && strcmp(tok, policy_names[k]) != 0)
			k++;
		if (k == N_POLICIES)
			return fail("unknown policy (s3fifo lru wtinylfu arc fifo wtinylfu-tuned s3fifo-tuned default exact-lru belady)", tok);
		if (o->npol == MAX_COLS)
			return fail("too many policies", NULL);
		o->pol[o->npol++] = (int)k;
	}
	return o->npol ? 0 : fail("no policies", NULL);
}

/* Reads the reference rows for trace into cells (sizes when want_sizes). */
static int read_reference(const char *path, const struct trace *t, const struct opts *o,
			  struct cell *cells, int *ncells, int want_sizes)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return fail("cannot open reference", path);
	char line[256], tr[128], alg[64];
	unsigned long long size;
	double mr;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%127s %llu %63s %lf", tr, &size, alg, &mr) != 4 ||
		    strcmp(tr, t->name) != 0)
			continue;
		int c = 0;
		while (c < *ncells && cells[c].size != size)
			c++;
		if (c == *ncells) {
			if (!want_sizes || *ncells == MAX_SIZES)
				continue;
			memset(&cells[c], 0, sizeof cells[c]);
			for (int k = 0; k < MAX_COLS; k++)
				cells[c].ref[k] = -1;
			cells[c].size = size;
			(*ncells)++;
		}
		for (int k = 0; k < o->npol; k++)
			if (ref_names[o->pol[k]] && strcmp(ref_names[o->pol[k]], alg) == 0)
				cells[c].ref[k] = mr;
	}
	fclose(f);
	return 0;
}

static int cmp_cell(const void *a, const void *b)
{
	uint64_t x = ((const struct cell *)a)->size, y = ((const struct cell *)b)->size;
	return (x > y) - (x < y);
}

static int make_sizes(const struct opts *o, const struct trace *t, struct cell *cells, int *n)
{
	*n = 0;
	if (strcmp(o->sizes, "ref") == 0) {
		if (!o->reference)
			return fail("--sizes ref needs --reference", NULL);
		if (read_reference(o->reference, t, o, cells, n, 1) != 0)
			return 1;
	} else {
		char buf[1024];
		snprintf(buf, sizeof buf, "%s", o->sizes);
		for (char *tok = strtok(buf, ","); tok && *n < MAX_SIZES; tok = strtok(NULL, ",")) {
			char *e;
			double v = strtod(tok, &e);
			uint64_t sz = (*e == '%') ? (uint64_t)(v / 100.0 * (double)t->unique + 0.5)
						  : (uint64_t)v;
			if (sz == 0)
				return fail("bad size", tok);
			memset(&cells[*n], 0, sizeof cells[*n]);
			for (int k = 0; k < MAX_COLS; k++)
				cells[*n].ref[k] = -1;
			cells[(*n)++].size = sz;
		}
		if (o->reference && read_reference(o->reference, t, o, cells, n, 0) != 0)
			return 1;
	}
	qsort(cells, (size_t)*n, sizeof *cells, cmp_cell);
	return *n ? 0 : fail("no sizes for trace", t->name);
}

static void print_table(const struct trace *t, const struct opts *o, const struct cell *cells,
			int n, char resolved[][32])
{
	printf("\n%s: %llu requests, %llu unique objects%s", t->name, (unsigned long long)t->n,
	       (unsigned long long)t->unique,
	       (o->sample > 1 || o->ring_drain) ? " (hits lossy)" : "");
	if (o->shards)
		printf(", larder's policies in %u shards", o->shards);
	printf("\n");
	printf("%12s", "cache_size");
	for (int k = 0; k < o->npol; k++) {
		char h[64];
		if (strcmp(policy_names[o->pol[k]], "default") == 0)
			snprintf(h, sizeof h, "default(%.31s)", resolved[k]);
		else
			snprintf(h, sizeof h, "%s", policy_names[o->pol[k]]);
		printf(" %12s", h);
		if (o->reference && ref_names[o->pol[k]])
			printf(" %8s", "ref");
	}
	printf("\n");
	for (int c = 0; c < n; c++) {
		printf("%12llu", (unsigned long long)cells[c].size);
		for (int k = 0; k < o->npol; k++) {
			printf(" %12.4f", (double)cells[c].misses[k] / (double)t->n);
			if (o->reference && ref_names[o->pol[k]]) {
				if (cells[c].ref[k] >= 0)
					printf(" %8.4f", cells[c].ref[k]);
				else
					printf(" %8s", "-");
			}
		}
		printf("\n");
	}
	fflush(stdout);
}

/* ---- SVG chart: one panel per trace, miss ratio against log cache size ---- */

struct panel {
	char name[128];
	struct cell *cells;
	int n;
	uint64_t requests;
};

static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b",
			       "#e377c2", "#7f7f7f", "#000000", "#bcbd22", "#17becf"};

static void svg_panel(FILE *f, const struct panel *p, const struct opts *o, double x0,
		      double y0, double w, double h)
{
	double lo = 1, hi = 0, smin = 1e300, smax = 0;
	for (int c = 0; c < p->n; c++) {
		double s = (double)p->cells[c].size;
		smin = s < smin ? s : smin;
		smax = s > smax ? s : smax;
		for (int k = 0; k < o->npol; k++) {
			double m = (double)p->cells[c].misses[k] / (double)p->requests;
			lo = m < lo ? m : lo;
			hi = m > hi ? m : hi;
		}
	}
	lo = (double)(int)(lo * 10) / 10;
	hi = (double)(int)(hi * 10 + 0.999) / 10;
	if (hi <= lo)
		hi = lo + 0.1;
	double lx0 = log10(smin), lx1 = log10(smax) > lx0 ? log10(smax) : lx0 + 1;
	double px = x0 + 50, py = y0 + 25, pw = w - 70, ph = h - 65;
	fprintf(f, "<text x='%.1f' y='%.1f' font-size='13' font-weight='bold'>%s</text>\n",
		px, y0 + 15, p->name);
	fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#999'/>\n",
		px, py, pw, ph);
	for (int i = 0; i <= 4; i++) {
		double v = lo + (hi - lo) * i / 4, y = py + ph - ph * i / 4;
		fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", px, y,
			px + pw, y);
		fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>%.2f</text>\n",
			px - 4, y + 3, v);
	}
	for (int c = 0; c < p->n; c++) {
		double x = px + pw * (log10((double)p->cells[c].size) - lx0) / (lx1 - lx0);
		fprintf(f, "<text x='%.1f' y='%.1f' font-size='9' text-anchor='middle'>%llu</text>\n",
			x, py + ph + 12, (unsigned long long)p->cells[c].size);
	}
	fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' text-anchor='middle'>cache size (log)</text>\n",
		px + pw / 2, py + ph + 26);
	for (int k = 0; k < o->npol; k++) {
		fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='",
			colors[k % 10]);
		for (int c = 0; c < p->n; c++) {
			double m = (double)p->cells[c].misses[k] / (double)p->requests;
			double x = px + pw * (log10((double)p->cells[c].size) - lx0) / (lx1 - lx0);
			double y = py + ph - ph * (m - lo) / (hi - lo);
			fprintf(f, "%.1f,%.1f ", x, y);
		}
		fprintf(f, "'/>\n");
	}
}

static int write_svg(const char *path, const struct panel *panels, int np, const struct opts *o)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return fail("cannot write", path);
	int cols = np < 2 ? 1 : 2, rows = (np + cols - 1) / cols;
	double w = 460, h = 260, legend = 30;
	fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
		   "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
		w * cols, h * rows + legend);
	for (int k = 0; k < o->npol; k++) {
		double x = 20 + k * 110.0;
		fprintf(f, "<line x1='%.0f' y1='15' x2='%.0f' y2='15' stroke='%s' stroke-width='3'/>"
			   "<text x='%.0f' y='19' font-size='12'>%s</text>\n",
			x, x + 20, colors[k % 10], x + 24, policy_names[o->pol[k]]);
	}
	for (int i = 0; i < np; i++)
		svg_panel(f, &panels[i], o, (i % cols) * w, legend + (i / cols) * h, w, h);
	fprintf(f, "<text x='10' y='%.0f' font-size='10'>miss ratio%s; written by larder-sim</text>\n</svg>\n",
		h * rows + legend - 4, (o->sample > 1 || o->ring_drain) ? " (hits lossy)" : "");
	return fclose(f) == 0 ? 0 : fail("cannot write", path);
}

/* ---- main ------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr,
		"usage: larder-sim TRACE... [--policies LIST] [--sizes LIST] [--csv FILE]\n"
		"                  [--svg FILE] [--bytes] [--sample N] [--hit-ring D[:SLOTS]]\n"
		"                  [--hit-dedup] [--passes D] [--shards K]\n"
		"                  [--reference TSV]\n"
		"  policies: s3fifo lru wtinylfu arc fifo wtinylfu-tuned s3fifo-tuned default\n"
		"            exact-lru belady\n"
		"  sizes: object counts, percentages of unique objects (1%%), or 'ref'\n");
	return 1;
}

static int run_trace(const struct trace *t, const struct opts *o, struct panel *p, FILE *csv)
{
	struct cell *cells = calloc(MAX_SIZES, sizeof *cells);
	char resolved[MAX_COLS][32] = {{0}};
	int n;
	uint64_t *nu = NULL;
	if (!cells || make_sizes(o, t, cells, &n) != 0) {
		free(cells);
		return 1;
	}
	for (int c = 0; c < n; c++) {
		if (cells[c].size < o->shards) {
			char msg[64];
			snprintf(msg, sizeof msg, "%llu", (unsigned long long)cells[c].size);
			return fail("cache size smaller than --shards (each shard needs room)", msg);
		}
		for (int k = 0; k < o->npol; k++) {
			int pk = o->pol[k];
			uint64_t m;
			if (strcmp(policy_names[pk], "exact-lru") == 0) {
				m = run_exact_lru(t, cells[c].size, o->bytes);
			} else if (strcmp(policy_names[pk], "belady") == 0) {
				if (!nu && !(nu = next_uses(t)))
					return fail("out of memory", NULL);
				m = run_belady(t, nu, cells[c].size, o->bytes);
			} else {
				m = run_larder(t, policy_enums[pk], cells[c].size, o,
					       resolved[k], sizeof resolved[k]);
			}
			if (m == UINT64_MAX)
				return fail("simulation failed (out of memory)", t->name);
			cells[c].misses[k] = m;
			if (csv)
				fprintf(csv, "%s,%s,%llu,%llu,%llu,%.6f\n", t->name,
					policy_names[pk], (unsigned long long)cells[c].size,
					(unsigned long long)t->n, (unsigned long long)m,
					(double)m / (double)t->n);
		}
	}
	free(nu);
	print_table(t, o, cells, n, resolved);
	snprintf(p->name, sizeof p->name, "%s", t->name);
	p->cells = cells;
	p->n = n;
	p->requests = t->n;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.sample = 1};
	const char *traces[64];
	int nt = 0;
	snprintf(o.sizes, sizeof o.sizes, "%s", "0.1%,1%,5%,10%,25%,50%");
	if (parse_policies(&o, "s3fifo,lru,wtinylfu,arc,default,exact-lru,belady") != 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
		if (strcmp(a, "--bytes") == 0) {
			o.bytes = 1;
		} else if (strcmp(a, "--hit-dedup") == 0) {
			o.dedup = 1;
		} else if (a[0] == '-' && a[1] == '-' && !v) {
			return usage();
		} else if (strcmp(a, "--policies") == 0) {
			if (parse_policies(&o, v) != 0)
				return 1;
			i++;
		} else if (strcmp(a, "--sizes") == 0) {
			snprintf(o.sizes, sizeof o.sizes, "%s", v);
			i++;
		} else if (strcmp(a, "--csv") == 0) {
			o.csv = v, i++;
		} else if (strcmp(a, "--svg") == 0) {
			o.svg = v, i++;
		} else if (strcmp(a, "--reference") == 0) {
			o.reference = v, i++;
		} else if (strcmp(a, "--hit-ring") == 0) {
			char *e;
			o.ring_drain = (uint32_t)strtoul(v, &e, 10), i++;
			/* SLOTS: by default the engine's hit ring, as in larder_sim_create(). */
			o.ring_slots = (*e == ':') ? (uint32_t)strtoul(e + 1, NULL, 10) : 1024;
			if (o.ring_drain == 0 || o.ring_slots == 0)
				return usage();
		} else if (strcmp(a, "--passes") == 0) {
			o.passes = (uint32_t)strtoul(v, NULL, 10), i++;
			if (o.passes == 0)
				return usage();
		} else if (strcmp(a, "--shards") == 0) {
			char *e;
			unsigned long k = strtoul(v, &e, 10);
			i++;
			if (*e || e == v || k == 0 || k > 65536 || (k & (k - 1)))
				return fail("--shards must be a power of two from 1 to 65536", v);
			o.shards = (uint32_t)k;
		} else if (strcmp(a, "--sample") == 0) {
			o.sample = (uint32_t)strtoul(v, NULL, 10), i++;
			if (o.sample == 0)
				return usage();
		} else if (a[0] == '-') {
			return usage();
		} else if (nt < 64) {
			traces[nt++] = a;
		}
	}
	if (nt == 0 || (o.passes && o.ring_drain && o.passes != o.ring_drain))
		return usage();
	FILE *csv = NULL;
	if (o.csv) {
		if (!(csv = fopen(o.csv, "w")))
			return fail("cannot write", o.csv);
		fprintf(csv, "trace,policy,cache_size,requests,misses,miss_ratio\n");
	}
	struct panel *panels = calloc((size_t)nt, sizeof *panels);
	if (!panels)
		return fail("out of memory", NULL);
	for (int i = 0; i < nt; i++) {
		struct trace t;
		clock_t t0 = clock();
		if (load_trace(&t, traces[i]) != 0 || run_trace(&t, &o, &panels[i], csv) != 0)
			return 1;
		fprintf(stderr, "%s: %.1f s\n", t.name, (double)(clock() - t0) / CLOCKS_PER_SEC);
		free(t.ids);
		free(t.keys);
		free(t.sizes);
		if (csv)
			fflush(csv);
	}
	if (csv && fclose(csv) != 0)
		return fail("cannot write", o.csv);
	int rc = (o.svg && write_svg(o.svg, panels, nt, &o) != 0) ? 1 : 0;
	for (int i = 0; i < nt; i++)
		free(panels[i].cells);
	free(panels);
	return rc;
}
