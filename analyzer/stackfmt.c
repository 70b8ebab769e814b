/* Symbolized stacks: the process's symbolizer, frame expansion, and the text and JSON forms
 * shared by every command. */
#include "stackfmt.h"
#include "process.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static struct symbolizer *process_symbolizer(struct process *p)
{
	if (!p->sym && !(p->sym = sym_new()))
		return NULL;
	for (; p->sym_modules < p->nmodules; p->sym_modules++) {
		const struct module_info *m = &p->modules[p->sym_modules];
		sym_add_module(p->sym, m->id, m->path, m->start, m->end, m->bias, m->build_id,
			       m->build_id_len);
	}
	return p->sym;
}

int stack_symbolize(struct process *p, uint32_t stack_id, struct sym_frame *out, int max)
{
	const struct stack_info *s = process_stack(p, stack_id);
	struct symbolizer *sym = process_symbolizer(p);
	if (!s || !sym)
		return 0;
	int n = 0;
	for (uint32_t i = 0; i < s->depth && n < max; i++)
		n += sym_lookup(sym, s->modules[i], s->frames[i], i > 0 || !s->leaf_exact, out + n, max - n);
	return n;
}

int addr_symbolize(struct process *p, uint64_t addr, struct sym_frame *out)
{
	struct symbolizer *sym = process_symbolizer(p);
	return sym && sym_lookup(sym, process_module_at(p, addr, 0), addr, 0, out, 1) >= 1;
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
	/* Only what is shown is symbolized (one more, to know whether there is more). */
	int n = stack_symbolize(p, stack_id, frames, max_frames + 1);
	if (n == 0) {
		fprintf(out, "%s(no stack recorded)\n", indent);
		return;
	}
	for (int i = 0; i < n && i < max_frames; i++) {
		char buf[256];
		const struct sym_frame *f = &frames[i];
		fprintf(out, "%s%s 0x%" PRIx64 ": %s", indent, i == 0 ? "at" : "by", f->address,
			frame_label(f, buf, sizeof(buf)));
		if (f->file)
			fprintf(out, " (%s:%d)", f->file, f->line);
		else if (f->function)
			fprintf(out, " (in %s)", f->module);
		if (f->inlined)
			fputs(" [inlined]", out);
		fputc('\n', out);
	}
	if (n > max_frames)
		fprintf(out, "%s... (more frames: --frames N)\n", indent);
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

json_t *stack_json(struct process *p, uint32_t stack_id)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack_id, frames, PROF_MAX_STACK_DEPTH * 2);
	json_t *arr = json_array();
	for (int i = 0; i < n; i++) {
		const struct sym_frame *f = &frames[i];
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
		json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:s}", "function", jstr(f->function),
				      "file", jstr(f->file),
				      "line", f->line > 0 ? json_integer(f->line) : json_null(),
				      "module", jstr(f->module), "address", addr);
		if (f->inlined)
			json_object_set_new(o, "inlined", json_true());
		json_array_append_new(arr, o);
	}
	return arr;
}
