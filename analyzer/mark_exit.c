/* prof mark-exit --pid PID --signal N RUN: prof-run's note that the program it started died
 * of signal N, which the program itself could not write (the library leaves SIGTERM and the
 * like to the program). Where that process's trace ends without an end of its own (state
 * RUNNING, and no EXIT written by the library's handler of a crash), one EXIT record (how 1:
 * a signal) timed now is appended in a chunk of its own. */
#include "commands.h"
#include "prof_format.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MARK_STREAM 0xfffffffeu  /* a stream no writer thread has (serials are small) */

static const struct cmd_spec mark_exit_spec = {
	"mark-exit", CMD_SIGNAL, 0,
	"usage: prof mark-exit --pid PID --signal N TRACE...\n"
	"Records that process PID died of signal N now, in its trace, when the trace has no end\n"
	"of its own. prof-run does this for the program it started.\n\n"
	"  --signal N   the signal\n"
	"  -h, --help   this help\n",
};

/* Whether a signal-handler stream (odd stream ids) holds an EXIT: the library's record of a
 * crash. Only those chunks are read, so a long trace costs one header read per chunk. */
static int has_crash_exit(int fd, const struct prof_file_header *h)
{
	static char chunk[64u << 10];
	uint64_t n = h->chunks_claimed;
	for (uint64_t i = 0; i < n;) {
		struct prof_chunk_header_run c;
		off_t off = (off_t)(h->data_offset + i * h->chunk_size);
		if (pread(fd, &c, sizeof(c), off) != (ssize_t)sizeof(c))
			return 0;
		if (c.magic != PROF_CHUNK_MAGIC || c.units == 0 || c.units > n - i) {
			i++;
			continue;
		}
		uint64_t span = (uint64_t)c.units * h->chunk_size;
		if ((c.stream & 1) && span <= sizeof(chunk) &&
		    pread(fd, chunk, span, off) == (ssize_t)span) {
			for (uint64_t at = sizeof(c); at + sizeof(struct prof_rec) <= span;) {
				const struct prof_rec *r = (const void *)(chunk + at);
				if (r->size < sizeof(*r) || r->size % 8 || r->size > span - at)
					break;
				if (r->type == PROF_REC_EXIT)
					return 1;
				at += r->size;
			}
		}
		i += c.units;
	}
	return 0;
}

static int mark(const char *path, int sig)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct prof_file_header h;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		prof_error("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = 0;
	if (h.magic != PROF_MAGIC || !(h.features & PROF_FEAT_CHUNK_RUNS) ||
	    h.state != PROF_STATE_RUNNING || h.chunk_size < 1024 || has_crash_exit(fd, &h))
		goto out;  /* not ours to change: another layout, or it has an end */
	struct timespec ts;
	clock_gettime((clockid_t)h.clock_id, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint64_t at = h.data_offset + h.chunks_claimed * h.chunk_size;
	char unit[1024] = { 0 };
	struct prof_chunk_header_run c = { PROF_CHUNK_MAGIC, MARK_STREAM, 0, h.pid, 1, 0 };
	struct prof_rec_exit e = { { PROF_REC_EXIT, 0, sizeof(e), now }, 1, sig };
	memcpy(unit, &c, sizeof(c));
	memcpy(unit + sizeof(c), &e, sizeof(e));
	uint64_t claimed = h.chunks_claimed + 1;
	/* The chunk first, then the count that makes readers see it. */
	if (pwrite(fd, unit, sizeof(unit), (off_t)at) != (ssize_t)sizeof(unit) ||
	    (h.chunk_size > sizeof(unit) && (uint64_t)st.st_size < at + h.chunk_size &&
	     ftruncate(fd, (off_t)(at + h.chunk_size)) < 0) ||
	    pwrite(fd, &claimed, sizeof(claimed), offsetof(struct prof_file_header, chunks_claimed)) !=
		    (ssize_t)sizeof(claimed)) {
		prof_error("%s: cannot record the exit: %s", path, strerror(errno));
		rc = -1;
	}
out:
	close(fd);
	return rc;
}

int cmd_mark_exit(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&mark_exit_spec, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!o.pid || o.signal <= 0) {
		prof_error("mark-exit: --pid and --signal are needed (try prof mark-exit --help)");
		return 2;
	}
	char **paths;
	size_t n;
	if (cmd_inputs(&o, &paths, &n) < 0)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (mark(paths[i], o.signal) < 0)
			rc = 1;
	inputs_free(paths);
	return rc < 0 ? 0 : rc;
}
