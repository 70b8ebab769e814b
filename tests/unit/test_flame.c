/* Unit tests of the flame graph writers: folded text and the interactive SVG. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flame_svg.h"

#define STACK(...) ((const char *const[]){ __VA_ARGS__ })
#define SAMPLE(w, ...)                                                                      \
	{ .frames = STACK(__VA_ARGS__),                                                      \
	  .depth = (int)(sizeof(STACK(__VA_ARGS__)) / sizeof(const char *)), .weight = (w) }

static char *render_folded(const struct flame_sample *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(flame_write_folded(f, s, n), 0);
	fclose(f);
	return buf;
}

static char *render_svg(const struct flame_sample *s, size_t n, const char *title,
			const char *unit)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(flame_write_svg(f, s, n, title, unit), 0);
	fclose(f);
	return buf;
}

static size_t count_substr(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Width of the rect of the frame named name (its data-n), or -1 if not drawn. */
static double frame_width(const char *svg, const char *name)
{
	char key[256];
	double x, y, w;

	snprintf(key, sizeof(key), "data-n=\"%s\"", name);
	const char *p = strstr(svg, key);
	if (!p)
		return -1;
	p = strstr(p, "<rect ");
	if (!p || sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &x, &y, &w) != 3)
		return -1;
	return w;
}

/* Checks svg with xmllint in a private directory under /tmp: 1 well-formed, 0 not, -1 when
 * xmllint is not installed (the caller skips the check). */
static int xml_well_formed(const char *svg)
{
	char dir[] = "/tmp/prof-flame-XXXXXX", path[64], cmd[128];
	int ok;

	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		return -1;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/g.svg", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(svg, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	ok = system(cmd) == 0;
	unlink(path);
	rmdir(dir);
	return ok;
}

static void assert_well_formed(const char *svg)
{
	int ok = xml_well_formed(svg);

	if (ok < 0)
		/* Not cr_log_warn(): Criterion 2.4 exits 1 after any warning. */
		fprintf(stderr, "note: xmllint not installed: well-formedness not checked\n");
	else
		cr_assert_eq(ok, 1, "the SVG is not well-formed XML");
}

Test(flame, folded_exact)
{
	const struct flame_sample s[] = {
		SAMPLE(5, "main", "a"),
		SAMPLE(3, "main", "b;x"),
		SAMPLE(2, "main", "a"),
		SAMPLE(0, "main", "zero"),
		SAMPLE(1, "zeta", "line\nbreak"),
		SAMPLE(4, "main"),
		SAMPLE(6, "a:b"),
		SAMPLE(1, "a;b"),
	};
	char *out = render_folded(s, sizeof(s) / sizeof(s[0]));

	cr_assert_str_eq(out, "a:b 7\n"
			      "main 4\n"
			      "main;a 7\n"
			      "main;b:x 3\n"
			      "zeta;line break 1\n");
	free(out);
}

Test(flame, folded_empty)
{
	const struct flame_sample s[] = { SAMPLE(0, "main") };
	char *out = render_folded(s, 1);

	cr_assert_str_eq(out, "");
	free(out);
	out = render_folded(NULL, 0);
	cr_assert_str_eq(out, "");
	free(out);
}

Test(flame, svg_two_children_ratio)
{
	const struct flame_sample s[] = {
		SAMPLE(30, "main", "left"),
		SAMPLE(10, "main", "right"),
	};
	char *svg = render_svg(s, 2, "Two children", "samples");

	/* all, main, left, right */
	cr_assert_eq(count_substr(svg, "<rect"), 4);
	double all = frame_width(svg, "all"), main_w = frame_width(svg, "main");
	double l = frame_width(svg, "left"), r = frame_width(svg, "right");
	cr_assert_gt(l, 0);
	cr_assert_gt(r, 0);
	cr_assert_float_eq(l / r, 3.0, 1e-3);
	cr_assert_float_eq(main_w, all, 1e-3);
	cr_assert_float_eq(l + r, main_w, 1e-2);
	cr_assert_not_null(strstr(svg, "left \xe2\x80\x94 30 samples (75.00%)"));
	assert_well_formed(svg);
	free(svg);
}

