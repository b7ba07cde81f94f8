/*
 * tests/model/model_repro.c - shrinking a failing sequence, and printing it
 * as a C program (design: model.h).
 *
 * Shrinking (delta debugging, Zeller's ddmin, greedy): cut everything after
 * the failing operation, then remove chunks of halving size while the run
 * still fails the same way (same invariant, same kind of failing
 * operation), then simplify each remaining operation (no bad arguments,
 * shorter values, plainer TTLs). Clock operations carry absolute times, so
 * removing one never moves the others. The maintainer runs beside the
 * sequence, so a failure may depend on timing: a candidate counts as
 * failing when any of TRIES runs fails. Shrinking stops at its time budget
 * with the smallest sequence found so far.
 *
 * The program printed uses only larder.h plus the quiesce seam of
 * liblarder.a (for sync points), and prints each result beside the one the
 * model predicted, so it shows the divergence without the tester.
 */
#include <stdlib.h>

#include "model.h"

#define TRIES 3

/* The failure's signature: its invariant and the kind of the failing
 * operation (a shrink must not wander to another bug). */
static int same_failure(const struct mfail *a, const struct mop *ops_a, const struct mfail *b,
			const struct mop *ops_b)
{
	if (strncmp(a->what, b->what, 3) != 0)
		return 0;
	unsigned ka = a->op >= 0 ? ops_a[a->op].kind : MOP_KINDS;
	unsigned kb = b->op >= 0 ? ops_b[b->op].kind : MOP_KINDS;
	return ka == kb;
}

static uint64_t shrink_deadline_ms; /* mk_shrink's time budget ends here */

static int fails(const struct mcfg *cfg, const struct mop *ops, size_t n, const struct mfail *want,
		 const struct mop *want_ops, struct mfail *got)
{
	if (th_now_ms() >= shrink_deadline_ms)
		return 0; /* out of time: keep what we have */
	for (int t = 0; t < TRIES; t++)
		if (!mk_run(cfg, ops, n, got, NULL) && same_failure(want, want_ops, got, ops))
			return 1;
	return 0;
}

/* Tries ops with [at, at + len) removed; keeps it (in ops) if it still fails. */
static int try_cut(const struct mcfg *cfg, struct mop *ops, size_t *n, size_t at, size_t len,
		   struct mfail *f, struct mop *scratch)
{
	size_t m = *n - len;
	struct mfail got;
	memcpy(scratch, ops, at * sizeof(*ops));
	memcpy(scratch + at, ops + at + len, (*n - at - len) * sizeof(*ops));
	if (!fails(cfg, scratch, m, f, ops, &got))
		return 0;
	memcpy(ops, scratch, m * sizeof(*ops));
	*n = m;
	*f = got;
	return 1;
}

/* Tries a simpler form of ops[i]; keeps it if it still fails. */
static void try_simpler(const struct mcfg *cfg, struct mop *ops, size_t n, size_t i,
			const struct mop *simpler, struct mfail *f)
{
	struct mop was = ops[i];
	struct mfail got;
	if (memcmp(&was, simpler, sizeof(was)) == 0)
		return;
	ops[i] = *simpler;
	if (fails(cfg, ops, n, f, ops, &got))
		*f = got;
	else
		ops[i] = was;
}

