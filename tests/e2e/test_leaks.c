/* End-to-end leak classes: the exit-time scan against valgrind memcheck's LEAK SUMMARY on a
 * program built like valgrind's leak tests, the default and --show=all listings, suppression
 * files, and exec'd images. */
#include "e2e.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(leaks, .fini = e2e_cleanup);

static const char *const class_keys[4] = { "definitely_lost", "indirectly_lost", "possibly_lost",
					   "still_reachable" };
/* tests/progs/leak_classes.c says why. */
static const long expected[4][2] = { { 94, 3 }, { 224, 7 }, { 12372, 4 }, { 74, 3 } };

/* tests/progs/NAME run under libprof into dir (exit status 0): its report. */
static json_t *profile_report(const char *dir, const char *name)
{
	const char *argv[] = { e2e_prog(name), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	return doc;
}

/* The classes in process p of a report: want[class] = { bytes, blocks }, in class_keys order
 * (for leak_classes, expected[]). */
static void expect_leak_classes(json_t *p, const long want[4][2])
{
	for (int i = 0; i < 4; i++) {
		char key[64];
		snprintf(key, sizeof(key), "heap.leak_classes.%s.bytes", class_keys[i]);
		cr_expect_eq(e2e_int(p, key), want[i][0], "%s: %ld", key, e2e_int(p, key));
		snprintf(key, sizeof(key), "heap.leak_classes.%s.blocks", class_keys[i]);
		cr_expect_eq(e2e_int(p, key), want[i][1], "%s: %ld", key, e2e_int(p, key));
	}
}

Test(leaks, classes_as_memcheck_finds_them)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_classes");
	json_t *p = e2e_process(doc, 0);
	expect_leak_classes(p, expected);
	/* leaked_bytes keeps its meaning: everything in use at exit. */
	cr_expect_eq(e2e_int(p, "heap.leaked_bytes"), 94 + 224 + 12372 + 74);
	json_decref(doc);
}

/* In a container whose seccomp profile refuses process_vm_readv (Docker's default, without
 * CAP_SYS_PTRACE), the scan reads memory another way and finds the same classes: before, it
 * read nothing and called every block definitely lost. */
Test(leaks, classes_without_process_vm_readv)
{
	const char *dir = e2e_tmpdir();
	char pre[PATH_MAX + 16], out[PATH_MAX + 32];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", e2e_lib());
	snprintf(out, sizeof(out), "PROF_OUTPUT=%s/prof.%%n.%%p.trace", dir);
	/* The filter is installed before libprof loads: the program starts under it. */
	const char *argv[] = { e2e_prog("no_vm_readv"), "env", pre, out, e2e_prog("leak_classes"),
			       NULL };
	cr_assert_eq(e2e_run(argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	expect_leak_classes(e2e_process(doc, 0), expected);
	json_decref(doc);
}

Test(leaks, classes_agree_with_valgrind)
{
	if (system("valgrind --version >/dev/null 2>&1") != 0)
		cr_skip_test("valgrind is not installed");
	const char *argv[] = { e2e_prog("leak_classes"), NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0);
	const char *dir = e2e_tmpdir();
	json_t *doc = profile_report(dir, "leak_classes");
	json_t *p = e2e_process(doc, 0);
	for (int i = 0; i < 4; i++) {
		char key[64];
		snprintf(key, sizeof(key), "heap.leak_classes.%s.bytes", class_keys[i]);
		cr_expect_eq(e2e_int(p, key), vg.leak[i][0], "%s: prof %ld, valgrind %ld", key,
			     e2e_int(p, key), vg.leak[i][0]);
		snprintf(key, sizeof(key), "heap.leak_classes.%s.blocks", class_keys[i]);
		cr_expect_eq(e2e_int(p, key), vg.leak[i][1], "%s: prof %ld, valgrind %ld", key,
			     e2e_int(p, key), vg.leak[i][1]);
	}
	json_decref(doc);
}

static char *leaks_text(const char *dir, const char *opt1, const char *opt2)
{
	const char *args[] = { "leaks", dir, opt1, opt2, NULL };
	return e2e_prof_text(dir, args);
}

Test(leaks, lost_by_default_everything_with_show_all)
{
	const char *dir = e2e_tmpdir();
	json_decref(profile_report(dir, "leak_classes"));
	char *text = leaks_text(dir, NULL, NULL);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "30 bytes in 1 block are definitely lost"), "%s", text);
	cr_expect_not_null(strstr(text, "are indirectly lost"), "%s", text);
	cr_expect_null(strstr(text, "are still reachable"), "%s", text);
	cr_expect_null(strstr(text, "are possibly lost"), "%s", text);
	cr_expect_not_null(strstr(text, "still reachable: 74 bytes in 3 blocks"), "%s", text);
	free(text);
	text = leaks_text(dir, "--show=all", NULL);
	cr_expect_not_null(strstr(text, "10 bytes in 1 block are still reachable"), "%s", text);
	cr_expect_not_null(strstr(text, "20 bytes in 1 block are possibly lost"), "%s", text);
	free(text);
	const char *bad[] = { e2e_prof(), "leaks", "--show=lost", dir, NULL };
	cr_expect_eq(e2e_run(bad, NULL, NULL, NULL), 2 << 8);
}

