/* End-to-end tests of the trace writer: many short threads leave a small trace with exact
 * counts, a record larger than 4 KiB is written, and a fork is recorded (FORK) in the
 * parent's trace with the child's pid; a program that takes the trace's descriptor keeps
 * its own file unchanged; limits on file size and address space are the program's, never
 * broken by the trace. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "prof_format.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(writer, .fini = teardown, .timeout = 120);

#define KEEP_TAIL (32 * 1024)  /* writer.c: the most unused file a finished trace keeps */

/* The traces in dir: names into out (up to max), how many. */
static int list_traces(const char *dir, char out[][PATH_MAX], int max)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 6 && !strcmp(e->d_name + l - 6, ".trace") && n < max)
			snprintf(out[n++], PATH_MAX, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return n;
}

/* 5000 threads, 50 at a time, each allocating once: a thread costs one 1 KiB unit, not a
 * 64 KiB chunk (the trace was 313 MiB) nor a 4 KiB one (21 MB), and every allocation is
 * there. With its trace in dir. */
static void short_threads_in(const char *dir)
{
	enum { THREADS = 5000 };
	const char *argv[] = { e2e_prog("short_threads"), "5000", "50", NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	char traces[2][PATH_MAX];
	cr_assert_eq(list_traces(dir, traces, 2), 1);
	struct stat sb;
	cr_assert_eq(stat(traces[0], &sb), 0);
	/* A few MB: 1.5 KiB a thread at most, and 2 MiB for the main thread and the header. */
	cr_expect_leq(sb.st_size, THREADS * 1536L + (2L << 20), "trace of %ld bytes", (long)sb.st_size);

	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "lost_records"), 0);
	cr_expect_eq(json_array_size(json_object_get(p, "threads")), THREADS + 1);
	cr_expect_geq(e2e_int(p, "heap.alloc_calls"), THREADS);
	int line = e2e_marker_line("short_threads.c", "SHORT-ALLOC");
	cr_assert_gt(line, 0);
	json_t *sites = json_object_get(json_object_get(p, "heap"), "sites"), *site;
	size_t i;
	long calls = 0, bytes = 0;
	json_array_foreach(sites, i, site) {
		json_t *frame = json_array_get(json_object_get(site, "stack"), 0);
		if (e2e_int(frame, "line") == line) {
			calls += e2e_int(site, "calls");
			bytes += e2e_int(site, "bytes");
		}
	}
	cr_expect_eq(calls, THREADS, "allocations from the threads: %ld", calls);
	cr_expect_eq(bytes, THREADS * 777L);
	json_decref(doc);
}

Test(writer, short_threads_leave_a_small_trace_with_exact_counts)
{
	short_threads_in(e2e_tmpdir());
}

/* The same on tmpfs, where the writer takes a new run's pages as fallocate() made them
 * (writer.c, run_ready()) instead of writing zeros over them first. */
Test(writer, short_threads_with_their_trace_on_tmpfs)
{
	struct statfs fs;
	if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC)
		cr_skip_test("/dev/shm is not a tmpfs here");
	char dir[] = "/dev/shm/prof-e2e.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	short_threads_in(dir);
	char traces[4][PATH_MAX];
	int n = list_traces(dir, traces, 4);
	for (int i = 0; i < n; i++)
		unlink(traces[i]);
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	unlink(out);
	cr_expect_eq(rmdir(dir), 0, "%s left with files in it", dir);
}

/* Copies file src to dst (mode 0755). */
static void copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(in, 0, "%s", src);
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	cr_assert_geq(out, 0, "cannot create a file of a %zu-byte path", strlen(dst));
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* A module loaded from a path of about 4050 bytes: its MODULE record (over 4 KiB, more than
 * a 4 KiB chunk held) is in the trace, with the whole path, and nothing is lost. */
