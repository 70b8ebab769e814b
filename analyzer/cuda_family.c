/* The CUDA family's entry in the family table, its timeline tracks (API calls, GPU kernels
 * and copies per stream, NVTX) and its records in dumps. The analysis is cuda.c. */
#include "exports.h"
#include "cuda.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "symbolize.h"
#include "timeline.h"
#include "trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GPU_TID_BASE 1000000000u  /* pseudo-threads for GPU streams */

struct cuda_timeline {
	struct u64map names;  /* CUDA_NAME id -> char * (demangled) */
	struct u64map gpu;    /* GPU stream pseudo-tids already named */
};

static int cuda_tl_init(void *state)
{
	struct cuda_timeline *s = state;
	u64map_init(&s->names, sizeof(char *));
	u64map_init(&s->gpu, 1);
	return 0;
}

static void cuda_tl_free(void *state)
{
	struct cuda_timeline *s = state;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->names, &pos, &key, &val))
		free(*(char **)val);
	u64map_free(&s->names);
	u64map_free(&s->gpu);
}

static const char *name_of(const struct cuda_timeline *s, uint32_t id, const char *fallback)
{
	char **slot = u64map_get(&s->names, id);
	return slot && *slot ? *slot : fallback;
}

static int cuda_tl_names(void *state, struct timeline *tl, const struct trace_event *ev)
{
	struct cuda_timeline *s = state;
	(void)tl;
	if (ev->rec->type != PROF_REC_CUDA_NAME)
		return 0;
	const struct prof_rec_cuda_name *r = (const void *)ev->rec;
	char **slot = u64map_put(&s->names, r->id, NULL);
	if (!slot)
		return -1;
	free(*slot);
	char *dem = sym_demangle(r->name);
	*slot = dem ? dem : strdup(r->name);
	return *slot ? 0 : -1;
}

static int gpu_event(struct cuda_timeline *s, struct timeline *tl,
		     const struct prof_rec_cuda_gpu *r)
{
	uint32_t tid = GPU_TID_BASE + r->stream;
	int created;
	if (!u64map_put(&s->gpu, tid, &created))
		return -1;
	if (created) {
		char label[64];
		snprintf(label, sizeof(label), "GPU %u stream %u", r->device, r->stream);
		tl_metadata(tl, "thread_name", tid, label);
	}
	static const char *const activity[] = { "kernel", "copy", "sync" };
	const char *name = r->name ? name_of(s, r->name, "kernel")
				   : activity[r->activity < 3 ? r->activity : 0];
	tl_complete(tl, "gpu", tid, name, r->start, r->end > r->start ? r->end - r->start : 0);
	if (r->bytes)
		fprintf(tl->out, ",\"args\":{\"bytes\":%" PRIu64 "}", r->bytes);
	tl_end(tl);
	return 0;
}

static int cuda_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	struct cuda_timeline *s = state;
	const struct prof_rec *h = ev->rec;
	struct prof_rec_cuda_api launch_api;
	if (h->type == PROF_REC_CUDA_LAUNCH && prof_cuda_launch_api((const void *)h, &launch_api))
		h = &launch_api.h;  /* the call a launch record stands for too */
	switch (h->type) {
	case PROF_REC_CUDA_API: {
		const struct prof_rec_cuda_api *r = (const void *)h;
		tl_complete(tl, "cuda", ev->tid, name_of(s, r->name, "cuda call"), h->time,
			    r->duration_ns);
		fprintf(tl->out, ",\"args\":{\"result\":%d,\"correlation\":%" PRIu64 "}", r->result,
			r->corr);
		tl_end(tl);
		return 0;
	}
	case PROF_REC_CUDA_GPU:
		return gpu_event(s, tl, (const void *)h);
	case PROF_REC_CUDA_NVTX: {
		const struct prof_rec_cuda_nvtx *r = (const void *)h;
		if (h->flags == PROF_CUDA_NVTX_MARK) {
			tl_instant(tl, "nvtx", ev->tid, "t", r->message, r->start);
		} else {
			tl_complete(tl, "nvtx", ev->tid, r->message, r->start,
				    r->end > r->start ? r->end - r->start : 0);
			tl_end(tl);
		}
		return 0;
	}
	default:
		return 0;
	}
}

static const struct family_timeline cuda_timeline = {
	sizeof(struct cuda_timeline), cuda_tl_init, cuda_tl_free, cuda_tl_names, cuda_tl_event,
	NULL,
};

