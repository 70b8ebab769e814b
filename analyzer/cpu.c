/* The CPU family: where threads spent CPU time (CPU_SAMPLE records, each standing for the
 * period of CPU time its thread used) and where they were blocked (CPU_BLOCKED for sleeps,
 * poll and waits; the lock, join and I/O records of the other families, which it observes).
 *
 * Wall-clock time is CPU time plus blocked time, so a call counts as blocked only for the part
 * of it the thread spent off the CPU: its duration less the sampled CPU time inside it (a read
 * from the page cache is CPU time, not a wait). Samples are matched to calls per thread with a
 * short ring of the thread's latest samples: records end calls (LOCK_WAIT, THREAD_JOIN,
 * CPU_BLOCKED carry their end time, after the samples inside them), except I/O and MPI calls,
 * which carry their start and wait in a short queue until a later record of the thread shows
 * that every sample inside them has been seen. An MPI call's time off the CPU is a wait for
 * the job's other ranks (cause "mpi"): a rank blocked in MPI_Allreduce is blocked, not
 * computing. */
#include "exports.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "summary.h"
#include "timeline.h"
#include "trace.h"
#include "u64map.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RING 64     /* latest samples per thread */
#define PENDING 8   /* I/O calls per thread waiting for their samples */

struct pending_call {
	uint64_t start, end;
	uint32_t stack;
	uint8_t cause;
};

struct cpu_thread {
	uint64_t samples, sampled_ns, blocked_ns[PROF_CAUSE_COUNT];
	uint64_t ring_t[RING], ring_ns[RING];
	/* The latest blocked calls (end, ns off the CPU): what an MPI call's own waits inside it
	 * (a poll, a lock) already count, in whichever order their records came. */
	uint64_t bring_t[RING], bring_ns[RING];
	uint32_t ring_pos, npending, bring_pos, pad;
	struct pending_call pending[PENDING];
};

/* A stack's weight: samples (and the CPU time they stand for). */
struct cpu_weight {
	uint64_t samples, ns;
};

struct cpu_state {
	uint64_t samples, sampled_ns, in_prof;
	uint64_t blocked_ns[PROF_CAUSE_COUNT];
	struct u64map threads;   /* serial -> struct cpu_thread */
	struct u64map stacks;    /* stack | PROF_SAMPLE_IN_PROF << 32 -> struct cpu_weight */
	struct u64map pcs;       /* PC -> struct cpu_weight, of samples without a stack */
	struct u64map blocked;   /* stack | cause << 32 -> blocked ns (uint64_t) */
	struct cpu_thread *last; /* thread_of()'s latest answer, for last_serial */
	uint32_t last_serial;
};

extern const struct family cpu_family;

static struct cpu_state *cpu_of(const struct process *p)
{
	return process_family_state(p, &cpu_family);
}

static void cpu_init(void *state)
{
	struct cpu_state *s = state;
	u64map_init(&s->threads, sizeof(struct cpu_thread));
	u64map_init(&s->stacks, sizeof(struct cpu_weight));
	u64map_init(&s->pcs, sizeof(struct cpu_weight));
	u64map_init(&s->blocked, sizeof(uint64_t));
}

static void cpu_free(void *state)
{
	struct cpu_state *s = state;
	u64map_free(&s->threads);
	u64map_free(&s->stacks);
	u64map_free(&s->pcs);
	u64map_free(&s->blocked);
}

/* ---- folding records -------------------------------------------------------------------- */

/* CPU time the thread was sampled using in (start, end]: the ring holds its latest samples in
 * time order, newest at ring_pos - 1, so the walk stops at the first one before start. */
static uint64_t sampled_in(const struct cpu_thread *t, uint64_t start, uint64_t end)
{
	uint64_t ns = 0;
	for (uint32_t k = 1; k <= RING; k++) {
		uint32_t i = (t->ring_pos + RING - k) % RING;
		if (!t->ring_ns[i] || t->ring_t[i] <= start)
			break;
		if (t->ring_t[i] <= end)
			ns += t->ring_ns[i];
	}
	return ns;
}

/* Time off the CPU already counted for calls that ended in (start, end]. */
static uint64_t blocked_in(const struct cpu_thread *t, uint64_t start, uint64_t end)
{
	uint64_t ns = 0;
	for (uint32_t i = 0; i < RING; i++)
		if (t->bring_t[i] > start && t->bring_t[i] <= end)
			ns += t->bring_ns[i];
	return ns;
}

