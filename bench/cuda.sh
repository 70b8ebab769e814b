#!/usr/bin/env bash
# bench/cuda.sh (`make bench-cuda`): what libprof adds per traced CUDA driver call, against the
# fake driver (no GPU needed). Each call kind runs untraced, traced with PROF_CUDA_TIMING=none
# (interception and records only) and traced with event-pair timing; medians of BENCH_ROUNDS
# runs (default 5) of BENCH_CALLS calls (default 200000). Writes build/bench/cuda.txt.
# The fake driver runs each operation in the calling thread (FAKE_CUDA_SYNC=1): with its
# default worker thread per stream, what a traced call adds is mostly the worker's wake-ups,
# which depend on how fast the caller submits (a real driver's queue has none).
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-5}
CALLS=${BENCH_CALLS:-200000}
lib=$root/$BUILD/libprof.so
fake=$root/$BUILD/cuda
[[ -f $lib && -f $fake/libcuda.so.1 ]] || die "build first (make all cuda-progs)"
mkdir -p "$BUILD/bench"
bin=$BUILD/bench/cuda_bench
cc -O2 -g -Wall -Wextra -Werror bench/cuda_bench.c -o "$bin" -L"$fake" -l:libcuda.so.1 -Wl,-rpath,"$fake"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # kind mode -> ns/call
	local kind=$1 mode=$2 i
	export FAKE_CUDA_SYNC=1
	for ((i = 0; i < ROUNDS; i++)); do
		case $mode in
		plain) "$bin" "$kind" "$CALLS" ;;
		*) rm -f "$tmp"/*.trace
		   PROF_CUDA_TIMING=$mode PROF_EVENTS=cuda PROF_OUTPUT="$tmp/b.%p.trace" \
			LD_PRELOAD=$lib "$bin" "$kind" "$CALLS" ;;
		esac
	done | median_low
}

out=$BUILD/bench/cuda.txt
{
	echo "libprof CUDA driver-call overhead, fake driver (FAKE_CUDA_SYNC=1), $CALLS calls, median of $ROUNDS runs"
	echo "host: $(nproc) CPUs, $(uname -r)"
	printf '%-8s %12s %14s %14s %14s %14s\n' call plain_ns traced_ns added_ns events_ns added_ns
	for kind in init memset launch; do
		p=$(run "$kind" plain)
		t=$(run "$kind" none)
		e=$(run "$kind" events)
		printf '%-8s %12.1f %14.1f %14.1f %14.1f %14.1f\n' "$kind" "$p" "$t" \
			"$(echo "$t - $p" | bc -l)" "$e" "$(echo "$e - $p" | bc -l)"
	done
	echo "traced: PROF_CUDA_TIMING=none (API record, stack, launch/copy record);"
	echo "events: plus an event pair per launch/memset, drained at each stream sync"
} | tee "$out"
