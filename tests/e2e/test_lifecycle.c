/* End-to-end lifecycle and fault tests: exits, crashes, SIGKILL, fork and exec, an unwritable
 * output directory, planted symbolic links, and untrusted trace files. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "prof_format.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(lifecycle, .fini = teardown, .timeout = 120);

/* Runs crash.c with `how` under libprof; returns its report and wait status. */
static json_t *crash_report(const char *how, int n, int *status)
{
	const char *dir = e2e_tmpdir();
	char count[16];
	snprintf(count, sizeof(count), "%d", n);
	const char *argv[] = { e2e_prog("crash"), how, count, NULL };
	*status = e2e_profile(dir, argv, NULL, NULL, NULL);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc, "no readable trace after '%s'", how);
	return doc;
}

Test(lifecycle, normal_exit_is_complete_with_status)
{
	int st;
	json_t *doc = crash_report("exit", 100, &st);
	json_t *p = e2e_process(doc, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit status changed: %d", st);
	cr_expect(json_is_true(json_object_get(p, "complete")));
	cr_expect_eq(e2e_int(p, "exit.code"), 3);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 100);
	cr_expect_eq(e2e_int(p, "heap.leaked_blocks"), 100);
	/* libc's exit-time frees (__libc_freeres) free nothing libprof allocated. */
	cr_expect_eq(e2e_int(p, "heap.unmatched_frees"), 0);
	json_decref(doc);
}

Test(lifecycle, underscore_exit_records_its_status_with_all_data)
{
	int st;
	json_t *doc = crash_report("_exit", 500, &st);
	json_t *p = e2e_process(doc, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 4);
	/* The program's own end, though no exit handler ran: no leak scan. */
	cr_expect(json_is_true(json_object_get(p, "complete")));
	cr_expect(json_is_null(json_object_get(json_object_get(p, "heap"), "leak_classes")));
	cr_expect_eq(e2e_int(p, "exit.code"), 4, "_exit's status is recorded");
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 500);
	json_decref(doc);
}

Test(lifecycle, abort_is_reported_as_signal)
{
	int st;
	json_t *doc = crash_report("abort", 300, &st);
	json_t *p = e2e_process(doc, 0);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "the program must still die of SIGABRT");
	cr_expect(json_is_false(json_object_get(p, "complete")));
	cr_expect_eq(e2e_int(p, "exit.signal"), SIGABRT);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 300);
	json_decref(doc);
}

Test(lifecycle, segfault_is_reported_as_signal)
{
	int st;
	json_t *doc = crash_report("segv", 300, &st);
	json_t *p = e2e_process(doc, 0);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	cr_expect_eq(e2e_int(p, "exit.signal"), SIGSEGV);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 300);
	json_decref(doc);
}

Test(lifecycle, self_sigkill_keeps_everything_written)
{
	int st;
	json_t *doc = crash_report("kill", 20000, &st);
	json_t *p = e2e_process(doc, 0);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cr_expect(json_is_false(json_object_get(p, "complete")));
	cr_expect(json_is_null(json_object_get(p, "exit")));
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 20000);
	json_decref(doc);
}

/* Killed from outside while it waits: everything before "ready" is in the trace. */
Test(lifecycle, sigkill_from_outside_mid_run)
{
	const char *dir = e2e_tmpdir();
	char preload[PATH_MAX + 16], output[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", e2e_lib());
	snprintf(output, sizeof(output), "PROF_OUTPUT=%s/prof.%%p.trace", dir);
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		putenv(output);
		putenv(preload);
		execl(e2e_prog("crash"), "crash", "hang", "30000", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char buf[16] = { 0 };
	cr_assert_gt(read(fds[0], buf, sizeof(buf) - 1), 0);
	cr_assert_str_eq(buf, "ready\n");
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	close(fds[0]);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect(json_is_false(json_object_get(p, "complete")));
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 30000);
	cr_expect_eq(e2e_int(p, "heap.leaked_blocks"), 30000);
	json_decref(doc);
}

static int count_traces(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".trace") != NULL;
	if (d)
		closedir(d);
	return n;
}

