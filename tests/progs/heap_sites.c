/* Allocation sites of known sizes and counts, for the sampled heap mode (PROF_HEAP_SAMPLE):
 * each site_* function allocates from one place, keeps its blocks in a ring of 64 live ones
 * and frees the rest, so the peak is known too. Deterministic; prints one line.
 *
 *	site      block      blocks    bytes
 *	small     64 B       300000    19.2 MB  (2.2% of all)
 *	mid       1000 B      30000    30.0 MB  (3.4%)
 *	big       16 KiB       2000    32.8 MB  (3.7%)
 *	huge      256 KiB      3000   786.4 MB  (89.6%)
 *	few       128 B       75000     9.6 MB  (1.1%)
 * The huge blocks make the total large at little cost, so that a site of about 1% of it still
 * holds some 1000 sample points at PROF_HEAP_SAMPLE=8K.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 64

static void *ring[5][RING];
static unsigned long sum;

static void keep(int site, long i, void *p)
{
	memset(p, (int)i, 16);
	sum += ((unsigned char *)p)[0];
	void **slot = &ring[site][i % RING];
	free(*slot);
	*slot = p;
}

static __attribute__((noinline)) void site_small(long i) { keep(0, i, malloc(64)); }
static __attribute__((noinline)) void site_mid(long i) { keep(1, i, malloc(1000)); }
static __attribute__((noinline)) void site_big(long i) { keep(2, i, malloc(16384)); }
static __attribute__((noinline)) void site_huge(long i) { keep(3, i, malloc(262144)); }
static __attribute__((noinline)) void site_few(long i) { keep(4, i, malloc(128)); }

int main(void)
{
	/* Interleaved, so that no site gets the sampler's stream to itself. */
	for (long i = 0; i < 300000; i++) {
		site_small(i);
		if (i % 10 == 0)
			site_mid(i / 10);
		if (i % 150 == 0)
			site_big(i / 150);
		if (i % 100 == 0)
			site_huge(i / 100);
		if (i % 4 == 0)
			site_few(i / 4);
	}
	for (int s = 0; s < 5; s++)
		for (int i = 0; i < RING; i++)
			free(ring[s][i]);
	printf("heap_sites %lu\n", sum);
	return 0;
}
