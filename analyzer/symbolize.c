/* Symbolization through elfutils' libdwfl: DWARF scopes for (inlined) functions, line tables
 * for file:line, the ELF symbol table as fallback; results cached and strings interned. */
#include "symbolize.h"
#include "u64map.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* From libstdc++ (the analyzer links -lstdc++); declared here to stay a C translation unit. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define SYM_MAX_FRAMES	64		/* deepest inline chain we keep for one address */
#define DEBUG_ROOT	"/usr/lib/debug"
#define ARENA_CHUNK	(64 * 1024)

/*
 * Addresses: a module is declared with a load bias, "address - bias = ELF virtual address".
 * Every ELF object is reported to the Dwfl at base 0 with add_p_vaddr (so its Dwfl bias is 0
 * and Dwfl addresses are ELF virtual addresses, prelinked objects included; ET_EXEC ignores the
 * base anyway), and lookups pass address - bias. One opened object then serves every module
 * that maps the same file at whatever address (one process or many), and parses its DWARF once.
 * Objects overlap in the Dwfl's address space, so we never use dwfl_addrmodule(): each module
 * keeps its Dwfl_Module and only per-module calls are made.
 */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

/* An opened (or failed) ELF file, shared by every module that maps it. */
struct object {
	const char *path;		/* interned; also the Dwfl module name */
	Dwfl_Module *mod;		/* NULL: could not be opened or reported */
	uint8_t *build_id;		/* of the file on disk, NULL if none */
	size_t build_id_len;
	struct elf_sym *syms;		/* sorted by address, built at the first lookup */
	size_t nsyms;
	bool syms_built;
	struct object *next;
};

/* A symbol that can name code, from every symbol table libdwfl found for an object. */
struct elf_sym {
	uint64_t addr, size;
	uint64_t section_end;		/* a sizeless symbol names addresses below this */
	const char *name;		/* libelf's string, alive as long as the Dwfl */
	int rank;			/* among symbols at one address, the highest names it */
};

enum module_state { MOD_UNRESOLVED, MOD_OK, MOD_FAILED };

struct module {
	uint32_t id;
	const char *path;		/* interned, as declared */
	uint64_t start, end, bias;
	uint8_t *build_id;		/* as recorded, NULL if none */
	size_t build_id_len;
	enum module_state state;
	struct object *obj;		/* when MOD_OK */
	struct module *next_all;	/* every module ever declared, for sym_free() */
};

struct cache_entry {
	uint64_t address;		/* 0 with module NULL: empty slot */
	struct module *module;		/* the declaration the frames were computed for */
	uint32_t module_id;
	int is_ret;
	int nframes;
	struct sym_frame *frames;	/* in the frame arena */
};

struct symbolizer {
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks;
	char *debuginfo_path;

	struct arena_chunk *arena;	/* strings and frame arrays */

	const char **strings;		/* interning set, open addressing */
	size_t nstrings, string_cap;

	struct module **modules;	/* by id, open addressing, the current declaration */
	size_t nmodules, module_cap;
	struct module *all_modules;

	struct object *objects;

	struct cu_index **cus;		/* DWARF indexes by (object, CU), open addressing */
	size_t ncus, cus_cap;

	struct cache_entry *cache;	/* open addressing */
	size_t ncache, cache_cap;

	size_t arena_bytes;		/* strings and frames, for sym_held_bytes() */
	size_t nobjects;
};

static void cu_index_free(struct cu_index *c);