Test(lifecycle, fork_and_exec_each_write_a_trace)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("forker"), NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 7, "exit status: %d", st);
	cr_assert_eq(count_traces(dir), 3);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	long parent = -1, child = -1, execd = -1, child_pid = -1, parent_pid = -1, child_ppid = -1;
	for (size_t i = 0; i < 3; i++) {
		json_t *p = e2e_process(doc, i);
		long allocs = e2e_int(p, "heap.alloc_calls");
		if (json_object_get(p, "exec")) {
			child = allocs;
			child_pid = e2e_int(p, "pid");
			child_ppid = e2e_int(p, "ppid");
			cr_expect(json_is_true(json_object_get(p, "complete")), "exec ends an image normally");
		} else if (e2e_int(p, "exit.code") == 7 && allocs == 7) {
			execd = allocs;
			cr_expect_eq(json_array_size(json_object_get(p, "argv")), 2);
		} else {
			parent = allocs;
			parent_pid = e2e_int(p, "pid");
		}
	}
	cr_expect_eq(parent, 13);
	cr_expect_eq(child, 5);
	cr_expect_eq(execd, 7);
	cr_expect_eq(child_ppid, parent_pid);
	cr_expect_neq(child_pid, parent_pid);
	json_decref(doc);
}

/* A program that enters a seccomp sandbox whose filter kills the process on system calls
 * libprof makes (growing the trace, reading /proc, timers) runs to its end, and so does the
 * program it then starts under that filter: recording stops before the filter is installed,
 * through prctl() or syscall() alike, with what came before it kept, and one line on stderr;
 * the program started from the sandbox is not profiled. tests/progs/sandboxed.c. */
/* tests/progs/sandboxed with how and N, then its exec: it runs to its end (status 0, both
 * lines on stdout); returns the run's directory and what it said on stderr (to free). */
static const char *run_sandboxed(const char *how, const char *n, char **err_text)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX], err[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prog("sandboxed"), how, n, "exec", NULL };
	int st = e2e_profile(dir, argv, NULL, out, err);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", how, st);
	e2e_expect_file(out, "sandboxed\nchild\n");
	*err_text = e2e_read_file(err);
	cr_assert_not_null(*err_text);
	return dir;
}

Test(lifecycle, a_seccomp_sandbox_stops_recording_and_the_program_runs_on)
{
	const char *const how[] = { "prctl", "syscall" };
	for (size_t i = 0; i < 2; i++) {
		char *text;
		const char *dir = run_sandboxed(how[i], "300000", &text);
		cr_expect_not_null(strstr(text, "seccomp filter"), "%s", text);
		cr_expect_eq(e2e_count_lines(text), 1, "%s", text);
		free(text);
		cr_assert_eq(count_traces(dir), 1, "only the sandboxed process is profiled");
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		json_t *p = e2e_process(doc, 0);
		cr_expect(json_is_false(json_object_get(p, "complete")));
		cr_expect_eq(e2e_int(p, "heap.alloc_calls"), 1000, "the allocations before the filter");
		json_decref(doc);
	}
}

/* A hardening filter that kills only on calls libprof never makes (mount, reboot, ptrace):
 * libprof runs the filter on its own calls and records on, in the program and in the one it
 * starts, with nothing on stderr. */
Test(lifecycle, a_seccomp_filter_that_spares_libprofs_calls_keeps_recording)
{
	char *text;
	const char *dir = run_sandboxed("denylist", "5000", &text);
	cr_expect_str_eq(text, "");
	free(text);
	cr_assert_eq(count_traces(dir), 2, "the program and the one it exec'd");
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	for (size_t i = 0; i < 2; i++) {
		json_t *p = e2e_process(doc, i);
		cr_expect(json_is_true(json_object_get(p, "complete")), "process %zu complete", i);
		long calls = e2e_int(p, "heap.alloc_calls");
		cr_expect(calls == 1000 || calls == 6000, "process %zu: %ld allocations", i, calls);
	}
	json_decref(doc);
}

