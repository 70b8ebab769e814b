/* prof pack [--level N] [-q] TRACE|DIR...: compresses finished raw traces in place (NAME.trace
 * becomes NAME.trace.zst, which every command reads as it reads the raw file); prof-run does
 * it for each trace of a run. A trace is removed only once its compressed copy has been
 * written, synced and read back; on any failure it stays as it was. prof pack -d turns
 * compressed traces back into raw ones, the same way. */
#include "commands.h"
#include "process.h"
#include "zpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_LEVEL 3

static const char usage_text[] =
	"usage: prof pack [--level N] [--wait SECONDS] [-q] TRACE|DIR...\n"
	"       prof pack -d [-q] TRACE.zst|DIR...\n"
	"Compresses finished traces with zstd: NAME.trace becomes NAME.trace.zst, which every prof\n"
	"command reads as it reads the raw trace (prof pack -d gives the raw trace back). A\n"
	"directory means the traces in it. Compressed traces are skipped; a trace that cannot be\n"
	"compressed (or changes meanwhile: its process still runs) stays as it is.\n\n"
	"  -d, --decompress  turn compressed traces back into raw ones (raw ones are skipped)\n"
	"  --level N         zstd level, 1 (fastest) to 19 (smallest); default 3\n"
	"  --wait S          wait up to S seconds in all for processes still writing their\n"
	"                    traces to end (a program's helpers that outlive it by a moment);\n"
	"                    default 0\n"
	"  -q, --quiet       say nothing but errors\n"
	"  -h, --help        this help\n";

/* One prof pack over its files, each packed (or unpacked) by one of process_parallel()'s
 * workers: a run of many processes' traces takes a core each. */
struct pack_job {
	char **paths;
	int level, quiet, unpack;
	double deadline;  /* --wait: until then, a trace still written is waited for */
	_Atomic int failed;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pack_one(void *ctx, size_t k)
{
	struct pack_job *j = ctx;
	const char *path = j->paths[k];
	while (zpack_still_running(path) && now_s() < j->deadline)
		nanosleep(&(struct timespec){ 0, 20 * 1000000L }, NULL);
	char err[1024] = "";
	uint64_t raw = 0, packed = 0;
	int r = j->unpack ? zpack_unpack_file(path, &raw, &packed, err, sizeof(err))
			  : zpack_file(path, j->level, &raw, &packed, err, sizeof(err));
	if (r < 0) {
		prof_error("%s", err);
		j->failed = 1;
	} else if (r == 0 && !strstr(err, j->unpack ? "not compressed" : "already compressed")) {
		prof_error("%s", err);  /* skipped for a reason worth saying */
	} else if (r > 0 && !j->quiet && j->unpack) {
		printf("%.*s: %llu -> %llu bytes\n", (int)(strlen(path) - 4), path,
		       (unsigned long long)packed, (unsigned long long)raw);
	} else if (r > 0 && !j->quiet) {
		printf("%s.zst: %llu -> %llu bytes (%.1fx)\n", path, (unsigned long long)raw,
		       (unsigned long long)packed, packed ? (double)raw / (double)packed : 0.0);
	}
}

int cmd_pack(int argc, char **argv)
{
	int level = DEFAULT_LEVEL, quiet = 0, unpack = 0, i = 1;
	double wait_s = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--decompress")) {
			unpack = 1;
		} else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = 1;
		} else if (!strcmp(argv[i], "--level") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 19) {
				prof_error("pack: --level %s: want 1 to 19", argv[i]);
				return 2;
			}
			level = (int)v;
		} else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
			char *end;
			wait_s = strtod(argv[++i], &end);
			if (*end || end == argv[i] || !(wait_s >= 0 && wait_s <= 3600)) {
				prof_error("pack: --wait %s: want 0 to 3600 seconds", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			prof_error("pack: unknown option '%s' (try prof pack --help)", argv[i]);
			return 2;
		}
	}
	char **paths;
	size_t n;
	if (inputs_expand(argv + i, argc - i, &paths, &n) < 0)
		return 1;
	struct pack_job job = { paths, level, quiet, unpack, now_s() + wait_s, 0 };
	process_parallel(n, pack_one, &job);
	int rc = job.failed;
	inputs_free(paths);
	return rc;
}
