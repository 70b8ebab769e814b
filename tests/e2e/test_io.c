/* End-to-end I/O tests: per-file bytes counted by libprof equal what strace sees for the same
 * deterministic run (fd I/O, stdio, dup'd descriptors, a socket pair and a pipe, loopback TCP,
 * gzip and sqlite3 from Debian); failures and EOF are recorded; errno, output and the heap
 * report are unchanged by the hooks. */
#include <criterion/criterion.h>
#include <inttypes.h>
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

TestSuite(io, .fini = teardown, .timeout = 120);

/* ---- strace ------------------------------------------------------------------------------ */

struct path_bytes {
	char path[512];
	long rd, wr;
};

struct strace_log {
	struct path_bytes v[256];
	size_t n;
};

static const char *const read_calls[] = { "read", "pread64", "readv", "preadv", "preadv2",
					  "recvfrom", "recvmsg", NULL };
static const char *const write_calls[] = { "write", "pwrite64", "writev", "pwritev",
					   "pwritev2", "sendto", "sendmsg", NULL };

static int in_list(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && !strncmp(*list, name, len))
			return 1;
	return 0;
}

static struct path_bytes *entry(struct strace_log *log, const char *path)
{
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->v[i].path, path))
			return &log->v[i];
	cr_assert_lt(log->n, 256);
	struct path_bytes *e = &log->v[log->n++];
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->rd = e->wr = 0;
	return e;
}

/* Runs argv under `strace -f -y` (stdout to out_file) and sums bytes per path. */
static void run_strace(const char *const argv[], const char *out_file, struct strace_log *log)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	char logfile[PATH_MAX];
	snprintf(logfile, sizeof(logfile), "%s/strace.log", dir);
	const char *cmd[64] = { "strace", "-f", "-qq", "-y", "-e", "signal=none", "-e",
				"trace=read,write,pread64,pwrite64,readv,writev,preadv,pwritev,"
				"preadv2,pwritev2,sendto,recvfrom,sendmsg,recvmsg",
				"-o", logfile };
	size_t n = 10;
	for (size_t i = 0; argv[i] && n < 63; i++)
		cmd[n++] = argv[i];
	cmd[n] = NULL;
	int st = e2e_run(cmd, NULL, out_file, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "strace run failed: %d", st);
	char *text = e2e_read_file(logfile);
	cr_assert_not_null(text);
	memset(log, 0, sizeof(*log));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *p = line;
		while (*p >= '0' && *p <= '9')  /* "PID  " */
			p++;
		while (*p == ' ')
			p++;
		size_t nlen = strcspn(p, "(");
		int rd = in_list(read_calls, p, nlen), wr = in_list(write_calls, p, nlen);
		if ((!rd && !wr) || p[nlen] != '(')
			continue;
		char *lt = strchr(p + nlen, '<'), *gt = lt ? strchr(lt, '>') : NULL;
		char *eq = strrchr(line, '=');
		if (!lt || !gt || !eq)
			continue;
		long res = strtol(eq + 1, NULL, 10);
		if (res <= 0)
			continue;
		*gt = '\0';
		char *path = lt + 1;
		char *del = strstr(path, " (deleted)");
		if (del)
			*del = '\0';
		struct path_bytes *e = entry(log, path);
		if (rd)
			e->rd += res;
		else
			e->wr += res;
	}
	free(text);
}

/* ---- libprof ------------------------------------------------------------------------------ */

static json_t *profile_io(const char *const argv[], const char *out_file, json_t **doc)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	int st = e2e_profile(dir, argv, NULL, out_file, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "profiled run failed: %d", st);
	*doc = e2e_prof_json("report", dir);
	cr_assert_not_null(*doc);
	json_t *p = e2e_process(*doc, 0);
	cr_assert_not_null(p);
	json_t *files = json_object_get(json_object_get(p, "io"), "files");
	cr_assert(json_is_array(files), "no io.files in the report");
	return files;
}

static void expect_same_bytes(json_t *files, const struct strace_log *log, const char *path)
{
	long rd = 0, wr = 0;
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->v[i].path, path)) {
			rd = log->v[i].rd;
			wr = log->v[i].wr;
		}
	cr_expect(rd + wr > 0, "strace saw no bytes on %s", path);
	json_t *f = e2e_file_row(files, path);
	cr_assert_not_null(f, "no I/O row for %s", path);
	cr_expect_eq(e2e_int(f, "read_bytes"), rd, "%s: read %ld bytes, strace %ld", path,
		     e2e_int(f, "read_bytes"), rd);
	cr_expect_eq(e2e_int(f, "write_bytes"), wr, "%s: wrote %ld bytes, strace %ld", path,
		     e2e_int(f, "write_bytes"), wr);
}

