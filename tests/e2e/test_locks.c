/* End-to-end tests of threads and locks: programs built by the suite, run under libprof, and
 * what `prof report --json` says about their locks and threads. */
#include <criterion/criterion.h>
#include <inttypes.h>
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

TestSuite(locks, .fini = teardown, .timeout = 120);

/* Runs argv under libprof in a fresh directory (stdout to DIR/out.txt); returns the report. */
static json_t *profile(const char *const argv[], const char *const env[], const char **dir_out,
		       int *status)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	static char out[512];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	int st = e2e_profile(dir, argv, env, out, NULL);
	if (status)
		*status = st;
	if (dir_out)
		*dir_out = dir;
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc, "prof report --json failed on %s", dir);
	return doc;
}

/* The word the program printed after "NAME " at the start of a line of DIR/out.txt: a lock's
 * address ("0x..."), or a number (static). */
static const char *printed(const char *dir, const char *name)
{
	static char word[64];
	char path[512], key[96];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	char *text = e2e_read_file(path);
	cr_assert_not_null(text);
	snprintf(key, sizeof(key), "%.64s ", name);
	char *p = text;
	while ((p = strstr(p, key)) && p != text && p[-1] != '\n')
		p++;
	cr_assert_not_null(p, "%s not printed", name);
	sscanf(p + strlen(key), "%63s", word);
	free(text);
	return word;
}

static json_t *find_lock(json_t *proc, const char *addr)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(proc, "locks"), i, l)
		if (!strcmp(json_string_value(json_object_get(l, "address")), addr))
			return l;
	return NULL;
}

static const char *kind_of(json_t *lock)
{
	return json_string_value(json_object_get(lock, "kind"));
}

static int stack_has(json_t *lock, const char *function)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(lock, "stack"), i, f) {
		const char *fn = json_string_value(json_object_get(f, "function"));
		if (fn && !strcmp(fn, function))
			return 1;
	}
	return 0;
}

/* N iterations by M threads: exact acquisition counts for every kind of lock. */
Test(locks, exact_counts_for_every_kind)
{
	const int threads = 4, iters = 20000;
	const char *dir;
	const char *argv[] = { e2e_prog("lock_counts"), "4", "20000", NULL };
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_counts failed: %d", st);
	json_t *p = e2e_process(doc, 0);

	json_t *l = find_lock(p, printed(dir, "shared"));
	cr_assert_not_null(l, "shared mutex not reported");
	cr_expect_str_eq(kind_of(l), "mutex");
	/* each worker's, and main's one */
	cr_expect_eq(e2e_int(l, "acquisitions"), threads * iters + 1, "shared: %ld",
		     e2e_int(l, "acquisitions"));

	l = find_lock(p, printed(dir, "rwlock"));
	cr_assert_not_null(l);
	cr_expect_str_eq(kind_of(l), "rwlock");
	cr_expect_eq(e2e_int(l, "acquisitions"), 2 * threads * (iters / 10));

	l = find_lock(p, printed(dir, "spin"));
	cr_assert_not_null(l);
	cr_expect_str_eq(kind_of(l), "spin");
	cr_expect_eq(e2e_int(l, "acquisitions"), threads * (iters / 10));

	l = find_lock(p, printed(dir, "sem"));
	cr_assert_not_null(l);
	cr_expect_str_eq(kind_of(l), "sem");
	cr_expect_eq(e2e_int(l, "acquisitions"), threads * (iters / 10));

	l = find_lock(p, printed(dir, "barrier"));
	cr_assert_not_null(l);
	cr_expect_str_eq(kind_of(l), "barrier");
	cr_expect_eq(e2e_int(l, "acquisitions"), threads * 3);
	cr_expect_eq(e2e_int(l, "contended"), threads * 3);
	json_decref(doc);
}

/* A process that ends by _exit() (no exit handlers) has every acquisition counted too: the
 * lock table's counts are written at _exit as at exit (a snapshot taken on the way had
 * 512 of 1000). */
