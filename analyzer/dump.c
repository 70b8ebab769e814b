/* prof dump: the header and every record of a trace, one line each in merged time order, for
 * debugging the format (the uftrace `dump` idea). */
#include "commands.h"
#include "summary.h"
#include "family.h"
#include "format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "trace.h"

static const struct cmd_spec dump_spec = {
	"dump", 0, 0,
	"usage: prof dump [--help] TRACE...\n"
	"Prints each trace's header (every field, exe, host, argv), then every record in\n"
	"time order, one line each: file offset, time since start (s), stream, tid,\n"
	"type, and the record's fields.\n",
};

/* t - start as seconds with 9 decimals, exactly (no floating point), signed. */
static void fmt_rel_time(char *buf, size_t len, uint64_t t, uint64_t start)
{
	uint64_t d = t >= start ? t - start : start - t;
	snprintf(buf, len, "%s%" PRIu64 ".%09" PRIu64, t >= start ? "" : "-", d / 1000000000u,
		 d % 1000000000u);
}

static const char *state_name(uint32_t s)
{
	switch (s) {
	case PROF_STATE_RUNNING: return "running";
	case PROF_STATE_EXITED: return "exited";
	case PROF_STATE_EXECED: return "execed";
	case PROF_STATE_DISABLED: return "disabled";
	default: return "?";
	}
}

static void put_events(uint32_t ev)
{
	const char *sep = "";
	printf("0x%x (", ev);
#define PROF_X(name, str, bit)                    \
	if (ev & PROF_EV_##name) {                \
		printf("%s%s", sep, str);          \
		sep = ",";                         \
	}
	PROF_EVENT_FAMILIES(PROF_X)
#undef PROF_X
	printf(")");
}

