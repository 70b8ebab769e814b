/* Summaries: a process written as its aggregates, stacks and symbols (summary.h), read back
 * as a struct process that every report renders as it would the trace's. */
#include "summary.h"
#include "commands.h"
#include "family.h"
#include "grow.h"
#include "process.h"
#include "spill.h"
#include "stackfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	SEC_PROCESS = 1,  /* identity, exit, threads, modules, stacks, children: a new process */
	SEC_FAMILY = 2,   /* name, then what the family wrote; of the latest process */
	SEC_SYMBOLS = 3,  /* the frames of its stacks and wanted addresses, symbolized */
};
#define SEC_PROCESS_VERSION 2  /* 2: the children's ends (REAPED) after the children */
#define SEC_SYMBOLS_VERSION 1
#define BYTE_ORDER_MARK 0x01020304u
#define SECTION_HEAD 16

/* ---- writing ------------------------------------------------------------------------------ */

void sum_put_bytes(struct sum_out *w, const void *p, size_t n)
{
	if (w->oom || !n)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap < w->len + n)
			cap *= 2;
		unsigned char *b = realloc(w->buf, cap);
		if (!b) {
			w->oom = 1;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void sum_put_u64(struct sum_out *w, uint64_t v)
{
	sum_put_bytes(w, &v, sizeof(v));
}

void sum_put_u32(struct sum_out *w, uint32_t v)
{
	sum_put_bytes(w, &v, sizeof(v));
}

void sum_put_str(struct sum_out *w, const char *s)
{
	if (!s) {
		sum_put_u32(w, UINT32_MAX);
		return;
	}
	size_t n = strlen(s);
	sum_put_u32(w, (uint32_t)n);
	sum_put_bytes(w, s, n);
}

void sum_put_map(struct sum_out *w, const struct u64map *m)
{
	sum_put_u32(w, (uint32_t)m->vsize);
	sum_put_u64(w, m->count);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(m, &pos, &key, &val)) {
		sum_put_u64(w, key);
		sum_put_bytes(w, val, m->vsize);
	}
}

void sum_put_fixed(struct sum_out *w, const void *p, size_t n)
{
	sum_put_u32(w, (uint32_t)n);
	sum_put_bytes(w, p, n);
}

void sum_want_addr(struct sum_out *w, uint64_t addr)
{
	if (w->want && !u64map_put(w->want, addr, NULL))
		w->oom = 1;
}

/* A section's head, its length filled by section_end(). */
static size_t section_begin(struct sum_out *w, uint32_t tag, uint32_t version)
{
	size_t at = w->len;
	sum_put_u32(w, tag);
	sum_put_u32(w, version);
	sum_put_u64(w, 0);
	return at;
}

static void section_end(struct sum_out *w, size_t at)
{
	if (w->oom)
		return;
	uint64_t len = w->len - at - SECTION_HEAD;
	memcpy(w->buf + at + 8, &len, sizeof(len));
}

void summary_put_header(struct sum_out *w)
{
	sum_put_bytes(w, SUMMARY_MAGIC, 8);
	sum_put_u32(w, SUMMARY_VERSION);
	sum_put_u32(w, BYTE_ORDER_MARK);
}

/* ---- reading ------------------------------------------------------------------------------ */

void sum_get_bytes(struct sum_in *r, void *dst, size_t n)
{
	if (n == 0)  /* dst may be NULL then (an empty array): memcpy must not see it */
		return;
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p, n);
	r->p += n;
}

uint64_t sum_get_u64(struct sum_in *r)
{
	uint64_t v;
	sum_get_bytes(r, &v, sizeof(v));
	return v;
}

uint32_t sum_get_u32(struct sum_in *r)
{
	uint32_t v;
	sum_get_bytes(r, &v, sizeof(v));
	return v;
}

char *sum_get_str(struct sum_in *r, int *oom)
{
	uint32_t n = sum_get_u32(r);
	if (r->bad || n == UINT32_MAX)
		return NULL;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	char *s = malloc((size_t)n + 1);
	if (!s) {
		*oom = 1;
		return NULL;
	}
	memcpy(s, r->p, n);
	s[n] = '\0';
	r->p += n;
	return s;
}

void sum_get_fixed(struct sum_in *r, void *dst, size_t n)
{
	if (sum_get_u32(r) != n)
		r->bad = 1;
	sum_get_bytes(r, dst, n);
}

size_t sum_get_count(struct sum_in *r, size_t min_bytes)
{
	uint64_t n = sum_get_u64(r);
	if (r->bad || (min_bytes && n > (uint64_t)(r->end - r->p) / min_bytes)) {
		r->bad = 1;
		return 0;
	}
	return (size_t)n;
}