static void cuda_dump(FILE *out, const struct prof_rec *r)
{
	switch (r->type) {
	case PROF_REC_CUDA_NAME: {
		const struct prof_rec_cuda_name *n = (const void *)r;
		fprintf(out, " kind=%u id=%u name=", r->flags, n->id);
		fmt_quoted(out, n->name, r->size - sizeof(*n));
		break;
	}
	case PROF_REC_CUDA_API: {
		const struct prof_rec_cuda_api *a = (const void *)r;
		fprintf(out, " layer=%u name=%u corr=%" PRIu64 " duration_ns=%" PRIu64
			" result=%d stack=%u", r->flags, a->name, a->corr, a->duration_ns, a->result,
			a->stack);
		break;
	}
	case PROF_REC_CUDA_LAUNCH: {
		const struct prof_rec_cuda_launch *l = (const void *)r;
		fprintf(out, " corr=%" PRIu64 " function=0x%" PRIx64 " stream=0x%" PRIx64
			" name=%u stack=%u grid=%u,%u,%u block=%u,%u,%u shared=%u graph=%u", l->corr,
			l->function, l->stream, l->name, l->stack, l->grid[0], l->grid[1], l->grid[2],
			l->block[0], l->block[1], l->block[2], l->shared_mem, l->graph);
		struct prof_rec_cuda_api a;
		if (prof_cuda_launch_api(l, &a))
			fprintf(out, " api: name=%u duration_ns=%" PRIu64 " result=%d", a.name,
				a.duration_ns, a.result);
		break;
	}
	case PROF_REC_CUDA_COPY: {
		const struct prof_rec_cuda_copy *c = (const void *)r;
		fprintf(out, " corr=%" PRIu64 " kind=%u bytes=%" PRIu64 " stream=0x%" PRIx64
			" async=%u stack=%u", c->corr, c->kind, c->bytes, c->stream, c->async, c->stack);
		break;
	}
	case PROF_REC_CUDA_MALLOC: {
		const struct prof_rec_cuda_malloc *m = (const void *)r;
		fprintf(out, " corr=%" PRIu64 " kind=%u ptr=0x%" PRIx64 " size=%" PRIu64 " stack=%u",
			m->corr, m->kind, m->ptr, m->size, m->stack);
		break;
	}
	case PROF_REC_CUDA_FREE: {
		const struct prof_rec_cuda_free *f = (const void *)r;
		fprintf(out, " corr=%" PRIu64 " kind=%u ptr=0x%" PRIx64, f->corr, f->kind, f->ptr);
		break;
	}
	case PROF_REC_CUDA_GPU: {
		const struct prof_rec_cuda_gpu *g = (const void *)r;
		fprintf(out, " timing=0x%x activity=%u copy_kind=%u start=%" PRIu64 " end=%" PRIu64
			" corr=%" PRIu64 " bytes=%" PRIu64 " name=%u device=%u stream=%u"
			" grid=%u,%u,%u block=%u,%u,%u", r->flags, g->activity, g->copy_kind, g->start,
			g->end, g->corr, g->bytes, g->name, g->device, g->stream, g->grid[0], g->grid[1],
			g->grid[2], g->block[0], g->block[1], g->block[2]);
		break;
	}
	case PROF_REC_CUDA_XCORR: {
		const struct prof_rec_cuda_xcorr *x = (const void *)r;
		fprintf(out, " cupti_corr=%" PRIu64 " corr=%" PRIu64, x->cupti_corr, x->corr);
		break;
	}
	case PROF_REC_CUDA_NVTX: {
		const struct prof_rec_cuda_nvtx *n = (const void *)r;
		fprintf(out, " kind=%u start=%" PRIu64 " end=%" PRIu64 " domain=%u depth=%u message=",
			r->flags, n->start, n->end, n->domain, n->depth);
		fmt_quoted(out, n->message, r->size - sizeof(*n));
		break;
	}
	case PROF_REC_CUDA_STATE: {
		const struct prof_rec_cuda_state *c = (const void *)r;
		fprintf(out, " timing=%u result=%d cupti_version=%u detail=", c->timing, c->result,
			c->cupti_version);
		fmt_quoted(out, c->detail, r->size - sizeof(*c));
		break;
	}
	}
}

static const struct flame_kind cuda_flames[] = {
	{ "cuda", "GPU time by the CPU stack that launched it",
	  { { "time", "GPU time by launching stack", "ns" } }, cuda_flame },
};

