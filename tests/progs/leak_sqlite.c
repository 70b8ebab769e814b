/* A SQLite connection and a prepared statement, both dropped without closing: everything
 * SQLite allocated for them is lost at exit, as memcheck says. libprof's db family keeps the
 * statement's handle as a key of a map of its own; that memory must not make it reachable. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "clear_stack.h"

sqlite3 *volatile db;
sqlite3_stmt *volatile st;

__attribute__((noinline)) static int work(void)
{
	sqlite3 *d;
	sqlite3_stmt *s;
	if (sqlite3_open(":memory:", &d) != SQLITE_OK ||
	    sqlite3_prepare_v2(d, "SELECT 1 + 1", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW) {
		fprintf(stderr, "leak_sqlite: %s\n", sqlite3_errmsg(d));
		return 1;
	}
	db = d;
	st = s;
	db = NULL;  /* dropped, never closed */
	st = NULL;
	return 0;
}

int main(void)
{
	int rc = work();
	clear_stack();
	return rc;
}