int sum_get_map(struct sum_in *r, struct u64map *m)
{
	if (sum_get_u32(r) != m->vsize) {
		r->bad = 1;
		return 0;
	}
	size_t n = sum_get_count(r, 8 + m->vsize);
	for (size_t i = 0; i < n && !r->bad; i++) {
		uint64_t key = sum_get_u64(r);
		int created;
		void *v = u64map_put(m, key, &created);
		if (!v)
			return -1;
		if (!created) {  /* a key twice: not what a writer makes */
			r->bad = 1;
			return 0;
		}
		sum_get_bytes(r, v, m->vsize);
	}
	return 0;
}

/* ---- symbols ------------------------------------------------------------------------------ */

struct sum_entry {
	uint32_t module, nframes, first;  /* frames[first .. first + nframes) */
	uint64_t address;
	int is_ret;
};

struct sum_symbols {
	char **strings;
	size_t nstrings;
	struct sum_entry *entries;
	size_t nentries;
	struct sym_frame *frames;
	size_t nframes;
	struct u64map index;  /* hash of (module, address, is_ret) -> entry (uint32_t), probed */
};

static uint64_t entry_key(uint32_t module, uint64_t address, int is_ret)
{
	return u64_mix(address ^ ((uint64_t)module << 40) ^ ((uint64_t)!!is_ret << 63));
}

static const struct sum_entry *entry_find(const struct sum_symbols *t, uint32_t module,
					  uint64_t address, int is_ret)
{
	for (uint64_t k = entry_key(module, address, is_ret);; k++) {
		const uint32_t *i = u64map_get(&t->index, k);
		if (!i)
			return NULL;
		const struct sum_entry *e = &t->entries[*i];
		if (e->module == module && e->address == address && e->is_ret == !!is_ret)
			return e;
	}
}

int sum_symbols_lookup(const struct sum_symbols *t, uint32_t module, uint64_t address,
		       int is_return_address, struct sym_frame *out, int max)
{
	if (max <= 0 || !out)
		return 0;
	const struct sum_entry *e = entry_find(t, module, address, is_return_address);
	if (!e) {  /* as sym_lookup() says an address of no module */
		memset(out, 0, sizeof(*out));
		out->module = "?";
		out->address = address;
		out->offset = address;
		return 1;
	}
	int n = (int)e->nframes < max ? (int)e->nframes : max;
	memcpy(out, &t->frames[e->first], sizeof(*out) * (size_t)n);
	return n;
}

void sum_symbols_free(struct sum_symbols *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->entries);
	free(t->frames);
	u64map_free(&t->index);
	free(t);
}

/* Strings of the symbols section, each written once: index by hash, checked. */
struct strtab {
	const char **v;
	size_t n, cap;
	struct u64map index;  /* hash -> position (uint32_t), probed */
};

/* The position of s (0: NULL), added if new; UINT32_MAX when out of memory. */
static uint32_t strtab_ref(struct strtab *t, const char *s)
{
	if (!s)
		return 0;
	for (uint64_t k = str_hash(s);; k++) {
		int created;
		uint32_t *i = u64map_put(&t->index, k, &created);
		if (!i)
			return UINT32_MAX;
		if (!created) {
			if (!strcmp(t->v[*i - 1], s))
				return *i;
			continue;
		}
		if (GROW(t->v, t->n, t->cap) < 0) {
			u64map_del(&t->index, k, NULL);
			return UINT32_MAX;
		}
		t->v[t->n++] = s;
		*i = (uint32_t)t->n;
		return *i;
	}
}

struct lookup {
	uint32_t module;
	uint64_t address;
	int is_ret;
	int n;
	uint32_t first;  /* in the frames buffer */
};

