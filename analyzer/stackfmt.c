/* Symbolized stacks: the process's symbolizer, frame expansion, and the text and JSON forms
 * shared by every command. */
#include "stackfmt.h"
#include "process.h"
#include "python.h"
#include "summary.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct symbolizer *process_symbolizer(struct process *p)
{
	if (!p->sym && !(p->sym = process_sym_take()))
		return NULL;
	for (; p->sym_modules < p->nmodules; p->sym_modules++) {
		const struct module_info *m = &p->modules[p->sym_modules];
		sym_add_module(p->sym, m->id, m->path, m->start, m->end, m->bias, m->build_id,
			       m->build_id_len);
	}
	return p->sym;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* libprof's own frames (a hook that called the real function) are never the program's. */
static int is_libprof(const struct sym_frame *f)
{
	return !strcmp(base_name(f->module), "libprof.so");
}

int stack_frame_lookup(struct process *p, uint32_t module, uint64_t address, int is_ret,
		       struct sym_frame *out, int max)
{
	if (p->symtab)  /* read from a summary: its symbols hold both kinds of frame */
		return sum_symbols_lookup(p->symtab, module, address, is_ret, out, max);
	if (max <= 0)
		return 0;
	if (prof_py_frame_is(address)) {  /* an interpreted frame, spliced in */
		python_frame(p, address, out);
		return 1;
	}
	struct symbolizer *sym = process_symbolizer(p);
	return sym ? sym_lookup(sym, module, address, is_ret, out, max) : 0;
}

int stack_symbolize(struct process *p, uint32_t stack_id, struct sym_frame *out, int max)
{
	const struct stack_info *s = process_stack(p, stack_id);
	if (!s)
		return 0;
	int n = 0;
	for (uint32_t i = 0; i < s->depth && n < max; i++) {
		/* a return address looks up the call before it; an exact leaf PC (a CPU
		 * sample's) is looked up as it is */
		int got = stack_frame_lookup(p, s->modules[i], s->frames[i], i > 0 || !s->leaf_exact,
					     out + n, max - n);
		if (got > 0 && is_libprof(&out[n + got - 1]))
			continue;
		n += got;
	}
	return n;
}

/* ---- folding ------------------------------------------------------------------------------ */

#define FOLD_MAX 32
static char fold_items[FOLD_MAX][64];
static int fold_n = -1;  /* -1: the default, FOLD_DEFAULT */

/* Allocator wrappers libraries put around malloc (folded by the "alloc" item). */
static const char *const alloc_wrappers[] = {
	"xmalloc", "xcalloc", "xrealloc", "xstrdup", "xzalloc", "g_malloc", "g_realloc",
	"g_try_malloc", "g_try_realloc", "g_slice_alloc", "g_strdup", "PyMem_", "PyObject_Malloc",
	"PyObject_Calloc", "PyObject_Realloc", "_PyObject_", "sqlite3Malloc", "sqlite3MemMalloc",
	"sqlite3DbMalloc", "sqlite3_malloc", "sqlite3Realloc", "OPENSSL_malloc", "CRYPTO_malloc",
	"CRYPTO_zalloc", "CRYPTO_realloc", "ruby_xmalloc", "je_", "tc_", NULL,
};

int stack_fold_set(const char *list)
{
	fold_n = 0;
	if (!strcmp(list, "none") || !*list)
		return 0;
	while (*list) {
		size_t n = strcspn(list, ",");
		if (fold_n == FOLD_MAX || n >= sizeof(fold_items[0]))
			return -1;
		if (n)
			snprintf(fold_items[fold_n++], sizeof(fold_items[0]), "%.*s", (int)n, list);
		list += n + (list[n] == ',');
	}
	return 0;
}

static int starts(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* A demangled function's qualified name, without the return type a template function's
 * name starts with ("void std::vector<...>::_M_realloc_insert(...)"). */
static const char *qualified_name(const char *fn)
{
	if (!fn)
		return NULL;
	const char *start = fn;
	int depth = 0;
	for (const char *c = fn; *c && *c != '('; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>' && depth > 0)
			depth--;
		else if (*c == ' ' && depth == 0 && c[1] && c[1] != '(')
			start = c + 1;
	}
	return start;
}

static int item_folds(const char *item, const struct sym_frame *f)
{
	const char *mod = base_name(f->module), *fn = qualified_name(f->function);
	if (!strcmp(item, "libc"))
		return starts(mod, "libc.") || starts(mod, "libc-") || starts(mod, "ld-linux") ||
		       starts(mod, "libpthread") || starts(mod, "libdl") || starts(mod, "libm.") ||
		       starts(mod, "libresolv") || starts(mod, "librt");
	if (!strcmp(item, "std::"))
		return starts(fn, "std::") || starts(fn, "__gnu_cxx::") || starts(fn, "__cxxabiv1::") ||
		       starts(f->function, "operator new") || starts(f->function, "operator delete") ||
		       starts(mod, "libstdc++") ||
		       starts(mod, "libc++");
	if (!strcmp(item, "alloc")) {
		for (size_t i = 0; alloc_wrappers[i]; i++)
			if (starts(fn, alloc_wrappers[i]))
				return 1;
		return 0;
	}
	return starts(fn, item) || starts(mod, item);
}

/* "python": the interpreter's own frames, anywhere in a stack that has Python frames. On by
 * default; --fold without it shows them. */
static int fold_python(void)
{
	if (fold_n < 0)
		return 1;
	for (int i = 0; i < fold_n; i++)
		if (!strcmp(fold_items[i], "python"))
			return 1;
	return 0;
}

static int frame_folds(const struct sym_frame *f)
{
	static const char *const defaults[] = { "std::", "libc", "alloc" };
	if (fold_n < 0) {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			if (item_folds(defaults[i], f))
				return 1;
		return 0;
	}
	for (int i = 0; i < fold_n; i++)
		if (item_folds(fold_items[i], f))
			return 1;
	return 0;
}

int stack_shown(struct process *p, uint32_t stack_id, struct sym_frame *out, int max,
		int *folded, int *truncated)
{
	struct sym_frame all[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack_id, all, PROF_MAX_STACK_DEPTH * 2);
	int has_python = 0;
	for (int i = 0; i < n && !has_python; i++)
		has_python = all[i].python;
	if (has_python && fold_python()) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (!python_interp_frame(&all[i]))
				all[k++] = all[i];
		n = k;
	}
	int skip = 0;
	while (skip < n && frame_folds(&all[skip]))
		skip++;
	if (skip == n)  /* nothing of the program's own: show it all */
		skip = 0;
	const struct stack_info *s = process_stack(p, stack_id);
	if (truncated) {
		uint32_t native = 0;  /* Python frames come on top of PROF_STACK_DEPTH */
		for (uint32_t i = 0; s && i < s->depth; i++)
			native += !prof_py_frame_is(s->frames[i]);
		*truncated = s && p->hdr.stack_depth && native >= p->hdr.stack_depth;
	}
	if (folded)
		*folded = skip;
	int k = 0;
	for (int i = skip; i < n && k < max; i++)
		out[k++] = all[i];
	return k;
}

/* C++ template arguments as "<...>"; operator<, operator<< and operator-> stay. */
const char *shorten_templates(const char *name, char *buf, size_t len)
{
	if (!name || !strchr(name, '<') || len == 0)
		return name;
	size_t o = 0;
	int depth = 0;
	for (const char *c = name; *c && o + 4 < len; c++) {
		if (!strncmp(c, "operator", 8) && depth == 0) {
			const char *e = c + 8;
			while (*e == '<' || *e == '>' || *e == '-' || *e == '=')
				e++;
			while (c < e && o + 4 < len)
				buf[o++] = *c++;
			c--;
			continue;
		}
		if (*c == '<') {
			if (depth++ == 0) {
				memcpy(buf + o, "<...", 4);
				o += 4;
			}
			continue;
		}
		if (*c == '>' && depth > 0) {
			if (--depth == 0)
				buf[o++] = '>';
			continue;
		}
		if (depth == 0)
			buf[o++] = *c;
	}
	buf[o] = 0;
	return buf;
}

int addr_symbolize(struct process *p, uint64_t addr, struct sym_frame *out)
{
	return stack_frame_lookup(p, process_module_at(p, addr, 0), addr, 0, out, 1) >= 1;
}

const char *addr_label(struct process *p, uint64_t addr, char *buf, size_t len)
{
	if (!addr)
		return NULL;
	struct sym_frame f;
	char tmp[256];
	if (addr_symbolize(p, addr, &f))
		snprintf(buf, len, "%s", frame_label(&f, tmp, sizeof(tmp)));
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
	return buf;
}

const char *frame_label(const struct sym_frame *f, char *buf, size_t len)
{
	if (f->function)
		return f->function;
	const char *mod = strrchr(f->module, '/') ? strrchr(f->module, '/') + 1 : f->module;
	snprintf(buf, len, "%s+0x%" PRIx64, mod, f->offset);
	return buf;
}

void stack_print(FILE *out, struct process *p, uint32_t stack_id, int max_frames,
		 const char *indent)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	if (max_frames < 1)
		max_frames = 1;
	if (max_frames > PROF_MAX_STACK_DEPTH * 2 - 1)
		max_frames = PROF_MAX_STACK_DEPTH * 2 - 1;
	int folded, truncated;
	int n = stack_shown(p, stack_id, frames, max_frames + 1, &folded, &truncated);
	if (n == 0) {
		fprintf(out, "%s(no stack recorded)\n", indent);
		return;
	}
	for (int i = 0; i < n && i < max_frames; i++) {
		char buf[256], shorter[256];
		const struct sym_frame *f = &frames[i];
		if (f->python)
			fprintf(out, "%s%s [python]: %s", indent, i == 0 ? "at" : "by",
				f->function ? f->function : "?");
		else
			fprintf(out, "%s%s 0x%" PRIx64 ": %s", indent, i == 0 ? "at" : "by", f->address,
				shorten_templates(frame_label(f, buf, sizeof(buf)), shorter, sizeof(shorter)));
		if (f->file)
			fprintf(out, " (%s:%d)", f->file, f->line);
		else if (f->function)
			fprintf(out, " (in %s)", f->module);
		if (f->inlined)
			fputs(" [inlined]", out);
		if (i == 0 && folded)
			fprintf(out, "  (%d library frame%s folded: --fold none)", folded,
				folded == 1 ? "" : "s");
		fputc('\n', out);
	}
	if (n > max_frames)
		fprintf(out, "%s... (more frames: --frames N)\n", indent);
	else if (truncated)
		fprintf(out, "%s... [truncated: the stack was deeper than PROF_STACK_DEPTH=%u]\n", indent,
			p->hdr.stack_depth);
}

