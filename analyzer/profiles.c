/* prof export --format speedscope|pprof: the flame kinds' stacks as profiles other tools open.
 * speedscope: one "sampled" profile per flame kind with data, frames shared. pprof: one
 * gzipped profile.proto (analyzer/profile.proto, packed by protobuf-c) with a sample type per
 * kind, locations by function, file and line. */
#include "commands.h"
#include "exports.h"
#include "family.h"
#include "flame.h"
#include "grow.h"
#include "process.h"
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"

/* speedscope's unit for a flame weight's. */
static const char *unit_name(const char *unit, int pprof)
{
	if (!strcmp(unit, "ns"))
		return "nanoseconds";
	if (!strcmp(unit, "bytes"))
		return "bytes";
	return pprof ? unit : "none";
}

/* ---- speedscope ----------------------------------------------------------------------------- */

/* The index of name in frames (added when new); -1 when out of memory. */
static json_int_t frame_index(json_t *index, json_t *frames, const char *name)
{
	json_t *at = json_object_get(index, name);
	if (at)
		return json_integer_value(at);
	json_int_t i = (json_int_t)json_array_size(frames);
	if (json_array_append_new(frames, json_pack("{s:o}", "name", jstr(name))) < 0 ||
	    json_object_set_new(index, name, json_integer(i)) < 0)
		return -1;
	return i;
}

int export_speedscope(const struct cmd_opts *o, struct process *ps, size_t n, FILE *out)
{
	json_t *index = json_object(), *frames = json_array(), *profiles = json_array();
	int rc = 0;
	FOR_EACH_FLAME_KIND(f, kind) {
		const struct flame_weight *w = &kind->weights[0];
		struct flame_set ss = { 0 };
		if (rc == 0 && flame_collect(&ss, ps, n, f, kind, w->by, 1) < 0)
			rc = -1;
		if (rc == 0 && ss.n) {
			json_t *samples = json_array(), *weights = json_array();
			uint64_t total = 0;
			for (size_t i = 0; i < ss.n && rc == 0; i++) {
				json_t *stack = json_array();
				for (int d = 0; d < ss.v[i].depth && rc == 0; d++) {
					json_int_t fi = frame_index(index, frames, ss.v[i].frames[d]);
					rc = fi < 0 ? -1 : json_array_append_new(stack, json_integer(fi));
				}
				json_array_append_new(samples, stack);
				json_array_append_new(weights, json_integer((json_int_t)ss.v[i].weight));
				total += ss.v[i].weight;
			}
			char name[160];
			snprintf(name, sizeof(name), "%s: %s", kind->name, w->title);
			json_array_append_new(profiles, json_pack("{s:s,s:s,s:s,s:i,s:I,s:o,s:o}",
				"type", "sampled", "name", name, "unit", unit_name(w->unit, 0),
				"startValue", 0, "endValue", (json_int_t)total, "samples", samples,
				"weights", weights));
		}
		flame_set_free(&ss);
	}
	(void)o;
	json_t *doc = json_pack("{s:s,s:{s:o},s:o,s:s,s:i,s:s}",
		"$schema", "https://www.speedscope.app/file-format-schema.json",
		"shared", "frames", frames, "profiles", profiles,
		"name", n ? (strrchr(ps[0].exe, '/') ? strrchr(ps[0].exe, '/') + 1 : ps[0].exe) : "prof",
		"activeProfileIndex", 0, "exporter", "prof " PROF_VERSION);
	if (rc == 0 && json_array_size(profiles) == 0)
		prof_error("note: no stacks in these traces");
	if (rc == 0)
		json_dumpf(doc, out, JSON_COMPACT);
	json_decref(doc);
	json_decref(index);
	return rc;
}

/* ---- pprof ------------------------------------------------------------------------------------ */

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

struct pprof {
	json_t *strings, *functions, *locations;  /* interning: text -> index or id */
	char **string_table;
	size_t nstrings, strings_cap;
	Function **fn;
	size_t nfn, fn_cap;
	Location **loc;
	size_t nloc, loc_cap;
	Sample **samples;
	size_t nsamples, samples_cap;
	struct { size_t type; int64_t weight; } *meta;  /* of each sample, until values are made */
	size_t nmeta, meta_cap;
	size_t type;  /* the sample type being added */
};