size_t mk_shrink(const struct mcfg *cfg, struct mop *ops, size_t n, struct mfail *f,
		 uint64_t budget_ms)
{
	struct mop *scratch = malloc(n * sizeof(*ops));
	shrink_deadline_ms = th_now_ms() + budget_ms;
	if (!scratch)
		return n;
	if (f->op >= 0 && (size_t)f->op + 1 < n) {
		size_t keep = (size_t)f->op + 1;
		try_cut(cfg, ops, &n, keep, n - keep, f, scratch);
	}
	for (size_t len = n / 2; len >= 1; len /= 2)
		for (size_t at = 0; at + len <= n;)
			if (!try_cut(cfg, ops, &n, at, len, f, scratch))
				at += len;
	for (size_t i = 0; i < n; i++) {
		struct mop s = ops[i];
		s.faults = 0;
		try_simpler(cfg, ops, n, i, &s, f);
		s = ops[i];
		if (s.vlen > 3) {
			s.vlen = 3;
			try_simpler(cfg, ops, n, i, &s, f);
		}
		s = ops[i];
		if (s.ttl != LARDER_TTL_NEVER && s.ttl > 100) {
			s.ttl = LARDER_TTL_NEVER;
			try_simpler(cfg, ops, n, i, &s, f);
		}
		s = ops[i];
		for (unsigned j = 0; s.kind == MOP_GET_BATCH && j < s.nbatch;) {
			struct mop t = s;
			memmove(t.batch + j, t.batch + j + 1, (size_t)(t.nbatch - j - 1));
			t.nbatch--;
			try_simpler(cfg, ops, n, i, &t, f);
			if (ops[i].nbatch == s.nbatch)
				j++;
			s = ops[i];
		}
	}
	free(scratch);
	return n;
}

/* ---- Printing ----------------------------------------------------------------- */

static void print_bytes(FILE *out, const unsigned char *p, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "\\x%02x", p[i]);
	fputc('"', out);
}

static void print_key(FILE *out, const struct mcfg *cfg, const struct mop *o)
{
	size_t len;
	const unsigned char *k = mk_key(cfg->max_key, o->key, (o->faults & MF_LONG_KEY) != 0, &len);
	if (o->faults & MF_NULL_KEY)
		fputs("NULL", out);
	else
		print_bytes(out, k, len);
	fprintf(out, ", %zu", (o->faults & MF_EMPTY_KEY) ? 0 : len);
}

static void print_value(FILE *out, const struct mcfg *cfg, const struct mop *o)
{
	size_t len = (o->faults & MF_LONG_VALUE) ? cfg->max_value + 1 : o->vlen;
	if ((o->faults & MF_NULL_VALUE) && len == 0)
		len = 1;
	if (o->faults & MF_NULL_VALUE)
		fprintf(out, "NULL, %zu", len);
	else
		fprintf(out, "val(%#x, %zu), %zu", o->vseed, len, len);
}

static void print_ttl(FILE *out, uint64_t ttl)
{
	if (ttl == LARDER_TTL_NEVER)
		fputs("LARDER_TTL_NEVER", out);
	else if (ttl == LARDER_TTL_DEFAULT)
		fputs("LARDER_TTL_DEFAULT", out);
	else
		fprintf(out, "%" PRIu64 "u", ttl);
}

/* The expected value of a *_if_equals call, as the run built it (the key's
 * current value, or other bytes). */
static void print_expected(FILE *out, const struct mop *o, const struct mtrace *t)
{
	if (o->faults & MF_NULL_EXPECT)
		fprintf(out, "NULL, %u", t->ex_len ? t->ex_len : 1);
	else
		fprintf(out, "val2(%#x, %u), %u", t->ex_seed, t->ex_len, t->ex_len);
}

/*
 * "rc = larder_<op>(<cache>, <arguments>);" for the operations whose
 * arguments are all the run's: args names them in order, k the key, e the
 * expected value, v the value, t the TTL.
 */
static void print_call(FILE *out, const struct mcfg *cfg, const struct mop *o,
		       const struct mtrace *t, const char *cache, const char *args)
{
	fprintf(out, "\trc = larder_%s(%s", mk_kind_name(o->kind), cache);
	for (; *args; args++) {
		fputs(", ", out);
		if (*args == 'k')
			print_key(out, cfg, o);
		else if (*args == 'e')
			print_expected(out, o, t);
		else if (*args == 'v')
			print_value(out, cfg, o);
		else
			print_ttl(out, o->ttl);
	}
	fputs(");\n", out);
}

