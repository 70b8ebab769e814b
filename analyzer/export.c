/* prof export --format chrome: a timeline that chrome://tracing and Perfetto open. Records are
 * streamed straight into trace events (one pass for names, one for events), so memory stays
 * with names and live blocks, whatever the trace's length. Times are the trace clock
 * (CLOCK_MONOTONIC) in microseconds, so processes of one run line up. */
#include "commands.h"
#include "process.h"
#include "trace.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GPU_TID_BASE 1000000000u  /* pseudo-threads for GPU streams */
#define HEAP_SAMPLE_NS 50000u     /* at most one heap counter sample per 50 us (and the peak) */

/* Names that records refer to by id: CUDA names, I/O file ids, thread serials. */
struct names {
	struct u64map cuda;   /* id -> char * */
	struct u64map files;  /* file id -> char * */
	struct u64map gpu;    /* GPU stream pseudo-tids already named */
};

static void names_free(struct names *n)
{
	struct u64map *maps[] = { &n->cuda, &n->files };
	for (size_t m = 0; m < 2; m++) {
		size_t pos = 0;
		uint64_t key;
		void *val;
		while (u64map_next(maps[m], &pos, &key, &val))
			free(*(char **)val);
		u64map_free(maps[m]);
	}
	u64map_free(&n->gpu);
}

static int name_put(struct u64map *m, uint64_t id, const char *s)
{
	char **slot = u64map_put(m, id, NULL);
	if (!slot)
		return -1;
	free(*slot);
	return (*slot = strdup(s)) ? 0 : -1;
}

static const char *name_get(const struct u64map *m, uint64_t id, const char *fallback)
{
	char **slot = u64map_get(m, id);
	return slot && *slot ? *slot : fallback;
}

/* A JSON string: quotes, backslashes and control characters escaped; bytes that are not
 * printable ASCII become '?', so the output is valid JSON whatever the trace holds. */
static void jstring(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c < 0x7f ? c : '?', out);
	}
	fputc('"', out);
}

struct exporter {
	FILE *out;
	int first;         /* no event written yet: no comma before the next */
	uint32_t pid;
	uint64_t min_ns;   /* I/O calls shorter than this are left out */
};

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

/* Starts an event object; the caller adds fields and closes it with end_event(). */
static void begin_event(struct exporter *x, const char *ph, const char *cat, uint32_t tid)
{
	fputs(x->first ? "\n" : ",\n", x->out);
	x->first = 0;
	fprintf(x->out, "{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u", ph, x->pid, tid);
	if (cat)
		fprintf(x->out, ",\"cat\":\"%s\"", cat);
}

static void end_event(struct exporter *x)
{
	fputc('}', x->out);
}

static void complete_event(struct exporter *x, const char *cat, uint32_t tid, const char *name,
			   uint64_t start, uint64_t dur)
{
	begin_event(x, "X", cat, tid);
	fputs(",\"name\":", x->out);
	jstring(x->out, name);
	fprintf(x->out, ",\"ts\":%.3f,\"dur\":%.3f", us(start), us(dur));
}

