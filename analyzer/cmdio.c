/* What every analyzer command does around its own work: load the processes of its TRACE
 * arguments, open its output, and at the end report write errors and free everything. */
#include "commands.h"
#include "process.h"

#include <stdlib.h>

int cmd_open(struct cmd_io *io, char *const *args, int nargs, const char *outfile)
{
	char **paths;
	*io = (struct cmd_io){ .out = stdout, .outfile = outfile };
	if (inputs_expand(args, nargs, &paths, &io->n) < 0)
		return -1;
	int loaded = processes_load(paths, io->n, &io->ps);
	inputs_free(paths);
	if (loaded < 0)
		return -1;
	if (outfile && !(io->out = fopen(outfile, "w"))) {
		prof_error("%s: cannot write: %m", outfile);
		processes_free(io->ps, io->n);
		return -1;
	}
	return 0;
}

void cmd_write_json(struct cmd_io *io, json_t *processes)
{
	json_t *doc = json_pack("{s:i,s:o}", "version", 1, "processes", processes);
	json_dumpf(doc, io->out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	fputc('\n', io->out);
	json_decref(doc);
}

int cmd_finish_output(FILE *out, const char *outfile, int rc)
{
	if (fflush(out) != 0 || ferror(out)) {
		prof_error("%s: write error", outfile ? outfile : "stdout");
		rc = 1;
	}
	if (outfile)
		fclose(out);
	return rc;
}

int cmd_close(struct cmd_io *io, int rc)
{
	rc = cmd_finish_output(io->out, io->outfile, rc);
	processes_free(io->ps, io->n);
	return rc;
}
