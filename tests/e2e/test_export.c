/* prof export --format chrome: a timeline chrome://tracing and Perfetto open, from a real run
 * with contended locks, threads, stdout writes and heap activity. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(export, .fini = teardown, .timeout = 120);

static size_t count(json_t *events, const char *ph, const char *cat, const char *name_part)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *c = json_string_value(json_object_get(e, "cat"));
		const char *name = json_string_value(json_object_get(e, "name"));
		if (p && !strcmp(p, ph) && (!cat || (c && !strcmp(c, cat))) &&
		    (!name_part || (name && strstr(name, name_part))))
			n++;
	}
	return n;
}

Test(export, chrome_timeline_of_a_real_run)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/timeline.json", dir);
	const char *argv[] = { e2e_prog("lock_counts"), "4", "2000", NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	const char *cmd[] = { e2e_prof(), "export", "--format", "chrome", "-o", out, dir, NULL };
	cr_assert_eq(e2e_run(cmd, NULL, NULL, NULL), 0);
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "not JSON: %s (line %d)", je.text, je.line);
	json_t *ev = json_object_get(doc, "traceEvents");
	cr_assert(json_is_array(ev));
	cr_expect_eq(count(ev, "M", NULL, "process_name"), 1);
	cr_expect_geq(count(ev, "M", NULL, "thread_name"), 5, "main and 4 workers named");
	cr_expect_geq(count(ev, "X", "lock", "mutex"), 1, "the contended waits");
	cr_expect_geq(count(ev, "X", "io", NULL), 1, "the writes to stdout");
	cr_expect_geq(count(ev, "C", NULL, "heap"), 1, "the heap counter");
	cr_expect_eq(count(ev, "i", "process", "exit 0"), 1);
	/* Durations are never negative and events carry numeric timestamps. */
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "M"))
			cr_assert(json_is_number(json_object_get(e, "ts")));
		if (json_object_get(e, "dur"))
			cr_assert_geq(json_number_value(json_object_get(e, "dur")), 0);
	}
	json_decref(doc);
}

Test(export, unknown_format_and_bad_trace_fail_cleanly)
{
	const char *dir = e2e_tmpdir();
	char bad[PATH_MAX], err[PATH_MAX];
	snprintf(bad, sizeof(bad), "%s/bad.trace", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	FILE *f = fopen(bad, "w");
	cr_assert_not_null(f);
	fputs("not a trace at all\n", f);
	fclose(f);
	const char *fmt[] = { e2e_prof(), "export", "--format", "svg", bad, NULL };
	int st = e2e_run(fmt, NULL, NULL, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	const char *cmd[] = { e2e_prof(), "export", "--format", "chrome", bad, NULL };
	st = e2e_run(cmd, NULL, NULL, err);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_eq(e2e_count_lines(text), 1, "%s", text);
	cr_expect_not_null(strstr(text, bad));
	free(text);
}
