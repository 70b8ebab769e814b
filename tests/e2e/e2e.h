/* Helpers for end-to-end tests: run real programs under libprof, valgrind and prof. */
#ifndef PROF_E2E_H
#define PROF_E2E_H

#include <jansson.h>
#include <stddef.h>

/* leak[]: bytes and blocks of the LEAK SUMMARY, in its order: definitely, indirectly and
 * possibly lost, still reachable (-1 where valgrind printed no such line). */
struct vg_summary {
	long allocs, frees, bytes, in_use_bytes, in_use_blocks;
	long leak[4][2];
};

const char *e2e_build(void);              /* PROF_BUILD, or "build" */
const char *e2e_prog(const char *name);   /* build/progs/NAME (static buffer ring) */
const char *e2e_prof(void);               /* PROF_ANALYZER, or build/prof */
const char *e2e_lib(void);                /* build/libprof.so, absolute */

/* A fresh directory under /tmp, removed by e2e_cleanup(). */
const char *e2e_tmpdir(void);
void e2e_cleanup(void);

/* Runs argv with env additions (NULL-terminated "K=V" list, may be NULL). stdout and stderr
 * go to the given files (NULL: /dev/null). Returns the wait status, or -1. */
int e2e_run(const char *const argv[], const char *const env[], const char *out_file,
	    const char *err_file);

/* Runs argv under libprof with PROF_OUTPUT=<dir>/prof.%n.%p.trace, plus env. */
int e2e_profile(const char *dir, const char *const argv[], const char *const env[],
		const char *out_file, const char *err_file);

/* valgrind's HEAP SUMMARY (and LEAK SUMMARY, --leak-check=full) of argv; 0 on success. */
int e2e_valgrind(const char *const argv[], struct vg_summary *s);

/* `prof report --json` (or any prof command with --json; "leaks --show=all": a command and
 * one option) on path: the parsed document. */
json_t *e2e_prof_json(const char *command, const char *path);
/* processes[i] of a report; NULL if absent. */
json_t *e2e_process(json_t *doc, size_t i);
/* The first process of a report whose integer `key` ("pid", "rank") is value; NULL if none. */
json_t *e2e_process_where(json_t *doc, const char *key, long value);
/* The row of `path` in an I/O file list (a process's io.files); NULL if absent. */
json_t *e2e_file_row(json_t *files, const char *path);
long e2e_int(json_t *obj, const char *path);  /* "heap.alloc_calls" -> integer, -1 if absent */
/* Percent of the CPU time spent in function and its callees, from a report's cpu.top_total;
 * 0 if it is not there. */
double e2e_cpu_total_pct(json_t *cpu, const char *function);

/* Line of the first occurrence of marker in tests/progs/<file>; 0 if not found. */
int e2e_marker_line(const char *file, const char *marker);
char *e2e_read_file(const char *path);  /* malloc'd, NUL-terminated; NULL on error */
/* tests/progs/alarm_jumps: what it said it did (its output file out), and the heap calls of
 * process p held to that (each jump may lose the one call it interrupted). */
struct e2e_jumps {
	long allocs, writes, jumps;
};
struct e2e_jumps e2e_jumps_said(const char *out);
void e2e_expect_heap_of_jumps(json_t *p, struct e2e_jumps j);
void e2e_expect_file(const char *path, const char *want);  /* the file holds exactly want */
/* The summed weight of the folded flame-graph lines (frames;...;frames WEIGHT) in text that
 * hold `a`, and then `b` further on the same line where b is not NULL. */
double e2e_folded_weight(const char *text, const char *a, const char *b);
int e2e_count_lines(const char *text);
/* What `prof ARGS...` printed (it must exit 0), through a file in dir; malloc'd, never NULL. */
char *e2e_prof_text(const char *dir, const char *const *args);
/* Records of type `type` in `prof dump` of dir (the fifth column), those whose line holds
 * `with` if not NULL. */
size_t e2e_dumped(const char *dir, const char *type, const char *with);

#endif