static int add_blocked(struct cpu_state *s, struct cpu_thread *t, uint64_t start, uint64_t end,
		       uint32_t stack, unsigned cause)
{
	uint64_t dur = end > start ? end - start : 0, cpu = sampled_in(t, start, end);
	if (cause == PROF_CAUSE_MPI)  /* MPI's own blocking calls inside it: counted once */
		cpu += blocked_in(t, start, end);
	uint64_t off = dur > cpu ? dur - cpu : 0;
	if (!off)
		return 0;
	t->bring_t[t->bring_pos] = end;
	t->bring_ns[t->bring_pos] = off;
	t->bring_pos = (t->bring_pos + 1) % RING;
	t->blocked_ns[cause] += off;
	s->blocked_ns[cause] += off;
	uint64_t *w = u64map_put(&s->blocked, (uint64_t)cause << 32 | stack, NULL);
	if (!w)
		return -1;
	*w += off;
	return 0;
}

/* I/O calls whose end is at or before now: every sample inside them has been seen. */
static int settle(struct cpu_state *s, struct cpu_thread *t, uint64_t now)
{
	int rc = 0;
	/* The earliest end first: a call made inside an MPI call is counted before it. */
	for (;;) {
		uint32_t first = t->npending;
		for (uint32_t i = 0; i < t->npending; i++)
			if (t->pending[i].end <= now &&
			    (first == t->npending || t->pending[i].end < t->pending[first].end))
				first = i;
		if (first == t->npending)
			return rc;
		struct pending_call c = t->pending[first];
		memmove(&t->pending[first], &t->pending[first + 1],
			(t->npending - first - 1) * sizeof(c));
		t->npending--;
		rc |= add_blocked(s, t, c.start, c.end, c.stack, c.cause);
	}
}

/* The state of the record's thread. Records come in runs of one thread: the last one found is
 * kept (until a new thread's insertion may move the map's values). */
static struct cpu_thread *thread_of(struct cpu_state *s, const struct trace_event *ev)
{
	uint32_t serial = ev->stream / 2;
	if (s->last && s->last_serial == serial)
		return s->last;
	struct cpu_thread *t = u64map_put(&s->threads, serial, NULL);
	s->last = t;
	s->last_serial = serial;
	return t;
}

static int on_sample(struct process *p, struct cpu_state *s, const struct trace_event *ev)
{
	const struct prof_rec_cpu_sample *r = (const void *)ev->rec;
	struct cpu_thread *t = thread_of(s, ev);
	if (!t)
		return -1;
	struct thread_info *ti = process_thread(p, ev->stream / 2);
	if (ti)  /* its CPU time, should it never end (thread_cpu_ns()) */
		ti->sampled_ns += r->period_ns;
	if (settle(s, t, r->h.time) < 0)
		return -1;
	t->samples++;
	t->sampled_ns += r->period_ns;
	t->ring_t[t->ring_pos] = r->h.time;
	t->ring_ns[t->ring_pos] = r->period_ns;
	t->ring_pos = (t->ring_pos + 1) % RING;
	s->samples++;
	s->sampled_ns += r->period_ns;
	s->in_prof += (r->h.flags & PROF_SAMPLE_IN_PROF) != 0;
	/* Without stacks (PROF_STACK_DEPTH=0) the PC still says which function ran. */
	uint64_t key = (uint64_t)(r->h.flags & PROF_SAMPLE_IN_PROF) << 32 | r->stack;
	struct cpu_weight *w = !r->stack && r->pc ? u64map_put(&s->pcs, r->pc, NULL)
						  : u64map_put(&s->stacks, key, NULL);
	if (!w)
		return -1;
	w->samples++;
	w->ns += r->period_ns;
	return 0;
}

static int cpu_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	struct cpu_state *s = state;
	if (ev->rec->type == PROF_REC_CPU_SAMPLE)
		return on_sample(p, s, ev);
	if (ev->rec->type != PROF_REC_CPU_BLOCKED)
		return 0;
	const struct prof_rec_cpu_blocked *r = (const void *)ev->rec;
	struct cpu_thread *t = thread_of(s, ev);
	uint64_t end = r->h.time, start = end > r->duration_ns ? end - r->duration_ns : 0;
	return !t || settle(s, t, end) < 0 ||
	       add_blocked(s, t, start, end, r->stack, prof_block_op_cause(r->h.flags)) < 0 ? -1 : 0;
}

/* An I/O or MPI call (h.time its start): settled at once without sampling, else queued until
 * the samples inside it have been read. */