/* The program runs unchanged, with one line on stderr, when its trace cannot be created. */
Test(lifecycle, unwritable_output_leaves_program_unchanged)
{
	const char *dir = e2e_tmpdir();
	char blocker[PATH_MAX], env_out[PATH_MAX + 32], out1[PATH_MAX], out2[PATH_MAX], err[PATH_MAX];
	snprintf(blocker, sizeof(blocker), "%s/not-a-dir", dir);
	FILE *f = fopen(blocker, "w");  /* a file where a directory should be: fails even for root */
	cr_assert_not_null(f);
	fclose(f);
	snprintf(env_out, sizeof(env_out), "PROF_OUTPUT=%s/sub/x.trace", blocker);
	snprintf(out1, sizeof(out1), "%s/plain.out", dir);
	snprintf(out2, sizeof(out2), "%s/prof.out", dir);
	snprintf(err, sizeof(err), "%s/prof.err", dir);
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	int st1 = e2e_run(argv, NULL, out1, NULL);
	const char *env[] = { env_out, NULL };
	int st2 = e2e_profile(dir, argv, env, out2, err);
	cr_expect_eq(st1, st2);
	char *a = e2e_read_file(out1), *b = e2e_read_file(out2), *e = e2e_read_file(err);
	cr_assert(a && b && e);
	/* Same output but for the pointer value heap_mix prints. */
	cr_expect_eq(strlen(a), strlen(b));
	cr_expect_eq(e2e_count_lines(e), 1, "exactly one warning, got: %s", e);
	cr_expect_not_null(strstr(e, "libprof"));
	cr_expect_not_null(strstr(e, "disabled"));
	free(a);
	free(b);
	free(e);
}

/* The disk fills up under the trace: the program carries on unchanged, libprof says so once
 * and disables itself, and what was written stays readable. Needs a small tmpfs (root). */
Test(lifecycle, full_disk_disables_profiling_and_keeps_the_program_running)
{
	const char *dir = e2e_tmpdir();
	char small[PATH_MAX], mount_cmd[PATH_MAX + 64], env_out[PATH_MAX + 48], out1[PATH_MAX],
		out2[PATH_MAX], err[PATH_MAX], trace[PATH_MAX + 16];
	snprintf(small, sizeof(small), "%s/small", dir);
	mkdir(small, 0700);
	snprintf(mount_cmd, sizeof(mount_cmd), "mount -t tmpfs -o size=2M tmpfs %s 2>/dev/null", small);
	if (system(mount_cmd) != 0)
		cr_skip_test("cannot mount a small tmpfs here (needs root)");
	snprintf(trace, sizeof(trace), "%s/x.trace", small);
	snprintf(env_out, sizeof(env_out), "PROF_OUTPUT=%s", trace);
	snprintf(out1, sizeof(out1), "%s/plain.out", dir);
	snprintf(out2, sizeof(out2), "%s/prof.out", dir);
	snprintf(err, sizeof(err), "%s/prof.err", dir);
	const char *argv[] = { e2e_prog("heap_threads"), "4", "40000", NULL };
	const char *env[] = { env_out, NULL };
	int st1 = e2e_run(argv, NULL, out1, NULL);
	int st2 = e2e_profile(dir, argv, env, out2, err);
	char *e = e2e_read_file(err);
	json_t *doc = e2e_prof_json("report", trace);
	snprintf(mount_cmd, sizeof(mount_cmd), "umount %s", small);
	cr_assert_eq(system(mount_cmd), 0);
	cr_expect_eq(st1, st2, "the program's status changed");
	cr_assert_not_null(e);
	cr_expect_eq(e2e_count_lines(e), 1, "one warning: %s", e);
	cr_expect_not_null(strstr(e, "No space left"), "%s", e);
	cr_assert_not_null(doc, "the part written before the disk filled is readable");
	json_t *p = e2e_process(doc, 0);
	cr_expect(json_is_false(json_object_get(p, "complete")));
	cr_expect_gt(e2e_int(p, "heap.alloc_calls"), 0);
	cr_expect_gt(e2e_int(p, "lost_records"), 0);
	json_decref(doc);
	free(e);
}

