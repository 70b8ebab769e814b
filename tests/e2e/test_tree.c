/* Process trees: a program that starts others by fork, exec, posix_spawn, system, vfork and
 * popen, each allocating a known amount, run under prof-run; prof report draws the tree (an
 * exec chain as one node) and adds the processes up. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(tree, .fini = teardown, .timeout = 120);

/* Runs build/progs/tree under prof-run into DIR/run; returns the run's path. */
static const char *run_tree(const char *dir)
{
	static char run[PATH_MAX];
	char lib[PATH_MAX + 16];
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(run, sizeof(run), "%s/run", dir);
	const char *argv[] = { "scripts/prof-run", "--no-report", "-o", run, "--",
			       e2e_prog("tree"), NULL };
	const char *env[] = { lib, NULL };
	int st = e2e_run(argv, env, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tree exits 0 (its children as planned): %d",
		  st);
	return run;
}

/* The role of a node: argv[1] of its last image ("" for the root). */
static const char *role(json_t *node)
{
	json_t *images = json_object_get(node, "images");
	json_t *argv = json_object_get(json_array_get(images, json_array_size(images) - 1), "argv");
	const char *r = json_string_value(json_array_get(argv, 1));
	return r ? r : "";
}

/* The child of node whose command line (its last image's) names want: "sh -c '... system'". */
static json_t *child_with_role(json_t *node, const char *want)
{
	size_t i, k;
	json_t *c, *a;
	json_array_foreach(json_object_get(node, "children"), i, c) {
		json_t *images = json_object_get(c, "images");
		json_t *last = json_array_get(images, json_array_size(images) - 1);
		json_array_foreach(json_object_get(last, "argv"), k, a)
			if (k && strstr(json_string_value(a), want))
				return c;
	}
	return NULL;
}

static long list_value(json_t *totals, const char *family, size_t list, const char *key_prefix)
{
	json_t *rows = json_object_get(json_array_get(json_object_get(json_object_get(totals, family),
								      "lists"), list), "rows");
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		if (!strncmp(json_string_value(json_object_get(r, "key")), key_prefix, strlen(key_prefix)))
			return (long)json_integer_value(json_object_get(r, "value"));
	return -1;
}

Test(tree, every_way_of_starting_a_process_is_in_the_tree)
{
	const char *run = run_tree(e2e_tmpdir());
	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc);
	json_t *roots = json_object_get(doc, "tree");
	cr_assert_eq(json_array_size(roots), 1, "one root: the program prof-run started");
	json_t *root = json_array_get(roots, 0);
	cr_expect_str_eq(role(root), "");
	cr_expect_eq(json_array_size(json_object_get(root, "children")), 5,
		     "fork, posix_spawn, system, vfork, popen");
	cr_expect_eq(e2e_int(root, "heap_peak_bytes"), 1001);
	cr_expect_eq(e2e_int(root, "exit.code"), 0);

	json_t *chain = child_with_role(root, "exec");
	cr_assert_not_null(chain, "the forked child and the image it exec'd: one node");
	cr_expect_eq(json_array_size(json_object_get(chain, "images")), 2);
	cr_expect_eq(e2e_int(chain, "exit.code"), 3);
	cr_expect_eq(e2e_int(chain, "heap_peak_bytes"), 3001, "the larger image's peak");

	struct { const char *role; long peak; int under_shell; } want[] = {
		{ "spawn", 4001, 0 }, { "system", 5001, 1 }, { "vfork", 6001, 0 }, { "popen", 7001, 1 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		json_t *n = child_with_role(root, want[i].role);
		if (want[i].under_shell) {
			cr_assert_not_null(n, "%s: sh -c under the root", want[i].role);
			cr_expect_eq(json_array_size(json_object_get(n, "children")), 1);
			n = json_array_get(json_object_get(n, "children"), 0);
		}
		cr_assert_not_null(n, "%s is in the tree", want[i].role);
		cr_expect_str_eq(role(n), want[i].role);
		cr_expect_eq(e2e_int(n, "heap_peak_bytes"), want[i].peak, "%s", want[i].role);
	}

	/* Added up over all processes: the blocks each role allocated, by stack. */
	json_t *totals = json_object_get(doc, "totals");
	cr_expect_eq(list_value(totals, "heap", 0, "allocate <- main"), 1001 + 2 * 2001);
	cr_expect_eq(list_value(totals, "heap", 0, "allocate <- role_exit"),
		     3 * 3001 + 4 * 4001 + 5 * 5001 + 6 * 6001 + 7 * 7001);
	long calls = 0;
	for (size_t i = 0; e2e_process(doc, i); i++)
		calls += e2e_int(e2e_process(doc, i), "heap.alloc_calls");
	cr_expect_eq(e2e_int(totals, "heap.alloc_calls"), calls);
	json_decref(doc);
}

