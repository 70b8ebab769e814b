/* Analysis of threads and lock contention: per lock, acquisitions, contention, wait and hold
 * times, owner changes and where it was first contended (mutrace's table); per thread, its
 * name and time blocked; wait time by stack for flame graphs.
 *
 * Two sources per lock, merged in locks_sorted(): LOCK_WAIT records, one per wait that
 * blocked (exact: counts, totals, maxima and the first contended stack), and LOCK_STATS
 * snapshots of the writer's counters (cumulative; the one with the most acquisitions is the
 * latest): acquisitions, hold times, owner changes. When wait records were lost, the
 * snapshot's totals are used if they are larger.
 *
 * A lock's address is its name until its last snapshot (a lock destroyed or initialized
 * again): the lock then moves to a key of its own, and the next records about the address,
 * which come later in time, make a new lock. */
#include "exports.h"
#include "locks.h"
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "summary.h"
#include "timeline.h"
#include "trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct lock_stats *locks_of(const struct process *p)
{
	return process_family_state(p, &locks_family);
}

void locks_init(void *state)
{
	struct lock_stats *s = state;
	memset(s, 0, sizeof(*s));
	u64map_init(&s->locks, sizeof(struct lock_info));
	u64map_init(&s->wait_stacks, sizeof(uint64_t));
}

void locks_free(void *state)
{
	struct lock_stats *s = state;
	u64map_free(&s->locks);
	u64map_free(&s->wait_stacks);
}

static struct lock_info *lock_at(struct lock_stats *s, uint64_t addr, unsigned kind)
{
	int created;
	struct lock_info *l = u64map_put(&s->locks, addr, &created);
	if (l && created) {
		l->addr = addr;
		l->kind = kind < PROF_LOCK_KIND_COUNT ? kind : PROF_LOCK_MUTEX;
	}
	return l;
}

static int on_wait(struct process *p, const struct trace_event *ev)
{
	const struct prof_rec_lock_wait *r = (const void *)ev->rec;
	struct lock_info *l = lock_at(locks_of(p), r->lock, r->kind);
	if (!l)
		return -1;
	l->waits++;
	l->wait_ns += r->wait_ns;
	if (r->wait_ns > l->max_wait_ns)
		l->max_wait_ns = r->wait_ns;
	if (r->result != 0)
		l->timeouts++;
	if (!l->have_wait_stack) {
		l->first_wait_stack = r->stack;
		l->have_wait_stack = 1;
	}
	int created;
	uint64_t *w = u64map_put(&locks_of(p)->wait_stacks, r->stack, &created);
	if (!w)
		return -1;
	*w += r->wait_ns;
	struct thread_info *t = process_thread(p, ev->stream / 2);
	if (t) {
		if (r->kind == PROF_LOCK_COND || r->kind == PROF_LOCK_BARRIER)
			t->cond_wait_ns += r->wait_ns;
		else
			t->lock_wait_ns += r->wait_ns;
	}
	return 0;
}

/* The key an ended lock moves to: a user-space address never has bit 63 set, and the
 * ordinal of the record that ended it is unique. */
static uint64_t ended_key(const struct lock_stats *s)
{
	return 1ull << 63 | s->records;
}

static int end_lock(struct lock_stats *s, uint64_t addr)
{
	struct lock_info l;
	if (!u64map_del(&s->locks, addr, &l))
		return 0;
	int created;
	struct lock_info *moved = u64map_put(&s->locks, ended_key(s), &created);
	if (!moved)
		return -1;
	*moved = l;
	return 0;
}

