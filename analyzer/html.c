/* prof html: one self-contained HTML file (inline CSS and script, nothing fetched) with the
 * findings, every process's identity and sections as sortable tables (made from the families'
 * JSON, so each family's section is there once it has a json hook), each family's flame graphs
 * (the SVG of flame_svg.c, one frame each, with its search and zoom), charts of the families'
 * series (heap in use, peak marked), a per-thread activity view and the process tree. Every
 * string from a trace goes through xml_write(). Output stays bounded whatever the trace: tables
 * keep their top rows, flame graphs drop frames under 0.1%, series have at most SERIES_POINTS
 * points; the page says where. */
#include "commands.h"
#include "family.h"
#include "findings.h"
#include "flame.h"
#include "format.h"
#include "process.h"
#include "series.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HTML_TOP 200  /* rows per table */

static const char html_css[] =
	"body{font:14px/1.4 sans-serif;margin:0 24px 40px;color:#222}\n"
	"h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}\n"
	"h3{font-size:15px;margin:18px 0 6px}\n"
	"table{border-collapse:collapse;margin:4px 0 8px;font-size:13px}\n"
	"th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}\n"
	"td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"table.sort th{cursor:pointer;background:#f0f0f0}table.sort th:hover{background:#e0e8f0}\n"
	"th.asc:after{content:' \\25B2'}th.desc:after{content:' \\25BC'}\n"
	".note{color:#666;font-size:12px}nav a{margin-right:12px}\n"
	"iframe.flame{width:1220px;border:0;display:block}\n"
	".bar{position:relative;height:14px;background:#eee;width:600px}\n"
	".bar span{position:absolute;top:0;height:14px}\n"
	".other{background:#e4e4e4}\n"
	".legend span{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px}\n"
	"#selftest{font-family:monospace}\n";

/* Sorting (click a heading), frame heights, and the #selftest the tests run in a browser:
 * it sorts a table, zooms and searches a flame graph, and writes what it saw into the page. */
static const char html_js[] =
	"(function(){'use strict';\n"
	"function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:Number(v);}\n"
	"function sortBy(th){var table=th.closest('table'),col=th.cellIndex,body=table.tBodies[0];\n"
	" var desc=!th.classList.contains('desc');\n"
	" Array.prototype.forEach.call(th.parentNode.cells,function(c){c.classList.remove('asc','desc');});\n"
	" th.classList.add(desc?'desc':'asc');\n"
	" var rows=Array.prototype.slice.call(body.rows);\n"
	" rows.sort(function(a,b){var x=key(a.cells[col]),y=key(b.cells[col]);\n"
	"  var c=typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y));\n"
	"  return desc?-c:c;});\n"
	" rows.forEach(function(r){body.appendChild(r);});}\n"
	"document.querySelectorAll('table.sort th').forEach(function(th){\n"
	" th.addEventListener('click',function(){sortBy(th);});});\n"
	"function fit(f){try{var d=f.contentDocument.documentElement;\n"
	" var s=f.contentDocument.querySelector('svg');f.style.height=(s?s.getAttribute('height'):d.scrollHeight)+'px';}catch(e){}}\n"
	"document.querySelectorAll('iframe.flame').forEach(function(f){f.addEventListener('load',function(){fit(f);});fit(f);});\n"
	"function selftest(){var out=[];\n"
	" var th=document.querySelector('table.sort th.num');\n"
	" if(th){sortBy(th);var t=th.closest('table'),col=th.cellIndex,ok=true,r=t.tBodies[0].rows;\n"
	"  for(var i=1;i<r.length;i++)if(key(r[i-1].cells[col])<key(r[i].cells[col]))ok=false;\n"
	"  out.push('sort='+(ok?'ok':'bad'));}else out.push('sort=none');\n"
	" var f=document.querySelector('iframe.flame');\n"
	" if(f){var d=f.contentDocument,gs=d.querySelectorAll('#frames > g');\n"
	"  var g=gs[gs.length-1];g.dispatchEvent(new MouseEvent('click',{bubbles:true}));\n"
	"  var w=Number(g.querySelector('rect').getAttribute('width'));\n"
	"  out.push('zoom='+(w>1000&&d.querySelector('g.hide,g.anc')?'ok':'bad'));\n"
	"  var name=g.getAttribute('data-n');f.contentWindow.prompt=function(){return name.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&');};\n"
	"  d.getElementById('search').dispatchEvent(new MouseEvent('click',{bubbles:true}));\n"
	"  out.push('search='+(/^Matched/.test(d.getElementById('matched').textContent)?'ok':'bad'));\n"
	"  out.push('flames='+document.querySelectorAll('iframe.flame').length);\n"
	" }else out.push('zoom=none search=none');\n"
	" out.push('tables='+document.querySelectorAll('table.sort').length);\n"
	" var p=document.createElement('pre');p.id='selftest';p.textContent='selftest: '+out.join(' ');\n"
	" document.body.insertBefore(p,document.body.firstChild);}\n"
	"window.addEventListener('load',function(){if(location.hash==='#selftest')selftest();});\n"
	"})();\n";

/* ---- values -------------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* A cell: numbers right-aligned with their raw value to sort by, shown by what the key
 * measures; a stack as its innermost frame (the whole stack in its tooltip). */
static void cell(FILE *out, const char *key, json_t *v)
{
	char buf[64];
	if (json_is_integer(v) || json_is_real(v)) {
		double d = json_number_value(v);
		uint64_t u = d > 0 ? (uint64_t)d : 0;
		const char *shown = buf;
		if (json_is_real(v))
			snprintf(buf, sizeof(buf), "%.2f", d);
		else if (d < 0)
			snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else if (!strcmp(key, "pid") || !strcmp(key, "tid") || !strcmp(key, "process") ||
			 !strcmp(key, "line") || !strcmp(key, "ppid"))
			snprintf(buf, sizeof(buf), "%" PRIu64, u);
		else if (ends_with(key, "_ns"))
			shown = fmt_ns(u, buf, sizeof(buf));
		else if (strstr(key, "bytes"))
			shown = fmt_bytes(u, buf, sizeof(buf));
		else
			shown = fmt_count(u, buf, sizeof(buf));
		fprintf(out, "<td class=\"n\" data-v=\"%.17g\">%s</td>", d, shown);
		return;
	}
	if (json_is_string(v)) {
		fputs("<td>", out);
		xml_write(out, json_string_value(v));
		fputs("</td>", out);
		return;
	}
	if (json_is_array(v) && json_array_size(v) && json_is_object(json_array_get(v, 0))) {
		/* a stack: innermost frame shown, all in the title */
		fputs("<td title=\"", out);
		size_t i;
		json_t *f;
		json_array_foreach(v, i, f) {
			json_t *fn = json_object_get(f, "function"), *file = json_object_get(f, "file");
			xml_write(out, json_is_string(fn) ? json_string_value(fn) :
				  json_string_value(json_object_get(f, "address")));
			if (json_is_string(file)) {
				fputs(" (", out);
				xml_write(out, json_string_value(file));
				fprintf(out, ":%" JSON_INTEGER_FORMAT ")",
					json_integer_value(json_object_get(f, "line")));
			}
			fputs("&#10;", out);
		}
		json_t *f0 = json_array_get(v, 0), *fn = json_object_get(f0, "function");
		fputs("\">", out);
		xml_write(out, json_is_string(fn) ? json_string_value(fn) :
			  json_string_value(json_object_get(f0, "address")));
		fputs("</td>", out);
		return;
	}
	if (json_is_null(v) || (json_is_array(v) && !json_array_size(v))) {
		fputs("<td>-</td>", out);
		return;
	}
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	fputs("<td>", out);
	xml_write(out, text);
	fputs("</td>", out);
	free(text);
}

/* An array of objects as a sortable table, columns from its first row. */
static void array_table(FILE *out, const char *title, json_t *rows)
{
	json_t *first = json_array_get(rows, 0);
	const char *k;
	json_t *v;
	fputs("<h3>", out);
	xml_write(out, title);
	fprintf(out, " <span class=\"note\">(%zu%s)</span></h3>\n<table class=\"sort\"><thead><tr>",
		json_array_size(rows), json_array_size(rows) == HTML_TOP ? ", the top ones" : "");
	json_object_foreach(first, k, v) {
		fprintf(out, "<th%s>", json_is_number(v) ? " class=\"num\"" : "");
		xml_write(out, k);
		fputs("</th>", out);
	}
	fputs("</tr></thead><tbody>\n", out);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		fputs("<tr>", out);
		json_object_foreach(first, k, v)
			cell(out, k, json_object_get(row, k));
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

/* The scalars of obj (nested objects flattened as "a.b") as one two-column table; arrays of
 * objects each as a table of their own. */
static void scalars(FILE *out, const char *prefix, json_t *obj, int *any)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		char name[256];
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k);
		if (json_is_object(v)) {
			scalars(out, name, v, any);
		} else if (!json_is_array(v) || !json_is_object(json_array_get(v, 0))) {
			if (!*any)
				fputs("<table class=\"sort\"><thead><tr><th>measure</th><th class=\"num\">"
				      "value</th></tr></thead><tbody>\n", out);
			*any = 1;
			fputs("<tr><td>", out);
			xml_write(out, name);
			fputs("</td>", out);
			cell(out, k, v);
			fputs("</tr>\n", out);
		}
	}
}

