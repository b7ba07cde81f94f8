/*
 * matrix.c - the standard matrix (docs/benchmarking.md) and the --ops counting mode.
 *
 * Every engine is opened and preloaded first, and all stay open for the whole
 * run, so rounds can interleave engines:
 *   MATRIX-M1. One round runs every cell once; round r+1 starts after round r ends.
 *       Within a round, the engines of one (scenario, threads) pair run back
 *       to back, and the engine that goes first rotates from round to round,
 *       so slow drift of the machine spreads evenly over the engines.
 *   MATRIX-M2. Warm-up rounds run the same cells, unrecorded, after the preload has
 *       faulted in every page of every table.
 *   MATRIX-M3. A cell is skipped where an engine's rules forbid it (bare: 1 thread;
 *       ck: writes from 1 thread); its row is absent, not zero.
 * A cell's figure is the median over rounds of the summed per-thread rates;
 * ratios are of medians, except the checks against ck_ht (the write and
 * 9:1 mix cells on 1 thread), which also print the median of the rounds'
 * ratios with its range (round_check).
 *
 * Two rates per cell and round: "wall" (each thread's operations over its
 * wall-clock time: what a user sees) and "cpu" (over the thread's CPU time,
 * CLOCK_THREAD_CPUTIME_ID: what the thread did while it had a core). On a
 * shared machine the scheduler takes cores away from the benchmark; on-cpu%
 * (CPU time over wall time) says how much, and the cpu rate is the figure that
 * survives it. It cannot show contention between threads that never ran at
 * the same time, so the scaling check uses the wall rate, with the null loop's
 * own scaling as the control.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"

#define MAX_ROUNDS 200u
#define MAX_CELLS 1024u

struct cell {
	enum lb_scenario s;
	unsigned threads;
	size_t eng;
	double mops[MAX_ROUNDS];
	double cpu_mops[MAX_ROUNDS];
	double on_cpu[MAX_ROUNDS];
	double helper[MAX_ROUNDS];
	double median, min, max;
	double cpu_median, on_cpu_median, helper_median;
	uint64_t hits, misses, write_errors;
};

struct task_arg {
	const struct lb_engine *e;
	void *eng;
	enum lb_scenario s;
	const struct lb_config *cfg;
};

static uint64_t cell_task(void *arg, struct lb_tctx *t, const atomic_int *stop)
{
	const struct task_arg *a = arg;
	const struct lb_job job = {
		.scenario = a->s, .op_limit = LB_NO_LIMIT, .stop = stop, .cfg = a->cfg
	};
	return a->e->run(a->eng, t, &job);
}

static int allowed(const struct lb_engine *e, enum lb_scenario s, unsigned threads)
{
	return e->max_threads[s] == 0 || threads <= e->max_threads[s];
}

static size_t build_cells(const struct lb_config *cfg, struct cell *cells)
{
	size_t n = 0;
	for (int s = 0; s < LB_SCENARIOS; s++) {
		if (!(cfg->scenarios & (1u << s)))
			continue;
		for (size_t ti = 0; ti < cfg->n_threads; ti++)
			for (size_t e = 0; e < cfg->n_engines && n < MAX_CELLS; e++) {
				if (!allowed(cfg->engines[e], (enum lb_scenario)s, cfg->threads[ti]))
					continue;
				cells[n].s = (enum lb_scenario)s;
				cells[n].threads = cfg->threads[ti];
				cells[n].eng = e;
				n++;
			}
	}
	return n;
}

/* MATRIX-M1: the order of cells in round r: groups in order, engines rotated by r. */
static void round_order(const struct cell *cells, size_t n, unsigned r, size_t *order)
{
	size_t k = 0;
	for (size_t g = 0; g < n;) {
		size_t end = g;
		while (end < n && cells[end].s == cells[g].s && cells[end].threads == cells[g].threads)
			end++;
		size_t len = end - g;
		for (size_t i = 0; i < len; i++)
			order[k++] = g + (i + r) % len;
		g = end;
	}
}

static void progress(const struct lb_config *cfg, const struct cell *c, unsigned r,
		     unsigned rounds, int warm, size_t done, size_t total, int first)
{
	static int tty = -1;
	if (tty < 0)
		tty = isatty(2);
	if (tty)
		lb_progress("[%4zu/%zu] %s round %u/%u: %-7s %2u thr %-7s", done, total,
			    warm ? "warm-up" : "measure", r + 1, rounds, lb_scenario_names[c->s],
			    c->threads, cfg->engines[c->eng]->name);
	else if (first)
		lb_progress("[%zu/%zu] %s round %u/%u", done, total, warm ? "warm-up" : "measure",
			    r + 1, rounds);
}