/* Symbolizes what p's reports will ask: every frame of every stack, and wanted addresses. */
static int write_symbols(struct sum_out *w, struct process *p, const struct u64map *want)
{
	struct lookup *lk = NULL;
	size_t nlk = 0, lkcap = 0;
	struct sym_frame *frames = NULL;
	size_t nframes = 0, fcap = 0;
	struct u64map seen;  /* entry key -> 1 + index in lk, probed */
	struct strtab st = { 0 };
	u64map_init(&seen, sizeof(uint32_t));
	u64map_init(&st.index, sizeof(uint32_t));
	int rc = p->symtab || process_symbolizer(p) ? 0 : -1;  /* a summary's symbols, or binaries */
	struct sym_frame buf[64];

	size_t pos = 0, wpos = 0;
	uint64_t key;
	void *val;
	const struct stack_info *s = NULL;
	uint32_t fi = 0;
	for (;;) {
		uint32_t module;
		uint64_t address;
		int is_ret;
		if (s && fi < s->depth) {
			module = s->modules[fi];
			address = s->frames[fi];
			is_ret = fi > 0 || !s->leaf_exact;
			fi++;
		} else if (u64map_next(&p->stacks, &pos, &key, &val)) {
			s = val;
			fi = 0;
			continue;
		} else if (want && u64map_next(want, &wpos, &key, &val)) {
			address = key;
			module = process_module_at(p, address, 0);
			is_ret = 0;
		} else {
			break;
		}
		if (rc < 0)
			break;
		/* once per (module, address, is_ret) */
		int dup = 0;
		uint32_t *slot = NULL;
		for (uint64_t k = entry_key(module, address, is_ret);; k++) {
			int created;
			slot = u64map_put(&seen, k, &created);
			if (!slot || created)
				break;
			const struct lookup *l = &lk[*slot - 1];
			if (l->module == module && l->address == address && l->is_ret == is_ret) {
				dup = 1;
				break;
			}
		}
		if (!slot) {
			rc = -1;
			break;
		}
		if (dup)
			continue;
		int n = stack_frame_lookup(p, module, address, is_ret, buf, 64);
		if (GROW(lk, nlk, lkcap) < 0) {
			rc = -1;
			break;
		}
		while (nframes + (size_t)n > fcap)
			if (grow_array((void **)&frames, &fcap, sizeof(*frames)) < 0) {
				rc = -1;
				break;
			}
		if (rc < 0)
			break;
		memcpy(frames + nframes, buf, sizeof(*buf) * (size_t)n);
		lk[nlk] = (struct lookup){ module, address, is_ret, n, (uint32_t)nframes };
		nframes += (size_t)n;
		*slot = (uint32_t)++nlk;
	}
	/* strings first, then entries referring to them */
	for (size_t i = 0; rc == 0 && i < nframes; i++) {
		const struct sym_frame *f = &frames[i];
		if (strtab_ref(&st, f->function) == UINT32_MAX ||
		    strtab_ref(&st, f->file) == UINT32_MAX || strtab_ref(&st, f->module) == UINT32_MAX)
			rc = -1;
	}
	if (rc == 0) {
		size_t at = section_begin(w, SEC_SYMBOLS, SEC_SYMBOLS_VERSION);
		sum_put_u64(w, st.n);
		for (size_t i = 0; i < st.n; i++)
			sum_put_str(w, st.v[i]);
		sum_put_u64(w, nlk);
		for (size_t i = 0; i < nlk; i++) {
			const struct lookup *l = &lk[i];
			sum_put_u32(w, l->module);
			sum_put_u64(w, l->address);
			sum_put_u32(w, (uint32_t)l->is_ret);
			sum_put_u32(w, (uint32_t)l->n);
			for (int k = 0; k < l->n; k++) {
				const struct sym_frame *f = &frames[l->first + (uint32_t)k];
				sum_put_u32(w, strtab_ref(&st, f->function));
				sum_put_u32(w, strtab_ref(&st, f->file));
				sum_put_u32(w, (uint32_t)f->line);
				sum_put_u32(w, strtab_ref(&st, f->module));
				sum_put_u64(w, f->address);
				sum_put_u64(w, f->offset);
				/* flags: bit 0 inlined; bits 8-15 the frame's kind (0 native), for
				 * interpreted frames */
				sum_put_u32(w, (f->inlined ? 1u : 0u) | (f->python ? 1u << 8 : 0u));
			}
		}
		section_end(w, at);
	}
	free(lk);
	free(frames);
	free(st.v);
	u64map_free(&st.index);
	u64map_free(&seen);
	return rc;
}

