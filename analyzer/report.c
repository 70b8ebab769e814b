/* prof report: every section that has data, as text, as a --brief summary, or as the --json
 * document that SPEC.md fixes. */
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- sites, sorted ---------------------------------------------------------------------- */

uint64_t site_key_bytes(const struct heap_site *s) { return s->bytes; }
uint64_t site_key_calls(const struct heap_site *s) { return s->calls; }
uint64_t site_key_leaked(const struct heap_site *s) { return s->leaked_bytes; }
uint64_t site_key_temporary(const struct heap_site *s) { return s->temporary; }
uint64_t site_key_peak(const struct heap_site *s) { return s->peak_bytes; }

static uint64_t (*sort_key)(const struct heap_site *);

static int cmp_sites(const void *a, const void *b)
{
	const struct site_ref *x = a, *y = b;
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
	struct site_ref *v = malloc(sizeof(*v) * (p->heap.sites.count ? p->heap.sites.count : 1));
	*n = 0;
	if (!v)
		return NULL;
	size_t pos = 0;
	uint64_t stack;
	void *val;
	while (u64map_next(&p->heap.sites, &pos, &stack, &val))
		v[(*n)++] = (struct site_ref){ (uint32_t)stack, val };
	sort_key = key;
	qsort(v, *n, sizeof(*v), cmp_sites);
	return v;
}

/* ---- JSON -------------------------------------------------------------------------------- */

json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	char *copy = strdup(s);
	if (!copy)
		return json_null();
	for (char *c = copy; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	j = json_string(copy);
	free(copy);
	return j ? j : json_null();
}

json_t *stack_json(struct process *p, uint32_t stack_id)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack_id, frames, PROF_MAX_STACK_DEPTH * 2);
	json_t *arr = json_array();
	for (int i = 0; i < n; i++) {
		const struct sym_frame *f = &frames[i];
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
		json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:s}", "function", jstr(f->function),
				      "file", jstr(f->file),
				      "line", f->line > 0 ? json_integer(f->line) : json_null(),
				      "module", jstr(f->module), "address", addr);
		if (f->inlined)
			json_object_set_new(o, "inlined", json_true());
		json_array_append_new(arr, o);
	}
	return arr;
}

static uint32_t parent_tid(const struct process *p, const struct thread_info *t)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].serial == t->parent_serial && t->parent_serial != ~0u)
			return p->threads[i].tid;
	return 0;
}

static json_t *threads_json(struct process *p)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		uint32_t ptid = parent_tid(p, t);
		char buf[256];
		const char *routine = locks_symbol(p, t->start_routine, buf, sizeof(buf));
		json_t *o = json_pack("{s:I,s:o,s:I,s:o,s:I}", "tid", (json_int_t)t->tid,
				      "name", jstr(t->name), "start_ns", (json_int_t)t->start_ns,
				      "end_ns", t->ended ? json_integer((json_int_t)t->end_ns) : json_null(),
				      "cpu_ns", (json_int_t)t->cpu_ns);
		json_object_set_new(o, "parent_tid", ptid ? json_integer(ptid) : json_null());
		json_object_set_new(o, "start_routine", jstr(routine));
		json_object_set_new(o, "lock_wait_ns", json_integer((json_int_t)t->lock_wait_ns));
		json_object_set_new(o, "cond_wait_ns", json_integer((json_int_t)t->cond_wait_ns));
		json_object_set_new(o, "join_wait_ns", json_integer((json_int_t)t->join_wait_ns));
		if (t->create_stack)
			json_object_set_new(o, "create_stack", stack_json(p, t->create_stack));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *heap_json(struct process *p, size_t top)
{
	const struct heap_stats *h = &p->heap;
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
	}
	free(v);
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
			 "alloc_calls", (json_int_t)h->alloc_calls, "free_calls", (json_int_t)h->free_calls,
			 "bytes_allocated", (json_int_t)h->bytes_allocated, "peak_bytes", (json_int_t)h->peak,
			 "peak_ns", (json_int_t)h->peak_ns, "leaked_bytes", (json_int_t)h->leaked_bytes,
			 "leaked_blocks", (json_int_t)h->leaked_blocks, "temporary", (json_int_t)h->temporary,
			 "unmatched_frees", (json_int_t)h->unmatched_frees, "sites", sites);
}

static json_t *exit_json(const struct process *p)
{
	switch (p->exit_kind) {
	case EXIT_CODE: return json_pack("{s:i}", "code", p->exit_value);
	case EXIT_SIGNAL: return json_pack("{s:i}", "signal", p->exit_value);
	default: return json_null();
	}
}

