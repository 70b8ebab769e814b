/* prof diff BASE NEW: what changed between two runs, or two moments of one run (RUN@T: the
 * run as it stood at T). Each family says which lists of its JSON compare and by what
 * (family.h: struct family_diff); rows are matched by names (functions of a stack, paths),
 * never addresses, so two builds or two address-space layouts compare. The families' totals
 * (the integers at the top of their JSON) compare too. Processes of a run are added up. */
#include "commands.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define STACK_KEY_FRAMES 16

struct row {
	char *key;
	int64_t v[2];  /* base, new */
};

struct table {
	struct row *rows;
	size_t n, cap;
};

/* A stack by its function names, innermost first ("f <- g <- main"); a frame without one by
 * its module's file name. */
static void stack_key(json_t *stack, char *buf, size_t len)
{
	size_t i, o = 0;
	json_t *f;
	buf[0] = '\0';
	json_array_foreach(stack, i, f) {
		if (i == STACK_KEY_FRAMES || o + 1 >= len)
			break;
		const char *fn = json_string_value(json_object_get(f, "function"));
		const char *mod = json_string_value(json_object_get(f, "module"));
		if (!fn && mod)
			fn = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " <- " : "", fn ? fn : "?");
	}
}

/* The identity of a row: its key fields' values joined by ", ". */
static char *row_key(json_t *row, const char *fields)
{
	char buf[2048] = "", part[1024];
	size_t o = 0;
	for (const char *f = fields; *f && o + 1 < sizeof(buf);) {
		size_t n = strcspn(f, ",");
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)n, f);
		json_t *v = json_object_get(row, name);
		if (json_is_array(v))
			stack_key(v, part, sizeof(part));
		else if (json_is_string(v))
			snprintf(part, sizeof(part), "%s", json_string_value(v));
		else if (json_is_integer(v))
			snprintf(part, sizeof(part), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else
			snprintf(part, sizeof(part), "?");
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", o ? ", " : "", part);
		f += n + (f[n] == ',');
	}
	return strdup(buf);
}

static int add(struct table *t, char *key, int side, int64_t v)
{
	if (!key)
		return -1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct row *r = realloc(t->rows, cap * sizeof(*r));
		if (!r) {
			free(key);
			return -1;
		}
		t->rows = r;
		t->cap = cap;
	}
	t->rows[t->n++] = (struct row){ key, { side ? 0 : v, side ? v : 0 } };
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

static int64_t change(const struct row *r)
{
	return r->v[1] - r->v[0];
}

static int by_change(const void *a, const void *b)
{
	int64_t x = change(a), y = change(b);
	uint64_t ax = x < 0 ? (uint64_t)-x : (uint64_t)x, ay = y < 0 ? (uint64_t)-y : (uint64_t)y;
	if (ax != ay)
		return ax < ay ? 1 : -1;
	return by_key(a, b);
}

/* Rows of equal keys added up; unchanged rows dropped; the biggest change first. */
static void settle(struct table *t)
{
	if (!t->n)
		return;
	qsort(t->rows, t->n, sizeof(*t->rows), by_key);
	size_t o = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (o && !strcmp(t->rows[o - 1].key, t->rows[i].key)) {
			t->rows[o - 1].v[0] += t->rows[i].v[0];
			t->rows[o - 1].v[1] += t->rows[i].v[1];
			free(t->rows[i].key);
		} else {
			t->rows[o++] = t->rows[i];
		}
	}
	t->n = o;
	o = 0;
	for (size_t i = 0; i < t->n; i++)
		if (change(&t->rows[i]))
			t->rows[o++] = t->rows[i];
		else
			free(t->rows[i].key);
	t->n = o;
	qsort(t->rows, t->n, sizeof(*t->rows), by_change);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].key);
	free(t->rows);
}

/* The rows of one process's JSON j (of family f) on one side: its totals (d NULL: the
 * integers at the top) or list d. */
static int fill_json(struct table *t, json_t *j, int side, const struct family_diff *d)
{
	json_t *list = d && d->list ? json_object_get(j, d->list) : j, *row, *v;
	size_t k;
	const char *name;
	int rc = 0;
	if (!d) {
		json_object_foreach(j, name, v)
			if (json_is_integer(v) && rc == 0)
				rc = add(t, strdup(name), side, json_integer_value(v));
	} else {
		json_array_foreach(list, k, row)
			if (rc == 0)
				rc = add(t, row_key(row, d->key), side,
					 json_integer_value(json_object_get(row, d->metric)));
	}
	return rc;
}

