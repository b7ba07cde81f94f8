/*
 * evict/tuner.h - picks W-TinyLFU's window size by simulating several window
 * sizes on a sample of the keys (see tuner.c). Used by the adaptive default.
 */
#ifndef LARDER_EVICT_TUNER_H
#define LARDER_EVICT_TUNER_H

#include <stdint.h>

struct larder__tuner;

/* Returns 0, or -1 when memory was refused (the caller then runs untuned). */
int larder__tuner_create(struct larder__tuner **out, uint64_t capacity_bytes,
			 uint64_t expected_entries);
void larder__tuner_destroy(struct larder__tuner *t);
/* One request of a key (a miss or a delivered hit of the real cache). */
void larder__tuner_access(struct larder__tuner *t, uint64_t hash, uint64_t bytes);
/* The window size, in thousandths of capacity, that wins lately. */
unsigned larder__tuner_window_permille(const struct larder__tuner *t);
void larder__tuner_set_capacity(struct larder__tuner *t, uint64_t capacity_bytes);

#endif /* LARDER_EVICT_TUNER_H */
