/* Analysis of CUDA activity. Not recorded yet: empty results. */
#include "cuda.h"
#include "process.h"
#include "trace.h"

void cuda_init(struct cuda_stats *s)
{
	s->records = 0;
}

void cuda_free(struct cuda_stats *s)
{
	(void)s;
}

int cuda_on_record(struct process *p, const struct trace_event *ev)
{
	(void)ev;
	p->cuda.records++;
	return 0;
}

int cuda_finish(struct process *p)
{
	(void)p;
	return 0;
}

int cuda_has_data(const struct process *p)
{
	return p->cuda.records > 0;
}

json_t *cuda_json(struct process *p, size_t top)
{
	(void)p;
	(void)top;
	return json_pack("{s:[],s:[],s:[],s:{s:i,s:i,s:i,s:i}}", "api", "kernels", "memcpy",
			 "device_memory", "alloc_calls", 0, "peak_bytes", 0, "leaked_bytes", 0,
			 "leaked_blocks", 0);
}

void cuda_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)out;
	(void)p;
	(void)top;
	(void)frames;
}

void cuda_leaks_json(struct process *p, json_t *leaks, size_t top)
{
	(void)p;
	(void)leaks;
	(void)top;
}

void cuda_leaks_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)out;
	(void)p;
	(void)top;
	(void)frames;
}

int cuda_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	(void)p;
	(void)by;
	(void)emit;
	(void)ctx;
	return 0;
}
