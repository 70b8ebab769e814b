/* prof export --format chrome: a timeline that chrome://tracing and Perfetto open. Records are
 * streamed straight into trace events, in two passes (names, wherever they stand, then
 * events), so memory stays with names and live state, whatever the trace's length. Each
 * family writes the events of its own records (family.h); the process and its threads, exits,
 * execs and forks are written here. Times are the trace clock (CLOCK_MONOTONIC) in
 * microseconds, so processes of one run line up. */
#include "commands.h"
#include "exports.h"
#include "family.h"
#include "process.h"
#include "summary.h"
#include "timeline.h"
#include "trace.h"

#include <stdlib.h>
#include <string.h>

/* Thread names from THREAD_END (the names families give are theirs to write). */
static void core_names(struct timeline *tl, const struct trace_event *ev)
{
	if (ev->rec->type == PROF_REC_THREAD_END) {
		const struct prof_rec_thread_end *r = (const void *)ev->rec;
		char name[17];
		memcpy(name, r->name, 16);
		name[16] = '\0';
		tl_metadata(tl, "thread_name", r->tid, name);
	}
}

static void core_event(struct timeline *tl, const struct trace_event *ev)
{
	const struct prof_rec *h = ev->rec;
	char name[300];
	switch (h->type) {
	case PROF_REC_EXIT:
		snprintf(name, sizeof(name), "%s %d",
			 ((const struct prof_rec_exit *)h)->how ? "killed by signal" : "exit",
			 ((const struct prof_rec_exit *)h)->code);
		break;
	case PROF_REC_EXEC:
		snprintf(name, sizeof(name), "exec %.280s", ((const struct prof_rec_exec *)h)->path);
		break;
	case PROF_REC_FORK:
		snprintf(name, sizeof(name), "fork %u", ((const struct prof_rec_fork *)h)->child_pid);
		break;
	default:
		return;
	}
	tl_instant(tl, "process", ev->tid, "p", name, h->time);
}