Test(writer, a_record_over_4_kib_is_recorded)
{
	const char *dir = e2e_tmpdir();
	char rel[PATH_MAX], lib[PATH_MAX], path[2 * PATH_MAX];
	snprintf(rel, sizeof(rel), "%s/progs/libplugin.so", e2e_build());
	cr_assert_not_null(realpath(rel, lib));
	char part[201];
	memset(part, 'd', 200);
	part[200] = '\0';
	size_t len = (size_t)snprintf(path, sizeof(path), "%s", dir);
	while (len + 1 + 200 + 1 + 60 < 4000) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/%s", part);
		cr_assert_eq(mkdir(path, 0755), 0, "mkdir of a %zu-byte path", len);
	}
	char name[512];
	size_t fill = 4050 - len - 1 - strlen("-libplugin.so");
	cr_assert_lt(fill, sizeof(name));
	memset(name, 'p', fill);
	snprintf(name + fill, sizeof(name) - fill, "-libplugin.so");
	len += (size_t)snprintf(path + len, sizeof(path) - len, "/%s", name);
	cr_assert_eq(strlen(path), 4050);
	copy_file(lib, path);
	char out[PATH_MAX + 16];
	snprintf(out, sizeof(out), "%s/run", dir);
	cr_assert_eq(mkdir(out, 0755), 0);
	const char *argv[] = { e2e_prog("dlopen_user"), path, NULL };
	int st = e2e_profile(out, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dlopen_user failed: %d", st);
	char traces[2][PATH_MAX];
	cr_assert_eq(list_traces(out, traces, 2), 1);
	const char *args[] = { "dump", traces[0], NULL };
	char *text = e2e_prof_text(dir, args);
	char want[2 * PATH_MAX + 16];
	snprintf(want, sizeof(want), "path=\"%s\"", path);
	char *m = strstr(text, want);
	cr_expect_not_null(m, "no MODULE record with the %zu-byte path", strlen(path));
	free(text);
	json_t *doc = e2e_prof_json("report", out);
	cr_assert_not_null(doc);
	cr_expect_eq(e2e_int(e2e_process(doc, 0), "lost_records"), 0);
	json_decref(doc);
}

/* forker forks once: the parent's trace has a FORK record naming the child, whose own trace
 * has that pid and the parent as ppid; the report lists the child under "forked:". */
Test(writer, fork_is_recorded_in_the_parent_with_the_childs_pid)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("forker"), NULL };
	e2e_profile(dir, argv, NULL, NULL, NULL);
	char traces[4][PATH_MAX];
	int n = list_traces(dir, traces, 4);
	cr_assert_eq(n, 3);
	long child = -1, parent = -1;
	for (int i = 0; i < n; i++) {
		const char *args[] = { "dump", traces[i], NULL };
		char *text = e2e_prof_text(dir, args);
		char *fork = strstr(text, " FORK ");
		if (fork) {
			cr_expect_eq(child, -1, "one FORK record in all");
			char *c = strstr(fork, "child_pid=");
			cr_assert_not_null(c);
			child = strtol(c + 10, NULL, 10);
			char *pid = strstr(text, "\n  pid ");
			cr_assert_not_null(pid);
			parent = strtol(pid + 7, NULL, 10);
		}
		free(text);
	}
	cr_assert_gt(child, 0, "no FORK record in any trace");
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	int found = 0;
	for (size_t i = 0; i < 3; i++) {
		json_t *p = e2e_process(doc, i);
		if (e2e_int(p, "pid") == child && e2e_int(p, "ppid") == parent)
			found = 1;
	}
	cr_expect(found, "no trace of child %ld with ppid %ld", child, parent);
	json_decref(doc);
	const char *args[] = { "report", dir, NULL };
	char *text = e2e_prof_text(dir, args), want[64];
	snprintf(want, sizeof(want), "forked: %ld", child);
	cr_expect_not_null(strstr(text, want), "'%s' not in the report", want);
	free(text);
}

/* A trace is its owner's alone to read and write (0600) whatever the umask, a fork child's
 * too (which sets its mode only where the umask took bits away), and reads as usual. */