Test(flame, svg_escapes_names_and_title)
{
	const struct flame_sample s[] = {
		SAMPLE(7, "main", "std::vector<int>::push_back(int&&)"),
		SAMPLE(3, "main", "say \"hi\" 'there'"),
		SAMPLE(2, "main", "bad\xff\xfe utf8", "ctl\x01\tchar"),
	};
	char *svg = render_svg(s, 3, "Heap <alloc> & more", "bytes");

	cr_assert_not_null(strstr(svg, "std::vector&lt;int&gt;::push_back(int&amp;&amp;)"));
	cr_assert_not_null(strstr(svg, "say &quot;hi&quot; &apos;there&apos;"));
	cr_assert_not_null(strstr(svg, "Heap &lt;alloc&gt; &amp; more"));
	cr_assert_null(strstr(svg, "vector<int>"));
	cr_assert_null(strstr(svg, "\xff"));
	assert_well_formed(svg);
	free(svg);
}

Test(flame, svg_has_script_controls_and_title)
{
	const struct flame_sample s[] = { SAMPLE(1, "main", "work") };
	char *svg = render_svg(s, 1, "CPU time of demo", "ns");

	cr_assert_not_null(strstr(svg, "<svg "));
	cr_assert_not_null(strstr(svg, "CPU time of demo</text>"));
	cr_assert_not_null(strstr(svg, "<script"));
	cr_assert_not_null(strstr(svg, "function zoom("));
	cr_assert_not_null(strstr(svg, "function search("));
	cr_assert_not_null(strstr(svg, "new RegExp("));
	cr_assert_not_null(strstr(svg, ">Reset zoom</text>"));
	cr_assert_not_null(strstr(svg, ">Search</text>"));
	cr_assert_not_null(strstr(svg, "<style"));
	/* Self-contained: nothing fetched from anywhere. */
	cr_assert_null(strstr(svg, "href"));
	cr_assert_eq(count_substr(svg, "http"), count_substr(svg, "http://www.w3.org/2000/svg"));
	assert_well_formed(svg);
	free(svg);
}

Test(flame, svg_units)
{
	const struct flame_sample b[] = { SAMPLE(1536, "f") };
	const struct flame_sample t[] = { SAMPLE(2500000, "f") };
	const struct flame_sample c[] = { SAMPLE(1234567, "f") };
	const struct flame_sample g[] = { SAMPLE(3ull << 30, "f") };
	char *svg;

	svg = render_svg(b, 1, "b", "bytes");
	cr_assert_not_null(strstr(svg, "f \xe2\x80\x94 1.50 KiB (100.00%)"));
	free(svg);
	svg = render_svg(g, 1, "g", "bytes");
	cr_assert_not_null(strstr(svg, "3.00 GiB"));
	free(svg);
	svg = render_svg(t, 1, "t", "ns");
	cr_assert_not_null(strstr(svg, "f \xe2\x80\x94 2.50 ms (100.00%)"));
	free(svg);
	svg = render_svg(c, 1, "c", "allocations");
	cr_assert_not_null(strstr(svg, "f \xe2\x80\x94 1,234,567 allocations (100.00%)"));
	free(svg);
}

Test(flame, svg_huge_weights)
{
	const struct flame_sample s[] = {
		SAMPLE(UINT64_MAX / 2, "main", "a"),
		SAMPLE(UINT64_MAX / 4, "main", "b"),
	};
	char *svg = render_svg(s, 2, "huge", "samples");

	cr_assert_eq(count_substr(svg, "<rect"), 4);
	cr_assert_float_eq(frame_width(svg, "a") / frame_width(svg, "b"), 2.0, 1e-3);
	assert_well_formed(svg);
	free(svg);
}

Test(flame, svg_prunes_narrow_frames)
{
	const struct flame_sample s[] = {
		SAMPLE(100000, "main", "big"),
		SAMPLE(1, "main", "tiny", "tinier"),
	};
	char *svg = render_svg(s, 2, "pruned", "samples");

	cr_assert_eq(count_substr(svg, "<rect"), 3);
	cr_assert_null(strstr(svg, "tiny"));
	/* Its weight still counts. */
	cr_assert_not_null(strstr(svg, "main \xe2\x80\x94 100,001 samples"));
	free(svg);
}

