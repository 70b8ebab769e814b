/* prof report's Findings: the few things most worth a look, found by fixed rules over what
 * the families computed, each with its evidence and the stack where to look. The rules and
 * their thresholds are the FIND_* constants below; README ("Findings") lists them. */
#include "findings.h"
#include "cuda.h"
#include "format.h"
#include "heap.h"
#include "io.h"
#include "locks.h"
#include "process.h"
#include "stackfmt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define FIND_LOCK_WAIT_SHARE 0.10  /* a lock's wait >= 10% of its process's thread time */
#define FIND_BLOCKED_SHARE 0.50    /* a thread blocked on locks/conditions >= 50% of its life */
#define FIND_MIN_NS 1000000u       /* and at least 1 ms of it */
#define FIND_TEMP_MIN 1000         /* a site with >= 1000 temporary allocations */
#define FIND_TEMP_SHARE 0.25       /* that are >= 25% of its calls */
#define FIND_IO_TAIL 10            /* a file whose p99 latency is >= 10x its median */
#define FIND_IO_MIN_CALLS 20       /* over >= 20 calls */
#define FIND_IO_SHARE 0.20         /* or whose I/O took >= 20% of the process's lifetime (pipes
				    * are left out: their reads wait for the other end) */
#define FIND_GPU_BUSY 0.50         /* GPU busy < 50% of the lifetime while CUDA calls took more */

/* What the rules add to: the findings, and how the stacks are shown in text. */
struct rules {
	struct findings *f;
	int frames;
};

static int add(struct rules *r, struct process *p, const char *kind, uint32_t stack,
	       json_t *evidence, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int add(struct rules *r, struct process *p, const char *kind, uint32_t stack,
	       json_t *evidence, const char *fmt, ...)
{
	struct findings *f = r->f;
	struct finding *v = realloc(f->v, (f->n + 1) * sizeof(*v));
	if (!v) {
		json_decref(evidence);
		return -1;
	}
	f->v = v;
	if (!evidence)
		evidence = json_object();
	struct finding *x = &f->v[f->n++];
	*x = (struct finding){ .pid = p->hdr.pid, .kind = kind, .evidence = evidence,
			       .stack = stack ? stack_json(p, stack) : json_array() };
	size_t len;
	FILE *text = stack ? open_memstream(&x->stack_text, &len) : NULL;
	if (text) {
		stack_print(text, p, stack, r->frames, "       ");
		fclose(text);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->summary, sizeof(x->summary), fmt, ap);
	va_end(ap);
	return 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static uint64_t thread_life(const struct process *p, const struct thread_info *t)
{
	uint64_t end = t->ended ? t->end_ns : p->end_ns;
	return end > t->start_ns ? end - t->start_ns : 0;
}

static void lock_rules(struct rules *f, struct process *p)
{
	if (!locks_has_data(p))
		return;
	uint64_t thread_ns = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		thread_ns += thread_life(p, &p->threads[i]);
	size_t n;
	struct lock_summary *l = locks_sorted(p, &n);
	if (l && n && l[0].wait_ns >= FIND_MIN_NS &&
	    share(l[0].wait_ns, thread_ns) >= FIND_LOCK_WAIT_SHARE) {
		char a[32], b[32], c[32];
		snprintf(c, sizeof(c), "0x%llx", (unsigned long long)l[0].addr);
		add(f, p, "lock_wait", l[0].stack,
		    json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "lock", c,
			      "lock_kind", l[0].kind, "wait_ns", (json_int_t)l[0].wait_ns,
			      "thread_ns", (json_int_t)thread_ns, "contended", (json_int_t)l[0].contended,
			      "acquisitions", (json_int_t)l[0].acquisitions),
		    "%s %s made threads wait %s, %.0f%% of their time (%s contended acquisitions)",
		    l[0].kind, c, fmt_ns(l[0].wait_ns, a, sizeof(a)), 100 * share(l[0].wait_ns, thread_ns),
		    fmt_count(l[0].contended, b, sizeof(b)));
	}
	free(l);
	/* The thread blocked the largest share of its life, if over the threshold. */
	const struct thread_info *worst = NULL;
	double worst_share = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		uint64_t blocked = t->lock_wait_ns + t->cond_wait_ns;
		double sh = share(blocked, thread_life(p, t));
		if (blocked >= FIND_MIN_NS && sh >= FIND_BLOCKED_SHARE && sh > worst_share) {
			worst = t;
			worst_share = sh;
		}
	}
	if (!worst)
		return;
	char a[32], b[32];
	add(f, p, "blocked_thread", worst->create_stack,
	    json_pack("{s:I,s:s,s:I,s:I,s:I}", "tid", (json_int_t)worst->tid, "name", worst->name,
		      "lifetime_ns", (json_int_t)thread_life(p, worst),
		      "lock_wait_ns", (json_int_t)worst->lock_wait_ns,
		      "cond_wait_ns", (json_int_t)worst->cond_wait_ns),
	    "thread %u (%s) was blocked %.0f%% of its life: %s on locks, %s on conditions",
	    worst->tid, worst->name[0] ? worst->name : "?", 100 * worst_share,
	    fmt_ns(worst->lock_wait_ns, a, sizeof(a)), fmt_ns(worst->cond_wait_ns, b, sizeof(b)));
}