static int on_stats(struct process *p, const struct prof_rec_lock_stats *r)
{
	struct lock_info *l = lock_at(locks_of(p), r->lock, r->kind);
	if (!l)
		return -1;
	if (r->h.flags & PROF_LOCK_STATS_LAST) {  /* its final counts, whatever came before */
		l->have_stats = 0;
		l->acquisitions = 0;
	}
	/* Cumulative: a snapshot with fewer acquisitions is older (streams interleave). */
	if (l->have_stats && r->acquisitions < l->acquisitions)
		return 0;
	if (!l->have_stats)
		l->kind = r->kind < PROF_LOCK_KIND_COUNT ? r->kind : PROF_LOCK_MUTEX;
	l->have_stats = 1;
	l->acquisitions = r->acquisitions;
	l->stat_contended = r->contended;
	l->stat_wait_ns = r->wait_ns;
	if (r->max_wait_ns > l->stat_max_wait_ns)
		l->stat_max_wait_ns = r->max_wait_ns;
	l->hold_ns = r->hold_ns;
	if (r->max_hold_ns > l->max_hold_ns)
		l->max_hold_ns = r->max_hold_ns;
	l->holds_timed = r->holds_timed;
	l->owner_changes = r->owner_changes;
	l->busy = r->busy;
	if (r->first_stack)
		l->first_stack = r->first_stack;
	l->hold_sample = r->hold_sample;
	return r->h.flags & PROF_LOCK_STATS_LAST ? end_lock(locks_of(p), r->lock) : 0;
}

static void on_name(struct process *p, const struct prof_rec_thread_name *r)
{
	struct thread_info *t = r->serial ? process_thread(p, r->serial) : NULL;
	if (!t)
		return;
	snprintf(t->name, sizeof(t->name), "%s", r->name);
}

static void on_join(struct process *p, const struct trace_event *ev)
{
	const struct prof_rec_thread_join *r = (const void *)ev->rec;
	if (ev->rec->flags == PROF_THREAD_DETACH) {
		locks_of(p)->detaches++;
		return;
	}
	locks_of(p)->joins++;
	struct thread_info *t = process_thread(p, ev->stream / 2);
	if (t)
		t->join_wait_ns += r->wait_ns;
}

int locks_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	((struct lock_stats *)state)->records++;
	switch (ev->rec->type) {
	case PROF_REC_LOCK_WAIT:
		return on_wait(p, ev);
	case PROF_REC_LOCK_STATS:
		return on_stats(p, (const void *)ev->rec);
	case PROF_REC_THREAD_NAME:
		on_name(p, (const void *)ev->rec);
		return 0;
	case PROF_REC_THREAD_JOIN:
		on_join(p, ev);
		return 0;
	default:
		return 0;
	}
}

int locks_has_data(const struct process *p)
{
	return locks_of(p)->locks.count > 0;
}

static void summarize(const struct lock_info *l, struct lock_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->addr = l->addr;
	s->kind = prof_lock_kind_name(l->kind);
	s->contended = l->waits;
	s->wait_ns = l->wait_ns;
	s->max_wait_ns = l->max_wait_ns;
	if (l->stat_contended > l->waits) {  /* wait records were lost: the counters know more */
		s->contended = l->stat_contended;
		if (l->stat_wait_ns > s->wait_ns)
			s->wait_ns = l->stat_wait_ns;
	}
	if (l->stat_max_wait_ns > s->max_wait_ns)
		s->max_wait_ns = l->stat_max_wait_ns;
	/* Without a snapshot (killed before the first was written) every wait that did not
	 * time out was an acquisition. */
	s->acquisitions = l->have_stats ? l->acquisitions : l->waits - l->timeouts;
	/* A condition variable or barrier is "acquired" by each wait, which always blocks (and,
	 * timed out or not, takes the mutex back): never fewer acquisitions than waits. */
	if ((l->kind == PROF_LOCK_COND || l->kind == PROF_LOCK_BARRIER) && s->acquisitions < s->contended)
		s->acquisitions = s->contended;
	s->avg_wait_ns = s->contended ? s->wait_ns / s->contended : 0;
	s->hold_ns = l->hold_ns;
	s->max_hold_ns = l->max_hold_ns;
	s->avg_hold_ns = s->acquisitions && l->holds_timed ? s->hold_ns / s->acquisitions : 0;
	s->owner_changes = l->owner_changes;
	s->busy = l->busy;
	s->timeouts = l->timeouts;
	s->hold_sample = l->hold_sample;
	s->counted = l->have_stats;
	if (l->have_wait_stack && l->first_wait_stack) {
		s->stack = l->first_wait_stack;
		s->stack_contended = 1;
	} else {
		s->stack = l->first_stack;
	}
}

