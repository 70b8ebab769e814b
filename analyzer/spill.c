/* Spill files (spill.h). */
#include "spill.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A spill file, gone when closed: in $TMPDIR, else /tmp (tmpfile() would ignore TMPDIR, and
 * the spill files take as much room as the output). */
static FILE *spill_new(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/prof-spill.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	unlink(path);
	FILE *f = fdopen(fd, "w+");
	if (!f)
		close(fd);
	return f;
}

int spills_init(struct spills *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->n = (s->files[0] = spill_new()) != NULL;
	return s->n ? 0 : -1;
}

void spills_close(struct spills *s)
{
	for (size_t i = 0; i < s->n; i++)
		fclose(s->files[i]);
	s->n = 0;
	pthread_mutex_destroy(&s->lock);
}

FILE *spill_begin(struct spills *s, struct spilled *w)
{
	*w = (struct spilled){ .lost = 1 };
	pthread_mutex_lock(&s->lock);
	size_t i = 0;
	while (i < s->n && s->busy[i])
		i++;
	if (i == s->n) {
		if (i == SPILLS_MAX || !(s->files[i] = spill_new())) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		s->n++;
	}
	s->busy[i] = 1;
	pthread_mutex_unlock(&s->lock);
	w->file = i;
	w->off = ftello(s->files[i]);
	return s->files[i];
}

void spill_end(struct spills *s, struct spilled *w)
{
	FILE *f = s->files[w->file];
	off_t end = ftello(f);
	w->len = w->off >= 0 && end >= w->off ? (size_t)(end - w->off) : 0;
	w->lost = w->off < 0 || end < w->off || ferror(f);
	pthread_mutex_lock(&s->lock);
	s->busy[w->file] = 0;
	pthread_mutex_unlock(&s->lock);
}

int spill_copy(FILE *out, const struct spills *s, const struct spilled *w)
{
	char buf[1 << 16];
	FILE *in = s->files[w->file];
	size_t left = w->len;
	if (!w->lost && fseeko(in, w->off, SEEK_SET) == 0)
		for (size_t k; left && (k = fread(buf, 1, left < sizeof(buf) ? left : sizeof(buf), in));
		     left -= k)
			fwrite(buf, 1, k, out);
	return !w->lost && !left ? 0 : -1;
}

/* jansson's layout of a nested value: its own with depth more spaces after each line break
 * (the only raw ones: strings escape theirs). */
struct nested {
	FILE *out;
	int depth;
};

static int put_nested(const char *buf, size_t size, void *data)
{
	struct nested *d = data;
	for (const char *nl; size && (nl = memchr(buf, '\n', size));) {
		size_t k = (size_t)(nl - buf) + 1;
		fwrite(buf, 1, k, d->out);
		fprintf(d->out, "%*s", d->depth, "");
		buf += k;
		size -= k;
	}
	fwrite(buf, 1, size, d->out);
	return 0;
}

void spill_json(FILE *out, json_t *v, int depth)
{
	struct nested d = { out, depth };
	json_dump_callback(v, put_nested, &d, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}
