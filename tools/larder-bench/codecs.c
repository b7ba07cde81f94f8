/*
 * codecs.c - --codecs: the candidate value codecs alone, on the JSON-like
 * sets of --compress, so the engine's codec is chosen by a measurement.
 *
 * For each set (200 B, 500 B, 4 KiB documents; --entries values, default
 * 50,000, a third of that for 4 KiB) a dictionary of CD_DICT_BYTES is
 * trained by ZDICT (libzstd) from the set's first values, up to
 * CD_SAMPLE_BYTES of them, as a cache would train one from its first
 * writes. Every codec is then measured on the values after the sample (none
 * it was trained on), each value compressed alone, as a cache stores it:
 *   lz4          LZ4 block, a kept stream reset per value (what the engine did)
 *   lz4+dict     LZ4 block against the dictionary's bytes: a stream with the
 *                dictionary loaded once is copied per value (liblz4's .so
 *                does not export LZ4_attach_dictionary), decoded with
 *                LZ4_decompress_safe_usingDict
 *   zstd-N       zstd level N (1..3), one kept context, frames without magic
 *                number, content size, dictionary id or checksum (the cache
 *                keeps the length itself)
 *   zstd-N+dict  the same against the trained dictionary (a CDict of level
 *                N and a DDict, both built once)
 *   zstd-1+d,rawlit  zstd-1+dict with its literals stored rather than
 *                Huffman-coded (ZSTD_c_literalCompressionMode): larger, and
 *                no Huffman decoding on reads
 * Figures per codec, per round (--rounds after --warmup): compressed bytes
 * per value (the ratio original / compressed), ns to compress and to
 * decompress one value; a memcpy of each value is timed in the same round
 * as the floor a raw read pays. Every value is decompressed and compared
 * after the timed passes (untimed); a mismatch ends the run with an error.
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that a
 * shared, loaded machine's descheduling does not count; what other
 * processes do to the caches still does. Printed: medians (min..max) over
 * the rounds, one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_format / ZSTD_d_format: magicless frames */
#include <lz4.h>
#include <zdict.h>
#include <zstd.h>

#include "bench.h"

#define CD_DEFAULT_ENTRIES 50000u
#define CD_DICT_BYTES (16u << 10)
#define CD_SAMPLE_BYTES (256u << 10)
#define CD_MAX_ROUNDS 64u

enum cd_kind { CD_LZ4, CD_LZ4_DICT, CD_ZSTD, CD_ZSTD_DICT };

struct cd_codec {
	const char *name;
	enum cd_kind kind;
	int level;
	int raw_literals; /* zstd: literals stored, not Huffman-coded */
};

static const struct cd_codec codecs[] = {
	{ "lz4", CD_LZ4, 0, 0 },
	{ "lz4+dict", CD_LZ4_DICT, 0, 0 },
	{ "zstd-1", CD_ZSTD, 1, 0 },
	{ "zstd-2", CD_ZSTD, 2, 0 },
	{ "zstd-3", CD_ZSTD, 3, 0 },
	{ "zstd-1+dict", CD_ZSTD_DICT, 1, 0 },
	{ "zstd-2+dict", CD_ZSTD_DICT, 2, 0 },
	{ "zstd-3+dict", CD_ZSTD_DICT, 3, 0 },
	{ "zstd-1+d,rawlit", CD_ZSTD_DICT, 1, 1 },
};
#define CD_CODECS (sizeof(codecs) / sizeof(codecs[0]))

/* One codec's state for one set. */
struct cd_state {
	const struct cd_codec *codec;
	const void *dict;
	size_t dict_len;
	LZ4_stream_t *stream, *dict_stream;
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	ZSTD_CDict *cdict;
	ZSTD_DDict *ddict;
};

static int state_open(struct cd_state *s, const struct cd_codec *codec, const void *dict,
		      size_t dict_len)
{
	memset(s, 0, sizeof(*s));
	s->codec = codec;
	s->dict = dict;
	s->dict_len = dict_len;
	switch (codec->kind) {
	case CD_LZ4:
	case CD_LZ4_DICT:
		s->stream = LZ4_createStream();
		s->dict_stream = LZ4_createStream();
		if (!s->stream || !s->dict_stream)
			return -1;
		if (codec->kind == CD_LZ4_DICT)
			LZ4_loadDict(s->dict_stream, dict, (int)dict_len);
		return 0;
	case CD_ZSTD:
	case CD_ZSTD_DICT:
		s->cctx = ZSTD_createCCtx();
		s->dctx = ZSTD_createDCtx();
		if (!s->cctx || !s->dctx)
			return -1;
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, codec->level);
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_format, ZSTD_f_zstd1_magicless);
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_contentSizeFlag, 0);
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_checksumFlag, 0);
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_dictIDFlag, 0);
		if (codec->raw_literals)
			ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_literalCompressionMode,
					       ZSTD_ps_disable);
		ZSTD_DCtx_setParameter(s->dctx, ZSTD_d_format, ZSTD_f_zstd1_magicless);
		if (codec->kind == CD_ZSTD_DICT) {
			s->cdict = ZSTD_createCDict(dict, dict_len, codec->level);
			s->ddict = ZSTD_createDDict(dict, dict_len);
			if (!s->cdict || !s->ddict)
				return -1;
			ZSTD_CCtx_refCDict(s->cctx, s->cdict);
			ZSTD_DCtx_refDDict(s->dctx, s->ddict);
		}
		return 0;
	}
	return -1;
}

