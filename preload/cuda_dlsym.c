/* The dlsym hook: how libprof sees the driver calls of cudart (shared or static) and of any
 * program that dlopens libcuda. A dlsym(libcuda, "cuGetProcAddress_v2") (or any wrapped cu*
 * entry point) gets our wrapper, which keeps the real function in its slot. Everything else,
 * and every RTLD_NEXT lookup, goes to the real dlsym by a tail jump, so glibc still sees the
 * original caller's return address (RTLD_NEXT is relative to the caller's object). */
#include "cuda.h"

#include <dlfcn.h>
#include <string.h>

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;

static void resolve_dlsym(void)
{
	dlsym_fn f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!f)
		f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	real_dlsym = f;
}

/* For libprof's own look-ups: RTLD_NEXT here is relative to libprof. */
__attribute__((noinline)) void *cuda_real_dlsym(void *handle, const char *name)
{
	if (unlikely(!real_dlsym))
		resolve_dlsym();
	void *p = real_dlsym(handle, name);
	__asm__ volatile("" ::: "memory");  /* not a tail call: the caller must be libprof */
	return p;
}

/* CUPTI and the driver look up driver functions for their own use: never wrap those. */
static int caller_is_cuda_internal(const void *caller)
{
	Dl_info info;
	if (!dladdr(caller, &info) || !info.dli_fname)
		return 0;
	const char *base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	return !strncmp(base, "libcupti", 8) || !strncmp(base, "libcuda.", 8) ||
	       !strncmp(base, "libnvperf", 9);
}

__attribute__((noinline)) static void *dlsym_cuda(void *handle, const char *name, void *caller)
{
	void *p = real_dlsym(handle, name);
	if (!p || !prof_enabled(PROF_EV_CUDA) || prof_addr_is_ours((uintptr_t)p))
		return p;
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);
	void *w = NULL;
	if (!caller_is_cuda_internal(caller) && !(w = cuda_driver_wrapper_by_symbol(name, p)))
		w = cupti_hook_by_symbol(name);
	th->in_hook--;
	return w ? w : p;
}

PROF_EXPORT void *dlsym(void *handle, const char *name)
{
	if (unlikely(!real_dlsym))
		resolve_dlsym();
	if (handle != RTLD_NEXT && name[0] == 'c' && name[1] == 'u' && !prof_in_hook(&prof_self))
		return dlsym_cuda(handle, name, __builtin_return_address(0));
	return real_dlsym(handle, name);  /* a tail jump: the caller's return address stays */
}