enum rate_kind { WALL, CPU };

static const struct cell *find_cell(const struct cell *cells, size_t n,
				    const struct lb_config *cfg, enum lb_scenario s,
				    unsigned threads, const char *engine)
{
	for (size_t i = 0; i < n; i++)
		if (cells[i].s == s && cells[i].threads == threads &&
		    strcmp(cfg->engines[cells[i].eng]->name, engine) == 0)
			return &cells[i];
	return NULL;
}

static double find_median(const struct cell *cells, size_t n, const struct lb_config *cfg,
			  enum lb_scenario s, unsigned threads, const char *engine, enum rate_kind k)
{
	const struct cell *c = find_cell(cells, n, cfg, s, threads, engine);
	if (!c)
		return -1;
	return k == WALL ? c->median : c->cpu_median;
}

static const char *dist_name(const struct lb_config *cfg, char *buf, size_t len)
{
	if (cfg->zipf_theta > 0)
		snprintf(buf, len, "zipf:%.3g", cfg->zipf_theta);
	else
		snprintf(buf, len, "uniform");
	return buf;
}

static void print_header(const struct lb_config *cfg, FILE *f)
{
	char d[32];
	fprintf(f,
		"larder-bench matrix: key %zu B, value %zu B, %llu entries, %s keys, "
		"capacity %.2f MiB, ttl %llu ms, %u rounds x %u ms after %u warm-up round(s), "
		"%ld CPUs online\n",
		cfg->key_size, cfg->value_size, (unsigned long long)cfg->entries,
		dist_name(cfg, d, sizeof(d)), (double)cfg->capacity_bytes / (1 << 20),
		(unsigned long long)cfg->ttl_ms, cfg->rounds, cfg->duration_ms, cfg->warmup_rounds,
		sysconf(_SC_NPROCESSORS_ONLN));
	for (size_t e = 0; e < cfg->n_engines; e++)
		fprintf(f, "  %-7s %s\n", cfg->engines[e]->name, cfg->engines[e]->about);
}

static void print_table(const struct lb_config *cfg, struct cell *cells, size_t n)
{
	printf("\n%-8s %7s  %-7s %13s  %-17s %9s | %10s %9s %7s %7s | %6s\n", "scenario",
	       "threads", "engine", "median Mops/s", "min..max", "vs larder", "cpu Mops/s",
	       "vs larder", "on-cpu", "helper", "hit%");
	for (size_t i = 0; i < n; i++) {
		struct cell *c = &cells[i];
		double l = find_median(cells, n, cfg, c->s, c->threads, "larder", WALL);
		double lc = find_median(cells, n, cfg, c->s, c->threads, "larder", CPU);
		char ratio[16] = "-", cratio[16] = "-", hit[16] = "-", range[40];
		if (l > 0)
			snprintf(ratio, sizeof(ratio), "%.2fx", c->median / l);
		if (lc > 0)
			snprintf(cratio, sizeof(cratio), "%.2fx", c->cpu_median / lc);
		if (c->hits + c->misses)
			snprintf(hit, sizeof(hit), "%.1f",
				 100.0 * (double)c->hits / (double)(c->hits + c->misses));
		snprintf(range, sizeof(range), "%.2f..%.2f", c->min, c->max);
		if (i > 0 && (cells[i - 1].s != c->s || cells[i - 1].threads != c->threads))
			printf("\n");
		printf("%-8s %7u  %-7s %13.2f  %-17s %9s | %10.2f %9s %6.0f%% %6.0f%% | %6s%s\n",
		       lb_scenario_names[c->s], c->threads, cfg->engines[c->eng]->name, c->median,
		       range, ratio, c->cpu_median, cratio, 100 * c->on_cpu_median,
		       100 * c->helper_median, hit,
		       c->write_errors ? "  (write errors!)" : "");
	}
	printf("('vs larder' = this engine's median / larder's median in the same cell; cpu = ops\n"
	       " over the threads' own CPU time; on-cpu = CPU time / wall time, below ~95%% the\n"
	       " machine was busy with other work and the wall figures are distorted; helper =\n"
	       " CPU time of the process's other threads (larder's maintainer, liburcu's\n"
	       " call_rcu worker) as a share of the workers' CPU time, not in the cpu rate)\n");
}