/* One compared list (or, with d NULL, a family's totals) over both sides' processes. */
static int fill(struct table *t, struct process *const ps[2], const size_t n[2],
		const struct family *f, const struct family_diff *d)
{
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; i < n[side]; i++) {
			struct process *p = &ps[side][i];
			if (!f->has_data(p))
				continue;
			json_t *j = f->json(p, SIZE_MAX);
			int rc = fill_json(t, j, side, d);
			json_decref(j);
			if (rc < 0)
				return -1;
		}
	settle(t);
	return 0;
}

static const char *fmt_value(const char *metric, int64_t v, int sign, char *buf, size_t len)
{
	char num[40];
	uint64_t a = v < 0 ? (uint64_t)-v : (uint64_t)v;
	if (strstr(metric, "_ns"))
		fmt_ns(a, num, sizeof(num));
	else if (strstr(metric, "bytes"))
		fmt_bytes(a, num, sizeof(num));
	else
		fmt_count(a, num, sizeof(num));
	snprintf(buf, len, "%s%s", v < 0 ? "-" : sign && v > 0 ? "+" : "", num);
	return buf;
}

static void print_table(FILE *out, const char *title, const char *metric, const struct table *t,
			size_t top)
{
	char a[48], b[48], c[48], rel[32];
	fprintf(out, "\n%s-- %s%s%s: %zu changed%s\n", fmt_sgr(SGR_BOLD), title, metric ? ", by " : "",
		metric ? metric : "", t->n, fmt_sgr(NULL));
	for (size_t i = 0; i < t->n && i < top; i++) {
		const struct row *r = &t->rows[i];
		const char *m = metric ? metric : r->key;
		if (r->v[0])
			snprintf(rel, sizeof(rel), "%+.1f%%", (double)change(r) / (double)r->v[0] * 100);
		else
			snprintf(rel, sizeof(rel), "new");
		fprintf(out, "   %s%12s%s %8s  %12s -> %-12s ", fmt_sgr(change(r) > 0 ? SGR_RED : SGR_GREEN),
			fmt_value(m, change(r), 1, a, sizeof(a)), fmt_sgr(NULL), rel,
			fmt_value(m, r->v[0], 0, b, sizeof(b)), fmt_value(m, r->v[1], 0, c, sizeof(c)));
		char arg[1024];
		fprintf(out, "%s\n", fmt_arg(r->key, arg, sizeof(arg)));
	}
	if (t->n > top)
		fprintf(out, "   ... %zu more (--top N)\n", t->n - top);
}

static json_t *table_json(const char *family, const char *title, const char *metric,
			  const struct table *t, size_t top)
{
	json_t *rows = json_array();
	for (size_t i = 0; i < t->n && i < top; i++) {
		const struct row *r = &t->rows[i];
		json_array_append_new(rows, json_pack("{s:o,s:I,s:I,s:I,s:o}", "key", jstr(r->key),
			"base", (json_int_t)r->v[0], "new", (json_int_t)r->v[1],
			"change", (json_int_t)change(r), "relative", r->v[0] ?
			json_real((double)change(r) / (double)r->v[0]) : json_null()));
	}
	json_t *o = json_pack("{s:s,s:s}", "family", family, "title", title);
	json_object_set_new(o, "metric", metric ? json_string(metric) : json_null());
	json_object_set_new(o, "changed", json_integer((json_int_t)t->n));
	json_object_set_new(o, "rows", rows);
	return o;
}

/* ---- totals over one run (prof report) ------------------------------------------------------ */

/* The rows of a family's totals and of each of its lists, added a process at a time (by the
 * worker that loaded it, so the costly part, every site with its stack symbolized, runs in
 * parallel): each process's rows go into the run's tables (rows of one key merged now and
 * then) as soon as they are out of its JSON, which is freed at once: memory follows the run's
 * distinct rows, not the sum of every process's. tabs[k]: the totals (k = 0) or list k - 1. */
struct family_totals {
	const struct family *f;
	struct table *tabs;
	size_t *settled;  /* rows of tabs[k] when it was last settled */
	pthread_mutex_t lock;
};