/* Sums of the rows whose path starts with prefix (ours: kind). */
static void strace_sum(const struct strace_log *log, const char *prefix, long *rd, long *wr)
{
	*rd = *wr = 0;
	for (size_t i = 0; i < log->n; i++)
		if (!strncmp(log->v[i].path, prefix, strlen(prefix))) {
			*rd += log->v[i].rd;
			*wr += log->v[i].wr;
		}
}

static void prof_sum(json_t *files, const char *kind, long *rd, long *wr, int *rows)
{
	size_t i;
	json_t *f;
	*rd = *wr = 0;
	*rows = 0;
	json_array_foreach(files, i, f) {
		const char *k = json_string_value(json_object_get(f, "kind"));
		if (!k || strcmp(k, kind))
			continue;
		*rd += e2e_int(f, "read_bytes");
		*wr += e2e_int(f, "write_bytes");
		(*rows)++;
	}
}

/* Runs io_ops MODE in a fresh directory under strace and under libprof (stdout to the same
 * file both times); the directory is returned in dir. */
static json_t *both_runs(const char *mode, struct strace_log *log, char *dir, size_t dirlen,
			 char *out, size_t outlen, json_t **doc)
{
	const char *d = e2e_tmpdir();
	cr_assert_not_null(d);
	snprintf(dir, dirlen, "%s", d);
	snprintf(out, outlen, "%s/stdout.txt", d);
	const char *argv[] = { e2e_prog("io_ops"), mode, dir, NULL };
	run_strace(argv, out, log);
	return profile_io(argv, out, doc);
}

/* Runs io_ops MODE (both_runs()), checks that its stdout is want_out (NULL: not looked at)
 * and that DIR/name moved the bytes strace saw; returns name's row (*doc: to free). */
static json_t *file_matches_strace(const char *mode, const char *name, const char *want_out,
				   json_t **doc)
{
	struct strace_log log;
	char dir[256], out[PATH_MAX], path[PATH_MAX];
	json_t *files = both_runs(mode, &log, dir, sizeof(dir), out, sizeof(out), doc);
	if (want_out)
		e2e_expect_file(out, want_out);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	expect_same_bytes(files, &log, path);
	return e2e_file_row(files, path);
}

Test(io, plain_fd_bytes_match_strace)
{
	json_t *doc;
	json_t *f = file_matches_strace("plain", "plain.dat", NULL, &doc);
	cr_expect_eq(e2e_int(f, "opens"), 2);
	cr_expect_eq(e2e_int(f, "writes"), 102);
	cr_expect_eq(e2e_int(f, "closes"), 2);
	cr_expect_geq(e2e_int(f, "eof_reads"), 3, "EOF reads are recorded");
	cr_expect_eq(e2e_int(f, "calls.fsync"), 1);
	cr_expect_eq(e2e_int(f, "calls.lseek"), 1);
	cr_expect_gt(e2e_int(f, "time_ns"), 0);
	cr_expect_leq(e2e_int(f, "p50_ns"), e2e_int(f, "p95_ns"));
	cr_expect_leq(e2e_int(f, "p95_ns"), e2e_int(f, "p99_ns"));
	cr_expect_leq(e2e_int(f, "p99_ns"), e2e_int(f, "max_ns"));
	json_decref(doc);
}

/* A read left by a signal handler's siglongjmp() (an alarm timeout) never returns to its
 * hook: the thread's later I/O is still recorded, byte for byte as strace sees it. */
Test(io, io_after_a_read_left_by_siglongjmp_is_recorded)
{
	json_t *doc;
	json_t *f = file_matches_strace("timeout", "timeout.dat", "timeouts 3, read back 32768\n",
					&doc);
	cr_expect_eq(e2e_int(f, "opens"), 1);
	cr_expect_eq(e2e_int(f, "closes"), 1);
	json_decref(doc);
}

/* A stream without a descriptor (fopencookie) whose write function writes to a file: the
 * file's bytes are counted as strace sees them (its writes inside fwrite and fclose are the
 * program's I/O, not libc's copy of the stdio call's), and errno is left as it was. */
