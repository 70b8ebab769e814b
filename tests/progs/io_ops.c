/* I/O test program: deterministic file, stdio, pipe and socket traffic, one scenario per
 * run: io_ops MODE DIR. The e2e tests compare what libprof counts with what strace sees. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[65536];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

/* 10,000 bytes in 100-byte writes, then pwrite, writev; read back in 4 KiB reads to EOF. */
static void write_plain(const char *dir)
{
	char path[4096];
	path_in(path, sizeof(path), dir, "plain.dat");
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);  /* MARK-OPEN-PLAIN */
	if (fd < 0)
		die("open");
	memset(buf, 'a', sizeof(buf));
	for (int i = 0; i < 100; i++)
		write_all(fd, buf, 100);
	if (pwrite(fd, buf, 500, 20000) != 500)
		die("pwrite");
	struct iovec iov[2] = { { buf, 300 }, { buf + 300, 700 } };
	if (writev(fd, iov, 2) != 1000)
		die("writev");
	if (fsync(fd) < 0)
		die("fsync");
	if (lseek(fd, 0, SEEK_SET) != 0)
		die("lseek");
	ssize_t r;
	while ((r = read(fd, buf, 4096)) > 0)
		;
	if (pread(fd, buf, 1234, 100) != 1234)
		die("pread");
	struct iovec riov[2] = { { buf, 10 }, { buf + 10, 20 } };
	if (readv(fd, riov, 2) != 0)  /* at the end: EOF */
		die("readv");
	close(fd);
}

static void read_plain(const char *dir)
{
	char path[4096];
	path_in(path, sizeof(path), dir, "plain.dat");
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open");
	while (read(fd, buf, 3000) > 0)
		;
	close(fd);
}

static void mode_plain(const char *dir)
{
	write_plain(dir);
	read_plain(dir);
}

/* The same file through dup, dup2, dup3 and fcntl(F_DUPFD) copies. */
static void mode_dup(const char *dir)
{
	char path[4096];
	path_in(path, sizeof(path), dir, "dup.dat");
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		die("open");
	int a = dup(fd);
	int b = dup2(fd, 40);
	int c = dup3(fd, 41, O_CLOEXEC);
	int d = fcntl(fd, F_DUPFD, 50);
	if (a < 0 || b != 40 || c != 41 || d < 50)
		die("dup");
	close(fd);
	memset(buf, 'd', 1000);
	write_all(a, buf, 111);
	write_all(b, buf, 222);
	write_all(c, buf, 333);
	write_all(d, buf, 444);
	close(a);
	close(b);
	close(c);
	close(d);
	/* The number is reused for another file: its bytes must not go to dup.dat. */
	path_in(path, sizeof(path), dir, "other.dat");
	int e = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (e < 0)
		die("open");
	if (dup2(e, 40) != 40)
		die("dup2");
	write_all(40, buf, 55);
	close(40);
	close(e);
}

/* stdio: bytes handed to stdio reach the file when it is flushed. */
static void mode_stdio(const char *dir)
{
	char path[4096];
	path_in(path, sizeof(path), dir, "stdio.txt");
	FILE *f = fopen(path, "w");
	if (!f)
		die("fopen");
	for (int i = 0; i < 500; i++)
		fprintf(f, "line %d of the stdio test\n", i);
	fputs("a line by fputs\n", f);
	fputc('x', f);
	putc('\n', f);
	memset(buf, 's', 5000);
	fwrite(buf, 1, 5000, f);
	fwrite(buf, 100, 7, f);
	fputc('\n', f);
	fflush(f);
	fclose(f);

	f = fopen(path, "r");
	if (!f)
		die("fopen");
	char line[256];
	for (int i = 0; i < 100 && fgets(line, sizeof(line), f); i++)
		;
	for (int i = 0; i < 10; i++)
		fgetc(f);
	char *lp = NULL;
	size_t cap = 0;
	for (int i = 0; i < 50 && getline(&lp, &cap, f) > 0; i++)
		;
	free(lp);
	while (fread(buf, 1, 1000, f) > 0)
		;
	fclose(f);
	printf("stdio done\n");
	puts("puts line");
}

static void exchange(int a, int b, size_t n)
{
	memset(buf, 'p', n);
	size_t got = 0;
	write_all(a, buf, n);
	while (got < n) {
		ssize_t r = read(b, buf, n - got);
		if (r <= 0)
			die("read");
		got += (size_t)r;
	}
}

