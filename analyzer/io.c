/* Analysis of file and network I/O: IO_NAME and IO_CALL records folded, as they stream by,
 * into per-file counters and latency histograms, a bounded heap of the slowest calls and
 * per-stack weights; memory grows with files and stacks, never with events. */
#include "exports.h"
#include "io.h"
#include "grow.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "summary.h"
#include "timeline.h"
#include "trace.h"

#include <inttypes.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- histograms ------------------------------------------------------------------------- */

unsigned io_hist_bucket(uint64_t v)
{
	if (v < 8)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);  /* >= 3 */
	return (e - 2) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

uint64_t io_hist_bucket_low(unsigned b)
{
	if (b < 8)
		return b;
	unsigned e = b / 8 + 2, m = b % 8;
	return (uint64_t)(8 + m) << (e - 3);
}

int io_hist_add(struct io_hist *h, uint64_t v)
{
	if (!h->buckets && !(h->buckets = calloc(IO_HIST_BUCKETS, sizeof(uint64_t))))
		return -1;
	h->buckets[io_hist_bucket(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
	return 0;
}

int io_hist_merge(struct io_hist *dst, const struct io_hist *src)
{
	if (!src->count)
		return 0;
	if (!dst->buckets && !(dst->buckets = calloc(IO_HIST_BUCKETS, sizeof(uint64_t))))
		return -1;
	for (unsigned i = 0; i < IO_HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

uint64_t io_hist_quantile(const struct io_hist *h, double q)
{
	if (!h->count || !h->buckets)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank >= h->count)
		return h->max;  /* the largest value is known exactly */
	uint64_t seen = 0;
	for (unsigned b = 0; b < IO_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen < rank)
			continue;
		uint64_t lo = io_hist_bucket_low(b);
		uint64_t hi = b + 1 < IO_HIST_BUCKETS ? io_hist_bucket_low(b + 1) : lo;
		uint64_t v = lo + (hi - lo) / 2;
		return v > h->max ? h->max : v;
	}
	return h->max;
}

void io_hist_free(struct io_hist *h)
{
	free(h->buckets);
	memset(h, 0, sizeof(*h));
}

void io_hist_put(struct sum_out *w, const struct io_hist *h)
{
	sum_put_u64(w, h->count);
	sum_put_u64(w, h->max);
	uint32_t used = 0;
	for (unsigned b = 0; h->buckets && b < IO_HIST_BUCKETS; b++)
		used += h->buckets[b] != 0;
	sum_put_u32(w, h->buckets ? used + 1 : 0);  /* 0: no buckets yet */
	for (unsigned b = 0; h->buckets && b < IO_HIST_BUCKETS; b++)
		if (h->buckets[b]) {
			sum_put_u32(w, b);
			sum_put_u64(w, h->buckets[b]);
		}
}

int io_hist_get(struct sum_in *r, struct io_hist *h)
{
	h->count = sum_get_u64(r);
	h->max = sum_get_u64(r);
	uint32_t used = sum_get_u32(r);
	if (!used && h->count)  /* counts without buckets: not what a writer makes */
		r->bad = 1;
	if (!used || r->bad)
		return 0;
	if (used - 1 > IO_HIST_BUCKETS) {
		r->bad = 1;
		return 0;
	}
	if (!(h->buckets = calloc(IO_HIST_BUCKETS, sizeof(uint64_t))))
		return -1;
	for (uint32_t i = 0; i + 1 < used && !r->bad; i++) {
		uint32_t b = sum_get_u32(r);
		uint64_t c = sum_get_u64(r);
		if (b >= IO_HIST_BUCKETS)
			r->bad = 1;
		else
			h->buckets[b] = c;
	}
	return 0;
}

/* ---- files ------------------------------------------------------------------------------ */

const char *io_kind(const char *path)
{
	if (!strncmp(path, "pipe:", 5))
		return "pipe";
	if (!strncmp(path, "socket:", 7))
		return "socket";
	if (!strncmp(path, "tcp", 3) && (path[3] == ' ' || path[3] == '6'))
		return "tcp";
	if (!strncmp(path, "udp", 3) && (path[3] == ' ' || path[3] == '6'))
		return "udp";
	if (!strncmp(path, "unix ", 5))
		return "unix";
	if (!strncmp(path, "/dev/", 5))
		return "device";
	if (path[0] == '/')
		return "file";
	return "other";
}

struct io_stats *io_of(const struct process *p)
{
	return process_family_state(p, &io_family);
}

void io_init(void *state)
{
	struct io_stats *s = state;
	memset(s, 0, sizeof(*s));
	u64map_init(&s->by_name, sizeof(uint32_t));
	u64map_init(&s->ids, sizeof(uint32_t));
	u64map_init(&s->by_stack, sizeof(struct io_flame_weight));
}

void io_free(void *state)
{
	struct io_stats *s = state;
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		for (int c = 0; c < IO_CLS_COUNT; c++)
			io_hist_free(&s->files[i].hist[c]);
	}
	free(s->files);
	u64map_free(&s->by_name);
	u64map_free(&s->ids);
	u64map_free(&s->by_stack);
	memset(s, 0, sizeof(*s));
}

static uint64_t hash_str(const char *s)
{
	return str_hash(s) & ~(1ull << 63);  /* u64map keys must not be ~0 */
}

/* The file of that name, created if new; -1 if out of memory. */
static int32_t file_named(struct io_stats *s, const char *path)
{
	uint64_t h = hash_str(path);
	for (;; h = (h + 1) & ~(1ull << 63)) {
		int created;
		uint32_t *idx = u64map_put(&s->by_name, h, &created);
		if (!idx)
			return -1;
		if (!created) {
			if (!strcmp(s->files[*idx].path, path))
				return (int32_t)*idx;
			continue;  /* another name with this hash: probe on */
		}
		if (GROW(s->files, s->nfiles, s->files_cap) < 0) {
			u64map_del(&s->by_name, h, NULL);
			return -1;
		}
		struct io_file *f = &s->files[s->nfiles];
		memset(f, 0, sizeof(*f));
		f->merged_into = -1;
		if (!(f->path = strdup(path))) {
			u64map_del(&s->by_name, h, NULL);
			return -1;
		}
		*idx = (uint32_t)s->nfiles;
		return (int32_t)s->nfiles++;
	}
}

static int32_t file_live(const struct io_stats *s, int32_t i)
{
	while (i >= 0 && s->files[i].merged_into >= 0)
		i = s->files[i].merged_into;
	return i;
}

/* Moves everything of src into dst (a socket renamed when it connected). */
static int file_merge(struct io_stats *s, int32_t dst, int32_t src)
{
	struct io_file *d = &s->files[dst], *f = &s->files[src];
	d->opens += f->opens;
	d->closes += f->closes;
	d->reads += f->reads;
	d->read_bytes += f->read_bytes;
	d->writes += f->writes;
	d->write_bytes += f->write_bytes;
	d->others += f->others;
	d->errors += f->errors;
	d->eof_reads += f->eof_reads;
	d->mmaps += f->mmaps;
	d->untimed += f->untimed;
	d->buffered += f->buffered;
	d->time_ns += f->time_ns;
	for (int c = 0; c < IO_CLS_COUNT; c++) {
		d->cls_time[c] += f->cls_time[c];
		if (io_hist_merge(&d->hist[c], &f->hist[c]) < 0)
			return -1;
		io_hist_free(&f->hist[c]);
	}
	for (int i = 0; i < 64; i++)
		d->ops[i] += f->ops[i];
	if (!d->first_stack)
		d->first_stack = f->first_stack;
	uint64_t ids = f->ids;
	char *path = f->path;
	memset(f, 0, sizeof(*f));
	f->path = path;
	f->ids = ids;
	f->merged_into = dst;
	return 0;
}

/* The file an id refers to now; an id never named gets "fd N" (named by its descriptor). */
static int32_t file_of_id(struct io_stats *s, uint32_t id, int32_t fd)
{
	char name[64];
	if (id == 0) {
		snprintf(name, sizeof(name), "(not open: fd %d)", fd);
		return file_named(s, name);
	}
	uint32_t *idx = u64map_get(&s->ids, id);
	if (idx)
		return file_live(s, (int32_t)*idx);
	snprintf(name, sizeof(name), "(unnamed: fd %d)", fd);
	int32_t f = file_named(s, name);
	if (f < 0)
		return -1;
	int created;
	uint32_t *slot = u64map_put(&s->ids, id, &created);
	if (!slot)
		return -1;
	*slot = (uint32_t)f;
	s->files[f].ids++;
	return f;
}

/* id is now called path. A renamed id that was its old name's only one takes its stats
 * along (a socket that connected); otherwise the old name keeps what happened under it. */
static int32_t name_id(struct io_stats *s, uint32_t id, const char *path)
{
	int32_t f = file_named(s, path);
	if (f < 0)
		return -1;
	int created;
	uint32_t *slot = u64map_put(&s->ids, id, &created);
	if (!slot)
		return -1;
	if (!created) {
		int32_t old = file_live(s, (int32_t)*slot);
		if (old == f)
			return f;
		if (old >= 0 && s->files[old].ids == 1 && file_merge(s, f, old) < 0)
			return -1;
		if (old >= 0 && s->files[old].ids > 0 && s->files[old].merged_into < 0)
			s->files[old].ids--;
	}
	*slot = (uint32_t)f;
	s->files[f].ids++;
	return f;
}

/* ---- events ----------------------------------------------------------------------------- */

static void slow_sift_down(struct io_slow *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l].duration_ns < h[m].duration_ns)
			m = l;
		if (r < n && h[r].duration_ns < h[m].duration_ns)
			m = r;
		if (m == i)
			return;
		struct io_slow t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void slow_add(struct io_stats *s, const struct io_slow *c)
{
	if (s->nslow < IO_SLOWEST_KEPT) {
		size_t i = s->nslow++;
		s->slow[i] = *c;
		while (i > 0 && s->slow[(i - 1) / 2].duration_ns > s->slow[i].duration_ns) {
			struct io_slow t = s->slow[i];
			s->slow[i] = s->slow[(i - 1) / 2];
			s->slow[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (c->duration_ns > s->slow[0].duration_ns) {
		s->slow[0] = *c;
		slow_sift_down(s->slow, s->nslow, 0);
	}
}

/* One call of the program on file f. */
static int account(struct process *p, int32_t fi, unsigned op, int64_t result, uint64_t dur,
		   uint32_t stack, uint64_t t)
{
	struct io_stats *s = io_of(p);
	struct io_file *f = &s->files[fi];
	char cls = prof_io_op_class(op);
	int hc = cls == 'r' ? IO_CLS_READ : cls == 'w' ? IO_CLS_WRITE : IO_CLS_OTHER;
	uint64_t bytes = 0;
	/* The source half of sendfile/copy_file_range: its bytes, not its time (the call's time
	 * is the destination's, so one call is timed once). */
	int timed = op != PROF_IO_SENDFILE_IN && op != PROF_IO_COPY_FILE_RANGE_IN;
	s->calls += timed;
	if (op < 64)
		f->ops[op]++;
	f->time_ns += dur;
	f->cls_time[hc] += dur;
	if (timed && io_hist_add(&f->hist[hc], dur) < 0)
		return -1;
	/* A non-blocking connect that is under way has not failed. */
	if (result < 0 && !(op == PROF_IO_CONNECT && result == -EINPROGRESS))
		f->errors++;
	switch (cls) {
	case 'o':
		if (result >= 0) {
			f->opens++;
			if (!f->first_stack)
				f->first_stack = stack;
		}
		break;
	case 'c':
		f->closes++;
		break;
	case 'r':
		f->reads++;
		if (result > 0)
			f->read_bytes += bytes = (uint64_t)result;
		else if (result == 0)
			f->eof_reads++;
		break;
	case 'w':
		f->writes++;
		if (result > 0)
			f->write_bytes += bytes = (uint64_t)result;
		break;
	default:
		f->others++;
		if (op == PROF_IO_MMAP && result >= 0)
			f->mmaps++;
		break;
	}
	if (!timed)
		f->untimed++;
	struct io_slow c = { dur, t > p->hdr.start_ns ? t - p->hdr.start_ns : 0, result, fi, stack,
			     (uint16_t)op };
	slow_add(s, &c);
	int created;
	struct io_flame_weight *w = u64map_put(&s->by_stack, stack, &created);
	if (!w)
		return -1;
	w->time_ns += dur;
	w->bytes += bytes;
	return 0;
}

/* IO_BATCH: `calls` untimed stdio calls of op on file f, `bytes` in all. */
static int account_buffered(struct process *p, int32_t fi, unsigned op, uint64_t calls,
			    int64_t bytes, uint32_t stack)
{
	struct io_stats *s = io_of(p);
	struct io_file *f = &s->files[fi];
	char cls = prof_io_op_class(op);
	uint64_t n = bytes > 0 ? (uint64_t)bytes : 0;
	s->calls += calls;
	f->buffered += calls;
	if (op < 64)
		f->ops[op] += calls;
	if (cls == 'r') {
		f->reads += calls;
		f->read_bytes += n;
	} else if (cls == 'w') {
		f->writes += calls;
		f->write_bytes += n;
	} else {
		f->others += calls;
	}
	int created;
	struct io_flame_weight *w = u64map_put(&s->by_stack, stack, &created);
	if (!w)
		return -1;
	w->bytes += n;
	return 0;
}

int io_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	struct io_stats *s = state;
	const struct prof_rec *h = ev->rec;
	s->records++;
	switch (h->type) {
	case PROF_REC_IO_NAME: {
		const struct prof_rec_io_name *r = (const void *)h;
		int32_t f = r->file ? name_id(s, r->file, r->path) : file_named(s, r->path);
		if (f < 0)
			return -1;
		if (prof_io_op_class(h->flags) == 'n')
			return 0;  /* inherited or found: a name, not a call */
		return account(p, f, h->flags, r->result, r->duration_ns, r->stack, h->time);
	}
	case PROF_REC_IO_CALL: {
		const struct prof_rec_io_call *r = (const void *)h;
		int32_t f = file_of_id(s, r->file, r->fd);
		if (f < 0)
			return -1;
		return account(p, f, h->flags, r->result, r->duration_ns, r->stack, h->time);
	}
	case PROF_REC_IO_BATCH: {
		const struct prof_rec_io_batch *r = (const void *)h;
		int32_t f = file_of_id(s, r->file, r->fd);
		if (f < 0)
			return -1;
		return account_buffered(p, f, h->flags, r->calls, r->result, r->stack);
	}
	default:
		return 0;
	}
}

int io_has_data(const struct process *p)
{
	return io_of(p)->calls > 0;
}

/* ---- results ---------------------------------------------------------------------------- */

struct file_ref {
	const struct io_file *f;
	struct io_hist all;  /* the three classes merged */
};

static int cmp_files(const void *a, const void *b)
{
	const struct io_file *x = ((const struct file_ref *)a)->f, *y = ((const struct file_ref *)b)->f;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? 1 : -1;
	uint64_t bx = x->read_bytes + x->write_bytes, by = y->read_bytes + y->write_bytes;
	if (bx != by)
		return bx < by ? 1 : -1;
	return strcmp(x->path, y->path);
}

static int file_active(const struct io_file *f)
{
	return f->merged_into < 0 &&
	       (f->hist[0].count || f->hist[1].count || f->hist[2].count || f->untimed ||
		f->buffered);
}

/* Files that saw calls, most time first; NULL with *n = 0 if none (or out of memory). */
static struct file_ref *files_sorted(const struct io_stats *s, size_t *n)
{
	*n = 0;
	struct file_ref *v = calloc(s->nfiles ? s->nfiles : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct io_file *f = &s->files[i];
		if (!file_active(f))
			continue;
		v[*n].f = f;
		for (int c = 0; c < IO_CLS_COUNT; c++)
			io_hist_merge(&v[*n].all, &f->hist[c]);
		(*n)++;
	}
	qsort(v, *n, sizeof(*v), cmp_files);
	return v;
}

static void files_free(struct file_ref *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		io_hist_free(&v[i].all);
	free(v);
}

static int cmp_slow(const void *a, const void *b)
{
	const struct io_slow *x = a, *y = b;
	if (x->duration_ns != y->duration_ns)
		return x->duration_ns < y->duration_ns ? 1 : -1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* The slowest calls, slowest first (a sorted copy of the heap). */
static size_t slow_sorted(const struct io_stats *s, struct io_slow *out)
{
	memcpy(out, s->slow, s->nslow * sizeof(*out));
	qsort(out, s->nslow, sizeof(*out), cmp_slow);
	return s->nslow;
}

struct io_totals {
	uint64_t files, calls, opens, reads, read_bytes, writes, write_bytes, errors, time_ns;
	uint64_t buffered;
};

static struct io_totals totals(const struct io_stats *s)
{
	struct io_totals t = { 0 };
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct io_file *f = &s->files[i];
		if (!file_active(f))
			continue;
		t.files++;
		t.opens += f->opens;
		t.reads += f->reads;
		t.read_bytes += f->read_bytes;
		t.writes += f->writes;
		t.write_bytes += f->write_bytes;
		t.errors += f->errors;
		t.time_ns += f->time_ns;
		t.buffered += f->buffered;
	}
	t.calls = s->calls;
	return t;
}

static const char *err_name(int64_t result)
{
	if (result >= 0)
		return NULL;
	const char *n = strerrorname_np((int)-result);
	return n ? n : "?";
}

static json_t *latency_json(const struct io_hist *h, uint64_t time_ns)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "calls", (json_int_t)h->count,
			 "time_ns", (json_int_t)time_ns,
			 "p50_ns", (json_int_t)io_hist_quantile(h, 0.50),
			 "p95_ns", (json_int_t)io_hist_quantile(h, 0.95),
			 "p99_ns", (json_int_t)io_hist_quantile(h, 0.99), "max_ns", (json_int_t)h->max);
}