/* ---- small helpers ---- */

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void *arena_alloc(struct symbolizer *s, size_t size)
{
	struct arena_chunk *c = s->arena;
	size_t align = sizeof(max_align_t);

	size = (size + align - 1) & ~(align - 1);
	if (!c || c->size - c->used < size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->size = cap;
		c->used = 0;
		c->next = s->arena;
		s->arena = c;
		s->arena_bytes += cap;
	}
	void *p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

static int strings_grow(struct symbolizer *s)
{
	size_t cap = s->string_cap ? s->string_cap * 2 : 1024;
	const char **tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -1;
	for (size_t i = 0; i < s->string_cap; i++) {
		const char *str = s->strings[i];

		if (!str)
			continue;
		size_t j = hash_bytes(str, strlen(str)) & (cap - 1);
		while (tab[j])
			j = (j + 1) & (cap - 1);
		tab[j] = str;
	}
	free(s->strings);
	s->strings = tab;
	s->string_cap = cap;
	return 0;
}

/* Returns the symbolizer's copy of str (n bytes), or NULL when out of memory. */
static const char *intern_n(struct symbolizer *s, const char *str, size_t n)
{
	if ((s->nstrings + 1) * 2 > s->string_cap && strings_grow(s))
		return NULL;

	size_t mask = s->string_cap - 1;
	size_t i = hash_bytes(str, n) & mask;

	for (; s->strings[i]; i = (i + 1) & mask) {
		const char *cur = s->strings[i];

		if (strncmp(cur, str, n) == 0 && cur[n] == '\0')
			return cur;
	}
	char *copy = arena_alloc(s, n + 1);
	if (!copy)
		return NULL;
	memcpy(copy, str, n);
	copy[n] = '\0';
	s->strings[i] = copy;
	s->nstrings++;
	return copy;
}

static const char *intern(struct symbolizer *s, const char *str)
{
	return str ? intern_n(s, str, strlen(str)) : NULL;
}

char *sym_demangle(const char *name)
{
	int status = -1;
	char *out;

	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Interned demangled form of name, or name itself when it is not mangled. */
static const char *intern_demangled(struct symbolizer *s, const char *name)
{
	char *d = sym_demangle(name);
	const char *r;

	if (!d)
		return intern(s, name);
	r = intern(s, d);
	free(d);
	return r;
}

/* ---- finding separate debug info, offline only (never debuginfod) ---- */

static int elf_build_id(Elf *elf, const void **bits)
{
	ssize_t n = dwelf_elf_gnu_build_id(elf, bits);

	return n > 0 ? (int)n : 0;
}

/* Opens path read-only when it is a regular file; never blocks on FIFOs or devices. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The CRC-32 that .gnu_debuglink stores (reflected polynomial 0xedb88320). */
static uint32_t file_crc32(int fd, bool *ok)
{
	static uint32_t table[256];
	static bool table_ready;
	unsigned char buf[16384];
	uint32_t crc = 0xffffffffu;
	off_t pos = 0;
	ssize_t n;

	if (!table_ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		table_ready = true;
	}
	while ((n = pread(fd, buf, sizeof(buf), pos)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
		pos += n;
	}
	*ok = n == 0;
	return crc ^ 0xffffffffu;
}

enum debug_check {
	CHECK_BUILD_ID,		/* found by build ID: must carry the module's build ID */
	CHECK_DEBUGLINK,	/* same build ID when both have one, else the debuglink CRC */
	CHECK_NONE,		/* an altlink (dwz) file: its build ID is its own */
};

/* Is the file at fd the debug file that mod asks for? */
static bool debug_candidate_ok(Dwfl_Module *mod, int fd, enum debug_check check, uint32_t crc)
{
	const unsigned char *mod_bits;
	GElf_Addr vaddr;
	int mod_len = dwfl_module_build_id(mod, &mod_bits, &vaddr);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *bits;
	bool ok = false, read_ok;
	int len;

	if (!elf)
		return false;
	if (elf_kind(elf) != ELF_K_ELF)
		goto out;
	len = elf_build_id(elf, &bits);
	switch (check) {
	case CHECK_BUILD_ID:
		ok = mod_len > 0 && len == mod_len && memcmp(bits, mod_bits, len) == 0;
		break;
	case CHECK_DEBUGLINK:
		if (mod_len > 0 && len > 0)
			ok = len == mod_len && memcmp(bits, mod_bits, len) == 0;
		else if (crc != 0)
			ok = file_crc32(fd, &read_ok) == crc && read_ok;
		else
			ok = true;
		break;
	case CHECK_NONE:
		ok = true;
		break;
	}
out:
	elf_end(elf);
	return ok;
}

static int try_debug_file(Dwfl_Module *mod, const char *main_file, const char *path,
			  enum debug_check check, uint32_t crc, char **found)
{
	int fd;

	if (main_file && strcmp(path, main_file) == 0)
		return -1;
	fd = open_regular(path);
	if (fd < 0)
		return -1;
	if (!debug_candidate_ok(mod, fd, check, crc)) {
		close(fd);
		return -1;
	}
	*found = strdup(path);
	if (!*found) {
		close(fd);
		return -1;
	}
	return fd;
}

/* DEBUG_ROOT/.build-id/xx/rest.debug into buf; false if it does not fit or len < 2. */
static bool build_id_path(char *buf, size_t size, const uint8_t *bits, size_t len)
{
	size_t n;

	if (len < 2 || size < sizeof(DEBUG_ROOT "/.build-id/xx/.debug") + 2 * len)
		return false;
	n = sprintf(buf, DEBUG_ROOT "/.build-id/%02x/", bits[0]);
	for (size_t i = 1; i < len; i++)
		n += sprintf(buf + n, "%02x", bits[i]);
	strcpy(buf + n, ".debug");
	return true;
}

/*
 * Dwfl find_debuginfo callback: /usr/lib/debug/.build-id/xx/rest.debug, then the debuglink
 * name next to the file, in its .debug/ directory and under /usr/lib/debug/<dir>/. Unlike
 * dwfl_standard_find_debuginfo() it never asks debuginfod (no network from the analyzer).
 */
static int find_debuginfo_offline(Dwfl_Module *mod, void **userdata, const char *modname,
				  Dwarf_Addr base, const char *file_name,
				  const char *debuglink_file, GElf_Word debuglink_crc,
				  char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	/* libdwfl asks for a dwz altlink file with its name and no CRC. */
	bool altlink = debuglink_file && debuglink_crc == 0;
	char path[4096];
	int fd;

	(void)userdata;
	(void)modname;
	(void)base;
	if (!altlink && len > 0 && build_id_path(path, sizeof(path), bits, len)) {
		fd = try_debug_file(mod, file_name, path, CHECK_BUILD_ID, 0, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	if (!debuglink_file || !*debuglink_file)
		return -1;

	enum debug_check check = altlink ? CHECK_NONE : CHECK_DEBUGLINK;
	if (debuglink_file[0] == '/')
		return try_debug_file(mod, file_name, debuglink_file, check, debuglink_crc,
				      debuginfo_file_name);
	if (!file_name)
		return -1;

	const char *slash = strrchr(file_name, '/');
	int dirlen = slash ? (int)(slash - file_name) : 1;
	const char *dir = slash ? file_name : ".";
	const char *const fmts[] = { "%.*s/%s", "%.*s/.debug/%s", DEBUG_ROOT "%.*s/%s" };

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		if (i == 2 && dir[0] != '/')
			break;
		if (snprintf(path, sizeof(path), fmts[i], dirlen, dir, debuglink_file)
		    >= (int)sizeof(path))
			continue;
		fd = try_debug_file(mod, file_name, path, check, debuglink_crc,
				    debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* Every object is reported with dwfl_report_elf(), which preinstalls its ELF: never called
 * for them; present because libdwfl expects the callback and must not reach debuginfod. */
static int find_elf_none(Dwfl_Module *mod, void **userdata, const char *modname,
			 Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	*elfp = NULL;
	return -1;
}

/* ---- modules and objects ---- */

struct symbolizer *sym_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	elf_version(EV_CURRENT);
	/* The debuginfo path is only consulted by libdwfl's standard callbacks, which we do not
	 * use; keep it explicit so that nothing falls back to the environment. */
	s->debuginfo_path = strdup(":.debug:" DEBUG_ROOT);
	s->callbacks.find_elf = find_elf_none;
	s->callbacks.find_debuginfo = find_debuginfo_offline;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debuginfo_path;
	s->dwfl = s->debuginfo_path ? dwfl_begin(&s->callbacks) : NULL;
	if (!s->dwfl) {
		free(s->debuginfo_path);
		free(s);
		return NULL;
	}
	return s;
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	dwfl_end(s->dwfl);
	free(s->debuginfo_path);
	for (struct object *o = s->objects, *next; o; o = next) {
		next = o->next;
		free(o->build_id);
		free(o->syms);
		free(o);
	}
	for (struct module *m = s->all_modules, *next; m; m = next) {
		next = m->next_all;
		free(m->build_id);
		free(m);
	}
	for (size_t i = 0; i < s->cus_cap; i++)
		cu_index_free(s->cus[i]);
	free(s->cus);
	free(s->modules);
	free(s->cache);
	free(s->strings);
	for (struct arena_chunk *c = s->arena, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(s);
}

static struct module **module_slot(struct symbolizer *s, uint32_t id)
{
	size_t mask = s->module_cap - 1;
	size_t i = u64_mix(id) & mask;

	while (s->modules[i] && s->modules[i]->id != id)
		i = (i + 1) & mask;
	return &s->modules[i];
}

static struct module *module_find(struct symbolizer *s, uint32_t id)
{
	return s->module_cap ? *module_slot(s, id) : NULL;
}

static int modules_grow(struct symbolizer *s)
{
	struct module **old = s->modules;
	size_t old_cap = s->module_cap;
	size_t cap = old_cap ? old_cap * 2 : 64;

	s->modules = calloc(cap, sizeof(*s->modules));
	if (!s->modules) {
		s->modules = old;
		return -1;
	}
	s->module_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			*module_slot(s, old[i]->id) = old[i];
	free(old);
	return 0;
}

int sym_add_module(struct symbolizer *s, uint32_t id, const char *path, uint64_t start,
		   uint64_t end, uint64_t bias, const uint8_t *build_id, size_t build_id_len)
{
	struct module *old = module_find(s, id);
	const char *ipath = intern(s, path ? path : "?");

	if (!ipath)
		return -1;
	if (!build_id)
		build_id_len = 0;
	/* Re-declaring the same thing is a no-op: keeps the opened object and the cache. */
	if (old && old->path == ipath && old->start == start && old->end == end &&
	    old->bias == bias && old->build_id_len == build_id_len &&
	    (!build_id_len || memcmp(old->build_id, build_id, build_id_len) == 0))
		return 0;
	if ((s->nmodules + 1) * 2 > s->module_cap && modules_grow(s))
		return -1;

	struct module *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	if (build_id_len) {
		m->build_id = malloc(build_id_len);
		if (!m->build_id) {
			free(m);
			return -1;
		}
		memcpy(m->build_id, build_id, build_id_len);
		m->build_id_len = build_id_len;
	}
	m->id = id;
	m->path = ipath;
	m->start = start;
	m->end = end;
	m->bias = bias;
	m->state = MOD_UNRESOLVED;
	m->next_all = s->all_modules;
	s->all_modules = m;
	/* A replaced declaration stays allocated (cache entries point to it) but is no
	 * longer found; cache entries made for it are recomputed on their next lookup. */
	struct module **slot = module_slot(s, id);
	if (!*slot)
		s->nmodules++;
	*slot = m;
	return 0;
}

size_t sym_held_bytes(const struct symbolizer *s, size_t *objects)
{
	*objects = s->nobjects;
	return s->arena_bytes + s->cache_cap * sizeof(*s->cache) +
	       s->string_cap * sizeof(*s->strings) + s->module_cap * sizeof(*s->modules);
}

/* Names that are not files: the vDSO, the kernel's pseudo-mappings, the empty main-program
 * placeholder. */
static bool path_is_pseudo(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return path[0] == '\0' || path[0] == '[' || strcmp(path, "?") == 0 ||
	       strncmp(base, "linux-vdso.so", 13) == 0 || strncmp(base, "linux-gate.so", 13) == 0;
}

/* Opens and reports path (once; failures are remembered too). */
static struct object *object_get(struct symbolizer *s, const char *path)
{
	const char *ipath = intern(s, path);
	struct object *o;

	if (!ipath)
		return NULL;
	for (o = s->objects; o; o = o->next)
		if (o->path == ipath)
			return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->path = ipath;
	o->next = s->objects;
	s->objects = o;
	s->nobjects++;

	int fd = open_regular(path);
	if (fd < 0)
		return o;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr ehdr;
	bool usable = elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &ehdr) &&
		      (ehdr.e_type == ET_EXEC || ehdr.e_type == ET_DYN);
	if (usable) {
		const void *bits;
		int len = elf_build_id(elf, &bits);

		if (len > 0 && (o->build_id = malloc(len))) {
			memcpy(o->build_id, bits, len);
			o->build_id_len = len;
		}
	}
	if (elf)
		elf_end(elf);
	if (!usable) {
		close(fd);
		return o;
	}
	/* Base 0 with add_p_vaddr: Dwfl addresses are the file's own virtual addresses. */
	dwfl_report_begin_add(s->dwfl);
	o->mod = dwfl_report_elf(s->dwfl, ipath, ipath, fd, 0, true);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!o->mod)
		close(fd);	/* consumed only on success */
	return o;
}

static bool build_ids_match(const struct module *m, const struct object *o)
{
	if (!m->build_id_len || !o->build_id_len)
		return true;	/* nothing to compare: trust the path */
	return m->build_id_len == o->build_id_len &&
	       memcmp(m->build_id, o->build_id, m->build_id_len) == 0;
}

/* First lookup in a module: find the file that holds its code (or at least its symbols). */
static void module_resolve(struct symbolizer *s, struct module *m)
{
	static const char deleted[] = " (deleted)";
	char path[4096];
	size_t len = strlen(m->path);
	bool was_deleted = false;
	struct object *o;

	m->state = MOD_FAILED;
	if (path_is_pseudo(m->path) || len >= sizeof(path))
		return;
	memcpy(path, m->path, len + 1);
	if (len > sizeof(deleted) - 1 && strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0) {
		path[len - (sizeof(deleted) - 1)] = '\0';
		was_deleted = true;
	}
	/* A deleted file's path may hold a newer build: only trust it with a matching ID. */
	if (!was_deleted || m->build_id_len) {
		o = object_get(s, path);
		if (o && o->mod && build_ids_match(m, o) &&
		    (!was_deleted || o->build_id_len)) {
			m->obj = o;
			m->state = MOD_OK;
			return;
		}
	}
	/* The file changed (or is gone): the debug file of the recorded build still has the
	 * symbols and lines, at the same addresses. */
	if (build_id_path(path, sizeof(path), m->build_id, m->build_id_len)) {
		o = object_get(s, path);
		if (o && o->mod && o->build_id_len && build_ids_match(m, o)) {
			m->obj = o;
			m->state = MOD_OK;
		}
	}
}

/* ---- DWARF: a per-CU index of functions and inlined instances ---- */

/*
 * dwarf_getscopes() walks the whole CU for each address (and again for an inlined instance's
 * abstract origin), milliseconds per lookup in a large C++ CU. Instead, the first lookup in a
 * CU walks it once and keeps every concrete function and inlined instance (preorder, with
 * parent links and pc ranges) and the namespaces/classes that declare functions; a lookup
 * then is a binary search over the CU's top-level functions plus a walk down one function's
 * tree of inlined instances.
 */

struct fn_node {
	Dwarf_Die die;
	int parent;		/* enclosing function node, -1 for a top-level function */
	int end;		/* one past the last node of its subtree */
	int tag;
	uint32_t range0, nranges;	/* into cu_index.ranges */
	const char *call_file;	/* inlined instances: where the caller calls */
	int call_line;
	const char *name;
	bool name_done;
};

struct pc_range {
	Dwarf_Addr lo, hi;
	int node;
};

struct decl_prefix {
	Dwarf_Off off;		/* a function DIE declared in a namespace or class (0: empty) */
	const char *prefix;	/* "ns::Klass::" */
};

struct cu_index {
	struct object *obj;
	Dwarf_Off cu_off;
	bool cplus;
	struct fn_node *nodes;
	int nnodes, nodes_cap;
	struct pc_range *ranges;	/* per node, in node order */
	size_t nranges, ranges_cap;
	struct pc_range *tops;		/* top-level functions' ranges, sorted by lo */
	size_t ntops;
	struct decl_prefix *decls;	/* open addressing */
	size_t ndecls, decls_cap;
	bool oom;
};

#define WALK_MAX_DEPTH 256

static void *grow_array(void *p, size_t *cap, size_t need, size_t elem, bool *oom)
{
	size_t n = *cap ? *cap : 16;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	void *q = realloc(p, n * elem);
	if (!q) {
		*oom = true;
		return NULL;
	}
	*cap = n;
	return q;
}

static void decl_put(struct cu_index *c, Dwarf_Off off, const char *prefix)
{
	if ((c->ndecls + 1) * 2 > c->decls_cap) {
		size_t cap = c->decls_cap ? c->decls_cap * 2 : 256;
		struct decl_prefix *tab = calloc(cap, sizeof(*tab));

		if (!tab) {
			c->oom = true;
			return;
		}
		for (size_t i = 0; i < c->decls_cap; i++) {
			if (!c->decls[i].off)
				continue;
			size_t j = u64_mix(c->decls[i].off) & (cap - 1);
			while (tab[j].off)
				j = (j + 1) & (cap - 1);
			tab[j] = c->decls[i];
		}
		free(c->decls);
		c->decls = tab;
		c->decls_cap = cap;
	}
	size_t j = u64_mix(off) & (c->decls_cap - 1);
	while (c->decls[j].off && c->decls[j].off != off)
		j = (j + 1) & (c->decls_cap - 1);
	if (!c->decls[j].off)
		c->ndecls++;
	c->decls[j].off = off;
	c->decls[j].prefix = prefix;
}

static const char *decl_get(const struct cu_index *c, Dwarf_Off off)
{
	if (!c->decls_cap || !off)
		return NULL;
	size_t j = u64_mix(off) & (c->decls_cap - 1);
	while (c->decls[j].off && c->decls[j].off != off)
		j = (j + 1) & (c->decls_cap - 1);
	return c->decls[j].prefix;
}

static int add_fn_node(struct symbolizer *s, struct cu_index *c, Dwarf_Die *die, int tag,
		       int parent, Dwarf_Files *files, size_t nfiles)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	size_t first = c->nranges;
	size_t cap = c->nodes_cap;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		struct pc_range *r = grow_array(c->ranges, &c->ranges_cap, c->nranges + 1,
						sizeof(*r), &c->oom);
		if (!r)
			return -1;
		c->ranges = r;
		r[c->nranges++] = (struct pc_range){ lo, hi, c->nnodes };
	}
	if (c->nranges == first)
		return -1;	/* no code: a declaration or an abstract instance */

	struct fn_node *nodes = grow_array(c->nodes, &cap, (size_t)c->nnodes + 1, sizeof(*nodes),
					   &c->oom);
	if (!nodes) {
		c->nranges = first;
		return -1;
	}
	c->nodes = nodes;
	c->nodes_cap = (int)cap;

	struct fn_node *n = &nodes[c->nnodes];
	memset(n, 0, sizeof(*n));
	n->die = *die;
	n->parent = parent;
	n->tag = tag;
	n->range0 = (uint32_t)first;
	n->nranges = (uint32_t)(c->nranges - first);
	if (tag == DW_TAG_inlined_subroutine) {
		Dwarf_Attribute attr;
		Dwarf_Word fidx, line;

		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &fidx) == 0 &&
		    files && fidx < nfiles)
			n->call_file = intern(s, dwarf_filesrc(files, fidx, NULL, NULL));
		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0 &&
		    line <= 0x7fffffff)
			n->call_line = (int)line;
	}
	return c->nnodes++;
}

