/* prof kernels: the GPU kernel timing table (name, launches, total, avg, median, min, max,
 * stddev, share of GPU time, grid and block), sorted by total time; --json and --csv. */
#include "commands.h"
#include "cuda.h"
#include "process.h"

#include <string.h>

int cmd_kernels(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: prof kernels [--json | --csv] TRACE...\n"
		       "The GPU kernel timing table, sorted by total time.\n");
		return 0;
	}
	prof_error("kernels: CUDA tracing is not recorded by this version");
	return 1;
}
