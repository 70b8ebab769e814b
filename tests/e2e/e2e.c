/* Helpers for the end-to-end tests (see e2e.h). */
#include "e2e.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *e2e_build(void)
{
	const char *b = getenv("PROF_BUILD");
	return b && *b ? b : "build";
}

const char *e2e_prog(const char *name)
{
	static char ring[8][PATH_MAX];
	static int next;
	char *buf = ring[next++ % 8];
	snprintf(buf, PATH_MAX, "%s/progs/%s", e2e_build(), name);
	return buf;
}

const char *e2e_prof(void)
{
	static char buf[PATH_MAX];
	const char *a = getenv("PROF_ANALYZER");
	snprintf(buf, sizeof(buf), "%s", a && *a ? a : "");
	if (!buf[0])
		snprintf(buf, sizeof(buf), "%s/prof", e2e_build());
	return buf;
}

const char *e2e_lib(void)
{
	static char buf[PATH_MAX];
	char rel[PATH_MAX];
	snprintf(rel, sizeof(rel), "%s/libprof.so", e2e_build());
	if (!realpath(rel, buf))
		snprintf(buf, sizeof(buf), "%s", rel);
	return buf;
}

static char tmpdirs[128][64];  /* tests that loop over runs take two a run */
static int ntmpdirs;

const char *e2e_tmpdir(void)
{
	if (ntmpdirs == sizeof(tmpdirs) / sizeof(tmpdirs[0]))
		return NULL;
	char *d = tmpdirs[ntmpdirs];
	snprintf(d, 64, "/tmp/prof-e2e.XXXXXX");
	if (!mkdtemp(d))
		return NULL;
	ntmpdirs++;
	static int at_exit;
	if (!at_exit++)
		atexit(e2e_cleanup);  /* for suites without a fini, and tests that stop early */
	return d;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void e2e_cleanup(void)
{
	for (int i = 0; i < ntmpdirs; i++)
		nftw(tmpdirs[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
	ntmpdirs = 0;
}

static int redirect(int fd, const char *file)
{
	int f = open(file ? file : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0)
		return -1;
	dup2(f, fd);
	close(f);
	return 0;
}

int e2e_run(const char *const argv[], const char *const env[], const char *out_file,
	    const char *err_file)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		redirect(1, out_file);
		redirect(2, err_file);
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

int e2e_profile(const char *dir, const char *const argv[], const char *const env[],
		const char *out_file, const char *err_file)
{
	static char preload[PATH_MAX + 16], output[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", e2e_lib());
	snprintf(output, sizeof(output), "PROF_OUTPUT=%s/prof.%%n.%%p.trace", dir);
	/* putenv in order: a test's own PROF_OUTPUT (in env) replaces ours. */
	const char *ordered[32];
	size_t k = 0;
	ordered[k++] = output;
	for (size_t i = 0; env && env[i] && k < 30; i++)
		ordered[k++] = env[i];
	ordered[k++] = preload;
	ordered[k] = NULL;
	return e2e_run(argv, ordered, out_file, err_file);
}

int e2e_valgrind(const char *const argv[], struct vg_summary *s)
{
	const char *d = e2e_tmpdir();
	if (!d)
		return -1;
	char log[PATH_MAX], logopt[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/vg.log", d);
	snprintf(logopt, sizeof(logopt), "--log-file=%s", log);
	const char *vg[40] = { "valgrind", "--tool=memcheck", "--leak-check=full", logopt };
	size_t n = 4;
	for (size_t i = 0; argv[i] && n < 39; i++)
		vg[n++] = argv[i];
	vg[n] = NULL;
	e2e_run(vg, NULL, NULL, NULL);
	char *text = e2e_read_file(log);
	if (!text)
		return -1;
	memset(s, 0, sizeof(*s));
	/* "in use at exit: 1,234 bytes in 5 blocks", "total heap usage: 1 allocs, 1 frees, 9 bytes allocated" */
	for (char *p = text; *p; p++)
		if (*p == ',' && p[1] >= '0' && p[1] <= '9' && p > text && p[-1] >= '0' && p[-1] <= '9')
			memmove(p, p + 1, strlen(p));
	char *u = strstr(text, "in use at exit:");
	char *t = strstr(text, "total heap usage:");
	int ok = u && t &&
		 sscanf(u, "in use at exit: %ld bytes in %ld blocks", &s->in_use_bytes, &s->in_use_blocks) == 2 &&
		 sscanf(t, "total heap usage: %ld allocs, %ld frees, %ld bytes", &s->allocs, &s->frees, &s->bytes) == 3;
	static const char *const classes[4] = { "definitely lost:", "indirectly lost:",
						"possibly lost:", "still reachable:" };
	for (int i = 0; i < 4; i++) {
		char *l = strstr(text, classes[i]);
		s->leak[i][0] = s->leak[i][1] = -1;
		if (l)
			sscanf(l + strlen(classes[i]), " %ld bytes in %ld blocks", &s->leak[i][0],
			       &s->leak[i][1]);
	}
	free(text);
	return ok ? 0 : -1;
}

json_t *e2e_prof_json(const char *command, const char *path)
{
	const char *d = e2e_tmpdir();
	if (!d)
		return NULL;
	char out[PATH_MAX], err[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.json", d);
	snprintf(err, sizeof(err), "%s/err.txt", d);
	/* "leaks --show=all": the command, then one option */
	char cmd[128], *opt = NULL;
	snprintf(cmd, sizeof(cmd), "%s", command);
	if ((opt = strchr(cmd, ' ')))
		*opt++ = 0;
	const char *argv[] = { e2e_prof(), cmd, "--json", path, opt, NULL };
	if (opt) {
		argv[3] = opt;
		argv[4] = path;
	}
	int st = e2e_run(argv, NULL, out, err);
	if (st != 0) {
		char *e = e2e_read_file(err);
		fprintf(stderr, "prof %s failed (%d): %s\n", command, st, e ? e : "");
		free(e);
		return NULL;
	}
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	if (!doc)
		fprintf(stderr, "bad JSON from prof %s: %s (line %d)\n", command, je.text, je.line);
	return doc;
}

json_t *e2e_process(json_t *doc, size_t i)
{
	return json_array_get(json_object_get(doc, "processes"), i);
}

json_t *e2e_file_row(json_t *files, const char *path)
{
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (p && !strcmp(p, path))
			return f;
	}
	return NULL;
}

json_t *e2e_process_where(json_t *doc, const char *key, long value)
{
	for (size_t i = 0; e2e_process(doc, i); i++)
		if (e2e_int(e2e_process(doc, i), key) == value)
			return e2e_process(doc, i);
	return NULL;
}

long e2e_int(json_t *obj, const char *path)
{
	char key[128];
	while (obj && *path) {
		size_t n = strcspn(path, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		obj = json_object_get(obj, key);
		path += n + (path[n] == '.');
	}
	return json_is_integer(obj) ? (long)json_integer_value(obj) : -1;
}

char *e2e_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

void e2e_expect_file(const char *path, const char *want)
{
	char *text = e2e_read_file(path);
	cr_assert_not_null(text, "cannot read %s", path);
	cr_expect_str_eq(text, want, "%s", path);
	free(text);
}

int e2e_marker_line(const char *file, const char *marker)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "tests/progs/%s", file);
	char *text = e2e_read_file(path);
	if (!text)
		return 0;
	int line = 1, found = 0;
	char *hit = strstr(text, marker);
	for (char *p = text; hit && p < hit; p++)
		line += *p == '\n';
	found = hit ? line : 0;
	free(text);
	return found;
}

int e2e_count_lines(const char *text)
{
	int n = 0;
	for (const char *p = text; p && *p; p++)
		n += *p == '\n';
	return n;
}

char *e2e_prof_text(const char *dir, const char *const *args)
{
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/prof-out.txt", dir);
	const char *cmd[12] = { e2e_prof() };
	size_t n = 1;
	for (; args[n - 1] && n < 11; n++)
		cmd[n] = args[n - 1];
	cmd[n] = NULL;
	cr_assert_eq(e2e_run(cmd, NULL, out, NULL), 0, "prof %s failed", args[0]);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text, "prof %s: no output", args[0]);
	return text;
}

size_t e2e_dumped(const char *dir, const char *type, const char *with)
{
	const char *args[] = { "dump", dir, NULL };
	char *text = e2e_prof_text(dir, args);
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char col[5][64];
		if (sscanf(line, "%63s %63s %63s %63s %63s", col[0], col[1], col[2], col[3], col[4]) == 5 &&
		    !strcmp(col[4], type) && (!with || strstr(line, with)))
			n++;
	}
	free(text);
	return n;
}

double e2e_cpu_total_pct(json_t *cpu, const char *function)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(cpu, "top_total"), i, f)
		if (!strcmp(json_string_value(json_object_get(f, "function")), function))
			return json_real_value(json_object_get(f, "total_pct"));
	return 0;
}