static void arrays(FILE *out, const char *prefix, json_t *obj)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		char name[256];
		snprintf(name, sizeof(name), "%s %s", prefix, k);
		if (json_is_object(v))
			arrays(out, name, v);
		else if (json_is_array(v) && json_is_object(json_array_get(v, 0)))
			array_table(out, name, v);
	}
}

static void family_section(FILE *out, struct process *p, const struct family *f)
{
	json_t *j = f->json(p, HTML_TOP);
	fprintf(out, "<h3>%s</h3>\n", f->name);
	if (json_is_array(j)) {
		if (json_array_size(j))
			array_table(out, f->name, j);
	} else {
		int any = 0;
		scalars(out, "", j, &any);
		if (any)
			fputs("</tbody></table>\n", out);
		arrays(out, f->name, j);
	}
	json_decref(j);
}

/* ---- charts -------------------------------------------------------------------------------- */

#define CHART_W 900
#define CHART_H 200

static void series_chart(FILE *out, const char *title, const struct series *s)
{
	if (!s->n)
		return;
	uint64_t top = 0;
	size_t at = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->set[i] && s->max[i] >= top) {
			top = s->max[i];
			at = i;
		}
	char a[32], b[32], c[32];
	fputs("<h3>", out);
	xml_write(out, title);
	fprintf(out, "</h3>\n<p class=\"note\">%s values drawn as %zu points of %s each (the "
		"largest value of each)</p>\n", fmt_count(s->values, a, sizeof(a)), s->n,
		fmt_ns(s->width, b, sizeof(b)));
	fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"%d\" height=\"%d\" fill=\"#f8f8f8\"/>"
		"<polyline fill=\"none\" stroke=\"#36c\" stroke-width=\"1.5\" points=\"",
		CHART_W, CHART_H + 20, CHART_W, CHART_H);
	uint64_t last = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->set[i])
			last = s->max[i];
		double x = (double)i / (double)s->n * CHART_W;
		double y = CHART_H - (top ? (double)last / (double)top * (CHART_H - 10) : 0);
		fprintf(out, "%.1f,%.1f ", x, y);
	}
	double px = (double)at / (double)s->n * CHART_W;
	fprintf(out, "\"/><circle id=\"peak\" cx=\"%.1f\" cy=\"10\" r=\"4\" fill=\"#d00\"/>"
		"<text x=\"%.1f\" y=\"24\" font-size=\"12\" fill=\"#d00\">peak %s at %s</text>"
		"<text x=\"0\" y=\"%d\" font-size=\"11\">0</text>"
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s</text></svg>\n",
		px, px + 6 > CHART_W - 200 ? CHART_W - 200 : px + 6, fmt_bytes(top, a, sizeof(a)),
		fmt_ns((uint64_t)at * s->width, c, sizeof(c)), CHART_H + 14, CHART_W, CHART_H + 14,
		fmt_ns((uint64_t)s->n * s->width, b, sizeof(b)));
}

