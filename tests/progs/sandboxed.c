/* A program that enters a seccomp sandbox after it started, as sshd's privilege-separated
 * child or a browser's renderer does: its filter kills the process (SIGSYS) on the system
 * calls a profiler may make but the program does not need (growing a file: fallocate,
 * pwrite64, ftruncate; reading a directory or a link: getdents64, readlink, readlinkat;
 * timers: timer_create). libprof must stop recording before the filter is in place.
 * "denylist" is a hardening filter instead, which kills only on calls neither needs (mount,
 * reboot, ptrace, kexec_load): there recording goes on.
 *   sandboxed prctl|syscall|denylist N [exec]
 * Installs the filter through prctl(PR_SET_SECCOMP) or syscall(SYS_seccomp) (denylist: the
 * latter), then allocates and frees N blocks and says so on stdout; with "exec", then runs
 * itself again ("child"), under the same filter, which allocates and says "child". */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		_exit(3);
}

static void churn(long n)
{
	void *keep[64] = { 0 };
	for (long i = 0; i < n; i++) {
		free(keep[i & 63]);
		keep[i & 63] = malloc(16 + (size_t)(i & 255));
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
}

#define KILL_ON(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

static int enter_sandbox(const char *how)
{
	struct sock_filter deny[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		KILL_ON(__NR_mount), KILL_ON(__NR_reboot), KILL_ON(__NR_ptrace),
		KILL_ON(__NR_kexec_load),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		KILL_ON(__NR_fallocate), KILL_ON(__NR_pwrite64), KILL_ON(__NR_ftruncate),
		KILL_ON(__NR_getdents64), KILL_ON(__NR_readlink), KILL_ON(__NR_readlinkat),
		KILL_ON(__NR_timer_create),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };
	if (!strcmp(how, "denylist"))
		prog = (struct sock_fprog){ (unsigned short)(sizeof(deny) / sizeof(deny[0])), deny };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (!strcmp(how, "prctl"))
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "child")) {
		churn(1000);
		say("child\n");
		return 0;
	}
	if (argc < 3 ||
	    (strcmp(argv[1], "prctl") && strcmp(argv[1], "syscall") && strcmp(argv[1], "denylist"))) {
		say("usage: sandboxed prctl|syscall|denylist N [exec]\n");
		return 2;
	}
	churn(1000);  /* before: recorded */
	if (enter_sandbox(argv[1]) != 0) {
		perror("seccomp");
		return 1;
	}
	churn(atol(argv[2]));
	say("sandboxed\n");
	if (argc > 3 && !strcmp(argv[3], "exec")) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		return 4;
	}
	return 0;
}
