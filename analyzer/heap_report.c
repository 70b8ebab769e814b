/* The heap family as the commands show it: the report section (totals, the peak, top sites
 * by five measures), leaks in valgrind's words, alloc and leak flame graphs, the heap-size
 * counter of the timeline, and ALLOC/FREE in dumps. The analysis itself is heap.c. */
#include "exports.h"
#include "heap.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "suppress.h"
#include "timeline.h"
#include "trace.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct heap_stats *heap_of(const struct process *p)
{
	return process_family_state(p, &heap_family);
}

static int heap_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	const struct prof_rec *h = ev->rec;
	struct heap_stats *heap = state;
	uint64_t t = process_rel_time(p, h->time);
	int rc;
	heap->tallied = (p->hdr.features & PROF_FEAT_HEAP_TALLY) != 0;
	if (h->type == PROF_REC_ALLOC) {
		const struct prof_rec_alloc *r = (const void *)h;
		heap->sample = p->hdr.heap_sample;
		rc = heap_alloc(heap, ev->stream, t, r->ptr, r->size, r->stack, h->flags);
		series_add(&heap->in_use, t, heap->current);
		return rc;
	}
	if (h->type == PROF_REC_HEAP_TALLY) {
		const struct prof_rec_heap_tally *r = (const void *)h;
		heap->sample = p->hdr.heap_sample;
		rc = heap_tally(heap, t, r->serial, r);
		series_add(&heap->in_use, t, heap->current);
		return rc;
	}
	if (h->type == PROF_REC_HEAP_CLASSES) {
		const struct prof_rec_heap_classes *r = (const void *)h;
		size_t room = (h->size - sizeof(*r)) / sizeof(r->classes[0]);
		return heap_classes(heap, r->serial, r->classes, r->count < room ? r->count : room);
	}
	if (h->type == PROF_REC_LEAK_SCAN)
		return heap_leak_scan(state, h->flags, ((const struct prof_rec_leak_scan *)h)->listed);
	if (h->type == PROF_REC_LEAK_BLOCKS) {
		const struct prof_rec_leak_blocks *r = (const void *)h;
		size_t room = (h->size - sizeof(*r)) / sizeof(uint64_t);
		return heap_leak_class(state, h->flags, r->ptrs, r->count < room ? r->count : room);
	}
	rc = heap_release(heap, ev->stream, ((const struct prof_rec_free *)h)->ptr,
			  (h->flags & PROF_FREE_REALLOC) != 0);
	series_add(&heap->in_use, t, heap->current);
	return rc;
}

static const struct series *heap_series(const struct process *p)
{
	return &heap_of(p)->in_use;
}

static int heap_family_finish(struct process *p)
{
	return heap_finish(heap_of(p), p->exit_kind == EXIT_EXEC);
}

static int heap_has_data(const struct process *p)
{
	return (p->hdr.events & PROF_EV_ALLOC) != 0;
}

/* ---- sites, sorted ---------------------------------------------------------------------- */

uint64_t site_key_bytes(const struct heap_site *s) { return s->bytes; }
uint64_t site_key_calls(const struct heap_site *s) { return s->calls; }
uint64_t site_key_leaked(const struct heap_site *s) { return s->leaked_bytes; }
uint64_t site_key_temporary(const struct heap_site *s) { return s->temporary; }
uint64_t site_key_peak(const struct heap_site *s) { return s->peak_bytes; }
uint64_t site_key_lost(const struct heap_site *s)
{
	return s->class_bytes[PROF_LEAK_DEFINITE] + s->class_bytes[PROF_LEAK_INDIRECT];
}

