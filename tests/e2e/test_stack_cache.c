/* The stack cache gives the stacks a full unwind gives: PROF_STACK_CACHE=check unwinds on every
 * hit too and says where the two differ, and the allocation flame graphs (every stack, frame by
 * frame) of runs with the cache and without it are the same. tests/progs/stack_paths.cpp has
 * recursion, alloca, longjmp, exceptions, signal handlers, swapcontext and threads; it is run
 * as built for the tests (frame pointers) and optimised (none). */
#include "e2e.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(stack_cache, .fini = e2e_cleanup);

/* tests/progs/PROG (with ARG, if given) under PROF_STACK_CACHE=check: every hit unwound
 * again and compared. At least min_hits hits, none wrong; the PROF_DEBUG=1 lines, to free. */
static char *checked_hits(const char *prog, const char *arg, long min_hits)
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prog(prog), arg, NULL };
	const char *env[] = { "PROF_STACK_CACHE=check", "PROF_DEBUG=1", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, err), 0);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "gave stack"), "%s: the cache and an unwind differ:\n%s", prog, text);
	long hits = 0, wrong = -1;  /* of every process */
	for (const char *p = text; (p = strstr(p, "stack cache: ")); p++) {
		long h, w;
		if (sscanf(p, "stack cache: %ld hits checked, %ld wrong", &h, &w) == 2) {
			hits += h;
			wrong = w > wrong ? w : wrong;
		}
	}
	cr_expect_gt(hits, min_hits, "%s: %ld hits checked:\n%s", prog, hits, text);
	cr_expect_eq(wrong, 0, "%s", text);
	return text;
}

static void checked_run(const char *prog)
{
	free(checked_hits(prog, NULL, 1000));
}

static char *flame_of(const char *prog, const char *arg, const char *cache, long *tails)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog(prog), arg, NULL };
	char setting[64];
	snprintf(setting, sizeof(setting), "PROF_STACK_CACHE=%s", cache);
	const char *env[] = { setting, NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	const char *args[] = { "flame", "--kind", "alloc", "--folded", "--fold", "none", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	*tails = (long)e2e_dumped(dir, "STACK_TAIL", NULL);
	return text;
}

static char *flame(const char *prog, const char *cache, long *tails)
{
	return flame_of(prog, NULL, cache, tails);
}

static int line_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Folded stacks with each root's " (PID)" taken out, their lines sorted: the same for two
 * runs of a program that forks, whose children's pids differ. Changes text in place. */
static char *without_pids(char *text)
{
	size_t n = 0, cap = 64;
	char **lines = malloc(cap * sizeof(*lines));
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char *semi = strchr(l, ';'), *open = strstr(l, " (");
		char *close = open ? strchr(open, ')') : NULL;
		if (open && close && (!semi || close < semi))
			memmove(open, close + 1, strlen(close + 1) + 1);
		if (n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof(*lines));
		lines[n++] = l;
	}
	qsort(lines, n, sizeof(*lines), line_order);
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(lines[i]) + 1;
	char *out = malloc(len);
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		strcat(strcat(out, lines[i]), "\n");
	free(lines);
	return out;
}

/* The cache's threads also write most new stacks as tails of recent ones: read back whole. */
static void same_flames_of(const char *prog, const char *arg)
{
	long tails_off, tails_on;
	char *off = flame_of(prog, arg, "0", &tails_off), *on = flame_of(prog, arg, "1", &tails_on);
	cr_assert(off && on);
	cr_expect_eq(tails_off, 0, "%s: no cache, no tails", prog);
	cr_expect_gt(tails_on, 10, "%s: %ld stacks written as tails", prog, tails_on);
	cr_expect_gt(e2e_count_lines(off), 20, "%s", off);
	char *on_sorted = without_pids(on), *off_sorted = without_pids(off);
	cr_expect_str_eq(on_sorted, off_sorted, "%s: with the cache:\n%s\nwithout:\n%s", prog,
			 on_sorted, off_sorted);
	free(on_sorted);
	free(off_sorted);
	free(off);
	free(on);
}

static void same_flames(const char *prog)
{
	same_flames_of(prog, NULL);
}

Test(stack_cache, hits_equal_unwinds_with_frame_pointers) { checked_run("stack_paths"); }
Test(stack_cache, hits_equal_unwinds_optimised) { checked_run("stack_paths_O2"); }
Test(stack_cache, same_stacks_with_frame_pointers) { same_flames("stack_paths"); }
Test(stack_cache, same_stacks_optimised) { same_flames("stack_paths_O2"); }

