/* CUPTI record conversion: activity records built by hand with the toolkit's own structs
 * (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, External-
 * Correlation), walked by the real cuptiActivityGetNextRecord (no driver needed), and each
 * converted by libprof's cupti_convert(). Exit 0 pass, 1 fail, 77 libcupti not found. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cupti_cbids.h"
#include "cupti_convert.h"
#include "prof_format.h"

static int failures;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

static CUpti_ActivityAPI api(CUpti_ActivityKind kind, uint32_t corr, uint32_t tid, uint64_t start,
			     uint64_t end)
{
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.correlationId = corr;
	a.threadId = tid;
	a.start = start;
	a.end = end;
	return a;
}

/* Linking a static cudart's runtime calls to our ids through the driver calls inside them. */
static void check_links(void)
{
	static struct cupti_links l;
	uint32_t corr;
	uint64_t ext;
	CUpti_ActivityAPI d, r;
	/* driver record first, then the runtime record around it */
	cupti_link_learn(&l, 11, 100);
	d = api(CUPTI_ACTIVITY_KIND_DRIVER, 11, 5, 10, 20);
	CHECK(cupti_link_api(&l, &d, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, 5, 30);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && corr == 10 && ext == 100);
	/* the runtime record delivered first */
	cupti_link_learn(&l, 21, 200);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 20, 6, 5, 30);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	d = api(CUPTI_ACTIVITY_KIND_DRIVER, 21, 6, 10, 20);
	CHECK(cupti_link_api(&l, &d, &corr, &ext) == 1 && corr == 20 && ext == 200);
	/* a hooked (shared) cudart links both records itself: nothing to add */
	cupti_link_learn(&l, 30, 300);
	cupti_link_learn(&l, 31, 300);
	d = api(CUPTI_ACTIVITY_KIND_DRIVER, 31, 7, 10, 20);
	CHECK(cupti_link_api(&l, &d, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 30, 7, 5, 30);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	/* another thread's, or a later, driver call is not inside */
	cupti_link_learn(&l, 41, 400);
	d = api(CUPTI_ACTIVITY_KIND_DRIVER, 41, 8, 10, 20);
	CHECK(cupti_link_api(&l, &d, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 40, 9, 5, 30);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 42, 8, 25, 40);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	/* CUDA 13's static cudart: no driver API record, only our own driver call inside */
	cupti_link_call(&l, 11, 100, 110, 500);
	cupti_link_call(&l, 11 + CUPTI_CALL_RINGS, 101, 109, 600);  /* another thread, same ring */
	cupti_link_call(&l, 11, 120, 130, 700);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 50, 11, 95, 115);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && corr == 50 && ext == 500);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 51, 11, 95, 115);  /* each call joins one */
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 52, 11, 118, 135);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && corr == 52 && ext == 700);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 53, 11 + CUPTI_CALL_RINGS, 100, 110);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && corr == 53 && ext == 600);
	/* a call older than the ring keeps is forgotten, not misjoined */
	for (uint64_t i = 0; i < CUPTI_CALL_SLOTS; i++)
		cupti_link_call(&l, 12, 1000 + 10 * i, 1005 + 10 * i, 800 + i);
	cupti_link_call(&l, 12, 200, 210, 900);
	for (uint64_t i = 0; i < CUPTI_CALL_SLOTS; i++)
		cupti_link_call(&l, 12, 10000 + 10 * i, 10005 + 10 * i, 2000 + i);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 54, 12, 195, 215);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && ext == 0);
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 55, 12, 10009, 10016);
	CHECK(cupti_link_api(&l, &r, &corr, &ext) == 1 && corr == 55 && ext == 2001);
	/* PROF_DEBUG=2's line for an API record */
	char line[160];
	r = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, 5, 30);
	r.cbid = 211;
	cupti_describe(&r, line, sizeof(line));
	CHECK(strcmp(line, "RUNTIME cbid 211 tid 5 5-30 corr 10") == 0);
	/* any other record is not an API record */
	CUpti_ActivityMemset4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	CHECK(cupti_link_api(&l, &m, &corr, &ext) == 0);
}

/* cupti_cbids.h against the toolkit's own enums: each id is a call that starts GPU work
 * (prefix), and each such call of this toolkit is in the table. */
static int is_work_call(const char *name, const char *const *prefixes)
{
	if (strstr(name, "HostFunc"))
		return 0;  /* runs on a CPU thread: no GPU record to join */
	for (; *prefixes; prefixes++)
		if (!strncmp(name, *prefixes, strlen(*prefixes)))
			return 1;
	return 0;
}

static void check_cbids(const char *file, const char *enum_prefix, const char *const *prefixes,
			const uint16_t *ids, size_t n)
{
	char path[512], line[512], name[256];
	snprintf(path, sizeof(path), "%s/%s", CUPTI_INC, file);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static char names[1024][80];
	memset(names, 0, sizeof(names));
	unsigned v;
	char fmt[64];
	snprintf(fmt, sizeof(fmt), " %s%%255[A-Za-z0-9_] = %%u", enum_prefix);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, name, &v) == 2 && v < 1024)
			snprintf(names[v], sizeof(names[v]), "%.79s", name);
	fclose(f);
	int in_table[1024] = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (!is_work_call(names[ids[i]], prefixes))
			fprintf(stderr, "FAIL %s: id %u is %s\n", file, ids[i], names[ids[i]]), failures++;
		in_table[ids[i]] = 1;
	}
	for (unsigned i = 0; i < 1024; i++)
		if (names[i][0] && is_work_call(names[i], prefixes) && !in_table[i])
			fprintf(stderr, "FAIL %s: %s (%u) missing from cupti_cbids.h\n", file, names[i], i),
				failures++;
}

