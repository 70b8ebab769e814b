/* valgrind-style leak suppressions: parsing and matching against symbolized stacks. */
#include "suppress.h"
#include "commands.h"
#include "prof_format.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct supp_entry {
	char *name;
	unsigned kinds;   /* 1u << PROF_LEAK_* */
	char **lines;     /* "fun:x", "obj:y", "..." */
	size_t n;
};

struct suppressions {
	struct supp_entry *v;
	size_t n;
};

static const char *const allocators[] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"operator new(unsigned long)", "operator new[](unsigned long)", NULL,
};

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

static unsigned parse_kinds(const char *list)
{
	static const char *const names[PROF_LEAK_CLASS_COUNT] = {
		[PROF_LEAK_REACHABLE] = "reachable", [PROF_LEAK_DEFINITE] = "definite",
		[PROF_LEAK_INDIRECT] = "indirect", [PROF_LEAK_POSSIBLE] = "possible",
	};
	unsigned kinds = 0;
	while (*list) {
		size_t n = strcspn(list, ", ");
		if (n == 3 && !strncmp(list, "all", 3))
			kinds = ~0u;
		for (unsigned c = 0; c < PROF_LEAK_CLASS_COUNT; c++)
			if (n == strlen(names[c]) && !strncmp(list, names[c], n))
				kinds |= 1u << c;
		list += n;
		list += strspn(list, ", ");
	}
	return kinds;
}

/* A frame line as it is matched: valgrind writes C++ functions mangled (fun:_Znwm), libprof's
 * frames are demangled, so a mangled name without wildcards is demangled here. */
static char *line_copy(const char *l)
{
	char *d = strncmp(l, "fun:_Z", 6) || strpbrk(l, "*?") ? NULL : sym_demangle(l + 4);
	if (!d)
		return strdup(l);
	char *out = malloc(strlen(d) + 5);
	if (out)
		sprintf(out, "fun:%s", d);
	free(d);
	return out;
}

static void entry_free(struct supp_entry *e)
{
	free(e->name);
	for (size_t i = 0; i < e->n; i++)
		free(e->lines[i]);
	free(e->lines);
}

int supp_load(struct suppressions **sp, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		prof_error("%s: cannot read suppressions: %m", path);
		return -1;
	}
	if (!*sp && !(*sp = calloc(1, sizeof(**sp)))) {
		fclose(f);
		return -1;
	}
	struct suppressions *s = *sp;
	char buf[4096];
	int lineno = 0, state = 0;  /* 0: outside, 1: name next, 2: tool next, 3: frames */
	struct supp_entry e = { 0 };
	const char *err = NULL;
	while (!err && fgets(buf, sizeof(buf), f)) {
		lineno++;
		char *l = trim(buf);
		if (!*l || *l == '#')
			continue;
		if (state == 0) {
			if (strcmp(l, "{"))
				err = "expected '{'";
			else
				state = 1, e = (struct supp_entry){ .kinds = ~0u };
		} else if (!strcmp(l, "}")) {
			if (state < 3) {
				err = "entry ends before its tool line";
			} else {
				struct supp_entry *v = realloc(s->v, (s->n + 1) * sizeof(*v));
				if (!v)
					err = "out of memory";
				else
					s->v = v, s->v[s->n++] = e, e = (struct supp_entry){ 0 };
				state = 0;
			}
		} else if (state == 1) {
			e.name = strdup(l);
			state = 2;
		} else if (state == 2) {
			/* Memcheck:Leak, or another tool's kind: kept but never matching a leak. */
			if (strcmp(l, "Memcheck:Leak"))
				e.kinds = 0;
			state = 3;
		} else if (!strncmp(l, "match-leak-kinds:", 17)) {
			if (e.kinds)
				e.kinds = parse_kinds(trim(l + 17));
		} else if (!strncmp(l, "fun:", 4) || !strncmp(l, "obj:", 4) || !strcmp(l, "...") ||
			   !strncmp(l, "src:", 4)) {
			char **v = realloc(e.lines, (e.n + 1) * sizeof(*v));
			if (!v || !(v[e.n] = line_copy(l)))
				err = "out of memory";
			if (v)
				e.lines = v, e.n += v[e.n] != NULL;
		} else {
			err = "expected fun:, obj:, src:, ... or '}'";
		}
	}
	if (!err && state != 0)
		err = "file ends inside an entry";
	fclose(f);
	if (err) {
		entry_free(&e);
		prof_error("%s:%d: bad suppression: %s", path, lineno, err);
		return -1;
	}
	return 0;
}

void supp_free(struct suppressions *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		entry_free(&s->v[i]);
	free(s->v);
	free(s);
}

static int line_matches(const char *line, const struct sym_frame *f)
{
	if (!strncmp(line, "fun:", 4))
		return f->function && !fnmatch(line + 4, f->function, 0);
	if (!strncmp(line, "obj:", 4))
		return !fnmatch(line + 4, f->module, 0);
	if (!strncmp(line, "src:", 4)) {
		if (!f->file)
			return 0;
		const char *base = strrchr(f->file, '/') ? strrchr(f->file, '/') + 1 : f->file;
		char want[4096];
		snprintf(want, sizeof(want), "%s", line + 4);
		char *colon = strchr(want, ':');
		if (colon) {
			*colon = 0;
			if (atoi(colon + 1) != f->line)
				return 0;
		}
		return !fnmatch(want, base, 0) || !fnmatch(want, f->file, 0);
	}
	return 0;
}

/* lines[i..] against frames[j..]; "..." matches any number of frames. */
static int match_from(char *const *lines, size_t nl, const struct sym_frame *frames, int nf)
{
	if (nl == 0)
		return 1;  /* a suppression may name fewer frames than the stack has */
	if (!strcmp(lines[0], "...")) {
		for (int j = 0; j <= nf; j++)
			if (match_from(lines + 1, nl - 1, frames + j, nf - j))
				return 1;
		return 0;
	}
	return nf > 0 && line_matches(lines[0], frames) &&
	       match_from(lines + 1, nl - 1, frames + 1, nf - 1);
}

static int names_allocator(const char *line)
{
	if (strncmp(line, "fun:", 4))
		return 0;
	for (size_t i = 0; allocators[i]; i++)
		if (!fnmatch(line + 4, allocators[i], 0))
			return 1;
	return 0;
}

int supp_match(const struct suppressions *s, const struct sym_frame *frames, int n, unsigned cls)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct supp_entry *e = &s->v[i];
		if (!(e->kinds & (1u << cls)) || e->n == 0)
			continue;
		size_t skip = names_allocator(e->lines[0]) ? 1 : 0;
		if (match_from(e->lines + skip, e->n - skip, frames, n) ||
		    (skip && match_from(e->lines, e->n, frames, n)))
			return (int)i;
	}
	return -1;
}