static json_t *file_json(struct process *p, const struct file_ref *r)
{
	const struct io_file *f = r->f;
	json_t *ops = json_object();
	for (unsigned i = 0; i < 64; i++)
		if (f->ops[i])
			json_object_set_new(ops, prof_io_op_name(i), json_integer((json_int_t)f->ops[i]));
	json_t *o = json_pack("{s:o,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"path", jstr(f->path), "kind", io_kind(f->path), "opens", (json_int_t)f->opens,
		"reads", (json_int_t)f->reads, "read_bytes", (json_int_t)f->read_bytes,
		"writes", (json_int_t)f->writes, "write_bytes", (json_int_t)f->write_bytes,
		"time_ns", (json_int_t)f->time_ns,
		"p50_ns", (json_int_t)io_hist_quantile(&r->all, 0.50),
		"p95_ns", (json_int_t)io_hist_quantile(&r->all, 0.95),
		"p99_ns", (json_int_t)io_hist_quantile(&r->all, 0.99), "max_ns", (json_int_t)r->all.max);
	json_object_set_new(o, "closes", json_integer((json_int_t)f->closes));
	json_object_set_new(o, "other_calls", json_integer((json_int_t)f->others));
	json_object_set_new(o, "errors", json_integer((json_int_t)f->errors));
	json_object_set_new(o, "eof_reads", json_integer((json_int_t)f->eof_reads));
	json_object_set_new(o, "mmaps", json_integer((json_int_t)f->mmaps));
	json_object_set_new(o, "buffered_calls", json_integer((json_int_t)f->buffered));
	json_object_set_new(o, "read_latency", latency_json(&f->hist[IO_CLS_READ], f->cls_time[IO_CLS_READ]));
	json_object_set_new(o, "write_latency", latency_json(&f->hist[IO_CLS_WRITE], f->cls_time[IO_CLS_WRITE]));
	json_object_set_new(o, "calls", ops);
	json_object_set_new(o, "open_stack", stack_json(p, f->first_stack));
	return o;
}

