/* Flame graphs from weighted stacks: folded text, and a self-contained interactive SVG. */
#include "flame_svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN_FRAME	"[unknown]"
#define ROOT_NAME	"all"

/* SVG geometry, in pixels. Labels assume ~7 px per character of 12 px Verdana. */
#define IMG_W		1200
#define PAD		10
#define FRAME_W		(IMG_W - 2 * PAD)
#define FRAME_H		16
#define TOP		36
#define BOTTOM		34
#define CHAR_W		7.0
/* Frames narrower than this share of the total are not drawn (their weight still counts). */
#define MIN_SHARE	0.001

static int sample_depth(const struct flame_sample *s)
{
	return s->depth > 0 ? s->depth : 0;
}

static const char *frame_name(const struct flame_sample *s, int i)
{
	return s->frames && s->frames[i] ? s->frames[i] : UNKNOWN_FRAME;
}

/* Sums stay meaningful (if clipped) even when the weights add up past 2^64. */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* 0, or -1 when anything written to out failed. */
static int finish(FILE *out)
{
	if (fflush(out) != 0 || ferror(out))
		return -1;
	return 0;
}

/* ---- folded ---- */

struct folded_line {
	char *stack;
	uint64_t weight, base;
};

/* "root;child;leaf" for one sample: ';' inside a name becomes ':', line breaks spaces. */
static char *fold_stack(const struct flame_sample *s)
{
	int depth = sample_depth(s);
	size_t len = 0;
	for (int i = 0; i < depth; i++)
		len += strlen(frame_name(s, i)) + 1;

	char *buf = malloc(len + 1);
	if (!buf)
		return NULL;
	char *p = buf;
	for (int i = 0; i < depth; i++) {
		if (i)
			*p++ = ';';
		for (const char *c = frame_name(s, i); *c; c++) {
			if (*c == ';')
				*p++ = ':';
			else if (*c == '\n' || *c == '\r')
				*p++ = ' ';
			else
				*p++ = *c;
		}
	}
	*p = '\0';
	return buf;
}

static int cmp_line(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;
	return strcmp(x->stack, y->stack);
}

/* Stacks of weight zero (and base zero), and empty stacks (nothing to name), are left out;
 * diff: "stack base weight" lines. */
static int write_folded(FILE *out, const struct flame_sample *samples, size_t n, int diff)
{
	struct folded_line *lines = n ? calloc(n, sizeof(*lines)) : NULL;
	size_t nl = 0;
	int ret = -1;

	if (n && !lines)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((!samples[i].weight && !(diff && samples[i].base)) ||
		    sample_depth(&samples[i]) == 0)
			continue;
		lines[nl].stack = fold_stack(&samples[i]);
		if (!lines[nl].stack)
			goto out;
		lines[nl].base = samples[i].base;
		lines[nl++].weight = samples[i].weight;
	}
	if (nl)
		qsort(lines, nl, sizeof(*lines), cmp_line);

	for (size_t i = 0; i < nl;) {
		uint64_t w = lines[i].weight, b = lines[i].base;
		size_t j = i + 1;
		while (j < nl && strcmp(lines[j].stack, lines[i].stack) == 0) {
			b = add_sat(b, lines[j].base);
			w = add_sat(w, lines[j++].weight);
		}
		if (diff)
			fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", lines[i].stack, b, w);
		else
			fprintf(out, "%s %" PRIu64 "\n", lines[i].stack, w);
		i = j;
	}
	ret = finish(out);
out:
	for (size_t i = 0; i < nl; i++)
		free(lines[i].stack);
	free(lines);
	return ret;
}

int flame_write_folded(FILE *out, const struct flame_sample *samples, size_t n)
{
	return write_folded(out, samples, n, 0);
}

int flame_write_folded_diff(FILE *out, const struct flame_sample *samples, size_t n)
{
	return write_folded(out, samples, n, 1);
}

/* ---- text helpers for the SVG ---- */

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one (XML would reject it). */
static size_t utf8_len(const unsigned char *s)
{
	uint32_t cp, min;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	/* A NUL fails the continuation test, so this never reads past the string. */
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		return 0;
	return len;
}

