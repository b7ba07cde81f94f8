/*
 * core/thread.c - creation and exit of per-thread state; the live-cache registry.
 * Design and invariants: core/thread.h.
 */
#include "core/thread.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/compress.h"

__thread struct larder__thread *larder__tls __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_error;

struct live_cache {
	uint64_t id;
	struct larder *cache;
	struct live_cache *next;
};

/* THREAD-T4: the states of exited threads, for the next ones. */
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static struct larder__thread *idle_states; /* under idle_lock */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_cache *live_caches; /* under live_lock */
static uint64_t next_cache_id = 1;     /* under live_lock; 0 marks an empty recent[] slot */

/*
 * THREAD-T4: kept, not freed, for polls may still read its reader slot.
 * Every field but the slot is cleared for the next thread; the slot is
 * left alone (polls read it concurrently, and it is 0: a thread exits
 * outside every section).
 */
static void idle_give(struct larder__thread *t)
{
	_Static_assert(offsetof(struct larder__thread, reader) == 0, "the slot comes first");
	memset((char *)t + sizeof(t->reader), 0, sizeof(*t) - sizeof(t->reader));
	pthread_mutex_lock(&idle_lock);
	t->next_idle = idle_states;
	idle_states = t;
	pthread_mutex_unlock(&idle_lock);
}

/* An exited thread's state, cleared by idle_give(); else a new one, whose
 * slot is registered for good. NULL when out of memory. */
static struct larder__thread *idle_take(void)
{
	pthread_mutex_lock(&idle_lock);
	struct larder__thread *t = idle_states;
	if (t) {
		idle_states = t->next_idle;
		t->next_idle = NULL;
	}
	pthread_mutex_unlock(&idle_lock);
	if (t)
		return t;
	t = larder__aligned_alloc(64, sizeof(*t));
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	if (!larder__reader_register(&t->reader)) {
		free(t); /* never registered: no poll can read it */
		return NULL;
	}
	return t;
}

static void thread_exit(void *arg)
{
	struct larder__thread *t = arg;
	larder__tls = NULL;
	pthread_mutex_lock(&live_lock);
	while (t->nodes) {
		struct larder__thread_node *n = t->nodes;
		t->nodes = n->next;
		for (struct live_cache *c = live_caches; c; c = c->next) {
			if (c->id == n->cache_id) {
				larder__cache_orphan_handles(c->cache, n->handles);
				break;
			}
		}
		free(n);
	}
	pthread_mutex_unlock(&live_lock);
	for (int i = 0; i < LARDER__SCRATCH_SLOTS; i++)
		free(t->scratch[i].buf);
	larder__codec_thread_free(t);
	idle_give(t);
}

static void exit_key_create(void)
{
	exit_key_error = pthread_key_create(&exit_key, thread_exit);
}

struct larder__thread *larder__thread_create(void)
{
	if (pthread_once(&exit_key_once, exit_key_create) != 0 || exit_key_error != 0)
		return NULL;
	struct larder__thread *t = idle_take();
	if (!t)
		return NULL;
	if (pthread_setspecific(exit_key, t) != 0) {
		idle_give(t);
		return NULL;
	}
	larder__tls = t;
	return t;
}

static int cache_id_live_locked(uint64_t id)
{
	for (struct live_cache *c = live_caches; c; c = c->next) {
		if (c->id == id)
			return 1;
	}
	return 0;
}

/* Forgets the nodes of closed caches (their handles were freed by close). */
static void prune_nodes(struct larder__thread *t)
{
	pthread_mutex_lock(&live_lock);
	for (struct larder__thread_node **p = &t->nodes; *p;) {
		struct larder__thread_node *n = *p;
		if (cache_id_live_locked(n->cache_id)) {
			p = &n->next;
			continue;
		}
		*p = n->next;
		unsigned i = (unsigned)n->cache_id & (LARDER__RECENT_SLOTS - 1);
		if (t->recent[i].cache_id == n->cache_id)
			t->recent[i].cache_id = 0;
		if (t->last_id == n->cache_id)
			t->last_id = 0;
		free(n);
	}
	pthread_mutex_unlock(&live_lock);
}