struct family_totals *family_totals_new(const struct family *f)
{
	struct family_totals *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	*c = (struct family_totals){ f, calloc(1 + f->ndiffs, sizeof(struct table)),
				     calloc(1 + f->ndiffs, sizeof(size_t)),
				     PTHREAD_MUTEX_INITIALIZER };
	if (!c->tabs || !c->settled) {
		family_totals_free(c);
		return NULL;
	}
	return c;
}

void family_totals_add(struct family_totals *c, struct process *p)
{
	if (!c->f->has_data(p))
		return;
	stack_json_limit(STACK_KEY_FRAMES);  /* all the rows' keys read of a stack */
	json_t *j = c->f->json(p, SIZE_MAX);
	stack_json_limit(0);
	for (size_t k = 0; k <= c->f->ndiffs; k++) {
		struct table mine = { 0 };
		fill_json(&mine, j, 1, k ? &c->f->diffs[k - 1] : NULL);
		pthread_mutex_lock(&c->lock);
		struct table *t = &c->tabs[k];
		for (size_t r = 0; r < mine.n; r++)
			add(t, mine.rows[r].key, 1, mine.rows[r].v[1]);  /* frees the key if it fails */
		if (t->n > 2 * c->settled[k] + 1024) {
			settle(t);
			c->settled[k] = t->n;
		}
		pthread_mutex_unlock(&c->lock);
		free(mine.rows);
	}
	json_decref(j);
}

void family_totals_free(struct family_totals *c)
{
	if (!c)
		return;
	for (size_t k = 0; c->tabs && k <= c->f->ndiffs; k++)
		table_free(&c->tabs[k]);
	free(c->tabs);
	free(c->settled);
	free(c);
}

/* The run as the NEW side against nothing: every row's change is its value. Totals (d: 0)
 * leave out what the family says does not add up. k: 0 totals, else list k - 1. */
static int fill_one(struct table *t, struct family_totals *c, size_t k)
{
	struct table *from = &c->tabs[k];
	for (size_t r = 0; r < from->n; r++) {
		if (add(t, from->rows[r].key, 1, from->rows[r].v[1]) < 0)
			return -1;
		from->rows[r].key = NULL;  /* t has it now */
	}
	settle(t);
	size_t o = 0;
	for (size_t i = 0; i < t->n; i++) {
		const char *skip = k ? NULL : c->f->not_summed;
		size_t len = strlen(t->rows[i].key);
		while (skip && *skip && (strncmp(skip, t->rows[i].key, len) ||
					 (skip[len] && skip[len] != ',')))
			skip = strchr(skip, ',') ? strchr(skip, ',') + 1 : NULL;
		if (skip && *skip)
			free(t->rows[i].key);
		else
			t->rows[o++] = t->rows[i];
	}
	t->n = o;
	return 0;
}

json_t *family_totals_json(struct family_totals *c, size_t top)
{
	json_t *o = json_object(), *lists = json_array();
	const struct family *f = c->f;
	struct table t = { 0 };
	if (fill_one(&t, c, 0) == 0)
		for (size_t i = 0; i < t.n; i++)
			json_object_set_new(o, t.rows[i].key, json_integer(t.rows[i].v[1]));
	table_free(&t);
	for (size_t k = 0; k < f->ndiffs; k++) {
		const struct family_diff *d = &f->diffs[k];
		struct table l = { 0 };
		json_t *rows = json_array();
		if (fill_one(&l, c, k + 1) == 0)
			for (size_t i = 0; i < l.n && i < top; i++)
				json_array_append_new(rows, json_pack("{s:o,s:I}", "key",
					jstr(l.rows[i].key), "value", (json_int_t)l.rows[i].v[1]));
		json_array_append_new(lists, json_pack("{s:s,s:s,s:o}", "title", d->title,
						       "metric", d->metric, "rows", rows));
		table_free(&l);
	}
	json_object_set_new(o, "lists", lists);
	return o;
}