/* One pass over the trace: names (pass 1) or events (pass 2). */
static int export_pass(struct trace *t, struct timeline *tl, void **state, int events,
		       char *err, size_t errlen)
{
	struct trace_event ev;
	int got;
	while ((got = trace_next(t, &ev, err, errlen)) > 0) {
		const struct family *f = family_of_type(ev.rec->type);
		if (!f) {
			if (events)
				core_event(tl, &ev);
			else
				core_names(tl, &ev);
			continue;
		}
		if (!f->timeline || !prof_rec_known(ev.rec->type))
			continue;
		void *st = state[family_index(f)];
		int (*hook)(void *, struct timeline *, const struct trace_event *) =
			events ? f->timeline->event : f->timeline->names;
		if (hook && hook(st, tl, &ev) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	for (size_t i = 0; events && got == 0 && families[i]; i++) {
		const struct family_timeline *ft = families[i]->timeline;
		if (ft && ft->finish && ft->finish(state[i], tl) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return got;
}

static int export_trace(struct timeline *tl, const char *path)
{
	char err[512];
	if (summary_is(path)) {
		prof_error("%s: a summary (prof summarize): the chrome timeline needs the traces",
			   path);
		return -1;
	}
	struct trace *t = trace_open(path, err, sizeof(err));
	if (!t) {
		prof_error("%s", err);
		return -1;
	}
	const struct prof_file_header *hdr = trace_header(t);
	tl->pid = hdr->pid;
	char label[600];
	snprintf(label, sizeof(label), "%s (%u)", trace_exe(t), hdr->pid);
	tl_metadata(tl, "process_name", 0, label);

	/* Families that name code addresses (CPU samples by function) get the model too. */
	struct process proc;
	int have_proc = 0, rc = 0;
	for (size_t i = 0; families[i]; i++)
		if (families[i]->timeline && families[i]->timeline_symbols && !have_proc) {
			if (process_load(path, &proc, err, sizeof(err)) < 0) {
				prof_error("%s", err);
				process_free(&proc);
				trace_close(t);
				return -1;
			}
			have_proc = 1;
		}
	tl->proc = have_proc ? &proc : NULL;
	void *state[FAMILY_MAX] = { 0 };
	for (size_t i = 0; rc == 0 && families[i]; i++) {
		const struct family_timeline *ft = families[i]->timeline;
		if (!ft || !ft->state_size)
			continue;
		if (!(state[i] = calloc(1, ft->state_size)) || (ft->init && ft->init(state[i]) < 0)) {
			free(state[i]);
			state[i] = NULL;
			snprintf(err, sizeof(err), "out of memory");
			rc = -1;
		}
	}
	if (rc == 0)
		rc = export_pass(t, tl, state, 0, err, sizeof(err));
	if (rc == 0) {
		trace_rewind(t);
		rc = export_pass(t, tl, state, 1, err, sizeof(err));
	}
	if (rc < 0)
		prof_error("%s", err);
	for (size_t i = 0; families[i]; i++)
		if (state[i]) {
			if (families[i]->timeline->free)
				families[i]->timeline->free(state[i]);
			free(state[i]);
		}
	trace_close(t);
	if (have_proc)
		process_free(&proc);
	tl->proc = NULL;
	return rc;
}

static const struct cmd_spec export_spec = {
	"export", CMD_OUTPUT | CMD_EXPORT | CMD_WINDOW, 0,
	"usage: prof export --format chrome|speedscope|pprof|sqlite [-o FILE] TRACE...\n"
	"chrome: a timeline for chrome://tracing and Perfetto (ui.perfetto.dev): per process and\n"
	"thread, CPU samples (named by function, with their stacks), blocked calls (sleeps,\n"
	"poll, waits, joins), lock waits, I/O calls, CUDA API calls, GPU kernels and copies\n"
	"(one track per stream), NVTX ranges and marks, exits, forks and execs, and a\n"
	"heap-size counter (at most two samples per millisecond, peaks kept).\n"
	"speedscope: every flame kind with data as a profile for speedscope.app.\n"
	"pprof: a gzipped profile.proto for go tool pprof, Pyroscope and Grafana, a sample\n"
	"type per flame kind, locations by function, file and line.\n"
	"sqlite: a database of processes, threads, stacks, frames, allocations, samples, lock\n"
	"waits, I/O calls, CUDA API calls and GPU activity (schema: README); needs -o.\n\n"
	"  --format F       chrome (default), speedscope, pprof or sqlite\n"
	"  -o FILE          write to FILE (default stdout)\n"
	"  --min-ns N       leave out I/O calls shorter than N ns (default 0: all)\n"
	"  -h, --help       this help\n",
};

int cmd_export(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&export_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.format && strcmp(o.format, "chrome")) {
		int (*writer)(const struct cmd_opts *, struct process *, size_t, FILE *) =
			!strcmp(o.format, "speedscope") ? export_speedscope :
			!strcmp(o.format, "pprof") ? export_pprof : NULL;
		if (!writer && strcmp(o.format, "sqlite")) {
			prof_error("export: unknown format '%s' (chrome, speedscope, pprof, sqlite)",
				   o.format);
			return 2;
		}
		if (!writer && !o.outfile) {
			prof_error("export: --format sqlite writes a database file: give -o FILE");
			return 2;
		}
		struct cmd_io io;
		struct cmd_opts in = o;
		in.outfile = writer ? o.outfile : NULL;  /* sqlite opens its file itself */
		if (!writer) {  /* it reads every record again */
			processes_need_traces("prof export --format sqlite");
			processes_reduce_set(0);
		}
		if (cmd_open(&io, &in) < 0)
			return 1;
		rc = writer ? writer(&o, io.ps, io.n, io.out) : export_sqlite(&o, io.ps, io.n);
		return cmd_close(&io, rc < 0 ? 1 : 0);
	}
	char **paths;
	size_t n;
	if (cmd_inputs(&o, &paths, &n) < 0)
		return 1;
	struct timeline tl = { .out = o.outfile ? fopen(o.outfile, "w") : stdout, .first = 1,
			       .min_ns = o.min_ns };
	if (!tl.out) {
		prof_error("%s: cannot write: %m", o.outfile);
		inputs_free(paths);
		return 1;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", tl.out);
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = export_trace(&tl, paths[i]);
	fputs("\n]}\n", tl.out);
	inputs_free(paths);
	return cmd_finish_output(tl.out, o.outfile, rc < 0 ? 1 : 0);
}