static void walk_scopes(struct symbolizer *s, struct cu_index *c, Dwarf_Die *scope, int parent,
			const char *prefix, int depth, Dwarf_Files *files, size_t nfiles)
{
	Dwarf_Die child;

	if (depth > WALK_MAX_DEPTH || c->oom || dwarf_child(scope, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		const char *name;

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
			if (prefix && tag == DW_TAG_subprogram)
				decl_put(c, dwarf_dieoffset(&child), prefix);
			/* Only inlined instances are part of their parent's code; an out-of-line
			 * function nested in another one (a lambda's operator() inside its local
			 * closure type) has code of its own, and is looked up on its own. */
			int node = add_fn_node(s, c, &child, tag,
					       tag == DW_TAG_inlined_subroutine ? parent : -1,
					       files, nfiles);
			/* Without code (an abstract instance) it may still hold an out-of-line
			 * lambda's operator(). */
			walk_scopes(s, c, &child, node, prefix, depth + 1, files, nfiles);
			if (node >= 0)
				c->nodes[node].end = c->nnodes;
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			walk_scopes(s, c, &child, parent, prefix, depth + 1, files, nfiles);
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			/* Namespaces hold C++ function definitions; classes only declarations,
			 * which give the qualified names. C has neither. */
			if (!c->cplus)
				break;
			name = dwarf_diename(&child);
			if (!name && tag == DW_TAG_namespace)
				name = "(anonymous namespace)";
			if (name) {
				char buf[1024];

				snprintf(buf, sizeof(buf), "%s%s::", prefix ? prefix : "", name);
				name = intern(s, buf);
			}
			walk_scopes(s, c, &child, parent, name ? name : prefix, depth + 1, files,
				    nfiles);
			break;
		default:
			break;
		}
	} while (!c->oom && dwarf_siblingof(&child, &child) == 0);
}