static void mode_socketpair(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair");
	exchange(sv[0], sv[1], 7000);
	memset(buf, 'q', 300);
	if (send(sv[1], buf, 300, 0) != 300)
		die("send");
	if (recv(sv[0], buf, 300, MSG_WAITALL) != 300)
		die("recv");
	struct iovec iov = { buf, 123 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (sendmsg(sv[0], &m, 0) != 123)
		die("sendmsg");
	if (recvmsg(sv[1], &m, MSG_WAITALL) != 123)
		die("recvmsg");
	shutdown(sv[0], SHUT_WR);
	if (read(sv[1], buf, 10) != 0)  /* EOF */
		die("read eof");
	close(sv[0]);
	close(sv[1]);

	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	exchange(p[1], p[0], 5000);
	close(p[1]);
	if (read(p[0], buf, 10) != 0)
		die("pipe eof");
	close(p[0]);
}

/* A loopback TCP connection the program serves itself (small enough for socket buffers). */
static void mode_tcp(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 4) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) < 0)
		die("listen");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	int s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept");
	exchange(c, s, 20000);  /* client -> server */
	memset(buf, 'r', 3000);
	if (send(s, buf, 3000, 0) != 3000)
		die("send");
	size_t got = 0;
	while (got < 3000) {
		ssize_t r = recv(c, buf, sizeof(buf), 0);
		if (r <= 0)
			die("recv");
		got += (size_t)r;
	}
	close(c);
	if (read(s, buf, 100) != 0)  /* the client closed: EOF */
		die("eof");
	close(s);
	close(ls);
}

/* Failing calls and EOF; errno as each call left it, printed for comparison. */
static void mode_errors(const char *dir)
{
	char path[4096];
	errno = 0;
	ssize_t r = read(-1, buf, 10);
	printf("read(-1) = %zd errno %d\n", r, errno);
	r = write(999, buf, 10);
	printf("write(999) = %zd errno %d\n", r, errno);
	path_in(path, sizeof(path), dir, "missing/none.txt");
	int fd = open(path, O_RDONLY);
	printf("open(missing) = %d errno %d\n", fd, errno);
	FILE *f = fopen(path, "r");
	printf("fopen(missing) = %s errno %d\n", f ? "FILE" : "NULL", errno);
	errno = 1234;
	path_in(path, sizeof(path), dir, "empty.txt");
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	printf("open(empty) ok %d errno %d\n", fd >= 0, errno);
	r = read(fd, buf, 10);
	printf("read(empty) = %zd errno %d\n", r, errno);
	errno = 77;
	close(fd);
	printf("close ok errno %d\n", errno);
	r = close(fd);
	printf("close again = %zd errno %d\n", r, errno);
	errno = 0;
	off_t o = lseek(0, 0, 99);
	printf("lseek bad whence = %ld errno %d\n", (long)o, errno);
}

static int cookie_fd;

static ssize_t cookie_write(void *cookie, const char *p, size_t n)
{
	(void)cookie;
	return write(cookie_fd, p, n);
}

/* Streams without a descriptor: one made by fopencookie() whose write function writes to
 * cookie.dat (what reaches the file is I/O of that descriptor, as strace sees it), and one
 * by open_memstream() (no I/O at all); errno is what the program left before fclose. */
static void mode_cookie(const char *dir)
{
	char path[4096];
	path_in(path, sizeof(path), dir, "cookie.dat");
	cookie_fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (cookie_fd < 0)
		die("open cookie.dat");
	cookie_io_functions_t fns = { .write = cookie_write };
	FILE *f = fopencookie(NULL, "w", fns);
	if (!f)
		die("fopencookie");
	setvbuf(f, NULL, _IOFBF, 256);
	memset(buf, 'c', 100);
	for (int i = 0; i < 10; i++)
		if (fwrite(buf, 1, 100, f) != 100)
			die("fwrite");
	fprintf(f, "%s\n", "end");
	errno = 4321;
	if (fclose(f) != 0)
		die("fclose");
	printf("errno after fclose %d\n", errno);
	close(cookie_fd);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		die("open_memstream");
	fprintf(m, "in memory %d", 42);
	fclose(m);
	printf("memstream %zu bytes\n", len);
	free(text);
}

static sigjmp_buf timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	siglongjmp(timed_out, 1);
}

