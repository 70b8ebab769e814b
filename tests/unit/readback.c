/* See readback.h. */
#include "unit/readback.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t arena[1u << 20];
static size_t arena_used;

/* Copies the record of ev into the arena and points ev at the copy, having checked that the
 * record is the file's bytes at ev->offset. */
static void keep(struct trace *t, struct trace_event *ev)
{
	uint32_t size = ev->rec->size;
	size_t words = (size + 7) / 8;
	cr_assert_leq(arena_used + words, sizeof(arena) / 8, "arena full");
	uint64_t *copy = arena + arena_used;
	arena_used += words;
	memcpy(copy, ev->rec, size);
	FILE *f = fopen(trace_path(t), "rb");
	cr_assert_not_null(f);
	static uint8_t disk[1u << 20];
	cr_assert_leq(size, sizeof(disk));
	cr_assert_eq(fseeko(f, (off_t)ev->offset, SEEK_SET), 0);
	cr_assert_eq(fread(disk, 1, size, f), size);
	fclose(f);
	cr_assert_eq(memcmp(disk, copy, size), 0, "the record at offset %lu",
		     (unsigned long)ev->offset);
	ev->rec = (const void *)copy;
}

size_t readback_all(struct trace *t, struct trace_event *evs, size_t max)
{
	char err[512] = "";
	size_t n = 0;
	int rc;
	arena_used = 0;
	while ((rc = trace_next(t, &evs[n], err, sizeof(err))) == 1) {
		keep(t, &evs[n]);
		n++;
		cr_assert_lt(n, max);
	}
	cr_assert_eq(rc, 0, "trace_next: %s", err);
	return n;
}
