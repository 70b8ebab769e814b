/* u64map against a reference: every key (0 and UINT64_MAX included), put/get/del/iterate
 * over many random operations with growth, and keys that would collide under a plain
 * multiplicative hash. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

struct val {
	uint64_t a, b;
};

TestSuite(u64map);

Test(u64map, the_extreme_keys_are_ordinary_keys)
{
	struct u64map m;
	u64map_init(&m, sizeof(struct val));
	cr_assert_null(u64map_get(&m, 0));
	cr_assert_null(u64map_get(&m, UINT64_MAX));
	cr_assert_eq(u64map_del(&m, 0, NULL), 0);
	int created = -1;
	struct val *v = u64map_put(&m, UINT64_MAX, &created);
	cr_assert(v && created == 1);
	cr_assert(v->a == 0 && v->b == 0);
	v->a = 7;
	v = u64map_put(&m, 0, &created);
	cr_assert(v && created == 1);
	v->a = 9;
	v = u64map_put(&m, UINT64_MAX - 1, &created);
	cr_assert(v && created == 1);
	v->a = 11;
	cr_assert_eq(m.count, 3);
	cr_assert_eq(((struct val *)u64map_get(&m, UINT64_MAX))->a, 7);
	cr_assert_eq(((struct val *)u64map_get(&m, 0))->a, 9);
	cr_assert_eq(((struct val *)u64map_get(&m, UINT64_MAX - 1))->a, 11);
	cr_assert_null(u64map_get(&m, 1));
	v = u64map_put(&m, 0, &created);
	cr_assert(created == 0 && v->a == 9);

	/* iteration yields each key once, 0 included */
	int seen0 = 0, seenmax = 0, seenother = 0;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&m, &pos, &key, &val)) {
		if (key == 0) {
			seen0++;
			cr_assert_eq(((struct val *)val)->a, 9);
		} else if (key == UINT64_MAX) {
			seenmax++;
			cr_assert_eq(((struct val *)val)->a, 7);
		} else {
			seenother++;
		}
	}
	cr_assert(seen0 == 1 && seenmax == 1 && seenother == 1);

	/* growth keeps key 0's value */
	for (uint64_t k = 1; k < 1000; k++)
		cr_assert_not_null(u64map_put(&m, k * 0x10000, NULL));
	cr_assert_eq(((struct val *)u64map_get(&m, 0))->a, 9);
	cr_assert_eq(((struct val *)u64map_get(&m, UINT64_MAX))->a, 7);

	struct val out;
	cr_assert_eq(u64map_del(&m, 0, &out), 1);
	cr_assert_eq(out.a, 9);
	cr_assert_null(u64map_get(&m, 0));
	cr_assert_eq(u64map_del(&m, 0, NULL), 0);
	cr_assert_eq(u64map_del(&m, UINT64_MAX, &out), 1);
	cr_assert_eq(out.a, 7);
	cr_assert_null(u64map_get(&m, UINT64_MAX));
	cr_assert_eq(m.count, 1000);
	u64map_free(&m);
}

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The map against present[]/vals[] over a pool of keys, with a full check now and then. */
static void check_all(const struct u64map *m, const uint64_t *keys, const char *present,
		      const uint64_t *ref, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		const struct val *v = u64map_get(m, keys[i]);
		if (present[i]) {
			cr_assert_not_null(v, "key %zu (%#llx) lost", i, (unsigned long long)keys[i]);
			cr_assert_eq(v->a, ref[i]);
			cr_assert_eq(v->b, ~keys[i]);
			count++;
		} else {
			cr_assert_null(v, "key %zu (%#llx) not deleted", i, (unsigned long long)keys[i]);
		}
	}
	cr_assert_eq(m->count, count);
	/* iteration: every present key exactly once, nothing else */
	char *seen = calloc(n, 1);
	size_t pos = 0, iterated = 0;
	uint64_t key;
	void *val;
	while (u64map_next(m, &pos, &key, &val)) {
		iterated++;
		const struct val *v = val;
		cr_assert_eq(v->b, ~key);
		size_t i = (size_t)v->a >> 32;  /* pool index kept in the value */
		cr_assert(i < n && keys[i] == key && present[i] && !seen[i]);
		seen[i] = 1;
	}
	cr_assert_eq(iterated, count);
	free(seen);
}