json_t *io_json(struct process *p, size_t top)
{
	struct io_stats *s = io_of(p);
	json_t *files = json_array();
	size_t n;
	struct file_ref *v = files_sorted(s, &n);
	for (size_t i = 0; v && i < n && i < top; i++)
		json_array_append_new(files, file_json(p, &v[i]));
	files_free(v, n);
	struct io_slow slow[IO_SLOWEST_KEPT];
	size_t ns = slow_sorted(s, slow);
	json_t *sl = json_array();
	for (size_t i = 0; i < ns && i < top; i++) {
		const struct io_slow *c = &slow[i];
		const char *e = err_name(c->result);
		json_array_append_new(sl, json_pack("{s:o,s:s,s:I,s:o,s:I,s:I,s:o}",
			"path", jstr(s->files[file_live(s, c->file)].path), "call", prof_io_op_name(c->op),
			"result", (json_int_t)c->result, "error", e ? json_string(e) : json_null(),
			"duration_ns", (json_int_t)c->duration_ns, "time_ns", (json_int_t)c->time_ns,
			"stack", stack_json(p, c->stack)));
	}
	struct io_totals t = totals(s);
	json_t *tot = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)t.files,
		"calls", (json_int_t)t.calls, "opens", (json_int_t)t.opens, "reads", (json_int_t)t.reads,
		"read_bytes", (json_int_t)t.read_bytes, "writes", (json_int_t)t.writes,
		"write_bytes", (json_int_t)t.write_bytes, "errors", (json_int_t)t.errors,
		"time_ns", (json_int_t)t.time_ns);
	json_object_set_new(tot, "buffered_calls", json_integer((json_int_t)t.buffered));
	return json_pack("{s:o,s:o,s:o}", "files", files, "totals", tot, "slowest", sl);
}

