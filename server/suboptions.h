/*
 * suboptions.h - larderd's -o: memcached 1.6.18's suboptions, read and
 * checked as memcached reads them (server/suboptions.c).
 */
#ifndef LARDERD_SUBOPTIONS_H
#define LARDERD_SUBOPTIONS_H

/* What the -o options given so far add up to (memcached's cross-checks). */
struct larderd_subopts {
	int hot_lru_pct;  /* memcached's defaults: 20 and 40 */
	int warm_lru_pct;
};

#define LARDERD_SUBOPTS_INIT {.hot_lru_pct = 20, .warm_lru_pct = 40}

/* One -o argument (a comma-separated list): 0, or the exit status, the
 * reason written to stderr. */
int larderd_subopts_parse(struct larderd_subopts *s, const char *arg);

/* After every option: memcached's checks across suboptions. 0 or the exit status. */
int larderd_subopts_finish(const struct larderd_subopts *s);

#endif