static void print_op(FILE *out, const struct mcfg *cfg, const struct mop *o, size_t i,
		     const struct mtrace *t)
{
	const char *cache = (o->faults & MF_NULL_CACHE) ? "NULL" : "c";
	switch (o->kind) {
	case MOP_PUT:
	case MOP_PUT_IF_ABSENT:
	case MOP_REPLACE:
		print_call(out, cfg, o, t, cache, "kvt");
		break;
	case MOP_REPLACE_IF_EQUALS:
		print_call(out, cfg, o, t, cache, "kevt");
		break;
	case MOP_REMOVE:
	case MOP_CONTAINS:
	case MOP_ACCESS:
		print_call(out, cfg, o, t, cache, "k");
		break;
	case MOP_REMOVE_IF_EQUALS:
		print_call(out, cfg, o, t, cache, "ke");
		break;
	case MOP_TOUCH:
		print_call(out, cfg, o, t, cache, "kt");
		break;
	case MOP_GET:
	case MOP_PEEK:
		fprintf(out, "\trc = larder_%s(%s, ", mk_kind_name(o->kind), cache);
		print_key(out, cfg, o);
		fprintf(out, ", %s, %" PRIu64 ", %s);\n",
			(o->faults & MF_NULL_BUF) || !o->arg ? "NULL" : "buf",
			(o->faults & MF_NULL_BUF) && !o->arg ? 1 : o->arg,
			(o->faults & MF_NULL_OUT) ? "NULL" : "&len");
		break;
	case MOP_GET_WITH:
		fprintf(out, "\trc = larder_get_with(%s, ", cache);
		print_key(out, cfg, o);
		fprintf(out, ", %s, NULL);\n", (o->faults & MF_NULL_OUT) ? "NULL" : "on_value");
		break;
	case MOP_TTL_REMAINING:
		fprintf(out, "\trc = larder_ttl_remaining(%s, ", cache);
		print_key(out, cfg, o);
		fprintf(out, ", %s);\n", (o->faults & MF_NULL_OUT) ? "NULL" : "&ttl");
		break;
	case MOP_GET_BATCH:
		fprintf(out, "\t{\n\t\tstatic const void *keys[%u];\n\t\tstatic size_t lens[%u];\n",
			o->nbatch + 1, o->nbatch + 1);
		for (unsigned j = 0; j < o->nbatch; j++) {
			unsigned b = o->batch[j];
			size_t len;
			const unsigned char *k = mk_key(cfg->max_key, b < MK_KEYS ? b : 0, b == MB_LONG,
							&len);
			fprintf(out, "\t\tkeys[%u] = ", j);
			if (b == MB_NULL)
				fputs("NULL", out), len = 3;
			else if (b == MB_EMPTY)
				fputs("\"\"", out), len = 0;
			else
				print_bytes(out, k, len);
			fprintf(out, ";\n\t\tlens[%u] = %zu;\n", j, len);
		}
		fprintf(out, "\t\trc = (int)larder_get_batch(%s, %u, %s, %s, %s, NULL);\n\t}\n", cache,
			o->nbatch, (o->faults & MF_NULL_ARRAY) && (o->vseed & 1) ? "NULL" : "keys",
			(o->faults & MF_NULL_ARRAY) && !(o->vseed & 1) ? "NULL" : "lens",
			(o->faults & MF_NULL_OUT) ? "NULL" : "on_batch");
		break;
	case MOP_ITER:
		fprintf(out, "\t{\n\t\tlarder_iter *it = NULL;\n\t\tint n = 0;\n"
			     "\t\trc = larder_iter_open(%s, &it);\n", cache);
		if (o->faults & MF_NULL_OUT)
			fputs("\t\tif (it)\n\t\t\tprintf(\"  next without fn: %d\\n\", "
			      "larder_iter_next(it, NULL, NULL));\n",
			      out);
		fputs("\t\twhile (it && larder_iter_next(it, on_entry, NULL) == LARDER_OK)\n"
		      "\t\t\tn++;\n\t\tlarder_iter_close(it);\n\t\tif (rc == LARDER_OK)\n"
		      "\t\t\trc = n;\n\t}\n",
		      out);
		break;
	case MOP_SNAPSHOT:
		fprintf(out, "\trc = larder_save(%s, %s); /* the tester then loads and walks it */\n",
			cache, (o->faults & MF_NULL_OUT) ? "NULL" : "\"/tmp/larder-repro.snap\"");
		break;
	case MOP_FLUSH:
		fprintf(out, "\trc = larder_flush(%s, 60000);\n", cache);
		break;
	case MOP_CLEAR:
		fprintf(out, "\trc = larder_clear(%s);\n", cache);
		break;
	case MOP_SET_CAPACITY:
		fprintf(out, "\trc = larder_set_capacity(%s, %" PRIu64 "u);\n", cache, o->arg);
		break;
	case MOP_STATS:
		fprintf(out, "\trc = larder_stats(%s, stats, LARDER_STAT_COUNT);\n", cache);
		break;
	case MOP_CLOCK:
		fprintf(out, "\tnow = %" PRIu64 "u; /* T0 %+" PRId64 " ms */\n", o->arg,
			(int64_t)(o->arg - MK_T0));
		return;
	case MOP_SYNC:
		fputs("\trc = larder__test_quiesce(c, 60000); /* a sync point */\n", out);
		return;
	}
	fprintf(out, "\tprintf(\"op %zu %s: %%d (the model: %d)\\n\", rc);\n", i, mk_kind_name(o->kind),
		t->rc);
}

