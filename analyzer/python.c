/* Python frames in stacks: each process's code objects (PY_CODE), and the frames that name
 * them turned into source frames, lines from CPython's location table. */
#include "python.h"
#include "process.h"
#include "u64map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct py_code {
	int firstlineno;
	char *name, *qualname, *file;  /* NUL-terminated copies */
	uint8_t *table;
	size_t table_len;
};

struct py_codes {
	struct u64map by_id;  /* id -> struct py_code */
};

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
		for (size_t i = 0; i < n; i++)
			if (!d[i])
				d[i] = '?';
	}
	return d;
}

int python_on_code(struct process *p, const struct prof_rec_py_code *r)
{
	uint64_t need = sizeof(*r) + (uint64_t)r->name_len + r->qualname_len + r->file_len +
			r->linetable_len;
	if (need > r->h.size || r->id == 0) {
		p->unknown_records++;  /* malformed: its frames stay unnamed */
		return 0;
	}
	if (!p->python) {
		if (!(p->python = calloc(1, sizeof(*p->python))))
			return -1;
		u64map_init(&p->python->by_id, sizeof(struct py_code));
	}
	int created;
	struct py_code *c = u64map_put(&p->python->by_id, r->id, &created);
	if (!c)
		return -1;
	if (!created)
		return 0;  /* the same id twice: the first stays */
	const char *d = r->data;
	c->firstlineno = r->firstlineno;
	c->name = dup_n(d, r->name_len);
	c->qualname = r->qualname_len ? dup_n(d + r->name_len, r->qualname_len) : NULL;
	c->file = dup_n(d + r->name_len + r->qualname_len, r->file_len);
	if (r->linetable_fmt == PROF_PY_LINETABLE_311 && r->linetable_len) {
		c->table = malloc(r->linetable_len);
		if (c->table) {
			memcpy(c->table, d + r->name_len + r->qualname_len + r->file_len, r->linetable_len);
			c->table_len = r->linetable_len;
		}
	}
	if (!c->name || !c->file || (r->qualname_len && !c->qualname))
		return -1;
	return 0;
}

void python_free(struct process *p)
{
	if (!p->python)
		return;
	uint64_t key;
	void *val;
	for (size_t i = 0; u64map_next(&p->python->by_id, &i, &key, &val);) {
		struct py_code *c = val;
		free(c->name);
		free(c->qualname);
		free(c->file);
		free(c->table);
	}
	u64map_free(&p->python->by_id);
	free(p->python);
	p->python = NULL;
}

/* ---- CPython's location table (Objects/locations.md): entries of one start byte (bit 7 set,
 * a 4-bit code, the code units covered less one) and varints of 6 bits (bit 6: more). ---- */

static unsigned read_varint(const uint8_t *t, size_t len, size_t *at)
{
	unsigned val = 0, shift = 0;
	while (*at < len && shift < 32) {
		uint8_t b = t[(*at)++];
		val |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return val;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *at)
{
	unsigned u = read_varint(t, len, at);
	return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

int python_line(const uint8_t *t, size_t len, int firstlineno, int addrq)
{
	if (addrq < 0)
		return firstlineno;
	long line = firstlineno, end = 0;
	size_t at = 0;
	while (at < len) {
		uint8_t first = t[at++];
		if (!(first & 0x80))
			return 0;  /* not an entry's start: a table we cannot read */
		int code = (first >> 3) & 15, entry_line;
		end += 2 * ((first & 7) + 1);
		if (code == 15) {  /* no location */
			entry_line = -1;
		} else {
			if (code == 14 || code == 13) {  /* long form, or no columns */
				line += read_svarint(t, len, &at);
			} else if (code >= 10 && code <= 12) {  /* one line: delta 0, 1, 2 */
				line += code - 10;
			}
			entry_line = (int)line;
		}
		while (at < len && !(t[at] & 0x80))  /* the entry's columns */
			at++;
		if (addrq < end)
			return entry_line < 0 ? 0 : entry_line;
	}
	return 0;
}

void python_frame(struct process *p, uint64_t frame, struct sym_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->address = frame;
	out->python = 1;
	out->module = "[python]";
	const struct py_code *c = p->python ? u64map_get(&p->python->by_id, prof_py_frame_code(frame)) : NULL;
	if (!c)
		return;
	out->function = c->qualname && *c->qualname ? c->qualname : c->name;
	out->file = c->file;
	out->module = c->file;
	uint32_t lasti = prof_py_frame_lasti(frame);
	int addrq = lasti >= 0x40000000u ? -1 : (int)(lasti * 2);
	out->line = python_line(c->table, c->table_len, c->firstlineno, addrq);
	if (out->line <= 0)
		out->line = c->firstlineno;
}

static const char *const interp_prefixes[] = {
	"_PyEval_", "PyEval_", "_PyObject_Call", "PyObject_Call", "_PyObject_Vectorcall",
	"PyObject_Vectorcall", "_PyObject_MakeTpCall", "_PyFunction_Vectorcall", "_PyVectorcall",
	"PyVectorcall_", "method_vectorcall", "cfunction_call", "cfunction_vectorcall",
	"slot_tp_call", "vectorcall_method", "gen_send_ex", "gen_iternext", "run_eval_code_obj",
	"run_mod", "_PyRun_", "PyRun_", "pymain_", "Py_RunMain", "Py_BytesMain", "builtin_exec",
	"thread_run", "t_bootstrap", "_PyObject_FastCall", "object_vacall", NULL,
};

int python_interp_frame(const struct sym_frame *f)
{
	if (f->python)
		return 0;
	if (!f->function) {  /* a static function of a stripped interpreter (Debian's) */
		const char *base = strrchr(f->module, '/') ? strrchr(f->module, '/') + 1 : f->module;
		return !strncmp(base, "python3", 7) || !strncmp(base, "libpython3", 10);
	}
	for (size_t i = 0; interp_prefixes[i]; i++)
		if (!strncmp(f->function, interp_prefixes[i], strlen(interp_prefixes[i])))
			return 1;
	return 0;
}
