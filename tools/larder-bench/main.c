/*
 * main.c - larder-bench's command line: parses the options into one
 * read-only struct lb_config and runs one mode (the matrix by default,
 * --ops, --latency, --bigset, --scale, --compress, --memory or --pool). Run with --help for the
 * options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "pool.h"

static const char usage[] =
	"usage: larder-bench [options]\n"
	"  (default) the standard matrix: read, write, 9:1 mix x threads x engines,\n"
	"            interleaved rounds; prints medians, min..max and ratios to larder\n"
	"  --quick              short matrix: 5 rounds x 200 ms after 1 warm-up round\n"
	"  --latency            per-op latency of the 9:1 mix while larder evicts\n"
	"                       (working set 4x capacity; capacity default 16 MiB)\n"
	"  --bigset[=N]         N entries (default 10000000): larder_get vs get_batch 8/16/32\n"
	"  --scale              10^8 entries (or --entries N) loaded by 2 threads, then\n"
	"                       random reads: load and read rates, RSS, bytes per entry\n"
	"  --compress           value compression vs plain, LZ4 alone and zstd with a\n"
	"                       trained dictionary: JSON-like 200 B, 500 B,\n"
	"                       4 KiB and random 500 B values (--entries, 50000): bytes\n"
	"                       per entry, put, get and get_with ns, ratios\n"
	"  --codecs             the codecs alone on the JSON-like sets: LZ4, LZ4 with a\n"
	"                       dictionary, zstd 1-3, zstd 1-3 with a trained dictionary:\n"
	"                       bytes per value, compress and decompress ns\n"
	"  --memory[=BYTES]     memory back to the OS (default 8G): fill, clear, refill,\n"
	"                       shrink to 10%, churn 10x capacity; RSS timelines and\n"
	"                       PASS/FAIL per phase (lognormal values unless --value-size)\n"
	"  --churn N            --memory's churn writes N x the capacity (10)\n"
	"  --clear-only         --memory runs only its first phase (fill, clear)\n"
	"  --pool[=PARTS]       several caches in one memory budget (a larder pool):\n"
	"                       estimators,phases,ten,shift (all),\n"
	"                       or ten-controller, phases-controller,\n"
	"                       phases-rounds; see poolbench.c\n"
	"  --pool-unit-ms MS    --pool's phase unit (2000: 96 s per phases run)\n"
	"  --ops N              exactly N ops of the first scenario on the main thread,\n"
	"                       per engine (for callgrind; see profile.sh)\n"
	"options:\n"
	"  --key-size B         key bytes, 8..4096 (16)\n"
	"  --value-size B       value bytes (64)\n"
	"  --entries N          working set, all loaded before timing (24000)\n"
	"  --dist D             uniform | zipf:THETA, 0 < THETA < 1 (uniform)\n"
	"  --capacity BYTES     larder capacity, suffix K/M/G (1G)\n"
	"  --ttl-ms MS          TTL of every larder write (0: none)\n"
	"  --duration-ms MS     per cell per round (300)\n"
	"  --rounds N           measured rounds (5)\n"
	"  --warmup N           warm-up rounds (1)\n"
	"  --threads LIST       e.g. 1,2 or 1-4 (1..number of CPUs online)\n"
	"  --engines LIST       larder,bare,urcu,ck,null (all five; null is\n"
	"                       the loop alone: harness cost and the machine's own scaling)\n"
	"  --scenarios LIST     read,write,mix (all), or insert with --ops: puts of\n"
	"                       new keys only (profile.sh insert)\n"
	"  --seed N             RNG and hash seed (42)\n"
	"  --shards K           larder's shards (maintainers), a power of two (1)\n"
	"  --timer T            auto | tsc | clock, for --latency (auto)\n"
	"  --pin                bind worker i to CPU i mod CPUs (quiet machines only)\n"
	"  --out FILE           also write results: FILE.json as JSON, else CSV\n"
	"environment:\n"
	"  LB_PIN=same|split    --pin, and larder's maintainers on worker 0's CPU (same)\n"
	"                       or on the other CPUs (split): tools/larder-bench/pin.sh\n";

static const struct lb_engine *const all_engines[] = {
	&lb_engine_larder, &lb_engine_bare, &lb_engine_urcu, &lb_engine_ck, &lb_engine_null,
};

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	uint64_t mul = 1;
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0)
		end += strlen(end);
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

static int parse_threads(const char *s, struct lb_config *cfg)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", s);
	cfg->n_threads = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long a, b;
		char *dash = strchr(tok, '-');
		if (dash) {
			*dash = 0;
			a = strtoul(tok, NULL, 10);
			b = strtoul(dash + 1, NULL, 10);
		} else {
			a = b = strtoul(tok, NULL, 10);
		}
		if (a == 0 || b < a || b > LB_MAX_THREADS)
			return -1;
		for (unsigned long t = a; t <= b; t++) {
			if (cfg->n_threads == sizeof(cfg->threads) / sizeof(cfg->threads[0]))
				return -1;
			cfg->threads[cfg->n_threads++] = (unsigned)t;
		}
	}
	return cfg->n_threads ? 0 : -1;
}

static int parse_engines(const char *s, struct lb_config *cfg)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", s);
	cfg->n_engines = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < sizeof(all_engines) / sizeof(all_engines[0]); i++)
			if (strcmp(tok, all_engines[i]->name) == 0)
				break;
		if (i == sizeof(all_engines) / sizeof(all_engines[0]) ||
		    cfg->n_engines == LB_MAX_ENGINES)
			return -1;
		cfg->engines[cfg->n_engines++] = all_engines[i];
	}
	return cfg->n_engines ? 0 : -1;
}

static int parse_scenarios(const char *s, struct lb_config *cfg)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", s);
	cfg->scenarios = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "read") == 0)
			cfg->scenarios |= 1u << LB_READ;
		else if (strcmp(tok, "write") == 0)
			cfg->scenarios |= 1u << LB_WRITE;
		else if (strcmp(tok, "mix") == 0 || strcmp(tok, "mix9:1") == 0)
			cfg->scenarios |= 1u << LB_MIX;
		else if (strcmp(tok, "insert") == 0)
			cfg->scenarios |= 1u << LB_INSERT;
		else
			return -1;
	}
	return cfg->scenarios ? 0 : -1;
}

static int parse_dist(const char *s, struct lb_config *cfg)
{
	if (strcmp(s, "uniform") == 0) {
		cfg->zipf_theta = 0;
		return 0;
	}
	if (strncmp(s, "zipf:", 5) == 0) {
		char *end;
		cfg->zipf_theta = strtod(s + 5, &end);
		return (*end || cfg->zipf_theta <= 0 || cfg->zipf_theta >= 1) ? -1 : 0;
	}
	return -1;
}

static void defaults(struct lb_config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	memset(cfg, 0, sizeof(*cfg));
	cfg->key_size = 16;
	cfg->value_size = 64;
	cfg->entries = 24000;
	cfg->capacity_bytes = 1ull << 30;
	cfg->duration_ms = 300;
	cfg->rounds = 5;
	cfg->warmup_rounds = 1;
	cfg->ops = LB_NO_LIMIT;
	cfg->seed = 42;
	cfg->churn_factor = 10;
	cfg->shards = 1;
	cfg->scenarios = (1u << LB_INSERT) - 1; /* the matrix's: read, write, mix */
	if (ncpu < 1)
		ncpu = 1;
	for (long t = 1; t <= ncpu && t <= 64; t++)
		cfg->threads[cfg->n_threads++] = (unsigned)t;
	for (size_t i = 0; i < sizeof(all_engines) / sizeof(all_engines[0]); i++)
		cfg->engines[cfg->n_engines++] = all_engines[i];
}

