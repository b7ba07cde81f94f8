/*
 * suboptions.c - larderd's -o: every suboption memcached 1.6.18 (Debian's
 * build, with extstore and TLS) takes, read as memcached's getsubopt loop
 * reads it.
 *
 * Owns the table of names, each with what memcached says when the value is
 * missing ("name" without "=") and the check memcached makes of the value,
 * in memcached's words and exit status (1; EX_USAGE for the checks it makes
 * after the whole command line). The tuning ones are accepted and have no
 * effect (the engine has its own index, eviction and threads); the two that
 * change behaviour larderd does not have are refused: idle_timeout above 0
 * (larderd closes no idle connection) and ext_path (extstore).
 *
 * Invariants:
 *   SUBOPT-V1. A value memcached refuses is refused with memcached's
 *      message and exit status, wherever larderd can take the same reading
 *      (atoi, strtoul, strtod, as memcached parses each).
 *   SUBOPT-V2. A name memcached does not know, or an empty one, is its
 *      "Illegal suboption" and exit 1.
 *
 * Not guaranteed: memcached's refusals that come from its own internals
 * (hashpower 12 beside its item lock table at -t 4, hashpower 32 failing
 * to allocate, the slab checks of slab_chunk_max and slab_sizes, crashes
 * on some values) are not reproduced: those values are accepted, with no
 * effect (docs/server.md, "Build and run").
 */
#include "suboptions.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* Each check prints memcached's refusal and returns 1, or returns 0. */
typedef int (*check_fn)(struct larderd_subopts *s, const char *name, const char *value);

struct subopt {
	const char *name;
	/* memcached's words when "=value" is missing; NULL: a flag, or a
	 * value memcached does not need (any value is ignored). */
	const char *missing;
	check_fn check; /* NULL: any value */
};

#define MISSING_ARG "Missing %s argument\n"
#define MISSING_NUM "Missing numeric argument for %s\n"
#define MISSING_VAL "Missing %s value\n"

/* memcached's safe_strtoul: digits to the end (or a space), no sign. */
static bool whole_unsigned(const char *v)
{
	char *end;
	if (strchr(v, '-') != NULL)
		return false;
	(void)strtoull(v, &end, 10);
	return end != v && (*end == '\0' || *end == ' ');
}

/* memcached's safe_strtod: a number to the end (or a space). */
static bool whole_real(const char *v)
{
	char *end;
	(void)strtod(v, &end);
	return end != v && (*end == '\0' || *end == ' ');
}

static int check_hashpower(struct larderd_subopts *s, const char *name, const char *v)
{
	int n = atoi(v);
	(void)s, (void)name;
	if (n < 12) {
		fprintf(stderr, "Initial hashtable multiplier of %d is too low\n", n);
		return 1;
	}
	if (n > 32) {
		fprintf(stderr, "Initial hashtable multiplier of %d is too high\n"
			"Choose a value based on \"STAT hash_power_level\" from a running instance\n", n);
		return 1;
	}
	return 0;
}

static int check_tail_repair(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	if (atoi(v) >= 10)
		return 0;
	fprintf(stderr, "Cannot set tail_repair_time to less than 10 seconds\n");
	return 1;
}