static int cmp_summary(const void *a, const void *b)
{
	const struct lock_summary *x = a, *y = b;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns < y->wait_ns ? 1 : -1;
	if (x->acquisitions != y->acquisitions)
		return x->acquisitions < y->acquisitions ? 1 : -1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct lock_summary *locks_sorted(struct process *p, size_t *n)
{
	*n = 0;
	if (locks_of(p)->locks.count == 0)
		return NULL;
	struct lock_summary *v = malloc(sizeof(*v) * locks_of(p)->locks.count);
	if (!v)
		return NULL;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&locks_of(p)->locks, &pos, &key, &val))
		summarize(val, &v[(*n)++]);
	qsort(v, *n, sizeof(*v), cmp_summary);
	return v;
}

json_t *locks_json(struct process *p, size_t top)
{
	json_t *arr = json_array();
	size_t n;
	struct lock_summary *v = locks_sorted(p, &n);
	for (size_t i = 0; v && i < n && i < top; i++) {
		const struct lock_summary *s = &v[i];
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, s->addr);
		json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:o}", "address", addr, "kind",
				      s->kind, "acquisitions", (json_int_t)s->acquisitions,
				      "contended", (json_int_t)s->contended, "wait_ns",
				      (json_int_t)s->wait_ns, "avg_wait_ns", (json_int_t)s->avg_wait_ns,
				      "max_wait_ns", (json_int_t)s->max_wait_ns, "stack",
				      stack_json(p, s->stack));
		json_object_set_new(o, "stack_is", json_string(s->stack_contended ? "first_contended" :
											"first_use"));
		json_object_set_new(o, "hold_ns", json_integer((json_int_t)s->hold_ns));
		json_object_set_new(o, "avg_hold_ns", json_integer((json_int_t)s->avg_hold_ns));
		json_object_set_new(o, "max_hold_ns", json_integer((json_int_t)s->max_hold_ns));
		json_object_set_new(o, "hold_sample", json_integer((json_int_t)s->hold_sample));
		json_object_set_new(o, "counted", json_boolean(s->counted));
		json_object_set_new(o, "owner_changes", json_integer((json_int_t)s->owner_changes));
		json_object_set_new(o, "busy", json_integer((json_int_t)s->busy));
		json_object_set_new(o, "timeouts", json_integer((json_int_t)s->timeouts));
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

void locks_print(FILE *out, struct process *p, size_t top, int frames)
{
	size_t n;
	struct lock_summary *v = locks_sorted(p, &n);
	if (!v)
		return;
	uint64_t total_wait = 0, contended = 0;
	size_t ncontended = 0;
	for (size_t i = 0; i < n; i++) {
		total_wait += v[i].wait_ns;
		contended += v[i].contended;
		ncontended += v[i].contended > 0;
	}
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], k[32];
	fprintf(out, "\n-- Locks (%zu, %zu contended; %s waited in %s contended acquisition%s)\n", n,
		ncontended, fmt_ns(total_wait, a, sizeof(a)), fmt_count(contended, b, sizeof(b)),
		contended == 1 ? "" : "s");
	fprintf(out, "   %3s %-16s %-7s %12s %10s %9s %10s %10s %10s %10s %10s %10s\n", "#", "ADDRESS",
		"KIND", "ACQUIRED", "CONTENDED", "CHANGED", "TOT WAIT", "AVG WAIT", "MAX WAIT",
		"TOT HOLD", "AVG HOLD", "MAX HOLD");
	size_t shown = n < top ? n : top, uncounted = 0;
	for (size_t i = 0; i < shown; i++) {
		const struct lock_summary *s = &v[i];
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, s->addr);
		uncounted += !s->counted;
		fprintf(out, "   %3zu %-16s %-7s %12s %10s %9s %10s %10s %10s %10s %10s %10s\n", i + 1,
			addr, s->kind, fmt_count(s->acquisitions, a, sizeof(a)),
			fmt_count(s->contended, b, sizeof(b)),
			s->counted ? fmt_count(s->owner_changes, c, sizeof(c)) : "-",
			fmt_ns(s->wait_ns, d, sizeof(d)), fmt_ns(s->avg_wait_ns, e, sizeof(e)),
			fmt_ns(s->max_wait_ns, f, sizeof(f)),
			s->counted ? fmt_ns(s->hold_ns, g, sizeof(g)) : "-",
			s->counted ? fmt_ns(s->avg_hold_ns, h, sizeof(h)) : "-",
			s->counted ? fmt_ns(s->max_hold_ns, k, sizeof(k)) : "-");
	}
	if (uncounted)
		fprintf(out, "   (-: not counted, only its waits are known: the trace ended before the "
			"lock's counts were written, or libprof's lock table was full)\n");
	if (n > shown)
		fprintf(out, "   ... %zu more locks (--top N shows more)\n", n - shown);
	/* Stacks of the contended ones (the JSON has every lock's first use). */
	for (size_t i = 0; i < shown; i++) {
		const struct lock_summary *s = &v[i];
		if (!s->contended)
			continue;
		fprintf(out, "\n   Lock #%zu (%s 0x%" PRIx64 ") %s:\n", i + 1, s->kind, s->addr,
			s->stack_contended ? "first contended" : "first used");
		stack_print(out, p, s->stack, frames, "       ");
	}
	if (v[0].hold_sample > 1)
		fprintf(out, "\n   Hold times: the first 256 holds of each lock are timed, then 1 in %u"
			" (PROF_LOCK_HOLD_SAMPLE); totals are estimates past that.\n", v[0].hold_sample);
	free(v);
}