static void heap_rules(struct rules *f, struct process *p)
{
	if (!(p->hdr.events & PROF_EV_ALLOC))
		return;
	const struct heap_stats *h = heap_of(p);
	char a[32], b[32], c[32];
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, site_key_lost, &n);
	uint64_t lost = h->class_bytes[PROF_LEAK_DEFINITE] + h->class_bytes[PROF_LEAK_INDIRECT];
	uint64_t blocks = h->class_blocks[PROF_LEAK_DEFINITE] + h->class_blocks[PROF_LEAK_INDIRECT];
	if (v && n && h->leak_scanned && blocks)
		add(f, p, "leak", v[0].stack,
		    json_pack("{s:I,s:I,s:I,s:I,s:I}", "definitely_lost_bytes",
			      (json_int_t)h->class_bytes[PROF_LEAK_DEFINITE], "definitely_lost_blocks",
			      (json_int_t)h->class_blocks[PROF_LEAK_DEFINITE], "indirectly_lost_bytes",
			      (json_int_t)h->class_bytes[PROF_LEAK_INDIRECT], "indirectly_lost_blocks",
			      (json_int_t)h->class_blocks[PROF_LEAK_INDIRECT], "site_bytes",
			      (json_int_t)site_key_lost(v[0].s)),
		    "%s in %s block%s lost (no pointer to them at exit); the largest site lost %s "
		    "(prof leaks)", fmt_bytes(lost, a, sizeof(a)), fmt_count(blocks, b, sizeof(b)),
		    blocks == 1 ? "" : "s", fmt_bytes(site_key_lost(v[0].s), c, sizeof(c)));
	free(v);
	v = heap_sites_sorted(p, site_key_temporary, &n);
	if (v && n && v[0].s->temporary >= FIND_TEMP_MIN &&
	    share(v[0].s->temporary, v[0].s->calls) >= FIND_TEMP_SHARE)
		add(f, p, "temporary_allocations", v[0].stack,
		    json_pack("{s:I,s:I,s:I}", "temporary", (json_int_t)v[0].s->temporary,
			      "calls", (json_int_t)v[0].s->calls, "process_temporary",
			      (json_int_t)h->temporary),
		    "%s of this site's %s allocations are temporary (freed right after, nothing "
		    "allocated between): reuse a buffer or use the stack",
		    fmt_count(v[0].s->temporary, a, sizeof(a)), fmt_count(v[0].s->calls, b, sizeof(b)));
	free(v);
}

static void io_rules(struct rules *f, struct process *p)
{
	const struct io_stats *s = io_of(p);
	if (!s || !s->nfiles)
		return;
	const struct io_file *worst = NULL;
	uint64_t p50 = 0, p99 = 0, calls = 0;
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct io_file *fl = &s->files[i];
		/* A pipe's reads wait for the program at its other end: not I/O latency. */
		if (fl->merged_into >= 0 || (worst && fl->time_ns <= worst->time_ns) ||
		    !strncmp(fl->path, "pipe:", 5))
			continue;
		struct io_hist all = { 0 };
		for (int c = 0; c < IO_CLS_COUNT; c++)
			io_hist_merge(&all, &fl->hist[c]);
		uint64_t m = io_hist_quantile(&all, 0.50), t = io_hist_quantile(&all, 0.99);
		int tail = all.count >= FIND_IO_MIN_CALLS && fl->time_ns >= FIND_MIN_NS &&
			   t >= FIND_IO_TAIL * (m ? m : 1);
		int big = fl->time_ns >= FIND_MIN_NS && share(fl->time_ns, p->end_ns) >= FIND_IO_SHARE;
		if (tail || big) {
			worst = fl;
			p50 = m;
			p99 = t;
			calls = all.count;
		}
		io_hist_free(&all);
	}
	if (!worst)
		return;
	char a[32], b[32], c[32], path[1024];
	add(f, p, "io", worst->first_stack,
	    json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "path", worst->path, "calls", (json_int_t)calls,
		      "time_ns", (json_int_t)worst->time_ns, "p50_ns", (json_int_t)p50,
		      "p99_ns", (json_int_t)p99, "lifetime_ns", (json_int_t)p->end_ns),
	    "I/O on %s took %s (%.0f%% of the run); p99 latency %s against a median of %s",
	    fmt_arg(worst->path, path, sizeof(path)), fmt_ns(worst->time_ns, a, sizeof(a)), 100 * share(worst->time_ns, p->end_ns),
	    fmt_ns(p99, b, sizeof(b)), fmt_ns(p50, c, sizeof(c)));
}