json_t *process_json(struct process *p, size_t top)
{
	json_t *argv = json_array();
	for (uint32_t i = 0; i < p->argc; i++)
		json_array_append_new(argv, jstr(p->argv[i]));
	json_t *o = json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:I,s:I,s:o,s:b,s:I,s:o}",
		"pid", (json_int_t)p->hdr.pid, "ppid", (json_int_t)p->hdr.ppid, "exe", jstr(p->exe),
		"argv", argv, "host", jstr(p->host),
		"rank", p->hdr.rank >= 0 ? json_integer(p->hdr.rank) : json_null(),
		"start_ns", (json_int_t)p->hdr.start_realtime_ns, "duration_ns", (json_int_t)p->end_ns,
		"exit", exit_json(p), "complete", p->complete,
		"lost_records", (json_int_t)p->lost_records, "trace", jstr(p->path));
	if (p->exit_kind == EXIT_EXEC && p->exec_path)
		json_object_set_new(o, "exec", jstr(p->exec_path));
	json_object_set_new(o, "threads", threads_json(p));
	json_object_set_new(o, "heap", heap_json(p, top));
	/* Sections of the families this trace has no data for: empty, so keys are always there. */
	json_object_set_new(o, "cpu", json_pack("{s:i,s:i,s:[]}", "samples", 0, "hz",
						(int)p->hdr.cpu_hz, "top"));
	json_object_set_new(o, "locks", locks_json(p, top));
	json_object_set_new(o, "io", io_json(p, top));
	json_object_set_new(o, "cuda", cuda_json(p, top));
	return o;
}

/* ---- text -------------------------------------------------------------------------------- */

static void print_identity(FILE *out, const struct process *p)
{
	char d[32], when[64];
	fprintf(out, "== Process %u:", p->hdr.pid);
	for (uint32_t i = 0; i < p->argc; i++)
		fprintf(out, " %s", p->argv[i]);
	if (p->argc == 0)
		fprintf(out, " %s", p->exe);
	fprintf(out, "  [");
	switch (p->exit_kind) {
	case EXIT_CODE: fprintf(out, "exit %d", p->exit_value); break;
	case EXIT_SIGNAL: fprintf(out, "killed by signal %d", p->exit_value); break;
	case EXIT_EXEC: fprintf(out, "exec %s", p->exec_path ? p->exec_path : "?"); break;
	default: fprintf(out, "no exit recorded"); break;
	}
	fprintf(out, ", %s%s]\n", fmt_ns(p->end_ns, d, sizeof(d)),
		p->complete ? "" : ", INCOMPLETE: the trace ends before a normal exit");
	time_t t = (time_t)(p->hdr.start_realtime_ns / 1000000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(out, "   exe %s, host %s, parent %u, started %s\n", p->exe, p->host, p->hdr.ppid, when);
	fprintf(out, "   trace %s\n", p->path);
	if (p->lost_records)
		fprintf(out, "   WARNING: %" PRIu64 " records were lost (trace space ran out); totals are short\n",
			p->lost_records);
	if (p->nchildren) {
		fprintf(out, "   forked:");
		for (size_t i = 0; i < p->nchildren; i++)
			fprintf(out, " %u", p->children[i]);
		fputc('\n', out);
	}
}

static void print_threads(FILE *out, struct process *p)
{
	char a[32], b[32], c[32], d[32], e[32], r[256];
	fprintf(out, "\n-- Threads (%zu)\n   %-8s %-16s %-8s %10s %10s %10s %10s %10s  %s\n",
		p->nthreads, "TID", "NAME", "PARENT", "START", "END", "CPU", "LOCK WAIT", "COND WAIT",
		"START ROUTINE");
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		char parent[16] = "-";
		uint32_t ptid = parent_tid(p, t);
		if (ptid)
			snprintf(parent, sizeof(parent), "%u", ptid);
		const char *routine = locks_symbol(p, t->start_routine, r, sizeof(r));
		fprintf(out, "   %-8u %-16s %-8s %10s %10s %10s %10s %10s  %s\n", t->tid,
			t->name[0] ? t->name : "?", parent, fmt_ns(t->start_ns, a, sizeof(a)),
			t->ended ? fmt_ns(t->end_ns, b, sizeof(b)) : "-",
			t->ended ? fmt_ns(t->cpu_ns, c, sizeof(c)) : "-",
			fmt_ns(t->lock_wait_ns, d, sizeof(d)), fmt_ns(t->cond_wait_ns, e, sizeof(e)),
			routine ? routine : (i == 0 ? "(main)" : "-"));
	}
}

static void print_sites(FILE *out, struct process *p, const char *title,
			uint64_t (*key)(const struct heap_site *), size_t top, int frames)
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
		fprintf(out, "   #%zu %s in %s calls; %s at peak; %s temporary; leaked %s in %s blocks\n",
			shown, fmt_bytes(s->bytes, a, sizeof(a)), fmt_count(s->calls, b, sizeof(b)),
			fmt_bytes(s->peak_bytes, f, sizeof(f)),
			fmt_count(s->temporary, d, sizeof(d)), fmt_bytes(s->leaked_bytes, c, sizeof(c)),
			fmt_count(s->leaked_blocks, e, sizeof(e)));
		stack_print(out, p, v[i].stack, frames, "       ");
	}
	free(v);
}

