/* prof kernels: the GPU kernel timing table (name, launches, total, avg, median, min, max,
 * stddev, share of GPU time, grid and block), sorted by total time; --json and --csv. */
#include "commands.h"
#include "cuda.h"
#include "process.h"
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>

static const struct cmd_spec kernels_spec = {
	"kernels", CMD_OUTPUT | CMD_JSON | CMD_CSV | CMD_TOP, 0,
	"usage: prof kernels [options] TRACE...\n"
	"The GPU kernel timing table of each process, sorted by total GPU time: launches,\n"
	"total, average, median, min, max and stddev of the GPU time, share of all kernel\n"
	"time, grid and block, and where the timing came from (cupti, events or none).\n\n"
	"  --json       JSON: processes[].kernels[]\n"
	"  --csv        comma-separated values, one row per kernel and process\n"
	"  --top N      at most N kernels per process\n"
	"  -o FILE      write to FILE instead of stdout\n"
	"  -h, --help   this help\n",
};

static void csv_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void print_csv(FILE *out, struct process *p, size_t top)
{
	struct cuda_stats *s = cuda_of(p);
	for (size_t i = 0; i < s->nkernels && i < top; i++) {
		const struct cuda_kernel_row *k = &s->kernels[i];
		fprintf(out, "%u,", p->hdr.pid);
		csv_str(out, cuda_kernel_name(p, k));
		fprintf(out, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.2f,\"%u,%u,%u\",\"%u,%u,%u\",%s\n",
			(unsigned long long)k->launches, (unsigned long long)k->h.sum,
			(unsigned long long)(k->h.n ? k->h.sum / (double)k->h.n : 0),
			(unsigned long long)cuda_hist_median(&k->h), (unsigned long long)k->h.min,
			(unsigned long long)k->h.max, (unsigned long long)cuda_hist_stddev(&k->h),
			s->kernel_ns ? k->h.sum * 100.0 / (double)s->kernel_ns : 0.0,
			k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
			cuda_timing_str(k->timing));
	}
}

int cmd_kernels(int argc, char **argv)
{
	struct cmd_opts o;
	struct cmd_io io;
	int rc = cmd_parse(&kernels_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.json && o.csv) {
		prof_error("kernels: --json and --csv exclude each other");
		return 2;
	}
	if (cmd_open(&io, &o) < 0)
		return 1;
	if (o.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < io.n; i++) {
			struct process *p = &io.ps[i];
			json_array_append_new(arr, json_pack("{s:I,s:o,s:s,s:I,s:o}",
				"pid", (json_int_t)p->hdr.pid, "exe", jstr(p->exe),
				"timing", cuda_timing_str(cuda_of(p)->timing),
				"gpu_ns", (json_int_t)cuda_of(p)->kernel_ns,
				"kernels", cuda_kernels_json(p, o.top)));
		}
		cmd_write_json(&io, arr);
	} else if (o.csv) {
		fprintf(io.out, "pid,name,launches,total_ns,avg_ns,med_ns,min_ns,max_ns,stddev_ns,time_pct,grid,block,timing\n");
		for (size_t i = 0; i < io.n; i++)
			print_csv(io.out, &io.ps[i], o.top);
	} else {
		for (size_t i = 0; i < io.n; i++) {
			struct process *p = &io.ps[i];
			if (!cuda_of(p)->nkernels)
				continue;
			fprintf(io.out, "== Process %u (%s): GPU timing %s\n", p->hdr.pid, p->exe,
				cuda_timing_str(cuda_of(p)->timing));
			cuda_kernels_print(io.out, p, o.top);
			fputc('\n', io.out);
		}
	}
	return cmd_close(&io, 0);
}