double e2e_folded_weight(const char *text, const char *a, const char *b)
{
	double sum = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);
		const char *sp = end;  /* the weight, after the line's last space */
		while (sp > l && sp[-1] != ' ')
			sp--;
		const char *pa = strstr(l, a);
		if (pa && pa < sp && (!b || (strstr(pa, b) && strstr(pa, b) < sp)))
			sum += atof(sp);
	}
	return sum;
}

struct e2e_jumps e2e_jumps_said(const char *out)
{
	struct e2e_jumps j = { -1, -1, -1 };
	char *said = e2e_read_file(out);
	cr_assert(said && sscanf(said, "allocs %ld writes %ld jumps %ld", &j.allocs, &j.writes,
				 &j.jumps) == 3, "said: %s", said ? said : "");
	free(said);
	return j;
}

void e2e_expect_heap_of_jumps(json_t *p, struct e2e_jumps j)
{
	long recorded = e2e_int(p, "heap.alloc_calls"), freed = e2e_int(p, "heap.free_calls");
	cr_expect(recorded >= j.allocs && recorded <= j.allocs + j.jumps + 1, /* + printf's buffer */
		  "%ld allocations recorded of %ld (%ld jumps)", recorded, j.allocs, j.jumps);
	cr_expect(freed >= j.allocs - j.jumps && freed <= recorded, "%ld frees recorded of %ld",
		  freed, j.allocs);
}
