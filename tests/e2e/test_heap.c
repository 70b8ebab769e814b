/* End-to-end heap tests: real programs under libprof, compared with valgrind memcheck. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(heap, .fini = teardown, .timeout = 120);

/* Profiles argv in a fresh directory and returns `prof report --json` of it. */
static json_t *profile_report(const char *const argv[], const char *const env[], int *status)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	int st = e2e_profile(dir, argv, env, NULL, NULL);
	if (status)
		*status = st;
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc, "prof report --json failed on %s", dir);
	return doc;
}

static void assert_matches_valgrind(const char *const argv[])
{
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0, "valgrind did not run or print a HEAP SUMMARY");
	json_t *doc = profile_report(argv, NULL, NULL);
	json_t *p = e2e_process(doc, 0);
	cr_assert_not_null(p);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), vg.allocs, "allocs: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.alloc_calls"), vg.allocs);
	cr_expect_eq(e2e_int(p, "heap.free_calls"), vg.frees, "frees: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.free_calls"), vg.frees);
	cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), vg.bytes, "bytes: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.bytes_allocated"), vg.bytes);
	cr_expect_eq(e2e_int(p, "heap.leaked_bytes"), vg.in_use_bytes, "leaked: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.leaked_bytes"), vg.in_use_bytes);
	cr_expect_eq(e2e_int(p, "heap.leaked_blocks"), vg.in_use_blocks,
		     "leaked blocks: prof %ld, valgrind %ld", e2e_int(p, "heap.leaked_blocks"),
		     vg.in_use_blocks);
	/* Nothing libprof itself had allocated (a dlsym's error message, say) is freed by the
	 * program or by libc at exit as one of its blocks. */
	cr_expect_eq(e2e_int(p, "heap.unmatched_frees"), 0);
	json_decref(doc);
}

Test(heap, every_allocation_function_matches_valgrind)
{
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	assert_matches_valgrind(argv);
}

Test(heap, cxx_new_delete_and_libstdcxx_pool_match_valgrind)
{
	const char *argv[] = { e2e_prog("heap_cxx"), NULL };
	assert_matches_valgrind(argv);
}

/* libstdc++ loaded after a fork, when the exit's frees were looked up for the fork's child:
 * its pool is freed at exit all the same, as in the run that did not fork. */
Test(heap, a_library_loaded_after_a_fork_is_freed_at_exit_as_without_the_fork)
{
	long frees[2], leaked[2];
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { e2e_prog("freeres_late"), i ? "nofork" : NULL, NULL };
		json_t *doc = profile_report(argv, NULL, NULL);
		json_t *p = e2e_process(doc, 0);
		cr_assert_not_null(p);
		frees[i] = e2e_int(p, "heap.free_calls");
		leaked[i] = e2e_int(p, "heap.leaked_bytes");
		cr_assert_gt(e2e_int(p, "heap.bytes_allocated") - leaked[i], 65536,
			     "libstdc++'s pool (64 KiB and more) was not freed at exit");
		json_decref(doc);
	}
	cr_expect_eq(frees[0], frees[1], "frees at exit: %ld after a fork, %ld without", frees[0],
		     frees[1]);
	cr_expect_eq(leaked[0], leaked[1], "in use at exit: %ld after a fork, %ld without",
		     leaked[0], leaked[1]);
}

Test(heap, threads_and_their_tls_match_valgrind)
{
	const char *argv[] = { e2e_prog("heap_threads"), "4", "200", NULL };
	assert_matches_valgrind(argv);
}

/* A Debian program, as it is: ls of a directory of three files. */
Test(heap, ls_matches_valgrind)
{
	const char *dir = e2e_tmpdir();
	char path[PATH_MAX];
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/file%d", dir, i);
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		fclose(f);
	}
	const char *argv[] = { "/bin/ls", "-l", dir, NULL };
	assert_matches_valgrind(argv);
}