static void state_close(struct cd_state *s)
{
	LZ4_freeStream(s->stream);
	LZ4_freeStream(s->dict_stream);
	ZSTD_freeCCtx(s->cctx);
	ZSTD_freeDCtx(s->dctx);
	ZSTD_freeCDict(s->cdict);
	ZSTD_freeDDict(s->ddict);
}

/* Compressed length (0: did not fit in cap). */
static size_t cd_pack(struct cd_state *s, const void *src, size_t len, void *dst, size_t cap)
{
	int n;
	size_t z;
	switch (s->codec->kind) {
	case CD_LZ4:
		LZ4_resetStream_fast(s->stream);
		n = LZ4_compress_fast_continue(s->stream, src, dst, (int)len, (int)cap, 1);
		return n > 0 ? (size_t)n : 0;
	case CD_LZ4_DICT:
		memcpy(s->stream, s->dict_stream, sizeof(*s->stream));
		n = LZ4_compress_fast_continue(s->stream, src, dst, (int)len, (int)cap, 1);
		return n > 0 ? (size_t)n : 0;
	default:
		z = ZSTD_compress2(s->cctx, dst, cap, src, len);
		return ZSTD_isError(z) ? 0 : z;
	}
}

/* Decompressed length, or (size_t)-1 on a corrupt block. */
static size_t cd_unpack(struct cd_state *s, const void *src, size_t clen, void *dst, size_t cap)
{
	int n;
	size_t z;
	switch (s->codec->kind) {
	case CD_LZ4:
		n = LZ4_decompress_safe(src, dst, (int)clen, (int)cap);
		return n >= 0 ? (size_t)n : (size_t)-1;
	case CD_LZ4_DICT:
		n = LZ4_decompress_safe_usingDict(src, dst, (int)clen, (int)cap, s->dict,
						  (int)s->dict_len);
		return n >= 0 ? (size_t)n : (size_t)-1;
	default:
		z = ZSTD_decompressDCtx(s->dctx, dst, cap, src, clen);
		return ZSTD_isError(z) ? (size_t)-1 : z;
	}
}

struct cd_set {
	const char *name;
	size_t value_bytes;
	unsigned entries_div;
};

static const struct cd_set sets[] = {
	{ "json 200 B", 200, 1 },
	{ "json 500 B", 500, 1 },
	{ "json 4 KiB", 4096, 3 },
};

static void print_fig(const char *what, double *v, unsigned rounds)
{
	double m = lb_median(v, rounds); /* sorts v */
	printf("  %s %8.1f (%.1f..%.1f)", what, m, v[0], v[rounds - 1]);
}