/* memcheck's names for the leak classes, as JSON keys and in text. */
static const char *const class_key[PROF_LEAK_CLASS_COUNT] = {
	[PROF_LEAK_REACHABLE] = "still_reachable", [PROF_LEAK_DEFINITE] = "definitely_lost",
	[PROF_LEAK_INDIRECT] = "indirectly_lost", [PROF_LEAK_POSSIBLE] = "possibly_lost",
};
static const char *const class_text[PROF_LEAK_CLASS_COUNT] = {
	[PROF_LEAK_REACHABLE] = "still reachable", [PROF_LEAK_DEFINITE] = "definitely lost",
	[PROF_LEAK_INDIRECT] = "indirectly lost", [PROF_LEAK_POSSIBLE] = "possibly lost",
};
/* The order of memcheck's LEAK SUMMARY. */
static const unsigned class_order[PROF_LEAK_CLASS_COUNT] = {
	PROF_LEAK_DEFINITE, PROF_LEAK_INDIRECT, PROF_LEAK_POSSIBLE, PROF_LEAK_REACHABLE,
};

/* {"definitely_lost": {"bytes", "blocks"}, ...}, or null when the trace has no leak check. */
static json_t *leak_classes_json(const struct heap_stats *h)
{
	if (!h->leak_scanned)
		return json_null();
	json_t *o = json_object();
	for (unsigned i = 0; i < PROF_LEAK_CLASS_COUNT; i++) {
		unsigned c = class_order[i];
		json_object_set_new(o, class_key[c], json_pack("{s:I,s:I}",
			"bytes", (json_int_t)h->class_bytes[c], "blocks", (json_int_t)h->class_blocks[c]));
	}
	return o;
}

/* qsort_r's: the key comes with each call, so processes sort on several threads at once. */
static int cmp_sites(const void *a, const void *b, void *arg)
{
	const struct site_ref *x = a, *y = b;
	uint64_t (*sort_key)(const struct heap_site *) = *(uint64_t (**)(const struct heap_site *))arg;
	uint64_t kx = sort_key(x->s), ky = sort_key(y->s);
	if (kx != ky)
		return kx < ky ? 1 : -1;
	if (x->s->bytes != y->s->bytes)
		return x->s->bytes < y->s->bytes ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* All sites of the process sorted by key (largest first); *n set. Caller frees. */
struct site_ref *heap_sites_sorted(const struct process *p, uint64_t (*key)(const struct heap_site *),
				   size_t *n)
{
	const struct heap_stats *h = heap_of(p);
	struct site_ref *v = malloc(sizeof(*v) * (h->nsites ? h->nsites : 1));
	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < h->nsites; i++)
		v[(*n)++] = (struct site_ref){ h->sites[i].stack, &h->sites[i] };
	if (*n)
		qsort_r(v, *n, sizeof(*v), cmp_sites, &key);
	return v;
}

/* ---- report ----------------------------------------------------------------------------- */

static json_t *heap_json(struct process *p, size_t top)
{
	const struct heap_stats *h = heap_of(p);
	json_t *sites = json_array();
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, site_key_bytes, &n);
	for (size_t i = 0; v && i < n && i < top; i++) {
		const struct heap_site *s = v[i].s;
		json_array_append_new(sites, json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			"stack", stack_json(p, v[i].stack), "calls", (json_int_t)s->calls,
			"bytes", (json_int_t)s->bytes, "frees", (json_int_t)s->frees,
			"peak_bytes", (json_int_t)s->peak_bytes,
			"temporary", (json_int_t)s->temporary,
			"leaked_bytes", (json_int_t)s->leaked_bytes,
			"leaked_blocks", (json_int_t)s->leaked_blocks));
		if (h->sample)  /* how many allocations the estimates rest on */
			json_object_set_new(json_array_get(sites, json_array_size(sites) - 1),
					    "sampled", json_integer((json_int_t)s->sampled));
	}
	free(v);
	/* Sampled traces (PROF_HEAP_SAMPLE): the totals are exact, the sites estimates. */
	json_t *o = json_pack("{s:I,s:b,s:b}", "sample_bytes", (json_int_t)h->sample,
			      "sites_estimated", h->sample != 0, "peak_estimated", h->tallied != 0);
	json_t *heap = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:o}",
			 "alloc_calls", (json_int_t)h->alloc_calls, "free_calls", (json_int_t)h->free_calls,
			 "bytes_allocated", (json_int_t)h->bytes_allocated, "peak_bytes", (json_int_t)h->peak,
			 "peak_ns", (json_int_t)h->peak_ns, "leaked_bytes", (json_int_t)h->leaked_bytes,
			 "leaked_blocks", (json_int_t)h->leaked_blocks, "leak_classes", leak_classes_json(h),
			 "temporary", (json_int_t)h->temporary,
			 "unmatched_frees", (json_int_t)h->unmatched_frees, "sites", sites);
	if (heap)
		json_object_update(heap, o);
	json_decref(o);
	return heap;
}