static int cmp_range(const void *a, const void *b)
{
	const struct pc_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cu_index_free(struct cu_index *c)
{
	if (!c)
		return;
	free(c->nodes);
	free(c->ranges);
	free(c->tops);
	free(c->decls);
	free(c);
}

static struct cu_index *cu_index_build(struct symbolizer *s, struct object *obj, Dwarf_Die *cudie)
{
	struct cu_index *c = calloc(1, sizeof(*c));
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	int lang = dwarf_srclang(cudie);

	if (!c)
		return NULL;
	c->obj = obj;
	c->cu_off = dwarf_dieoffset(cudie);
	c->cplus = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
		   lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	walk_scopes(s, c, cudie, -1, NULL, 0, files, nfiles);
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].parent < 0)
			for (uint32_t k = 0; k < c->nodes[i].nranges; k++)
				c->ntops++;
	if (!c->oom && c->ntops) {
		c->tops = malloc(sizeof(*c->tops) * c->ntops);
		if (c->tops) {
			size_t t = 0;

			for (int i = 0; i < c->nnodes; i++) {
				const struct fn_node *n = &c->nodes[i];

				if (n->parent < 0)
					for (uint32_t k = 0; k < n->nranges; k++)
						c->tops[t++] = c->ranges[n->range0 + k];
			}
			qsort(c->tops, c->ntops, sizeof(*c->tops), cmp_range);
		} else {
			c->oom = true;
		}
	}
	if (c->oom) {
		cu_index_free(c);
		return NULL;
	}
	return c;
}