/* Options taking a value; returns 0, or -1 for an unknown option or bad value. */
static int set_option(struct lb_config *cfg, const char *opt, const char *v, int *dur_set,
		      int *rounds_set)
{
	uint64_t u = 0;
	if (strcmp(opt, "--key-size") == 0)
		return parse_u64(v, &u) || u < 8 || u > LB_KEY_MAX ? -1 : (cfg->key_size = u, 0);
	if (strcmp(opt, "--value-size") == 0)
		return parse_size(v, &u) || u > LB_VALUE_MAX
			       ? -1 : (cfg->value_size = u, cfg->value_size_given = 1, 0);
	if (strcmp(opt, "--entries") == 0)
		return parse_u64(v, &cfg->entries) || cfg->entries == 0 || cfg->entries >= (1ull << 32)
			       ? -1 : (cfg->entries_given = 1, 0);
	if (strcmp(opt, "--dist") == 0)
		return parse_dist(v, cfg);
	if (strcmp(opt, "--capacity") == 0)
		return parse_size(v, &cfg->capacity_bytes) ? -1 : (cfg->capacity_given = 1, 0);
	if (strcmp(opt, "--ttl-ms") == 0)
		return parse_u64(v, &cfg->ttl_ms);
	if (strcmp(opt, "--duration-ms") == 0)
		return parse_u64(v, &u) || u == 0 || u > 600000 ? -1
				: (cfg->duration_ms = (unsigned)u, *dur_set = 1, 0);
	if (strcmp(opt, "--rounds") == 0)
		return parse_u64(v, &u) || u == 0 || u > 200 ? -1
				: (cfg->rounds = (unsigned)u, *rounds_set = 1, 0);
	if (strcmp(opt, "--warmup") == 0)
		return parse_u64(v, &u) || u > 100 ? -1 : (cfg->warmup_rounds = (unsigned)u, 0);
	if (strcmp(opt, "--threads") == 0)
		return parse_threads(v, cfg);
	if (strcmp(opt, "--engines") == 0)
		return parse_engines(v, cfg);
	if (strcmp(opt, "--scenarios") == 0)
		return parse_scenarios(v, cfg);
	if (strcmp(opt, "--seed") == 0)
		return parse_u64(v, &cfg->seed);
	if (strcmp(opt, "--ops") == 0)
		return parse_u64(v, &cfg->ops);
	if (strcmp(opt, "--bigset") == 0)
		return parse_u64(v, &cfg->bigset) || cfg->bigset == 0 || cfg->bigset >= (1ull << 32)
			       ? -1 : 0;
	if (strcmp(opt, "--churn") == 0)
		return parse_u64(v, &u) || u == 0 || u > 1000 ? -1 : (cfg->churn_factor = (unsigned)u, 0);
	if (strcmp(opt, "--memory") == 0)
		return parse_size(v, &cfg->memory) || cfg->memory < (16ull << 20) ? -1 : 0;
	if (strcmp(opt, "--pool") == 0)
		return (cfg->pool = 1, cfg->pool_parts = v, 0);
	if (strcmp(opt, "--pool-unit-ms") == 0)
		return parse_u64(v, &u) || u < 10 || u > 600000 ? -1 : (cfg->pool_unit_ms = (unsigned)u, 0);
	if (strcmp(opt, "--shards") == 0)
		return parse_u64(v, &u) || u == 0 || u > LARDER_SHARDS_MAX || (u & (u - 1))
			       ? -1 : (cfg->shards = (unsigned)u, 0);
	if (strcmp(opt, "--out") == 0)
		return (cfg->out_path = v, 0);
	if (strcmp(opt, "--timer") == 0) {
		cfg->timer = strcmp(v, "tsc") == 0     ? LB_TIMER_TSC
			     : strcmp(v, "clock") == 0 ? LB_TIMER_CLOCK
						       : LB_TIMER_AUTO;
		return strcmp(v, "tsc") && strcmp(v, "clock") && strcmp(v, "auto") ? -1 : 0;
	}
	return -1;
}