Test(leaks, suppression_files_as_valgrind_writes_them)
{
	const char *dir = e2e_tmpdir();
	json_decref(profile_report(dir, "leak_classes"));
	char supp[PATH_MAX];
	snprintf(supp, sizeof(supp), "%s/my.supp", dir);
	FILE *f = fopen(supp, "w");
	cr_assert_not_null(f);
	/* The 30-byte block: malloc called from build() directly (the tree comes through mk). */
	fputs("# a comment\n{\n   dropped-block\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
	      "   fun:malloc\n   fun:build\n   fun:main\n}\n", f);
	fclose(f);
	char *text = leaks_text(dir, "--suppressions", supp);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "30 bytes in 1 block are definitely lost"), "%s", text);
	cr_expect_not_null(strstr(text, "suppressed: 30 bytes in 1 block"), "%s", text);
	cr_expect_not_null(strstr(text, "are indirectly lost"), "%s", text);
	free(text);
	f = fopen(supp, "w");
	fputs("{\n   broken\n", f);
	fclose(f);
	const char *cmd[] = { e2e_prof(), "leaks", "--suppressions", supp, dir, NULL };
	cr_expect_eq(e2e_run(cmd, NULL, NULL, NULL), 2 << 8);
}

Test(leaks, an_execd_image_leaks_nothing)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_exec");
	size_t i;
	json_t *p;
	int execd = 0;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		if (!json_object_get(p, "exec"))
			continue;
		execd++;
		cr_expect_eq(e2e_int(p, "heap.leaked_bytes"), 0);
		cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 2);
	}
	cr_expect_eq(execd, 1);
	json_decref(doc);
}

