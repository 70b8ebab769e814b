/* End-to-end tests of Python frames in stacks: tests/progs/py_work.py run by CPython 3.11
 * (Debian's /usr/bin/python3, with numpy where python3-numpy is installed), 3.12 and 3.13
 * (pyenv's, where present), and an older one (3.10) that must fall back to native stacks with
 * one note. An interpreter that is not installed skips its test. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(python, .fini = teardown, .timeout = 240);

#define PYENV "/root/.pyenv/versions/"

/* The first interpreter of the list that exists: a path, or a pyenv version prefix
 * ("3.12.": the newest 3.12 pyenv has), in buf. NULL when none does. */
static const char *interpreter(const char *want, char *buf, size_t len)
{
	if (want[0] == '/')
		return access(want, X_OK) == 0 ? want : NULL;
	for (int patch = 30; patch >= 0; patch--) {
		char minor[16];
		snprintf(minor, sizeof(minor), "%.*s", (int)(strlen(want) - 1), want);
		snprintf(buf, len, PYENV "%s%d/bin/python%s", want, patch, minor);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

static const char *script(void)
{
	static char path[PATH_MAX];
	if (!realpath("tests/progs/py_work.py", path))
		cr_assert_fail("tests/progs/py_work.py not found");
	return path;
}

static int has_numpy(const char *python)
{
	const char *argv[] = { python, "-c", "import numpy", NULL };
	int st = e2e_run(argv, NULL, NULL, NULL);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The folded CPU (or other kind) flame graph of input (a run directory or a summary), as
 * text, by way of a file in dir. */
static char *folded_of(const char *dir, const char *input, const char *kind, const char *fold)
{
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/%s%s.folded", dir, kind, input == dir ? "" : "-of-input");
	const char *argv[] = { e2e_prof(), "flame", "--kind", kind, "--folded", "--fold", fold, input,
			       NULL };
	cr_assert_eq(e2e_run(argv, NULL, out, NULL), 0, "prof flame --kind %s", kind);
	return e2e_read_file(out);
}

static char *folded(const char *dir, const char *kind, const char *fold)
{
	return folded_of(dir, dir, kind, fold);
}

/* The weight of the folded lines holding `frames` (a ";"-joined run of frames, outermost
 * first, as folded lines write them), and then `then` further on, where not NULL. */
static double weight_then(const char *text, const char *frames, const char *then)
{
	return e2e_folded_weight(text, frames, then);
}

static double weight_of(const char *text, const char *frames)
{
	return weight_then(text, frames, NULL);
}

/* The process of the report whose argv includes arg. */
static json_t *process_with_arg(json_t *doc, const char *arg)
{
	size_t i, k;
	json_t *p, *a;
	json_array_foreach(json_object_get(doc, "processes"), i, p)
		json_array_foreach(json_object_get(p, "argv"), k, a)
			if (!strcmp(json_string_value(a), arg))
				return p;
	return NULL;
}

/* Index of the Python frame `function` in a JSON stack, -1 if absent. */
static int py_frame(json_t *stack, const char *function)
{
	size_t i;
	json_t *f;
	json_array_foreach(stack, i, f) {
		const char *fn = json_string_value(json_object_get(f, "function"));
		const char *kind = json_string_value(json_object_get(f, "kind"));
		if (fn && !strcmp(fn, function) && kind && !strcmp(kind, "python"))
			return (int)i;
	}
	return -1;
}

/* The heap site of the process whose stack has the Python frame function; NULL if none. */
static json_t *site_in(json_t *proc, const char *function, int *at)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(json_object_get(proc, "heap"), "sites"), i, s)
		if ((*at = py_frame(json_object_get(s, "stack"), function)) >= 0)
			return s;
	return NULL;
}

/* The frame at index i of a site's stack is Python's, in py_work.py, at the marker's line. */
static void expect_frame_at_marker(json_t *site, int i, const char *marker)
{
	json_t *f = json_array_get(json_object_get(site, "stack"), (size_t)i);
	const char *file = json_string_value(json_object_get(f, "file"));
	cr_expect(file && strstr(file, "py_work.py"), "file %s", file ? file : "(null)");
	cr_expect_eq(e2e_int(f, "line"), e2e_marker_line("py_work.py", marker), "%s", marker);
}

/* CPU time split 50/30/20 among hot_a, hot_b and hot_c (within 5 points). */
static void expect_shares(json_t *cpu, const char *version)
{
	const char *hot[] = { "hot_a", "hot_b", "hot_c" };
	const double want[] = { 50, 30, 20 };
	double got[3], sum = 0;
	for (int k = 0; k < 3; k++)
		sum += got[k] = e2e_cpu_total_pct(cpu, hot[k]);
	cr_assert_gt(sum, 10, "%s: hot_a, hot_b, hot_c have %.1f%% of the CPU time", version, sum);
	for (int k = 0; k < 3; k++)
		cr_expect(got[k] * 100 / sum >= want[k] - 5 && got[k] * 100 / sum <= want[k] + 5,
			  "%s: %s has %.1f%% of the three's CPU time, expected %.0f%%", version, hot[k],
			  got[k] * 100 / sum, want[k]);
}

/* Runs the script under libprof with args; the run's report, dir in *dir and stderr in *err. */
static json_t *run(const char *python, const char *const *args, const char *const *env,
		   const char **dir, char **err)
{
	const char *d = e2e_tmpdir();
	cr_assert_not_null(d);
	const char *argv[16] = { python, script() };
	size_t n = 2;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	char errf[PATH_MAX];
	snprintf(errf, sizeof(errf), "%s/err.txt", d);
	int st = e2e_profile(d, argv, env, NULL, errf);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s exited with %d", python, st);
	*err = e2e_read_file(errf);
	*dir = d;
	json_t *doc = e2e_prof_json("report", d);
	cr_assert_not_null(doc, "prof report --json failed on %s", d);
	return doc;
}

static const char *const fast[] = { "PROF_CPU_HZ=499", NULL };

Test(python, cpython_311_every_kind_of_frame)
{
	const char *python = "/usr/bin/python3.11";
	if (access(python, X_OK) != 0)
		cr_skip_test("%s is not installed", python);
	int numpy = has_numpy(python);
	const char *args[] = { "cpu", "1.2", "threads", "gen", "exc", "sub", "locks", "io",
			       numpy ? "numpy" : NULL, NULL };
	const char *dir;
	char *err;
	json_t *doc = run(python, args, fast, &dir, &err);
	json_t *proc = process_with_arg(doc, "cpu"), *cpu = json_object_get(proc, "cpu");
	cr_assert_not_null(proc);
	expect_shares(cpu, "3.11");
	/* Python functions calling each other, and the native code they reach, with the
	 * interpreter's frames folded away */
	char *text = folded(dir, "cpu", "python");
	cr_expect_gt(weight_of(text, "main;hot_a;spin"), 0, "%s", text);
	cr_expect_gt(weight_of(text, "thread_work;spin"), 0, "threads");
	cr_expect_gt(weight_then(text, ";consume;", ";gen_body"), 0, "the generator under its consumer");
	cr_expect_gt(weight_of(text, "exc_work;after_exceptions;spin"), 0, "after exceptions");
	cr_expect_gt(weight_of(text, "exc_work;raiser"), 0, "the raising function");
	free(text);
	/* unfolded, the interpreter's loop is in its place below the Python frames */
	text = folded(dir, "cpu", "none");
	cr_expect_gt(weight_of(text, "_PyEval_EvalFrameDefault;<module>;main;hot_a"), 0);
	free(text);
	/* lock waits and I/O calls, under the Python functions that made them: the threading.Lock
	 * at its `with` line (the GIL, taken back after time.sleep on the next line, may wait
	 * under locked_work too, at that line) */
	size_t i;
	json_t *lock;
	int waits = 0, at_line = 0;
	json_array_foreach(json_object_get(proc, "locks"), i, lock) {
		int at = py_frame(json_object_get(lock, "stack"), "locked_work");
		if (at >= 0 && e2e_int(lock, "contended") > 0) {
			waits++;
			json_t *f = json_array_get(json_object_get(lock, "stack"), (size_t)at);
			at_line += e2e_int(f, "line") == e2e_marker_line("py_work.py", "LOCK-LINE");
		}
	}
	cr_expect_gt(waits, 0, "a contended lock waited for under locked_work");
	cr_expect_gt(at_line, 0, "of %d waits under locked_work, none at its `with lock:` line", waits);
	text = folded(dir, "io", "python");
	cr_expect_gt(weight_of(text, "main;write_file"), 0, "I/O under write_file: %s", text);
	free(text);
	/* the subprocess (python3 py_work.py child) has its Python frames too */
	json_t *child = process_with_arg(doc, "child");
	cr_assert_not_null(child, "the subprocess was traced");
	cr_expect_gt(e2e_cpu_total_pct(json_object_get(child, "cpu"), "child_work"), 30);
	if (numpy) {  /* numpy's C code allocates under the Python frame that called it */
		int at;
		json_t *site = site_in(proc, "numpy_alloc", &at);
		cr_assert_not_null(site, "a heap site under numpy_alloc");
		cr_expect_geq(e2e_int(site, "bytes"), 8 << 20);
		expect_frame_at_marker(site, at, "NUMPY-LINE");
		json_t *below = json_array_get(json_object_get(site, "stack"), 0);
		const char *mod = json_string_value(json_object_get(below, "module"));
		cr_expect(mod && strstr(mod, "numpy"), "innermost frame in numpy's module: %s", mod);
	}
	cr_expect_null(strstr(err ? err : "", "libprof"), "no note for a supported version: %s", err);
	free(err);
	json_decref(doc);
}

Test(python, python_malloc_covers_small_objects)
{
	const char *python = "/usr/bin/python3.11";
	if (access(python, X_OK) != 0)
		cr_skip_test("%s is not installed", python);
	const char *d = e2e_tmpdir();
	char run_dir[PATH_MAX], lib[PATH_MAX + 16], an[PATH_MAX + 32];
	snprintf(run_dir, sizeof(run_dir), "%s/run", d);
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	const char *argv[] = { "scripts/prof-run", "--no-report", "--python-malloc", "-o", run_dir,
			       "--", python, script(), "alloc", NULL };
	const char *env[] = { lib, an, NULL };
	cr_assert_eq(e2e_run(argv, env, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", run_dir);
	cr_assert_not_null(doc);
	json_t *proc = process_with_arg(doc, "alloc");
	int at;
	/* 50000 2-tuples: pymalloc's without --python-malloc, malloc's with it */
	json_t *site = site_in(proc, "small_objects", &at);
	cr_assert_not_null(site, "a heap site under small_objects");
	long calls = 0;
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(json_object_get(proc, "heap"), "sites"), i, s)
		if (py_frame(json_object_get(s, "stack"), "small_objects") >= 0)
			calls += e2e_int(s, "calls");
	cr_expect_geq(calls, 50000, "every tuple is a malloc call (%ld)", calls);
	expect_frame_at_marker(site, at, "SMALL-LINE");
	site = site_in(proc, "make_blocks", &at);
	cr_assert_not_null(site);
	expect_frame_at_marker(site, at, "BLOCKS-LINE");
	json_decref(doc);
}

/* pyenv's 3.11, 3.12 and 3.13: CPU shares, a generator and JSON frames; the stack cache checked against
 * full unwinds all along (PROF_STACK_CACHE=check says where a hit was wrong). */
static void newer(const char *version)
{
	char buf[PATH_MAX];
	const char *python = interpreter(version, buf, sizeof(buf));
	if (!python)
		cr_skip_test("no CPython %s under " PYENV, version);
	const char *args[] = { "cpu", "0.8", "gen", "alloc", NULL };
	const char *env[] = { "PROF_CPU_HZ=499", "PROF_STACK_CACHE=check", "PROF_DEBUG=1", NULL };
	const char *dir;
	char *err;
	json_t *doc = run(python, args, env, &dir, &err);
	json_t *proc = process_with_arg(doc, "cpu");
	cr_assert_not_null(proc);
	expect_shares(json_object_get(proc, "cpu"), version);
	char *text = folded(dir, "cpu", "python");
	cr_expect_gt(weight_of(text, "main;hot_b;spin"), 0, "%s: %s", version, text);
	cr_expect_gt(weight_then(text, ";consume;", ";gen_body"), 0, "%s: the generator", version);
	/* a summary keeps the Python frames, named as the trace names them */
	char sum[PATH_MAX];
	snprintf(sum, sizeof(sum), "%s/run.sum", dir);
	const char *cmd[] = { e2e_prof(), "summarize", dir, "-o", sum, NULL };
	cr_assert_eq(e2e_run(cmd, NULL, NULL, NULL), 0, "prof summarize");
	char *from_sum = folded_of(dir, sum, "cpu", "python");
	cr_expect_str_eq(from_sum, text, "%s: the summary's CPU flame graph differs", version);
	free(from_sum);
	/* and so does a summary of that summary (its symbols come from the first, not from a
	 * process the analyzer can read Python code objects of) */
	char sum2[PATH_MAX];
	snprintf(sum2, sizeof(sum2), "%s/run2.sum", dir);
	const char *cmd2[] = { e2e_prof(), "summarize", sum, "-o", sum2, NULL };
	cr_assert_eq(e2e_run(cmd2, NULL, NULL, NULL), 0, "prof summarize of a summary");
	from_sum = folded_of(dir, sum2, "cpu", "python");
	cr_expect_str_eq(from_sum, text, "%s: the summary of the summary differs", version);
	free(from_sum);
	/* the sqlite export says which frames are Python's */
	char db_path[PATH_MAX];
	snprintf(db_path, sizeof(db_path), "%s/run.sqlite", dir);
	const char *exp[] = { e2e_prof(), "export", "--format", "sqlite", "-o", db_path, dir, NULL };
	cr_assert_eq(e2e_run(exp, NULL, NULL, NULL), 0, "prof export --format sqlite");
	sqlite3 *db;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT sum(kind = 'python' AND function = 'hot_b'),"
				       " sum(kind = 'python' AND function LIKE '_PyEval%') FROM frames",
				       -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_expect_gt(sqlite3_column_int64(st, 0), 0, "%s: hot_b's frames of kind python", version);
	cr_expect_eq(sqlite3_column_int64(st, 1), 0, "%s: the interpreter's frames are native", version);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(text);
	int at;
	json_t *site = site_in(proc, "make_blocks", &at);
	cr_assert_not_null(site, "%s: a heap site under make_blocks", version);
	expect_frame_at_marker(site, at, "BLOCKS-LINE");
	cr_expect_null(strstr(err ? err : "", "stack cache: call site"), "%s: %s", version, err);
	/* one native entry served other Python call chains (checked above like every hit) */
	long other = 0;
	for (const char *p = err; p && (p = strstr(p, "stack cache of thread")); p++) {
		const char *q = strstr(p, " KiB, ");
		if (q)
			other += strtol(q + 6, NULL, 10);
	}
	cr_expect_gt(other, 0, "%s: no hit with other Python frames: %s", version, err);
	free(err);
	json_decref(doc);
}

/* pyenv's 3.11 links libpython3.11.so (Debian's is one static executable) */
Test(python, cpython_311_shared_libpython)
{
	newer("3.11.");
}

Test(python, cpython_312)
{
	newer("3.12.");
}

Test(python, cpython_313)
{
	newer("3.13.");
}

/* A version without a known layout: native stacks, one note, and the program unchanged. */
Test(python, older_version_native_only_with_one_note)
{
	char buf[PATH_MAX];
	const char *python = interpreter("3.10.", buf, sizeof(buf));
	if (!python && !(python = interpreter("3.9.", buf, sizeof(buf))))
		cr_skip_test("no CPython 3.10 or 3.9 under " PYENV);
	const char *args[] = { "alloc", NULL };
	const char *dir;
	char *err;
	json_t *doc = run(python, args, NULL, &dir, &err);
	cr_assert_not_null(err);
	const char *note = strstr(err, "stacks show native frames only");
	cr_expect_not_null(note, "%s", err);
	cr_expect(note && !strstr(note + 1, "stacks show native frames only"), "one note: %s", err);
	json_t *proc = process_with_arg(doc, "alloc");
	int at;
	cr_expect_null(site_in(proc, "make_blocks", &at), "no Python frames");
	cr_expect_gt(json_array_size(json_object_get(json_object_get(proc, "heap"), "sites")), 0);
	free(err);
	json_decref(doc);
}