static int check_hash_algorithm(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	if (strcmp(v, "jenkins") == 0 || strcmp(v, "murmur3") == 0 || strcmp(v, "xxh3") == 0)
		return 0;
	fprintf(stderr, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n");
	return 1;
}

static int check_crawler_sleep(struct larderd_subopts *s, const char *name, const char *v)
{
	int n = atoi(v);
	(void)s, (void)name;
	if (n >= 0 && n <= 1000000)
		return 0;
	fprintf(stderr, "LRU crawler sleep must be between 0 and 1 second\n");
	return 1;
}

static int check_tocrawl(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	if (whole_unsigned(v))
		return 0;
	fprintf(stderr, "lru_crawler_tocrawl takes a numeric 32bit value\n");
	return 1;
}

/* hot_lru_pct and warm_lru_pct: each 1..79 (memcached's words say > 1), and
 * their sum at most 80, checked once every -o is read (larderd_subopts_finish). */
static int check_lru_pct(struct larderd_subopts *s, const char *name, const char *v)
{
	int n = atoi(v);
	if (n < 1 || n >= 80) {
		fprintf(stderr, "%s must be > 1 and < 80\n", name);
		return 1;
	}
	*(name[0] == 'h' ? &s->hot_lru_pct : &s->warm_lru_pct) = n;
	return 0;
}

static int check_max_factor(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s;
	if (atof(v) > 0)
		return 0;
	fprintf(stderr, "%s must be > 0\n", name);
	return 1;
}

static int check_automove(struct larderd_subopts *s, const char *name, const char *v)
{
	int n = atoi(v);
	(void)s, (void)name;
	if (n >= 0 && n <= 2)
		return 0;
	fprintf(stderr, "slab_automove must be between 0 and 2\n");
	return 1;
}

static int check_automove_ratio(struct larderd_subopts *s, const char *name, const char *v)
{
	double r = atof(v);
	(void)s, (void)name;
	if (r > 0 && r <= 1)
		return 0;
	fprintf(stderr, "slab_automove_ratio must be > 0 and < 1\n");
	return 1;
}

/* memcached crashes on some values (-1, 99999999); larderd refuses the
 * ones under 3 with its words and takes the rest. */
static int check_automove_window(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	if (atoi(v) > 2)
		return 0;
	fprintf(stderr, "slab_automove_window must be > 2\n");
	return 1;
}

static int check_unsigned(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s;
	if (whole_unsigned(v))
		return 0;
	fprintf(stderr, "could not parse argument to %s\n", name);
	return 1;
}

static int check_real(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s;
	if (whole_real(v))
		return 0;
	fprintf(stderr, "could not parse argument to %s\n", name);
	return 1;
}

/* idle_timeout above 0: larderd closes no idle connection. */
static int refuse_idle_timeout(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	if (atoi(v) <= 0)
		return 0;
	fprintf(stderr, "larderd: -o idle_timeout=%s is not supported (idle connections are "
		"never closed)\n", v);
	return EX_USAGE;
}

static int refuse_ext_path(struct larderd_subopts *s, const char *name, const char *v)
{
	(void)s, (void)name;
	fprintf(stderr, "larderd: -o ext_path=%s is not supported (no extstore)\n", v);
	return EX_USAGE;
}

static const struct subopt table[] = {
	{"maxconns_fast", NULL, NULL},
	{"no_maxconns_fast", NULL, NULL},
	{"hashpower", MISSING_NUM, check_hashpower},
	{"tail_repair_time", MISSING_NUM, check_tail_repair},
	{"hash_algorithm", "Missing hash_algorithm argument\n", check_hash_algorithm},
	{"lru_crawler", NULL, NULL},
	{"no_lru_crawler", NULL, NULL},
	{"lru_crawler_sleep", MISSING_VAL, check_crawler_sleep},
	{"lru_crawler_tocrawl", MISSING_VAL, check_tocrawl},
	{"lru_maintainer", NULL, NULL},
	{"no_lru_maintainer", NULL, NULL},
	{"hot_lru_pct", MISSING_ARG, check_lru_pct},
	{"warm_lru_pct", MISSING_ARG, check_lru_pct},
	{"hot_max_factor", MISSING_ARG, check_max_factor},
	{"warm_max_factor", MISSING_ARG, check_max_factor},
	{"temporary_ttl", MISSING_ARG, NULL},
	{"idle_timeout", MISSING_NUM, refuse_idle_timeout},
	{"slab_reassign", NULL, NULL},
	{"no_slab_reassign", NULL, NULL},
	{"slab_automove", NULL, check_automove},
	{"no_slab_automove", NULL, NULL},
	{"slab_automove_ratio", MISSING_ARG, check_automove_ratio},
	{"slab_automove_window", MISSING_ARG, check_automove_window},
	{"slab_automove_freeratio", MISSING_ARG, check_real},
	{"slab_chunk_max", MISSING_ARG, NULL},
	{"slab_sizes", NULL, NULL},
	{"watcher_logbuf_size", MISSING_ARG, check_unsigned},
	{"worker_logbuf_size", MISSING_ARG, check_unsigned},
	{"track_sizes", NULL, NULL},
	{"no_hashexpand", NULL, NULL},
	{"modern", NULL, NULL},
	{"no_modern", NULL, NULL},
	{"drop_privileges", NULL, NULL},
	{"no_drop_privileges", NULL, NULL},
	{"inline_ascii_resp", NULL, NULL},
	{"no_inline_ascii_resp", NULL, NULL},
	{"no_chunked_items", NULL, NULL},
	{"read_buf_mem_limit", MISSING_ARG, check_unsigned},
	{"resp_obj_mem_limit", NULL, NULL},
	{"sock_cookie_id", NULL, NULL},
	{"ext_path", "missing argument to ext_path, ie: ext_path=/d/file:5G\n", refuse_ext_path},
	{"ext_page_size", MISSING_ARG, NULL},
	{"ext_wbuf_size", MISSING_ARG, NULL},
	{"ext_threads", MISSING_ARG, NULL},
	{"ext_io_depth", MISSING_ARG, NULL},
	{"ext_item_size", MISSING_ARG, NULL},
	{"ext_item_age", MISSING_ARG, NULL},
	{"ext_low_ttl", MISSING_ARG, NULL},
	{"ext_drop_unread", NULL, NULL},
	{"ext_recache_rate", MISSING_ARG, NULL},
	{"ext_compact_under", MISSING_ARG, NULL},
	{"ext_drop_under", MISSING_ARG, NULL},
	{"ext_max_frag", MISSING_ARG, NULL},
	{"ext_max_sleep", MISSING_ARG, NULL},
	{"ssl_chain_cert", MISSING_ARG, NULL},
	{"ssl_key", MISSING_ARG, NULL},
	{"ssl_keyformat", MISSING_ARG, NULL},
	{"ssl_verify_mode", MISSING_ARG, NULL},
	{"ssl_ciphers", MISSING_ARG, NULL},
	{"ssl_ca_cert", MISSING_ARG, NULL},
	{"ssl_wbuf_size", MISSING_ARG, NULL},
	{"ssl_session_cache", NULL, NULL},
	{"ssl_kernel_tls", NULL, NULL},
	{"ssl_min_version", MISSING_ARG, NULL},
};

static const struct subopt *find(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
			return &table[i];
	return NULL;
}

int larderd_subopts_parse(struct larderd_subopts *s, const char *arg)
{
	for (const char *p = arg; *p != '\0';) {
		size_t len = strcspn(p, ","), name_len = strcspn(p, "=,");
		const struct subopt *o = find(p, name_len);
		char value[256];
		int rc;

		if (o == NULL) {
			fprintf(stderr, "Illegal suboption \"%.*s\"\n", (int)len, p);
			return 1;
		}
		if (p[name_len] != '=') {
			if (o->missing != NULL) {
				fprintf(stderr, o->missing, o->name);
				return 1;
			}
		} else if (o->check != NULL) {
			size_t vlen = len - name_len - 1;
			if (vlen >= sizeof(value)) {
				fprintf(stderr, "larderd: -o %s: a value of %zu bytes (at most %zu)\n",
					o->name, vlen, sizeof(value) - 1);
				return EX_USAGE;
			}
			memcpy(value, p + name_len + 1, vlen);
			value[vlen] = '\0';
			if ((rc = o->check(s, o->name, value)) != 0)
				return rc;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

int larderd_subopts_finish(const struct larderd_subopts *s)
{
	if (s->hot_lru_pct + s->warm_lru_pct > 80) {
		fprintf(stderr, "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
		return EX_USAGE;
	}
	return 0;
}
