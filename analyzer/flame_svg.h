/* Flame graphs: Brendan Gregg's folded format, and a self-contained interactive SVG
 * (search, click-to-zoom, reset, tooltips with weight and share). */
#ifndef PROF_FLAME_SVG_H
#define PROF_FLAME_SVG_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

/* One weighted stack, frames root (outermost) first. Equal stacks may repeat: they are merged. */
struct flame_sample {
	const char *const *frames;
	int depth;
	uint64_t weight;
};

/* "root;child;leaf weight\n" per distinct stack, sorted, ';' in names replaced by ':'. */
int flame_write_folded(FILE *out, const struct flame_sample *samples, size_t n);

/* title: heading; unit: what weights count ("bytes", "allocations", "ns", "samples") for the
 * tooltips (bytes and ns are shown human-readable). Returns 0, or -1 on write error. */
int flame_write_svg(FILE *out, const struct flame_sample *samples, size_t n, const char *title,
		    const char *unit);

#endif