int locks_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	(void)by;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&locks_of(p)->wait_stacks, &pos, &key, &val))
		if (*(uint64_t *)val)
			emit(ctx, (uint32_t)key, *(uint64_t *)val);
	return 0;
}

/* ---- timeline and dump ------------------------------------------------------------------ */

static int locks_tl_names(void *state, struct timeline *tl, const struct trace_event *ev)
{
	(void)state;
	if (ev->rec->type == PROF_REC_THREAD_NAME) {
		const struct prof_rec_thread_name *r = (const void *)ev->rec;
		tl_metadata(tl, "thread_name", r->tid, r->name);
	}
	return 0;
}

static int locks_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	(void)state;
	const struct prof_rec *h = ev->rec;
	if (h->type == PROF_REC_THREAD_JOIN && h->flags == PROF_THREAD_JOIN) {
		const struct prof_rec_thread_join *j = (const void *)h;
		char name[48];
		snprintf(name, sizeof(name), "join %u", j->tid);
		tl_complete(tl, "thread", ev->tid, name, h->time > j->wait_ns ? h->time - j->wait_ns : 0,
			    j->wait_ns);
		tl_end(tl);
		return 0;
	}
	if (h->type != PROF_REC_LOCK_WAIT)
		return 0;
	const struct prof_rec_lock_wait *r = (const void *)h;
	char name[96];
	snprintf(name, sizeof(name), "%s %s 0x%" PRIx64, prof_lock_op_name(h->flags),
		 prof_lock_kind_name(r->kind), r->lock);
	uint64_t start = h->time > r->wait_ns ? h->time - r->wait_ns : 0;
	tl_complete(tl, "lock", ev->tid, name, start, r->wait_ns);
	tl_end(tl);
	return 0;
}

static const struct family_timeline locks_timeline = {
	.names = locks_tl_names,
	.event = locks_tl_event,
};

static void locks_dump(FILE *out, const struct prof_rec *r)
{
	switch (r->type) {
	case PROF_REC_LOCK_WAIT: {
		const struct prof_rec_lock_wait *w = (const void *)r;
		fprintf(out, " %s %s lock=0x%" PRIx64 " other=0x%" PRIx64 " wait_ns=%" PRIu64
			" stack=%u result=%d", prof_lock_op_name(r->flags), prof_lock_kind_name(w->kind),
			w->lock, w->other, w->wait_ns, w->stack, w->result);
		break;
	}
	case PROF_REC_LOCK_STATS: {
		const struct prof_rec_lock_stats *l = (const void *)r;
		fprintf(out, " %s lock=0x%" PRIx64 " acquisitions=%" PRIu64 " contended=%" PRIu64
			" wait_ns=%" PRIu64 " max_wait_ns=%" PRIu64 " hold_ns=%" PRIu64
			" max_hold_ns=%" PRIu64 " holds_timed=%" PRIu64 " owner_changes=%" PRIu64
			" busy=%" PRIu64 " first_stack=%u hold_sample=%u", prof_lock_kind_name(l->kind),
			l->lock, l->acquisitions, l->contended, l->wait_ns, l->max_wait_ns, l->hold_ns,
			l->max_hold_ns, l->holds_timed, l->owner_changes, l->busy, l->first_stack,
			l->hold_sample);
		break;
	}
	case PROF_REC_THREAD_NAME: {
		const struct prof_rec_thread_name *n = (const void *)r;
		fprintf(out, " serial=%u tid=%u name=", n->serial, n->tid);
		fmt_quoted(out, n->name, r->size - sizeof(*n));
		break;
	}
	case PROF_REC_THREAD_JOIN: {
		const struct prof_rec_thread_join *j = (const void *)r;
		fprintf(out, " %s serial=%u tid=%u wait_ns=%" PRIu64 " result=%d",
			r->flags ? "detach" : "join", j->serial, j->tid, j->wait_ns, j->result);
		break;
	}
	}
}