static void metadata(struct exporter *x, const char *what, uint32_t tid, const char *name)
{
	begin_event(x, "M", NULL, tid);
	fprintf(x->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	jstring(x->out, name);
	fputs("}", x->out);
	end_event(x);
}

/* Pass 1: every name a record may refer to, wherever it stands in the trace. */
static int collect_names(struct trace *t, struct names *n, struct exporter *x, char *err,
			 size_t errlen)
{
	struct trace_event ev;
	int got;
	while ((got = trace_next(t, &ev, err, errlen)) > 0) {
		const struct prof_rec *h = ev.rec;
		int rc = 0;
		if (h->type == PROF_REC_CUDA_NAME) {
			const struct prof_rec_cuda_name *r = (const void *)h;
			char *dem = sym_demangle(r->name);
			rc = name_put(&n->cuda, r->id, dem ? dem : r->name);
			free(dem);
		} else if (h->type == PROF_REC_IO_NAME) {
			const struct prof_rec_io_name *r = (const void *)h;
			if (r->file)
				rc = name_put(&n->files, r->file, r->path);
		} else if (h->type == PROF_REC_THREAD_NAME) {
			const struct prof_rec_thread_name *r = (const void *)h;
			metadata(x, "thread_name", r->tid, r->name);
		} else if (h->type == PROF_REC_THREAD_END) {
			const struct prof_rec_thread_end *r = (const void *)h;
			char name[17];
			memcpy(name, r->name, 16);
			name[16] = '\0';
			metadata(x, "thread_name", r->tid, name);
		}
		if (rc < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return got;
}

static void gpu_event(struct exporter *x, struct names *n, const struct prof_rec_cuda_gpu *r)
{
	uint32_t tid = GPU_TID_BASE + r->stream;
	int created;
	if (u64map_put(&n->gpu, tid, &created) && created) {
		char label[64];
		snprintf(label, sizeof(label), "GPU %u stream %u", r->device, r->stream);
		metadata(x, "thread_name", tid, label);
	}
	static const char *const activity[] = { "kernel", "copy", "sync" };
	const char *name = r->name ? name_get(&n->cuda, r->name, "kernel")
				   : activity[r->activity < 3 ? r->activity : 0];
	complete_event(x, "gpu", tid, name, r->start, r->end > r->start ? r->end - r->start : 0);
	if (r->bytes)
		fprintf(x->out, ",\"args\":{\"bytes\":%" PRIu64 "}", r->bytes);
	end_event(x);
}

/* Pass 2: events. heap: the running heap, for the counter. */
static int emit_events(struct trace *t, struct names *n, struct exporter *x,
		       struct heap_stats *heap, char *err, size_t errlen)
{
	struct trace_event ev;
	int got;
	uint64_t last_sample = 0, sampled_bytes = UINT64_MAX;
	while ((got = trace_next(t, &ev, err, errlen)) > 0) {
		const struct prof_rec *h = ev.rec;
		int rc = 0;
		switch (h->type) {
		case PROF_REC_ALLOC: {
			const struct prof_rec_alloc *r = (const void *)h;
			rc = heap_alloc(heap, ev.stream, h->time, r->ptr, r->size, r->stack);
			break;
		}
		case PROF_REC_FREE:
			rc = heap_release(heap, ev.stream, ((const struct prof_rec_free *)h)->ptr,
					  (h->flags & PROF_FREE_REALLOC) != 0);
			break;
		case PROF_REC_LOCK_WAIT: {
			const struct prof_rec_lock_wait *r = (const void *)h;
			char name[96];
			snprintf(name, sizeof(name), "%s %s 0x%" PRIx64, prof_lock_op_name(h->flags),
				 prof_lock_kind_name(r->kind), r->lock);
			uint64_t start = h->time > r->wait_ns ? h->time - r->wait_ns : 0;
			complete_event(x, "lock", ev.tid, name, start, r->wait_ns);
			end_event(x);
			break;
		}
		case PROF_REC_IO_NAME:
		case PROF_REC_IO_CALL: {
			const struct prof_rec_io_call *r = (const void *)h;  /* IO_NAME starts alike */
			if (r->duration_ns < x->min_ns)
				break;
			const char *path = h->type == PROF_REC_IO_NAME
						   ? ((const struct prof_rec_io_name *)h)->path
						   : name_get(&n->files, r->file, "?");
			char name[512];
			snprintf(name, sizeof(name), "%s %s", prof_io_op_name(h->flags), path);
			complete_event(x, "io", ev.tid, name, h->time, r->duration_ns);
			fprintf(x->out, ",\"args\":{\"fd\":%d,\"result\":%" PRId64 "}", r->fd, r->result);
			end_event(x);
			break;
		}
		case PROF_REC_CUDA_API: {
			const struct prof_rec_cuda_api *r = (const void *)h;
			complete_event(x, "cuda", ev.tid, name_get(&n->cuda, r->name, "cuda call"),
				       h->time, r->duration_ns);
			fprintf(x->out, ",\"args\":{\"result\":%d,\"correlation\":%" PRIu64 "}",
				r->result, r->corr);
			end_event(x);
			break;
		}
		case PROF_REC_CUDA_GPU:
			gpu_event(x, n, (const void *)h);
			break;
		case PROF_REC_CUDA_NVTX: {
			const struct prof_rec_cuda_nvtx *r = (const void *)h;
			if (h->flags == PROF_CUDA_NVTX_MARK) {
				begin_event(x, "i", "nvtx", ev.tid);
				fputs(",\"s\":\"t\",\"name\":", x->out);
				jstring(x->out, r->message);
				fprintf(x->out, ",\"ts\":%.3f", us(r->start));
			} else {
				complete_event(x, "nvtx", ev.tid, r->message, r->start,
					       r->end > r->start ? r->end - r->start : 0);
			}
			end_event(x);
			break;
		}
		case PROF_REC_EXIT:
		case PROF_REC_EXEC:
		case PROF_REC_FORK: {
			char name[300];
			if (h->type == PROF_REC_EXIT)
				snprintf(name, sizeof(name), "%s %d",
					 ((const struct prof_rec_exit *)h)->how ? "killed by signal" : "exit",
					 ((const struct prof_rec_exit *)h)->code);
			else if (h->type == PROF_REC_EXEC)
				snprintf(name, sizeof(name), "exec %.280s", ((const struct prof_rec_exec *)h)->path);
			else
				snprintf(name, sizeof(name), "fork %u", ((const struct prof_rec_fork *)h)->child_pid);
			begin_event(x, "i", "process", ev.tid);
			fputs(",\"s\":\"p\",\"name\":", x->out);
			jstring(x->out, name);
			fprintf(x->out, ",\"ts\":%.3f", us(h->time));
			end_event(x);
			break;
		}
		default:
			break;
		}
		if (rc < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		/* The heap counter: sampled, and always at a new peak. */
		if (heap->current != sampled_bytes &&
		    (h->time >= last_sample + HEAP_SAMPLE_NS || heap->current == heap->peak)) {
			begin_event(x, "C", NULL, 0);
			fprintf(x->out, ",\"name\":\"heap\",\"ts\":%.3f,\"args\":{\"bytes\":%" PRIu64 "}",
				us(h->time), heap->current);
			end_event(x);
			last_sample = h->time;
			sampled_bytes = heap->current;
		}
	}
	return got;
}

static int export_trace(struct exporter *x, const char *path)
{
	char err[512];
	struct trace *t = trace_open(path, err, sizeof(err));
	if (!t) {
		prof_error("%s", err);
		return -1;
	}
	const struct prof_file_header *hdr = trace_header(t);
	x->pid = hdr->pid;
	char label[600];
	snprintf(label, sizeof(label), "%s (%u)", trace_exe(t), hdr->pid);
	metadata(x, "process_name", 0, label);
	struct names n;
	u64map_init(&n.cuda, sizeof(char *));
	u64map_init(&n.files, sizeof(char *));
	u64map_init(&n.gpu, 1);
	struct heap_stats heap;
	heap_init(&heap);
	int rc = collect_names(t, &n, x, err, sizeof(err));
	if (rc == 0) {
		trace_rewind(t);
		rc = emit_events(t, &n, x, &heap, err, sizeof(err));
	}
	if (rc < 0)
		prof_error("%s", err);
	heap_free(&heap);
	names_free(&n);
	trace_close(t);
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: prof export --format chrome [-o FILE.json] [--min-ns N] TRACE...\n"
		"A timeline for chrome://tracing and Perfetto (ui.perfetto.dev): per process and\n"
		"thread, lock waits, I/O calls, CUDA API calls, GPU kernels and copies (one track per\n"
		"stream), NVTX ranges and marks, exits, forks and execs, and a heap-size counter.\n\n"
		"  --format chrome  the Chrome trace-event JSON format (the only one so far)\n"
		"  -o FILE          write to FILE (default stdout)\n"
		"  --min-ns N       leave out I/O calls shorter than N ns (default 0: all)\n"
		"  -h, --help       this help\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "min-ns", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *format = "chrome", *outfile = NULL;
	struct exporter x = { .first = 1 };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:f:", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'm': x.min_ns = strtoull(optarg, NULL, 10); break;
		case 'o': outfile = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (strcmp(format, "chrome")) {
		prof_error("export: unknown format '%s' (chrome)", format);
		return 2;
	}
	char **paths;
	size_t n;
	if (inputs_expand(argv + optind, argc - optind, &paths, &n) < 0)
		return 1;
	x.out = outfile ? fopen(outfile, "w") : stdout;
	if (!x.out) {
		prof_error("%s: cannot write: %m", outfile);
		inputs_free(paths);
		return 1;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", x.out);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = export_trace(&x, paths[i]);
	fputs("\n]}\n", x.out);
	inputs_free(paths);
	return cmd_finish_output(x.out, outfile, rc < 0 ? 1 : 0);
}
