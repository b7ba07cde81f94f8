/*
 * examples/quickstart.c - a tour of the public API, and a smoke test.
 *
 * Opens a small cache, writes, reads (copying and in place), removes, prints
 * the counters and closes. Every call's result is checked: a larder call
 * returns LARDER_OK, a documented status (LARDER_MISS, ...) or a negative
 * error that larder_strerror() names. The program exits 0 only when every
 * step did what the API documents, so CTest runs it as the "example" test.
 *
 * Uses only larder.h, as every program outside the engine must.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "larder.h"

/* Reports a result other than the one expected; returns 1 so callers can sum. */
static int check(const char *what, int got, int want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "quickstart: %s returned %d (%s), expected %d (%s)\n", what, got,
		larder_strerror(got), want, larder_strerror(want));
	return 1;
}

struct read_ctx {
	size_t calls;
	size_t len;
	char first;
};

/* Runs inside a read section: look at the bytes, do not keep the pointer. */
static void on_value(void *ctx, const void *value, size_t value_len)
{
	struct read_ctx *r = ctx;

	r->calls++;
	r->len = value_len;
	r->first = value_len ? *(const char *)value : 0;
}

static int open_cache(larder **out)
{
	larder_config *cfg = NULL;
	int bad = 0;

	if (check("larder_config_create", larder_config_create(&cfg), LARDER_OK))
		return 1;
	bad |= check("set_capacity", larder_config_set_capacity(cfg, 8u << 20), LARDER_OK);
	bad |= check("set_expected_entries", larder_config_set_expected_entries(cfg, 1024),
		     LARDER_OK);
	bad |= check("set_max_value_bytes", larder_config_set_max_value_bytes(cfg, 64 * 1024),
		     LARDER_OK);
	bad |= check("set_policy", larder_config_set_policy(cfg, LARDER_POLICY_S3FIFO), LARDER_OK);
	/* A setting out of range is refused and leaves the config as it was. */
	bad |= check("set_capacity(1 byte)", larder_config_set_capacity(cfg, 1), LARDER_EINVAL);
	if (!bad)
		bad |= check("larder_open", larder_open(out, cfg), LARDER_OK);
	/* The cache does not keep the config. */
	larder_config_destroy(cfg);
	return bad;
}

static int exercise(larder *cache)
{
	static const char key[] = "greeting";
	static const char value[] = "hello, larder";
	char buf[64];
	size_t len = 0;
	struct read_ctx r = { 0 };
	int bad = 0;

	bad |= check("put", larder_put(cache, key, strlen(key), value, strlen(value),
				       LARDER_TTL_DEFAULT), LARDER_OK);
	bad |= check("put_if_absent", larder_put_if_absent(cache, key, strlen(key), "x", 1,
							   LARDER_TTL_DEFAULT), LARDER_EXISTS);

	bad |= check("get", larder_get(cache, key, strlen(key), buf, sizeof(buf), &len), LARDER_OK);
	if (!bad && (len != strlen(value) || memcmp(buf, value, len) != 0)) {
		fprintf(stderr, "quickstart: get returned the wrong bytes\n");
		bad = 1;
	}
	/* Too small a buffer: nothing copied, the needed length reported. */
	bad |= check("get(small buffer)", larder_get(cache, key, strlen(key), buf, 4, &len),
		     LARDER_EBUFSIZE);
	if (len != strlen(value)) {
		fprintf(stderr, "quickstart: EBUFSIZE reported %zu bytes needed, not %zu\n", len,
			strlen(value));
		bad = 1;
	}

	bad |= check("get_with", larder_get_with(cache, key, strlen(key), on_value, &r), LARDER_OK);
	if (r.calls != 1 || r.len != strlen(value) || r.first != 'h') {
		fprintf(stderr, "quickstart: get_with callback saw calls=%zu len=%zu\n", r.calls,
			r.len);
		bad = 1;
	}

	bad |= check("remove", larder_remove(cache, key, strlen(key)), LARDER_OK);
	bad |= check("get after remove", larder_get(cache, key, strlen(key), buf, sizeof(buf), &len),
		     LARDER_MISS);
	bad |= check("remove again", larder_remove(cache, key, strlen(key)), LARDER_MISS);
	bad |= check("get(empty key)", larder_get(cache, key, 0, buf, sizeof(buf), &len),
		     LARDER_EINVAL);
	printf("put/get/get_with/remove: %s\n", bad ? "FAILED" : "ok");
	return bad;
}

static int print_stats(larder *cache)
{
	uint64_t values[LARDER_STAT_COUNT];

	if (check("larder_stats", larder_stats(cache, values, LARDER_STAT_COUNT), LARDER_OK))
		return 1;
	for (int i = 0; i < LARDER_STAT_COUNT; i++) {
		const char *name = larder_stat_name((enum larder_stat)i);

		if (!name) {
			fprintf(stderr, "quickstart: counter %d has no name\n", i);
			return 1;
		}
		printf("  %-16s %" PRIu64 "\n", name, values[i]);
	}
	/* One get found the value (get_with too), two found nothing. */
	if (values[LARDER_STAT_HITS] < 2 || values[LARDER_STAT_MISSES] < 1 ||
	    values[LARDER_STAT_WRITES] < 1) {
		fprintf(stderr, "quickstart: counters do not reflect the calls made\n");
		return 1;
	}
	return 0;
}

int main(void)
{
	larder *cache = NULL;
	int bad;

	printf("larder %d.%d.%d quickstart\n", LARDER_VERSION_MAJOR, LARDER_VERSION_MINOR,
	       LARDER_VERSION_PATCH);
	if (open_cache(&cache))
		return 1;
	bad = exercise(cache);
	if (!bad)
		bad = print_stats(cache);
	larder_close(cache);
	printf("%s\n", bad ? "quickstart: FAILED" : "quickstart: ok");
	return bad ? 1 : 0;
}
