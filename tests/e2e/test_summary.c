/* Summaries (prof summarize): merged, they give what the traces give (report --json, the
 * text report, leaks, every flame kind), for a tree of processes with CPU, lock, heap and I/O
 * data and for a job of ranks on two hosts; a directory of summaries is read as one; a
 * summary holds its processes in the order of its inputs; a damaged or foreign summary is a
 * one-line error; commands that need records say so. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static const char *scratch;

static void teardown(void)
{
	e2e_cleanup();
	scratch = NULL;
}

TestSuite(summary, .fini = teardown, .timeout = 240);

/* scratch: where prof_out() writes (e2e_tmpdir() makes at most 32 directories), one per
 * test. */
/* prof ARGS... (NULL-terminated, at most 12) with env: its stdout, malloc'd (its stderr when
 * it failed); *status set. */
static char *prof_out(const char *const env[], int *status, const char *const args[])
{
	const char *d = scratch ? scratch : (scratch = e2e_tmpdir());
	char out[PATH_MAX], err[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out", d);
	snprintf(err, sizeof(err), "%s/err", d);
	const char *argv[16] = { e2e_prof() };
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	int st = e2e_run(argv, env, out, err);
	if (status)
		*status = st;
	char *text = e2e_read_file(out);
	if (st != 0) {  /* the message, for the assertion that follows */
		free(text);
		text = e2e_read_file(err);
	}
	return text;
}

/* The traces loaded whole (no reduction to summaries inside prof): what summaries must give. */
static const char *const whole[] = { "PROF_REDUCE=0", NULL };

static void summarize(const char *out, const char *const inputs[])
{
	const char *args[12] = { "summarize", "-o", out };
	int n = 3;
	for (int i = 0; inputs[i] && n < 11; i++)
		args[n++] = inputs[i];
	int st;
	char *msg = prof_out(NULL, &st, args);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "prof summarize: %s", msg ? msg : "");
	free(msg);
	struct stat sb;
	cr_assert_eq(stat(out, &sb), 0);
}

/* The same command on the traces (whole) and on the summaries: the same bytes. */
static void expect_same(const char *const cmd[], const char *const traces[],
			const char *const sums[])
{
	const char *a[14], *b[14];
	int n = 0;
	for (; cmd[n]; n++)
		a[n] = b[n] = cmd[n];
	int na = n, nb = n;
	for (int i = 0; traces[i]; i++)
		a[na++] = traces[i];
	for (int i = 0; sums[i]; i++)
		b[nb++] = sums[i];
	a[na] = b[nb] = NULL;
	int sa, sb;
	char *x = prof_out(whole, &sa, a), *y = prof_out(NULL, &sb, b);
	cr_assert(x && y);
	cr_expect_eq(sa, sb, "%s: exit %d from traces, %d from summaries (%s)", cmd[0], sa, sb, y);
	cr_expect(!strcmp(x, y), "prof %s %s: traces and summaries differ\n--- traces:\n%.3000s\n"
		  "--- summaries:\n%.3000s", cmd[0], cmd[1] ? cmd[1] : "", x, y);
	free(x);
	free(y);
}

