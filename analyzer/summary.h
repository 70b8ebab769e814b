/* Summaries (`prof summarize`): a process reduced to what the reports read, its family states
 * after finish(), its stacks and the symbols of their frames, in a compact file that every
 * command taking traces also reads. The same bytes, kept in memory, are how a run of many
 * traces is loaded in bounded memory (process.c: trace -> summary -> process).
 *
 * File: an 8-byte magic "PROFSUM\n", u32 version, u32 byte-order mark, then sections
 * {u32 tag, u32 version, u64 length, payload}; a reader skips tags it does not know, and
 * refuses a section of a known tag at a version it does not read. Numbers are stored in the
 * writer's byte order (the mark tells; another one is refused). A family's section holds what
 * its sum_write() wrote (family.h), named by the family, at its sum_version. */
#ifndef PROF_SUMMARY_H
#define PROF_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"
#include "u64map.h"

struct process;

#define SUMMARY_MAGIC "PROFSUM\n"
#define SUMMARY_VERSION 1

/* The writer: a growing buffer; a failed allocation is remembered (oom) and later puts do
 * nothing, so callers check once at the end. */
struct sum_out {
	unsigned char *buf;
	size_t len, cap;
	int oom;
	struct u64map *want;  /* code addresses a family's renderers symbolize on their own */
};
void sum_put_bytes(struct sum_out *w, const void *p, size_t n);
void sum_put_u64(struct sum_out *w, uint64_t v);
void sum_put_u32(struct sum_out *w, uint32_t v);
/* A string, NULL kept as NULL. */
void sum_put_str(struct sum_out *w, const char *s);
/* Every key of m and its value's bytes (values are plain data: no pointers). */
void sum_put_map(struct sum_out *w, const struct u64map *m);
/* Plain data of a fixed size (a struct without pointers, an array): its size, then its
 * bytes; sum_get_fixed() refuses another size (a summary of another build: bad). */
void sum_put_fixed(struct sum_out *w, const void *p, size_t n);
/* A code address the family looks up with addr_symbolize() (not a return address): its
 * symbols go into the summary too. */
void sum_want_addr(struct sum_out *w, uint64_t addr);

/* The reader: a cursor over one section; any read past its end, or a value out of range,
 * sets bad, and every later read gives zeros. */
struct sum_in {
	const unsigned char *p, *end;
	int bad;
};
void sum_get_bytes(struct sum_in *r, void *dst, size_t n);
uint64_t sum_get_u64(struct sum_in *r);
uint32_t sum_get_u32(struct sum_in *r);
/* A malloc'd string, or NULL (NULL written, bad input, or out of memory: *oom set). */
char *sum_get_str(struct sum_in *r, int *oom);
void sum_get_fixed(struct sum_in *r, void *dst, size_t n);
/* A count of items of at least min_bytes each: bad when more than what is left could hold. */
size_t sum_get_count(struct sum_in *r, size_t min_bytes);
/* Fills m (initialised, empty, with the value size written): 0, or -1 when out of memory;
 * another value size sets bad. */
int sum_get_map(struct sum_in *r, struct u64map *m);

/* The symbols of a summary's process: what sym_lookup() gave for each (module, address,
 * return-address) asked when it was written. stackfmt.c asks it instead of a symbolizer. */
struct sum_symbols;
int sum_symbols_lookup(const struct sum_symbols *t, uint32_t module, uint64_t address,
		       int is_return_address, struct sym_frame *out, int max);
void sum_symbols_free(struct sum_symbols *t);

/* Appends the summary of process p (loaded from a trace, symbols at hand) to w. -1: out of
 * memory, or a family with data that has no sum_write (err says which). */
int summary_write_process(struct sum_out *w, struct process *p, char *err, size_t errlen);
void summary_put_header(struct sum_out *w);
/* Whether the file at path starts with the summary magic. */
int summary_is(const char *path);
/* The processes of one piece of a summary file, bytes [from, to) (its header read too; 0 and
 * UINT64_MAX: all of it), appended to *ps, *n, *cap; -1 with a one-line message naming the
 * file and the offset in err. */
int summary_load_piece(const char *path, uint64_t from, uint64_t to, struct process **ps,
		       size_t *n, size_t *cap, char *err, size_t errlen);
/* A summary file cut in pieces of one process each, for them to be read one at a time (by
 * summary_load_piece()): where each piece starts (*n of them, the first at 0, the last up to
 * the end of the file). What is wrong with the file is for its pieces to say: a file without
 * processes is one piece. -1 (err) when it cannot be opened, or out of memory. */
int summary_pieces(const char *path, uint64_t **starts, size_t *n, char *err, size_t errlen);
/* The same from a buffer (name: for messages). */
int summary_parse(const unsigned char *buf, size_t len, const char *name, struct process **ps,
		  size_t *n, size_t *cap, char *err, size_t errlen);
/* Replaces *p, loaded from a trace, by its summary's process: the events' working state (live
 * blocks, pending calls) and the symbolizer freed, the aggregates kept. 0; 1 when p cannot be
 * summarized (a family with data and no sum_write: p stays as it is); -1 out of memory. */
int summary_reduce(struct process *p, char *err, size_t errlen);

/* prof summarize TRACE... -o FILE */
int cmd_summarize(int argc, char **argv);

#endif