/* What a thread's time went to: the core's measures, then each family's (the larger where
 * two name one cause). */
#define CAUSES_MAX 16
struct causes {
	const char *name[CAUSES_MAX];
	uint64_t ns[CAUSES_MAX];
	size_t n;
};

static void add_cause(void *arg, const char *cause, uint64_t ns)
{
	struct causes *c = arg;
	size_t i = 0;
	while (i < c->n && strcmp(c->name[i], cause))
		i++;
	if (i == c->n) {
		if (c->n == CAUSES_MAX)
			return;
		c->name[c->n] = cause;
		c->ns[c->n++] = 0;
	}
	if (ns > c->ns[i])
		c->ns[i] = ns;
}

/* A color per cause, the same wherever it appears. */
static const char *cause_color(const char *cause)
{
	static const struct { const char *name, *color; } known[] = {
		{ "running", "#4a4" }, { "lock", "#d33" }, { "cond", "#e90" }, { "join", "#88c" },
		{ "io", "#39c" }, { "sleep", "#bbb" }, { "poll", "#a7d" }, { "wait", "#c8a" },
		{ "signal", "#866" }, { "mpi", "#d84" }, { "cuda api", "#7b2" },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, cause))
			return known[i].color;
	return "#999";
}

/* Per thread: its lifetime on the process's time axis, split by what its time went to (the
 * rest: runnable, or what nothing recorded); a table of the same, sortable. */