/* A program with a few thousand call paths, each taken many times in a random order, in a
 * thread it started and then in its first thread: the cache serves nearly every allocation,
 * whether its frames have frame pointers (followed in the key) or not (rsp-based, at offsets
 * learned per code address). PROF_DEBUG=1 says, per thread, how lookups went. */
static void mostly_hits(const char *prog)
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prog(prog), NULL };
	const char *env[] = { "PROF_DEBUG=1", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, err), 0);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	unsigned long long hits = 0, recorded = 0, first = 0, throttled = 0, closed = 0, h, r, f, t, c;
	unsigned long long by_steps = 0, by_rules = 0, walks_wrong = 0, s, u, w;
	int threads = 0;
	for (const char *p = text; (p = strstr(p, "stack cache of thread ")); p++)
		if (sscanf(p, "stack cache of thread %*d: %llu hits, %llu recorded, %llu first seen, "
			      "%llu throttled, %llu closed, %*u KiB, %*u hits with other Python frames, "
			      "%llu recorded by steps, %llu by rules, %llu walks wrong",
			   &h, &r, &f, &t, &c, &s, &u, &w) == 8) {
			hits += h;
			recorded += r;
			first += f;
			throttled += t;
			closed += c;
			by_steps += s;
			by_rules += u;
			walks_wrong += w;
			threads++;
		}
	cr_assert_eq(threads, 2, "%s", text);
	unsigned long long lookups = hits + recorded + first + throttled + closed;
	/* 2 x 60,000 allocations from 3,000 paths: at most two misses per path and thread */
	cr_expect_geq(lookups, 120000, "%s", text);
	cr_expect_geq(hits, lookups - 2 * 2 * 3000 - 100, "%s: %llu hits of %llu:\n%s", prog,
		      hits, lookups, text);
	/* The paths go through four functions: once a thread has stepped through each (and so
	 * learned its frame's rule), its recordings are walks by those rules, each the same as
	 * libunwind's backtrace. */
	cr_expect_eq(by_steps + by_rules, recorded, "%s", text);
	cr_expect_leq(by_steps, 2 * 20, "%s: %llu recordings by steps:\n%s", prog, by_steps, text);
	cr_expect_eq(walks_wrong, 0, "%s", text);
	free(text);
}

Test(stack_cache, mostly_hits_optimised) { mostly_hits("many_paths_O2"); }

/* `many_paths MODE` (a fork after the paths are walked, the child walks them again) under
 * PROF_STACK_CACHE=check: the child's pid, and its stderr lines in *text (caller frees). */
static int fork_child_run(const char *mode, char **text)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX], err[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prog("many_paths"), mode, NULL };
	const char *env[] = { "PROF_STACK_CACHE=check", "PROF_DEBUG=1", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, out, err), 0);
	char *printed = e2e_read_file(out);
	cr_assert_not_null(printed);
	int child = 0;
	const char *at = strstr(printed, "child ");
	cr_assert(at && sscanf(at, "child %d", &child) == 1, "%s", printed);
	free(printed);
	*text = e2e_read_file(err);
	cr_assert_not_null(*text);
	cr_expect_null(strstr(*text, "gave stack"), "the cache and an unwind differ:\n%s", *text);
	return child;
}

/* The hits PROF_STACK_CACHE=check counted in process pid, -1 if it said none. */
static long hits_of(const char *text, int pid, long *wrong)
{
	char key[64];
	snprintf(key, sizeof(key), "libprof[%d]: stack cache: ", pid);
	const char *at = strstr(text, key);
	long hits = -1;
	if (!at || sscanf(at + strlen(key), "%ld hits checked, %ld wrong", &hits, wrong) != 2)
		return -1;
	return hits;
}

/* A fork child keeps the forking thread's cache: fork() waited until no other thread was
 * inside libunwind's steps. Nearly all of the child's 60,000 allocations are hits, each the
 * same as an unwind; it unwound every allocation before. */
static void fork_child_hits(const char *mode)
{
	char *text;
	int child = fork_child_run(mode, &text);
	long wrong = -1, hits = hits_of(text, child, &wrong);
	cr_expect_gt(hits, 50000, "%s: child %d: %ld hits:\n%s", mode, child, hits, text);
	cr_expect_eq(wrong, 0, "%s", text);
	free(text);
}