static int add_call(struct process *p, struct cpu_state *s, const struct trace_event *ev,
		    uint64_t duration_ns, uint32_t stack, unsigned cause)
{
	uint64_t start = ev->rec->time;
	struct cpu_thread *t = thread_of(s, ev);
	if (!t || settle(s, t, start) < 0)
		return -1;
	/* No samples will come: settled at once; but an MPI call waits for the blocking calls
	 * made inside it, whose records may come after its own. */
	if (!p->hdr.cpu_hz && cause != PROF_CAUSE_MPI)
		return add_blocked(s, t, start, start + duration_ns, stack, cause);
	if (t->npending == PENDING && settle(s, t, UINT64_MAX) < 0)  /* full: settle early */
		return -1;
	t->pending[t->npending++] = (struct pending_call){ start, start + duration_ns, stack,
							   (uint8_t)cause };
	return 0;
}

/* Lock waits, joins, I/O and MPI calls, read after their own families have. */
static int cpu_observe(struct process *p, void *state, const struct trace_event *ev)
{
	struct cpu_state *s = state;
	const struct prof_rec *h = ev->rec;
	uint64_t end, start;
	uint32_t stack = 0;
	unsigned cause;
	switch (h->type) {
	case PROF_REC_LOCK_WAIT: {
		const struct prof_rec_lock_wait *r = (const void *)h;
		end = h->time;
		start = end > r->wait_ns ? end - r->wait_ns : 0;
		stack = r->stack;
		cause = r->kind == PROF_LOCK_COND || r->kind == PROF_LOCK_BARRIER ? PROF_CAUSE_COND
										   : PROF_CAUSE_LOCK;
		break;
	}
	case PROF_REC_THREAD_JOIN: {
		const struct prof_rec_thread_join *r = (const void *)h;
		if (h->flags != PROF_THREAD_JOIN)
			return 0;
		end = h->time;
		start = end > r->wait_ns ? end - r->wait_ns : 0;
		stack = r->stack;
		cause = PROF_CAUSE_JOIN;
		break;
	}
	case PROF_REC_IO_CALL:
	case PROF_REC_IO_NAME: {
		const struct prof_rec_io_call *r = (const void *)h;
		if (prof_io_op_class(h->flags) == 'n' || !r->duration_ns)
			return 0;
		return add_call(p, s, ev, r->duration_ns, r->stack, PROF_CAUSE_IO);
	}
	case PROF_REC_MPI_CALL: {
		const struct prof_rec_mpi_call *r = (const void *)h;
		return r->duration_ns ? add_call(p, s, ev, r->duration_ns, r->stack, PROF_CAUSE_MPI) : 0;
	}
	default:
		return 0;
	}
	struct cpu_thread *t = thread_of(s, ev);
	return !t || settle(s, t, end) < 0 || add_blocked(s, t, start, end, stack, cause) < 0 ? -1 : 0;
}

/* The last I/O calls; and which stacks have an exact PC as their frame 0 (stackfmt.c). */
static int cpu_finish(struct process *p)
{
	struct cpu_state *s = cpu_of(p);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->threads, &pos, &key, &val))
		if (settle(s, val, UINT64_MAX) < 0)
			return -1;
	for (pos = 0; u64map_next(&s->stacks, &pos, &key, &val);) {
		struct stack_info *si = u64map_get(&p->stacks, (uint32_t)key);
		if (si && !(key >> 32))
			si->leaf_exact = 1;
	}
	return 0;
}

static int cpu_has_data(const struct process *p)
{
	const struct cpu_state *s = cpu_of(p);
	uint64_t blocked = 0;
	for (int c = 0; c < PROF_CAUSE_COUNT; c++)
		blocked += s->blocked_ns[c];
	return s->samples > 0 || ((p->hdr.events & PROF_EV_CPU) && blocked > 0);
}

/* ---- functions ---------------------------------------------------------------------------- */

/* self, total: samples; self_ns, total_ns: the CPU time they stand for, which shares are
 * computed from (a sample that waited for a kernel tick stands for several periods). */
struct cpu_fn {
	const char *name, *file, *module;
	int line;
	int line_self;       /* the line shown is where the function was the leaf */
	uint64_t line_w;     /* the samples of the stack it was taken from */
	uint64_t self, total, self_ns, total_ns, seen_in;
};

/* The file:line shown for a function: from its heaviest stack where it is the leaf, else
 * from its heaviest stack at all; equal weights go to the lower line, then file, so that the
 * choice does not depend on the order stacks come in (the maps' order varies per run). */
