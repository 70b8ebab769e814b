/* MPI jobs and ranks: an Open MPI job of 4 ranks with known, unequal work (tests/mpi/
 * mpi_work.c) under `mpirun prof-run` and `mpirun -x LD_PRELOAD`; %r and %h in PROF_OUTPUT
 * from each launcher's variable; a directory of traces from two hosts merged by rank.
 * The Open MPI tests skip where mpirun or the program is missing (install-deps --mpi). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(mpi, .fini = teardown, .timeout = 180);

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

static const char *mpi_prog(void)
{
	const char *prog = e2e_prog("mpi_work");
	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		cr_skip_test("mpirun not installed (scripts/install-deps --mpi)");
	if (access(prog, X_OK) != 0)
		cr_skip_test("%s not built (no mpicc)", prog);
	return prog;
}

/* The MPI call named name in process p's JSON: its "calls" or "bytes" (field); -1 if none. */
static long mpi_call(json_t *p, const char *name, const char *field)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(json_object_get(p, "mpi"), "calls_by_name"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return (long)json_integer_value(json_object_get(c, field));
	return -1;
}

Test(mpi, four_ranks_under_prof_run)
{
	const char *prog = mpi_prog();
	char run[PATH_MAX], lib[PATH_MAX + 16], err[PATH_MAX];
	snprintf(run, sizeof(run), "%s/run", e2e_tmpdir());
	snprintf(err, sizeof(err), "%s/err.txt", e2e_tmpdir());
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	/* timeout: a job whose rank dies early can leave mpirun waiting for ever */
	const char *argv[] = { "timeout", "-k", "5", "150", "mpirun", "-np", "4", "--oversubscribe", "--mca",
			       "mpi_yield_when_idle", "1", geteuid() == 0 ? "--allow-run-as-root" : "-q",
			       "env", lib, "scripts/prof-run", "-o", run, prog, NULL };
	int st = e2e_run(argv, NULL, NULL, err);
	char *e = e2e_read_file(err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mpirun: %d\n%s", st, e ? e : "");
	free(e);
	cr_assert_eq(count_traces(run), 4, "one trace per rank, in one directory");

	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc);
	json_t *ranks = json_object_get(json_object_get(doc, "ranks"), "ranks");
	cr_assert_eq(json_array_size(ranks), 4);
	long peak[4];
	for (int r = 0; r < 4; r++) {
		json_t *row = json_array_get(ranks, (size_t)r);
		cr_expect_eq(e2e_int(row, "rank"), r);
		peak[r] = e2e_int(row, "heap_peak_bytes");
		cr_expect_gt(e2e_int(row, "mpi_wait_ns"), 0, "rank %d waited in MPI", r);
		json_t *p = e2e_process_where(doc, "rank", r);
		cr_assert_not_null(p, "rank %d has its process", r);
		cr_expect_eq(mpi_call(p, "MPI_Allreduce", "calls"), 1);
		cr_expect_eq(mpi_call(p, "MPI_Allreduce", "bytes"), 8000, "1000 doubles");
		cr_expect_eq(mpi_call(p, "MPI_Barrier", "calls"), 1);
		cr_expect_eq(mpi_call(p, "MPI_Isend", "bytes"), 400);
		cr_expect_eq(mpi_call(p, "MPI_Waitall", "calls"), 1);
	}
	/* Rank r held (r + 1) MiB more than MPI's own blocks, which are alike on every rank. */
	for (int r = 1; r < 4; r++)
		cr_expect(peak[r] - peak[r - 1] > (1 << 20) * 9 / 10 &&
			  peak[r] - peak[r - 1] < (1 << 20) * 11 / 10, "peaks %ld %ld", peak[r - 1], peak[r]);
	cr_expect_eq(mpi_call(e2e_process_where(doc, "rank", 0), "MPI_Send", "bytes"), 400);
	/* Time waiting in MPI is blocked time (cause "mpi"), not computing: rank 0, with the
	 * least work, waits longest for the others (3 units more than rank 3, if nothing else
	 * ran; a loaded machine blurs it). */
	long mpi_wait[4];
	for (int r = 0; r < 4; r++) {
		mpi_wait[r] = e2e_int(json_object_get(e2e_process_where(doc, "rank", r), "cpu"), "blocked.mpi");
		cr_expect_gt(mpi_wait[r], 0, "rank %d blocked in MPI", r);
	}
	cr_expect_gt(mpi_wait[0], mpi_wait[3] + 100000000, "rank 0 waited %ld ns, rank 3 %ld ns",
		     mpi_wait[0], mpi_wait[3]);
	char folded[PATH_MAX + 16];
	snprintf(folded, sizeof(folded), "%s/offcpu.folded", e2e_tmpdir());
	const char *fl[] = { e2e_prof(), "flame", "--kind", "offcpu", "--folded", run, NULL };
	cr_assert_eq(e2e_run(fl, NULL, folded, NULL), 0);
	char *text = e2e_read_file(folded);
	cr_expect(text && strstr(text, ";main;[MPI wait] "), "the off-CPU flame graph: %s",
		  text ? text : "");
	free(text);
	cr_expect_eq(mpi_call(e2e_process_where(doc, "rank", 1), "MPI_Recv", "bytes"), 400);
	/* Work 1:2:3:4 units (and MPI_Init's time, not work): rank 3 is the slowest, 1.6x the
	 * mean if nothing else ran; a loaded machine blurs it, never below 1.15x. */
	json_t *imb = json_object_get(json_object_get(doc, "ranks"), "imbalance");
	cr_expect_eq(e2e_int(imb, "slowest_rank"), 3);
	double ratio = json_real_value(json_object_get(imb, "ratio"));
	cr_expect(ratio > 1.15 && ratio < 2.0, "imbalance %.2f", ratio);
	json_decref(doc);
}

