#!/usr/bin/env bash
# bench/tracesize.sh: how large traces are, and what the trace clock costs. For
# bench/alloc_bench.c (1 thread, BENCH_OPS operations, default its own 1M),
# bench/cxx_bench.cpp (its defaults: 4 threads), bench/io_bench.c (300,000 4 KiB reads of a
# cached 1 MiB file) and, where the fake CUDA driver is built (make cuda-progs), bench/cuda_bench.c
# (200,000 kernel launches, PROF_CUDA_TIMING=none: the launch records alone): bytes per record of the raw trace and of the
# trace after `prof pack` (its columns, then zstd at the default level), the whole file's size
# either way, and beside them what zstd alone makes of the raw trace (`zstd -3`, where the zstd
# command is installed: scripts/install-deps --bench). Then
# the wall time of alloc_bench under libprof with PROF_CLOCK=tsc against PROF_CLOCK=monotonic
# (and without libprof), median of BENCH_ROUNDS (default 5) interleaved runs. The table goes to
# stdout and to $BUILD/bench/tracesize.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-5}
OPS=${BENCH_OPS:-1000000}
is_positive "$ROUNDS" "$OPS" ||
	die "BENCH_ROUNDS and BENCH_OPS must be positive numbers"
lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
[[ -f $lib && -x $prof ]] || die "run make first"
unset_prof_env PROF_CLOCK

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
${CC:-cc} -O2 -g -pthread bench/alloc_bench.c -o "$outdir/alloc_bench"
${CXX:-c++} -O2 -g -pthread bench/cxx_bench.cpp -o "$outdir/cxx_bench"
${CC:-cc} -O2 -g bench/io_bench.c -o "$outdir/io_bench"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-tracesize.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
head -c $((1 << 20)) /dev/urandom >"$tmp/read.dat"
progs=("alloc_bench 1 $OPS" "cxx_bench" "io_bench read $tmp/read.dat 300000")
fake=$root/$BUILD/cuda
if [[ -f $fake/libcuda.so.1 ]]; then
	${CC:-cc} -O2 -g bench/cuda_bench.c -o "$outdir/cuda_bench" -L"$fake" -l:libcuda.so.1 \
		-Wl,-rpath,"$fake"
	progs+=("cuda_bench launch 200000")
fi

# Records in a trace: prof dump's last line, "N records".
records() {
	"$prof" dump "$1" | tail -n 1 | awk '$2 == "records" { print $1 }'
}

out=$outdir/tracesize.txt
{
	echo "libprof trace size (format $("$prof" --version | sed 's/.*format //'))"
	printf '%-28s %10s %13s %9s %13s %9s %9s\n' program records raw_bytes raw_B/rec packed_bytes \
		packed_B/rec zstd_B/rec
	for prog in "${progs[@]}"; do
		set -- $prog
		rm -rf "$tmp/run"
		mkdir "$tmp/run"
		FAKE_CUDA_SYNC=1 PROF_CUDA_TIMING=none LD_PRELOAD=$lib PROF_OUTPUT=$tmp/run/t.trace \
			"$outdir/$1" "${@:2}" >/dev/null
		n=$(records "$tmp/run/t.trace")
		raw=$(stat -c %s "$tmp/run/t.trace")
		plain=-1
		if command -v zstd >/dev/null; then
			plain=$(zstd -3 -q -c "$tmp/run/t.trace" | wc -c)
		fi
		"$prof" pack -q "$tmp/run/t.trace"
		packed=$(stat -c %s "$tmp/run/t.trace.zst")
		awk -v p="${prog/$tmp\//}" -v n="$n" -v r="$raw" -v z="$packed" -v q="$plain" 'BEGIN {
			printf "%-28s %10d %13d %9.2f %13d %9.2f %9s\n", p, n, r, r / n, z, z / n,
				q < 0 ? "-" : sprintf("%.2f", q / n) }'
	done
	echo
	echo "trace clock: alloc_bench 1 $OPS, wall seconds, median of $ROUNDS interleaved runs"
	clocksrc=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')
	echo "(kernel clocksource: $clocksrc)"
	for ((r = 0; r < ROUNDS; r++)); do
		for mode in none tsc monotonic; do
			rm -f "$tmp/c.trace"
			if [[ $mode == none ]]; then
				/usr/bin/time -f '%e' -o "$tmp/t" "$outdir/alloc_bench" 1 "$OPS" >/dev/null
			else
				/usr/bin/time -f '%e' -o "$tmp/t" env LD_PRELOAD="$lib" PROF_CLOCK=$mode \
					PROF_OUTPUT="$tmp/c.trace" "$outdir/alloc_bench" 1 "$OPS" >/dev/null
			fi
			echo "$mode $(tail -n1 "$tmp/t")" >>"$tmp/times"
		done
	done
	for mode in none tsc monotonic; do
		awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | sort -n |
			awk -v m="$mode" '{ v[NR] = $1 } END {
				printf "  %-22s %7.3f s  (min %.3f, max %.3f)\n",
					m == "none" ? "no libprof" : "PROF_CLOCK=" m, v[int((NR + 1) / 2)], v[1], v[NR] }'
	done
} | tee "$out"