Test(io, cookie_stream_writes_are_counted_once)
{
	json_t *doc;
	file_matches_strace("cookie", "cookie.dat", "errno after fclose 4321\nmemstream 12 bytes\n",
			    &doc);
	json_decref(doc);
}

/* The first open of plain.dat is at the MARK-OPEN-PLAIN line of write_plain(). */
Test(io, open_stack_points_to_function_and_line)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("io_ops"), "plain", dir, NULL };
	json_t *doc;
	json_t *files = profile_io(argv, NULL, &doc);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/plain.dat", dir);
	json_t *f = e2e_file_row(files, path);
	cr_assert_not_null(f);
	json_t *frame = json_array_get(json_object_get(f, "open_stack"), 0);
	cr_assert_not_null(frame, "no open stack");
	cr_expect_str_eq(json_string_value(json_object_get(frame, "function")), "write_plain");
	cr_expect_eq(e2e_int(frame, "line"), e2e_marker_line("io_ops.c", "MARK-OPEN-PLAIN"));
	/* The trace file itself is never reported. */
	size_t i;
	json_t *row;
	json_array_foreach(files, i, row) {
		const char *p = json_string_value(json_object_get(row, "path"));
		cr_expect_null(strstr(p, ".trace"), "our trace file is reported: %s", p);
	}
	json_decref(doc);
}

Test(io, stdio_bytes_match_strace)
{
	struct strace_log log;
	char dir[256], out[PATH_MAX], path[PATH_MAX];
	json_t *doc;
	json_t *files = both_runs("stdio", &log, dir, sizeof(dir), out, sizeof(out), &doc);
	snprintf(path, sizeof(path), "%s/stdio.txt", dir);
	expect_same_bytes(files, &log, path);
	expect_same_bytes(files, &log, out);  /* printf and puts on stdout */
	json_t *f = e2e_file_row(files, path);
	cr_expect_eq(e2e_int(f, "opens"), 2);
	cr_expect_eq(e2e_int(f, "calls.fopen"), 2);
	cr_expect_eq(e2e_int(f, "calls.fclose"), 2);
	cr_expect_eq(e2e_int(f, "calls.fprintf"), 500);
	cr_expect_eq(e2e_int(f, "calls.fgets"), 100);
	cr_expect_eq(e2e_int(f, "calls.fgetc"), 10);
	cr_expect_eq(e2e_int(f, "calls.getline"), 50);
	json_decref(doc);
}

Test(io, dup_descriptors_bytes_match_strace)
{
	struct strace_log log;
	char dir[256], out[PATH_MAX], path[PATH_MAX];
	json_t *doc;
	json_t *files = both_runs("dup", &log, dir, sizeof(dir), out, sizeof(out), &doc);
	snprintf(path, sizeof(path), "%s/dup.dat", dir);
	expect_same_bytes(files, &log, path);
	json_t *f = e2e_file_row(files, path);
	cr_expect_eq(e2e_int(f, "write_bytes"), 111 + 222 + 333 + 444);
	cr_expect_eq(e2e_int(f, "calls.dup"), 4);
	cr_expect_eq(e2e_int(f, "closes"), 5);
	snprintf(path, sizeof(path), "%s/other.dat", dir);
	expect_same_bytes(files, &log, path);
	json_decref(doc);
}

Test(io, socketpair_and_pipe_bytes_match_strace)
{
	struct strace_log log;
	char dir[256], out[PATH_MAX];
	json_t *doc;
	json_t *files = both_runs("socketpair", &log, dir, sizeof(dir), out, sizeof(out), &doc);
	long srd, swr, prd, pwr;
	int rows;
	strace_sum(&log, "socket:[", &srd, &swr);
	prof_sum(files, "socket", &prd, &pwr, &rows);
	cr_expect_eq(rows, 2, "one row per end of the socket pair");
	cr_expect_eq(prd, srd, "socket reads: %ld, strace %ld", prd, srd);
	cr_expect_eq(pwr, swr, "socket writes: %ld, strace %ld", pwr, swr);
	cr_expect_eq(srd, 7000 + 300 + 123);
	strace_sum(&log, "pipe:[", &srd, &swr);
	prof_sum(files, "pipe", &prd, &pwr, &rows);
	cr_expect_eq(rows, 1, "both ends of a pipe are one row");
	cr_expect_eq(prd, srd);
	cr_expect_eq(pwr, swr);
	cr_expect_eq(srd, 5000);
	json_decref(doc);
}

