/* Linear probing with backward-shift deletion (no tombstones), power-of-two capacity. */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static inline size_t slot_of(const struct u64map *m, uint64_t key)
{
	return (size_t)u64_mix(key ^ m->seed) & (m->cap - 1);
}

/* Each map mixes in its own address too. */
uint64_t u64_seed(void)
{
	static uint64_t seed;
	static int have;
	if (!have) {
		uint64_t s = 0;
		if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid();
		}
		seed = u64_mix(s + 0x9e3779b97f4a7c15ull);
		have = 1;
	}
	return seed;
}

void u64map_init(struct u64map *m, size_t vsize)
{
	memset(m, 0, sizeof(*m));
	m->vsize = vsize;
	m->seed = u64_mix(u64_seed() ^ (uint64_t)(uintptr_t)m);
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
	m->has_zero = 0;
}

/* The slot holding key (non-zero), or the empty slot where it would go. */
static inline size_t find(const struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = slot_of(m, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	if (!key)
		return m->has_zero ? m->vals + m->cap * m->vsize : NULL;
	size_t i = find(m, key);
	return m->keys[i] ? m->vals + i * m->vsize : NULL;
}

static int grow(struct u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	char *vals = malloc((ncap + 1) * m->vsize);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	struct u64map old = *m;
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.keys[i])
			continue;
		size_t j = find(m, old.keys[i]);
		m->keys[j] = old.keys[i];
		memcpy(m->vals + j * m->vsize, old.vals + i * m->vsize, m->vsize);
	}
	if (old.has_zero)
		memcpy(m->vals + ncap * m->vsize, old.vals + old.cap * m->vsize, m->vsize);
	free(old.keys);
	free(old.vals);
	return 0;
}

void *u64map_put(struct u64map *m, uint64_t key, int *created)
{
	if ((m->count + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return NULL;
	if (!key) {
		void *v = m->vals + m->cap * m->vsize;
		if (created)
			*created = !m->has_zero;
		if (!m->has_zero) {
			m->has_zero = 1;
			memset(v, 0, m->vsize);
			m->count++;
		}
		return v;
	}
	size_t i = find(m, key);
	void *v = m->vals + i * m->vsize;
	if (created)
		*created = !m->keys[i];
	if (!m->keys[i]) {
		m->keys[i] = key;
		memset(v, 0, m->vsize);
		m->count++;
	}
	return v;
}

int u64map_del(struct u64map *m, uint64_t key, void *out)
{
	if (!m->cap)
		return 0;
	if (!key) {
		if (!m->has_zero)
			return 0;
		if (out)
			memcpy(out, m->vals + m->cap * m->vsize, m->vsize);
		m->has_zero = 0;
		m->count--;
		return 1;
	}
	size_t i = find(m, key);
	if (!m->keys[i])
		return 0;
	if (out)
		memcpy(out, m->vals + i * m->vsize, m->vsize);
	/* Shift later members of the probe run back, so lookups never stop early. */
	size_t mask = m->cap - 1, j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		size_t home = slot_of(m, m->keys[j]);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			memcpy(m->vals + i * m->vsize, m->vals + j * m->vsize, m->vsize);
			i = j;
		}
	}
	m->keys[i] = 0;
	m->count--;
	return 1;
}

/* Slots 0..cap-1, then position cap for key 0. */
int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, void **val)
{
	for (; *pos < m->cap; (*pos)++) {
		if (!m->keys[*pos])
			continue;
		*key = m->keys[*pos];
		*val = m->vals + *pos * m->vsize;
		(*pos)++;
		return 1;
	}
	if (*pos == m->cap && m->has_zero) {
		*key = 0;
		*val = m->vals + m->cap * m->vsize;
		(*pos)++;
		return 1;
	}
	return 0;
}