void io_print(FILE *out, struct process *p, size_t top, int frames)
{
	struct io_stats *s = io_of(p);
	struct io_totals t = totals(s);
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32];
	fprintf(out, "\n-- I/O\n");
	fprintf(out, "   %s calls on %s files, %s in I/O calls; read %s in %s calls, wrote %s in %s calls",
		fmt_count(t.calls, a, sizeof(a)), fmt_count(t.files, b, sizeof(b)),
		fmt_ns(t.time_ns, c, sizeof(c)), fmt_bytes(t.read_bytes, d, sizeof(d)),
		fmt_count(t.reads, e, sizeof(e)), fmt_bytes(t.write_bytes, g, sizeof(g)),
		fmt_count(t.writes, h, sizeof(h)));
	if (t.errors)
		fprintf(out, "; %s failed", fmt_count(t.errors, a, sizeof(a)));
	fputc('\n', out);
	size_t n;
	struct file_ref *v = files_sorted(s, &n);
	fprintf(out, "\n   %10s %8s %6s %8s %10s %8s %10s %9s %9s %9s %9s %5s  %s\n", "TIME", "CALLS",
		"OPENS", "READS", "READ", "WRITES", "WRITTEN", "P50", "P95", "P99", "MAX", "ERR",
		"FILE");
	for (size_t i = 0; v && i < n && i < top; i++) {
		const struct io_file *f = v[i].f;
		char p50[32], p95[32], p99[32], mx[32];
		uint64_t calls = v[i].all.count + f->buffered;
		char o[32], r[32], w[32], e[32], path[1024];
		int timed = v[i].all.count > 0;  /* else only buffered calls: no latency */
		fprintf(out, "   %10s %8s %6s %8s %10s %8s %10s %9s %9s %9s %9s %5s  %s\n",
			fmt_ns(f->time_ns, a, sizeof(a)), fmt_count(calls, b, sizeof(b)),
			fmt_count(f->opens, o, sizeof(o)), fmt_count(f->reads, r, sizeof(r)),
			fmt_bytes(f->read_bytes, c, sizeof(c)), fmt_count(f->writes, w, sizeof(w)),
			fmt_bytes(f->write_bytes, d, sizeof(d)),
			timed ? fmt_ns(io_hist_quantile(&v[i].all, 0.50), p50, sizeof(p50)) : "-",
			timed ? fmt_ns(io_hist_quantile(&v[i].all, 0.95), p95, sizeof(p95)) : "-",
			timed ? fmt_ns(io_hist_quantile(&v[i].all, 0.99), p99, sizeof(p99)) : "-",
			timed ? fmt_ns(v[i].all.max, mx, sizeof(mx)) : "-",
			fmt_count(f->errors, e, sizeof(e)), fmt_arg(f->path, path, sizeof(path)));
	}
	if (n > top)
		fprintf(out, "   (%zu more files)\n", n - top);
	if (t.buffered)
		fprintf(out, "   (%s of the calls were stdio calls that only used their stream's buffer, "
			"no system call: counted, not timed)\n", fmt_count(t.buffered, a, sizeof(a)));
	files_free(v, n);
	struct io_slow slow[IO_SLOWEST_KEPT];
	size_t ns = slow_sorted(s, slow);
	if (ns)
		fprintf(out, "\n   Slowest calls:\n");
	for (size_t i = 0; i < ns && i < top; i++) {
		const struct io_slow *sc = &slow[i];
		const char *en = err_name(sc->result);
		char path[1024];
		fprintf(out, "   #%zu %s %s %s = ", i + 1, fmt_ns(sc->duration_ns, a, sizeof(a)), prof_io_op_name(sc->op),
			fmt_arg(s->files[file_live(s, sc->file)].path, path, sizeof(path)));
		if (en)
			fprintf(out, "-1 %s", en);
		else
			fprintf(out, "%" PRId64, sc->result);
		fprintf(out, " at %s\n", fmt_ns(sc->time_ns, b, sizeof(b)));
		stack_print(out, p, sc->stack, frames, "       ");
	}
}