/* The index of the CU that cudie heads, built on first use. */
static struct cu_index *cu_index_get(struct symbolizer *s, struct object *obj, Dwarf_Die *cudie)
{
	Dwarf_Off off = dwarf_dieoffset(cudie);
	uint64_t h;
	size_t i, mask;

	if ((s->ncus + 1) * 2 > s->cus_cap) {
		size_t cap = s->cus_cap ? s->cus_cap * 2 : 64;
		struct cu_index **tab = calloc(cap, sizeof(*tab));

		if (!tab)
			return NULL;
		for (size_t k = 0; k < s->cus_cap; k++) {
			struct cu_index *c = s->cus[k];

			if (!c)
				continue;
			h = u64_mix((uintptr_t)c->obj ^ u64_mix(c->cu_off));
			for (i = h & (cap - 1); tab[i]; i = (i + 1) & (cap - 1))
				;
			tab[i] = c;
		}
		free(s->cus);
		s->cus = tab;
		s->cus_cap = cap;
	}
	mask = s->cus_cap - 1;
	h = u64_mix((uintptr_t)obj ^ u64_mix(off));
	for (i = h & mask; s->cus[i]; i = (i + 1) & mask)
		if (s->cus[i]->obj == obj && s->cus[i]->cu_off == off)
			return s->cus[i];
	s->cus[i] = cu_index_build(s, obj, cudie);
	if (s->cus[i])
		s->ncus++;
	return s->cus[i];
}

