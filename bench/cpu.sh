#!/usr/bin/env bash
# bench/cpu.sh: the cost of CPU sampling on a CPU-bound two-thread program (bench/cpu_bench.c)
# at 99 Hz and 999 Hz, next to perf record -F at the same rates (frame-pointer call graphs,
# -g, and DWARF ones, --call-graph dwarf, which unwind as libprof does but offline). Runs
# every configuration in interleaved rounds, prints the median loop times (wall clock) and
# the median CPU time of the profiled process (user + system: what other load on a shared
# machine does not stretch; perf's own process is not in it), with their ratios to the plain
# program, and writes the table to build/bench/cpu.txt. Environment:
#   BENCH_ROUNDS  interleaved rounds (default 7)
#   BENCH_ITERS   calls per thread (default 200000, about 1 s per thread)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ROUNDS=${BENCH_ROUNDS:-7}
ITERS=${BENCH_ITERS:-200000}

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_ITERS "$ITERS"
[[ -f $BUILD/libprof.so ]] || make -s all >/dev/null || die "build failed"
lib=$root/$BUILD/libprof.so

unset_prof_env

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/cpu_bench
# Frame pointers, so that perf -g gets whole stacks; libprof does not need them.
${CC:-cc} -O2 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror -pthread \
	bench/cpu_bench.c -o "$bench"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-cpubench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

configs=(plain libprof-99 libprof-999)
perf_ok=0
if command -v perf >/dev/null && perf record -q -F 99 -g -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	perf_ok=1
	configs+=(perf-g-99 perf-g-999 perf-dwarf-99 perf-dwarf-999)
fi

# run CONFIG: "WALL CPU" as cpu_bench reports them, in seconds; checks its checksum.
expected=""
run() {
	local out hz=${1##*-}
	case $1 in
	plain) out=$("$bench" 2 "$ITERS") ;;
	libprof-*) out=$(PROF_CPU_HZ=$hz PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$bench" 2 "$ITERS") ;;
	perf-g-*) out=$(perf record -q -F "$hz" -g -o "$tmp/perf.data" -- "$bench" 2 "$ITERS" 2>/dev/null) ;;
	perf-dwarf-*) out=$(perf record -q -F "$hz" --call-graph dwarf -o "$tmp/perf.data" -- "$bench" 2 "$ITERS" 2>/dev/null) ;;
	esac
	rm -f "$tmp"/prof.*.trace "$tmp/perf.data"
	local sum=${out##*checksum=}
	[[ -z $expected ]] && expected=$sum
	[[ $sum == "$expected" ]] || die "$1: checksum $sum, plain run gave $expected"
	sed -n 's/.*seconds=\([0-9.]*\) cpu=\([0-9.]*\).*/\1 \2/p' <<<"$out"
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r/$ROUNDS" >&2
	for c in "${configs[@]}"; do
		read -r wall cpu <<<"$(run "$c")"
		echo "$wall" >>"$tmp/$c.wall"
		echo "$cpu" >>"$tmp/$c.cpu"
	done
done

{
	echo "CPU sampling overhead: bench/cpu_bench.c, 2 threads x $ITERS calls, $ROUNDS interleaved rounds,"
	echo "medians of the loop wall time and of the process CPU time ($(nproc) CPUs, $(uname -r);"
	echo "the machine may be shared: compare medians; perf's own process is not in cpu_s)"
	printf '%-16s %10s %8s %10s %8s\n' config wall_s ratio cpu_s ratio
	pw=$(median "$tmp/plain.wall")
	pc=$(median "$tmp/plain.cpu")
	for c in "${configs[@]}"; do
		w=$(median "$tmp/$c.wall")
		u=$(median "$tmp/$c.cpu")
		printf '%-16s %10.4f %8.3f %10.4f %8.3f\n' "$c" "$w" "$(awk -v a="$w" -v b="$pw" 'BEGIN { print a / b }')" \
			"$u" "$(awk -v a="$u" -v b="$pc" 'BEGIN { print a / b }')"
	done
	((perf_ok)) || echo "(perf record: not installed or not allowed here)"
	# The cost of one sample, in CPU time: libprof's tick sent 20000 times from 10 frames
	# deep (signal, unwinding, interning, record), and a signal with an empty handler.
	one=$(PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$bench" ticks 20000 $(($(kill -l RTMAX) - 3)))
	bare=$("$bench" ticks 20000 $(kill -l USR1))
	rm -f "$tmp"/prof.*.trace
	one=${one#*=} bare=${bare#*=}
	echo "one sample: $one us of CPU time (a signal with an empty handler: $bare us); at the"
	awk -v s="$one" 'BEGIN { printf "kernel tick (250/s per busy thread) that is %.2f%% of a thread'"'"'s CPU time, at 99/s %.2f%%\n", s * 250 / 1e4, s * 99 / 1e4 }'
} | tee "$outdir/cpu.txt"
