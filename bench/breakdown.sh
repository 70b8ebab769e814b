#!/usr/bin/env bash
# bench/breakdown.sh: where libprof's time goes on the allocation benchmark with short stacks
# (alloc_bench, ALLOC_BENCH_DEPTH=2-6, BENCH_THREADS threads, BENCH_OPS operations each), by
# turning its parts on one after the other: the hooks alone (PROF_EVENTS=thread: every
# malloc and free passes through), heap records without stacks and without the exit's leak
# scan, with the leak scan, with stacks (the default); then, in place of the default, stacks
# without the stack cache, and the sampled mode. Each step's cost is its difference to the
# step it builds on, also in ns of wall time per operation of a thread (the threads run at
# once).
# Median wall time of BENCH_ROUNDS (default 7) interleaved rounds; writes
# build/bench/breakdown.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-7}
THREADS=${BENCH_THREADS:-1}
OPS=${BENCH_OPS:-500000}
positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_THREADS "$THREADS"
positive BENCH_OPS "$OPS"
built_lib
unset_prof_env PROF_STACK_CACHE PROF_HEAP_SAMPLE PROF_LEAK_CHECK
work_dir breakdown
${CC:-cc} -O2 -g -std=gnu11 -pthread bench/alloc_bench.c -o "$out/alloc_bench"

# name|environment ("-": uninstrumented)|the step it is measured against|what it adds there
steps=(
	"none|-||uninstrumented"
	"hooks|PROF_EVENTS=thread|none|hooks that pass every call through, start and exit"
	"records|PROF_STACK_DEPTH=0 PROF_LEAK_CHECK=0|hooks|a clock read and a record per event"
	"leak_scan|PROF_STACK_DEPTH=0|records|the exit's leak scan (reads the whole trace)"
	"stacks|PROF_EVENTS=all|leak_scan|a stack per allocation, through the stack cache: the default"
	"no_cache|PROF_STACK_CACHE=0|leak_scan|every stack unwound by libunwind instead"
	"sampled|PROF_HEAP_SAMPLE=512K|hooks|PROF_HEAP_SAMPLE=512K: tallies, a few records and stacks"
)
for s in "${steps[@]}"; do : >"$out/${s%%|*}.ms"; done
for ((r = 1; r <= ROUNDS; r++)); do
	echo "$me: round $r/$ROUNDS" >&2
	for s in "${steps[@]}"; do
		IFS='|' read -r name envs _ <<<"$s"
		fresh_traces
		t0=$(date +%s%N)
		if [[ $envs == - ]]; then
			ALLOC_BENCH_DEPTH=2-6 "$out/alloc_bench" "$THREADS" "$OPS" >/dev/null
		else
			# shellcheck disable=SC2086  # envs is a list of VAR=VALUE words
			env $envs ALLOC_BENCH_DEPTH=2-6 PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$lib" \
				"$out/alloc_bench" "$THREADS" "$OPS" >/dev/null
		fi
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000)) >>"$out/$name.ms"
	done
done

{
	echo "alloc_bench $THREADS thread(s) x $OPS operations, short stacks: median wall ms of $ROUNDS rounds"
	printf '%-10s %7s %-10s %7s %8s  %s\n' step ms against added ns/op "what it adds there"
	declare -A ms
	for s in "${steps[@]}"; do
		IFS='|' read -r name _ base what <<<"$s"
		ms[$name]=$(median_low "$out/$name.ms")
		if [[ -z $base ]]; then
			printf '%-10s %7d %-10s %7s %8s  %s\n' "$name" "${ms[$name]}" - - - "$what"
			continue
		fi
		d=$((ms[$name] - ms[$base]))
		printf '%-10s %7d %-10s %7d %8.1f  %s\n' "$name" "${ms[$name]}" "$base" "$d" \
			"$(awk -v d="$d" -v n="$OPS" 'BEGIN { print d * 1e6 / n }')" "$what"
	done
} | tee "$root/$BUILD/bench/breakdown.txt"
