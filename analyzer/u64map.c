/* Linear probing with backward-shift deletion (no tombstones), power-of-two capacity. */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t stored, size_t cap)
{
	uint64_t h = stored * 0x9e3779b97f4a7c15ull;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

void u64map_init(struct u64map *m, size_t vsize)
{
	memset(m, 0, sizeof(*m));
	m->vsize = vsize;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
}

static size_t find(const struct u64map *m, uint64_t stored)
{
	size_t i = slot_of(stored, m->cap);
	while (m->keys[i] && m->keys[i] != stored)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = find(m, key + 1);
	return m->keys[i] ? m->vals + i * m->vsize : NULL;
}

static int grow(struct u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	char *vals = malloc(ncap * m->vsize);
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
	free(old.keys);
	free(old.vals);
	return 0;
}

void *u64map_put(struct u64map *m, uint64_t key, int *created)
{
	if ((m->count + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return NULL;
	size_t i = find(m, key + 1);
	void *v = m->vals + i * m->vsize;
	if (created)
		*created = !m->keys[i];
	if (!m->keys[i]) {
		m->keys[i] = key + 1;
		memset(v, 0, m->vsize);
		m->count++;
	}
	return v;
}

int u64map_del(struct u64map *m, uint64_t key, void *out)
{
	if (!m->cap)
		return 0;
	size_t i = find(m, key + 1);
	if (!m->keys[i])
		return 0;
	if (out)
		memcpy(out, m->vals + i * m->vsize, m->vsize);
	/* Shift later members of the probe run back, so lookups never stop early. */
	size_t j = i;
	for (;;) {
		j = (j + 1) & (m->cap - 1);
		if (!m->keys[j])
			break;
		size_t home = slot_of(m->keys[j], m->cap);
		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->keys[i] = m->keys[j];
			memcpy(m->vals + i * m->vsize, m->vals + j * m->vsize, m->vsize);
			i = j;
		}
	}
	m->keys[i] = 0;
	m->count--;
	return 1;
}

int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, void **val)
{
	for (; *pos < m->cap; (*pos)++) {
		if (!m->keys[*pos])
			continue;
		*key = m->keys[*pos] - 1;
		*val = m->vals + *pos * m->vsize;
		(*pos)++;
		return 1;
	}
	return 0;
}
