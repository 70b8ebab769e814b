#!/usr/bin/env bash
# bench/locks.sh: libprof's lock-recording overhead on bench/lock_bench.c. Runs the plain
# program and the same under LD_PRELOAD=build/libprof.so (and under mutrace, when it is
# installed or installable) in interleaved rounds, prints the median loop times and their
# ratios, and writes the table to build/bench/locks.txt. Environment:
#   BENCH_ROUNDS  interleaved rounds (default 5)
#   BENCH_ITERS   lock/unlock pairs per thread (default 5000000; contended runs use 1/5)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
ITERS=${BENCH_ITERS:-5000000}

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_ITERS "$ITERS"
[[ -f $BUILD/libprof.so ]] || make -s all >/dev/null || die "build failed"
lib=$root/$BUILD/libprof.so

unset_prof_env PROF_LOCK_HOLD_SAMPLE

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/lock_bench
${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra -Werror -pthread bench/lock_bench.c -o "$bench"

# mutrace, for comparison, when the distribution has it (Debian 12 does not).
mutrace_bin=$(command -v mutrace || true)
if [[ -z $mutrace_bin ]] && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	apt-get install -y mutrace >/dev/null 2>&1 && mutrace_bin=$(command -v mutrace || true)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-lockbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

contended_iters=$((ITERS / 5))
# name | arguments of lock_bench
configs=(
	"uncontended-1t|uncontended 1 $ITERS"
	"uncontended-2t|uncontended 2 $ITERS"
	"contended-2t|contended 2 $contended_iters 30 30"
	"contended-2t-empty|contended 2 $contended_iters 0 0"
)
tools=(plain libprof)
[[ -n $mutrace_bin ]] && tools+=(mutrace)

# run TOOL ARGS...: the loop time lock_bench reports, in seconds.
run() {
	local tool=$1 out
	shift
	case $tool in
	plain) out=$("$bench" "$@") ;;
	libprof) out=$(PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$bench" "$@") ;;
	mutrace) out=$("$mutrace_bin" "$bench" "$@" 2>/dev/null) ;;
	esac
	rm -f "$tmp"/prof.*.trace
	sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$out"
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r/$ROUNDS" >&2
	for c in "${configs[@]}"; do
		name=${c%%|*}
		read -r -a args <<<"${c#*|}"
		for t in "${tools[@]}"; do
			echo "$(run "$t" "${args[@]}")" >>"$tmp/$name.$t"
		done
	done
done

{
	echo "libprof lock overhead: bench/lock_bench.c, $ROUNDS interleaved rounds, median loop time"
	echo "($(nproc) CPUs, $(uname -r); uncontended: $ITERS lock/unlock pairs per thread, each thread"
	echo "its own mutex; contended: $contended_iters pairs per thread on one mutex, ~30 work steps"
	echo "inside and outside the critical section, or none)"
	printf '%-20s %12s %12s %8s' config plain_s libprof_s ratio
	[[ -n $mutrace_bin ]] && printf ' %12s %8s' mutrace_s ratio
	echo
	for c in "${configs[@]}"; do
		name=${c%%|*}
		p=$(median "$tmp/$name.plain")
		l=$(median "$tmp/$name.libprof")
		printf '%-20s %12.4f %12.4f %8.3f' "$name" "$p" "$l" "$(awk -v a="$l" -v b="$p" 'BEGIN { print a / b }')"
		if [[ -n $mutrace_bin ]]; then
			m=$(median "$tmp/$name.mutrace")
			printf ' %12.4f %8.3f' "$m" "$(awk -v a="$m" -v b="$p" 'BEGIN { print a / b }')"
		fi
		echo
	done
	[[ -n $mutrace_bin ]] || echo "(mutrace: not installed and not installable here)"
} | tee "$outdir/locks.txt"
