/* The list of event families. A new family is its own files plus one entry here. */
#include "family.h"
#include "prof_format.h"

#include <string.h>

#define PROF_ANALYZER_FAMILIES(X) X(cpu) X(heap) X(locks) X(io) X(cuda) X(db) X(http) X(mpi)

#define DECLARE(f) extern const struct family f##_family;
PROF_ANALYZER_FAMILIES(DECLARE)
#undef DECLARE

#define ENTRY(f) &f##_family,
const struct family *const families[] = { PROF_ANALYZER_FAMILIES(ENTRY) NULL };
#undef ENTRY

_Static_assert(sizeof(families) / sizeof(families[0]) <= FAMILY_MAX + 1, "raise FAMILY_MAX");

unsigned char family_route[FAMILY_TYPES];
unsigned char family_observer[FAMILY_TYPES];
int family_routed;

void family_route_init(void)
{
	for (size_t i = 0; families[i]; i++) {
		const struct family *f = families[i];
		for (unsigned t = f->first_type; t <= f->last_type && t < FAMILY_TYPES; t++)
			family_route[t] = (unsigned char)(i + 1);
		for (unsigned t = f->more_first; t && t <= f->more_last && t < FAMILY_TYPES; t++)
			family_route[t] = (unsigned char)(i + 1);
		for (unsigned t = f->observe_first; f->observe && t <= f->observe_last &&
		     t < FAMILY_TYPES; t++)
			family_observer[t] = (unsigned char)(i + 1);
		for (unsigned t = f->observe_more_first; f->observe && t &&
		     t <= f->observe_more_last && t < FAMILY_TYPES; t++)
			family_observer[t] = (unsigned char)(i + 1);
	}
	family_routed = 1;
}

size_t family_index(const struct family *f)
{
	size_t i = 0;
	while (families[i] && families[i] != f)
		i++;
	return i;
}

const struct flame_kind *flame_kind_find(const char *name, const struct family **owner)
{
	for (size_t i = 0; families[i]; i++)
		for (size_t k = 0; k < families[i]->nflames; k++)
			if (!strcmp(families[i]->flames[k].name, name)) {
				if (owner)
					*owner = families[i];
				return &families[i]->flames[k];
			}
	return NULL;
}
