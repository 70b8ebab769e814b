/* alloc_bench: a multi-threaded allocation benchmark with varied, deep call stacks.
 *
 *   alloc_bench [THREADS [OPS_PER_THREAD]]      defaults: 1 thread, DEFAULT_OPS operations
 *
 * Each thread runs a deterministic (seeded xorshift) sequence of operations. An operation picks
 * one of NPATHS call paths; a path is a fixed chain of 5..40 calls through eight different
 * non-inlined functions, so the program has a few thousand distinct allocation stacks, far
 * fewer than allocations. At the end of its path an operation allocates 8..4096 bytes (malloc,
 * calloc or realloc; like a real call site, each path has its own typical size, varied a little),
 * fills and checksums the block (some real work, as a real program would do), and then frees
 * it at once or keeps it in a ring of RING live blocks, freeing the block it replaces. At the end
 * every thread frees its ring except the blocks in a few fixed slots (at most RING / LEAK_STRIDE
 * per thread), which leak on purpose. Output (stdout): one line with the leaks and a checksum,
 * the same for every run with the same arguments, whatever the thread scheduling.
 * ALLOC_BENCH_FORK=1: all of it runs in a fork child (a prefork server's worker), which the
 * process waits for.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_OPS 1000000L
#define NPATHS 2048u            /* distinct call paths (each with 3 operation kinds) */
#define RING 4096u              /* live blocks kept per thread */
#define LEAK_STRIDE 1024u       /* ring slots i with i % LEAK_STRIDE == 7 leak at the end */
/* Call depths of the paths: 5 to 40 frames, or ALLOC_BENCH_DEPTH=MIN-MAX (bench/overhead.sh
 * runs 2-6, short stacks, and 40-80, deep ones). */
static int min_depth = 5, max_depth = 40;

struct worker {
	pthread_t thread;
	unsigned index;
	long ops;
	uint64_t rng;
	uint64_t checksum;
	unsigned leaked_blocks;
	size_t leaked_bytes;
	void *ring[RING];
	size_t ring_size[RING];
};

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A fixed hash of (path, level): the shape of a path never changes between runs. */
static inline uint32_t mix32(uint32_t a, uint32_t b)
{
	uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

static size_t pick_size(struct worker *w, uint32_t path)
{
	uint64_t r = xorshift64(&w->rng);
	uint32_t h = mix32(path, 0xabcdu);
	size_t base = (size_t)8 << (h % 10);    /* 8 .. 4096, mostly small */
	size_t size = base / 2 + (size_t)((h >> 8) % (base / 2 + 1)) + (size_t)(r % 4) * 8;
	return size < 8 ? 8 : size > 4096 ? 4096 : size;
}

static void *xcheck(void *p, size_t size)
{
	if (!p) {
		fprintf(stderr, "alloc_bench: out of memory (%zu bytes)\n", size);
		exit(1);
	}
	return p;
}

/* The work a program does with a block: fill it, then read it back. */
static uint64_t use_block(unsigned char *p, size_t size, uint64_t seed)
{
	memset(p, (int)(seed & 0xff), size);
	uint64_t sum = seed;
	for (size_t i = 0; i + 8 <= size; i += 32) {
		uint64_t v;
		memcpy(&v, p + i, sizeof(v));
		sum = (sum ^ v) * 0x100000001b3ull;
	}
	p[size - 1] ^= (unsigned char)sum;
	return sum ^ p[size - 1] ^ size;
}

/* The leaf of every path: one heap operation. kind 0: short-lived block (freed here);
 * 1: block that replaces a ring slot; 2: realloc of a ring slot. */
static __attribute__((noinline)) uint64_t heap_op(struct worker *w, uint32_t path, unsigned kind)
{
	size_t size = pick_size(w, path);
	uint64_t r = xorshift64(&w->rng);
	unsigned slot = (unsigned)(r >> 32) % RING;
	unsigned char *p;

	switch (kind) {
	case 0:
		p = (r & 1) ? xcheck(calloc(size / 8, 8), size) : xcheck(malloc(size), size);
		if (r & 1)
			size = size / 8 * 8;
		{
			uint64_t s = use_block(p, size, r);
			free(p);
			return s;
		}
	case 1:
		p = xcheck(malloc(size), size);
		free(w->ring[slot]);
		w->ring[slot] = p;
		w->ring_size[slot] = size;
		return use_block(p, size, r);
	default:
		p = xcheck(realloc(w->ring[slot], size), size);
		w->ring[slot] = p;
		w->ring_size[slot] = size;
		return use_block(p, size, r);
	}
}

/* Eight different functions that call each other along a path. Each does a little work after
 * the call (no tail calls: every level is a real frame) and differs from the others, so that
 * the compiler folds none of them together. */
typedef uint64_t (*step_fn)(struct worker *w, uint32_t path, unsigned kind, int level, int depth);
static const step_fn steps[8];

static inline uint64_t next(struct worker *w, uint32_t path, unsigned kind, int level, int depth)
{
	if (level >= depth)
		return heap_op(w, path, kind);
	return steps[mix32(path, (uint32_t)level) & 7](w, path, kind, level + 1, depth);
}

#define STEP(name, k)                                                                         \
	static __attribute__((noinline, noclone)) uint64_t name(struct worker *w, uint32_t path, \
								unsigned kind, int level, int depth) \
	{                                                                                     \
		uint64_t r = next(w, path, kind, level, depth);                               \
		__asm__ volatile("" : "+r"(r));                                               \
		return r * (k) + (uint64_t)level;                                             \
	}
STEP(parse_input, 0x9e3779b97f4a7c15ull)
STEP(build_index, 0xbf58476d1ce4e5b9ull)
STEP(resolve_names, 0x94d049bb133111ebull)
STEP(load_config, 0xd6e8feb86659fd93ull)
STEP(render_page, 0xa0761d6478bd642full)
STEP(compress_block, 0xe7037ed1a0b428dbull)
STEP(update_cache, 0x8ebc6af09c88c6e3ull)
STEP(emit_output, 0x589965cc75374cc3ull)

static const step_fn steps[8] = {parse_input, build_index, resolve_names, load_config,
				 render_page, compress_block, update_cache, emit_output};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (long i = 0; i < w->ops; i++) {
		uint64_t r = xorshift64(&w->rng);
		uint32_t path = (uint32_t)(r % NPATHS);
		int depth = min_depth + (int)(mix32(path, 0xffffu) % (unsigned)(max_depth - min_depth + 1));
		/* 60% short-lived, 25% into the ring, 15% realloc */
		unsigned pct = (unsigned)((r >> 40) % 100);
		unsigned kind = pct < 60 ? 0 : pct < 85 ? 1 : 2;
		w->checksum = w->checksum * 31 + next(w, path, kind, 0, depth);
	}
	for (unsigned i = 0; i < RING; i++) {
		if (w->ring[i] && i % LEAK_STRIDE != 7)
			free(w->ring[i]);
		if (w->ring[i] && i % LEAK_STRIDE == 7) { /* leaked on purpose */
			w->leaked_blocks++;
			w->leaked_bytes += w->ring_size[i];
		}
		w->ring[i] = NULL;
	}
	return NULL;
}