static int read_symbols(struct sum_in *r, struct process *p)
{
	struct sum_symbols *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	u64map_init(&t->index, sizeof(uint32_t));
	int oom = 0;
	t->nstrings = sum_get_count(r, 4);
	t->strings = calloc(t->nstrings ? t->nstrings : 1, sizeof(char *));
	oom = !t->strings;
	for (size_t i = 0; !oom && !r->bad && i < t->nstrings; i++)
		if (!(t->strings[i] = sum_get_str(r, &oom)))
			r->bad |= !oom;
	size_t n = sum_get_count(r, 20);
	if (!oom && !r->bad)
		t->entries = calloc(n ? n : 1, sizeof(*t->entries));
	oom |= !r->bad && !t->entries;
	size_t fcap = 0;
	for (size_t i = 0; !oom && !r->bad && i < n; i++) {
		struct sum_entry *e = &t->entries[i];
		e->module = sum_get_u32(r);
		e->address = sum_get_u64(r);
		e->is_ret = sum_get_u32(r) != 0;
		e->nframes = sum_get_u32(r);
		e->first = (uint32_t)t->nframes;
		if (e->nframes > 64 || e->nframes < 1) {
			r->bad = 1;
			break;
		}
		t->nentries = i + 1;
		for (uint32_t k = 0; k < e->nframes && !oom && !r->bad; k++) {
			if (t->nframes == fcap &&
			    grow_array((void **)&t->frames, &fcap, sizeof(*t->frames)) < 0) {
				oom = 1;
				break;
			}
			struct sym_frame *f = &t->frames[t->nframes++];
			uint32_t fn = sum_get_u32(r), file = sum_get_u32(r);
			f->line = (int)sum_get_u32(r);
			uint32_t mod = sum_get_u32(r);
			f->address = sum_get_u64(r);
			f->offset = sum_get_u64(r);
			uint32_t flags = sum_get_u32(r);
			f->inlined = (int)(flags & 1);
			f->python = ((flags >> 8) & 0xff) == 1;
			if (fn > t->nstrings || file > t->nstrings || mod > t->nstrings || !mod) {
				r->bad = 1;
				break;
			}
			f->function = fn ? t->strings[fn - 1] : NULL;
			f->file = file ? t->strings[file - 1] : NULL;
			f->module = t->strings[mod - 1];
		}
		if (oom || r->bad)
			break;
		uint64_t k = entry_key(e->module, e->address, e->is_ret);
		for (;; k++) {
			int created;
			uint32_t *slot = u64map_put(&t->index, k, &created);
			if (!slot) {
				oom = 1;
				break;
			}
			if (created) {
				*slot = (uint32_t)i;
				break;
			}
		}
	}
	if (oom || r->bad) {
		sum_symbols_free(t);
		return oom ? -1 : 0;
	}
	if (p->symtab)
		sum_symbols_free(p->symtab);
	p->symtab = t;
	return 0;
}

/* ---- processes ---------------------------------------------------------------------------- */

static void write_core(struct sum_out *w, const struct process *p)
{
	sum_put_str(w, p->path);
	sum_put_u32(w, (uint32_t)sizeof(p->hdr));
	sum_put_bytes(w, &p->hdr, sizeof(p->hdr));
	sum_put_str(w, p->exe);
	sum_put_str(w, p->host);
	sum_put_u64(w, p->argc);
	for (uint32_t i = 0; i < p->argc; i++)
		sum_put_str(w, p->argv[i]);
	sum_put_u64(w, p->end_ns);
	sum_put_u32(w, (uint32_t)p->exit_kind);
	sum_put_u32(w, (uint32_t)p->exit_value);
	sum_put_str(w, p->exec_path);
	sum_put_u32(w, (uint32_t)p->complete);
	sum_put_u64(w, p->lost_records);
	sum_put_u64(w, p->cut_bytes);
	sum_put_u64(w, p->unknown_records);
	sum_put_u32(w, (uint32_t)sizeof(struct thread_info));
	sum_put_u64(w, p->nthreads);
	sum_put_bytes(w, p->threads, p->nthreads * sizeof(*p->threads));
	sum_put_u64(w, p->nmodules);
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct module_info *m = &p->modules[i];
		sum_put_u32(w, m->id);
		sum_put_str(w, m->path);
		sum_put_u64(w, m->start);
		sum_put_u64(w, m->end);
		sum_put_u64(w, m->bias);
		sum_put_u32(w, m->build_id_len);
		sum_put_bytes(w, m->build_id, sizeof(m->build_id));
		sum_put_u32(w, (uint32_t)m->present);
	}
	sum_put_u64(w, p->stacks.count);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&p->stacks, &pos, &key, &val)) {
		const struct stack_info *s = val;
		sum_put_u64(w, key);
		sum_put_u32(w, s->depth);
		sum_put_u32(w, (uint32_t)s->leaf_exact);
		sum_put_bytes(w, s->frames, sizeof(uint64_t) * s->depth);
		sum_put_bytes(w, s->modules, sizeof(uint32_t) * s->depth);
	}
	sum_put_u64(w, p->nchildren);
	sum_put_bytes(w, p->children, p->nchildren * sizeof(*p->children));
	sum_put_u64(w, p->nreaped);
	sum_put_bytes(w, p->reaped, p->nreaped * sizeof(*p->reaped));
}

