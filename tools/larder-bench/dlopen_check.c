/*
 * tools/larder-bench/dlopen_check.c - does a get cost the same when
 * liblarder.so is dlopen'd, as a JVM or Node.js loads it?
 *
 * The per-thread state is reached through one initial-exec TLS pointer
 * (core/thread.h). Under the default TLS model a dlopen'd library would call
 * __tls_get_addr on every operation; this program measures larder_get through
 * the statically linked library and through dlopen(PATH) in the same process
 * (two independent copies of the engine), interleaved over 5 rounds, on the
 * matrix's shape: 24,000 keys of 16 bytes, 64-byte values, uniform keys.
 *
 *     larder-bench-dlopen build/release/liblarder.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "larder.h"

#define KEYS 24000u
#define GETS 5000000u
#define ROUNDS 5

struct api {
	int (*config_create)(larder_config **);
	int (*config_set_capacity)(larder_config *, uint64_t);
	void (*config_destroy)(larder_config *);
	int (*open)(larder **, const larder_config *);
	int (*put)(larder *, const void *, size_t, const void *, size_t, uint64_t);
	int (*get)(larder *, const void *, size_t, void *, size_t, size_t *);
	void (*close)(larder *);
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void key_of(unsigned char key[16], unsigned i)
{
	memset(key, 0, 16);
	memcpy(key, &i, sizeof(i));
}

/* ns per larder_get through api, or a negative value on failure. */
static double run(const struct api *a)
{
	larder_config *cfg;
	larder *c;
	unsigned char key[16], val[64] = { 0 }, buf[64];
	size_t len;
	if (a->config_create(&cfg) != LARDER_OK)
		return -1;
	int rc = a->config_set_capacity(cfg, 64u << 20);
	if (rc == LARDER_OK)
		rc = a->open(&c, cfg);
	a->config_destroy(cfg);
	if (rc != LARDER_OK)
		return -1;
	for (unsigned i = 0; i < KEYS && rc == LARDER_OK; i++) {
		key_of(key, i);
		rc = a->put(c, key, sizeof(key), val, sizeof(val), LARDER_TTL_DEFAULT);
	}
	unsigned x = 1, misses = 0;
	double t0 = now_s();
	for (unsigned i = 0; i < GETS; i++) {
		x = x * 1103515245u + 12345u;
		key_of(key, (x >> 8) % KEYS);
		misses += a->get(c, key, sizeof(key), buf, sizeof(buf), &len) != LARDER_OK;
	}
	double ns = (now_s() - t0) / GETS * 1e9;
	a->close(c);
	return rc == LARDER_OK && misses == 0 ? ns : -1;
}

#define SYM(h, name) dlsym((h), "larder_" #name)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH/liblarder.so\n", argv[0]);
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	const struct api linked = { larder_config_create, larder_config_set_capacity,
				    larder_config_destroy, larder_open, larder_put,
				    larder_get, larder_close };
	struct api loaded;
	*(void **)&loaded.config_create = SYM(h, config_create);
	*(void **)&loaded.config_set_capacity = SYM(h, config_set_capacity);
	*(void **)&loaded.config_destroy = SYM(h, config_destroy);
	*(void **)&loaded.open = SYM(h, open);
	*(void **)&loaded.put = SYM(h, put);
	*(void **)&loaded.get = SYM(h, get);
	*(void **)&loaded.close = SYM(h, close);
	if (!loaded.config_create || !loaded.config_set_capacity || !loaded.config_destroy ||
	    !loaded.open || !loaded.put || !loaded.get || !loaded.close) {
		fprintf(stderr, "dlsym: a larder_ function is missing\n");
		return 1;
	}
	printf("round  linked ns/get  dlopen ns/get\n");
	for (int r = 0; r < ROUNDS; r++) {
		double s = run(&linked), d = run(&loaded);
		if (s < 0 || d < 0) {
			fprintf(stderr, "a run failed\n");
			return 1;
		}
		printf("%5d  %13.1f  %13.1f\n", r, s, d);
	}
	return 0;
}