static void check_line(const char *what, double wall, double cpu, double bar)
{
	printf("  %-34s wall %6.2f %s   cpu %6.2f %s   (bar >= %.2f)\n", what, wall,
	       wall >= bar ? "PASS" : "FAIL", cpu, cpu >= bar ? "PASS" : "FAIL", bar);
}

/*
 * larder / ck_ht in scenario s on 1 thread (ck_ht's only writer count) as
 * the median of the rounds' ratios, with their range: MATRIX-M1 runs the
 * two back to back in every round, so a round's ratio saw nearly the same
 * machine, where the ratio of the two medians can pair a round that other
 * work slowed with one it did not. On this shared 2-CPU machine the mix's
 * ratio of medians in a 5-round quick matrix read 0.90x while 45 rounds
 * of per-round ratios (tools/larder-bench/mix_vs_ck.sh) read 1.03-1.10x on
 * the same code (docs/results/bench-history.md, "The maintainer's share and the mix").
 * Returns whether the line was printed (both cells ran).
 */
static int round_check(const struct cell *cells, size_t n, const struct lb_config *cfg,
		       enum lb_scenario s, double bar)
{
	const struct cell *l = find_cell(cells, n, cfg, s, 1, "larder");
	const struct cell *k = find_cell(cells, n, cfg, s, 1, "ck");
	if (!l || !k)
		return 0;
	double r[2][MAX_ROUNDS];
	for (unsigned i = 0; i < cfg->rounds; i++) {
		r[WALL][i] = k->mops[i] > 0 ? l->mops[i] / k->mops[i] : 0;
		r[CPU][i] = k->cpu_mops[i] > 0 ? l->cpu_mops[i] / k->cpu_mops[i] : 0;
	}
	double m[2];
	for (int j = WALL; j <= CPU; j++)
		m[j] = lb_median(r[j], cfg->rounds); /* sorts: the range is r[j][0]..r[j][rounds - 1] */
	char what[64];
	snprintf(what, sizeof(what), "%s 1 thr, larder/ck, per round", lb_scenario_names[s]);
	printf("  %-34s wall %6.2f %s (%.2f..%.2f)   cpu %6.2f %s (%.2f..%.2f)   "
	       "(bar >= %.2f; median of the %u rounds' ratios, range)\n",
	       what, m[WALL], m[WALL] >= bar ? "PASS" : "FAIL", r[WALL][0],
	       r[WALL][cfg->rounds - 1], m[CPU], m[CPU] >= bar ? "PASS" : "FAIL", r[CPU][0],
	       r[CPU][cfg->rounds - 1], bar, cfg->rounds);
	return 1;
}

/* The bars, as ratios of medians from this run, and against ck_ht
 * as medians of the rounds' ratios (round_check). */
static void print_checks(const struct lb_config *cfg, struct cell *cells, size_t n)
{
	double r1[2], b1[2], r2[2], n1[2], n2[2];
	int any = 0;

	for (int k = WALL; k <= CPU; k++) {
		r1[k] = find_median(cells, n, cfg, LB_READ, 1, "larder", (enum rate_kind)k);
		b1[k] = find_median(cells, n, cfg, LB_READ, 1, "bare", (enum rate_kind)k);
		r2[k] = find_median(cells, n, cfg, LB_READ, 2, "larder", (enum rate_kind)k);
		n1[k] = find_median(cells, n, cfg, LB_READ, 1, "null", (enum rate_kind)k);
		n2[k] = find_median(cells, n, cfg, LB_READ, 2, "null", (enum rate_kind)k);
	}
	if (r1[WALL] <= 0 && !find_cell(cells, n, cfg, LB_WRITE, 1, "larder") &&
	    !find_cell(cells, n, cfg, LB_MIX, 1, "larder"))
		return;
	printf("\nchecks (ratios of medians unless per round, this run; a shared machine makes\n"
	       "them provisional):\n");
	if (r1[WALL] > 0 && b1[WALL] > 0) {
		check_line("1-thread read, larder/bare", r1[WALL] / b1[WALL], r1[CPU] / b1[CPU], 0.6);
		any = 1;
	}
	if (r1[WALL] > 0 && r2[WALL] > 0) {
		check_line("2-thread read / 1-thread read", r2[WALL] / r1[WALL], r2[CPU] / r1[CPU],
			   1.9);
		/* The loop alone shares nothing: its scaling is what the machine allows. */
		if (n1[WALL] > 0 && n2[WALL] > 0)
			printf("    control: null loop 2-thread / 1-thread, wall %.2f%s\n",
			       n2[WALL] / n1[WALL],
			       n2[WALL] / n1[WALL] < 1.8
				       ? " -- the machine did not give 2 free cores: the scaling "
					 "bar cannot be judged from this run"
				       : "");
		any = 1;
	}
	any |= round_check(cells, n, cfg, LB_WRITE, 0.5);
	any |= round_check(cells, n, cfg, LB_MIX, 1.0);
	for (int s = 0; s < LB_SCENARIOS; s++)
		for (unsigned t = 1; t <= 2; t++) {
			double l = find_median(cells, n, cfg, (enum lb_scenario)s, t, "larder", WALL);
			double u = find_median(cells, n, cfg, (enum lb_scenario)s, t, "urcu", WALL);
			double lc = find_median(cells, n, cfg, (enum lb_scenario)s, t, "larder", CPU);
			double uc = find_median(cells, n, cfg, (enum lb_scenario)s, t, "urcu", CPU);
			char what[64];
			if (l <= 0 || u <= 0)
				continue;
			snprintf(what, sizeof(what), "%s %u thr, larder/urcu", lb_scenario_names[s], t);
			check_line(what, l / u, lc / uc, 1.0);
			any = 1;
		}
	if (!any)
		printf("  (no baseline cells to compare with)\n");
}