static void random_ops(uint64_t *keys, size_t n, size_t ops)
{
	char *present = calloc(n, 1);
	uint64_t *ref = calloc(n, sizeof(*ref));
	struct u64map m;
	u64map_init(&m, sizeof(struct val));
	for (size_t op = 0; op < ops; op++) {
		size_t i = (size_t)(rnd() % n);
		unsigned what = (unsigned)(rnd() % 10);
		if (what < 5) {  /* put */
			int created = -1;
			struct val *v = u64map_put(&m, keys[i], &created);
			cr_assert_not_null(v);
			cr_assert_eq(created, !present[i]);
			if (!present[i])
				cr_assert(v->a == 0 && v->b == 0);
			ref[i] = ((uint64_t)i << 32) | (op & 0xffffffffu);
			v->a = ref[i];
			v->b = ~keys[i];
			present[i] = 1;
		} else if (what < 8) {  /* del */
			struct val out = { 0, 0 };
			int had = u64map_del(&m, keys[i], &out);
			cr_assert_eq(had, present[i]);
			if (had)
				cr_assert_eq(out.a, ref[i]);
			present[i] = 0;
		} else {  /* get */
			struct val *v = u64map_get(&m, keys[i]);
			cr_assert_eq(v != NULL, present[i]);
			if (v)
				cr_assert_eq(v->a, ref[i]);
		}
		if (op % (ops / 8) == 0)
			check_all(&m, keys, present, ref, n);
	}
	check_all(&m, keys, present, ref, n);
	/* delete everything: the map ends empty */
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(u64map_del(&m, keys[i], NULL), present[i]);
	cr_assert_eq(m.count, 0);
	size_t pos = 0;
	uint64_t key;
	void *val;
	cr_assert_eq(u64map_next(&m, &pos, &key, &val), 0);
	u64map_free(&m);
	free(present);
	free(ref);
}

Test(u64map, random_operations_match_a_reference)
{
	size_t n = 20000;
	uint64_t *keys = malloc(n * sizeof(*keys));
	/* distinct keys: 0, UINT64_MAX and its neighbours, small, random and high-bit keys */
	keys[0] = 0;
	keys[1] = UINT64_MAX;
	keys[2] = UINT64_MAX - 1;
	keys[3] = 1;
	for (size_t i = 4; i < n; i++) {
		switch (i % 4) {
		case 0: keys[i] = i; break;                       /* small, dense */
		case 1: keys[i] = (uint64_t)i << 40; break;       /* only high bits differ */
		case 2: keys[i] = 0x7f0000000000ull + i * 4096; break;  /* page-aligned pointers */
		default: keys[i] = rnd() | (1ull << 63); break;  /* random, disjoint from the rest */
		}
	}
	random_ops(keys, n, 400000);
	free(keys);
}

Test(u64map, a_small_pool_churns_through_growth_and_shrink_of_runs)
{
	uint64_t keys[300];
	for (size_t i = 0; i < 300; i++)
		keys[i] = i * 64;  /* multiples of 64, 0 included */
	random_ops(keys, 300, 200000);
}

/* Keys that all land in one slot under a plain multiplicative hash of the low bits (multiples
 * of a large power of two) must still be fast: 200,000 of them in well under a second. */
Test(u64map, keys_built_to_collide_stay_fast, .timeout = 10)
{
	struct u64map m;
	u64map_init(&m, sizeof(uint64_t));
	const size_t n = 200000;
	for (size_t i = 0; i < n; i++) {
		uint64_t *v = u64map_put(&m, (uint64_t)i << 44, NULL);
		cr_assert_not_null(v);
		*v = i;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t *v = u64map_get(&m, (uint64_t)i << 44);
		cr_assert(v && *v == i);
		cr_assert_null(u64map_get(&m, ((uint64_t)i << 44) | 1));
	}
	/* the longest probe run stays short */
	size_t longest = 0, run = 0;
	for (size_t i = 0; i < 2 * m.cap; i++) {
		if (m.keys[i & (m.cap - 1)])
			run++;
		else
			run = 0;
		if (run > longest)
			longest = run;
	}
	cr_assert_lt(longest, 1000, "probe run of %zu slots", longest);
	u64map_free(&m);
}