/* The stacks the heap section printed already: a site in several lists shows its whole
 * stack once, then its first frame only. */
struct shown_stacks {
	uint32_t *ids;
	size_t n;
};

static int once(struct shown_stacks *seen, uint32_t stack)
{
	for (size_t i = 0; i < seen->n; i++)
		if (seen->ids[i] == stack)
			return 0;
	uint32_t *v = realloc(seen->ids, (seen->n + 1) * sizeof(*v));
	if (v) {
		seen->ids = v;
		seen->ids[seen->n++] = stack;
	}
	return 1;
}

static void print_first_frame(FILE *out, struct process *p, uint32_t stack)
{
	struct sym_frame f;
	char buf[256], shorter[256];
	if (stack_shown(p, stack, &f, 1, NULL, NULL) == 1) {
		const char *label = frame_label(&f, buf, sizeof(buf));
		fprintf(out, "       at %s", f.python ? label : shorten_templates(label, shorter,
										      sizeof(shorter)));
		if (f.file)
			fprintf(out, " (%s:%d)", f.file, f.line);
		fprintf(out, ", stack above\n");
	} else
		fprintf(out, "       (no stack recorded)\n");
}

static void print_sites(FILE *out, struct process *p, const char *title,
			uint64_t (*key)(const struct heap_site *), size_t top, int frames,
			struct shown_stacks *seen)
{
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, key, &n);
	size_t shown = 0;
	for (size_t i = 0; v && i < n && shown < top; i++) {
		const struct heap_site *s = v[i].s;
		if (key(s) == 0)
			break;
		if (shown++ == 0)
			fprintf(out, "\n   %s:\n", title);
		char a[32], b[32], c[32], d[32], e[32], f[32];
		fprintf(out, "   #%zu %s in %s call%s; %s at peak; %s temporary; in use at exit %s in %s block%s\n",
			shown, fmt_bytes(s->bytes, a, sizeof(a)), fmt_count(s->calls, b, sizeof(b)),
			s->calls == 1 ? "" : "s", fmt_bytes(s->peak_bytes, f, sizeof(f)),
			fmt_count(s->temporary, d, sizeof(d)), fmt_bytes(s->leaked_bytes, c, sizeof(c)),
			fmt_count(s->leaked_blocks, e, sizeof(e)), s->leaked_blocks == 1 ? "" : "s");
		if (once(seen, v[i].stack))
			stack_print(out, p, v[i].stack, frames, "       ");
		else
			print_first_frame(out, p, v[i].stack);
	}
	free(v);
}