int io_flame(struct process *p, const char *by,
	     void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	int bytes = !strcmp(by, "bytes");
	size_t pos = 0;
	uint64_t stack;
	void *val;
	while (u64map_next(&io_of(p)->by_stack, &pos, &stack, &val)) {
		const struct io_flame_weight *w = val;
		emit(ctx, (uint32_t)stack, bytes ? w->bytes : w->time_ns);
	}
	return 0;
}

/* ---- timeline and dump ------------------------------------------------------------------ */

/* The timeline's names of file ids (IO_NAME may come after calls that use the id). */
struct io_timeline {
	struct u64map files;  /* file id -> char * */
};

static int io_tl_init(void *state)
{
	u64map_init(&((struct io_timeline *)state)->files, sizeof(char *));
	return 0;
}

static void io_tl_free(void *state)
{
	struct io_timeline *s = state;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->files, &pos, &key, &val))
		free(*(char **)val);
	u64map_free(&s->files);
}

static int io_tl_names(void *state, struct timeline *tl, const struct trace_event *ev)
{
	struct io_timeline *s = state;
	(void)tl;
	if (ev->rec->type != PROF_REC_IO_NAME)
		return 0;
	const struct prof_rec_io_name *r = (const void *)ev->rec;
	if (!r->file)
		return 0;
	char **slot = u64map_put(&s->files, r->file, NULL);
	if (!slot)
		return -1;
	free(*slot);
	return (*slot = strdup(r->path)) ? 0 : -1;
}

