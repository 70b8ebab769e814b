/* The processes of a run as a tree (tree.c): each process under the one that started it, the
 * images of an exec chain as one node. */
#ifndef PROF_TREE_H
#define PROF_TREE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "process.h"

/* What the run's tree and ranks read of a process, taken from it (run_proc_of()) while it is
 * loaded, so that the process itself can go before the run is reported: its identity, CPU
 * time and families' figures. */
#define FIGURES_MAX 16
struct run_proc {
	uint32_t pid, ppid;
	int32_t rank;
	char *host, *exe, *path, *exec_path;
	char **argv;
	uint32_t argc;
	uint64_t start_realtime_ns, end_ns, cpu_ns;
	enum exit_kind exit_kind;
	int exit_value;
	struct reaped *reaped;      /* the children's ends its wait calls returned */
	size_t nreaped;
	uint64_t fig[FIGURES_MAX];  /* every family's figures, in families[] order; 0 without data */
};
/* 0, or -1 when out of memory (r freed). */
int run_proc_of(struct run_proc *r, const struct process *p);
void run_proc_free(struct run_proc *r);
/* The families' figures in order: fn(ctx, family, figure, index in run_proc.fig); how many. */
size_t figures_each(void (*fn)(void *, const struct family *, const struct family_figure *,
			       size_t), void *ctx);

struct tree_node {
	const struct run_proc **images;  /* one pid's traces in start order, each but the last exec'd */
	size_t nimages;
	long parent;              /* index in proc_tree.nodes; -1: a root */
	/* Its end: its last image's, or where that wrote none (killed by a signal) as its
	 * parent's wait call returned it (seen_by_parent); EXIT_UNKNOWN if neither saw it. */
	enum exit_kind exit_kind;
	int exit_value;
	int seen_by_parent;
};

struct proc_tree {
	struct tree_node *nodes;
	size_t n;
	const struct run_proc **order;  /* what images point into */
};

/* The tree of ps[0..n) (which must outlive it); 0, or -1 when out of memory. */
int proc_tree_build(const struct run_proc *ps, size_t n, struct proc_tree *tr);
void proc_tree_free(struct proc_tree *tr);

/* A figure's value in its unit, as its key names it ("_ns", "bytes"). */
const char *figure_fmt(const char *key, uint64_t v, char *buf, size_t len);

void proc_tree_print(FILE *out, const struct proc_tree *tr);
/* The roots, each {"pid", "ppid", ..., "images": [...], "children": [...]} (docs/JSON.md). */
json_t *proc_tree_json(const struct proc_tree *tr);

/* MPI and batch jobs (ranks.c): one row per rank (header's rank; processes of one rank added
 * up, from any host), the families' figures, and the imbalance of work (wall time less MPI
 * wait) between the slowest and the mean rank. Nothing when no process has a rank. */
void ranks_print(FILE *out, const struct run_proc *ps, size_t n);
json_t *ranks_json(const struct run_proc *ps, size_t n);  /* null when no process has a rank */

#endif
