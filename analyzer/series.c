/* A value over time in bounded memory (series.h). */
#include "series.h"

#include <string.h>

/* series_add() for a value outside the bucket written last. */
void series_add_bucket(struct series *s, uint64_t t, uint64_t value)
{
	if (!s->width)
		s->width = 1000;  /* 1 us to start with */
	while (t / s->width >= SERIES_POINTS) {
		for (size_t i = 0; i < SERIES_POINTS / 2; i++) {
			size_t a = 2 * i, b = a + 1;
			s->max[i] = s->max[a] > s->max[b] ? s->max[a] : s->max[b];
			s->set[i] = s->set[a] | s->set[b];
		}
		memset(s->max + SERIES_POINTS / 2, 0, sizeof(s->max) / 2);
		memset(s->set + SERIES_POINTS / 2, 0, sizeof(s->set) / 2);
		s->n = (s->n + 1) / 2;
		s->width *= 2;
	}
	size_t i = (size_t)(t / s->width);
	if (!s->set[i] || value > s->max[i])
		s->max[i] = value;
	s->set[i] = 1;
	if (i + 1 > s->n)
		s->n = i + 1;
	s->values++;
	s->last = i;
	s->last_lo = i * s->width;
	s->last_hi = s->last_lo + s->width;
}
