/*
 * tests/model/model_main.c - the command line of the model-based tester
 * (design: model.h).
 *
 *   larder_model [--seed S] [--runs R] [--ops N] [--duration-s T] [--no-shrink 1]
 *                [--shrink-s S] [--verbose 1]
 *
 * Runs R runs (or as many as fit in T seconds) of N operations each; run i
 * draws its configuration and its operations from mix(S + i). The short,
 * fixed-seed run is the ctest `model`; the long run is
 *   build/default/tests/larder_model --duration-s 600
 * (a random seed, printed). On the first failure it prints what failed,
 * shrinks the sequence (for at most --shrink-s seconds, 300 by default) and
 * prints it as a C program, and exits 1. Defaults: 40 runs of 2000
 * operations (24 under ThreadSanitizer).
 */
#include <stdlib.h>

#include "model.h"

static uint64_t cfg_count[8][2]; /* runs per policy and expiry mode */

static void print_summary(uint64_t runs, uint64_t ops, uint64_t tiny, uint64_t t0)
{
	printf("model: %" PRIu64 " runs, %" PRIu64 " operations (%" PRIu64 " tiny caches) in %" PRIu64
	       " ms; runs per policy (after write / after access):",
	       runs, ops, tiny, th_now_ms() - t0);
	for (int p = 0; p < 8; p++)
		printf(" %s %" PRIu64 "/%" PRIu64, mk_policy_name((enum larder_policy)p), cfg_count[p][0],
		       cfg_count[p][1]);
	printf("\n");
}

int main(int argc, char **argv)
{
	uint64_t seed = th_arg_seed(argc, argv);
	/* The ctest run's size: about 15 s here in the default build and under
	 * AddressSanitizer, 10 s with fewer runs under ThreadSanitizer. */
	uint64_t runs = th_arg_u64(argc, argv, "--runs", TH_TSAN ? 24 : 40);
	uint64_t nops = th_arg_u64(argc, argv, "--ops", 2000);
	uint64_t shrink_s = th_arg_u64(argc, argv, "--shrink-s", 300);
	uint64_t duration_s = th_arg_u64(argc, argv, "--duration-s", 0);
	int shrink = th_arg_u64(argc, argv, "--no-shrink", 0) == 0;
	int verbose = th_arg_u64(argc, argv, "--verbose", 0) != 0;
	uint64_t t0 = th_now_ms(), done_ops = 0, tiny = 0, r;
	struct mop *ops = malloc(nops * sizeof(*ops));

	setvbuf(stdout, NULL, _IOLBF, 0); /* a run killed by a timeout keeps its lines */
	if (!ops || nops == 0) {
		fprintf(stderr, "model: bad --ops\n");
		return 2;
	}
	for (r = 0; duration_s ? th_now_ms() - t0 < duration_s * 1000 : r < runs; r++) {
		struct mcfg cfg;
		struct mfail f;
		uint64_t s = th_mix64(seed + r);
		mk_config(&cfg, s);
		mk_ops(&cfg, s, ops, nops);
		cfg_count[cfg.policy][cfg.expiry]++;
		tiny += cfg.tiny;
		uint64_t t1 = th_now_ms();
		int ok = mk_run(&cfg, ops, nops, &f, NULL);
		if (verbose)
			printf("model: run %" PRIu64 " (seed %#" PRIx64 ", %s%s, %s) %s in %" PRIu64 " ms\n",
			       r, s, cfg.tiny ? "tiny" : "large", cfg.pooled ? " pooled" : "",
			       mk_policy_name(cfg.policy),
			       ok ? "passed" : "failed", th_now_ms() - t1);
		if (ok) {
			done_ops += nops;
			continue;
		}
		printf("model: run %" PRIu64 " (seed %#" PRIx64 ": --seed %" PRIu64 " --runs %" PRIu64
		       ") failed at operation %ld (%s): %s\n",
		       r, s, seed, r + 1, f.op, f.op >= 0 ? mk_kind_name(ops[f.op].kind) : "end",
		       f.what);
		printf("  config: capacity %" PRIu64 ", policy %s, %s, default TTL %" PRIu64
		       ", max key %zu, max value %zu, write wait %" PRIu64 " ms, expected %" PRIu64
		       "%s, compression from %zu bytes (saving %u%%, dictionary mode %d), %u shards%s\n",
		       cfg.capacity, mk_policy_name(cfg.policy),
		       cfg.expiry ? "expire after access" : "expire after write", cfg.default_ttl,
		       cfg.max_key, cfg.max_value, cfg.write_wait_ms, cfg.expected_entries,
		       cfg.backwards ? ", clock steps back" : "", cfg.compress_min,
		       cfg.compress_saving, (int)cfg.dictionary, cfg.shards,
		       cfg.pooled ? ", in a pool" : "");
		size_t n = nops;
		if (shrink) {
			n = mk_shrink(&cfg, ops, nops, &f, shrink_s * 1000);
			printf("  shrunk to %zu operations: %s\n", n, f.what);
		}
		printf("----- reproducer (C) -----\n");
		mk_print_repro(stdout, &cfg, ops, n, &f);
		printf("----- end of reproducer -----\n");
		print_summary(r + 1, done_ops, tiny, t0);
		free(ops);
		printf("FAIL\n");
		return 1;
	}
	print_summary(r, done_ops, tiny, t0);
	free(ops);
	printf("PASS\n");
	return 0;
}
