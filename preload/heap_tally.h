/* heap_tally.c: the sampled heap mode's set of blocks with records and per-thread tallies. */
#ifndef PROF_PRELOAD_HEAP_TALLY_H
#define PROF_PRELOAD_HEAP_TALLY_H

#include <stddef.h>

struct prof_thread;

/* usable: the real allocator's malloc_usable_size, NULL if it has none; alloc and release,
 * its malloc and free. */
void heap_tally_init(size_t (*usable)(void *), void *(*alloc)(size_t), void (*release)(void *));

/* Blocks with ALLOC records: add one (-1: no room, it is then tallied instead), and take
 * one out if it is there (1: it was, its free is a FREE record). */
int heap_rec_add(const void *ptr);
int heap_rec_take(const void *ptr);

/* Before the real free of ptr: 1 if its block has a record (heap_rec_take()), else 0 and its
 * usable size in *usable, for heap_tally_free() after the real free. */
int heap_tally_before_free(void *ptr, size_t *usable);

/* An allocation without a record, and a free of such a block, given its usable size. Neither
 * changes errno. */
void heap_tally_alloc(struct prof_thread *th, void *ptr, size_t size);
void heap_tally_free(struct prof_thread *th, size_t usable);

/* A recorded block's ALLOC or FREE is next: the thread's tally first, if its counts moved
 * since the last, so that the analyzer sees the two in the order they happened (a peak
 * that held a large block, then small ones, must see both). */
void heap_tally_sync(struct prof_thread *th);

/* The thread ends: its last tally, and its slot back. At exit, every thread's last tally
 * (written by the calling thread). */
void heap_tally_thread_done(struct prof_thread *th);
void heap_tally_flush_all(struct prof_thread *th);
void heap_tally_fork_child(void);

#endif
