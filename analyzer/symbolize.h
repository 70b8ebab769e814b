/* Symbolization of code addresses: function (demangled), source file and line, through
 * elfutils' libdw; falls back to the ELF symbol table, then to module+0xoffset. */
#ifndef PROF_SYMBOLIZE_H
#define PROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

/* One source-level frame. Strings are owned by the symbolizer and live until sym_free(). */
struct sym_frame {
	const char *function;  /* demangled; NULL if unknown */
	const char *file;      /* source path; NULL if unknown */
	int line;              /* 0 if unknown */
	const char *module;    /* path of the ELF object, never NULL ("?" if unknown) */
	uint64_t address;      /* the address asked for */
	uint64_t offset;       /* address relative to the module (file address), for module+0x.. */
	int inlined;           /* 1 if this frame was inlined into the next one */
	int python;            /* 1 for an interpreted Python frame (analyzer/python.c) */
};

struct symbolizer *sym_new(void);
void sym_free(struct symbolizer *s);

/* Declares module `id` (process-unique) mapped at [start, end) with load bias `bias` (address
 * minus bias = address in the ELF file). Returns 0, or -1 if out of memory. The file is opened
 * lazily on first lookup; a missing or unreadable file is not an error (lookups then give
 * module+offset). build_id helps to find separate debug info. */
int sym_add_module(struct symbolizer *s, uint32_t id, const char *path, uint64_t start,
		   uint64_t end, uint64_t bias, const uint8_t *build_id, size_t build_id_len);

/* Symbolizes `address` in module `id`. When is_return_address is set the address is looked up
 * as address-1 (the call instruction), since stack frames hold return addresses. Fills up to
 * max frames, innermost (most inlined) first, and returns how many (>= 1 when max >= 1; an
 * unknown module still gives one frame with module "?"). Results are cached per address. */
int sym_lookup(struct symbolizer *s, uint32_t module_id, uint64_t address,
	       int is_return_address, struct sym_frame *out, int max);

/* Does now the slow part of a first lookup in module_id (finding and opening its files and
 * debug information), so that it can run on another thread while the caller does other work:
 * one symbolizer must not be used by two threads at once. */
void sym_preload(struct symbolizer *s, uint32_t module_id);

/* What s holds: strings, frames and tables, in bytes, and (*objects) the files it opened, each
 * with its parsed debug information (not counted in the bytes). */
size_t sym_held_bytes(const struct symbolizer *s, size_t *objects);

/* Demangles a C++ (or Rust legacy) symbol; returns a malloc'd string or NULL if not mangled. */
char *sym_demangle(const char *name);

#endif