/* leak_fork MODE under libprof: the child's pid, with its report in *doc. */
static long fork_child_leaks(const char *dir, const char *mode, json_t **doc, json_t **p)
{
	char out[PATH_MAX + 16];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *argv[] = { e2e_prog("leak_fork"), mode, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	long child = 0;
	cr_assert_eq(sscanf(text, "child %ld", &child), 1, "%s", text);
	free(text);
	*doc = e2e_prof_json("report", dir);
	cr_assert_not_null(*doc);
	*p = e2e_process_where(*doc, "pid", child);
	cr_assert_not_null(*p, "no process %ld", child);
	const long want[4][2] = { { 117, 2 }, { 24, 1 }, { 0, 0 }, { 100, 1 } };
	expect_leak_classes(*p, want);
	return child;
}

/* A fork child's trace knows only the child's blocks, but the heap it inherited holds the
 * parent's, which may point to them: a block the child stored in an inherited structure is
 * reachable, as memcheck finds it (tests/progs/leak_fork.c). Every such block was reported
 * definitely lost: 28 loss records in each subshell of a bash loop. */
Test(leaks, a_fork_childs_blocks_held_by_inherited_ones_are_reachable)
{
	json_t *doc, *p;
	fork_child_leaks(e2e_tmpdir(), "", &doc, &p);
	json_decref(doc);
}

/* The bytes of memory a process's leak scan read (its LEAK_SCAN record), -1 if none. */
static long scanned_bytes(const char *dir, long pid)
{
	const char *args[] = { "dump", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	long bytes = -1;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		long at, when_pid;
		char when[32], type[32];
		const char *rb = strstr(line, "root_bytes=");
		if (rb && sscanf(line, "%ld %31s %*d %ld %31s", &at, when, &when_pid, type) == 4 &&
		    when_pid == pid && !strcmp(type, "LEAK_SCAN"))
			bytes = atol(rb + strlen("root_bytes="));
	}
	free(text);
	return bytes;
}

/* The memory a fork child inherited and never wrote holds nothing of the child's: its scan
 * skips it. The parent filled 48 MiB before the fork; the child's scan reads less than 8. */
Test(leaks, a_fork_child_skips_the_memory_it_never_wrote)
{
	const char *dir = e2e_tmpdir();
	json_t *doc, *p;
	long child = fork_child_leaks(dir, "big", &doc, &p);
	long bytes = scanned_bytes(dir, child);
	cr_expect(bytes > 0 && bytes < (8l << 20), "the child's scan read %ld bytes", bytes);
	json_decref(doc);
}

/* ... unless it forked itself: the pages it wrote are then shared with its child, and look
 * like those it never wrote. Its grandchild still runs when it exits. */
Test(leaks, a_fork_child_that_forked_reads_all_it_holds)
{
	json_t *doc, *p;
	fork_child_leaks(e2e_tmpdir(), "keep", &doc, &p);
	json_decref(doc);
}

/* memcheck's default heuristics: length64 and newarray interior pointers count as start
 * pointers (tests/progs/leak_heuristics.c). */
Test(leaks, interior_pointer_heuristics_as_memcheck)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_heuristics");
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.bytes"), 72);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.blocks"), 2);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.possibly_lost.bytes"), 24);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.definitely_lost.blocks"), 0);
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		const char *argv[] = { e2e_prog("leak_heuristics"), NULL };
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		cr_expect_eq(vg.leak[3][0], 72, "valgrind still reachable %ld", vg.leak[3][0]);
		cr_expect_eq(vg.leak[2][0], 24, "valgrind possibly lost %ld", vg.leak[2][0]);
	}
	json_decref(doc);
}

/* Threads: what a dead thread left only in its stack is lost; a thread still running at exit
 * is stopped for the scan, and only its live stack (above its stack pointer) and registers
 * are roots (tests/progs/leak_thread.c). */
Test(leaks, thread_stacks_as_memcheck_sees_them)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_thread");
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.definitely_lost.bytes"), 300);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.definitely_lost.blocks"), 3);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.bytes"), 50);
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		const char *argv[] = { e2e_prog("leak_thread"), NULL };
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		for (int i = 0; i < 4; i++) {
			char key[64];
			snprintf(key, sizeof(key), "heap.leak_classes.%s.blocks", class_keys[i]);
			cr_expect_eq(e2e_int(p, key), vg.leak[i][1], "%s: prof %ld, valgrind %ld", key,
				     e2e_int(p, key), vg.leak[i][1]);
		}
	}
	json_decref(doc);
}

/* The threads the scan stops stay stopped until the process is gone: one asleep in poll()
 * must not wake with EINTR and print what it never prints unprofiled. */
Test(leaks, stopped_threads_do_not_run_on)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/ticker.txt", dir);
	const char *argv[] = { e2e_prog("exit_ticker"), NULL };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
		e2e_expect_file(out, "main done\n");
	}
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	cr_expect_geq(e2e_int(e2e_process(doc, 0), "heap.leak_classes.possibly_lost.blocks"), 0);
	json_decref(doc);
}

