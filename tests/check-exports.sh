#!/usr/bin/env bash
# tests/check-exports.sh LIB: fails unless every dynamic symbol LIB defines is a hook.
# A preloaded library shares the program's global namespace: any other exported name (our
# internals, a statically linked libunwind or jansson) could interpose on, or be interposed by,
# a symbol of the profiled program. The allowed names are listed below; a new hook family is
# added here together with the issue that brings it.
set -euo pipefail

if (($# != 1)); then
	echo "usage: tests/check-exports.sh LIB.so" >&2
	exit 2
fi
lib=$1
if [[ ! -f $lib ]]; then
	echo "check-exports: $lib: no such file" >&2
	exit 2
fi
command -v nm >/dev/null || { echo "check-exports: nm not found (binutils)" >&2; exit 2; }

# Hooks, by exact name.
allowed_names=(
	# heap
	malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc
	# processes and programs
	fork vfork execve execv execvp execvpe execl execlp execle posix_spawn posix_spawnp
	_exit _Exit
	# copies of the process made without fork()'s handlers (clone.c)
	_Fork clone
	# jumps out of a signal handler that may leave a hook of ours (longjmp.c)
	longjmp siglongjmp _longjmp __longjmp_chk
	# limits the program lowers (init.c: our reservations shrink first)
	setrlimit setrlimit64 prlimit prlimit64
	# a seccomp filter installed through syscall(2) (sandbox.c: recording stops first), and
	# fork, vfork and clone made through it (clone.c)
	syscall
	# modules
	dlopen dlclose
	# file and network I/O (preload/io.c), stdio included
	open open64 __open_2 __open64_2 openat openat64 __openat_2 __openat64_2 creat creat64 close
	close_range closefrom
	dup dup2 dup3 fcntl fcntl64 pipe pipe2 read __read_chk write pread pread64 __pread_chk
	__pread64_chk pwrite pwrite64 readv writev preadv preadv64 pwritev pwritev64 preadv2
	preadv64v2 pwritev2 pwritev64v2 lseek lseek64 fsync fdatasync sendfile sendfile64
	copy_file_range mmap mmap64
	socket socketpair connect listen accept accept4 send sendto sendmsg recv __recv_chk recvfrom
	__recvfrom_chk recvmsg shutdown
	fopen fopen64 fdopen freopen freopen64 fclose fflush fflush_unlocked fread fread_unlocked
	__fread_chk __fread_unlocked_chk fwrite fwrite_unlocked fgets fgets_unlocked __fgets_chk
	__fgets_unlocked_chk fputs fputs_unlocked puts fputc putc putchar fputc_unlocked
	putc_unlocked putchar_unlocked fgetc getc getchar fgetc_unlocked getc_unlocked
	getchar_unlocked fprintf vfprintf printf vprintf __fprintf_chk __vfprintf_chk __printf_chk
	__vprintf_chk dprintf vdprintf __dprintf_chk __vdprintf_chk getline getdelim __getdelim
	# threads
	pthread_create pthread_exit prctl
	# CPU sampling: the sampling signal kept from the program (preload/cpu.c), and blocking
	# calls with their off-CPU time (preload/blocking.c)
	sigaction signal sigprocmask nanosleep clock_nanosleep sleep usleep poll __poll_chk ppoll
	__ppoll_chk select pselect epoll_wait epoll_pwait waitpid wait wait3 wait4 waitid sigsuspend
	pause sigwait sigwaitinfo sigtimedwait
	# databases (preload/db.c) and HTTP through OpenSSL (preload/http.c)
	sqlite3_prepare sqlite3_prepare_v2 sqlite3_prepare_v3 sqlite3_prepare16_v2
	sqlite3_prepare16_v3 sqlite3_step sqlite3_reset sqlite3_finalize sqlite3_exec
	PQexec PQexecParams PQprepare PQexecPrepared PQsendQuery PQsendQueryParams PQsendPrepare
	PQsendQueryPrepared PQgetResult PQfinish
	SSL_read SSL_write SSL_read_ex SSL_write_ex SSL_free
	# CUDA: the driver's entry points as cudart looks them up; NVTX's injection path
	dlsym getenv
)
# Hooks, by family (name prefix).
allowed_prefixes=(
	pthread_ sem_                          # threads, locks
	cuda cu __cuda nvtx InitializeInjection # CUDA runtime/driver, NVTX, CUPTI injection
	MPI_                                   # MPI (preload/mpi.c)
)
# What the toolchain defines in every shared object.
allowed_toolchain=(_init _fini __bss_start _edata _end)
# Internals beginning with '_' that we knowingly export (glibc-internal allocator entry points
# some programs call directly). Keep this list short and explicit.
allowed_internal=(__libc_malloc __libc_free __libc_calloc __libc_realloc __libc_memalign)

declare -A allowed=()
for n in "${allowed_names[@]}" "${allowed_toolchain[@]}" "${allowed_internal[@]}"; do
	allowed[$n]=1
done

# Prints the defined dynamic symbols as "TYPE NAME" (version suffix removed).
if ! syms=$(nm -D --defined-only -- "$lib" 2>&1); then
	echo "check-exports: nm failed on $lib: $syms" >&2
	exit 2
fi

offenders=()
count=0
while read -r line; do
	[[ -n $line ]] || continue
	# "ADDRESS TYPE NAME" (or "TYPE NAME" for some symbols without a value)
	read -r -a f <<<"$line"
	if ((${#f[@]} >= 3)); then type=${f[1]} name=${f[2]}; else type=${f[0]} name=${f[1]:-}; fi
	name=${name%%@*}
	# Version definitions (absolute symbols named after a version node) are not code or data.
	if [[ $type == A && $name =~ ^[A-Za-z][A-Za-z0-9_.]*$ && $name != *[a-z]* ]]; then
		continue
	fi
	count=$((count + 1))
	[[ -n ${allowed[$name]:-} ]] && continue
	ok=0
	for p in "${allowed_prefixes[@]}"; do
		if [[ $name == "$p"* ]]; then ok=1; break; fi
	done
	((ok)) || offenders+=("$type $name")
done <<<"$syms"

if ((${#offenders[@]} > 0)); then
	echo "check-exports: $lib exports ${#offenders[@]} symbol(s) that are not hooks:" >&2
	printf '  %s\n' "${offenders[@]}" >&2
	echo "check-exports: mark internals static or leave them hidden (PROF_EXPORT is for hooks only);" \
		"a new hook family goes into tests/check-exports.sh" >&2
	exit 1
fi
echo "check-exports: $lib: $count exported symbols, all hooks"