static void threads_view(FILE *out, struct process *p)
{
	char a[32], b[32];
	uint64_t span = p->end_ns ? p->end_ns : 1;
	size_t shown = p->nthreads < HTML_TOP * 5 ? p->nthreads : HTML_TOP * 5;
	struct causes *c = calloc(shown ? shown : 1, sizeof(*c));
	struct causes all = { 0 };
	if (!c)
		return;
	for (size_t i = 0; i < shown; i++) {
		const struct thread_info *t = &p->threads[i];
		add_cause(&c[i], "running", thread_cpu_ns(p, t));
		add_cause(&c[i], "lock", t->lock_wait_ns);
		add_cause(&c[i], "cond", t->cond_wait_ns);
		add_cause(&c[i], "join", t->join_wait_ns);
		for (size_t f = 0; families[f]; f++)
			if (families[f]->thread_times && families[f]->has_data(p))
				families[f]->thread_times(p, t, add_cause, &c[i]);
		for (size_t k = 0; k < c[i].n; k++)
			add_cause(&all, c[i].name[k], 0);
	}
	fputs("<h3>Threads</h3>\n<p class=\"legend note\">", out);
	for (size_t k = 0; k < all.n; k++)
		fprintf(out, "<span style=\"background:%s\"></span>%s", cause_color(all.name[k]),
			all.name[k]);
	fputs("<span class=\"other\"></span>other (runnable, unrecorded)</p>\n<table class=\"sort\">"
	      "<thead><tr><th class=\"num\">tid</th><th>name</th>", out);
	for (size_t k = 0; k < all.n; k++)
		fprintf(out, "<th class=\"num\">%s</th>", all.name[k]);
	fputs("<th>activity over the process's life</th></tr></thead><tbody>\n", out);
	for (size_t i = 0; i < shown; i++) {
		const struct thread_info *t = &p->threads[i];
		uint64_t end = t->ended ? t->end_ns : p->end_ns;
		uint64_t life = end > t->start_ns ? end - t->start_ns : 1;
		fprintf(out, "<tr><td class=\"n\" data-v=\"%u\">%u</td><td>", t->tid, t->tid);
		xml_write(out, t->name);
		fputs("</td>", out);
		for (size_t k = 0; k < all.n; k++) {
			uint64_t ns = 0;
			for (size_t j = 0; j < c[i].n; j++)
				if (!strcmp(c[i].name[j], all.name[k]))
					ns = c[i].ns[j];
			fprintf(out, "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>", ns,
				fmt_ns(ns, a, sizeof(a)));
		}
		double left = (double)t->start_ns / (double)span * 100;
		double w = (double)life / (double)span * 100, used = 0;
		fprintf(out, "<td><div class=\"bar\" title=\"%s to %s\">", fmt_ns(t->start_ns, a,
			sizeof(a)), fmt_ns(end, b, sizeof(b)));
		for (size_t j = 0; j < c[i].n; j++) {
			double pw = (double)c[i].ns[j] / (double)life * w;
			if (used + pw > w)
				pw = w - used;
			if (pw <= 0)
				continue;
			fprintf(out, "<span style=\"background:%s;left:%.2f%%;width:%.2f%%\"></span>",
				cause_color(c[i].name[j]), left, pw);
			left += pw;
			used += pw;
		}
		fprintf(out, "<span class=\"other\" style=\"left:%.2f%%;width:%.2f%%\"></span>"
			"</div></td></tr>\n", left, w - used);
	}
	fputs("</tbody></table>\n", out);
	if (p->nthreads > shown)
		fprintf(out, "<p class=\"note\">%zu threads; the first %zu shown</p>\n", p->nthreads,
			shown);
	free(c);
}