Test(lifecycle, planted_symlink_is_not_followed_and_mode_is_0600)
{
	const char *dir = e2e_tmpdir();
	char target[PATH_MAX], link[PATH_MAX], env_out[PATH_MAX + 32], moved[PATH_MAX];
	snprintf(target, sizeof(target), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/app.trace", dir);
	snprintf(moved, sizeof(moved), "%s/app.1.trace", dir);
	FILE *f = fopen(target, "w");
	cr_assert_not_null(f);
	fputs("precious\n", f);
	fclose(f);
	cr_assert_eq(symlink(target, link), 0);
	snprintf(env_out, sizeof(env_out), "PROF_OUTPUT=%s", link);
	const char *env[] = { env_out, NULL };
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	e2e_profile(dir, argv, env, NULL, NULL);
	char *victim = e2e_read_file(target);
	cr_assert_not_null(victim);
	cr_expect_str_eq(victim, "precious\n", "the link's target was written through");
	free(victim);
	struct stat st;
	cr_assert_eq(stat(moved, &st), 0, "trace not written beside the planted link");
	cr_expect_eq(st.st_mode & 0777, 0600);
}

/* The program's output is byte for byte the same with and without the profiler (run with
 * env, which may be NULL). */
static void expect_same_output_with(const char *prog, const char *const env[])
{
	const char *dir = e2e_tmpdir();
	char out1[PATH_MAX], out2[PATH_MAX];
	snprintf(out1, sizeof(out1), "%s/plain.out", dir);
	snprintf(out2, sizeof(out2), "%s/prof.out", dir);
	const char *argv[] = { e2e_prog(prog), NULL };
	int st1 = e2e_run(argv, NULL, out1, NULL);
	int st2 = e2e_profile(dir, argv, env, out2, NULL);
	cr_expect_eq(st1, 0);
	cr_expect_eq(st2, 0);
	char *a = e2e_read_file(out1), *b = e2e_read_file(out2);
	cr_assert(a && b);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);
}

static void expect_same_output(const char *prog)
{
	expect_same_output_with(prog, NULL);
}

/* In the sampled mode too, whose tallied allocations and frees save no errno of their own. */
Test(lifecycle, errno_and_failures_are_untouched)
{
	expect_same_output("errno_check");
	const char *sampled[] = { "PROF_HEAP_SAMPLE=64K", NULL };
	expect_same_output_with("errno_check", sampled);
}

Test(lifecycle, profiler_descriptors_stay_out_of_the_programs_way)
{
	expect_same_output("first_fd");
}

/* Threads with 16 KiB stacks (PTHREAD_STACK_MIN) that allocate, lock and do I/O run as they
 * do unprofiled, with every allocation counted as memcheck counts it; and one that calls
 * exit() from its small stack leaves the program's exit status, and a leak scan that still
 * finds the block held by that stack alone (tests/progs/small_stacks.c). */
