/* The processes of a run as a tree (tree.c): each process under the one that started it, the
 * images of an exec chain as one node. */
#ifndef PROF_TREE_H
#define PROF_TREE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "process.h"

struct tree_node {
	struct process **images;  /* one pid's traces in start order, each but the last exec'd */
	size_t nimages;
	long parent;              /* index in proc_tree.nodes; -1: a root */
};

struct proc_tree {
	struct tree_node *nodes;
	size_t n;
	struct process **order;   /* what images point into */
};

/* The tree of ps[0..n) (which must outlive it); 0, or -1 when out of memory. */
int proc_tree_build(struct process *ps, size_t n, struct proc_tree *tr);
void proc_tree_free(struct proc_tree *tr);

/* A process's CPU time: its threads' that ended (tree.c). */
uint64_t process_cpu_ns(const struct process *p);
/* A node's CPU time (all its threads, all its images) and one family figure (family.h). */
uint64_t tree_node_cpu_ns(const struct tree_node *t);
uint64_t tree_node_figure(const struct tree_node *t, const struct family *f,
			  const struct family_figure *g);
/* A figure's value in its unit, as its key names it ("_ns", "bytes"). */
const char *figure_fmt(const char *key, uint64_t v, char *buf, size_t len);

void proc_tree_print(FILE *out, const struct proc_tree *tr);
/* The roots, each {"pid", "ppid", ..., "images": [...], "children": [...]} (docs/JSON.md). */
json_t *proc_tree_json(const struct proc_tree *tr);

/* MPI and batch jobs (ranks.c): one row per rank (header's rank; processes of one rank added
 * up, from any host), the families' figures, and the imbalance of work (wall time less MPI
 * wait) between the slowest and the mean rank. Nothing when no process has a rank. */
void ranks_print(FILE *out, struct process *ps, size_t n);
json_t *ranks_json(struct process *ps, size_t n);  /* null when no process has a rank */

#endif