/* Suppressions as valgrind writes them for C++: mangled names (fun:_Znwm), "...". */
Test(leaks, suppressions_with_mangled_cxx_names)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("heap_cxx"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	char supp[PATH_MAX];
	snprintf(supp, sizeof(supp), "%s/cxx.supp", dir);
	FILE *f = fopen(supp, "w");
	cr_assert_not_null(f);
	fputs("{\n   cxx-paint\n   Memcheck:Leak\n   match-leak-kinds: all\n   fun:_Znwm\n   ...\n"
	      "   fun:_ZN6shapes6Canvas5paintEi\n}\n", f);
	fclose(f);
	const char *args[] = { "leaks", "--show-leak-kinds=all", "--suppressions", supp, dir, NULL };
	char *text = e2e_prof_text(dir, args);
	cr_expect_null(strstr(text, "shapes::Canvas::paint"), "%s", text);
	cr_expect_null(strstr(text, "suppressed: 0 bytes"), "%s", text);
	free(text);
}

/* PROF_LEAK_CHECK=0: no classes, everything in use at exit still counted and listed. */
Test(leaks, the_check_can_be_turned_off)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("leak_classes"), NULL };
	const char *env[] = { "PROF_LEAK_CHECK=0", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("leaks", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect(json_is_null(json_object_get(p, "leak_classes")));
	cr_expect_eq(e2e_int(p, "leaked_bytes"), 94 + 224 + 12372 + 74);
	long blocks = 0;
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(p, "leaks"), i, l) {
		blocks += e2e_int(l, "blocks");
		cr_expect_null(json_object_get(l, "class"));
	}
	cr_expect_eq(blocks, 3 + 7 + 4 + 3, "every block listed, unclassified");
	json_decref(doc);
}

/* The db family keeps a SQLite statement's handle as a key of a map in memory of libprof's
 * own: that memory is no root, so a connection and statement the program dropped are lost,
 * as memcheck finds them, whether that family is on or off. */
Test(leaks, handles_libprof_keeps_are_no_roots)
{
	long lost[2][4];
	const char *events[2] = { "PROF_EVENTS=all", "PROF_EVENTS=alloc" };
	for (int k = 0; k < 2; k++) {
		const char *dir = e2e_tmpdir();
		const char *argv[] = { e2e_prog("leak_sqlite"), NULL };
		const char *env[] = { events[k], NULL };
		cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		json_t *p = e2e_process(doc, 0);
		for (int i = 0; i < 4; i++) {
			char key[64];
			snprintf(key, sizeof(key), "heap.leak_classes.%s.bytes", class_keys[i]);
			lost[k][i] = e2e_int(p, key);
		}
		json_decref(doc);
	}
	cr_expect_gt(lost[0][0] + lost[0][1], 0, "the dropped connection is lost");
	for (int i = 0; i < 4; i++)
		cr_expect_eq(lost[0][i], lost[1][i], "%s: %ld with the db family, %ld without",
			     class_keys[i], lost[0][i], lost[1][i]);
	if (system("valgrind --version >/dev/null 2>&1") != 0)
		return;
	const char *argv[] = { e2e_prog("leak_sqlite"), NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(lost[0][i], vg.leak[i][0], "%s: prof %ld, valgrind %ld", class_keys[i],
			     lost[0][i], vg.leak[i][0]);
}

/* The exit-time scan finds the blocks still allocated from the threads' records: in
 * tests/progs/leak_reuse other threads free the main thread's blocks (and allocate and free
 * blocks of their own at those addresses), whose addresses the main thread then gets back for
 * the blocks it keeps. A replay that weighed the threads' events out of time order would lose
 * some of those, or keep freed ones (which then read as lost). All are reachable, as memcheck
 * says. */
Test(leaks, addresses_freed_by_other_threads_and_reused)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("leak_reuse"), NULL };
	/* One arena and no per-thread cache: a block freed is the next one allocated. */
	const char *env[] = { "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1", NULL };
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	cr_assert_eq(e2e_profile(dir, argv, env, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "reusing freed addresses"), "%s", text);
	free(text);
	/* The scan's own count of the blocks it classified (those not listed are reachable). */
	cr_expect_eq(e2e_dumped(dir, "LEAK_SCAN", " blocks=200 listed=0"), 1);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.blocks"), 200);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.bytes"), 200 * 64);
	for (int i = 0; i < 3; i++) {
		char key[64];
		snprintf(key, sizeof(key), "heap.leak_classes.%s.blocks", class_keys[i]);
		cr_expect_eq(e2e_int(p, key), 0, "%s", key);
	}
	json_decref(doc);
}