Test(io, loopback_tcp_bytes_match_strace)
{
	struct strace_log log;
	char dir[256], out[PATH_MAX];
	json_t *doc;
	json_t *files = both_runs("tcp", &log, dir, sizeof(dir), out, sizeof(out), &doc);
	long srd, swr, prd, pwr;
	int rows;
	strace_sum(&log, "socket:[", &srd, &swr);
	prof_sum(files, "tcp", &prd, &pwr, &rows);
	cr_expect_eq(prd, srd, "tcp reads: %ld, strace %ld", prd, srd);
	cr_expect_eq(pwr, swr, "tcp writes: %ld, strace %ld", pwr, swr);
	cr_expect_eq(swr, 23000);
	int client = 0, server = 0, listening = 0;
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (strncmp(p, "tcp 127.0.0.1:", 14))
			continue;
		if (strstr(p, "(accepted)"))
			server++;
		else if (strstr(p, "(listening)"))
			listening++;
		else
			client++;
	}
	cr_expect_eq(client, 1, "the client side is named after the address it connected to");
	cr_expect_eq(server, 1, "the accepted side is named after the local address");
	cr_expect_eq(listening, 1, "the listening socket is named after its address");
	json_decref(doc);
}

/* A real program from Debian: gzip reads its input with read(2), writes stdout. */
Test(io, gzip_bytes_match_strace)
{
	const char *dir = e2e_tmpdir();
	char in[PATH_MAX], out[PATH_MAX];
	snprintf(in, sizeof(in), "%s/input.txt", dir);
	snprintf(out, sizeof(out), "%s/input.txt.gz", dir);
	FILE *f = fopen(in, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 40000; i++)
		fprintf(f, "%d line of text for gzip %d\n", i, i * 7919 % 1000);
	fclose(f);
	const char *argv[] = { "gzip", "-c", in, NULL };
	struct strace_log log;
	run_strace(argv, out, &log);
	json_t *doc;
	json_t *files = profile_io(argv, out, &doc);
	expect_same_bytes(files, &log, in);
	expect_same_bytes(files, &log, out);
	json_decref(doc);
}

/* sqlite3 (if installed): pread64/pwrite64 on the database, a journal created and deleted. */
Test(io, sqlite3_bytes_match_strace)
{
	if (access("/usr/bin/sqlite3", X_OK) != 0) {
		cr_skip_test("sqlite3 not installed");
		return;
	}
	const char *dir = e2e_tmpdir();
	char db[PATH_MAX], sdb[PATH_MAX];
	snprintf(db, sizeof(db), "%s/p.db", dir);
	snprintf(sdb, sizeof(sdb), "%s/s.db", dir);
	const char *sql = "create table t(a, b); insert into t values (1, 'one'), (2, 'two');"
			  "begin; insert into t select a + 2, b from t; commit; select count(*) from t;";
	/* Each run creates its own database from nothing: same work, different paths. */
	const char *sargv[] = { "sqlite3", sdb, sql, NULL };
	struct strace_log log;
	run_strace(sargv, NULL, &log);
	const char *argv[] = { "sqlite3", db, sql, NULL };
	json_t *doc;
	json_t *files = profile_io(argv, NULL, &doc);
	const char *suffixes[] = { "", "-journal" };
	for (int i = 0; i < 2; i++) {
		char sp[PATH_MAX], pp[PATH_MAX];
		snprintf(sp, sizeof(sp), "%s%s", sdb, suffixes[i]);
		snprintf(pp, sizeof(pp), "%s%s", db, suffixes[i]);
		struct path_bytes *e = entry(&log, sp);
		json_t *row = e2e_file_row(files, pp);
		cr_assert_not_null(row, "no row for %s", pp);
		cr_expect_eq(e2e_int(row, "read_bytes"), e->rd, "%s: read %ld, strace %ld", pp,
			     e2e_int(row, "read_bytes"), e->rd);
		cr_expect_eq(e2e_int(row, "write_bytes"), e->wr, "%s: wrote %ld, strace %ld", pp,
			     e2e_int(row, "write_bytes"), e->wr);
		cr_expect_gt(e->rd + e->wr, 0);
	}
	json_decref(doc);
}