Test(locks, exact_counts_when_the_process_ends_by__exit)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_counts"), "4", "20000", "_exit", NULL };
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_counts failed: %d", st);
	json_t *p = e2e_process(doc, 0);
	json_t *l = find_lock(p, printed(dir, "shared"));
	cr_assert_not_null(l);
	cr_expect_eq(e2e_int(l, "acquisitions"), 4 * 20000 + 1);
	l = find_lock(p, printed(dir, "private0"));
	cr_assert_not_null(l);
	cr_expect_eq(e2e_int(l, "acquisitions"), 20000);
	l = find_lock(p, printed(dir, "rwlock"));
	cr_assert_not_null(l);
	cr_expect_eq(e2e_int(l, "acquisitions"), 2 * 4 * (20000 / 10));
	json_decref(doc);
}

/* A lock only one thread uses is never contended and never changes owner. */
Test(locks, private_lock_has_no_contention)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_counts"), "4", "20000", NULL };
	json_t *doc = profile(argv, NULL, &dir, NULL);
	json_t *l = find_lock(e2e_process(doc, 0), printed(dir, "private0"));
	cr_assert_not_null(l, "private mutex not reported");
	cr_expect_eq(e2e_int(l, "acquisitions"), 20000);
	cr_expect_eq(e2e_int(l, "contended"), 0);
	cr_expect_eq(e2e_int(l, "wait_ns"), 0);
	cr_expect_eq(e2e_int(l, "owner_changes"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(l, "stack_is")), "first_use");
	json_decref(doc);
}

/* Hold times past the first 256 holds are sampled, one hold in PROF_LOCK_HOLD_SAMPLE counting
 * for that many: the total must be the estimate the program works out from its own timing of
 * every hold, for a mutex and a rwlock, with the default sample and another. */
Test(locks, sampled_hold_times_add_up_to_their_estimate)
{
	const char *samples[] = { "64", "16" };
	for (int k = 0; k < 2; k++) {
		char var[64];
		snprintf(var, sizeof(var), "PROF_LOCK_HOLD_SAMPLE=%s", samples[k]);
		const char *env[] = { k ? var : NULL, NULL };  /* 64: the default */
		const char *argv[] = { e2e_prog("lock_holds"), "3000", "20", samples[k], NULL };
		const char *dir;
		json_t *doc = profile(argv, env, &dir, NULL);
		const char *names[] = { "mutex", "rwlock" };
		for (int i = 0; i < 2; i++) {
			json_t *l = find_lock(e2e_process(doc, 0), printed(dir, names[i]));
			cr_assert_not_null(l, "%s not reported", names[i]);
			char key[64];
			snprintf(key, sizeof(key), "%s_estimate", names[i]);
			long want = atol(printed(dir, key)), got = e2e_int(l, "hold_ns");
			cr_expect_eq(e2e_int(l, "acquisitions"), 3000);
			cr_expect_eq(e2e_int(l, "hold_sample"), atol(samples[k]));
			cr_expect(got > want * 0.9 && got < want * 1.1,
				  "%s, sample %s: hold_ns %ld, the program's estimate %ld", names[i],
				  samples[k], got, want);
			cr_expect_geq(e2e_int(l, "max_hold_ns"), 20000);
		}
		json_decref(doc);
	}
}

/* main holds the shared mutex for 100 ms while the workers start: they wait, and the report
 * says where; the locks are sorted by total wait; the threads' blocked time adds up. */