static void consider_line(struct cpu_fn *f, const struct sym_frame *fr, uint64_t w, int self)
{
	if (f->module) {
		if (f->line_self != self) {
			if (f->line_self)
				return;
		} else if (w < f->line_w) {
			return;
		} else if (w == f->line_w) {
			int c = fr->line - f->line;
			if (!c)
				c = strcmp(fr->file ? fr->file : "", f->file ? f->file : "");
			if (c >= 0)
				return;
		}
	}
	f->line_self = self;
	f->line_w = w;
	f->file = fr->file;
	f->line = fr->line;
	f->module = fr->module;
}

struct fn_table {
	struct u64map index;  /* hash of the name -> position in v (uint64_t) */
	struct cpu_fn *v;
	size_t n;
	char **names;
};

static void fns_free(struct fn_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->v);
	u64map_free(&t->index);
}

/* Adds one sampled stack (frames[0..n), innermost first; n 0: none) of weight w. */
static int fns_add(struct fn_table *t, const struct sym_frame *frames, int n,
		   const struct cpu_weight *w, size_t *cap, uint64_t visit)
{
	for (int i = 0; i < (n ? n : 1); i++) {
		char buf[256];
		const char *label = n ? frame_label(&frames[i], buf, sizeof(buf)) : "[no stack]";
		int created;
		uint64_t *at = u64map_put(&t->index, str_hash(label), &created);
		if (!at)
			return -1;
		if (created) {
			if (t->n == *cap) {
				*cap = *cap ? *cap * 2 : 64;
				struct cpu_fn *v = realloc(t->v, *cap * sizeof(*v));
				char **names = realloc(t->names, *cap * sizeof(*names));
				if (v)
					t->v = v;
				if (names)
					t->names = names;
				if (!v || !names)
					return -1;
			}
			if (!(t->names[t->n] = strdup(label)))
				return -1;
			t->v[t->n] = (struct cpu_fn){ .name = t->names[t->n] };
			*at = t->n++;
		}
		struct cpu_fn *f = &t->v[*at];
		if (i == 0) {
			f->self += w->samples;
			f->self_ns += w->ns;
		}
		if (n)
			consider_line(f, &frames[i], w->samples, i == 0);
		if (f->seen_in != visit) {  /* recursion counts once */
			f->seen_in = visit;
			f->total += w->samples;
			f->total_ns += w->ns;
		}
	}
	return 0;
}

/* Self and total samples per function, over every sampled stack (and PC without one). -1
 * when out of memory. */
static int fns_build(struct process *p, struct fn_table *t)
{
	const struct cpu_state *s = cpu_of(p);
	memset(t, 0, sizeof(*t));
	u64map_init(&t->index, sizeof(uint64_t));
	size_t cap = 0, pos = 0;
	uint64_t key, visit = 0;
	void *val;
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	while (u64map_next(&s->stacks, &pos, &key, &val)) {
		int n = stack_symbolize(p, (uint32_t)key, frames, PROF_MAX_STACK_DEPTH * 2);
		if (fns_add(t, frames, n, val, &cap, ++visit) < 0)
			return -1;
	}
	for (pos = 0; u64map_next(&s->pcs, &pos, &key, &val);) {
		int n = addr_symbolize(p, key, frames);
		if (fns_add(t, frames, n, val, &cap, ++visit) < 0)
			return -1;
	}
	return 0;
}