static void heap_print(FILE *out, struct process *p, size_t top, int frames)
{
	const struct heap_stats *h = heap_of(p);
	char a[32], b[32], c[32];
	fprintf(out, "\n-- Heap\n");
	fprintf(out, "   allocation calls  %s\n", fmt_count(h->alloc_calls, a, sizeof(a)));
	fprintf(out, "   frees             %s\n", fmt_count(h->free_calls, a, sizeof(a)));
	fprintf(out, "   bytes allocated   %s (%s bytes)\n", fmt_bytes(h->bytes_allocated, a, sizeof(a)),
		fmt_count(h->bytes_allocated, b, sizeof(b)));
	fprintf(out, "   peak heap         %s at %s\n", fmt_bytes(h->peak, a, sizeof(a)),
		fmt_ns(h->peak_ns, b, sizeof(b)));
	fprintf(out, "   %-17s %s in %s block%s\n", p->complete ? "in use at exit" : "in use at end",
		fmt_bytes(h->leaked_bytes, a, sizeof(a)), fmt_count(h->leaked_blocks, b, sizeof(b)),
		h->leaked_blocks == 1 ? "" : "s");
	for (unsigned i = 0; h->leak_scanned && i < PROF_LEAK_CLASS_COUNT; i++) {
		unsigned k = class_order[i];
		fprintf(out, "     %-15s %s in %s block%s\n", class_text[k],
			fmt_bytes(h->class_bytes[k], a, sizeof(a)), fmt_count(h->class_blocks[k], b, sizeof(b)),
			h->class_blocks[k] == 1 ? "" : "s");
	}
	if (h->tallied)
		fprintf(out, "   temporary         not known (sampled)\n");
	else
		fprintf(out, "   temporary         %s allocation%s (%.1f%% of calls)\n",
			fmt_count(h->temporary, c, sizeof(c)), h->temporary == 1 ? "" : "s",
			h->alloc_calls ? 100.0 * (double)h->temporary / (double)h->alloc_calls : 0.0);
	if (h->unmatched_frees)
		fprintf(out, "   (%s free%s of blocks allocated before recording began)\n",
			fmt_count(h->unmatched_frees, a, sizeof(a)), h->unmatched_frees == 1 ? "" : "s");
	if (h->sample)
		fprintf(out, "   sampled           one allocation per %s on average has its stack: "
			"%s, the sites below are estimates\n", fmt_bytes(h->sample, a, sizeof(a)),
			h->tallied ? "calls and bytes above are exact, the peak and what was in use "
				     "at exit within a fraction of a percent" :
				     "the totals above are exact");
	struct shown_stacks seen = { NULL, 0 };
	print_sites(out, p, "Top sites at peak heap (bytes they held then)", site_key_peak, top, frames,
		    &seen);
	print_sites(out, p, "Top sites by bytes allocated", site_key_bytes, top, frames, &seen);
	print_sites(out, p, "Top sites by allocation calls", site_key_calls, top, frames, &seen);
	if (h->leak_scanned)
		print_sites(out, p, "Top sites by bytes lost (definitely and indirectly)", site_key_lost,
			    top, frames, &seen);
	else
		print_sites(out, p, "Top sites by bytes in use at exit", site_key_leaked, top, frames,
			    &seen);
	print_sites(out, p, "Top sites by temporary allocations", site_key_temporary, top, frames,
		    &seen);
	free(seen.ids);
}

static void heap_brief(FILE *out, const struct process *p)
{
	char a[32], b[32], c[32], d[32], e[32];
	const struct heap_stats *h = heap_of(p);
	fprintf(out, "; heap: %s alloc%s, %s allocated, peak %s, %s %s in %s block%s",
		fmt_count(h->alloc_calls, a, sizeof(a)), h->alloc_calls == 1 ? "" : "s",
		fmt_bytes(h->bytes_allocated, b, sizeof(b)), fmt_bytes(h->peak, c, sizeof(c)),
		p->complete ? "in use at exit" : "in use", fmt_bytes(h->leaked_bytes, d, sizeof(d)),
		fmt_count(h->leaked_blocks, e, sizeof(e)), h->leaked_blocks == 1 ? "" : "s");
	if (h->leak_scanned)
		fprintf(out, " (lost %s)", fmt_bytes(h->class_bytes[PROF_LEAK_DEFINITE] +
						     h->class_bytes[PROF_LEAK_INDIRECT], a, sizeof(a)));
}

/* ---- leaks ------------------------------------------------------------------------------ */

/* One loss record: a site's blocks of one class (or all its blocks, unclassified). */
struct loss {
	uint32_t stack;
	int cls;            /* enum prof_leak_class, -1 when the trace was not classified */
	uint64_t bytes, blocks;
};

static int cmp_loss(const void *a, const void *b)
{
	const struct loss *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int suppressed(struct process *p, const struct leak_view *v, uint32_t stack, int cls)
{
	if (!v->supp)
		return 0;
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack, frames, PROF_MAX_STACK_DEPTH * 2);
	return supp_match(v->supp, frames, n, cls < 0 ? PROF_LEAK_DEFINITE : (unsigned)cls) >= 0;
}