Test(writer, traces_are_the_owners_alone_whatever_the_umask)
{
	mode_t masks[] = { 0277, 0077, 0 };
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		const char *dir = e2e_tmpdir();
		const char *argv[] = { e2e_prog("forker"), NULL };
		mode_t was = umask(masks[m]);
		int st = e2e_profile(dir, argv, NULL, NULL, NULL);
		umask(was);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %d", st);  /* the exec's */
		char traces[4][PATH_MAX];
		int n = list_traces(dir, traces, 4);
		cr_assert_eq(n, 3);
		for (int i = 0; i < n; i++) {
			struct stat sb;
			cr_assert_eq(stat(traces[i], &sb), 0);
			cr_expect_eq(sb.st_mode & 07777, 0600, "umask %03o: %s has mode %03o",
				     (unsigned)masks[m], traces[i], (unsigned)(sb.st_mode & 07777));
		}
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		cr_expect_eq(json_array_size(json_object_get(doc, "processes")), 3);
		json_decref(doc);
	}
}

/* PROF_MAX_SIZE reached: the program runs unchanged, one line on stderr says so, the trace
 * stays within the limit, reads as a normal exit, and counts what it dropped. */
Test(writer, size_limit_keeps_the_program_unchanged_and_counts_losses)
{
	const char *dir = e2e_tmpdir();
	char out1[PATH_MAX + 16], out2[PATH_MAX + 16], err[PATH_MAX + 16];
	snprintf(out1, sizeof(out1), "%s/plain.out", dir);
	snprintf(out2, sizeof(out2), "%s/prof.out", dir);
	snprintf(err, sizeof(err), "%s/prof.err", dir);
	const char *argv[] = { e2e_prog("heap_threads"), "4", "160000", NULL };
	const char *env[] = { "PROF_MAX_SIZE=4M", NULL };
	int st1 = e2e_run(argv, NULL, out1, NULL);
	int st2 = e2e_profile(dir, argv, env, out2, err);
	cr_expect_eq(st1, st2);
	char *a = e2e_read_file(out1), *b = e2e_read_file(out2), *e = e2e_read_file(err);
	cr_assert(a && b && e);
	cr_expect_str_eq(a, b);
	cr_expect_eq(e2e_count_lines(e), 1, "one warning: %s", e);
	cr_expect_not_null(strstr(e, "size limit"), "%s", e);
	char traces[2][PATH_MAX];
	cr_assert_eq(list_traces(dir, traces, 2), 1);
	struct stat sb;
	cr_assert_eq(stat(traces[0], &sb), 0);
	cr_expect_leq(sb.st_size, 4L << 20);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect(json_is_true(json_object_get(p, "complete")));
	cr_expect_eq(e2e_int(p, "exit.code"), 0);
	long recorded = e2e_int(p, "heap.alloc_calls") + e2e_int(p, "heap.free_calls");
	long lost = e2e_int(p, "lost_records");
	cr_expect_gt(lost, 0);
	/* 4 threads x 160000 malloc/free pairs (12 bytes a pair's record, short records: more
	 * than 4 MiB), and a few more: recorded or counted as lost. */
	cr_expect_geq(recorded + lost, 4 * 160000 * 2, "recorded %ld + lost %ld", recorded, lost);
	json_decref(doc);
	free(a);
	free(b);
	free(e);
}

/* A trace that fills still ends with the program's exit: at sizes where the runs the
 * program claimed used the trace to its last unit, its EXIT found no room (the report said
 * the process never ended), until the last units were kept for it. */
Test(writer, a_full_trace_still_records_the_exit)
{
	/* Whether the runs end on the last unit depends on when CPU samples claimed theirs:
	 * sizes that runs of 64 KiB fill exactly, three times each. */
	static const char *const sizes[] = { "1088K", "2112K", "4160K", "1088K", "2112K",
					      "4160K", "1088K", "2112K", "4160K" };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const char *dir = e2e_tmpdir();
		char env0[64];
		snprintf(env0, sizeof(env0), "PROF_MAX_SIZE=%s", sizes[i]);
		const char *env[] = { env0, NULL };
		const char *argv[] = { e2e_prog("fsize_limit"), "0", "run", "2000000", NULL };
		cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		json_t *p = e2e_process(doc, 0);
		cr_expect_gt(e2e_int(p, "lost_records"), 0, "%s: not full", sizes[i]);
		cr_expect(json_is_true(json_object_get(p, "complete")), "%s: incomplete", sizes[i]);
		cr_expect_eq(e2e_int(p, "exit.code"), 0, "%s: no exit", sizes[i]);
		json_decref(doc);
	}
}