static int64_t str_id(struct pprof *pp, const char *s)
{
	json_t *at = json_object_get(pp->strings, s);
	if (at)
		return json_integer_value(at);
	char *copy = strdup(s);
	if (!copy || GROW(pp->string_table, pp->nstrings, pp->strings_cap) < 0) {
		free(copy);
		return -1;
	}
	pp->string_table[pp->nstrings] = copy;
	json_object_set_new(pp->strings, s, json_integer((json_int_t)pp->nstrings));
	return (int64_t)pp->nstrings++;
}

/* The location of one frame: a function (name, file) at a line; 0 when out of memory. */
static uint64_t location(struct pprof *pp, const char *name, const char *file, int line)
{
	char key[1200];
	snprintf(key, sizeof(key), "%s\x01%s", name, file ? file : "");
	json_t *at = json_object_get(pp->functions, key);
	uint64_t fid;
	if (at) {
		fid = (uint64_t)json_integer_value(at);
	} else {
		Function *f = calloc(1, sizeof(*f));
		int64_t ni = str_id(pp, name), fi = str_id(pp, file ? file : "");
		if (!f || ni < 0 || fi < 0 || GROW(pp->fn, pp->nfn, pp->fn_cap) < 0) {
			free(f);
			return 0;
		}
		perftools__profiles__function__init(f);
		f->id = pp->nfn + 1;
		f->name = f->system_name = ni;
		f->filename = fi;
		pp->fn[pp->nfn++] = f;
		fid = f->id;
		json_object_set_new(pp->functions, key, json_integer((json_int_t)fid));
	}
	snprintf(key, sizeof(key), "%llu:%d", (unsigned long long)fid, line);
	if ((at = json_object_get(pp->locations, key)))
		return (uint64_t)json_integer_value(at);
	Location *l = calloc(1, sizeof(*l));
	Line *ln = calloc(1, sizeof(*ln));
	Line **lines = calloc(1, sizeof(*lines));
	if (!l || !ln || !lines || GROW(pp->loc, pp->nloc, pp->loc_cap) < 0) {
		free(l);
		free(ln);
		free(lines);
		return 0;
	}
	perftools__profiles__location__init(l);
	perftools__profiles__line__init(ln);
	ln->function_id = fid;
	ln->line = line;
	lines[0] = ln;
	l->id = pp->nloc + 1;
	l->n_line = 1;
	l->line = lines;
	pp->loc[pp->nloc++] = l;
	json_object_set_new(pp->locations, key, json_integer((json_int_t)l->id));
	return l->id;
}

static int add_pprof_sample(void *arg, struct process *p, const struct sym_frame *frames, int n,
			    int truncated, const char *leaf, uint64_t weight)
{
	struct pprof *pp = arg;
	(void)p;
	(void)truncated;
	Sample *s = calloc(1, sizeof(*s));
	uint64_t *ids = calloc((size_t)n + 2, sizeof(*ids));
	if (!s || !ids || GROW(pp->samples, pp->nsamples, pp->samples_cap) < 0 ||
	    GROW(pp->meta, pp->nmeta, pp->meta_cap) < 0) {
		free(s);
		free(ids);
		return -1;
	}
	perftools__profiles__sample__init(s);
	pp->samples[pp->nsamples++] = s;
	pp->meta[pp->nmeta].type = pp->type;
	pp->meta[pp->nmeta++].weight = (int64_t)weight;
	s->location_id = ids;
	if (leaf && !(ids[s->n_location_id++] = location(pp, leaf, NULL, 0)))
		return -1;
	for (int i = 0; i < n; i++) {  /* innermost first, as pprof wants */
		char buf[256];
		const char *name = frames[i].function ? frames[i].function :
				   frame_label(&frames[i], buf, sizeof(buf));
		if (!(ids[s->n_location_id++] = location(pp, name, frames[i].file, frames[i].line)))
			return -1;
	}
	if (!n && !(ids[s->n_location_id++] = location(pp, "[no stack]", NULL, 0)))
		return -1;
	return 0;
}

