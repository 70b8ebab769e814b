/* The process model on synthetic traces: module lookups by address (loaded now or ever, the
 * latest mapping winning) against a brute-force reference, thread lookups by serial, records
 * routed to their family by the table, and the commands' shared option parsing. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "family.h"
#include "heap.h"
#include "process.h"
#include "tracegen.h"

static char dir[PATH_MAX];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(process_model, .init = setup, .fini = teardown);

#define T0 TG_START_NS

static void load(struct tg *tg, struct process *p)
{
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

struct mod {
	uint64_t start, end;
	uint32_t id;
	int present;
};

/* What process_module_at() must answer, by scanning every module, latest first. */
static uint32_t reference(const struct mod *m, size_t n, uint64_t addr, int loaded_only)
{
	for (size_t i = n; i-- > 0;)
		if ((m[i].present || !loaded_only) && addr >= m[i].start && addr < m[i].end)
			return m[i].id;
	return ~0u;
}

Test(process_model, module_lookup_latest_mapping_wins)
{
	struct tg *tg = tg_create();
	tg_module(tg, 0, T0 + 1, 1, 0x10000, 0x20000, 0, NULL, 0, "/a");
	tg_module(tg, 0, T0 + 2, 2, 0x30000, 0x40000, 0, NULL, 0, "/b");
	tg_module(tg, 0, T0 + 3, 3, 0x18000, 0x19000, 0, NULL, 0, "/inside-a");
	const uint64_t frames[] = { 0x18800, 0x10010, 0x30000, 0x50000 };
	tg_stack(tg, 0, T0 + 4, 1, frames, 4);
	tg_module_unload(tg, 0, T0 + 5, 3);
	tg_exit(tg, 0, T0 + 10, 0, 0);
	struct process p;
	load(tg, &p);
	/* The stack was recorded while /inside-a was mapped over part of /a. */
	const struct stack_info *s = process_stack(&p, 1);
	cr_assert_not_null(s);
	cr_expect_eq(s->modules[0], 3);
	cr_expect_eq(s->modules[1], 1);
	cr_expect_eq(s->modules[2], 2);
	cr_expect_eq(s->modules[3], ~0u, "no module there");
	/* After the unload: loaded ones give /a back, all ever seen still /inside-a. */
	cr_expect_eq(process_module_at(&p, 0x18800, 1), 1);
	cr_expect_eq(process_module_at(&p, 0x18800, 0), 3);
	cr_expect_eq(process_module_at(&p, 0x1ffff, 1), 1);
	cr_expect_eq(process_module_at(&p, 0x20000, 1), ~0u, "end is exclusive");
	cr_expect_eq(process_module_at(&p, 0xffff, 0), ~0u);
	cr_expect_eq(process_module_at(&p, UINT64_MAX, 0), ~0u);
	process_free(&p);
}

Test(process_model, module_lookup_agrees_with_a_scan_of_many_modules)
{
	enum { N = 600, PROBES = 4000 };
	struct mod *m = calloc(N, sizeof(*m));
	cr_assert_not_null(m);
	struct tg *tg = tg_create();
	srand(7);
	uint64_t t = T0;
	for (size_t i = 0; i < N; i++) {
		/* In random order, some overlapping earlier ones, some unloaded later. */
		uint64_t start = (uint64_t)(rand() % 100000) * 0x1000;
		uint64_t len = (uint64_t)(1 + rand() % (i % 7 == 0 ? 64 : 4)) * 0x1000;
		m[i] = (struct mod){ start, start + len, (uint32_t)(i + 1), 1 };
		tg_module(tg, 0, ++t, m[i].id, m[i].start, m[i].end, 0, NULL, 0, "/lib");
		if (i > 10 && rand() % 5 == 0) {
			size_t victim = (size_t)rand() % i;
			if (m[victim].present) {
				m[victim].present = 0;
				tg_module_unload(tg, 0, ++t, m[victim].id);
			}
		}
	}
	tg_exit(tg, 0, ++t, 0, 0);
	struct process p;
	load(tg, &p);
	for (int i = 0; i < PROBES; i++) {
		uint64_t addr = (uint64_t)(rand() % 101000) * 0x1000 + (uint64_t)(rand() % 0x1000);
		for (int loaded = 0; loaded < 2; loaded++)
			cr_assert_eq(process_module_at(&p, addr, loaded), reference(m, N, addr, loaded),
				     "addr 0x%llx loaded_only %d", (unsigned long long)addr, loaded);
	}
	process_free(&p);
	free(m);
}