/* The loss records shown, largest first; what suppressions hid is added to *supp_bytes and
 * *supp_blocks. Caller frees. */
static struct loss *losses(struct process *p, const struct leak_view *v, size_t *n,
			   uint64_t *supp_bytes, uint64_t *supp_blocks)
{
	const struct heap_stats *h = heap_of(p);
	struct loss *l = malloc(sizeof(*l) * (h->nsites * PROF_LEAK_CLASS_COUNT + 1));
	*n = 0;
	*supp_bytes = *supp_blocks = 0;
	for (size_t i = 0; l && i < h->nsites; i++) {
		const struct heap_site *s = &h->sites[i];
		for (int c = h->leak_scanned ? 0 : -1; c < (h->leak_scanned ? PROF_LEAK_CLASS_COUNT : 0); c++) {
			uint64_t bytes = c < 0 ? s->leaked_bytes : s->class_bytes[c];
			uint64_t blocks = c < 0 ? s->leaked_blocks : s->class_blocks[c];
			if (!blocks)
				continue;
			if (suppressed(p, v, s->stack, c)) {
				*supp_bytes += bytes;
				*supp_blocks += blocks;
			} else if (c < 0 || (v->show & (1u << c))) {
				l[(*n)++] = (struct loss){ s->stack, c, bytes, blocks };
			}
		}
	}
	if (l && *n)
		qsort(l, *n, sizeof(*l), cmp_loss);
	return l;
}

static void heap_leaks_json(struct process *p, json_t *proc, json_t *leaks, const struct leak_view *v)
{
	const struct heap_stats *h = heap_of(p);
	size_t n;
	uint64_t sb, sn;
	struct loss *l = losses(p, v, &n, &sb, &sn);
	for (size_t i = 0; l && i < n && i < v->top; i++) {
		json_t *o = json_pack("{s:s,s:I,s:I,s:o}", "kind", "host",
			"bytes", (json_int_t)l[i].bytes, "blocks", (json_int_t)l[i].blocks,
			"stack", stack_json(p, l[i].stack));
		if (l[i].cls >= 0)
			json_object_set_new(o, "class", json_string(class_key[l[i].cls]));
		if (h->sample)  /* per stack, sampled traces give estimates */
			json_object_set_new(o, "estimated", json_true());
		json_array_append_new(leaks, o);
	}
	free(l);
	json_object_set_new(proc, "leaked_bytes", json_integer((json_int_t)h->leaked_bytes));
	json_object_set_new(proc, "leaked_blocks", json_integer((json_int_t)h->leaked_blocks));
	json_object_set_new(proc, "leak_classes", leak_classes_json(h));
	json_object_set_new(proc, "suppressed", json_pack("{s:I,s:I}", "bytes", (json_int_t)sb,
							  "blocks", (json_int_t)sn));
}