static void cuda_rules(struct rules *f, struct process *p)
{
	const struct cuda_stats *c = cuda_of(p);
	if (!c || !c->nkernels)
		return;
	uint64_t busy = c->kernel_ns;
	for (int k = 0; k < PROF_CUDA_COPY_KIND_COUNT; k++)
		busy += c->copy[k].timed;
	if (share(busy, p->end_ns) >= FIND_GPU_BUSY || c->api_ns <= busy)
		return;
	char a[32], b[32];
	add(f, p, "gpu_idle", 0,
	    json_pack("{s:I,s:I,s:I}", "gpu_busy_ns", (json_int_t)busy, "api_ns",
		      (json_int_t)c->api_ns, "lifetime_ns", (json_int_t)p->end_ns),
	    "the GPU was busy %.0f%% of the run while CUDA calls took %s of CPU time (GPU %s): "
	    "launches or synchronization keep it waiting (prof flame --kind cuda)",
	    100 * share(busy, p->end_ns), fmt_ns(c->api_ns, a, sizeof(a)), fmt_ns(busy, b, sizeof(b)));
}

int findings_of(struct findings *f, struct process *p, int frames)
{
	struct rules r = { f, frames };
	heap_rules(&r, p);
	lock_rules(&r, p);
	io_rules(&r, p);
	cuda_rules(&r, p);
	return 0;
}

int findings_collect(struct findings *f, struct process *ps, size_t n)
{
	*f = (struct findings){ 0 };
	struct process **order = processes_by_work(ps, n);
	if (!order)
		return -1;
	for (size_t i = 0; i < n; i++)
		findings_of(f, order[i], 2);
	free(order);
	return 0;
}

int findings_take(struct findings *to, struct findings *from)
{
	if (!from->n)
		return 0;
	struct finding *v = realloc(to->v, (to->n + from->n) * sizeof(*v));
	if (!v)
		return -1;
	memcpy(v + to->n, from->v, from->n * sizeof(*v));
	to->v = v;
	to->n += from->n;
	free(from->v);
	*from = (struct findings){ 0 };
	return 0;
}

void findings_free(struct findings *f)
{
	for (size_t i = 0; i < f->n; i++) {
		json_decref(f->v[i].evidence);
		json_decref(f->v[i].stack);
		free(f->v[i].stack_text);
	}
	free(f->v);
	*f = (struct findings){ 0 };
}

json_t *findings_json(const struct findings *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < f->n; i++) {
		const struct finding *x = &f->v[i];
		json_array_append_new(arr, json_pack("{s:s,s:I,s:s,s:O,s:O}", "kind", x->kind,
			"process", (json_int_t)x->pid, "summary", x->summary,
			"evidence", x->evidence, "stack", x->stack));
	}
	return arr;
}

void findings_print(FILE *out, const struct findings *f, size_t nprocs, size_t max)
{
	fprintf(out, "-- Findings\n");
	if (!f->n)
		fprintf(out, "   nothing stands out by the rules (README: Findings); details below\n");
	for (size_t i = 0; i < f->n; i++) {
		if (i == max) {
			fprintf(out, "    ... %zu more (prof report --findings)\n", f->n - max);
			break;
		}
		const struct finding *x = &f->v[i];
		fprintf(out, "%2zu. [%s]", i + 1, x->kind);
		if (nprocs > 1)
			fprintf(out, " pid %u:", x->pid);
		fprintf(out, " %s\n", x->summary);
		if (x->stack_text)
			fputs(x->stack_text, out);
	}
	fputc('\n', out);
}
