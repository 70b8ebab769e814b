/* The Chrome trace-event JSON that chrome://tracing and Perfetto open. */
#include "timeline.h"

#include <inttypes.h>

void tl_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c < 0x7f ? c : '?', out);
	}
	fputc('"', out);
}

double tl_us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

void tl_begin(struct timeline *tl, const char *ph, const char *cat, uint32_t tid)
{
	fputs(tl->first ? "\n" : ",\n", tl->out);
	tl->first = 0;
	fprintf(tl->out, "{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u", ph, tl->pid, tid);
	if (cat)
		fprintf(tl->out, ",\"cat\":\"%s\"", cat);
}

void tl_end(struct timeline *tl)
{
	fputc('}', tl->out);
}

void tl_complete(struct timeline *tl, const char *cat, uint32_t tid, const char *name,
		 uint64_t start, uint64_t dur)
{
	tl_begin(tl, "X", cat, tid);
	fputs(",\"name\":", tl->out);
	tl_string(tl->out, name);
	fprintf(tl->out, ",\"ts\":%.3f,\"dur\":%.3f", tl_us(start), tl_us(dur));
}

void tl_instant(struct timeline *tl, const char *cat, uint32_t tid, const char *scope,
		const char *name, uint64_t ts)
{
	tl_begin(tl, "i", cat, tid);
	fprintf(tl->out, ",\"s\":\"%s\",\"name\":", scope);
	tl_string(tl->out, name);
	fprintf(tl->out, ",\"ts\":%.3f", tl_us(ts));
	tl_end(tl);
}

void tl_metadata(struct timeline *tl, const char *what, uint32_t tid, const char *name)
{
	tl_begin(tl, "M", NULL, tid);
	fprintf(tl->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	tl_string(tl->out, name);
	fputs("}", tl->out);
	tl_end(tl);
}

void tl_counter(struct timeline *tl, const char *name, uint64_t ts, const char *field,
		uint64_t value)
{
	tl_begin(tl, "C", NULL, 0);
	fputs(",\"name\":", tl->out);
	tl_string(tl->out, name);
	fprintf(tl->out, ",\"ts\":%.3f,\"args\":{\"%s\":%" PRIu64 "}", tl_us(ts), field, value);
	tl_end(tl);
}
