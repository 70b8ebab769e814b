/* New processes made without fork(): vfork, clone, _Fork and the system calls themselves
 * through syscall(2). fork() runs the handlers of pthread_atfork, where a child starts a
 * trace of its own (prof_fork_child()); these do not, so here:
 *
 * - A copy of the process (_Fork, clone without CLONE_VM, syscall(SYS_fork)) starts its own
 *   trace as a fork child does. Without that it would go on writing into its parent's trace
 *   (a shared mapping) at the parent's own positions, and no command could read it again.
 * - A child that borrows the parent's memory (vfork, clone(CLONE_VM | CLONE_VFORK)) runs on the
 *   calling thread's memory and thread-local state until it execs or exits: its dup2 and
 *   close would be recorded as the parent's, and rename the parent's descriptors. The hooks
 *   see the thread "inside libprof" (in_hook) until the parent resumes, and pass its calls
 *   through; its exec still carries libprof to the program it starts.
 *
 * vfork and syscall are written in assembly, as glibc's are: in a vfork child a C function
 * would return, and its frame be reused, while the suspended parent still needs it; a clone
 * child given a stack of its own returns from the system call onto that stack. */
#include "prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- vfork ---------------------------------------------------------------------------------- */

/* Called from the assembly below (hidden, so never interposed). */
void prof_vfork_begin(void);
long prof_vfork_parent(long rc);
long prof_syscall_in_c(long nr, ...);
long prof_syscall_failed(long rc);

void prof_vfork_begin(void)
{
	prof_hook_enter(&prof_self);
	prof_self.hook_frame = UINTPTR_MAX;  /* the child's every frame is inside */
}

/* The parent resumes (the child has exec'd or exited), or the call failed. */
long prof_vfork_parent(long rc)
{
	prof_self.in_hook--;
	prof_borrower_done();
	if ((unsigned long)rc > -4096ul) {
		errno = (int)-rc;
		return -1;
	}
	prof_fork_parent((pid_t)rc);
	return rc;
}

#if defined(__x86_64__)
/* The return address waits in %rdi (kept by the kernel) while the child runs: the child
 * returns through the stack slot and may overwrite it; the parent pushes it back. */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	".cfi_startproc\n"
	".Lvfork:\n"
	"	subq $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	call prof_vfork_begin\n"
	"	addq $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_register %rip, %rdi\n"
	"	movl $" PROF_STR(SYS_vfork) ", %eax\n"
	"	syscall\n"
	"	pushq %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rip, 0\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	movq %rax, %rdi\n"
	"	jmp prof_vfork_parent\n"
	"1:	ret\n"
	".cfi_endproc\n"
	".size vfork, .-vfork\n");
#endif

/* ---- _Fork and clone ------------------------------------------------------------------------ */

static void copied(pid_t pid)
{
	if (pid == 0) {
		int err = errno;
		prof_fork_child();
		errno = err;
	} else if (pid > 0) {
		prof_leak_made_copy();
		prof_fork_parent(pid);
	}
}

/* glibc's fork without the atfork handlers (async-signal-safe). */
PROF_EXPORT pid_t _Fork(void)
{
	static pid_t (*real)(void);
	if (!real)
		real = (pid_t (*)(void))prof_dlsym_optional(RTLD_NEXT, "_Fork");
	pid_t pid = real ? real() : (pid_t)syscall(SYS_fork);
	copied(pid);
	return pid;
}

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

struct clone_start {
	int (*fn)(void *);
	void *arg;
};

/* The first function of a copy made by clone(): `start` is in the parent's frame, which the
 * copy has as it was. Its return ends the process, as _exit would. */
static int clone_copy_start(void *start)
{
	struct clone_start s = *(struct clone_start *)start;
	prof_self.stack_lo = 0;  /* it runs on the stack clone() was given, of a size unknown */
	copied(0);
	int status = s.fn(s.arg);
	prof_quick_exit(status);
	return status;
}

PROF_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	static clone_fn real;
	va_list ap;
	va_start(ap, arg);
	pid_t *parent_tid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *child_tid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!real)
		real = (clone_fn)dlsym(RTLD_NEXT, "clone");
	if (!(flags & CLONE_VM)) {
		struct clone_start s = { fn, arg };
		int pid = real(clone_copy_start, stack, flags, &s, parent_tid, tls, child_tid);
		if (pid > 0)
			copied(pid);
		return pid;
	}
	if ((flags & CLONE_VFORK) && !(flags & CLONE_SETTLS)) {  /* runs on our thread's state */
		prof_hook_enter(&prof_self);
		prof_self.hook_frame = UINTPTR_MAX;  /* the child's every frame is inside */
		int rc = real(fn, stack, flags, arg, parent_tid, tls, child_tid);
		prof_self.in_hook--;
		prof_borrower_done();
		return rc;
	}
	return real(fn, stack, flags, arg, parent_tid, tls, child_tid);
}

/* ---- syscall(2) ----------------------------------------------------------------------------- */

/* The raw system call, as glibc's syscall() makes it: the hook must not need anything
 * resolved, as libprof's own early calls of syscall() come through it too. */
static long raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if ((unsigned long)ret > -4096ul) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/* Calls that may return twice on one stack never come here (the assembly below). Seccomp,
 * as libseccomp installs a filter (glibc has no seccomp()), is run against our own system
 * calls first; a copy of the process starts its own trace. */
long prof_syscall_in_c(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_seccomp && (a1 == SECCOMP_SET_MODE_FILTER || a1 == SECCOMP_SET_MODE_STRICT))
		prof_sandbox_entered(a1 == SECCOMP_SET_MODE_FILTER ?
					     (const struct sock_fprog *)(uintptr_t)a3 : NULL);
	long rc = raw_syscall(nr, a1, a2, a3, a4, a5, a6);
	if (nr == SYS_fork || nr == SYS_clone)  /* a copy on this stack (see below) */
		copied((pid_t)rc);
	return rc;
}

long prof_syscall_failed(long rc)
{
	errno = (int)-rc;
	return -1;
}

#if defined(__x86_64__)
/* vfork goes to the hook above. clone with CLONE_VM (a thread, or vfork's way), or with a
 * stack of its own, and clone3 (its flags are in memory the kernel reads), are made here as
 * glibc makes them; the other calls in C. */
__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	"syscall:\n"
	".cfi_startproc\n"
	"	cmpq $" PROF_STR(SYS_vfork) ", %rdi\n"
	"	je .Lvfork\n"
	"	cmpq $" PROF_STR(SYS_clone3) ", %rdi\n"
	"	je 2f\n"
	"	cmpq $" PROF_STR(SYS_clone) ", %rdi\n"
	"	jne prof_syscall_in_c\n"
	"	testq $" PROF_STR(CLONE_VM) ", %rsi\n"
	"	jnz 2f\n"
	"	testq %rdx, %rdx\n"
	"	jz prof_syscall_in_c\n"
	"2:	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	movq %rdx, %rsi\n"
	"	movq %rcx, %rdx\n"
	"	movq %r8, %r10\n"
	"	movq %r9, %r8\n"
	"	movq 8(%rsp), %r9\n"
	"	syscall\n"
	"	cmpq $-4095, %rax\n"
	"	jae 3f\n"
	"	ret\n"
	"3:	movq %rax, %rdi\n"
	"	jmp prof_syscall_failed\n"
	".cfi_endproc\n"
	".size syscall, .-syscall\n");
#endif