static void heap_leaks_print(FILE *out, struct process *p, const struct leak_view *v)
{
	const struct heap_stats *h = heap_of(p);
	char a[32], b[32], c[32];
	size_t n;
	uint64_t sb, sn;
	struct loss *l = losses(p, v, &n, &sb, &sn);
	if (n == 0 && !sb && (h->leak_scanned || p->exit_kind == EXIT_EXEC || !h->leaked_blocks)) {
		/* Nothing to list: one line, so that runs of many processes stay readable. */
		if (p->exit_kind == EXIT_EXEC)
			fprintf(out, "no leaks: the image was replaced by exec\n");
		else if (!h->leak_scanned)
			fprintf(out, "nothing in use %s\n", p->complete ? "at exit" : "when the trace ends");
		else
			fprintf(out, "no lost blocks; %s in %s block%s still reachable, %s possibly lost\n",
				fmt_bytes(h->class_bytes[PROF_LEAK_REACHABLE], a, sizeof(a)),
				fmt_count(h->class_blocks[PROF_LEAK_REACHABLE], b, sizeof(b)),
				h->class_blocks[PROF_LEAK_REACHABLE] == 1 ? "" : "s",
				fmt_bytes(h->class_bytes[PROF_LEAK_POSSIBLE], c, sizeof(c)));
		free(l);
		return;
	}
	for (size_t i = 0; l && i < n && i < v->top; i++) {
		const char *what = l[i].cls >= 0 ? class_text[l[i].cls]
			: p->complete ? "still allocated at exit" : "in use";
		fprintf(out, "\n%s bytes in %s block%s %s%s, loss record %zu of %zu, from:\n",
			fmt_count(l[i].bytes, a, sizeof(a)), fmt_count(l[i].blocks, b, sizeof(b)),
			l[i].blocks == 1 ? "" : "s", l[i].cls >= 0 ? "are " : "", what, i + 1, n);
		stack_print(out, p, l[i].stack, v->frames, "   ");
	}
	free(l);
	if (h->sample && n)
		fprintf(out, "\n(sampled trace, one allocation per %s: the loss records above are "
			"estimates; %s)\n", fmt_bytes(h->sample, a, sizeof(a)),
			h->tallied ? "in the summary below the blocks are exact, the bytes within "
				     "their rounding" : "the summary below is exact");
	fprintf(out, "\nLEAK SUMMARY:\n");
	if (h->leak_scanned) {
		for (unsigned i = 0; i < PROF_LEAK_CLASS_COUNT; i++) {
			unsigned k = class_order[i];
			fprintf(out, "   %15s: %s bytes in %s block%s\n", class_text[k],
				fmt_count(h->class_bytes[k], a, sizeof(a)),
				fmt_count(h->class_blocks[k], b, sizeof(b)), h->class_blocks[k] == 1 ? "" : "s");
		}
	} else {
		fprintf(out, "   %15s: %s bytes in %s block%s (%s)\n",
			p->exit_kind == EXIT_EXEC ? "exec'd" : p->complete ? "in use at exit" : "in use at end",
			fmt_count(h->leaked_bytes, a, sizeof(a)), fmt_count(h->leaked_blocks, b, sizeof(b)),
			h->leaked_blocks == 1 ? "" : "s",
			p->exit_kind == EXIT_EXEC ? "the image was replaced: nothing it held is a leak"
			: !p->complete ? "not classified: the process did not exit normally"
			: h->tallied ? "not classified: the sampled mode knows too few blocks one by one"
				     : "not classified: the trace has no leak check (PROF_LEAK_CHECK=0, or "
				       "the process ended by _exit(), which skips it)");
	}
	if (v->supp)
		fprintf(out, "   %15s: %s bytes in %s block%s\n", "suppressed", fmt_count(sb, a, sizeof(a)),
			fmt_count(sn, b, sizeof(b)), sn == 1 ? "" : "s");
	if (h->leak_scanned && v->show != ~0u)
		fprintf(out, "   (shown: definitely and indirectly lost; --show=all for the rest)\n");
}

/* ---- flame graphs ----------------------------------------------------------------------- */

static int sites_flame(struct process *p, uint64_t (*key)(const struct heap_site *),
		       flame_emit_fn emit, void *ctx)
{
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, key, &n);
	if (!v)
		return -1;
	for (size_t j = 0; j < n; j++)
		emit(ctx, v[j].stack, key(v[j].s));
	free(v);
	return 0;
}

static int alloc_flame(struct process *p, const char *by, flame_emit_fn emit, void *ctx)
{
	return sites_flame(p, strcmp(by, "calls") ? site_key_bytes : site_key_calls, emit, ctx);
}

static int leak_flame(struct process *p, const char *by, flame_emit_fn emit, void *ctx)
{
	(void)by;
	return sites_flame(p, site_key_leaked, emit, ctx);
}

static const struct flame_kind heap_flames[] = {
	{ "alloc", "bytes allocated (--by calls: allocation calls)",
	  { { "bytes", "Heap: bytes allocated by stack", "bytes" },
	    { "calls", "Heap: allocation calls by stack", "allocations" } }, alloc_flame },
	{ "leak", "bytes still allocated at exit",
	  { { "bytes", "Heap: bytes leaked by stack", "bytes" } }, leak_flame },
};

/* ---- timeline: the heap-size counter ---------------------------------------------------- */

