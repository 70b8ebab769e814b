/* stdio_batch DIR: writes text through stdio as a logger or a report generator does, and
 * prints what it wrote, for tests/e2e/test_io.c:
 *   DIR/full0.txt, full1.txt  fully buffered (a file's default), by 2 threads at once, each
 *                 its own: fprintf, fputs, fputc, putc and fwrite lines, ROUNDS each;
 *   DIR/line.txt  line buffered (setvbuf _IOLBF): fputs lines, each flushed at its newline;
 *   DIR/full0.txt read back: fgetc and fread from its buffer; full1.txt by fgets and getline.
 * Output: "full0 CALLS BYTES\nfull1 CALLS BYTES\nline CALLS BYTES\nread CALLS BYTES\nlines
 * CALLS BYTES\n", the calls made and bytes moved on each (read: full0.txt's reads, lines:
 * full1.txt's). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20000
#define LINES 300

static char dir[4096];
static FILE *full[2];
static long calls[2], bytes[2];

static void *writer(void *arg)
{
	long k = (long)arg;
	FILE *f = full[k];
	char chunk[40];
	memset(chunk, 'a' + (int)k, sizeof(chunk));
	for (int i = 0; i < ROUNDS; i++) {
		int n = fprintf(f, "thread %ld round %d\n", k, i);
		bytes[k] += n;
		const char *s = i % 2 ? "odd\n" : "even line\n";
		fputs(s, f);
		bytes[k] += (long)strlen(s);
		fputc('[', f);
		putc(']', f);
		bytes[k] += fwrite(chunk, 1, (size_t)(i % 40) + 1, f) + 2;
		calls[k] += 5;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: stdio_batch DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	char path[4200];
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/full%d.txt", dir, k);
		if (!(full[k] = fopen(path, "w")))
			return 1;
	}
	pthread_t t[2];
	for (long k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, writer, (void *)k);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	for (int k = 0; k < 2; k++)
		fclose(full[k]);

	snprintf(path, sizeof(path), "%s/line.txt", dir);
	FILE *line = fopen(path, "w");
	if (!line)
		return 1;
	setvbuf(line, NULL, _IOLBF, 4096);
	long line_bytes = 0;
	for (int i = 0; i < LINES; i++)
		line_bytes += fputs(i % 2 ? "a line\n" : "another line\n", line) >= 0 ?
				      (i % 2 ? 7 : 13) : 0;
	fclose(line);

	snprintf(path, sizeof(path), "%s/full0.txt", dir);
	FILE *in = fopen(path, "r");
	if (!in)
		return 1;
	long read_calls = 0, read_bytes = 0;
	char buf[100];
	for (;;) {
		int c = fgetc(in);
		read_calls++;
		if (c == EOF)
			break;
		read_bytes++;
		size_t n = fread(buf, 1, sizeof(buf), in);
		read_calls++;
		read_bytes += (long)n;
		if (n < sizeof(buf))
			break;
	}
	fclose(in);

	/* full1.txt read back by lines: fgets into a short buffer, getline. */
	snprintf(path, sizeof(path), "%s/full1.txt", dir);
	if (!(in = fopen(path, "r")))
		return 1;
	long line_calls = 0, line_read = 0;
	char *lp = NULL;
	size_t cap = 0;
	for (int i = 0;; i++) {
		line_calls++;
		if (i % 2) {
			ssize_t n = getline(&lp, &cap, in);
			if (n < 0)
				break;
			line_read += n;
		} else {
			char small[24];
			if (!fgets(small, sizeof(small), in))
				break;
			line_read += (long)strlen(small);
		}
	}
	free(lp);
	fclose(in);
	printf("full0 %ld %ld\nfull1 %ld %ld\nline %d %ld\nread %ld %ld\nlines %ld %ld\n",
	       calls[0], bytes[0], calls[1], bytes[1], LINES, line_bytes, read_calls, read_bytes,
	       line_calls, line_read);
	return 0;
}
