/* prof report: every section that has data, as text, as a --brief summary, or as the --json
 * document that SPEC.md fixes. */
#include "commands.h"
#include "family.h"
#include "grow.h"
#include "findings.h"
#include "format.h"
#include "process.h"
#include "spill.h"
#include "stackfmt.h"
#include "tree.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- JSON -------------------------------------------------------------------------------- */

static uint32_t parent_tid(struct process *p, const struct thread_info *t)
{
	const struct thread_info *parent =
		t->parent_serial != ~0u ? process_thread(p, t->parent_serial) : NULL;
	return parent ? parent->tid : 0;
}

static json_t *threads_json(struct process *p)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		uint32_t ptid = parent_tid(p, t);
		char buf[256];
		const char *routine = addr_label(p, t->start_routine, buf, sizeof(buf));
		json_t *o = json_pack("{s:I,s:o,s:I,s:o,s:I}", "tid", (json_int_t)t->tid,
				      "name", jstr(t->name), "start_ns", (json_int_t)t->start_ns,
				      "end_ns", t->ended ? json_integer((json_int_t)t->end_ns) : json_null(),
				      "cpu_ns", (json_int_t)thread_cpu_ns(p, t));
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

static json_t *exit_json(const struct process *p)
{
	switch (p->exit_kind) {
	case EXIT_CODE: return json_pack("{s:i}", "code", p->exit_value);
	case EXIT_SIGNAL: return json_pack("{s:i}", "signal", p->exit_value);
	default: return json_null();
	}
}

static json_t *process_json(struct process *p, size_t top)
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
	if (p->cut_bytes)
		json_object_set_new(o, "truncated_bytes", json_integer((json_int_t)p->cut_bytes));
	if (p->exit_kind == EXIT_EXEC && p->exec_path)
		json_object_set_new(o, "exec", jstr(p->exec_path));
	json_object_set_new(o, "threads", threads_json(p));
	for (size_t i = 0; families[i]; i++)
		if (families[i]->json)
			json_object_set_new(o, families[i]->json_key, families[i]->json(p, top));
	return o;
}

/* ---- text -------------------------------------------------------------------------------- */