Test(lifecycle, threads_with_the_smallest_stacks_never_overflow)
{
	const char *dir = e2e_tmpdir();
	char file[PATH_MAX], out[PATH_MAX];
	snprintf(file, sizeof(file), "%s/data.txt", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *argv[] = { e2e_prog("small_stacks"), file, NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0);
	unlink(file);
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	e2e_expect_file(out, "ok\n");
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), vg.allocs);
	cr_expect_eq(e2e_int(p, "heap.free_calls"), vg.frees);
	cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), vg.bytes);
	json_decref(doc);

	const char *dir2 = e2e_tmpdir();
	snprintf(out, sizeof(out), "%s/out.txt", dir2);
	const char *exiting[] = { e2e_prog("small_stacks"), file, "exit", NULL };
	cr_assert_eq(e2e_profile(dir2, exiting, NULL, out, NULL), 0);
	e2e_expect_file(out, "exit\n");
	doc = e2e_prof_json("report", dir2);
	cr_assert_not_null(doc);
	p = e2e_process(doc, 0);
	cr_expect(json_is_true(json_object_get(p, "complete")));
	cr_expect_eq(e2e_int(p, "exit.code"), 0);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.still_reachable.bytes"), 4000);
	cr_expect_eq(e2e_int(p, "heap.leak_classes.definitely_lost.bytes"), 0);
	json_decref(doc);
}

Test(lifecycle, signal_dispositions_programs_inspect_are_untouched)
{
	expect_same_output("dispositions");
}

/* ---- untrusted traces ---- */

static void expect_one_line_error(const char *path, const char *must_contain)
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prof(), "report", path, NULL };
	int st = e2e_run(argv, NULL, NULL, err);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0, "prof must fail on %s (status %d)", path, st);
	char *e = e2e_read_file(err);
	cr_assert_not_null(e);
	cr_expect_eq(e2e_count_lines(e), 1, "one line: %s", e);
	cr_expect_not_null(strstr(e, path), "names the file: %s", e);
	if (must_contain)
		cr_expect_not_null(strstr(e, must_contain), "'%s' in: %s", must_contain, e);
	free(e);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	if (n)
		fwrite(data, 1, n, f);
	fclose(f);
}