/* Reads that time out the old way: a SIGALRM handler siglongjmp()s out of a read that waits
 * for ever (an empty pipe), three times; then timeout.dat (32 KiB) is written and read back in
 * 4 KiB reads, from the same function as the reads that never returned. */
static void mode_timeout(const char *dir)
{
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	signal(SIGALRM, on_alarm);
	int timeouts = 0;
	for (int i = 0; i < 3; i++) {
		if (sigsetjmp(timed_out, 1) == 0) {
			struct itimerval it = { { 0, 0 }, { 0, 20000 } };
			setitimer(ITIMER_REAL, &it, NULL);
			if (read(p[0], buf, 1) >= 0)
				die("read of an empty pipe returned");
		} else {
			timeouts++;
		}
	}
	signal(SIGALRM, SIG_DFL);
	char path[4096];
	path_in(path, sizeof(path), dir, "timeout.dat");
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0)
		die("open timeout.dat");
	memset(buf, 't', 32768);
	write_all(fd, buf, 32768);
	if (lseek(fd, 0, SEEK_SET) != 0)
		die("lseek");
	long got = 0;
	ssize_t r;
	while ((r = read(fd, buf, 4096)) > 0)
		got += r;
	close(fd);
	printf("timeouts %d, read back %ld\n", timeouts, got);
}

/* close(2) without libc, whose syscall() libprof hooks too: a close no hook sees. */
static long unseen_close(int fd)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_close), "D"((long)fd) : "rcx", "r11", "memory");
	return r;
#else
	return syscall(SYS_close, fd);
#endif
}

/* forked: a fork child uses descriptors its parent opened, closed, reused, dup'ed and
 * moved: each call is the file's the descriptor is at the fork (second.dat: 600 bytes, the
 * pipe: 7, DIR: an lseek), none first.dat's, whose number opendir took (an open no hook
 * sees) and second.dat's next. third.dat is opened and moved to 60, then closed there by a
 * system call no hook sees, just before the fork: the child does not have it. */
static void mode_forked(const char *dir)
{
	char first[4096], second[4096];
	path_in(first, sizeof(first), dir, "first.dat");
	path_in(second, sizeof(second), dir, "second.dat");
	int fd = open(first, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		die("open");
	memset(buf, 'f', 1000);
	write_all(fd, buf, 10);
	close(fd);
	DIR *d = opendir(dir);
	if (!d || dirfd(d) != fd)
		die("opendir");
	int same = open(second, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	int moved = fcntl(same, F_DUPFD, 50);
	int p[2];
	if (same < 0 || dup2(same, 41) != 41 || moved < 50 || pipe(p) < 0)
		die("second.dat");
	int out = dup(p[1]);
	close(p[1]);
	char third[4096];
	path_in(third, sizeof(third), dir, "third.dat");
	int opened = open(third, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	int gone = fcntl(opened, F_DUPFD, 60);  /* above the number the child's trace takes */
	if (opened < 0 || gone < 60 || close(opened) != 0 || unseen_close(gone) != 0)
		die("third.dat");
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		write_all(same, buf, 100);
		write_all(41, buf, 200);
		write_all(moved, buf, 300);
		write_all(out, buf, 7);
		if (lseek(dirfd(d), 0, SEEK_SET) < 0)
			die("lseek");
		exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		die("child");
	printf("pipe: %zd bytes\n", read(p[0], buf, sizeof(buf)));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: io_ops plain|dup|stdio|socketpair|tcp|errors|timeout|cookie|forked DIR\n");
		return 2;
	}
	const char *mode = argv[1], *dir = argc > 2 ? argv[2] : ".";
	if (!strcmp(mode, "plain"))
		mode_plain(dir);
	else if (!strcmp(mode, "dup"))
		mode_dup(dir);
	else if (!strcmp(mode, "stdio"))
		mode_stdio(dir);
	else if (!strcmp(mode, "socketpair"))
		mode_socketpair();
	else if (!strcmp(mode, "tcp"))
		mode_tcp();
	else if (!strcmp(mode, "errors"))
		mode_errors(dir);
	else if (!strcmp(mode, "timeout"))
		mode_timeout(dir);
	else if (!strcmp(mode, "cookie"))
		mode_cookie(dir);
	else if (!strcmp(mode, "forked"))
		mode_forked(dir);
	else
		return 2;
	return 0;
}
