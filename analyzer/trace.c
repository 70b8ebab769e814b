/* The trace reader: reads a trace file with pread() (it never maps it), or a compressed one
 * (prof pack) through a bounded cache of its decompressed frames (zpack.c), validates its header
 * and chunk index, and merges the per-thread streams by time with a binary heap in one
 * streaming pass. The file is untrusted: every size is checked before use, in uint64 arithmetic
 * that cannot overflow, and a read that comes back short (the file was cut or changed while
 * read) is an error like any other. Memory is proportional to the number of chunks (the index)
 * plus, per stream with records left, one window of its current chunk (WINDOW bytes, more only
 * for a record larger than that); never to the file's length or the number of records. Reads
 * both chunk layouts: fixed-size chunks, and runs of units (PROF_FEAT_CHUNK_RUNS). Rules:
 * shared/FORMAT.md. */
#include "trace.h"
#include "format.h"
#include "prof_short.h"
#include "zpack.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_OFFSET UINT64_MAX
#define MAX_CHUNK_SIZE (64u * 1024u * 1024u)
#define DATA_ALIGN 4096u
#ifndef WINDOW
#define WINDOW (64u << 10)  /* bytes of its current chunk a stream reads at a time, at most */
#endif
#define WINDOW_FIRST 4096u  /* ... at first: a stream's window doubles at each read up to WINDOW,
			     * so streams that wait (many threads) hold little */
#define INDEX_BLOCK (256u << 10) /* bytes of the data area read at once to find chunk headers */
#define INDEX_PEEK 4096u         /* ... or after a large chunk, where the next header is alone */
#define INDEX_LARGE (16u << 10)  /* a chunk from this size on is skipped by a peek */
#define NO_CHUNK SIZE_MAX
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 512  /* bytes ahead of a stream's head record to prefetch */
#endif

/* One written chunk; sorted by (stream, seq) so each stream is a contiguous run. */
struct chunk {
	uint64_t offset;
	uint32_t stream;
	uint32_t seq;
	uint32_t tid;
	uint32_t units;  /* its length in chunk_size units: 1 without PROF_FEAT_CHUNK_RUNS */
};

/* A stream's read cursor: the chunk it is in, the position of its next record there, and a
 * window of that chunk read into buf: bytes [wpos, wend) of chunks[wchunk] (the window starts
 * at a record). buf is allocated when the stream is first read and freed when it ends. */
struct stream {
	size_t first, end;  /* its chunks: chunks[first .. end) */
	size_t cur;         /* chunk being read */
	uint64_t pos;       /* offset of the head record within chunks[cur] */
	uint64_t span;      /* bytes of chunks[cur] */
	uint64_t base;      /* file offset of chunks[cur] */
	size_t wchunk;      /* the chunk the window holds, NO_CHUNK for none */
	uint64_t wpos, wend;
	uint8_t *buf;
	size_t cap;         /* bytes allocated at buf */
	uint32_t wnext;     /* bytes the next window reads, at most */
	uint32_t id;
	uint32_t tid;       /* of chunks[cur] */
	const struct prof_rec *head;  /* the head record: in buf, or dec for a short record */
	uint32_t head_len;  /* its length in the file */
	struct prof_short_base sbase;  /* short records' base in chunks[cur] (prof_short.h) */
	struct prof_short_cuda cuda;   /* ... and its CUDA bases (sbase.cuda) */
	union prof_short_rec dec;      /* a short record's ordinary form */
};

struct heap_ent {
	uint64_t time;  /* the stream's head record's time */
	uint32_t id;    /* its stream id: ties go to the lower one */
	uint32_t index; /* in trace.streams */
};

struct trace {
	char *path;
	int fd;
	struct zsrc *z;       /* a compressed trace (zpack.h), read through its frames; else NULL */
	uint64_t size;        /* of the raw trace (decompressed) */
	uint64_t units;       /* chunks (units) present: chunks_claimed, less what a cut lost */
	uint64_t promised;    /* bytes the header promises, when the file is shorter; else 0 */
	const struct prof_file_header *hdr;  /* &hdr_copy once checked */
	struct prof_file_header hdr_copy;
	char *strings;  /* the string area */
	const char *exe, *host;
	const char **argv;
	uint32_t argc;
	uint32_t chunk_size;  /* a chunk's size, or with runs the unit */
	uint32_t chunk_hdr;   /* bytes of chunk header before the first record: 16, or 24 with runs */
	int runs;             /* PROF_FEAT_CHUNK_RUNS */
	int shorts;           /* PROF_FEAT_SHORT_RECORDS */