/* A real trace to damage: a finished heap_mix run. */
static char *real_trace(const char *dir)
{
	static char path[PATH_MAX];
	char env_out[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/real.trace", dir);
	snprintf(env_out, sizeof(env_out), "PROF_OUTPUT=%s", path);
	const char *env[] = { env_out, NULL };
	const char *argv[] = { e2e_prog("heap_mix"), NULL };
	e2e_profile(dir, argv, env, NULL, NULL);
	return path;
}

Test(lifecycle, bad_traces_give_one_line_errors)
{
	const char *dir = e2e_tmpdir();
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/empty.trace", dir);
	write_bytes(p, "", 0);
	expect_one_line_error(p, "empty");

	snprintf(p, sizeof(p), "%s/foreign.trace", dir);
	write_bytes(p, "#!/bin/sh\necho this is not a trace\n", 35);
	expect_one_line_error(p, "not a libprof trace");

	char *real = real_trace(dir);
	char *data = e2e_read_file(real);
	struct stat st;
	cr_assert_eq(stat(real, &st), 0);
	uint32_t data_offset;  /* the header's: where the first chunk begins */
	memcpy(&data_offset, data + offsetof(struct prof_file_header, data_offset), 4);
	struct prof_file_header h;
	memcpy(&h, data, sizeof(h));
	uint64_t used = data_offset + h.chunks_claimed * h.chunk_size;  /* a tail of zeros may follow */
	cr_assert_gt(used, data_offset + 4096);
	cr_assert_leq(used, (uint64_t)st.st_size);

	/* A file cut short is reported as far as it goes, with one warning. */
	snprintf(p, sizeof(p), "%s/truncated.trace", dir);
	write_bytes(p, data, (size_t)used - 1000);
	char err[PATH_MAX], out[PATH_MAX];
	snprintf(err, sizeof(err), "%s/cut-err.txt", dir);
	snprintf(out, sizeof(out), "%s/cut-out.txt", dir);
	const char *cut[] = { e2e_prof(), "report", p, NULL };
	cr_expect_eq(e2e_run(cut, NULL, out, err), 0);
	char *e = e2e_read_file(err), *o = e2e_read_file(out);
	cr_expect_eq(e2e_count_lines(e), 1, "one warning: %s", e);
	cr_expect_not_null(strstr(e, "warning:"), "%s", e);
	cr_expect_not_null(strstr(e, "truncated"), "%s", e);
	cr_expect_not_null(strstr(o, "INCOMPLETE"), "%s", o);
	cr_expect_not_null(strstr(o, "cut short"), "%s", o);
	free(e);
	free(o);

	snprintf(p, sizeof(p), "%s/newer.trace", dir);
	uint16_t v = 99;
	memcpy(data + 8, &v, 2);   /* version */
	memcpy(data + 10, &v, 2);  /* min_version: only a reader of format 99 may read this */
	write_bytes(p, data, (size_t)st.st_size);
	expect_one_line_error(p, "newer");
	v = 1;
	memcpy(data + 8, &v, 2);
	memcpy(data + 10, &v, 2);

	snprintf(p, sizeof(p), "%s/corrupt.trace", dir);
	uint32_t bad = 12;  /* the first record's size: not a multiple of 8 */
	uint64_t features;  /* the first record follows a 24-byte chunk header with runs, else 16 */
	memcpy(&features, data + 16, 8);
	memcpy(data + data_offset + (features & 1 ? 24 : 16) + 4, &bad, 4);
	write_bytes(p, data, (size_t)st.st_size);
	expect_one_line_error(p, "offset");
	free(data);
}

/* A program that starts another with a clean environment: the new one is still profiled, and
 * its trace goes where the first one's did. */
static void expect_child_traced(const char *how)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("spawner"), how, NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", how, st);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	int found = 0;
	for (size_t i = 0; e2e_process(doc, i); i++) {
		json_t *p = e2e_process(doc, i);
		json_t *argvj = json_object_get(p, "argv");
		const char *a1 = json_string_value(json_array_get(argvj, 1));
		if (a1 && !strcmp(a1, "child") && e2e_int(p, "heap.alloc_calls") == 9)
			found = 1;
	}
	cr_expect(found, "%s: the child's trace is missing from the run directory", how);
	json_decref(doc);
}

Test(lifecycle, exec_with_clean_environment_stays_profiled)
{
	expect_child_traced("exec");
}

Test(lifecycle, posix_spawn_with_clean_environment_stays_profiled)
{
	expect_child_traced("spawn");
}

/* A SIGALRM handler that siglongjmps out of libprof's hooks (tests/progs/alarm_jumps.c) left
 * the thread "inside libprof", and its every later call unrecorded. Each jump may lose the
 * one call it interrupted, no more; the trace reads, and the jumps are said. */
Test(lifecycle, calls_after_a_longjmp_out_of_a_hook_are_recorded)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX], err[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *argv[] = { e2e_prog("alarm_jumps"), "200", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, err), 0);
	struct e2e_jumps j = e2e_jumps_said(out);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	e2e_expect_heap_of_jumps(p, j);
	cr_expect_eq(e2e_int(p, "heap.unmatched_frees"), 0);
	long written = e2e_int(e2e_file_row(json_object_get(json_object_get(p, "io"), "files"),
					    "/dev/null"), "writes");
	cr_expect(written >= j.writes && written <= j.writes + j.jumps,
		  "%ld writes recorded of %ld", written, j.writes);
	cr_expect_eq(e2e_int(p, "exit.code"), 0);
	json_decref(doc);
	char *e = e2e_read_file(err);
	cr_expect(e && strstr(e, "longjmp'd out of libprof's hooks"), "stderr: %s", e ? e : "");
	free(e);
}

/* A relative PROF_OUTPUT is the directory the run started in: a program that changes
 * directory before it forks or execs (a daemon's chdir("/")) had its children's traces fail
 * ("cannot create trace file") or land elsewhere. */