/* Failing calls and EOF reads are rows with their result. */
Test(io, failures_and_eof_are_recorded)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("io_ops"), "errors", dir, NULL };
	json_t *doc;
	json_t *files = profile_io(argv, NULL, &doc);
	json_t *f = e2e_file_row(files, "(not open: fd -1)");
	cr_assert_not_null(f, "read(-1) not recorded");
	cr_expect_eq(e2e_int(f, "errors"), 1);
	cr_expect_eq(e2e_int(f, "reads"), 1);
	f = e2e_file_row(files, "(not open: fd 999)");
	cr_assert_not_null(f, "write(999) not recorded");
	cr_expect_eq(e2e_int(f, "writes"), 1);
	cr_expect_eq(e2e_int(f, "write_bytes"), 0);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/missing/none.txt", dir);
	f = e2e_file_row(files, path);
	cr_assert_not_null(f, "failed opens not recorded under the path asked for");
	cr_expect_eq(e2e_int(f, "errors"), 2);
	cr_expect_eq(e2e_int(f, "opens"), 0);
	cr_expect_eq(e2e_int(f, "calls.open"), 1);
	cr_expect_eq(e2e_int(f, "calls.fopen"), 1);
	snprintf(path, sizeof(path), "%s/empty.txt", dir);
	f = e2e_file_row(files, path);
	cr_assert_not_null(f);
	cr_expect_eq(e2e_int(f, "eof_reads"), 1);
	cr_expect_eq(e2e_int(f, "reads"), 1);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "io.totals.errors"), 6);
	/* The slowest calls carry the error's name. */
	size_t i;
	json_t *s;
	int ebadf = 0;
	json_array_foreach(json_object_get(json_object_get(p, "io"), "slowest"), i, s) {
		const char *e = json_string_value(json_object_get(s, "error"));
		if (e && !strcmp(e, "EBADF"))
			ebadf++;
	}
	cr_expect_geq(ebadf, 3);
	json_decref(doc);
}

/* errno after every call, and the program's output, are those of an unprofiled run. */
Test(io, errno_and_output_unchanged)
{
	const char *dir = e2e_tmpdir();
	char plain[PATH_MAX], prof[PATH_MAX];
	snprintf(plain, sizeof(plain), "%s/plain.out", dir);
	snprintf(prof, sizeof(prof), "%s/prof.out", dir);
	const char *argv[] = { e2e_prog("io_ops"), "errors", dir, NULL };
	int st1 = e2e_run(argv, NULL, plain, NULL);
	int st2 = e2e_profile(dir, argv, NULL, prof, NULL);
	cr_expect_eq(st1, st2);
	char *a = e2e_read_file(plain), *b = e2e_read_file(prof);
	cr_assert(a && b);
	cr_expect_str_eq(b, a);
	cr_expect_neq(strstr(a, "errno 9"), NULL);
	free(a);
	free(b);
}

/* stdio allocates (FILE, buffers, getline): the heap report still matches valgrind's. */
Test(io, heap_report_unchanged_by_io_hooks)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("io_ops"), "stdio", dir, NULL };
	struct vg_summary vg;
	cr_assert_eq(e2e_valgrind(argv, &vg), 0, "valgrind did not run");
	json_t *doc;
	profile_io(argv, NULL, &doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), vg.allocs, "allocs: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.alloc_calls"), vg.allocs);
	cr_expect_eq(e2e_int(p, "heap.free_calls"), vg.frees, "frees: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.free_calls"), vg.frees);
	cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), vg.bytes, "bytes: prof %ld, valgrind %ld",
		     e2e_int(p, "heap.bytes_allocated"), vg.bytes);
	cr_expect_eq(e2e_int(p, "heap.leaked_bytes"), vg.in_use_bytes);
	json_decref(doc);
}

static char *flame_folded(const char *dir, const char *by, int *status)
{
	const char *d = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/flame.txt", d);
	const char *argv[] = { e2e_prof(), "flame", "--kind", "io", "--folded", "--by", by, dir, NULL };
	*status = e2e_run(argv, NULL, out, NULL);
	return e2e_read_file(out);
}

Test(io, flame_weights_stacks_by_time_or_bytes)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("io_ops"), "plain", dir, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	int st;
	char *t = flame_folded(dir, "time", &st);
	cr_assert_eq(st, 0);
	cr_expect_neq(strstr(t, "write_plain"), NULL, "no write_plain stack in:\n%s", t);
	free(t);
	char *b = flame_folded(dir, "bytes", &st);
	cr_assert_eq(st, 0);
	/* 10,000 bytes in write_all's 100 writes, 500 + 1000 more from write_plain itself. */
	long total = 0;
	for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		if (sp && strstr(line, "write_plain"))
			total += strtol(sp + 1, NULL, 10);
	}
	cr_expect_gt(total, 11500, "bytes under write_plain: %ld", total);
	free(b);
	char *c = flame_folded(dir, "calls", &st);
	cr_expect_neq(st, 0, "--by calls is not an io weight");
	free(c);
}

