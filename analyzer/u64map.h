/* An open-addressing hash map from 64-bit keys to fixed-size values, with deletion; the
 * analyzer's live-block and per-stack tables. Memory grows with the entries, not the events.
 *
 * Every 64-bit key is accepted (0 and UINT64_MAX included). Keys are placed by a
 * splitmix64-style mix of key ^ seed, the seed drawn at random once per process and varied
 * per map, so keys a hostile trace chose to collide do not turn probing quadratic. Iteration
 * order is therefore unspecified and differs between runs: sort what you print. */
#ifndef PROF_U64MAP_H
#define PROF_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;  /* cap slots; 0 = empty (key 0 itself lives in the extra value slot) */
	char *vals;      /* cap + 1 values: vals[cap] is key 0's */
	size_t vsize, cap, count;  /* count includes key 0 when present */
	uint64_t seed;
	int has_zero;
};

/* The splitmix64 finalizer: every input bit reaches every output bit. The analyzer's hash
 * tables place keys with it. */
static inline uint64_t u64_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* A string's key for these tables (FNV-1a): callers compare the strings where two collide. */
static inline uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* A seed drawn at random once per process: tables keyed by what a trace holds mix it in, so
 * keys a hostile trace chose to collide do not turn probing quadratic. */
uint64_t u64_seed(void);

void u64map_init(struct u64map *m, size_t vsize);
void u64map_free(struct u64map *m);
/* The value of key, or NULL. */
void *u64map_get(const struct u64map *m, uint64_t key);
/* The value of key, inserted zeroed if absent (*created set then); NULL if out of memory.
 * Pointers into the map are valid until the next insertion or deletion. */
void *u64map_put(struct u64map *m, uint64_t key, int *created);
/* Removes key; copies its value to out (if non-NULL). Returns 1 if it was there. */
int u64map_del(struct u64map *m, uint64_t key, void *out);
/* Iteration: for (size_t i = 0; u64map_next(m, &i, &key, &val); ). Deleting or inserting
 * during an iteration is not supported. */
int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, void **val);

#endif