	struct chunk *chunks;
	size_t nchunks;
	struct stream *streams;
	size_t nstreams;
	struct heap_ent *heap;  /* one per stream with records left: min-heap on (time, id) */
	size_t nheap;
	int started;
	int pending;     /* the heap top was handed out and must advance first */
	int failed;
	char errmsg[512];
};

/* "PATH: offset N: message" (or "PATH: message" when off is NO_OFFSET) into err. */
static void __attribute__((format(printf, 5, 6)))
seterr(char *err, size_t errlen, const char *path, uint64_t off, const char *fmt, ...)
{
	char where[PATH_MAX + 48];
	if (off == NO_OFFSET)
		snprintf(where, sizeof(where), "%s", path);
	else
		snprintf(where, sizeof(where), "%s: offset %" PRIu64, path, off);
	va_list ap;
	va_start(ap, fmt);
	fmt_where_verror(err, errlen, where, fmt, ap);
	va_end(ap);
}

static uint64_t rd64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Reads len bytes at file offset off into buf, retrying after signals. Fewer bytes than asked
 * (end of file) mean the file was cut or replaced since it was opened: an error at off, like a
 * failed read. 0, or -1 with the message in err. */
static int read_at(const struct trace *t, void *buf, size_t len, uint64_t off, char *err,
		   size_t errlen)
{
	if (t->z)
		return zsrc_read(t->z, buf, len, off, err, errlen);
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(t->fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (n > 0) {
			got += (size_t)n;
		} else if (n == 0) {
			seterr(err, errlen, t->path, off,
			       "short read: %zu of %zu bytes (file truncated or changed while reading)",
			       got, len);
			return -1;
		} else if (errno != EINTR) {
			seterr(err, errlen, t->path, off, "read: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- header ---- */

/* Reads the string area and finds exe, host and argv in it; the area lies inside the header
 * and ends in a NUL, so walking it stays inside the copy. */
static int parse_strings(struct trace *t, char *err, size_t errlen)
{
	const struct prof_file_header *h = t->hdr;
	uint64_t off = h->strings_offset, sz = h->strings_size;

	if (off < sizeof(*h) || sz == 0 || off + sz > h->header_size) {
		seterr(err, errlen, t->path, NO_OFFSET,
		       "bad header: string area (offset %" PRIu64 ", %" PRIu64
		       " bytes) is not inside the header (%u bytes)",
		       off, sz, h->header_size);
		return -1;
	}
	if (!(t->strings = malloc(sz))) {
		seterr(err, errlen, t->path, NO_OFFSET, "out of memory");
		return -1;
	}
	if (read_at(t, t->strings, sz, off, err, errlen) < 0)
		return -1;
	const char *s = t->strings, *end = s + sz;
	if (end[-1] != '\0') {
		seterr(err, errlen, t->path, off, "bad header: string area is not NUL-terminated");
		return -1;
	}
	uint64_t need = (uint64_t)h->argc + 2, have = 0;
	for (const char *p = s; p < end && have < need; p += strlen(p) + 1)
		have++;
	if (have < need) {
		seterr(err, errlen, t->path, off,
		       "bad header: string area holds %" PRIu64 " strings, need %" PRIu64
		       " (exe, host and %u argv)", have, need, h->argc);
		return -1;
	}
	t->argc = h->argc;
	t->argv = calloc(t->argc ? t->argc : 1, sizeof(*t->argv));
	if (!t->argv) {
		seterr(err, errlen, t->path, NO_OFFSET, "out of memory");
		return -1;
	}
	t->exe = s;
	t->host = s + strlen(s) + 1;
	const char *p = t->host + strlen(t->host) + 1;
	for (uint32_t i = 0; i < t->argc; i++) {
		t->argv[i] = p;
		p += strlen(p) + 1;
	}
	return 0;
}

static int check_header(struct trace *t, char *err, size_t errlen)
{
	const struct prof_file_header *h = &t->hdr_copy;
	const char *path = t->path;

	if (t->size == 0) {
		seterr(err, errlen, path, NO_OFFSET, "empty file");
		return -1;
	}
	if (read_at(t, &t->hdr_copy, t->size < sizeof(*h) ? (size_t)t->size : sizeof(*h), 0, err,
		    errlen) < 0)
		return -1;
	if (t->size >= sizeof(h->magic)) {
		uint64_t magic = h->magic;
		if (magic == PROF_MAGIC_SWAPPED) {
			seterr(err, errlen, path, NO_OFFSET,
			       "written on a big-endian machine (byte-swapped magic); not supported");
			return -1;
		}
		if (magic != PROF_MAGIC) {
			seterr(err, errlen, path, NO_OFFSET, "not a libprof trace (bad magic)");
			return -1;
		}
	}
	if (t->size < sizeof(*h)) {
		seterr(err, errlen, path, NO_OFFSET,
		       "shorter than the header: %" PRIu64 " bytes, need %zu", t->size, sizeof(*h));
		return -1;
	}
	t->hdr = h;
	if (h->min_version > PROF_FORMAT_VERSION) {
		unsigned v = h->version > h->min_version ? h->version : h->min_version;
		seterr(err, errlen, path, NO_OFFSET,
		       "written by a newer libprof (format %u, this prof reads up to %d)",
		       v, PROF_FORMAT_VERSION);
		return -1;
	}
	uint64_t unknown = h->features & PROF_FEAT_REQUIRED_MASK & ~PROF_FEAT_KNOWN_REQUIRED;
	if (unknown) {
		seterr(err, errlen, path, NO_OFFSET,
		       "uses required features 0x%" PRIx64 " this prof does not know "
		       "(written by a newer libprof?)", unknown);
		return -1;
	}
	if (h->header_size < sizeof(*h)) {
		seterr(err, errlen, path, NO_OFFSET,
		       "bad header: header_size %u is smaller than the header (%zu)",
		       h->header_size, sizeof(*h));
		return -1;
	}
	if (h->header_size > t->size) {
		seterr(err, errlen, path, NO_OFFSET,
		       "truncated: %" PRIu64 " bytes, header_size is %u", t->size, h->header_size);
		return -1;
	}
	uint32_t cs = h->chunk_size;
	t->runs = (h->features & PROF_FEAT_CHUNK_RUNS) != 0;
	t->shorts = (h->features & PROF_FEAT_SHORT_RECORDS) != 0;
	uint32_t min_cs = t->runs ? 1024 : 4096;
	if (cs < min_cs || cs > MAX_CHUNK_SIZE || (cs & (cs - 1))) {
		seterr(err, errlen, path, NO_OFFSET,
		       "bad header: chunk_size %u (must be a power of two from %u to 64 MiB)", cs,
		       min_cs);
		return -1;
	}
	t->chunk_size = cs;
	t->chunk_hdr = t->runs ? sizeof(struct prof_chunk_header_run) : sizeof(struct prof_chunk_header);
	if (h->data_offset < h->header_size || h->data_offset % DATA_ALIGN) {
		seterr(err, errlen, path, NO_OFFSET,
		       "bad header: data_offset %u (must be a multiple of %u and >= header_size %u)",
		       h->data_offset, DATA_ALIGN, h->header_size);
		return -1;
	}
	if (parse_strings(t, err, errlen) < 0)
		return -1;

	/* A SIGKILLed writer leaves a full-length file: only a file cut short (a copy, a full
	 * disk) lacks chunks. It is read as far as it goes; trace_promised() tells. */
	uint64_t n = h->chunks_claimed;
	t->units = n;
	if (n) {
		uint64_t room = t->size > h->data_offset ? t->size - h->data_offset : 0;
		if (n > room / cs) {
			if (n > (UINT64_MAX - h->data_offset) / cs) {
				seterr(err, errlen, path, NO_OFFSET,
				       "truncated: %" PRIu64 " bytes, header promises %" PRIu64
				       " chunks of %u bytes", t->size, n, cs);
				return -1;
			}
			t->promised = h->data_offset + n * cs;
			t->units = room / cs;
		}
	}
	return 0;
}

/* ---- chunk index ---- */

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Where walk_chunks() reads the data area: blocks of it, [off, off + len) at buf. */
struct index_block {
	uint8_t *buf;
	uint64_t off;
	size_t len;
};

/* The chunk header at off, with `need` bytes of it, out of the block, which is read anew when
 * it does not hold them: INDEX_BLOCK bytes when the headers are close together (small chunks),
 * INDEX_PEEK after a large chunk, where reading up to the next header would read the chunk.
 * Never past `end`, the end of the data area. */
static const uint8_t *index_at(struct trace *t, struct index_block *b, uint64_t off, uint64_t end,
			       size_t need, uint64_t last_span, char *err, size_t errlen)
{
	if (off >= b->off && off + need <= b->off + b->len)
		return b->buf + (off - b->off);
	size_t len = last_span >= INDEX_LARGE ? INDEX_PEEK : INDEX_BLOCK;
	if (len > end - off)
		len = (size_t)(end - off);  /* >= need: a chunk or unit is >= 1024 bytes */
	b->off = off;
	b->len = 0;
	if (read_at(t, b->buf, len, off, err, errlen) < 0)
		return NULL;
	b->len = len;
	return b->buf;
}

/* Walks the data area chunk by chunk: a zero magic is a unit (chunk) never written, a chunk
 * header says how many units it spans (always 1 without runs). Records the written chunks in
 * t->chunks, grown as they come (a file still being written may gain some while this runs:
 * it takes those it reads). */
static int walk_chunks(struct trace *t, char *err, size_t errlen)
{
	uint64_t n = t->units;  /* fits in the file: checked by check_header() */
	uint64_t cs = t->chunk_size, data = t->hdr->data_offset, end = data + n * cs;
	uint64_t last_span = 0;
	size_t cap = 0;
	struct index_block b = { .buf = NULL };
	int rc = -1;

	if (n && !(b.buf = malloc(INDEX_BLOCK))) {
		seterr(err, errlen, t->path, NO_OFFSET, "out of memory");
		return -1;
	}
	for (uint64_t i = 0; i < n;) {
		uint64_t off = data + i * cs;
		const uint8_t *p = index_at(t, &b, off, end, t->chunk_hdr, last_span, err, errlen);
		if (!p)
			goto out;
		struct prof_chunk_header_run c = { 0 };  /* units: 0 without runs, not read */
		memcpy(&c, p, t->chunk_hdr);
		uint32_t units = 1;
		if (c.magic != 0) {
			if (c.magic != PROF_CHUNK_MAGIC) {
				seterr(err, errlen, t->path, off, "bad chunk magic 0x%08x", c.magic);
				goto out;
			}
			if (t->runs) {
				units = c.units;
				if (t->promised && units > n - i)
					units = (uint32_t)(n - i);  /* the cut went through it */
				if (units == 0 || units > n - i) {
					seterr(err, errlen, t->path, off,
					       "bad chunk: spans %u units, %" PRIu64
					       " left in the data area", units, n - i);
					goto out;
				}
			}
			if (t->nchunks == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct chunk *nc = realloc(t->chunks, ncap * sizeof(*nc));
				if (!nc) {
					seterr(err, errlen, t->path, NO_OFFSET,
					       "out of memory (%zu chunks)", ncap);
					goto out;
				}
				t->chunks = nc;
				cap = ncap;
			}
			t->chunks[t->nchunks++] = (struct chunk){
				.offset = off, .stream = c.stream, .seq = c.seq,
				.tid = c.tid, .units = units,
			};
		}
		i += units;
		last_span = units * cs;
	}
	rc = 0;
out:
	free(b.buf);
	return rc;
}

static int index_chunks(struct trace *t, char *err, size_t errlen)
{
	if (walk_chunks(t, err, errlen) < 0)
		return -1;
	if (t->nchunks)
		qsort(t->chunks, t->nchunks, sizeof(*t->chunks), cmp_chunk);

	size_t ns = 0;
	for (size_t i = 0; i < t->nchunks; i++) {
		if (i && t->chunks[i].stream == t->chunks[i - 1].stream) {
			if (t->chunks[i].seq == t->chunks[i - 1].seq) {
				seterr(err, errlen, t->path, t->chunks[i].offset,
				       "chunk seq %u of stream %u appears twice (also at offset %" PRIu64
				       ")", t->chunks[i].seq, t->chunks[i].stream,
				       t->chunks[i - 1].offset);
				return -1;
			}
			continue;
		}
		ns++;
	}
	t->streams = calloc(ns ? ns : 1, sizeof(*t->streams));
	t->heap = calloc(ns ? ns : 1, sizeof(*t->heap));
	if (!t->streams || !t->heap) {
		seterr(err, errlen, t->path, NO_OFFSET, "out of memory (%zu streams)", ns);
		return -1;
	}
	for (size_t i = 0; i < t->nchunks; i++) {
		if (i && t->chunks[i].stream == t->chunks[i - 1].stream)
			continue;
		struct stream *s = &t->streams[t->nstreams++];
		s->first = i;
		s->id = t->chunks[i].stream;
	}
	for (size_t k = 0; k < t->nstreams; k++)
		t->streams[k].end = k + 1 < t->nstreams ? t->streams[k + 1].first : t->nchunks;
	return 0;
}

/* ---- open / close ---- */

void trace_close(struct trace *t)
{
	if (!t)
		return;
	zsrc_close(t->z);
	if (t->fd >= 0)
		close(t->fd);
	for (size_t i = 0; i < t->nstreams; i++)
		free(t->streams[i].buf);
	free(t->strings);
	free(t->argv);
	free(t->chunks);
	free(t->streams);
	free(t->heap);
	free(t->path);
	free(t);
}

struct trace *trace_open(const char *path, char *err, size_t errlen)
{
	struct trace *t = calloc(1, sizeof(*t));
	if (!t) {
		seterr(err, errlen, path, NO_OFFSET, "out of memory");
		return NULL;
	}
	t->fd = -1;
	t->path = strdup(path);
	if (!t->path) {
		seterr(err, errlen, path, NO_OFFSET, "out of memory");
		goto fail;
	}
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0) {
		seterr(err, errlen, path, NO_OFFSET, "%s", strerror(errno));
		goto fail;
	}
	struct stat st;
	if (fstat(t->fd, &st) < 0) {
		seterr(err, errlen, path, NO_OFFSET, "%s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, path, NO_OFFSET, "not a regular file");
		goto fail;
	}
	t->size = (uint64_t)st.st_size;
	uint8_t head[4];
	if (t->size >= sizeof(head) && read_at(t, head, sizeof(head), 0, err, errlen) == 0 &&
	    zpack_is_compressed(head, sizeof(head))) {
		if (!(t->z = zsrc_open(t->fd, t->size, t->path, err, errlen)))
			goto fail;
		t->size = zsrc_raw_size(t->z);
	}
	if (check_header(t, err, errlen) < 0 || index_chunks(t, err, errlen) < 0)
		goto fail;
	trace_rewind(t);
	return t;
fail:
	trace_close(t);
	return NULL;
}

uint64_t trace_promised(const struct trace *t)
{
	return t->promised;
}

uint64_t trace_size(const struct trace *t)
{
	return t->size;
}

const struct prof_file_header *trace_header(const struct trace *t) { return t->hdr; }
const char *trace_path(const struct trace *t) { return t->path; }
const char *trace_exe(const struct trace *t) { return t->exe; }
const char *trace_host(const struct trace *t) { return t->host; }
uint32_t trace_argc(const struct trace *t) { return t->argc; }

const char *trace_argv(const struct trace *t, uint32_t i)
{
	return i < t->argc ? t->argv[i] : NULL;
}

/* ---- records ---- */

/* Checks the record r, read from file offset off (its prefix is nonzero and it lies in a chunk
 * with `room` bytes from off to the chunk's end; all of it that lies in the chunk is in memory,
 * and at least its first 16 bytes, or `room` if less). Returns 0 or -1 with the message in
 * t->errmsg. */
static int check_record(struct trace *t, const struct prof_rec *r, uint64_t off, uint64_t room)
{
	const char *what = NULL;
	char buf[96];

	if (room < sizeof(*r)) {
		what = "record prefix crosses the chunk end";
	} else if (r->size < sizeof(*r)) {
		snprintf(buf, sizeof(buf), "record size %u is smaller than 16", r->size);
		what = buf;
	} else if (r->size % 8) {
		snprintf(buf, sizeof(buf), "record size %u is not a multiple of 8", r->size);
		what = buf;
	} else if (r->size > room) {
		snprintf(buf, sizeof(buf), "record size %u runs past the chunk end (%" PRIu64
			 " bytes left)", r->size, room);
		what = buf;
	} else if (prof_rec_known(r->type) &&
		   r->size < prof_rec_min_size(r->type)) {
		snprintf(buf, sizeof(buf), "%s record size %u is smaller than %u",
			 prof_rec_type_name(r->type), r->size, prof_rec_min_size(r->type));
		what = buf;
	} else if (r->type == PROF_REC_STACK) {
		const struct prof_rec_stack *s = (const void *)r;
		if (s->depth > PROF_MAX_STACK_DEPTH) {
			snprintf(buf, sizeof(buf), "STACK depth %u is over %d", s->depth,
				 PROF_MAX_STACK_DEPTH);
			what = buf;
		} else if (sizeof(*s) + 8ull * s->depth > r->size) {
			snprintf(buf, sizeof(buf), "STACK depth %u does not fit in size %u",
				 s->depth, r->size);
			what = buf;
		}
	} else if (r->type == PROF_REC_STACK_TAIL) {
		const struct prof_rec_stack_tail *s = (const void *)r;
		if (s->depth > PROF_MAX_STACK_DEPTH || s->shared > PROF_MAX_STACK_DEPTH ||
		    s->depth + s->shared > PROF_MAX_STACK_DEPTH) {
			snprintf(buf, sizeof(buf), "STACK_TAIL depth %u + shared %u is over %d",
				 s->depth, s->shared, PROF_MAX_STACK_DEPTH);
			what = buf;
		} else if (sizeof(*s) + 8ull * s->depth > r->size) {
			snprintf(buf, sizeof(buf), "STACK_TAIL depth %u does not fit in size %u",
				 s->depth, r->size);
			what = buf;
		}
	} else if (r->type == PROF_REC_MODULE &&
		   ((const struct prof_rec_module *)r)->build_id_len > 20) {
		snprintf(buf, sizeof(buf), "MODULE build_id_len %u is over 20",
			 ((const struct prof_rec_module *)r)->build_id_len);
		what = buf;
	} else if (prof_rec_string_offset(r->type) &&
		   !memchr((const char *)r + prof_rec_string_offset(r->type), 0,
			   r->size - prof_rec_string_offset(r->type))) {
		snprintf(buf, sizeof(buf), "%s %s is not NUL-terminated",
			 prof_rec_type_name(r->type), prof_rec_string_field(r->type));
		what = buf;
	}
	if (!what)
		return 0;
	t->failed = 1;
	seterr(t->errmsg, sizeof(t->errmsg), t->path, off, "%s", what);
	return -1;
}

/* The common case of check_record() in a few compares: a known type below 128 with no
 * variable part to check (not STACK, MODULE or a string record), its size a multiple of 8 that
 * covers the type's fixed payload and ends inside the chunk. Anything else takes the full
 * check, which also words the error. */
#define FAST_TYPES 128
#define PROF_X(name, value, st) [value] = (uint32_t)sizeof(struct st),  /* values < 128 */
static const uint32_t fast_min_size[FAST_TYPES] = { PROF_RECORD_TYPES(PROF_X) };
#undef PROF_X
#define PROF_Y(name, st, field) [PROF_REC_##name] = 1,
static const uint8_t needs_full_check[FAST_TYPES] = {
	[PROF_REC_STACK] = 1, [PROF_REC_STACK_TAIL] = 1,
	PROF_STRING_RECORDS(PROF_Y)  /* MODULE is a string record */
};
#undef PROF_Y

static inline int record_ok_fast(const struct prof_rec *r, uint64_t room)
{
	uint32_t size = r->size, type = r->type;
	return type < FAST_TYPES && fast_min_size[type] && !needs_full_check[type] &&
	       size >= fast_min_size[type] && (size & 7) == 0 && size <= room;
}

static void stream_free(struct stream *s)
{
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
	s->wchunk = NO_CHUNK;
}

/* Reads the stream's window anew: from its head record (pos in chunks[cur]) on, wnext bytes or
 * the rest of the chunk if less, and at least `need` bytes (<= the rest of the chunk: a record
 * larger than the window). 0, or -1 with the message in t->errmsg. */
static int stream_fill(struct trace *t, struct stream *s, uint64_t need)
{
	uint64_t len = s->span - s->pos;
	if (len > s->wnext)
		len = s->wnext;
	if (len < need)
		len = need;
	if (s->wnext < WINDOW)
		s->wnext *= 2;
	s->wchunk = NO_CHUNK;
	if (len > s->cap) {
		size_t cap = 1024;
		while (cap < len)
			cap *= 2;
		free(s->buf);
		s->cap = 0;
		if (!(s->buf = malloc(cap))) {
			t->failed = 1;
			seterr(t->errmsg, sizeof(t->errmsg), t->path, NO_OFFSET,
			       "out of memory (a window of %zu bytes)", cap);
			return -1;
		}
		s->cap = cap;
	}
	if (read_at(t, s->buf, (size_t)len, s->base + s->pos, t->errmsg, sizeof(t->errmsg)) < 0) {
		t->failed = 1;
		return -1;
	}
	s->wchunk = s->cur;
	s->wpos = s->pos;
	s->wend = s->pos + len;
	return 0;
}

/* The error for a short record of kind `kind` before its base in the chunk. */
static const char *short_without_base(unsigned kind)
{
	if (kind >= PROF_SHORT_CUDA_KIND)
		return "short record before any ordinary CUDA_LAUNCH of its slot in its chunk (no base)";
	if (kind >= PROF_SHORT_GPU_KIND)
		return "short record before any ordinary CUDA_GPU of its slot in its chunk (no base)";
	if (kind >= PROF_SHORT_IO_KIND)
		return "short record before any ordinary IO_CALL or IO_NAME in its chunk (no base)";
	if (kind >= PROF_SHORT_LOCK_KIND)
		return "short record before any ordinary LOCK_WAIT in its chunk (no base)";
	return "short record before any ordinary ALLOC or FREE in its chunk (no base)";
}

/* Finds the stream's head record at or after its cursor, moving on to its next chunk at a
 * zero prefix (uncommitted: end of the chunk) or at the chunk's end, and reads it into the
 * window. 1 = loaded, 0 = stream done (its window is freed), -1 = bad record or failed read. */
static int stream_load(struct trace *t, struct stream *s, uint64_t *time)
{
	for (; s->cur < s->end; s->cur++, s->pos = t->chunk_hdr) {
		const struct chunk *c = &t->chunks[s->cur];
		s->base = c->offset;
		s->span = (uint64_t)c->units * t->chunk_size;
		if (s->pos >= s->span)
			continue;
		s->tid = c->tid;
		if (s->pos == t->chunk_hdr) {  /* shorts count from the chunk's own bases */
			s->sbase = (struct prof_short_base){ .cuda = &s->cuda };
			prof_short_cuda_reset(&s->cuda);
		}
		uint64_t room = s->span - s->pos;  /* >= 8: both are multiples of 8 */
		uint64_t prefix = room < sizeof(struct prof_rec) ? room : sizeof(struct prof_rec);
		if (s->wchunk != s->cur || s->pos < s->wpos || s->pos + prefix > s->wend) {
			if (stream_fill(t, s, prefix) < 0)
				return -1;
		}
		const struct prof_rec *r = (const void *)(s->buf + (s->pos - s->wpos));
		uint64_t w0 = rd64(r);
		if (w0 == 0)
			continue;
		if (t->shorts && prof_is_short(w0)) {
			/* The window holds min(room, 16) bytes at least: all of a short record that
			 * lies in the chunk. */
			int len = prof_short_decode(&s->sbase, w0, r, s->wend - s->pos, &s->dec);
			if (len < 0) {
				t->failed = 1;
				seterr(t->errmsg, sizeof(t->errmsg), t->path, s->base + s->pos,
				       len == -1 ? short_without_base((unsigned)(w0 >> 8) & 0x7f)
				       : len == -2 ? "short record runs past the chunk end"
						   : "short record of unknown kind %u",
				       (unsigned)(w0 >> 8) & 0x7f);
				return -1;
			}
			s->head = &s->dec.h;
			s->head_len = (uint32_t)len;
			*time = s->dec.h.time;
			return 1;
		}
		if (!record_ok_fast(r, s->wend - s->pos)) {
			/* A record that lies in the chunk but not in the window is read whole. The
			 * file may have changed meanwhile: look at what came back. */
			if (room >= sizeof(*r) && r->size > s->wend - s->pos && r->size <= room) {
				if (stream_fill(t, s, r->size) < 0)
					return -1;
				r = (const void *)s->buf;
				if (rd64(r) == 0)
					continue;
				if (r->size > s->wend - s->pos && r->size <= room) {
					t->failed = 1;
					seterr(t->errmsg, sizeof(t->errmsg), t->path, s->base + s->pos,
					       "record changed while reading");
					return -1;
				}
			}
			if (check_record(t, r, s->base + s->pos, room) < 0)
				return -1;
		}
		/* Streams interleave: fetch this stream's records a few cache lines ahead while
		 * others are merged. */
		__builtin_prefetch((const uint8_t *)r + PREFETCH_AHEAD);
		if (t->shorts)
			prof_short_note(&s->sbase, r);
		s->head = r;
		s->head_len = r->size;
		*time = r->time;
		return 1;
	}
	stream_free(s);
	return 0;
}

/* Heap entries carry their key, so sifting touches only the heap array. */
static int key_less(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->time < b->time || (a->time == b->time && a->id < b->id);
}

/* Restores the heap after heap[i] grew (or was replaced): moves it down past the smaller
 * children. Threads that run at once interleave their records one by one, so the stream
 * just read from usually goes a level or two down, seldom to the bottom. */
static void heap_down(struct trace *t, size_t i)
{
	struct heap_ent *h = t->heap, e = h[i];
	size_t n = t->nheap, c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && key_less(&h[c + 1], &h[c]))
			c++;
		if (!key_less(&h[c], &e))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = e;
}

void trace_rewind(struct trace *t)
{
	for (size_t i = 0; i < t->nstreams; i++) {
		struct stream *s = &t->streams[i];
		s->cur = s->first;
		s->pos = t->chunk_hdr;
		s->wchunk = NO_CHUNK;  /* a buffer still held is kept for the next pass */
		s->wnext = WINDOW_FIRST;
	}
	t->nheap = 0;
	t->started = 0;
	t->pending = 0;
	t->failed = 0;
	t->errmsg[0] = '\0';
}

static int fail(struct trace *t, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", t->errmsg);
	return -1;
}

int trace_next(struct trace *t, struct trace_event *ev, char *err, size_t errlen)
{
	uint64_t time;
	int rc;

	if (t->failed)
		return fail(t, err, errlen);
	if (!t->started) {
		t->started = 1;
		for (size_t i = 0; i < t->nstreams; i++) {
			rc = stream_load(t, &t->streams[i], &time);
			if (rc < 0)
				return fail(t, err, errlen);
			if (rc)
				t->heap[t->nheap++] = (struct heap_ent){
					.time = time, .id = t->streams[i].id, .index = (uint32_t)i,
				};
		}
		for (size_t i = t->nheap / 2; i-- > 0;)
			heap_down(t, i);
	}
	/* The record handed out last time stays at the top until now, so that an error in the
	 * record after it is reported on the call that needs that record. */
	if (t->pending) {
		struct stream *s = &t->streams[t->heap[0].index];
		s->pos += s->head_len;
		t->pending = 0;
		/* Most records are followed by another in the window that passes the quick check
		 * (or decodes as a short record); the rest (window end, chunk end, next chunk, full
		 * check, errors) go through stream_load(). The window ends inside the chunk. */
		const struct prof_rec *r;
		uint64_t w0 = 0;
		int len;
		if (s->pos + sizeof(*r) <= s->wend &&
		    (w0 = rd64(r = (const void *)(s->buf + (s->pos - s->wpos)))) != 0 &&
		    t->shorts && prof_is_short(w0) &&
		    (len = prof_short_decode(&s->sbase, w0, r, s->wend - s->pos, &s->dec)) > 0) {
			s->head = &s->dec.h;
			s->head_len = (uint32_t)len;
			t->heap[0].time = s->dec.h.time;
		} else if (s->pos + sizeof(*r) <= s->wend && w0 != 0 &&
			   !(t->shorts && prof_is_short(w0)) && record_ok_fast(r, s->wend - s->pos)) {
			__builtin_prefetch((const uint8_t *)r + PREFETCH_AHEAD);
			if (t->shorts)
				prof_short_note(&s->sbase, r);
			s->head = r;
			s->head_len = r->size;
			t->heap[0].time = r->time;
		} else {
			rc = stream_load(t, s, &time);
			if (rc < 0)
				return fail(t, err, errlen);
			if (rc)
				t->heap[0].time = time;
			else
				t->heap[0] = t->heap[--t->nheap];
		}
		heap_down(t, 0);
	}
	if (!t->nheap)
		return 0;
	const struct stream *s = &t->streams[t->heap[0].index];
	ev->offset = s->base + s->pos;
	ev->rec = s->head;
	ev->stream = s->id;
	ev->tid = s->tid;
	ev->file_size = s->head_len;
	t->pending = 1;
	return 1;
}
