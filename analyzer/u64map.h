/* An open-addressing hash map from 64-bit keys to fixed-size values, with deletion; the
 * analyzer's live-block and per-stack tables. Memory grows with the entries, not the events. */
#ifndef PROF_U64MAP_H
#define PROF_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;  /* stored as key+1; 0 = empty slot */
	char *vals;
	size_t vsize, cap, count;
};

void u64map_init(struct u64map *m, size_t vsize);
void u64map_free(struct u64map *m);
/* The value of key, or NULL. */
void *u64map_get(const struct u64map *m, uint64_t key);
/* The value of key, inserted zeroed if absent (*created set then); NULL if out of memory.
 * Pointers into the map are valid until the next insertion or deletion. */
void *u64map_put(struct u64map *m, uint64_t key, int *created);
/* Removes key; copies its value to out (if non-NULL). Returns 1 if it was there. */
int u64map_del(struct u64map *m, uint64_t key, void *out);
/* Iteration: for (size_t i = 0; u64map_next(m, &i, &key, &val); ) */
int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, void **val);

#endif