/* Runs argv under libprof into dir, its stdout (and stderr, where err is given) into files
 * there; its stdout must be `want`. Returns the report's JSON, which the caller frees. */
static json_t *run_for_output(const char *dir, const char *const argv[], const char *want,
			      const char *err)
{
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, err), 0, "%s failed", argv[0]);
	e2e_expect_file(out, want);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	return doc;
}

/* A program that takes the trace's descriptor number for a file of its own (dup2 onto it)
 * keeps that file as it wrote it: the writer makes new runs ready by writing zeros through
 * its descriptor only while it is still the trace, and the trace still gets every event. */
Test(writer, a_stolen_descriptor_is_never_written)
{
	const char *dir = e2e_tmpdir();
	char data[PATH_MAX];
	snprintf(data, sizeof(data), "%s/data", dir);
	const char *argv[] = { e2e_prog("fd_steal"), data, "300000", NULL };
	json_t *doc = run_for_output(dir, argv, "stolen\nintact\n", NULL);
	cr_expect_geq(e2e_int(e2e_process(doc, 0), "heap.alloc_calls"), 300000);
	json_decref(doc);
}

/* libprof's messages (here: the trace reached PROF_MAX_SIZE, and PROF_DEBUG's at exit) go to
 * the stderr the program started with, never into a file of the program's that took
 * descriptor 2 after it closed stderr: that file holds what the program wrote, and nothing
 * else. With stderr kept, the same run does say it (so the run above had something to say). */
Test(writer, messages_never_go_to_a_file_that_took_descriptor_2)
{
	const char *env[] = { "PROF_MAX_SIZE=256K", "PROF_DEBUG=1", NULL };
	const char *dir = e2e_tmpdir();
	char data[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);

	const char *reuse[] = { e2e_prog("stderr_reuse"), "reuse", data, "200000", NULL };
	cr_assert_eq(e2e_profile(dir, reuse, env, out, err), 0);
	e2e_expect_file(out, "fd 2\ndone\n");
	e2e_expect_file(data, "program data\n");

	const char *keep[] = { e2e_prog("stderr_reuse"), "keep", data, "200000", NULL };
	cr_assert_eq(e2e_profile(dir, keep, env, out, err), 0);
	e2e_expect_file(data, "program data\n");
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "size limit"), "%s", text);
	free(text);
}

/* A file size limit (ulimit -f) below the trace's size: the program runs to its end as it
 * does unprofiled (the trace stops growing at the limit instead of the kernel's SIGXFSZ
 * killing the program), whether the limit comes down while it runs or holds from its start;
 * where it leaves no room for a trace at all, libprof says so and stands aside. */
Test(writer, a_file_size_limit_never_kills_the_program)
{
	const char *lowered[] = { e2e_prog("fsize_limit"), "262144", "now", "200000", NULL };
	json_t *doc = run_for_output(e2e_tmpdir(), lowered, "done\n", NULL);
	cr_expect_gt(e2e_int(e2e_process(doc, 0), "lost_records"), 0);
	json_decref(doc);

	const char *small[] = { e2e_prog("fsize_limit"), "131072", "exec", "200000", NULL };
	json_decref(run_for_output(e2e_tmpdir(), small, "done\n", NULL));

	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *tiny[] = { e2e_prog("fsize_limit"), "10240", "exec", "1000", NULL };
	json_decref(run_for_output(dir, tiny, "done\n", err));
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "file size limit"), "%s", text);
	free(text);
}

/* An address-space limit (ulimit -v) that the program fits in unprofiled: it fits under
 * libprof too, in either heap mode, with its allocations counted. libprof's reservations (the
 * trace's mapping was 64 GiB of address space, or half the limit when that failed; the
 * threads' stack caches 2 GiB, the lock table 33 MiB, the stack table 18 MiB, the sampled
 * mode's tallies 168 MiB) take a share of the limit instead: a block of 60% of it is still
 * granted. Under 32 MiB the trace still holds the program's events; where the limit leaves
 * no room for a trace at all (its mapping was then never made, and the first event wrote
 * through a null pointer), libprof says so and stands aside. A program that lowers its own
 * limit as it runs gets room too (its 280 MiB block under 512 MiB was refused). */