Test(heap, demo_example_matches_valgrind)
{
	const char *argv[] = { e2e_prog("demo"), NULL };
	assert_matches_valgrind(argv);
}

/* 16 threads allocating at once: the program's own calls, counted exactly. */
Test(heap, sixteen_threads_give_exact_counts)
{
	const int threads = 16, iters = 5000;
	char t[16], i[16];
	snprintf(t, sizeof(t), "%d", threads);
	snprintf(i, sizeof(i), "%d", iters);
	const char *argv[] = { e2e_prog("heap_threads"), t, i, NULL };
	json_t *doc = profile_report(argv, NULL, NULL);
	json_t *p = e2e_process(doc, 0);
	long calls = 0, bytes = 0, frees = 0, leaked = 0, leaked_blocks = 0;
	size_t k;
	json_t *site;
	json_array_foreach(json_object_get(json_object_get(p, "heap"), "sites"), k, site) {
		json_t *f0 = json_array_get(json_object_get(site, "stack"), 0);
		const char *fn = json_string_value(json_object_get(f0, "function"));
		if (!fn || strcmp(fn, "worker"))
			continue;
		calls += e2e_int(site, "calls");
		bytes += e2e_int(site, "bytes");
		frees += e2e_int(site, "frees");
		leaked += e2e_int(site, "leaked_bytes");
		leaked_blocks += e2e_int(site, "leaked_blocks");
	}
	long per_thread_bytes = 16;
	for (int n = 0; n < iters; n++)
		per_thread_bytes += n % 64 + 1;
	cr_expect_eq(calls, (long)threads * (iters + 1), "calls %ld", calls);
	cr_expect_eq(frees, (long)threads * iters, "frees %ld", frees);
	cr_expect_eq(bytes, threads * per_thread_bytes, "bytes %ld", bytes);
	cr_expect_eq(leaked, threads * 16L);
	cr_expect_eq(leaked_blocks, threads);
	cr_expect_eq(json_array_size(json_object_get(p, "threads")), (size_t)threads + 1);
	cr_expect_eq(e2e_int(p, "lost_records"), 0);
	json_decref(doc);
}

/* The first frame of a leak is the function and line that allocated it. */
static json_t *leak_with_function(json_t *leaks_doc, const char *function, json_t **frame)
{
	size_t i;
	json_t *leak;
	json_array_foreach(json_object_get(e2e_process(leaks_doc, 0), "leaks"), i, leak) {
		json_t *stack = json_object_get(leak, "stack");
		size_t j;
		json_t *f;
		json_array_foreach(stack, j, f) {
			const char *fn = json_string_value(json_object_get(f, "function"));
			if (fn && strstr(fn, function)) {
				*frame = f;
				return leak;
			}
		}
	}
	return NULL;
}

Test(heap, leaks_point_to_function_and_line)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);
	json_t *doc = e2e_prof_json("leaks --show=all", dir);
	cr_assert_not_null(doc);
	json_t *frame, *leak;

	leak = leak_with_function(doc, "leak_small", &frame);
	cr_assert_not_null(leak, "no leak from leak_small");
	cr_expect_eq(e2e_int(leak, "bytes"), 48);
	cr_expect_eq(e2e_int(leak, "blocks"), 1);
	cr_expect_eq(e2e_int(frame, "line"), e2e_marker_line("heap_mix.c", "LEAK-A"));
	cr_expect_not_null(strstr(json_string_value(json_object_get(frame, "file")), "heap_mix.c"));

	leak = leak_with_function(doc, "leak_array", &frame);
	cr_assert_not_null(leak, "no leak from leak_array");
	cr_expect_eq(e2e_int(leak, "bytes"), 300);
	cr_expect_eq(e2e_int(leak, "blocks"), 3);
	cr_expect_eq(e2e_int(frame, "line"), e2e_marker_line("heap_mix.c", "LEAK-B"));

	/* Largest first. */
	json_t *leaks = json_object_get(e2e_process(doc, 0), "leaks");
	for (size_t i = 1; i < json_array_size(leaks); i++)
		cr_expect_geq(e2e_int(json_array_get(leaks, i - 1), "bytes"),
			      e2e_int(json_array_get(leaks, i), "bytes"));
	json_decref(doc);
}