Test(mpi, mpirun_with_ld_preload_and_rank_in_the_name)
{
	const char *prog = mpi_prog();
	char dir[PATH_MAX], pre[PATH_MAX + 16], out[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s", e2e_tmpdir());
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", e2e_lib());
	snprintf(out, sizeof(out), "PROF_OUTPUT=%s/job.%%r.trace", dir);
	const char *argv[] = { "timeout", "-k", "5", "150", "mpirun", "-np", "2", "--oversubscribe",
			       geteuid() == 0 ? "--allow-run-as-root" : "-q", "-x", pre, "-x", out,
			       prog, NULL };
	int st = e2e_run(argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mpirun: %d", st);
	for (int r = 0; r < 2; r++) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "%s/job.%d.trace", dir, r);
		cr_expect_eq(access(path, R_OK), 0, "%s", path);
	}
}

/* %r from each launcher's variable, %h the host; the header keeps the rank. */
Test(mpi, rank_from_every_launcher)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
					    "SLURM_PROCID" };
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	for (int i = 0; i < 4; i++) {
		const char *dir = e2e_tmpdir();
		char out[PATH_MAX + 32], var[64], path[PATH_MAX + 300];
		snprintf(out, sizeof(out), "PROF_OUTPUT=%s/t.%%r.%%h.trace", dir);
		snprintf(var, sizeof(var), "%s=%d", vars[i], 10 + i);
		const char *argv[] = { e2e_prog("tree"), "spawn", NULL };
		const char *env[] = { out, var, NULL };
		cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
		snprintf(path, sizeof(path), "%s/t.%d.%s.trace", dir, 10 + i, host);
		cr_expect_eq(access(path, R_OK), 0, "%s: %s", vars[i], path);
		json_t *doc = e2e_prof_json("report", path);
		cr_expect_eq(e2e_int(e2e_process(doc, 0), "rank"), 10 + i, "%s", vars[i]);
		json_decref(doc);
	}
}

/* Ranks 0 and 1 on this host, 2 and 3 on another (a UTS namespace with its own name, where
 * this machine lets us make one): one directory, one table of 4 ranks on 2 hosts. */
Test(mpi, traces_of_two_hosts_merge_by_rank)
{
	if (system("unshare --uts true 2>/dev/null") != 0)
		cr_skip_test("cannot make a UTS namespace here (unshare --uts) to play a second host");
	const char *dir = e2e_tmpdir();
	char cmd[PATH_MAX * 4];
	for (int r = 0; r < 4; r++) {
		snprintf(cmd, sizeof(cmd), "%s env LD_PRELOAD=%s 'PROF_OUTPUT=%s/job.%%r.%%h.%%p.trace' "
			 "SLURM_PROCID=%d %s%s %s >/dev/null",
			 r < 2 ? "" : "unshare --uts sh -c 'hostname simhost2 && exec \"$0\" \"$@\"'",
			 e2e_lib(), dir, r, e2e_prog("tree"), "", r % 2 ? "spawn" : "popen");
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
	json_t *doc = e2e_prof_json("report", dir);
	json_t *ranks = json_object_get(doc, "ranks");
	cr_expect_eq(e2e_int(ranks, "hosts"), 2);
	cr_assert_eq(json_array_size(json_object_get(ranks, "ranks")), 4);
	for (int r = 0; r < 4; r++) {
		json_t *row = json_array_get(json_object_get(ranks, "ranks"), (size_t)r);
		cr_expect_eq(e2e_int(row, "rank"), r);
		cr_expect_eq(e2e_int(row, "processes"), 1, "rank %d", r);
		cr_expect_eq(e2e_int(row, "heap_peak_bytes"), r % 2 ? 4001 : 7001, "rank %d", r);
	}
	json_t *second = json_array_get(json_object_get(ranks, "ranks"), 2);
	cr_expect_str_eq(json_string_value(json_object_get(second, "host")), "simhost2");
	json_decref(doc);
}