static int io_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	struct io_timeline *s = state;
	const struct prof_rec *h = ev->rec;
	const struct prof_rec_io_call *r = (const void *)h;  /* IO_NAME begins as IO_CALL */
	if (r->duration_ns < tl->min_ns || h->type == PROF_REC_IO_BATCH)
		return 0;  /* a batch is many untimed calls, not one span */
	const char *path = "?";
	if (h->type == PROF_REC_IO_NAME) {
		path = ((const struct prof_rec_io_name *)h)->path;
	} else {
		char **name = u64map_get(&s->files, r->file);
		if (name && *name)
			path = *name;
	}
	char name[512];
	snprintf(name, sizeof(name), "%s %s", prof_io_op_name(h->flags), path);
	tl_complete(tl, "io", ev->tid, name, h->time, r->duration_ns);
	fprintf(tl->out, ",\"args\":{\"fd\":%d,\"result\":%" PRId64 "}", r->fd, r->result);
	tl_end(tl);
	return 0;
}

static const struct family_timeline io_timeline = {
	sizeof(struct io_timeline), io_tl_init, io_tl_free, io_tl_names, io_tl_event, NULL,
};

static void io_dump(FILE *out, const struct prof_rec *r)
{
	const struct prof_rec_io_call *c = (const void *)r;  /* IO_NAME begins as IO_CALL */
	fprintf(out, " %s file=%u fd=%d result=%" PRId64 " duration_ns=%" PRIu64 " stack=%u",
		prof_io_op_name(r->flags), c->file, c->fd, c->result, c->duration_ns, c->stack);
	if (r->type == PROF_REC_IO_BATCH)
		fprintf(out, " calls=%" PRIu64, ((const struct prof_rec_io_batch *)r)->calls);
	if (r->type == PROF_REC_IO_NAME) {
		fprintf(out, " path=");
		fmt_quoted(out, ((const struct prof_rec_io_name *)r)->path,
			   r->size - sizeof(struct prof_rec_io_name));
	}
}