/* ---- flame graphs -------------------------------------------------------------------------- */

/* The SVG inside an iframe's srcdoc: each graph keeps its own ids and script. */
static int flame_frame(FILE *out, struct process *ps, size_t n, const struct family *f,
		       const struct flame_kind *kind)
{
	const struct flame_weight *w = &kind->weights[0];
	struct flame_set ss = { 0 };
	if (flame_collect(&ss, ps, n, f, kind, w->by, 1) < 0) {
		flame_set_free(&ss);
		return -1;
	}
	if (ss.n == 0) {
		flame_set_free(&ss);
		return 0;
	}
	char *svg = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&svg, &len);
	int rc = mem ? flame_write_svg(mem, ss.v, ss.n, w->title, w->unit) : -1;
	if (mem)
		fclose(mem);
	flame_set_free(&ss);
	if (rc < 0) {
		free(svg);
		return -1;
	}
	fprintf(out, "<h3 id=\"flame-%s\">", kind->name);
	xml_write(out, w->title);
	fputs("</h3>\n<iframe class=\"flame\" title=\"", out);
	xml_write(out, kind->name);
	fputs("\" srcdoc=\"<!DOCTYPE html><body style='margin:0'>", out);
	for (const char *c = svg; *c; c++) {  /* the SVG is valid UTF-8: escape for the attribute */
		switch (*c) {
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		default: fputc(*c, out);
		}
	}
	fputs("\"></iframe>\n", out);
	free(svg);
	return 0;
}

/* ---- the page ------------------------------------------------------------------------------- */

static void process_title(FILE *out, const struct process *p)
{
	fprintf(out, "%u ", p->hdr.pid);
	xml_write(out, p->argc ? p->argv[0] : p->exe);
	for (uint32_t i = 1; i < p->argc && i < 16; i++) {
		fputc(' ', out);
		xml_write(out, p->argv[i]);
	}
}

/* Children under their parent (by ppid), roots those whose parent is not in the run. */
static void tree(FILE *out, const struct process *ps, size_t n, size_t at, int depth)
{
	fputs("<li>", out);
	process_title(out, &ps[at]);
	fputs("<ul>", out);
	for (size_t i = 0; i < n && depth < 64; i++)
		if (i != at && ps[i].hdr.ppid == ps[at].hdr.pid)
			tree(out, ps, n, i, depth + 1);
	fputs("</ul></li>\n", out);
}

static void process_tree(FILE *out, const struct process *ps, size_t n)
{
	fputs("<h2 id=\"tree\">Process tree</h2>\n<ul>", out);
	for (size_t i = 0; i < n; i++) {
		int has_parent = 0;
		for (size_t j = 0; j < n; j++)
			has_parent |= j != i && ps[j].hdr.pid == ps[i].hdr.ppid;
		if (!has_parent)
			tree(out, ps, n, i, 0);
	}
	fputs("</ul>\n", out);
}

static void identity(FILE *out, const struct process *p)
{
	char a[32], b[32];
	fputs("<table><tbody><tr><th>exe</th><td>", out);
	xml_write(out, p->exe);
	fputs("</td></tr><tr><th>host</th><td>", out);
	xml_write(out, p->host);
	fprintf(out, "</td></tr><tr><th>parent</th><td>%u</td></tr><tr><th>duration</th><td>%s"
		"</td></tr><tr><th>exit</th><td>", p->hdr.ppid, fmt_ns(p->end_ns, a, sizeof(a)));
	switch (p->exit_kind) {
	case EXIT_CODE: fprintf(out, "code %d", p->exit_value); break;
	case EXIT_SIGNAL: fprintf(out, "killed by signal %d", p->exit_value); break;
	case EXIT_EXEC: fputs("exec ", out); xml_write(out, p->exec_path); break;
	default: fputs("none recorded", out); break;
	}
	fprintf(out, "%s</td></tr><tr><th>threads</th><td>%zu</td></tr>",
		p->complete ? "" : " (incomplete)", p->nthreads);
	if (p->lost_records)
		fprintf(out, "<tr><th>lost records</th><td>%s (totals are short)</td></tr>",
			fmt_count(p->lost_records, b, sizeof(b)));
	fputs("<tr><th>trace</th><td>", out);
	xml_write(out, p->path);
	fputs("</td></tr></tbody></table>\n", out);
}

