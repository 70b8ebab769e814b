/* The program's own allocator, guarded by a pthread mutex: every malloc of the program, of
 * libc and of the profiler itself goes through the lock hooks. Four threads allocate at once.
 * Prints "allocator 0xADDR" (the mutex). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static _Alignas(64) char arena[256 << 20];
static size_t used;

struct hdr {
	size_t size;
	size_t pad;
};

static void *bump(size_t align, size_t size)
{
	pthread_mutex_lock(&heap_lock);
	size_t off = (used + sizeof(struct hdr) + align - 1) & ~(align - 1);
	if (off + size > sizeof(arena)) {
		pthread_mutex_unlock(&heap_lock);
		errno = ENOMEM;
		return NULL;
	}
	used = off + size;
	pthread_mutex_unlock(&heap_lock);
	struct hdr *h = (struct hdr *)(arena + off) - 1;
	h->size = size;
	return arena + off;
}

void *malloc(size_t size)
{
	return bump(16, size);
}

void free(void *p)
{
	if (p) {
		pthread_mutex_lock(&heap_lock);  /* a real allocator would take its lock here too */
		pthread_mutex_unlock(&heap_lock);
	}
}

void *calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return bump(16, n * size);  /* the arena is zero and never reused */
}

void *realloc(void *old, size_t size)
{
	void *p = malloc(size);
	if (p && old) {
		size_t was = ((struct hdr *)old - 1)->size;
		memcpy(p, old, was < size ? was : size);
	}
	return p;
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = bump(align < 16 ? 16 : align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	return bump(align < 16 ? 16 : align, size);
}

void *memalign(size_t align, size_t size)
{
	return bump(align < 16 ? 16 : align, size);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++)
		free(malloc((size_t)(i % 200) + 1));
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("allocator %p\n", (void *)&heap_lock);
	return 0;
}