/* The compression setters of a compressing run, inside the config's chain
 * (a given dictionary comes from dictionary(), printed before main() as
 * model_run.c's dictionary_sample builds it). */
static void print_compression(FILE *out, const struct mcfg *cfg)
{
	static const char *const modes[] = { "LARDER_DICTIONARY_TRAIN", "LARDER_DICTIONARY_GIVEN",
					     "LARDER_DICTIONARY_NONE" };
	int given = cfg->dictionary == LARDER_DICTIONARY_GIVEN;
	if (cfg->compress_min == 0)
		return;
	fprintf(out,
		"\t    larder_config_set_compression(cfg, %zu, %u) != LARDER_OK ||\n"
		"\t    larder_config_set_compression_dictionary(cfg, %s, %s, %d) != LARDER_OK ||\n",
		cfg->compress_min, cfg->compress_saving, modes[cfg->dictionary],
		given ? "dictionary()" : "NULL", given ? MK_DICT_BYTES : 0);
}

void mk_print_repro(FILE *out, const struct mcfg *cfg, const struct mop *ops, size_t n,
		    const struct mfail *f)
{
	struct mtrace *trace = calloc(n ? n : 1, sizeof(*trace));
	struct mfail again;
	if (!trace)
		return;
	mk_run(cfg, ops, n, &again, trace);
	fprintf(out, "/*\n * larder model reproducer (tests/model), seed %#" PRIx64 ", %zu operations.\n",
		cfg->seed, n);
	fprintf(out, " * Failure: %s\n * at operation %ld.\n", f->what, f->op);
	fputs(" * Build: cc -std=c11 -Iinclude repro.c build/default/liblarder.a -lxxhash -llz4 -lzstd -lpthread\n"
	      " */\n",
	      out);
	fputs("#define _POSIX_C_SOURCE 200809L /* nanosleep */\n"
	      "#include <inttypes.h>\n#include <stdio.h>\n#include <string.h>\n#include <time.h>\n\n"
	      "#include \"larder.h\"\n\n"
	      "int larder__test_quiesce(larder *cache, uint64_t timeout_ms); /* liblarder.a's seam */\n\n"
	      "static uint64_t now = 1000000u;\n"
	      "static unsigned char value_buf[(1u << 20) + 8], value_buf2[(1u << 20) + 8];\n"
	      "static unsigned char buf[(1u << 20) + 64];\n\n"
	      "static uint64_t clock_fn(void *ctx)\n{\n\t(void)ctx;\n\treturn now;\n}\n\n"
	      "static unsigned char value_byte(uint32_t seed, size_t i)\n{\n"
	      "\tuint32_t j = (seed & 3) == 0 ? (uint32_t)(i & 15) : (uint32_t)i;\n"
	      "\tuint32_t x = seed * 2654435761u + j * 40503u;\n"
	      "\treturn (unsigned char)(x ^ (x >> 13) ^ (x >> 21));\n}\n\n"
	      "static const void *fill(unsigned char *b, uint32_t seed, size_t n)\n{\n"
	      "\tfor (size_t i = 0; i < n; i++)\n\t\tb[i] = value_byte(seed, i);\n\treturn b;\n}\n"
	      "#define val(seed, n) fill(value_buf, (seed), (n))\n"
	      "#define val2(seed, n) fill(value_buf2, (seed), (n))\n\n"
	      	      "static void on_value(void *ctx, const void *v, size_t n)\n{\n"
	      "\t(void)ctx;\n\t(void)v;\n\tprintf(\"  read %zu bytes\\n\", n);\n}\n\n"
	      "static void on_batch(void *ctx, size_t i, const void *v, size_t n)\n{\n"
	      "\t(void)ctx;\n\t(void)v;\n\tprintf(\"  batch key %zu: %zu bytes\\n\", i, n);\n}\n\n"
	      "static void on_entry(void *ctx, const void *k, size_t kl, const void *v, size_t vl,\n"
	      "\t\t     uint64_t ttl, uint64_t bytes)\n{\n\t(void)ctx;\n\t(void)k;\n\t(void)v;\n"
	      "\tprintf(\"  walk: key of %zu bytes, value of %zu bytes, TTL %\" PRIu64 \", %\" PRIu64\n"
	      "\t       \" entry bytes\\n\", kl, vl, ttl, bytes);\n}\n\n"
	      "static void listener(void *ctx, const void *k, size_t kl, const void *v, size_t vl,\n"
	      "\t\t     enum larder_cause cause)\n{\n\t(void)ctx;\n\t(void)k;\n\t(void)v;\n"
	      "\tprintf(\"  listener: key of %zu bytes, value of %zu bytes, %s\\n\", kl, vl,\n"
	      "\t       larder_cause_name(cause));\n}\n\n",
	      out);
	if (cfg->compress_min > 0 && cfg->dictionary == LARDER_DICTIONARY_GIVEN)
		fprintf(out,
			"static const void *dictionary(void)\n{\n"
			"\tstatic unsigned char d[%d];\n"
			"\tfor (size_t i = 0; i < sizeof(d); i++)\n"
			"\t\td[i] = value_byte((uint32_t)(i / 64) << 2, i);\n\treturn d;\n}\n\n",
			MK_DICT_BYTES);
	fputs("int main(void)\n{\n\tlarder_config *cfg;\n\tlarder *c;\n\tint rc;\n\tsize_t len = 0;\n"
	      "\tuint64_t ttl = 0, stats[LARDER_STAT_COUNT];\n\n"
	      "\t(void)len;\n\t(void)ttl;\n\t(void)stats;\n\t(void)buf;\n",
	      out);
	if (cfg->pooled) {
		/* As model_run.c's pool_create: a static split, one cache, its share exact. */
		uint64_t budget = cfg->capacity < (1u << 20) ? 1u << 20 : cfg->capacity;
		fprintf(out,
			"\tlarder_pool_config *pc;\n\tlarder_pool *pool;\n"
			"\tif (larder_pool_config_create(&pc) != LARDER_OK ||\n"
			"\t    larder_pool_config_set_budget(pc, %" PRIu64 "u) != LARDER_OK ||\n"
			"\t    larder_pool_config_set_interval_ms(pc, 0) != LARDER_OK ||\n"
			"\t    larder_pool_create(&pool, pc) != LARDER_OK)\n\t\treturn 1;\n"
			"\tlarder_pool_config_destroy(pc);\n",
			budget);
		fprintf(out,
			"\tif (larder_config_create(&cfg) != LARDER_OK ||\n"
			"\t    larder_config_set_pool(cfg, pool) != LARDER_OK ||\n"
			"\t    larder_config_set_pool_shares(cfg, %.17g, %.17g) != LARDER_OK ||\n",
			(double)cfg->capacity / (double)budget, (double)cfg->capacity / (double)budget);
	} else {
		fprintf(out,
			"\tif (larder_config_create(&cfg) != LARDER_OK ||\n"
			"\t    larder_config_set_capacity(cfg, %" PRIu64 "u) != LARDER_OK ||\n",
			cfg->capacity);
	}
	fprintf(out,
		"\t    larder_config_set_hash_seed(cfg, %#" PRIx64 "u) != LARDER_OK ||\n"
		"\t    larder_config_set_policy(cfg, LARDER_POLICY_%s) != LARDER_OK ||\n"
		"\t    larder_config_set_expiry(cfg, %s) != LARDER_OK ||\n"
		"\t    larder_config_set_default_ttl_ms(cfg, %" PRIu64 "u) != LARDER_OK ||\n"
		"\t    larder_config_set_max_key_bytes(cfg, %zu) != LARDER_OK ||\n"
		"\t    larder_config_set_max_value_bytes(cfg, %zu) != LARDER_OK ||\n"
		"\t    larder_config_set_write_wait_ms(cfg, %" PRIu64 "u) != LARDER_OK ||\n"
		"\t    larder_config_set_expected_entries(cfg, %" PRIu64 "u) != LARDER_OK ||\n"
		"\t    larder_config_set_shards(cfg, %u) != LARDER_OK ||\n"
		"\t    larder_config_set_clock(cfg, clock_fn, NULL) != LARDER_OK ||\n"
		"\t    larder_config_set_removal_listener(cfg, listener, NULL) != LARDER_OK ||\n",
		cfg->seed, mk_policy_name(cfg->policy),
		cfg->expiry == LARDER_EXPIRE_AFTER_ACCESS ? "LARDER_EXPIRE_AFTER_ACCESS"
							  : "LARDER_EXPIRE_AFTER_WRITE",
		cfg->default_ttl, cfg->max_key, cfg->max_value, cfg->write_wait_ms,
		cfg->expected_entries, cfg->shards);
	print_compression(out, cfg);
	fputs("\t    larder_open(&c, cfg) != LARDER_OK)\n\t\treturn 1;\n"
	      "\tlarder_config_destroy(cfg);\n",
	      out);
	if (cfg->pooled) /* the share comes in the background */
		fprintf(out,
			"\tfor (int i = 0; i < 60000 && (larder_stats(c, stats, LARDER_STAT_COUNT) != 0 ||\n"
			"\t\t\t\t\tstats[LARDER_STAT_CAPACITY_BYTES] != %" PRIu64 "u); i++)\n"
			"\t\tnanosleep(&(struct timespec){ 0, 1000000 }, NULL);\n",
			cfg->capacity);
	fputs("\n", out);
	for (size_t i = 0; i < n; i++)
		print_op(out, cfg, &ops[i], i, &trace[i]);
	fputs("\tlarder__test_quiesce(c, 60000);\n\tlarder_close(c);\n", out);
	if (cfg->pooled)
		fputs("\trc = larder_pool_close(pool);\n", out);
	fputs("\treturn 0;\n}\n", out);
	free(trace);
}
