/* An event family (heap, locks, I/O, CUDA, ...) as the analyzer's commands see it: which
 * records it owns, how it folds them into its state, and what it adds to each command's
 * output. Every family is described once, by a `struct family` in its own file, and listed
 * once in families.c; process, report, leaks, flame, export and dump loop over that list.
 * A hook a family does not need is NULL. */
#ifndef PROF_FAMILY_H
#define PROF_FAMILY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct process;
struct trace_event;
struct prof_rec;
struct timeline;
struct series;
struct sql_out;
struct thread_info;
struct sum_out;
struct sum_in;

/* Flame graphs: emit(ctx, stack id, weight) once per stack. The labeled form puts a frame of
 * its own (leaf, when not NULL: "[sleep]") under the stack's innermost one. */
typedef void (*flame_emit_fn)(void *ctx, uint32_t stack, uint64_t weight);
typedef void (*flame_emit_labeled_fn)(void *ctx, uint32_t stack, const char *leaf,
				      uint64_t weight);

/* A weight a flame kind can be drawn by (`--by NAME`); the first one is the default. */
struct flame_weight {
	const char *by, *title, *unit;
};

#define FLAME_WEIGHTS_MAX 3
struct flame_kind {
	const char *name;     /* `prof flame --kind NAME` */
	const char *help;     /* one line for `prof flame --help` */
	struct flame_weight weights[FLAME_WEIGHTS_MAX];
	/* by: one of weights[].by. Returns 0, or -1 when out of memory. */
	int (*collect)(struct process *p, const char *by, flame_emit_fn emit, void *ctx);
};

/* The family's part of `prof export --format chrome`: the records it owns, in two passes
 * over the trace (names first, wherever they stand, then events), with state of its own. */
struct family_timeline {
	size_t state_size;
	int (*init)(void *state);
	void (*free)(void *state);
	int (*names)(void *state, struct timeline *tl, const struct trace_event *ev);
	int (*event)(void *state, struct timeline *tl, const struct trace_event *ev);
	int (*finish)(void *state, struct timeline *tl);  /* after the last record */
};

/* prof diff: a list of the family's JSON compared row by row between two runs. */
struct family_diff {
	const char *title;   /* "CPU by function" */
	const char *list;    /* the member holding the list; NULL: the JSON is the list */
	const char *key;     /* the fields that identify a row, comma list; a stack by its functions */
	const char *metric;  /* the integer field compared */
};

/* What `prof leaks` shows: at most top records, frames per stack, which leak classes (bits
 * 1u << PROF_LEAK_*, where the trace was classified at exit), less what a suppression file
 * matches (suppress.h; NULL: none). */
struct suppressions;
struct leak_view {
	size_t top;
	int frames;
	unsigned show;
	const struct suppressions *supp;
};

/* prof report's process tree (and table of ranks): one of the family's headline numbers for a
 * process, "heap peak", a column of its own. */
struct family_figure {
	const char *title;  /* "heap peak" */
	const char *key;    /* "heap_peak_bytes": its JSON name; "_ns"/"_bytes" say the unit */
	int peak;           /* over an exec chain's images: the largest, not the sum */
	uint64_t (*get)(const struct process *p);
	int wait;           /* time spent waiting for other processes (MPI): not the rank's work */
};

struct family {
	const char *name;               /* "heap", "locks", ... */
	unsigned first_type, last_type; /* the record types it owns (prof_fmt_*.h constants) */
	unsigned more_first, more_last; /* a second range it owns; 0, 0: none */

	/* Analysis: state_size bytes, zeroed, then init(); every record it owns, in time
	 * order, with that state; finish() after the last one. on_record and finish return 0,
	 * or -1 when out of memory. */
	size_t state_size;
	void (*init)(void *state);
	void (*free)(void *state);
	int (*on_record)(struct process *p, void *state, const struct trace_event *ev);
	int (*finish)(struct process *p);
	/* Records of other families it reads too, types [observe_first, observe_last]: given to
	 * observe() after their owner's on_record (one observer per type). */
	unsigned observe_first, observe_last;
	unsigned observe_more_first, observe_more_last;  /* a second range; 0, 0: none */
	int (*observe)(struct process *p, void *state, const struct trace_event *ev);

