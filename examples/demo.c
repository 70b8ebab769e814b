/* The bundled example for `make demo`: a small word-frequency program with a few heap habits
 * worth seeing in a profile: many temporaries, a growing table, and two leaks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *word;
	int count;
};

struct table {
	struct entry *v;
	size_t n, cap;
};

static const char *const words[] = { "profile", "heap", "stack", "thread", "leak", "flame",
				     "trace", "kernel", "mutex", "buffer" };

static char *make_word(unsigned seed)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s-%u", words[seed % 10], seed % 37);
	return strdup(tmp);
}

static void table_add(struct table *t, char *w)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].word, w)) {
			t->v[i].count++;
			free(w);
			return;
		}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n++] = (struct entry){ w, 1 };
}

static char *format_line(const struct entry *e)
{
	char *line = malloc(128);
	snprintf(line, 128, "%-12s %d", e->word, e->count);
	return line;
}

static void *worker(void *arg)
{
	struct table *t = calloc(1, sizeof(*t));
	unsigned seed = (unsigned)(size_t)arg;
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		table_add(t, make_word(seed >> 8));
	}
	return t;
}

int main(void)
{
	pthread_t th[2];
	struct table *tables[2];
	for (size_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)(i + 1));
	for (size_t i = 0; i < 2; i++)
		pthread_join(th[i], (void **)&tables[i]);
	size_t total = 0;
	for (size_t i = 0; i < tables[0]->n; i++) {
		char *line = format_line(&tables[0]->v[i]);
		total += strlen(line);
		free(line);
	}
	printf("%zu distinct words, %zu bytes of report\n", tables[0]->n + tables[1]->n, total);
	/* Table 0 is freed; table 1 is forgotten: a leak of the table and every word in it. */
	for (size_t i = 0; i < tables[0]->n; i++)
		free(tables[0]->v[i].word);
	free(tables[0]->v);
	free(tables[0]);
	return 0;
}