Test(heap, cxx_names_are_demangled)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_cxx"), NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);
	json_t *doc = e2e_prof_json("leaks --show=all", dir);
	cr_assert_not_null(doc);
	json_t *frame;
	json_t *leak = leak_with_function(doc, "shapes::Canvas::paint", &frame);
	cr_assert_not_null(leak, "no leak attributed to shapes::Canvas::paint");
	cr_expect_eq(e2e_int(leak, "bytes"), 48);
	cr_expect_eq(e2e_int(frame, "line"), e2e_marker_line("heap_cxx.cpp", "LEAK-CXX"));
	json_decref(doc);
}

Test(heap, text_leak_report_reads_like_valgrind)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);
	const char *args[] = { "leaks", "--show=all", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	cr_expect_not_null(strstr(text, "300 bytes in 3 blocks"), "%s", text);
	cr_expect_not_null(strstr(text, "48 bytes in 1 block "), "%s", text);
	cr_expect_not_null(strstr(text, "leak_array (tests/progs/heap_mix.c:"), "%s", text);
	cr_expect_lt(strstr(text, "300 bytes"), strstr(text, "48 bytes"), "largest first");
	free(text);
}

Test(heap, flame_graphs_of_allocations_and_leaks)
{
	const char *dir = e2e_tmpdir();
	char folded[PATH_MAX], svg[PATH_MAX];
	snprintf(folded, sizeof(folded), "%s/leak.folded", dir);
	snprintf(svg, sizeof(svg), "%s/alloc.svg", dir);
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);

	const char *f[] = { e2e_prof(), "flame", "--kind", "leak", "--folded", "-o", folded, dir, NULL };
	cr_assert_eq(e2e_run(f, NULL, NULL, NULL), 0);
	char *text = e2e_read_file(folded);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, ";main;leak_small 48\n"), "%s", text);
	cr_expect_not_null(strstr(text, ";main;leak_array 300\n"), "%s", text);
	free(text);

	const char *s[] = { e2e_prof(), "flame", "--kind", "alloc", "-o", svg, dir, NULL };
	cr_assert_eq(e2e_run(s, NULL, NULL, NULL), 0);
	text = e2e_read_file(svg);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "<svg"));
	cr_expect_not_null(strstr(text, "leak_array"));
	cr_expect_not_null(strstr(text, "<script"), "interactive: search and zoom script");
	free(text);
}

Test(heap, stack_depth_zero_keeps_exact_counts)
{
	const char *env[] = { "PROF_STACK_DEPTH=0", NULL };
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0);
	json_t *doc = profile_report(argv, env, NULL);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), vg.allocs);
	cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), vg.bytes);
	json_t *sites = json_object_get(json_object_get(p, "heap"), "sites");
	cr_expect_eq(json_array_size(sites), 1, "one site: no stack");
	cr_expect_eq(json_array_size(json_object_get(json_array_get(sites, 0), "stack")), 0);
	json_decref(doc);
}

Test(heap, events_without_alloc_record_no_heap)
{
	const char *env[] = { "PROF_EVENTS=lock,io", NULL };
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	json_t *doc = profile_report(argv, env, NULL);
	cr_expect_eq(e2e_int(e2e_process(doc, 0), "heap.alloc_calls"), 0);
	json_decref(doc);
}