/* At most two counter samples per HEAP_SAMPLE_NS: the largest value of the interval (at its
 * time, so peaks stay where they were) and the value at its end. An allocation-heavy program
 * would otherwise write one event per call. */
#define HEAP_SAMPLE_NS 1000000u

struct heap_timeline {
	struct heap_stats heap;
	uint64_t last_sample, sampled_bytes, last_time;
	uint64_t top, top_time;  /* the interval's largest value since the last sample */
};

static int heap_tl_init(void *state)
{
	struct heap_timeline *s = state;
	heap_init(&s->heap);
	s->sampled_bytes = UINT64_MAX;
	return 0;
}

static void heap_tl_free(void *state)
{
	heap_free(&((struct heap_timeline *)state)->heap);
}

/* The interval's peak, where it was not the value sampled last, then the value at time. */
static void heap_tl_sample(struct heap_timeline *s, struct timeline *tl, uint64_t time)
{
	if (s->top > s->heap.current && s->top != s->sampled_bytes)
		tl_counter(tl, "heap", s->top_time, "bytes", s->top);
	tl_counter(tl, "heap", time, "bytes", s->heap.current);
	s->last_sample = time;
	s->sampled_bytes = s->heap.current;
	s->top = 0;
}

static int heap_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	struct heap_timeline *s = state;
	const struct prof_rec *h = ev->rec;
	int rc;
	if (h->type == PROF_REC_ALLOC) {
		const struct prof_rec_alloc *r = (const void *)h;
		rc = heap_alloc(&s->heap, ev->stream, h->time, r->ptr, r->size, r->stack, h->flags);
	} else if (h->type == PROF_REC_HEAP_TALLY) {
		const struct prof_rec_heap_tally *r = (const void *)h;
		s->heap.tallied = 1;
		rc = heap_tally(&s->heap, h->time, r->serial, r);
	} else if (h->type != PROF_REC_FREE) {
		return 0;  /* the leak check's records */
	} else {
		rc = heap_release(&s->heap, ev->stream, ((const struct prof_rec_free *)h)->ptr,
				  (h->flags & PROF_FREE_REALLOC) != 0);
	}
	s->last_time = h->time;
	if (s->heap.current > s->top) {
		s->top = s->heap.current;
		s->top_time = h->time;
	}
	if (s->heap.current != s->sampled_bytes &&
	    (s->sampled_bytes == UINT64_MAX || h->time >= s->last_sample + HEAP_SAMPLE_NS))
		heap_tl_sample(s, tl, h->time);
	return rc;
}

static int heap_tl_finish(void *state, struct timeline *tl)
{
	struct heap_timeline *s = state;
	if (s->sampled_bytes != UINT64_MAX &&
	    (s->heap.current != s->sampled_bytes || s->top > s->heap.current))
		heap_tl_sample(s, tl, s->last_time);  /* the last peak, and where the heap ended */
	return 0;
}

static const struct family_timeline heap_timeline = {
	sizeof(struct heap_timeline), heap_tl_init, heap_tl_free, NULL, heap_tl_event,
	heap_tl_finish,
};

/* ---- dump ------------------------------------------------------------------------------- */