/* Stdio calls that only fill or empty the stream's buffer are counted in batches (IO_BATCH),
 * not timed one by one: the per-file calls and bytes stay exact (two threads writing; reads
 * back by fgetc, fread, fgets and getline), the trace holds a record per many calls, and a
 * line-buffered stream, which reaches the system at every newline, keeps a timed record per
 * call. */
Test(io, buffered_stdio_calls_are_counted_in_batches)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX], path[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *argv[] = { e2e_prog("stdio_batch"), dir, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	long calls[2], bytes[2], lines, line_bytes, reads[2], read_bytes[2];
	cr_assert_eq(sscanf(text, "full0 %ld %ld\nfull1 %ld %ld\nline %ld %ld\nread %ld %ld\n"
			    "lines %ld %ld", &calls[0], &bytes[0], &calls[1], &bytes[1], &lines,
			    &line_bytes, &reads[0], &read_bytes[0], &reads[1], &read_bytes[1]),
		     10, "%s", text);
	free(text);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *files = json_object_get(json_object_get(e2e_process(doc, 0), "io"), "files");
	long all = 0;
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/full%d.txt", dir, k);
		json_t *f = e2e_file_row(files, path);
		cr_assert_not_null(f, "no %s in the report", path);
		cr_expect_eq(e2e_int(f, "writes"), calls[k], "%s: writes", path);
		cr_expect_eq(e2e_int(f, "write_bytes"), bytes[k], "%s: bytes written", path);
		cr_expect_gt(e2e_int(f, "buffered_calls"), calls[k] * 3 / 4, "%s: batched", path);
		cr_expect_eq(e2e_int(f, "reads"), reads[k], "%s: reads", path);
		cr_expect_eq(e2e_int(f, "read_bytes"), read_bytes[k], "%s: bytes read", path);
		all += calls[k] + reads[k];
	}
	snprintf(path, sizeof(path), "%s/line.txt", dir);
	json_t *f = e2e_file_row(files, path);
	cr_assert_not_null(f);
	cr_expect_eq(e2e_int(f, "writes"), lines);
	cr_expect_eq(e2e_int(f, "write_bytes"), line_bytes);
	cr_expect_eq(e2e_int(f, "buffered_calls"), 0, "a line-buffered stream's calls are timed");
	json_decref(doc);

	/* The trace: far fewer I/O records than calls. */
	char dump[PATH_MAX], trace_dir[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", e2e_tmpdir());
	snprintf(trace_dir, sizeof(trace_dir), "%s", dir);
	const char *dargv[] = { e2e_prof(), "dump", trace_dir, NULL };
	cr_assert_eq(e2e_run(dargv, NULL, dump, NULL), 0);
	char *d = e2e_read_file(dump);
	cr_assert_not_null(d);
	long io_records = 0, batches = 0;
	for (const char *p = d; (p = strstr(p, " IO_")); p++) {
		io_records++;
		batches += !strncmp(p, " IO_BATCH", 9);
	}
	free(d);
	cr_expect_gt(batches, 0);
	cr_expect_lt(io_records, all / 10, "%ld I/O records for %ld calls", io_records, all);
}

/* Every call gets its own stack, however fast: an I/O helper reached by two call paths at the
 * same depth (one call site, one stack pointer, in turns of 300 and 500 calls) splits its
 * bytes between them exactly as the program counted them. */
static void two_paths_keep_their_stacks(const char *mode)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *argv[] = { e2e_prog("io_paths"), dir, mode, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	long alpha, beta;
	cr_assert_eq(sscanf(text, "alpha %ld\nbeta %ld", &alpha, &beta), 2, "%s", text);
	free(text);
	const char *args[] = { "flame", "--kind", "io", "--by", "bytes", "--folded", dir, NULL };
	char *folded = e2e_prof_text(dir, args);
	cr_assert_not_null(folded);
	cr_expect_eq((long)e2e_folded_weight(folded, "by_alpha;read_some", NULL), alpha, "%s", folded);
	cr_expect_eq((long)e2e_folded_weight(folded, "by_beta;read_some", NULL), beta, "%s", folded);
	free(folded);
}

Test(io, two_paths_to_one_call_site_keep_their_stacks)
{
	two_paths_keep_their_stacks(NULL);
}

/* The same for buffered stdio calls, which are counted in batches by call site and frame:
 * a batch holds the calls of one stack only, also when the paths take turns call by call. */
Test(io, two_paths_to_one_buffered_call_keep_their_stacks)
{
	two_paths_keep_their_stacks("stdio");
}

/* The IO_NAME records of the traces in dir whose line holds both op and name. */
static size_t io_names(const char *dir, const char *op, const char *name)
{
	const char *args[] = { "dump", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		n += strstr(line, " IO_NAME ") && strstr(line, op) && strstr(line, name);
	free(text);
	return n;
}

/* A fork child names the descriptors it inherited as they are at the fork: a number closed
 * and taken again by an open no hook sees (opendir), a dup2, an F_DUPFD and a pipe's end
 * moved by dup; not one closed by a system call no hook sees. */
Test(io, a_fork_child_names_its_descriptors_as_they_are)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("io_ops"), "forked", dir, NULL };
	char out[PATH_MAX], path[PATH_MAX];
	snprintf(out, sizeof(out), "%s/stdout.txt", dir);
	int st = e2e_profile(dir, argv, NULL, out, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "io_ops forked failed: %d", st);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *parent = e2e_process(doc, 0);
	json_t *child = e2e_process_where(doc, "ppid", e2e_int(parent, "pid"));
	cr_assert_not_null(child, "no report of the fork child");
	json_t *files = json_object_get(json_object_get(child, "io"), "files");
	snprintf(path, sizeof(path), "%s/second.dat", dir);
	json_t *f = e2e_file_row(files, path);
	cr_assert_not_null(f, "the child's writes to second.dat");
	cr_expect_eq(e2e_int(f, "write_bytes"), 100 + 200 + 300);
	snprintf(path, sizeof(path), "%s/first.dat", dir);
	f = e2e_file_row(files, path);
	cr_expect_null(f, "first.dat: closed before the fork");
	f = e2e_file_row(files, dir);
	cr_assert_not_null(f, "the child's lseek of the directory opendir opened");
	cr_expect_eq(e2e_int(f, "calls.lseek"), 1);
	long rd, wr;
	int rows;
	prof_sum(files, "pipe", &rd, &wr, &rows);
	cr_expect_eq(wr, 7, "the pipe's end moved by dup");
	json_decref(doc);
	/* Named in the child as inherited: second.dat at its three numbers; third.dat (closed
	 * where the parent's hooks did not see it) not at all, first.dat not either. */
	cr_expect_eq(io_names(dir, " inherited ", "/second.dat\""), 3);
	cr_expect_eq(io_names(dir, " inherited ", "/third.dat\""), 0);
	cr_expect_eq(io_names(dir, " inherited ", "/first.dat\""), 0);
	cr_expect_eq(io_names(dir, " open ", "/third.dat\""), 1, "the parent's open of third.dat");
}

