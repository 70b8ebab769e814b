/* End-to-end report text: control characters of a command line escaped, many processes
 * busiest first, --pid and --exe on every command, options that do not go together. */
#include "e2e.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(report, .fini = e2e_cleanup);

static int prof(const char *dir, const char *const *args, char **out)
{
	char o[PATH_MAX];
	snprintf(o, sizeof(o), "%s/report-out.txt", dir);
	const char *cmd[16] = { e2e_prof() };
	size_t n = 1;
	for (; args[n - 1] && n < 15; n++)
		cmd[n] = args[n - 1];
	cmd[n] = NULL;
	int st = e2e_run(cmd, NULL, o, NULL);
	*out = e2e_read_file(o);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(report, control_characters_in_argv_are_escaped)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { "/bin/echo", "\033[31mred\nline", "plain", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	const char *args[] = { "report", dir, NULL };
	char *text;
	cr_assert_eq(prof(dir, args, &text), 0);
	cr_expect_null(strchr(text, '\033'), "a raw escape character in:\n%s", text);
	cr_expect_not_null(strstr(text, "/bin/echo \"\\x1b[31mred\\nline\" plain"), "%s", text);
	/* Plurals agree with their numbers. */
	cr_expect_null(strstr(text, " 1 allocations"), "%s", text);
	cr_expect_null(strstr(text, " 1 blocks"), "%s", text);
	cr_expect_null(strstr(text, " 1 frees"), "%s", text);
	cr_expect_null(strstr(text, " 1 calls"), "%s", text);
	free(text);
}

Test(report, busiest_first_and_pid_exe_select)
{
	const char *dir = e2e_tmpdir();
	/* sh forks a short-lived true and then the demo, which does the most work. */
	char script[PATH_MAX + 64];
	snprintf(script, sizeof(script), "/bin/true; %s; /bin/true", e2e_prog("demo"));
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);
	const char *args[] = { "report", dir, NULL };
	char *text;
	cr_assert_eq(prof(dir, args, &text), 0);
	char *first = strstr(text, "== Process");
	cr_assert_not_null(first, "%s", text);
	cr_expect_not_null(strstr(text, "busiest"), "%s", text);
	cr_expect_eq(strncmp(strchr(first, ':'), ": ", 2), 0);
	cr_expect_not_null(strstr(first, "progs/demo"), "the demo first:\n%.300s", first);
	cr_expect(strstr(first, "progs/demo") < strstr(first, "\n"), "%.300s", first);
	free(text);

	const char *by_exe[] = { "report", "--brief", "--exe", "demo", dir, NULL };
	cr_assert_eq(prof(dir, by_exe, &text), 0);
	cr_expect_eq(e2e_count_lines(text), 1, "%s", text);
	cr_expect_not_null(strstr(text, "demo"), "%s", text);
	unsigned pid = 0;
	cr_assert_eq(sscanf(text, "pid %u", &pid), 1);
	free(text);

	char pids[32];
	snprintf(pids, sizeof(pids), "%u", pid);
	const char *commands[][8] = {
		{ "leaks", "--pid", pids, dir, NULL },
		{ "flame", "--kind", "alloc", "--folded", "--pid", pids, dir, NULL },
		{ "export", "--pid", pids, "--format", "chrome", dir, NULL },
		{ "dump", "--pid", pids, dir, NULL },
	};
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		cr_expect_eq(prof(dir, commands[i], &text), 0, "prof %s --pid", commands[i][0]);
		free(text);
	}
	const char *none[] = { "leaks", "--exe", "no-such-program", dir, NULL };
	cr_expect_eq(prof(dir, none, &text), 1);
	free(text);
	const char *bad_pid[] = { "report", "--pid", "abc", dir, NULL };
	cr_expect_eq(prof(dir, bad_pid, &text), 2);
	free(text);
	const char *both[] = { "report", "--json", "--brief", dir, NULL };
	cr_expect_eq(prof(dir, both, &text), 2);
	free(text);
}

/* Counts in text have thousands separators, in every table. */
Test(report, thousands_separators_everywhere)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { "/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=2500", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	const char *args[] = { "report", dir, NULL };
	char *text;
	cr_assert_eq(prof(dir, args, &text), 0);
	const char *io = strstr(text, "/dev/zero");
	cr_assert_not_null(io, "%s", text);
	const char *line = io;
	while (line > text && line[-1] != '\n')
		line--;
	cr_expect_not_null(strstr(line, " 2,500 "), "%.*s", (int)(strchr(io, '\n') - line), line);
	cr_expect_null(strstr(text, " 2500 "), "%s", text);
	free(text);
}

/* The same trace gives the same report every time, though the analyzer's maps are seeded
 * differently in each run (a function's file:line once depended on their order). */