static int by_self(const void *a, const void *b)
{
	const struct cpu_fn *x = a, *y = b;
	if (x->self_ns != y->self_ns)
		return x->self_ns < y->self_ns ? 1 : -1;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_total(const void *a, const void *b)
{
	const struct cpu_fn *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return by_self(a, b);
}

/* ---- threads ------------------------------------------------------------------------------ */

static uint64_t sum_causes(const uint64_t *v)
{
	uint64_t n = 0;
	for (int c = 0; c < PROF_CAUSE_COUNT; c++)
		n += v[c];
	return n;
}

static json_t *causes_json(const uint64_t *v)
{
	json_t *o = json_object();
	for (int c = 0; c < PROF_CAUSE_COUNT; c++)
		json_object_set_new(o, prof_block_cause_name((unsigned)c), json_integer((json_int_t)v[c]));
	return o;
}

/* ---- report ------------------------------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static json_t *fn_json(const struct cpu_fn *f, uint64_t cpu_ns)
{
	json_t *o = json_pack("{s:o,s:I,s:I}", "function", jstr(f->name), "self", (json_int_t)f->self,
			      "total", (json_int_t)f->total);
	json_object_set_new(o, "file", jstr(f->file));
	json_object_set_new(o, "line", f->line ? json_integer(f->line) : json_null());
	json_object_set_new(o, "module", jstr(f->module));
	json_object_set_new(o, "self_ns", json_integer((json_int_t)f->self_ns));
	json_object_set_new(o, "total_ns", json_integer((json_int_t)f->total_ns));
	json_object_set_new(o, "self_pct", json_real(pct(f->self_ns, cpu_ns)));
	json_object_set_new(o, "total_pct", json_real(pct(f->total_ns, cpu_ns)));
	return o;
}

/* Samples per second of CPU time: PROF_CPU_HZ, or less where the kernel's tick is slower. */
static double rate_hz(const struct cpu_state *s)
{
	return s->sampled_ns ? (double)s->samples * 1e9 / (double)s->sampled_ns : 0;
}

static json_t *cpu_json(struct process *p, size_t top)
{
	const struct cpu_state *s = cpu_of(p);
	json_t *o = json_pack("{s:I,s:I}", "samples", (json_int_t)s->samples, "hz",
			      (json_int_t)p->hdr.cpu_hz);
	json_object_set_new(o, "period_ns", json_integer(p->hdr.cpu_hz ? 1000000000 / p->hdr.cpu_hz : 0));
	json_object_set_new(o, "cpu_ns", json_integer((json_int_t)s->sampled_ns));
	json_object_set_new(o, "rate_hz", json_real(rate_hz(s)));
	json_object_set_new(o, "in_libprof", json_integer((json_int_t)s->in_prof));
	json_object_set_new(o, "blocked_ns", json_integer((json_int_t)sum_causes(s->blocked_ns)));
	json_object_set_new(o, "blocked", causes_json(s->blocked_ns));
	json_t *topv = json_array(), *totv = json_array();
	struct fn_table t;
	if (fns_build(p, &t) == 0 && t.n) {
		qsort(t.v, t.n, sizeof(*t.v), by_self);
		for (size_t i = 0; i < t.n && i < top; i++)
			json_array_append_new(topv, fn_json(&t.v[i], s->sampled_ns));
		qsort(t.v, t.n, sizeof(*t.v), by_total);
		for (size_t i = 0; i < t.n && i < top; i++)
			json_array_append_new(totv, fn_json(&t.v[i], s->sampled_ns));
	}
	fns_free(&t);
	json_object_set_new(o, "top", topv);
	json_object_set_new(o, "top_total", totv);
	json_t *threads = json_array();
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *ti = &p->threads[i];
		const struct cpu_thread *ct = u64map_get(&s->threads, ti->serial);
		static const uint64_t none[PROF_CAUSE_COUNT];
		const uint64_t *b = ct ? ct->blocked_ns : none;
		json_t *th = json_pack("{s:I,s:o,s:I,s:I,s:I}", "tid", (json_int_t)ti->tid, "name",
				       jstr(ti->name), "samples", (json_int_t)(ct ? ct->samples : 0),
				       "cpu_ns", (json_int_t)thread_cpu_ns(p, ti),
				       "sampled_ns", (json_int_t)(ct ? ct->sampled_ns : 0));
		json_object_set_new(th, "blocked_ns", json_integer((json_int_t)sum_causes(b)));
		json_object_set_new(th, "blocked", causes_json(b));
		json_array_append_new(threads, th);
	}
	json_object_set_new(o, "threads", threads);
	return o;
}

static void print_fns(FILE *out, struct cpu_fn *v, size_t n, size_t top, uint64_t cpu_ns,
		      int self_only, const char *title)
{
	char a[32], b[32];
	fprintf(out, "\n   %s\n   %7s %10s %7s %10s  %s\n", title, "SELF%", "SELF", "TOTAL%", "TOTAL",
		"FUNCTION");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct cpu_fn *f = &v[i];
		if (!f->total || (self_only && !f->self))
			break;
		fprintf(out, "   %6.1f%% %10s %6.1f%% %10s  %s", pct(f->self_ns, cpu_ns),
			fmt_ns(f->self_ns, a, sizeof(a)), pct(f->total_ns, cpu_ns),
			fmt_ns(f->total_ns, b, sizeof(b)), f->name);
		if (f->file)
			fprintf(out, " (%s:%d)", f->file, f->line);
		else if (f->module)
			fprintf(out, " (in %s)", f->module);
		fputc('\n', out);
	}
	if (n > top && v[top].total && (!self_only || v[top].self))
		fprintf(out, "   ... more functions (--top N shows more)\n");
}

