/* The Python frame walker (preload/python.c) on frame chains built by hand in each version's
 * layout: frames are read in order and split where a run of the evaluation loop starts; a
 * chain that loops, or that points into unmapped memory, ends the walk without a fault. */
#include "ctest.h"
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof_format.h"
#include "python.h"

TestSuite(python_walk, .timeout = 30);

static char fake_code_type[64];  /* stands for &PyCode_Type */

struct fake {
	_Alignas(16) unsigned char code[3][512];
	_Alignas(16) unsigned char frame[6][128];
};

static void put(unsigned char *at, unsigned off, uintptr_t v)
{
	memcpy(at + off, &v, sizeof(v));
}

/* Code object i: its type, first traceable instruction 0. */
static void make_code(const struct py_layout *L, struct fake *f, int i)
{
	memset(f->code[i], 0, sizeof(f->code[i]));
	put(f->code[i], 8, (uintptr_t)fake_code_type);
	int zero = 0;
	memcpy(f->code[i] + L->co_firsttraceable, &zero, sizeof(zero));
}

/* Frame i runs code c at instruction lasti, called by `previous`. */
static void make_frame(const struct py_layout *L, struct fake *f, int i, int c, int lasti,
		       void *previous, int owner, int entry)
{
	memset(f->frame[i], 0, sizeof(f->frame[i]));
	put(f->frame[i], L->fr_code, (uintptr_t)f->code[c]);
	put(f->frame[i], L->fr_previous, (uintptr_t)previous);
	put(f->frame[i], L->fr_instr, (uintptr_t)f->code[c] + L->co_code_adaptive + 2u * (unsigned)lasti);
	f->frame[i][L->fr_owner] = (unsigned char)owner;
	if (L->fr_is_entry >= 0)
		f->frame[i][L->fr_is_entry] = (unsigned char)entry;
}

/* A chain of two runs of the loop: frames 0,1 (inner run), then 2 (outer run). */
static void two_runs(const struct py_layout *L, struct fake *f)
{
	for (int c = 0; c < 3; c++)
		make_code(L, f, c);
	make_frame(L, f, 2, 2, 7, NULL, 0, 1);
	if (L->owner_cstack >= 0) {  /* 3.12+: each run starts with an entry frame of its own */
		make_frame(L, f, 4, 0, 0, f->frame[2], L->owner_cstack, 0);
		make_frame(L, f, 1, 1, 5, f->frame[4], 0, 0);
	} else {
		make_frame(L, f, 1, 1, 5, f->frame[2], 0, 1);
	}
	make_frame(L, f, 0, 0, 3, f->frame[1], 0, 0);
}

static void check_two_runs(const struct py_layout *L)
{
	static struct fake f;
	two_runs(L, &f);
	uintptr_t codes[8];
	int32_t lastis[8];
	int segs[8];
	int n = prof_py_walk_from(L, (uintptr_t)f.frame[0], (uintptr_t)fake_code_type, codes, lastis,
				  segs, 8);
	cr_assert_eq(n, 3, "3.%u: %d frames", L->minor, n);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(codes[i], (uintptr_t)f.code[i], "3.%u frame %d", L->minor, i);
	cr_expect_eq(lastis[0], 3);
	cr_expect_eq(lastis[1], 5);
	cr_expect_eq(lastis[2], 7);
	cr_expect_eq(segs[0], 0, "3.%u", L->minor);
	cr_expect_eq(segs[1], 0, "3.%u", L->minor);
	cr_expect_eq(segs[2], 1, "3.%u: the outer run is the next loop frame's", L->minor);
}

Test(python_walk, chain_split_into_runs)
{
	check_two_runs(&prof_py_layout_311);
	check_two_runs(&prof_py_layout_312);
	check_two_runs(&prof_py_layout_313);
}

static void check_loop(const struct py_layout *L)
{
	static struct fake f;
	two_runs(L, &f);
	put(f.frame[2], L->fr_previous, (uintptr_t)f.frame[0]);  /* the oldest calls the newest */
	uintptr_t codes[200];
	int32_t lastis[200];
	int segs[200];
	int n = prof_py_walk_from(L, (uintptr_t)f.frame[0], (uintptr_t)fake_code_type, codes, lastis,
				  segs, 200);
	cr_assert_eq(n, -1, "3.%u: a looping chain is refused (%d)", L->minor, n);
}

Test(python_walk, loop_ends_the_walk)
{
	check_loop(&prof_py_layout_311);
	check_loop(&prof_py_layout_312);
	check_loop(&prof_py_layout_313);
}