static uint64_t gpu_time(const struct process *p)
{
	return cuda_of(p)->kernel_ns;
}

static const struct family_figure cuda_figures[] = {
	{ "GPU", "gpu_ns", 0, gpu_time, 0 },
};

static const struct family_diff cuda_diffs[] = {
	{ "CUDA API calls by time", "api", "name", "total_ns" },
	{ "GPU kernels by time", "kernels", "name", "total_ns" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int cuda_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	const struct prof_rec *h = ev->rec;
	int64_t pid = sql_pid(o);
	if (h->type == PROF_REC_CUDA_NAME) {
		const struct prof_rec_cuda_name *r = (const void *)h;
		return sql_row(o, "cuda_names", "iiit", pid, (int64_t)r->id, (int64_t)h->flags, r->name);
	}
	struct prof_rec_cuda_api launch_api;
	if (h->type == PROF_REC_CUDA_LAUNCH && prof_cuda_launch_api((const void *)h, &launch_api))
		h = &launch_api.h;  /* the call a launch record stands for too */
	if (h->type == PROF_REC_CUDA_API) {
		const struct prof_rec_cuda_api *r = (const void *)h;
		return sql_row(o, "cuda_api", "iiiiiiiit", pid, (int64_t)ev->tid,
			       (int64_t)process_rel_time(p, h->time), (int64_t)r->name,
			       (int64_t)r->duration_ns, (int64_t)r->result, (int64_t)r->corr,
			       (int64_t)r->stack, h->flags == PROF_CUDA_DRIVER ? "driver" : "runtime");
	}
	if (h->type == PROF_REC_CUDA_GPU) {
		const struct prof_rec_cuda_gpu *r = (const void *)h;
		return sql_row(o, "gpu_activity", "iiiiiiiii", pid,
			       (int64_t)process_rel_time(p, r->start), (int64_t)process_rel_time(p, r->end),
			       (int64_t)r->activity, (int64_t)r->name, (int64_t)r->bytes,
			       (int64_t)r->device, (int64_t)r->stream, (int64_t)r->corr);
	}
	return 0;
}

static void cuda_thread_times(struct process *p, const struct thread_info *t,
			      void (*add)(void *ctx, const char *cause, uint64_t ns), void *ctx)
{
	const uint64_t *ns = u64map_get(&cuda_of(p)->thread_api, (uint64_t)t->serial * 2);
	if (ns)
		add(ctx, "cuda api", *ns);
}

const struct family cuda_family = {
	.name = "cuda",
	.first_type = PROF_CUDA_TYPE_FIRST,
	.last_type = PROF_CUDA_TYPE_LAST,
	.state_size = sizeof(struct cuda_stats),
	.init = cuda_init,
	.free = cuda_free,
	.on_record = cuda_on_record,
	.finish = cuda_finish,
	.has_data = cuda_has_data,
	.sum_version = 1,
	.sum_write = cuda_sum_write,
	.sum_read = cuda_sum_read,
	.json_key = "cuda",
	.json = cuda_json,
	.print = cuda_print,
	.leaks_print = cuda_leaks_print,
	.leaks_json = cuda_leaks_json,
	.flames = cuda_flames,
	.nflames = sizeof(cuda_flames) / sizeof(cuda_flames[0]),
	.timeline = &cuda_timeline,
	.dump = cuda_dump,
	.figures = cuda_figures,
	.nfigures = sizeof(cuda_figures) / sizeof(cuda_figures[0]),
	.diffs = cuda_diffs,
	.ndiffs = sizeof(cuda_diffs) / sizeof(cuda_diffs[0]),
	.sql_schema = "CREATE TABLE cuda_names(pid INTEGER, id INTEGER, kind INTEGER, name TEXT);\n"
	"CREATE TABLE cuda_api(pid INTEGER, tid INTEGER, time_ns INTEGER, name INTEGER,"
	" duration_ns INTEGER, result INTEGER, corr INTEGER, stack INTEGER, layer TEXT);\n"
	"CREATE TABLE gpu_activity(pid INTEGER, start_ns INTEGER, end_ns INTEGER, activity INTEGER,"
	" name INTEGER, bytes INTEGER, device INTEGER, stream INTEGER, corr INTEGER);\n",
	.sql_row = cuda_sql_row,
	.thread_times = cuda_thread_times,
};
