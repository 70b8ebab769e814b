#!/usr/bin/env bash
# bench/many.sh: `prof report` on a run directory of many traces (BENCH_TRACES, default 64),
# one worker per trace on all cores (the default) against one after the other (PROF_JOBS=1),
# each trace reduced to its summary as it is loaded (the default) against every trace kept
# whole (PROF_REDUCE=0, as before summaries); then `prof summarize` of the directory and
# `prof report` of that summary. Wall time and peak RSS, median of BENCH_ROUNDS (default 3).
# Each trace is one run of bench/alloc_bench (1 thread, BENCH_OPS operations). prof report
# makes its report a process at a time (README: "Memory of prof report"), so its peak RSS
# should stay about the same whatever BENCH_TRACES is (compare BENCH_TRACES=8). The table goes
# to stdout and to $BUILD/bench/many.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
N=${BENCH_TRACES:-64}
ROUNDS=${BENCH_ROUNDS:-3}
OPS=${BENCH_OPS:-20000}
is_positive "$N" "$ROUNDS" "$OPS" ||
	die "BENCH_TRACES, BENCH_ROUNDS and BENCH_OPS must be positive numbers"
lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
[[ -f $lib && -x $prof ]] || die "run make first"
[[ -x /usr/bin/time ]] || scripts/install-deps --bench || die "/usr/bin/time missing"
unset_prof_env PROF_JOBS

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

# One measurement: "seconds max_rss_kib" of a prof command with environment settings.
measure() { # VAR=VALUE... -- prof arguments
	local env=()
	while [[ $1 != -- ]]; do env+=("$1"); shift; done
	shift
	/usr/bin/time -f '%e %M' -o "$tmp/t" env "${env[@]}" "$prof" "$@" >/dev/null
	cat "$tmp/t"
}
# One row: the label, then what measure() takes; the median of ROUNDS runs.
row() {
	local label=$1
	shift
	: >"$tmp/s"
	: >"$tmp/m"
	for ((r = 0; r < ROUNDS; r++)); do
		read -r s m < <(measure "$@")
		echo "$s" >>"$tmp/s"
		echo "$m" >>"$tmp/m"
	done
	printf '%-44s %8s %13s\n' "$label" "$(median_low <"$tmp/s")" "$(( $(median_low <"$tmp/m") >> 10 ))"
}
cores=$(nproc)
{
	printf 'prof on %d traces (%d MiB in all), %d cores, median of %d rounds\n' \
		"$N" $((bytes >> 20)) "$cores" "$ROUNDS"
	printf '%-44s %8s %13s\n' 'command (workers)' seconds 'peak RSS MiB'
	row "report, 1 worker, traces kept whole" PROF_JOBS=1 PROF_REDUCE=0 -- report "$tmp/run"
	row "report, $cores workers, traces kept whole" PROF_REDUCE=0 -- report "$tmp/run"
	row "report, 1 worker (trace -> summary)" PROF_JOBS=1 -- report "$tmp/run"
	row "report, $cores workers (trace -> summary)" PROF_REDUCE=1 -- report "$tmp/run"
	row "summarize, $cores workers" PROF_REDUCE=1 -- summarize -o "$tmp/run.sum" "$tmp/run"
	row "report of the summary" PROF_REDUCE=1 -- report "$tmp/run.sum"
	printf 'summary: %d KiB\n' $(( $(stat -c %s "$tmp/run.sum") >> 10 ))
} | tee "$outdir/many.txt"
