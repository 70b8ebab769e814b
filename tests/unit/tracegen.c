/* tracegen: builds synthetic trace files in memory and writes them out (see tracegen.h). */
#include "tracegen.h"
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tg_stream {
	uint32_t id;
	uint32_t tid;
	uint32_t next_seq;
	int has_chunk;
	uint64_t chunk;  /* index of the chunk (its first unit, with runs) being filled */
	uint32_t pos;    /* next free byte in it */
	uint32_t span;   /* its bytes */
	uint32_t next_units;  /* runs: units of the stream's next chunk, 0 for the default */
};

struct tg_range {
	uint64_t first, count;
};

struct tg {
	struct prof_file_header h;
	char *exe, *host;
	char **argv;
	int argc;
	uint32_t header_extra;
	uint8_t *data;  /* nchunks * chunk_size bytes: the chunks (units), in claim order */
	uint64_t nchunks, cap;
	struct tg_stream *streams;
	size_t nstreams;
	int runs;            /* PROF_FEAT_CHUNK_RUNS layout */
	uint32_t run_units;  /* default units of a new chunk with runs */
	struct tg_range *free;  /* units given back (tg_shrink), handed to later chunks first */
	size_t nfree;
};

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tracegen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		die("out of memory");
	return p;
}

struct tg *tg_create(void)
{
	struct tg *tg = xrealloc(NULL, sizeof(*tg));
	memset(tg, 0, sizeof(*tg));
	tg->h = (struct prof_file_header){
		.magic = PROF_MAGIC,
		.version = PROF_FORMAT_VERSION,
		.min_version = PROF_FORMAT_MIN_VERSION,
		.chunk_size = 4096,
		.pid = 4242,
		.ppid = 1,
		.start_realtime_ns = 1700000000000000000ull,
		.start_ns = TG_START_NS,
		.clock_id = 1,
		.state = PROF_STATE_EXITED,
		.events = PROF_EV_ALL,
		.stack_depth = 64,
		.rank = -1,
	};
	tg->exe = xstrdup("/bin/test");
	tg->host = xstrdup("testhost");
	static const char *const argv[] = {"/bin/test", "--flag"};
	tg_set_argv(tg, 2, argv);
	return tg;
}

static void free_argv(struct tg *tg)
{
	for (int i = 0; i < tg->argc; i++)
		free(tg->argv[i]);
	free(tg->argv);
	tg->argv = NULL;
	tg->argc = 0;
}

void tg_destroy(struct tg *tg)
{
	if (!tg)
		return;
	free(tg->exe);
	free(tg->host);
	free_argv(tg);
	free(tg->data);
	free(tg->streams);
	free(tg->free);
	free(tg);
}

struct prof_file_header *tg_header(struct tg *tg) { return &tg->h; }

void tg_set_exe(struct tg *tg, const char *exe)
{
	free(tg->exe);
	tg->exe = xstrdup(exe);
}

void tg_set_host(struct tg *tg, const char *host)
{
	free(tg->host);
	tg->host = xstrdup(host);
}

void tg_set_argv(struct tg *tg, int argc, const char *const *argv)
{
	free_argv(tg);
	tg->argv = xrealloc(NULL, sizeof(char *) * (size_t)(argc > 0 ? argc : 1));
	for (int i = 0; i < argc; i++)
		tg->argv[i] = xstrdup(argv[i]);
	tg->argc = argc;
}

void tg_set_header_extra(struct tg *tg, uint32_t n) { tg->header_extra = n; }

/* Size of the string area, and of the header (fixed part, extra, strings; rounded to 8). */
static uint32_t strings_size(const struct tg *tg)
{
	size_t n = strlen(tg->exe) + 1 + strlen(tg->host) + 1;
	for (int i = 0; i < tg->argc; i++)
		n += strlen(tg->argv[i]) + 1;
	return (uint32_t)n;
}

static uint32_t header_size(const struct tg *tg)
{
	return prof_align8((uint32_t)sizeof(struct prof_file_header) + tg->header_extra +
			   strings_size(tg));
}

static uint32_t data_offset(const struct tg *tg)
{
	return (header_size(tg) + 4095u) & ~4095u;
}

uint64_t tg_chunk_offset(const struct tg *tg, uint64_t i)
{
	return data_offset(tg) + i * tg->h.chunk_size;
}

uint64_t tg_chunk_count(const struct tg *tg) { return tg->nchunks; }

static struct tg_stream *get_stream(struct tg *tg, uint32_t id);

/* n consecutive chunks (units), zeroed: from the ranges given back first (the lowest that
 * fits, split), else at the end. Returns the first. */