static int write_out(const struct lb_config *cfg, struct cell *cells, size_t n)
{
	const char *dot = strrchr(cfg->out_path, '.');
	int json = dot && strcmp(dot, ".json") == 0;
	FILE *f = fopen(cfg->out_path, "w");
	char d[32];

	if (!f) {
		perror(cfg->out_path);
		return -1;
	}
	if (json)
		fprintf(f,
			"{\n  \"config\": {\"key_size\": %zu, \"value_size\": %zu, \"entries\": %llu, "
			"\"dist\": \"%s\", \"capacity_bytes\": %llu, \"ttl_ms\": %llu, "
			"\"rounds\": %u, \"duration_ms\": %u, \"warmup_rounds\": %u},\n  \"cells\": [",
			cfg->key_size, cfg->value_size, (unsigned long long)cfg->entries,
			dist_name(cfg, d, sizeof(d)), (unsigned long long)cfg->capacity_bytes,
			(unsigned long long)cfg->ttl_ms, cfg->rounds, cfg->duration_ms,
			cfg->warmup_rounds);
	else
		fprintf(f, "scenario,threads,engine,rounds,median_mops,min_mops,max_mops,"
			   "ratio_to_larder,hits,misses,write_errors,round_mops,median_cpu_mops,"
			   "cpu_ratio_to_larder,median_on_cpu,median_helper_cpu,round_cpu_mops\n");
	for (size_t i = 0; i < n; i++) {
		struct cell *c = &cells[i];
		double l = find_median(cells, n, cfg, c->s, c->threads, "larder", WALL);
		double lc = find_median(cells, n, cfg, c->s, c->threads, "larder", CPU);
		double ratio = l > 0 ? c->median / l : 0, cratio = lc > 0 ? c->cpu_median / lc : 0;
		const char *name = cfg->engines[c->eng]->name;
		if (json)
			fprintf(f,
				"%s\n    {\"scenario\": \"%s\", \"threads\": %u, \"engine\": \"%s\", "
				"\"median_mops\": %.4f, \"min_mops\": %.4f, \"max_mops\": %.4f, "
				"\"ratio_to_larder\": %.4f, \"hits\": %llu, \"misses\": %llu, "
				"\"write_errors\": %llu, \"round_mops\": [",
				i ? "," : "", lb_scenario_names[c->s], c->threads, name, c->median,
				c->min, c->max, ratio, (unsigned long long)c->hits,
				(unsigned long long)c->misses, (unsigned long long)c->write_errors);
		else
			fprintf(f, "%s,%u,%s,%u,%.4f,%.4f,%.4f,%.4f,%llu,%llu,%llu,",
				lb_scenario_names[c->s], c->threads, name, cfg->rounds, c->median,
				c->min, c->max, ratio, (unsigned long long)c->hits,
				(unsigned long long)c->misses, (unsigned long long)c->write_errors);
		for (unsigned r = 0; r < cfg->rounds; r++)
			fprintf(f, "%s%.4f", r ? (json ? ", " : ";") : "", c->mops[r]);
		if (json)
			fprintf(f, "], \"median_cpu_mops\": %.4f, \"cpu_ratio_to_larder\": %.4f, "
				   "\"median_on_cpu\": %.4f, \"median_helper_cpu\": %.4f, "
				   "\"round_cpu_mops\": [",
				c->cpu_median, cratio, c->on_cpu_median, c->helper_median);
		else
			fprintf(f, ",%.4f,%.4f,%.4f,%.4f,", c->cpu_median, cratio, c->on_cpu_median,
				c->helper_median);
		for (unsigned r = 0; r < cfg->rounds; r++)
			fprintf(f, "%s%.4f", r ? (json ? ", " : ";") : "", c->cpu_mops[r]);
		fprintf(f, json ? "]}" : "\n");
	}
	if (json)
		fprintf(f, "\n  ]\n}\n");
	return fclose(f) == 0 ? 0 : -1;
}

