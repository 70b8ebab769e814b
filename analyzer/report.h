/* prof report's JSON value of one process, for commands that embed it. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <jansson.h>
#include <stddef.h>

struct process;

json_t *process_json(struct process *p, size_t top);

#endif
