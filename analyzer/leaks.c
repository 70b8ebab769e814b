/* prof leaks: memory still allocated at exit, grouped by allocation stack, largest first,
 * in valgrind's words ("N bytes in M blocks"), or --json: each family that holds memory
 * (the heap, GPU device memory) adds its records. */
#include "commands.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "suppress.h"

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

int cmd_leaks(int argc, char **argv)
{
	struct cmd_opts o;
	struct cmd_io io;
	int rc = cmd_parse(&leaks_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct suppressions *supp = NULL;
	for (int i = 0; i < o.nsupp; i++)
		if (supp_load(&supp, o.supp[i]) < 0) {
			supp_free(supp);
			return 2;
		}
	if (cmd_open(&io, &o) < 0) {
		supp_free(supp);
		return 1;
	}
	struct leak_view v = { o.top, o.frames, o.show, supp };
	if (o.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < io.n; i++)
			json_array_append_new(arr, leaks_json(&io.ps[i], &v));
		cmd_write_json(&io, arr);
	} else {
		struct process **order = processes_by_work(io.ps, io.n);
		for (size_t i = 0; order && i < io.n; i++)
			leaks_text(io.out, order[i], &v);
		free(order);
	}
	supp_free(supp);
	return cmd_close(&io, 0);
}
