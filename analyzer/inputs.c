/* Turns the TRACE arguments of every command into a list of files: traces and summaries. */
#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void prof_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("prof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int push(char ***paths, size_t *n, size_t *cap, char *p)
{
	if (!p)
		return -1;
	if (*n + 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		char **np = realloc(*paths, ncap * sizeof(*np));
		if (!np) {
			free(p);
			return -1;
		}
		*paths = np;
		*cap = ncap;
	}
	(*paths)[(*n)++] = p;
	(*paths)[*n] = NULL;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* The files of dir named *suffix, added to paths; -1 after a message. */
static int expand_dir_suffix(const char *dir, const char *suffix, char ***paths, size_t *n,
			     size_t *cap)
{
	DIR *d = opendir(dir);
	if (!d) {
		prof_error("%s: %s", dir, strerror(errno));
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, suffix))
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0 || push(paths, n, cap, p) < 0) {
			closedir(d);
			prof_error("out of memory");
			return -1;
		}
	}
	closedir(d);
	return 0;
}

/* A run directory: its traces; or, when it has none, its summaries (the files that `srun
 * prof summarize` left on each node, gathered). Never both: a summary of the traces beside
 * it would count them twice. */
static int expand_dir(const char *dir, char ***paths, size_t *n, size_t *cap)
{
	size_t first = *n;
	if (expand_dir_suffix(dir, ".trace", paths, n, cap) < 0 ||
	    expand_dir_suffix(dir, ".trace.zst", paths, n, cap) < 0)
		return -1;
	if (*n == first && expand_dir_suffix(dir, ".sum", paths, n, cap) < 0)
		return -1;
	if (*n == first) {
		prof_error("%s: no .trace, .trace.zst or .sum files in this directory", dir);
		return -1;
	}
	qsort(*paths + first, *n - first, sizeof(char *), cmp_str);
	return 0;
}

int inputs_expand(char *const *args, int nargs, char ***out, size_t *count)
{
	char **paths = NULL;
	size_t n = 0, cap = 0;
	if (nargs <= 0) {
		prof_error("no trace given (a trace file or a run directory)");
		return -1;
	}
	for (int i = 0; i < nargs; i++) {
		struct stat st;
		if (stat(args[i], &st) < 0) {
			prof_error("%s: %s", args[i], strerror(errno));
			goto fail;
		}
		if (S_ISDIR(st.st_mode)) {
			if (expand_dir(args[i], &paths, &n, &cap) < 0)
				goto fail;
		} else if (push(&paths, &n, &cap, strdup(args[i])) < 0) {
			prof_error("out of memory");
			goto fail;
		}
	}
	*out = paths;
	*count = n;
	return 0;
fail:
	inputs_free(paths);
	return -1;
}

void inputs_free(char **paths)
{
	for (size_t i = 0; paths && paths[i]; i++)
		free(paths[i]);
	free(paths);
}