Test(writer, an_address_space_limit_leaves_the_program_its_memory)
{
	static const struct {
		const char *limit_mb, *block_mb, *env, *now;
		long block;
	} runs[] = {
		{ "512", "300", NULL, NULL, 300l << 20 },
		{ "128", "76", NULL, NULL, 76l << 20 },
		{ "32", "19", NULL, NULL, 19l << 20 },
		{ "512", "300", "PROF_HEAP_SAMPLE=512K", NULL, 300l << 20 },
		{ "128", "76", "PROF_HEAP_SAMPLE=512K", NULL, 76l << 20 },
		/* lowered by the program as it runs: the trace and stack caches shrink first */
		{ "512", "280", NULL, "now", 280l << 20 },
		{ "256", "140", NULL, "now", 140l << 20 },
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		const char *dir = e2e_tmpdir();
		char out[PATH_MAX];
		snprintf(out, sizeof(out), "%s/out.txt", dir);
		const char *argv[] = { e2e_prog("as_limit"), runs[i].limit_mb, runs[i].block_mb,
				       runs[i].now, NULL };
		const char *env[] = { runs[i].env, NULL };
		cr_assert_eq(e2e_profile(dir, argv, env, out, NULL), 0);
		e2e_expect_file(out, "ok\n");
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		long bytes = 0;  /* the image that allocated: the one it executed */
		for (size_t k = 0; e2e_process(doc, k); k++)
			bytes += e2e_int(e2e_process(doc, k), "heap.bytes_allocated");
		cr_expect_geq(bytes, runs[i].block, "%s MiB limit%s%s%s: %ld bytes", runs[i].limit_mb,
			      runs[i].env ? ", " : "", runs[i].env ? runs[i].env : "",
			      runs[i].now ? ", set as it runs" : "", bytes);
		json_decref(doc);
	}

	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	const char *tiny[] = { e2e_prog("as_limit"), "20", "12", NULL };
	json_decref(run_for_output(dir, tiny, "ok\n", err));
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "address-space limit"), "%s", text);
	free(text);
}