static bool node_has_pc(const struct cu_index *c, const struct fn_node *n, Dwarf_Addr pc)
{
	for (uint32_t k = 0; k < n->nranges; k++) {
		const struct pc_range *r = &c->ranges[n->range0 + k];

		if (pc >= r->lo && pc < r->hi)
			return true;
	}
	return false;
}

/* The innermost function node containing pc, or -1. */
static int cu_index_find(const struct cu_index *c, Dwarf_Addr pc)
{
	size_t lo = 0, hi = c->ntops;
	int cur = -1;

	while (lo < hi) {	/* first top range with lo > pc */
		size_t mid = lo + (hi - lo) / 2;

		if (c->tops[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Top-level ranges should not overlap; look a little further back in case they do. */
	for (size_t k = lo, tries = 0; k > 0 && tries < 16; k--, tries++) {
		if (pc < c->tops[k - 1].hi) {
			cur = c->tops[k - 1].node;
			break;
		}
	}
	if (cur < 0)
		return -1;
	/* Descend: a child containing pc follows its parent in preorder; skip the others'
	 * subtrees whole. */
	for (int i = cur + 1; i < c->nodes[cur].end;) {
		if (c->nodes[i].parent == cur && node_has_pc(c, &c->nodes[i], pc)) {
			cur = i++;
		} else {
			i = c->nodes[i].end > i ? c->nodes[i].end : i + 1;
		}
	}
	return cur;
}

static const char *die_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

/*
 * A frame's function name: DW_AT_linkage_name demangled ("ns::Klass::method(int)"), else
 * DW_AT_name, in C++ qualified with the namespaces and classes of its declaration (found
 * through the abstract origin and specification; only within this CU).
 */
static const char *node_name(struct symbolizer *s, struct cu_index *c, struct fn_node *n)
{
	const char *linkage, *name, *prefix = NULL;
	Dwarf_Die decl = n->die;
	Dwarf_Attribute attr;
	char buf[1024];

	if (n->name_done)
		return n->name;
	n->name_done = true;
	linkage = die_string(&n->die, DW_AT_linkage_name);
	if (!linkage)
		linkage = die_string(&n->die, DW_AT_MIPS_linkage_name);
	if (linkage) {
		char *d = sym_demangle(linkage);

		if (d) {
			n->name = intern(s, d);
			free(d);
			return n->name;
		}
	}
	name = die_string(&n->die, DW_AT_name);
	if (!name || !c->cplus) {
		n->name = intern(s, name);
		return n->name;
	}
	for (int depth = 0; depth < 16 && !prefix; depth++) {
		Dwarf_Die next;

		prefix = decl_get(c, dwarf_dieoffset(&decl));
		if (!(dwarf_attr(&decl, DW_AT_abstract_origin, &attr) ||
		      dwarf_attr(&decl, DW_AT_specification, &attr)) ||
		    !dwarf_formref_die(&attr, &next))
			break;
		decl = next;
	}
	if (!prefix)
		prefix = decl_get(c, dwarf_dieoffset(&decl));
	snprintf(buf, sizeof(buf), "%s%s", prefix ? prefix : "", name);
	n->name = intern(s, buf);
	return n->name;
}

/*
 * Fills frames[] for file address `addr` of obj from DWARF: the innermost function at the
 * line table's location, then for each inlined instance its caller at the call site.
 * Returns the number of frames (0 when no DWARF covers addr).
 */
static int dwarf_frames(struct symbolizer *s, struct object *obj, Dwarf_Addr addr,
			struct sym_frame *frames, int max)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(obj->mod, addr, &bias);
	Dwfl_Line *line;
	const char *file = NULL;
	int lineno = 0, n = 0, cur;
	struct cu_index *c;

	if (!cudie)
		return 0;
	line = dwfl_module_getsrc(obj->mod, addr);
	if (line) {
		file = intern(s, dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL));
		if (lineno < 0)
			lineno = 0;
	}
	c = cu_index_get(s, obj, cudie);
	cur = c ? cu_index_find(c, addr - bias) : -1;
	while (cur >= 0 && n < max) {
		struct fn_node *fn = &c->nodes[cur];

		frames[n].function = node_name(s, c, fn);
		frames[n].file = file;
		frames[n].line = lineno;
		frames[n].inlined = fn->tag == DW_TAG_inlined_subroutine;
		n++;
		if (fn->tag != DW_TAG_inlined_subroutine)
			break;	/* the out-of-line function ends the chain */
		file = fn->call_file;
		lineno = fn->call_line;
		cur = fn->parent;
	}
	if (n > 0)
		frames[n - 1].inlined = 0;	/* the outermost is not inlined into anything */
	if (n == 0 && file) {
		frames[0].file = file;
		frames[0].line = lineno;
		n = 1;
	}
	return n;
}

/* ---- the symbol tables ---- */

/* libdwfl's dwfl_module_addrinfo() walks the whole symbol table for each address, which is
 * minutes for a library of a million symbols (libtorch_cuda.so) and a trace of many thousand
 * addresses; one sorted copy per object makes each lookup a binary search. */

static int elf_sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Where a sizeless symbol of section sh stops naming addresses: the byte just past the
 * section, unless another section starts there (libdwfl's bounds). */
static uint64_t sizeless_end(Elf *elf, const GElf_Shdr *sh)
{
	uint64_t end = sh->sh_addr + sh->sh_size + 1;
	GElf_Shdr mem, *other;

	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));)
		if ((other = gelf_getshdr(scn, &mem)) && (other->sh_flags & SHF_ALLOC) &&
		    other->sh_addr > sh->sh_addr && other->sh_addr < end)
			end = other->sh_addr;
	return end;
}

