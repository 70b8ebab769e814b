#!/usr/bin/env bash
# bench/many.sh: `prof report` on a run directory of many traces (BENCH_TRACES, default 64),
# one worker per trace on all cores (the default) against one after the other (PROF_JOBS=1):
# wall time and peak RSS, median of BENCH_ROUNDS (default 3). Each trace is one run of
# bench/alloc_bench (1 thread, BENCH_OPS operations). The table goes to stdout and to
# $BUILD/bench/many.txt.
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"
BUILD=${BUILD:-build}
N=${BENCH_TRACES:-64}
ROUNDS=${BENCH_ROUNDS:-3}
OPS=${BENCH_OPS:-20000}
die() { echo "bench/many: $*" >&2; exit 1; }
[[ $N =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ && $OPS =~ ^[1-9][0-9]*$ ]] ||
	die "BENCH_TRACES, BENCH_ROUNDS and BENCH_OPS must be positive numbers"
lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
[[ -f $lib && -x $prof ]] || die "run make first"
[[ -x /usr/bin/time ]] || scripts/install-deps --bench || die "/usr/bin/time missing"
unset LD_PRELOAD PROF_OUTPUT PROF_EVENTS PROF_STACK_DEPTH PROF_CPU_HZ PROF_DEBUG PROF_JOBS

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/alloc_bench
${CC:-cc} -O2 -g -fno-omit-frame-pointer -pthread bench/alloc_bench.c -o "$bench"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-many.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/run"
for ((i = 0; i < N; i++)); do
	LD_PRELOAD=$lib PROF_OUTPUT=$tmp/run/prof.%n.%p.trace "$bench" 1 "$OPS" >/dev/null
done
bytes=$(du -sb "$tmp/run" | cut -f1)

# One measurement: "seconds max_rss_kib" of prof report --json on the run.
measure() { # jobs
	/usr/bin/time -f '%e %M' -o "$tmp/t" env PROF_JOBS="$1" "$prof" report "$tmp/run" >/dev/null
	cat "$tmp/t"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cores=$(nproc)
{
	printf 'prof report on %d traces (%d MiB in all), %d cores, median of %d rounds\n' \
		"$N" $((bytes >> 20)) "$cores" "$ROUNDS"
	printf '%-24s %10s %14s\n' workers seconds 'peak RSS MiB'
	for jobs in 1 "$cores"; do
		: >"$tmp/s"
		: >"$tmp/m"
		for ((r = 0; r < ROUNDS; r++)); do
			read -r s m < <(measure "$jobs")
			echo "$s" >>"$tmp/s"
			echo "$m" >>"$tmp/m"
		done
		printf '%-24s %10s %14s\n' "$([[ $jobs == 1 ]] && echo '1 (PROF_JOBS=1)' || echo "$jobs (default)")" \
			"$(median <"$tmp/s")" "$(( $(median <"$tmp/m") >> 10 ))"
	done
} | tee "$outdir/many.txt"