Test(stack_cache, a_fork_child_keeps_its_cache) { fork_child_hits("fork"); }
Test(stack_cache, a_fork_child_of_threads_keeps_its_cache) { fork_child_hits("fork-thread"); }

/* _Fork() runs no fork handlers: another thread may have been inside libunwind, holding its
 * lock, and the child unwinds without a cache. */
Test(stack_cache, a_child_copied_without_handlers_from_threads_goes_without)
{
	char *text;
	int child = fork_child_run("_Fork-thread", &text);
	long wrong = -1;
	cr_expect_eq(hits_of(text, child, &wrong), -1, "child %d used a cache:\n%s", child, text);
	free(text);
}

/* A thread's cache given back (its thread ended) leaves the others' alone: the first thread
 * ends half way through the second's run, whose hits are then checked against unwinds. Caches
 * once shared pages at their edges, and giving one back cleared the start of the next. */
Test(stack_cache, thread_end_leaves_other_caches)
{
	free(checked_hits("many_paths", "handoff", 50000));
}
Test(stack_cache, mostly_hits_with_frame_pointers) { mostly_hits("many_paths"); }

/* A program with more call sites than the first table of frame rules (tests/progs/many_sites.c:
 * 2,048 functions that allocate): the table grows, each function's rule is learned once by
 * steps and its paths are recorded by rules from then on, each hit exact. With the table kept
 * at its first size, rules evicted each other: over twice the recordings by steps, and the
 * keys that follow the callers, broken, closed their chains. */
Test(stack_cache, rules_outgrow_their_first_table)
{
	char *text = checked_hits("many_sites", NULL, 100000);
	unsigned long long hits, recorded, first, throttled, closed, steps, rules, wrong_walks;
	const char *p = strstr(text, "stack cache of thread ");
	cr_assert_not_null(p, "%s", text);
	cr_assert_eq(sscanf(p, "stack cache of thread %*d: %llu hits, %llu recorded, %llu first seen, "
			       "%llu throttled, %llu closed, %*u KiB, %*u hits with other Python "
			       "frames, %llu recorded by steps, %llu by rules, %llu walks wrong",
			    &hits, &recorded, &first, &throttled, &closed, &steps, &rules,
			    &wrong_walks), 8, "%s", text);
	cr_expect_leq(steps, 3000, "%s", text);
	cr_expect_geq(rules, 2 * steps, "%s", text);
	cr_expect_eq(wrong_walks, 0, "%s", text);
	cr_expect_lt(closed, 1000, "%s", text);
	free(text);
}

/* A dlclose may take code away and let other code come at its addresses: the frame rules a
 * thread learned before it are forgotten, learned again by steps, and the paths recorded
 * after it (at new depths) are still exact. */
Test(stack_cache, rules_forgotten_after_dlclose)
{
	char *text = checked_hits("many_paths_O2", "unload", 50000);
	unsigned long long steps = 0, rules = 0, wrong_walks = 1;
	unsigned forgotten = 0;
	const char *p = strstr(text, "stack cache of thread ");
	cr_assert_not_null(p, "%s", text);
	p = strstr(p, " recorded by steps");
	cr_assert_not_null(p, "%s", text);
	while (p > text && p[-1] != ' ')
		p--;
	cr_assert_eq(sscanf(p, "%llu recorded by steps, %llu by rules, %llu walks wrong, rules "
			       "forgotten %u times", &steps, &rules, &wrong_walks, &forgotten), 4,
		     "%s", text);
	cr_expect_geq(forgotten, 1, "%s", text);  /* the libm dlclose (and any of libc's own) */
	cr_expect_gt(rules, 3000, "%s", text);
	cr_expect_eq(wrong_walks, 0, "%s", text);
	free(text);
}

/* One allocation site reached at one depth through frames of other sizes (tests/progs/
 * stack_layouts.c): the layout a site's key was last read by does not fit the next call's
 * frames, and the cache must still give each call the stack an unwind gives. */
Test(stack_cache, frames_of_other_sizes_at_one_depth) { checked_run("stack_layouts"); }
Test(stack_cache, frames_of_other_sizes_at_one_depth_optimised)
{
	checked_run("stack_layouts_O2");
}

/* Unwinds block every signal from libunwind's first mask change to their end: the
 * program's own mask and its signals are as if libprof were not there, and a handler that
 * runs inside an unwind before that has its own mask changes made. With the cache and
 * without (every call unwound). */
