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
	uint64_t base;  /* differential graphs: the weight the stack had in the base run */
};

/* "root;child;leaf weight\n" per distinct stack, sorted, ';' in names replaced by ':'. */
int flame_write_folded(FILE *out, const struct flame_sample *samples, size_t n);
/* The same with two counts, "stack base weight", as Brendan Gregg's difffolded.pl writes them
 * (flamegraph.pl draws them as a differential graph). */
int flame_write_folded_diff(FILE *out, const struct flame_sample *samples, size_t n);

/* title: heading; unit: what weights count ("bytes", "allocations", "ns", "samples") for the
 * tooltips (bytes and ns are shown human-readable). Returns 0, or -1 on write error. */
int flame_write_svg(FILE *out, const struct flame_sample *samples, size_t n, const char *title,
		    const char *unit);

/* s escaped for XML and HTML text and attributes (& < > " ' as entities); bytes that are not
 * UTF-8 become '?', control characters spaces: any name a trace holds is safe to embed. */
void xml_write(FILE *out, const char *s);

/* A differential flame graph (Brendan Gregg's difffolded): the shape of the samples'
 * weights, each frame red where it grew since base (scaled to the same total), blue where it
 * shrank; samples of weight 0 carry stacks only the base had. */
int flame_write_svg_diff(FILE *out, const struct flame_sample *samples, size_t n,
			 const char *title, const char *unit);

#endif
