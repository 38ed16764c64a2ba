/* The session's memo tables (see memo_impl.h): open hashing over string
 * keys (FNV-1a), grown at three quarters full. */
#include "memo_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

typedef struct slot {
	char *key;		/* NULL: empty */
	uint64_t hash;
	void *value;
} slot;

struct fl_memo_map {
	int n, cap;
	slot *slots;
	void (*free_value)(void *value, void *ctx);
	void *ctx;
};

static uint64_t hash_of(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

fl_memo_map *fl_memo_map_new(void (*free_value)(void *value, void *ctx),
			     void *ctx)
{
	fl_memo_map *m = calloc(1, sizeof *m);

	if (!m)
		return NULL;
	m->cap = 64;
	m->slots = calloc((size_t)m->cap, sizeof *m->slots);
	if (!m->slots) {
		free(m);
		return NULL;
	}
	m->free_value = free_value;
	m->ctx = ctx;
	return m;
}

void fl_memo_map_free(fl_memo_map *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->cap; i++)
		if (m->slots[i].key) {
			free(m->slots[i].key);
			m->free_value(m->slots[i].value, m->ctx);
		}
	free(m->slots);
	free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static slot *find(const fl_memo_map *m, const char *key, uint64_t h)
{
	int i = (int)(h & (uint64_t)(m->cap - 1));

	while (m->slots[i].key &&
	       (m->slots[i].hash != h || strcmp(m->slots[i].key, key)))
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

void *fl_memo_map_get(const fl_memo_map *m, const char *key)
{
	slot *s = find(m, key, hash_of(key));

	return s->key ? s->value : NULL;
}

static int grow(fl_memo_map *m)
{
	slot *old = m->slots;
	int old_cap = m->cap;

	m->slots = calloc((size_t)old_cap * 2, sizeof *m->slots);
	if (!m->slots) {
		m->slots = old;
		return -1;
	}
	m->cap = old_cap * 2;
	for (int i = 0; i < old_cap; i++)
		if (old[i].key)
			*find(m, old[i].key, old[i].hash) = old[i];
	free(old);
	return 0;
}

int fl_memo_map_put(fl_memo_map *m, const char *key, void *value)
{
	uint64_t h = hash_of(key);
	slot *s;

	if (4 * (m->n + 1) > 3 * m->cap && grow(m) < 0) {
		m->free_value(value, m->ctx);
		return -1;
	}
	s = find(m, key, h);
	if (s->key) {
		m->free_value(s->value, m->ctx);
		s->value = value;
		return 0;
	}
	s->key = strdup(key);
	if (!s->key) {
		m->free_value(value, m->ctx);
		return -1;
	}
	s->hash = h;
	s->value = value;
	m->n++;
	return 0;
}

int fl_memo_map_count(const fl_memo_map *m)
{
	return m->n;
}

static void free_run(void *value, void *ctx)
{
	(void)ctx;
	fl_run_result_free(value);
	free(value);
}

fl_memo *fl_memo_new(void (*free_build)(void *, void *), void *build_ctx)
{
	fl_memo *m = calloc(1, sizeof *m);

	if (!m)
		return NULL;
	m->layer1 = fl_memo_map_new(fl_l1_memo_entry_free, NULL);
	m->kernel_code = fl_memo_map_new(fl_kernel_code_free, NULL);
	m->builds = fl_memo_map_new(free_build, build_ctx);
	m->runs = fl_memo_map_new(free_run, NULL);
	if (!m->layer1 || !m->kernel_code || !m->builds || !m->runs) {
		fl_memo_free(m);
		return NULL;
	}
	return m;
}

void fl_memo_free(fl_memo *m)
{
	if (!m)
		return;
	fl_memo_map_free(m->layer1);
	fl_memo_map_free(m->kernel_code);
	fl_memo_map_free(m->builds);
	fl_memo_map_free(m->runs);
	fl_values_free(m->ref);
	free(m);
}