static void print_identity(FILE *out, const struct process *p)
{
	char d[32], when[64], arg[1024];
	fprintf(out, "%s== Process %u:", fmt_sgr(SGR_BOLD), p->hdr.pid);
	for (uint32_t i = 0; i < p->argc; i++)
		fprintf(out, " %s", fmt_arg(p->argv[i], arg, sizeof(arg)));
	if (p->argc == 0)
		fprintf(out, " %s", fmt_arg(p->exe, arg, sizeof(arg)));
	fprintf(out, "  [");
	switch (p->exit_kind) {
	case EXIT_CODE: fprintf(out, "exit %d", p->exit_value); break;
	case EXIT_SIGNAL: fprintf(out, "killed by signal %d", p->exit_value); break;
	case EXIT_EXEC: fprintf(out, "exec %s", p->exec_path ? p->exec_path : "?"); break;
	default: fprintf(out, "no exit recorded"); break;
	}
	const char *why = p->complete ? ""
			  : p->hdr.state == PROF_STATE_DISABLED
				  ? ", INCOMPLETE: libprof stopped recording before the end (a full "
				    "disk, a seccomp sandbox: it said which on stderr)"
				  : ", INCOMPLETE: the trace ends before a normal exit";
	fprintf(out, ", %s%s]%s\n", fmt_ns(p->end_ns, d, sizeof(d)), why, fmt_sgr(NULL));
	time_t t = (time_t)(p->hdr.start_realtime_ns / 1000000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(out, "   exe %s, host %s, parent %u, started %s\n", fmt_arg(p->exe, arg, sizeof(arg)),
		p->host, p->hdr.ppid, when);
	fprintf(out, "   trace %s\n", p->path);
	char lost[32];
	if (p->lost_records)
		fprintf(out, "   %sWARNING%s: %s record%s lost (trace space ran out); totals are short\n",
			fmt_sgr(SGR_RED), fmt_sgr(NULL), fmt_count(p->lost_records, lost, sizeof(lost)),
			p->lost_records == 1 ? " was" : "s were");
	if (p->cut_bytes)
		fprintf(out, "   WARNING: the trace file is cut short (%s bytes missing): reported as far as it goes\n",
			fmt_count(p->cut_bytes, lost, sizeof(lost)));
	if (p->nchildren) {
		fprintf(out, "   forked:");
		for (size_t i = 0; i < p->nchildren; i++)
			fprintf(out, " %u", p->children[i]);
		fputc('\n', out);
	}
}

static void print_threads(FILE *out, struct process *p)
{
	char a[32], b[32], c[32], d[32], e[32], r[256], name[80];
	fprintf(out, "\n%s-- Threads (%zu)%s\n   %-8s %-16s %-8s %10s %10s %10s %10s %10s  %s\n",
		fmt_sgr(SGR_BOLD), p->nthreads, fmt_sgr(NULL), "TID", "NAME", "PARENT", "START", "END", "CPU", "LOCK WAIT", "COND WAIT",
		"START ROUTINE");
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		char parent[16] = "-";
		uint32_t ptid = parent_tid(p, t);
		if (ptid)
			snprintf(parent, sizeof(parent), "%u", ptid);
		const char *routine = addr_label(p, t->start_routine, r, sizeof(r));
		fprintf(out, "   %-8u %-16s %-8s %10s %10s %10s %10s %10s  %s\n", t->tid,
			t->name[0] ? fmt_arg(t->name, name, sizeof(name)) : "?", parent, fmt_ns(t->start_ns, a, sizeof(a)),
			t->ended ? fmt_ns(t->end_ns, b, sizeof(b)) : "-",
			fmt_ns(thread_cpu_ns(p, t), c, sizeof(c)),
			fmt_ns(t->lock_wait_ns, d, sizeof(d)), fmt_ns(t->cond_wait_ns, e, sizeof(e)),
			routine ? routine : (i == 0 ? "(main)" : "-"));
	}
}

static void print_brief(FILE *out, struct process *p)
{
	char a[32], arg[1024];
	fprintf(out, "pid %u %s: ", p->hdr.pid, fmt_arg(p->argc ? p->argv[0] : p->exe, arg, sizeof(arg)));
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
	for (size_t i = 0; families[i]; i++)
		if (families[i]->brief && families[i]->has_data(p))
			families[i]->brief(out, p);
	fputc('\n', out);
}

/* ---- a run of several processes: its tree and its totals ----------------------------------- */

static void print_run(FILE *out, const struct run_proc *rp, size_t n,
		      struct family_totals *const *totals, size_t top)
{
	struct proc_tree tr;
	if (proc_tree_build(rp, n, &tr) == 0) {
		proc_tree_print(out, &tr);
		proc_tree_free(&tr);
	}
	fputc('\n', out);
	ranks_print(out, rp, n);
	for (size_t f = 0; families[f]; f++)
		if (totals[f])
			family_totals_print(out, totals[f], top);
	fputc('\n', out);
}

/* ---- one process at a time --------------------------------------------------------------- */

/* The report is made as the processes are loaded, one worker per core, each process freed as
 * soon as its part is done: memory holds a loaded process per worker, not the run. What stays
 * of a process is its part: what the run's tree and ranks read, its findings, and its own
 * sections (text, or its JSON object), written to a spill file (spill.h), to be copied out in
 * order at the end: no copy of the sections in memory. */

struct part {
	struct run_proc r;
	struct proc_order ord;
	size_t seq;         /* when it came: ties in that order */
	struct findings fs;
	struct spilled sec; /* its sections (none with --findings) */
};

struct report {
	const struct cmd_opts *o;
	size_t top;                 /* sites per table in its sections */
	int stack_frames;           /* frames of the findings' stacks in text */
	struct family_totals *totals[FAMILY_MAX];  /* the run's; NULL where not made */
	size_t count;               /* processes there may be: text has totals for more than one */
	struct spills spills;
	struct part *parts;
	size_t n, cap;
	int failed;                 /* out of memory, or the spill file could not be written */
	pthread_mutex_t lock;
};

