/* Analysis of file and network I/O (issue: I/O). Not recorded yet: empty results. */
#include "io.h"
#include "process.h"
#include "trace.h"

void io_init(struct io_stats *s)
{
	s->records = 0;
}

void io_free(struct io_stats *s)
{
	(void)s;
}

int io_on_record(struct process *p, const struct trace_event *ev)
{
	(void)ev;
	p->io.records++;
	return 0;
}

int io_finish(struct process *p)
{
	(void)p;
	return 0;
}

int io_has_data(const struct process *p)
{
	return p->io.records > 0;
}

json_t *io_json(struct process *p, size_t top)
{
	(void)p;
	(void)top;
	return json_pack("{s:[]}", "files");
}

void io_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)out;
	(void)p;
	(void)top;
	(void)frames;
}

int io_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	(void)p;
	(void)by;
	(void)emit;
	(void)ctx;
	return 0;
}