static uint64_t claim_n(struct tg *tg, uint64_t n)
{
	uint64_t cs = tg->h.chunk_size;
	for (size_t i = 0; i < tg->nfree; i++) {
		if (tg->free[i].count < n)
			continue;
		uint64_t first = tg->free[i].first;
		tg->free[i].first += n;
		tg->free[i].count -= n;
		if (!tg->free[i].count)
			tg->free[i] = tg->free[--tg->nfree];
		memset(tg->data + first * cs, 0, n * cs);
		return first;
	}
	while (tg->nchunks + n > tg->cap) {
		tg->cap = tg->cap ? tg->cap * 2 : 8;
		tg->data = xrealloc(tg->data, tg->cap * cs);
	}
	memset(tg->data + tg->nchunks * cs, 0, n * cs);
	tg->nchunks += n;
	return tg->nchunks - n;
}

static uint64_t claim(struct tg *tg) { return claim_n(tg, 1); }

uint64_t tg_claim_empty(struct tg *tg) { return claim_n(tg, 1); }

void tg_set_runs(struct tg *tg, uint32_t unit, uint32_t run_units)
{
	if (tg->nchunks)
		die("tg_set_runs after the first record");
	tg->runs = 1;
	tg->run_units = run_units ? run_units : 1;
	tg->h.features |= PROF_FEAT_CHUNK_RUNS;
	tg->h.chunk_size = unit;
}

void tg_new_run(struct tg *tg, uint32_t stream, uint32_t units)
{
	struct tg_stream *s = get_stream(tg, stream);
	s->has_chunk = 0;
	s->next_units = units;
}

uint64_t tg_chunk_units_offset(const struct tg *tg, uint32_t stream)
{
	for (size_t i = 0; i < tg->nstreams; i++)
		if (tg->streams[i].id == stream && tg->streams[i].has_chunk)
			return tg_chunk_offset(tg, tg->streams[i].chunk) +
			       offsetof(struct prof_chunk_header_run, units);
	die("stream %u has no chunk", stream);
}

void tg_shrink(struct tg *tg, uint32_t stream, uint32_t units)
{
	struct tg_stream *s = get_stream(tg, stream);
	uint32_t unit = tg->h.chunk_size, have = s->span / unit;
	if (units == 0 && s->has_chunk)
		units = (s->pos + unit - 1) / unit;
	if (!tg->runs || !s->has_chunk || units == 0 || units > have ||
	    (uint64_t)units * unit < s->pos)
		die("cannot shrink stream %u's chunk to %u units", stream, units);
	if (units == have)
		return;
	struct prof_chunk_header_run *ch = (void *)(tg->data + s->chunk * unit);
	ch->units = units;
	s->span = units * unit;
	tg->free = xrealloc(tg->free, (tg->nfree + 1) * sizeof(*tg->free));
	tg->free[tg->nfree++] = (struct tg_range){ s->chunk + units, have - units };
}

static struct tg_stream *get_stream(struct tg *tg, uint32_t id)
{
	for (size_t i = 0; i < tg->nstreams; i++)
		if (tg->streams[i].id == id)
			return &tg->streams[i];
	tg->streams = xrealloc(tg->streams, (tg->nstreams + 1) * sizeof(*tg->streams));
	struct tg_stream *s = &tg->streams[tg->nstreams++];
	*s = (struct tg_stream){.id = id, .tid = tg->h.pid + id / 2};
	return s;
}

void tg_set_tid(struct tg *tg, uint32_t stream, uint32_t tid) { get_stream(tg, stream)->tid = tid; }

void tg_new_chunk(struct tg *tg, uint32_t stream) { get_stream(tg, stream)->has_chunk = 0; }

/* Room for len bytes in the stream's chunk, starting a new chunk if needed; returns the
 * record's place in tg->data. */
static uint8_t *reserve(struct tg *tg, uint32_t stream, size_t len, uint64_t *offset)
{
	uint32_t cs = tg->h.chunk_size;
	if (cs < (tg->runs ? 1024u : 4096u) || (cs & (cs - 1)))
		die("chunk_size %u is not usable for building", cs);
	if (!tg->runs && len > cs - sizeof(struct prof_chunk_header))
		die("record of %zu bytes does not fit in a %u-byte chunk", len, cs);
	struct tg_stream *s = get_stream(tg, stream);
	if (!s->has_chunk || s->pos + len > s->span) {
		if (tg->runs) {
			uint64_t need = (sizeof(struct prof_chunk_header_run) + len + cs - 1) / cs;
			uint64_t units = s->next_units ? s->next_units : tg->run_units;
			if (units < need)
				units = need;
			uint64_t c = claim_n(tg, units);
			struct prof_chunk_header_run ch = {
				.magic = PROF_CHUNK_MAGIC, .stream = stream, .seq = s->next_seq++,
				.tid = s->tid, .units = (uint32_t)units,
			};
			memcpy(tg->data + c * cs, &ch, sizeof(ch));
			s->chunk = c;
			s->pos = sizeof(ch);
			s->span = (uint32_t)(units * cs);
			s->next_units = 0;
		} else {
			uint64_t c = claim(tg);
			struct prof_chunk_header ch = {
				.magic = PROF_CHUNK_MAGIC, .stream = stream, .seq = s->next_seq++,
				.tid = s->tid,
			};
			memcpy(tg->data + c * cs, &ch, sizeof(ch));
			s->chunk = c;
			s->pos = sizeof(ch);
			s->span = cs;
		}
		s->has_chunk = 1;
	}
	uint8_t *p = tg->data + s->chunk * cs + s->pos;
	*offset = tg_chunk_offset(tg, s->chunk) + s->pos;
	s->pos += (uint32_t)len;
	return p;
}