static const struct cmd_spec html_spec = {
	"html", CMD_OUTPUT | CMD_WINDOW, 0,
	"usage: prof html -o FILE.html [--from T] [--to T] TRACE...\n"
	"One self-contained HTML file (opens from disk, fetches nothing): the findings, each\n"
	"process's sections as sortable tables, flame graphs of every kind with data (click to\n"
	"zoom, Search or Ctrl-F), charts over time (heap in use, peak marked), per-thread\n"
	"activity, and the process tree of a run with several processes. Big traces stay\n"
	"small: tables keep their top rows, flame graphs leave out frames under 0.1%,\n"
	"charts are downsampled; the page says so where it happens.\n\n"
	"  -o FILE      write to FILE (default stdout)\n"
	"  -h, --help   this help\n",
};

int cmd_html(int argc, char **argv)
{
	struct cmd_opts o;
	struct cmd_io io;
	int rc = cmd_parse(&html_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (cmd_open(&io, &o) < 0)
		return 1;
	FILE *out = io.out;
	struct process *ps = io.ps;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
	      "frame-src 'self' about: data:\">\n<title>prof: ", out);
	process_title(out, &ps[0]);
	fprintf(out, "</title>\n<style>\n%s</style></head><body>\n<h1>prof report: ", html_css);
	process_title(out, &ps[0]);
	if (io.n > 1)
		fprintf(out, " and %zu more processes", io.n - 1);
	fputs("</h1>\n<nav><a href=\"#findings\">findings</a><a href=\"#flames\">flame graphs</a>", out);
	if (io.n > 1)
		fputs("<a href=\"#tree\">process tree</a>", out);
	fputs("</nav>\n", out);
	if (o.from_ns || o.to_ns != UINT64_MAX) {
		char a[32], b[32];
		fprintf(out, "<p class=\"note\">Only what happened from %s to %s since each process "
			"started.</p>\n", fmt_ns(o.from_ns, a, sizeof(a)),
			o.to_ns == UINT64_MAX ? "the end" : fmt_ns(o.to_ns, b, sizeof(b)));
	}

	struct findings fs;
	findings_collect(&fs, ps, io.n);
	json_t *fj = findings_json(&fs);
	fputs("<h2 id=\"findings\">Findings</h2>\n", out);
	if (json_array_size(fj))
		array_table(out, "findings", fj);
	else
		fputs("<p>Nothing stood out.</p>\n", out);
	json_decref(fj);
	findings_free(&fs);
	if (io.n > 1)
		process_tree(out, ps, io.n);

	for (size_t i = 0; i < io.n; i++) {
		struct process *p = &ps[i];
		fprintf(out, "<h2 id=\"process-%u\">Process ", p->hdr.pid);
		process_title(out, p);
		fputs("</h2>\n", out);
		identity(out, p);
		threads_view(out, p);
		for (size_t f = 0; families[f]; f++) {
			if (!families[f]->has_data(p))
				continue;
			if (families[f]->series)
				series_chart(out, families[f]->series_title, families[f]->series(p));
			if (families[f]->json)
				family_section(out, p, families[f]);
		}
	}

	fputs("<h2 id=\"flames\">Flame graphs</h2>\n<p class=\"note\">Click a frame to zoom, "
	      "Search (or Ctrl-F) to highlight by regular expression, Escape to reset; frames "
	      "under 0.1% of the total are left out (their weight stays in their parent).</p>\n",
	      out);
	rc = 0;
	FOR_EACH_FLAME_KIND(f, kind)
		if (rc == 0)
			rc = flame_frame(out, ps, io.n, f, kind);
	if (rc < 0)
		prof_error("out of memory");
	fprintf(out, "<script>\n%s</script>\n</body></html>\n", html_js);
	return cmd_close(&io, rc < 0 ? 1 : 0);
}