static void cpu_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)frames;
	const struct cpu_state *s = cpu_of(p);
	char a[32], b[32], c[32], d[32];
	if (s->samples)
		fprintf(out, "\n-- CPU (%s sample%s, %.0f per second of CPU time (PROF_CPU_HZ=%u): %s of CPU; %s blocked)\n",
			fmt_count(s->samples, a, sizeof(a)), s->samples == 1 ? "" : "s", rate_hz(s), p->hdr.cpu_hz,
			fmt_ns(s->sampled_ns, b, sizeof(b)), fmt_ns(sum_causes(s->blocked_ns), c, sizeof(c)));
	else
		fprintf(out, "\n-- CPU (no samples (PROF_CPU_HZ=%u); %s blocked)\n", p->hdr.cpu_hz,
			fmt_ns(sum_causes(s->blocked_ns), c, sizeof(c)));
	if (s->in_prof)
		fprintf(out, "   %" PRIu64 " of them landed inside libprof's hooks and count for the program's callers\n",
			s->in_prof);
	struct fn_table t;
	if (s->samples && fns_build(p, &t) == 0 && t.n) {
		qsort(t.v, t.n, sizeof(*t.v), by_self);
		print_fns(out, t.v, t.n, top, s->sampled_ns, 1, "Top functions by self time (CPU time in the function itself):");
		qsort(t.v, t.n, sizeof(*t.v), by_total);
		print_fns(out, t.v, t.n, top, s->sampled_ns, 0, "Top functions by total time (in it or its callees):");
	} else if (s->samples) {
		fprintf(out, "   (out of memory)\n");
	}
	if (s->samples)
		fns_free(&t);
	fprintf(out, "\n   Per thread: CPU time and time blocked, by cause\n   %-8s %-16s %10s %10s", "TID",
		"NAME", "CPU", "BLOCKED");
	for (int k = 0; k < PROF_CAUSE_COUNT; k++)
		fprintf(out, " %9s", prof_block_cause_name((unsigned)k));
	fputc('\n', out);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *ti = &p->threads[i];
		const struct cpu_thread *ct = u64map_get(&s->threads, ti->serial);
		static const uint64_t none[PROF_CAUSE_COUNT];
		const uint64_t *bl = ct ? ct->blocked_ns : none;
		char name[64];
		fprintf(out, "   %-8u %-16s %10s %10s", ti->tid,
			ti->name[0] ? fmt_arg(ti->name, name, sizeof(name)) : "?",
			fmt_ns(thread_cpu_ns(p, ti), a, sizeof(a)), fmt_ns(sum_causes(bl), d, sizeof(d)));
		for (int k = 0; k < PROF_CAUSE_COUNT; k++)
			fprintf(out, " %9s", bl[k] ? fmt_ns(bl[k], c, sizeof(c)) : "-");
		fputc('\n', out);
	}
}

static void cpu_brief(FILE *out, const struct process *p)
{
	char a[32];
	fprintf(out, ", %s CPU samples", fmt_count(cpu_of(p)->samples, a, sizeof(a)));
}

/* ---- flame graphs ------------------------------------------------------------------------- */

/* The frame a blocked stack gets under it in flame graphs, by cause. */
static const char *const cause_leaf[] = {
	[PROF_CAUSE_LOCK] = "[lock wait]", [PROF_CAUSE_COND] = "[condition wait]",
	[PROF_CAUSE_JOIN] = "[join]", [PROF_CAUSE_IO] = "[I/O]", [PROF_CAUSE_SLEEP] = "[sleep]",
	[PROF_CAUSE_POLL] = "[poll]", [PROF_CAUSE_WAIT] = "[child wait]",
	[PROF_CAUSE_SIGNAL] = "[signal wait]", [PROF_CAUSE_MPI] = "[MPI wait]",
};
_Static_assert(sizeof(cause_leaf) / sizeof(cause_leaf[0]) == PROF_CAUSE_COUNT,
	       "a flame frame for every cause");

/* Samples without a stack go under "[no stack]", as stack 0. */
static int flame_samples(struct process *p, int by_ns, flame_emit_labeled_fn emit, void *ctx)
{
	const struct u64map *maps[2] = { &cpu_of(p)->stacks, &cpu_of(p)->pcs };
	for (int m = 0; m < 2; m++) {
		size_t pos = 0;
		uint64_t key;
		void *val;
		while (u64map_next(maps[m], &pos, &key, &val)) {
			const struct cpu_weight *w = val;
			emit(ctx, m ? 0 : (uint32_t)key, NULL, by_ns ? w->ns : w->samples);
		}
	}
	return 0;
}