int main(void)
{
	static const char *const rt[] = { "cudaLaunch", "cudaMemcpy", "cudaMemset", "cudaGraphLaunch", NULL };
	static const char *const drv[] = { "cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch", NULL };
	check_cbids("cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_", rt, cupti_runtime_work_cbids,
		    sizeof(cupti_runtime_work_cbids) / sizeof(cupti_runtime_work_cbids[0]));
	check_cbids("cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_", drv, cupti_driver_work_cbids,
		    sizeof(cupti_driver_work_cbids) / sizeof(cupti_driver_work_cbids[0]));
	printf("callback id tables checked, %d failures\n", failures);

	void *h = dlopen("libcupti.so.13", RTLD_NOW);
	if (!h)
		h = dlopen("/usr/local/cuda/lib64/libcupti.so", RTLD_NOW);
	if (!h) {
		printf("libcupti not found: skipped\n");
		return 77;
	}
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **) =
		(CUptiResult (*)(uint8_t *, size_t, CUpti_Activity **))dlsym(h, "cuptiActivityGetNextRecord");
	if (!next)
		return 1;
	static _Alignas(8) uint8_t buf[4096];
	size_t used = 0;
	CUpti_ActivityKernel10 *k = (void *)(buf + used);
	memset(k, 0, sizeof(*k));
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = 1000;
	k->end = 5000;
	k->deviceId = 1;
	k->streamId = 7;
	k->gridX = 4; k->gridY = 2; k->gridZ = 1;
	k->blockX = 128; k->blockY = 1; k->blockZ = 1;
	k->correlationId = 42;
	k->name = "_Z5scaleIfEvPT_i";
	used += sizeof(*k);
	CUpti_ActivityMemcpy6 *m = (void *)(buf + used);
	memset(m, 0, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m->bytes = 1 << 20;
	m->start = 6000;
	m->end = 9000;
	m->correlationId = 43;
	used += sizeof(*m);
	CUpti_ActivityMemcpyPtoP4 *pp = (void *)(buf + used);
	memset(pp, 0, sizeof(*pp));
	pp->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	pp->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	pp->bytes = 4096;
	pp->start = 10000;
	pp->end = 11000;
	pp->correlationId = 44;
	used += sizeof(*pp);
	CUpti_ActivityMemset4 *s = (void *)(buf + used);
	memset(s, 0, sizeof(*s));
	s->kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s->bytes = 512;
	s->start = 12000;
	s->end = 12500;
	s->correlationId = 45;
	used += sizeof(*s);
	CUpti_ActivitySynchronization2 *y = (void *)(buf + used);
	memset(y, 0, sizeof(*y));
	y->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y->start = 13000;
	y->end = 14000;
	y->correlationId = 46;
	used += sizeof(*y);
	CUpti_ActivityExternalCorrelation *x = (void *)(buf + used);
	memset(x, 0, sizeof(*x));
	x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	x->externalId = 777;
	x->correlationId = 42;
	used += sizeof(*x);

	struct cupti_out o[8];
	int n = 0;
	CUpti_Activity *rec = NULL;
	while (n < 8 && next(buf, used, &rec) == CUPTI_SUCCESS)
		CHECK(cupti_convert(rec, &o[n++]) == 0);
	CHECK(n == 6);
	CHECK(o[0].type == PROF_REC_CUDA_GPU && o[0].activity == PROF_CUDA_ACT_KERNEL);
	CHECK(o[0].start == 1000 && o[0].end == 5000 && o[0].corr == 42 && o[0].device == 1 && o[0].stream == 7);
	CHECK(o[0].grid[0] == 4 && o[0].grid[1] == 2 && o[0].block[0] == 128);
	CHECK(o[0].name && !strcmp(o[0].name, "_Z5scaleIfEvPT_i"));
	CHECK(o[1].activity == PROF_CUDA_ACT_COPY && o[1].copy_kind == PROF_CUDA_COPY_DTOH);
	CHECK(o[1].bytes == (1 << 20) && o[1].start == 6000 && o[1].end == 9000 && o[1].corr == 43);
	CHECK(o[2].copy_kind == PROF_CUDA_COPY_PTOP && o[2].bytes == 4096 && o[2].corr == 44);
	CHECK(o[3].copy_kind == PROF_CUDA_COPY_MEMSET && o[3].bytes == 512 && o[3].corr == 45);
	CHECK(o[4].activity == PROF_CUDA_ACT_SYNC && o[4].start == 13000 && o[4].corr == 46);
	CHECK(o[5].type == PROF_REC_CUDA_XCORR && o[5].ext_id == 777 && o[5].corr == 42);
	printf("%d records converted, %d failures\n", n, failures);
	check_links();
	return failures != 0;
}