/* Runs one cell; records round r's rates and counters unless r < 0 (warm-up). */
static void run_cell(struct lb_pool *pool, const struct lb_config *cfg, void **engs,
		     struct cell *c, int r)
{
	struct lb_thread_result res[LB_MAX_THREADS];
	struct task_arg a = { cfg->engines[c->eng], engs[c->eng], c->s, cfg };
	struct lb_run_stats st;
	double rate = lb_pool_run(pool, c->threads, cfg->duration_ms, cell_task, &a, res, &st);

	if (r < 0)
		return;
	c->mops[r] = rate / 1e6;
	c->cpu_mops[r] = st.cpu_rate / 1e6;
	c->on_cpu[r] = st.on_cpu;
	c->helper[r] = st.helper;
	for (unsigned i = 0; i < c->threads; i++) {
		c->hits += res[i].hits;
		c->misses += res[i].misses;
		c->write_errors += res[i].write_errors;
	}
}

static int open_engines(const struct lb_config *cfg, void **engs)
{
	for (size_t e = 0; e < cfg->n_engines; e++) {
		const struct lb_engine *en = cfg->engines[e];
		uint64_t t0 = lb_now_ns(), failed;
		if (en->open(&engs[e], cfg) != 0) {
			fprintf(stderr, "larder-bench: cannot open engine %s\n", en->name);
			return -1;
		}
		failed = lb_preload(en, engs[e], cfg);
		fprintf(stderr, "preloaded %-7s %llu entries in %.0f ms%s\n", en->name,
			(unsigned long long)cfg->entries, (double)(lb_now_ns() - t0) / 1e6,
			failed ? " (SOME PUTS FAILED)" : "");
		if (failed) {
			fprintf(stderr, "larder-bench: %s: %llu of %llu preload puts failed\n",
				en->name, (unsigned long long)failed,
				(unsigned long long)cfg->entries);
			return -1;
		}
	}
	return 0;
}

/* MATRIX-M1, MATRIX-M2: warm-up rounds, then the measured rounds, each over every cell. */
static void run_rounds(struct lb_pool *pool, const struct lb_config *cfg, void **engs,
		       struct cell *cells, size_t n)
{
	static size_t order[MAX_CELLS];
	size_t total = n * (cfg->rounds + cfg->warmup_rounds), done = 0;

	for (unsigned r = 0; r < cfg->warmup_rounds + cfg->rounds; r++) {
		int warm = r < cfg->warmup_rounds;
		unsigned rr = warm ? r : r - cfg->warmup_rounds;
		round_order(cells, n, r, order);
		for (size_t k = 0; k < n; k++) {
			struct cell *c = &cells[order[k]];
			progress(cfg, c, rr, warm ? cfg->warmup_rounds : cfg->rounds, warm, ++done,
				 total, k == 0);
			run_cell(pool, cfg, engs, c, warm ? -1 : (int)rr);
		}
	}
	if (isatty(2))
		fprintf(stderr, "\n");
}

static void summarize(const struct lb_config *cfg, struct cell *cells, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double v[MAX_ROUNDS];
		memcpy(v, cells[i].mops, sizeof(double) * cfg->rounds);
		cells[i].median = lb_median(v, cfg->rounds); /* sorts v */
		cells[i].min = v[0];
		cells[i].max = v[cfg->rounds - 1];
		memcpy(v, cells[i].cpu_mops, sizeof(double) * cfg->rounds);
		cells[i].cpu_median = lb_median(v, cfg->rounds);
		memcpy(v, cells[i].on_cpu, sizeof(double) * cfg->rounds);
		cells[i].on_cpu_median = lb_median(v, cfg->rounds);
		memcpy(v, cells[i].helper, sizeof(double) * cfg->rounds);
		cells[i].helper_median = lb_median(v, cfg->rounds);
	}
}

