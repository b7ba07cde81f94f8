/*
 * test_csv_check.c - checks a larder-sim --csv file: the exact header of the
 * contract, well-formed rows (misses / requests == miss_ratio), and that the
 * exact-lru, lru and belady rows equal REFERENCE.tsv's LRU and Belady columns
 * to 4 decimals (both deterministic), and that larder's lru and the
 * independent exact-lru count the same misses in every cell (this also holds
 * for cells the reference lacks, such as --bytes runs).
 *
 *   test_sim_csv_check CSV REFERENCE.tsv
 * Exit 0 pass, 1 fail, 77 skipped (no reference file).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double lookup(FILE *ref, const char *trace, unsigned long long size, const char *alg)
{
	char line[256], tr[128], a[64];
	unsigned long long sz;
	double mr;
	rewind(ref);
	while (fgets(line, sizeof line, ref))
		if (sscanf(line, "%127s %llu %63s %lf", tr, &sz, a, &mr) == 4 &&
		    strcmp(tr, trace) == 0 && sz == size && strcmp(a, alg) == 0)
			return mr;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 1;
	FILE *ref = fopen(argv[2], "r");
	if (!ref) {
		printf("SKIPPED: no %s\n", argv[2]);
		return 77;
	}
	FILE *csv = fopen(argv[1], "r");
	if (!csv) {
		fprintf(stderr, "FAIL: no CSV %s (did sim_tool_run fail?)\n", argv[1]);
		return 1;
	}
	char line[512];
	int bad = 0, rows = 0, checked = 0, paired = 0;
	char lru_key[256] = "";
	unsigned long long lru_misses = 0;
	if (!fgets(line, sizeof line, csv) ||
	    strcmp(line, "trace,policy,cache_size,requests,misses,miss_ratio\n") != 0) {
		fprintf(stderr, "FAIL: header is not the contract's\n");
		return 1;
	}
	while (fgets(line, sizeof line, csv)) {
		char trace[128], policy[64];
		unsigned long long size, req, miss;
		double mr;
		if (sscanf(line, "%127[^,],%63[^,],%llu,%llu,%llu,%lf", trace, policy, &size, &req,
			   &miss, &mr) != 6 || req == 0 || miss > req ||
		    fabs((double)miss / (double)req - mr) > 1e-6) {
			fprintf(stderr, "FAIL: bad row: %s", line);
			bad++;
			continue;
		}
		rows++;
		char key[256];
		snprintf(key, sizeof key, "%s/%llu", trace, size);
		if (strcmp(policy, "lru") == 0) {
			snprintf(lru_key, sizeof lru_key, "%s", key);
			lru_misses = miss;
		} else if (strcmp(policy, "exact-lru") == 0 && strcmp(lru_key, key) == 0) {
			paired++;
			if (miss != lru_misses) {
				fprintf(stderr, "FAIL %s: lru %llu misses, exact-lru %llu\n", key,
					lru_misses, miss);
				bad++;
			}
		}
		const char *alg = strcmp(policy, "belady") == 0 ? "Belady"
				  : (strcmp(policy, "lru") == 0 || strcmp(policy, "exact-lru") == 0)
					  ? "LRU"
					  : NULL;
		if (!alg)
			continue;
		double want = lookup(ref, trace, size, alg);
		if (want < 0)
			continue;
		checked++;
		if (lround(mr * 10000) != lround(want * 10000)) {
			fprintf(stderr, "FAIL %s %s %llu: %.4f, reference %s %.4f\n", trace, policy,
				size, mr, alg, want);
			bad++;
		}
	}
	printf("%d rows, %d compared with the reference, %d lru/exact-lru pairs, %d bad\n", rows,
	       checked, paired, bad);
	return (bad || (checked == 0 && paired == 0)) ? 1 : 0;
}