Test(tree, text_report_draws_the_tree)
{
	const char *run = run_tree(e2e_tmpdir());
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof(cmd), "%s report %s", e2e_prof(), run);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char line[4096];
	int tree = 0, chain = 0, nested = 0, totals = 0;
	while (fgets(line, sizeof(line), p)) {
		tree |= strstr(line, "-- Process tree (8 processes, 9 traces") != NULL;
		chain |= strstr(line, "|- ") && strstr(line, " -> ") && strstr(line, " exec  [exit 3");
		nested |= strstr(line, "   `- ") && strstr(line, " popen  [exit 0");
		totals |= strstr(line, "-- heap, all processes") != NULL;
	}
	cr_expect_eq(pclose(p), 0);
	cr_expect(tree && chain && nested && totals, "tree %d, chain %d, nested %d, totals %d",
		  tree, chain, nested, totals);
}

/* The I/O calls of kind `call` on the file of a process whose path begins with `path`; -1 if
 * the file is not in its report. */
static long file_calls(json_t *process, const char *path, const char *call)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(json_object_get(process, "io"), "files"), i, f)
		if (!strncmp(json_string_value(json_object_get(f, "path")), path, strlen(path))) {
			json_t *n = json_object_get(json_object_get(f, "calls"), call);
			return n ? (long)json_integer_value(n) : 0;
		}
	return -1;
}

/* tests/progs/copies: copies of the process made by _Fork, clone and syscall(SYS_fork) (no
 * atfork handlers) write traces of their own, not into their parent's; children that borrow
 * the parent's memory (vfork, clone(CLONE_VM | CLONE_VFORK)) leave nothing in its trace, not
 * even when one calls exit(). */
Test(tree, copies_made_without_fork_and_borrowers_of_memory)
{
	const char *dir = e2e_tmpdir();
	char run[PATH_MAX], err[PATH_MAX], lib[PATH_MAX + 16];
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(err, sizeof(err), "%s/stderr", dir);
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	const char *argv[] = { "scripts/prof-run", "--no-report", "-o", run, "--",
			       e2e_prog("copies"), dir, NULL };
	const char *env[] = { lib, NULL };
	int st = e2e_run(argv, env, NULL, err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "copies exits 0 (its children as planned): %d",
		  st);
	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc, "every trace reads");
	json_t *roots = json_object_get(doc, "tree");
	cr_assert_eq(json_array_size(roots), 1);
	json_t *root = json_array_get(roots, 0);
	json_t *children = json_object_get(root, "children");
	cr_expect_eq(json_array_size(children), 5, "three copies, two exec'd borrowers");
	long seen = 0;
	size_t i;
	json_t *c;
	json_array_foreach(children, i, c) {
		long code = e2e_int(c, "exit.code");
		cr_assert(code >= 2 && code <= 6, "child exit %ld", code);
		seen |= 1l << code;
		json_t *p = e2e_process_where(doc, "pid", e2e_int(c, "pid"));
		cr_assert_not_null(p);
		if (code <= 4) {  /* copy K: K blocks, K writes to DIR/copyK */
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/copy%ld", dir, code);
			cr_expect_eq(e2e_int(p, "heap.alloc_calls"), code, "copy %ld", code);
			cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), code * (code * 1000 + 1));
			cr_expect_eq(file_calls(p, path, "write"), code, "copy %ld", code);
		}
	}
	cr_expect_eq(seen, 0x7c, "children exited 2..6: %lx", seen);

	/* The parent: its own calls only, its descriptors' names its own. */
	json_t *p = e2e_process_where(doc, "pid", e2e_int(root, "pid"));
	cr_assert_not_null(p);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 2, "1001 and 1002 bytes, not the borrowers'");
	cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), 2003);
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/parent", dir);
	cr_expect_eq(file_calls(p, parent, "write"), 10, "written after the borrower's exit()");
	cr_expect_eq(file_calls(p, parent, "close"), 1, "the borrowers' closes are theirs");
	cr_expect_eq(file_calls(p, "pipe:", "close"), 2);
	cr_expect_eq(file_calls(p, "pipe:", "dup"), 0);
	cr_expect_eq(file_calls(p, "pipe:", "read"), 1);
	cr_expect_eq(json_array_size(json_object_get(json_object_get(p, "io"), "files")), 2,
		     "DIR/parent and the pipe");
	char *said = e2e_read_file(err);
	cr_expect(said && strstr(said, "a vfork child called exit()"), "said: %s", said ? said : "");
	free(said);
	json_decref(doc);
}

/* Children killed by signals (tests/progs/killed_children.c) write no end; the tree takes it
 * from the parent's wait calls (REAPED), each kind of wait, with or without a status. */