/* The header of the only trace in dir, and the file's size. */
static struct prof_file_header only_header(const char *dir, off_t *size)
{
	char traces[2][PATH_MAX];
	cr_assert_eq(list_traces(dir, traces, 2), 1);
	struct prof_file_header h;
	FILE *f = fopen(traces[0], "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(&h, sizeof(h), 1, f), 1);
	fclose(f);
	struct stat st;
	cr_assert_eq(stat(traces[0], &st), 0);
	*size = st.st_size;
	return h;
}

/* The data begins at the page after the header's strings: a short process's trace is a few
 * KiB (a 64 KiB header area, most of it zeros, made each subshell's trace 70 KiB, and tmpfs
 * allocated and zeroed it), and a long command line is kept whole, up to 64 KiB of it. */
Test(writer, the_data_begins_at_the_page_after_the_header)
{
	static char args[26][101];
	for (int i = 0; i < 26; i++)
		memset(args[i], 'a' + i, 100);
	int counts[3] = { 3, 400, 700 };  /* about 0, 40 and 70 KiB of arguments */
	for (int k = 0; k < 3; k++) {
		const char *argv[702];
		int n = 0;
		argv[n++] = "/bin/true";
		for (int i = 0; i < counts[k]; i++)
			argv[n++] = args[i % 26];
		argv[n] = NULL;
		const char *dir = e2e_tmpdir();
		int st = e2e_profile(dir, argv, NULL, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
		off_t size;
		struct prof_file_header h = only_header(dir, &size);
		cr_expect_eq(h.data_offset, (h.header_size + 4095) / 4096 * 4096, "data at %u, header %u",
			     h.data_offset, h.header_size);
		json_t *doc = e2e_prof_json("report", dir);
		cr_assert_not_null(doc);
		size_t kept = json_array_size(json_object_get(e2e_process(doc, 0), "argv"));
		if (k < 2) {
			cr_expect_eq(kept, (size_t)n, "arguments kept: %zu of %d", kept, n);
			cr_expect_leq(h.data_offset, k ? 48 * 1024 : 4096);
		} else {
			cr_expect(kept > 500 && kept < (size_t)n, "arguments kept: %zu of %d", kept, n);
			cr_expect_leq(h.data_offset, 64 * 1024);
		}
		if (k == 0) {
			uint64_t used = h.data_offset + h.chunks_claimed * h.chunk_size;
			cr_expect_leq(used, 16 * 1024, "a trace of /bin/true: %lu bytes", (unsigned long)used);
			cr_expect_leq((uint64_t)size, used + KEEP_TAIL, "a file of %ld bytes", (long)size);
		}
		json_decref(doc);
	}
}

/* A trace whose file space outgrew what it used by more than KEEP_TAIL is cut to its chunks
 * at exit (the file grows in steps of 256 KiB or more); a short one keeps its small tail of
 * zeros, which no reader counts (the report reads the same either way) and prof pack drops. */
Test(writer, the_file_is_cut_to_its_chunks_unless_the_tail_is_small)
{
	const char *runs[2][4] = { { "/bin/true", NULL }, { e2e_prog("short_threads"), "400", "1", NULL } };
	for (int k = 0; k < 2; k++) {
		const char *dir = e2e_tmpdir();
		int st = e2e_profile(dir, runs[k], NULL, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
		off_t size;
		struct prof_file_header h = only_header(dir, &size);
		uint64_t used = h.data_offset + h.chunks_claimed * h.chunk_size;
		cr_assert_geq((uint64_t)size, used);
		if (k == 0) {
			cr_expect_gt((uint64_t)size, used, "the tail was cut");
			cr_expect_leq((uint64_t)size, used + KEEP_TAIL);
		} else {
			cr_expect_gt(used, 64 * 1024, "%lu bytes used", (unsigned long)used);
			cr_expect_eq((uint64_t)size, used, "a tail of %lu bytes", (unsigned long)(size - used));
		}
		char traces[2][PATH_MAX], packed[PATH_MAX + 8];
		cr_assert_eq(list_traces(dir, traces, 2), 1);
		json_t *raw = e2e_prof_json("report", traces[0]);
		cr_assert_not_null(raw);
		const char *pack[] = { e2e_prof(), "pack", traces[0], NULL };
		cr_assert_eq(e2e_run(pack, NULL, NULL, NULL), 0);
		snprintf(packed, sizeof(packed), "%s.zst", traces[0]);
		json_t *z = e2e_prof_json("report", packed);
		cr_assert_not_null(z);
		json_t *a = e2e_process(raw, 0), *b = e2e_process(z, 0);
		cr_expect_eq(e2e_int(a, "heap.alloc_calls"), e2e_int(b, "heap.alloc_calls"));
		cr_expect_eq(e2e_int(a, "lost_records"), 0);
		cr_expect_eq(json_array_size(json_object_get(a, "threads")),
			     json_array_size(json_object_get(b, "threads")));
		json_decref(raw);
		json_decref(z);
	}
}

/* CPU samples never wait for the thread that extends the file (they run in a signal handler):
 * one that needed a chunk meanwhile was lost, a few times in every other run of 20,000
 * short threads sampled at 100 kHz. Claims that may wait extend the file before the last
 * units of its capacity, which stay for the samples. */
Test(writer, samples_are_not_lost_while_another_thread_extends_the_file)
{
	for (int run = 0; run < 2; run++) {
		const char *dir = e2e_tmpdir();
		const char *argv[] = { e2e_prog("short_threads"), "20000", "50", NULL };
		const char *env[] = { "PROF_CPU_HZ=100000", NULL };
		int st = e2e_profile(dir, argv, env, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
		off_t size;
		struct prof_file_header h = only_header(dir, &size);
		cr_expect_eq(h.lost_records, 0, "run %d: %lu records lost", run,
			     (unsigned long)h.lost_records);
	}
}