static const struct flame_kind io_flames[] = {
	{ "io", "time in I/O calls (--by bytes: bytes read and written)",
	  { { "time", "I/O time by stack", "ns" }, { "bytes", "I/O bytes by stack", "bytes" } },
	  io_flame },
};

static uint64_t io_bytes(const struct process *p)
{
	struct io_totals t = totals(io_of(p));
	return t.read_bytes + t.write_bytes;
}

static const struct family_figure io_figures[] = {
	{ "I/O", "io_bytes", 0, io_bytes, 0 },
};

static const struct family_diff io_diffs[] = {
	{ "I/O time per file", "files", "path", "time_ns" },
	{ "Bytes read per file", "files", "path", "read_bytes" },
	{ "Bytes written per file", "files", "path", "write_bytes" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int io_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	const struct prof_rec_io_call *r = (const void *)ev->rec;  /* IO_NAME begins as one */
	int64_t pid = sql_pid(o);
	if (ev->rec->type == PROF_REC_IO_NAME && r->file &&
	    sql_row(o, "io_files", "iit", pid, (int64_t)r->file,
		    ((const struct prof_rec_io_name *)ev->rec)->path) < 0)
		return -1;
	if (ev->rec->type == PROF_REC_IO_BATCH)
		return sql_row(o, "io_batches", "iiitiiiii", pid, (int64_t)ev->tid,
			       (int64_t)process_rel_time(p, r->h.time), prof_io_op_name(r->h.flags),
			       (int64_t)r->file, (int64_t)r->fd,
			       (int64_t)((const struct prof_rec_io_batch *)ev->rec)->calls, r->result,
			       (int64_t)r->stack);
	if (ev->rec->type != PROF_REC_IO_NAME && ev->rec->type != PROF_REC_IO_CALL)
		return 0;
	return sql_row(o, "io_calls", "iiitiiiii", pid, (int64_t)ev->tid,
		       (int64_t)process_rel_time(p, r->h.time), prof_io_op_name(r->h.flags),
		       (int64_t)r->file, (int64_t)r->fd, r->result, (int64_t)r->duration_ns,
		       (int64_t)r->stack);
}

/* ---- summaries ---------------------------------------------------------------------------- */

static int io_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct io_stats *s = state;
	(void)p;
	sum_put_u64(w, s->records);
	sum_put_u64(w, s->calls);
	sum_put_u64(w, s->nfiles);
	for (size_t i = 0; i < s->nfiles; i++) {
		struct io_file f = s->files[i];  /* its plain fields; the path and histograms after */
		f.path = NULL;
		for (int c = 0; c < IO_CLS_COUNT; c++)
			f.hist[c].buckets = NULL;
		sum_put_fixed(w, &f, sizeof(f));
		sum_put_str(w, s->files[i].path);
		for (int c = 0; c < IO_CLS_COUNT; c++)
			io_hist_put(w, &s->files[i].hist[c]);
	}
	sum_put_map(w, &s->by_name);
	sum_put_map(w, &s->ids);
	sum_put_map(w, &s->by_stack);
	sum_put_u64(w, s->nslow);
	sum_put_fixed(w, s->slow, sizeof(s->slow));
	return 0;
}