uint64_t tg_raw(struct tg *tg, uint32_t stream, const void *bytes, size_t len)
{
	uint64_t off;
	uint8_t *p = reserve(tg, stream, len, &off);
	memcpy(p, bytes, len);
	return off;
}

uint64_t tg_rec(struct tg *tg, uint32_t stream, uint16_t type, uint16_t flags, uint64_t time,
		const void *payload, size_t payload_len)
{
	size_t size = prof_align8((uint32_t)(sizeof(struct prof_rec) + payload_len));
	uint64_t off;
	uint8_t *p = reserve(tg, stream, size, &off);
	struct prof_rec h = {.type = type, .flags = flags, .size = (uint32_t)size, .time = time};
	memset(p, 0, size);
	memcpy(p, &h, sizeof(h));
	if (payload)
		memcpy(p + sizeof(h), payload, payload_len);
	return off;
}

/* Writes a fixed-size record struct whose payload follows its prefix `h`. */
#define REC(tg, stream, type, flags, time, st) \
	tg_rec(tg, stream, type, flags, time, (const uint8_t *)&(st) + sizeof(struct prof_rec), \
	       sizeof(st) - sizeof(struct prof_rec))

uint64_t tg_alloc_fn(struct tg *tg, uint32_t stream, uint64_t time, enum prof_alloc_fn fn,
		     uint64_t ptr, uint64_t size, uint32_t stack)
{
	struct prof_rec_alloc r = {.ptr = ptr, .size = size, .stack = stack};
	return REC(tg, stream, PROF_REC_ALLOC, (uint16_t)fn, time, r);
}

uint64_t tg_alloc(struct tg *tg, uint32_t stream, uint64_t time, uint64_t ptr, uint64_t size,
		  uint32_t stack)
{
	return tg_alloc_fn(tg, stream, time, PROF_ALLOC_MALLOC, ptr, size, stack);
}

static uint64_t free_rec(struct tg *tg, uint32_t stream, uint64_t time, uint64_t ptr,
			 uint16_t flags)
{
	struct prof_rec_free r = {.ptr = ptr};
	return REC(tg, stream, PROF_REC_FREE, flags, time, r);
}

uint64_t tg_free(struct tg *tg, uint32_t stream, uint64_t time, uint64_t ptr)
{
	return free_rec(tg, stream, time, ptr, 0);
}

uint64_t tg_realloc(struct tg *tg, uint32_t stream, uint64_t time, uint64_t old_ptr,
		    uint64_t new_ptr, uint64_t size, uint32_t stack)
{
	free_rec(tg, stream, time, old_ptr, PROF_FREE_REALLOC);
	return tg_alloc_fn(tg, stream, time, PROF_ALLOC_REALLOC, new_ptr, size, stack);
}

uint64_t tg_stack(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id,
		  const uint64_t *frames, uint32_t depth)
{
	size_t len = 8 + 8 * (size_t)depth;
	uint8_t buf[8 + 8 * PROF_MAX_STACK_DEPTH];
	if (depth > PROF_MAX_STACK_DEPTH)
		die("stack depth %u", depth);
	memcpy(buf, &id, 4);
	memcpy(buf + 4, &depth, 4);
	if (depth)
		memcpy(buf + 8, frames, 8 * (size_t)depth);
	return tg_rec(tg, stream, PROF_REC_STACK, 0, time, buf, len);
}

uint64_t tg_module(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id, uint64_t start,
		   uint64_t end, uint64_t bias, const uint8_t *build_id, uint32_t build_id_len,
		   const char *path)
{
	struct prof_rec_module m = {
		.start = start, .end = end, .bias = bias, .id = id, .build_id_len = build_id_len,
	};
	if (build_id)
		memcpy(m.build_id, build_id, build_id_len < 24 ? build_id_len : 24);
	size_t fixed = sizeof(m) - sizeof(struct prof_rec), plen = strlen(path) + 1;
	uint8_t *buf = xrealloc(NULL, fixed + plen);
	memcpy(buf, (uint8_t *)&m + sizeof(struct prof_rec), fixed);
	memcpy(buf + fixed, path, plen);
	uint64_t off = tg_rec(tg, stream, PROF_REC_MODULE, 0, time, buf, fixed + plen);
	free(buf);
	return off;
}