static void heap_dump(FILE *out, const struct prof_rec *r)
{
	if (r->type == PROF_REC_LEAK_SCAN) {
		const struct prof_rec_leak_scan *l = (const void *)r;
		fprintf(out, " blocks=%u listed=%u root_bytes=%" PRIu64 "%s", l->blocks, l->listed,
			l->root_bytes,
			r->flags & PROF_LEAK_OTHER_THREADS ? " other_threads" : "");
	} else if (r->type == PROF_REC_LEAK_BLOCKS) {
		const struct prof_rec_leak_blocks *l = (const void *)r;
		fprintf(out, " class=%s count=%u", r->flags < PROF_LEAK_CLASS_COUNT ?
			class_key[r->flags] : "?", l->count);
	} else if (r->type == PROF_REC_HEAP_CLASSES) {
		const struct prof_rec_heap_classes *c = (const void *)r;
		fprintf(out, " thread=%u classes=%u", c->serial, c->count);
	} else if (r->type == PROF_REC_HEAP_TALLY) {
		const struct prof_rec_heap_tally *t = (const void *)r;
		fprintf(out, " thread=%u alloc_calls=%" PRIu64 " alloc_bytes=%" PRIu64
			" free_calls=%" PRIu64 " free_bytes=%" PRIu64, t->serial, t->alloc_calls,
			t->alloc_bytes, t->free_calls, t->free_bytes);
	} else if (r->type == PROF_REC_ALLOC) {
		const struct prof_rec_alloc *a = (const void *)r;
		fprintf(out, " %s ptr=0x%" PRIx64 " size=%" PRIu64 " stack=%u",
			prof_alloc_fn_name(r->flags & PROF_ALLOC_FN_MASK), a->ptr, a->size, a->stack);
	} else {
		fprintf(out, " ptr=0x%" PRIx64 "%s", ((const struct prof_rec_free *)r)->ptr,
			r->flags & PROF_FREE_REALLOC ? " (realloc)" : "");
	}
}

static uint64_t heap_peak(const struct process *p)
{
	return heap_of(p)->peak;
}

static const struct family_figure heap_figures[] = {
	{ "heap peak", "heap_peak_bytes", 1, heap_peak, 0 },
};

static const struct family_diff heap_diffs[] = {
	{ "Heap sites by bytes allocated", "sites", "stack", "bytes" },
	{ "Heap sites by bytes still allocated (at the end, or at the moment)", "sites", "stack",
	  "leaked_bytes" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int heap_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	const struct prof_rec *h = ev->rec;
	int64_t pid = sql_pid(o), tid = ev->tid, t = (int64_t)process_rel_time(p, h->time);
	if (h->type == PROF_REC_ALLOC) {
		const struct prof_rec_alloc *r = (const void *)h;
		return sql_row(o, "allocations", "iiiiiit", pid, tid, t, (int64_t)r->ptr,
			       (int64_t)r->size, (int64_t)r->stack, prof_alloc_fn_name(h->flags & PROF_ALLOC_FN_MASK));
	}
	if (h->type == PROF_REC_FREE)
		return sql_row(o, "frees", "iiii", pid, tid, t,
			       (int64_t)((const struct prof_rec_free *)h)->ptr);
	return 0;
}

const struct family heap_family = {
	.name = "heap",
	.first_type = PROF_HEAP_TYPE_FIRST,
	.last_type = PROF_HEAP_TYPE_LAST,
	.more_first = PROF_LEAK_TYPE_FIRST,
	.more_last = PROF_LEAK_TYPE_LAST,
	.state_size = sizeof(struct heap_stats),
	.init = heap_init,
	.free = heap_free,
	.on_record = heap_on_record,
	.finish = heap_family_finish,
	.has_data = heap_has_data,
	.json_key = "heap",
	.json = heap_json,
	.print = heap_print,
	.brief = heap_brief,
	.leaks_print = heap_leaks_print,
	.leaks_json = heap_leaks_json,
	.flames = heap_flames,
	.nflames = sizeof(heap_flames) / sizeof(heap_flames[0]),
	.timeline = &heap_timeline,
	.series = heap_series,
	.series_title = "Heap in use (bytes)",
	.dump = heap_dump,
	.diffs = heap_diffs,
	.not_summed = "peak_ns,sample_bytes",
	.ndiffs = sizeof(heap_diffs) / sizeof(heap_diffs[0]),
	.figures = heap_figures,
	.nfigures = sizeof(heap_figures) / sizeof(heap_figures[0]),
	.sql_schema = "CREATE TABLE allocations(pid INTEGER, tid INTEGER, time_ns INTEGER, ptr INTEGER,"
	" size INTEGER, stack INTEGER, function TEXT);\n"
	"CREATE TABLE frees(pid INTEGER, tid INTEGER, time_ns INTEGER, ptr INTEGER);\n",
	.sql_row = heap_sql_row,
	.sum_version = 2,  /* 2: tallied */
	.sum_write = heap_sum_write,
	.sum_read = heap_sum_read,
};