static int write_gzip(FILE *out, const uint8_t *buf, size_t len)
{
	fflush(out);
	gzFile gz = gzdopen(dup(fileno(out)), "wb");
	if (!gz)
		return -1;
	int ok = len == 0 || gzwrite(gz, buf, (unsigned)len) == (int)len;
	return gzclose(gz) == Z_OK && ok ? 0 : -1;
}

int export_pprof(const struct cmd_opts *o, struct process *ps, size_t n, FILE *out)
{
	(void)o;
	struct pprof pp = { .strings = json_object(), .functions = json_object(),
			    .locations = json_object() };
	ValueType *types[64];
	size_t ntypes = 0;
	int rc = str_id(&pp, "") < 0 ? -1 : 0;
	FOR_EACH_FLAME_KIND(f, kind) {
		const struct flame_weight *w = &kind->weights[0];
		size_t before = pp.nsamples;
		pp.type = ntypes;
		for (size_t i = 0; i < n && rc == 0 && ntypes < 64; i++)
			rc = flame_walk(&ps[i], f, kind, w->by, add_pprof_sample, &pp);
		if (rc == 0 && pp.nsamples > before) {
			ValueType *t = calloc(1, sizeof(*t));
			if (!t) {
				rc = -1;
				break;
			}
			perftools__profiles__value_type__init(t);
			t->type = str_id(&pp, kind->name);
			t->unit = str_id(&pp, unit_name(w->unit, 1));
			types[ntypes++] = t;
		}
	}
	for (size_t i = 0; i < pp.nsamples && rc == 0; i++) {
		Sample *s = pp.samples[i];
		if (!(s->value = calloc(ntypes, sizeof(int64_t)))) {
			rc = -1;
			break;
		}
		s->n_value = ntypes;
		s->value[pp.meta[i].type] = pp.meta[i].weight;
	}
	Profile prof;
	perftools__profiles__profile__init(&prof);
	prof.n_sample_type = ntypes;
	prof.sample_type = types;
	prof.n_sample = pp.nsamples;
	prof.sample = pp.samples;
	prof.n_location = pp.nloc;
	prof.location = pp.loc;
	prof.n_function = pp.nfn;
	prof.function = pp.fn;
	prof.n_string_table = pp.nstrings;
	prof.string_table = pp.string_table;
	if (n) {
		prof.time_nanos = (int64_t)ps[0].hdr.start_realtime_ns;
		prof.duration_nanos = (int64_t)ps[0].end_ns;
	}
	if (rc == 0) {
		size_t len = perftools__profiles__profile__get_packed_size(&prof);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf)
			rc = -1;
		else if (perftools__profiles__profile__pack(&prof, buf) != len ||
			 write_gzip(out, buf, len) < 0)
			rc = -2;
		free(buf);
	}
	if (rc == -1)
		prof_error("out of memory");
	else if (rc == -2)
		prof_error("%s: write error", o->outfile ? o->outfile : "stdout");
	for (size_t i = 0; i < pp.nsamples; i++) {
		free(pp.samples[i]->value);
		free(pp.samples[i]->location_id);
		free(pp.samples[i]);
	}
	for (size_t i = 0; i < pp.nloc; i++) {
		free(pp.loc[i]->line[0]);
		free(pp.loc[i]->line);
		free(pp.loc[i]);
	}
	for (size_t i = 0; i < pp.nfn; i++)
		free(pp.fn[i]);
	for (size_t i = 0; i < pp.nstrings; i++)
		free(pp.string_table[i]);
	for (size_t i = 0; i < ntypes; i++)
		free(types[i]);
	free(pp.samples);
	free(pp.meta);
	free(pp.loc);
	free(pp.fn);
	free(pp.string_table);
	json_decref(pp.strings);
	json_decref(pp.functions);
	json_decref(pp.locations);
	return rc ? -1 : 0;
}
