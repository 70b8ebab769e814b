/* Name tables for the trace format, generated from the X-macro lists in prof_format.h. */
#include "prof_format.h"
#include <string.h>

/* A switch, not a table: two families claiming one value fail to compile (duplicate case). */
const char *prof_rec_type_name(unsigned type)
{
	switch (type) {
#define PROF_X(name, value, st) case value: return #name;
		PROF_RECORD_TYPES(PROF_X)
#undef PROF_X
	default: return NULL;
	}
}

static const char *const alloc_fn_names[] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc",
};
_Static_assert(sizeof(alloc_fn_names) / sizeof(alloc_fn_names[0]) == PROF_ALLOC_FN_COUNT,
	       "one name per enum prof_alloc_fn");

const char *prof_alloc_fn_name(unsigned fn)
{
	return fn < PROF_ALLOC_FN_COUNT ? alloc_fn_names[fn] : "?";
}

/* Parses "alloc,lock" or "all"; sets *bad when a word is unknown (it is then ignored).
 * No allocation: the preload library calls it before malloc is usable. */
unsigned prof_events_parse(const char *list, int *bad)
{
	unsigned mask = 0;
	*bad = 0;
	while (list && *list) {
		size_t n = strcspn(list, ",");
		if (n == 3 && strncmp(list, "all", 3) == 0)
			mask |= PROF_EV_ALL;
#define PROF_X(name, str, bit) \
		else if (n == sizeof(str) - 1 && strncmp(list, str, n) == 0) mask |= PROF_EV_##name;
		PROF_EVENT_FAMILIES(PROF_X)
#undef PROF_X
		else if (n > 0)
			*bad = 1;
		list += n;
		if (*list == ',')
			list++;
	}
	return mask;
}