	/* prof report: a section when has_data(); the JSON value under json_key (always, so
	 * the SPEC's keys are there even without data); a clause of the --brief line. */
	int (*has_data)(const struct process *p);
	const char *json_key;
	json_t *(*json)(struct process *p, size_t top);
	void (*print)(FILE *out, struct process *p, size_t top, int frames);
	void (*brief)(FILE *out, const struct process *p);

	/* prof leaks: what is still allocated, as text records (with the family's summary
	 * line) and as entries of processes[].leaks (adding the family's totals to proc). */
	void (*leaks_print)(FILE *out, struct process *p, const struct leak_view *v);
	void (*leaks_json)(struct process *p, json_t *proc, json_t *leaks, const struct leak_view *v);

	const struct flame_kind *flames;
	size_t nflames;
	/* Instead of the kinds' collect, where a family's stacks get a leaf frame of their own. */
	int (*flame_labeled)(struct process *p, const struct flame_kind *kind, const char *by,
			     flame_emit_labeled_fn emit, void *ctx);

	const struct family_timeline *timeline;
	int timeline_symbols;  /* its timeline names code addresses: tl->proc is the model */

	/* prof diff: the lists compared (the integers at the top of its JSON always are). */
	const struct family_diff *diffs;
	size_t ndiffs;
	/* prof report's totals over processes: the integers at the top of its JSON that do not
	 * add up ("hz,period_ns": settings, moments), comma list; NULL: all do. */
	const char *not_summed;

	/* prof html: a value over time charted with its peak marked (series.h), and the title
	 * of its chart; NULL when the family has none. */
	const struct series *(*series)(const struct process *p);
	const char *series_title;
	/* prof html: what thread t's time went to, as far as the family knows: add(ctx, cause,
	 * ns) per cause ("running", "lock", "io", "sleep", ...). */
	void (*thread_times)(struct process *p, const struct thread_info *t,
			     void (*add)(void *ctx, const char *cause, uint64_t ns), void *ctx);

	/* prof export --format sqlite: its tables (CREATE TABLE statements, README's schema),
	 * and the rows of one record it owns (with sql_row(), exports.h); 0 or -1. */
	const char *sql_schema;
	int (*sql_row)(struct sql_out *o, struct process *p, const struct trace_event *ev);

	const struct family_figure *figures;
	size_t nfigures;

	/* prof dump: the fields of one record it owns, after the common columns. */
	void (*dump)(FILE *out, const struct prof_rec *r);

	/* prof summarize (summary.h): the state after finish(), written by sum_write and read
	 * back by sum_read into a state made by init(), such that every hook above but timeline,
	 * sql_row and dump (which read the records) gives the same output from either. What
	 * sum_write writes changes only with sum_version. NULL: the family's data cannot be
	 * summarized (a process with some stays a trace). 0, or -1 (out of memory; sum_read:
	 * also bad input, with r->bad set). */
	unsigned sum_version;
	int (*sum_write)(struct sum_out *w, const struct process *p, const void *state);
	int (*sum_read)(struct sum_in *r, struct process *p, void *state);
};

/* Every family, NULL-terminated, in the order reports show them (families.c). */
extern const struct family *const families[];

/* The family owning record type `type`, or NULL (core records, unknown types): a table
 * lookup, made on first use, since every record of a trace asks. */
#define FAMILY_TYPES 256
extern unsigned char family_route[FAMILY_TYPES];  /* 1 + index in families[], 0: none */
extern unsigned char family_observer[FAMILY_TYPES];  /* the same, for observe() */
extern int family_routed;
void family_route_init(void);
/* The index in families[] of the family owning `type`, or -1. */
static inline int family_index_of_type(unsigned type)
{
	if (__builtin_expect(!family_routed, 0))
		family_route_init();
	return type < FAMILY_TYPES ? (int)family_route[type] - 1 : -1;
}
static inline const struct family *family_of_type(unsigned type)
{
	int i = family_index_of_type(type);
	return i < 0 ? NULL : families[i];
}
/* The position of f in families[]; the index of its state in a process. */
size_t family_index(const struct family *f);
#define FAMILY_MAX 16

/* A flame kind by name, from any family; NULL if none has it. *owner set if found. */
const struct flame_kind *flame_kind_find(const char *name, const struct family **owner);

#endif