/* Most fd calls are 16-byte short IO_CALL records (shared/prof_short.h): a run of calls on one
 * descriptor, after its first; calls that alternate between two descriptors, or come more
 * than 8.4 ms after the one before, are ordinary ones. Read back, both kinds give the counts,
 * bytes and failures the program made (tests/progs/io_short.c). */
Test(io, short_and_ordinary_io_calls_give_the_programs_counts)
{
	const char *dir = e2e_tmpdir();  /* the program's files */
	const char *argv[] = { e2e_prog("io_short"), dir, NULL };
	json_t *doc;
	const char *traces = e2e_tmpdir();
	cr_assert_not_null(traces);
	int st = e2e_profile(traces, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "profiled run failed: %d", st);
	doc = e2e_prof_json("report", traces);
	cr_assert_not_null(doc);
	json_t *files = json_object_get(json_object_get(e2e_process(doc, 0), "io"), "files");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/a.dat", dir);
	json_t *f = e2e_file_row(files, path);
	cr_assert_not_null(f, "no row for %s", path);
	cr_expect_eq(e2e_int(f, "writes"), 302);
	cr_expect_eq(e2e_int(f, "write_bytes"), 200 * 1000 + 2 + 100 * 10);
	cr_expect_eq(e2e_int(f, "calls.pwrite"), 100);
	cr_expect_eq(e2e_int(f, "reads"), 392);  /* 391 with data, 1 at the end */
	cr_expect_eq(e2e_int(f, "read_bytes"), 200 * 1000 + 2);
	cr_expect_eq(e2e_int(f, "eof_reads"), 1);
	cr_expect_eq(e2e_int(f, "errors"), 0);
	snprintf(path, sizeof(path), "%s/b.dat", dir);
	f = e2e_file_row(files, path);
	cr_assert_not_null(f, "no row for %s", path);
	cr_expect_eq(e2e_int(f, "writes"), 100);
	cr_expect_eq(e2e_int(f, "write_bytes"), 700);
	cr_expect_eq(e2e_int(f, "reads"), 5);
	cr_expect_eq(e2e_int(f, "errors"), 5);
	json_decref(doc);

	/* The records: per op, short and ordinary; and the 1-byte writes around the pause. */
	char cmd[2048], line[512];
	snprintf(cmd, sizeof(cmd),
		 "%s dump %s | awk '$5 == \"IO_CALL\" { k = $6 (/\\[short/ ? \" short\" : \" ordinary\");"
		 " n[k]++ } $5 == \"IO_CALL\" && $6 == \"write\" && / result=1 / {"
		 " print \"pause\", (/\\[short/ ? \"short\" : \"ordinary\") }"
		 " END { for (k in n) print k, n[k] }'",
		 e2e_prof(), traces);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	long read_short = 0, pwrite_ordinary = 0, pwrite_short = 0;
	char pause[2][16] = { "", "" };
	int pauses = 0;
	while (fgets(line, sizeof(line), p)) {
		char op[32], kind[16];
		long n;
		if (sscanf(line, "pause %15s", kind) == 1 && pauses < 2)
			snprintf(pause[pauses++], sizeof(pause[0]), "%s", kind);
		else if (sscanf(line, "%31s %15s %ld", op, kind, &n) == 3) {
			int sh = !strcmp(kind, "short");
			if (!strcmp(op, "read") && sh)
				read_short = n;
			else if (!strcmp(op, "pwrite"))
				*(sh ? &pwrite_short : &pwrite_ordinary) = n;
		}
	}
	cr_expect_eq(pclose(p), 0);
	cr_expect_geq(read_short, 390, "%ld of a's 392 reads short", read_short);
	cr_expect_geq(pwrite_ordinary, 99, "alternating calls: %ld pwrites ordinary, %ld short",
		      pwrite_ordinary, pwrite_short);
	cr_expect_eq(pauses, 2);
	cr_expect_str_eq(pause[0], "short", "the first 1-byte write follows a's run");
	cr_expect_str_eq(pause[1], "ordinary", "the write 20 ms later");
}