Test(stack_cache, program_signal_mask_kept)
{
	const char *argv[] = { e2e_prog("mask_keep"), NULL };
	const char *env[2][2] = { { "PROF_STACK_CACHE=1", NULL }, { "PROF_STACK_CACHE=0", NULL } };
	for (int i = 0; i < 2; i++)
		cr_assert_eq(e2e_profile(e2e_tmpdir(), argv, env[i], NULL, NULL), 0,
			     "mask_keep failed under libprof (%s)", env[i][0]);
}

/* The lines of folded stacks that go through generated code: each must run from main through
 * all 9 C frames and the 8 generated ones between them (tests/progs/jit_frames.c). Returns
 * their count; *weight: their bytes. */
static int through_generated_code(const char *text, double *weight)
{
	int lines = 0;
	*weight = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);
		const char *from = strstr(l, "main;through_jit");
		if (!from || from > end)
			continue;
		int c_frames = 0, generated = 0;
		for (const char *p = from; (p = strstr(p, "through_jit")) && p < end; p++)
			c_frames++;
		for (const char *p = from; (p = strstr(p, ";?+0x")) && p < end; p++)
			generated++;
		cr_expect_eq(c_frames, 9, "%.*s", (int)(end - l), l);
		cr_expect_eq(generated, 8, "%.*s", (int)(end - l), l);
		*weight += atof(strrchr(l, ' ') + 1);
		lines++;
	}
	return lines;
}

/* Allocations through frames of generated code, as under node or java (tests/progs/
 * jit_frames.c: no unwind info, frame pointers kept): libunwind checks each address it reads
 * past such a frame, and libprof reads the live stack and the loaded objects without those
 * checks. The stacks still go through every frame back to main, the same with the cache and
 * without, and each hit is what an unwind gives. */
Test(stack_cache, stacks_through_generated_code)
{
	checked_run("jit_frames");
	long tails;
	char *off = flame("jit_frames", "0", &tails), *on = flame("jit_frames", "1", &tails);
	double w_off, w_on;
	cr_expect_eq(through_generated_code(off, &w_off), 64, "%s", off);
	cr_expect_eq(through_generated_code(on, &w_on), 64, "%s", on);
	cr_expect_eq(w_on, w_off);
	cr_expect_gt(w_on, 20000 * 24.0);
	free(off);
	free(on);
}

/* The number in text that ends just before at (at: " WORDS..."). */
static unsigned long long number_before(const char *text, const char *at)
{
	while (at > text && at[-1] >= '0' && at[-1] <= '9')
		at--;
	return strtoull(at, NULL, 10);
}

/* Fork children that run the same new call paths one after another, as a shell's subshells
 * do (`many_paths siblings`: 6 children, each taking its 3,000 paths once, none of which the
 * parent took): from the third on, a child finds its stacks in the book its family shares
 * instead of unwinding them, each one what an unwind gives (PROF_STACK_CACHE=check). */
static void siblings_share(const char *prog)
{
	char *text = checked_hits(prog, "siblings", 1000);
	int children = 0, from_book = 0;
	for (const char *p = text; (p = strstr(p, "stack cache of thread ")); p++) {
		const char *at = strstr(p, " found in the fork family's book");
		cr_assert_not_null(at, "%s", text);
		children++;
		from_book += number_before(text, at) > 2000;
	}
	cr_expect_eq(children, 7, "%s", text);  /* the parent and its 6 children */
	cr_expect_eq(from_book, 4, "the 3rd to 6th children found their stacks in the book:\n%s", text);
	free(text);
}

Test(stack_cache, fork_siblings_share_their_stacks) { siblings_share("many_paths"); }
Test(stack_cache, fork_siblings_share_their_stacks_optimised) { siblings_share("many_paths_O2"); }

/* The same with recursion, alloca, longjmp, exceptions, signal handlers, coroutines and
 * threads in each child (`stack_paths siblings`): every hit, the book's too, is what an unwind
 * gives, and the family's stacks are the same with the cache and without. */
Test(stack_cache, fork_siblings_hits_equal_unwinds)
{
	char *text = checked_hits("stack_paths_O2", "siblings", 1000);
	unsigned long long found = 0;
	for (const char *p = text; (p = strstr(p, " found in the fork family's book")); p++)
		found += number_before(text, p);
	cr_expect_gt(found, 1000, "%s", text);
	free(text);
}

Test(stack_cache, fork_siblings_same_stacks) { same_flames_of("stack_paths_O2", "siblings"); }