/* 0, -1 out of memory; r->bad on bad input. */
static int read_core(struct sum_in *r, struct process *p, uint32_t version)
{
	int oom = 0;
	char *path = sum_get_str(r, &oom);
	if (oom || process_init(p, path ? path : "?") < 0) {
		free(path);
		return -1;
	}
	free(path);
	if (sum_get_u32(r) != sizeof(p->hdr)) {
		r->bad = 1;
		return 0;
	}
	sum_get_bytes(r, &p->hdr, sizeof(p->hdr));
	p->exe = sum_get_str(r, &oom);
	p->host = sum_get_str(r, &oom);
	size_t argc = sum_get_count(r, 4);
	if (argc >= UINT32_MAX)
		r->bad = 1;
	if (oom || r->bad || !p->exe || !p->host)
		return oom ? -1 : (r->bad = 1, 0);
	if (!(p->argv = calloc(argc + 1, sizeof(char *))))
		return -1;
	for (size_t i = 0; i < argc && !r->bad; i++) {
		if (!(p->argv[i] = sum_get_str(r, &oom)))
			return oom ? -1 : (r->bad = 1, 0);
		p->argc = (uint32_t)i + 1;
	}
	p->end_ns = sum_get_u64(r);
	uint32_t kind = sum_get_u32(r);
	if (kind > EXIT_EXEC)
		r->bad = 1;
	p->exit_kind = (enum exit_kind)kind;
	p->exit_value = (int)sum_get_u32(r);
	p->exec_path = sum_get_str(r, &oom);
	p->complete = sum_get_u32(r) != 0;
	p->lost_records = sum_get_u64(r);
	p->cut_bytes = sum_get_u64(r);
	p->unknown_records = sum_get_u64(r);
	/* Rows as long as this prof's, or shorter: from a prof before the last fields. */
	uint32_t row = sum_get_u32(r);
	if (row > sizeof(struct thread_info) || row < offsetof(struct thread_info, sampled_ns))
		r->bad = 1;
	size_t nt = r->bad ? 0 : sum_get_count(r, row);
	if (oom || r->bad)
		return oom ? -1 : 0;
	if (nt && !(p->threads = malloc(nt * sizeof(*p->threads))))
		return -1;
	p->threads_cap = nt;
	for (size_t i = 0; i < nt; i++) {
		memset(&p->threads[i], 0, sizeof(p->threads[i]));
		sum_get_bytes(r, &p->threads[i], row);
	}
	for (size_t i = 0; i < nt && !r->bad; i++) {
		p->threads[i].name[16] = '\0';
		uint32_t *slot = u64map_put(&p->thread_index, p->threads[i].serial, NULL);
		if (!slot)
			return -1;
		*slot = (uint32_t)i;
		p->nthreads = i + 1;
	}
	size_t nm = sum_get_count(r, 4 + 4 + 24 + 4 + 20 + 4);
	for (size_t i = 0; i < nm && !r->bad; i++) {
		struct module_info m = { 0 };
		m.id = sum_get_u32(r);
		m.path = sum_get_str(r, &oom);
		m.start = sum_get_u64(r);
		m.end = sum_get_u64(r);
		m.bias = sum_get_u64(r);
		m.build_id_len = sum_get_u32(r);
		sum_get_bytes(r, m.build_id, sizeof(m.build_id));
		m.present = sum_get_u32(r) != 0;
		if (m.build_id_len > sizeof(m.build_id) || (!m.path && !oom))
			r->bad = 1;
		if (oom || r->bad || process_add_module(p, &m) < 0) {
			free(m.path);
			return oom || !r->bad ? -1 : 0;
		}
	}
	size_t ns = sum_get_count(r, 16);
	for (size_t i = 0; i < ns && !r->bad; i++) {
		uint64_t id = sum_get_u64(r);
		uint32_t depth = sum_get_u32(r);
		int leaf_exact = sum_get_u32(r) != 0;
		if (r->bad || depth > (size_t)(r->end - r->p) / 12) {
			r->bad = 1;
			break;
		}
		int created;
		struct stack_info *s = u64map_put(&p->stacks, id, &created);
		if (!s)
			return -1;
		if (!created) {
			r->bad = 1;
			break;
		}
		s->frames = malloc(sizeof(uint64_t) * (depth ? depth : 1));
		s->modules = malloc(sizeof(uint32_t) * (depth ? depth : 1));
		if (!s->frames || !s->modules)
			return -1;
		s->depth = depth;
		s->leaf_exact = leaf_exact;
		sum_get_bytes(r, s->frames, sizeof(uint64_t) * depth);
		sum_get_bytes(r, s->modules, sizeof(uint32_t) * depth);
	}
	size_t nc = sum_get_count(r, 4);
	if (!r->bad && nc) {
		if (!(p->children = malloc(nc * sizeof(*p->children))))
			return -1;
		p->nchildren = p->children_cap = nc;
		sum_get_bytes(r, p->children, nc * sizeof(*p->children));
	}
	size_t nr = version >= 2 ? sum_get_count(r, sizeof(*p->reaped)) : 0;
	if (!r->bad && nr) {
		if (!(p->reaped = malloc(nr * sizeof(*p->reaped))))
			return -1;
		p->nreaped = p->reaped_cap = nr;
		sum_get_bytes(r, p->reaped, nr * sizeof(*p->reaped));
	}
	return 0;
}

/* The first family with data that cannot be summarized, or NULL. */
static const struct family *unsummarizable(const struct process *p)
{
	for (size_t i = 0; families[i]; i++)
		if (!families[i]->sum_write && families[i]->has_data && families[i]->has_data(p))
			return families[i];
	return NULL;
}

