/* Analysis of threads and lock contention (issue: locks). Not recorded yet: empty results. */
#include "locks.h"
#include "process.h"
#include "trace.h"

void locks_init(struct lock_stats *s)
{
	s->records = 0;
}

void locks_free(struct lock_stats *s)
{
	(void)s;
}

int locks_on_record(struct process *p, const struct trace_event *ev)
{
	(void)ev;
	p->lock.records++;
	return 0;
}

int locks_finish(struct process *p)
{
	(void)p;
	return 0;
}

int locks_has_data(const struct process *p)
{
	return p->lock.records > 0;
}

json_t *locks_json(struct process *p, size_t top)
{
	(void)p;
	(void)top;
	return json_array();
}

void locks_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)out;
	(void)p;
	(void)top;
	(void)frames;
}

int locks_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	(void)p;
	(void)by;
	(void)emit;
	(void)ctx;
	return 0;
}
