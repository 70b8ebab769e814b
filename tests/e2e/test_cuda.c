/* End-to-end CUDA tests without a GPU: the fake driver (build/cuda/libcuda.so.1) reached by
 * every route, event-pair timing against the fake's own record of when kernels ran, device
 * memory leaks, the real cudart with no driver and with the fake, NVTX, CUPTI record
 * conversion, and that a program without CUDA never gets CUDA loaded. What needs the toolkit
 * (nvcc, headers) is skipped when it is absent. */
#include <criterion/criterion.h>
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

TestSuite(cuda, .fini = teardown, .timeout = 60);

static const char *cuda_bin(const char *name)
{
	static char buf[8][PATH_MAX];
	static int i;
	char *b = buf[i++ % 8];
	snprintf(b, PATH_MAX, "%s/cuda/%s", e2e_build(), name);
	return b;
}

static void need(const char *path)
{
	if (access(path, X_OK) != 0 && access(path, R_OK) != 0)
		cr_skip_test("%s not built (no CUDA toolkit?)", path);
}

static const char *libpath_env(void)
{
	static char env[PATH_MAX + 32];
	snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s/cuda", e2e_build());
	return env;
}

/* Runs argv plain and under libprof (same env), checks identical stdout, returns the report. */
static json_t *run_both(const char *const argv[], const char *const env[], const char **dir_out)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	char plain[PATH_MAX], prof[PATH_MAX];
	snprintf(plain, sizeof(plain), "%s/plain.out", dir);
	snprintf(prof, sizeof(prof), "%s/prof.out", dir);
	int st0 = e2e_run(argv, env, plain, NULL);
	int st1 = e2e_profile(dir, argv, env, prof, NULL);
	cr_assert_eq(st0, st1, "exit status %d plain, %d profiled", st0, st1);
	char *a = e2e_read_file(plain), *b = e2e_read_file(prof);
	cr_assert(a && b);
	cr_expect_str_eq(a, b, "output differs under libprof");
	free(a);
	free(b);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	if (dir_out)
		*dir_out = dir;
	return doc;
}

static json_t *find_row(json_t *arr, const char *key, const char *name)
{
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) {
		json_t *n = json_object_get(o, key);
		if (json_is_string(n) && !strcmp(json_string_value(n), name))
			return o;
	}
	return NULL;
}