static int flame_blocked(struct process *p, flame_emit_labeled_fn emit, void *ctx)
{
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&cpu_of(p)->blocked, &pos, &key, &val))
		emit(ctx, (uint32_t)key, cause_leaf[key >> 32 < PROF_CAUSE_COUNT ? key >> 32 : 0],
		     *(uint64_t *)val);
	return 0;
}

/* cpu: samples (or their CPU time); offcpu: blocked time, under a leaf that names the
 * cause; wall: both in ns. */
static int cpu_flame(struct process *p, const struct flame_kind *kind, const char *by,
		     flame_emit_labeled_fn emit, void *ctx)
{
	int cpu = !strcmp(kind->name, "cpu"), wall = !strcmp(kind->name, "wall");
	if ((cpu || wall) && flame_samples(p, wall || (by && !strcmp(by, "ns")), emit, ctx) < 0)
		return -1;
	return cpu ? 0 : flame_blocked(p, emit, ctx);
}

static const struct flame_kind cpu_flames[] = {
	{ "cpu", "CPU time, by the stacks samples caught",
	  { { "samples", "CPU samples by stack", "samples" }, { "ns", "CPU time by stack", "ns" } },
	  NULL },
	{ "offcpu", "time blocked (locks, joins, I/O, sleeps, poll, waits), by stack and cause",
	  { { "ns", "Off-CPU time by stack", "ns" } }, NULL },
	{ "wall", "CPU and blocked time together, by stack (a sample counts as its period)",
	  { { "ns", "Wall-clock time by stack", "ns" } }, NULL },
};

/* ---- timeline and dump -------------------------------------------------------------------- */

#define TL_FRAMES 16  /* frames of a sample's stack named in the timeline */

/* A sample as an instant named by the function it caught, with its stack (innermost first). */
static void tl_sample(struct timeline *tl, const struct trace_event *ev)
{
	const struct prof_rec_cpu_sample *r = (const void *)ev->rec;
	struct sym_frame frames[TL_FRAMES];
	char buf[256], name[300];
	int n = 0;
	if (tl->proc && r->stack)
		n = stack_symbolize(tl->proc, r->stack, frames, TL_FRAMES);
	else if (tl->proc && r->pc)
		n = addr_symbolize(tl->proc, r->pc, frames);
	snprintf(name, sizeof(name), "%s", n ? frame_label(&frames[0], buf, sizeof(buf)) : "cpu sample");
	tl_begin(tl, "i", "cpu", ev->tid);
	fputs(",\"s\":\"t\",\"name\":", tl->out);
	tl_string(tl->out, name);
	fprintf(tl->out, ",\"ts\":%.3f,\"args\":{\"pc\":\"0x%" PRIx64 "\",\"period_ns\":%" PRIu64
		",\"stack\":[", tl_us(ev->rec->time), r->pc, r->period_ns);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', tl->out);
		tl_string(tl->out, frame_label(&frames[i], buf, sizeof(buf)));
	}
	fputs("]}", tl->out);
	tl_end(tl);
}

static int cpu_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	(void)state;
	const struct prof_rec *h = ev->rec;
	if (h->type == PROF_REC_CPU_SAMPLE) {
		tl_sample(tl, ev);
	} else if (h->type == PROF_REC_CPU_BLOCKED) {
		const struct prof_rec_cpu_blocked *r = (const void *)h;
		uint64_t start = h->time > r->duration_ns ? h->time - r->duration_ns : 0;
		tl_complete(tl, "blocked", ev->tid, prof_block_op_name(h->flags), start, r->duration_ns);
		fprintf(tl->out, ",\"args\":{\"cause\":\"%s\",\"result\":%" PRId64 "}",
			prof_block_cause_name(prof_block_op_cause(h->flags)), r->result);
		tl_end(tl);
	}
	return 0;
}

static const struct family_timeline cpu_timeline = { .event = cpu_tl_event };

static void cpu_dump(FILE *out, const struct prof_rec *r)
{
	if (r->type == PROF_REC_CPU_SAMPLE) {
		const struct prof_rec_cpu_sample *s = (const void *)r;
		fprintf(out, " pc=0x%" PRIx64 " period_ns=%" PRIu64 " stack=%u%s%s", s->pc, s->period_ns,
			s->stack, r->flags & PROF_SAMPLE_IN_PROF ? " in_libprof" : "",
			r->flags & PROF_SAMPLE_SITE_ONLY ? " site_only" : "");
	} else if (r->type == PROF_REC_CPU_BLOCKED) {
		const struct prof_rec_cpu_blocked *b = (const void *)r;
		fprintf(out, " %s duration_ns=%" PRIu64 " result=%" PRId64 " stack=%u",
			prof_block_op_name(r->flags), b->duration_ns, b->result, b->stack);
	}
}

