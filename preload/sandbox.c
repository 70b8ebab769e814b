/* Seccomp sandboxes. A program that installs a seccomp filter as it runs (prctl(PR_SET_SECCOMP),
 * or the seccomp system call through syscall(2), as libseccomp does) may have the system calls
 * libprof makes from then on refused: growing the trace, naming a file, unwinding, timers,
 * the exit's leak scan. A refusal by errno is one libprof already copes with (it stands aside
 * where a call of its own fails), but a filter may kill the process instead (SIGSYS), or trap
 * the call into the program's own handler. So before the filter is installed, libprof runs it
 * (classic BPF, as the kernel would) on each system call it may make; where any would not be
 * allowed or refused by errno, recording ends there: what was counted is written, the trace is
 * marked as switched off (DISABLED: no EXIT record, reported incomplete), every hook passes
 * its call through, and the programs the process starts from then on (under its filter) run
 * without libprof. Said once. A process that starts under a filter (a container's) is
 * profiled: its filter was there first. */
#include "prof.h"
#include "heap_tally.h"
#include "io.h"
#include "locks.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic int sandboxed;

int prof_sandboxed(void)
{
	return atomic_load(&sandboxed);
}

/* ---- running a filter ---------------------------------------------------------------------
 * The system calls libprof may make once recording runs: the trace's growth, new traces of
 * fork children, naming files and sockets, unwinding, CPU sampling, the exit's leak scan. */
static const int calls_made[] = {
	SYS_read, SYS_write, SYS_openat, SYS_close, SYS_fstat, SYS_newfstatat, SYS_lseek,
	SYS_mmap, SYS_munmap, SYS_mprotect, SYS_madvise, SYS_mremap, SYS_pread64, SYS_pwrite64,
	SYS_fallocate, SYS_ftruncate, SYS_fcntl, SYS_dup, SYS_pipe2, SYS_readlink, SYS_readlinkat,
	SYS_getcwd, SYS_getdents64, SYS_getsockname, SYS_getpeername, SYS_getsockopt, SYS_getpid,
	SYS_gettid, SYS_uname, SYS_getrlimit, SYS_prlimit64, SYS_rt_sigaction, SYS_rt_sigprocmask,
	SYS_rt_sigreturn, SYS_tgkill, SYS_futex, SYS_sched_yield, SYS_clock_gettime,
	SYS_timer_create, SYS_timer_settime, SYS_timer_delete, SYS_process_vm_readv, SYS_prctl,
	SYS_exit_group,
};

/* The action the filter takes on call nr (arguments 0), or -1 where it cannot be run. */
static long filter_action(const struct sock_fprog *prog, int nr)
{
	struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	for (unsigned pc = 0, steps = 0; pc < prog->len && steps < 4096; pc++, steps++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;
			if (BPF_MODE(f->code) == BPF_ABS && BPF_SIZE(f->code) == BPF_W &&
			    k % 4 == 0 && k + 4 <= sizeof(d))
				memcpy(&v, (const char *)&d + k, 4);
			else if (BPF_MODE(f->code) == BPF_IMM)
				v = k;
			else if (BPF_MODE(f->code) == BPF_MEM && k < BPF_MEMWORDS)
				v = mem[k];
			else if (BPF_MODE(f->code) == BPF_LEN)
				v = sizeof(d);
			else
				return -1;
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -1;
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV: if (!src) return -1; a /= src; break;
			case BPF_MOD: if (!src) return -1; a %= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return -1;
			}
			break;
		case BPF_JMP: {
			int taken;
			switch (BPF_OP(f->code)) {
			case BPF_JA: pc += k; continue;
			case BPF_JEQ: taken = a == src; break;
			case BPF_JGT: taken = a > src; break;
			case BPF_JGE: taken = a >= src; break;
			case BPF_JSET: taken = (a & src) != 0; break;
			default: return -1;
			}
			pc += taken ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return -1;
		}
	}
	return -1;
}

/* Whether the filter lets every call libprof makes through or refuses it by errno. */
static int runs_spare_us(const struct sock_fprog *prog)
{
	for (size_t i = 0; i < sizeof(calls_made) / sizeof(calls_made[0]); i++) {
		long ret = filter_action(prog, calls_made[i]);
		if (ret < 0)
			return 0;
		uint32_t action = (uint32_t)ret & SECCOMP_RET_ACTION_FULL;
		if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG &&
		    action != SECCOMP_RET_ERRNO)
			return 0;
	}
	return 1;
}

/* The same for the program's filter, copied first without faulting (the kernel answers a bad
 * pointer with EFAULT, which the program may expect): NULL (strict mode: read, write and exit
 * alone), or one that cannot be copied, does not. */
static int filter_spares_us(const struct sock_fprog *user)
{
	struct sock_fprog head;
	struct iovec local = { &head, sizeof(head) }, remote = { (void *)user, sizeof(head) };
	if (!user || process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != sizeof(head) ||
	    !head.len || head.len > BPF_MAXINSNS)
		return 0;
	size_t bytes = head.len * sizeof(struct sock_filter);
	void *copy = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return 0;
	local = (struct iovec){ copy, bytes };
	remote = (struct iovec){ head.filter, bytes };
	int spares = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)bytes &&
		     runs_spare_us(&(struct sock_fprog){ head.len, copy });
	munmap(copy, bytes);
	return spares;
}

/* ---- entering a sandbox -------------------------------------------------------------------- */

void prof_sandbox_entered(const struct sock_fprog *filter)
{
	if (filter_spares_us(filter) || atomic_exchange(&sandboxed, 1))
		return;
	int err = errno;
	if (prof_recording_here()) {
		struct prof_thread *th = prof_thread_get();
		prof_hook_enter(th);
		heap_tally_flush_all(th);
		io_batches_flush_all(th);
		prof_locks_flush();
		prof_cpu_stop(th);  /* the other threads' ticks find recording off */
		prof_writer_set_state(PROF_STATE_DISABLED);
		atomic_store(&prof_active, 0);
		th->in_hook--;
		prof_log("the program installs a seccomp filter that may kill it for a system call of "
			 "libprof's: recording stops here, and the programs it starts are not profiled");
	}
	errno = err;
}
