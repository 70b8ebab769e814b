/* prof leaks: memory still allocated at exit, grouped by allocation stack, largest first,
 * in valgrind's words ("N bytes in M blocks"), or --json: each family that holds memory
 * (the heap, GPU device memory) adds its records. */
#include "commands.h"
#include "family.h"
#include "format.h"
#include "grow.h"
#include "process.h"
#include "spill.h"
#include "stackfmt.h"
#include "suppress.h"

#include <pthread.h>
#include <stdlib.h>

static const struct cmd_spec leaks_spec = {
	"leaks", CMD_OUTPUT | CMD_JSON | CMD_TOP | CMD_FRAMES | CMD_LEAKS, 16,
	"usage: prof leaks [options] TRACE...\n"
	"Heap blocks (and GPU device memory) still allocated when each process ended, grouped\n"
	"by the stack that allocated them, largest first. Blocks are classified at exit as\n"
	"valgrind's memcheck does: definitely lost, indirectly lost, possibly lost, still\n"
	"reachable. For a process that did not exit normally these are the blocks in use when\n"
	"its trace ends; a process that exec'd another program leaked nothing.\n\n"
	"  --show KINDS          leak kinds to list: definite,indirect,possible,reachable or all\n"
	"                        (default definite,indirect)\n"
	"  --suppressions FILE   valgrind-style suppression file (may be repeated)\n"
	"  --json       JSON: processes[].leaks[] with bytes, blocks, kind, class and stack\n"
	"  --top N      at most N records per process\n"
	"  --frames N   frames per stack in text (default 16)\n"
	"  -o FILE      write to FILE instead of stdout\n"
	"  -h, --help   this help\n",
};

static json_t *leaks_json(struct process *p, const struct leak_view *v)
{
	json_t *proc = json_pack("{s:I,s:o,s:b}", "pid", (json_int_t)p->hdr.pid, "exe",
				 jstr(p->exe), "complete", p->complete);
	json_t *leaks = json_array();
	for (size_t i = 0; families[i]; i++)
		if (families[i]->leaks_json)
			families[i]->leaks_json(p, proc, leaks, v);
	json_object_set_new(proc, "leaks", leaks);
	return proc;
}

static void leaks_text(FILE *out, struct process *p, const struct leak_view *v)
{
	char exe[1024];
	fprintf(out, "== Process %u (%s)%s\n", p->hdr.pid, fmt_arg(p->exe, exe, sizeof(exe)),
		p->complete ? "" : ": did not exit normally; blocks in use when the trace ends");
	for (size_t i = 0; families[i]; i++)
		if (families[i]->leaks_print)
			families[i]->leaks_print(out, p, v);
	fputc('\n', out);
}

/* A run's leaks are made a process at a time (cmd_each()), as prof report's sections are:
 * each worker writes the process it loaded into a spill file of its own and frees it, and the
 * parts are copied out at the end: in the order the processes started for JSON, busiest
 * first for text, as processes_load() and processes_by_work() order them. */
struct leak_part {
	struct spilled sec;
	struct proc_order ord;
};

struct leak_run {
	int json;
	struct leak_view v;
	struct spills spills;
	struct leak_part *parts;
	size_t n, cap;
	int failed;
	pthread_mutex_t lock;
};

static void leaks_one(void *ctx, struct process *p, size_t at)
{
	struct leak_run *r = ctx;
	struct leak_part part = { .ord = proc_order_of(p, at) };
	FILE *out = spill_begin(&r->spills, &part.sec);
	if (out) {
		if (r->json) {
			json_t *o = leaks_json(p, &r->v);
			spill_json(out, o, 2);  /* an element of "processes" */
			json_decref(o);
		} else {
			leaks_text(out, p, &r->v);
		}
		spill_end(&r->spills, &part.sec);
	}
	process_free(p);
	pthread_mutex_lock(&r->lock);
	if (GROW(r->parts, r->n, r->cap) == 0)
		r->parts[r->n++] = part;
	else
		r->failed = 1;
	pthread_mutex_unlock(&r->lock);
}

static int by_start(const void *a, const void *b)
{
	return proc_order_by_start(&((const struct leak_part *)a)->ord,
				   &((const struct leak_part *)b)->ord);
}

static int by_work(const void *a, const void *b)
{
	return proc_order_by_work(&((const struct leak_part *)a)->ord,
				  &((const struct leak_part *)b)->ord);
}

static void leaks_write(FILE *out, struct leak_run *r)
{
	qsort(r->parts, r->n, sizeof(*r->parts), r->json ? by_start : by_work);
	if (r->json)
		fputs("{\n \"version\": 1,\n \"processes\": [", out);
	for (size_t i = 0; i < r->n; i++) {
		if (r->json)
			fputs(i ? ",\n  " : "\n  ", out);
		if (spill_copy(out, &r->spills, &r->parts[i].sec) < 0) {
			prof_error("leaks: process %u: its leaks were lost (out of memory, or the "
				   "temporary file failed)", r->parts[i].ord.pid);
			r->failed = 1;
		}
	}
	if (r->json)
		fputs(r->n ? "\n ]\n}\n" : "]\n}\n", out);
}

int cmd_leaks(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&leaks_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct suppressions *supp = NULL;
	for (int i = 0; i < o.nsupp; i++)
		if (supp_load(&supp, o.supp[i]) < 0) {
			supp_free(supp);
			return 2;
		}
	struct leak_run r = { .json = o.json, .v = { o.top, o.frames, o.show, supp } };
	pthread_mutex_init(&r.lock, NULL);
	if (spills_init(&r.spills) < 0) {
		prof_error("leaks: cannot make a temporary file in $TMPDIR, else /tmp: %m");
		rc = 1;
	} else {
		rc = cmd_each(&o, NULL, leaks_one, &r) < 0;
		FILE *out = rc ? NULL : cmd_output(o.outfile);
		if (!rc && !out)
			rc = 1;
		if (!rc) {
			leaks_write(out, &r);
			rc = cmd_finish_output(out, o.outfile, r.failed);
		}
		spills_close(&r.spills);
	}
	pthread_mutex_destroy(&r.lock);
	free(r.parts);
	supp_free(supp);
	return rc;
}
