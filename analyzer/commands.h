/* The analyzer's subcommands: one file each, `int cmd_NAME(int argc, char **argv)` with
 * argv[0] the command name; they return the process exit status. */
#ifndef PROF_COMMANDS_H
#define PROF_COMMANDS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct process;

int cmd_report(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_mark_exit(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* prof report's totals over a run (diff.c, whose tables they are), made a process at a time:
 * family f's integers added up, and the rows of each list it compares (family_diff) merged by
 * key; shown (once: json and print consume them) the largest first, at most top of them.
 * family_totals_add() may run on several threads at once. new: NULL when out of memory. */
struct family;
struct family_totals;
struct family_totals *family_totals_new(const struct family *f);
void family_totals_add(struct family_totals *t, struct process *p);
json_t *family_totals_json(struct family_totals *t, size_t top);
void family_totals_print(FILE *out, struct family_totals *t, size_t top);
void family_totals_free(struct family_totals *t);

/* Expands TRACE arguments: a file stays as it is, a directory gives the *.trace files in it
 * (sorted), or its *.sum files when it has no trace. Returns 0 and a NULL-terminated malloc'd array in *out, or prints a one-line error
 * and returns -1 (nothing given, nothing found, unreadable). Free with inputs_free(). */
int inputs_expand(char *const *args, int nargs, char ***out, size_t *count);
void inputs_free(char **paths);

/* Options, parsed the same way for every command. Each command names the ones it takes;
 * all take -h/--help. Numbers are checked: a bad one is a usage error. */
enum {
	CMD_OUTPUT = 1 << 0,  /* -o FILE */
	CMD_JSON = 1 << 1,    /* --json */
	CMD_CSV = 1 << 2,     /* --csv */
	CMD_BRIEF = 1 << 3,   /* --brief */
	CMD_TOP = 1 << 4,     /* --top N */
	CMD_FRAMES = 1 << 5,  /* --frames N */
	CMD_FLAME = 1 << 6,   /* --kind K (-k), --by W, --folded, --title T */
	CMD_EXPORT = 1 << 7,  /* --format F (-f), --min-ns N */
	CMD_LEAKS = 1 << 8,   /* --show KINDS, --suppressions FILE */
	CMD_FINDINGS = 1 << 9, /* --findings */
	CMD_SIGNAL = 1 << 10, /* --signal N */
	CMD_WINDOW = 1 << 11, /* --from T, --to T: one time window of each run */
};
/* Every command also takes --pid PID and --exe NAME: only the processes that match. */
struct cmd_spec {
	const char *name;   /* "report": for messages */
	unsigned options;   /* CMD_* */
	int frames;         /* --frames default */
	const char *usage;  /* the --help text */
};
struct cmd_opts {
	int json, csv, brief, folded, findings, diff;
	int top_given;
	size_t top;         /* SIZE_MAX unless --top was given */
	int frames;
	const char *outfile, *kind, *by, *title, *format;
	uint64_t min_ns;
	uint64_t from_ns, to_ns;  /* --from, --to: since the process start; to UINT64_MAX */
	const char *color;  /* --color=auto|always|never (NULL: auto) */
	uint32_t pid;       /* --pid, 0 for any */
	int signal;         /* --signal */
	const char *exe;    /* --exe, NULL for any */
	unsigned show;      /* --show: 1u << PROF_LEAK_* (default definitely and indirectly lost) */
	const char *supp[16];  /* --suppressions, in order */
	int nsupp;
	char **traces;      /* the arguments left: TRACE... */
	int ntraces;
};
/* Returns -1 when the command should go on, or the exit status to return at once: 0 after
 * --help, 2 after a usage error (said on stderr with the usage). */
int cmd_parse(const struct cmd_spec *spec, int argc, char **argv, struct cmd_opts *o);

/* A command's inputs and output. cmd_open() loads the processes of the TRACE arguments and
 * opens outfile (stdout if NULL), or says why not and returns -1. cmd_write_json() writes
 * {"version": 1, "processes": processes} (taking the reference). cmd_close() reports a write
 * error (then returns 1, else rc), closes and frees. */
struct cmd_io {
	struct process *ps;
	size_t n;
	FILE *out;
	const char *outfile;
};
int cmd_open(struct cmd_io *io, const struct cmd_opts *o);
/* The trace files of the TRACE arguments that --pid and --exe select, as inputs_expand()
 * gives them; -1 after a message (nothing given, nothing found, nothing selected). */
int cmd_inputs(const struct cmd_opts *o, char ***paths, size_t *n);
void cmd_write_json(struct cmd_io *io, json_t *processes);
/* The processes of one TRACE argument as cmd_open() loads them (--pid, --exe, --from, --to);
 * "RUN@T" is RUN as it stood at time T (everything up to T since each process started).
 * 0, or -1 after a message. */
int cmd_load_arg(const struct cmd_opts *o, const char *arg, struct process **ps, size_t *n);
/* The processes cmd_open() would load, handed to fn one at a time as processes_each() does
 * (fn takes each; none is kept here; *count: how many there may be, before --pid and --exe
 * select among a summary's): memory bounded by one process per worker, and what fn keeps.
 * 0, or -1 after a message. */
int cmd_each(const struct cmd_opts *o, size_t *count,
	     void (*fn)(void *ctx, struct process *p, size_t at), void *ctx);
/* Whether p is a process that --pid and --exe select; the message when none is. */
int cmd_selects(const struct cmd_opts *o, const struct process *p);
void cmd_no_match(void);
/* A duration: "10s", "2.5s", "250ms", "40us", "100ns", "2m", "1h"; a bare number is
 * seconds. Returns -1 when it is none. */
int cmd_parse_time(const char *s, uint64_t *ns);
/* outfile opened for writing, or stdout when NULL; NULL after a message. */
FILE *cmd_output(const char *outfile);
/* The same with "findings" (taken) before "processes", as prof report writes it. */
void cmd_write_json_findings(struct cmd_io *io, json_t *findings, json_t *processes);
int cmd_close(struct cmd_io *io, int rc);
/* The output part of cmd_close(), for commands that stream instead of loading (export). */
int cmd_finish_output(FILE *out, const char *outfile, int rc);

/* "prof: " + message, on stderr. */
void prof_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