Test(locks, contended_lock_shows_wait_at_its_stack)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_counts"), "4", "2000", NULL };
	json_t *doc = profile(argv, NULL, &dir, NULL);
	json_t *p = e2e_process(doc, 0);
	json_t *locks = json_object_get(p, "locks");
	json_t *l = find_lock(p, printed(dir, "shared"));
	cr_assert_not_null(l);
	cr_expect_eq(json_array_get(locks, 0), l, "the shared mutex is not first by wait");
	cr_expect_geq(e2e_int(l, "contended"), 4);
	cr_expect_geq(e2e_int(l, "wait_ns"), 4 * 50 * 1000000L, "wait %ld", e2e_int(l, "wait_ns"));
	cr_expect_geq(e2e_int(l, "max_wait_ns"), 50 * 1000000L);
	cr_expect_str_eq(json_string_value(json_object_get(l, "stack_is")), "first_contended");
	cr_expect(stack_has(l, "contend_shared"), "first contended stack lacks contend_shared");
	cr_expect(stack_has(l, "worker"));
	cr_expect_gt(e2e_int(l, "hold_ns"), 0);
	cr_expect_gt(e2e_int(l, "owner_changes"), 0);
	long prev = -1;
	size_t i;
	json_t *x;
	json_array_foreach(locks, i, x) {
		if (prev >= 0)
			cr_expect_leq(e2e_int(x, "wait_ns"), prev, "locks not sorted by wait");
		prev = e2e_int(x, "wait_ns");
	}
	long blocked = 0;
	json_array_foreach(json_object_get(p, "threads"), i, x)
		blocked += e2e_int(x, "lock_wait_ns");
	cr_expect_geq(blocked, e2e_int(l, "wait_ns"));
	json_decref(doc);

	/* the flame graph weighs the contending stack by its wait */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s flame --kind lock --folded %s", e2e_prof(), dir);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char line[4096];
	long weight = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "worker;contend_shared"))
			weight += atol(strrchr(line, ' ') + 1);
	cr_expect_eq(pclose(f), 0);
	cr_expect_geq(weight, 4 * 50 * 1000000L, "flame weight %ld", weight);
}

/* Blocking in pthread_cond_wait is a wait on the condition variable, not contention on
 * its mutex. */
Test(locks, cond_waits_are_waits_not_mutex_contention)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_cond"), NULL };
	json_t *doc = profile(argv, NULL, &dir, NULL);
	json_t *p = e2e_process(doc, 0);
	json_t *c = find_lock(p, printed(dir, "cond"));
	json_t *m = find_lock(p, printed(dir, "mutex"));
	cr_assert_not_null(c, "condition variable not reported");
	cr_assert_not_null(m, "mutex not reported");
	cr_expect_str_eq(kind_of(c), "cond");
	cr_expect_str_eq(kind_of(m), "mutex");
	cr_expect_geq(e2e_int(c, "contended"), 6);    /* 5 waits (or more, if spurious) + 1 timed */
	cr_expect_eq(e2e_int(c, "timeouts"), 1);
	cr_expect_geq(e2e_int(c, "wait_ns"), 5 * 20 * 1000000L, "cond wait %ld", e2e_int(c, "wait_ns"));
	cr_expect(stack_has(c, "wait_for_item"));
	cr_expect_lt(e2e_int(m, "wait_ns"), 20 * 1000000L, "mutex wait %ld", e2e_int(m, "wait_ns"));
	/* the mutex is not held while the consumer sleeps in the wait */
	cr_expect_lt(e2e_int(m, "hold_ns"), 50 * 1000000L, "mutex hold %ld", e2e_int(m, "hold_ns"));
	size_t i;
	json_t *t;
	long cond_wait = 0;
	json_array_foreach(json_object_get(p, "threads"), i, t)
		cond_wait += e2e_int(t, "cond_wait_ns");
	cr_expect_geq(cond_wait, 5 * 20 * 1000000L);
	json_decref(doc);
}

/* A thread cancelled inside pthread_cond_wait (lock_cond cancel: 60 ms after it began) waited
 * all that time: its cond wait counts, as one that ended without a signal, and the mutex,
 * taken back by glibc and unlocked by the thread's cleanup handler, was not held meanwhile. */