static const struct flame_kind locks_flames[] = {
	{ "lock", "time threads waited for locks", { { "wait", "Lock wait time by stack", "ns" } },
	  locks_flame },
};

/* Contended lock acquisitions only: condition waits are the program waiting on purpose. */
static uint64_t lock_wait(const struct process *p)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		ns += p->threads[i].lock_wait_ns;
	return ns;
}

static const struct family_figure locks_figures[] = {
	{ "lock wait", "lock_wait_ns", 0, lock_wait, 0 },
};

static const struct family_diff locks_diffs[] = {
	{ "Lock waits by lock (kind and where it was first used)", NULL, "kind,stack", "wait_ns" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int locks_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	if (ev->rec->type != PROF_REC_LOCK_WAIT)
		return 0;
	const struct prof_rec_lock_wait *r = (const void *)ev->rec;
	return sql_row(o, "lock_waits", "iiiittiii", sql_pid(o), (int64_t)ev->tid,
		       (int64_t)process_rel_time(p, r->h.time), (int64_t)r->lock,
		       prof_lock_kind_name(r->kind), prof_lock_op_name(r->h.flags),
		       (int64_t)r->wait_ns, (int64_t)r->result, (int64_t)r->stack);
}

/* ---- summaries ---------------------------------------------------------------------------- */

static int locks_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct lock_stats *s = state;
	(void)p;
	sum_put_u64(w, s->records);
	sum_put_map(w, &s->locks);
	sum_put_map(w, &s->wait_stacks);
	sum_put_u64(w, s->joins);
	sum_put_u64(w, s->detaches);
	return 0;
}

static int locks_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct lock_stats *s = state;
	(void)p;
	s->records = sum_get_u64(r);
	if (sum_get_map(r, &s->locks) < 0 || sum_get_map(r, &s->wait_stacks) < 0)
		return -1;
	s->joins = sum_get_u64(r);
	s->detaches = sum_get_u64(r);
	return 0;
}

const struct family locks_family = {
	.name = "locks",
	.first_type = PROF_LOCK_TYPE_FIRST,
	.last_type = PROF_LOCK_TYPE_LAST,
	.state_size = sizeof(struct lock_stats),
	.init = locks_init,
	.free = locks_free,
	.sum_version = 2,  /* 2: ended locks kept apart */
	.sum_write = locks_sum_write,
	.sum_read = locks_sum_read,
	.on_record = locks_on_record,
	.has_data = locks_has_data,
	.json_key = "locks",
	.json = locks_json,
	.print = locks_print,
	.flames = locks_flames,
	.nflames = sizeof(locks_flames) / sizeof(locks_flames[0]),
	.timeline = &locks_timeline,
	.dump = locks_dump,
	.figures = locks_figures,
	.nfigures = sizeof(locks_figures) / sizeof(locks_figures[0]),
	.diffs = locks_diffs,
	.ndiffs = sizeof(locks_diffs) / sizeof(locks_diffs[0]),
	.sql_schema = "CREATE TABLE lock_waits(pid INTEGER, tid INTEGER, time_ns INTEGER, lock INTEGER,"
	" kind TEXT, op TEXT, wait_ns INTEGER, result INTEGER, stack INTEGER);\n",
	.sql_row = locks_sql_row,
};