/* A member of the document after the first one (it takes v). */
static void json_member(FILE *out, const char *key, json_t *v)
{
	fprintf(out, ",\n \"%s\": ", key);
	spill_json(out, v, 1);
	json_decref(v);
}

static void sections(FILE *out, const struct report *r, struct process *p)
{
	if (r->o->json) {
		json_t *o = process_json(p, r->o->top);
		spill_json(out, o, 2);  /* an element of "processes" */
		json_decref(o);
	} else if (r->o->brief) {
		print_brief(out, p);
	} else {
		print_identity(out, p);
		print_threads(out, p);
		for (size_t f = 0; families[f]; f++)
			if (families[f]->print && families[f]->has_data(p))
				families[f]->print(out, p, r->top, r->o->frames);
	}
}

static void report_one(void *ctx, struct process *p, size_t at)
{
	struct report *r = ctx;
	struct part part = { .ord = proc_order_of(p, at) };
	int ok = run_proc_of(&part.r, p) == 0 && findings_of(&part.fs, p, r->stack_frames) == 0;
	for (size_t f = 0; families[f] && (r->o->json || r->count > 1); f++)
		if (r->totals[f])
			family_totals_add(r->totals[f], p);
	FILE *out = r->o->findings ? NULL : spill_begin(&r->spills, &part.sec);
	if (out) {
		sections(out, r, p);
		spill_end(&r->spills, &part.sec);
	}
	process_free(p);
	pthread_mutex_lock(&r->lock);
	part.seq = r->n;
	if (ok && GROW(r->parts, r->n, r->cap) == 0) {
		r->parts[r->n++] = part;
	} else {
		r->failed = 1;
		run_proc_free(&part.r);
		findings_free(&part.fs);
	}
	pthread_mutex_unlock(&r->lock);
}

/* The processes in the order they started (as processes_load() gives them), and busiest (most
 * CPU time, else longest) first, as processes_by_work() orders them. */