void family_totals_print(FILE *out, struct family_totals *c, size_t top)
{
	char a[48], arg[1024];
	const struct family *f = c->f;
	struct table t = { 0 };
	if (fill_one(&t, c, 0) < 0 || !t.n) {
		table_free(&t);
		return;
	}
	fprintf(out, "\n%s-- %s, all processes%s\n  ", fmt_sgr(SGR_BOLD), f->name, fmt_sgr(NULL));
	for (size_t i = 0; i < t.n; i++)
		fprintf(out, " %s %s%s", t.rows[i].key, fmt_value(t.rows[i].key, t.rows[i].v[1], 0, a,
			sizeof(a)), i + 1 < t.n ? "," : "\n");
	table_free(&t);
	for (size_t k = 0; k < f->ndiffs; k++) {
		const struct family_diff *d = &f->diffs[k];
		struct table l = { 0 };
		if (fill_one(&l, c, k + 1) == 0 && l.n) {
			fprintf(out, "   %s:\n", d->title);
			for (size_t i = 0; i < l.n && i < top; i++)
				fprintf(out, "   %12s  %s\n", fmt_value(d->metric, l.rows[i].v[1], 0, a,
					sizeof(a)), fmt_arg(l.rows[i].key, arg, sizeof(arg)));
			if (l.n > top)
				fprintf(out, "   ... %zu more (--top N)\n", l.n - top);
		}
		table_free(&l);
	}
}

static const struct cmd_spec diff_spec = {
	"diff", CMD_OUTPUT | CMD_JSON | CMD_TOP | CMD_WINDOW, 0,
	"usage: prof diff [options] BASE NEW\n"
	"What changed from BASE to NEW, section by section (each family's totals, CPU by\n"
	"function, heap sites, lock waits, I/O per file, CUDA API calls and kernels), the biggest\n"
	"change first, with absolute and relative change. BASE and NEW are runs (trace files or\n"
	"run directories, the processes of each added up) or moments of one run: RUN@10s is RUN\n"
	"as it stood 10 s after each process started, so `prof diff RUN@10s RUN@60s` shows what\n"
	"grew in between. Rows match by function names and paths, not addresses.\n\n"
	"  --json       one JSON document (docs/JSON.md)\n"
	"  --top N      rows per section (text default 10; JSON all)\n"
	"  -o FILE      write to FILE instead of stdout\n"
	"  -h, --help   this help\n",
};

int cmd_diff(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&diff_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.ntraces != 2) {
		prof_error("diff: give two runs or moments, BASE and NEW (try prof diff --help)");
		return 2;
	}
	struct process *ps[2] = { NULL, NULL };
	size_t n[2] = { 0, 0 };
	FILE *out = NULL;
	rc = 1;
	if (cmd_load_arg(&o, o.traces[0], &ps[0], &n[0]) < 0 ||
	    cmd_load_arg(&o, o.traces[1], &ps[1], &n[1]) < 0 || !(out = cmd_output(o.outfile)))
		goto done;
	size_t top = o.top_given ? o.top : o.json ? SIZE_MAX : 10;
	json_t *sections = json_array();
	if (!o.json)
		fprintf(out, "prof diff: %s -> %s\n", o.traces[0], o.traces[1]);
	rc = 0;
	for (size_t i = 0; families[i] && rc == 0; i++) {
		const struct family *f = families[i];
		if (!f->json)
			continue;
		for (size_t k = 0; k <= f->ndiffs && rc == 0; k++) {
			const struct family_diff *d = k ? &f->diffs[k - 1] : NULL;
			char title[128];
			snprintf(title, sizeof(title), "%s totals", f->name);
			struct table t = { 0 };
			if (fill(&t, ps, n, f, d) < 0) {
				prof_error("out of memory");
				rc = 1;
			} else if (o.json) {
				json_array_append_new(sections, table_json(f->name, d ? d->title : title,
									   d ? d->metric : NULL, &t, top));
			} else if (t.n) {
				print_table(out, d ? d->title : title, d ? d->metric : NULL, &t, top);
			}
			table_free(&t);
		}
	}
	if (o.json) {
		json_t *doc = json_pack("{s:i,s:o,s:o,s:o}", "version", 1, "base", jstr(o.traces[0]),
					"new", jstr(o.traces[1]), "sections", sections);
		json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		fputc('\n', out);
		json_decref(doc);
	} else {
		json_decref(sections);
	}
	rc = cmd_finish_output(out, o.outfile, rc);
done:
	for (int s = 0; s < 2; s++)
		if (ps[s])
			processes_free(ps[s], n[s]);
	return rc;
}