/* LB_PIN=same|split: the pinned diagnostic of the write cell's line
 * transfers (docs/results/bench-history.md, "The writer's and the maintainer's lines"):
 * workers pinned as --pin does, larder's maintainers on worker 0's CPU
 * (same: nothing crosses cores) or on the others (split). */
static int parse_pin_env(struct lb_config *cfg)
{
	const char *v = getenv("LB_PIN");
	if (!v || !*v)
		return 0;
	if (strcmp(v, "same") == 0) {
		cfg->pin_maint = LB_PIN_SAME;
	} else if (strcmp(v, "split") == 0) {
		if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			fprintf(stderr, "larder-bench: LB_PIN=split needs 2 CPUs online\n");
			return -1;
		}
		cfg->pin_maint = LB_PIN_SPLIT;
	} else {
		fprintf(stderr, "larder-bench: LB_PIN must be same or split, not %s\n", v);
		return -1;
	}
	cfg->pin = 1;
	return 0;
}

static int parse_args(int argc, char **argv, struct lb_config *cfg)
{
	int dur_set = 0, rounds_set = 0;
	for (int i = 1; i < argc; i++) {
		char opt[64];
		const char *a = argv[i], *eq = strchr(a, '='), *v;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			exit(0);
		}
		if (strcmp(a, "--quick") == 0) {
			cfg->quick = 1;
			continue;
		}
		if (strcmp(a, "--pin") == 0) {
			cfg->pin = 1;
			continue;
		}
		if (strcmp(a, "--clear-only") == 0) {
			cfg->clear_only = 1;
			continue;
		}
		if (strcmp(a, "--scale") == 0) {
			cfg->scale = 1;
			continue;
		}
		if (strcmp(a, "--codecs") == 0) {
			cfg->codecs = 1;
			continue;
		}
		if (strcmp(a, "--compress") == 0) {
			cfg->compress = 1;
			continue;
		}
		if (strcmp(a, "--latency") == 0) {
			cfg->latency = 1;
			continue;
		}
		if (strcmp(a, "--memory") == 0 && (i + 1 >= argc || argv[i + 1][0] == '-')) {
			cfg->memory = 8ull << 30;
			continue;
		}
		if (strcmp(a, "--pool") == 0 && (i + 1 >= argc || argv[i + 1][0] == '-')) {
			cfg->pool = 1;
			continue;
		}
		if (strcmp(a, "--bigset") == 0 && (i + 1 >= argc || argv[i + 1][0] == '-')) {
			cfg->bigset = 10000000;
			continue;
		}
		snprintf(opt, sizeof(opt), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			v = NULL;
		if (!v || set_option(cfg, opt, v, &dur_set, &rounds_set) != 0) {
			fprintf(stderr, "larder-bench: bad option or value: %s%s%s\n%s", opt,
				v ? " " : "", v ? v : "", usage);
			return -1;
		}
	}
	if (parse_pin_env(cfg) != 0)
		return -1;
	if ((cfg->scenarios & (1u << LB_INSERT)) && cfg->ops == LB_NO_LIMIT) {
		fprintf(stderr, "larder-bench: --scenarios insert needs --ops N\n");
		return -1;
	}
	if (cfg->quick) {
		if (!dur_set)
			cfg->duration_ms = 200;
		if (!rounds_set)
			cfg->rounds = 5;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct lb_config cfg;
	int rc;

	defaults(&cfg);
	if (parse_args(argc, argv, &cfg) != 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	lb_urcu_thread_online(); /* the main thread preloads and closes urcu tables */
	if (cfg.ops != LB_NO_LIMIT)
		rc = lb_ops_run(&cfg);
	else if (cfg.latency)
		rc = lb_latency_run(&cfg);
	else if (cfg.bigset)
		rc = lb_bigset_run(&cfg);
	else if (cfg.scale)
		rc = lb_scale_run(&cfg);
	else if (cfg.codecs)
		rc = lb_codecs_run(&cfg);
	else if (cfg.compress)
		rc = lb_compress_run(&cfg);
	else if (cfg.memory)
		rc = lb_memory_run(&cfg);
	else if (cfg.pool)
		rc = lb_budget_run(&cfg);
	else
		rc = lb_matrix_run(&cfg);
	lb_urcu_thread_offline();
	return rc == 0 ? 0 : 1;
}