static void check_unmapped(const struct py_layout *L)
{
	static struct fake f;
	two_runs(L, &f);
	long page = sysconf(_SC_PAGESIZE);
	void *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(gone, MAP_FAILED);
	munmap(gone, (size_t)page);
	put(f.frame[1], L->fr_previous, (uintptr_t)gone);  /* past frame 1: nothing mapped */
	uintptr_t codes[8];
	int32_t lastis[8];
	int segs[8];
	int n = prof_py_walk_from(L, (uintptr_t)f.frame[0], (uintptr_t)fake_code_type, codes, lastis,
				  segs, 8);
	cr_assert_eq(n, -1, "3.%u: %d", L->minor, n);
	/* garbage where a frame should be: a pointer to random bytes, misaligned, or to a code
	 * object of another type */
	put(f.frame[1], L->fr_previous, (uintptr_t)f.frame[2] + 3);
	n = prof_py_walk_from(L, (uintptr_t)f.frame[0], (uintptr_t)fake_code_type, codes, lastis, segs, 8);
	cr_assert_eq(n, -1, "3.%u: a misaligned frame is refused (%d)", L->minor, n);
	put(f.frame[1], L->fr_previous, (uintptr_t)f.frame[2]);
	put(f.frame[2], L->fr_code, (uintptr_t)f.frame[3]);  /* zeros: no code type */
	n = prof_py_walk_from(L, (uintptr_t)f.frame[0], (uintptr_t)fake_code_type, codes, lastis, segs, 8);
	if (L->minor < 13)
		cr_assert_eq(n, -1, "3.%u: a frame without a code object ends the walk (%d)", L->minor, n);
	else
		cr_assert_eq(n, 2, "3.13: a frame running something else is skipped (%d)", n);
}

Test(python_walk, unmapped_or_garbage_ends_the_walk)
{
	check_unmapped(&prof_py_layout_311);
	check_unmapped(&prof_py_layout_312);
	check_unmapped(&prof_py_layout_313);
}

/* ---- splicing: each run of Python frames just inside its loop frame ---------------------- */

#define LOOP 0x1000u  /* loop frames are addresses in [LOOP, LOOP + 0x100) */
#define PY(id, i) ((void *)(uintptr_t)PROF_PY_FRAME(id, i))

static void expect_frames(void **got, int n, void *const *want, int wn)
{
	cr_assert_eq(n, wn, "%d frames, expected %d", n, wn);
	for (int i = 0; i < n; i++)
		cr_expect_eq(got[i], want[i], "frame %d: %p, expected %p", i, got[i], want[i]);
}

Test(python_walk, runs_go_inside_their_loop_frames)
{
	/* native, innermost first: a, loop1, b, loop2, main; Python: 7, 8 (run 0), 9 (run 1) */
	void *frames[16] = { (void *)0x10, (void *)0x1010, (void *)0x20, (void *)0x1020, (void *)0x30 };
	const uint32_t ids[] = { 7, 8, 9 };
	const int32_t segs[] = { 0, 0, 1 };
	int n = prof_py_merge_for_test(frames, 5, 16, LOOP, LOOP + 0x100, ids, segs, 3);
	void *const want[] = { (void *)0x10, PY(7, 0), PY(8, 1), (void *)0x1010, (void *)0x20,
			       PY(9, 2), (void *)0x1020, (void *)0x30 };
	expect_frames(frames, n, want, 8);
}

Test(python_walk, empty_runs_extra_runs_and_the_cap)
{
	/* run 0 is empty (a frame being set up), run 2 has no loop frame (the native stack was
	 * cut): it is left out */
	void *frames[16] = { (void *)0x1010, (void *)0x20, (void *)0x1020, (void *)0x30 };
	const uint32_t ids[] = { 5, 6 };
	const int32_t segs[] = { 1, 2 };
	int n = prof_py_merge_for_test(frames, 4, 16, LOOP, LOOP + 0x100, ids, segs, 2);
	void *const want[] = { (void *)0x1010, (void *)0x20, PY(5, 0), (void *)0x1020, (void *)0x30 };
	expect_frames(frames, n, want, 5);
	/* room for 4: the outermost frame goes */
	void *small[4] = { (void *)0x10, (void *)0x1010, (void *)0x20, (void *)0x30 };
	const uint32_t ids2[] = { 1, 2 };
	const int32_t segs2[] = { 0, 0 };
	n = prof_py_merge_for_test(small, 4, 4, LOOP, LOOP + 0x100, ids2, segs2, 2);
	void *const want2[] = { (void *)0x10, PY(1, 0), PY(2, 1), (void *)0x1010 };
	expect_frames(small, n, want2, 4);
	/* no loop frame: nothing changes */
	void *plain[4] = { (void *)0x10, (void *)0x20 };
	n = prof_py_merge_for_test(plain, 2, 4, LOOP, LOOP + 0x100, ids2, segs2, 2);
	void *const want3[] = { (void *)0x10, (void *)0x20 };
	expect_frames(plain, n, want3, 2);
}