json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	char *copy = strdup(s);
	if (!copy)
		return json_null();
	for (char *c = copy; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	j = json_string(copy);
	free(copy);
	return j ? j : json_null();
}

/* Frames of each stack_json() array on this thread; 0: all (stack_json_limit). */
static __thread int json_frames_max;

void stack_json_limit(int frames)
{
	json_frames_max = frames;
}

json_t *stack_json(struct process *p, uint32_t stack_id)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack_id, frames, PROF_MAX_STACK_DEPTH * 2);
	if (json_frames_max > 0 && n > json_frames_max)
		n = json_frames_max;
	json_t *arr = json_array();
	for (int i = 0; i < n; i++) {
		const struct sym_frame *f = &frames[i];
		if (json_frames_max > 0) {  /* what a key is made of, no more (stack_json_limit) */
			json_array_append_new(arr, json_pack("{s:o,s:o}", "function",
				jstr(f->function), "module", jstr(f->module)));
			continue;
		}
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
		json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:s}", "function", jstr(f->function),
				      "file", jstr(f->file),
				      "line", f->line > 0 ? json_integer(f->line) : json_null(),
				      "module", jstr(f->module), "address", addr);
		if (f->inlined)
			json_object_set_new(o, "inlined", json_true());
		if (f->python)
			json_object_set_new(o, "kind", json_string("python"));
		json_array_append_new(arr, o);
	}
	return arr;
}
