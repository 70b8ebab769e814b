/* prof kernels: the GPU kernel timing table (name, launches, total, avg, median, min, max,
 * stddev, share of GPU time, grid and block), sorted by total time; --json and --csv. */
#include "commands.h"
#include "cuda.h"
#include "process.h"
#include "report.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: prof kernels [options] TRACE...\n"
		"The GPU kernel timing table of each process, sorted by total GPU time: launches,\n"
		"total, average, median, min, max and stddev of the GPU time, share of all kernel\n"
		"time, grid and block, and where the timing came from (cupti, events or none).\n\n"
		"  --json       JSON: processes[].kernels[]\n"
		"  --csv        comma-separated values, one row per kernel and process\n"
		"  --top N      at most N kernels per process\n"
		"  -o FILE      write to FILE instead of stdout\n"
		"  -h, --help   this help\n");
}

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
	struct cuda_stats *s = &p->cuda;
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
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "csv", no_argument, NULL, 'c' },
		{ "top", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, csv = 0, c;
	long top = -1;
	const char *outfile = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'c': csv = 1; break;
		case 't': top = strtol(optarg, NULL, 10); break;
		case 'o': outfile = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (json && csv) {
		prof_error("kernels: --json and --csv exclude each other");
		return 2;
	}
	struct cmd_io io;
	if (cmd_open(&io, argv + optind, argc - optind, outfile) < 0)
		return 1;
	struct process *ps = io.ps;
	size_t n = io.n;
	FILE *out = io.out;
	size_t ntop = top < 0 ? SIZE_MAX : (size_t)top;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, json_pack("{s:I,s:o,s:s,s:I,s:o}",
				"pid", (json_int_t)ps[i].hdr.pid, "exe", jstr(ps[i].exe),
				"timing", cuda_timing_str(ps[i].cuda.timing),
				"gpu_ns", (json_int_t)ps[i].cuda.kernel_ns,
				"kernels", cuda_kernels_json(&ps[i], ntop)));
		cmd_write_json(&io, arr);
	} else if (csv) {
		fprintf(out, "pid,name,launches,total_ns,avg_ns,med_ns,min_ns,max_ns,stddev_ns,time_pct,grid,block,timing\n");
		for (size_t i = 0; i < n; i++)
			print_csv(out, &ps[i], ntop);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (!ps[i].cuda.nkernels)
				continue;
			fprintf(out, "== Process %u (%s): GPU timing %s\n", ps[i].hdr.pid, ps[i].exe,
				cuda_timing_str(ps[i].cuda.timing));
			cuda_kernels_print(out, &ps[i], top < 0 ? SIZE_MAX : ntop);
			fputc('\n', out);
		}
	}
	return cmd_close(&io, 0);
}