static void object_syms_build(struct object *o)
{
	int n = dwfl_module_getsymtab(o->mod);

	o->syms_built = true;
	if (n <= 1 || !(o->syms = malloc((size_t)n * sizeof(*o->syms))))
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr bias = 0;
		const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, &shndx, &elf,
							   &bias);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		GElf_Shdr shdr_mem, *shdr = NULL;

		if (!name || !*name || shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		/* as libdwfl: a sizeless symbol (an assembly label) names addresses of its own
		 * section only */
		if (sym.st_size == 0 &&
		    (!elf || !(shdr = gelf_getshdr(elf_getscn(elf, shndx), &shdr_mem))))
			continue;
		/* a sized symbol, then a global one, then a weak one names an address best */
		o->syms[o->nsyms++] = (struct elf_sym){
			.addr = addr, .size = sym.st_size, .name = name,
			.section_end = shdr ? sizeless_end(elf, shdr) + bias : 0,
			.rank = (sym.st_size != 0) * 4 +
				(bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0),
		};
	}
	qsort(o->syms, o->nsyms, sizeof(*o->syms), elf_sym_cmp);
}

/* The symbol holding addr: the nearest at or below it whose size covers it, or that has no
 * size when no sized symbol ends between the two (past a nested symbol to the one around it). */
