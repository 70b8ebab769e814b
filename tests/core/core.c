/* Stubs for what writer.c and stacks.c use from the rest of libprof, and the helpers of
 * core.h. */
#include "core.h"

#include "ctest.h"
#include <dlfcn.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct prof_config prof_cfg = { .events = PROF_EV_ALL, .stack_depth = 64, .max_size = 64ull << 30 };
_Atomic int prof_active;
_Atomic int prof_start_state = 2;
__thread struct prof_thread prof_self;

static _Atomic int log_count;
static char log_last[512];
static _Atomic uint32_t next_serial = 1;
static char dir[64];
static char path[4096];

void prof_start(void)
{
}

void prof_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(log_last, sizeof(log_last), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&log_count, 1);
}

void prof_say(const char *a, const char *b, const char *c, int err)
{
	snprintf(log_last, sizeof(log_last), "%s%s%s: %d", a, b, c, err);
	atomic_fetch_add(&log_count, 1);
}

int prof_addr_is_ours(uintptr_t ip)
{
	(void)ip;
	return 0;
}

int prof_addr_known(uintptr_t ip)
{
	(void)ip;
	return 1;
}

uint32_t prof_modules_known(void)
{
	return 1;  /* one object, never another: a fork family's book stays usable */
}

int prof_module_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	(void)addr;
	(void)lo;
	(void)hi;
	return 0;
}

_Atomic uint32_t prof_code_unloads;
const pthread_mutex_t *prof_loader_lock;  /* a test points it at a mutex of its own */

int prof_addr_in_objects(uintptr_t addr, size_t len)
{
	(void)addr;
	(void)len;
	return 0;  /* libunwind checks every read past a frame without unwind info, as it would */
}

void prof_modules_rescan(void)
{
}

_Atomic int prof_modules_stale;

void prof_own_memory(const void *p, size_t len)
{
	(void)p;
	(void)len;
}

int prof_hook_stale(struct prof_thread *th, uintptr_t hook_frame)
{
	(void)th, (void)hook_frame;
	return 0;  /* no longjmp hooks here: jumped is never set */
}

void *prof_dlsym_optional(void *handle, const char *name)
{
	return dlsym(handle, name);
}

int core_log_count(void)
{
	return atomic_load(&log_count);
}

const char *core_log_last(void)
{
	return log_last;
}

const char *core_dir(void)
{
	return dir;
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* Each test runs in a process of its own: its trace directory goes when that process does. */
static void remove_dir(void)
{
	if (dir[0])
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void core_open(uint64_t max_size)
{
	if (dir[0])
		remove_dir();  /* a test that opens one trace after another */
	else
		atexit(remove_dir);
	snprintf(dir, sizeof(dir), "/tmp/prof-core-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(prof_cfg.output, sizeof(prof_cfg.output), "%s/core.trace", dir);
	if (max_size)
		prof_cfg.max_size = max_size;
	char *argv[] = { "core-test", NULL };
	cr_assert_eq(prof_writer_open(0, 1, argv), 0, "cannot open the trace: %s", log_last);
	snprintf(path, sizeof(path), "%s", prof_writer_path());
	prof_stacks_reset();
	atomic_store(&prof_active, 1);
}

const char *core_close(void)
{
	prof_writer_set_state(PROF_STATE_EXITED);
	atomic_store(&prof_active, 0);
	prof_writer_close(0);
	return path;
}

struct prof_thread *core_thread_begin(void)
{
	struct prof_thread *th = &prof_self;
	th->serial = atomic_fetch_add(&next_serial, 1);
	th->tid = (uint32_t)gettid();
	return th;
}

void core_thread_end(struct prof_thread *th)
{
	prof_writer_thread_done(th);
}

int core_alloc(struct prof_thread *th, uint64_t ptr, uint64_t size)
{
	struct prof_rec_alloc *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return 0;
	r->ptr = ptr;
	r->size = size;
	r->stack = 0;
	r->pad = 0;
	prof_commit(r, PROF_REC_ALLOC, PROF_ALLOC_MALLOC, sizeof(*r), prof_now());
	return 1;
}

int core_stack_record(struct prof_thread *th, uint32_t id, uint32_t depth)
{
	uint32_t size = (uint32_t)sizeof(struct prof_rec_stack) + 8u * depth;
	struct prof_rec_stack *r = prof_reserve(th, size);
	if (!r)
		return 0;
	r->id = id;
	r->depth = depth;
	for (uint32_t i = 0; i < depth; i++)
		r->frames[i] = 0x1000u + i;
	prof_commit(r, PROF_REC_STACK, 0, size, prof_now());
	return 1;
}

struct trace *core_read(const char *p)
{
	char err[512] = "";
	struct trace *t = trace_open(p, err, sizeof(err));
	cr_assert_not_null(t, "reader refuses the trace: %s", err);
	return t;
}