/* Makes handles (the cache's node's) the thread's last ones. */
static struct larder__handle *const *set_last(struct larder__thread *t, struct larder *cache,
					     uint64_t cache_id, struct larder__handle *const *handles)
{
	t->last_id = cache_id;
	t->last_handles = handles;
	memcpy(t->last_handle, handles, cache->shard_count * sizeof(handles[0]));
	return handles;
}

struct larder__handle *const *larder__thread_handles_slow(struct larder__thread *t,
							  struct larder *cache, uint64_t cache_id)
{
	unsigned i = (unsigned)cache_id & (LARDER__RECENT_SLOTS - 1);
	if (t->recent[i].cache_id == cache_id)
		return set_last(t, cache, cache_id, t->recent[i].handles);
	struct larder__thread_node *n;
	for (n = t->nodes; n; n = n->next) {
		if (n->cache_id == cache_id)
			break;
	}
	if (!n) {
		prune_nodes(t);
		n = larder__malloc(sizeof(*n) + cache->shard_count * sizeof(n->handles[0]));
		if (!n)
			return NULL;
		if (larder__cache_handles_create(cache, n->handles) != 0) {
			free(n);
			return NULL;
		}
		n->cache_id = cache_id;
		n->next = t->nodes;
		t->nodes = n;
	}
	t->recent[i].cache_id = cache_id;
	t->recent[i].handles = n->handles;
	return set_last(t, cache, cache_id, n->handles);
}

uint64_t larder__cache_id_register(struct larder *cache)
{
	struct live_cache *c = larder__malloc(sizeof(*c));
	if (!c)
		return 0;
	pthread_mutex_lock(&live_lock);
	c->id = next_cache_id++;
	c->cache = cache;
	c->next = live_caches;
	live_caches = c;
	pthread_mutex_unlock(&live_lock);
	return c->id;
}

void larder__cache_id_unregister(uint64_t cache_id)
{
	pthread_mutex_lock(&live_lock);
	for (struct live_cache **p = &live_caches; *p; p = &(*p)->next) {
		if ((*p)->id == cache_id) {
			struct live_cache *c = *p;
			*p = c->next;
			free(c);
			break;
		}
	}
	pthread_mutex_unlock(&live_lock);
}

unsigned char *larder__scratch_take(size_t bytes)
{
	struct larder__thread *t = larder__thread_self();
	if (!t)
		return NULL;
	size_t want = bytes ? bytes : 1;
	if (want <= LARDER__SCRATCH_KEEP_BYTES) {
		for (int i = 0; i < LARDER__SCRATCH_SLOTS; i++) {
			struct larder__scratch *s = &t->scratch[i];
			if (s->busy)
				continue;
			if (s->cap < want) {
				/* Grown by doubling from 4 KiB, to the keep limit:
				 * a few growths per thread, never a copy. */
				size_t cap = s->cap ? s->cap : 4096;
				while (cap < want)
					cap *= 2;
				if (cap > LARDER__SCRATCH_KEEP_BYTES)
					cap = LARDER__SCRATCH_KEEP_BYTES;
				unsigned char *b = larder__malloc(cap);
				if (!b)
					return NULL;
				free(s->buf);
				s->buf = b;
				s->cap = cap;
			}
			s->busy = 1;
			return s->buf;
		}
	}
	return larder__malloc(want);
}

void larder__scratch_give(unsigned char *buf)
{
	if (!buf)
		return;
	struct larder__thread *t = larder__tls;
	for (int i = 0; i < LARDER__SCRATCH_SLOTS; i++) {
		if (t->scratch[i].buf == buf && t->scratch[i].busy) {
			t->scratch[i].busy = 0;
			return;
		}
	}
	free(buf);
}
