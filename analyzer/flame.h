/* The weighted stacks of a flame kind, symbolized, for every output that draws or exports
 * them: prof flame (SVG, folded, --diff), prof html, and the speedscope and pprof exports. */
#ifndef PROF_FLAME_H
#define PROF_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "family.h"
#include "flame_svg.h"

struct process;

/* Samples and the strings they point to (each text once: a hash set, open addressing), freed
 * together by flame_set_free(). */
struct flame_set {
	struct flame_sample *v;
	size_t n, cap;
	char **strings;
	size_t nstr, strcap;  /* strings held, slots (a power of two, or 0) */
};

/* Every stack of kind in p, weighed by `by`: fn(arg, p, its shown frames (innermost first, as
 * stack_shown() gives them), their number, whether the stack was cut at its recorded depth,
 * the family's own leaf label or NULL, weight) for each stack of weight > 0. fn returns 0, or
 * non-zero to stop (returned). -1 when out of memory. */
struct sym_frame;
typedef int (*flame_stack_fn)(void *arg, struct process *p, const struct sym_frame *frames,
			      int n, int truncated, const char *leaf, uint64_t weight);
int flame_walk(struct process *p, const struct family *owner, const struct flame_kind *kind,
	       const char *by, flame_stack_fn fn, void *arg);

/* Adds kind's stacks (weighed by `by`, one of its weights) of every process to s, frames
 * root first, each named by its symbolized function so that two runs compare. Where there are
 * several processes each gets a root frame: "exe (pid)", or "exe" alone when pid_roots is 0
 * (for diffs). Returns 0, or -1 when out of memory. */
int flame_collect(struct flame_set *s, struct process *ps, size_t n, const struct family *owner,
		  const struct flame_kind *kind, const char *by, int pid_roots);
void flame_set_free(struct flame_set *s);

/* The weight `by` names (the kind's first when NULL), or NULL after saying why. */
const struct flame_weight *flame_pick_weight(const struct flame_kind *kind, const char *by);

/* A loop over every flame kind of every family, in the families' order: fam the family,
 * kind the kind. */
#define FOR_EACH_FLAME_KIND(fam, kind)                                                     \
	for (size_t fam##_i = 0; families[fam##_i]; fam##_i++)                             \
		for (const struct family *fam = families[fam##_i]; fam; fam = NULL)        \
			for (const struct flame_kind *kind = fam->flames;                   \
			     kind < fam->flames + fam->nflames; kind++)

#endif