static int run_set(const struct lb_config *cfg, const struct cd_set *set, uint64_t base,
		   unsigned rounds)
{
	uint64_t n = base / set->entries_div;
	size_t vb = set->value_bytes, cap = ZSTD_compressBound(vb) + 64;
	uint8_t *values = malloc(n * vb), *packed = malloc(n * cap), *out = malloc(vb);
	size_t *plen = malloc(n * sizeof(*plen)), *sizes = malloc(n * sizeof(*sizes));
	void *dict = malloc(CD_DICT_BYTES);
	int rc = -1;
	if (!values || !packed || !out || !plen || !sizes || !dict)
		goto out;
	for (uint64_t i = 0; i < n; i++)
		lb_json_value(values + i * vb, vb, cfg->seed * 1000003 + i);
	uint64_t sample = CD_SAMPLE_BYTES / vb;
	for (uint64_t i = 0; i < sample; i++)
		sizes[i] = vb;
	uint64_t t0 = lb_thread_cpu_ns();
	size_t dict_len = ZDICT_trainFromBuffer(dict, CD_DICT_BYTES, values, sizes, (unsigned)sample);
	uint64_t train_ns = lb_thread_cpu_ns() - t0;
	if (ZDICT_isError(dict_len)) {
		fprintf(stderr, "larder-bench --codecs: ZDICT: %s\n", ZDICT_getErrorName(dict_len));
		goto out;
	}
	const uint8_t *test = values + sample * vb;
	uint64_t m = n - sample;
	printf("\n%s: dictionary %zu B trained in %.1f ms from the first %llu values (%llu B);"
	       " measured on the next %llu\n",
	       set->name, dict_len, (double)train_ns / 1e6, (unsigned long long)sample,
	       (unsigned long long)(sample * vb), (unsigned long long)m);
	double copy_ns[CD_MAX_ROUNDS];
	for (unsigned r = 0; r < cfg->warmup_rounds + rounds; r++) {
		uint64_t sink = 0, c0 = lb_thread_cpu_ns();
		for (uint64_t i = 0; i < m; i++) {
			memcpy(out, test + i * vb, vb);
			sink += out[i % vb];
		}
		uint64_t c1 = lb_thread_cpu_ns();
		if (sink == 1) /* never (bytes are printable): keeps the copies */
			printf(" ");
		if (r >= cfg->warmup_rounds)
			copy_ns[r - cfg->warmup_rounds] = (double)(c1 - c0) / (double)m;
	}
	print_fig("memcpy of a value, ns:", copy_ns, rounds);
	printf("\n  %-16s %9s %7s   %-28s %-28s\n", "codec", "bytes", "ratio", "compress ns",
	       "decompress ns");
	for (size_t k = 0; k < CD_CODECS; k++) {
		struct cd_state s;
		double pack_ns[CD_MAX_ROUNDS], unpack_ns[CD_MAX_ROUNDS];
		uint64_t total = 0;
		if (state_open(&s, &codecs[k], dict, dict_len) != 0) {
			state_close(&s);
			fprintf(stderr, "larder-bench --codecs: out of memory\n");
			goto out;
		}
		for (unsigned r = 0; r < cfg->warmup_rounds + rounds; r++) {
			uint64_t a = lb_thread_cpu_ns();
			total = 0;
			for (uint64_t i = 0; i < m; i++) {
				plen[i] = cd_pack(&s, test + i * vb, vb, packed + i * cap, cap);
				total += plen[i];
			}
			uint64_t b = lb_thread_cpu_ns();
			uint64_t sink = 0;
			for (uint64_t i = 0; i < m; i++)
				sink += cd_unpack(&s, packed + i * cap, plen[i], out, vb);
			uint64_t c = lb_thread_cpu_ns();
			if (sink != m * vb)
				goto corrupt;
			if (r >= cfg->warmup_rounds) {
				pack_ns[r - cfg->warmup_rounds] = (double)(b - a) / (double)m;
				unpack_ns[r - cfg->warmup_rounds] = (double)(c - b) / (double)m;
			}
		}
		for (uint64_t i = 0; i < m; i++) { /* untimed: every value comes back whole */
			if (!plen[i] || cd_unpack(&s, packed + i * cap, plen[i], out, vb) != vb ||
			    memcmp(out, test + i * vb, vb) != 0)
				goto corrupt;
		}
		double avg = (double)total / (double)m;
		printf("  %-16s %9.1f %6.2fx", codecs[k].name, avg, (double)vb / avg);
		print_fig("", pack_ns, rounds);
		print_fig("", unpack_ns, rounds);
		printf("\n");
		state_close(&s);
		continue;
	corrupt:
		state_close(&s);
		fprintf(stderr, "larder-bench --codecs: %s read a value back wrong\n",
			codecs[k].name);
		goto out;
	}
	rc = 0;
out:
	free(values);
	free(packed);
	free(out);
	free(plen);
	free(sizes);
	free(dict);
	return rc;
}

int lb_codecs_run(const struct lb_config *cfg)
{
	uint64_t base = cfg->entries_given ? cfg->entries : CD_DEFAULT_ENTRIES;
	unsigned rounds = cfg->rounds < CD_MAX_ROUNDS ? cfg->rounds : CD_MAX_ROUNDS;
	printf("larder-bench --codecs: each value compressed alone; dictionary %u B by ZDICT from"
	       " the first %u B of a set; %u rounds after %u warm-up; one thread; medians"
	       " (min..max) of thread CPU time; liblz4 %s, libzstd %s\n",
	       CD_DICT_BYTES, CD_SAMPLE_BYTES, rounds, cfg->warmup_rounds, LZ4_versionString(),
	       ZSTD_versionString());
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		if (base / sets[s].entries_div <= CD_SAMPLE_BYTES / sets[s].value_bytes) {
			fprintf(stderr, "larder-bench --codecs: --entries too small for the sample\n");
			return -1;
		}
		if (run_set(cfg, &sets[s], base, rounds) != 0)
			return -1;
	}
	return 0;
}