static void dump_header(const struct trace *t)
{
	const struct prof_file_header *h = trace_header(t);
	printf("trace %s\n", trace_path(t));
	printf("  magic              0x%016" PRIx64 "\n", h->magic);
	printf("  version            %u\n", h->version);
	printf("  min_version        %u\n", h->min_version);
	printf("  header_size        %u\n", h->header_size);
	printf("  features           0x%" PRIx64 "\n", h->features);
	printf("  chunk_size         %u\n", h->chunk_size);
	printf("  data_offset        %u\n", h->data_offset);
	printf("  chunks_claimed     %" PRIu64 "\n", h->chunks_claimed);
	printf("  pid                %u\n", h->pid);
	printf("  ppid               %u\n", h->ppid);

	char date[64] = "?";
	time_t secs = (time_t)(h->start_realtime_ns / 1000000000u);
	struct tm tm;
	if (gmtime_r(&secs, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("  start_realtime_ns  %" PRIu64 " (%s)\n", h->start_realtime_ns, date);
	printf("  start_ns           %" PRIu64 "\n", h->start_ns);
	printf("  clock_id           %u\n", h->clock_id);
	printf("  clock_source       %u (%s)\n", h->clock_source,
	       h->clock_source == PROF_CLOCK_SRC_TSC ? "tsc" :
	       h->clock_source == PROF_CLOCK_SRC_CLOCK_GETTIME ? "clock_gettime" : "?");
	if (h->tsc_hz)
		printf("  tsc_hz             %llu\n", (unsigned long long)h->tsc_hz);
	printf("  state              %u (%s)\n", h->state, state_name(h->state));
	printf("  events             ");
	put_events(h->events);
	printf("\n  stack_depth        %u\n", h->stack_depth);
	printf("  rank               %d\n", h->rank);
	printf("  argc               %u\n", h->argc);
	printf("  strings_offset     %u\n", h->strings_offset);
	printf("  strings_size       %u\n", h->strings_size);
	printf("  cpu_hz             %u\n", h->cpu_hz);
	printf("  heap_sample        %u\n", h->heap_sample);
	printf("  lost_records       %" PRIu64 "\n", h->lost_records);
	printf("  exe                ");
	fmt_quoted(stdout, trace_exe(t), SIZE_MAX);
	printf("\n  host               ");
	fmt_quoted(stdout, trace_host(t), SIZE_MAX);
	putchar('\n');
	for (uint32_t i = 0; i < trace_argc(t); i++) {
		printf("  argv[%u]%*s", i, i < 10 ? 11 : i < 100 ? 10 : 9, "");
		fmt_quoted(stdout, trace_argv(t, i), SIZE_MAX);
		putchar('\n');
	}
}

/* A stack's frames: Python frames as code id and instruction, native ones as addresses. */
static void dump_frames(const uint64_t *frames, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (prof_py_frame_is(frames[i]))
			printf(" py:%u@%u", prof_py_frame_code(frames[i]), prof_py_frame_lasti(frames[i]));
		else
			printf(" 0x%" PRIx64, frames[i]);
}

/* The fields of one record; the reader has checked the sizes of known types. */
static void dump_fields(const struct prof_rec *r)
{
	switch (r->type) {
	case PROF_REC_PAD:
		printf(" size=%u", r->size);
		break;
	case PROF_REC_LOST:
		printf(" records=%" PRIu64, ((const struct prof_rec_lost *)r)->records);
		break;
	case PROF_REC_MODULE: {
		const struct prof_rec_module *m = (const void *)r;
		printf(" id=%u [0x%" PRIx64 "-0x%" PRIx64 ") bias=0x%" PRIx64 " build_id=", m->id,
		       m->start, m->end, m->bias);
		for (uint32_t i = 0; i < m->build_id_len; i++)
			printf("%02x", m->build_id[i]);
		if (!m->build_id_len)
			printf("-");
		printf(" path=");
		fmt_quoted(stdout, m->path, r->size - sizeof(*m));
		break;
	}
	case PROF_REC_MODULE_UNLOAD:
		printf(" id=%u", ((const struct prof_rec_module_unload *)r)->id);
		break;
	case PROF_REC_STACK: {
		const struct prof_rec_stack *s = (const void *)r;
		printf(" id=%u depth=%u", s->id, s->depth);
		dump_frames(s->frames, s->depth);
		break;
	}
	case PROF_REC_STACK_TAIL: {
		const struct prof_rec_stack_tail *s = (const void *)r;
		printf(" id=%u depth=%u parent=%u shared=%u", s->id, s->depth, s->parent, s->shared);
		dump_frames(s->frames, s->depth);
		break;
	}
	case PROF_REC_THREAD_START: {
		const struct prof_rec_thread_start *ts = (const void *)r;
		printf(" serial=%u tid=%u parent_serial=", ts->serial, ts->tid);
		if (ts->parent_serial == ~0u)
			printf("?");
		else
			printf("%u", ts->parent_serial);
		printf(" stack=%u start_routine=0x%" PRIx64, ts->stack, ts->start_routine);
		break;
	}
	case PROF_REC_THREAD_END: {
		const struct prof_rec_thread_end *te = (const void *)r;
		printf(" serial=%u tid=%u cpu_ns=%" PRIu64 " name=", te->serial, te->tid, te->cpu_ns);
		fmt_quoted(stdout, te->name, sizeof(te->name));
		break;
	}
	case PROF_REC_EXIT: {
		const struct prof_rec_exit *e = (const void *)r;
		if (e->how == 0)
			printf(" how=exit status=%d", e->code);
		else if (e->how == 1)
			printf(" how=signal signal=%d", e->code);
		else
			printf(" how=%u code=%d", e->how, e->code);
		break;
	}
	case PROF_REC_EXEC:
		printf(" path=");
		fmt_quoted(stdout, ((const struct prof_rec_exec *)r)->path, r->size - sizeof(struct prof_rec));
		break;
	case PROF_REC_FORK:
		printf(" child_pid=%u", ((const struct prof_rec_fork *)r)->child_pid);
		break;
	case PROF_REC_REAPED: {
		const struct prof_rec_reaped *w = (const void *)r;
		printf(" child_pid=%u status=%d", w->child_pid, w->status);
		break;
	}
	case PROF_REC_PY_CODE: {
		const struct prof_rec_py_code *c = (const void *)r;
		size_t room = r->size - sizeof(*c), nl = c->name_len < room ? c->name_len : room;
		size_t ql = c->qualname_len < room - nl ? c->qualname_len : room - nl;
		size_t fl = c->file_len < room - nl - ql ? c->file_len : room - nl - ql;
		printf(" id=%u firstlineno=%d name=", c->id, c->firstlineno);
		fmt_quoted(stdout, c->data, nl);
		printf(" qualname=");
		fmt_quoted(stdout, c->data + nl, ql);
		printf(" file=");
		fmt_quoted(stdout, c->data + nl + ql, fl);
		printf(" linetable=%u bytes", c->linetable_len);
		return;
	}
	default: {
		const struct family *f = prof_rec_known(r->type) ? family_of_type(r->type) : NULL;
		if (!f || !f->dump) {
			printf(" flags=0x%x size=%u", r->flags, r->size);
			return;
		}
		f->dump(stdout, r);
		break;
	}
	}
	/* Bytes past the known fields (a newer writer's); string records end in their string. */
	if (r->size > prof_rec_min_size(r->type) && r->type != PROF_REC_PAD &&
	    r->type != PROF_REC_STACK && r->type != PROF_REC_STACK_TAIL &&
	    !prof_rec_string_offset(r->type))
		printf(" (+%u bytes)", r->size - prof_rec_min_size(r->type));
}

static int dump_one(const char *path)
{
	char err[1024];
	if (summary_is(path)) {
		prof_error("%s: a summary (prof summarize): prof dump needs the traces", path);
		return -1;
	}
	struct trace *t = trace_open(path, err, sizeof(err));
	if (!t) {
		prof_error("%s", err);
		return -1;
	}
	dump_header(t);
	printf("records:\n  %10s %20s %6s %8s %-13s fields\n", "offset", "time_s", "stream",
	       "tid", "type");
	uint64_t start = trace_header(t)->start_ns, n = 0;
	struct trace_event ev;
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		const char *name = prof_rec_type_name(ev.rec->type);
		char unknown[32];
		if (!name) {
			snprintf(unknown, sizeof(unknown), "UNKNOWN(%u)", ev.rec->type);
			name = unknown;
		}
		char when[32];
		fmt_rel_time(when, sizeof(when), ev.rec->time, start);
		printf("  %10" PRIu64 " %20s %6u %8u %-13s", ev.offset, when, ev.stream, ev.tid,
		       name);
		dump_fields(ev.rec);
		if (ev.file_size != ev.rec->size)
			printf(" [short: %u bytes]", ev.file_size);
		putchar('\n');
		n++;
	}
	if (rc == 0)
		printf("%" PRIu64 " records\n", n);
	trace_close(t);
	if (rc < 0) {
		fflush(stdout);
		prof_error("%s", err);
		return -1;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&dump_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char **paths;
	size_t n;
	if (cmd_inputs(&o, &paths, &n) < 0)
		return 1;
	int status = 0;
	for (size_t i = 0; i < n && !status; i++) {
		if (i)
			putchar('\n');
		if (dump_one(paths[i]) < 0)
			status = 1;
	}
	inputs_free(paths);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		prof_error("dump: write error on standard output");
		status = 1;
	}
	return status;
}