Test(locks, a_cond_wait_cancelled_is_still_a_wait)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_cond"), "cancel", NULL };
	json_t *doc = profile(argv, NULL, &dir, NULL);
	cr_expect_str_eq(printed(dir, "cancelled"), "1");
	json_t *p = e2e_process(doc, 0);
	json_t *c = find_lock(p, printed(dir, "cond"));
	json_t *m = find_lock(p, printed(dir, "mutex"));
	cr_assert_not_null(c, "condition variable not reported");
	cr_assert_not_null(m, "mutex not reported");
	cr_expect_eq(e2e_int(c, "contended"), 1);
	cr_expect_eq(e2e_int(c, "timeouts"), 1, "a wait that ended without a signal");
	cr_expect_geq(e2e_int(c, "wait_ns"), 40 * 1000000L, "cond wait %ld", e2e_int(c, "wait_ns"));
	cr_expect_lt(e2e_int(m, "hold_ns"), 40 * 1000000L, "mutex hold %ld", e2e_int(m, "hold_ns"));
	cr_expect_eq(e2e_int(m, "contended"), 0);
	size_t i;
	json_t *t;
	long cond_wait = 0;
	json_array_foreach(json_object_get(p, "threads"), i, t)
		cond_wait += e2e_int(t, "cond_wait_ns");
	cr_expect_geq(cond_wait, 40 * 1000000L, "threads' cond waits %ld", cond_wait);
	json_decref(doc);
}

/* Recursive and error-checking mutexes, timeouts, rwlocks, spinlocks and semaphores give
 * exactly the same results with the profiler as without. */
Test(locks, lock_semantics_unchanged)
{
	const char *dir = e2e_tmpdir();
	char plain[512], profiled[512];
	snprintf(plain, sizeof(plain), "%s/plain.txt", dir);
	snprintf(profiled, sizeof(profiled), "%s/profiled.txt", dir);
	const char *argv[] = { e2e_prog("lock_semantics"), NULL };
	int st = e2e_run(argv, NULL, plain, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = e2e_profile(dir, argv, NULL, profiled, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char *a = e2e_read_file(plain), *b = e2e_read_file(profiled);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_expect_str_eq(b, a);
	cr_expect_not_null(strstr(a, "EDEADLK"));
	cr_expect_not_null(strstr(a, "ETIMEDOUT"));
	cr_expect_not_null(strstr(a, "EPERM"));
	cr_expect_not_null(strstr(a, "EBUSY"));
	free(a);
	free(b);
}

/* The lock at addr whose acquisitions are n (several locks may share an address), or NULL. */
static json_t *lock_with(json_t *proc, const char *addr, long n)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(proc, "locks"), i, l)
		if (!strcmp(json_string_value(json_object_get(l, "address")), addr) &&
		    e2e_int(l, "acquisitions") == n)
			return l;
	return NULL;
}

/* Locks that take the address of a lock destroyed (or freed and initialized again) before
 * them are locks of their own, each with its counts and its first stack, not one lock with
 * the sum (tests/progs/lock_lifetimes.c). */
Test(locks, a_lock_made_where_one_ended_is_a_new_lock)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_lifetimes"), NULL };
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_lifetimes failed: %d", st);
	json_t *p = e2e_process(doc, 0);
	char first[64];
	snprintf(first, sizeof(first), "%s", printed(dir, "mutex1"));
	if (strcmp(first, printed(dir, "mutex2")) || strcmp(first, printed(dir, "reinit2")))
		cr_skip_test("malloc did not give the same block back");

	json_t *l = lock_with(p, first, 2);
	cr_assert_not_null(l, "the destroyed mutex is not a lock of its own");
	cr_expect_eq(e2e_int(l, "contended"), 1);
	cr_expect(stack_has(l, "wait_for_first_mutex"));
	l = lock_with(p, first, 1000);
	cr_assert_not_null(l, "the mutex made after it is not a lock of its own");
	cr_expect_eq(e2e_int(l, "contended"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(l, "stack_is")), "first_use");
	cr_expect(stack_has(l, "take_second_mutex"), "its stack is the first one's");
	cr_expect(!stack_has(l, "wait_for_first_mutex"));

	/* freed without a destroy, then initialized again */
	cr_expect_not_null(lock_with(p, first, 30));
	cr_expect_not_null(lock_with(p, first, 40));

	const char *sem = printed(dir, "sem1");
	cr_expect_not_null(lock_with(p, sem, 10));
	cr_expect_not_null(lock_with(p, sem, 20));
	json_decref(doc);
}

static json_t *thread_named(json_t *proc, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(proc, "threads"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "name")), name))
			return t;
	return NULL;
}