static int io_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct io_stats *s = state;
	(void)p;
	int oom = 0;
	s->records = sum_get_u64(r);
	s->calls = sum_get_u64(r);
	size_t n = sum_get_count(r, sizeof(struct io_file));
	if (n && !r->bad) {
		if (!(s->files = calloc(n, sizeof(*s->files))))
			return -1;
		s->files_cap = n;
	}
	for (size_t i = 0; i < n && !r->bad && !oom; i++) {
		struct io_file *f = &s->files[i];
		sum_get_fixed(r, f, sizeof(*f));
		f->path = NULL;
		for (int c = 0; c < IO_CLS_COUNT; c++)
			f->hist[c].buckets = NULL;
		s->nfiles = i + 1;
		f->path = sum_get_str(r, &oom);
		if (!f->path && !oom)
			r->bad = 1;
		if (f->merged_into < -1 || f->merged_into >= (int32_t)n)
			r->bad = 1;
		for (int c = 0; c < IO_CLS_COUNT && !oom; c++)
			oom = io_hist_get(r, &f->hist[c]) < 0;
	}
	if (oom || sum_get_map(r, &s->by_name) < 0 || sum_get_map(r, &s->ids) < 0 ||
	    sum_get_map(r, &s->by_stack) < 0)
		return -1;
	s->nslow = sum_get_u64(r);
	sum_get_fixed(r, s->slow, sizeof(s->slow));
	if (s->nslow > IO_SLOWEST_KEPT)
		r->bad = 1;
	for (size_t i = 0; i < s->nslow && !r->bad; i++)
		if (s->slow[i].file < 0 || (size_t)s->slow[i].file >= s->nfiles)
			r->bad = 1;
	/* the maps' indexes point into files */
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (!r->bad && u64map_next(&s->by_name, &pos, &key, &val))
		r->bad = *(uint32_t *)val >= s->nfiles;
	for (pos = 0; !r->bad && u64map_next(&s->ids, &pos, &key, &val);)
		r->bad = *(uint32_t *)val >= s->nfiles;
	return 0;
}

const struct family io_family = {
	.name = "io",
	.sum_version = 2,
	.sum_write = io_sum_write,
	.sum_read = io_sum_read,
	.first_type = PROF_IO_TYPE_FIRST,
	.last_type = PROF_IO_TYPE_LAST,
	.state_size = sizeof(struct io_stats),
	.init = io_init,
	.free = io_free,
	.on_record = io_on_record,
	.has_data = io_has_data,
	.json_key = "io",
	.json = io_json,
	.print = io_print,
	.flames = io_flames,
	.nflames = sizeof(io_flames) / sizeof(io_flames[0]),
	.timeline = &io_timeline,
	.dump = io_dump,
	.figures = io_figures,
	.nfigures = sizeof(io_figures) / sizeof(io_figures[0]),
	.diffs = io_diffs,
	.ndiffs = sizeof(io_diffs) / sizeof(io_diffs[0]),
	.sql_schema = "CREATE TABLE io_files(pid INTEGER, file INTEGER, path TEXT);\n"
	"CREATE TABLE io_calls(pid INTEGER, tid INTEGER, time_ns INTEGER, op TEXT, file INTEGER,"
	" fd INTEGER, result INTEGER, duration_ns INTEGER, stack INTEGER);\n"
	"CREATE TABLE io_batches(pid INTEGER, tid INTEGER, time_ns INTEGER, op TEXT, file INTEGER,"
	" fd INTEGER, calls INTEGER, bytes INTEGER, stack INTEGER);\n",
	.sql_row = io_sql_row,
};
