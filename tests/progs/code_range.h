/* For the test programs that look at where a signal interrupted them: the code (executable
 * PT_LOAD segment) of the loaded object whose path contains `name`. */
#ifndef TESTS_PROGS_CODE_RANGE_H
#define TESTS_PROGS_CODE_RANGE_H

#include <link.h>
#include <stdint.h>
#include <string.h>

struct code_range {
	const char *name;
	uintptr_t lo, hi;  /* 0, 0: not loaded */
};

static int code_range_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct code_range *r = arg;
	if (!strstr(info->dlpi_name, r->name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			r->lo = info->dlpi_addr + ph->p_vaddr;
			r->hi = r->lo + ph->p_memsz;
		}
	}
	return 1;
}

static struct code_range code_range(const char *name)
{
	struct code_range r = { name, 0, 0 };
	dl_iterate_phdr(code_range_of, &r);
	return r;
}

#endif