Test(heap, dlopened_module_frames_are_symbolized)
{
	char rel[PATH_MAX], lib[PATH_MAX];
	snprintf(rel, sizeof(rel), "%s/progs/libplugin.so", e2e_build());
	cr_assert_not_null(realpath(rel, lib));
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("dlopen_user"), lib, NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dlopen_user failed: %d", st);
	json_t *doc = e2e_prof_json("leaks --show=all", dir);
	cr_assert_not_null(doc);
	json_t *frame;
	json_t *leak = leak_with_function(doc, "plugin_make", &frame);
	cr_assert_not_null(leak, "leak inside the dlopen'ed plugin not symbolized");
	cr_expect_eq(e2e_int(leak, "bytes"), 77);
	cr_expect_not_null(strstr(json_string_value(json_object_get(frame, "module")), "libplugin.so"));
	cr_expect_eq(e2e_int(frame, "line"), e2e_marker_line("plugin/plugin.c", "LEAK-PLUGIN"));
	json_decref(doc);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The MODULE records of process pid in prof dump's text, each from its "id=" on, sorted into
 * out[] (at most max); how many. */
static size_t modules_of(const char *dump, const char *pid, char **out, size_t max)
{
	size_t n = 0;
	char *text = strdup(dump), *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char col[5][64];
		const char *from = strstr(line, "id=");
		if (sscanf(line, "%63s %63s %63s %63s %63s", col[0], col[1], col[2], col[3], col[4]) == 5 &&
		    !strcmp(col[4], "MODULE") && !strcmp(col[3], pid) && from && n < max)
			out[n++] = strdup(from);
	}
	free(text);
	qsort(out, n, sizeof(*out), cmp_str);
	return n;
}

/* A fork child describes the objects it has from its parent as the parent did: the same
 * MODULE records (ids, ranges, build ids, paths), a dlopen'ed plugin's too. The child takes
 * them from its parent's table where nothing was loaded or unloaded since the parent looked
 * (modules.c); a stale or half-copied table would show here. */
Test(heap, a_fork_child_describes_its_parents_objects_as_the_parent_did)
{
	char rel[PATH_MAX], lib[PATH_MAX];
	snprintf(rel, sizeof(rel), "%s/progs/libplugin.so", e2e_build());
	cr_assert_not_null(realpath(rel, lib));
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("dlopen_user"), lib, "fork", NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dlopen_user failed: %d", st);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	cr_assert_not_null(e2e_process(doc, 1), "no fork child's process");
	char pid[2][32];
	for (int i = 0; i < 2; i++)
		snprintf(pid[i], sizeof(pid[i]), "%ld", e2e_int(e2e_process(doc, i), "pid"));
	json_decref(doc);
	const char *args[] = { "dump", dir, NULL };
	char *dump = e2e_prof_text(dir, args);
	char *mods[2][64];
	size_t n[2];
	for (int i = 0; i < 2; i++)
		n[i] = modules_of(dump, pid[i], mods[i], 64);
	free(dump);
	cr_assert_geq(n[0], 4, "the parent described %zu objects", n[0]);
	cr_assert_eq(n[1], n[0], "the child described %zu objects, its parent %zu", n[1], n[0]);
	int plugin = 0;
	for (size_t k = 0; k < n[0]; k++) {
		cr_expect_str_eq(mods[1][k], mods[0][k]);
		plugin |= strstr(mods[0][k], "libplugin.so") != NULL;
		free(mods[0][k]);
		free(mods[1][k]);
	}
	cr_expect(plugin, "the plugin is not among the objects described");
}

/* Whether libprof's stderr, for argv profiled, says that malloc is not ours. */
static int says_foreign_malloc(const char *const argv[])
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, err), 0);
	char *said = e2e_read_file(err);
	cr_assert_not_null(said);
	int says = strstr(said, "malloc comes from") != NULL;
	free(said);
	return says;
}

/* A program whose executable defines malloc (tests/progs/own_malloc.c) allocates where no
 * hook of ours sees it: its empty heap is said on stderr, not left to look like a program
 * that allocates nothing. A program using libc's malloc hears nothing of it. */
Test(heap, a_malloc_found_before_ours_is_said)
{
	const char *own[] = { e2e_prog("own_malloc"), NULL };
	cr_expect(says_foreign_malloc(own));
	const char *plain[] = { e2e_prog("heap_sites"), NULL };
	cr_expect(!says_foreign_malloc(plain));
}