static void print_heap(FILE *out, struct process *p, size_t top, int frames)
{
	const struct heap_stats *h = &p->heap;
	char a[32], b[32], c[32];
	fprintf(out, "\n-- Heap\n");
	fprintf(out, "   allocation calls  %s\n", fmt_count(h->alloc_calls, a, sizeof(a)));
	fprintf(out, "   frees             %s\n", fmt_count(h->free_calls, a, sizeof(a)));
	fprintf(out, "   bytes allocated   %s (%s bytes)\n", fmt_bytes(h->bytes_allocated, a, sizeof(a)),
		fmt_count(h->bytes_allocated, b, sizeof(b)));
	fprintf(out, "   peak heap         %s at %s\n", fmt_bytes(h->peak, a, sizeof(a)),
		fmt_ns(h->peak_ns, b, sizeof(b)));
	fprintf(out, "   %-17s %s in %s blocks\n", p->complete ? "leaked" : "in use at end",
		fmt_bytes(h->leaked_bytes, a, sizeof(a)), fmt_count(h->leaked_blocks, b, sizeof(b)));
	fprintf(out, "   temporary         %s allocations (%.1f%% of calls)\n",
		fmt_count(h->temporary, c, sizeof(c)),
		h->alloc_calls ? 100.0 * (double)h->temporary / (double)h->alloc_calls : 0.0);
	if (h->unmatched_frees)
		fprintf(out, "   (%s frees of blocks allocated before recording began)\n",
			fmt_count(h->unmatched_frees, a, sizeof(a)));
	print_sites(out, p, "Top sites at peak heap (bytes they held then)", site_key_peak, top, frames);
	print_sites(out, p, "Top sites by bytes allocated", site_key_bytes, top, frames);
	print_sites(out, p, "Top sites by allocation calls", site_key_calls, top, frames);
	print_sites(out, p, "Top sites by leaked bytes", site_key_leaked, top, frames);
	print_sites(out, p, "Top sites by temporary allocations", site_key_temporary, top, frames);
}

static void print_brief(FILE *out, const struct process *p)
{
	char a[32], b[32], c[32], d[32], e[32];
	const struct heap_stats *h = &p->heap;
	fprintf(out, "pid %u %s: ", p->hdr.pid, p->argc ? p->argv[0] : p->exe);
	if (p->exit_kind == EXIT_CODE)
		fprintf(out, "exit %d", p->exit_value);
	else if (p->exit_kind == EXIT_SIGNAL)
		fprintf(out, "signal %d", p->exit_value);
	else if (p->exit_kind == EXIT_EXEC)
		fprintf(out, "exec");
	else
		fprintf(out, "incomplete");
	fprintf(out, ", %s, %zu thread%s", fmt_ns(p->end_ns, a, sizeof(a)), p->nthreads,
		p->nthreads == 1 ? "" : "s");
	if (p->hdr.events & PROF_EV_ALLOC)
		fprintf(out, "; heap: %s allocs, %s allocated, peak %s, %s %s in %s blocks",
			fmt_count(h->alloc_calls, a, sizeof(a)), fmt_bytes(h->bytes_allocated, b, sizeof(b)),
			fmt_bytes(h->peak, c, sizeof(c)), p->complete ? "leaked" : "in use",
			fmt_bytes(h->leaked_bytes, d, sizeof(d)), fmt_count(h->leaked_blocks, e, sizeof(e)));
	fputc('\n', out);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: prof report [options] TRACE...\n"
		"Every section that has data: processes and threads, heap (and, when recorded, CPU,\n"
		"locks, I/O, CUDA). A TRACE is a trace file or a run directory.\n\n"
		"  --json       one JSON document (schema in SPEC.md); all sites unless --top\n"
		"  --brief      one line per process\n"
		"  --top N      sites per table (text default 10)\n"
		"  --frames N   frames per stack in text (default 6)\n"
		"  -o FILE      write to FILE instead of stdout\n"
		"  -h, --help   this help\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "brief", no_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 't' }, { "frames", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int json = 0, brief = 0, frames = 6;
	long top = -1;
	const char *outfile = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'b': brief = 1; break;
		case 't': top = strtol(optarg, NULL, 10); break;
		case 'f': frames = atoi(optarg); break;
		case 'o': outfile = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	struct cmd_io io;
	if (cmd_open(&io, argv + optind, argc - optind, outfile) < 0)
		return 1;
	struct process *ps = io.ps;
	size_t n = io.n;
	FILE *out = io.out;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, process_json(&ps[i], top < 0 ? SIZE_MAX : (size_t)top));
		cmd_write_json(&io, arr);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (brief) {
				print_brief(out, &ps[i]);
				continue;
			}
			if (i)
				fputc('\n', out);
			print_identity(out, &ps[i]);
			print_threads(out, &ps[i]);
			size_t ntop = top < 0 ? 10 : (size_t)top;
			if (ps[i].hdr.events & PROF_EV_ALLOC)
				print_heap(out, &ps[i], ntop, frames);
			if (locks_has_data(&ps[i]))
				locks_print(out, &ps[i], ntop, frames);
			if (io_has_data(&ps[i]))
				io_print(out, &ps[i], ntop, frames);
			if (cuda_has_data(&ps[i]))
				cuda_print(out, &ps[i], ntop, frames);
		}
	}
	return cmd_close(&io, 0);
}