Test(process_model, threads_found_by_serial)
{
	enum { N = 3000 };
	struct tg *tg = tg_create();
	for (uint32_t s = 1; s <= N; s++)
		tg_thread_start(tg, s * 2, T0 + s, s, 5000 + s, s - 1, 0, 0);
	tg_thread_end(tg, 2 * 1234, T0 + N + 1, 1234, 5000 + 1234, 77, "worker");
	tg_exit(tg, 0, T0 + N + 2, 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_eq(p.nthreads, N);
	for (uint32_t s = 1; s <= N; s += 97) {
		struct thread_info *th = process_thread(&p, s);
		cr_assert_not_null(th);
		cr_expect_eq(th->tid, 5000 + s);
		cr_expect_eq(th->parent_serial, s - 1);
	}
	cr_expect_str_eq(process_thread(&p, 1234)->name, "worker");
	cr_expect_eq(process_thread(&p, 1234)->cpu_ns, 77);
	cr_expect_null(process_thread(&p, N + 1));
	cr_expect_null(process_thread(&p, 0));
	process_free(&p);
}

/* A STACK_TAIL is its own frames, then its parent's outermost `shared` frames; a parent that
 * is missing (lost with its chunk) or shorter than said leaves its own frames only. */
static void stack_tail(struct tg *tg, uint32_t id, const uint64_t *own, uint32_t depth,
		       uint32_t parent, uint32_t shared)
{
	uint8_t buf[16 + 8 * 8];
	memcpy(buf, &id, 4);
	memcpy(buf + 4, &depth, 4);
	memcpy(buf + 8, &parent, 4);
	memcpy(buf + 12, &shared, 4);
	memcpy(buf + 16, own, 8 * depth);
	tg_rec(tg, 0, PROF_REC_STACK_TAIL, 0, TG_START_NS + 10, buf, 16 + 8 * depth);
}

Test(process_model, stack_tails_take_their_parents_outer_frames)
{
	struct tg *tg = tg_create();
	const uint64_t full[] = { 0x10, 0x20, 0x30, 0x40 }, own[] = { 0x11, 0x12 };
	tg_stack(tg, 0, TG_START_NS, 7, full, 4);
	stack_tail(tg, 8, own, 2, 7, 3);    /* 0x11 0x12 0x20 0x30 0x40 */
	stack_tail(tg, 9, own, 1, 8, 4);    /* a tail of a tail: 0x11 0x12 0x20 0x30 0x40 */
	stack_tail(tg, 10, own, 2, 99, 3);  /* no such parent */
	stack_tail(tg, 11, own, 2, 7, 5);   /* more than the parent has */
	stack_tail(tg, 12, own, 0, 7, 2);   /* nothing of its own: 0x30 0x40 */
	tg_exit(tg, 0, TG_START_NS + 20, 0, 0);
	struct process p;
	char err[512];
	cr_assert_eq(tg_load(tg, dir, &p, err, sizeof(err)), 0, "%s", err);
	const struct { uint32_t id, depth; uint64_t frames[5]; } want[] = {
		{ 8, 5, { 0x11, 0x12, 0x20, 0x30, 0x40 } },
		{ 9, 5, { 0x11, 0x12, 0x20, 0x30, 0x40 } },
		{ 10, 2, { 0x11, 0x12 } },
		{ 11, 2, { 0x11, 0x12 } },
		{ 12, 2, { 0x30, 0x40 } },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct stack_info *s = u64map_get(&p.stacks, want[i].id);
		cr_assert_not_null(s, "stack %u", want[i].id);
		cr_assert_eq(s->depth, want[i].depth, "stack %u: depth %u", want[i].id, s->depth);
		for (uint32_t k = 0; k < s->depth; k++)
			cr_expect_eq(s->frames[k], want[i].frames[k], "stack %u frame %u", want[i].id, k);
	}
	process_free(&p);
}

Test(process_model, records_reach_the_family_that_owns_them)
{
	/* Every known record type in a family's range routes to that family, and none other. */
	for (unsigned type = 1; type < 256; type++) {
		const struct family *f = family_of_type(type);
		size_t owners = 0;
		for (size_t i = 0; families[i]; i++)
			if ((type >= families[i]->first_type && type <= families[i]->last_type) ||
			    (families[i]->more_first && type >= families[i]->more_first &&
			     type <= families[i]->more_last)) {
				owners++;
				cr_expect_eq(f, families[i], "type %u", type);
			}
		cr_expect_leq(owners, 1, "type %u claimed twice", type);
		if (!owners)
			cr_expect_null(f, "type %u", type);
	}
	cr_expect_eq(family_of_type(PROF_REC_ALLOC), &heap_family);
	cr_expect_eq(family_of_type(PROF_REC_FREE), &heap_family);
	cr_expect_eq(family_of_type(PROF_REC_LEAK_SCAN), &heap_family);
	cr_expect_eq(family_of_type(PROF_REC_LEAK_BLOCKS), &heap_family);
	cr_expect_null(family_of_type(PROF_REC_STACK), "core records stay with the process");
	cr_expect_null(family_of_type(70000));
	/* Every family has what process_load() and the commands call unconditionally. */
	for (size_t i = 0; families[i]; i++) {
		const struct family *f = families[i];
		cr_expect(f->name && f->state_size && f->init && f->free && f->on_record &&
			  f->has_data, "%s", f->name);
		cr_expect(!f->json || f->json_key, "%s", f->name);
		cr_expect_eq(family_index(f), i);
		for (size_t k = 0; k < f->nflames; k++)
			cr_expect((f->flames[k].collect || f->flame_labeled) &&
				  f->flames[k].weights[0].by, "%s", f->name);
	}
}

static int parse(const struct cmd_spec *spec, struct cmd_opts *o, ...)
{
	static char *argv[16];  /* o->traces points into it */
	int argc = 0;
	va_list ap;
	va_start(ap, o);
	for (char *a; (a = va_arg(ap, char *)) && argc < 15;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return cmd_parse(spec, argc, argv, o);
}

Test(process_model, options_are_parsed_and_checked_alike)
{
	const struct cmd_spec spec = { "report", CMD_OUTPUT | CMD_JSON | CMD_TOP | CMD_FRAMES, 6,
				       "usage\n" };
	struct cmd_opts o;
	cr_assert_eq(parse(&spec, &o, "report", "--json", "a.trace", "--top", "3", "-o", "f",
			   "b.trace", NULL), -1);
	cr_expect(o.json);
	cr_expect(o.top_given);
	cr_expect_eq(o.top, 3);
	cr_expect_eq(o.frames, 6, "the command's default");
	cr_expect_str_eq(o.outfile, "f");
	cr_assert_eq(o.ntraces, 2, "options may follow the traces");
	cr_expect_str_eq(o.traces[0], "a.trace");
	cr_expect_str_eq(o.traces[1], "b.trace");

	cr_assert_eq(parse(&spec, &o, "report", "x", NULL), -1);
	cr_expect_eq(o.top, SIZE_MAX);
	cr_expect_not(o.top_given);

	cr_expect_eq(parse(&spec, &o, "report", "--top", "abc", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "--top", "-1", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "--top=7z", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "--frames", "0", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "--frames", NULL), 2, "a missing value");
	cr_expect_eq(parse(&spec, &o, "report", "--csv", "x", NULL), 2, "not this command's");
	cr_expect_eq(parse(&spec, &o, "report", "--kind", "io", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "-z", "x", NULL), 2);
	cr_expect_eq(parse(&spec, &o, "report", "--help", NULL), 0);
	cr_assert_eq(parse(&spec, &o, "report", "--", "--json", NULL), -1);
	cr_expect_not(o.json, "after --, a trace named --json");
	cr_expect_eq(o.ntraces, 1);
}