static const char *object_sym_name(struct object *o, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!o->syms_built)
		object_syms_build(o);
	hi = o->nsyms;
	while (lo < hi) {	/* lo: the first symbol above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool passed_sized = false;
	for (size_t i = lo, looked = 0; i-- > 0 && looked < 64; looked++) {
		const struct elf_sym *e = &o->syms[i];

		if (e->size ? addr - e->addr < e->size : !passed_sized && addr < e->section_end)
			return e->name;
		passed_sized |= e->size != 0;
	}
	return NULL;
}

/* Computes the frames for one address; returns their count (>= 1). */
static int symbolize(struct symbolizer *s, struct module *m, uint64_t address, int is_ret,
		     struct sym_frame *frames)
{
	uint64_t offset = address - m->bias;
	uint64_t addr = offset - (is_ret && offset ? 1 : 0);
	int n = 0;

	memset(frames, 0, sizeof(*frames) * SYM_MAX_FRAMES);
	if (m->state == MOD_UNRESOLVED)
		module_resolve(s, m);
	if (m->state == MOD_OK) {
		n = dwarf_frames(s, m->obj, addr, frames, SYM_MAX_FRAMES);
		/* No DWARF function (stripped, assembly): the symbol table names the outermost. */
		if (n == 0 || !frames[n - 1].function) {
			const char *name = object_sym_name(m->obj, addr);

			if (name)
				frames[n ? n - 1 : 0].function = intern_demangled(s, name);
			if (n == 0)
				n = 1;
		}
	}
	if (n == 0)
		n = 1;
	for (int i = 0; i < n; i++) {
		frames[i].module = m->path[0] ? m->path : "?";
		frames[i].address = address;
		frames[i].offset = offset;
	}
	return n;
}

void sym_preload(struct symbolizer *s, uint32_t module_id)
{
	struct module *m = module_find(s, module_id);
	if (!m)
		return;
	if (m->state == MOD_UNRESOLVED)
		module_resolve(s, m);
	if (m->state != MOD_OK)
		return;
	/* Opening the DWARF inflates compressed debug sections: the slow part of a first lookup. */
	Dwarf_Addr bias;
	dwfl_module_getdwarf(m->obj->mod, &bias);
	dwfl_module_getsymtab(m->obj->mod);
}

/* ---- the cache ---- */

static uint64_t cache_hash(uint32_t id, uint64_t address, int is_ret)
{
	return u64_mix(address ^ ((uint64_t)id << 1 | (is_ret != 0)) * 0x9e3779b97f4a7c15ull);
}

static struct cache_entry *cache_slot(struct symbolizer *s, uint32_t id, uint64_t address,
				      int is_ret)
{
	size_t mask = s->cache_cap - 1;
	size_t i = cache_hash(id, address, is_ret) & mask;

	for (;; i = (i + 1) & mask) {
		struct cache_entry *e = &s->cache[i];

		if (!e->module || (e->module_id == id && e->address == address &&
				   e->is_ret == is_ret))
			return e;
	}
}

static int cache_grow(struct symbolizer *s)
{
	struct cache_entry *old = s->cache;
	size_t old_cap = s->cache_cap;
	size_t cap = old_cap ? old_cap * 2 : 4096;

	s->cache = calloc(cap, sizeof(*s->cache));
	if (!s->cache) {
		s->cache = old;
		return -1;
	}
	s->cache_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].module)
			*cache_slot(s, old[i].module_id, old[i].address, old[i].is_ret) = old[i];
	free(old);
	return 0;
}

static int copy_out(const struct sym_frame *frames, int n, struct sym_frame *out, int max)
{
	if (n > max)
		n = max;
	memcpy(out, frames, sizeof(*out) * n);
	return n;
}

int sym_lookup(struct symbolizer *s, uint32_t module_id, uint64_t address,
	       int is_return_address, struct sym_frame *out, int max)
{
	struct sym_frame frames[SYM_MAX_FRAMES];
	struct module *m = module_find(s, module_id);
	struct cache_entry *e = NULL;
	int is_ret = is_return_address != 0;
	int n;

	if (max <= 0 || !out)
		return 0;
	if (!m) {
		/* Not cached: the module may still be declared later. */
		memset(out, 0, sizeof(*out));
		out->module = "?";
		out->address = address;
		out->offset = address;
		return 1;
	}
	/* When the table cannot grow, lookups still work, uncached. */
	if ((s->ncache + 1) * 4 > s->cache_cap * 3 && cache_grow(s))
		goto uncached;
	e = cache_slot(s, module_id, address, is_ret);
	if (e->module == m)
		return copy_out(e->frames, e->nframes, out, max);

	n = symbolize(s, m, address, is_ret, frames);
	struct sym_frame *kept = arena_alloc(s, sizeof(*kept) * n);
	if (!kept)
		return copy_out(frames, n, out, max);
	memcpy(kept, frames, sizeof(*kept) * n);
	if (!e->module)
		s->ncache++;
	e->module = m;
	e->module_id = module_id;
	e->address = address;
	e->is_ret = is_ret;
	e->nframes = n;
	e->frames = kept;
	return copy_out(kept, n, out, max);

uncached:
	n = symbolize(s, m, address, is_ret, frames);
	return copy_out(frames, n, out, max);
}