/* Characters of str as write_xml() writes them (an invalid byte counts as one). */
static size_t xml_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0;

	while (*s) {
		size_t len = utf8_len(s);
		s += len ? len : 1;
		n++;
	}
	return n;
}

/* Writes the first max characters of str, XML-escaped. Bytes that are not UTF-8 become '?'
 * and control characters spaces, so any name gives well-formed XML. Pairs with xml_chars(). */
static void write_xml(FILE *out, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t n = 0; *s && n < max; n++) {
		size_t len = utf8_len(s);

		if (!len) {
			fputc('?', out);
			len = 1;
		} else if (*s == '&') {
			fputs("&amp;", out);
		} else if (*s == '<') {
			fputs("&lt;", out);
		} else if (*s == '>') {
			fputs("&gt;", out);
		} else if (*s == '"') {
			fputs("&quot;", out);
		} else if (*s == '\'') {
			fputs("&apos;", out);
		} else if (*s < 0x20) {
			fputc(' ', out);
		} else {
			fwrite(s, 1, len, out);
		}
		s += len;
	}
}

/* The label that fits in width pixels: the name, or its start and "..", or nothing. */
static void write_label(FILE *out, const char *name, double width)
{
	double fit = (width - 6) / CHAR_W;

	if (fit < 3)
		return;
	size_t chars = (size_t)fit;
	if (xml_chars(name) <= chars) {
		write_xml(out, name, SIZE_MAX);
	} else {
		write_xml(out, name, chars - 2);
		fputs("..", out);
	}
}

/* 1234567 -> "1,234,567". */
static void format_count(char *buf, size_t size, uint64_t v)
{
	char digits[24];
	int nd = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < nd && o + 2 < size; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

/* A weight for people: bytes in KiB..EiB, ns in µs..s, anything else counted in its unit. */
static void write_weight(FILE *out, uint64_t v, const char *unit)
{
	static const char *const bytes[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	char num[40];

	if (strcmp(unit, "bytes") == 0 && v >= 1024) {
		double d = (double)v / 1024;
		size_t i = 0;
		while (d >= 1024 && i + 1 < sizeof(bytes) / sizeof(bytes[0])) {
			d /= 1024;
			i++;
		}
		fprintf(out, "%.2f %s", d, bytes[i]);
	} else if (strcmp(unit, "ns") == 0 && v >= 1000) {
		if (v < 1000000)
			fprintf(out, "%.2f \xc2\xb5s", (double)v / 1e3);
		else if (v < 1000000000)
			fprintf(out, "%.2f ms", (double)v / 1e6);
		else
			fprintf(out, "%.2f s", (double)v / 1e9);
	} else {
		format_count(num, sizeof(num), v);
		fprintf(out, "%s ", num);
		write_xml(out, unit, SIZE_MAX);
	}
}

/* Warm colours, the same for a name wherever it appears: FNV-1a of the name picks them. */
static void frame_colour(const char *name, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	*r = 205 + (int)(50 * ((h >> 16) & 0xff) / 255);
	*g = (int)(230 * (h & 0xff) / 255);
	*b = (int)(55 * ((h >> 8) & 0xff) / 255);
}

/* ---- the call tree ---- */

/* Nodes are stored in pre-order (a node's subtree follows it), children by name. */
struct flame_node {
	const char *name;
	uint64_t total;		/* its own weight and its descendants' */
	uint64_t offset;	/* weight left of it: its x in weight units */
	uint64_t base;		/* differential graphs: the base run's total */
	int depth;		/* 0: the root */
};

struct flame_tree {
	struct flame_node *nodes;
	size_t n, cap;
	int max_depth;		/* deepest node */
};

/* Equal names are often one pointer (symbolizers intern them): then no strcmp is needed. */
static int same_name(const char *a, const char *b)
{
	return a == b || strcmp(a, b) == 0;
}

/* Stacks frame by frame, shorter first on a tie: sorted stacks share prefixes with their
 * neighbours, which is what lets flame_tree_build() merge them in one pass. */
static int cmp_stack(const void *pa, const void *pb)
{
	const struct flame_sample *x = *(const struct flame_sample *const *)pa;
	const struct flame_sample *y = *(const struct flame_sample *const *)pb;
	int dx = sample_depth(x), dy = sample_depth(y);

	for (int i = 0; i < dx && i < dy; i++) {
		const char *a = frame_name(x, i), *b = frame_name(y, i);
		int c = a == b ? 0 : strcmp(a, b);
		if (c)
			return c;
	}
	return (dx > dy) - (dx < dy);
}

static int tree_add(struct flame_tree *t, const char *name, int depth)
{
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		struct flame_node *nn = realloc(t->nodes, ncap * sizeof(*nn));
		if (!nn)
			return -1;
		t->nodes = nn;
		t->cap = ncap;
	}
	t->nodes[t->n++] = (struct flame_node){ .name = name, .depth = depth };
	if (depth > t->max_depth)
		t->max_depth = depth;
	return 0;
}

/* Builds the tree of the samples (names are borrowed from them); O(n log n) for the sort,
 * then linear in the number of frames. Returns 0, or -1 when out of memory. */
static int flame_tree_build(struct flame_tree *t, const struct flame_sample *samples, size_t n)
{
	const struct flame_sample **sorted = NULL, *prev = NULL;
	size_t *path = NULL, ns = 0;
	int max_depth = 0, ret = -1;

	memset(t, 0, sizeof(*t));
	if (tree_add(t, ROOT_NAME, 0))
		return -1;
	if (n) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!samples[i].weight && !samples[i].base)
			continue;
		sorted[ns++] = &samples[i];
		if (sample_depth(&samples[i]) > max_depth)
			max_depth = sample_depth(&samples[i]);
	}
	if (ns)
		qsort(sorted, ns, sizeof(*sorted), cmp_stack);

	/* path[k]: the node of frame k-1 of the previous stack; path[0] the root. */
	path = malloc(((size_t)max_depth + 1) * sizeof(*path));
	if (!path)
		goto out;
	path[0] = 0;
	for (size_t i = 0; i < ns; i++) {
		const struct flame_sample *s = sorted[i];
		int depth = sample_depth(s), common = 0;

		if (prev) {
			int pd = sample_depth(prev);
			while (common < depth && common < pd &&
			       same_name(frame_name(s, common), frame_name(prev, common)))
				common++;
		}
		for (int k = common; k < depth; k++) {
			if (tree_add(t, frame_name(s, k), k + 1))
				goto out;
			path[k + 1] = t->n - 1;
		}
		for (int k = 0; k <= depth; k++) {
			t->nodes[path[k]].total = add_sat(t->nodes[path[k]].total, s->weight);
			t->nodes[path[k]].base = add_sat(t->nodes[path[k]].base, s->base);
		}
		prev = s;
	}
	ret = 0;
