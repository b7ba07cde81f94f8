/*
 * jsongen.c - the value generators of --compress and --codecs: realistic
 * JSON-like documents and random bytes, deterministic in their seed.
 *
 * The JSON generator draws field names from a vocabulary of 40, and values
 * of every kind an API returns (ids, words, e-mail addresses, numbers,
 * timestamps, booleans, a hex id per record, an array of tags); a 4 KiB
 * document is a list of such records, as a page of a search result is. No
 * two values are equal, and nothing repeats but what repeats in real JSON
 * (names, punctuation, common words).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const char *const field_names[] = {
	"user_id",  "session",   "created_at", "updated_at", "email",     "first_name", "last_name",
	"country",  "city",      "zip",        "lat",        "lon",       "score",      "rank",
	"category", "price",     "currency",   "sku",        "title",     "status",     "is_active",
	"verified", "views",     "likes",      "shares",     "device",    "os",         "browser",
	"ip",       "referrer",  "campaign",   "variant",    "locale",    "timezone",   "plan",
	"quota",    "usage",     "region",     "team",       "role",
};

static const char *const words[] = {
	"alpha",   "river",   "stone",  "maple",   "cloud",    "berlin",  "paris",   "tokyo",
	"lisbon",  "oslo",    "austin", "denver",  "premium",  "basic",   "trial",   "active",
	"pending", "closed",  "mobile", "desktop", "tablet",   "android", "ios",     "linux",
	"chrome",  "firefox", "safari", "summer",  "winter",   "launch",  "growth",  "retention",
	"books",   "garden",  "tools",  "kitchen", "outdoor",  "toys",    "music",   "games",
	"red",     "blue",    "green",  "black",   "white",    "small",   "large",   "medium",
	"admin",   "editor",  "viewer", "owner",   "platform", "search",  "billing", "support",
	"eu-west", "us-east", "ap-south", "en-US", "de-DE",    "fr-FR",   "ja-JP",   "pt-BR",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct gen {
	uint64_t s;
	char *out;
	size_t len, cap;
};

static uint64_t gen_next(struct gen *g)
{
	g->s += 0x9e3779b97f4a7c15ull;
	return lb_mix(g->s);
}

static void put_str(struct gen *g, const char *s)
{
	size_t n = strlen(s);
	if (g->len + n <= g->cap)
		memcpy(g->out + g->len, s, n);
	g->len += n;
}

/* One field's value, of a kind that suits its name's position. */
static void put_value(struct gen *g, unsigned kind)
{
	char tmp[96];
	uint64_t r = gen_next(g);
	switch (kind % 9) {
	case 0: snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)(r % 10000000)); break;
	case 1: snprintf(tmp, sizeof(tmp), "\"%s %s\"", words[r % COUNT(words)],
			 words[(r >> 8) % COUNT(words)]); break;
	case 2: snprintf(tmp, sizeof(tmp), "\"%s.%s%llu@example.com\"", words[r % COUNT(words)],
			 words[(r >> 8) % COUNT(words)], (unsigned long long)((r >> 16) % 1000)); break;
	case 3: snprintf(tmp, sizeof(tmp), "%llu.%02llu", (unsigned long long)(r % 1000),
			 (unsigned long long)((r >> 20) % 100)); break;
	case 4: snprintf(tmp, sizeof(tmp), "\"2026-%02llu-%02lluT%02llu:%02llu:%02lluZ\"",
			 (unsigned long long)(r % 12 + 1), (unsigned long long)((r >> 8) % 28 + 1),
			 (unsigned long long)((r >> 16) % 24), (unsigned long long)((r >> 24) % 60),
			 (unsigned long long)((r >> 32) % 60)); break;
	case 5: snprintf(tmp, sizeof(tmp), "%s", r & 1 ? "true" : "false"); break;
	case 6: snprintf(tmp, sizeof(tmp), "\"%016llx\"", (unsigned long long)gen_next(g)); break;
	case 7: snprintf(tmp, sizeof(tmp), "[\"%s\",\"%s\",\"%s\"]", words[r % COUNT(words)],
			 words[(r >> 8) % COUNT(words)], words[(r >> 16) % COUNT(words)]); break;
	default: snprintf(tmp, sizeof(tmp), "\"%llu.%llu.%llu.%llu\"",
			  (unsigned long long)(r & 255), (unsigned long long)((r >> 8) & 255),
			  (unsigned long long)((r >> 16) & 255), (unsigned long long)((r >> 24) & 255));
	}
	put_str(g, tmp);
}

/* One record: an id, then 5..12 fields of the vocabulary, in a random order. */
static void put_record(struct gen *g)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "{\"id\":%llu", (unsigned long long)(gen_next(g) % 100000000));
	put_str(g, tmp);
	unsigned fields = 5 + (unsigned)(gen_next(g) % 8);
	for (unsigned f = 0; f < fields; f++) {
		unsigned name = (unsigned)(gen_next(g) % COUNT(field_names));
		snprintf(tmp, sizeof(tmp), ",\"%s\":", field_names[name]);
		put_str(g, tmp);
		put_value(g, name);
	}
	put_str(g, "}");
}

/*
 * A JSON-like document of exactly len bytes (len >= 64): records in a list
 * until the next would not fit, then a "note" string of words that fills
 * the rest exactly.
 */
void lb_json_value(uint8_t *out, size_t len, uint64_t seed)
{
	struct gen g = { lb_mix(seed ^ 0x4a534f4eull), (char *)out, 0, len };
	char rec[1024];
	put_str(&g, "{\"items\":[");
	for (int first = 1;; first = 0) {
		struct gen probe = { g.s, rec, 0, sizeof(rec) };
		if (!first)
			put_str(&probe, ",");
		put_record(&probe);
		if (g.len + probe.len + 16 > len || probe.len > sizeof(rec))
			break;
		memcpy(out + g.len, rec, probe.len);
		g.len += probe.len;
		g.s = probe.s;
	}
	put_str(&g, "],\"note\":\"");
	while (g.len < len - 2) {
		const char *w = words[gen_next(&g) % COUNT(words)];
		size_t n = strlen(w);
		if (g.len + n + 1 > len - 2)
			n = len - 2 - g.len - 1;
		memcpy(out + g.len, w, n);
		g.len += n;
		out[g.len++] = ' ';
	}
	out[len - 2] = '"';
	out[len - 1] = '}';
}

void lb_random_value(uint8_t *out, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t r = lb_mix(seed * 0x100000001b3ull + i);
		memcpy(out + i, &r, len - i < 8 ? len - i : 8);
	}
}