Test(tree, children_killed_by_signals_have_the_end_their_parent_saw)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("killed_children"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *root = json_array_get(json_object_get(doc, "tree"), 0);
	json_t *kids = json_object_get(root, "children");
	cr_assert_eq(json_array_size(kids), 5);
	int seen[65] = { 0 };
	size_t i;
	json_t *c;
	json_array_foreach(kids, i, c) {
		long sig = e2e_int(c, "exit.signal"), code = e2e_int(c, "exit.code");
		if (sig > 0 && sig < 65) {
			seen[sig]++;
			cr_expect(json_is_true(json_object_get(json_object_get(c, "exit"),
							       "seen_by_parent")), "signal %ld", sig);
		} else {
			cr_expect_eq(code, 7, "the child that exited on its own");
			cr_expect_null(json_object_get(json_object_get(c, "exit"), "seen_by_parent"),
				       "its own EXIT is what counts");
		}
	}
	cr_expect(seen[SIGTERM] == 1 && seen[SIGKILL] == 1 && seen[SIGINT] == 1 && seen[SIGHUP] == 1,
		  "TERM %d KILL %d INT %d HUP %d", seen[SIGTERM], seen[SIGKILL], seen[SIGINT],
		  seen[SIGHUP]);
	json_decref(doc);
}

/* fork() from a signal handler that interrupted libprof's hook (tests/progs/handler_fork.c):
 * the child goes back into that hook, whose memory (the parent's trace mapping) was gone: a
 * child in six died of SIGSEGV. Each now runs as unprofiled and writes a trace of its own. */
Test(tree, children_forked_by_a_signal_handler_run_and_are_recorded)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("handler_fork"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0, "every child exited 0");
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	size_t n = 0, exited = 0;
	for (json_t *p; (p = e2e_process(doc, n)); n++)
		exited += e2e_int(p, "exit.code") == 0;
	cr_expect_eq(n, 21, "the parent and 20 children, a trace each: %zu", n);
	cr_expect_eq(exited, n, "each with its exit");
	json_decref(doc);
}

/* A process's CPU time where its threads were still running at its end
 * (tests/progs/threads_at_end.c), against the kernel's count: threads that die with the
 * process (exit() or _exit() by another, an exec) are ended by that end, with their CPU
 * clocks' time and their names; a process killed by SIGKILL writes no end, and its threads
 * count what their CPU samples stand for. Before, such threads counted nothing: the tree
 * said "CPU 0 ns" of Chromium's renderers. */
static void check_cpu_at_end(const char *how)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *argv[] = { e2e_prog("threads_at_end"), how, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0, "%s", how);
	char *said = e2e_read_file(out);
	long long want = -1;
	cr_assert(said && sscanf(said, "cpu_ns %lld", &want) == 1, "%s", said ? said : "");
	free(said);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *node = json_array_get(json_object_get(doc, "tree"), 0);
	int killed = !strcmp(how, "killed");
	if (killed)
		node = json_array_get(json_object_get(node, "children"), 0);
	cr_assert_not_null(node, "%s", how);
	long long got = e2e_int(node, "cpu_ns");
	/* Three threads spin 0.3 s on however many CPUs: the sum is what the kernel counted,
	 * plus the spinning through the end's work; samples fall short by under a period each. */
	cr_expect(want > 100000000 && got >= want * (killed ? 0.75 : 0.9) &&
		  got <= want * 1.1 + 100000000, "%s: the tree's %lld ns against the kernel's %lld",
		  how, got, want);
	if (!killed) {
		json_t *p = e2e_process_where(doc, "pid", e2e_int(node, "pid"));
		cr_assert_not_null(p);
		size_t i, spinners = 0;
		json_t *t;
		json_array_foreach(json_object_get(p, "threads"), i, t) {
			const char *name = json_string_value(json_object_get(t, "name"));
			if (!name || strncmp(name, "spinner", 7))
				continue;
			spinners++;
			cr_expect(json_is_integer(json_object_get(t, "end_ns")), "%s: %s ended", how, name);
			cr_expect_gt(e2e_int(t, "cpu_ns"), 10000000, "%s: %s ran", how, name);
		}
		cr_expect_eq(spinners, 3, "%s: the spinners, by the names they gave themselves", how);
	}
	json_decref(doc);
}

Test(tree, threads_running_at_exit_count_their_cpu_time)
{
	check_cpu_at_end("exit");
}

Test(tree, threads_running_at__exit_count_their_cpu_time)
{
	check_cpu_at_end("_exit");
}

Test(tree, threads_running_at_exec_count_their_cpu_time)
{
	check_cpu_at_end("exec");
}

Test(tree, threads_of_a_killed_process_count_their_sampled_cpu_time)
{
	check_cpu_at_end("killed");
}