/* Names from pthread_setname_np and prctl(PR_SET_NAME); parents; start routines. */
Test(locks, thread_names_parents_and_routines)
{
	const char *argv[] = { e2e_prog("thread_names"), NULL };
	json_t *doc = profile(argv, NULL, NULL, NULL);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(json_array_size(json_object_get(p, "threads")), 4);
	json_t *main_t = json_array_get(json_object_get(p, "threads"), 0);
	json_t *namer = thread_named(p, "prctl-name");
	json_t *grand = thread_named(p, "grandchild");
	cr_assert_not_null(namer, "no thread named by prctl");
	cr_assert_not_null(grand);
	cr_expect_eq(e2e_int(namer, "parent_tid"), e2e_int(main_t, "tid"));
	cr_expect_eq(e2e_int(grand, "parent_tid"), e2e_int(namer, "tid"));
	cr_expect_str_eq(json_string_value(json_object_get(namer, "start_routine")), "namer_main");
	cr_expect_str_eq(json_string_value(json_object_get(grand, "start_routine")),
			 "grandchild_main");
	cr_expect(json_is_null(json_object_get(main_t, "parent_tid")));
	cr_expect_gt(e2e_int(main_t, "join_wait_ns"), 10 * 1000000L);
	cr_expect_gt(e2e_int(namer, "end_ns"), e2e_int(namer, "start_ns"));
	json_decref(doc);

	/* the name set by pthread_setname_np, before the thread renamed itself */
	const char *dir = e2e_tmpdir();
	e2e_profile(dir, argv, NULL, NULL, NULL);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s dump %s | grep -c 'THREAD_NAME'", e2e_prof(), dir);
	FILE *f = popen(cmd, "r");
	int n = 0;
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	cr_expect_eq(n, 3, "THREAD_NAME records: %d", n);
}

/* The acquisitions of every lock of process p, summed. */
static long acquisitions(json_t *p)
{
	long acq = 0;
	size_t j;
	json_t *l;
	json_array_foreach(json_object_get(p, "locks"), j, l)
		acq += e2e_int(l, "acquisitions");
	return acq;
}

/* fork while other threads hold and contend locks: every child takes locks and exits. */
Test(locks, fork_with_contended_locks_does_not_deadlock, .timeout = 60)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_fork"), NULL };
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_fork failed: %d", st);
	size_t i, children = 0;
	json_t *p;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		if (i == 0)
			continue;
		children++;
		/* the child's own mutex, 1000 times, and child_lock 2 x 10000; the child ends in
		 * _exit, so the counts are those of the last snapshots (every 4096) */
		long acq = acquisitions(p);
		cr_expect_geq(acq, 16000, "child %zu: %ld acquisitions", i, acq);
	}
	cr_expect_eq(children, 8);
	json_decref(doc);
}

/* The program's own malloc takes a pthread mutex: our hooks run inside it (and the profiler's
 * own allocations go through it). */
Test(locks, hooks_inside_malloc_do_not_deadlock, .timeout = 60)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_malloc"), NULL };
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_malloc failed: %d", st);
	json_t *l = find_lock(e2e_process(doc, 0), printed(dir, "allocator"));
	cr_assert_not_null(l);
	cr_expect_geq(e2e_int(l, "acquisitions"), 4 * 20000 * 2);
	json_decref(doc);
}

/* PROF_EVENTS without lock: no lock section, threads still named. */
Test(locks, lock_events_off)
{
	const char *argv[] = { e2e_prog("lock_counts"), "2", "1000", NULL };
	const char *env[] = { "PROF_EVENTS=alloc,thread", NULL };
	json_t *doc = profile(argv, env, NULL, NULL);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(json_array_size(json_object_get(p, "locks")), 0);
	cr_expect_eq(json_array_size(json_object_get(p, "threads")), 3);
	json_decref(doc);
}

/* Past the lock table's entries, a lock has no counters, but the waits on it are still
 * recorded, shown with "-" for what was not counted, and libprof says at exit that the table
 * filled up (tests/progs/lock_many.c: 50 ms waited on a lock first taken after that). Under
 * `ulimit -v 262144` the table has 2^14 entries instead of 2^18, which keeps the run short. */