Test(report, same_trace_same_report)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("cpu_shares"), "30", NULL };
	const char *env[] = { "PROF_CPU_HZ=999", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	const char *forms[][4] = { { "report", "--fold", "none", NULL },
				   { "report", "--json", NULL, NULL } };
	for (size_t f = 0; f < 2; f++) {
		const char *args[6] = { forms[f][0], forms[f][1], forms[f][2], NULL, NULL, NULL };
		size_t n = 0;
		while (args[n])
			n++;
		args[n] = dir;
		char *first;
		cr_assert_eq(prof(dir, args, &first), 0);
		for (int i = 0; i < 6; i++) {
			char *again;
			cr_assert_eq(prof(dir, args, &again), 0);
			cr_expect_str_eq(again, first, "%s differs between two runs", forms[f][0]);
			free(again);
		}
		free(first);
	}
}

/* The work a process did as the report orders them (busiest first): CPU time, else lifetime. */
static long long work_of(json_t *p)
{
	long long cpu = 0;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(p, "threads"), i, t)
		cpu += json_integer_value(json_object_get(t, "cpu_ns"));
	return cpu ? cpu : json_integer_value(json_object_get(p, "duration_ns")) / 1000;
}

static json_t *report_json(const char *dir, const char *pid)
{
	const char *args[6] = { "report", "--json" };
	size_t n = 2;
	if (pid) {
		args[n++] = "--pid";
		args[n++] = pid;
	}
	args[n] = dir;
	char *text;
	cr_assert_eq(prof(dir, args, &text), 0);
	json_error_t je;
	json_t *doc = json_loads(text, 0, &je);
	cr_assert_not_null(doc, "bad JSON: %s (line %d)", je.text, je.line);
	free(text);
	return doc;
}

/* prof report makes the report a process at a time (each freed before the end): the run's
 * document is what each process gives alone, put together. Keys in SPEC's order; processes
 * in the order they started, each the object a report of it alone has; the findings those of
 * each alone, busiest process first; the totals their sums; each process's text section as
 * a report of it alone shows it. */
Test(report, a_run_is_its_processes_put_together, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	const char *a1[] = { e2e_prog("tree"), "spawn", NULL };
	const char *a2[] = { e2e_prog("lock_hot"), NULL };
	const char *a3[] = { e2e_prog("cpu_wall"), NULL };
	cr_assert_eq(e2e_profile(dir, a1, NULL, NULL, NULL), 0);
	cr_assert_eq(e2e_profile(dir, a2, NULL, NULL, NULL), 0);
	cr_assert_eq(e2e_profile(dir, a3, NULL, NULL, NULL), 0);
	json_t *doc = report_json(dir, NULL);
	static const char *const keys[] = { "version", "findings", "processes", "tree", "totals",
					    "ranks" };
	size_t k = 0;
	for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it), k++)
		cr_expect(k < 6 && !strcmp(json_object_iter_key(it), keys[k]), "key %zu: %s", k,
			  json_object_iter_key(it));
	cr_expect_eq(k, 6);
	json_t *ps = json_object_get(doc, "processes");
	size_t n = json_array_size(ps);
	cr_assert_geq(n, 3, "%zu processes", n);
	json_t *alone = json_array(), *findings = json_array();
	long long alloc_calls = 0;
	char *text;
	const char *args[] = { "report", dir, NULL };
	cr_assert_eq(prof(dir, args, &text), 0);
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(ps, i);
		if (i)
			cr_expect_geq(e2e_int(p, "start_ns"), e2e_int(json_array_get(ps, i - 1), "start_ns"));
		char pid[32];
		snprintf(pid, sizeof(pid), "%ld", e2e_int(p, "pid"));
		json_t *one = report_json(dir, pid);
		json_t *op = json_array_get(json_object_get(one, "processes"), 0);
		cr_expect(json_equal(op, p), "process %s differs from its report alone", pid);
		json_array_append(alone, one);
		alloc_calls += e2e_int(p, "heap.alloc_calls") > 0 ? e2e_int(p, "heap.alloc_calls") : 0;
		json_decref(one);
		/* its text section, as a report of it alone has it */
		const char *pa[] = { "report", "--pid", pid, dir, NULL };
		char *mine;
		cr_assert_eq(prof(dir, pa, &mine), 0);
		char *section = strstr(mine, "== Process");
		cr_assert_not_null(section, "%s", mine);
		cr_expect_not_null(strstr(text, section), "pid %s: its section is not in the run's", pid);
		free(mine);
	}
	free(text);
	/* the findings: each process's, the busiest first (ties in the order they started) */
	for (size_t done = 0; done < n; done++) {
		size_t best = n;
		for (size_t i = 0; i < n; i++) {
			json_t *one = json_array_get(alone, i);
			if (json_is_null(one))
				continue;
			if (best == n || work_of(json_array_get(json_object_get(one, "processes"), 0)) >
			    work_of(json_array_get(json_object_get(json_array_get(alone, best),
								   "processes"), 0)))
				best = i;
		}
		json_array_extend(findings, json_object_get(json_array_get(alone, best), "findings"));
		json_array_set_new(alone, best, json_null());
	}
	cr_expect_gt(json_array_size(findings), 0);
	cr_expect(json_equal(findings, json_object_get(doc, "findings")),
		  "the run's findings are not its processes' findings, busiest first");
	cr_expect_eq(e2e_int(json_object_get(doc, "totals"), "heap.alloc_calls"), alloc_calls);
	cr_expect_eq(json_array_size(json_object_get(doc, "tree")), 3, "one root per program run");
	json_decref(findings);
	json_decref(alone);
	json_decref(doc);
}