int summary_write_process(struct sum_out *w, struct process *p, char *err, size_t errlen)
{
	const struct family *f = unsummarizable(p);
	if (f) {
		snprintf(err, errlen, "%s: its %s data cannot be summarized yet; use the trace",
			 p->path, f->name);
		return -1;
	}
	struct u64map want;
	u64map_init(&want, 1);
	w->want = &want;
	for (size_t i = 0; i < p->nthreads; i++)  /* report names each thread's start routine */
		if (p->threads[i].start_routine)
			sum_want_addr(w, p->threads[i].start_routine);
	size_t at = section_begin(w, SEC_PROCESS, SEC_PROCESS_VERSION);
	write_core(w, p);
	section_end(w, at);
	int rc = 0;
	for (size_t i = 0; families[i] && rc == 0; i++) {
		const struct family *fam = families[i];
		if (!fam->sum_write)
			continue;
		at = section_begin(w, SEC_FAMILY, fam->sum_version);
		sum_put_str(w, fam->name);
		rc = fam->sum_write(w, p, p->family_state[i]);
		section_end(w, at);
	}
	w->want = NULL;
	if (rc == 0 && !w->oom)
		rc = write_symbols(w, p, &want);
	u64map_free(&want);
	if (rc < 0 || w->oom)
		snprintf(err, errlen, "%s: out of memory", p->path);
	return rc < 0 || w->oom ? -1 : 0;
}

int summary_is(const char *path)
{
	FILE *f = fopen(path, "rb");
	char magic[8];
	int is = f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, SUMMARY_MAGIC, 8);
	if (f)
		fclose(f);
	return is;
}

static const struct family *family_named(const char *name, size_t *index)
{
	for (size_t i = 0; families[i]; i++)
		if (!strcmp(families[i]->name, name)) {
			*index = i;
			return families[i];
		}
	return NULL;
}

/* summary_parse() of a piece of a file: buf holds the file's first 16 bytes, then the bytes
 * from offset base + 16 on; messages give offsets in the file. */