Test(locks, waits_on_locks_past_a_full_table_are_recorded)
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX], cmd[3 * PATH_MAX];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	snprintf(cmd, sizeof(cmd),
		 "ulimit -v 262144; exec env LD_PRELOAD=%s PROF_OUTPUT=%s/prof.%%n.%%p.trace %s 40000",
		 e2e_lib(), dir, e2e_prog("lock_many"));
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(e2e_run(argv, NULL, NULL, err), 0);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "lock table filled up"), "%s", text);
	free(text);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *lock = json_array_get(json_object_get(e2e_process(doc, 0), "locks"), 0);
	cr_assert_not_null(lock);
	cr_expect_eq(e2e_int(lock, "contended"), 1);
	cr_expect_geq(e2e_int(lock, "wait_ns"), 40 * 1000 * 1000L);
	cr_expect(json_is_false(json_object_get(lock, "counted")));
	json_decref(doc);
}

/* Every blocked call is a LOCK_WAIT record: most of a contended mutex's are 16-byte short
 * ones (shared/prof_short.h), the rest (a chunk's first, a lock far from the one before, a
 * condition wait) ordinary. Read back, they agree with each lock's own counters, wait by wait,
 * and the lock flame graph finds their stacks (tests/progs/lock_waits.c). */
Test(locks, short_and_ordinary_lock_waits_agree_with_the_counters)
{
	const char *dir;
	const char *argv[] = { e2e_prog("lock_waits"), "4", "1000", NULL };
	json_t *doc = profile(argv, NULL, &dir, NULL);
	json_t *p = e2e_process(doc, 0);
	char cmd[2048], line[4096];

	/* Per lock: the LOCK_WAIT records' count and summed wait against its counters. */
	snprintf(cmd, sizeof(cmd),
		 "%s dump %s | awk '$5 == \"LOCK_WAIT\" { for (i = 6; i <= NF; i++) {"
		 " if ($i ~ /^lock=/) l = substr($i, 6); if ($i ~ /^wait_ns=/) w = substr($i, 9) }"
		 " n[l]++; s[l] += w } END { for (l in n) printf \"%%s %%d %%.0f\\n\", l, n[l], s[l] }'",
		 e2e_prof(), dir);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	int locks = 0;
	char addr[64];
	long n;
	double sum;
	while (fgets(line, sizeof(line), f) && sscanf(line, "%63s %ld %lf", addr, &n, &sum) == 3) {
		json_t *l = find_lock(p, addr);
		cr_assert_not_null(l, "no counters for lock %s", addr);
		cr_expect_eq(e2e_int(l, "contended"), n, "%s: %ld records", addr, n);
		cr_expect_eq(e2e_int(l, "wait_ns"), (long)sum, "%s: records sum %.0f", addr, sum);
		locks++;
	}
	cr_expect_eq(pclose(f), 0);
	cr_expect_geq(locks, 11, "waits on %d locks", locks);  /* 8 + far + timed + rw (+ cond) */

	/* The mutexes taken in take(): their waits, by stack, in the flame graph. */
	long in_take = 0;
	const char *names[] = { "array0", "array1", "array2", "array3", "array4", "array5",
				"array6", "array7", "far" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *l = find_lock(p, printed(dir, names[i]));
		cr_assert_not_null(l, "%s", names[i]);
		in_take += e2e_int(l, "wait_ns");
	}
	cr_expect_gt(in_take, 0);
	json_decref(doc);
	snprintf(cmd, sizeof(cmd), "%s flame --kind lock --folded %s", e2e_prof(), dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	long weight = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, ";worker;take ") || strstr(line, ";worker;take;"))
			weight += atol(strrchr(line, ' ') + 1);
	cr_expect_eq(pclose(f), 0);
	cr_expect_eq(weight, in_take, "flame %ld, counters %ld", weight, in_take);

	/* How many of the mutexes' LOCK_WAIT records (op "lock") are short: prof dump says so.
	 * Ordinary ones: a chunk's first, a wait after one on the far lock or 8.4 ms after the
	 * one before (a busy machine). */
	snprintf(cmd, sizeof(cmd),
		 "%s dump %s | awk '$5 == \"LOCK_WAIT\" && $6 == \"lock\" {"
		 " if (/\\[short: 16 bytes\\]$/) s++; else other++ } END { print s + 0, other + 0 }'",
		 e2e_prof(), dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	long shorts = -1, others = -1;
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_eq(sscanf(line, "%ld %ld", &shorts, &others), 2);
	cr_expect_eq(pclose(f), 0);
	cr_expect_gt(shorts, others, "%ld short LOCK_WAIT records of mutexes, %ld others", shorts,
		     others);
}

