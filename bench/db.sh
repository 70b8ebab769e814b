#!/usr/bin/env bash
# bench/db.sh: what libprof's db and http families cost per query and per request, on
# bench/db_bench.c (in-memory SQLite; HTTP/1.1 on a loopback keep-alive connection). Runs the
# plain program and the same under LD_PRELOAD=build/libprof.so in interleaved rounds, with
# only the family measured recording (PROF_EVENTS=db, or http) and with every family (the default: the heap and lock hooks then see
# SQLite's mallocs and mutexes too), prints the median loop times and the cost per operation,
# and writes the table to build/bench/db.txt. Environment:
#   BENCH_ROUNDS  interleaved rounds (default 5)
#   BENCH_N       operations per run (default 200000; http and sqlite-text use 1/4, libpq 1/10)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
N=${BENCH_N:-200000}

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_N "$N"
[[ -f $BUILD/libprof.so ]] || make -s all >/dev/null || die "build failed"
lib=$root/$BUILD/libprof.so

unset_prof_env PROF_DB_LITERALS

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/db_bench
${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra -I"$(pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)" \
	bench/db_bench.c -o "$bench" -lsqlite3 -lpq

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-dbbench.XXXXXX")
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
pg_as=()
pg_stop() { [[ -f $tmp/pg/PG_VERSION ]] && "${pg_as[@]}" "$pgbin/pg_ctl" -D "$tmp/pg" -m immediate stop >/dev/null 2>&1 || true; }
trap 'pg_stop; rm -rf "$tmp"' EXIT

# name | arguments of db_bench | what one operation is | PROF_EVENTS of the family alone
configs=(
	"sqlite-prepared|sqlite-prepared $N|query|db"
	"sqlite-text|sqlite-text $((N / 4))|query|db"
	"http-keepalive|http $((N / 4))|request|http"
)

# A PostgreSQL server of our own, as a non-root user (the server refuses root).
if [[ -n $pgbin && -x $pgbin/initdb ]]; then
	chmod 0755 "$tmp"
	if [[ $(id -u) == 0 ]] && id postgres >/dev/null 2>&1; then
		chown postgres "$tmp"
		pg_as=(runuser -u postgres --)
	fi
	port=$((20000 + $$ % 20000))
	if [[ $(id -u) != 0 || ${#pg_as[@]} -gt 0 ]] &&
	   "${pg_as[@]}" "$pgbin/initdb" -D "$tmp/pg" -A trust -U postgres --no-sync >/dev/null 2>&1 &&
	   "${pg_as[@]}" "$pgbin/pg_ctl" -D "$tmp/pg" -w -l "$tmp/pg.log" \
		-o "-p $port -k $tmp -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null 2>&1; then
		conn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
		configs+=("pq-prepared|pq-prepared $((N / 10)) $conn|query|db"
			  "pq-text|pq-text $((N / 10)) $conn|query|db")
	else
		echo "bench/db: the PostgreSQL server did not start: libpq loops skipped" >&2
	fi
fi

{
	printf '%-16s %8s %9s %-8s %10s %14s %7s\n' "benchmark" "ops" "plain s" "events" "libprof s" \
		"cost per op" "ratio"
	for c in "${configs[@]}"; do
		IFS='|' read -r name args unit family <<<"$c"
		read -r -a a <<<"${args%% host=*}"
		[[ $args == *" host="* ]] && a+=("host=${args#* host=}")
		ops=${a[1]}
		plain=() alone=() all=()
		for ((r = 0; r < ROUNDS; r++)); do
			plain+=("$("$bench" "${a[@]}")")
			alone+=("$(PROF_EVENTS=$family PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$bench" "${a[@]}")")
			all+=("$(PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$bench" "${a[@]}")")
			rm -f "$tmp"/*.trace
		done
		p=$(printf '%s\n' "${plain[@]}" | median_low)
		for ev in "$family" all; do
			if [[ $ev == all ]]; then l=$(printf '%s\n' "${all[@]}" | median_low); else l=$(printf '%s\n' "${alone[@]}" | median_low); fi
			awk -v n="$name" -v ops="$ops" -v p="$p" -v l="$l" -v u="$unit" -v ev="$ev" 'BEGIN {
				printf "%-16s %8d %9.4f %-8s %10.4f %8.0f ns/%s %6.2fx\n", n, ops, p, ev, l, (l - p) * 1e9 / ops, u, l / p }'
		done
	done
} | tee "$outdir/db.txt"
