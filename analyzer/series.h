/* A value over time in bounded memory, for charts: at most SERIES_POINTS buckets of equal
 * width, each keeping the largest value seen in it (so a peak is never averaged away); the
 * width doubles, merging neighbours, whenever time outgrows them. */
#ifndef PROF_SERIES_H
#define PROF_SERIES_H

#include <stddef.h>
#include <stdint.h>

#define SERIES_POINTS 600

struct series {
	uint64_t width;               /* ns per bucket; 0 before the first value */
	uint64_t max[SERIES_POINTS];  /* the largest value in each bucket */
	uint8_t set[SERIES_POINTS];   /* the bucket saw a value */
	size_t n;                     /* buckets in use */
	uint64_t values;              /* values added: how much was folded into n points */
	/* The bucket written last covers [last_lo, last_hi): most values go there too, and then
	 * need no division. last_hi 0: none. Not part of a summary (SERIES_SUM_BYTES). */
	uint64_t last_lo, last_hi;
	size_t last;
};

/* What a summary holds of a series: the fields before the bucket written last, laid out as
 * they were before it was added. One read back has none (last_hi 0). */
#define SERIES_SUM_BYTES offsetof(struct series, last_lo)

void series_add_bucket(struct series *s, uint64_t t, uint64_t value);

/* value at time t (ns since the process start). Called for every heap event. */
static inline void series_add(struct series *s, uint64_t t, uint64_t value)
{
	if (t >= s->last_lo && t < s->last_hi) {
		if (value > s->max[s->last])
			s->max[s->last] = value;
		s->values++;
		return;
	}
	series_add_bucket(s, t, value);
}

#endif