/* The report of argv run under libprof, which must exit 0; *text: what the program printed. */
static json_t *profile_printed(const char *const argv[], char **text)
{
	const char *dir;
	int st;
	json_t *doc = profile(argv, NULL, &dir, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed: %d", argv[0], st);
	char path[512];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	*text = e2e_read_file(path);
	cr_assert_not_null(*text);
	return doc;
}

/* A prefork server (tests/progs/fork_tables.c): the lock and stack tables, which a fork child
 * empties anyway, are not shared with the children (MADV_WIPEONFORK), so the parent's next
 * pass over its 2000 locks faults about as often as without libprof (20 pages of its own
 * mutexes) instead of once a lock (each lock's entry has a page of the hashed table to
 * itself); and each child, starting from the empty tables, records all 2000 locks and its 24
 * call paths with their own stacks. */
Test(locks, a_fork_shares_no_table_the_child_empties, .timeout = 60)
{
	const char *argv[] = { e2e_prog("fork_tables"), "2000", "4", NULL };
	char *text;
	json_t *doc = profile_printed(argv, &text);
	long faults = -1;
	cr_assert_eq(sscanf(text, "faults_after_fork %ld", &faults), 1, "%s", text);
	free(text);
	cr_expect_lt(faults, 500, "the parent's pass over 2000 locks after a fork: %ld faults",
		     faults);
	size_t i, children = 0;
	json_t *p;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		if (i == 0)
			continue;
		children++;
		cr_expect_eq(json_array_size(json_object_get(p, "locks")), 2000, "child %zu", i);
		cr_expect_eq(acquisitions(p), 2000, "child %zu", i);
		/* one site per path: 1 to 24 frames of alloc_at */
		json_t *sites = json_object_get(json_object_get(p, "heap"), "sites");
		cr_expect_eq(json_array_size(sites), 24, "child %zu", i);
		unsigned seen = 0;
		size_t j;
		json_t *s;
		json_array_foreach(sites, j, s) {
			size_t k, depth = 0;
			json_t *fr;
			json_array_foreach(json_object_get(s, "stack"), k, fr)
				depth += !strcmp(json_string_value(json_object_get(fr, "function")) ?: "",
						 "alloc_at");
			if (depth >= 1 && depth <= 24)
				seen |= 1u << (depth - 1);
		}
		cr_expect_eq(seen, (1u << 24) - 1, "child %zu: paths seen %#x", i, seen);
	}
	cr_expect_eq(children, 4);
	json_decref(doc);
}

/* A program's locks sit side by side: the first use of 4000 mutexes of an array costs the
 * lock table a few page faults for many locks (a group of slots per page of the program's;
 * tests/progs/lock_array.c), where a hash of each address took two faults a lock. All 4000
 * are counted, once each. */
Test(locks, locks_side_by_side_share_pages_of_the_table)
{
	const char *argv[] = { e2e_prog("lock_array"), "4000", NULL };
	char *text;
	json_t *doc = profile_printed(argv, &text);
	long faults = -1, locks = 0;
	cr_assert_eq(sscanf(text, "faults %ld locks %ld", &faults, &locks), 2, "%s", text);
	free(text);
	cr_expect_lt(faults, 1000, "the first use of 3999 locks: %ld faults", faults);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(json_array_size(json_object_get(p, "locks")), 4000);
	cr_expect_eq(acquisitions(p), 4000);
	json_decref(doc);
}
