/* Spill files: where the commands that handle a run one process at a time (processes_each())
 * put each process's output as soon as it is made, to copy the parts out in their order at
 * the end (prof report's sections, prof summarize's summaries). Memory then holds what is
 * being made on each worker, not the run's output. A worker writes into a spill file that no
 * other one is writing to (a new one made when all are taken): no lock held while it writes. */
#ifndef PROF_SPILL_H
#define PROF_SPILL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define SPILLS_MAX 256  /* process_parallel()'s most workers */

struct spills {
	FILE *files[SPILLS_MAX];  /* [0, n) made, those busy taken by a worker */
	int busy[SPILLS_MAX];
	size_t n;
	pthread_mutex_t lock;
};

/* What was written in one go: len bytes at off in spill file file; lost when they could not
 * be written (no spill file, or a write error). */
struct spilled {
	size_t file;
	off_t off;
	size_t len;
	int lost;
};

/* Makes the first spill file (one at least is needed), in $TMPDIR, else /tmp, gone once
 * closed: 0, or -1 with errno set. */
int spills_init(struct spills *s);
void spills_close(struct spills *s);
/* A spill file no other worker writes to, taken, where w's bytes start; NULL (w->lost set)
 * when there is none. spill_end() records where they end and gives the file back. */
FILE *spill_begin(struct spills *s, struct spilled *w);
void spill_end(struct spills *s, struct spilled *w);
/* w's bytes copied to out: 0, or -1 when they are lost (the caller says so). */
int spill_copy(FILE *out, const struct spills *s, const struct spilled *w);

/* v as json_dumpf(JSON_INDENT(1) | JSON_PRESERVE_ORDER) writes it when it is nested depth
 * levels deep in a document: a document written in pieces is then the one dumped at once. */
void spill_json(FILE *out, json_t *v, int depth);

#endif