Test(flame, svg_empty)
{
	const struct flame_sample zero[] = { SAMPLE(0, "main") };
	char *svg = render_svg(NULL, 0, "Nothing", "bytes");

	cr_assert_not_null(strstr(svg, "no data"));
	cr_assert_not_null(strstr(svg, "Nothing"));
	cr_assert_eq(count_substr(svg, "<rect"), 0);
	assert_well_formed(svg);
	free(svg);

	svg = render_svg(zero, 1, "Zero", "bytes");
	cr_assert_not_null(strstr(svg, "no data"));
	free(svg);
}

Test(flame, svg_deep_stack)
{
	enum { DEPTH = 600 };
	static char names[DEPTH][16];
	const char *frames[DEPTH];

	for (int i = 0; i < DEPTH; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		frames[i] = names[i];
	}
	const struct flame_sample s[] = {
		{ .frames = frames, .depth = DEPTH, .weight = 5 },
		{ .frames = frames, .depth = DEPTH / 2, .weight = 5 },
	};
	char *svg = render_svg(s, 2, "deep", "samples");

	cr_assert_eq(count_substr(svg, "<rect"), DEPTH + 1);
	cr_assert_not_null(strstr(svg, "data-n=\"f599\""));
	assert_well_formed(svg);
	free(svg);
}

Test(flame, deterministic)
{
	const struct flame_sample s[] = {
		SAMPLE(3, "main", "a", "x"),
		SAMPLE(2, "main", "b", "x"),
		SAMPLE(1, "main", "a", "x"),
	};
	const struct flame_sample r[] = { s[2], s[1], s[0] };
	char *one = render_svg(s, 3, "d", "samples");
	char *two = render_svg(r, 3, "d", "samples");

	cr_assert_str_eq(one, two);
	/* x has the same colour under a and under b. */
	const char *x1 = strstr(strstr(one, "data-n=\"x\""), "fill=");
	const char *x2 = strstr(strstr(strstr(one, "data-n=\"x\"") + 1, "data-n=\"x\""), "fill=");
	cr_assert_eq(strncmp(x1, x2, 22), 0);
	free(one);
	free(two);
}

Test(flame, write_error_returns_minus_one)
{
	const struct flame_sample s[] = { SAMPLE(1, "main", "work") };
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		cr_skip_test("/dev/full is not available");
	cr_assert_eq(flame_write_svg(f, s, 1, "full", "samples"), -1);
	fclose(f);
	f = fopen("/dev/full", "w");
	cr_assert_not_null(f);
	cr_assert_eq(flame_write_folded(f, s, 1), -1);
	fclose(f);
	f = fopen("/dev/full", "w");
	cr_assert_not_null(f);
	cr_assert_eq(flame_write_svg(f, NULL, 0, "full", "samples"), -1);
	fclose(f);
}

/* 100k distinct stacks over a few hundred names: must finish fast (merging is a sort). */
Test(flame, many_stacks)
{
	enum { N = 100000, NAMES = 500, MAXD = 40 };
	static char names[NAMES][16];
	struct flame_sample *s = calloc(N, sizeof(*s));
	const char **frames = calloc((size_t)N * MAXD, sizeof(*frames));
	char dir[] = "/tmp/prof-flame-XXXXXX", path[64];
	uint64_t rng = 42;

	cr_assert_not_null(s);
	cr_assert_not_null(frames);
	for (int i = 0; i < NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%d", i);
	for (int i = 0; i < N; i++) {
		const char **f = frames + (size_t)i * MAXD;
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		int depth = 2 + (int)((rng >> 33) % (MAXD - 2));
		f[0] = "main";
		for (int d = 1; d < depth; d++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			/* Narrow fan-out near the root, so the stacks share prefixes. */
			int fan = d < 4 ? 3 : NAMES;
			f[d] = names[(rng >> 33) % fan];
		}
		s[i] = (struct flame_sample){ .frames = f, .depth = depth, .weight = 1 + i % 97 };
	}

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/many.svg", dir);
	FILE *out = fopen(path, "w");
	cr_assert_not_null(out);
	cr_assert_eq(flame_write_svg(out, s, N, "many", "bytes"), 0);
	cr_assert_eq(fclose(out), 0);
	unlink(path);

	snprintf(path, sizeof(path), "%s/many.folded", dir);
	out = fopen(path, "w");
	cr_assert_not_null(out);
	cr_assert_eq(flame_write_folded(out, s, N), 0);
	cr_assert_eq(fclose(out), 0);
	unlink(path);
	rmdir(dir);

	free(frames);
	free(s);
}
