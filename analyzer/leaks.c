/* prof leaks: memory still allocated at exit, grouped by allocation stack, largest first,
 * in valgrind's words ("N bytes in M blocks"), or --json. */
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: prof leaks [options] TRACE...\n"
		"Heap blocks still allocated when each process ended, grouped by the stack that\n"
		"allocated them, largest first. For a process that did not exit normally these are\n"
		"the blocks in use when its trace ends.\n\n"
		"  --json       JSON: processes[].leaks[] with bytes, blocks, kind and stack\n"
		"  --top N      at most N records per process\n"
		"  --frames N   frames per stack in text (default 16)\n"
		"  -o FILE      write to FILE instead of stdout\n"
		"  -h, --help   this help\n");
}

static json_t *leaks_json(struct process *p, size_t top)
{
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, site_key_leaked, &n);
	json_t *arr = json_array();
	for (size_t i = 0; v && i < n && i < top && v[i].s->leaked_blocks; i++)
		json_array_append_new(arr, json_pack("{s:s,s:I,s:I,s:o}", "kind", "host",
			"bytes", (json_int_t)v[i].s->leaked_bytes,
			"blocks", (json_int_t)v[i].s->leaked_blocks, "stack", stack_json(p, v[i].stack)));
	free(v);
	cuda_leaks_json(p, arr, top);
	return json_pack("{s:I,s:o,s:b,s:I,s:I,s:o}", "pid", (json_int_t)p->hdr.pid, "exe",
			 jstr(p->exe), "complete", p->complete, "leaked_bytes",
			 (json_int_t)p->heap.leaked_bytes, "leaked_blocks",
			 (json_int_t)p->heap.leaked_blocks, "leaks", arr);
}

static void leaks_text(FILE *out, struct process *p, size_t top, int frames)
{
	char a[32], b[32], c[32];
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, site_key_leaked, &n);
	size_t records = 0;
	for (size_t i = 0; v && i < n && v[i].s->leaked_blocks; i++)
		records++;
	fprintf(out, "== Process %u (%s)%s\n", p->hdr.pid, p->exe,
		p->complete ? "" : ": did not exit normally; blocks in use when the trace ends");
	for (size_t i = 0; i < records && i < top; i++) {
		const struct heap_site *s = v[i].s;
		fprintf(out, "\n%s bytes in %s blocks %s, record %zu of %zu, from:\n",
			fmt_count(s->leaked_bytes, a, sizeof(a)), fmt_count(s->leaked_blocks, b, sizeof(b)),
			p->complete ? "still allocated at exit" : "in use", i + 1, records);
		stack_print(out, p, v[i].stack, frames, "   ");
	}
	cuda_leaks_print(out, p, top, frames);
	fprintf(out, "\nLEAK SUMMARY: %s bytes (%s) in %s blocks from %zu allocation site%s\n\n",
		fmt_count(p->heap.leaked_bytes, a, sizeof(a)), fmt_bytes(p->heap.leaked_bytes, c, sizeof(c)),
		fmt_count(p->heap.leaked_blocks, b, sizeof(b)), records, records == 1 ? "" : "s");
	free(v);
}

int cmd_leaks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "top", required_argument, NULL, 't' },
		{ "frames", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, frames = 16, c;
	long top = -1;
	const char *outfile = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
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
	size_t limit = top < 0 ? SIZE_MAX : (size_t)top;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, leaks_json(&ps[i], limit));
		cmd_write_json(&io, arr);
	} else {
		for (size_t i = 0; i < n; i++)
			leaks_text(out, &ps[i], limit, frames);
	}
	return cmd_close(&io, 0);
}
