/* Stacks and code addresses as people and JSON see them, shared by every command and family:
 * symbolized frames (inlined calls expanded, innermost first), their text form, and the
 * SPEC's JSON frames. */
#ifndef PROF_STACKFMT_H
#define PROF_STACKFMT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolize.h"

struct process;

/* p's symbolizer, made on first use, every module of p declared to it; NULL when out of
 * memory. */
struct symbolizer *process_symbolizer(struct process *p);
/* The source frames of one stack entry (a return address when is_ret, its inlined calls
 * expanded): a Python frame named by its code, a native one by the symbolizer, either from a
 * summary's symbols where p was read from one. */
int stack_frame_lookup(struct process *p, uint32_t module, uint64_t address, int is_ret,
		       struct sym_frame *out, int max);
/* Every frame of a stack, inlined calls expanded, libprof's own frames left out. */
int stack_symbolize(struct process *p, uint32_t stack_id, struct sym_frame *out, int max);
/* The frames shown in text and flame graphs: the innermost ones that --fold names (library
 * internals: "std::" the C++ library, "libc" the C library and loader, "alloc" known
 * allocator wrappers, or any function or module name prefix) are left out, so the first
 * frame is the program's own (all of them stay when none is). *folded: how many were;
 * *truncated: the stack reached PROF_STACK_DEPTH, so its outer frames are missing. */
int stack_shown(struct process *p, uint32_t stack_id, struct sym_frame *out, int max,
		int *folded, int *truncated);
/* --fold LIST: comma list of the items above, or "none"; default "std::,libc,alloc".
 * Returns -1 for a list too long. */
int stack_fold_set(const char *list);
/* name with C++ template arguments shown as "<...>" (in buf when it had any). */
const char *shorten_templates(const char *name, char *buf, size_t len);
/* One code address that is not a return address (a thread's start routine): its innermost
 * source frame. Returns 1, or 0 when nothing is known of it. */
int addr_symbolize(struct process *p, uint64_t addr, struct sym_frame *out);
/* The function at code address addr ("worker", or "module+0x..." or "0x..."), in buf; NULL
 * when addr is 0. */
const char *addr_label(struct process *p, uint64_t addr, char *buf, size_t len);
void stack_print(FILE *out, struct process *p, uint32_t stack_id, int max_frames,
		 const char *indent);
/* "function" or "module+0xoffset": the label of a frame in flame graphs and summaries. */
const char *frame_label(const struct sym_frame *f, char *buf, size_t len);

/* A JSON string that is always valid: bytes that are not UTF-8 become '?'. */
json_t *jstr(const char *s);
/* A symbolized stack as SPEC.md's list of frames, innermost first. */
json_t *stack_json(struct process *p, uint32_t stack_id);
/* Caps the frames of the stacks stack_json() makes on this thread (0: no cap), for JSON that
 * only a few frames of each stack are read from, and by function and module only (the run's
 * totals, whose rows diff.c keys by them): a frame has no other member then. */
void stack_json_limit(int frames);

#endif