/* A lost structure whose blocks point both ways is headed by its first allocation, as
 * memcheck reports it, whatever the addresses (tests/progs/leak_cycle.c: the part got a lower
 * address than its owner). */
Test(leaks, a_lost_cycle_is_headed_by_its_oldest_block)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_cycle");
	json_t *p = e2e_process(doc, 0);
	long got[2][2];
	for (int i = 0; i < 2; i++) {
		char key[64];
		snprintf(key, sizeof(key), "heap.leak_classes.%s.bytes", class_keys[i]);
		got[i][0] = e2e_int(p, key);
		snprintf(key, sizeof(key), "heap.leak_classes.%s.blocks", class_keys[i]);
		got[i][1] = e2e_int(p, key);
	}
	json_decref(doc);
	cr_expect_eq(got[0][0], 848, "definitely lost: the owner");
	cr_expect_eq(got[0][1], 1);
	cr_expect_eq(got[1][0], 80, "indirectly lost: its part");
	cr_expect_eq(got[1][1], 1);
	if (system("valgrind --version >/dev/null 2>&1") != 0)
		return;
	const char *argv[] = { e2e_prog("leak_cycle"), NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0);
	for (int i = 0; i < 2; i++)
		cr_expect_eq(got[i][0], vg.leak[i][0], "%s: prof %ld, valgrind %ld", class_keys[i],
			     got[i][0], vg.leak[i][0]);
}

/* The main thread left by pthread_exit before the last thread exited the process
 * (tests/progs/main_exits.c): /proc/self/maps then reads as empty, and the scan found no root
 * at all (every block definitely lost), /proc/self/fd nothing (files named "?"). */
Test(leaks, classes_when_the_main_thread_left_first)
{
	const char *dir = e2e_tmpdir();
	char file[PATH_MAX];
	snprintf(file, sizeof(file), "%s/lines.txt", dir);
	const char *argv[] = { e2e_prog("main_exits"), file, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.bytes"), 1000);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.definitely_lost.bytes"), 500);
	long writes = e2e_int(e2e_file_row(json_object_get(json_object_get(p, "io"), "files"), file),
			      "writes");
	cr_expect_eq(writes, 5, "the file, named, and its writes: %ld", writes);
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		for (int i = 0; i < 4; i++) {  /* the thread's own glibc blocks too */
			char key[64];
			snprintf(key, sizeof(key), "heap.leak_classes.%s.bytes", class_keys[i]);
			cr_expect_eq(e2e_int(p, key), vg.leak[i][0] < 0 ? 0 : vg.leak[i][0],
				     "%s: prof %ld, valgrind %ld", key, e2e_int(p, key), vg.leak[i][0]);
		}
	}
	json_decref(doc);
}

/* tests/progs/leak_sparse.c: pointers kept in a 512 MiB mapping and a 64 MiB block that the
 * program touched on one page each, and in shared memory (anonymous, and a /dev/shm file).
 * The classes are memcheck's; the scan reads the pages that hold data, not the untouched
 * ones (the JVM's committed heap made java -version 3x slower to exit), and reads shared
 * mappings, which are memory, as memcheck does (they were taken for devices). */
