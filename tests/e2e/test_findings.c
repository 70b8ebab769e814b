/* End-to-end Findings: prof report opens with them, and --json lists them under "findings"
 * with kind, process, summary, evidence and stack. */
#include "e2e.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(findings, .fini = e2e_cleanup);

static json_t *finding(json_t *doc, const char *kind)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(doc, "findings"), i, f)
		if (!strcmp(json_string_value(json_object_get(f, "kind")), kind))
			return f;
	return NULL;
}

static json_t *profile(const char *dir, const char *prog)
{
	const char *argv[] = { e2e_prog(prog), NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	return doc;
}

Test(findings, lost_blocks_and_temporaries)
{
	const char *dir = e2e_tmpdir();
	json_t *doc = profile(dir, "demo");
	json_t *leak = finding(doc, "leak");
	cr_assert_not_null(leak, "no leak finding");
	cr_expect_gt(e2e_int(leak, "process"), 0);
	cr_expect_gt(e2e_int(leak, "evidence.definitely_lost_blocks"), 0);
	cr_expect_gt(json_array_size(json_object_get(leak, "stack")), 0);
	cr_expect_not_null(strstr(json_string_value(json_object_get(leak, "summary")), "lost"));
	json_t *temp = finding(doc, "temporary_allocations");
	cr_assert_not_null(temp, "no temporary_allocations finding");
	cr_expect_geq(e2e_int(temp, "evidence.temporary"), 1000);
	json_decref(doc);

	const char *args[] = { "report", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	cr_expect_eq(strncmp(text, "-- Findings\n", 12), 0, "%.200s", text);
	cr_expect_not_null(strstr(text, "[leak]"));
	/* A site in several heap lists: its whole stack once (after the findings), then one line. */
	const char *heap = strstr(text, "-- Heap");
	cr_assert_not_null(heap);
	int full = 0;
	for (const char *h = heap; (h = strstr(h, ": make_word (examples/demo.c:")); h++)
		full++;
	cr_expect_eq(full, 1, "%s", heap);
	cr_expect_not_null(strstr(heap, "       at make_word (examples/demo.c:"), "%s", heap);
	cr_expect_not_null(strstr(heap, ", stack above"), "%s", heap);
	free(text);
}

Test(findings, a_hot_lock_and_a_blocked_thread)
{
	const char *dir = e2e_tmpdir();
	json_t *doc = profile(dir, "lock_hot");
	json_t *lock = finding(doc, "lock_wait");
	cr_assert_not_null(lock, "no lock_wait finding");
	cr_expect_gt(e2e_int(lock, "evidence.wait_ns"), e2e_int(lock, "evidence.thread_ns") / 10);
	cr_expect_gt(json_array_size(json_object_get(lock, "stack")), 0);
	cr_expect_not_null(finding(doc, "blocked_thread"));
	cr_expect_null(finding(doc, "leak"));
	json_decref(doc);
}

Test(findings, a_quiet_program_has_none)
{
	const char *dir = e2e_tmpdir();
	json_t *doc = profile(dir, "first_fd");
	cr_expect_eq(json_array_size(json_object_get(doc, "findings")), 0);
	json_decref(doc);
}