/* How many lines of an strace log open a path ending in `name"` (the quote closes the path). */
static long opens_of(const char *log, const char *name)
{
	char *text = e2e_read_file(log);
	cr_assert_not_null(text, "no strace log %s", log);
	char want[128];
	snprintf(want, sizeof(want), "%s\"", name);
	long n = 0;
	for (const char *p = text; (p = strstr(p, want)); p++)
		n++;
	free(text);
	return n;
}

/* The processes of a run map the same files: their symbolizers are passed on from one
 * process to the next (analyzer/process.c), so that each file's debug information is opened
 * and decompressed a few times (once a worker), not once a process (libc's: some 70 ms; a
 * script's 300 subshells took 12 s to report, 0.5 s now). */
Test(report, the_processes_of_a_run_share_their_symbols, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("fork_tables"), "10", "12", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	char log[PATH_MAX], out[PATH_MAX];
	snprintf(log, sizeof(log), "%s/strace.log", dir);
	snprintf(out, sizeof(out), "%s/report.txt", dir);
	const char *cmd[] = { "strace", "-f", "-qq", "-e", "trace=openat", "-o", log, e2e_prof(),
			      "report", dir, NULL };
	/* LeakSanitizer (the asan analyzer of make test) cannot run under ptrace */
	const char *env[] = { "PROF_JOBS=2", "ASAN_OPTIONS=detect_leaks=0", NULL };
	int st = e2e_run(cmd, env, out, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "strace prof report: %d", st);
	long libc = opens_of(log, "/libc.so.6");
	cr_expect_geq(libc, 1, "libc was never opened");
	cr_expect_leq(libc, 5, "libc opened %ld times for 13 processes and 2 workers", libc);
	/* and every child's stacks are its own */
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	size_t i, children = 0;
	json_t *p;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		if (i == 0)
			continue;  /* the parent allocates for its output too */
		json_t *site = json_array_get(json_object_get(json_object_get(p, "heap"), "sites"), 0);
		const char *fn = json_string_value(
			json_object_get(json_array_get(json_object_get(site, "stack"), 0), "function"));
		children++;
		cr_expect_str_eq(fn ?: "(none)", "alloc_at", "process %zu", i);
	}
	cr_expect_eq(children, 12);
	json_decref(doc);
}

/* Two programs in one run directory, read by one worker: the second reuses the first's
 * symbolizer, and its modules (the same ids, other files) are its own. */
Test(report, two_programs_in_one_run_are_each_symbolized_as_themselves, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	const char *a[] = { e2e_prog("fork_tables"), "10", "1", NULL };
	const char *b[] = { e2e_prog("forker"), NULL };
	cr_assert_eq(e2e_profile(dir, a, NULL, NULL, NULL), 0);
	int st = e2e_profile(dir, b, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st), "forker: %d", st);
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/report.json", dir);
	const char *cmd[] = { e2e_prof(), "report", "--json", dir, NULL };
	const char *env[] = { "PROF_JOBS=1", NULL };
	cr_assert_eq(e2e_run(cmd, env, out, NULL), 0);
	json_error_t jerr;
	json_t *doc = json_load_file(out, 0, &jerr);
	cr_assert_not_null(doc, "%s", jerr.text);
	size_t i, checked = 0;
	json_t *p;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		const char *exe = json_string_value(json_object_get(p, "exe"));
		cr_assert_not_null(exe);
		const char *own = strstr(exe, "fork_tables") ? "fork_tables.c" : "forker.c";
		size_t j, k;
		json_t *site, *fr;
		json_array_foreach(json_object_get(json_object_get(p, "heap"), "sites"), j, site)
			json_array_foreach(json_object_get(site, "stack"), k, fr) {
				const char *file = json_string_value(json_object_get(fr, "file"));
				if (!file || !strstr(file, "tests/progs/"))
					continue;
				cr_expect_not_null(strstr(file, own), "process %zu (%s): a frame in %s",
						   i, exe, file);
				checked++;
			}
	}
	cr_expect_geq(checked, 5, "frames in the programs' own files: %zu", checked);
	json_decref(doc);
}