Test(leaks, sparse_and_shared_memory_as_memcheck_sees_it)
{
	const char *dir = e2e_tmpdir();
	json_t *doc = profile_report(dir, "leak_sparse");
	const long want[4][2] = { { 208, 1 }, { 0, 0 }, { 0, 0 },
				  { (64l << 20) + 48 + 80 + 112 + 144 + 56 + 72, 7 } };
	expect_leak_classes(e2e_process(doc, 0), want);
	json_decref(doc);
	const char *args[] = { "dump", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	const char *at = strstr(text, "root_bytes=");
	cr_assert_not_null(at, "no LEAK_SCAN record");
	unsigned long long root_bytes = strtoull(at + strlen("root_bytes="), NULL, 10);
	cr_expect_lt(root_bytes, 16ull << 20, "the scan read %llu bytes of roots", root_bytes);
	free(text);
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		const char *argv[] = { e2e_prog("leak_sparse"), NULL };
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		for (int i = 0; i < 4; i++)
			cr_expect_eq(vg.leak[i][1], want[i][1], "valgrind: %s %ld blocks", class_keys[i],
				     vg.leak[i][1]);
	}
}

/* A program that held 100,000 blocks at once (tests/progs/leak_many.c): the replay's table
 * outgrows the caches and is read ahead a batch at a time, and the marking finds many blocks
 * to a page; the classes are memcheck's all the same. */
Test(leaks, many_blocks_held_at_once_as_memcheck_sees_them)
{
	json_t *doc = profile_report(e2e_tmpdir(), "leak_many");
	json_t *p = e2e_process(doc, 0);
	static const long want[4][2] = { { 16000, 500 }, { 24000, 500 }, { 0, 0 }, { 16000, 500 } };
	expect_leak_classes(p, want);
	json_decref(doc);
}

/* Once every block is known reachable the scan stops: nothing left to read can change a
 * class. tests/progs/leak_early.c holds all its blocks from its data segment (and half of
 * them through the other half), which the scan reads first, and has 32 MiB of written memory
 * further on, which it need not read; with one block lost, it reads everything, and finds it
 * lost as memcheck does. */
Test(leaks, the_scan_stops_once_every_block_is_reachable)
{
	for (int lose = 0; lose < 2; lose++) {
		const char *dir = e2e_tmpdir();
		const char *argv[] = { e2e_prog("leak_early"), lose ? "lose" : NULL, NULL };
		cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		json_t *p = e2e_process(doc, 0);
		const long want[2][4][2] = {
			{ { 0, 0 }, { 0, 0 }, { 0, 0 }, { 4608, 128 } },
			{ { 100, 1 }, { 0, 0 }, { 0, 0 }, { 4608, 128 } },
		};
		expect_leak_classes(p, want[lose]);
		long bytes = scanned_bytes(dir, e2e_int(p, "pid"));
		if (lose)
			cr_expect_gt(bytes, 32l << 20, "with a block lost, the scan read %ld bytes", bytes);
		else
			cr_expect(bytes > 0 && bytes < (1l << 20), "the scan read %ld bytes", bytes);
		json_decref(doc);
	}
}

/* glibc's arena, in libc's data (a root), holds the address of its top chunk, and of free
 * chunks in its bins: the chunk after a block in use starts in that block's last 8 bytes. The
 * last block before the heap's top looked possibly lost where memcheck, whose allocator keeps
 * no such state, says definitely lost (tests/progs/leak_early.c lose_last). */
Test(leaks, a_lost_block_before_the_heaps_top_is_definitely_lost)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("leak_early"), "lose_last", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	const long want[4][2] = { { 100, 1 }, { 0, 0 }, { 0, 0 }, { 4608, 128 } };
	expect_leak_classes(e2e_process(doc, 0), want);
	json_decref(doc);
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		cr_expect_eq(vg.leak[0][0], 100, "valgrind definitely lost %ld", vg.leak[0][0]);
		cr_expect_eq(vg.leak[2][0], 0, "valgrind possibly lost %ld", vg.leak[2][0]);
	}
}
