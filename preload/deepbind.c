/* Libraries that bind past the hooks. An object dlopen'ed with RTLD_DEEPBIND looks symbols up
 * in its own dependencies first, so its calls to malloc, free, pthread_mutex_lock ... go to
 * libc, never to libprof: a strdup (caught, inside libc) freed by such a library would stay
 * a false leak. After such a dlopen, every object's GOT slot (JUMP_SLOT and GLOB_DAT
 * relocations) for a symbol the global scope binds to one of our hooks, and that holds the
 * definition after ours (libc's) or is still unresolved (lazy binding: it points into the
 * object itself), gets our hook: what the object would have bound without RTLD_DEEPBIND, for
 * our symbols only. RELRO pages are made writable for the write and read-only again.
 *
 * dlopen is wrapped for this, and only a DEEPBIND call leaves the wrapper by a return: any
 * other goes to glibc's dlopen by a tail jump, so glibc still sees the caller's address (it
 * searches the caller's RUNPATH). A DEEPBIND dlopen of a bare name is therefore searched with
 * libprof's RUNPATH (none) and the program's, not the calling library's. */
#include "prof.h"
#include "cuda.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void *(*dlopen_fn)(const char *, int);
static dlopen_fn real_dlopen;

static int is_ours(const void *p)
{
	Dl_info a, b;
	return p && dladdr(p, &a) && dladdr((void *)is_ours, &b) && a.dli_fbase == b.dli_fbase;
}

struct scan {
	uintptr_t skip_base;  /* the object defining the real malloc: libc */
};

static void patch_object(struct dl_phdr_info *info)
{
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t lo = UINTPTR_MAX, hi = 0, relro = 0, relro_len = 0, bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = bias + ph->p_vaddr;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)s;
		else if (ph->p_type == PT_GNU_RELRO)
			relro = s, relro_len = ph->p_memsz;
		else if (ph->p_type == PT_LOAD) {
			lo = s < lo ? s : lo;
			hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
		}
	}
	if (!dyn)
		return;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rel[2] = { NULL, NULL };
	size_t relsz[2] = { 0, 0 };
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		/* glibc relocates these in place; an unrelocated one is still an offset */
		uintptr_t p = d->d_un.d_ptr < bias ? d->d_un.d_ptr + bias : d->d_un.d_ptr;
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
		case DT_STRTAB: strtab = (const char *)p; break;
		case DT_JMPREL: rel[0] = (const ElfW(Rela) *)p; break;
		case DT_PLTRELSZ: relsz[0] = d->d_un.d_val; break;
		case DT_RELA: rel[1] = (const ElfW(Rela) *)p; break;
		case DT_RELASZ: relsz[1] = d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t rw_lo = relro & ~(uintptr_t)(page - 1), rw_hi = relro + relro_len;
	int opened = 0;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; rel[k] && i < relsz[k] / sizeof(ElfW(Rela)); i++) {
			const ElfW(Rela) *r = &rel[k][i];
			unsigned type = ELF64_R_TYPE(r->r_info), si = ELF64_R_SYM(r->r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si)
				continue;
			const char *name = strtab + symtab[si].st_name;
			void **slot = (void **)(bias + r->r_offset);
			uintptr_t cur = (uintptr_t)*slot;
			void *next = cuda_real_dlsym(RTLD_NEXT, name);
			if (!next || !(cur == (uintptr_t)next || (cur >= lo && cur < hi)))
				continue;
			void *hook = cuda_real_dlsym(RTLD_DEFAULT, name);
			if (hook == next || !is_ours(hook))
				continue;
			if ((uintptr_t)slot >= rw_lo && (uintptr_t)slot < rw_hi && !opened) {
				if (mprotect((void *)rw_lo, rw_hi - rw_lo, PROT_READ | PROT_WRITE))
					return;
				opened = 1;
			}
			__atomic_store_n(slot, hook, __ATOMIC_RELEASE);
			prof_dbg(1, "deepbind: %s in %s now reaches libprof", name, info->dlpi_name);
		}
	}
	if (opened)
		mprotect((void *)rw_lo, rw_hi - rw_lo, PROT_READ);
}

static int patch_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const struct scan *sc = arg;
	const char *n = info->dlpi_name ? info->dlpi_name : "";
	if (info->dlpi_addr == sc->skip_base || strstr(n, "/ld-linux") || strstr(n, "linux-vdso") ||
	    is_ours((void *)(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr)))
		return 0;
	patch_object(info);
	return 0;
}

__attribute__((noinline)) static void *dlopen_deep(const char *file, int mode)
{
	void *h = real_dlopen(file, mode);
	if (h) {
		struct prof_thread *th = &prof_self;
		prof_hook_enter(th);
		Dl_info libc;
		struct scan sc = { 0 };
		if (dladdr(cuda_real_dlsym(RTLD_NEXT, "malloc"), &libc))
			sc.skip_base = (uintptr_t)libc.dli_fbase;
		prof_dl_iterate(patch_one, &sc);
		th->in_hook--;
	}
	return h;
}

PROF_EXPORT void *dlopen(const char *file, int mode)
{
	if (unlikely(!real_dlopen))
		real_dlopen = (dlopen_fn)cuda_real_dlsym(RTLD_NEXT, "dlopen");
	if (unlikely(mode & RTLD_DEEPBIND))
		return dlopen_deep(file, mode);
	return real_dlopen(file, mode);  /* a tail jump: the caller's return address stays */
}