static int by_start(const void *a, const void *b)
{
	const struct part *x = *(struct part *const *)a, *y = *(struct part *const *)b;
	int c = proc_order_by_start(&x->ord, &y->ord);
	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_work(const void *a, const void *b)
{
	const struct part *x = *(struct part *const *)a, *y = *(struct part *const *)b;
	int c = proc_order_by_work(&x->ord, &y->ord);
	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A part's sections, from the spill file; -1 after a message when they are lost. */
static int copy_sections(FILE *out, const struct report *r, const struct part *p)
{
	if (spill_copy(out, &r->spills, &p->sec) == 0)
		return 0;
	prof_error("report: process %u: its sections were lost (out of memory, or the temporary "
		   "file failed)", p->r.pid);
	return -1;
}

static void write_json(FILE *out, struct report *r, struct part **start, struct findings *fs,
		       const struct run_proc *rp)
{
	size_t n = r->n;
	fputs("{\n \"version\": 1", out);
	json_member(out, "findings", findings_json(fs));
	fputs(",\n \"processes\": [", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n  " : "\n  ", out);
		if (copy_sections(out, r, start[i]) < 0)
			r->failed = 1;
	}
	fputs(n ? "\n ]" : "]", out);
	struct proc_tree tr;
	if (proc_tree_build(rp, n, &tr) == 0) {
		json_member(out, "tree", proc_tree_json(&tr));
		proc_tree_free(&tr);
	}
	json_t *totals = json_object();
	for (size_t f = 0; families[f]; f++)
		if (r->totals[f])
			json_object_set_new(totals, families[f]->json_key,
					    family_totals_json(r->totals[f], r->o->top));
	json_member(out, "totals", totals);
	json_member(out, "ranks", ranks_json(rp, n));
	fputs("\n}\n", out);
}

static void write_text(FILE *out, struct report *r, struct part **work, struct findings *fs,
		       const struct run_proc *rp)
{
	const struct cmd_opts *o = r->o;
	size_t n = r->n;
	if (!o->brief)
		findings_print(out, fs, n, o->findings ? SIZE_MAX : 8);
	if (o->findings)
		return;
	if (n > 1 && !o->brief) {
		print_run(out, rp, n, r->totals, r->top);
		fprintf(out, "%zu processes, busiest (most CPU time) first\n\n", n);
	}
	for (size_t i = 0; i < n; i++) {
		if (i && !o->brief)
			fputc('\n', out);
		copy_sections(out, r, work[i]);
	}
}

static const struct cmd_spec report_spec = {
	"report", CMD_OUTPUT | CMD_JSON | CMD_BRIEF | CMD_TOP | CMD_FRAMES | CMD_FINDINGS | CMD_WINDOW, 6,
	"usage: prof report [options] TRACE...\n"
	"Findings first (what the rules in README say deserves a look), then every section that\n"
	"has data: processes and threads, heap (and, when recorded, CPU, locks, I/O, CUDA).\n"
	"A TRACE is a trace file or a run directory.\n\n"
	"  --json       one JSON document (docs/JSON.md); all sites unless --top\n"
	"  --brief      one line per process\n"
	"  --findings   the findings only\n"
	"  --top N      sites per table (text default 10)\n"
	"  --frames N   frames per stack in text (default 6)\n"
	"  -o FILE      write to FILE instead of stdout\n"
	"  -h, --help   this help\n",
};

/* Everything the report kept, in the orders it shows them, then the output. */
static int report_write(struct report *r)
{
	size_t n = r->n;
	struct part **start = malloc((n ? n : 1) * sizeof(*start));
	struct part **work = malloc((n ? n : 1) * sizeof(*work));
	struct run_proc *rp = malloc((n ? n : 1) * sizeof(*rp));
	struct findings fs = { 0 };
	int rc = 1;
	FILE *out = NULL;
	if (!start || !work || !rp || r->failed) {
		prof_error("report: out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		start[i] = work[i] = &r->parts[i];
	qsort(start, n, sizeof(*start), by_start);
	qsort(work, n, sizeof(*work), by_work);
	for (size_t i = 0; i < n; i++) {
		rp[i] = start[i]->r;  /* a copy of the struct: the part keeps what it points to */
		if (findings_take(&fs, &work[i]->fs) < 0) {
			prof_error("report: out of memory");
			goto done;
		}
	}
	if (!(out = cmd_output(r->o->outfile)))
		goto done;
	if (r->o->json)
		write_json(out, r, start, &fs, rp);
	else
		write_text(out, r, work, &fs, rp);
	rc = cmd_finish_output(out, r->o->outfile, r->failed);
done:
	findings_free(&fs);
	free(start);
	free(work);
	free(rp);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&report_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.json && (o.brief || o.findings)) {
		prof_error("report: --json has every section; --%s does not go with it",
			   o.brief ? "brief" : "findings");
		return 2;
	}
	struct report r = { .o = &o, .top = o.top_given ? o.top : 10,
			    .stack_frames = o.findings ? o.frames : 2,
			    .lock = PTHREAD_MUTEX_INITIALIZER };
	int totals = o.json || (!o.brief && !o.findings);
	for (size_t f = 0; families[f] && totals; f++)
		if (families[f]->json && !(r.totals[f] = family_totals_new(families[f])))
			r.failed = 1;
	if (spills_init(&r.spills) < 0) {
		prof_error("report: cannot make a temporary file in $TMPDIR, else /tmp: %m");
		rc = 1;
	} else {
		rc = cmd_each(&o, &r.count, report_one, &r) < 0 ? 1 : report_write(&r);
	}
	for (size_t i = 0; i < r.n; i++) {
		run_proc_free(&r.parts[i].r);
		findings_free(&r.parts[i].fs);
	}
	free(r.parts);
	for (size_t f = 0; families[f]; f++)
		family_totals_free(r.totals[f]);
	spills_close(&r.spills);
	return rc;
}
