/* Summaries on a synthetic trace: a process reduced to its summary gives every family's JSON
 * as before; a summary cut anywhere, or with a byte changed anywhere, is refused or read,
 * never a crash; every family writes and reads its aggregates. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "process.h"
#include "summary.h"
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

TestSuite(summary, .init = setup, .fini = teardown);

#define T0 TG_START_NS
#define MS 1000000ull
#define PAYLOAD(r) ((const uint8_t *)&(r) + sizeof(struct prof_rec)), (sizeof(r) - sizeof(struct prof_rec))

/* Heap (a leak), a contended lock, a read of a named file, CPU samples and blocked time, an
 * MPI call, two threads. */
static void load(struct process *p)
{
	struct tg *tg = tg_create();
	tg_header(tg)->cpu_hz = 999;
	tg_header(tg)->rank = 3;
	const uint64_t f1[] = { 0x1000, 0x2000 }, f2[] = { 0x3000, 0x2000 };
	tg_stack(tg, 2, T0, 1, f1, 2);
	tg_stack(tg, 2, T0, 2, f2, 2);
	tg_thread_start(tg, 2, T0, 1, 100, ~0u, 0, 0);
	tg_thread_start(tg, 4, T0 + MS, 2, 101, 1, 2, 0x3000);
	tg_alloc(tg, 2, T0 + 2 * MS, 0x10000, 100, 1);
	tg_alloc(tg, 2, T0 + 3 * MS, 0x20000, 200, 2);
	tg_free(tg, 2, T0 + 4 * MS, 0x10000);
	for (int i = 1; i <= 5; i++) {
		struct prof_rec_cpu_sample s = { .pc = 0x1000, .period_ns = MS, .stack = 1 };
		tg_rec(tg, 3, PROF_REC_CPU_SAMPLE, 0, T0 + 5 * MS + (uint64_t)i * MS, PAYLOAD(s));
	}
	struct prof_rec_lock_wait lw = { .lock = 0x77, .wait_ns = 5 * MS, .stack = 2,
					 .kind = PROF_LOCK_MUTEX };
	tg_rec(tg, 4, PROF_REC_LOCK_WAIT, PROF_LOCK_OP_LOCK, T0 + 20 * MS, PAYLOAD(lw));
	char payload[256] = { 0 };
	struct prof_rec_io_name io = { .file = 1, .fd = 3, .result = 10, .duration_ns = 2 * MS,
				       .stack = 1 };
	size_t fixed = sizeof(io) - sizeof(struct prof_rec);
	memcpy(payload, (char *)&io + sizeof(struct prof_rec), fixed);
	memcpy(payload + fixed, "/etc/hosts", 11);
	tg_rec(tg, 2, PROF_REC_IO_NAME, PROF_IO_READ, T0 + 30 * MS, payload, fixed + 11);
	struct prof_rec_mpi_call m = { .duration_ns = 10 * MS, .bytes = 800, .peer = -1, .stack = 1 };
	tg_rec(tg, 2, PROF_REC_MPI_CALL, PROF_MPI_Allreduce, T0 + 40 * MS, PAYLOAD(m));
	tg_thread_end(tg, 4, T0 + 60 * MS, 2, 101, 3 * MS, "worker");
	tg_thread_end(tg, 2, T0 + 70 * MS, 1, 100, 20 * MS, "main");
	tg_exit(tg, 2, T0 + 70 * MS, 0, 0);
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

/* Every family's JSON of p, in one object. */
static json_t *all_json(struct process *p)
{
	json_t *o = json_object();
	for (size_t i = 0; families[i]; i++)
		if (families[i]->json)
			json_object_set_new(o, families[i]->json_key, families[i]->json(p, SIZE_MAX));
	return o;
}

/* The summary of load()'s process: its header, then the process. */
static struct sum_out summary_of_load(void)
{
	struct process p;
	load(&p);
	struct sum_out w = { 0 };
	char err[512];
	summary_put_header(&w);
	cr_assert_eq(summary_write_process(&w, &p, err, sizeof(err)), 0, "%s", err);
	process_free(&p);
	return w;
}

Test(summary, a_reduced_process_reports_the_same)
{
	struct process p;
	load(&p);
	json_t *before = all_json(&p);
	char err[512];
	cr_assert_eq(summary_reduce(&p, err, sizeof(err)), 0, "%s", err);
	cr_expect_null(p.sym, "no symbolizer after");
	cr_expect_not_null(p.symtab, "the symbols instead");
	json_t *after = all_json(&p);
	char *a = json_dumps(before, JSON_SORT_KEYS), *b = json_dumps(after, JSON_SORT_KEYS);
	cr_expect_str_eq(a, b);
	cr_expect_eq(p.hdr.rank, 3);
	cr_expect_eq(p.nthreads, 2);
	cr_expect_str_eq(process_thread(&p, 2)->name, "worker");
	free(a);
	free(b);
	json_decref(before);
	json_decref(after);
	process_free(&p);
}

Test(summary, cut_or_changed_anywhere_is_refused_or_read)
{
	struct sum_out w = summary_of_load();
	char err[512];
	struct process *ps = NULL;
	size_t n = 0, cap = 0;
	cr_assert_eq(summary_parse(w.buf, w.len, "x.sum", &ps, &n, &cap, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(n, 1);
	processes_free(ps, n);
	for (size_t len = 0; len < w.len; len++) {
		ps = NULL;
		n = cap = 0;
		int rc = summary_parse(w.buf, len, "x.sum", &ps, &n, &cap, err, sizeof(err));
		/* a cut between sections still holds a whole process */
		if (rc < 0) {
			cr_expect(strstr(err, "x.sum") != NULL, "%s", err);
			cr_expect_eq(n, 0);
		}
		processes_free(ps, n);
	}
	unsigned char *copy = malloc(w.len);
	for (size_t at = 0; at < w.len; at++) {
		memcpy(copy, w.buf, w.len);
		copy[at] ^= 0xff;
		ps = NULL;
		n = cap = 0;
		int rc = summary_parse(copy, w.len, "x.sum", &ps, &n, &cap, err, sizeof(err));
		for (size_t i = 0; rc == 0 && i < n; i++) {  /* whatever was read renders */
			json_t *j = all_json(&ps[i]);
			json_decref(j);
		}
		processes_free(ps, n);
	}
	free(copy);
	free(w.buf);
}

Test(summary, every_family_has_both_hooks)
{
	for (size_t i = 0; families[i]; i++) {
		const struct family *f = families[i];
		cr_expect(f->sum_write && f->sum_read && f->sum_version > 0, "%s", f->name);
	}
}

/* The compatibility paths: a section of a tag this prof does not know is skipped; a family
 * this prof does not know is skipped; a known family's section at another version, and a
 * summary of another version, are refused in one line. */
Test(summary, unknown_sections_skipped_other_versions_refused)
{
	struct sum_out w = summary_of_load();
	char err[512];
	size_t whole = w.len;
	/* a future section: tag 200, 16 bytes */
	sum_put_u32(&w, 200);
	sum_put_u32(&w, 1);
	sum_put_u64(&w, 16);
	sum_put_u64(&w, 0x1122334455667788ull);
	sum_put_u64(&w, 0);
	/* a future family, after the process it belongs to */
	sum_put_u32(&w, 2);
	sum_put_u32(&w, 7);
	sum_put_u64(&w, 4 + 6 + 8);
	sum_put_str(&w, "future");
	sum_put_u64(&w, 42);
	cr_assert(!w.oom);
	struct process *ps = NULL;
	size_t n = 0, cap = 0;
	cr_expect_eq(summary_parse(w.buf, w.len, "x.sum", &ps, &n, &cap, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_eq(n, 1);
	processes_free(ps, n);

	/* the heap's section at version 99 */
	w.len = whole;
	sum_put_u32(&w, 2);
	sum_put_u32(&w, 99);
	sum_put_u64(&w, 4 + 4);
	sum_put_str(&w, "heap");
	ps = NULL;
	n = cap = 0;
	cr_expect_eq(summary_parse(w.buf, w.len, "x.sum", &ps, &n, &cap, err, sizeof(err)), -1);
	cr_expect(strstr(err, "x.sum") && strstr(err, "version"), "%s", err);
	cr_expect_eq(n, 0);
	processes_free(ps, n);

	/* summary version 2 */
	w.len = whole;
	w.buf[8] = 2;
	ps = NULL;
	n = cap = 0;
	cr_expect_eq(summary_parse(w.buf, w.len, "x.sum", &ps, &n, &cap, err, sizeof(err)), -1);
	cr_expect(strstr(err, "version 2"), "%s", err);
	processes_free(ps, n);
	free(w.buf);
}

/* Each family's section of load()'s summary, at the family's sum_version, is as long as a
 * prof of that version made it: a layout changed without a new sum_version (a field added
 * to a struct written whole) would make summaries of other builds read as damaged, and
 * theirs of ours. A family that changes its layout on purpose takes a new sum_version and
 * its line here. */
Test(summary, a_sections_layout_changes_only_with_its_version)
{
	static const struct { const char *name; uint32_t version; uint64_t len; } known[] = {
		{ "cpu", 1, 4931 }, { "heap", 2, 5992 }, { "locks", 2, 225 }, { "io", 2, 3512 },
		{ "cuda", 1, 8432 }, { "db", 1, 1602 }, { "http", 1, 48 }, { "mpi", 1, 791 },
	};
	struct sum_out w = summary_of_load();
	cr_assert(!w.oom);
	size_t seen = 0;
	for (size_t off = 16; off + 16 <= w.len;) {
		uint32_t tag, version, namelen;
		uint64_t len;
		memcpy(&tag, w.buf + off, 4);
		memcpy(&version, w.buf + off + 4, 4);
		memcpy(&len, w.buf + off + 8, 8);
		cr_assert_leq(len, w.len - off - 16);
		if (tag == 2) {
			memcpy(&namelen, w.buf + off + 16, 4);
			char name[32] = "";
			memcpy(name, w.buf + off + 20, namelen < 31 ? namelen : 31);
			for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
				if (!strcmp(known[i].name, name)) {
					seen++;
					cr_expect_eq(version, known[i].version, "%s: version %u", name, version);
					cr_expect_eq(len, known[i].len, "%s at version %u: %lu bytes, not %lu",
						     name, version, (unsigned long)len,
						     (unsigned long)known[i].len);
				}
		}
		off += 16 + len;
	}
	cr_expect_eq(seen, sizeof(known) / sizeof(known[0]), "every family's section");
	free(w.buf);
}
