/*
 * test_lru_reference.c - larder's LRU, driven through the public simulator
 * (larder_sim_*, the same policy code the maintainer runs), reproduces the
 * LRU miss ratios of the traces' REFERENCE.tsv (docs/policies.md) to 4 decimals at every size
 * listed for each trace named on the command line. LRU is deterministic, so
 * any difference is a bug (README of the traces: "Self-check").
 *
 *   test_sim_lru_reference TRACES_DIR TRACE...
 * Exit 0 pass, 1 fail, 77 skipped (no traces folder).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "larder.h"

static int check_trace(const char *dir, const char *name)
{
	char path[1024], line[256];
	snprintf(path, sizeof path, "%s/REFERENCE.tsv", dir);
	FILE *ref = fopen(path, "r");
	if (!ref)
		return 77;
	uint64_t sizes[32];
	double want[32];
	int n = 0;
	while (fgets(line, sizeof line, ref) && n < 32) {
		char tr[128], alg[64];
		unsigned long long sz;
		double mr;
		if (sscanf(line, "%127s %llu %63s %lf", tr, &sz, alg, &mr) == 4 &&
		    strcmp(tr, name) == 0 && strcmp(alg, "LRU") == 0) {
			sizes[n] = sz;
			want[n++] = mr;
		}
	}
	fclose(ref);
	if (n == 0) {
		fprintf(stderr, "FAIL %s: no LRU rows in REFERENCE.tsv\n", name);
		return 1;
	}
	larder_sim *sims[32];
	uint64_t misses[32] = {0}, requests = 0;
	for (int i = 0; i < n; i++)
		if (larder_sim_create(&sims[i], LARDER_POLICY_LRU, sizes[i], 0) != LARDER_OK) {
			fprintf(stderr, "FAIL larder_sim_create\n");
			return 1;
		}
	snprintf(path, sizeof path, "%s/%s.txt.gz", dir, name);
	gzFile f = gzopen(path, "rb");
	if (!f)
		return 77;
	while (gzgets(f, line, sizeof line)) {
		uint64_t id = strtoull(line, NULL, 10);
		requests++;
		for (int i = 0; i < n; i++) {
			int rc = larder_sim_access(sims[i], id, 1);
			if (rc < 0) {
				fprintf(stderr, "FAIL larder_sim_access: %d\n", rc);
				return 1;
			}
			misses[i] += (rc == 0);
		}
	}
	gzclose(f);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		double got = (double)misses[i] / (double)requests;
		/* to 4 decimals: the rounded values agree */
		int ok = (long)(got * 10000 + 0.5) == (long)(want[i] * 10000 + 0.5);
		printf("%s %-18s size %8llu  lru %.4f  reference %.4f\n", ok ? "PASS" : "FAIL", name,
		       (unsigned long long)sizes[i], got, want[i]);
		bad += !ok;
		larder_sim_destroy(sims[i]);
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACES_DIR TRACE...\n", argv[0]);
		return 1;
	}
	int rc = 0;
	for (int i = 2; i < argc; i++) {
		int r = check_trace(argv[1], argv[i]);
		if (r == 77) {
			printf("SKIPPED: no %s in %s\n", argv[i], argv[1]);
			return 77;
		}
		rc |= r;
	}
	printf("%s\n", rc ? "FAILED" : "all passed");
	return rc;
}