/* close_range() and closefrom() close descriptors as close() does: each named one gets a
 * close, and its number, taken again by an eventfd (which no hook names), is not the closed
 * file's: the eventfd's bytes are its own row's (tests/progs/io_close_range.c). A range only
 * marked close-on-exec stays open. */
Test(io, close_range_and_closefrom_close_what_they_close)
{
	const char *dir = e2e_tmpdir();  /* the program's files */
	const char *argv[] = { e2e_prog("io_close_range"), dir, NULL };
	const char *traces = e2e_tmpdir();
	cr_assert_not_null(traces);
	int st = e2e_profile(traces, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "profiled run failed: %d", st);
	json_t *doc = e2e_prof_json("report", traces);
	cr_assert_not_null(doc);
	json_t *files = json_object_get(json_object_get(e2e_process(doc, 0), "io"), "files");
	static const struct { const char *name; long writes, bytes; } want[] = {
		{ "a.txt", 1, 1 }, { "b.txt", 1, 2 }, { "c.txt", 1, 3 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, want[i].name);
		json_t *f = e2e_file_row(files, path);
		cr_assert_not_null(f, "no row for %s", path);
		cr_expect_eq(e2e_int(f, "closes"), 1, "%s", want[i].name);
		cr_expect_eq(e2e_int(f, "writes"), want[i].writes, "%s", want[i].name);
		cr_expect_eq(e2e_int(f, "write_bytes"), want[i].bytes, "%s", want[i].name);
		cr_expect_eq(e2e_int(f, "reads"), 0, "%s", want[i].name);
	}
	json_t *e = e2e_file_row(files, "anon_inode:[eventfd]");
	cr_assert_not_null(e, "no row for the eventfds");
	cr_expect_eq(e2e_int(e, "write_bytes"), 16);
	cr_expect_eq(e2e_int(e, "read_bytes"), 8);
	json_decref(doc);
}
