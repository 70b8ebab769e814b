#!/usr/bin/env bash
# bench/leakscan.sh: the exit's leak scan on a program that ends with many blocks allocated
# (bench/held_bench.c: BENCH_BLOCKS blocks, default 1000000, and as many short-lived ones).
# Wall time uninstrumented, under libprof without the scan (PROF_LEAK_CHECK=0) and with it;
# the scan's cost is the difference. BENCH_BASE_LIB=PATH adds the same two runs under another
# libprof.so (a build of an earlier commit). Median of BENCH_ROUNDS (default 5) interleaved
# rounds; writes build/bench/leakscan.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-5}
BLOCKS=${BENCH_BLOCKS:-1000000}
positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_BLOCKS "$BLOCKS"
built_lib
unset_prof_env PROF_LEAK_CHECK PROF_HEAP_SAMPLE PROF_STACK_CACHE
work_dir leakscan
${CC:-cc} -O2 -g -std=gnu11 bench/held_bench.c -o "$out/held_bench"
libs=(libprof)
base_lib_from_env
[[ -z $base_lib ]] || libs+=(base)

# run NAME LIB CHECK: one run's wall time in ms into $out/NAME.ms.
run() {
	local start end
	fresh_traces
	start=$(date +%s%N)
	if [[ $2 == - ]]; then
		"$out/held_bench" "$BLOCKS" >/dev/null
	else
		PROF_LEAK_CHECK=$3 PROF_OUTPUT=$out/traces/%p.trace LD_PRELOAD=$2 \
			"$out/held_bench" "$BLOCKS" >/dev/null
	fi
	end=$(date +%s%N)
	echo $(((end - start) / 1000000)) >>"$out/$1.ms"
}

names=(none)
for l in "${libs[@]}"; do names+=("$l-nocheck" "$l"); done
for n in "${names[@]}"; do : >"$out/$n.ms"; done
for ((r = 1; r <= ROUNDS; r++)); do
	echo "$me: round $r/$ROUNDS" >&2
	run none - 0
	run libprof-nocheck "$lib" 0
	run libprof "$lib" 1
	if [[ -n $base_lib ]]; then
		run base-nocheck "$base_lib" 0
		run base "$base_lib" 1
	fi
done

{
	echo "exit leak scan: bench/held_bench $BLOCKS ($BLOCKS blocks, $BLOCKS short-lived ones;"
	echo "one in 64 lost), wall ms, median of $ROUNDS interleaved rounds"
	printf '%-10s %12s %14s %12s\n' library "no scan" "with scan" "scan costs"
	printf '%-10s %12s\n' none "$(median_low "$out/none.ms")"
	for l in "${libs[@]}"; do
		off=$(median_low "$out/$l-nocheck.ms")
		on=$(median_low "$out/$l.ms")
		printf '%-10s %12s %14s %12s\n' "$l" "$off" "$on" "$((on - off))"
	done
} | tee "$BUILD/bench/leakscan.txt"
