/* prof report: every section that has data, as text, as a --brief summary, or as the --json
 * document that SPEC.md fixes. */
#include "commands.h"
#include "family.h"
#include "findings.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "tree.h"

#include <inttypes.h>
#include <jansson.h>
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
	fprintf(out, ", %s%s]%s\n", fmt_ns(p->end_ns, d, sizeof(d)),
		p->complete ? "" : ", INCOMPLETE: the trace ends before a normal exit", fmt_sgr(NULL));
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
			t->ended ? fmt_ns(t->cpu_ns, c, sizeof(c)) : "-",
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

static json_t *totals_json(struct process *ps, size_t n, size_t top)
{
	json_t *o = json_object();
	for (size_t f = 0; families[f]; f++)
		if (families[f]->json)
			json_object_set_new(o, families[f]->json_key,
					    family_totals_json(ps, n, families[f], top));
	return o;
}

static void print_run(FILE *out, struct process *ps, size_t n, size_t top)
{
	struct proc_tree tr;
	if (proc_tree_build(ps, n, &tr) == 0) {
		proc_tree_print(out, &tr);
		proc_tree_free(&tr);
	}
	fputc('\n', out);
	ranks_print(out, ps, n);
	for (size_t f = 0; families[f]; f++)
		if (families[f]->json)
			family_totals_print(out, ps, n, families[f], top);
	fputc('\n', out);
}

/* Each process's sections, written into memory by one worker per core, then printed in
 * order; its symbolizer freed as soon as it is done with. */
struct render {
	struct process **order;
	char **bufs;
	size_t *lens, top;
	int frames;
};

static void render_one(void *ctx, size_t i)
{
	struct render *r = ctx;
	struct process *p = r->order[i];
	FILE *out = open_memstream(&r->bufs[i], &r->lens[i]);
	if (!out)
		return;
	print_identity(out, p);
	print_threads(out, p);
	for (size_t f = 0; families[f]; f++)
		if (families[f]->print && families[f]->has_data(p))
			families[f]->print(out, p, r->top, r->frames);
	fclose(out);
	process_symbols_release(p);
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

int cmd_report(int argc, char **argv)
{
	struct cmd_opts o;
	struct cmd_io io;
	int rc = cmd_parse(&report_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (cmd_open(&io, &o) < 0)
		return 1;
	struct findings fs;
	findings_collect(&fs, io.ps, io.n);
	if (o.json && (o.brief || o.findings)) {
		prof_error("report: --json has every section; --%s does not go with it",
			   o.brief ? "brief" : "findings");
		findings_free(&fs);
		cmd_close(&io, 0);
		return 2;
	}
	if (o.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < io.n; i++)
			json_array_append_new(arr, process_json(&io.ps[i], o.top));
		json_t *doc = json_pack("{s:i,s:o,s:o}", "version", 1, "findings",
					findings_json(&fs), "processes", arr);
		findings_free(&fs);
		struct proc_tree tr;
		if (proc_tree_build(io.ps, io.n, &tr) == 0) {
			json_object_set_new(doc, "tree", proc_tree_json(&tr));
			proc_tree_free(&tr);
		}
		json_object_set_new(doc, "totals", totals_json(io.ps, io.n, o.top));
		json_object_set_new(doc, "ranks", ranks_json(io.ps, io.n));
		json_dumpf(doc, io.out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		fputc('\n', io.out);
		json_decref(doc);
		return cmd_close(&io, 0);
	}
	if (!o.brief)
		findings_print(io.out, &fs, io.n, o.findings ? o.frames : 2, o.findings ? SIZE_MAX : 8);
	findings_free(&fs);
	if (o.findings)
		return cmd_close(&io, 0);
	size_t top = o.top_given ? o.top : 10;
	struct process **order = processes_by_work(io.ps, io.n);
	if (!order)
		return cmd_close(&io, 1);
	if (io.n > 1 && !o.brief) {
		print_run(io.out, io.ps, io.n, top);
		fprintf(io.out, "%zu processes, busiest (most CPU time) first\n\n", io.n);
	}
	if (o.brief) {
		for (size_t i = 0; i < io.n; i++)
			print_brief(io.out, order[i]);
	} else {
		struct render r = { order, calloc(io.n + 1, sizeof(char *)),
				    calloc(io.n + 1, sizeof(size_t)), top, o.frames };
		if (r.bufs && r.lens)
			process_parallel(io.n, render_one, &r);
		for (size_t i = 0; i < io.n; i++) {
			if (i)
				fputc('\n', io.out);
			if (r.bufs && r.bufs[i])
				fwrite(r.bufs[i], 1, r.lens[i], io.out);
			else
				prof_error("report: out of memory for process %u", order[i]->hdr.pid);
			free(r.bufs ? r.bufs[i] : NULL);
		}
		free(r.bufs);
		free(r.lens);
	}
	free(order);
	return cmd_close(&io, 0);
}
