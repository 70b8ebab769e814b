/* Issue 16: libraries that bind past the hooks, programs that cannot be preloaded. */
#include "e2e.h"

#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A library dlopen'ed with RTLD_DEEPBIND binds malloc and free to libc's: libprof redirects
 * them, so what it frees is freed (no false 35-byte leak of its strdup) and the totals are
 * valgrind's (tests/progs/deepbind.c). */
Test(trust, deepbind_library_reaches_the_hooks)
{
	const char *dir = e2e_tmpdir();
	char lib[PATH_MAX];
	snprintf(lib, sizeof(lib), "%s/progs/libdeep.so", e2e_build());
	const char *argv[] = { e2e_prog("deepbind"), lib, NULL };
	cr_assert_eq(e2e_profile(dir, argv, NULL, NULL, NULL), 0);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	json_t *sites = json_object_get(json_object_get(p, "heap"), "sites");
	size_t i;
	json_t *s;
	/* The strdup's site, known by deep_dup in its stack (not by its 35 bytes: the loader's
	 * copy of the library's path, which stays allocated, is 35 bytes where the path is 34). */
	int dup_sites = 0;
	json_array_foreach(sites, i, s) {
		size_t j;
		json_t *f;
		int in_dup = 0;
		json_array_foreach(json_object_get(s, "stack"), j, f)
			in_dup |= !strcmp(json_string_value(json_object_get(f, "function")) ?: "", "deep_dup");
		if (!in_dup)
			continue;
		dup_sites++;
		cr_expect_eq(e2e_int(s, "bytes"), 35);
		cr_expect_eq(e2e_int(s, "leaked_bytes"), 0, "the strdup'ed 35 bytes reported leaked");
	}
	cr_expect_eq(dup_sites, 1, "the strdup in deep_dup is one site");
	if (system("valgrind --version >/dev/null 2>&1") == 0) {
		struct vg_summary vg;
		cr_assert_eq(e2e_valgrind(argv, &vg), 0);
		cr_expect_eq(e2e_int(p, "heap.alloc_calls"), vg.allocs);
		cr_expect_eq(e2e_int(p, "heap.free_calls"), vg.frees);
		cr_expect_eq(e2e_int(p, "heap.bytes_allocated"), vg.bytes);
		cr_expect_eq(e2e_int(p, "heap.leaked_bytes"), vg.in_use_bytes);
	}
	json_decref(doc);
}