Test(lifecycle, relative_output_stays_where_the_run_started)
{
	const char *dir = e2e_tmpdir();
	char script[4 * PATH_MAX], err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	snprintf(script, sizeof(script),
		 "cd '%s' && mkdir t && LD_PRELOAD='%s' PROF_OUTPUT=t/%%p.trace "
		 "sh -c 'cd / && /bin/true; /bin/true; env' | grep -c '^PROF_OUTPUT=%s/t/%%p.trace$'",
		 dir, e2e_lib(), dir);
	const char *argv[] = { "sh", "-c", script, NULL };
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	cr_assert_eq(e2e_run(argv, NULL, out, err), 0);
	e2e_expect_file(out, "1\n");  /* what the exec'd env saw */
	char *e = e2e_read_file(err);
	cr_expect(e && !strstr(e, "cannot create"), "stderr: %s", e ? e : "");
	free(e);
	char traces[PATH_MAX];
	snprintf(traces, sizeof(traces), "%s/t", dir);
	json_t *doc = e2e_prof_json("report", traces);
	cr_assert_not_null(doc);
	size_t n = 0;
	while (e2e_process(doc, n))
		n++;
	cr_expect_eq(n, 4, "sh, true twice and env: %zu", n);
	json_decref(doc);
}

/* exit() or _exit() from a signal handler that interrupted libprof's own work
 * (tests/progs/signal_exit.c): the interrupted hook never resumes, and the end of the run
 * (leak scan, EXIT) was refused by the stream it held: no exit recorded, about one run in
 * three. Ten runs of each, each with its exit. */
Test(lifecycle, exit_from_a_handler_that_interrupted_a_hook_is_recorded)
{
	for (int run = 0; run < 20; run++) {
		const char *dir = e2e_tmpdir();
		const char *argv[] = { e2e_prog("signal_exit"), run % 2 ? "_exit" : "exit", NULL };
		int st = e2e_profile(dir, argv, NULL, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "run %d: status %d", run, st);
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		json_t *p = e2e_process(doc, 0);
		if (run % 2 == 0)  /* _exit leaves the end-of-run work out: never complete */
			cr_expect(json_is_true(json_object_get(p, "complete")), "run %d complete", run);
		cr_expect_eq(e2e_int(p, "exit.code"), 3, "run %d", run);
		cr_expect_eq(e2e_int(p, "lost_records"), 0, "run %d", run);
		json_decref(doc);
	}
}

/* The first thread a few KiB from its stack limit (tests/progs/main_stack_edge.c under
 * `ulimit -s 256`, 6 KiB left where it allocates and writes a file): it runs as unprofiled.
 * Before, libprof's hooks (the first I/O call naming every descriptor, libunwind's lazily
 * bound functions) overflowed it: SIGSEGV. */
Test(lifecycle, the_first_thread_at_the_end_of_its_stack_runs_on)
{
	const char *dir = e2e_tmpdir();
	char script[2 * PATH_MAX + 64], file[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
	snprintf(file, sizeof(file), "%s/edge.txt", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	snprintf(script, sizeof(script), "ulimit -s 256 && exec '%s' 6 '%s'",
		 e2e_prog("main_stack_edge"), file);
	const char *argv[] = { "sh", "-c", script, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, err), 0);
	e2e_expect_file(out, "ok\n");
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p;
	long allocs = 0;
	for (size_t i = 0; (p = e2e_process(doc, i)); i++)
		if (strstr(json_string_value(json_object_get(p, "exe")), "main_stack_edge"))
			allocs = e2e_int(p, "heap.alloc_calls");
	cr_expect_geq(allocs, 1, "the allocation at the edge is counted: %ld", allocs);
	char *e = e2e_read_file(err);
	cr_expect(e && strstr(e, "little stack left"), "said: %s", e ? e : "");
	free(e);
	json_decref(doc);
}