int lb_matrix_run(const struct lb_config *cfg)
{
	static struct cell cells[MAX_CELLS];
	size_t n = build_cells(cfg, cells);
	void *engs[LB_MAX_ENGINES] = { 0 };
	unsigned maxt = 1;
	struct lb_pool *pool = NULL;
	int rc = -1;

	if (n == 0 || cfg->rounds > MAX_ROUNDS) {
		fprintf(stderr, "larder-bench: nothing to run (or over %u rounds)\n", MAX_ROUNDS);
		return -1;
	}
	for (size_t i = 0; i < cfg->n_threads; i++)
		if (cfg->threads[i] > maxt)
			maxt = cfg->threads[i];
	print_header(cfg, stdout);
	fflush(stdout);
	fprintf(stderr, "%zu cells x %u rounds: about %.0f s\n", n,
		cfg->rounds + cfg->warmup_rounds,
		(double)(n * (cfg->rounds + cfg->warmup_rounds)) * cfg->duration_ms / 1000.0);
	if (open_engines(cfg, engs) != 0)
		goto out;
	pool = lb_pool_create(cfg, maxt);
	if (!pool) {
		fprintf(stderr, "larder-bench: cannot start %u worker threads\n", maxt);
		goto out;
	}
	run_rounds(pool, cfg, engs, cells, n);
	summarize(cfg, cells, n);
	print_table(cfg, cells, n);
	print_checks(cfg, cells, n);
	rc = cfg->out_path ? write_out(cfg, cells, n) : 0;
out:
	lb_pool_destroy(pool);
	for (size_t e = 0; e < cfg->n_engines; e++)
		if (engs[e])
			cfg->engines[e]->close(engs[e]);
	return rc;
}

/*
 * --ops N: exactly N operations of the first selected scenario, on the main
 * thread, for each engine in turn. Nothing random depends on time, and the
 * caches use fixed seeds, so the instructions executed repeat exactly; this
 * is what profile.sh runs under callgrind.
 */
int lb_ops_run(const struct lb_config *cfg)
{
	enum lb_scenario s = LB_READ;
	struct lb_tctx t;

	while (!(cfg->scenarios & (1u << s)))
		s++;
	for (size_t e = 0; e < cfg->n_engines; e++) {
		const struct lb_engine *en = cfg->engines[e];
		void *eng = NULL;
		atomic_int stop = 0;
		const struct lb_job job = { s, cfg->ops, &stop, cfg };
		if (en->open(&eng, cfg) != 0 || lb_preload(en, eng, cfg) != 0 ||
		    lb_tctx_init(&t, cfg, 0) != 0) {
			fprintf(stderr, "larder-bench: %s: open/preload failed\n", en->name);
			if (eng)
				en->close(eng);
			return -1;
		}
		/* With a TTL, a pause before the timed part: larder's maintainer
		 * calibrates the TSC bound on the clock (core/clockbound.h) from
		 * samples that bracket a clock read with two TSC reads. Under
		 * valgrind, which runs one thread at a time and makes that clock
		 * read a system call, a busy main thread widens every bracket past
		 * what calibration accepts, and the bound never comes; while the
		 * main thread sleeps it does (within a few of the maintainer's
		 * passes). Natively the bound is there within ~50 ms anyway. */
		if (cfg->ttl_ms)
			usleep(1000 * 1000);
		uint64_t t0 = lb_now_ns();
		uint64_t ops = en->run(eng, &t, &job);
		uint64_t ns = lb_now_ns() - t0;
		printf("ops engine=%s scenario=%s ops=%llu hits=%llu misses=%llu write_errors=%llu "
		       "ns=%llu sink=%llu\n",
		       en->name, lb_scenario_names[s], (unsigned long long)ops,
		       (unsigned long long)t.hits, (unsigned long long)t.misses,
		       (unsigned long long)t.write_errors, (unsigned long long)ns,
		       (unsigned long long)(t.sink & 0xff));
		lb_tctx_fini(&t);
		en->close(eng);
	}
	return 0;
}
