#!/usr/bin/env bash
# bench/forks.sh: what libprof adds to each short-lived fork child, the cost that a shell
# script's subshells pay (bench/overhead.sh's bash_subshells). A bash loop of BENCH_CHILDREN
# (default 300) command substitutions, each a fork child with a trace of its own, run
# uninstrumented, under this build's libprof.so and, with BENCH_BASE_LIB=PATH, under another
# build's, in BENCH_ROUNDS (default 7) interleaved rounds. Prints the median wall time and the
# minor page faults (of bash and all its children, from GNU time's rusage), both per child.
# Then a prefork server's pattern in the same rounds (tests/progs/fork_tables.c: a parent
# with 4000 locks and 24 call paths forks 20 children that take the same locks and paths
# and exit): the median wall time, and the faults of the parent's pass over its locks after
# a fork (the worst of the 20). The subshells also run under this build with one part of
# libprof's per-process work left out, in the same rounds, so that each part's cost per child
# reads as a difference: the exit's leak scan (PROF_LEAK_CHECK=0), libc freeing its own blocks
# at exit (PROF_FREERES=0), stacks (PROF_STACK_DEPTH=0), and all of the event families but
# threads (PROF_EVENTS=thread: what a traced process costs with almost no events, its trace
# file, its objects described, its CPU timer). Writes $BUILD/bench/forks.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-7}
CHILDREN=${BENCH_CHILDREN:-300}
positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_CHILDREN "$CHILDREN"
built_lib
base_lib_from_env
unset_prof_env PROF_HEAP_SAMPLE PROF_LEAK_CHECK
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed: apt-get install time"
work_dir forks
cat >"$out/subshells.sh" <<SH
for i in \$(seq $CHILDREN); do x=\$(echo "\$i"); done
SH
modes=(none libprof)
[[ -z $base_lib ]] || modes+=(base)
declare -A part_env=([no_leak]=PROF_LEAK_CHECK=0 [no_freeres]=PROF_FREERES=0
	[no_stacks]=PROF_STACK_DEPTH=0 [thread_only]=PROF_EVENTS=thread)
parts=(no_leak no_freeres no_stacks thread_only)
for m in "${modes[@]}" "${parts[@]}"; do : >"$out/$m.us"; : >"$out/$m.cpu"; : >"$out/$m.faults"; : >"$out/$m.pf_us"; : >"$out/$m.pf_faults"; done
${CC:-cc} -O1 -g -pthread tests/progs/fork_tables.c -o "$out/fork_tables"
# CPU time of bash and all its children, where perf can count it: steadier than wall time,
# which the parts' differences of a few tens of microseconds a child drown in.
perf_ok=
perf stat -x, -e task-clock -o "$out/stat.txt" true 2>/dev/null && perf_ok=1

run() {  # mode: appends its wall time (us) and minor faults; a part's mode, the subshells only
	local pre=()
	case $1 in
	libprof) pre=(env PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$lib") ;;
	base) pre=(env PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$base_lib") ;;
	none) ;;
	*) pre=(env "${part_env[$1]}" PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$lib") ;;
	esac
	fresh_traces
	local t0 t1 faults stat=()
	[[ -z $perf_ok ]] || stat=(perf stat -x, -e task-clock -o "$out/stat.txt")
	t0=$(date +%s%N)
	faults=$(/usr/bin/time -f '%R' "${stat[@]}" "${pre[@]}" bash "$out/subshells.sh" 2>&1 >/dev/null | tail -1)
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$out/$1.us"
	echo "$faults" >>"$out/$1.faults"
	[[ -z $perf_ok ]] || awk -F, '/task-clock/ { printf "%d\n", $1 * 1000 }' "$out/stat.txt" >>"$out/$1.cpu"
	[[ -z ${part_env[$1]:-} ]] || return 0
	fresh_traces
	t0=$(date +%s%N)
	faults=$("${pre[@]}" "$out/fork_tables" 4000 20 | awk '$1 == "faults_after_fork" { print $2 }')
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$out/$1.pf_us"
	echo "$faults" >>"$out/$1.pf_faults"
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "$me: round $r/$ROUNDS" >&2
	for m in "${modes[@]}" "${parts[@]}"; do run "$m"; done
done

{
	echo "$CHILDREN bash subshells: per child, median of $ROUNDS interleaved rounds"
	printf '%-12s %9s %9s %9s %11s %11s\n' mode us/child added_us ratio faults/child cpu_us/child
	none_us=$(median "$out/none.us")
	for m in "${modes[@]}" "${parts[@]}"; do
		us=$(median "$out/$m.us")
		faults=$(median "$out/$m.faults")
		cpu=-
		[[ -z $perf_ok ]] || cpu=$(median "$out/$m.cpu")
		awk -v m="$m" -v us="$us" -v base="$none_us" -v f="$faults" -v n="$CHILDREN" \
			-v cpu="$cpu" 'BEGIN {
			printf "%-12s %9.0f %9.0f %8.2fx %11.0f %11s\n", m, us / n, (us - base) / n,
				us / base, f / n, cpu == "-" ? "-" : sprintf("%.0f", cpu / n) }'
	done
	echo
	# CPU time where perf counts it, else wall time.
	unit=us
	[[ -z $perf_ok ]] || unit=cpu
	echo "what each part of libprof's per-process work adds to a subshell" \
		"(us of $([[ $unit == cpu ]] && echo CPU || echo wall time), from the medians)"
	lib_us=$(median "$out/libprof.$unit")
	none_us=$(median "$out/none.$unit")
	for m in "${parts[@]}"; do
		awk -v m="$m" -v us="$(median "$out/$m.$unit")" -v lib="$lib_us" -v base="$none_us" \
			-v n="$CHILDREN" -v what="${part_env[$m]}" 'BEGIN {
			if (m == "thread_only")
				printf "  %-34s %6.0f\n", "a traced process (" what ")", (us - base) / n
			else
				printf "  %-34s %6.0f\n", "what " what " leaves out", (lib - us) / n }'
	done
	echo
	echo "prefork server (fork_tables 4000 20): median of $ROUNDS rounds"
	printf '%-8s %9s %9s %18s\n' mode ms ratio faults_after_fork
	none_us=$(median "$out/none.pf_us")
	for m in "${modes[@]}"; do
		awk -v m="$m" -v us="$(median "$out/$m.pf_us")" -v base="$none_us" \
			-v f="$(median "$out/$m.pf_faults")" 'BEGIN {
			printf "%-8s %9.1f %8.2fx %18.0f\n", m, us / 1000, us / base, f }'
	done
} | tee "$root/$BUILD/bench/forks.txt"