uint64_t tg_module_unload(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id)
{
	struct prof_rec_module_unload r = {.id = id};
	return REC(tg, stream, PROF_REC_MODULE_UNLOAD, 0, time, r);
}

uint64_t tg_thread_start(struct tg *tg, uint32_t stream, uint64_t time, uint32_t serial,
			 uint32_t tid, uint32_t parent_serial, uint32_t stack,
			 uint64_t start_routine)
{
	struct prof_rec_thread_start r = {
		.serial = serial, .tid = tid, .parent_serial = parent_serial, .stack = stack,
		.start_routine = start_routine,
	};
	return REC(tg, stream, PROF_REC_THREAD_START, 0, time, r);
}

uint64_t tg_thread_end(struct tg *tg, uint32_t stream, uint64_t time, uint32_t serial,
		       uint32_t tid, uint64_t cpu_ns, const char *name)
{
	struct prof_rec_thread_end r = {.serial = serial, .tid = tid, .cpu_ns = cpu_ns};
	if (name)
		strncpy(r.name, name, sizeof(r.name) - 1);
	return REC(tg, stream, PROF_REC_THREAD_END, 0, time, r);
}

uint64_t tg_exit(struct tg *tg, uint32_t stream, uint64_t time, uint32_t how, int32_t code)
{
	struct prof_rec_exit r = {.how = how, .code = code};
	return REC(tg, stream, PROF_REC_EXIT, 0, time, r);
}

uint64_t tg_exec(struct tg *tg, uint32_t stream, uint64_t time, const char *path)
{
	return tg_rec(tg, stream, PROF_REC_EXEC, 0, time, path, strlen(path) + 1);
}

uint64_t tg_fork(struct tg *tg, uint32_t stream, uint64_t time, uint32_t child_pid)
{
	struct prof_rec_fork r = {.child_pid = child_pid};
	return REC(tg, stream, PROF_REC_FORK, 0, time, r);
}

uint64_t tg_lost(struct tg *tg, uint32_t stream, uint64_t time, uint64_t records)
{
	struct prof_rec_lost r = {.records = records};
	return REC(tg, stream, PROF_REC_LOST, 0, time, r);
}

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("%s: write: %s", path, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void tg_write(struct tg *tg, const char *path)
{
	uint32_t hsize = header_size(tg), doff = data_offset(tg), ssize = strings_size(tg);
	uint8_t *head = xrealloc(NULL, doff);
	memset(head, 0, doff);

	tg->h.header_size = hsize;
	tg->h.data_offset = doff;
	tg->h.chunks_claimed = tg->nchunks;
	tg->h.argc = (uint32_t)tg->argc;
	tg->h.strings_offset = (uint32_t)sizeof(tg->h) + tg->header_extra;
	tg->h.strings_size = ssize;
	memcpy(head, &tg->h, sizeof(tg->h));
	memset(head + sizeof(tg->h), 0xa5, tg->header_extra);
	char *s = (char *)head + tg->h.strings_offset;
	s = stpcpy(s, tg->exe) + 1;
	s = stpcpy(s, tg->host) + 1;
	for (int i = 0; i < tg->argc; i++)
		s = stpcpy(s, tg->argv[i]) + 1;

	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	write_all(fd, head, doff, path);
	write_all(fd, tg->data, tg->nchunks * tg->h.chunk_size, path);
	if (close(fd) < 0)
		die("%s: close: %s", path, strerror(errno));
	free(head);
}

void tg_patch(const char *path, uint64_t offset, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	if (pwrite(fd, bytes, len, (off_t)offset) != (ssize_t)len)
		die("%s: pwrite at %llu: %s", path, (unsigned long long)offset, strerror(errno));
	close(fd);
}

void tg_truncate(const char *path, uint64_t size)
{
	if (truncate(path, (off_t)size) < 0)
		die("%s: truncate: %s", path, strerror(errno));
}

void tg_tmpdir(char *buf, size_t len)
{
	if (snprintf(buf, len, "/tmp/prof-test-XXXXXX") >= (int)len)
		die("tmpdir buffer too small");
	if (!mkdtemp(buf))
		die("mkdtemp: %s", strerror(errno));
}

void tg_tmpdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

int tg_load(struct tg *tg, const char *dir, struct process *p, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	tg_write(tg, path);
	tg_destroy(tg);
	return process_load(path, p, err, errlen);
}