static void expect_all_same(const char *const traces[], const char *const sums[])
{
	static const char *const cmds[][6] = {
		{ "report", "--json", NULL },
		{ "report", NULL },
		{ "report", "--findings", NULL },
		{ "leaks", "--json", NULL },
		{ "leaks", NULL },
		{ "flame", "--kind", "cpu", "--folded", NULL },
		{ "flame", "--kind", "offcpu", "--folded", NULL },
		{ "flame", "--kind", "wall", "--folded", NULL },
		{ "flame", "--kind", "alloc", "--folded", NULL },
		{ "flame", "--kind", "leak", "--folded", NULL },
		{ "flame", "--kind", "lock", "--folded", NULL },
		{ "flame", "--kind", "io", "--folded", NULL },
		{ "flame", "--kind", "mpi", "--folded", NULL },
		{ "html", "-o", "/dev/stdout", NULL },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		expect_same(cmds[i], traces, sums);
}

/* Two runs: a process tree (fork, exec, spawn, popen) and a program with CPU samples, blocked
 * time, a contended lock, heap and a fork child; one summary each, then merged. */
Test(summary, summaries_merged_give_what_the_traces_give)
{
	const char *tree = e2e_tmpdir(), *wall = e2e_tmpdir(), *d = e2e_tmpdir();
	const char *a1[] = { e2e_prog("tree"), "spawn", NULL };
	const char *a2[] = { e2e_prog("cpu_wall"), NULL };
	const char *a3[] = { e2e_prog("io_ops"), NULL };
	cr_assert_eq(e2e_profile(tree, a1, NULL, NULL, NULL), 0);
	cr_assert_eq(e2e_profile(wall, a2, NULL, NULL, NULL), 0);
	e2e_profile(wall, a3, NULL, NULL, NULL);  /* exits 2 on purpose: I/O errors */
	char s1[PATH_MAX], s2[PATH_MAX];
	snprintf(s1, sizeof(s1), "%s/tree.sum", d);
	snprintf(s2, sizeof(s2), "%s/wall.sum", d);
	summarize(s1, (const char *const[]){ tree, NULL });
	summarize(s2, (const char *const[]){ wall, NULL });
	expect_all_same((const char *const[]){ tree, wall, NULL },
			(const char *const[]){ s1, s2, NULL });
	/* a directory of summaries is read as one */
	expect_same((const char *const[]){ "report", "--json", NULL },
		    (const char *const[]){ tree, wall, NULL }, (const char *const[]){ d, NULL });
	/* a summary of summaries is the same summary */
	char s3[PATH_MAX];
	snprintf(s3, sizeof(s3), "%s/again.sum.x", d);
	summarize(s3, (const char *const[]){ s1, s2, NULL });
	expect_same((const char *const[]){ "report", "--json", NULL },
		    (const char *const[]){ tree, wall, NULL }, (const char *const[]){ s3, NULL });
	/* a summary mixed with traces */
	expect_same((const char *const[]){ "flame", "--kind", "cpu", "--folded", NULL },
		    (const char *const[]){ tree, wall, NULL }, (const char *const[]){ tree, s2, NULL });
	/* --pid selects in summaries as in traces */
	json_t *doc = e2e_prof_json("report", s2);
	cr_assert_not_null(doc);
	cr_expect_gt(json_array_size(json_object_get(doc, "processes")), 1);
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", e2e_int(e2e_process(doc, 1), "pid"));
	json_decref(doc);
	expect_same((const char *const[]){ "report", "--json", "--pid", pid, NULL },
		    (const char *const[]){ tree, wall, NULL }, (const char *const[]){ s1, s2, NULL });
	/* and summarize --pid keeps only that process of a summary */
	char s4[PATH_MAX];
	snprintf(s4, sizeof(s4), "%s/one.sum.x", d);
	summarize(s4, (const char *const[]){ "--pid", pid, s1, s2, NULL });
	int sa, sb;
	char *x = prof_out(whole, &sa, (const char *const[]){ "report", "--json", "--pid", pid, tree,
							     wall, NULL });
	char *y = prof_out(NULL, &sb, (const char *const[]){ "report", "--json", s4, NULL });
	cr_assert(x && y && sa == 0 && sb == 0);
	cr_expect(!strcmp(x, y), "summarize --pid %s: not that process alone\n%.2000s", pid, y);
	free(x);
	free(y);
	x = prof_out(NULL, &sa, (const char *const[]){ "summarize", "-o", s4, "--exe", "no-such",
						     s1, NULL });
	cr_expect(WIFEXITED(sa) && WEXITSTATUS(sa) == 1 && x && strstr(x, "no process matches"),
		  "summarize selecting nothing: %d %s", sa, x ? x : "");
	free(x);
}

/* The trace path each process of a summary file was summarized from, in the order of the file
 * (its process sections: tag 1, then the path as u32 length and bytes), joined by newlines. */
static char *summary_paths(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	size_t cap = 1 << 12, len = 0;
	char *out = calloc(1, cap);
	unsigned char head[16];
	cr_assert(out && fread(head, 1, 16, f) == 16 && !memcmp(head, "PROFSUM\n", 8));
	for (long off = 16; fseek(f, off, SEEK_SET) == 0 && fread(head, 1, 16, f) == 16;) {
		uint32_t tag, n;
		uint64_t slen;
		memcpy(&tag, head, 4);
		memcpy(&slen, head + 8, 8);
		if (tag == 1) {
			cr_assert_eq(fread(&n, 4, 1, f), 1);
			cr_assert(n < 4096);
			while (len + n + 2 > cap)
				cr_assert_not_null(out = realloc(out, cap *= 2));
			cr_assert_eq(fread(out + len, 1, n, f), n);
			len += n;
			out[len++] = '\n';
			out[len] = '\0';
		}
		off += 16 + (long)slen;
	}
	fclose(f);
	return out;
}

/* summarize writes each process's summary as it is made, on several workers, a summary's
 * processes spread over them too: the file still has them in the order of its inputs. */
Test(summary, a_summary_keeps_the_order_of_its_inputs)
{
	const char *r1 = e2e_tmpdir(), *r2 = e2e_tmpdir(), *d = e2e_tmpdir();
	const char *a1[] = { e2e_prog("tree"), NULL };  /* fork, exec, spawn, popen: 9 traces */
	const char *a2[] = { e2e_prog("cpu_wall"), NULL };
	cr_assert_eq(e2e_profile(r1, a1, NULL, NULL, NULL), 0);
	cr_assert_eq(e2e_profile(r2, a2, NULL, NULL, NULL), 0);
	const char *const jobs[] = { "PROF_JOBS=3", NULL };
	char s[4][PATH_MAX];
	for (int i = 0; i < 4; i++)
		snprintf(s[i], sizeof(s[i]), "%s/s%d.sum", d, i);
	const char *const args[][7] = {
		{ "summarize", "-o", s[0], r1, NULL },
		{ "summarize", "-o", s[1], r2, NULL },
		{ "summarize", "-o", s[2], s[1], s[0], NULL },    /* summaries */
		{ "summarize", "-o", s[3], s[0], r2, s[0], NULL },  /* and traces */
	};
	for (int i = 0; i < 4; i++) {
		int st;
		char *msg = prof_out(jobs, &st, args[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s", s[i], msg ? msg : "");
		free(msg);
	}
	char *p[4];
	for (int i = 0; i < 4; i++)
		p[i] = summary_paths(s[i]);
	cr_expect_gt(e2e_count_lines(p[0]), 2, "%s", p[0]);
	cr_expect_gt(e2e_count_lines(p[1]), 1, "%s", p[1]);
	char want[1 << 14];
	snprintf(want, sizeof(want), "%s%s", p[1], p[0]);
	cr_expect_str_eq(p[2], want);
	snprintf(want, sizeof(want), "%s%s%s", p[0], p[1], p[0]);
	cr_expect_str_eq(p[3], want);
	for (int i = 0; i < 4; i++)
		free(p[i]);
}

/* CUDA (the fake driver, with kernels timed by events, device memory, and the real cudart
 * over it): prof kernels, report and leaks the same from the summary. */
Test(summary, cuda_from_its_summary)
{
	char drv[PATH_MAX], rt[PATH_MAX], env[PATH_MAX + 32], s[PATH_MAX];
	snprintf(drv, sizeof(drv), "%s/cuda/drv_test", e2e_build());
	snprintf(rt, sizeof(rt), "%s/cuda/rt_shared", e2e_build());
	if (access(drv, X_OK) != 0 || access(rt, X_OK) != 0)
		cr_skip_test("%s or %s not built (no CUDA toolkit?)", drv, rt);
	snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s/cuda", e2e_build());
	const char *run = e2e_tmpdir(), *d = e2e_tmpdir();
	const char *e[] = { env, "PROF_CUDA_TIMING=events", NULL };
	const char *a1[] = { drv, "gpa", "4", NULL }, *a2[] = { rt, NULL };
	e2e_profile(run, a1, e, NULL, NULL);
	e2e_profile(run, a2, e, NULL, NULL);
	snprintf(s, sizeof(s), "%s/cuda.sum", d);
	summarize(s, (const char *const[]){ run, NULL });
	expect_all_same((const char *const[]){ run, NULL }, (const char *const[]){ s, NULL });
	static const char *const cmds[][6] = {
		{ "kernels", NULL }, { "kernels", "--json", NULL }, { "kernels", "--csv", NULL },
		{ "flame", "--kind", "cuda", "--folded", NULL },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		expect_same(cmds[i], (const char *const[]){ run, NULL },
			    (const char *const[]){ s, NULL });
	json_t *doc = e2e_prof_json("report", s);
	cr_assert_not_null(doc);
	int api = 0;
	for (size_t i = 0; e2e_process(doc, i); i++)
		api += json_array_size(json_object_get(json_object_get(e2e_process(doc, i), "cuda"),
						       "api")) > 0;
	cr_expect_eq(api, 2, "both processes' CUDA calls are in the summary");
	json_decref(doc);
}

/* Ranks 0 and 1 on this host, 2 and 3 on another (a UTS namespace with its own name): each
 * host summarizes its own traces, as `srun prof summarize` would; one report of the two
 * summaries is the job's. */
Test(summary, a_job_on_two_hosts_from_its_summaries)
{
	if (system("unshare --uts true 2>/dev/null") != 0)
		cr_skip_test("cannot make a UTS namespace here (unshare --uts) to play a second host");
	const char *h[2] = { e2e_tmpdir(), e2e_tmpdir() }, *d = e2e_tmpdir();
	char cmd[PATH_MAX * 4];
	for (int r = 0; r < 4; r++) {
		snprintf(cmd, sizeof(cmd), "%s env LD_PRELOAD=%s 'PROF_OUTPUT=%s/job.%%r.%%h.%%p.trace' "
			 "SLURM_PROCID=%d %s %s >/dev/null",
			 r < 2 ? "" : "unshare --uts sh -c 'hostname simhost2 && exec \"$0\" \"$@\"'",
			 e2e_lib(), h[r / 2], r, e2e_prog("tree"), r % 2 ? "spawn" : "popen");
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
	char s[2][PATH_MAX];
	for (int i = 0; i < 2; i++) {
		snprintf(s[i], sizeof(s[i]), "%s/host%d.sum", d, i);
		summarize(s[i], (const char *const[]){ h[i], NULL });
	}
	expect_all_same((const char *const[]){ h[0], h[1], NULL },
			(const char *const[]){ s[0], s[1], NULL });
	json_t *doc = e2e_prof_json("report", d);
	cr_assert_not_null(doc);
	json_t *ranks = json_object_get(doc, "ranks");
	cr_expect_eq(e2e_int(ranks, "hosts"), 2);
	cr_assert_eq(json_array_size(json_object_get(ranks, "ranks")), 4);
	for (int r = 0; r < 4; r++)
		cr_expect_eq(e2e_int(json_array_get(json_object_get(ranks, "ranks"), (size_t)r),
				     "heap_peak_bytes"), r % 2 ? 4001 : 7001, "rank %d", r);
	json_decref(doc);
}

/* A damaged, cut or foreign summary: one line naming the file, exit 1, for every command
 * that reads summaries and for summarize; commands that read records refuse summaries. */
Test(summary, bad_summaries_and_commands_that_need_traces)
{
	const char *run = e2e_tmpdir(), *d = e2e_tmpdir();
	const char *a[] = { e2e_prog("tree"), "spawn", NULL };
	cr_assert_eq(e2e_profile(run, a, NULL, NULL, NULL), 0);
	char good[PATH_MAX], cut[PATH_MAX], junk[PATH_MAX];
	snprintf(good, sizeof(good), "%s/good.sum", d);
	snprintf(cut, sizeof(cut), "%s/cut.sum", d);
	snprintf(junk, sizeof(junk), "%s/junk.sum", d);
	summarize(good, (const char *const[]){ run, NULL });
	char *bytes = e2e_read_file(good);
	struct stat sb;
	cr_assert(bytes && stat(good, &sb) == 0);
	/* cut at many places, and a byte flipped at many places: an error or a report, never a
	 * crash (exit status 1 or 0) */
	for (off_t at = 9; at < sb.st_size; at += sb.st_size / 23 + 1) {
		FILE *f = fopen(cut, "wb");
		fwrite(bytes, 1, (size_t)at, f);
		fclose(f);
		int st;
		char *msg = prof_out(NULL, &st, (const char *const[]){ "report", "--json", cut, NULL });
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "cut at %ld: %d", (long)at, st);
		cr_expect(msg && strstr(msg, "cut.sum") && e2e_count_lines(msg) == 1,
			  "cut at %ld: %s", (long)at, msg ? msg : "");
		free(msg);
		f = fopen(cut, "wb");
		fwrite(bytes, 1, (size_t)sb.st_size, f);
		fclose(f);
		f = fopen(cut, "r+b");
		fseek(f, at, SEEK_SET);
		fputc(bytes[at] ^ 0x5a, f);
		fclose(f);
		msg = prof_out(NULL, &st, (const char *const[]){ "report", "--json", cut, NULL });
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) <= 1, "byte %ld flipped: %d", (long)at, st);
		free(msg);
	}
	free(bytes);
	/* foreign bytes after the magic */
	FILE *f = fopen(junk, "wb");
	fputs("PROFSUM\n\x01\x00\x00\x00\x04\x03\x02\x01 garbage that is no section", f);
	fclose(f);
	static const char *const cmds[][5] = {
		{ "report", NULL }, { "leaks", NULL }, { "flame", "--kind", "cpu", "--folded", NULL },
		{ "summarize", "-o", "/dev/null", NULL }, { "dump", NULL },
		{ "export", "--format", "chrome", "-o", NULL },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[8];
		int n = 0;
		for (; cmds[i][n]; n++)
			args[n] = cmds[i][n];
		if (!strcmp(args[n - 1], "-o"))
			args[n++] = "/dev/null";
		args[n++] = junk;
		args[n] = NULL;
		int st;
		char *msg = prof_out(NULL, &st, args);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "prof %s: %d", args[0], st);
		cr_expect(msg && strstr(msg, "junk.sum") && e2e_count_lines(msg) == 1, "prof %s: %s",
			  args[0], msg ? msg : "");
		free(msg);
	}
	/* what needs the records says so */
	static const char *const need[][6] = {
		{ "dump", NULL }, { "export", "--format", "chrome", "-o", "/dev/null", NULL },
		{ "export", "--format", "sqlite", "-o", NULL }, { "report", "--to", "1h", NULL },
	};
	char db[PATH_MAX];
	snprintf(db, sizeof(db), "%s/x.db", d);
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		const char *args[8];
		int n = 0;
		for (; need[i][n]; n++)
			args[n] = need[i][n];
		if (!strcmp(args[n - 1], "-o"))
			args[n++] = db;
		args[n++] = good;
		args[n] = NULL;
		int st;
		char *msg = prof_out(NULL, &st, args);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "prof %s: %d", args[0], st);
		cr_expect(msg && strstr(msg, "needs the traces") && e2e_count_lines(msg) == 1,
			  "prof %s: %s", args[0], msg ? msg : "");
		free(msg);
	}
	/* summarize without -o is a usage error */
	int st;
	char *msg = prof_out(NULL, &st, (const char *const[]){ "summarize", run, NULL });
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s", msg ? msg : "");
	free(msg);
}