out:
	free(path);
	free(sorted);
	if (ret) {
		free(t->nodes);
		t->nodes = NULL;
	}
	return ret;
}

/* ---- the SVG ---- */

/* Frame clicks zoom, the controls reset and search; written for this file, no libraries. */
static const char flame_js[] =
	"(function () {\n"
	"\"use strict\";\n"
	"var W = FLAME_W, PAD = FLAME_PAD, CW = FLAME_CW;\n"
	"var frames = [], index = new Map();\n"
	"var gs = document.querySelectorAll('#frames > g');\n"
	"for (var i = 0; i < gs.length; i++) {\n"
	"\tvar g = gs[i];\n"
	"\tframes.push({ g: g, r: g.querySelector('rect'), t: g.querySelector('text'),\n"
	"\t\tn: g.getAttribute('data-n'), o: Number(g.getAttribute('data-o')),\n"
	"\t\tw: Number(g.getAttribute('data-w')), d: Number(g.getAttribute('data-d')),\n"
	"\t\ttip: g.querySelector('title').textContent, end: 0 });\n"
	"\tindex.set(g, i);\n"
	"}\n"
	"/* Frames come in pre-order: a frame's descendants are the deeper frames after it. */\n"
	"var open = [];\n"
	"frames.forEach(function (f, i) {\n"
	"\twhile (open.length && frames[open[open.length - 1]].d >= f.d)\n"
	"\t\tframes[open.pop()].end = i;\n"
	"\topen.push(i);\n"
	"});\n"
	"while (open.length)\n"
	"\tframes[open.pop()].end = frames.length;\n"
	"var total = frames.length ? frames[0].w : 0;\n"
	"var details = document.getElementById('details');\n"
	"var matched = document.getElementById('matched');\n"
	"var unzoomBtn = document.getElementById('unzoom');\n"
	"var searchBtn = document.getElementById('search');\n"
	"var zoomed = 0, term = null;\n"
	"\n"
	"function label(f, width) {\n"
	"\tvar fit = Math.floor((width - 6) / CW);\n"
	"\tif (fit < 3)\n"
	"\t\treturn '';\n"
	"\tvar chars = Array.from(f.n);\n"
	"\treturn chars.length <= fit ? f.n : chars.slice(0, fit - 2).join('') + '..';\n"
	"}\n"
	"\n"
	"function place(f, x, width) {\n"
	"\tf.r.setAttribute('x', (PAD + x).toFixed(2));\n"
	"\tf.r.setAttribute('width', width.toFixed(2));\n"
	"\tf.t.setAttribute('x', (PAD + x + 3).toFixed(2));\n"
	"\tf.t.textContent = label(f, width);\n"
	"}\n"
	"\n"
	"/* Frame z gets the full width; its ancestors stay, dimmed; every other frame hides. */\n"
	"function zoom(z) {\n"
	"\tvar zf = frames[z];\n"
	"\tif (!zf)\n"
	"\t\treturn;\n"
	"\tframes.forEach(function (f, i) {\n"
	"\t\tif (i < z && f.end > z) {\n"
	"\t\t\tf.g.setAttribute('class', 'f anc');\n"
	"\t\t\tplace(f, 0, W);\n"
	"\t\t} else if (i >= z && i < zf.end) {\n"
	"\t\t\tf.g.setAttribute('class', 'f');\n"
	"\t\t\tplace(f, (f.o - zf.o) / zf.w * W, f.w / zf.w * W);\n"
	"\t\t} else {\n"
	"\t\t\tf.g.setAttribute('class', 'f hide');\n"
	"\t\t}\n"
	"\t});\n"
	"\tzoomed = z;\n"
	"\tunzoomBtn.setAttribute('class', z ? 'ctl' : 'ctl off');\n"
	"}\n"
	"\n"
	"function clearSearch() {\n"
	"\tterm = null;\n"
	"\tframes.forEach(function (f) { f.r.style.fill = ''; });\n"
	"\tmatched.textContent = '';\n"
	"\tsearchBtn.textContent = 'Search';\n"
	"}\n"
	"\n"
	"/* Highlights the frames whose name matches re; the share counts nested matches once. */\n"
	"function search(re) {\n"
	"\tvar sum = 0, covered = 0, any = false;\n"
	"\tframes.forEach(function (f, i) {\n"
	"\t\tif (!re.test(f.n)) {\n"
	"\t\t\tf.r.style.fill = '';\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t\tf.r.style.fill = 'rgb(230,0,230)';\n"
	"\t\tany = true;\n"
	"\t\tif (i >= covered) {\n"
	"\t\t\tsum += f.w;\n"
	"\t\t\tcovered = f.end;\n"
	"\t\t}\n"
	"\t});\n"
	"\tvar share = total ? sum / total * 100 : 0;\n"
	"\tmatched.textContent = any ? 'Matched: ' + share.toFixed(2) + '%' : 'No match';\n"
	"\tsearchBtn.textContent = 'Search: ' + re.source;\n"
	"}\n"
	"\n"
	"function askSearch() {\n"
	"\tvar s = window.prompt('Search (regular expression; empty clears):', term || '');\n"
	"\tif (s === null)\n"
	"\t\treturn;\n"
	"\tif (s === '') {\n"
	"\t\tclearSearch();\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tvar re;\n"
	"\ttry {\n"
	"\t\tre = new RegExp(s);\n"
	"\t} catch (e) {\n"
	"\t\twindow.alert('Bad search: ' + e.message);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tterm = s;\n"
	"\tsearch(re);\n"
	"}\n"
	"\n"
	"function frameOf(e) {\n"
	"\tvar g = e.target.closest ? e.target.closest('g.f') : null;\n"
	"\treturn g && index.has(g) ? index.get(g) : -1;\n"
	"}\n"
	"\n"
	"var area = document.getElementById('frames');\n"
	"area.addEventListener('mouseover', function (e) {\n"
	"\tvar i = frameOf(e);\n"
	"\tif (i >= 0)\n"
	"\t\tdetails.textContent = frames[i].tip;\n"
	"});\n"
	"area.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"area.addEventListener('click', function (e) {\n"
	"\tvar i = frameOf(e);\n"
	"\tif (i >= 0)\n"
	"\t\tzoom(i);\n"
	"});\n"
	"unzoomBtn.addEventListener('click', function () { zoom(0); });\n"
	"searchBtn.addEventListener('click', askSearch);\n"
	"matched.addEventListener('click', clearSearch);\n"
	"document.addEventListener('keydown', function (e) {\n"
	"\tvar find = (e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F');\n"
	"\tif (find || e.key === 'F3') {\n"
	"\t\te.preventDefault();\n"
	"\t\taskSearch();\n"
	"\t} else if (e.key === 'Escape') {\n"
	"\t\tif (term !== null)\n"
	"\t\t\tclearSearch();\n"
	"\t\telse\n"
	"\t\t\tzoom(0);\n"
	"\t}\n"
	"});\n"
	"})();\n";

static const char flame_css[] =
	"text { font-family: Verdana, Arial, sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#nodata { font-size: 15px; text-anchor: middle; fill: #555; }\n"
	".ctl { cursor: pointer; fill: #205080; }\n"
	".ctl:hover { text-decoration: underline; }\n"
	".ctl.off { opacity: 0.35; }\n"
	"#matched { text-anchor: end; cursor: pointer; }\n"
	"g.f { cursor: pointer; }\n"
	"g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	"g.f text { pointer-events: none; }\n"
	"g.anc { opacity: 0.5; }\n"
	"g.hide { display: none; }\n";

static void write_head(FILE *out, int height, const char *title)
{
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		IMG_W, height, IMG_W, height);
	fputs("<title>", out);
	write_xml(out, title, SIZE_MAX);
	fputs("</title>\n<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	      "<stop offset=\"5%\" stop-color=\"#eeeeee\"/>"
	      "<stop offset=\"95%\" stop-color=\"#eeeeb0\"/></linearGradient></defs>\n",
	      out);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", flame_css);
	/* A path, not a rect: every <rect> in the file is a frame. */
	fprintf(out, "<path d=\"M0 0H%dV%dH0Z\" fill=\"url(#bg)\"/>\n", IMG_W, height);
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", IMG_W / 2);
	write_xml(out, title, SIZE_MAX);
	fputs("</text>\n", out);
}

/* Differential colours: white where a frame kept its share, red as it grew, blue as it shrank
 * (scale: base weights times NEW's total over BASE's). */
static void diff_colour(const struct flame_node *nd, double scale, int *r, int *g, int *b)
{
	double was = (double)nd->base * scale, now = (double)nd->total;
	double big = was > now ? was : now;
	double d = big > 0 ? (now - was) / big : 0;
	int fade = (int)(255 - 200 * (d < 0 ? -d : d));
	*r = d < 0 ? fade : 255;
	*g = fade;
	*b = d > 0 ? fade : 255;
}

static void write_frame(FILE *out, const struct flame_node *nd, uint64_t total, int height,
			const char *unit, double diff_scale)
{
	double x = PAD + (double)nd->offset / (double)total * FRAME_W;
	double w = (double)nd->total / (double)total * FRAME_W;
	int y = height - BOTTOM - (nd->depth + 1) * FRAME_H;
	int r, g, b;

	fputs("<g class=\"f\" data-n=\"", out);
	write_xml(out, nd->name, SIZE_MAX);
	fprintf(out, "\" data-o=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%d\"><title>",
		nd->offset, nd->total, nd->depth);
	write_xml(out, nd->name, SIZE_MAX);
	fputs(" \xe2\x80\x94 ", out);
	write_weight(out, nd->total, unit);
	fprintf(out, " (%.2f%%)", (double)nd->total / (double)total * 100);
	if (diff_scale > 0) {
		fputs("; base ", out);
		write_weight(out, nd->base, unit);
		if (nd->base)
			fprintf(out, " (%+.1f%% after scaling)",
				((double)nd->total / ((double)nd->base * diff_scale) - 1) * 100);
		else
			fputs(" (new)", out);
		diff_colour(nd, diff_scale, &r, &g, &b);
	} else {
		frame_colour(nd->name, &r, &g, &b);
	}
	fputs("</title>", out);
	fprintf(out,
		"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" "
		"rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, r, g, b, x + 3, y + FRAME_H - 4.5);
	write_label(out, nd->name, w);
	fputs("</text></g>\n", out);
}

static int write_empty(FILE *out, const char *title)
{
	int height = TOP + 2 * FRAME_H + BOTTOM;

	write_head(out, height, title);
	fprintf(out, "<text id=\"nodata\" x=\"%d\" y=\"%d\">no data</text>\n</svg>\n", IMG_W / 2,
		TOP + FRAME_H + 6);
	return finish(out);
}

static int is_drawn(const struct flame_node *nd, uint64_t total)
{
	return nd->depth == 0 || (double)nd->total / (double)total >= MIN_SHARE;
}

static int write_svg(FILE *out, const struct flame_sample *samples, size_t n, const char *title,
		     const char *unit, int diff)
{
	struct flame_tree t;
	size_t *last = NULL;
	int ret = -1;

	if (!title)
		title = "Flame graph";
	if (!unit || !*unit)
		unit = "samples";
	if (flame_tree_build(&t, samples, n))
		return -1;

	uint64_t total = t.nodes[0].total;
	if (!total) {
		ret = write_empty(out, title);
		goto out;
	}

	/* Pruned frames' weight stays in their parents; children are never wider than their
	 * parent, so a pruned frame's subtree is pruned too. */
	int levels = 1;
	for (size_t i = 0; i < t.n; i++)
		if (t.nodes[i].depth >= levels && is_drawn(&t.nodes[i], total))
			levels = t.nodes[i].depth + 1;
	int height = TOP + levels * FRAME_H + BOTTOM;

	/* last[d]: the latest node seen at depth d. In pre-order a node's parent is the latest
	 * node one level up, and its previous sibling the latest at its level, if after that. */
	double diff_scale = !diff ? 0 : t.nodes[0].base ? (double)total / (double)t.nodes[0].base : 1;
	last = malloc(((size_t)t.max_depth + 1) * sizeof(*last));
	if (!last)
		goto out;
	write_head(out, height, title);
	fputs("<text id=\"unzoom\" class=\"ctl off\" x=\"10\" y=\"24\">Reset zoom</text>\n", out);
	fprintf(out, "<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"24\" "
		"text-anchor=\"end\">Search</text>\n", IMG_W - PAD);
	fputs("<g id=\"frames\">\n", out);
	for (int d = 0; d <= t.max_depth; d++)
		last[d] = SIZE_MAX;
	for (size_t i = 0; i < t.n; i++) {
		struct flame_node *nd = &t.nodes[i];
		if (nd->depth) {
			size_t p = last[nd->depth - 1], prev = last[nd->depth];
			if (prev != SIZE_MAX && prev > p)
				nd->offset = t.nodes[prev].offset + t.nodes[prev].total;
			else
				nd->offset = t.nodes[p].offset;
		}
		last[nd->depth] = i;
		if (is_drawn(nd, total))
			write_frame(out, nd, total, height, unit, diff_scale);
	}
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 12);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", IMG_W - PAD, height - 12);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fprintf(out, "var FLAME_W = %d, FLAME_PAD = %d, FLAME_CW = %g;\n", FRAME_W, PAD, CHAR_W);
	fputs(flame_js, out);
	fputs("]]></script>\n</svg>\n", out);
	ret = finish(out);
out:
	free(last);
	free(t.nodes);
	return ret;
}

int flame_write_svg(FILE *out, const struct flame_sample *samples, size_t n, const char *title,
		    const char *unit)
{
	return write_svg(out, samples, n, title, unit, 0);
}

int flame_write_svg_diff(FILE *out, const struct flame_sample *samples, size_t n,
			 const char *title, const char *unit)
{
	return write_svg(out, samples, n, title, unit, 1);
}

void xml_write(FILE *out, const char *s)
{
	write_xml(out, s ? s : "", SIZE_MAX);
}