static int parse_piece(const unsigned char *buf, size_t len, size_t base, const char *name,
		       struct process **ps, size_t *n, size_t *cap, char *err, size_t errlen)
{
	const size_t first = *n;
	uint32_t version, mark;
	if (len < 16 || memcmp(buf, SUMMARY_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a prof summary", name);
		return -1;
	}
	memcpy(&version, buf + 8, 4);
	memcpy(&mark, buf + 12, 4);
	if (mark != BYTE_ORDER_MARK) {
		snprintf(err, errlen, "%s: a summary written on a machine of another byte order", name);
		return -1;
	}
	if (version != SUMMARY_VERSION) {
		snprintf(err, errlen, "%s: summary version %u; this prof reads version %d", name,
			 version, SUMMARY_VERSION);
		return -1;
	}
	size_t off = 16;
	struct process *cur = NULL;
	const char *problem = NULL;
	int oom = 0;
	while (off < len && !problem && !oom) {
		if (len - off < SECTION_HEAD) {
			problem = "cut short";
			break;
		}
		uint32_t tag, sver;
		uint64_t slen;
		memcpy(&tag, buf + off, 4);
		memcpy(&sver, buf + off + 4, 4);
		memcpy(&slen, buf + off + 8, 8);
		if (slen > len - off - SECTION_HEAD) {
			problem = "cut short";
			break;
		}
		struct sum_in r = { buf + off + SECTION_HEAD, buf + off + SECTION_HEAD + slen, 0 };
		if (tag == SEC_PROCESS) {
			if (sver != SEC_PROCESS_VERSION && sver != 1) {
				problem = "a process section of another version";
				break;
			}
			if (*n == *cap && grow_array((void **)ps, cap, sizeof(**ps)) < 0) {
				oom = 1;
				break;
			}
			cur = &(*ps)[(*n)++];
			memset(cur, 0, sizeof(*cur));
			oom = read_core(&r, cur, sver) < 0;
		} else if (tag == SEC_FAMILY || tag == SEC_SYMBOLS) {
			if (!cur) {
				problem = "a section before its process";
				break;
			}
			if (tag == SEC_SYMBOLS) {
				if (sver != SEC_SYMBOLS_VERSION) {
					problem = "a symbols section of another version";
					break;
				}
				oom = read_symbols(&r, cur) < 0;
			} else {
				char *fname = sum_get_str(&r, &oom);
				size_t fi;
				const struct family *f = fname ? family_named(fname, &fi) : NULL;
				free(fname);
				if (f && f->sum_read) {  /* a family this prof does not know: skipped */
					if (sver != f->sum_version) {
						problem = "a family section of another version (a summary "
							  "of another prof)";
						break;
					}
					oom = f->sum_read(&r, cur, cur->family_state[fi]) < 0;
				}
			}
		}  /* other tags: skipped */
		if (r.bad && !oom)
			problem = "damaged";
		if (!problem)
			off += SECTION_HEAD + slen;
	}
	if (!problem && !oom && *n == first)
		problem = "no process in it";
	if (problem || oom) {
		if (oom)
			snprintf(err, errlen, "%s: out of memory", name);
		else
			snprintf(err, errlen, "%s: damaged summary (%s) at offset %zu", name, problem,
				 base + off);
		for (size_t i = first; i < *n; i++)
			process_free(&(*ps)[i]);
		*n = first;
		return -1;
	}
	return 0;
}

int summary_parse(const unsigned char *buf, size_t len, const char *name, struct process **ps,
		  size_t *n, size_t *cap, char *err, size_t errlen)
{
	return parse_piece(buf, len, 0, name, ps, n, cap, err, errlen);
}

/* Up to max bytes of f from where it stands, appended to *buf (*len, *bcap); -1: out of
 * memory, -2: a read error. */
static int read_more(FILE *f, uint64_t max, unsigned char **buf, size_t *len, size_t *bcap)
{
	for (uint64_t left = max; left;) {
		if (*len == *bcap) {
			size_t nc = *bcap ? *bcap * 2 : 1 << 16;
			unsigned char *b = realloc(*buf, nc);
			if (!b)
				return -1;
			*buf = b;
			*bcap = nc;
		}
		size_t want = *bcap - *len < left ? *bcap - *len : (size_t)left;
		size_t got = fread(*buf + *len, 1, want, f);
		*len += got;
		left -= got;
		if (got == 0)
			break;
	}
	return ferror(f) ? -2 : 0;
}

int summary_load_piece(const char *path, uint64_t from, uint64_t to, struct process **ps,
		       size_t *n, size_t *cap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	unsigned char *buf = NULL;
	size_t len = 0, bcap = 0;
	if (from < 16)
		from = 16;
	int bad = read_more(f, 16, &buf, &len, &bcap);
	if (!bad && len == 16 && to > from)
		bad = fseeko(f, (off_t)from, SEEK_SET) != 0 ? -2 :
		      read_more(f, to - from, &buf, &len, &bcap);
	fclose(f);
	int rc;
	if (bad) {
		snprintf(err, errlen, "%s: %s", path, bad == -1 ? "out of memory" : "read error");
		rc = -1;
	} else {
		rc = parse_piece(buf, len, from - 16, path, ps, n, cap, err, errlen);
	}
	free(buf);
	return rc;
}

int summary_pieces(const char *path, uint64_t **starts, size_t *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 0;
	*starts = NULL;
	*n = 0;
	int oom = grow_array((void **)starts, &cap, sizeof(**starts)) < 0;
	if (!oom)
		(*starts)[(*n)++] = 0;
	/* Section heads from the first one on, to where they stop making sense: what is wrong
	 * there is for the piece that holds it to say. */
	unsigned char head[SECTION_HEAD];
	for (off_t off = 16; !oom && fseeko(f, off, SEEK_SET) == 0 &&
			     fread(head, 1, SECTION_HEAD, f) == SECTION_HEAD;) {
		uint32_t tag;
		uint64_t slen;
		memcpy(&tag, head, 4);
		memcpy(&slen, head + 8, 8);
		if (tag == SEC_PROCESS && off > 16) {
			if (*n == cap && grow_array((void **)starts, &cap, sizeof(**starts)) < 0)
				oom = 1;
			else
				(*starts)[(*n)++] = (uint64_t)off;
		}
		if (slen > (uint64_t)INT64_MAX - (uint64_t)off - SECTION_HEAD)
			break;
		off += SECTION_HEAD + (off_t)slen;
	}
	fclose(f);
	if (oom) {
		free(*starts);
		*starts = NULL;
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

int summary_reduce(struct process *p, char *err, size_t errlen)
{
	if (unsummarizable(p))
		return 1;
	struct sum_out w = { 0 };
	summary_put_header(&w);
	int rc = summary_write_process(&w, p, err, errlen);
	if (rc < 0) {
		free(w.buf);
		return -1;
	}
	struct process *one = NULL;
	size_t n = 0, cap = 0;
	char *name = strdup(p->path);
	rc = name ? summary_parse(w.buf, w.len, name, &one, &n, &cap, err, errlen) : -1;
	free(w.buf);
	if (!name)
		snprintf(err, errlen, "out of memory");
	free(name);
	if (rc == 0 && n == 1) {
		process_free(p);
		*p = one[0];
		free(one);
		return 0;
	}
	processes_free(one, n);  /* nothing, or not the one process written: never so */
	return -1;
}

/* ---- prof summarize ----------------------------------------------------------------------- */

static const struct cmd_spec spec = {
	"summarize", CMD_OUTPUT, 0,
	"usage: prof summarize [options] TRACE... -o FILE\n"
	"Writes one summary of the TRACE arguments (trace files, run directories, summaries):\n"
	"each process's aggregates, stacks and symbols, which report, leaks, flame, diff, html,\n"
	"kernels and export (pprof, speedscope) read in place of the traces, merged with\n"
	"others: run it where the traces are (srun prof summarize on each node), then\n"
	"prof report *.sum. Needs no binaries to be read.\n\n"
	"  -o FILE      the summary (needed)\n",
};

/* The summary is made as the processes are loaded (processes_each(), one worker per core: a
 * trace, or one process of a summary, at a time), each process's summary written to a spill
 * file (spill.h) as soon as it is made, and the process freed: memory holds a process per
 * worker, not the run's summaries. The file is the header, then those summaries copied out in
 * the order of the inputs. */
struct sum_part {
	size_t at, seq;       /* its place in the inputs, and when it came (a piece's processes) */
	struct spilled sum;   /* its summary */
};

struct sum_job {
	const struct cmd_opts *o;
	struct spills spills;
	struct sum_part *parts;
	size_t n, cap;
	char err[512];        /* the first error in the order of the inputs (of the one at err_at) */
	size_t err_at;
	pthread_mutex_t lock;
};

static void summarize_one(void *ctx, struct process *p, size_t at)
{
	struct sum_job *j = ctx;
	/* a summary's processes are selected here: cmd_inputs() read the traces' headers only
	 * (and a trace's process, selected there, is selected here again) */
	if (!cmd_selects(j->o, p)) {
		process_free(p);
		return;
	}
	struct sum_part part = { .at = at };
	struct sum_out w = { 0 };
	char err[512] = "";
	int rc = summary_write_process(&w, p, err, sizeof(err));
	uint32_t pid = p->hdr.pid;
	process_free(p);
	FILE *out = rc < 0 ? NULL : spill_begin(&j->spills, &part.sum);
	if (out) {
		fwrite(w.buf, 1, w.len, out);
		spill_end(&j->spills, &part.sum);
	}
	free(w.buf);
	if (rc == 0 && part.sum.lost)
		snprintf(err, sizeof(err), "summarize: process %u: its summary was lost (the "
			 "temporary file failed)", pid);
	pthread_mutex_lock(&j->lock);
	part.seq = j->n;
	if (!err[0] && j->n == j->cap && grow_array((void **)&j->parts, &j->cap,
						    sizeof(*j->parts)) < 0)
		snprintf(err, sizeof(err), "out of memory");
	if (!err[0])
		j->parts[j->n++] = part;
	else if (!j->err[0] || at < j->err_at) {
		memcpy(j->err, err, sizeof(err));
		j->err_at = at;
	}
	pthread_mutex_unlock(&j->lock);
}

static int by_input(const void *a, const void *b)
{
	const struct sum_part *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int cmd_summarize(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!o.outfile) {
		prof_error("summarize: -o FILE is needed (try prof summarize --help)");
		return 2;
	}
	char **paths;
	size_t n;
	if (cmd_inputs(&o, &paths, &n) < 0)
		return 1;
	struct sum_job job = { .o = &o, .lock = PTHREAD_MUTEX_INITIALIZER };
	if (spills_init(&job.spills) < 0) {
		prof_error("summarize: cannot make a temporary file in $TMPDIR, else /tmp: %m");
		inputs_free(paths);
		return 1;
	}
	processes_reduce_set(0);  /* each summarized from all it holds, as it is loaded */
	processes_doing_set("summarizing");
	rc = processes_each(paths, n, NULL, summarize_one, &job) < 0 ? 1 : 0;
	processes_reduce_set(1);  /* the defaults again, for a caller that goes on (the fuzzer) */
	processes_doing_set("reporting");
	if (rc == 0 && job.err[0]) {
		prof_error("%s", job.err);
		rc = 1;
	}
	if (rc == 0 && !job.n) {  /* a summary without processes would be no summary */
		cmd_no_match();
		rc = 1;
	}
	FILE *out = rc == 0 ? cmd_output(o.outfile) : NULL;
	if (rc == 0 && !out)
		rc = 1;
	if (out) {
		qsort(job.parts, job.n, sizeof(*job.parts), by_input);
		struct sum_out head = { 0 };
		summary_put_header(&head);
		fwrite(head.buf, 1, head.len, out);
		free(head.buf);
		int lost = 0;
		for (size_t i = 0; i < job.n && !lost; i++)
			lost = spill_copy(out, &job.spills, &job.parts[i].sum) < 0;
		if (lost)
			prof_error("summarize: a process's summary was lost (the temporary file "
				   "failed)");
		rc = cmd_finish_output(out, o.outfile, lost);
	}
	free(job.parts);
	spills_close(&job.spills);
	inputs_free(paths);
	return rc;
}
