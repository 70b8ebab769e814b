/* End-to-end readable stacks: library frames folded so the first frame is the program's,
 * --fold none shows them, stacks cut at PROF_STACK_DEPTH marked truncated with one flame
 * root, no frame of libprof itself anywhere, and one stack for one path whichever threads
 * meet it first. */
#include "e2e.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(stacks, .fini = e2e_cleanup);

Test(stacks, library_frames_are_folded)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_cxx"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	const char *folded[] = { "leaks", "--show=all", dir, NULL };
	char *text = e2e_prof_text(dir, folded);
	cr_assert_not_null(text);
	/* The vector's growth: first frame the program's, template arguments short. */
	cr_expect_not_null(strstr(text, "at 0x"), "%s", text);
	cr_expect_not_null(strstr(text, ": shapes::Canvas::paint(int) (tests/progs/heap_cxx.cpp:"), "%s", text);
	cr_expect_null(strstr(text, "at 0x7"), "a library frame first:\n%s", text);
	free(text);
	const char *unfolded[] = { "leaks", "--show=all", "--fold", "none", dir, NULL };
	text = e2e_prof_text(dir, unfolded);
	cr_expect_not_null(strstr(text, "std::vector<...>::"), "%s", text);
	free(text);
}

Test(stacks, cut_stacks_are_marked_truncated)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	const char *env[] = { "PROF_STACK_DEPTH=3", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	const char *flame[] = { "flame", "--kind", "alloc", "--folded", dir, NULL };
	char *text = e2e_prof_text(dir, flame);
	cr_assert_not_null(text);
	for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		cr_expect_eq(strncmp(line, "[truncated];", 12), 0, "%.80s", line);
	free(text);
	const char *leaks[] = { "leaks", "--show=all", dir, NULL };
	text = e2e_prof_text(dir, leaks);
	cr_expect_not_null(strstr(text, "[truncated: the stack was deeper than PROF_STACK_DEPTH=3]"), "%s", text);
	free(text);
}

Test(stacks, no_frame_of_libprof)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("lock_hot"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	const char *report[] = { "report", "--json", dir, NULL };
	char *text = e2e_prof_text(dir, report);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "libprof.so"), "a libprof frame in a stack");
	cr_expect_null(strstr(text, "preload/"), "a libprof frame in a stack");
	free(text);
}

/* Threads that meet a new call path at the same moment intern one stack, not one each: a
 * report lists each path once, with every thread's call (two ids for one stack were two
 * sites in every table). 16 paths, 8 threads released together by a barrier into each. */
Test(stacks, threads_meeting_a_new_path_share_its_stack)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("stack_meet"), "8", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	int sites[16] = { 0 };
	long calls[16] = { 0 };
	size_t k;
	json_t *site;
	json_array_foreach(json_object_get(json_object_get(e2e_process(doc, 0), "heap"), "sites"), k,
			   site) {
		json_t *f0 = json_array_get(json_object_get(site, "stack"), 0);
		const char *fn = json_string_value(json_object_get(f0, "function"));
		int path;
		if (fn && sscanf(fn, "path%d", &path) == 1 && path >= 0 && path < 16) {
			sites[path]++;
			calls[path] += e2e_int(site, "calls");
		}
	}
	for (int p = 0; p < 16; p++) {
		cr_expect_eq(sites[p], 1, "path%d: %d sites", p, sites[p]);
		cr_expect_eq(calls[p], 8, "path%d: %ld calls", p, calls[p]);
	}
	json_decref(doc);
}