static long row_int(json_t *row, const char *key)
{
	json_t *v = row ? json_object_get(row, key) : NULL;
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static json_t *cuda_of(json_t *doc)
{
	json_t *p = e2e_process(doc, 0);
	cr_assert_not_null(p);
	json_t *c = json_object_get(p, "cuda");
	cr_assert_not_null(c);
	return c;
}

/* The same workload through each route must give the same records. */
static void check_route(const char *mode, const char *launch_name, const char *sync13_name)
{
	const char *prog = !strcmp(mode, "direct") ? cuda_bin("drv_direct") : cuda_bin("drv_test");
	need(prog);
	const char *argv[] = { prog, mode, "2", NULL };
	const char *env[] = { libpath_env(), "PROF_CUDA_TIMING=events", NULL };
	json_t *doc = run_both(argv, env, NULL);
	json_t *c = cuda_of(doc);
	json_t *api = json_object_get(c, "api");
	json_t *r = find_row(api, "name", "cuMemAlloc_v2");
	cr_expect_eq(row_int(r, "calls"), 4, "%s: cuMemAlloc_v2 calls", mode);
	cr_expect_eq(row_int(r, "errors"), 1, "%s: cuMemAlloc_v2 errors", mode);
	r = find_row(api, "name", launch_name);
	cr_expect_eq(row_int(r, "calls"), 5, "%s: %s calls", mode, launch_name);
	cr_expect_eq(row_int(r, "errors"), 1, "%s: %s errors", mode, launch_name);
	cr_expect_eq(row_int(find_row(api, "name", "cuInit"), "errors"), 1, "%s: cuInit(1) error", mode);
	cr_expect_eq(row_int(find_row(api, "name", "cuModuleGetFunction"), "errors"), 1);
	cr_expect_eq(row_int(find_row(api, "name", "cuCtxSynchronize"), "calls"), 1, "%s: 2000 form", mode);
	cr_expect_eq(row_int(find_row(api, "name", sync13_name), "calls"), 1, "%s: 13000 form", mode);
	cr_expect_eq(row_int(find_row(api, "name", "cuEventElapsedTime_v2"), "calls"), 1, "%s: 12080 form", mode);
	cr_expect_eq(row_int(find_row(api, "name", "cuMemFree_v2"), "errors"), 1, "%s: double free", mode);
	cr_expect_eq(e2e_int(c, "device_memory.alloc_calls"), 3);
	cr_expect_eq(e2e_int(c, "device_memory.leaked_blocks"), 1);
	cr_expect_eq(e2e_int(c, "device_memory.leaked_bytes"), 4096);
	cr_expect_eq(e2e_int(c, "device_memory.peak_bytes"), 2 * 1048576 + 4096);
	json_t *k = find_row(json_object_get(c, "kernels"), "name", "sleep_kernel");
	cr_assert_not_null(k, "%s: no sleep_kernel row", mode);
	cr_expect_eq(row_int(k, "launches"), 2);
	cr_expect_str_eq(json_string_value(json_object_get(k, "timing")), "events");
	cr_expect_geq(row_int(k, "min_ns"), 5000000);
	json_t *scale = find_row(json_object_get(c, "kernels"), "name", "void scale<float>(float*, int)");
	cr_assert_not_null(scale, "%s: kernel name not demangled", mode);
	json_t *htod = find_row(json_object_get(c, "memcpy"), "kind", "HtoD");
	cr_expect_eq(row_int(htod, "count"), 2);
	cr_expect_eq(row_int(htod, "bytes"), 1048576 + 4096);
	cr_expect_eq(e2e_int(c, "memset.count"), 2);
	json_decref(doc);
}

Test(cuda, driver_direct_symbols) { check_route("direct", "cuLaunchKernel", "cuCtxSynchronize_v2"); }
Test(cuda, driver_dlsym_route) { check_route("dlsym", "cuLaunchKernel", "cuCtxSynchronize_v2"); }
Test(cuda, driver_get_proc_address_versions) { check_route("gpa", "cuLaunchKernel", "cuCtxSynchronize_v2"); }
Test(cuda, driver_per_thread_stream_entry_points) { check_route("ptsz", "cuLaunchKernel_ptsz", "cuCtxSynchronize_v2"); }

/* Event-pair durations against the fake driver's own record of when each kernel ran. */
Test(cuda, event_timing_matches_the_fake_driver)
{
	need(cuda_bin("drv_test"));
	const char *dir = e2e_tmpdir();
	char log[PATH_MAX], logenv[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/fake.log", dir);
	snprintf(logenv, sizeof(logenv), "FAKE_CUDA_LOG=%s", log);
	const char *argv[] = { cuda_bin("drv_test"), "gpa", "4", NULL };
	const char *env[] = { libpath_env(), "PROF_CUDA_TIMING=events", logenv, NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	FILE *f = fopen(log, "r");
	cr_assert_not_null(f);
	char name[256];
	unsigned long long s, e;
	double truth_sleep = 0, truth_scale = 0;
	int n = 0;
	while (fscanf(f, "%255s %llu %llu", name, &s, &e) == 3) {
		n++;
		if (!strcmp(name, "sleep_kernel"))
			truth_sleep += (double)(e - s);
		else
			truth_scale += (double)(e - s);
	}
	fclose(f);
	cr_assert_eq(n, 9, "fake ran %d kernels", n);
	json_t *doc = e2e_prof_json("kernels", dir);
	cr_assert_not_null(doc);
	json_t *ks = json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "kernels");
	double got_sleep = 0, got_scale = 0;
	size_t i;
	json_t *k;
	json_array_foreach(ks, i, k) {
		const char *kn = json_string_value(json_object_get(k, "name"));
		double t = (double)row_int(k, "total_ns");
		if (!strcmp(kn, "sleep_kernel"))
			got_sleep += t;
		else
			got_scale += t;
	}
	/* Per launch, the event pair brackets the kernel and the fake's worker thread reaching
	 * its events: on a loaded 2-core machine (e2e --jobs 2) that thread's wake-ups took up to
	 * 0.9 ms more (300 us was not enough). 1.5 ms a launch still fails a pair that brackets
	 * two launches (the kernels take 2 and 5 ms), and the lower bound holds regardless. */
	const double slack = 1.5e6;
	cr_expect(got_sleep >= truth_sleep && got_sleep - truth_sleep < 4 * slack,
		  "sleep_kernel: prof %.0f ns, fake %.0f ns", got_sleep, truth_sleep);
	cr_expect(got_scale >= truth_scale && got_scale - truth_scale < 5 * slack,
		  "scale: prof %.0f ns, fake %.0f ns", got_scale, truth_scale);
	json_decref(doc);
}

Test(cuda, device_leaks_with_their_stack_and_flame)
{
	need(cuda_bin("drv_test"));
	const char *dir;
	const char *argv[] = { cuda_bin("drv_test"), "dlsym", "1", NULL };
	const char *env[] = { libpath_env(), "PROF_CUDA_TIMING=events", NULL };
	json_decref(run_both(argv, env, &dir));
	json_t *doc = e2e_prof_json("leaks", dir);
	cr_assert_not_null(doc);
	json_t *leaks = json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "leaks");
	json_t *dev = find_row(leaks, "kind", "device");
	cr_assert_not_null(dev, "no device leak");
	cr_expect_eq(row_int(dev, "bytes"), 4096);
	cr_expect_eq(row_int(dev, "blocks"), 1);
	/* The stack begins at the program's call, with none of libprof's frames before it. */
	json_t *top = json_array_get(json_object_get(dev, "stack"), 0);
	char *s = json_dumps(json_object_get(dev, "stack"), 0);
	cr_expect(top && !strcmp(json_string_value(json_object_get(top, "function")) ?: "", "main"),
		  "the leak's stack does not begin in main: %s", s);
	free(s);
	json_decref(doc);
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/folded.txt", e2e_tmpdir());
	const char *fargv[] = { e2e_prof(), "flame", "--kind", "cuda", "--folded", dir, NULL };
	cr_assert_eq(e2e_run(fargv, NULL, out, NULL), 0);
	char *folded = e2e_read_file(out);
	cr_expect(folded && strstr(folded, "_call_main;main "), "no launching stack ending in main in: %s",
		  folded);
	free(folded);
}

/* One call site reached from two callers in turn, each launching its own kernel: every launch
 * keeps the stack of its own path (the hook takes the last call's stack again only where the
 * stack cache proves it the same). */
Test(cuda, a_call_site_reached_by_two_paths_keeps_each_stack)
{
	need(cuda_bin("drv_test"));
	const char *dir = e2e_tmpdir();
	const int n = 40;
	char paths[32];
	snprintf(paths, sizeof(paths), "DRV_TEST_PATHS=%d", n);
	const char *argv[] = { cuda_bin("drv_test"), "dlsym", "1", NULL };
	const char *env[] = { libpath_env(), paths, "PROF_CUDA_TIMING=none", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	const char *args[] = { "dump", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	struct { char function[32]; unsigned stack; int launches; } seen[4];
	int kinds = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		const char *f = strstr(line, " function="), *st = strstr(line, " stack=");
		if (!strstr(line, " CUDA_LAUNCH ") || !strstr(line, " grid=3,3,1 ") || !f || !st)
			continue;
		char function[32];
		unsigned stack;
		cr_assert(sscanf(f, " function=%31s", function) == 1 && sscanf(st, " stack=%u", &stack) == 1);
		int i = 0;
		while (i < kinds && (strcmp(seen[i].function, function) || seen[i].stack != stack))
			i++;
		if (i == kinds) {
			cr_assert_lt(kinds, 4, "launches under too many stacks");
			snprintf(seen[i].function, sizeof(seen[i].function), "%s", function);
			seen[i].stack = stack;
			seen[i].launches = 0;
			kinds++;
		}
		seen[i].launches++;
	}
	free(text);
	cr_assert_eq(kinds, 2, "%d kinds of (kernel, stack) among the launches, not 2", kinds);
	cr_expect_neq(seen[0].stack, seen[1].stack, "both paths got one stack");
	cr_expect_str_neq(seen[0].function, seen[1].function);
	cr_expect_eq(seen[0].launches, n);
	cr_expect_eq(seen[1].launches, n);
}

/* Launches that repeat a kernel's last one in the chunk are 16-byte records (prof_short.h),
 * two kernels in turn each in a slot of its own, and so are the records of the GPU work they
 * did: every launch is read back as the program made it, and every one timed. */
Test(cuda, repeated_launches_are_short_records_read_back_whole)
{
	need(cuda_bin("drv_test"));
	const int rounds = 100;
	char n[16], paths[32];
	snprintf(n, sizeof(n), "%d", rounds);
	snprintf(paths, sizeof(paths), "DRV_TEST_PATHS=%d", rounds);
	const char *dir;
	const char *argv[] = { cuda_bin("drv_test"), "dlsym", n, NULL };
	const char *env[] = { libpath_env(), paths, "PROF_CUDA_TIMING=events", NULL };
	json_decref(run_both(argv, env, &dir));
	json_t *doc = e2e_prof_json("kernels", dir);
	cr_assert_not_null(doc);
	json_t *kernels = json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "kernels");
	long scale = 0, sleep = 0;
	for (size_t i = 0; i < json_array_size(kernels); i++) {
		json_t *k = json_array_get(kernels, i);
		const char *name = json_string_value(json_object_get(k, "mangled"));
		long launches = json_integer_value(json_object_get(k, "launches"));
		if (name && !strcmp(name, "_Z5scaleIfEvPT_i"))
			scale += launches;
		else if (name && !strcmp(name, "sleep_kernel"))
			sleep += launches;
	}
	json_decref(doc);
	/* each kernel: a launch a round from main and one from a path; scale: one cuLaunchKernelEx
	 * too (the launch with a zero grid fails) */
	cr_expect_eq(scale, 2 * rounds + 1);
	cr_expect_eq(sleep, 2 * rounds);
	size_t all = e2e_dumped(dir, "CUDA_LAUNCH", NULL), shorts = e2e_dumped(dir, "CUDA_LAUNCH", "[short");
	cr_expect_eq(all, (size_t)(4 * rounds + 1));
	cr_expect_gt(shorts, all / 2, "%zu of %zu launches short", shorts, all);
	/* their event pairs' CUDA_GPU records too: every launch timed, most of them short */
	size_t timed = e2e_dumped(dir, "CUDA_GPU", "activity=0 ");
	size_t short_gpu = e2e_dumped(dir, "CUDA_GPU", "[short");
	cr_expect_eq(timed, all, "%zu of %zu launches timed", timed, all);
	cr_expect_gt(short_gpu, timed / 2, "%zu of %zu kernel records short", short_gpu, timed);
}

/* A program that never touches CUDA gets neither libcuda nor libcupti loaded. */
Test(cuda, no_cuda_library_in_a_plain_process)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/maps.txt", dir);
	const char *argv[] = { "cat", "/proc/self/maps", NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	char *maps = e2e_read_file(out);
	cr_assert(maps && strstr(maps, "libprof.so"), "not profiled");
	cr_expect(!strstr(maps, "libcuda") && !strstr(maps, "libcupti") && !strstr(maps, "libcudart"));
	free(maps);
}

/* Our dlsym hook keeps RTLD_NEXT relative to the caller. */
Test(cuda, dlsym_rtld_next_sees_the_real_caller)
{
	need(cuda_bin("dlsym_next"));
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/next.txt", dir);
	const char *argv[] = { cuda_bin("dlsym_next"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, out, NULL), 0);
	char *s = e2e_read_file(out);
	cr_expect(s && strstr(s, "libprof.so"), "dlsym(RTLD_NEXT) from the program gave %s", s);
	free(s);
}

/* The real cudart (nvcc -cudart shared) with no driver: every call recorded with error 35. */
Test(cuda, real_cudart_without_driver)
{
	need(cuda_bin("rt_shared"));
	const char *argv[] = { cuda_bin("rt_shared"), NULL };
	json_t *doc = run_both(argv, NULL, NULL);
	json_t *api = json_object_get(cuda_of(doc), "api");
	cr_assert_geq(json_array_size(api), 5);
	size_t i;
	json_t *r;
	json_array_foreach(api, i, r)
		cr_expect_eq(row_int(r, "errors"), row_int(r, "calls"), "%s",
			     json_string_value(json_object_get(r, "name")));
	cr_expect_not_null(find_row(api, "name", "cudaMalloc"));
	cr_expect_not_null(find_row(api, "name", "cudaLaunchKernel"));
	json_decref(doc);
}

/* The real cudart with the fake driver: its driver calls are seen (through our dlsym and
 * cuGetProcAddress wrappers) and correlated with the runtime call that made them. */
Test(cuda, real_cudart_driver_calls_are_correlated)
{
	need(cuda_bin("rt_shared"));
	const char *argv[] = { cuda_bin("rt_shared"), NULL };
	const char *env[] = { libpath_env(), NULL };
	json_t *doc = run_both(argv, env, NULL);
	json_t *c = cuda_of(doc);
	cr_expect_not_null(find_row(json_object_get(c, "api"), "name", "cuInit"));
	cr_expect_geq(e2e_int(c, "correlated_driver_calls"), 1);
	json_decref(doc);
}

/* Statically linked cudart: nothing to interpose, but its driver calls are seen. */
Test(cuda, static_cudart_gives_driver_records_only)
{
	need(cuda_bin("rt_static"));
	const char *argv[] = { cuda_bin("rt_static"), NULL };
	const char *env[] = { libpath_env(), NULL };
	json_t *doc = run_both(argv, env, NULL);
	json_t *api = json_object_get(cuda_of(doc), "api");
	cr_expect_not_null(find_row(api, "name", "cuInit"));
	size_t i;
	json_t *r;
	json_array_foreach(api, i, r)
		cr_expect_str_eq(json_string_value(json_object_get(r, "layer")), "driver");
	json_decref(doc);
	/* and with no driver at all: no CUDA record, same output */
	const char *argv2[] = { cuda_bin("rt_static"), NULL };
	doc = run_both(argv2, NULL, NULL);
	cr_expect_eq(json_array_size(json_object_get(cuda_of(doc), "api")), 0);
	json_decref(doc);
}

Test(cuda, nvtx_ranges_without_changing_the_program)
{
	need(cuda_bin("nvtx_test"));
	const char *argv[] = { cuda_bin("nvtx_test"), NULL };
	json_t *doc = run_both(argv, NULL, NULL);
	json_t *nvtx = json_object_get(cuda_of(doc), "nvtx");
	json_t *outer = find_row(nvtx, "name", "outer"), *inner = find_row(nvtx, "name", "inner");
	cr_expect_eq(row_int(outer, "count"), 3);
	cr_expect_eq(row_int(inner, "count"), 3);
	cr_expect_geq(row_int(outer, "min_ns"), 3000000);
	cr_expect_geq(row_int(inner, "min_ns"), 1000000);
	cr_expect_not_null(find_row(nvtx, "name", "checkpoint"));
	cr_expect_not_null(find_row(nvtx, "name", "startend"));
	json_t *d = find_row(nvtx, "name", "domain-range");
	cr_expect_str_eq(json_string_value(json_object_get(d, "domain")), "mydomain");
	json_decref(doc);
}

Test(cuda, cupti_records_through_the_real_iterator)
{
	need(cuda_bin("cupti_convert_test"));
	const char *argv[] = { cuda_bin("cupti_convert_test"), NULL };
	int st = e2e_run(argv, NULL, NULL, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		cr_skip_test("libcupti not found");
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cupti_convert_test failed");
}

Test(cuda, kernels_csv)
{
	need(cuda_bin("drv_test"));
	const char *dir;
	const char *argv[] = { cuda_bin("drv_test"), "gpa", "1", NULL };
	const char *env[] = { libpath_env(), "PROF_CUDA_TIMING=events", NULL };
	json_decref(run_both(argv, env, &dir));
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/k.csv", e2e_tmpdir());
	const char *kargv[] = { e2e_prof(), "kernels", "--csv", dir, NULL };
	cr_assert_eq(e2e_run(kargv, NULL, out, NULL), 0);
	char *csv = e2e_read_file(out);
	cr_assert_not_null(csv);
	cr_expect(!strncmp(csv, "pid,name,launches,total_ns", 26));
	cr_expect(strstr(csv, "\"sleep_kernel\",1,") != NULL, "%s", csv);
	cr_expect_eq(e2e_count_lines(csv), 4);
	free(csv);
}

/* A program with a CUPTI client of its own (torch.profiler) gets CUPTI; libprof times with event
 * pairs and says why, in the trace and on stderr. */
Test(cuda, program_cupti_client_keeps_cupti)
{
	need(cuda_bin("drv_test"));
	const char *cupti = "/usr/local/cuda/lib64/libcupti.so.13";
	if (access(cupti, R_OK))
		cr_skip_test("no %s", cupti);
	char var[PATH_MAX];
	snprintf(var, sizeof(var), "DRV_TEST_CUPTI=%s", cupti);
	const char *argv[] = { cuda_bin("drv_test"), "gpa", "1", NULL };
	const char *env[] = { libpath_env(), var, NULL };
	json_t *doc = run_both(argv, env, NULL);
	json_t *c = cuda_of(doc);
	cr_expect_str_eq(json_string_value(json_object_get(c, "timing")), "events");
	const char *why = json_string_value(json_object_get(c, "timing_detail"));
	cr_expect(why && strstr(why, "CUPTI is in use by the program (it called "
				     "cuptiActivityRegisterCallbacks)"), "timing_detail: %s", why);
	json_decref(doc);
}