static long parse_arg(const char *s, const char *what, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 1 || v > max) {
		fprintf(stderr, "alloc_bench: bad %s '%s' (1..%ld)\n", what, s, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc > 3 || (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
		fprintf(stderr, "usage: alloc_bench [THREADS [OPS_PER_THREAD]]  (defaults 1 %ld)\n",
			DEFAULT_OPS);
		return 2;
	}
	unsigned nthreads = argc > 1 ? (unsigned)parse_arg(argv[1], "thread count", 256) : 1;
	long ops = argc > 2 ? parse_arg(argv[2], "operation count", 1L << 40) : DEFAULT_OPS;
	const char *dv = getenv("ALLOC_BENCH_DEPTH");
	if (dv && (sscanf(dv, "%d-%d", &min_depth, &max_depth) != 2 || min_depth < 1 ||
		   max_depth < min_depth || max_depth > 1000)) {
		fprintf(stderr, "alloc_bench: ALLOC_BENCH_DEPTH=%s: want MIN-MAX (1 <= MIN <= MAX <= 1000)\n", dv);
		return 2;
	}

	const char *fv = getenv("ALLOC_BENCH_FORK");
	if (fv && !strcmp(fv, "1")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("alloc_bench: fork");
			return 1;
		}
		if (pid > 0) {
			int status;
			if (waitpid(pid, &status, 0) != pid)
				return 1;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		}
	}

	struct worker *ws = calloc(nthreads, sizeof(*ws));
	if (!ws) {
		fprintf(stderr, "alloc_bench: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		ws[i].index = i;
		ws[i].ops = ops;
		ws[i].rng = 0x2545f4914f6cdd1dull * (i + 1) | 1;
		int err = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (err) {
			fprintf(stderr, "alloc_bench: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	uint64_t checksum = 0;
	unsigned leaked_blocks = 0;
	size_t leaked_bytes = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(ws[i].thread, NULL);
		checksum = checksum * 1000003u ^ ws[i].checksum;
		leaked_blocks += ws[i].leaked_blocks;
		leaked_bytes += ws[i].leaked_bytes;
	}
	printf("alloc_bench: threads=%u ops_per_thread=%ld leaked_blocks=%u leaked_bytes=%zu "
	       "checksum=%016" PRIx64 "\n",
	       nthreads, ops, leaked_blocks, leaked_bytes, checksum);
	free(ws);
	return 0;
}