static const struct family_diff cpu_diffs[] = {
	{ "CPU by function (self)", "top", "function", "self_ns" },
	{ "CPU by function (with callees)", "top_total", "function", "total_ns" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int cpu_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	if (ev->rec->type != PROF_REC_CPU_SAMPLE)
		return 0;
	const struct prof_rec_cpu_sample *r = (const void *)ev->rec;
	return sql_row(o, "samples", "iiiiii", sql_pid(o), (int64_t)ev->tid,
		       (int64_t)process_rel_time(p, r->h.time), (int64_t)r->pc,
		       (int64_t)r->period_ns, (int64_t)r->stack);
}

static void cpu_thread_times(struct process *p, const struct thread_info *t,
			     void (*add)(void *ctx, const char *cause, uint64_t ns), void *ctx)
{
	const struct cpu_thread *ct = u64map_get(&cpu_of(p)->threads, t->serial);
	add(ctx, "running", thread_cpu_ns(p, t));
	for (int c = 0; ct && c < PROF_CAUSE_COUNT; c++)
		add(ctx, prof_block_cause_name((unsigned)c), ct->blocked_ns[c]);
}

/* ---- summaries ---------------------------------------------------------------------------- */

static int cpu_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct cpu_state *s = state;
	(void)p;
	sum_put_u64(w, s->samples);
	sum_put_u64(w, s->sampled_ns);
	sum_put_u64(w, s->in_prof);
	sum_put_fixed(w, s->blocked_ns, sizeof(s->blocked_ns));
	sum_put_map(w, &s->threads);
	sum_put_map(w, &s->stacks);
	sum_put_map(w, &s->pcs);
	sum_put_map(w, &s->blocked);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->pcs, &pos, &key, &val))  /* named by addr_symbolize() */
		sum_want_addr(w, key);
	return 0;
}

static int cpu_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct cpu_state *s = state;
	(void)p;
	s->samples = sum_get_u64(r);
	s->sampled_ns = sum_get_u64(r);
	s->in_prof = sum_get_u64(r);
	sum_get_fixed(r, s->blocked_ns, sizeof(s->blocked_ns));
	if (sum_get_map(r, &s->threads) < 0 || sum_get_map(r, &s->stacks) < 0 ||
	    sum_get_map(r, &s->pcs) < 0 || sum_get_map(r, &s->blocked) < 0)
		return -1;
	s->last = NULL;
	return 0;
}

const struct family cpu_family = {
	.name = "cpu",
	.first_type = PROF_CPU_TYPE_FIRST,
	.last_type = PROF_CPU_TYPE_LAST,
	.observe_first = PROF_LOCK_TYPE_FIRST,
	.observe_last = PROF_IO_TYPE_LAST,
	.observe_more_first = PROF_MPI_TYPE_FIRST,
	.observe_more_last = PROF_MPI_TYPE_LAST,
	.state_size = sizeof(struct cpu_state),
	.init = cpu_init,
	.free = cpu_free,
	.on_record = cpu_on_record,
	.observe = cpu_observe,
	.finish = cpu_finish,
	.has_data = cpu_has_data,
	.json_key = "cpu",
	.json = cpu_json,
	.print = cpu_print,
	.brief = cpu_brief,
	.flames = cpu_flames,
	.nflames = sizeof(cpu_flames) / sizeof(cpu_flames[0]),
	.flame_labeled = cpu_flame,
	.timeline = &cpu_timeline,
	.timeline_symbols = 1,
	.dump = cpu_dump,
	.diffs = cpu_diffs,
	.not_summed = "hz,period_ns",
	.ndiffs = sizeof(cpu_diffs) / sizeof(cpu_diffs[0]),
	.sql_schema = "CREATE TABLE samples(pid INTEGER, tid INTEGER, time_ns INTEGER, pc INTEGER,"
	" period_ns INTEGER, stack INTEGER);\n",
	.sql_row = cpu_sql_row,
	.thread_times = cpu_thread_times,
	.sum_version = 1,
	.sum_write = cpu_sum_write,
	.sum_read = cpu_sum_read,
};
